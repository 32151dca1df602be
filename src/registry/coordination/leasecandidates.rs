//! LeaseCandidates (`pkg/registry/coordination/leasecandidate`): generic but for a PUT, which
//! creates one.

use crate::registry::strategy::Strategy;

/// Upstream's `LeaseCandidateStrategy`.
pub struct LeaseCandidateStrategy;

impl Strategy for LeaseCandidateStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
