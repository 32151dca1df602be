//! Endpoints (`pkg/registry/core/endpoint`): stored under `services/endpoints`.

use crate::registry::strategy::Strategy;

/// Upstream's `endpointsStrategy`.
pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn storage_prefix(&self) -> Option<&'static str> {
        Some("services/endpoints")
    }
}
