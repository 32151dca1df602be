//! Ingresses (`pkg/registry/networking/ingress/strategy.go`); stored under `ingress`.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `ingressStrategy`.
pub struct IngressStrategy;

impl Strategy for IngressStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::INGRESSES)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("ingress")
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::networking::ingress(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::networking::ingress(new)
    }
}
