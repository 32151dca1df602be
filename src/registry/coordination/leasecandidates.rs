//! LeaseCandidates (`pkg/registry/coordination/leasecandidate`): generic but for a PUT, which
//! creates one.

use crate::registry::strategy::Strategy;

/// Upstream's `LeaseCandidateStrategy`.
pub struct LeaseCandidateStrategy;

impl Strategy for LeaseCandidateStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::groups::LEASE_CANDIDATES)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}
