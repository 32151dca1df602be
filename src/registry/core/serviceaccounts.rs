//! ServiceAccounts (`pkg/registry/core/serviceaccount`): a delete answers with the deleted
//! object; `serviceaccounts/<name>/token` is the TokenRequest subresource (`tokens`).

pub mod tokens;

use crate::registry::strategy::Strategy;

/// Upstream's `strategy` for service accounts, with its store's `ReturnDeletedObject`.
pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::SERVICE_ACCOUNTS)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn own_rest(&self, subresource: Option<&str>) -> Option<crate::registry::OwnRest> {
        (subresource == Some("token")).then_some(crate::registry::OwnRest::ServiceAccountToken)
    }
}
