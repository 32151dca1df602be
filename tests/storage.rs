//! The storage conformance suite against `EmbeddedStore`, and what only a store on disk can show:
//! reopening, concurrent writers, and surviving `kill -9`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kapi::storage::{EmbeddedOptions, EmbeddedStore, Event, ListOptions, Revision, Storage, StorageError, WatchStream, conformance};
use tempfile::TempDir;

fn fresh() -> (TempDir, EmbeddedStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path().join("kapi.redb")).unwrap();
    (dir, store)
}

async fn next(watch: &mut WatchStream) -> Event {
    tokio::time::timeout(Duration::from_secs(20), watch.next()).await.expect("timed out").expect("ended").unwrap()
}

/// One test per conformance check, each on a fresh store, so that a failure names its check.
macro_rules! conformance_tests {
    ($($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let (_dir, store) = fresh();
                if let Err(failure) = conformance::$check(&store).await {
                    panic!("{failure}");
                }
            }
        )*
    };
}

conformance_tests!(
    empty_store,
    revisions_increase_by_one_per_write,
    create_and_get,
    update_compares_and_swaps,
    delete_compares_and_swaps,
    invalid_input_is_rejected,
    list_is_sorted_and_bounded_by_prefix,
    list_at_revision,
    list_paging_is_stable_across_writes,
    watch_replays_then_follows_live,
    watch_filters_by_prefix,
    recreate_gets_a_new_create_revision,
    watch_has_no_gap_under_concurrent_writers,
    slow_watchers_do_not_block_writers,
    compaction,
);

/// The same checks through the watch cache over the embedded store, each on a fresh store:
/// watches are served by the cache, reads and writes pass through to the store.
mod cached {
    use kapi::storage::cache::{WatchCache, WatchCacheOptions};
    use kapi::storage::conformance;
    use std::sync::Arc;

    fn fresh() -> (tempfile::TempDir, WatchCache) {
        let (dir, store) = super::fresh();
        (dir, WatchCache::new(Arc::new(store), WatchCacheOptions::default()))
    }

    macro_rules! cached_conformance_tests {
        ($($check:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    let (_dir, store) = fresh();
                    if let Err(failure) = conformance::$check(&store).await {
                        panic!("{failure}");
                    }
                }
            )*
        };
    }

    cached_conformance_tests!(
        empty_store,
        revisions_increase_by_one_per_write,
        create_and_get,
        update_compares_and_swaps,
        delete_compares_and_swaps,
        invalid_input_is_rejected,
        list_is_sorted_and_bounded_by_prefix,
        list_at_revision,
        list_paging_is_stable_across_writes,
        watch_replays_then_follows_live,
        watch_filters_by_prefix,
        recreate_gets_a_new_create_revision,
        watch_has_no_gap_under_concurrent_writers,
        slow_watchers_do_not_block_writers,
        compaction,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn run_all_through_the_cache() {
        let (_dir, store) = fresh();
        if let Err(failure) = conformance::run_all(&store).await {
            panic!("{failure}");
        }
    }
}

/// The whole suite on one store, as `run_all` promises works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_run_all_on_one_store() {
    let (_dir, store) = fresh();
    if let Err(failure) = conformance::run_all(&store).await {
        panic!("{failure}");
    }
}

/// With a small buffer the slow-watcher check takes its overflow path, and the overflow is the
/// embedded store's `WatchOverflow` after exactly `watch_buffer` events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_overflows_its_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open_with(dir.path().join("kapi.redb"), EmbeddedOptions { watch_buffer: 16 }).unwrap();
    if let Err(failure) = conformance::slow_watchers_do_not_block_writers(&store).await {
        panic!("{failure}");
    }
    let mut watch = store.watch("/slow/", 0).await.unwrap();
    let r0 = store.current_revision().await.unwrap();
    for i in 0..40 {
        store.create(&format!("/slow/{i}"), Bytes::new()).await.unwrap();
    }
    for i in 1..=16 {
        assert_eq!(next(&mut watch).await.revision(), r0 + i);
    }
    assert!(matches!(watch.next().await, Some(Err(StorageError::WatchOverflow { capacity: 16 }))));
    assert!(watch.next().await.is_none());
}

/// Closing and reopening keeps the revision, the data, the compaction point and the history: a
/// watch from an old revision replays exactly what it replayed before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_restores_revision_data_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kapi.redb");
    let store = EmbeddedStore::open(&path).unwrap();
    let a1 = store.create("/r/a", Bytes::from_static(b"a1")).await.unwrap();
    store.create("/r/b", Bytes::from_static(b"b1")).await.unwrap();
    store.compact(a1.mod_revision).await.unwrap();
    let middle = store.current_revision().await.unwrap();
    store.update("/r/a", Bytes::from_static(b"a2"), a1.mod_revision).await.unwrap();
    store.delete("/r/b", None).await.unwrap();
    store.create("/r/c", Bytes::from_static(b"c1")).await.unwrap();
    store.create("/other/x", Bytes::from_static(b"x")).await.unwrap();
    let revision = store.current_revision().await.unwrap();
    let latest = store.list("/", ListOptions::default()).await.unwrap();
    let old = store.list("/r/", ListOptions { revision: Some(middle), ..ListOptions::default() }).await.unwrap();
    let mut watch = store.watch("/r/", middle).await.unwrap();
    let mut replayed = Vec::new();
    for _ in 0..3 {
        replayed.push(next(&mut watch).await);
    }
    drop(watch);
    drop(store);

    let store = EmbeddedStore::open(&path).unwrap();
    assert_eq!(store.current_revision().await.unwrap(), revision);
    assert_eq!(store.compacted_revision().await.unwrap(), a1.mod_revision);
    assert_eq!(store.list("/", ListOptions::default()).await.unwrap(), latest);
    let old_again = store.list("/r/", ListOptions { revision: Some(middle), ..ListOptions::default() }).await.unwrap();
    assert_eq!(old_again, old);
    let mut watch = store.watch("/r/", middle).await.unwrap();
    for event in &replayed {
        assert_eq!(&next(&mut watch).await, event);
    }
    let d1 = store.create("/r/d", Bytes::from_static(b"d1")).await.unwrap();
    assert_eq!(d1.mod_revision, revision + 1, "revisions go on where they stopped");
    assert_eq!(next(&mut watch).await, Event::Put { kv: d1, prev: None }, "and nothing else was replayed");
    assert!(matches!(store.watch("/r/", a1.mod_revision - 1).await, Err(StorageError::Compacted { .. })));
}

/// 16 tasks create 50 keys each at once: every acknowledged create is there, and the revisions
/// handed out are unique and dense.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_get_unique_dense_revisions() {
    let (_dir, store) = fresh();
    let r0 = store.current_revision().await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..16 {
        let store = store.clone();
        tasks.spawn(async move {
            let mut created = Vec::new();
            for i in 0..50 {
                let key = format!("/c/{t:02}/{i:02}");
                let kv = store.create(&key, Bytes::from(key.clone())).await.unwrap();
                created.push(kv);
            }
            created
        });
    }
    let mut acknowledged = Vec::new();
    while let Some(created) = tasks.join_next().await {
        acknowledged.extend(created.unwrap());
    }
    let mut revisions: Vec<Revision> = acknowledged.iter().map(|kv| kv.mod_revision).collect();
    revisions.sort_unstable();
    assert_eq!(revisions, (r0 + 1..=r0 + 800).collect::<Vec<_>>());
    assert_eq!(store.current_revision().await.unwrap(), r0 + 800);
    acknowledged.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(store.list("/c/", ListOptions::default()).await.unwrap().kvs, acknowledged);
}

const CRASH_DIR: &str = "KAPI_STORAGE_CRASH_DIR";

/// How many tasks write at once in the crash child: `1` writes one key at a time, more make the
/// store's commits carry batches of writes.
const CRASH_WRITERS: &str = "KAPI_STORAGE_CRASH_WRITERS";

/// The writer that the kill -9 tests run in a child process and kill; a no-op when run as a
/// normal test. Prints `acked <key> <revision>` for every acknowledged create.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child_writer() {
    let Some(dir) = std::env::var_os(CRASH_DIR) else { return };
    let writers: usize = std::env::var(CRASH_WRITERS).ok().and_then(|w| w.parse().ok()).unwrap_or(1);
    let store = EmbeddedStore::open(std::path::Path::new(&dir).join("kapi.redb")).unwrap();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0.. {
                    let key = format!("/crash/{w:02}-{i:06}");
                    let kv = store.create(&key, Bytes::from(key.clone())).await.unwrap();
                    println!("acked {key} {}", kv.mod_revision);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// Runs `crash_child_writer` with `writers` tasks and kills it with SIGKILL (no clean shutdown,
/// no flush) once it has acknowledged `count` writes: the store's directory and the
/// acknowledged keys with their revisions.
fn crash_child(writers: usize, count: usize) -> (TempDir, Vec<(String, Revision)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child_writer", "--nocapture", "--test-threads=1"])
        .env(CRASH_DIR, dir.path())
        .env(CRASH_WRITERS, writers.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // The first line also carries libtest's "test crash_child_writer ... ".
        if let Some((_, rest)) = line.split_once("acked ") {
            let (key, revision) = rest.split_once(' ').unwrap();
            acked.push((key.to_owned(), revision.parse::<Revision>().unwrap()));
            if acked.len() == count {
                child.kill().unwrap(); // SIGKILL on Unix
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(acked.len(), count, "the child stopped before acknowledging {count} writes");
    (dir, acked)
}

/// Every acknowledged write is in the reopened store at its revision, and history replays
/// every write from the first revision on, gap-free, acknowledged or not (a write may be
/// durable before its answer is printed).
async fn check_after_crash(dir: &TempDir, mut acked: Vec<(String, Revision)>) {
    let store = EmbeddedStore::open(dir.path().join("kapi.redb")).unwrap();
    acked.sort_by_key(|(_, revision)| *revision);
    let current = store.current_revision().await.unwrap();
    assert!(current >= acked.last().unwrap().1, "revision went back to {current}");
    for (key, revision) in &acked {
        let kv = store.get(key).await.unwrap().unwrap_or_else(|| panic!("acknowledged {key} was lost"));
        assert_eq!(kv.mod_revision, *revision);
        assert_eq!(kv.value, key.as_bytes());
    }
    // The store works after recovery, and its history is intact.
    store.create("/after-crash", Bytes::new()).await.unwrap();
    let mut watch = store.watch("/crash/", 1).await.unwrap();
    let mut acked = acked.into_iter().peekable();
    for revision in 2..=current {
        let event = next(&mut watch).await;
        assert_eq!(event.revision(), revision, "history has a gap");
        if acked.peek().is_some_and(|(_, r)| *r == revision) {
            assert_eq!(event.key(), acked.next().unwrap().0);
        }
    }
    assert!(acked.next().is_none());
}

/// Every write the store acknowledged is there after the process is killed with SIGKILL
/// mid-stream and the store reopened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let (dir, acked) = crash_child(1, 60);
    check_after_crash(&dir, acked).await;
}

/// The same with 16 writers at once, whose writes share commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_batched_writes_survive_kill_9() {
    let (dir, acked) = crash_child(16, 400);
    check_after_crash(&dir, acked).await;
}
