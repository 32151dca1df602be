//! `NodeRestriction` (`plugin/pkg/admission/noderestriction`): what a kubelet (user
//! `system:node:<name>` in group `system:nodes`) may write. Each resource's rules are its
//! strategy's (`registry::kubelet::KubeletRules`): mirror pods and the status, deletes and
//! evictions of its pods, its own Node, Lease, CSINode and ResourceSlices, the status of the
//! claims, tokens bound to its pods. Requests of other users pass untouched.
//!
//! The one stored object a decision may need (a pod, the Node, a ResourceSlice being deleted)
//! is read first, from the cache as upstream reads its informers.

use serde_json::Value;

use super::{Attributes, Operation, Plugin};
use crate::rbac::node::{NODE_USER_PREFIX, node_identity};
use crate::registry::kubelet::{Fetched, NodeWrite, Refusal, Wanted};
use crate::registry::strategy::HookFuture;
use crate::status::{ApiError, GroupResource};

pub struct NodeRestriction;

impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let Some(node) = attributes.user.and_then(node_identity) else { return Ok(()) };
            // Upstream's handler: creates, updates and deletes only.
            if attributes.operation == Operation::Connect {
                return Ok(());
            }
            let target = attributes.target;
            let refuse = |refusal: Refusal| match refusal {
                Refusal::Forbidden(message) => ApiError::forbidden(GroupResource::new(target.group, target.resource), target.name, message),
                Refusal::NotFound(wanted) => ApiError::not_found(GroupResource::new(wanted.group, wanted.resource), &wanted.name),
            };
            if node.is_empty() {
                return Err(refuse(Refusal::Forbidden(format!("could not determine node from user {NODE_USER_PREFIX:?}"))));
            }
            let Some(rules) = attributes.strategy.kubelet() else { return Ok(()) };
            let mut write = NodeWrite {
                operation: attributes.operation,
                target,
                object: attributes.object.as_deref().map(super::Object::value).transpose()?,
                old: attributes.old.map(super::Object::value).transpose()?,
                fetched: Fetched::NotNeeded,
            };
            let wanted = rules.needs(node, &write);
            let stored = match &wanted {
                Some(wanted) => stored(attributes.store, wanted).await?,
                None => None,
            };
            write.fetched = Fetched::of(wanted.as_ref(), stored.as_ref());
            rules.admit(node, &write).map_err(refuse)
        })
    }
}

/// `Wanted` as stored (cache first, then the store), `None` when missing.
async fn stored(store: &dyn crate::storage::Storage, wanted: &Wanted) -> Result<Option<Value>, ApiError> {
    let key = crate::registry::keys::key(wanted.group, wanted.resource, wanted.namespace.as_deref(), Some(&wanted.name));
    let kv = match store.get_cached(&key).await.map_err(ApiError::from)? {
        Some(kv) => Some(kv),
        None => store.get(&key).await.map_err(ApiError::from)?,
    };
    let Some(kv) = kv else { return Ok(None) };
    let (_, value) = crate::registry::objects::decode_stored(&kv.value).map_err(|e| ApiError::internal(format!("decoding {key}: {e}")))?;
    Ok(Some(value))
}
