//! The glue of the plugins that act on new pods only (`ServiceAccount`, `Priority`,
//! `DefaultTolerationSeconds`): upstream's pod plugins each check the resource and the
//! operation first; here that check is made once, for all of them.

use serde_json::Value;

use super::{Attributes, Plugin};
use crate::registry::Rejection;
use crate::registry::strategy::HookFuture;
use crate::status::ApiError;

/// A plugin that acts on new pods only (upstream's pod plugins check the resource and the
/// operation first): given the store and the pod.
pub(super) trait PodCreatePlugin: Send + Sync {
    fn name(&self) -> &'static str;

    fn admit_pod<'a>(&'a self, store: &'a dyn crate::storage::Storage, pod: &'a mut Value) -> HookFuture<'a, Result<(), Rejection>>;
}

/// A [`PodCreatePlugin`] in the chain.
pub(super) struct OnPodCreate<P>(pub(super) P);

impl<P: PodCreatePlugin> Plugin for OnPodCreate<P> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let (target, store) = (attributes.target, attributes.store);
            let Some(pod) = attributes.created("", "pods") else { return Ok(()) };
            self.0.admit_pod(store, pod).await.map_err(|r| target.refuse(r))
        })
    }
}
