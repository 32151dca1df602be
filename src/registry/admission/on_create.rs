//! The glue of the plugins that act on new objects of particular resources only
//! (`ServiceAccount`, `Priority`, `DefaultTolerationSeconds`, `DefaultStorageClass`): upstream's
//! plugins each check the operation and kind first; here each resource's strategy names the
//! plugins that act on its objects ([`super::KindPlugin`]) and the check is made once, for all
//! of them.

use super::{Attributes, KindPlugin, Operation, Plugin};
use crate::registry::Rejection;
use crate::registry::object::Object;
use crate::registry::strategy::HookFuture;
use crate::status::ApiError;

/// A plugin that acts on new objects of the resources whose strategies name it: given the
/// store and the object, which it takes in the form it is written for
/// ([`Object::typed_mut`], [`Object::value_mut`]).
pub(super) trait CreatePlugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// How strategies name it.
    fn kind_plugin(&self) -> KindPlugin;

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, object: &'a mut Object)
    -> HookFuture<'a, Result<(), Rejection>>;
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
            let created = attributes.operation == Operation::Create
                && target.subresource.is_none()
                && super::acts_on(self.0.kind_plugin(), attributes.strategy);
            let Some(object) = attributes.object.as_deref_mut().filter(|_| created) else { return Ok(()) };
            self.0.admit_created(store, object).await.map_err(|r| target.refuse(r))
        })
    }
}
