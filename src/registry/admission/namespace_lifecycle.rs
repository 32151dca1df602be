//! `NamespaceLifecycle` (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`): the
//! system namespaces are never deleted, and nothing is created in a namespace that does not
//! exist or is being deleted.

use serde_json::Value;

use super::{Attributes, Operation, Plugin};
use crate::registry::strategy::HookFuture;
use crate::status::{ApiError, GroupResource};

/// The namespaces that may not be deleted (upstream's `immortalNamespaces`).
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

pub struct NamespaceLifecycle;

impl NamespaceLifecycle {
    /// Why `name` may never be deleted, if it is a namespace that may not be.
    pub fn undeletable(group: &str, resource: &str, name: &str) -> Option<&'static str> {
        (group.is_empty() && resource == "namespaces" && IMMORTAL.contains(&name)).then_some("this namespace may not be deleted")
    }
}

impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let target = attributes.target;
            if attributes.operation == Operation::Delete
                && let Some(reason) = Self::undeletable(target.group, target.resource, target.name)
            {
                return Err(ApiError::forbidden(GroupResource::new(target.group, target.resource), target.name, reason));
            }
            // Only creates of namespaced objects are checked against their namespace.
            if attributes.operation != Operation::Create || target.namespace.is_empty() {
                return Ok(());
            }
            // Like upstream's plugin it reads the namespace from the cache and only asks the
            // store when the cache does not have it (a namespace created a moment ago).
            let key = crate::registry::keys::key("", "namespaces", None, Some(target.namespace));
            let Some(stored) = attributes.store.get_cached(&key).await.map_err(ApiError::from)? else {
                return Err(ApiError::not_found(GroupResource::new("", "namespaces"), target.namespace));
            };
            // Namespaces have one version: the stored object is the one to look at, unconverted.
            let namespace = crate::registry::store::watched::stored_object(&stored)
                .map_err(|e| ApiError::internal(format!("decoding {}: {e}", stored.key)))?;
            match refuses_content(namespace.object()) {
                Some(reason) => Err(ApiError::forbidden(GroupResource::new(target.group, target.resource), target.name, reason)),
                None => Ok(()),
            }
        })
    }
}

/// Why no new object may be created in a namespace, given the namespace as stored.
fn refuses_content(namespace: &Value) -> Option<String> {
    let terminating = namespace["metadata"]["deletionTimestamp"].is_string() || namespace["status"]["phase"] == "Terminating";
    let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
    terminating.then(|| format!("unable to create new content in namespace {name} because it is being terminated"))
}
