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
//! Five tables, in one write transaction per batch of writes (see below). A write changes `keys`
//! and `history`, and the expiry tables when it sets or drops a deadline:
//!
//! - `keys`: key → (create revision, mod revision, value): the current state, what `get` and a
//!   list at the latest revision read.
//! - `history`: revision → event, protobuf-encoded with etcd's `mvccpb.Event` field numbers. Each
//!   event carries the key's previous value, so that a watch can report it and so that the state
//!   at an old revision is the current state with the later events undone. Values are thus
//!   stored twice per write (in the event and as the next event's previous value); compaction
//!   reclaims both.
//! - `meta`: the compacted revision, and a floor for the current one. The current revision is
//!   the later of that floor and the last history entry's ([`current_revision`]), so a write
//!   changes only `keys` and `history` (each table a transaction changes costs its commit a
//!   copy of the table's path and root). The floor is the revision when the store was made or
//!   last compacted, which keeps the current revision when compaction empties the history.
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
//! Deletions happen in batches of [`EXPIRY_BATCH`] keys per transaction: at open (keys that
//! expired while the store was closed), and on the writer thread (below) before it handles
//! anything else whenever a deadline has passed. It is asked to look by a sweeper thread that
//! sleeps until the earliest deadline (checking the clock at least every second while one is
//! pending, and not at all while none is) and exits when the store is dropped, and by any
//! latest-state read that finds a deadline passed before the sweeper acted, so that reads never
//! return an expired key and a list at revision `r` still shows exactly the state at `r`. The
//! earliest deadline is kept in memory, so the check costs a clock read while nothing is due.
//! Unlike etcd, which revokes all the keys of one lease at one revision, each key is deleted at
//! its own revision (a revision here holds one event), and a deadline is wall-clock time: etcd
//! instead renews every lease to its full TTL when a leader starts.
//!
//! # Size limit
//!
//! A create or update whose key and value exceed [`super::MAX_REQUEST_BYTES`] (etcd's default
//! `--max-request-bytes`, 1.5 MiB) fails with [`StorageError::RequestTooLarge`], as etcd refuses
//! it, so one object cannot grow the file without bound either.
//!
//! # Writes: group commit
//!
//! A durable commit costs an fsync, which takes far longer than the work of a write, so writes
//! share commits as etcd's backend batches its transactions. One writer thread owns the write
//! side (writes, expiry, compaction): it takes a request from a bounded queue
//! ([`QUEUE_CAPACITY`]), then every write queued behind it (up to [`MAX_BATCH_WRITES`] writes
//! and [`MAX_BATCH_BYTES`]), and applies them in arrival order in ONE write transaction:
//!
//! - each write is checked against the state the writes before it left (its own precondition:
//!   create if absent, update or delete at a mod revision), so of two creates of one key the
//!   first wins and the second gets [`StorageError::AlreadyExists`]; a write whose check fails
//!   changes nothing and takes no revision, and the others go on;
//! - the writes that pass get consecutive revisions in arrival order;
//! - then one durable commit (one fsync); the events are handed to the watchers in revision
//!   order, and only then is each write answered with its own result. If the transaction fails,
//!   every write in it gets the error and nothing is published.
//!
//! Writes that arrive while a commit is in flight thus go together into the next one: a lone
//! writer still commits each write alone, concurrent writers share fsyncs. The queue is bounded
//! so that a burst makes writers wait for room rather than grow memory; the writer thread holds
//! the store only while it works. Dropping the last handle closes the queue and waits for the
//! writer (and the sweeper) to end, so the file is closed when that drop returns.
//!
//! # Watches
//!
//! After its commit, and before the next transaction begins, the writer hands the events to the
//! live watchers; that keeps events in revision order, and the hub's `published` revision tells
//! a new watcher exactly which events it must read from history and which it will receive live
//! (see `EmbeddedWatch`). A live watcher has a bounded buffer; the writer never waits for it: a
//! watcher whose buffer is full is closed with [`StorageError::WatchOverflow`].
//!
//! # Costs
//!
//! A list at the latest revision reads the keys under the prefix (all of them when paging, to
//! count `remaining`). A list at an older revision `r` also reads every event after `r`, whatever
//! its key: O(keys under the prefix + writes since `r`). A watch from an old revision reads the
//! history since then in chunks. A commit costs one fsync, shared by the writes of its batch
//! (`CommitCounters` count both, so writes ÷ commits is the batch size reached).
//!
//! # Start-up writes
//!
//! The server writes its bootstrap objects (~220 on a fresh store) before it serves anyone.
//! Between [`EmbeddedStore::open_deferred`] and [`EmbeddedStore::make_durable`] commits are
//! redb's `Durability::None`: visible to every read and watch at once but not fsync'd, and
//! `make_durable` then makes them all durable with one durable commit, which the server awaits
//! before it serves. A crash before that loses those writes whole (redb reopens at the last
//! durable commit) and the next start makes them again. Nobody outside the process has seen
//! them, so no acknowledged write is lost.
//!
//! A new store opened for start-up writes ([`EmbeddedStore::open_deferred`]) goes further: it
//! is made under a temporary name (`.store.redb.tmp`) with none of redb's own fsyncs (creating
//! the file, growing it), and `make_durable` syncs it once and renames it into place. A crash
//! before then leaves only the temporary file, which the next start removes, never a store file
//! that redb could not open.

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
use tokio::sync::{mpsc, oneshot};

use super::{
    Event, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, StorageFuture, WatchSource, WatchStream, check_key,
    check_request_size,
};

/// The memory redb may keep pages of the file in (its default is 1 GiB, which it filled with
/// every page a write touched). The watch cache above the store already holds every object,
/// so redb's cache needs only the trees' hot pages; the rest is the kernel's page cache, a
/// `pread` away. At 16 MiB it was full once the store held ~10k pods, for no measurable gain
/// in create or GET speed (see ARCHITECTURE.md, "Performance").
const PAGE_CACHE_BYTES: usize = 4 << 20;

/// key → (create revision, mod revision, value).
const KEYS: TableDefinition<&str, (i64, i64, &[u8])> = TableDefinition::new("keys");
/// revision → [`EventRecord`].
const HISTORY: TableDefinition<i64, &[u8]> = TableDefinition::new("history");
/// [`META_REVISION`] and [`META_COMPACTED`].
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
/// The current revision's floor (see the layout above); stores written before it became one
/// updated it with every write, which reads the same.
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

/// The most writes one transaction (one fsync) carries: bounds the transaction, and how long the
/// first write of a batch waits for the last to be applied.
const MAX_BATCH_WRITES: usize = 256;

/// The most key and value bytes one transaction carries (a batch's first write goes in whatever
/// its size, up to [`super::MAX_REQUEST_BYTES`]), so a batch of large objects stays a few MiB.
const MAX_BATCH_BYTES: usize = 8 << 20;

/// How many requests may wait for the writer thread; beyond it senders wait for room. Queued
/// writes hold values their callers already had in memory, and the bound keeps a burst of
/// writers from growing the queue without limit: two batches' worth keeps the next batch ready
/// while one commits.
const QUEUE_CAPACITY: usize = 2 * MAX_BATCH_WRITES;

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
/// Reads need a tokio runtime (engine calls run on its blocking pool); without one they fail
/// with [`StorageError::Unavailable`]. Writes go to the store's writer thread.
#[derive(Clone)]
pub struct EmbeddedStore {
    handle: Arc<Handle>,
}

/// What the store's users share. Only users hold it (the store's own threads hold [`Inner`]),
/// so its drop is the last user letting go, on that user's thread: it stops the writer and the
/// sweeper and waits for them, so that neither is left holding the file. Without this, the
/// file would be closed by whichever thread let go of `Inner` last, possibly after the user's
/// drop returned, and a reopen right after it could find the file still open.
struct Handle {
    /// The writer's queue; the only strong sender besides the sweeper's brief ones, so
    /// dropping it lets the writer finish what is queued and leave its loop.
    requests: Option<mpsc::Sender<Request>>,
    writer: Option<std::thread::JoinHandle<()>>,
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        drop(self.requests.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        self.inner.stop_sweeper();
    }
}

impl Handle {
    /// Sends a request to the writer thread, waiting for room in its queue.
    async fn submit(&self, request: Request) -> Result<(), StorageError> {
        let requests = self.requests.as_ref().ok_or_else(writer_stopped)?;
        requests.send(request).await.map_err(|_| writer_stopped())
    }
}

struct Inner {
    db: Database,
    /// The writer thread's queue, for the sweeper: every write, expiry and compaction goes
    /// through it, so one thread owns the write side and publishes events in revision order.
    /// Weak, so that the queue closes when the last [`Handle`] drops.
    requests: mpsc::WeakSender<Request>,
    hub: Mutex<Hub>,
    watch_buffer: usize,
    expiry: Expiry,
    counters: CommitCounters,
    /// Commits are not fsync'd until [`EmbeddedStore::make_durable`] (see "Start-up writes").
    deferred: AtomicBool,
    /// Whether a commit was made without an fsync since the last [`Inner::sync`].
    unsynced: AtomicBool,
    /// A new store still under its temporary name, until the first [`Inner::sync`].
    staged: Mutex<Option<StagedFile>>,
    /// This store, for the sweeper thread (which must not keep it open).
    this: Weak<Inner>,
}

/// The state of TTL expiry besides the two tables.
struct Expiry {
    /// Never later than the earliest deadline in `expiry_by_deadline` ([`NO_DEADLINE`] if
    /// none): lowered by every write with a TTL, recomputed by every expiry transaction (all
    /// on the writer thread, or at open before it starts). Earlier than the truth only after a
    /// key's deadline was replaced or removed, which costs one expiry transaction that finds
    /// nothing.
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

/// What the writer thread is asked to do; each request is answered through its oneshot.
enum Request {
    Write(PendingWrite),
    /// Delete the keys past their deadline (the writer does before any request), for a read
    /// about to look at the latest state or for the sweeper.
    Expire {
        done: oneshot::Sender<()>,
    },
    Compact {
        revision: Revision,
        done: oneshot::Sender<Result<(), StorageError>>,
    },
    /// One durable commit, making every commit before it durable.
    Sync {
        done: oneshot::Sender<Result<(), StorageError>>,
    },
    /// Tests: keep the writer from taking more requests until `release` is signalled (or
    /// dropped), so that the requests queued meanwhile form one batch.
    #[cfg(test)]
    Hold {
        release: std::sync::mpsc::Receiver<()>,
    },
}

/// A write waiting for its batch.
struct PendingWrite {
    key: String,
    mutation: Mutation,
    /// With a TTL the key expires that long after this write; without, any deadline it had is
    /// gone.
    ttl: Option<Duration>,
    done: oneshot::Sender<Result<Event, StorageError>>,
}

impl PendingWrite {
    /// What the write adds to its transaction, for [`MAX_BATCH_BYTES`].
    fn size(&self) -> usize {
        let value = match &self.mutation {
            Mutation::Create { value } | Mutation::Update { value, .. } => value.len(),
            Mutation::Delete { .. } => 0,
        };
        self.key.len() + value
    }
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
        Self::open_inner(path.as_ref(), options, true, false)
    }

    /// [`Self::open`] for start-up writes: commits are not fsync'd until
    /// [`Self::make_durable`], and a new store stays under a temporary name until then (see
    /// "Start-up writes" above).
    pub fn open_deferred(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::open_inner(path.as_ref(), EmbeddedOptions::default(), true, true)
    }

    /// Opens the store; deletes the keys whose deadline passed while it was closed, and starts
    /// the sweeper (if `sweeper`) when a key has a deadline. With `deferred`, commits are
    /// deferred and a new store is staged ([`Self::open_deferred`]).
    fn open_inner(path: &Path, options: EmbeddedOptions, sweeper: bool, deferred: bool) -> Result<Self, StorageError> {
        let builder = {
            let mut builder = Database::builder();
            builder.set_cache_size(PAGE_CACHE_BYTES);
            builder
        };
        let opening = |e: redb::DatabaseError| engine(format!("open {}", path.display()), e);
        let (db, staged) = match deferred && is_new(path)? {
            true => {
                let (backend, staged) = StagedFile::create(path)?;
                (builder.create_with_backend(backend).map_err(opening)?, Some(staged))
            }
            false => (builder.create(path).map_err(opening)?, None),
        };
        let initialised = read_initialised(&db)?;
        // A store that needed its tables made has them unsynced, until the first durable commit.
        let unsynced = initialised.is_none();
        let (revision, compacted, next) = match initialised {
            Some(state) => state,
            None => initialise(&db)?,
        };
        tracing::debug!(path = %path.display(), revision, compacted, "opened embedded store");
        let hub = Hub { published: revision, compacted, watchers: Vec::new() };
        let (requests, queue) = mpsc::channel(QUEUE_CAPACITY);
        let inner = Arc::new_cyclic(|this| Inner {
            db,
            requests: requests.downgrade(),
            hub: Mutex::new(hub),
            watch_buffer: options.watch_buffer.clamp(1, MAX_WATCH_BUFFER),
            expiry: Expiry {
                next: AtomicI64::new(next),
                sweeper_enabled: sweeper,
                sweeper: Mutex::new(None),
                sweeper_exited: Arc::new(AtomicBool::new(false)),
            },
            counters: CommitCounters::default(),
            deferred: AtomicBool::new(deferred),
            unsynced: AtomicBool::new(unsynced),
            staged: Mutex::new(staged),
            this: this.clone(),
        });
        // The writer thread has not started: nothing else writes. A failure is logged and left
        // to the sweeper, rather than keeping the server from starting.
        let _ = inner.expire_all_due(now_ms());
        let store = Arc::downgrade(&inner);
        let thread = std::thread::Builder::new()
            .name("kapi-store-writer".into())
            .spawn(move || write_loop(store, queue))
            .map_err(|e| StorageError::Unavailable { context: "start the store's writer thread".into(), source: e.into() })?;
        if inner.expiry.next.load(Ordering::Acquire) != NO_DEADLINE {
            inner.wake_sweeper();
        }
        Ok(EmbeddedStore { handle: Arc::new(Handle { requests: Some(requests), writer: Some(thread), inner }) })
    }

    /// Queues a write for the writer thread and waits for its answer, which comes once the
    /// transaction holding it is durable and its event published. If the caller stops waiting,
    /// the write still happens (as a request sent to etcd may still be applied).
    async fn mutate(&self, key: &str, mutation: Mutation, ttl: Option<Duration>) -> Result<Event, StorageError> {
        check_key(key)?;
        if let Mutation::Create { value } | Mutation::Update { value, .. } = &mutation {
            check_request_size(key, value)?;
        }
        let (done, answer) = oneshot::channel();
        self.handle.submit(Request::Write(PendingWrite { key: key.to_owned(), mutation, ttl, done })).await?;
        answer.await.map_err(|_| writer_stopped())?
    }

    /// Deletes the keys past their deadline before a read of the latest state, if the sweeper
    /// has not yet: costs a clock read and an atomic load when nothing is due. A failure is
    /// logged (and retried later), and the read goes on.
    async fn expire_if_due(&self) {
        if self.handle.inner.expiry_due(now_ms()) {
            let (done, answer) = oneshot::channel();
            if self.handle.submit(Request::Expire { done }).await.is_ok() {
                let _ = answer.await;
            }
        }
    }

    /// A store without the sweeper thread: only opening, reads and writes expire keys.
    #[cfg(test)]
    fn open_without_sweeper(path: &Path) -> Result<Self, StorageError> {
        Self::open_inner(path, EmbeddedOptions::default(), false, false)
    }

    /// Ends the deferral of [`Self::open_deferred`]: every commit made so far is durable when this returns,
    /// and every later one is durable as it is made.
    pub async fn make_durable(&self) -> Result<(), StorageError> {
        self.handle.inner.deferred.store(false, Ordering::Release);
        let (done, answer) = oneshot::channel();
        self.handle.submit(Request::Sync { done }).await?;
        answer.await.map_err(|_| writer_stopped())?
    }

    /// The store's commit counters (shared: they keep counting).
    pub fn commit_counters(&self) -> CommitCounters {
        self.handle.inner.counters.clone()
    }

    /// The number of registered live watchers (tests check that dropped watches unregister).
    #[cfg(test)]
    fn live_watchers(&self) -> usize {
        self.handle.inner.hub().watchers.len()
    }
}

impl Storage for EmbeddedStore {
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        Box::pin(async move {
            check_key(key)?;
            self.expire_if_due().await;
            // One key is read in place: a point read costs a few microseconds from the page
            // cache, much less than handing it to the blocking pool and waking the caller.
            let inner = &self.handle.inner;
            let txn = inner.db.begin_read().map_err(|e| engine("begin read transaction", e))?;
            let keys = txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
            read_key(&keys, key)
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult> {
        Box::pin(async move {
            if options.revision.is_none() {
                self.expire_if_due().await;
            }
            let prefix = prefix.to_owned();
            blocking(self.handle.inner.clone(), "list", move |inner| inner.list(&prefix, &options)).await
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
            let mut hub = self.handle.inner.hub();
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
                Phase::Live(hub.register(prefix.to_owned(), self.handle.inner.watch_buffer))
            } else {
                Phase::CatchUp { cursor }
            };
            drop(hub);
            Ok(WatchStream::new(EmbeddedWatch {
                inner: Arc::downgrade(&self.handle.inner),
                prefix: prefix.to_owned(),
                pending: VecDeque::new(),
                phase,
            }))
        })
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move { Ok(self.handle.inner.hub().published) })
    }

    fn answers_progress_requests(&self) -> bool {
        true
    }

    fn request_progress(&self, prefix: &str) {
        self.handle.inner.hub().report_progress(prefix);
    }

    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        Box::pin(async move {
            let (done, answer) = oneshot::channel();
            self.handle.submit(Request::Compact { revision, done }).await?;
            answer.await.map_err(|_| writer_stopped())?
        })
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move { Ok(self.handle.inner.hub().compacted) })
    }
}

impl Inner {
    /// The hub, even if a thread panicked while holding it: its state is a revision pair and a
    /// list of senders, each updated by single assignments, so it is never left half-changed.
    fn hub(&self) -> MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies a batch of writes (see "Writes: group commit" above) and answers each: its own
    /// result once the transaction is durable and the events published, or, if the transaction
    /// failed, the transaction's error.
    fn commit_batch(&self, batch: Vec<PendingWrite>) {
        let (writes, answers): (Vec<_>, Vec<_>) = batch.into_iter().map(|w| ((w.key, w.mutation, w.ttl), w.done)).unzip();
        match self.apply_batch(writes) {
            Ok(results) => {
                for (answer, result) in answers.into_iter().zip(results) {
                    // The caller may have stopped waiting; the write stands.
                    let _ = answer.send(result);
                }
            }
            Err(error) => {
                tracing::warn!(%error, writes = answers.len(), "a batch of writes failed");
                for answer in answers {
                    let _ = answer.send(Err(shared_error(&error)));
                }
            }
        }
    }

    /// One write transaction for `writes`, in order: each checked against the state the ones
    /// before it left, those that pass recorded at consecutive revisions, then one durable
    /// commit and the events published in revision order. Returns each write's own result;
    /// `Err` if the transaction failed, in which case nothing was written or published.
    fn apply_batch(&self, writes: Vec<(String, Mutation, Option<Duration>)>) -> Result<Vec<Result<Event, StorageError>>, StorageError> {
        let txn = self.begin_write()?;
        let mut results = Vec::with_capacity(writes.len());
        let mut earliest = NO_DEADLINE;
        let last = {
            let mut tables = Tables::open(&txn)?;
            let mut revision = current_revision(&tables.meta, &tables.history)?;
            for (key, mutation, ttl) in writes {
                let next = revision.checked_add(1).ok_or_else(|| internal("next revision", "revision overflow"))?;
                // A failed check is that write's answer; it records nothing and takes no revision.
                match mutation.into_event(&key, read_key(&tables.keys, &key)?, next) {
                    Ok(event) => {
                        let deadline = match (&event, ttl) {
                            (Event::Put { .. }, Some(ttl)) => Some(deadline_after(ttl)),
                            _ => None,
                        };
                        tables.record(&event, deadline)?;
                        earliest = earliest.min(deadline.unwrap_or(NO_DEADLINE));
                        revision = next;
                        results.push(Ok(event));
                    }
                    Err(error) => results.push(Err(error)),
                }
            }
            revision
        };
        let events: Vec<&Event> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        if events.is_empty() {
            // Every check failed: nothing to commit; dropping the transaction aborts it.
            return Ok(results);
        }
        txn.commit().map_err(|e| engine(format!("commit revisions up to {last}"), e))?;
        self.counters.committed(events.len());
        {
            let mut hub = self.hub();
            for event in events {
                hub.publish(event, self.watch_buffer);
            }
        }
        if earliest != NO_DEADLINE && self.expiry.next.fetch_min(earliest, Ordering::AcqRel) > earliest {
            self.wake_sweeper();
        }
        Ok(results)
    }

    /// A write transaction, fsync'd at its commit unless start-up defers it (then it is noted
    /// for [`Self::sync`]).
    fn begin_write(&self) -> Result<redb::WriteTransaction, StorageError> {
        let durable = !self.deferred.load(Ordering::Acquire);
        if !durable {
            self.unsynced.store(true, Ordering::Release);
        }
        begin_write(&self.db, durable)
    }

    /// One durable commit (of nothing), which makes the non-durable ones before it durable;
    /// none when there were none (a restart that found everything in place). A staged new store
    /// is then renamed into place.
    fn sync(&self) -> Result<(), StorageError> {
        let mut staged = self.staged.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(staged) = staged.as_ref() {
            staged.syncing.store(true, Ordering::Release);
        }
        if !self.unsynced.swap(false, Ordering::AcqRel) && staged.is_none() {
            return Ok(());
        }
        let synced = begin_write(&self.db, true).and_then(|txn| txn.commit().map_err(|e| engine("durable commit", e)));
        if synced.is_err() {
            // Still owed: the next sync tries again.
            self.unsynced.store(true, Ordering::Release);
            return synced;
        }
        match staged.take() {
            Some(file) => file.put_in_place(),
            None => Ok(()),
        }
    }

    /// Has the writer thread delete what is due and waits until it has (for the sweeper
    /// thread); false if the writer has stopped.
    fn expire_on_writer(&self) -> bool {
        let (done, answer) = oneshot::channel();
        // The sender is dropped before the wait, so that it never keeps the queue open.
        let sent = self.requests.upgrade().is_some_and(|requests| requests.blocking_send(Request::Expire { done }).is_ok());
        sent && answer.blocking_recv().is_ok()
    }

    /// Whether a deadline may have passed at `now` (milliseconds since the Unix epoch).
    fn expiry_due(&self, now: i64) -> bool {
        self.expiry.next.load(Ordering::Acquire) <= now
    }

    /// Deletes every key whose deadline is at or before `now`, batch after batch. The caller
    /// is the writer thread (or is opening the store, before it starts).
    fn expire_all_due(&self, now: i64) -> Result<(), StorageError> {
        while self.expire_batch(now)? {}
        Ok(())
    }

    /// Deletes up to [`EXPIRY_BATCH`] keys whose deadline is at or before `now`, each at its own
    /// revision, in one transaction, and publishes the deletions; returns whether more may be
    /// due. A deadline whose key was written since it was set (the mod revision differs) is
    /// dropped without deleting anything. The caller is the writer thread. After a failure,
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
        let txn = self.begin_write()?;
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
            let mut revision = current_revision(&tables.meta, &tables.history)?;
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

    /// Stops the sweeper thread: dropping its sender wakes it with a disconnection, and it
    /// holds no reference to the store while it waits, so it exits at once.
    fn stop_sweeper(&self) {
        let sweeper = self.expiry.sweeper.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(Sweeper { wake, thread }) = sweeper {
            drop(wake);
            let _ = thread.join();
        }
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
        let txn = self.begin_write()?;
        {
            let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
            let mut history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
            let current = current_revision(&meta, &history)?;
            let compacted = read_meta(&meta, META_COMPACTED)?;
            if revision <= compacted {
                return Err(StorageError::Compacted { requested: revision, compacted });
            }
            if revision > current {
                return Err(StorageError::FutureRevision { requested: revision, current });
            }
            let context = || format!("compact to revision {revision}");
            // The floor first: the history may be left empty.
            meta.insert(META_REVISION, current).map_err(|e| engine(context(), e))?;
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
        let history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
        let current = current_revision(&meta, &history)?;
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

    /// Hands every live watcher under `prefix` a progress report at the published revision
    /// ([`Storage::request_progress`]): it follows every event the watcher was handed, since
    /// both happen under the hub's lock. A watcher with only its overflow slot left misses it.
    fn report_progress(&mut self, prefix: &str) {
        let progress = Event::Progress { revision: self.published };
        for watcher in self.watchers.iter().filter(|w| w.prefix.starts_with(prefix) && w.tx.capacity() > 1) {
            let _ = watcher.tx.try_send(Ok(progress.clone()));
        }
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

/// The sweeper thread: has expired keys deleted, then sleeps until the earliest deadline (at most
/// [`SWEEP_INTERVAL`]; without deadline until woken), until the store is dropped. It holds the
/// store only while it works, so that dropping the last handle closes the file.
fn sweep(store: Weak<Inner>, woken: std::sync::mpsc::Receiver<()>) {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        let wait = {
            let Some(inner) = store.upgrade() else { return };
            // The writer thread deletes them, as it owns the write side; after a failure
            // `expiry.next` is a second later, so the wait below retries then.
            if inner.expiry_due(now_ms()) && !inner.expire_on_writer() {
                return;
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

/// The writer thread (see "Writes: group commit" above): takes a request, and with a write
/// every write queued behind it up to the batch limits, and applies them, until the queue
/// closes (the store was dropped). Keys past their deadline are deleted before each request,
/// so that no write or latest-state read sees one. It holds the store only while it works, so
/// that dropping the last handle closes the queue.
fn write_loop(store: Weak<Inner>, mut queue: mpsc::Receiver<Request>) {
    // A request taken while filling a batch that could not join it: the next one to handle.
    let mut carried = None;
    while let Some(request) = carried.take().or_else(|| queue.blocking_recv()) {
        let Some(inner) = store.upgrade() else { return };
        if inner.expiry_due(now_ms()) {
            // A failure is logged and retried a second later; the writes go on.
            let _ = inner.expire_all_due(now_ms());
        }
        match request {
            Request::Write(first) => {
                let mut bytes = first.size();
                let mut batch = vec![first];
                // Everything already queued: the writes that arrived while the last commit was
                // in flight.
                while batch.len() < MAX_BATCH_WRITES {
                    match queue.try_recv() {
                        Ok(Request::Write(write)) if bytes + write.size() <= MAX_BATCH_BYTES => {
                            bytes += write.size();
                            batch.push(write);
                        }
                        Ok(other) => {
                            carried = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                inner.commit_batch(batch);
            }
            Request::Expire { done } => {
                let _ = done.send(());
            }
            Request::Compact { revision, done } => {
                let _ = done.send(inner.compact(revision));
            }
            Request::Sync { done } => {
                let _ = done.send(inner.sync());
            }
            #[cfg(test)]
            Request::Hold { release } => {
                let _ = release.recv();
            }
        }
    }
}

/// The error of a failed transaction, for each write it held (errors are not `Clone`: the
/// source is passed on as text, the kind kept, so that a retryable failure stays retryable).
fn shared_error(error: &StorageError) -> StorageError {
    match error {
        StorageError::Unavailable { context, source } => {
            StorageError::Unavailable { context: context.clone(), source: source.to_string().into() }
        }
        StorageError::Internal { context, source } => {
            StorageError::Internal { context: context.clone(), source: source.to_string().into() }
        }
        other => internal("write batch", other.to_string()),
    }
}

/// The writer thread is gone: the store is closing, or the thread died on a bug.
fn writer_stopped() -> StorageError {
    StorageError::Unavailable { context: "write".into(), source: "the store's writer thread has stopped".into() }
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
    /// entry (which makes its revision the current one), and its deadline: `deadline` for a
    /// put, none otherwise (any earlier one is replaced).
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

/// The state of a store whose tables and meta entries are all there (`None` for a new store or
/// one made before a table existed): read without a write transaction, whose commit would cost
/// a restart a sync of the file for nothing.
fn read_initialised(db: &Database) -> Result<Option<(Revision, Revision, i64)>, StorageError> {
    let txn = db.begin_read().map_err(|e| engine("begin read transaction", e))?;
    let (Some(meta), Some(deadlines)) = (open_if_present(&txn, META)?, open_if_present(&txn, EXPIRY_BY_DEADLINE)?) else {
        return Ok(None);
    };
    let history = open_if_present(&txn, HISTORY)?;
    let others_there = open_if_present(&txn, KEYS)?.is_some() && open_if_present(&txn, EXPIRY_BY_KEY)?.is_some();
    let Some(history) = history.filter(|_| others_there) else { return Ok(None) };
    if meta.get(META_REVISION).map_err(|e| engine("read meta", e))?.is_none() {
        return Ok(None);
    }
    Ok(Some((current_revision(&meta, &history)?, read_meta(&meta, META_COMPACTED)?, first_deadline(&deadlines)?)))
}

/// `table`, or `None` when the store does not have it (a read transaction cannot create it).
fn open_if_present<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    table: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, StorageError> {
    match txn.open_table(table) {
        Ok(opened) => Ok(Some(opened)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(engine(format!("open table {table}"), e)),
    }
}

/// A new store's file under its temporary name (see "Start-up writes" above).
#[derive(Debug)]
struct StagedFile {
    temporary: std::path::PathBuf,
    path: std::path::PathBuf,
    /// Off until the first sync: redb's syncs of the staged file are skipped.
    syncing: Arc<AtomicBool>,
}

impl StagedFile {
    /// Creates the temporary file (replacing one a crash left), readable by its owner only, and
    /// the backend redb writes it through.
    fn create(path: &Path) -> Result<(StagedBackend, StagedFile), StorageError> {
        // Named as the server's other temporary files (`.<name>.tmp`), which it knows as its own.
        let mut name = std::ffi::OsString::from(".");
        name.push(path.file_name().unwrap_or_default());
        name.push(".tmp");
        let temporary = path.with_file_name(name);
        let io = |what: &str, e: std::io::Error| StorageError::Unavailable {
            context: format!("{what} {}", temporary.display()),
            source: e.into(),
        };
        match std::fs::remove_file(&temporary) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("remove the stale", e)),
            _ => {}
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        // Private from the start, as the file it replaces (it holds every secret).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&temporary).map_err(|e| io("create", e))?;
        let file = redb::backends::FileBackend::new(file).map_err(|e| engine(format!("open {}", temporary.display()), e))?;
        let syncing = Arc::new(AtomicBool::new(false));
        let staged = StagedFile { temporary, path: path.to_path_buf(), syncing: syncing.clone() };
        Ok((StagedBackend { file, syncing }, staged))
    }

    /// Renames the synced file into place and syncs the rename.
    fn put_in_place(self) -> Result<(), StorageError> {
        let unavailable = |what: String, e: std::io::Error| StorageError::Unavailable { context: what, source: e.into() };
        std::fs::rename(&self.temporary, &self.path)
            .map_err(|e| unavailable(format!("rename {} to {}", self.temporary.display(), self.path.display()), e))?;
        let dir = self.path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::File::open(dir).and_then(|dir| dir.sync_all()).map_err(|e| unavailable(format!("sync {}", dir.display()), e))
    }
}

/// redb's file backend, with its syncs skipped while the file is staged.
#[derive(Debug)]
struct StagedBackend {
    file: redb::backends::FileBackend,
    syncing: Arc<AtomicBool>,
}

impl redb::StorageBackend for StagedBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.file.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.file.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.file.set_len(len)
    }
    fn sync_data(&self) -> Result<(), std::io::Error> {
        match self.syncing.load(Ordering::Acquire) {
            true => self.file.sync_data(),
            false => Ok(()),
        }
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.file.write(offset, data)
    }
    fn close(&self) -> Result<(), std::io::Error> {
        self.file.close()
    }
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, redb::BackendError> {
        self.file.try_lock_range(start, end)
    }
    fn try_lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, redb::BackendError> {
        self.file.try_lock_shared_range(start, end)
    }
    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), redb::BackendError> {
        self.file.lock_range(start, end)
    }
    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), redb::BackendError> {
        self.file.lock_shared_range(start, end)
    }
    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), redb::BackendError> {
        self.file.unlock_range(start, end)
    }
    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, redb::BackendError> {
        self.file.query_lock_range(start, end)
    }
}

/// Whether the store at `path` is new: no file, or an empty one (the server creates the file
/// empty first, with its mode). A failure to tell is an error, not a new store.
fn is_new(path: &Path) -> Result<bool, StorageError> {
    match std::fs::metadata(path) {
        Ok(metadata) => Ok(metadata.len() == 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(StorageError::Unavailable { context: format!("look for {}", path.display()), source: e.into() }),
    }
}

/// Creates what [`read_initialised`] found missing, in one commit that the next durable one syncs.
fn initialise(db: &Database) -> Result<(Revision, Revision, i64), StorageError> {
    // Not synced: a crash before the next durable commit leaves the tables to be made again
    // (the store was empty), and a new store's start-up writes are synced once, after them.
    let txn = begin_write(db, false)?;
    let state = {
        let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
        txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
        let history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
        // Stores written before expiry existed get the tables here.
        txn.open_table(EXPIRY_BY_KEY).map_err(|e| engine("open table expiry_by_key", e))?;
        let deadlines = txn.open_table(EXPIRY_BY_DEADLINE).map_err(|e| engine("open table expiry_by_deadline", e))?;
        if meta.get(META_REVISION).map_err(|e| engine("read meta", e))?.is_none() {
            // A new store: revision 1 is the empty state, as in etcd.
            meta.insert(META_REVISION, 1).map_err(|e| engine("initialise meta", e))?;
            meta.insert(META_COMPACTED, 0).map_err(|e| engine("initialise meta", e))?;
        }
        (current_revision(&meta, &history)?, read_meta(&meta, META_COMPACTED)?, first_deadline(&deadlines)?)
    };
    txn.commit().map_err(|e| engine("commit initialisation", e))?;
    Ok(state)
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

/// A write transaction; a durable one (redb's default, set explicitly because acknowledged
/// writes must survive a crash) unless the store defers durability at start-up.
fn begin_write(db: &Database, durable: bool) -> Result<redb::WriteTransaction, StorageError> {
    let mut txn = db.begin_write().map_err(|e| engine("begin write transaction", e))?;
    let durability = if durable { Durability::Immediate } else { Durability::None };
    txn.set_durability(durability).map_err(|e| engine("set durability", e))?;
    Ok(txn)
}

/// The current revision: the last event's, or the floor in `meta` when it is later (no write
/// since the store was made or last compacted).
fn current_revision(
    meta: &impl ReadableTable<&'static str, i64>,
    history: &impl ReadableTable<i64, &'static [u8]>,
) -> Result<Revision, StorageError> {
    let floor = read_meta(meta, META_REVISION)?;
    let last = history.last().map_err(|e| engine("read history", e))?.map(|(at, _)| at.value());
    Ok(last.map_or(floor, |last| last.max(floor)))
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

    /// Keeps the writer thread from taking requests until the returned sender is dropped (or
    /// sent to): requests queued meanwhile form one batch.
    async fn hold_writer(store: &EmbeddedStore) -> std::sync::mpsc::SyncSender<()> {
        let (release, held) = std::sync::mpsc::sync_channel(1);
        store.handle.submit(Request::Hold { release: held }).await.unwrap();
        // Taken by the writer: the queue is empty again.
        while store.handle.requests.as_ref().unwrap().capacity() < QUEUE_CAPACITY {
            tokio::task::yield_now().await;
        }
        release
    }

    /// Queues a write directly, in this order, and returns where its answer will come.
    async fn queue(store: &EmbeddedStore, key: &str, mutation: Mutation) -> oneshot::Receiver<Result<Event, StorageError>> {
        queue_with_ttl(store, key, mutation, None).await
    }

    async fn queue_with_ttl(
        store: &EmbeddedStore,
        key: &str,
        mutation: Mutation,
        ttl: Option<Duration>,
    ) -> oneshot::Receiver<Result<Event, StorageError>> {
        let (done, answer) = oneshot::channel();
        store.handle.submit(Request::Write(PendingWrite { key: key.into(), mutation, ttl, done })).await.unwrap();
        answer
    }

    fn create(value: &'static str) -> Mutation {
        Mutation::Create { value: Bytes::from_static(value.as_bytes()) }
    }

    fn update(value: &'static str, expected: Revision) -> Mutation {
        Mutation::Update { value: Bytes::from_static(value.as_bytes()), expected }
    }

    /// How many commits and writes the store's counters show.
    fn counted(store: &EmbeddedStore) -> (u64, u64) {
        let counters = store.commit_counters();
        (counters.commits.get(), counters.writes.get())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_creates_of_one_key_in_one_batch_have_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        store.create("/other", Bytes::new()).await.unwrap();
        let before = counted(&store);
        let release = hold_writer(&store).await;
        let mut answers = Vec::new();
        for value in ["1", "2", "3", "4", "5", "6", "7", "8"] {
            answers.push(queue(&store, "/a", create(value)).await);
        }
        let other = queue(&store, "/b", create("b")).await;
        drop(release);
        let mut results = Vec::new();
        for answer in answers {
            results.push(answer.await.unwrap());
        }
        // The first in the queue wins; every other finds the key it created.
        assert_eq!(results[0].as_ref().unwrap(), &Event::Put { kv: kv("/a", "1", 3, 3), prev: None });
        for result in &results[1..] {
            assert!(matches!(result, Err(E::AlreadyExists { key }) if key == "/a"), "{result:?}");
        }
        // A failed check takes no revision and fails nothing else.
        assert_eq!(other.await.unwrap().unwrap(), Event::Put { kv: kv("/b", "b", 4, 4), prev: None });
        assert_eq!(counted(&store), (before.0 + 1, before.1 + 2), "one commit for the batch");
        assert_eq!(store.get("/a").await.unwrap(), Some(kv("/a", "1", 3, 3)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_guarded_write_that_loses_within_its_batch_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let a = store.create("/a", Bytes::from_static(b"0")).await.unwrap();
        let release = hold_writer(&store).await;
        // Three writers read `/a` at the same revision; the first to be applied wins.
        let first = queue(&store, "/a", update("1", a.mod_revision)).await;
        let second = queue(&store, "/a", update("2", a.mod_revision)).await;
        let delete = queue(&store, "/a", Mutation::Delete { expected: Some(a.mod_revision) }).await;
        // Guarded on the winner's revision: passes, having seen the batch's own write.
        let third = queue(&store, "/a", update("3", a.mod_revision + 1)).await;
        let missing = queue(&store, "/nope", update("x", 1)).await;
        drop(release);
        let won = kv("/a", "1", a.create_revision, a.mod_revision + 1);
        assert_eq!(first.await.unwrap().unwrap(), Event::Put { kv: won.clone(), prev: Some(a.clone()) });
        for loser in [second.await.unwrap(), delete.await.unwrap()] {
            match loser {
                Err(E::Conflict { key, expected, current }) => {
                    assert_eq!((key.as_str(), expected), ("/a", a.mod_revision));
                    assert_eq!(current, won, "the conflict reports the batch's write");
                }
                other => panic!("expected a conflict, got {other:?}"),
            }
        }
        let latest = kv("/a", "3", a.create_revision, a.mod_revision + 2);
        assert_eq!(third.await.unwrap().unwrap(), Event::Put { kv: latest.clone(), prev: Some(won) });
        assert!(matches!(missing.await.unwrap(), Err(E::NotFound { .. })));
        assert_eq!(store.get("/a").await.unwrap(), Some(latest));
        assert_eq!(store.current_revision().await.unwrap(), a.mod_revision + 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batched_revisions_are_gap_free_and_watchers_see_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 1024);
        let start = store.current_revision().await.unwrap();
        let mut watch = store.watch("/w/", 0).await.unwrap();
        let release = hold_writer(&store).await;
        let mut answers = Vec::new();
        for i in 0..40 {
            // Every fourth write is a create of a key made just before it: it fails.
            let key = format!("/w/{}", if i % 4 == 3 { i - 1 } else { i });
            answers.push(queue(&store, &key, Mutation::Create { value: Bytes::from(format!("{i}")) }).await);
        }
        drop(release);
        let mut applied = Vec::new();
        for answer in answers {
            if let Ok(event) = answer.await.unwrap() {
                applied.push(event);
            }
        }
        let revisions: Vec<Revision> = applied.iter().map(Event::revision).collect();
        assert_eq!(revisions, (start + 1..=start + 30).collect::<Vec<_>>(), "consecutive, in queue order");
        for event in &applied {
            assert_eq!(&next(&mut watch).await, event);
        }
        assert_eq!(store.current_revision().await.unwrap(), start + 30);
        // History replays the same sequence.
        let mut replay = store.watch("/w/", start).await.unwrap();
        for event in &applied {
            assert_eq!(&next(&mut replay).await, event);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_concurrent_writers_share_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let before = counted(&store);
        let release = hold_writer(&store).await;
        let writers: Vec<_> = (0..100)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move { store.create(&format!("/c/{i}"), Bytes::new()).await })
            })
            .collect();
        while store.handle.requests.as_ref().unwrap().capacity() > QUEUE_CAPACITY - 100 {
            tokio::task::yield_now().await;
        }
        drop(release);
        let mut revisions = Vec::new();
        for writer in writers {
            revisions.push(writer.await.unwrap().unwrap().mod_revision);
        }
        revisions.sort();
        assert_eq!(revisions, (2..102).collect::<Vec<_>>());
        assert_eq!(counted(&store), (before.0 + 1, before.1 + 100), "one fsync for all");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deferred_writes_are_read_at_once_and_kept_once_made_durable() {
        let dir = tempfile::tempdir().unwrap();
        // An existing store (a restart), opened for start-up writes.
        drop(open(&dir, 8));
        let store = EmbeddedStore::open_deferred(dir.path().join("store.redb")).unwrap();
        let mut watch = store.watch("/d/", 0).await.unwrap();
        let written = store.create("/d/a", Bytes::from_static(b"1")).await.unwrap();
        assert_eq!(store.get("/d/a").await.unwrap(), Some(written.clone()));
        assert!(matches!(watch.next().await, Some(Ok(Event::Put { kv, .. })) if kv == written));
        store.make_durable().await.unwrap();
        store.create("/d/b", Bytes::from_static(b"2")).await.unwrap();
        drop(watch);
        drop(store);
        let store = open(&dir, 8);
        assert_eq!(store.get("/d/a").await.unwrap(), Some(written));
        assert_eq!(store.list("/d/", ListOptions::default()).await.unwrap().kvs.len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_deferred_store_is_in_place_only_once_made_durable() {
        let dir = tempfile::tempdir().unwrap();
        let (path, temporary) = (dir.path().join("store.redb"), dir.path().join(".store.redb.tmp"));
        // Written and dropped before it was made durable, as by a crash: nothing is in place.
        {
            let store = EmbeddedStore::open_deferred(&path).unwrap();
            store.create("/d/a", Bytes::from_static(b"1")).await.unwrap();
            assert!(temporary.exists());
        }
        assert!(!path.exists());
        // An empty file (the server creates it first) is a new store too, and the temporary
        // file left behind is replaced.
        std::fs::write(&path, b"").unwrap();
        let store = EmbeddedStore::open_deferred(&path).unwrap();
        assert_eq!(store.get("/d/a").await.unwrap(), None);
        let written = store.create("/d/b", Bytes::from_static(b"2")).await.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        store.make_durable().await.unwrap();
        assert!(!temporary.exists());
        #[cfg(unix)]
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions()) & 0o777, 0o600);
        store.create("/d/c", Bytes::from_static(b"3")).await.unwrap();
        drop(store);
        let store = EmbeddedStore::open(&path).unwrap();
        assert_eq!(store.get("/d/b").await.unwrap(), Some(written));
        assert_eq!(store.list("/d/", ListOptions::default()).await.unwrap().kvs.len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batches_are_bounded_in_writes_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let before = counted(&store);
        let release = hold_writer(&store).await;
        let mut answers = Vec::new();
        for i in 0..MAX_BATCH_WRITES + 1 {
            answers.push(queue(&store, &format!("/n/{i:04}"), create("")).await);
        }
        // Six writes of a MiB and a half: 8 MiB hold five.
        let big = Bytes::from(vec![0; 3 << 19]);
        for i in 0..6 {
            answers.push(queue(&store, &format!("/big/{i}"), Mutation::Create { value: big.clone() }).await);
        }
        drop(release);
        for answer in answers {
            answer.await.unwrap().unwrap();
        }
        // 256 small; 1 small and 5 big; 1 big.
        assert_eq!(counted(&store), (before.0 + 3, before.1 + MAX_BATCH_WRITES as u64 + 7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_transaction_fails_every_write_in_it_and_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        let mut watch = store.watch("/", 0).await.unwrap();
        let release = hold_writer(&store).await;
        // One revision left before the counter overflows: the batch's second write cannot have one.
        let txn = begin_write(&store.handle.inner.db, true).unwrap();
        txn.open_table(META).unwrap().insert(META_REVISION, i64::MAX - 1).unwrap();
        txn.commit().unwrap();
        let answers =
            [queue(&store, "/a", create("a")).await, queue(&store, "/b", create("b")).await, queue(&store, "/c", create("c")).await];
        drop(release);
        for answer in answers {
            assert!(matches!(answer.await.unwrap(), Err(E::Internal { .. })));
        }
        assert_eq!(store.get("/a").await.unwrap(), None, "the first write was rolled back with the rest");
        assert!(tokio::time::timeout(Duration::from_millis(50), watch.next()).await.is_err(), "nothing published");
        // The store goes on: a batch that fits is written.
        let c = store.create("/c", Bytes::new()).await.unwrap();
        assert_eq!(c.mod_revision, i64::MAX);
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
        // Poll by hand, outside any runtime: a list needs the blocking pool; a point read,
        // done in place, needs none.
        let waker = std::task::Waker::noop();
        let mut list = store.list("/a", ListOptions::default());
        let poll = list.as_mut().poll(&mut std::task::Context::from_waker(waker));
        assert!(matches!(poll, std::task::Poll::Ready(Err(E::Unavailable { .. }))));
        let mut get = store.get("/a");
        let poll = get.as_mut().poll(&mut std::task::Context::from_waker(waker));
        assert!(matches!(poll, std::task::Poll::Ready(Ok(None))));
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

    /// A progress request reaches each live watch under its prefix after the events it was
    /// owed, at the latest revision, whatever resource that was written to.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn progress_reports_follow_the_events_owed() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir, 8);
        assert!(store.answers_progress_requests());
        let mut pods = store.watch("/registry/pods/", 0).await.unwrap();
        let mut secrets = store.watch("/registry/secrets/", 0).await.unwrap();
        // Waiting for an event registers each watch with the hub.
        for watch in [&mut pods, &mut secrets] {
            assert!(tokio::time::timeout(Duration::from_millis(50), watch.next()).await.is_err());
        }
        let pod = store.create("/registry/pods/a/p", Bytes::new()).await.unwrap();
        let other = store.create("/registry/configmaps/a/c", Bytes::new()).await.unwrap();
        store.request_progress("/registry/pods/");
        assert_eq!(next(&mut pods).await.key(), pod.key);
        assert_eq!(next(&mut pods).await, Event::Progress { revision: other.mod_revision });
        // A watch under another prefix was not asked.
        assert!(tokio::time::timeout(Duration::from_millis(50), secrets.next()).await.is_err());
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
        let txn = store.handle.inner.db.begin_read().unwrap();
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

    /// A write without a TTL drops the key's deadline, whether it was set in an earlier batch or
    /// earlier in the same one.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_without_a_ttl_drops_the_keys_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_without_sweeper(&dir.path().join("store.redb")).unwrap();
        let a = store.create_with_ttl("/a", Bytes::new(), Duration::from_secs(600)).await.unwrap();
        assert_eq!(deadlines(&store).len(), 1);
        store.update("/a", Bytes::from_static(b"2"), a.mod_revision).await.unwrap();
        assert!(deadlines(&store).is_empty(), "dropped by a later batch");
        let release = hold_writer(&store).await;
        let with_ttl = queue_with_ttl(&store, "/b", create("1"), Some(Duration::from_secs(600))).await;
        let without = queue(&store, "/b", Mutation::Delete { expected: None }).await;
        drop(release);
        with_ttl.await.unwrap().unwrap();
        without.await.unwrap().unwrap();
        assert!(deadlines(&store).is_empty(), "dropped in the same batch");
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
        assert_eq!(store.handle.inner.hub().published, 5);
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

    /// A store made before the expiry tables existed gets them at open, and keeps its revision;
    /// a complete store is opened without a write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn opening_adds_missing_tables_and_reads_a_complete_store_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        {
            let db = Database::create(&path).unwrap();
            let txn = begin_write(&db, true).unwrap();
            {
                let mut meta = txn.open_table(META).unwrap();
                meta.insert(META_REVISION, 7).unwrap();
                meta.insert(META_COMPACTED, 0).unwrap();
                txn.open_table(KEYS).unwrap();
                txn.open_table(HISTORY).unwrap();
            }
            txn.commit().unwrap();
            assert!(read_initialised(&db).unwrap().is_none(), "no expiry tables yet");
        }
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        assert_eq!(store.handle.inner.hub().published, 7);
        assert_eq!(store.create("/a", Bytes::new()).await.unwrap().mod_revision, 8);
        drop(store);
        let db = Database::create(&path).unwrap();
        assert_eq!(read_initialised(&db).unwrap(), Some((8, 0, NO_DEADLINE)));
    }

    /// Writes leave `meta` alone; the current revision comes from the history, and survives a
    /// compaction that empties it and a reopen.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_current_revision_is_the_last_events_and_survives_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let floor = |db: &Database| {
            let txn = db.begin_read().unwrap();
            read_meta(&txn.open_table(META).unwrap(), META_REVISION).unwrap()
        };
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        let start = store.current_revision().await.unwrap();
        let floor_before = floor(&store.handle.inner.db);
        store.create("/a", Bytes::new()).await.unwrap();
        let b = store.create("/b", Bytes::new()).await.unwrap();
        assert_eq!(floor(&store.handle.inner.db), floor_before, "a write does not touch meta");
        assert_eq!(store.current_revision().await.unwrap(), start + 2);
        assert_eq!(store.list("/", ListOptions::default()).await.unwrap().revision, b.mod_revision);
        store.compact(b.mod_revision).await.unwrap();
        assert_eq!(store.current_revision().await.unwrap(), b.mod_revision, "the history is empty now");
        drop(store);
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        assert_eq!(store.current_revision().await.unwrap(), b.mod_revision);
        assert_eq!(store.create("/c", Bytes::new()).await.unwrap().mod_revision, b.mod_revision + 1);
        drop(store);
        let store = EmbeddedStore::open_without_sweeper(&path).unwrap();
        assert_eq!(store.current_revision().await.unwrap(), b.mod_revision + 1, "read from the history after a reopen");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deadline_never_deletes_a_key_written_after_it_was_set() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open_without_sweeper(&dir.path().join("store.redb")).unwrap();
        let a = store.create("/a", Bytes::new()).await.unwrap();
        let b = store.create_with_ttl("/b", Bytes::new(), Duration::from_secs(600)).await.unwrap();
        // Deadlines due long ago, recorded for earlier writes of the keys (as a sweep that
        // computed them before the keys were written again would have seen them).
        let txn = begin_write(&store.handle.inner.db, true).unwrap();
        {
            let mut by_deadline = txn.open_table(EXPIRY_BY_DEADLINE).unwrap();
            by_deadline.insert((1, "/a"), a.mod_revision - 1).unwrap();
            by_deadline.insert((1, "/b"), b.mod_revision - 1).unwrap();
        }
        txn.commit().unwrap();
        store.handle.inner.expiry.next.store(1, Ordering::Release);
        assert_eq!(store.get("/a").await.unwrap(), Some(a));
        assert_eq!(store.get("/b").await.unwrap(), Some(b.clone()));
        assert_eq!(store.current_revision().await.unwrap(), b.mod_revision);
        // The stale entries are gone, `/b`'s own deadline stays and is next.
        let left = deadlines(&store);
        assert_eq!(left.len(), 1);
        assert_eq!((left[0].1.as_str(), left[0].2), ("/b", b.mod_revision));
        assert_eq!(store.handle.inner.expiry.next.load(Ordering::Acquire), left[0].0);
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
        // The test stands in for the writer thread, which is held meanwhile.
        let release = hold_writer(&store).await;
        assert!(store.handle.inner.expire_batch(later).unwrap(), "a full batch says more may be due");
        store.handle.inner.expire_all_due(later).unwrap();
        drop(release);
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
        let exited = store.handle.inner.expiry.sweeper_exited.clone();
        store.create("/a", Bytes::new()).await.unwrap();
        assert!(store.handle.inner.expiry.sweeper.lock().unwrap().is_none(), "no thread without deadlines");
        store.create_with_ttl("/b", Bytes::new(), Duration::from_secs(600)).await.unwrap();
        assert!(store.handle.inner.expiry.sweeper.lock().unwrap().is_some());
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
