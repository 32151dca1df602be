//! PriorityClasses (`pkg/registry/scheduling/priorityclass/strategy.go`).

use kapi_api::hub::scheduling as hub;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `priorityClassStrategy`.
pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PRIORITY_CLASSES)
    }

    /// The rules read the internal object as its hub type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::scheduling::priority_class(object.hub_ref::<hub::PriorityClass>()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::scheduling::priority_class_update(old.hub_ref::<hub::PriorityClass>()?, new.hub_ref()?))
    }
}
