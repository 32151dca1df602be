//! [`EmbeddedStore`]: the [`Storage`] backend kapi runs on when no etcd is configured, a single
//! file on local disk.
//!
//! # Why redb
//!
//! The engine is [redb](https://docs.rs/redb): pure Rust, so the build needs no C toolchain
//! (SQLite through `rusqlite` compiles C); ACID, with every commit fsync'd before it returns
//! under `Durability::Immediate`, so an acknowledged write survives `kill -9` and power loss;
//! and MVCC read transactions, so a list reads one consistent snapshot while writers go on,
//! which is what list-at-revision and paging need. sled, the other pure-Rust candidate, has been
//! in beta for years with an on-disk format still changing; redb is maintained and stable.
//!
//! # Layout
//!
//! Five tables, updated together in one write transaction per write:
//!
//! - `keys`: key → (create revision, mod revision, value): the current state, what `get` and a
//!   list at the latest revision read.
//! - `history`: revision → event, protobuf-encoded with etcd's `mvccpb.Event` field numbers. Each
//!   event carries the key's previous value, so that a watch can report it and so that the state
//!   at an old revision is the current state with the later events undone. Values are thus
//!   stored twice per write (in the event and as the next event's previous value); compaction
//!   reclaims both.
//! - `meta`: the current and the compacted revision.
//! - `expiry_by_key` and `expiry_by_deadline`: the keys written with a TTL, key → (deadline, mod
//!   revision of the write that set it) and (deadline, key) → mod revision, the latter ordered
//!   by deadline. Deadlines are wall-clock milliseconds since the Unix epoch, so they survive a
//!   restart.
//!
//! # Expiry
//!
//! A key written with a TTL (`create_with_ttl`, `update_with_ttl`: Events under `--event-ttl`)
//! is deleted once its deadline has passed, as etcd deletes the keys of an expired lease: an
//! ordinary deletion at a new revision, recorded in history and seen by watchers as
//! [`Event::Delete`]. Every write replaces the key's deadline (a write without TTL makes it
//! permanent, as a put without a lease on etcd), and a deletion guards on the mod revision the
//! deadline was set at, so a key written again since is never deleted by an old deadline.
//!
//! Deletions happen in batches of [`EXPIRY_BATCH`] keys per transaction, writes going in
//! between: at open (keys that expired while the store was closed), on a sweeper thread that
//! sleeps until the earliest deadline (checking the clock at least every second while one is
//! pending, and not at all while none is) and exits when the store is dropped, and before any
//! write or latest-state read when a deadline has passed but the sweeper has not run yet, so
//! that reads never return an expired key and a list at revision `r` still shows exactly the
//! state at `r`. The earliest deadline is kept in memory, so the check costs a clock read while
//! nothing is due. Unlike etcd, which revokes all the keys of one lease at one revision, each
//! key is deleted at its own revision (a revision here holds one event), and a deadline is
//! wall-clock time: etcd instead renews every lease to its full TTL when a leader starts.
//!
//! # Size limit
//!
//! A create or update whose key and value exceed [`super::MAX_REQUEST_BYTES`] (etcd's default
//! `--max-request-bytes`, 1.5 MiB) fails with [`StorageError::RequestTooLarge`], as etcd refuses
//! it, so one object cannot grow the file without bound either.
//!
//! # Writes and watches
//!
//! Writes are serialized by an async mutex (one writer at a time, in arrival order) and run on
//! tokio's blocking pool, since a commit waits for fsync. After its commit, and before the next
//! write may begin, a write hands its event to the live watchers; that keeps events in revision
//! order, and the hub's `published` revision tells a new watcher exactly which events it must
//! read from history and which it will receive live (see `EmbeddedWatch`). A live watcher has
//! a bounded buffer; a writer never waits for it: a watcher whose buffer is full is closed with
//! [`StorageError::WatchOverflow`].
//!
//! # Costs
//!
//! A list at the latest revision reads the keys under the prefix (all of them when paging, to
//! count `remaining`). A list at an older revision `r` also reads every event after `r`, whatever
//! its key: O(keys under the prefix + writes since `r`). A watch from an old revision reads the
//! history since then in chunks. No commit batching: each write costs one fsync.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use prometheus_client::metrics::counter::Counter;
use prost::Message;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::mpsc;

use super::{
    Event, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, StorageFuture, WatchSource, WatchStream, check_key,
    check_request_size,
};

/// key → (create revision, mod revision, value).
const KEYS: TableDefinition<&str, (i64, i64, &[u8])> = TableDefinition::new("keys");
/// revision → [`EventRecord`].
const HISTORY: TableDefinition<i64, &[u8]> = TableDefinition::new("history");
/// [`META_REVISION`] and [`META_COMPACTED`].
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";
/// key → (deadline, mod revision of the write that set it), for the keys written with a TTL.
const EXPIRY_BY_KEY: TableDefinition<&str, (i64, i64)> = TableDefinition::new("expiry_by_key");
/// (deadline, key) → mod revision of the write that set it: the same entries by deadline.
const EXPIRY_BY_DEADLINE: TableDefinition<(i64, &str), i64> = TableDefinition::new("expiry_by_deadline");

/// How many expired keys one transaction deletes: bounds the transaction and how long writes
/// wait behind it when many keys expire at once.
const EXPIRY_BATCH: usize = 256;

/// The in-memory earliest deadline when no key has one.
const NO_DEADLINE: i64 = i64::MAX;

/// The longest the sweeper sleeps while a deadline is pending: deadlines are wall-clock time
/// and sleeps are not, so a clock change is noticed within this.
const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// How long expiry waits after a failed transaction before trying again (reads and writes do
/// not retry it in the meantime).
const EXPIRY_RETRY_MS: i64 = 1_000;

/// How many revisions a catching-up watch reads per read transaction: enough to amortise the
/// transaction, small enough that a watch from far back does not hold much history in memory.
const CATCH_UP_CHUNK: Revision = 256;

/// Upper bound for [`EmbeddedOptions::watch_buffer`]; tokio's channels refuse capacities near
/// `usize::MAX`, and no watcher needs more.
const MAX_WATCH_BUFFER: usize = 1 << 20;

/// Tuning of an [`EmbeddedStore`].
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// How many events a live watcher may fall behind before it is closed with
    /// [`StorageError::WatchOverflow`] (clamped to 1..=2^20). Upstream's watch cache also gives
    /// each watcher a bounded buffer and terminates those that do not keep up.
    pub watch_buffer: usize,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions { watch_buffer: 1024 }
    }
}

/// How many durable commits the store has made and how many writes (revisions) they recorded:
/// writes ÷ commits is the average number of writes one fsync paid for. The server exposes them
/// on `/metrics` (`kapi_embedded_store_commits_total`, `kapi_embedded_store_writes_total`), as
/// etcd exposes its backend commits. Compactions are not counted.
#[derive(Clone, Debug, Default)]
pub struct CommitCounters {
    pub commits: Counter,
    pub writes: Counter,
}

impl CommitCounters {
    fn committed(&self, writes: usize) {
        self.commits.inc();
        self.writes.inc_by(writes as u64);
    }
}

/// A [`Storage`] in one redb file. Cloning is cheap and shares the store; the file is closed
/// when the last clone is dropped (watches then end).
///
/// All methods need a tokio runtime (engine calls run on its blocking pool); without one they
/// fail with [`StorageError::Unavailable`].
#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    /// Serializes writes and compaction so that events are published in revision order; async,
    /// so that waiting writers queue without holding blocking-pool threads.
    writer: Arc<tokio::sync::Mutex<()>>,
    hub: Mutex<Hub>,
    watch_buffer: usize,
    expiry: Expiry,
    counters: CommitCounters,
    /// This store, for the sweeper thread (which must not keep it open).
    this: Weak<Inner>,
}

/// The state of TTL expiry besides the two tables.
struct Expiry {
    /// Never later than the earliest deadline in `expiry_by_deadline` ([`NO_DEADLINE`] if
    /// none): lowered by every write with a TTL, recomputed by every expiry transaction (all
    /// under the writer lock). Earlier than the truth only after a key's deadline was replaced
    /// or removed, which costs one expiry transaction that finds nothing.
    next: AtomicI64,
    /// Whether a sweeper thread may run (tests turn it off to see what reads do alone).
    sweeper_enabled: bool,
    sweeper: Mutex<Option<Sweeper>>,
    /// Set by the sweeper thread when it exits.
    sweeper_exited: Arc<AtomicBool>,
}

/// The thread that deletes keys as their deadlines pass. Dropping `wake` (with the store)
/// stops it.
struct Sweeper {
    wake: std::sync::mpsc::SyncSender<()>,
    thread: std::thread::JoinHandle<()>,
}

/// The live side of watching, and the store's in-memory view of its revisions.
struct Hub {
    /// The revision of the last event handed to live watchers; every write up to it is
    /// committed, every later one will be handed to watchers registered now.
    published: Revision,
    /// The committed compacted revision.
    compacted: Revision,
    watchers: Vec<LiveWatcher>,
}

struct LiveWatcher {
    prefix: String,
    /// Bounded at `watch_buffer + 1`: the last slot is kept for the overflow error.
    tx: mpsc::Sender<Result<Event, StorageError>>,
}

impl EmbeddedStore {
    /// Opens the store at `path`, creating it if missing, with default options. Blocks on file
    /// I/O (and on recovery after a crash): call it at startup or from `spawn_blocking`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::open_with(path, EmbeddedOptions::default())
    }

    /// [`Self::open`] with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: EmbeddedOptions) -> Result<Self, StorageError> {
        Self::open_inner(path.as_ref(), options, true)
    }

    /// Opens the store; deletes the keys whose deadline passed while it was closed, and starts
    /// the sweeper (if `sweeper`) when a key has a deadline.
    fn open_inner(path: &Path, options: EmbeddedOptions, sweeper: bool) -> Result<Self, StorageError> {
        let db = Database::create(path).map_err(|e| engine(format!("open {}", path.display()), e))?;
        let txn = begin_write(&db)?;
        let (revision, compacted, next) = {
            let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
            txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
            txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
            // Stores written before expiry existed get the tables here.
            txn.open_table(EXPIRY_BY_KEY).map_err(|e| engine("open table expiry_by_key", e))?;
            let deadlines = txn.open_table(EXPIRY_BY_DEADLINE).map_err(|e| engine("open table expiry_by_deadline", e))?;
            if meta.get(META_REVISION).map_err(|e| engine("read meta", e))?.is_none() {
                // A new store: revision 1 is the empty state, as in etcd.
                meta.insert(META_REVISION, 1).map_err(|e| engine("initialise meta", e))?;
                meta.insert(META_COMPACTED, 0).map_err(|e| engine("initialise meta", e))?;
            }
            (read_meta(&meta, META_REVISION)?, read_meta(&meta, META_COMPACTED)?, first_deadline(&deadlines)?)
        };
        txn.commit().map_err(|e| engine("commit initialisation", e))?;
        tracing::debug!(path = %path.display(), revision, compacted, "opened embedded store");
        let hub = Hub { published: revision, compacted, watchers: Vec::new() };
        let inner = Arc::new_cyclic(|this| Inner {
            db,
            writer: Arc::new(tokio::sync::Mutex::new(())),
            hub: Mutex::new(hub),
            watch_buffer: options.watch_buffer.clamp(1, MAX_WATCH_BUFFER),
            expiry: Expiry {
                next: AtomicI64::new(next),
                sweeper_enabled: sweeper,
                sweeper: Mutex::new(None),
                sweeper_exited: Arc::new(AtomicBool::new(false)),
            },
            counters: CommitCounters::default(),
            this: this.clone(),
        });
        // Nobody else has the store yet: no writer lock needed. A failure is logged and left to
        // the sweeper, rather than keeping the server from starting.
        let _ = inner.expire_all_due(now_ms());
        if inner.expiry.next.load(Ordering::Acquire) != NO_DEADLINE {
            inner.wake_sweeper();
        }
        Ok(EmbeddedStore { inner })
    }

    /// Runs a write or compaction: queued behind earlier ones, on the blocking pool, holding the
    /// writer lock until its event has been published.
    async fn write<T: Send + 'static>(
        &self,
        context: &'static str,
        op: impl FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let guard = self.inner.writer.clone().lock_owned().await;
        blocking(self.inner.clone(), context, move |inner| {
            let result = op(inner);
            drop(guard);
            result
        })
        .await
    }

    async fn mutate(&self, key: &str, mutation: Mutation, ttl: Option<Duration>) -> Result<Event, StorageError> {
        check_key(key)?;
        if let Mutation::Create { value } | Mutation::Update { value, .. } = &mutation {
            check_request_size(key, value)?;
        }
        let key = key.to_owned();
        self.write("write", move |inner| {
            // A key past its deadline is deleted first, at its own revision.
            if inner.expiry_due(now_ms()) {
                let _ = inner.expire_all_due(now_ms());
            }
            inner.apply(&key, mutation, ttl)
        })
        .await
    }

    /// Deletes the keys past their deadline before a read of the latest state, if the sweeper
    /// has not yet: costs a clock read and an atomic load when nothing is due. A failure is
    /// logged (and retried later), and the read goes on.
    async fn expire_if_due(&self) {
        if self.inner.expiry_due(now_ms()) {
            let _ = self.write("expire keys", |inner| inner.expire_all_due(now_ms())).await;
        }
    }

    /// A store without the sweeper thread: only opening, reads and writes expire keys.
    #[cfg(test)]
    fn open_without_sweeper(path: &Path) -> Result<Self, StorageError> {
        Self::open_inner(path, EmbeddedOptions::default(), false)
    }

    /// The store's commit counters (shared: they keep counting).
    pub fn commit_counters(&self) -> CommitCounters {
        self.inner.counters.clone()
    }

    /// The number of registered live watchers (tests check that dropped watches unregister).
    #[cfg(test)]
    fn live_watchers(&self) -> usize {
        self.inner.hub().watchers.len()
    }
}

impl Storage for EmbeddedStore {
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        Box::pin(async move {
            check_key(key)?;
            self.expire_if_due().await;
            let key = key.to_owned();
            blocking(self.inner.clone(), "get", move |inner| {
                let txn = inner.db.begin_read().map_err(|e| engine("begin read transaction", e))?;
                let keys = txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
                read_key(&keys, &key)
            })
            .await
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult> {
        Box::pin(async move {
            if options.revision.is_none() {
                self.expire_if_due().await;
            }
            let prefix = prefix.to_owned();
            blocking(self.inner.clone(), "list", move |inner| inner.list(&prefix, &options)).await
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Create { value }, None).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn create_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, ttl: Duration) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Create { value }, Some(ttl)).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn update_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, expected: Revision, ttl: Duration) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Update { value, expected }, Some(ttl)).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected_mod_revision: Revision) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Update { value, expected: expected_mod_revision }, None).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected_mod_revision: Option<Revision>) -> StorageFuture<'a, (KeyValue, Revision)> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Delete { expected: expected_mod_revision }, None).await? {
                Event::Delete { prev, revision } => Ok((prev, revision)),
                event => Err(mismatched(event)),
            }
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        Box::pin(async move {
            let mut hub = self.inner.hub();
            if from_revision < 0 {
                return Err(StorageError::InvalidRevision { revision: from_revision, reason: "a watch starts at 0 (now) or a revision" });
            }
            if from_revision > hub.published {
                return Err(StorageError::FutureRevision { requested: from_revision, current: hub.published });
            }
            if from_revision != 0 && from_revision < hub.compacted {
                return Err(StorageError::Compacted { requested: from_revision, compacted: hub.compacted });
            }
            let cursor = if from_revision == 0 { hub.published } else { from_revision };
            let phase = if cursor == hub.published {
                Phase::Live(hub.register(prefix.to_owned(), self.inner.watch_buffer))
            } else {
                Phase::CatchUp { cursor }
            };
            drop(hub);
            Ok(WatchStream::new(EmbeddedWatch {
                inner: Arc::downgrade(&self.inner),
                prefix: prefix.to_owned(),
                pending: VecDeque::new(),
                phase,
            }))
        })
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move { Ok(self.inner.hub().published) })
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        Box::pin(async move { self.write("compact", move |inner| inner.compact(revision)).await })
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move { Ok(self.inner.hub().compacted) })
    }
}

impl Inner {
    /// The hub, even if a thread panicked while holding it: its state is a revision pair and a
    /// list of senders, each updated by single assignments, so it is never left half-changed.
    fn hub(&self) -> MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One write: check, record in every table, commit durably, publish. With a `ttl` the key
    /// expires that long after this write; without, any deadline it had is gone.
    fn apply(&self, key: &str, mutation: Mutation, ttl: Option<Duration>) -> Result<Event, StorageError> {
        let txn = begin_write(&self.db)?;
        let (event, deadline) = {
            let mut tables = Tables::open(&txn)?;
            let current = read_meta(&tables.meta, META_REVISION)?;
            let revision = current.checked_add(1).ok_or_else(|| internal("next revision", "revision overflow"))?;
            // A failed check returns here: the transaction is dropped, which aborts it.
            let event = mutation.into_event(key, read_key(&tables.keys, key)?, revision)?;
            let deadline = match (&event, ttl) {
                (Event::Put { .. }, Some(ttl)) => Some(deadline_after(ttl)),
                _ => None,
            };
            tables.record(&event, deadline)?;
            (event, deadline)
        };
        txn.commit().map_err(|e| engine(format!("commit revision {}", event.revision()), e))?;
        self.counters.committed(1);
        self.hub().publish(&event, self.watch_buffer);
        if let Some(deadline) = deadline
            && self.expiry.next.fetch_min(deadline, Ordering::AcqRel) > deadline
        {
            self.wake_sweeper();
        }
        Ok(event)
    }

    /// Whether a deadline may have passed at `now` (milliseconds since the Unix epoch).
    fn expiry_due(&self, now: i64) -> bool {
        self.expiry.next.load(Ordering::Acquire) <= now
    }

    /// Deletes every key whose deadline is at or before `now`, batch after batch. The caller
    /// holds the writer lock (or is opening the store).
    fn expire_all_due(&self, now: i64) -> Result<(), StorageError> {
        while self.expire_batch(now)? {}
        Ok(())
    }

    /// Deletes up to [`EXPIRY_BATCH`] keys whose deadline is at or before `now`, each at its own
    /// revision, in one transaction, and publishes the deletions; returns whether more may be
    /// due. A deadline whose key was written since it was set (the mod revision differs) is
    /// dropped without deleting anything. The caller holds the writer lock. After a failure,
    /// expiry waits [`EXPIRY_RETRY_MS`] before trying again.
    fn expire_batch(&self, now: i64) -> Result<bool, StorageError> {
        match self.try_expire_batch(now) {
            Ok(more) => Ok(more),
            Err(error) => {
                tracing::warn!(%error, "deleting expired keys failed; retrying in a second");
                self.expiry.next.store(now.saturating_add(EXPIRY_RETRY_MS), Ordering::Release);
                Err(error)
            }
        }
    }

    fn try_expire_batch(&self, now: i64) -> Result<bool, StorageError> {
        let txn = begin_write(&self.db)?;
        let (events, due, next) = {
            let mut tables = Tables::open(&txn)?;
            let mut due = Vec::new();
            for entry in tables.by_deadline.iter().map_err(|e| engine("read expiry_by_deadline", e))? {
                let (at, revision) = entry.map_err(|e| engine("read expiry_by_deadline", e))?;
                let (deadline, key) = at.value();
                if deadline > now || due.len() == EXPIRY_BATCH {
                    break;
                }
                due.push((deadline, key.to_owned(), revision.value()));
            }
            let mut revision = read_meta(&tables.meta, META_REVISION)?;
            let mut events = Vec::new();
            for (deadline, key, set_at) in &due {
                match read_key(&tables.keys, key)? {
                    Some(current) if current.mod_revision == *set_at => {
                        revision = revision.checked_add(1).ok_or_else(|| internal("next revision", "revision overflow"))?;
                        let event = Event::Delete { prev: current, revision };
                        // Also removes the key's deadline.
                        tables.record(&event, None)?;
                        events.push(event);
                    }
                    _ => tables.forget_deadline(key, *deadline, *set_at)?,
                }
            }
            let next = first_deadline(&tables.by_deadline)?;
            (events, due.len(), next)
        };
        if due == 0 {
            // Nothing to do: the transaction is dropped (aborted); `next` was too early.
            self.expiry.next.store(next, Ordering::Release);
            return Ok(false);
        }
        txn.commit().map_err(|e| engine("commit expired keys", e))?;
        if !events.is_empty() {
            self.counters.committed(events.len());
        }
        {
            let mut hub = self.hub();
            for event in &events {
                hub.publish(event, self.watch_buffer);
            }
        }
        self.expiry.next.store(next, Ordering::Release);
        if !events.is_empty() {
            tracing::debug!(deleted = events.len(), "deleted expired keys");
        }
        Ok(due == EXPIRY_BATCH)
    }

    /// Starts the sweeper thread, or wakes it to look at an earlier deadline.
    fn wake_sweeper(&self) {
        if !self.expiry.sweeper_enabled {
            return;
        }
        let mut sweeper = self.expiry.sweeper.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sweeper) = sweeper.as_ref() {
            // Full means a wake-up is already pending.
            let _ = sweeper.wake.try_send(());
            return;
        }
        let (wake, woken) = std::sync::mpsc::sync_channel(1);
        let (this, exited) = (self.this.clone(), self.expiry.sweeper_exited.clone());
        let spawned = std::thread::Builder::new().name("kapi-store-expiry".into()).spawn(move || {
            sweep(this, woken);
            exited.store(true, Ordering::Release);
        });
        match spawned {
            Ok(thread) => *sweeper = Some(Sweeper { wake, thread }),
            // Reads and writes still delete expired keys before they look.
            Err(error) => tracing::error!(%error, "cannot start the thread that deletes expired keys"),
        }
    }

    fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let txn = begin_write(&self.db)?;
        {
            let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
            let mut history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
            let current = read_meta(&meta, META_REVISION)?;
            let compacted = read_meta(&meta, META_COMPACTED)?;
            if revision <= compacted {
                return Err(StorageError::Compacted { requested: revision, compacted });
            }
            if revision > current {
                return Err(StorageError::FutureRevision { requested: revision, current });
            }
            let context = || format!("compact to revision {revision}");
            history.retain_in(..=revision, |_, _| false).map_err(|e| engine(context(), e))?;
            meta.insert(META_COMPACTED, revision).map_err(|e| engine(context(), e))?;
        }
        txn.commit().map_err(|e| engine(format!("commit compaction to revision {revision}"), e))?;
        self.hub().compacted = revision;
        tracing::info!(revision, "compacted storage history");
        Ok(())
    }

    /// A list in one read transaction, so that keys, history and revisions are one snapshot.
    fn list(&self, prefix: &str, options: &ListOptions) -> Result<ListResult, StorageError> {
        let txn = self.db.begin_read().map_err(|e| engine("begin read transaction", e))?;
        let meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
        let current = read_meta(&meta, META_REVISION)?;
        let revision = match options.revision {
            None => current,
            Some(requested) => {
                check_read_revision(requested, current, read_meta(&meta, META_COMPACTED)?)?;
                requested
            }
        };
        let start_after = options.start_after.as_deref();
        // Keys after `start_after` under `prefix` form one contiguous range starting here.
        let lower = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let wanted = |key: &str| key.starts_with(prefix) && start_after.is_none_or(|after| key > after);
        let mut page = Page::new(revision, options.limit);
        let keys = txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
        let range = keys.range::<&str>((lower, Bound::Unbounded)).map_err(|e| engine("read keys", e))?;
        if revision == current {
            for entry in range {
                let (key, value) = entry.map_err(|e| engine("read keys", e))?;
                let key = key.value();
                if !key.starts_with(prefix) {
                    break;
                }
                if page.is_full() {
                    page.skip();
                } else {
                    let (create_revision, mod_revision, value) = value.value();
                    page.push(KeyValue { key: key.to_owned(), value: Bytes::copy_from_slice(value), create_revision, mod_revision });
                }
            }
            return Ok(page.finish());
        }
        // An older revision: the current state with every later write undone, newest first.
        let mut state = BTreeMap::new();
        for entry in range {
            let (key, value) = entry.map_err(|e| engine("read keys", e))?;
            let key = key.value();
            if !key.starts_with(prefix) {
                break;
            }
            let (create_revision, mod_revision, value) = value.value();
            let kv = KeyValue { key: key.to_owned(), value: Bytes::copy_from_slice(value), create_revision, mod_revision };
            state.insert(kv.key.clone(), kv);
        }
        let history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
        let later = history.range((revision + 1)..=current).map_err(|e| engine("read history", e))?;
        for entry in later.rev() {
            let (at, record) = entry.map_err(|e| engine("read history", e))?;
            let event = decode_event(at.value(), record.value())?;
            if !wanted(event.key()) {
                continue;
            }
            match event {
                Event::Put { kv, prev: None } => {
                    state.remove(&kv.key);
                }
                Event::Put { prev: Some(prev), .. } | Event::Delete { prev, .. } => {
                    state.insert(prev.key.clone(), prev);
                }
                Event::Progress { .. } => {}
            }
        }
        for kv in state.into_values() {
            if page.is_full() {
                page.skip();
            } else {
                page.push(kv);
            }
        }
        Ok(page.finish())
    }

    /// The events under `prefix` with revisions in `after + 1 ..= upto`, for a catching-up
    /// watch; `upto` must be published (so committed).
    fn history(&self, prefix: &str, after: Revision, upto: Revision) -> Result<Vec<Event>, StorageError> {
        let txn = self.db.begin_read().map_err(|e| engine("begin read transaction", e))?;
        let meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
        let compacted = read_meta(&meta, META_COMPACTED)?;
        if after < compacted {
            return Err(StorageError::Compacted { requested: after, compacted });
        }
        let history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
        let mut events = Vec::new();
        for entry in history.range((after + 1)..=upto).map_err(|e| engine("read history", e))? {
            let (at, record) = entry.map_err(|e| engine("read history", e))?;
            let event = decode_event(at.value(), record.value())?;
            if event.key().starts_with(prefix) {
                events.push(event);
            }
        }
        Ok(events)
    }
}

impl Hub {
    fn register(&mut self, prefix: String, buffer: usize) -> mpsc::Receiver<Result<Event, StorageError>> {
        let (tx, rx) = mpsc::channel(buffer + 1);
        self.watchers.push(LiveWatcher { prefix, tx });
        rx
    }

    /// Hands `event` to every live watcher of its key, never waiting: a watcher with one free
    /// slot left gets the overflow error in it and is dropped; a closed one (its stream was
    /// dropped) is forgotten.
    fn publish(&mut self, event: &Event, buffer: usize) {
        let key = event.key();
        self.watchers.retain(|watcher| {
            if !key.starts_with(&watcher.prefix) {
                return !watcher.tx.is_closed();
            }
            if watcher.tx.capacity() <= 1 {
                tracing::warn!(prefix = %watcher.prefix, buffer, "closing a watcher that fell behind");
                // Cannot fail for want of room (the slot was kept for it); if the receiver is
                // gone there is nobody to tell.
                let _ = watcher.tx.try_send(Err(StorageError::WatchOverflow { capacity: buffer }));
                return false;
            }
            watcher.tx.try_send(Ok(event.clone())).is_ok()
        });
        self.published = event.revision();
    }
}

/// One watch of an [`EmbeddedStore`]: first it catches up from history, chunk by chunk; once it
/// has read every published event, it registers with the hub, which sends it every later one.
/// Registration happens under the hub's lock and only when the watch's cursor equals the hub's
/// `published` revision, so no event is missed or delivered twice however writes race with it.
struct EmbeddedWatch {
    /// Weak, so that an open watch does not keep the database file open after the store is
    /// dropped (a reopen would fail); the watch then ends.
    inner: Weak<Inner>,
    prefix: String,
    /// Events read from history and not yet returned.
    pending: VecDeque<Event>,
    phase: Phase,
}

enum Phase {
    /// Every event up to `cursor` has been read into `pending`.
    CatchUp {
        cursor: Revision,
    },
    Live(mpsc::Receiver<Result<Event, StorageError>>),
}

impl WatchSource for EmbeddedWatch {
    /// Cancel-safe: state changes only after an await has completed, so a dropped call loses
    /// nothing (its history read is simply done again).
    fn next_event(&mut self) -> StorageFuture<'_, Option<Event>> {
        Box::pin(async move {
            loop {
                if let Some(event) = self.pending.pop_front() {
                    return Ok(Some(event));
                }
                let cursor = match &mut self.phase {
                    Phase::Live(rx) => {
                        return match rx.recv().await {
                            Some(Ok(event)) => Ok(Some(event)),
                            Some(Err(error)) => Err(error),
                            None => Ok(None),
                        };
                    }
                    Phase::CatchUp { cursor } => *cursor,
                };
                let Some(inner) = self.inner.upgrade() else {
                    return Ok(None);
                };
                let upto = {
                    let mut hub = inner.hub();
                    if hub.published <= cursor {
                        self.phase = Phase::Live(hub.register(self.prefix.clone(), inner.watch_buffer));
                        continue;
                    }
                    hub.published.min(cursor.saturating_add(CATCH_UP_CHUNK))
                };
                let prefix = self.prefix.clone();
                let events = blocking(inner, "replay watch history", move |inner| inner.history(&prefix, cursor, upto)).await?;
                self.pending.extend(events);
                self.phase = Phase::CatchUp { cursor: upto };
            }
        })
    }
}

/// A write, checked against the key's current state inside the write transaction.
enum Mutation {
    Create { value: Bytes },
    Update { value: Bytes, expected: Revision },
    Delete { expected: Option<Revision> },
}

impl Mutation {
    /// The event this mutation makes at `revision`, or why it may not happen.
    fn into_event(self, key: &str, existing: Option<KeyValue>, revision: Revision) -> Result<Event, StorageError> {
        match (self, existing) {
            (Mutation::Create { .. }, Some(_)) => Err(StorageError::AlreadyExists { key: key.to_owned() }),
            (Mutation::Create { value }, None) => Ok(Event::Put {
                kv: KeyValue { key: key.to_owned(), value, create_revision: revision, mod_revision: revision },
                prev: None,
            }),
            (Mutation::Update { .. } | Mutation::Delete { .. }, None) => Err(StorageError::NotFound { key: key.to_owned() }),
            (Mutation::Update { expected, .. } | Mutation::Delete { expected: Some(expected) }, Some(current))
                if current.mod_revision != expected =>
            {
                Err(StorageError::Conflict { key: key.to_owned(), expected, current })
            }
            (Mutation::Update { value, .. }, Some(current)) => Ok(Event::Put {
                kv: KeyValue { key: key.to_owned(), value, create_revision: current.create_revision, mod_revision: revision },
                prev: Some(current),
            }),
            (Mutation::Delete { .. }, Some(current)) => Ok(Event::Delete { prev: current, revision }),
        }
    }
}

/// A history entry, with the field numbers of etcd's `mvccpb.Event`, so that the format is
/// documented, versionable and familiar.
#[derive(Clone, PartialEq, prost::Message)]
struct EventRecord {
    /// [`EVENT_PUT`] or [`EVENT_DELETE`], as `mvccpb.Event.EventType`.
    #[prost(int32, tag = "1")]
    kind: i32,
    /// The key's new state; for a delete only the key and the deletion's revision (as etcd).
    #[prost(message, optional, tag = "2")]
    kv: Option<KeyValueRecord>,
    #[prost(message, optional, tag = "3")]
    prev_kv: Option<KeyValueRecord>,
}

const EVENT_PUT: i32 = 0;
const EVENT_DELETE: i32 = 1;

/// A key-value, with the field numbers of etcd's `mvccpb.KeyValue` (a string key is a bytes
/// field on the wire; `version` and `lease` are not kept).
#[derive(Clone, PartialEq, prost::Message)]
struct KeyValueRecord {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(int64, tag = "2")]
    create_revision: i64,
    #[prost(int64, tag = "3")]
    mod_revision: i64,
    #[prost(bytes = "bytes", tag = "5")]
    value: Bytes,
}

impl From<&KeyValue> for KeyValueRecord {
    fn from(kv: &KeyValue) -> Self {
        KeyValueRecord { key: kv.key.clone(), create_revision: kv.create_revision, mod_revision: kv.mod_revision, value: kv.value.clone() }
    }
}

impl From<KeyValueRecord> for KeyValue {
    fn from(r: KeyValueRecord) -> Self {
        KeyValue { key: r.key, value: r.value, create_revision: r.create_revision, mod_revision: r.mod_revision }
    }
}

impl EventRecord {
    /// The history record of a write; `None` for a progress report, which is never stored.
    fn from_event(event: &Event) -> Option<Self> {
        Some(match event {
            Event::Put { kv, prev } => EventRecord { kind: EVENT_PUT, kv: Some(kv.into()), prev_kv: prev.as_ref().map(Into::into) },
            Event::Progress { .. } => return None,
            Event::Delete { prev, revision } => EventRecord {
                kind: EVENT_DELETE,
                kv: Some(KeyValueRecord { key: prev.key.clone(), mod_revision: *revision, ..KeyValueRecord::default() }),
                prev_kv: Some(prev.into()),
            },
        })
    }
}

/// Decodes the history entry stored at `revision`, checking that it is a well-formed event of
/// that revision: a damaged file is reported, never trusted.
fn decode_event(revision: Revision, bytes: &[u8]) -> Result<Event, StorageError> {
    let context = || format!("decode history entry at revision {revision}");
    let record = EventRecord::decode(bytes).map_err(|e| StorageError::Internal { context: context(), source: e.into() })?;
    match (record.kind, record.kv, record.prev_kv) {
        (EVENT_PUT, Some(kv), prev) if kv.mod_revision == revision => Ok(Event::Put { kv: kv.into(), prev: prev.map(Into::into) }),
        (EVENT_DELETE, Some(kv), Some(prev)) if kv.mod_revision == revision && kv.key == prev.key => {
            Ok(Event::Delete { prev: prev.into(), revision })
        }
        (kind, ..) => Err(internal(context(), format!("malformed event of kind {kind}"))),
    }
}

/// Collects one page of a list: the first `limit` keys, and a count of the rest.
struct Page {
    revision: Revision,
    limit: Option<usize>,
    kvs: Vec<KeyValue>,
    remaining: i64,
}

impl Page {
    fn new(revision: Revision, limit: Option<usize>) -> Self {
        Page { revision, limit: limit.filter(|&l| l > 0), kvs: Vec::new(), remaining: 0 }
    }

    fn is_full(&self) -> bool {
        self.limit.is_some_and(|limit| self.kvs.len() >= limit)
    }

    fn push(&mut self, kv: KeyValue) {
        self.kvs.push(kv);
    }

    fn skip(&mut self) {
        self.remaining += 1;
    }

    fn finish(self) -> ListResult {
        let more = self.remaining > 0;
        ListResult { kvs: self.kvs, revision: self.revision, more, remaining: more.then_some(self.remaining) }
    }
}

impl Drop for Inner {
    /// Stops the sweeper thread: dropping its sender wakes it with a disconnection, and it
    /// holds no reference to the store while it waits, so it exits at once; joining it means no
    /// thread outlives the store (unless this drop runs on the sweeper itself, which then exits
    /// as it returns).
    fn drop(&mut self) {
        let sweeper = self.expiry.sweeper.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(Sweeper { wake, thread }) = sweeper {
            drop(wake);
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// The sweeper thread: deletes expired keys, then sleeps until the earliest deadline (at most
/// [`SWEEP_INTERVAL`]; without deadline until woken), until the store is dropped. It holds the
/// store only while it works, so that dropping the last handle closes the file.
fn sweep(store: Weak<Inner>, woken: std::sync::mpsc::Receiver<()>) {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        let wait = {
            let Some(inner) = store.upgrade() else { return };
            loop {
                let now = now_ms();
                if !inner.expiry_due(now) {
                    break;
                }
                // One batch per lock, so that writes go on between batches.
                let more = {
                    let _writer = inner.writer.blocking_lock();
                    inner.expire_batch(now)
                };
                if !matches!(more, Ok(true)) {
                    break;
                }
            }
            match inner.expiry.next.load(Ordering::Acquire) {
                NO_DEADLINE => None,
                next => Some(Duration::from_millis(next.saturating_sub(now_ms()).max(0) as u64).min(SWEEP_INTERVAL)),
            }
        };
        let stopped = match wait {
            Some(wait) => matches!(woken.recv_timeout(wait), Err(RecvTimeoutError::Disconnected)),
            None => woken.recv().is_err(),
        };
        if stopped {
            return;
        }
    }
}

/// The tables one write transaction changes.
struct Tables<'txn> {
    meta: redb::Table<'txn, &'static str, i64>,
    keys: redb::Table<'txn, &'static str, (i64, i64, &'static [u8])>,
    history: redb::Table<'txn, i64, &'static [u8]>,
    by_key: redb::Table<'txn, &'static str, (i64, i64)>,
    by_deadline: redb::Table<'txn, (i64, &'static str), i64>,
}

impl<'txn> Tables<'txn> {
    fn open(txn: &'txn redb::WriteTransaction) -> Result<Self, StorageError> {
        Ok(Tables {
            meta: txn.open_table(META).map_err(|e| engine("open table meta", e))?,
            keys: txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?,
            history: txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?,
            by_key: txn.open_table(EXPIRY_BY_KEY).map_err(|e| engine("open table expiry_by_key", e))?,
            by_deadline: txn.open_table(EXPIRY_BY_DEADLINE).map_err(|e| engine("open table expiry_by_deadline", e))?,
        })
    }

    /// Records `event` (a put or delete at the next revision): the key's state, its history
    /// entry, the current revision, and its deadline: `deadline` for a put, none otherwise
    /// (any earlier one is replaced).
    fn record(&mut self, event: &Event, deadline: Option<i64>) -> Result<(), StorageError> {
        let (key, revision) = (event.key(), event.revision());
        let context = || format!("write {key:?} at revision {revision}");
        match event {
            Event::Put { kv, .. } => {
                self.keys.insert(key, (kv.create_revision, kv.mod_revision, kv.value.as_ref())).map_err(|e| engine(context(), e))?;
            }
            Event::Delete { .. } => {
                self.keys.remove(key).map_err(|e| engine(context(), e))?;
            }
            Event::Progress { .. } => return Err(internal(context(), "a write produced no change")),
        }
        let old = self.by_key.remove(key).map_err(|e| engine(context(), e))?.map(|entry| entry.value());
        if let Some((old_deadline, _)) = old {
            self.by_deadline.remove((old_deadline, key)).map_err(|e| engine(context(), e))?;
        }
        if let (Event::Put { .. }, Some(deadline)) = (event, deadline) {
            self.by_key.insert(key, (deadline, revision)).map_err(|e| engine(context(), e))?;
            self.by_deadline.insert((deadline, key), revision).map_err(|e| engine(context(), e))?;
        }
        let record = EventRecord::from_event(event).ok_or_else(|| internal(context(), "a write produced no change"))?;
        self.history.insert(revision, record.encode_to_vec().as_slice()).map_err(|e| engine(context(), e))?;
        self.meta.insert(META_REVISION, revision).map_err(|e| engine(context(), e))?;
        Ok(())
    }

    /// Drops a deadline that no longer applies (its key was written or deleted since it was
    /// set; [`Tables::record`] normally removes such entries itself).
    fn forget_deadline(&mut self, key: &str, deadline: i64, set_at: Revision) -> Result<(), StorageError> {
        let context = || format!("forget the deadline of {key:?}");
        self.by_deadline.remove((deadline, key)).map_err(|e| engine(context(), e))?;
        let current = self.by_key.get(key).map_err(|e| engine(context(), e))?.map(|entry| entry.value());
        if current == Some((deadline, set_at)) {
            self.by_key.remove(key).map_err(|e| engine(context(), e))?;
        }
        Ok(())
    }
}

/// The earliest deadline in `expiry_by_deadline`, or [`NO_DEADLINE`].
fn first_deadline(by_deadline: &impl ReadableTable<(i64, &'static str), i64>) -> Result<i64, StorageError> {
    let first = by_deadline.first().map_err(|e| engine("read expiry_by_deadline", e))?;
    Ok(first.map_or(NO_DEADLINE, |(at, _)| at.value().0))
}

/// Wall-clock milliseconds since the Unix epoch: deadlines outlive the process.
fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The deadline of a key written now with `ttl`.
fn deadline_after(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// Whether the state as of `requested` can be read.
fn check_read_revision(requested: Revision, current: Revision, compacted: Revision) -> Result<(), StorageError> {
    if requested < 1 {
        return Err(StorageError::InvalidRevision { revision: requested, reason: "revisions start at 1" });
    }
    if requested < compacted {
        return Err(StorageError::Compacted { requested, compacted });
    }
    if requested > current {
        return Err(StorageError::FutureRevision { requested, current });
    }
    Ok(())
}

fn begin_write(db: &Database) -> Result<redb::WriteTransaction, StorageError> {
    let mut txn = db.begin_write().map_err(|e| engine("begin write transaction", e))?;
    // redb's default, set explicitly because acknowledged writes must survive a crash.
    txn.set_durability(Durability::Immediate).map_err(|e| engine("set durability", e))?;
    Ok(txn)
}

fn read_meta(meta: &impl ReadableTable<&'static str, i64>, name: &str) -> Result<Revision, StorageError> {
    match meta.get(name).map_err(|e| engine("read meta", e))? {
        Some(value) => Ok(value.value()),
        None => Err(internal("read meta", format!("meta entry {name:?} is missing"))),
    }
}

fn read_key(keys: &impl ReadableTable<&'static str, (i64, i64, &'static [u8])>, key: &str) -> Result<Option<KeyValue>, StorageError> {
    let entry = keys.get(key).map_err(|e| engine(format!("read {key:?}"), e))?;
    Ok(entry.map(|entry| {
        let (create_revision, mod_revision, value) = entry.value();
        KeyValue { key: key.to_owned(), value: Bytes::copy_from_slice(value), create_revision, mod_revision }
    }))
}

/// Runs engine work on tokio's blocking pool (redb calls block on disk I/O).
async fn blocking<T: Send + 'static>(
    inner: Arc<Inner>,
    context: &'static str,
    op: impl FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| StorageError::Unavailable { context: format!("{context}: no tokio runtime"), source: e.into() })?;
    runtime
        .spawn_blocking(move || op(&inner))
        .await
        .map_err(|e| StorageError::Internal { context: format!("{context}: blocking task failed"), source: e.into() })?
}

/// Classifies a redb error: I/O trouble may pass (unavailable), anything else is a broken
/// store or a bug (internal).
fn engine(context: impl Into<String>, error: impl Into<redb::Error>) -> StorageError {
    let error: redb::Error = error.into();
    let context = context.into();
    match error {
        redb::Error::Io(_)
        | redb::Error::Backend(_)
        | redb::Error::PreviousIo
        | redb::Error::DatabaseClosed
        | redb::Error::DatabaseAlreadyOpen
        | redb::Error::LockProtocolMismatch => StorageError::Unavailable { context, source: error.into() },
        _ => StorageError::Internal { context, source: error.into() },
    }
}

fn internal(context: impl Into<String>, message: impl Into<String>) -> StorageError {
    StorageError::Internal { context: context.into(), source: message.into().into() }
}

/// A write returned the wrong kind of event; [`Mutation::into_event`] makes this impossible, but
/// an error is kinder than a panic if that ever changes.
fn mismatched(event: Event) -> StorageError {
    internal("write", format!("unexpected event at revision {} for {:?}", event.revision(), event.key()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageError as E;
    use crate::storage::conformance;

    fn open(dir: &tempfile::TempDir, watch_buffer: usize) -> EmbeddedStore {
        EmbeddedStore::open_with(dir.path().join("store.redb"), EmbeddedOptions { watch_buffer }).unwrap()
    }

    fn kv(key: &str, value: &'static str, create_revision: Revision, mod_revision: Revision) -> KeyValue {
        KeyValue { key: key.into(), value: Bytes::from_static(value.as_bytes()), create_revision, mod_revision }
    }

    #[test]
    fn mutations_check_the_current_state() {
        let current = kv("/a", "1", 2, 5);
        let create = |v| Mutation::Create { value: Bytes::from_static(v) };
        let update = |expected| Mutation::Update { value: Bytes::from_static(b"2"), expected };
        assert!(matches!(create(b"x").into_event("/a", Some(current.clone()), 9), Err(E::AlreadyExists { .. })));
        assert_eq!(create(b"1").into_event("/a", None, 9).unwrap(), Event::Put { kv: kv("/a", "1", 9, 9), prev: None });
        assert!(matches!(update(5).into_event("/a", None, 9), Err(E::NotFound { .. })));
        assert!(matches!(
            update(4).into_event("/a", Some(current.clone()), 9),
            Err(E::Conflict { expected: 4, current: KeyValue { mod_revision: 5, .. }, .. })
        ));
        assert_eq!(
            update(5).into_event("/a", Some(current.clone()), 9).unwrap(),
            Event::Put { kv: kv("/a", "2", 2, 9), prev: Some(current.clone()) }
        );
        let delete = |expected| Mutation::Delete { expected };
        assert!(matches!(delete(Some(4)).into_event("/a", Some(current.clone()), 9), Err(E::Conflict { .. })));
        assert!(matches!(delete(None).into_event("/a", None, 9), Err(E::NotFound { .. })));
        assert_eq!(
            delete(Some(5)).into_event("/a", Some(current.clone()), 9).unwrap(),
            Event::Delete { prev: current.clone(), revision: 9 }
        );
        assert_eq!(delete(None).into_event("/a", Some(current.clone()), 9).unwrap(), Event::Delete { prev: current, revision: 9 });
    }

    #[test]
    fn history_records_round_trip_and_damage_is_an_error() {
        let events = [
            Event::Put { kv: kv("/a", "1", 3, 3), prev: None },
            Event::Put { kv: kv("/a", "2", 3, 4), prev: Some(kv("/a", "1", 3, 3)) },
            Event::Delete { prev: kv("/a", "2", 3, 4), revision: 5 },
        ];
        for event in events {
            let bytes = EventRecord::from_event(&event).unwrap().encode_to_vec();
            assert_eq!(decode_event(event.revision(), &bytes).unwrap(), event);
            // Stored under another revision, or truncated, or garbage: reported, not trusted.
            assert!(matches!(decode_event(event.revision() + 1, &bytes), Err(E::Internal { .. })));
            assert!(matches!(decode_event(event.revision(), &bytes[..bytes.len() - 1]), Err(E::Internal { .. })));
        }
        assert!(matches!(decode_event(1, &[0xff, 0xff, 0xff]), Err(E::Internal { .. })));
        assert!(matches!(decode_event(1, &[]), Err(E::Internal { .. })));
    }

    #[test]
    fn pages_count_what_they_leave_out() {
        let mut page = Page::new(7, Some(1));
        page.push(kv("/a", "", 2, 2));
        assert!(page.is_full());
        page.skip();
        page.skip();
        let result = page.finish();
        assert_eq!((result.kvs.len(), result.more, result.remaining, result.revision), (1, true, Some(2), 7));
        let unlimited = Page::new(7, Some(0));
        assert!(!unlimited.is_full());
        assert_eq!(unlimited.finish().remaining, None);
    }

    #[test]
    fn read_revisions_are_checked() {
        assert!(matches!(check_read_revision(0, 5, 0), Err(E::InvalidRevision { revision: 0, .. })));
        assert!(matches!(check_read_revision(2, 5, 3), Err(E::Compacted { requested: 2, compacted: 3 })));
        assert!(matches!(check_read_revision(6, 5, 3), Err(E::FutureRevision { requested: 6, current: 5 })));
        assert!(check_read_revision(3, 5, 3).is_ok());
        assert!(check_read_revision(5, 5, 3).is_ok());
    }

    #[test]
    fn a_file_that_is_not_a_store_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage");
        std::fs::write(&path, vec![0x5a; 64 * 1024]).unwrap();
        assert!(EmbeddedStore::open(&path).is_err());
        assert!(EmbeddedStore::open(dir.path()).is_err(), "a directory is not a store");
    }

    #[test]
    fn without_a_runtime_calls_fail_instead_of_panicking() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        // Poll by hand, outside any runtime.
        let mut future = store.get("/a");
        let waker = std::task::Waker::noop();
        let poll = future.as_mut().poll(&mut std::task::Context::from_waker(waker));
        assert!(matches!(poll, std::task::Poll::Ready(Err(E::Unavailable { .. }))));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_watcher_is_closed_and_writers_do_not_wait() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 4);
        let mut slow = store.watch("/s/", 0).await.unwrap();
        let mut other = store.watch("/t/", 0).await.unwrap();
        for i in 0..10 {
            store.create(&format!("/s/{i}"), Bytes::new()).await.unwrap();
        }
        store.create("/t/x", Bytes::new()).await.unwrap();
        for expected in 2..6 {
            assert_eq!(slow.next().await.unwrap().unwrap().revision(), expected);
        }
        assert!(matches!(slow.next().await, Some(Err(E::WatchOverflow { capacity: 4 }))));
        assert!(slow.next().await.is_none());
        // Only the slow watcher was closed.
        assert_eq!(other.next().await.unwrap().unwrap().key(), "/t/x");
        assert_eq!(store.live_watchers(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_watches_unregister() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let a = store.watch("/a/", 0).await.unwrap();
        let b = store.watch("/b/", 0).await.unwrap();
        assert_eq!(store.live_watchers(), 2);
        drop(a);
        drop(b);
        store.create("/a/1", Bytes::new()).await.unwrap();
        assert_eq!(store.live_watchers(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn catching_up_crosses_chunks_and_skips_other_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let start = store.current_revision().await.unwrap();
        let writes = CATCH_UP_CHUNK * 2 + 10;
        for i in 0..writes {
            let prefix = if i % 3 == 0 { "/w/" } else { "/x/" };
            store.create(&format!("{prefix}{i}"), Bytes::new()).await.unwrap();
        }
        // A buffer of 8 would overflow if history went through the live channel.
        let mut watch = store.watch("/w/", start).await.unwrap();
        let mut seen = Vec::new();
        while seen.len() < (writes as usize).div_ceil(3) {
            seen.push(watch.next().await.unwrap().unwrap().revision());
        }
        let expected: Vec<Revision> = (0..writes).filter(|i| i % 3 == 0).map(|i| start + 1 + i).collect();
        assert_eq!(seen, expected);
        // Caught up: waiting for the next event registers the watch with the hub.
        assert!(tokio::time::timeout(std::time::Duration::from_millis(50), watch.next()).await.is_err());
        assert_eq!(store.live_watchers(), 1);
        store.create("/w/live", Bytes::new()).await.unwrap();
        assert_eq!(watch.next().await.unwrap().unwrap().key(), "/w/live");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_store_ends_watches_and_frees_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        store.create("/a/1", Bytes::new()).await.unwrap();
        store.create("/a/2", Bytes::new()).await.unwrap();
        let mut live = store.watch("/a/", 0).await.unwrap();
        let mut catching_up = store.watch("/a/", 1).await.unwrap();
        drop(store);
        assert!(live.next().await.is_none());
        assert!(catching_up.next().await.is_none());
        let reopened = open(&dir, 8);
        assert_eq!(reopened.current_revision().await.unwrap(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn start_after_outside_the_prefix_bounds_the_page_correctly() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        for key in ["/a/1", "/b/1", "/b/2", "/c/1"] {
            store.create(key, Bytes::new()).await.unwrap();
        }
        let old = store.current_revision().await.unwrap();
        store.delete("/b/2", None).await.unwrap();
        for revision in [None, Some(old)] {
            let keys = |start_after: &str| {
                let options = ListOptions { revision, limit: None, start_after: Some(start_after.into()), ..ListOptions::default() };
                let store = store.clone();
                async move {
                    let listed = store.list("/b/", options).await.unwrap();
                    listed.kvs.into_iter().map(|kv| kv.key).collect::<Vec<_>>()
                }
            };
            let all: Vec<String> = if revision.is_some() { vec!["/b/1".into(), "/b/2".into()] } else { vec!["/b/1".into()] };
            assert_eq!(keys("/a/9").await, all, "start_after before the prefix");
            assert_eq!(keys("").await, all, "empty start_after");
            assert!(keys("/c/").await.is_empty(), "start_after past the prefix");
            assert!(keys("/b/2").await.is_empty(), "start_after the last key");
        }
    }

    /// The next event of a watch, within a bound.
    async fn next(watch: &mut WatchStream) -> Event {
        tokio::time::timeout(Duration::from_secs(10), watch.next()).await.expect("timed out").expect("ended").unwrap()
    }

    fn deadlines(store: &EmbeddedStore) -> Vec<(i64, String, i64)> {
        let txn = store.inner.db.begin_read().unwrap();
        let table = txn.open_table(EXPIRY_BY_DEADLINE).unwrap();
        table.iter().unwrap().map(|e| e.unwrap()).map(|(k, v)| (k.value().0, k.value().1.to_owned(), v.value())).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_of_expiry_and_size_limits() {
        for cached in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let store = open(&dir, 1024);
            let store: Arc<dyn Storage> = if cached {
                Arc::new(crate::storage::cache::WatchCache::new(Arc::new(store), Default::default()))
            } else {
                Arc::new(store)
            };
            let started = std::time::Instant::now();
            if let Err(failure) = conformance::keys_expire_after_their_ttl(store.as_ref()).await {
                panic!("cached: {cached}: {failure}");
            }
            assert!(started.elapsed() < Duration::from_secs(5), "expiry took {:?}", started.elapsed());
            if let Err(failure) = conformance::too_large_writes_are_refused(store.as_ref()).await {
                panic!("cached: {cached}: {failure}");
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_and_writes_delete_expired_keys_before_they_look() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_without_sweeper(&dir.path().join("store.redb")).unwrap();
        let a = store.create_with_ttl("/a/1", Bytes::from_static(b"1"), Duration::from_millis(50)).await.unwrap();
        let b = store.create_with_ttl("/a/2", Bytes::from_static(b"2"), Duration::from_millis(50)).await.unwrap();
        let mut watch = store.watch("/a/", 0).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Nothing deleted them yet: no sweeper.
        assert_eq!(store.current_revision().await.unwrap(), 3);
        assert_eq!(store.get("/a/1").await.unwrap(), None);
        assert_eq!(next(&mut watch).await, Event::Delete { prev: a.clone(), revision: 4 });
        assert_eq!(next(&mut watch).await, Event::Delete { prev: b.clone(), revision: 5 });
        assert!(deadlines(&store).is_empty());
        // History is unchanged: the state before the expiry still has both.
        let old = store.list("/a/", ListOptions { revision: Some(3), ..ListOptions::default() }).await.unwrap();
        assert_eq!(old.kvs, vec![a.clone(), b]);
        assert!(store.list("/a/", ListOptions::default()).await.unwrap().kvs.is_empty());
        // A write first deletes an expired key (here the one it writes), at its own revision.
        let c = store.create_with_ttl("/a/1", Bytes::from_static(b"3"), Duration::from_millis(50)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let again = store.create("/a/1", Bytes::from_static(b"4")).await.unwrap();
        assert_eq!((c.mod_revision, again.create_revision), (6, 8));
        assert_eq!(next(&mut watch).await.revision(), 6);
        assert_eq!(next(&mut watch).await, Event::Delete { prev: c, revision: 7 });
        assert!(deadlines(&store).is_empty(), "a write without TTL leaves no deadline");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expired_keys_are_deleted_at_open_and_deadlines_survive_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        // Without sweeper, and the short TTL last: nothing can delete it before the restart.
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        let long = store.create_with_ttl("/a/long", Bytes::new(), Duration::from_secs(2)).await.unwrap();
        store.create("/a/plain", Bytes::new()).await.unwrap();
        let short = store.create_with_ttl("/a/short", Bytes::new(), Duration::from_millis(100)).await.unwrap();
        drop(store);
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Deleted by the open itself, without sweeper, before anything is read.
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        assert_eq!(store.inner.hub().published, 5);
        let mut replay = store.watch("/a/", 4).await.unwrap();
        assert_eq!(next(&mut replay).await, Event::Delete { prev: short, revision: 5 });
        assert_eq!(deadlines(&store).len(), 1);
        drop((replay, store));
        // The other deadline is still pending after a restart, and the sweeper deletes it.
        let store = open(&dir, 8);
        assert_eq!(store.get("/a/long").await.unwrap(), Some(long.clone()));
        let mut watch = store.watch("/a/", 0).await.unwrap();
        assert_eq!(next(&mut watch).await, Event::Delete { prev: long, revision: 6 });
        assert_eq!(store.list("/a/", ListOptions::default()).await.unwrap().kvs.len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deadline_never_deletes_a_key_written_after_it_was_set() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_without_sweeper(&dir.path().join("store.redb")).unwrap();
        let a = store.create("/a", Bytes::new()).await.unwrap();
        let b = store.create_with_ttl("/b", Bytes::new(), Duration::from_secs(600)).await.unwrap();
        // Deadlines due long ago, recorded for earlier writes of the keys (as a sweep that
        // computed them before the keys were written again would have seen them).
        let txn = begin_write(&store.inner.db).unwrap();
        {
            let mut by_deadline = txn.open_table(EXPIRY_BY_DEADLINE).unwrap();
            by_deadline.insert((1, "/a"), a.mod_revision - 1).unwrap();
            by_deadline.insert((1, "/b"), b.mod_revision - 1).unwrap();
        }
        txn.commit().unwrap();
        store.inner.expiry.next.store(1, Ordering::Release);
        assert_eq!(store.get("/a").await.unwrap(), Some(a));
        assert_eq!(store.get("/b").await.unwrap(), Some(b.clone()));
        assert_eq!(store.current_revision().await.unwrap(), b.mod_revision);
        // The stale entries are gone, `/b`'s own deadline stays and is next.
        let left = deadlines(&store);
        assert_eq!(left.len(), 1);
        assert_eq!((left[0].1.as_str(), left[0].2), ("/b", b.mod_revision));
        assert_eq!(store.inner.expiry.next.load(Ordering::Acquire), left[0].0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_expired_keys_go_in_batches_at_consecutive_revisions() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_without_sweeper(&dir.path().join("store.redb")).unwrap();
        let count = EXPIRY_BATCH + 3;
        for i in 0..count {
            store.create_with_ttl(&format!("/e/{i:04}"), Bytes::new(), Duration::from_secs(3600)).await.unwrap();
        }
        store.create_with_ttl("/f/late", Bytes::new(), Duration::from_secs(7200)).await.unwrap();
        let written = store.current_revision().await.unwrap();
        let mut watch = store.watch("/e/", 0).await.unwrap();
        // As if an hour and a bit had passed.
        let later = now_ms() + 3_700_000;
        let guard = store.inner.writer.clone().lock_owned().await;
        assert!(store.inner.expire_batch(later).unwrap(), "a full batch says more may be due");
        store.inner.expire_all_due(later).unwrap();
        drop(guard);
        for revision in written + 1..=written + count as i64 {
            let event = next(&mut watch).await;
            assert!(matches!(event, Event::Delete { .. }), "{event:?}");
            assert_eq!(event.revision(), revision);
        }
        assert_eq!(store.current_revision().await.unwrap(), written + count as i64);
        assert_eq!(deadlines(&store).len(), 1, "the later deadline stays");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sweeper_starts_with_the_first_deadline_and_stops_with_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let exited = store.inner.expiry.sweeper_exited.clone();
        store.create("/a", Bytes::new()).await.unwrap();
        assert!(store.inner.expiry.sweeper.lock().unwrap().is_none(), "no thread without deadlines");
        store.create_with_ttl("/b", Bytes::new(), Duration::from_secs(600)).await.unwrap();
        assert!(store.inner.expiry.sweeper.lock().unwrap().is_some());
        // An earlier deadline wakes it.
        let mut watch = store.watch("/c", 0).await.unwrap();
        store.create_with_ttl("/c", Bytes::new(), Duration::from_millis(50)).await.unwrap();
        next(&mut watch).await;
        assert!(matches!(next(&mut watch).await, Event::Delete { .. }));
        assert!(!exited.load(Ordering::Acquire));
        let clone = store.clone();
        drop(store);
        assert!(!exited.load(Ordering::Acquire), "a clone keeps the store");
        drop(clone);
        // Dropping the last handle joins the thread, unless the sweeper held the store for a
        // moment then and dropped it itself: it exits right after.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while !exited.load(Ordering::Acquire) {
            assert!(std::time::Instant::now() < deadline, "the sweeper outlived the store");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_over_the_request_limit_are_refused_before_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let key = "/k";
        let largest = Bytes::from(vec![0; crate::storage::MAX_REQUEST_BYTES - key.len()]);
        let kv = store.create(key, largest.clone()).await.unwrap();
        let one_more = Bytes::from(vec![0; crate::storage::MAX_REQUEST_BYTES - key.len() + 1]);
        assert!(matches!(
            store.update(key, one_more, kv.mod_revision).await,
            Err(E::RequestTooLarge { size, .. }) if size == crate::storage::MAX_REQUEST_BYTES + 1
        ));
        assert_eq!(store.get(key).await.unwrap().map(|kv| kv.value), Some(largest));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compaction_during_catch_up_ends_the_watch_with_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        for i in 0..5 {
            store.create(&format!("/a/{i}"), Bytes::new()).await.unwrap();
        }
        let mut watch = store.watch("/a/", 1).await.unwrap();
        store.compact(4).await.unwrap();
        assert!(matches!(watch.next().await, Some(Err(E::Compacted { requested: 1, compacted: 4 }))));
        assert!(watch.next().await.is_none());
    }
}
