//! kube-controller-manager's tokens controller (`pkg/controller/serviceaccount/tokens_controller.go`)
//! for legacy tokens: a Secret of type `kubernetes.io/service-account-token` naming an
//! existing ServiceAccount (annotation `kubernetes.io/service-account.name`) gets a legacy
//! token, the CA bundle and its namespace in `data`, and the account's uid annotated. Writes go
//! through the `Store`.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::registry::core::serviceaccounts::tokens::TokenAuthority;
use crate::registry::keys::key;
use crate::registry::objects::{self, Kind};
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::{Event, ListOptions, Storage};

const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

pub fn spawn(
    storage: Arc<dyn Storage>,
    config: Arc<StoreConfig>,
    authority: Arc<TokenAuthority>,
    ca_pem: String,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(storage.as_ref(), &config, &authority, &ca_pem).await {
                tracing::warn!(error = %e, "tokens controller: restarting");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    })
}

async fn run(storage: &dyn Storage, config: &StoreConfig, authority: &TokenAuthority, ca_pem: &str) -> Result<(), ApiError> {
    let secrets = key("", "secrets", None, None);
    let listed = storage.list(&secrets, ListOptions::default()).await?;
    let mut changes = storage.watch(&secrets, listed.revision).await?;
    for kv in listed.kvs {
        if let Ok((_, secret)) = objects::decode_stored(&kv.value) {
            ensure(storage, config, authority, ca_pem, &secret).await?;
        }
    }
    while let Some(event) = changes.next().await {
        if let Event::Put { kv, .. } = event?
            && let Ok((_, secret)) = objects::decode_stored(&kv.value)
        {
            ensure(storage, config, authority, ca_pem, &secret).await?;
        }
    }
    Ok(())
}

/// Fills a service-account token Secret that has no token yet.
async fn ensure(
    storage: &dyn Storage,
    config: &StoreConfig,
    authority: &TokenAuthority,
    ca_pem: &str,
    secret: &Value,
) -> Result<(), ApiError> {
    if secret["type"] != TOKEN_TYPE || secret["data"]["token"].is_string() || secret["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    let meta = &secret["metadata"];
    let (Some(namespace), Some(name), Some(account)) =
        (meta["namespace"].as_str(), meta["name"].as_str(), meta["annotations"][NAME_ANNOTATION].as_str())
    else {
        return Ok(());
    };
    let Some(kv) = storage.get(&key("", "serviceaccounts", Some(namespace), Some(account))).await? else { return Ok(()) };
    let (_, sa) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
    let uid = sa["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    if meta["annotations"][UID_ANNOTATION].as_str().is_some_and(|wanted| !wanted.is_empty() && wanted != uid) {
        return Ok(());
    }
    let token = authority.legacy_token(namespace, name, account, &uid)?;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut fill = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new("", "secrets"), name))?;
        let mut object = current.external()?.clone();
        if !object["data"].is_object() {
            object["data"] = json!({});
        }
        object["data"]["token"] = json!(b64(&token));
        object["data"]["ca.crt"] = json!(b64(ca_pem));
        object["data"]["namespace"] = json!(b64(namespace));
        object["metadata"]["annotations"][UID_ANNOTATION] = json!(uid);
        let incoming = Incoming::from_external("", "secrets", &current.kind, object)?;
        Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
    };
    let kind = Kind::core_v1("Secret");
    match Store::new(storage, config, "", "secrets", kind)
        .update(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, Some(namespace), name, &mut fill)
        .await
    {
        Err(e) if e.code != 404 && e.code != 409 => Err(e),
        _ => Ok(()),
    }
}
