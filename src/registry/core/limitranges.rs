//! LimitRanges (`pkg/registry/core/limitrange`): generic but for a PUT, which creates one.

use crate::registry::strategy::Strategy;

/// Upstream's `limitrangeStrategy`.
pub struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
