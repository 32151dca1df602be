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
//! Three tables, updated together in one write transaction per write:
//!
//! - `keys`: key → (create revision, mod revision, value): the current state, what `get` and a
//!   list at the latest revision read.
//! - `history`: revision → event, protobuf-encoded with etcd's `mvccpb.Event` field numbers. Each
//!   event carries the key's previous value, so that a watch can report it and so that the state
//!   at an old revision is the current state with the later events undone. Values are thus
//!   stored twice per write (in the event and as the next event's previous value); compaction
//!   reclaims both.
//! - `meta`: the current and the compacted revision.
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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use bytes::Bytes;
use prost::Message;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::mpsc;

use super::{
    Event, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, StorageFuture, WatchSource, WatchStream,
    check_key,
};

/// key → (create revision, mod revision, value).
const KEYS: TableDefinition<&str, (i64, i64, &[u8])> = TableDefinition::new("keys");
/// revision → [`EventRecord`].
const HISTORY: TableDefinition<i64, &[u8]> = TableDefinition::new("history");
/// [`META_REVISION`] and [`META_COMPACTED`].
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";

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
        let path = path.as_ref();
        let db = Database::create(path).map_err(|e| engine(format!("open {}", path.display()), e))?;
        let txn = begin_write(&db)?;
        let (revision, compacted) = {
            let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
            txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
            txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
            if meta.get(META_REVISION).map_err(|e| engine("read meta", e))?.is_none() {
                // A new store: revision 1 is the empty state, as in etcd.
                meta.insert(META_REVISION, 1).map_err(|e| engine("initialise meta", e))?;
                meta.insert(META_COMPACTED, 0).map_err(|e| engine("initialise meta", e))?;
            }
            (read_meta(&meta, META_REVISION)?, read_meta(&meta, META_COMPACTED)?)
        };
        txn.commit().map_err(|e| engine("commit initialisation", e))?;
        tracing::debug!(path = %path.display(), revision, compacted, "opened embedded store");
        let hub = Hub { published: revision, compacted, watchers: Vec::new() };
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                db,
                writer: Arc::new(tokio::sync::Mutex::new(())),
                hub: Mutex::new(hub),
                watch_buffer: options.watch_buffer.clamp(1, MAX_WATCH_BUFFER),
            }),
        })
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

    async fn mutate(&self, key: &str, mutation: Mutation) -> Result<Event, StorageError> {
        check_key(key)?;
        let key = key.to_owned();
        self.write("write", move |inner| inner.apply(&key, mutation)).await
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
            let prefix = prefix.to_owned();
            blocking(self.inner.clone(), "list", move |inner| inner.list(&prefix, &options)).await
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Create { value }).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: Revision,
    ) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Update { value, expected: expected_mod_revision }).await? {
                Event::Put { kv, .. } => Ok(kv),
                event => Err(mismatched(event)),
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<Revision>,
    ) -> StorageFuture<'a, (KeyValue, Revision)> {
        Box::pin(async move {
            match self.mutate(key, Mutation::Delete { expected: expected_mod_revision }).await? {
                Event::Delete { prev, revision } => Ok((prev, revision)),
                event => Err(mismatched(event)),
            }
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        Box::pin(async move {
            let mut hub = self.inner.hub();
            if from_revision < 0 {
                return Err(StorageError::InvalidRevision {
                    revision: from_revision,
                    reason: "a watch starts at 0 (now) or a revision",
                });
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

    /// One write: check, record in all three tables, commit durably, publish.
    fn apply(&self, key: &str, mutation: Mutation) -> Result<Event, StorageError> {
        let txn = begin_write(&self.db)?;
        let event = {
            let mut meta = txn.open_table(META).map_err(|e| engine("open table meta", e))?;
            let mut keys = txn.open_table(KEYS).map_err(|e| engine("open table keys", e))?;
            let mut history = txn.open_table(HISTORY).map_err(|e| engine("open table history", e))?;
            let current = read_meta(&meta, META_REVISION)?;
            let revision = current.checked_add(1).ok_or_else(|| internal("next revision", "revision overflow"))?;
            // A failed check returns here: the transaction is dropped, which aborts it.
            let event = mutation.into_event(key, read_key(&keys, key)?, revision)?;
            let context = || format!("write {key:?} at revision {revision}");
            match &event {
                Event::Put { kv, .. } => {
                    keys.insert(key, (kv.create_revision, kv.mod_revision, kv.value.as_ref()))
                        .map_err(|e| engine(context(), e))?;
                }
                Event::Delete { .. } => {
                    keys.remove(key).map_err(|e| engine(context(), e))?;
                }
                Event::Progress { .. } => return Err(internal(context(), "a write produced no change")),
            }
            let record = EventRecord::from_event(&event).ok_or_else(|| internal(context(), "a write produced no change"))?;
            history.insert(revision, record.encode_to_vec().as_slice()).map_err(|e| engine(context(), e))?;
            meta.insert(META_REVISION, revision).map_err(|e| engine(context(), e))?;
            event
        };
        txn.commit().map_err(|e| engine(format!("commit revision {}", event.revision()), e))?;
        self.hub().publish(&event, self.watch_buffer);
        Ok(event)
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
                    page.push(KeyValue {
                        key: key.to_owned(),
                        value: Bytes::copy_from_slice(value),
                        create_revision,
                        mod_revision,
                    });
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
            let kv =
                KeyValue { key: key.to_owned(), value: Bytes::copy_from_slice(value), create_revision, mod_revision };
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
                let events =
                    blocking(inner, "replay watch history", move |inner| inner.history(&prefix, cursor, upto)).await?;
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
            (Mutation::Update { .. } | Mutation::Delete { .. }, None) => {
                Err(StorageError::NotFound { key: key.to_owned() })
            }
            (Mutation::Update { expected, .. } | Mutation::Delete { expected: Some(expected) }, Some(current))
                if current.mod_revision != expected =>
            {
                Err(StorageError::Conflict { key: key.to_owned(), expected, current })
            }
            (Mutation::Update { value, .. }, Some(current)) => Ok(Event::Put {
                kv: KeyValue {
                    key: key.to_owned(),
                    value,
                    create_revision: current.create_revision,
                    mod_revision: revision,
                },
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
        KeyValueRecord {
            key: kv.key.clone(),
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
            value: kv.value.clone(),
        }
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
            Event::Put { kv, prev } => {
                EventRecord { kind: EVENT_PUT, kv: Some(kv.into()), prev_kv: prev.as_ref().map(Into::into) }
            }
            Event::Progress { .. } => return None,
            Event::Delete { prev, revision } => EventRecord {
                kind: EVENT_DELETE,
                kv: Some(KeyValueRecord {
                    key: prev.key.clone(),
                    mod_revision: *revision,
                    ..KeyValueRecord::default()
                }),
                prev_kv: Some(prev.into()),
            },
        })
    }
}

/// Decodes the history entry stored at `revision`, checking that it is a well-formed event of
/// that revision: a damaged file is reported, never trusted.
fn decode_event(revision: Revision, bytes: &[u8]) -> Result<Event, StorageError> {
    let context = || format!("decode history entry at revision {revision}");
    let record =
        EventRecord::decode(bytes).map_err(|e| StorageError::Internal { context: context(), source: e.into() })?;
    match (record.kind, record.kv, record.prev_kv) {
        (EVENT_PUT, Some(kv), prev) if kv.mod_revision == revision => {
            Ok(Event::Put { kv: kv.into(), prev: prev.map(Into::into) })
        }
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

fn read_key(
    keys: &impl ReadableTable<&'static str, (i64, i64, &'static [u8])>,
    key: &str,
) -> Result<Option<KeyValue>, StorageError> {
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
        assert_eq!(
            delete(None).into_event("/a", Some(current.clone()), 9).unwrap(),
            Event::Delete { prev: current, revision: 9 }
        );
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
            let all: Vec<String> =
                if revision.is_some() { vec!["/b/1".into(), "/b/2".into()] } else { vec!["/b/1".into()] };
            assert_eq!(keys("/a/9").await, all, "start_after before the prefix");
            assert_eq!(keys("").await, all, "empty start_after");
            assert!(keys("/c/").await.is_empty(), "start_after past the prefix");
            assert!(keys("/b/2").await.is_empty(), "start_after the last key");
        }
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
