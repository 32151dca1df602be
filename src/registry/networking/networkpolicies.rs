//! NetworkPolicies (`pkg/registry/networking/networkpolicy/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `networkPolicyStrategy`.
pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::NETWORK_POLICIES)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::networking::network_policy(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::networking::network_policy(new)
    }
}
