//! PodTemplates (`pkg/registry/core/podtemplate/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `podTemplateStrategy`.
pub struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::POD_TEMPLATES)
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::core::pod_template(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::core::pod_template_update(old, new)
    }
}
