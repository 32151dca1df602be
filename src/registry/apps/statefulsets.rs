//! StatefulSets (`pkg/registry/apps/statefulset/strategy.go`): the generation follows the spec,
//! the status has its own rules, and `scale` reads `spec.replicas` and `spec.selector`.

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `statefulSetStrategy`.
pub struct StatefulSetStrategy;

impl Strategy for StatefulSetStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::STATEFUL_SETS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::stateful_set(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::stateful_set_update(old.typed_ref()?, new.typed_ref()?))
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let _ = old;
        Ok(validation::apps::stateful_set_status(new.typed_ref()?))
    }

    fn scale(&self) -> Option<crate::registry::ScaleFacts> {
        Some(crate::registry::ScaleFacts::workload(false))
    }
}
