//! ReplicationControllers (`pkg/registry/core/replicationcontroller/strategy.go`): stored
//! under `controllers`; the generation follows the spec; `scale` reads a plain label map as
//! the selector.

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `rcStrategy`.
pub struct ReplicationControllerStrategy;

impl Strategy for ReplicationControllerStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::REPLICATION_CONTROLLERS)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("controllers")
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::replication_controller(object.typed_ref()?))
    }

    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::replication_controller(new.typed_ref()?))
    }

    fn scale(&self) -> Option<crate::registry::ScaleFacts> {
        Some(crate::registry::ScaleFacts::workload(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_under_controllers_with_a_label_map_selector() {
        assert_eq!(crate::registry::keys::storage_prefix("", "replicationcontrollers"), "controllers");
        assert!(ReplicationControllerStrategy.scale().is_some_and(|s| matches!(s.selector, crate::registry::ScaleSelector::Map(_))));
        let deployments = crate::registry::strategy("apps", "deployments").scale();
        assert!(deployments.is_some_and(|s| matches!(s.selector, crate::registry::ScaleSelector::LabelSelector(_))));
        assert!(crate::registry::strategy("apps", "daemonsets").scale().is_none());
    }
}
