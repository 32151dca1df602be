//! DaemonSets (`pkg/registry/apps/daemonset/strategy.go`): the generation follows the spec,
//! the status has its own rules.

use serde_json::Value;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `daemonSetStrategy`.
pub struct DaemonSetStrategy;

impl Strategy for DaemonSetStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::DAEMON_SETS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// Its template's rules read the generated type; the rest reads JSON.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::daemon_set(object.value()?, template(object)?))
    }

    fn validate_update_object(&self, old: &Value, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::daemon_set_update(old, new.value()?, template(new)?))
    }

    fn validate_status_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::apps::status(new)
    }
}

/// The DaemonSet's pod template as its generated type.
fn template(object: &Object) -> Result<Option<&kapi_api::api::core::v1::PodTemplateSpec>, ApiError> {
    let workload = object.typed_ref::<kapi_api::api::apps::v1::DaemonSet>()?;
    Ok(workload.spec.as_ref().map(|spec| &spec.template))
}
