//! ServiceAccounts (`pkg/registry/core/serviceaccount`): a delete answers with the deleted
//! object.

use crate::registry::strategy::Strategy;

/// Upstream's `strategy` for service accounts, with its store's `ReturnDeletedObject`.
pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn returns_deleted_object(&self) -> bool {
        true
    }
}
