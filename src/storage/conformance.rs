//! The conformance suite every [`Storage`] backend must pass, as upstream runs
//! `k8s.io/apiserver/pkg/storage/testing/store_tests.go` against each of its stores: it pins down
//! the etcd semantics the generic store relies on, so that a backend that passes can replace
//! another.
//!
//! Each check is an `async fn(&dyn Storage) -> Result<(), Failure>` working under its own key
//! prefix (`/conformance/<check>/`), so the checks can share one store when run one after the
//! other, which is what [`run_all`] does; a backend's tests can also run each on a fresh store.
//! [`empty_store`] needs a store nobody has written to, and [`compaction`] makes history before
//! it unreadable, so [`run_all`] runs them first and last. [`keys_expire_after_their_ttl`]
//! waits a few seconds for etcd's leases (whole seconds, revoked by the leader's sweep), and
//! leaves no key behind that could expire during a later check. Checks need a tokio runtime with
//! timers (every wait is bounded, so a broken backend fails instead of hanging).
//!
//! Checks report failures as values rather than panicking: this module is compiled into the
//! library, and the caller (a test) decides how to fail.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;

use super::{Event, KeyValue, ListOptions, ListResult, MAX_REQUEST_BYTES, Revision, Storage, StorageError, WatchStream};

/// Why a check failed, and where.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub location: &'static Location<'static>,
}

impl Failure {
    #[track_caller]
    pub fn new(message: impl Into<String>) -> Self {
        Failure { message: message.into(), location: Location::caller() }
    }

    fn in_check(mut self, check: &str) -> Self {
        self.message = format!("{check}: {}", self.message);
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.location)
    }
}

impl std::error::Error for Failure {}

impl From<StorageError> for Failure {
    /// An unexpected storage error, located at the `?` that met it.
    #[track_caller]
    fn from(error: StorageError) -> Self {
        Failure::new(format!("unexpected storage error: {error}"))
    }
}

type Outcome = Result<(), Failure>;

macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(Failure::new(format!($($arg)+)));
        }
    };
}

macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($arg:tt)+) => {
        match (&$left, &$right) {
            (left, right) => {
                if left != right {
                    return Err(Failure::new(format!("{}: {:?} != {:?}", format!($($arg)+), left, right)));
                }
            }
        }
    };
}

/// Matches a result against an error pattern, failing with what came instead.
macro_rules! ensure_err {
    ($result:expr, $pattern:pat $(if $guard:expr)?, $($arg:tt)+) => {
        match $result {
            Err($pattern) $(if $guard)? => {}
            other => {
                return Err(Failure::new(format!("{}: expected {}, got {:?}", format!($($arg)+), stringify!($pattern), other)));
            }
        }
    };
}

/// How long any single wait may take before the check fails.
const WAIT: Duration = Duration::from_secs(20);

/// Runs every check against `store`, which must be empty: [`empty_store`] first,
/// [`compaction`] last.
pub async fn run_all(store: &dyn Storage) -> Outcome {
    empty_store(store).await.map_err(|f| f.in_check("empty_store"))?;
    revisions_increase_by_one_per_write(store).await.map_err(|f| f.in_check("revisions_increase_by_one_per_write"))?;
    create_and_get(store).await.map_err(|f| f.in_check("create_and_get"))?;
    update_compares_and_swaps(store).await.map_err(|f| f.in_check("update_compares_and_swaps"))?;
    delete_compares_and_swaps(store).await.map_err(|f| f.in_check("delete_compares_and_swaps"))?;
    invalid_input_is_rejected(store).await.map_err(|f| f.in_check("invalid_input_is_rejected"))?;
    list_is_sorted_and_bounded_by_prefix(store).await.map_err(|f| f.in_check("list_is_sorted_and_bounded_by_prefix"))?;
    list_at_revision(store).await.map_err(|f| f.in_check("list_at_revision"))?;
    list_paging_is_stable_across_writes(store).await.map_err(|f| f.in_check("list_paging_is_stable_across_writes"))?;
    watch_replays_then_follows_live(store).await.map_err(|f| f.in_check("watch_replays_then_follows_live"))?;
    watch_filters_by_prefix(store).await.map_err(|f| f.in_check("watch_filters_by_prefix"))?;
    recreate_gets_a_new_create_revision(store).await.map_err(|f| f.in_check("recreate_gets_a_new_create_revision"))?;
    watch_has_no_gap_under_concurrent_writers(store).await.map_err(|f| f.in_check("watch_has_no_gap_under_concurrent_writers"))?;
    slow_watchers_do_not_block_writers(store).await.map_err(|f| f.in_check("slow_watchers_do_not_block_writers"))?;
    too_large_writes_are_refused(store).await.map_err(|f| f.in_check("too_large_writes_are_refused"))?;
    keys_expire_after_their_ttl(store).await.map_err(|f| f.in_check("keys_expire_after_their_ttl"))?;
    compaction(store).await.map_err(|f| f.in_check("compaction"))?;
    Ok(())
}

/// A new store is at revision 1, never compacted, and holds nothing.
pub async fn empty_store(store: &dyn Storage) -> Outcome {
    ensure_eq!(store.current_revision().await?, 1, "revision of an empty store");
    ensure_eq!(store.compacted_revision().await?, 0, "compacted revision of an empty store");
    let all = store.list("", ListOptions::default()).await?;
    ensure_eq!(all, ListResult { kvs: vec![], revision: 1, more: false, remaining: None }, "list of an empty store");
    ensure_eq!(store.get("/conformance/empty/a").await?, None, "get from an empty store");
    Ok(())
}

/// Every successful write bumps the revision by exactly one; failed writes do not bump it.
pub async fn revisions_increase_by_one_per_write(store: &dyn Storage) -> Outcome {
    let key = "/conformance/revisions/a";
    let r0 = store.current_revision().await?;
    let created = store.create(key, bytes("1")).await?;
    ensure_eq!((created.create_revision, created.mod_revision), (r0 + 1, r0 + 1), "revisions of a create");
    ensure_eq!(store.current_revision().await?, r0 + 1, "revision after a create");
    ensure!(store.create(key, bytes("x")).await.is_err(), "a second create of {key} succeeded");
    ensure!(store.update(key, bytes("x"), r0).await.is_err(), "an update with a stale revision succeeded");
    ensure!(store.delete(key, Some(r0)).await.is_err(), "a delete with a stale revision succeeded");
    ensure_eq!(store.current_revision().await?, r0 + 1, "revision after failed writes");
    let updated = store.update(key, bytes("2"), r0 + 1).await?;
    ensure_eq!(updated.mod_revision, r0 + 2, "mod revision of an update");
    let (_, deleted_at) = store.delete(key, None).await?;
    ensure_eq!(deleted_at, r0 + 3, "revision of a delete");
    ensure!(store.delete(key, None).await.is_err(), "a delete of a missing key succeeded");
    ensure_eq!(store.current_revision().await?, r0 + 3, "revision after deleting a missing key");
    Ok(())
}

/// A create stores the value at a new revision; a second create of the key fails and changes
/// nothing.
pub async fn create_and_get(store: &dyn Storage) -> Outcome {
    let key = "/conformance/create/a";
    ensure_eq!(store.get(key).await?, None, "get before create");
    let created = store.create(key, bytes("v1")).await?;
    let revision = store.current_revision().await?;
    let expected = KeyValue { key: key.into(), value: bytes("v1"), create_revision: revision, mod_revision: revision };
    ensure_eq!(created, expected, "created key-value");
    ensure_eq!(store.get(key).await?, Some(expected.clone()), "get after create");
    ensure_err!(
        store.create(key, bytes("v2")).await,
        StorageError::AlreadyExists { key: ref k } if k == key,
        "second create"
    );
    ensure_eq!(store.get(key).await?, Some(expected), "get after a failed create");
    ensure_eq!(store.get("/conformance/create/b").await?, None, "get of a key never written");
    Ok(())
}

/// An update succeeds only against the key's current mod revision and keeps its create
/// revision; a conflict reports the current key-value.
pub async fn update_compares_and_swaps(store: &dyn Storage) -> Outcome {
    let key = "/conformance/update/a";
    let v1 = store.create(key, bytes("v1")).await?;
    let v2 = store.update(key, bytes("v2"), v1.mod_revision).await?;
    ensure_eq!(v2.value, bytes("v2"), "updated value");
    ensure_eq!(v2.create_revision, v1.create_revision, "create revision after an update");
    ensure_eq!(v2.mod_revision, store.current_revision().await?, "mod revision after an update");
    ensure_eq!(store.get(key).await?, Some(v2.clone()), "get after update");
    match store.update(key, bytes("v3"), v1.mod_revision).await {
        Err(StorageError::Conflict { key: k, expected, current }) => {
            ensure_eq!(k, key, "key of the conflict");
            ensure_eq!(expected, v1.mod_revision, "expected revision of the conflict");
            ensure_eq!(current, v2, "current key-value of the conflict");
        }
        other => return Err(Failure::new(format!("stale update: expected a conflict, got {other:?}"))),
    }
    ensure_eq!(store.get(key).await?, Some(v2.clone()), "get after a conflicting update");
    ensure_err!(
        store.update("/conformance/update/missing", bytes("x"), v2.mod_revision).await,
        StorageError::NotFound { .. },
        "update of a missing key"
    );
    Ok(())
}

/// A delete with a precondition succeeds only against the current mod revision; it returns the
/// deleted key-value and the revision of the deletion.
pub async fn delete_compares_and_swaps(store: &dyn Storage) -> Outcome {
    let key = "/conformance/delete/a";
    let v1 = store.create(key, bytes("v1")).await?;
    let v2 = store.update(key, bytes("v2"), v1.mod_revision).await?;
    ensure_err!(
        store.delete(key, Some(v1.mod_revision)).await,
        StorageError::Conflict { ref current, .. } if *current == v2,
        "delete with a stale revision"
    );
    ensure_eq!(store.get(key).await?, Some(v2.clone()), "get after a conflicting delete");
    let (prev, revision) = store.delete(key, Some(v2.mod_revision)).await?;
    ensure_eq!(prev, v2, "deleted key-value");
    ensure_eq!(revision, store.current_revision().await?, "revision of the delete");
    ensure_eq!(store.get(key).await?, None, "get after delete");
    ensure_err!(store.delete(key, None).await, StorageError::NotFound { .. }, "second delete");
    ensure_err!(store.delete(key, Some(revision)).await, StorageError::NotFound { .. }, "second delete with revision");
    let other = store.create("/conformance/delete/b", bytes("b")).await?;
    let (prev, _) = store.delete("/conformance/delete/b", None).await?;
    ensure_eq!(prev, other, "unconditional delete");
    Ok(())
}

/// Empty keys and impossible revisions are errors, not panics or silent successes.
pub async fn invalid_input_is_rejected(store: &dyn Storage) -> Outcome {
    ensure_err!(store.get("").await, StorageError::InvalidKey { .. }, "get of the empty key");
    ensure_err!(store.create("", bytes("x")).await, StorageError::InvalidKey { .. }, "create of the empty key");
    ensure_err!(store.update("", bytes("x"), 1).await, StorageError::InvalidKey { .. }, "update of the empty key");
    ensure_err!(store.delete("", None).await, StorageError::InvalidKey { .. }, "delete of the empty key");
    let at = |revision| ListOptions { revision: Some(revision), ..ListOptions::default() };
    ensure_err!(store.list("/", at(0)).await, StorageError::InvalidRevision { .. }, "list at revision 0");
    ensure_err!(store.list("/", at(-3)).await, StorageError::InvalidRevision { .. }, "list at revision -3");
    ensure_err!(store.watch("/", -1).await, StorageError::InvalidRevision { .. }, "watch from revision -1");
    let current = store.current_revision().await?;
    ensure_err!(
        store.list("/", at(current + 1)).await,
        StorageError::FutureRevision { requested, current: c } if requested == current + 1 && c == current,
        "list at a future revision"
    );
    ensure_err!(store.watch("/", current + 1).await, StorageError::FutureRevision { .. }, "watch from a future revision");
    Ok(())
}

/// A list returns exactly the keys starting with the prefix, sorted, at the current revision.
pub async fn list_is_sorted_and_bounded_by_prefix(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/list/";
    for key in ["b", "a", "c/d", "c", "a/b"] {
        store.create(&format!("{prefix}{key}"), bytes(key)).await?;
    }
    // Neighbours that share characters but not the prefix.
    store.create("/conformance/lis", bytes("x")).await?;
    store.create("/conformance/listx", bytes("x")).await?;
    store.create("/conformance/list", bytes("x")).await?;
    let listed = store.list(prefix, ListOptions::default()).await?;
    let keys: Vec<&str> = listed.kvs.iter().map(|kv| kv.key.as_str()).collect();
    let expected: Vec<String> = ["a", "a/b", "b", "c", "c/d"].iter().map(|k| format!("{prefix}{k}")).collect();
    ensure_eq!(keys, expected, "listed keys");
    ensure!(listed.kvs.iter().all(|kv| kv.key.ends_with(&*String::from_utf8_lossy(&kv.value))), "values mixed up");
    ensure_eq!(listed.revision, store.current_revision().await?, "revision of a list");
    ensure_eq!((listed.more, listed.remaining), (false, None), "a complete list does not continue");
    let nothing = store.list("/conformance/list/zz/", ListOptions::default()).await?;
    ensure!(nothing.kvs.is_empty(), "list of an unused prefix returned {:?}", nothing.kvs);
    let nested = store.list(&format!("{prefix}c/"), ListOptions::default()).await?;
    ensure_eq!(nested.kvs.len(), 1, "keys under {prefix}c/");
    Ok(())
}

/// A list at a past revision returns the state as of that revision, with the key-values'
/// revisions of the time.
pub async fn list_at_revision(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/listrev/";
    let key = |k: &str| format!("{prefix}{k}");
    let a1 = store.create(&key("a"), bytes("a1")).await?;
    let b1 = store.create(&key("b"), bytes("b1")).await?;
    let r1 = store.current_revision().await?;
    let a2 = store.update(&key("a"), bytes("a2"), a1.mod_revision).await?;
    let r2 = store.current_revision().await?;
    store.delete(&key("b"), None).await?;
    let c1 = store.create(&key("c"), bytes("c1")).await?;
    // Writes elsewhere do not show.
    store.create("/conformance/listrev-other/a", bytes("x")).await?;
    let latest = store.current_revision().await?;
    let at = |revision| ListOptions { revision: Some(revision), ..ListOptions::default() };

    let before = store.list(prefix, at(r1 - 2)).await?;
    ensure_eq!(before.kvs, vec![], "state before the first write");
    let s1 = store.list(prefix, at(r1)).await?;
    ensure_eq!(s1.kvs, vec![a1.clone(), b1.clone()], "state at r1");
    ensure_eq!(s1.revision, r1, "revision of a list at r1");
    let s2 = store.list(prefix, at(r2)).await?;
    ensure_eq!(s2.kvs, vec![a2.clone(), b1.clone()], "state at r2");
    let now = store.list(prefix, ListOptions::default()).await?;
    ensure_eq!(now.kvs, vec![a2.clone(), c1.clone()], "latest state");
    ensure_eq!(now.revision, latest, "revision of a latest list");
    ensure_eq!(store.list(prefix, at(latest)).await?, now, "list at the current revision");

    let paged = store.list(prefix, ListOptions { revision: Some(r1), limit: Some(1), ..ListOptions::default() }).await?;
    ensure_eq!((paged.kvs, paged.more, paged.remaining), (vec![a1], true, Some(1)), "first page at r1");
    let rest = store
        .list(prefix, ListOptions { revision: Some(r1), limit: Some(1), start_after: Some(key("a")), ..ListOptions::default() })
        .await?;
    ensure_eq!((rest.kvs, rest.more, rest.remaining), (vec![b1], false, None), "second page at r1");
    Ok(())
}

/// Pages read at the first page's revision add up to exactly the state at that revision, however
/// writes interleave with the paging.
pub async fn list_paging_is_stable_across_writes(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/paging/";
    let key = |i: usize| format!("{prefix}{i:03}");
    for i in (0..40).step_by(2) {
        store.create(&key(i), bytes(&i.to_string())).await?;
    }
    let first = store.list(prefix, ListOptions { limit: Some(3), ..ListOptions::default() }).await?;
    ensure_eq!((first.kvs.len(), first.more, first.remaining), (3, true, Some(17)), "first page");
    let snapshot = first.revision;

    let writer = async {
        for i in 0..40 {
            // Fill the odd gaps, delete some even keys, update others: before and after the
            // paging position.
            let result = match i % 4 {
                0 | 2 => store.create(&key(i + 1), bytes("new")).await.map(drop),
                1 => store.delete(&key(i - 1), None).await.map(drop),
                _ => match store.get(&key(i - 1)).await? {
                    Some(kv) => store.update(&kv.key, bytes("updated"), kv.mod_revision).await.map(drop),
                    None => Ok(()),
                },
            };
            result?;
            tokio::task::yield_now().await;
        }
        Ok::<(), Failure>(())
    };
    let pager = async {
        let mut kvs = first.kvs.clone();
        let mut pages = 1;
        loop {
            let start_after = kvs.last().map(|kv: &KeyValue| kv.key.clone());
            let page =
                store.list(prefix, ListOptions { revision: Some(snapshot), limit: Some(2), start_after, ..ListOptions::default() }).await?;
            ensure_eq!(page.revision, snapshot, "revision of page {pages}");
            ensure!(!page.kvs.is_empty(), "page {pages} is empty");
            let Some(expected_remaining) = 20usize.checked_sub(kvs.len() + page.kvs.len()) else {
                return Err(Failure::new(format!("more than 20 keys after page {pages}")));
            };
            kvs.extend(page.kvs);
            pages += 1;
            ensure_eq!(page.more, expected_remaining > 0, "more on page {pages}");
            ensure_eq!(page.remaining, (expected_remaining > 0).then_some(expected_remaining as i64), "remaining on page {pages}");
            if !page.more {
                break;
            }
            tokio::task::yield_now().await;
        }
        Ok::<Vec<KeyValue>, Failure>(kvs)
    };
    let (written, paged) = tokio::join!(writer, pager);
    written?;
    let paged = paged?;
    let keys: Vec<String> = paged.iter().map(|kv| kv.key.clone()).collect();
    ensure_eq!(keys, (0..40).step_by(2).map(key).collect::<Vec<_>>(), "keys of all pages");
    let whole = store.list(prefix, ListOptions { revision: Some(snapshot), ..ListOptions::default() }).await?;
    ensure_eq!(paged, whole.kvs, "all pages against one list at the snapshot");
    let latest = store.list(prefix, ListOptions::default()).await?;
    ensure!(latest.kvs != whole.kvs, "the writes did not change the latest list");
    Ok(())
}

/// A watch from a revision replays the events after it, with previous values, then follows new
/// writes; a watch from 0 sees only new writes.
pub async fn watch_replays_then_follows_live(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/watch/";
    let a = format!("{prefix}a");
    let r0 = store.current_revision().await?;
    let a1 = store.create(&a, bytes("a1")).await?;
    let a2 = store.update(&a, bytes("a2"), a1.mod_revision).await?;
    let b1 = store.create(&format!("{prefix}b"), bytes("b1")).await?;

    let mut from_start = store.watch(prefix, r0).await?;
    let mut from_middle = store.watch(prefix, a2.mod_revision).await?;
    let mut from_now = store.watch(prefix, 0).await?;
    let mut from_current = store.watch(prefix, b1.mod_revision).await?;
    ensure_eq!(next_event(&mut from_start, "replayed create").await?, Event::Put { kv: a1.clone(), prev: None }, "replayed create");
    ensure_eq!(next_event(&mut from_start, "replayed update").await?, Event::Put { kv: a2.clone(), prev: Some(a1) }, "replayed update");
    let b_created = Event::Put { kv: b1.clone(), prev: None };
    ensure_eq!(next_event(&mut from_start, "replayed b").await?, b_created, "replayed b");
    ensure_eq!(next_event(&mut from_middle, "replayed b").await?, b_created, "replay from the middle");
    expect_quiet(&mut from_now, "a watch from now before any write").await?;
    expect_quiet(&mut from_current, "a watch from the current revision before any write").await?;

    let (_, deleted_at) = store.delete(&a, Some(a2.mod_revision)).await?;
    let deleted = Event::Delete { prev: a2, revision: deleted_at };
    for (watch, name) in [
        (&mut from_start, "from the start"),
        (&mut from_middle, "from the middle"),
        (&mut from_now, "from now"),
        (&mut from_current, "from the current revision"),
    ] {
        ensure_eq!(next_event(watch, "a live delete").await?, deleted, "live delete seen by the watch {name}");
    }
    let b2 = store.update(&b1.key, bytes("b2"), b1.mod_revision).await?;
    ensure_eq!(next_event(&mut from_now, "a live update").await?, Event::Put { kv: b2, prev: Some(b1) }, "live update");
    Ok(())
}

/// A watch sees only keys under its prefix (a string prefix: `/a/` does not match `/ab/`).
pub async fn watch_filters_by_prefix(store: &dyn Storage) -> Outcome {
    let base = "/conformance/prefix/";
    let r0 = store.current_revision().await?;
    let mut narrow = store.watch(&format!("{base}a/"), 0).await?;
    let mut wide = store.watch(base, 0).await?;
    let keys = ["a/1", "ab/1", "b/1", "a/2", "a"];
    for key in keys {
        store.create(&format!("{base}{key}"), bytes(key)).await?;
    }
    store.create("/conformance/prefiy/a/1", bytes("outside")).await?;
    for (i, key) in keys.iter().enumerate() {
        let event = next_event(&mut wide, "an event under the wide prefix").await?;
        ensure_eq!((event.key(), event.revision()), (format!("{base}{key}").as_str(), r0 + 1 + i as i64), "wide");
    }
    for (key, revision) in [("a/1", r0 + 1), ("a/2", r0 + 4)] {
        let event = next_event(&mut narrow, "an event under the narrow prefix").await?;
        ensure_eq!((event.key(), event.revision()), (format!("{base}{key}").as_str(), revision), "narrow");
    }
    expect_quiet(&mut narrow, "the narrow watch after its keys").await?;
    expect_quiet(&mut wide, "the wide watch after its keys").await?;
    // Replayed history is filtered the same way.
    let mut replay = store.watch(&format!("{base}a/"), r0).await?;
    for revision in [r0 + 1, r0 + 4] {
        ensure_eq!(next_event(&mut replay, "a replayed event").await?.revision(), revision, "replayed narrow");
    }
    expect_quiet(&mut replay, "the replaying narrow watch").await?;
    Ok(())
}

/// Deleting a key and creating it again gives it a new create revision, and watchers see
/// create, delete, create.
pub async fn recreate_gets_a_new_create_revision(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/recreate/";
    let key = format!("{prefix}a");
    let r0 = store.current_revision().await?;
    let first = store.create(&key, bytes("first")).await?;
    let (prev, deleted_at) = store.delete(&key, Some(first.mod_revision)).await?;
    ensure_eq!(prev, first, "deleted key-value");
    let second = store.create(&key, bytes("second")).await?;
    ensure!(second.create_revision > deleted_at, "create revision {} not after the delete", second.create_revision);
    ensure_eq!(second.create_revision, second.mod_revision, "revisions of the re-created key");
    ensure_err!(
        store.update(&key, bytes("x"), first.mod_revision).await,
        StorageError::Conflict { .. },
        "update against the deleted incarnation"
    );
    let mut watch = store.watch(prefix, r0).await?;
    let expected = [
        Event::Put { kv: first.clone(), prev: None },
        Event::Delete { prev: first, revision: deleted_at },
        Event::Put { kv: second, prev: None },
    ];
    for (i, event) in expected.into_iter().enumerate() {
        ensure_eq!(next_event(&mut watch, "a recreate event").await?, event, "event {i}");
    }
    Ok(())
}

/// Many writers race with watches being created at random moments, from 0, from the current
/// revision, from a little and from much earlier (so that catching up from history and switching
/// to live events race with the writes): every watch sees exactly the events after its start, in
/// order, identical to the history. Concurrent compare-and-swap increments of one key lose
/// nothing.
pub async fn watch_has_no_gap_under_concurrent_writers(store: &dyn Storage) -> Outcome {
    const WRITERS: usize = 8;
    const WRITES: usize = 25;
    /// Each writer increments the shared key on every fifth of its updates (5, 10, 15, 20).
    const INCREMENTS: usize = 4;
    const WATCHERS: usize = 30;
    let prefix = "/conformance/nogap/";
    let shared = format!("{prefix}shared");
    let done = format!("{prefix}done");
    store.create(&shared, bytes("0")).await?;
    let base = store.current_revision().await?;
    let total = (WRITERS * (WRITES + INCREMENTS)) as i64;
    let started = AtomicUsize::new(0);
    let last_write = AtomicI64::new(0);

    let writers = (0..WRITERS).map(|w| {
        let key = format!("{prefix}w{w}");
        let shared = shared.as_str();
        Box::pin(async move {
            let mut kv = store.create(&key, bytes("0")).await?;
            for i in 1..WRITES - 1 {
                kv = store.update(&key, bytes(&i.to_string()), kv.mod_revision).await?;
                if i % 5 == 0 {
                    increment(store, shared).await?;
                }
                tokio::task::yield_now().await;
            }
            store.delete(&key, Some(kv.mod_revision)).await?;
            Ok::<(), Failure>(())
        })
    });
    let writing = async {
        for result in futures_util::future::join_all(writers).await {
            result?;
        }
        last_write.store(store.current_revision().await?, Ordering::SeqCst);
        // Only when every watch is open may the closing write go out, or a watch from 0 would wait
        // for it forever.
        wait_until(|| async { Ok(started.load(Ordering::SeqCst) == WATCHERS) }, "all watches to start").await?;
        store.create(&done, bytes("done")).await?;
        Ok::<(), Failure>(())
    };

    let watchers = (0..WATCHERS).map(|j| {
        let started = &started;
        let done = done.as_str();
        Box::pin(async move {
            // Spread the watches over the writes.
            let threshold = base + total * j as i64 / WATCHERS as i64;
            wait_until(|| async { Ok(store.current_revision().await? >= threshold) }, "the writes to progress").await?;
            let seen = store.current_revision().await?;
            let from = match j % 5 {
                0 => 0,
                1 => seen,
                2 => (seen - 3).max(base),
                3 => (seen - 40).max(base),
                _ => base,
            };
            let mut watch = store.watch(prefix, from).await?;
            started.fetch_add(1, Ordering::SeqCst);
            let events = collect_until(&mut watch, done).await?;
            Ok::<(i64, i64, Vec<Event>), Failure>((from, seen, events))
        })
    });
    let (written, watched) = tokio::join!(writing, futures_util::future::join_all(watchers));
    written?;

    let mut reference_watch = store.watch(prefix, base).await?;
    let reference = collect_until(&mut reference_watch, &done).await?;
    let revisions: Vec<Revision> = reference.iter().map(Event::revision).collect();
    let last = last_write.load(Ordering::SeqCst);
    ensure_eq!(last, base + total, "revision after all writes (writes outside the check?)");
    ensure_eq!(revisions, (base + 1..=last + 1).collect::<Vec<_>>(), "history revisions");
    for (j, result) in watched.into_iter().enumerate() {
        let (from, seen, events) = result?;
        let Some(first) = events.first() else {
            return Err(Failure::new(format!("watcher {j} saw no events")));
        };
        if from == 0 {
            ensure!(first.revision() > seen, "watcher {j} from now saw revision {} <= {seen}", first.revision());
        } else {
            ensure_eq!(first.revision(), from + 1, "first event of watcher {j} from {from}");
        }
        let expected = usize::try_from(first.revision() - base - 1).ok().and_then(|offset| reference.get(offset..));
        let Some(expected) = expected else {
            return Err(Failure::new(format!("watcher {j} saw revision {} outside the history", first.revision())));
        };
        // The first event that differs, whole: revisions alone may all agree.
        let differs = events.iter().zip(expected).find(|(seen, want)| seen != want);
        ensure!(
            events.as_slice() == expected,
            "watcher {j} (from {from}) saw {:?}, history has {:?}; first difference: {differs:?}",
            events.iter().map(Event::revision).collect::<Vec<_>>(),
            expected.iter().map(Event::revision).collect::<Vec<_>>()
        );
    }
    let counter = store.get(&shared).await?.map(|kv| kv.value);
    ensure_eq!(counter, Some(bytes(&(WRITERS * INCREMENTS).to_string())), "shared counter");
    Ok(())
}

/// A watcher that reads nothing does not hold writers up; what it reads afterwards is either
/// every event or a gap-free beginning of them followed by an error.
pub async fn slow_watchers_do_not_block_writers(store: &dyn Storage) -> Outcome {
    const WRITES: i64 = 200;
    let prefix = "/conformance/slow/";
    let mut watch = store.watch(prefix, 0).await?;
    let r0 = store.current_revision().await?;
    for i in 0..WRITES {
        let key = format!("{prefix}{i:04}");
        match tokio::time::timeout(WAIT, store.create(&key, bytes("x"))).await {
            Ok(result) => {
                result?;
            }
            Err(_) => return Err(Failure::new(format!("write {i} blocked behind a watcher that does not read"))),
        }
    }
    let mut expected = r0 + 1;
    while expected <= r0 + WRITES {
        match tokio::time::timeout(WAIT, watch.next()).await {
            Err(_) => return Err(Failure::new(format!("timed out waiting for revision {expected}"))),
            Ok(None) => return Err(Failure::new(format!("watch ended without an error at revision {expected}"))),
            Ok(Some(Err(_))) => {
                ensure!(watch.next().await.is_none(), "the watch went on after its error");
                return Ok(());
            }
            Ok(Some(Ok(event))) => {
                ensure_eq!(event.revision(), expected, "revision of the next event");
                expected += 1;
            }
        }
    }
    Ok(())
}

/// Writes over etcd's default request limit (1.5 MiB) fail with `RequestTooLarge` naming the
/// key and its size, change nothing and bump no revision; a write well under it succeeds.
pub async fn too_large_writes_are_refused(store: &dyn Storage) -> Outcome {
    let key = "/conformance/size/a";
    let r0 = store.current_revision().await?;
    let too_large = |size: usize| Bytes::from(vec![b'x'; size]);
    let is = |size: usize| move |error: &StorageError| matches!(error, StorageError::RequestTooLarge { key: k, size: s } if k == key && *s == key.len() + size);
    for size in [MAX_REQUEST_BYTES, 3 * 1024 * 1024] {
        let created = store.create(key, too_large(size)).await;
        ensure!(created.as_ref().is_err_and(is(size)), "create of {size} bytes: {:?}", created.map(|kv| kv.mod_revision));
        let created = store.create_with_ttl(key, too_large(size), Duration::from_secs(60)).await;
        ensure!(created.as_ref().is_err_and(is(size)), "create with a TTL of {size} bytes: {:?}", created.map(|kv| kv.mod_revision));
    }
    ensure_eq!(store.current_revision().await?, r0, "revision after refused creates");
    ensure_eq!(store.get(key).await?, None, "get after refused creates");
    let fits = store.create(key, too_large(1024 * 1024)).await?;
    let updated = store.update(key, too_large(MAX_REQUEST_BYTES), fits.mod_revision).await;
    ensure!(updated.as_ref().is_err_and(is(MAX_REQUEST_BYTES)), "update too large: {:?}", updated.map(|kv| kv.mod_revision));
    let updated = store.update_with_ttl(key, too_large(MAX_REQUEST_BYTES), fits.mod_revision, Duration::from_secs(60)).await;
    ensure!(updated.as_ref().is_err_and(is(MAX_REQUEST_BYTES)), "update with a TTL too large: {:?}", updated.map(|kv| kv.mod_revision));
    ensure_eq!(store.current_revision().await?, fits.mod_revision, "revision after refused updates");
    ensure!(store.get(key).await? == Some(fits.clone()), "the value changed after refused updates");
    store.delete(key, Some(fits.mod_revision)).await?;
    Ok(())
}

/// Keys written with a TTL are deleted once it has passed, as etcd deletes the keys of an
/// expired lease: each at a new revision after the last write, reported to watchers as a
/// deletion of the key's last value and kept in history. A later write replaces the deadline:
/// without TTL the key stays, with a longer TTL it stays longer, with a shorter one it goes
/// sooner. Waits for etcd's lease granularity (whole seconds, at least the minimum TTL etcd
/// grants), so it takes a few seconds.
pub async fn keys_expire_after_their_ttl(store: &dyn Storage) -> Outcome {
    const SHORT: Duration = Duration::from_secs(1);
    const LONG: Duration = Duration::from_secs(600);
    let prefix = "/conformance/ttl/";
    let key = |k: &str| format!("{prefix}{k}");
    let r0 = store.current_revision().await?;
    let mut watch = store.watch(prefix, r0).await?;
    let kept = store.create_with_ttl(&key("kept"), bytes("1"), SHORT).await?;
    let extended = store.create_with_ttl(&key("extended"), bytes("1"), SHORT).await?;
    let shortened = store.create_with_ttl(&key("shortened"), bytes("1"), LONG).await?;
    let plain = store.create(&key("plain"), bytes("1")).await?;
    let expiring = store.create_with_ttl(&key("expiring"), bytes("1"), SHORT).await?;
    let kept = store.update(&key("kept"), bytes("2"), kept.mod_revision).await?;
    let extended = store.update_with_ttl(&key("extended"), bytes("2"), extended.mod_revision, LONG).await?;
    let shortened = store.update_with_ttl(&key("shortened"), bytes("2"), shortened.mod_revision, SHORT).await?;
    let written = shortened.mod_revision;
    ensure_eq!(written, r0 + 8, "revision of the last write");
    for revision in r0 + 1..=written {
        ensure_eq!(next_event(&mut watch, "a write").await?.revision(), revision, "revision of a write");
    }
    let mut deleted = BTreeMap::new();
    for _ in 0..2 {
        match next_event(&mut watch, "an expiry").await? {
            Event::Delete { prev, revision } => {
                deleted.insert(prev.key.clone(), (prev, revision));
            }
            other => return Err(Failure::new(format!("expected an expiry, got {other:?}"))),
        }
    }
    let last = |k: &str| deleted.get(&key(k)).map(|(prev, _)| prev.clone());
    ensure_eq!(last("expiring"), Some(expiring.clone()), "the expired key's last value");
    ensure_eq!(last("shortened"), Some(shortened.clone()), "the shortened key's last value");
    let mut revisions: Vec<Revision> = deleted.values().map(|(_, revision)| *revision).collect();
    revisions.sort_unstable();
    ensure_eq!(revisions, vec![written + 1, written + 2], "revisions of the expiries");
    // The first deadlines of `kept` and `extended` were earlier than `expiring`'s.
    expect_quiet(&mut watch, "the watch after the expiries").await?;
    ensure_eq!(store.current_revision().await?, written + 2, "revision after the expiries");
    ensure_eq!(store.get(&key("expiring")).await?, None, "get of an expired key");
    let listed = store.list(prefix, ListOptions::default()).await?;
    ensure_eq!(listed.kvs, vec![extended.clone(), kept, plain], "keys after the expiries");
    let before = store.list(prefix, ListOptions { revision: Some(written), ..ListOptions::default() }).await?;
    ensure_eq!(before.kvs.len(), 5, "keys at the revision before the expiries");
    let mut replay = store.watch(prefix, written).await?;
    for _ in 0..2 {
        let event = next_event(&mut replay, "a replayed expiry").await?;
        let expected = deleted.get(event.key()).map(|(prev, revision)| Event::Delete { prev: prev.clone(), revision: *revision });
        ensure_eq!(Some(event), expected, "replayed expiry");
    }
    // Nothing may expire during a later check.
    store.delete(&key("extended"), Some(extended.mod_revision)).await?;
    Ok(())
}

/// Compaction drops history up to a revision: lists and watches before it fail with
/// `Compacted`, at or after it they work, current values stay.
pub async fn compaction(store: &dyn Storage) -> Outcome {
    let prefix = "/conformance/compact/";
    let a = format!("{prefix}a");
    let r0 = store.current_revision().await?;
    let a1 = store.create(&a, bytes("a1")).await?;
    let a2 = store.update(&a, bytes("a2"), a1.mod_revision).await?;
    let b1 = store.create(&format!("{prefix}b"), bytes("b1")).await?;
    let at = |revision| ListOptions { revision: Some(revision), ..ListOptions::default() };

    store.compact(a2.mod_revision).await?;
    let compacted = a2.mod_revision;
    ensure_eq!(store.compacted_revision().await?, compacted, "compacted revision");
    // At most one write: upstream's compactor on etcd records the compacted revision in
    // `compact_rev_key` (outside every prefix) so that replicas compact once.
    let after = store.current_revision().await?;
    ensure!(after == b1.mod_revision || after == b1.mod_revision + 1, "compaction wrote {} times", after - b1.mod_revision);
    ensure_err!(
        store.watch(prefix, a1.mod_revision).await,
        StorageError::Compacted { requested, compacted: c } if requested == a1.mod_revision && c == compacted,
        "watch from before the compaction"
    );
    ensure_err!(store.watch(prefix, r0).await, StorageError::Compacted { .. }, "watch from long before");
    ensure_err!(
        store.list(prefix, at(a1.mod_revision)).await,
        StorageError::Compacted { requested, compacted: c } if requested == a1.mod_revision && c == compacted,
        "list before the compaction"
    );
    ensure_eq!(store.list(prefix, at(compacted)).await?.kvs, vec![a2.clone()], "list at the compacted revision");
    let mut watch = store.watch(prefix, compacted).await?;
    ensure_eq!(
        next_event(&mut watch, "the event after the compaction").await?,
        Event::Put { kv: b1.clone(), prev: None },
        "watch from the compacted revision"
    );
    ensure_eq!(store.get(&a).await?, Some(a2.clone()), "current value after compaction");
    ensure_eq!(store.list(prefix, ListOptions::default()).await?.kvs, vec![a2, b1], "latest list");
    ensure_err!(store.compact(a1.mod_revision).await, StorageError::Compacted { .. }, "compacting backwards");
    ensure_err!(store.compact(compacted).await, StorageError::Compacted { .. }, "compacting again");
    let current = store.current_revision().await?;
    ensure_err!(store.compact(current + 1).await, StorageError::FutureRevision { .. }, "compacting the future");
    store.compact(current).await?;
    ensure_eq!(store.list(prefix, at(current)).await?.kvs.len(), 2, "list at a fully compacted revision");
    let mut live = store.watch(prefix, current).await?;
    let c1 = store.create(&format!("{prefix}c"), bytes("c1")).await?;
    ensure_eq!(next_event(&mut watch, "a live event").await?, Event::Put { kv: c1.clone(), prev: None }, "old watch");
    ensure_eq!(next_event(&mut live, "a live event").await?, Event::Put { kv: c1, prev: None }, "new watch");
    Ok(())
}

fn bytes(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// `GuaranteedUpdate`'s loop: read, compute, compare-and-swap, retry from the conflict's
/// current value.
async fn increment(store: &dyn Storage, key: &str) -> Outcome {
    let mut current = store.get(key).await?.ok_or_else(|| Failure::new(format!("{key} is missing")))?;
    for _ in 0..1000 {
        let n: u64 = std::str::from_utf8(&current.value).ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        ensure!(n != u64::MAX, "{key} holds {:?}, not a counter", current.value);
        match store.update(key, bytes(&(n + 1).to_string()), current.mod_revision).await {
            Ok(_) => return Ok(()),
            Err(StorageError::Conflict { current: now, .. }) => current = now,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Failure::new(format!("1000 conflicts in a row on {key}")))
}

/// The next event, failing on an error, the end of the watch, or a wait longer than [`WAIT`].
async fn next_event(watch: &mut WatchStream, what: &str) -> Result<Event, Failure> {
    match tokio::time::timeout(WAIT, watch.next()).await {
        Err(_) => Err(Failure::new(format!("timed out waiting for {what}"))),
        Ok(None) => Err(Failure::new(format!("the watch ended while waiting for {what}"))),
        Ok(Some(Err(error))) => Err(Failure::new(format!("the watch failed while waiting for {what}: {error}"))),
        Ok(Some(Ok(event))) => Ok(event),
    }
}

/// Fails if the watch yields anything within a short while.
async fn expect_quiet(watch: &mut WatchStream, what: &str) -> Outcome {
    match tokio::time::timeout(Duration::from_millis(100), watch.next()).await {
        Err(_) => Ok(()),
        Ok(item) => Err(Failure::new(format!("{what}: expected no event, got {item:?}"))),
    }
}

/// Events up to and including the first one for `key`.
async fn collect_until(watch: &mut WatchStream, key: &str) -> Result<Vec<Event>, Failure> {
    let mut events = Vec::new();
    loop {
        let event = next_event(watch, &format!("events up to {key}")).await?;
        let last = event.key() == key;
        events.push(event);
        if last {
            return Ok(events);
        }
    }
}

/// Polls `condition` every millisecond for at most [`WAIT`].
async fn wait_until<F, Fut>(condition: F, what: &str) -> Outcome
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<bool, Failure>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition().await? {
        ensure!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}
