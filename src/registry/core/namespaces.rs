//! Namespaces (`pkg/registry/core/namespace`): names are DNS labels; a new namespace is
//! `Active`, labelled with its name and carries the `kubernetes` finalizer; a delete only marks
//! it `Terminating` until the namespace controller has emptied it; `finalize` writes
//! `spec.finalizers` only.

use kapi_api::api::core::v1::Namespace;
use serde_json::{Value, json};

use crate::registry::DeletionFlow;
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, SubresourceStrategy};
use crate::registry::validation::NameRule;
use crate::status::{ApiError, FieldError};

/// Upstream's `namespaceStrategy` and its REST's `Delete`.
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::NAMESPACES)
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn sets_status_on_create(&self) -> bool {
        true
    }

    /// A new namespace is `Active`, finalized by `kubernetes` unless it names finalizers, and
    /// labelled with its name.
    fn prepare_for_create(&self, object: &mut Object, _user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        use kapi_api::api::core::v1::NamespaceStatus;
        let Namespace { metadata, spec, status, .. } = object.typed_mut::<Namespace>()?;
        let finalizers = &mut spec.get_or_insert_default().finalizers;
        if finalizers.is_empty() {
            finalizers.push("kubernetes".to_owned());
        }
        *status = Some(NamespaceStatus { phase: Some("Active".to_owned()), ..Default::default() });
        let meta = metadata.get_or_insert_default();
        let name = meta.name.clone().unwrap_or_default();
        meta.labels.insert("kubernetes.io/metadata.name".to_owned(), name);
        Ok(())
    }

    /// A namespace whose `spec.finalizers` are not empty is only marked.
    fn deletion_flow(&self, object: &Value) -> DeletionFlow {
        if object["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
            return DeletionFlow::AwaitSystem {
                in_progress: "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
            };
        }
        DeletionFlow::Generic
    }

    fn mark_deleting(&self, object: &mut Value) {
        object["status"]["phase"] = json!("Terminating");
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    /// `ShouldDeleteNamespaceDuringUpdate`: only once no `spec.finalizers` are left either.
    fn should_delete_during_update(&self, object: &Object) -> Result<bool, ApiError> {
        Ok(object.typed_ref::<Namespace>()?.spec.as_ref().is_none_or(|spec| spec.finalizers.is_empty()))
    }

    fn subresource(&self, name: &str) -> Option<&'static dyn SubresourceStrategy> {
        (name == "finalize").then_some(&Finalize)
    }
}

/// `namespaces/<name>/finalize` (upstream's `namespaceFinalizeStrategy`): only
/// `spec.finalizers` is taken from the request; the namespace controller then deletes a
/// terminating namespace left without finalizers.
struct Finalize;

impl SubresourceStrategy for Finalize {
    fn merge(&self, stored: &Object, proposed: &Object) -> Result<Object, ApiError> {
        let finalizers = proposed.typed_ref::<Namespace>()?.spec.as_ref().map(|spec| spec.finalizers.clone());
        let mut new = stored.clone_object();
        new.typed_mut::<Namespace>()?.spec.get_or_insert_default().finalizers = finalizers.unwrap_or_default();
        Ok(new)
    }

    fn validate_update(&self, _old: &Value, new: &Value) -> Vec<FieldError> {
        crate::registry::validation::validate_object_meta(&NamespaceStrategy, new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_namespaces_are_active_labelled_and_finalized() {
        let ns = crate::registry::strategy::prepared_for_create(
            &NamespaceStrategy,
            "Namespace",
            json!({"metadata": {"name": "team"}, "status": {"phase": "Terminating"}}),
        );
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
    }

    #[test]
    fn deletes_wait_for_spec_finalizers() {
        let finalized = json!({"spec": {"finalizers": ["kubernetes"]}});
        assert!(matches!(NamespaceStrategy.deletion_flow(&finalized), DeletionFlow::AwaitSystem { .. }));
        let namespace = |value: &Value| {
            let kind = crate::registry::objects::dyn_kind(&crate::registry::objects::Kind::core_v1("Namespace")).unwrap();
            Object::from_value(value.clone()).of_kind(kind)
        };
        assert!(!NamespaceStrategy.should_delete_during_update(&namespace(&finalized)).unwrap());
        let empty = json!({"spec": {"finalizers": []}});
        assert!(matches!(NamespaceStrategy.deletion_flow(&empty), DeletionFlow::Generic));
        assert!(NamespaceStrategy.should_delete_during_update(&namespace(&empty)).unwrap());
        let mut marked = finalized.clone();
        NamespaceStrategy.mark_deleting(&mut marked);
        assert_eq!(marked["status"]["phase"], "Terminating");
    }

    #[test]
    fn finalize_writes_only_spec_finalizers() {
        let stored = json!({"metadata": {"name": "team", "labels": {"a": "b"}}, "spec": {"finalizers": ["kubernetes", "other"]}});
        let proposed = json!({"metadata": {"name": "team", "labels": {}}, "spec": {"finalizers": ["other"]}});
        let kind = crate::registry::objects::dyn_kind(&crate::registry::objects::Kind::core_v1("Namespace")).unwrap();
        let (stored, proposed) = (Object::from_value(stored).of_kind(kind), Object::from_value(proposed).of_kind(kind));
        let merged = Finalize.merge(&stored, &proposed).unwrap().into_value().unwrap();
        assert_eq!(merged["spec"]["finalizers"], json!(["other"]));
        assert_eq!(merged["metadata"]["labels"], json!({"a": "b"}));
    }

    #[test]
    fn names_are_dns_labels() {
        let invalid = |name: &str| {
            !crate::registry::validation::validate_object_meta(&NamespaceStrategy, &json!({"metadata": {"name": name}})).is_empty()
        };
        assert!(invalid("a.b"));
        assert!(!invalid("team-a"));
    }
}
