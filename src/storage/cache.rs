//! [`WatchCache`]: upstream's watch cache (`k8s.io/apiserver/pkg/storage/cacher`) as a
//! [`Storage`] in front of another one, so that many watchers cost one backend watch per
//! resource and `resourceVersion=0` / `NotOlderThan` reads are answered from memory.
//!
//! # Shape
//!
//! One [`Resource`] cache per resource prefix (`/registry/<resource>/`: the key up to its third
//! `/`), created lazily by the first list, `get_not_older_than` or watch under it. A feed task
//! lists the prefix once, then follows ONE backend watch from the list's revision, applying each
//! event to the current objects (a sorted map of key-values, values opaque bytes) and appending
//! it to a sliding window of recent events (upstream's sizing: at least 100 events, at most
//! 102,400, and anything younger than 75 s in between). Watchers are registered with the cache
//! and receive `Arc`s of the window's events through bounded channels; the feed never waits for
//! them: a watcher whose buffer is full is closed with [`StorageError::WatchOverflow`], as the
//! embedded store does.
//!
//! # Consistency rules
//!
//! - Writes, `compact`, `current_revision` and `compacted_revision` go to the backend.
//! - Consistent lists (`list` without `not_older_than` or a revision) are answered from the cache
//!   once it is ready and has reached the backend's current revision, as upstream's
//!   `ConsistentListFromCache`: the cache asks the backend for a watch progress report
//!   ([`Storage::request_progress`]), which reaches it after every earlier event, and waits at
//!   most [`WatchCacheOptions::catch_up`] for it. Only a backend that answers such requests
//!   reliably is asked: the embedded store does; on etcd (3.4.31 / 3.5.13 and later answer
//!   them, Debian's 3.4.23 does not) the list goes to the backend, as it does before the cache
//!   has listed or when the report does not come in time. The cache's watchers get at most
//!   one progress report a second (for their bookmarks), however many lists ask. Consistent
//!   `get`s go to the backend, as upstream's do.
//! - Exact-revision reads (continue tokens, `resourceVersionMatch=Exact`) go to the backend,
//!   unless the cache is at exactly that revision (the next pages of a list it answered).
//! - `not_older_than = Some(n)` (`resourceVersion=0`, `resourceVersionMatch=NotOlderThan`) is
//!   answered from the cache once it has seen revision `n`, waiting at most
//!   [`WatchCacheOptions::catch_up`] for it. A revision beyond the backend's current one is
//!   [`StorageError::FutureRevision`] (upstream's 504 "Too large resource version"). The cache
//!   learns of revisions through its own prefix's events, so `n` may be a write to another
//!   resource: a backend that answers progress requests is asked for a report; when the cache
//!   still cannot tell it has reached `n` in time, the read goes to the backend, whose latest
//!   state is not older than `n` either.
//! - A watch from a revision in the window replays from it and follows live, without gap or
//!   duplicate; from a revision ahead of the cache it waits for nothing: it simply skips events
//!   up to that revision as they arrive. A watch from before the window (older than the cache,
//!   or evicted) falls back to a direct backend watch, which replays from the backend's history
//!   or fails with [`StorageError::Compacted`] (410): kapi creates caches lazily, so clients
//!   resuming from a revision shortly before a cache existed should not have to relist.
//!   Compactions made through the cache trim the windows, so watches from compacted revisions
//!   fail as on the backend.
//! - A watch from `0` starts at the backend's current revision (the trait's "from now on").
//! - When the backend watch fails, the feed re-watches from the cache's revision; when that
//!   revision has been compacted it re-lists and ends every watcher cleanly (the client resumes
//!   and gets its 410 from the backend if needed), as upstream terminates watchers on relist.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use super::{
    Event, KeyValue, ListOptions, ListResult, Revision, SharedEvent, Storage, StorageError, StorageFuture, WatchSource, WatchStream,
};

/// Tuning of a [`WatchCache`].
#[derive(Clone, Debug)]
pub struct WatchCacheOptions {
    /// Resource prefixes (`/registry/events/`) served straight from the backend
    /// (`--watch-cache-sizes` entries of size 0).
    pub disabled: HashSet<String>,
    /// How many events a watcher may fall behind before it is closed with
    /// [`StorageError::WatchOverflow`].
    pub watcher_buffer: usize,
    /// How long a `not_older_than` read waits for the cache to reach its revision before it
    /// reads the backend instead.
    pub catch_up: Duration,
    /// How long a request waits for a new cache's initial list before it reads the backend.
    pub init_wait: Duration,
    /// The window keeps at least this many events...
    pub window_min: usize,
    /// ... at most this many ...
    pub window_max: usize,
    /// ... and every event younger than this in between (upstream's `eventFreshDuration`).
    pub window_age: Duration,
}

impl Default for WatchCacheOptions {
    fn default() -> Self {
        WatchCacheOptions {
            disabled: HashSet::new(),
            watcher_buffer: 1024,
            catch_up: Duration::from_millis(250),
            init_wait: Duration::from_secs(5),
            window_min: 100,
            window_max: 100 * 1024,
            window_age: Duration::from_secs(75),
        }
    }
}

/// One entry of `--watch-cache-sizes`: `resource[.group]#size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSize {
    pub resource: String,
    pub group: String,
    pub size: usize,
}

/// Parses `--watch-cache-sizes` (`pods#1000,deployments.apps#0`), as upstream's
/// `ParseWatchCacheSizes`: each entry `resource[.group]#size`, a non-negative size. Upstream
/// sizes its windows dynamically, so only `0` (no cache for the resource) changes anything.
pub fn parse_watch_cache_sizes(entries: &[String]) -> Result<Vec<CacheSize>, String> {
    let mut sizes = Vec::new();
    for entry in entries.iter().filter(|e| !e.is_empty()) {
        let Some((resource, size)) = entry.split_once('#') else {
            return Err(format!("invalid value of watch cache size: {entry}"));
        };
        let size: i64 = size.trim().parse().map_err(|_| format!("invalid size of watch cache size: {entry}"))?;
        if size < 0 {
            return Err(format!("watch cache size cannot be negative: {entry}"));
        }
        let (resource, group) = resource.trim().split_once('.').unwrap_or((resource.trim(), ""));
        if resource.is_empty() {
            return Err(format!("invalid value of watch cache size: {entry}"));
        }
        sizes.push(CacheSize { resource: resource.to_owned(), group: group.to_owned(), size: size as usize });
    }
    Ok(sizes)
}

/// The resource prefix a key or prefix falls under: up to and including its third `/`
/// (`/registry/pods/default/a` → `/registry/pods/`), `None` for shorter ones (`/registry/`),
/// which are served by the backend.
pub fn resource_prefix(key: &str) -> Option<&str> {
    // Byte scans: every read asks, and `str` searches cost more to set up than to run on keys
    // this short.
    let bytes = key.as_bytes();
    if bytes.first() != Some(&b'/') {
        return None;
    }
    let end = bytes.iter().enumerate().filter(|(_, b)| **b == b'/').nth(2)?.0;
    let prefix = &key[..=end];
    (!prefix.as_bytes().windows(2).any(|pair| pair == b"//")).then_some(prefix)
}

/// A [`Storage`] that serves watches and `not_older_than` reads of another one from memory.
/// See the module documentation for the rules.
pub struct WatchCache {
    backend: Arc<dyn Storage>,
    options: WatchCacheOptions,
    resources: Mutex<HashMap<String, Arc<Resource>>>,
    /// The highest revision known to exist in the backend (from writes, reads and events), so
    /// that most requests need no round trip to reject a future revision.
    known: AtomicI64,
}

/// One resource's cache.
struct Resource {
    prefix: String,
    state: Mutex<State>,
    /// The cache's revision, published after each event (0 until the initial list is in).
    progress: watch::Sender<Revision>,
    feed: Mutex<Option<tokio::task::AbortHandle>>,
}

struct State {
    /// Whether `objects` reflects the backend (false before the first list and once the feed
    /// has ended for good).
    ready: bool,
    /// The revision the cache is at: its list's, or its last event's.
    revision: Revision,
    objects: BTreeMap<String, KeyValue>,
    /// Every event of the prefix with a revision above `oldest`, in revision order.
    window: VecDeque<(Instant, Arc<SharedEvent>)>,
    oldest: Revision,
    watchers: Vec<Watcher>,
    /// When a progress report was last handed to the watchers (see [`PROGRESS_TO_WATCHERS_EVERY`]).
    progress_forwarded: Option<Instant>,
    /// When the cache last stopped (or never started) reflecting the backend.
    unready_since: Instant,
}

/// How often progress reports reach the cache's watchers. Every consistent list may ask the
/// backend for one; each watcher needs a recent position only for its next bookmark (upstream
/// sends them about once a minute), not a wake-up per list.
const PROGRESS_TO_WATCHERS_EVERY: Duration = Duration::from_secs(1);

struct Watcher {
    prefix: String,
    /// Bounded at `watcher_buffer + 1`: the last slot is kept for `None`, the overflow (a
    /// pointer's size: each watcher's queue is read cold, once per event).
    tx: mpsc::Sender<Option<Arc<SharedEvent>>>,
}

impl WatchCache {
    pub fn new(backend: Arc<dyn Storage>, options: WatchCacheOptions) -> Self {
        WatchCache { backend, options, resources: Mutex::new(HashMap::new()), known: AtomicI64::new(0) }
    }

    /// The store behind the cache.
    pub fn backend(&self) -> &Arc<dyn Storage> {
        &self.backend
    }

    /// How many watchers the caches serve (all resources).
    pub fn watchers(&self) -> usize {
        let resources = lock(&self.resources);
        resources.values().map(|r| r.state().watchers.iter().filter(|w| !w.tx.is_closed()).count()).sum()
    }

    fn note(&self, revision: Revision) {
        self.known.fetch_max(revision, Ordering::Relaxed);
    }

    /// The cache of the resource `key` falls under, created (and its feed started) if needed;
    /// `None` when the key has no resource prefix or the resource is not cached.
    fn resource(&self, key: &str) -> Option<Arc<Resource>> {
        let prefix = resource_prefix(key)?;
        if self.options.disabled.contains(prefix) {
            return None;
        }
        let mut resources = lock(&self.resources);
        if let Some(resource) = resources.get(prefix) {
            return Some(resource.clone());
        }
        let resource = Arc::new(Resource {
            prefix: prefix.to_owned(),
            state: Mutex::new(State {
                ready: false,
                revision: 0,
                objects: BTreeMap::new(),
                window: VecDeque::new(),
                oldest: 0,
                watchers: Vec::new(),
                progress_forwarded: None,
                unready_since: Instant::now(),
            }),
            progress: watch::Sender::new(0),
            feed: Mutex::new(None),
        });
        let task = tokio::spawn(feed(self.backend.clone(), resource.clone(), self.options.clone()));
        *lock(&resource.feed) = Some(task.abort_handle());
        resources.insert(prefix.to_owned(), resource.clone());
        Some(resource)
    }

    /// The resource's cache once its initial list is in, `None` if it is not cached or not
    /// ready within [`WatchCacheOptions::init_wait`] (the caller then reads the backend).
    async fn ready(&self, key: &str) -> Option<Arc<Resource>> {
        let resource = self.resource(key)?;
        self.wait_ready(&resource).await.then_some(resource)
    }

    /// Whether the resource's cache has its initial list in, waiting for it up to
    /// [`WatchCacheOptions::init_wait`].
    async fn wait_ready(&self, resource: &Resource) -> bool {
        if resource.state().ready {
            return true;
        }
        let mut progress = resource.progress.subscribe();
        let _ = tokio::time::timeout(self.options.init_wait, progress.wait_for(|r| *r > 0)).await;
        resource.state().ready
    }

    /// Fails with [`StorageError::FutureRevision`] if `revision` is ahead of the backend.
    async fn check_not_future(&self, revision: Revision) -> Result<(), StorageError> {
        if revision <= self.known.load(Ordering::Relaxed) {
            return Ok(());
        }
        let current = self.backend.current_revision().await?;
        self.note(current);
        if revision > current {
            return Err(StorageError::FutureRevision { requested: revision, current });
        }
        Ok(())
    }

    /// Whether the cache reaches `revision` within [`WatchCacheOptions::catch_up`]. The cache
    /// learns of revisions through its own resource's events, so it asks a backend that
    /// answers progress requests to report its position: a later write to another resource
    /// then reaches it too (upstream's `waitUntilFreshAndBlock` with `RequestWatchProgress`).
    async fn caught_up(&self, resource: &Resource, revision: Revision) -> Result<bool, StorageError> {
        if resource.state().revision >= revision {
            return Ok(true);
        }
        self.check_not_future(revision).await?;
        let mut progress = resource.progress.subscribe();
        self.backend.request_progress(&resource.prefix);
        Ok(tokio::time::timeout(self.options.catch_up, progress.wait_for(|r| *r >= revision)).await.is_ok())
    }

    /// A consistent list from the cache (upstream's `ConsistentListFromCache`): when the
    /// backend answers progress requests and the resource's cache is ready, the cache is
    /// brought to the backend's current revision and answers; `None` sends the list to the
    /// backend (as on etcd that cannot answer them, or before the cache has listed).
    async fn consistent_from_cache(&self, prefix: &str, options: &ListOptions) -> Result<Option<ListResult>, StorageError> {
        if !self.backend.answers_progress_requests() {
            return Ok(None);
        }
        let Some(resource) = self.resource(prefix).filter(|r| r.state().ready) else { return Ok(None) };
        let current = self.backend.current_revision().await?;
        self.note(current);
        self.page_at_least(&resource, prefix, options, current).await
    }

    async fn list_from_cache(&self, prefix: &str, options: &ListOptions, min: Revision) -> Result<Option<ListResult>, StorageError> {
        let Some(resource) = self.ready(prefix).await else { return Ok(None) };
        self.page_at_least(&resource, prefix, options, min).await
    }

    /// A page of the cache once it has reached `min` ([`Self::caught_up`]); `None` when it
    /// does not in time.
    async fn page_at_least(
        &self,
        resource: &Resource,
        prefix: &str,
        options: &ListOptions,
        min: Revision,
    ) -> Result<Option<ListResult>, StorageError> {
        if !self.caught_up(resource, min).await? {
            return Ok(None);
        }
        let state = resource.state();
        Ok(state.ready.then(|| page(&state, prefix, options)))
    }

    /// A read at exactly `revision` from the cache, if the cache is at that revision (the next
    /// pages of a list it answered, read before any later event: its state is then the backend's
    /// state at `revision`, even once the backend has compacted it).
    fn exact_from_cache(&self, prefix: &str, options: &ListOptions, revision: Revision) -> Option<ListResult> {
        let resource = lock(&self.resources).get(resource_prefix(prefix)?).cloned()?;
        let state = resource.state();
        (state.ready && state.revision == revision).then(|| page(&state, prefix, options))
    }
}

/// One page of the cached keys under `prefix` at the cache's revision.
fn page(state: &State, prefix: &str, options: &ListOptions) -> ListResult {
    let start = match &options.start_after {
        Some(after) if after.as_str() >= prefix => Bound::Excluded(after.clone()),
        _ => Bound::Included(prefix.to_owned()),
    };
    let limit = options.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let mut under = state.objects.range((start, Bound::Unbounded)).take_while(|(k, _)| k.starts_with(prefix));
    let kvs: Vec<KeyValue> = under.by_ref().take(limit).map(|(_, kv)| kv.clone()).collect();
    let rest = under.count();
    let more = rest > 0;
    ListResult { kvs, revision: state.revision, more, remaining: more.then_some(rest as i64) }
}

impl Drop for WatchCache {
    fn drop(&mut self) {
        for resource in lock(&self.resources).values() {
            if let Some(feed) = lock(&resource.feed).take() {
                feed.abort();
            }
        }
    }
}

impl Resource {
    /// The state, even if a thread panicked while holding it: each update leaves it whole.
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// How long a client refused while the cache is not ready should wait: upstream's
    /// `calculateRetryAfterForUnreadyCache`, e^(0.06 × seconds unready) within 1..=30 s, so
    /// that clients back off the longer a cache stays down.
    fn retry_after_seconds(&self) -> i32 {
        let unready = self.state().unready_since.elapsed().as_secs_f64();
        (0.06 * unready).exp().clamp(1.0, 30.0) as i32
    }

    /// Replaces the state with a fresh list, ending every watcher (their history has a gap).
    fn reset(&self, list: ListResult) {
        let mut state = self.state();
        state.objects = list.kvs.into_iter().map(|kv| (kv.key.clone(), kv)).collect();
        state.revision = list.revision;
        state.oldest = list.revision;
        state.window.clear();
        state.watchers.clear();
        state.ready = true;
        drop(state);
        self.progress.send_replace(list.revision);
    }

    /// Applies one backend event and hands it to the watchers, never waiting for them.
    fn apply(&self, event: Arc<SharedEvent>, options: &WatchCacheOptions) {
        let revision = event.revision();
        let mut state = self.state();
        if revision <= state.revision {
            return;
        }
        match &**event {
            Event::Put { kv, .. } => {
                state.objects.insert(kv.key.clone(), kv.clone());
            }
            Event::Delete { prev, .. } => {
                state.objects.remove(&prev.key);
            }
            // The cache is current up to `revision` without a change: it answers
            // not-older-than reads at it, and its watchers learn the position (bookmarks).
            Event::Progress { .. } => {
                state.revision = revision;
                // Every watcher follows the whole resource; a full one just misses this
                // report (the next one, or its next event, says more).
                let now = Instant::now();
                if state.progress_forwarded.is_none_or(|at| now.duration_since(at) >= PROGRESS_TO_WATCHERS_EVERY) {
                    state.progress_forwarded = Some(now);
                    state
                        .watchers
                        .retain(|watcher| !matches!(watcher.tx.try_send(Some(event.clone())), Err(mpsc::error::TrySendError::Closed(_))));
                }
                drop(state);
                self.progress.send_replace(revision);
                return;
            }
        }
        state.revision = revision;
        let now = Instant::now();
        state.window.push_back((now, event.clone()));
        while state.window.len() > options.window_max
            || (state.window.len() > options.window_min
                && state.window.front().is_some_and(|(at, _)| now.duration_since(*at) > options.window_age))
        {
            if let Some((_, evicted)) = state.window.pop_front() {
                state.oldest = evicted.revision();
            }
        }
        let key = event.key();
        let buffer = options.watcher_buffer;
        state.watchers.retain(|watcher| {
            if !key.starts_with(&watcher.prefix) {
                return !watcher.tx.is_closed();
            }
            if watcher.tx.capacity() <= 1 {
                tracing::warn!(prefix = %watcher.prefix, buffer, "watch cache: closing a watcher that fell behind");
                let _ = watcher.tx.try_send(None);
                return false;
            }
            watcher.tx.try_send(Some(event.clone())).is_ok()
        });
        drop(state);
        self.progress.send_replace(revision);
    }

    /// Drops history up to `revision` (a compaction made through the cache).
    fn compacted(&self, revision: Revision) {
        let mut state = self.state();
        while state.window.front().is_some_and(|(_, e)| e.revision() <= revision) {
            state.window.pop_front();
        }
        state.oldest = state.oldest.max(revision);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps one resource's cache fed: list, then one backend watch from the list's revision;
/// re-watch from the cache's revision after a failure, re-list when that is compacted.
async fn feed(backend: Arc<dyn Storage>, resource: Arc<Resource>, options: WatchCacheOptions) {
    let prefix = resource.prefix.clone();
    let mut pause = Duration::from_millis(100);
    let max_pause = Duration::from_secs(5);
    'relist: loop {
        let list = match backend.list(&prefix, ListOptions::default()).await {
            Ok(list) => list,
            Err(error) => {
                tracing::warn!(%prefix, %error, "watch cache: initial list failed; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(max_pause);
                continue;
            }
        };
        tracing::debug!(%prefix, revision = list.revision, objects = list.kvs.len(), "watch cache: listed");
        resource.reset(list);
        loop {
            let from = resource.state().revision;
            let mut stream = match backend.watch_patiently(&prefix, from).await {
                Ok(stream) => stream,
                Err(StorageError::Compacted { .. }) => continue 'relist,
                Err(error) => {
                    tracing::warn!(%prefix, %error, "watch cache: watch failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(max_pause);
                    continue;
                }
            };
            loop {
                match stream.next_shared().await {
                    Some(Ok(event)) => {
                        pause = Duration::from_millis(100);
                        resource.apply(event, &options);
                    }
                    Some(Err(StorageError::Compacted { .. })) => continue 'relist,
                    Some(Err(error)) => {
                        tracing::warn!(%prefix, %error, "watch cache: watch ended; resuming");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(max_pause);
                        break;
                    }
                    None => {
                        // The backend closed: nothing more will come.
                        let mut state = resource.state();
                        state.ready = false;
                        state.unready_since = Instant::now();
                        state.watchers.clear();
                        return;
                    }
                }
            }
        }
    }
}

impl Storage for WatchCache {
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        self.backend.get(key)
    }

    fn get_not_older_than<'a>(&'a self, key: &'a str, min_revision: Revision) -> StorageFuture<'a, Option<KeyValue>> {
        Box::pin(async move {
            if let Some(resource) = self.ready(key).await
                && self.caught_up(&resource, min_revision).await?
            {
                let state = resource.state();
                if state.ready {
                    return Ok(state.objects.get(key).cloned());
                }
            }
            self.backend.get(key).await
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult> {
        Box::pin(async move {
            match options.not_older_than {
                Some(min) if options.revision.is_none() => {
                    if let Some(result) = self.list_from_cache(prefix, &options, min).await? {
                        return Ok(result);
                    }
                }
                None if options.revision.is_none() => {
                    if let Some(result) = self.consistent_from_cache(prefix, &options).await? {
                        return Ok(result);
                    }
                }
                Some(_) | None => {
                    if let Some(revision) = options.revision
                        && revision > 0
                        && let Some(result) = self.exact_from_cache(prefix, &options, revision)
                    {
                        return Ok(result);
                    }
                }
            }
            // Whichever read reaches the backend warms the resource's cache for later reads and
            // watches (clients list, then watch from the list's revision).
            let _ = self.resource(prefix);
            let result = self.backend.list(prefix, options).await?;
            self.note(result.revision);
            Ok(result)
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let kv = self.backend.create(key, value).await?;
            self.note(kv.mod_revision);
            Ok(kv)
        })
    }

    fn create_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, ttl: std::time::Duration) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let kv = self.backend.create_with_ttl(key, value, ttl).await?;
            self.note(kv.mod_revision);
            Ok(kv)
        })
    }

    fn update_with_ttl<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected: Revision,
        ttl: std::time::Duration,
    ) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let kv = self.backend.update_with_ttl(key, value, expected, ttl).await?;
            self.note(kv.mod_revision);
            Ok(kv)
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected: Revision) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let kv = self.backend.update(key, value, expected).await?;
            self.note(kv.mod_revision);
            Ok(kv)
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> StorageFuture<'a, (KeyValue, Revision)> {
        Box::pin(async move {
            let deleted = self.backend.delete(key, expected).await?;
            self.note(deleted.1);
            Ok(deleted)
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        Box::pin(async move {
            if from_revision < 0 {
                return self.backend.watch(prefix, from_revision).await;
            }
            let Some(resource) = self.resource(prefix) else {
                return self.backend.watch(prefix, from_revision).await;
            };
            // Upstream's cacher refuses a watch while its cache (re)initialises rather than
            // hand it to etcd (`ResilientWatchCacheInitialization`): a crowd of clients
            // re-watching at once would otherwise open as many etcd watches. Here a new cache
            // is given `init_wait` first, as caches start on first use rather than with the
            // server.
            if !self.wait_ready(&resource).await {
                return Err(StorageError::Initializing { retry_after_seconds: resource.retry_after_seconds() });
            }
            let from = if from_revision == 0 {
                let current = self.backend.current_revision().await?;
                self.note(current);
                current
            } else {
                self.check_not_future(from_revision).await?;
                from_revision
            };
            let registered = {
                let mut state = resource.state();
                if !state.ready || from < state.oldest {
                    None
                } else {
                    let start = state.window.partition_point(|(_, e)| e.revision() <= from);
                    let replay: VecDeque<Arc<SharedEvent>> =
                        state.window.range(start..).filter(|(_, e)| e.key().starts_with(prefix)).map(|(_, e)| e.clone()).collect();
                    let (tx, rx) = mpsc::channel(self.options.watcher_buffer + 1);
                    state.watchers.push(Watcher { prefix: prefix.to_owned(), tx });
                    Some((replay, rx))
                }
            };
            match registered {
                Some((replay, rx)) => Ok(WatchStream::new(CacheWatch { replay, rx, after: from, buffer: self.options.watcher_buffer })),
                None => {
                    tracing::debug!(%prefix, from, "watch cache: revision before the window; watching the backend");
                    self.backend.watch(prefix, from_revision).await
                }
            }
        })
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move {
            let revision = self.backend.current_revision().await?;
            self.note(revision);
            Ok(revision)
        })
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        Box::pin(async move {
            self.backend.compact(revision).await?;
            let resources: Vec<Arc<Resource>> = lock(&self.resources).values().cloned().collect();
            for resource in resources {
                resource.compacted(revision);
            }
            Ok(())
        })
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        self.backend.compacted_revision()
    }

    fn answers_progress_requests(&self) -> bool {
        self.backend.answers_progress_requests()
    }

    fn request_progress(&self, prefix: &str) {
        self.backend.request_progress(prefix);
    }
}

/// One watcher of a resource cache: the window's events after its start, then live ones.
struct CacheWatch {
    replay: VecDeque<Arc<SharedEvent>>,
    rx: mpsc::Receiver<Option<Arc<SharedEvent>>>,
    /// Events at or below this revision are skipped (a watch from a revision the cache has not
    /// reached yet).
    after: Revision,
    /// The queue's size, which an overflow reports.
    buffer: usize,
}

impl WatchSource for CacheWatch {
    /// Cancel-safe: `recv` is, and nothing else awaits.
    fn next_event(&mut self) -> StorageFuture<'_, Option<Event>> {
        Box::pin(async move { Ok(self.next_shared().await?.map(SharedEvent::into_event)) })
    }

    /// The event every watcher of the resource shares. Cancel-safe: `recv` is, and nothing
    /// else awaits.
    fn next_shared(&mut self) -> StorageFuture<'_, Option<Arc<SharedEvent>>> {
        Box::pin(async move {
            if let Some(event) = self.replay.pop_front() {
                return Ok(Some(event));
            }
            loop {
                match self.rx.recv().await {
                    Some(Some(event)) if event.revision() <= self.after => continue,
                    Some(Some(event)) => return Ok(Some(event)),
                    Some(None) => return Err(StorageError::WatchOverflow { capacity: self.buffer }),
                    None => return Ok(None),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::EmbeddedStore;
    use std::sync::atomic::AtomicUsize;

    /// An embedded store that counts the calls the cache makes of it, and answers progress
    /// requests only when `progress` says so (as etcd before 3.4.31 does not).
    struct Counting {
        inner: EmbeddedStore,
        watches: AtomicUsize,
        lists: AtomicUsize,
        gets: AtomicUsize,
        progress: bool,
        /// Lists never answer (a cache that cannot start).
        stalled_lists: std::sync::atomic::AtomicBool,
    }

    impl Storage for Counting {
        fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get(key)
        }
        fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult> {
            self.lists.fetch_add(1, Ordering::SeqCst);
            if self.stalled_lists.load(Ordering::SeqCst) {
                return Box::pin(std::future::pending());
            }
            self.inner.list(prefix, options)
        }
        fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue> {
            self.inner.create(key, value)
        }
        fn update<'a>(&'a self, key: &'a str, value: Bytes, expected: Revision) -> StorageFuture<'a, KeyValue> {
            self.inner.update(key, value, expected)
        }
        fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> StorageFuture<'a, (KeyValue, Revision)> {
            self.inner.delete(key, expected)
        }
        fn watch<'a>(&'a self, prefix: &'a str, from: Revision) -> StorageFuture<'a, WatchStream> {
            self.watches.fetch_add(1, Ordering::SeqCst);
            self.inner.watch(prefix, from)
        }
        fn current_revision(&self) -> StorageFuture<'_, Revision> {
            self.inner.current_revision()
        }
        fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
            self.inner.compact(revision)
        }
        fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
            self.inner.compacted_revision()
        }
        fn answers_progress_requests(&self) -> bool {
            self.progress
        }
        fn request_progress(&self, prefix: &str) {
            if self.progress {
                self.inner.request_progress(prefix);
            }
        }
    }

    fn setup(options: WatchCacheOptions) -> (tempfile::TempDir, Arc<Counting>, WatchCache) {
        setup_with(options, true)
    }

    fn setup_with(options: WatchCacheOptions, progress: bool) -> (tempfile::TempDir, Arc<Counting>, WatchCache) {
        let dir = tempfile::tempdir().unwrap();
        let inner = EmbeddedStore::open(dir.path().join("s.redb")).unwrap();
        let counting = Arc::new(Counting {
            inner,
            watches: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
            gets: AtomicUsize::new(0),
            progress,
            stalled_lists: Default::default(),
        });
        let cache = WatchCache::new(counting.clone(), options);
        (dir, counting, cache)
    }

    /// A watch of a resource whose cache has not listed within `init_wait` is refused as
    /// upstream's cacher refuses it (429 with `Retry-After`), never handed to the backend.
    #[tokio::test]
    async fn a_watch_before_the_cache_is_ready_is_refused() {
        let (_dir, backend, cache) = setup(WatchCacheOptions { init_wait: Duration::from_millis(50), ..WatchCacheOptions::default() });
        backend.stalled_lists.store(true, Ordering::SeqCst);
        let error = cache.watch("/registry/pods/", 0).await.expect_err("refused");
        assert!(matches!(error, StorageError::Initializing { retry_after_seconds: 1 }), "{error:?}");
        assert_eq!(backend.watches.load(Ordering::SeqCst), 0, "no watch of the backend");
        let status = crate::status::ApiError::from(error).to_status();
        assert_eq!((status.code, status.message.as_deref()), (Some(429), Some("storage is (re)initializing")));
        assert_eq!(status.details.and_then(|d| d.retry_after_seconds), Some(1));
    }

    fn v(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    async fn next(watch: &mut WatchStream) -> Event {
        tokio::time::timeout(Duration::from_secs(10), watch.next()).await.expect("timed out").expect("ended").unwrap()
    }

    /// Waits (briefly) for the backend watch count to reach `n`, then checks it is exactly `n`:
    /// a cache's feed opens its backend watch just after its list.
    async fn assert_watches(backend: &Counting, n: usize, what: &str) {
        for _ in 0..500 {
            if backend.watches.load(Ordering::SeqCst) >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(backend.watches.load(Ordering::SeqCst), n, "{what}");
    }

    fn any(min: Revision) -> ListOptions {
        ListOptions { not_older_than: Some(min), ..ListOptions::default() }
    }

    #[test]
    fn resource_prefixes() {
        for (key, want) in [
            ("/registry/pods/default/a", Some("/registry/pods/")),
            ("/registry/pods/", Some("/registry/pods/")),
            ("/registry/namespaces/kube-system", Some("/registry/namespaces/")),
            ("/registry/pods", None),
            ("/registry/", None),
            ("/", None),
            ("", None),
            ("registry/pods/a/b", None),
            ("//pods/a", None),
        ] {
            assert_eq!(resource_prefix(key), want, "{key}");
        }
    }

    #[test]
    fn watch_cache_sizes_parse_as_upstream() {
        let parse = |s: &[&str]| parse_watch_cache_sizes(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            parse(&["pods#1000", "deployments.apps#0", ""]).unwrap(),
            vec![
                CacheSize { resource: "pods".into(), group: String::new(), size: 1000 },
                CacheSize { resource: "deployments".into(), group: "apps".into(), size: 0 },
            ]
        );
        assert_eq!(
            parse(&["leases.coordination.k8s.io#5"]).unwrap()[0],
            CacheSize { resource: "leases".into(), group: "coordination.k8s.io".into(), size: 5 }
        );
        assert!(parse(&["pods"]).unwrap_err().contains("invalid value"));
        assert!(parse(&["pods#x"]).unwrap_err().contains("invalid size"));
        assert!(parse(&["pods#-1"]).unwrap_err().contains("negative"));
        assert!(parse(&["#3"]).is_err());
    }

    /// Many watchers, one backend watch; each sees every event once, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_backend_watch_serves_many_watchers() {
        let (_dir, backend, cache) = setup(WatchCacheOptions::default());
        let r0 = cache.current_revision().await.unwrap();
        let mut watches = Vec::new();
        for i in 0..50 {
            let prefix = if i % 2 == 0 { "/registry/pods/" } else { "/registry/pods/ns1/" };
            watches.push(cache.watch(prefix, r0).await.unwrap());
        }
        assert_watches(&backend, 1, "one backend watch for 50 watchers").await;
        assert_eq!(cache.watchers(), 50);
        let mut written = Vec::new();
        for i in 0..10 {
            let ns = if i % 2 == 0 { "ns1" } else { "ns2" };
            written.push(cache.create(&format!("/registry/pods/{ns}/p{i}"), v("x")).await.unwrap());
        }
        for (i, watch) in watches.iter_mut().enumerate() {
            let expected: Vec<&KeyValue> = written.iter().filter(|kv| i % 2 == 0 || kv.key.starts_with("/registry/pods/ns1/")).collect();
            for kv in expected {
                assert_eq!(next(watch).await, Event::Put { kv: kv.clone(), prev: None }, "watcher {i}");
            }
        }
        // Another resource gets its own (single) backend watch.
        let _other = cache.watch("/registry/configmaps/", 0).await.unwrap();
        let _again = cache.watch("/registry/configmaps/", 0).await.unwrap();
        assert_watches(&backend, 2, "one more for another resource").await;
        drop(watches);
        cache.create("/registry/pods/ns1/late", v("x")).await.unwrap();
        assert_eq!(cache.watchers(), 2, "dropped watchers are forgotten");
    }

    /// A consistent list right after a write sees it; a NotOlderThan list waits for the cache
    /// to reach the write and answers from memory. Without progress requests, the cache
    /// cannot tell it has reached a revision written to another resource: the backend answers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn read_your_writes_and_not_older_than() {
        let (_dir, backend, cache) = setup_with(WatchCacheOptions::default(), false);
        cache.create("/registry/pods/a/x", v("1")).await.unwrap();
        let first = cache.list("/registry/pods/", any(0)).await.unwrap();
        assert_eq!(first.kvs.len(), 1);
        for i in 0..20 {
            let kv = cache.create(&format!("/registry/pods/a/y{i}"), v("2")).await.unwrap();
            let consistent = cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
            assert!(consistent.kvs.contains(&kv), "consistent list after write {i}");
            let lists = backend.lists.load(Ordering::SeqCst);
            let fresh = cache.list("/registry/pods/", any(kv.mod_revision)).await.unwrap();
            assert!(fresh.revision >= kv.mod_revision);
            assert!(fresh.kvs.contains(&kv), "NotOlderThan list after write {i}");
            assert_eq!(backend.lists.load(Ordering::SeqCst), lists, "NotOlderThan list {i} was served from the cache");
            let gets = backend.gets.load(Ordering::SeqCst);
            assert_eq!(cache.get_not_older_than(&kv.key, kv.mod_revision).await.unwrap(), Some(kv.clone()));
            assert_eq!(backend.gets.load(Ordering::SeqCst), gets, "get {i} was served from the cache");
        }
        // Paging from the cache.
        let page = cache.list("/registry/pods/", ListOptions { limit: Some(5), ..any(0) }).await.unwrap();
        assert_eq!((page.kvs.len(), page.more, page.remaining), (5, true, Some(16)));
        // A revision beyond the store is "too large".
        let current = cache.current_revision().await.unwrap();
        assert!(matches!(cache.list("/registry/pods/", any(current + 5)).await, Err(StorageError::FutureRevision { .. })));
        // A revision written elsewhere: the cache cannot tell it is current, the backend answers.
        let other = cache.create("/registry/configmaps/a/c", v("c")).await.unwrap();
        let lists = backend.lists.load(Ordering::SeqCst);
        let answered = cache.list("/registry/pods/", any(other.mod_revision)).await.unwrap();
        assert!(answered.revision >= other.mod_revision);
        assert!(backend.lists.load(Ordering::SeqCst) > lists, "fell back to the backend");
    }

    /// A cache over a store with one pod, whose pods' cache has listed: the first list read the
    /// backend and started it.
    async fn listed_pods_cache(progress: bool) -> (tempfile::TempDir, Arc<Counting>, WatchCache) {
        let (dir, backend, cache) = setup_with(WatchCacheOptions::default(), progress);
        cache.create("/registry/pods/a/x", v("1")).await.unwrap();
        cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
        for _ in 0..1000 {
            if cache.resource("/registry/pods/").unwrap().state().ready {
                return (dir, backend, cache);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the pods' cache did not list within 5 s");
    }

    /// On a backend that answers progress requests, consistent lists come from the cache once
    /// it has listed, and see every write acknowledged before them, including one to another
    /// resource (the progress report brings the cache to it); so do NotOlderThan reads of such
    /// a revision. Without progress requests every consistent list reads the backend.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn consistent_lists_from_the_cache_after_a_progress_report() {
        let (_dir, backend, cache) = listed_pods_cache(true).await;
        let lists = backend.lists.load(Ordering::SeqCst);
        for i in 0..20 {
            let kv = cache.create(&format!("/registry/pods/a/y{i}"), v("2")).await.unwrap();
            let other = cache.create(&format!("/registry/configmaps/a/c{i}"), v("c")).await.unwrap();
            let consistent = cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
            assert!(consistent.kvs.contains(&kv), "consistent list after write {i}");
            assert!(consistent.revision >= other.mod_revision, "list {i} is at the latest write, to another resource");
            let page = cache.list("/registry/pods/a/", ListOptions { limit: Some(1), ..ListOptions::default() }).await.unwrap();
            assert_eq!((page.kvs.len(), page.more, page.revision >= other.mod_revision), (1, true, true));
            let newer = cache.create(&format!("/registry/configmaps/a/d{i}"), v("d")).await.unwrap();
            let fresh = cache.list("/registry/pods/", any(newer.mod_revision)).await.unwrap();
            assert!(fresh.revision >= newer.mod_revision, "NotOlderThan list {i} of another resource's write");
        }
        assert_eq!(backend.lists.load(Ordering::SeqCst), lists, "every list after the cache's was answered from it");

        let (_dir, backend, cache) = listed_pods_cache(false).await;
        let lists = backend.lists.load(Ordering::SeqCst);
        for i in 0..3 {
            let kv = cache.create(&format!("/registry/pods/a/y{i}"), v("2")).await.unwrap();
            assert!(cache.list("/registry/pods/", ListOptions::default()).await.unwrap().kvs.contains(&kv));
        }
        assert_eq!(backend.lists.load(Ordering::SeqCst), lists + 3, "each consistent list read the backend");
    }

    /// A consistent list read from the backend still starts the resource's cache, with or
    /// without progress requests: clients list, then watch from the list's revision, and
    /// without a cache every watch would be a backend watch of its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consistent_list_starts_the_resources_cache() {
        for progress in [false, true] {
            let (_dir, backend, cache) = setup_with(WatchCacheOptions::default(), progress);
            cache.create("/registry/pods/a/x", v("1")).await.unwrap();
            cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
            assert_watches(&backend, 1, "the cache's feed watches the backend").await;
            let _watches = [cache.watch("/registry/pods/", 0).await.unwrap(), cache.watch("/registry/pods/", 0).await.unwrap()];
            assert_watches(&backend, 1, "watches are served by the cache").await;
        }
    }

    /// Consistent lists may ask for a progress report each; the cache's watchers get at most
    /// one a second (the first at once), not one per list.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watchers_get_progress_reports_at_most_once_a_second() {
        let (_dir, _backend, cache) = listed_pods_cache(true).await;
        let mut watch = cache.watch("/registry/pods/", 0).await.unwrap();
        let first = cache.create("/registry/configmaps/a/c1", v("c")).await.unwrap();
        cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
        let second = cache.create("/registry/configmaps/a/c2", v("c")).await.unwrap();
        let listed = cache.list("/registry/pods/", ListOptions::default()).await.unwrap();
        assert!(listed.revision >= second.mod_revision, "the cache still moved to the second report");
        let pod = cache.create("/registry/pods/a/after", v("p")).await.unwrap();
        assert_eq!(next(&mut watch).await, Event::Progress { revision: first.mod_revision });
        assert_eq!(next(&mut watch).await.key(), pod.key, "the second report was not handed on");
    }

    /// The next pages of a list the cache answered come from the cache while it is still at
    /// the list's revision, even once the backend has compacted that revision.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn paging_a_cached_list_stays_in_the_cache() {
        let (_dir, backend, cache) = setup(WatchCacheOptions::default());
        for i in 0..6 {
            cache.create(&format!("/registry/pods/a/{i}"), v("x")).await.unwrap();
        }
        let first = cache.list("/registry/pods/", ListOptions { limit: Some(4), ..any(0) }).await.unwrap();
        assert_eq!((first.kvs.len(), first.more), (4, true));
        cache.create("/registry/configmaps/a/c", v("c")).await.unwrap();
        let current = cache.current_revision().await.unwrap();
        cache.compact(current).await.unwrap();
        let lists = backend.lists.load(Ordering::SeqCst);
        let next = ListOptions {
            revision: Some(first.revision),
            start_after: first.kvs.last().map(|kv| kv.key.clone()),
            ..ListOptions::default()
        };
        let second = cache.list("/registry/pods/", next.clone()).await.unwrap();
        assert_eq!((second.kvs.len(), second.more, second.revision), (2, false, first.revision));
        assert_eq!(backend.lists.load(Ordering::SeqCst), lists, "served by the cache");
        // Once the cache has moved on, the backend answers (here: compacted).
        let kv = cache.create("/registry/pods/a/late", v("x")).await.unwrap();
        cache.list("/registry/pods/", any(kv.mod_revision)).await.unwrap();
        assert!(matches!(cache.list("/registry/pods/", next).await, Err(StorageError::Compacted { .. })));
    }

    /// A watch from before the cache existed is served by the backend; one from a compacted
    /// revision fails as on the backend.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn too_old_watches_fall_back_to_the_backend() {
        let (_dir, backend, cache) = setup(WatchCacheOptions { window_min: 2, window_max: 3, ..WatchCacheOptions::default() });
        let r0 = cache.current_revision().await.unwrap();
        let a = cache.create("/registry/pods/a/a", v("a")).await.unwrap();
        let _warm = cache.watch("/registry/pods/", 0).await.unwrap();
        assert_watches(&backend, 1, "the cache's").await;
        let mut old = cache.watch("/registry/pods/", r0).await.unwrap();
        assert_eq!(backend.watches.load(Ordering::SeqCst), 2, "a watch from before the cache watches the backend");
        assert_eq!(next(&mut old).await, Event::Put { kv: a.clone(), prev: None });
        // Events beyond the window's bound evict the oldest.
        let mut last = a.clone();
        for i in 0..5 {
            last = cache.create(&format!("/registry/pods/a/{i}"), v("x")).await.unwrap();
        }
        // Once the cache has applied them.
        cache.list("/registry/pods/", any(last.mod_revision)).await.unwrap();
        let mut live = cache.watch("/registry/pods/", last.mod_revision - 2).await.unwrap();
        assert_eq!(backend.watches.load(Ordering::SeqCst), 2, "in the window");
        assert_eq!(next(&mut live).await.revision(), last.mod_revision - 1);
        let _evicted = cache.watch("/registry/pods/", a.mod_revision).await.unwrap();
        assert_eq!(backend.watches.load(Ordering::SeqCst), 3, "evicted from the window");
        cache.compact(last.mod_revision - 1).await.unwrap();
        assert!(matches!(cache.watch("/registry/pods/", last.mod_revision - 2).await, Err(StorageError::Compacted { .. })));
    }

    /// A watcher that does not read is closed with an overflow; the others go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_watchers_overflow() {
        let (_dir, _backend, cache) = setup(WatchCacheOptions { watcher_buffer: 4, ..WatchCacheOptions::default() });
        let mut slow = cache.watch("/registry/pods/", 0).await.unwrap();
        let mut fast = cache.watch("/registry/pods/", 0).await.unwrap();
        for i in 0..10 {
            let kv = cache.create(&format!("/registry/pods/a/{i}"), v("x")).await.unwrap();
            assert_eq!(next(&mut fast).await.revision(), kv.mod_revision);
        }
        for _ in 0..4 {
            next(&mut slow).await;
        }
        assert!(matches!(slow.next().await, Some(Err(StorageError::WatchOverflow { capacity: 4 }))));
        assert!(slow.next().await.is_none());
    }

    /// Disabled resources and prefixes above a resource go to the backend.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn disabled_resources_are_not_cached() {
        let options =
            WatchCacheOptions { disabled: ["/registry/events/".to_owned()].into_iter().collect(), ..WatchCacheOptions::default() };
        let (_dir, backend, cache) = setup(options);
        let _a = cache.watch("/registry/events/", 0).await.unwrap();
        let _b = cache.watch("/registry/events/", 0).await.unwrap();
        let _c = cache.watch("/registry/", 0).await.unwrap();
        assert_eq!(backend.watches.load(Ordering::SeqCst), 3);
        assert_eq!(cache.watchers(), 0);
    }
}
