//! EndpointSlices (`pkg/registry/discovery/endpointslice/strategy.go`).

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `endpointSliceStrategy`.
pub struct EndpointSliceStrategy;

impl Strategy for EndpointSliceStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::ENDPOINT_SLICES)
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::networking::endpoint_slice(object.typed_ref()?))
    }

    /// An update is checked as a create: nothing of the old slice is read.
    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        self.validate_object(new)
    }
}
