//! Leases (`pkg/registry/coordination/lease`): generic but for a PUT, which creates one.

use crate::registry::strategy::Strategy;

/// Upstream's `leaseStrategy`.
pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
