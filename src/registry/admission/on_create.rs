//! The glue of the plugins that act on new objects of one resource only (`ServiceAccount`,
//! `Priority` and `DefaultTolerationSeconds` on pods, `DefaultStorageClass` on claims):
//! upstream's plugins each check the operation and resource first; here each plugin names its
//! resource in its own file and the check is made once, for all of them.

use serde_json::Value;

use super::{Attributes, Operation, Plugin};
use crate::registry::Rejection;
use crate::registry::strategy::HookFuture;
use crate::status::ApiError;

/// A plugin that acts on new objects of one resource only: given the store and the object.
pub(super) trait CreatePlugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// The group and resource whose new objects (not a subresource's writes) it acts on.
    fn resource(&self) -> (&'static str, &'static str);

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, object: &'a mut Value) -> HookFuture<'a, Result<(), Rejection>>;
}

/// A [`CreatePlugin`] in the chain.
pub(super) struct OnCreate<P>(pub(super) P);

impl<P: CreatePlugin> Plugin for OnCreate<P> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let (target, store) = (attributes.target, attributes.store);
            let (group, resource) = self.0.resource();
            let created = attributes.operation == Operation::Create
                && target.group == group
                && target.resource == resource
                && target.subresource.is_none();
            let Some(object) = attributes.object.as_deref_mut().filter(|_| created) else { return Ok(()) };
            self.0.admit_created(store, object).await.map_err(|r| target.refuse(r))
        })
    }
}
