//! One client connection's limits, as Go's `http.Server` with kube-apiserver's settings
//! enforces them: a TLS handshake deadline, a deadline for the first request's headers, an idle
//! timeout between requests, and a cap on open connections with a backoff when `accept` fails.
//!
//! [`ConnectionActivity`] counts a connection's requests in flight (from the handler's start
//! until the answer's body is sent or dropped, so a watch streaming for an hour is in flight);
//! [`ConnectionActivity::idle`] resolves once nothing has been in flight for the idle timeout,
//! and the server then closes the connection gracefully.
//!
//! The idle timer runs in the connection's own task, so waking it from a request's start or end
//! woke the task while it was being polled: tokio then queues it again and rouses the other
//! worker thread, a futex wake and two context switches per request. Requests starting and
//! ending leave it asleep: it wakes at its deadline and looks again, and only the end of the
//! last request in flight wakes it, and only while it waits for that.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    /// Wakes [`ConnectionActivity::idle`] when the last request in flight ends, if it waits for
    /// that: only then is it registered, so at other times an end wakes nothing.
    ended: Notify,
    /// Whether a request has started yet: before the first one, the header-read deadline
    /// applies instead of the idle timeout.
    served: AtomicBool,
}

impl Default for ConnectionActivity {
    fn default() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            ended: Notify::new(),
            served: AtomicBool::new(false),
        }
    }
}

impl ConnectionActivity {
    /// Marks a request in flight until the returned guard is dropped.
    pub fn start(self: &Arc<Self>) -> InFlight {
        self.served.store(true, Ordering::Relaxed);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Resolves once no request has been in flight for `idle` (or, before the first request,
    /// for `first_request`).
    pub async fn idle(&self, first_request: Duration, idle: Duration) {
        loop {
            if self.in_flight() > 0 {
                let ended = self.ended.notified();
                tokio::pin!(ended);
                // Registered before the count is read again, so an end in between is not missed.
                ended.as_mut().enable();
                if self.in_flight() > 0 {
                    ended.await;
                }
                continue;
            }
            let limit = if self.served.load(Ordering::Relaxed) { idle } else { first_request };
            let deadline = *self.idle_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner) + limit;
            if Instant::now() >= deadline {
                return;
            }
            // Requests meanwhile move the deadline on (or are still in flight): looked at again then.
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A request in flight; dropping it ends the request for the connection's idle timeout.
#[derive(Debug)]
pub struct InFlight(Arc<ConnectionActivity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        // Written before the count goes down, so whoever sees no request in flight sees when the
        // last one ended; while others are still in flight the time is not read, and the last
        // one writes it again.
        *activity.idle_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
        if activity.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            activity.ended.notify_waiters();
        }
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
    use std::future::Future;

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

    /// Requests that start and end while the timer sleeps move its deadline on without waking
    /// it; the end of the last request in flight wakes it only while it waits for that end.
    #[tokio::test(start_paused = true)]
    async fn requests_wake_the_idle_timer_only_when_it_waits_for_their_end() {
        struct CountingWaker(AtomicUsize);
        impl std::task::Wake for CountingWaker {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (first, idle) = (Duration::from_secs(32), Duration::from_secs(90));
        let activity = Arc::new(ConnectionActivity::default());
        let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let started = Instant::now();
        let timer = activity.idle(first, idle);
        tokio::pin!(timer);
        assert!(timer.as_mut().poll(&mut cx).is_pending());

        tokio::time::advance(Duration::from_secs(5)).await;
        let request = activity.start();
        tokio::time::advance(Duration::from_secs(1)).await;
        drop(request);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 0, "a request's start and end leave the sleeping timer alone");
        // The timer wakes at the first-request deadline, then sleeps until 90 s after the end.
        (&mut timer).await;
        assert_eq!(started.elapsed().as_secs(), 96);

        // In flight at the deadline: the timer waits for the end, which wakes it.
        let activity = Arc::new(ConnectionActivity::default());
        let request = activity.start();
        let timer = activity.idle(first, idle);
        tokio::pin!(timer);
        assert!(timer.as_mut().poll(&mut cx).is_pending());
        drop(request);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    }
}
