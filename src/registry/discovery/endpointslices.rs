//! EndpointSlices (`pkg/registry/discovery/endpointslice/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `endpointSliceStrategy`.
pub struct EndpointSliceStrategy;

impl Strategy for EndpointSliceStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::ENDPOINT_SLICES)
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::networking::endpoint_slice(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::networking::endpoint_slice(new)
    }
}
