//! The storage interface, modelled on etcd: the store kube-apiserver sits on.
//!
//! kube-apiserver's generic registry needs exactly what etcd's MVCC store offers, so this trait
//! offers the same and nothing more, so that an etcd backend can slot in behind it later:
//!
//! - one global [`Revision`] that every successful write bumps by exactly one (it becomes an
//!   object's `resourceVersion`);
//! - per key a create and a mod revision, and writes that compare-and-swap on the mod revision
//!   (optimistic concurrency: `metadata.resourceVersion` preconditions, `GuaranteedUpdate`);
//! - reads of the state as of a past revision (consistent paging with continue tokens);
//! - watches from a revision, replaying history and then following live writes without a gap;
//! - compaction of old history, after which reads and watches at older revisions fail with
//!   [`StorageError::Compacted`] (the REST layer's `410 Gone`).
//!
//! Keys are opaque strings and values opaque bytes: encoding objects and laying out keys
//! (`/registry/<resource>/<namespace>/<name>`) is the generic store's business, not the backend's.
//!
//! [`conformance`] is the one test suite every backend must pass (as upstream runs
//! `pkg/storage/testing/store_tests.go` against each of its stores); [`embedded`] is the backend
//! kapi runs on without an etcd.

pub mod cache;
pub mod conformance;
pub mod embedded;
pub mod etcd;

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

pub use embedded::{CommitCounters, EmbeddedOptions, EmbeddedStore};

/// A point in the store's history, as etcd's revision: global, starting at 1 for an empty store,
/// and bumped by exactly one by every successful write (create, update, delete). Failed writes
/// and compaction do not bump it.
pub use crate::list_options::Revision;

/// An engine's error, kept as the source of [`StorageError::Unavailable`] and
/// [`StorageError::Internal`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What every [`Storage`] method returns: a boxed future, so that the trait stays dyn-compatible
/// (the server holds an `Arc<dyn Storage>`) without the `async_trait` crate, and `Send`, so that
/// handlers can run on any worker thread.
pub type StorageFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StorageError>> + Send + 'a>>;

/// One key's current value and the revisions that describe it, as etcd's `mvccpb.KeyValue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision of the write that created the key; a key deleted and created again gets a
    /// new one (which is how a watcher tells a re-created object from an updated one).
    pub create_revision: Revision,
    /// The revision of the last write to the key: the object's `resourceVersion` and what
    /// [`Storage::update`] and [`Storage::delete`] compare against.
    pub mod_revision: Revision,
}

/// How [`Storage::list`] reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `None` reads the latest state; `Some(r)` the state as of revision `r` (what a continue
    /// token or `resourceVersionMatch=Exact` asks for). Fails with [`StorageError::Compacted`]
    /// below the compacted revision and [`StorageError::FutureRevision`] above the current one.
    pub revision: Option<Revision>,
    /// The most keys to return; `None` or `Some(0)` means no limit (as `limit=0` upstream).
    pub limit: Option<usize>,
    /// Return only keys strictly after this one: the position a continue token encodes.
    pub start_after: Option<String>,
    /// With `revision` unset: `None` (the default) is a consistent read of the latest state;
    /// `Some(n)` accepts the state at any revision `>= n` (`resourceVersion=0` is `Some(0)`,
    /// `resourceVersionMatch=NotOlderThan` `Some(rv)`), which lets the watch cache
    /// ([`cache::WatchCache`]) answer from memory. Backends ignore it: the latest state qualifies.
    pub not_older_than: Option<Revision>,
}

/// One page of [`Storage::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListResult {
    /// The keys under the prefix, sorted by key.
    pub kvs: Vec<KeyValue>,
    /// The revision the page is consistent at: the requested one, or the current one when none
    /// was requested. Later pages ask for this revision so that the whole list is one snapshot.
    pub revision: Revision,
    /// Whether keys after the last returned one remain (the list continues).
    pub more: bool,
    /// How many keys remain after this page when `more` is set, `None` otherwise; upstream's
    /// `ListMeta.remainingItemCount`, likewise set only on a list that continues.
    pub remaining: Option<i64>,
}

/// One change seen by a watch. Both variants carry the previous state of the key because
/// kube-apiserver's watch filters by label and field selectors: an update that moves an object
/// out of a selector must reach the watcher as a deletion, which needs the old object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The key was created (`prev` is `None`) or updated. `kv.mod_revision` is the event's
    /// revision.
    Put { kv: KeyValue, prev: Option<KeyValue> },
    /// The key was deleted at `revision`; `prev` is its last value.
    Delete { prev: KeyValue, revision: Revision },
    /// Nothing under the watched prefix changed, and every event up to `revision` has been
    /// delivered: etcd's progress notification. It lets an idle watch report a recent
    /// position (upstream feeds its bookmarks from these). Not every backend sends them.
    Progress { revision: Revision },
}

impl Event {
    /// The revision of the write this event reports.
    pub fn revision(&self) -> Revision {
        match self {
            Event::Put { kv, .. } => kv.mod_revision,
            Event::Delete { revision, .. } | Event::Progress { revision } => *revision,
        }
    }

    /// The key the event is about (empty for [`Event::Progress`], which is about none).
    pub fn key(&self) -> &str {
        match self {
            Event::Put { kv, .. } => &kv.key,
            Event::Delete { prev, .. } => &prev.key,
            Event::Progress { .. } => "",
        }
    }
}

/// Everything a storage operation can fail with. Each variant carries the key or revisions
/// involved, so that the REST layer can build its `Status` (409, 404, 410, 500, 503) from the
/// error alone.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    #[error("key {key:?} not found")]
    NotFound { key: String },
    /// A compare-and-swap lost: the key was written since the caller read it. `current` is what
    /// it holds now, so that `GuaranteedUpdate` can retry without another read.
    #[error(
        "key {key:?} was modified: expected mod revision {expected}, current mod revision {}",
        current.mod_revision
    )]
    Conflict { key: String, expected: Revision, current: KeyValue },
    /// The history needed is gone: the client must re-list (HTTP 410 Gone).
    #[error("revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted { requested: Revision, compacted: Revision },
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision { requested: Revision, current: Revision },
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    #[error("invalid revision {revision}: {reason}")]
    InvalidRevision { revision: Revision, reason: &'static str },
    /// The write is larger than the store takes: etcd refuses requests over its
    /// `--max-request-bytes` (1.5 MiB by default, [`MAX_REQUEST_BYTES`]) and the embedded store
    /// applies the same limit. `size` is the key's and the value's bytes. Retrying will not help;
    /// the REST layer answers as kube-apiserver does (500 `etcdserver: request is too large`).
    #[error("writing {key:?} is too large a request: {size} bytes of key and value")]
    RequestTooLarge { key: String, size: usize },
    /// The watcher fell `capacity` events behind and was closed so that writers never wait for
    /// it; the client must watch again (or re-list), as upstream's watch cache terminates
    /// watchers that cannot keep up.
    #[error("watch closed: the watcher fell {capacity} events behind")]
    WatchOverflow { capacity: usize },
    /// The watch cache of the resource has not listed it yet (or has stopped following the
    /// backend), so it cannot start a watch: upstream's 429 "storage is (re)initializing".
    #[error("storage is (re)initializing")]
    Initializing { retry_after_seconds: i32 },
    /// The engine cannot serve now (I/O error, store closed, no runtime); retrying may help.
    #[error("storage unavailable: {context}")]
    Unavailable {
        context: String,
        #[source]
        source: BoxError,
    },
    /// The engine or its data is broken (corrupt record, bug); retrying will not help.
    #[error("storage internal error: {context}")]
    Internal {
        context: String,
        #[source]
        source: BoxError,
    },
}

/// A key-value store with etcd's semantics. See the module documentation for why; every backend
/// must pass [`conformance::run_all`].
///
/// Keys must be non-empty ([`StorageError::InvalidKey`]); prefixes are plain string prefixes
/// (callers end them with `/` so that `/pods/a` does not match `/pods/ab`).
pub trait Storage: Send + Sync {
    /// The key's current value, or `None` if it does not exist.
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>>;

    /// The key's value as of any revision `>= min_revision` (a `resourceVersion=0` or
    /// `resourceVersion=N` get, which the watch cache answers from memory). Backends read the
    /// latest value, which always qualifies.
    fn get_not_older_than<'a>(&'a self, key: &'a str, min_revision: Revision) -> StorageFuture<'a, Option<KeyValue>> {
        let _ = min_revision;
        self.get(key)
    }

    /// The key's value as upstream's admission plugins read objects, through an informer: the
    /// cached value when there is one, else the store's (an object created a moment ago may not
    /// be cached yet). Saves a round trip to etcd on every write that looks something up.
    fn get_cached<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        Box::pin(async move {
            match self.get_not_older_than(key, 0).await? {
                Some(kv) => Ok(Some(kv)),
                None => self.get(key).await,
            }
        })
    }

    /// The keys starting with `prefix`, sorted, as of `options.revision`, paged by `limit` and
    /// `start_after`. A requested revision below 1 is [`StorageError::InvalidRevision`].
    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult>;

    /// Creates `key`; fails with [`StorageError::AlreadyExists`] if it exists. Returns the new
    /// key-value, whose create and mod revisions are the write's revision.
    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue>;

    /// Replaces `key`'s value if its mod revision is still `expected_mod_revision`
    /// ([`StorageError::Conflict`] otherwise, [`StorageError::NotFound`] if it does not exist).
    /// Returns the new key-value.
    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_mod_revision: Revision) -> StorageFuture<'a, KeyValue>;

    /// [`Storage::create`], the key expiring `ttl` after this write (upstream attaches an etcd
    /// lease of `--event-ttl` to every Event write). Expiry is a deletion at a new revision,
    /// which watchers see as [`Event::Delete`]; a later write replaces the deadline (a plain
    /// [`Storage::update`] makes the key permanent again, as a put without a lease on etcd).
    /// A backend without expiry keeps the key.
    fn create_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, ttl: std::time::Duration) -> StorageFuture<'a, KeyValue> {
        let _ = ttl;
        self.create(key, value)
    }

    /// [`Storage::update`], the key expiring `ttl` after this write (replacing any earlier
    /// deadline).
    fn update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: Revision,
        ttl: std::time::Duration,
    ) -> StorageFuture<'a, KeyValue> {
        let _ = ttl;
        self.update(key, value, expected_mod_revision)
    }

    /// Deletes `key`, if `expected_mod_revision` is `None` or equals its mod revision. Returns
    /// the deleted key-value and the revision of the deletion.
    fn delete<'a>(&'a self, key: &'a str, expected_mod_revision: Option<Revision>) -> StorageFuture<'a, (KeyValue, Revision)>;

    /// Watches the keys starting with `prefix`: the stream yields, in revision order and without
    /// gaps or duplicates, every event with a revision greater than `from_revision`, first from
    /// history and then live. `0` watches only events from now on. Fails with
    /// [`StorageError::Compacted`] if events after `from_revision` have been compacted away and
    /// [`StorageError::FutureRevision`] if `from_revision` is ahead of the store (as the watch
    /// cache answers "too large resource version"); a negative one is
    /// [`StorageError::InvalidRevision`].
    fn watch<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream>;

    /// [`Storage::watch`] for a consumer that keeps up as a rule, the watch cache's feed: a
    /// backend that ends a watch whose consumer falls behind (etcd's, to keep one slow API
    /// client from holding data on the shared connection) waits for this one instead, however
    /// long, so that a burst larger than a watch may hold never ends the cache's one watch.
    fn watch_patiently<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        self.watch(prefix, from_revision)
    }

    /// The revision of the last acknowledged write (1 for an empty store).
    fn current_revision(&self) -> StorageFuture<'_, Revision>;

    /// Drops the history up to and including `revision`: lists and watches at older revisions
    /// fail with [`StorageError::Compacted`] from then on. Current values are kept. Fails with
    /// [`StorageError::Compacted`] if `revision` is not above the compacted revision (as etcd).
    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()>;

    /// The revision history was last compacted at (0 if never).
    fn compacted_revision(&self) -> StorageFuture<'_, Revision>;

    /// Whether the store answers [`Storage::request_progress`] (etcd's `RequestWatchProgress`):
    /// then a watch cache can prove it is current by asking, rather than by reading the store.
    fn answers_progress_requests(&self) -> bool {
        false
    }

    /// Asks every live watch under `prefix` to report its position: each gets an
    /// [`Event::Progress`] at the store's current revision, after every earlier event it is
    /// owed (a watch still catching up, or whose buffer is full, misses it). Does nothing on a
    /// store that does not [answer them](Storage::answers_progress_requests).
    fn request_progress(&self, _prefix: &str) {}
}

/// What a backend puts behind a [`WatchStream`].
pub trait WatchSource: Send {
    /// The next event: `Ok(None)` when the watch ended cleanly (the store closed), `Err` when it
    /// ended with an error. Neither is followed by another call. Implementations must be
    /// cancel-safe: if the returned future is dropped before completing, no event may be lost.
    fn next_event(&mut self) -> StorageFuture<'_, Option<Event>>;

    /// [`WatchSource::next_event`], as a [`SharedEvent`]: a source that hands the same event
    /// to many watchers (the watch cache) hands out the one it holds, so that what a reader
    /// derives from it is derived once for all of them.
    fn next_shared(&mut self) -> StorageFuture<'_, Option<Arc<SharedEvent>>> {
        Box::pin(async move { Ok(self.next_event().await?.map(SharedEvent::new)) })
    }
}

/// An event as the watch cache hands it to every watcher of its resource, with one slot for
/// what the first reader derives from it (the registry's decoded objects), so that work is
/// done once per event rather than once per watcher: with thousands of watchers, looking up
/// the decoded object again for each was a large part of a delivery. Upstream's cacher wraps
/// an event's object once for all its watchers in the same way (`cachingObject`).
pub struct SharedEvent {
    event: Event,
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl SharedEvent {
    pub fn new(event: Event) -> Arc<Self> {
        Arc::new(SharedEvent { event, derived: OnceLock::new() })
    }

    /// What `derive` makes of the event, made by the first reader that asks (others asking at
    /// the same time wait for it) and kept for every later one. An event keeps one derived
    /// value: `None` when it already holds one of another type.
    pub fn derived<T: Any + Send + Sync>(&self, derive: impl FnOnce(&Event) -> T) -> Option<&T> {
        self.derived.get_or_init(|| Box::new(derive(&self.event))).downcast_ref()
    }

    /// The event itself: moved out when this was its last holder, cloned otherwise.
    pub fn into_event(self: Arc<Self>) -> Event {
        Arc::try_unwrap(self).map_or_else(|shared| shared.event.clone(), |own| own.event)
    }
}

impl std::ops::Deref for SharedEvent {
    type Target = Event;

    fn deref(&self) -> &Event {
        &self.event
    }
}

impl fmt::Debug for SharedEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.event.fmt(f)
    }
}

/// The events of one watch, from [`Storage::watch`]. Dropping it ends the watch.
///
/// A plain `next()` rather than `futures::Stream`, because the crate does not depend on
/// `futures`; the HTTP layer adapts it where it needs a stream.
pub struct WatchStream {
    /// `None` once the watch has ended, so that the stream is fused.
    source: Option<Box<dyn WatchSource>>,
}

impl WatchStream {
    /// Wraps a backend's event source.
    pub fn new(source: impl WatchSource + 'static) -> Self {
        WatchStream { source: Some(Box::new(source)) }
    }

    /// The next event; `Some(Err(_))` is the last item, `None` means the watch has ended.
    ///
    /// Cancel-safe: it can be used in `tokio::select!` without losing events.
    pub async fn next(&mut self) -> Option<Result<Event, StorageError>> {
        let source = self.source.as_mut()?;
        let next = source.next_event().await;
        self.fuse(next)
    }

    /// [`WatchStream::next`], the event as its source shares it (see [`SharedEvent`]).
    pub async fn next_shared(&mut self) -> Option<Result<Arc<SharedEvent>, StorageError>> {
        let source = self.source.as_mut()?;
        let next = source.next_shared().await;
        self.fuse(next)
    }

    /// A source's answer as the stream's: after the end or an error, the stream has ended.
    fn fuse<T>(&mut self, next: Result<Option<T>, StorageError>) -> Option<Result<T, StorageError>> {
        match next {
            Ok(Some(event)) => Some(Ok(event)),
            Ok(None) => {
                self.source = None;
                None
            }
            Err(error) => {
                self.source = None;
                Some(Err(error))
            }
        }
    }
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream").field("ended", &self.source.is_none()).finish()
    }
}

/// etcd's default `--max-request-bytes` (1.5 MiB): the largest write etcd accepts unless
/// configured otherwise, and the embedded store's limit on a key and value together. etcd counts
/// the whole encoded request (the key once more in the transaction's compare, and some 50 bytes
/// of framing), so it refuses slightly smaller objects than the embedded store.
pub const MAX_REQUEST_BYTES: usize = 1_572_864;

/// The largest request kube-apiserver's etcd client sends (clientv3's default
/// `MaxCallSendMsgSize`, 2 MiB, which kube-apiserver does not change): larger writes fail in
/// the client with gRPC's `ResourceExhausted` before reaching etcd, with another message.
pub const MAX_SEND_BYTES: usize = 2 * 1024 * 1024;

/// Refuses a write of `value` to `key` over [`MAX_REQUEST_BYTES`].
pub(crate) fn check_request_size(key: &str, value: &[u8]) -> Result<(), StorageError> {
    let size = key.len().saturating_add(value.len());
    if size > MAX_REQUEST_BYTES {
        return Err(StorageError::RequestTooLarge { key: key.to_owned(), size });
    }
    Ok(())
}

/// Rejects keys no backend can store meaningfully: the empty key would sit under every prefix
/// (etcd rejects it too).
pub(crate) fn check_key(key: &str) -> Result<(), StorageError> {
    if key.is_empty() {
        return Err(StorageError::InvalidKey { key: String::new(), reason: "keys must not be empty" });
    }
    Ok(())
}

/// A storage failure seen by an API request: an unreachable or timed-out store is a 503 the
/// client may retry, compacted history a 410, anything else a 500.
impl From<StorageError> for crate::status::ApiError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Unavailable { .. } => crate::status::ApiError::service_unavailable(format!("the storage is unavailable: {e}")),
            StorageError::Initializing { retry_after_seconds } => {
                crate::status::ApiError::too_many_requests(e.to_string(), retry_after_seconds)
            }
            StorageError::Compacted { requested, compacted } => {
                crate::status::ApiError::too_old_resource_version(requested.max(0) as u64, compacted.max(0) as u64)
            }
            StorageError::FutureRevision { requested, current } => {
                crate::status::ApiError::timeout(&format!("Too large resource version: {requested}, current: {current}"), 1)
            }
            // kube-apiserver passes etcd's error through unconverted (`InterpretCreateError`,
            // `InterpretUpdateError` keep it), so `ErrorToAPIStatus` makes it a 500 with no
            // reason and the error's text: etcd's `ErrRequestTooLarge`, or, above the 2 MiB its
            // client sends, gRPC's (test/integration/apiserver `TestObjectSizeResponses`).
            StorageError::RequestTooLarge { size, .. } if size > MAX_SEND_BYTES => crate::status::ApiError::new(
                500,
                crate::status::StatusReason::Unknown,
                format!(
                    "rpc error: code = ResourceExhausted desc = trying to send message larger than max ({size} vs. {})",
                    MAX_SEND_BYTES
                ),
            ),
            StorageError::RequestTooLarge { .. } => {
                crate::status::ApiError::new(500, crate::status::StatusReason::Unknown, "etcdserver: request is too large")
            }
            other => crate::status::ApiError::internal(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Replays a fixed script of results.
    struct Script(VecDeque<Result<Option<Event>, StorageError>>);

    impl WatchSource for Script {
        fn next_event(&mut self) -> StorageFuture<'_, Option<Event>> {
            let next = self.0.pop_front().unwrap_or(Ok(None));
            Box::pin(async move { next })
        }
    }

    fn put(key: &str, rev: Revision) -> Event {
        Event::Put { kv: KeyValue { key: key.into(), value: Bytes::new(), create_revision: rev, mod_revision: rev }, prev: None }
    }

    #[tokio::test]
    async fn watch_stream_is_fused_after_an_error() {
        let script = Script(vec![Ok(Some(put("/a", 2))), Err(StorageError::WatchOverflow { capacity: 1 }), Ok(Some(put("/b", 3)))].into());
        let mut stream = WatchStream::new(script);
        assert_eq!(stream.next().await.unwrap().unwrap(), put("/a", 2));
        assert!(matches!(stream.next().await, Some(Err(StorageError::WatchOverflow { capacity: 1 }))));
        assert!(stream.next().await.is_none());
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn watch_stream_is_fused_after_the_end() {
        let mut stream = WatchStream::new(Script(vec![Ok(None), Ok(Some(put("/a", 2)))].into()));
        assert!(stream.next().await.is_none());
        assert!(stream.next().await.is_none());
        assert_eq!(format!("{stream:?}"), "WatchStream { ended: true }");
    }

    #[test]
    fn a_shared_event_derives_once() {
        let event = SharedEvent::new(put("/a", 2));
        let derived = std::sync::atomic::AtomicUsize::new(0);
        let derive = |e: &Event| {
            derived.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            e.revision() * 10
        };
        assert_eq!(event.derived(derive), Some(&20));
        assert_eq!(event.derived(derive), Some(&20));
        assert_eq!(derived.into_inner(), 1, "made by the first reader only");
        assert_eq!(event.derived(|_| "another type"), None, "one derived value per event");
        let held = event.clone();
        assert_eq!(event.into_event(), put("/a", 2), "cloned while shared");
        assert_eq!(held.into_event(), put("/a", 2), "moved out by the last holder");
    }

    #[test]
    fn events_name_their_key_and_revision() {
        let kv = KeyValue { key: "/a".into(), value: Bytes::from_static(b"v"), create_revision: 2, mod_revision: 4 };
        let put = Event::Put { kv: kv.clone(), prev: None };
        assert_eq!((put.key(), put.revision()), ("/a", 4));
        let delete = Event::Delete { prev: kv, revision: 5 };
        assert_eq!((delete.key(), delete.revision()), ("/a", 5));
    }

    #[test]
    fn writes_over_the_request_limit_answer_as_kube_apiserver_on_etcd() {
        use crate::status::{ApiError, StatusReason};
        let key = "/registry/configmaps/default/big";
        assert!(check_request_size(key, &vec![0; MAX_REQUEST_BYTES - key.len()]).is_ok());
        let error = check_request_size(key, &vec![0; MAX_REQUEST_BYTES - key.len() + 1]).unwrap_err();
        assert!(matches!(&error, StorageError::RequestTooLarge { key: k, size } if k == key && *size == MAX_REQUEST_BYTES + 1));
        // `ErrorToAPIStatus` on etcd's unconverted `ErrRequestTooLarge`: 500, no reason.
        let status = ApiError::from(error).to_status();
        assert_eq!((status.code, status.reason, status.details), (Some(500), None, None));
        assert_eq!(status.message.as_deref(), Some("etcdserver: request is too large"));
        // Beyond what kube-apiserver's etcd client sends: gRPC's error, also a 500.
        let api = ApiError::from(StorageError::RequestTooLarge { key: key.into(), size: 3_000_000 });
        assert_eq!((api.code, api.reason), (500, StatusReason::Unknown));
        assert_eq!(api.message, "rpc error: code = ResourceExhausted desc = trying to send message larger than max (3000000 vs. 2097152)");
        assert_eq!(api.retry_after_seconds(), None);
    }

    #[test]
    fn errors_carry_their_context() {
        let current = KeyValue { key: "/a".into(), value: Bytes::new(), create_revision: 2, mod_revision: 7 };
        let conflict = StorageError::Conflict { key: "/a".into(), expected: 3, current };
        assert_eq!(conflict.to_string(), "key \"/a\" was modified: expected mod revision 3, current mod revision 7");
        let compacted = StorageError::Compacted { requested: 4, compacted: 9 };
        assert_eq!(compacted.to_string(), "revision 4 has been compacted (compacted revision 9)");
        let io = StorageError::Unavailable { context: "commit".into(), source: "disk full".into() };
        assert_eq!(std::error::Error::source(&io).map(ToString::to_string).as_deref(), Some("disk full"));
        assert!(check_key("").is_err());
        assert!(check_key("/a").is_ok());
    }
}
