//! Deployments (`pkg/registry/apps/deployment/strategy.go`): the generation follows the spec,
//! the status has its own rules, and `scale` reads `spec.replicas` and `spec.selector`.

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `deploymentStrategy`.
pub struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::DEPLOYMENTS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::deployment(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::apps::deployment_update(old.typed_ref()?, new.typed_ref()?))
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let _ = old;
        Ok(validation::apps::deployment_status(new.typed_ref()?))
    }

    fn scale(&self) -> Option<crate::registry::ScaleFacts> {
        Some(crate::registry::ScaleFacts::workload(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_and_names_are_reported_together() {
        let deployment = serde_json::json!({"metadata": {"name": "Bad"}});
        let required = validation::required_errors("apps", "deployments", &deployment);
        let object = validation::test_object("apps", "deployments", &deployment);
        let errs = validation::validate_create(&DeploymentStrategy, &object, required).unwrap();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.name", "spec.selector", "spec.template.metadata.labels", "spec.template.spec.containers"]);
    }
}
