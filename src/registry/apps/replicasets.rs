//! ReplicaSets (`pkg/registry/apps/replicaset/strategy.go`): the generation follows the spec,
//! the status has its own rules, and `scale` reads `spec.replicas` and `spec.selector`.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `replicaSetStrategy`.
pub struct ReplicaSetStrategy;

impl Strategy for ReplicaSetStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::REPLICA_SETS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::apps::replica_set(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::apps::replica_set_update(old, new)
    }

    fn validate_status_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::apps::status(new)
    }

    fn scale(&self) -> Option<crate::registry::ScaleFacts> {
        Some(crate::registry::ScaleFacts::workload(false))
    }
}
