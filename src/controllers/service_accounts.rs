//! What kube-controller-manager's ServiceAccount controller and root-CA publisher do, so that
//! pods can be created as on any cluster: every active namespace has a `default`
//! ServiceAccount and a `kube-root-ca.crt` ConfigMap with the cluster's CA bundle (which the
//! token volume of every pod mounts, see `registry::admission::service_account`).
//!
//! Writes go straight to the store, create-if-absent (or compare-and-swap for the CA), so
//! replicas and restarts are harmless.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::warn;

use crate::registry::admission::ROOT_CA_CONFIGMAP;
use crate::registry::keys::key;
use crate::registry::objects::{self, Kind};
use crate::storage::{Event, ListOptions, Storage, StorageError};

/// Upstream's description annotation on that ConfigMap.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Runs the controller until the process ends.
pub fn spawn(store: Arc<dyn Storage>, root_ca_pem: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(store.as_ref(), &root_ca_pem).await {
                warn!(error = %e, "service account controller: restarting");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    })
}

async fn run(store: &dyn Storage, root_ca_pem: &str) -> Result<(), StorageError> {
    let namespaces = key("", "namespaces", None, None);
    let from = store.current_revision().await?;
    let mut changes = store.watch(&namespaces, from).await?;
    for kv in store.list(&namespaces, ListOptions::default()).await?.kvs {
        if let Ok((_, ns)) = objects::decode_stored(&kv.value) {
            ensure(store, &ns, root_ca_pem).await?;
        }
    }
    while let Some(event) = changes.next().await {
        if let Event::Put { kv, .. } = event?
            && let Ok((_, ns)) = objects::decode_stored(&kv.value)
        {
            ensure(store, &ns, root_ca_pem).await?;
        }
    }
    Ok(())
}

/// Gives an active namespace its `default` ServiceAccount and current root CA ConfigMap.
pub async fn ensure(store: &dyn Storage, namespace: &Value, root_ca_pem: &str) -> Result<(), StorageError> {
    if namespace["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    let Some(ns) = namespace["metadata"]["name"].as_str() else { return Ok(()) };
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": { "name": "default", "namespace": ns },
    });
    create_if_absent(store, &key("", "serviceaccounts", Some(ns), Some("default")), "ServiceAccount", account).await?;

    let ca_key = key("", "configmaps", Some(ns), Some(ROOT_CA_CONFIGMAP));
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": ns,
            "annotations": { "kubernetes.io/description": ROOT_CA_DESCRIPTION },
        },
        "data": { "ca.crt": root_ca_pem },
    });
    match store.get(&ca_key).await? {
        None => create_if_absent(store, &ca_key, "ConfigMap", config_map).await,
        // A changed CA (or an edited ConfigMap) is put back, as upstream's publisher does.
        Some(kv) => {
            let (kind, mut current) = objects::decode_stored(&kv.value).map_err(internal)?;
            if current["data"]["ca.crt"] == root_ca_pem {
                return Ok(());
            }
            current["data"] = json!({ "ca.crt": root_ca_pem });
            let bytes = objects::encode_stored(&kind, &current).map_err(internal)?;
            match store.update(&ca_key, bytes.into(), kv.mod_revision).await {
                Ok(_) | Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

async fn create_if_absent(store: &dyn Storage, k: &str, kind: &str, mut object: Value) -> Result<(), StorageError> {
    if store.get(k).await?.is_some() {
        return Ok(());
    }
    object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    object["metadata"]["creationTimestamp"] = json!(objects::now());
    let kind = Kind { group: String::new(), version: "v1".into(), kind: kind.into() };
    let bytes = objects::encode_stored(&kind, &object).map_err(internal)?;
    match store.create(k, bytes.into()).await {
        Ok(_) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal { context: "service account controller".into(), source: e.to_string().into() }
}
