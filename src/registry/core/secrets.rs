//! Secrets (`pkg/registry/core/secret/strategy.go`).

use kapi_api::api::core::v1 as core_v1;

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

    /// The write-only `stringData` is folded into `data` and dropped, as upstream's conversion
    /// into the internal Secret does.
    fn normalize(&self, object: &mut Object) -> Result<(), ApiError> {
        // Most Secrets have none: they are left as they are, in whichever form.
        if object.typed_ref::<core_v1::Secret>()?.string_data.is_empty() {
            return Ok(());
        }
        let secret = object.typed_mut::<core_v1::Secret>()?;
        for (key, text) in std::mem::take(&mut secret.string_data) {
            secret.data.insert(key, text.into_bytes());
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
        use crate::registry::object::Object;
        use crate::registry::objects::{self, Kind};
        use crate::registry::strategy::Strategy;
        let kind = Kind { group: String::new(), version: "v1".into(), kind: "Secret".into() };
        let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "YQ=="}, "stringData": {"b": "b", "a": "z"}});
        let mut secret = Object::read(objects::dyn_kind(&kind).unwrap(), secret).unwrap();
        super::SecretStrategy.normalize(&mut secret).unwrap();
        let secret = secret.into_value().unwrap();
        assert_eq!(secret["data"], serde_json::json!({"a": "eg==", "b": "Yg=="}));
        assert_eq!(secret.get("stringData"), None);
    }
}
