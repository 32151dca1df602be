//! ConfigMaps (`pkg/registry/core/configmap/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `strategy` for config maps.
pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::CONFIG_MAPS)
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::core::config_map(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::core::config_map_update(old, new)
    }
}
