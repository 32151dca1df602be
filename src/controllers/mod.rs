//! Control loops kube-apiserver leaves to other components but that a lone kapi needs for the
//! API to behave as users expect (upstream runs them in kube-controller-manager). Each works
//! only through the storage interface, like any other client of the store.

pub mod clusterrole_aggregation;
pub mod customresourcedefinitions;
pub mod kubernetes_endpoints;
pub mod namespace;
pub mod service_account_tokens;
pub mod service_accounts;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::registry::store::{Deleted, Store, WriteOptions};
use crate::status::ApiError;
use crate::storage::{ListOptions, Storage};

/// How long a loop waits before looking again while something waits (objects' finalizers), or
/// before starting again after a failure.
const RETRY: Duration = Duration::from_secs(2);

/// A control loop that looks at everything it owns in each pass, so that a pass is idempotent
/// and a restart or a second replica is harmless: [`spawn`] runs a pass at start, then at each
/// change under its storage prefix, and every [`RETRY`] while the pass says something waits.
pub trait Reconciler: Send + Sync + 'static {
    /// What logs call the loop.
    const NAME: &'static str;

    /// The storage prefix whose changes start a pass.
    fn prefix(&self) -> String;

    /// One pass; true while something waits.
    fn reconcile<'a>(&'a self, storage: &'a dyn Storage) -> Pin<Box<dyn Future<Output = Result<bool, ApiError>> + Send + 'a>>;
}

/// Runs `reconciler` until the process ends, starting again after a failure.
pub fn spawn<R: Reconciler>(storage: Arc<dyn Storage>, reconciler: R) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = run(storage.as_ref(), &reconciler).await {
                tracing::warn!(error = %e, "{}: restarting", R::NAME);
                tokio::time::sleep(RETRY).await;
            }
        }
    })
}

async fn run<R: Reconciler>(storage: &dyn Storage, reconciler: &R) -> Result<(), ApiError> {
    let from = storage.current_revision().await?;
    let mut changes = storage.watch(&reconciler.prefix(), from).await?;
    let mut pending = reconciler.reconcile(storage).await?;
    loop {
        let wait = if pending { RETRY } else { Duration::from_secs(3600) };
        match tokio::time::timeout(wait, changes.next()).await {
            Ok(None) => return Ok(()),
            Ok(Some(Err(e))) => return Err(e.into()),
            Ok(Some(Ok(_))) | Err(_) => {}
        }
        pending = reconciler.reconcile(storage).await?;
    }
}

/// Deletes every object of one resource (in `namespace`, or all), each through the resource's
/// store with `options` (finalizers mark it, its strategy decides the rest), as upstream's
/// controllers delete collections; returns how many are still there.
pub async fn delete_all(storage: &dyn Storage, resource: &Store<'_>, namespace: Option<&str>, options: &Value) -> Result<usize, ApiError> {
    let mut remaining = 0;
    for kv in storage.list(&resource.collection_key(namespace), ListOptions::default()).await?.kvs {
        let name = kv.key.rsplit('/').next().unwrap_or_default().to_owned();
        match resource.delete_at(WriteOptions::default(), &kv.key, &name, options).await {
            Ok(Deleted::Gone(..)) => {}
            Ok(Deleted::Pending(..)) => remaining += 1,
            // Gone meanwhile, or changing: the next pass sees it as it is.
            Err(e) if e.code == 404 => {}
            Err(e) if e.code == 409 => remaining += 1,
            Err(e) => return Err(e),
        }
    }
    Ok(remaining)
}
