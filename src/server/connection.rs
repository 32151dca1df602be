//! One client connection's limits, as Go's `http.Server` with kube-apiserver's settings
//! enforces them: a TLS handshake deadline, a deadline for the first request's headers, an idle
//! timeout between requests, and a cap on open connections with a backoff when `accept` fails.
//!
//! [`ConnectionActivity`] counts a connection's requests in flight (from the handler's start
//! until the answer's body is sent or dropped, so a watch streaming for an hour is in flight);
//! [`ConnectionActivity::idle`] resolves once nothing has been in flight for the idle timeout,
//! and the server then closes the connection gracefully.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Limits of the connections kapi accepts (`kapi serve` flags; see the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once; further clients wait in the listen backlog until one closes
    /// (Go's `netutil.LimitListener`).
    pub max_connections: usize,
    /// How long a client may take to complete the TLS handshake (Go's server uses the shortest
    /// of its read, read-header and write timeouts: kube-apiserver's 32 s read-header timeout).
    pub tls_handshake_timeout: Duration,
    /// How long a new connection may take to send its first request's headers
    /// (kube-apiserver's `ReadHeaderTimeout`, 32 s); HTTP/1 requests after the first get the
    /// same deadline from hyper.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight (kube-apiserver's
    /// `IdleTimeout`, 90 s).
    pub idle_timeout: Duration,
    /// HTTP/2 streams one connection may have open (kube-apiserver's
    /// `--http2-max-streams-per-connection`, 1000).
    pub http2_max_streams: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 10_000,
            tls_handshake_timeout: Duration::from_secs(32),
            header_read_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            http2_max_streams: 1000,
        }
    }
}

/// The requests in flight on one connection and when the last one ended.
#[derive(Debug)]
pub struct ConnectionActivity {
    in_flight: AtomicUsize,
    /// When the connection last became idle (its start, before any request).
    idle_since: Mutex<Instant>,
    changed: Notify,
    /// Whether a request has started yet: before the first one, the header-read deadline
    /// applies instead of the idle timeout.
    served: std::sync::atomic::AtomicBool,
}

impl Default for ConnectionActivity {
    fn default() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            changed: Notify::new(),
            served: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl ConnectionActivity {
    /// Marks a request in flight until the returned guard is dropped.
    pub fn start(self: &Arc<Self>) -> InFlight {
        self.served.store(true, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
        InFlight(self.clone())
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Resolves once no request has been in flight for `idle` (or, before the first request,
    /// for `first_request`).
    pub async fn idle(&self, first_request: Duration, idle: Duration) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before the state is read, so a change in between is not missed.
            changed.as_mut().enable();
            if self.in_flight() > 0 {
                changed.await;
                continue;
            }
            let limit = if self.served.load(Ordering::Relaxed) { idle } else { first_request };
            let deadline = *self.idle_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner) + limit;
            if Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = &mut changed => {}
            }
        }
    }
}

/// A request in flight; dropping it ends the request for the connection's idle timeout.
#[derive(Debug)]
pub struct InFlight(Arc<ConnectionActivity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.0.idle_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
        }
        self.0.changed.notify_waiters();
    }
}

/// Go's `Server.Serve` backoff after a failed `accept` (EMFILE, ENFILE, ECONNABORTED, ...):
/// 5 ms, doubling up to 1 s, reset by the next success, so a full file table does not spin a
/// core.
#[derive(Debug, Default)]
pub struct AcceptBackoff(Option<Duration>);

impl AcceptBackoff {
    pub fn failed(&mut self) -> Duration {
        let next = match self.0 {
            None => Duration::from_millis(5),
            Some(d) => (d * 2).min(Duration::from_secs(1)),
        };
        self.0 = Some(next);
        next
    }

    pub fn succeeded(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_backoff_doubles_to_a_second_and_resets() {
        let mut backoff = AcceptBackoff::default();
        let delays: Vec<u128> = (0..10).map(|_| backoff.failed().as_millis()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        backoff.succeeded();
        assert_eq!(backoff.failed(), Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn idle_waits_for_requests_in_flight() {
        let activity = Arc::new(ConnectionActivity::default());
        let (first, idle) = (Duration::from_secs(32), Duration::from_secs(90));
        // Before any request: the header deadline.
        let started = Instant::now();
        activity.idle(first, idle).await;
        assert_eq!(started.elapsed().as_secs(), 32);

        // A request in flight for 200 s keeps the connection; the idle time counts from its end.
        let request = activity.start();
        let waiter = {
            let activity = activity.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                activity.idle(first, idle).await;
                started.elapsed().as_secs()
            })
        };
        tokio::time::sleep(Duration::from_secs(200)).await;
        drop(request);
        assert_eq!(waiter.await.unwrap(), 290);
    }
}
