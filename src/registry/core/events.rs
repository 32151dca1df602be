//! Events, core and `events.k8s.io` (`pkg/registry/core/event`): both groups share the `events`
//! prefix, and events expire `--event-ttl` after their last write.

use std::time::Duration;

use crate::registry::strategy::Strategy;
use crate::tables::{self, Columns, Printer};

/// Upstream's `eventStrategy`, with its store's `TTLFunc`, and the printer of its group's
/// events.
pub struct EventStrategy(&'static Printer);

/// Core events.
pub static CORE_EVENTS: EventStrategy = EventStrategy(&tables::EVENTS);
/// `events.k8s.io` events, printed as the core events they are stored as.
pub static EVENTS_V1: EventStrategy = EventStrategy(&tables::EVENTS_V1);

impl Strategy for EventStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(self.0)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("events")
    }

    /// A PUT to a missing Event creates it (`eventStrategy`), in either group.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn storage_ttl(&self, event_ttl: Duration) -> Option<Duration> {
        (!event_ttl.is_zero()).then_some(event_ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_expire_after_the_event_ttl() {
        assert_eq!(CORE_EVENTS.storage_ttl(Duration::from_secs(3600)), Some(Duration::from_secs(3600)));
        assert_eq!(EVENTS_V1.storage_ttl(Duration::ZERO), None, "0 keeps them");
        assert_eq!(crate::registry::keys::storage_prefix("events.k8s.io", "events"), "events", "both groups share the prefix");
    }
}
