//! Events, core and `events.k8s.io` (`pkg/registry/core/event`): both groups share the `events`
//! prefix, and events expire `--event-ttl` after their last write.

use std::time::Duration;

use crate::registry::strategy::Strategy;

/// Upstream's `eventStrategy`, with its store's `TTLFunc`.
pub struct EventStrategy;

impl Strategy for EventStrategy {
    fn storage_prefix(&self) -> Option<&'static str> {
        Some("events")
    }

    fn storage_ttl(&self, event_ttl: Duration) -> Option<Duration> {
        (!event_ttl.is_zero()).then_some(event_ttl)
    }
}
