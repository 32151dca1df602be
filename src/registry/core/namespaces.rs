//! Namespaces (`pkg/registry/core/namespace`): names are DNS labels; a new namespace is
//! `Active`, labelled with its name and carries the `kubernetes` finalizer; a delete only marks
//! it `Terminating` until the namespace controller has emptied it.

use serde_json::{Value, json};

use crate::registry::DeletionFlow;
use crate::registry::strategy::Strategy;
use crate::registry::validation::NameRule;

/// Upstream's `namespaceStrategy` and its REST's `Delete`.
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn prepare_for_create(&self, object: &mut Value, _user: Option<&crate::request_info::UserInfo>) {
        if object["spec"]["finalizers"].as_array().is_none_or(Vec::is_empty) {
            object["spec"]["finalizers"] = json!(["kubernetes"]);
        }
        object["status"]["phase"] = json!("Active");
        let name = object["metadata"]["name"].clone();
        object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
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

    /// `namespaces/<name>/finalize` replaces `spec.finalizers` only.
    fn own_rest(&self, subresource: Option<&str>) -> Option<crate::registry::OwnRest> {
        (subresource == Some("finalize")).then_some(crate::registry::OwnRest::NamespaceFinalize)
    }
}
