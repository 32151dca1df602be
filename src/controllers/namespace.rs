//! The namespace finalizer: what upstream's namespace controller (kube-controller-manager,
//! `pkg/controller/namespace/deletion`) does, run inside kapi so that `kubectl delete ns x`
//! finishes on a lone server.
//!
//! A deleted namespace is only marked `Terminating` (see the namespace strategy, `registry/core/namespaces.rs`). This loop
//! then deletes everything stored in it, waits for objects with finalizers to lose them, removes
//! the `kubernetes` finalizer from `spec.finalizers` (upstream's `namespaces/<n>/finalize`) and
//! deletes the namespace once no finalizer is left. Every step is idempotent and guarded on
//! the stored revision, so a restart half-way (it resumes from what is stored) or several
//! servers on one store are harmless. It writes through the registry's `Store`, as a client
//! would: each object is deleted with its resource's strategy, and the finalizer is removed
//! through `namespaces/<name>/finalize`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::apiextensions::customresources::CustomResources;
use crate::registry::objects::{self, Kind};
use crate::registry::store::{Current, Deleted, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::{ListOptions, Storage};

/// The finalizer kapi (as kube-apiserver) puts on every new namespace.
const FINALIZER: &str = "kubernetes";

const NAMESPACES: &str = "/registry/namespaces/";

/// The namespace finalizer's loop (see [`super::Reconciler`]).
pub struct NamespaceFinalizer {
    pub config: Arc<StoreConfig>,
    /// The custom resources served: a namespace's contents include theirs.
    pub custom: Arc<CustomResources>,
}

impl super::Reconciler for NamespaceFinalizer {
    const NAME: &'static str = "namespace finalizer";

    fn prefix(&self) -> String {
        NAMESPACES.to_owned()
    }

    fn reconcile<'a>(&'a self, storage: &'a dyn Storage) -> Pin<Box<dyn Future<Output = Result<bool, ApiError>> + Send + 'a>> {
        Box::pin(finalize_all(storage, &self.config, &self.custom))
    }
}

/// One pass over the terminating namespaces; true while one of them still waits.
pub async fn finalize_all(store: &dyn Storage, config: &StoreConfig, custom: &CustomResources) -> Result<bool, ApiError> {
    let namespaces = store.list(NAMESPACES, ListOptions::default()).await?;
    let mut pending = false;
    for kv in namespaces.kvs {
        let Ok((_, ns)) = objects::decode_stored(&kv.value) else { continue };
        if !ns["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        match finalize(store, config, custom, &ns).await {
            Ok(done) => pending |= !done,
            // Changed or gone meanwhile: the next pass sees it as it is.
            Err(e) if e.code == 404 || e.code == 409 => pending = true,
            Err(e) => return Err(e),
        }
    }
    Ok(pending)
}

/// Moves one terminating namespace on; true when nothing is left to wait for.
async fn finalize(store: &dyn Storage, config: &StoreConfig, custom: &CustomResources, ns: &Value) -> Result<bool, ApiError> {
    let name = ns["metadata"]["name"].as_str().unwrap_or_default();
    let has_ours = ns["spec"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|v| v == FINALIZER));
    if !has_ours {
        // Another component's finalizer: theirs to remove.
        if ns["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
            return Ok(true);
        }
        return delete_namespace(store, config, name).await;
    }
    if delete_contents(store, config, custom, name).await? > 0 {
        return Ok(false);
    }
    // `namespaces/<name>/finalize` without ours; with no finalizer left, that update deletes
    // the namespace (its strategy's `should_delete_during_update`).
    let mut without_ours = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new("", "namespaces"), name))?;
        let mut object = current.internal_object();
        let namespace: &mut kapi_api::api::core::v1::Namespace = object.typed_mut()?;
        if let Some(spec) = &mut namespace.spec {
            spec.finalizers.retain(|f| f != FINALIZER);
        }
        Ok(Proposed::edited(object))
    };
    let finalize = Store::new(store, config, "", "namespaces", Kind::core_v1("Namespace")).with_subresource(Some("finalize"));
    finalize.update(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, None, name, &mut without_ours).await?;
    delete_namespace(store, config, name).await
}

/// Deletes a namespace left without finalizers (none left to run: done either way).
async fn delete_namespace(store: &dyn Storage, config: &StoreConfig, name: &str) -> Result<bool, ApiError> {
    let namespaces = Store::new(store, config, "", "namespaces", Kind::core_v1("Namespace"));
    match namespaces.delete(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, None, name, &json!({})).await {
        Ok(Deleted::Pending(..)) => Ok(true),
        Ok(Deleted::Gone(..)) => Ok(true),
        Err(e) if e.code == 404 => Ok(true),
        Err(e) => Err(e),
    }
}

/// Deletes every object stored in the namespace, built-in or custom, each through its
/// resource's store (finalizers mark it, its strategy decides the rest) with no grace period,
/// as upstream's namespace controller deletes collections; returns how many are still there.
async fn delete_contents(store: &dyn Storage, config: &StoreConfig, custom: &CustomResources, name: &str) -> Result<usize, ApiError> {
    let mut seen_prefixes = std::collections::BTreeSet::new();
    let mut remaining = 0;
    let now = json!({ "gracePeriodSeconds": 0 });
    for r in kapi_api::scheme::RESOURCES.iter().filter(|r| r.namespaced) {
        let kind = Kind { group: r.kind.group.into(), version: r.kind.version.into(), kind: r.kind.kind.into() };
        let resource = Store::new(store, config, r.group, r.resource, kind);
        // Resources served by two groups (Events) share their objects.
        if seen_prefixes.insert(resource.collection_key(Some(name))) {
            remaining += super::delete_all(store, &resource, Some(name), &now).await?;
        }
    }
    let custom = custom.snapshot();
    for objects in custom.values().filter(|r| r.namespaced).filter_map(|r| r.store(store, config)) {
        remaining += super::delete_all(store, &objects, Some(name), &now).await?;
    }
    Ok(remaining)
}
