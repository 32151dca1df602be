//! PriorityClasses (`pkg/registry/scheduling/priorityclass/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `priorityClassStrategy`.
pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PRIORITY_CLASSES)
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::scheduling::priority_class(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::scheduling::priority_class_update(old, new)
    }
}
