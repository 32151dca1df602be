//! ReplicationControllers (`pkg/registry/core/replicationcontroller/strategy.go`): stored
//! under `controllers`; the generation follows the spec; `scale` reads a plain label map as
//! the selector.

use serde_json::Value;

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

    /// Its template's rules read the generated type; the rest reads JSON.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::replication_controller(object.value()?, template(object)?))
    }

    fn validate_update_object(&self, _old: &Value, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::replication_controller(new.value()?, template(new)?))
    }

    fn scale(&self) -> Option<crate::registry::ScaleFacts> {
        Some(crate::registry::ScaleFacts::workload(true))
    }
}

/// The ReplicationController's pod template as its generated type.
fn template(object: &Object) -> Result<Option<&kapi_api::api::core::v1::PodTemplateSpec>, ApiError> {
    let workload = object.typed_ref::<kapi_api::api::core::v1::ReplicationController>()?;
    Ok(workload.spec.as_ref().and_then(|spec| spec.template.as_ref()))
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
