//! Endpoints (`pkg/registry/core/endpoint`): stored under `services/endpoints`; a PUT creates
//! them.

use crate::registry::strategy::Strategy;

/// Upstream's `endpointsStrategy`.
pub struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::ENDPOINTS)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("services/endpoints")
    }

    /// A PUT to missing Endpoints creates them (`endpointsStrategy`).
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
