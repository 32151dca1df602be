//! PodTemplates (`pkg/registry/core/podtemplate/strategy.go`).

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `podTemplateStrategy`.
pub struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::POD_TEMPLATES)
    }

    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::pod_template(object.typed_ref()?))
    }

    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::pod_template(new.typed_ref()?))
    }
}
