//! What kube-controller-manager's ServiceAccount controller and root-CA publisher do, so that
//! pods can be created as on any cluster: every active namespace has a `default`
//! ServiceAccount and a `kube-root-ca.crt` ConfigMap with the cluster's CA bundle (which the
//! token volume of every pod mounts, see `registry::admission::service_account`).
//!
//! Writes go through the registry's `Store`, as a client's would (admission, validation, dry
//! run and watch apply alike): create-if-absent, and a guarded update for the CA, so replicas
//! and restarts are harmless.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::warn;

use crate::registry::admission::ROOT_CA_CONFIGMAP;
use crate::registry::keys::key;
use crate::registry::objects::{self, Kind};
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::{Event, ListOptions, Storage};

const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

pub fn spawn(store: Arc<dyn Storage>, config: Arc<StoreConfig>, root_ca_pem: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(store.as_ref(), &config, &root_ca_pem).await {
                warn!(error = %e, "service account controller: restarting");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    })
}

async fn run(store: &dyn Storage, config: &StoreConfig, root_ca_pem: &str) -> Result<(), ApiError> {
    let namespaces = key("", "namespaces", None, None);
    let from = store.current_revision().await?;
    let mut changes = store.watch(&namespaces, from).await?;
    for kv in store.list(&namespaces, ListOptions::default()).await?.kvs {
        if let Ok((_, ns)) = objects::decode_stored(&kv.value) {
            ensure(store, config, &ns, root_ca_pem).await?;
        }
    }
    while let Some(event) = changes.next().await {
        if let Event::Put { kv, .. } = event?
            && let Ok((_, ns)) = objects::decode_stored(&kv.value)
        {
            ensure(store, config, &ns, root_ca_pem).await?;
        }
    }
    Ok(())
}

/// The namespace's `default` ServiceAccount and CA ConfigMap, created when missing and the CA
/// bundle brought up to date. A namespace being deleted is left alone.
pub async fn ensure(store: &dyn Storage, config: &StoreConfig, namespace: &Value, root_ca_pem: &str) -> Result<(), ApiError> {
    if namespace["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    let Some(ns) = namespace["metadata"]["name"].as_str() else { return Ok(()) };
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
    create_if_absent(store, config, ns, "serviceaccounts", account).await?;

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
    let ca_key = key("", "configmaps", Some(ns), Some(ROOT_CA_CONFIGMAP));
    let Some(kv) = store.get(&ca_key).await? else {
        return create_if_absent(store, config, ns, "configmaps", config_map).await;
    };
    let (_, current) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
    if current["data"]["ca.crt"] == root_ca_pem {
        return Ok(());
    }
    let mut with_bundle = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new("", "configmaps"), ROOT_CA_CONFIGMAP))?;
        let mut object = current.internal_object();
        let config_map: &mut kapi_api::api::core::v1::ConfigMap = object.typed_mut()?;
        config_map.data = [("ca.crt".to_owned(), root_ca_pem.to_owned())].into();
        Ok(Proposed::edited(object))
    };
    let config_maps = Store::new(store, config, "", "configmaps", Kind::core_v1("ConfigMap"));
    match config_maps
        .update(
            WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() },
            Some(ns),
            ROOT_CA_CONFIGMAP,
            &mut with_bundle,
        )
        .await
    {
        Err(e) if e.code != 404 && e.code != 409 => Err(e),
        _ => Ok(()),
    }
}

/// Creates a core/v1 object unless it exists (another replica may create it first).
async fn create_if_absent(store: &dyn Storage, config: &StoreConfig, ns: &str, resource: &str, object: Value) -> Result<(), ApiError> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    if store.get(&key("", resource, Some(ns), Some(&name))).await?.is_some() {
        return Ok(());
    }
    let kind = Kind::core_v1(object["kind"].as_str().unwrap_or_default());
    let incoming = Incoming::from_object("", resource, &kind, &object)?;
    // Created meanwhile (409), or the namespace went away or began terminating (404, 403): no
    // account is wanted then.
    match Store::new(store, config, "", resource, kind)
        .create(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, Some(ns), incoming)
        .await
    {
        Err(e) if ![403, 404, 409].contains(&e.code) => Err(e),
        _ => Ok(()),
    }
}
