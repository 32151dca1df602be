//! Control loops kube-apiserver leaves to other components but that a lone kapi needs for the
//! API to behave as users expect (upstream runs them in kube-controller-manager). Each works
//! only through the storage interface, like any other client of the store.

pub mod customresourcedefinitions;
pub mod namespace;
pub mod service_accounts;

use serde_json::Value;

use crate::registry::store::{Deleted, Store, WriteOptions};
use crate::status::ApiError;
use crate::storage::{ListOptions, Storage};

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
