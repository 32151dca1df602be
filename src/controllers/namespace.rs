//! The namespace finalizer: what upstream's namespace controller (kube-controller-manager,
//! `pkg/controller/namespace/deletion`) does, run inside kapi so that `kubectl delete ns x`
//! finishes on a lone server.
//!
//! A deleted namespace is only marked `Terminating` (see `registry::deletion_flow`). This loop
//! then deletes everything stored in it, waits for objects with finalizers to lose them, removes
//! the `kubernetes` finalizer from `spec.finalizers` (upstream's `namespaces/<n>/finalize`) and
//! deletes the namespace once no finalizer is left. Every step is idempotent and guarded on
//! the stored revision, so a restart half-way (it resumes from what is stored) or several
//! servers on one store are harmless.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::warn;

use crate::registry::objects;
use crate::storage::{KeyValue, ListOptions, Storage, StorageError};

/// The finalizer in `spec.finalizers` this controller is responsible for.
const FINALIZER: &str = "kubernetes";

const NAMESPACES: &str = "/registry/namespaces/";

/// How soon a namespace whose contents are still waiting for their own finalizers is looked at
/// again (upstream requeues with back-off; objects with finalizers are rare in kapi).
const RETRY: Duration = Duration::from_secs(2);

/// Runs the controller until the process ends.
pub fn spawn(store: Arc<dyn Storage>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(store.as_ref()).await {
                warn!(error = %e, "namespace finalizer: restarting");
                tokio::time::sleep(RETRY).await;
            }
        }
    })
}

/// Finalizes what is pending, then again on every namespace change (and on a timer while some
/// namespace is still waiting).
async fn run(store: &dyn Storage) -> Result<(), StorageError> {
    let from = store.current_revision().await?;
    let mut changes = store.watch(NAMESPACES, from).await?;
    let mut pending = finalize_all(store).await?;
    loop {
        let wait = if pending { RETRY } else { Duration::from_secs(3600) };
        match tokio::time::timeout(wait, changes.next()).await {
            Ok(None) => return Ok(()),
            Ok(Some(Err(e))) => return Err(e),
            Ok(Some(Ok(_))) | Err(_) => {}
        }
        pending = finalize_all(store).await?;
    }
}

/// One pass over all terminating namespaces; whether any is still waiting.
pub async fn finalize_all(store: &dyn Storage) -> Result<bool, StorageError> {
    let namespaces = store.list(NAMESPACES, ListOptions::default()).await?;
    let mut pending = false;
    for kv in namespaces.kvs {
        let Ok((_, ns)) = objects::decode_stored(&kv.value) else { continue };
        if !ns["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        match finalize(store, &kv, &ns).await {
            Ok(done) => pending |= !done,
            // Changed under us: the watch brings it back.
            Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => pending = true,
            Err(e) => return Err(e),
        }
    }
    Ok(pending)
}

/// Removes a terminating namespace's contents, then its finalizer, then the namespace; whether
/// it is gone (or left to other finalizers).
async fn finalize(store: &dyn Storage, kv: &KeyValue, ns: &Value) -> Result<bool, StorageError> {
    let name = ns["metadata"]["name"].as_str().unwrap_or_default();
    let has_ours = ns["spec"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|v| v == FINALIZER));
    if has_ours {
        let remaining = delete_contents(store, name).await?;
        if remaining > 0 {
            return Ok(false);
        }
        let mut finalized = ns.clone();
        if let Some(list) = finalized["spec"]["finalizers"].as_array_mut() {
            list.retain(|f| f != FINALIZER);
        }
        if let Some(meta) = finalized["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let kind = objects::Kind { group: String::new(), version: "v1".into(), kind: "Namespace".into() };
        let stored = objects::encode_stored(&kind, &finalized).map_err(internal)?;
        let updated = store.update(&kv.key, stored.into(), kv.mod_revision).await?;
        return delete_if_unfinalized(store, &updated, &finalized).await;
    }
    if ns["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
        // Another component's finalizer: it finishes the namespace.
        return Ok(true);
    }
    delete_if_unfinalized(store, kv, ns).await
}

async fn delete_if_unfinalized(store: &dyn Storage, kv: &KeyValue, ns: &Value) -> Result<bool, StorageError> {
    if ns["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
        return Ok(true);
    }
    match store.delete(&kv.key, Some(kv.mod_revision)).await {
        Ok(_) | Err(StorageError::NotFound { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// Deletes every object stored in namespace `name`; objects with finalizers are marked and
/// counted as remaining.
async fn delete_contents(store: &dyn Storage, name: &str) -> Result<usize, StorageError> {
    let mut prefixes: Vec<String> = kapi_api::scheme::RESOURCES
        .iter()
        .filter(|r| r.namespaced)
        .map(|r| crate::registry::keys::key(r.group, r.resource, Some(name), None))
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let mut remaining = 0;
    for prefix in prefixes {
        for kv in store.list(&prefix, ListOptions::default()).await?.kvs {
            let (kind, mut object) = objects::decode_stored(&kv.value).map_err(internal)?;
            let result = if object["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) {
                remaining += 1;
                if object["metadata"]["deletionTimestamp"].is_string() {
                    continue;
                }
                object["metadata"]["deletionTimestamp"] = json!(objects::now());
                object["metadata"]["deletionGracePeriodSeconds"] = json!(0);
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove("resourceVersion");
                }
                let stored = objects::encode_stored(&kind, &object).map_err(internal)?;
                store.update(&kv.key, stored.into(), kv.mod_revision).await.map(drop)
            } else {
                store.delete(&kv.key, Some(kv.mod_revision)).await.map(drop)
            };
            match result {
                Ok(()) | Err(StorageError::NotFound { .. }) => {}
                // Written meanwhile: looked at again on the next pass.
                Err(StorageError::Conflict { .. }) => remaining += 1,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(remaining)
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal { context: "namespace finalizer".into(), source: e.to_string().into() }
}
