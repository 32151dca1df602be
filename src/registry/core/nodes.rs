//! Nodes (`pkg/registry/core/node`): stored under `minions`; proxying reaches a kubelet.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::status::ApiError;

/// Upstream's `nodeStrategy`.
pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::NODES)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("minions")
    }

    fn connect_error(&self, _resource: &str, _subresource: &str, name: &str, _object: &Value) -> ApiError {
        ApiError::service_unavailable(format!("no kubelet is reachable for node {name}"))
    }
}
