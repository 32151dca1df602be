//! DaemonSets (`pkg/registry/apps/daemonset/strategy.go`): the generation follows the spec,
//! the status has its own rules.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `daemonSetStrategy`.
pub struct DaemonSetStrategy;

impl Strategy for DaemonSetStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::DAEMON_SETS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::apps::daemon_set(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::apps::daemon_set_update(old, new)
    }

    fn validate_status_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::apps::status(new)
    }
}
