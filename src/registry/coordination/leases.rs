//! Leases (`pkg/registry/coordination/lease`): generic but for a PUT, which creates one.

use crate::registry::strategy::Strategy;

/// Upstream's `leaseStrategy`.
pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::LEASES)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}
