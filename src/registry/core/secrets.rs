//! Secrets (`pkg/registry/core/secret/strategy.go`).

use base64::Engine;
use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `strategy` for secrets.
pub struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&SecretStrategy)
    }

    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::SECRETS)
    }

    /// The write-only `stringData` is folded into `data` (base64) and dropped, as upstream's
    /// conversion into the internal Secret does.
    fn normalize(&self, object: &mut Object) -> Result<(), ApiError> {
        // Most Secrets have none: they stay typed.
        if object.value()?.get("stringData").is_none() {
            return Ok(());
        }
        let object = object.value_mut()?;
        if let Some(Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData")) {
            for (key, value) in strings {
                let text = value.as_str().unwrap_or_default();
                object["data"][key] = Value::String(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
        Ok(())
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::secret(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::secret_update(old.typed_ref()?, new.typed_ref()?))
    }
}

/// A kubelet reads the secrets its pods use (the Node authorizer's `authorizeReadNamespacedObject`).
impl KubeletRules for SecretStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(node::read_namespaced(graph, node, Vertex::Secret, a))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn string_data_folds_into_data() {
        use crate::registry::strategy::Strategy;
        let mut secret = serde_json::json!({"data": {"a": "YQ=="}, "stringData": {"b": "b", "a": "z"}}).into();
        super::SecretStrategy.normalize(&mut secret).unwrap();
        assert_eq!(secret.into_value().unwrap(), serde_json::json!({"data": {"a": "eg==", "b": "Yg=="}}));
    }
}
