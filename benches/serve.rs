//! `cargo bench --bench serve`: how fast kapi serves, each figure set against a baseline measured
//! in the same run on the same machine, so that the ratios say where time goes rather than how
//! fast this machine is.
//!
//! 1. store: `EmbeddedStore::create` against raw redb commits with the same durability;
//! 2. start-up of `kapi serve` to the first `/readyz` 200, fresh and restarted;
//! 3. idle resident memory;
//! 4. GET of one object over keep-alive HTTPS, consistent and with `resourceVersion=0`, against
//!    a bare hyper server (same rustls settings) answering the same bytes;
//! 5. creating 10,000 pods with concurrent clients, and the memory that takes against the goal
//!    of their stored protobuf bytes × 1.5 + 40 MiB;
//! 6. LIST of those pods against `serde_json::to_vec` of the same list, and the memory after
//!    five of them against 1.5 × that goal;
//! 7. creating ConfigMaps with concurrent clients on the embedded store against kapi on a local
//!    etcd (`etcd` on the PATH, as `tests/run` installs it), and against raw redb committing the
//!    same number of values of the stored size in batches of the size the store's group commit
//!    reached (read from its `/metrics` counters); and the CPU time one create costs the servers
//!    (kapi, or kapi and etcd), since they share the machine's cores with the clients. Three
//!    alternating rounds, medians reported: fsync times on a shared disk drift between runs.
//!
//! 10. with `KAPI_BENCH_BASELINE_BIN=<path>` (an older build of `kapi`, such as the commit
//!     before a change to the write path): ConfigMap and Pod creates/s, and the CPU one create
//!     costs kapi, on the embedded store and on a fresh local etcd (when `etcd` is on the
//!     PATH), against that build, in four rounds on fresh servers, each build first in two of
//!     them, so that the ratios say what the change did to writes on both stores.
//!     `KAPI_BENCH_SECTION=baseline` runs section 10 alone.
//!
//! `KAPI_BENCH_SECTION=get` runs section 4 alone on a fresh server (for profiling GETs), and
//! `KAPI_BENCH_SECTION=pods` sections 5 and 6 (for the memory they take).
//!
//! `KAPI_BENCH_BIN=<path>` runs the servers from another build of `kapi`.
//!
//! A benchmark, not a test: nothing is asserted about timings. Every loop is bounded in count
//! and in time, and all traffic goes to 127.0.0.1.

#[path = "common/process.rs"]
mod process;

#[path = "../tests/common/etcd.rs"]
#[allow(dead_code)]
mod etcd;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kapi::storage::{EmbeddedStore, Storage};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

// Sizes, counts and time limits.
const STORE_KEYS: usize = 2000;
const STORE_VALUE_BYTES: usize = 1024;
const STORE_TIME_LIMIT: Duration = Duration::from_secs(20);
/// Concurrent writers in the in-process store bench: enough that commits can carry batches.
const STORE_TASKS: usize = 64;
const START_TIME_LIMIT: Duration = Duration::from_secs(30);
/// Starts measured for each start-up row (the median is printed).
const STARTUP_RUNS: usize = 5;
const GET_THREADS: usize = 4;
const GET_WARMUP: usize = 200;
const GET_MAX_PER_THREAD: usize = 200_000;
const GET_DURATION: Duration = Duration::from_secs(4);
const PODS: usize = 10_000;
const CREATE_THREADS: usize = 8;
const CREATE_TIME_LIMIT: Duration = Duration::from_secs(75);
const LIST_REPS: usize = 5;
const LIST_TIME_LIMIT: Duration = Duration::from_secs(30);
const ENCODE_REPS: usize = 5;
const CONFIGMAPS: usize = 5000;
const CONFIGMAP_DATA_BYTES: usize = 256;
const CONFIGMAP_TIME_LIMIT: Duration = Duration::from_secs(60);
const CONFIGMAP_ROUNDS: usize = 3;
const CUSTOM_RESOURCES: usize = 2000;
const CUSTOM_RESOURCE_ROUNDS: usize = 3;
/// Section 10: creates per server and round, and rounds per binary.
const BASELINE_CONFIGMAPS: usize = 5000;
const BASELINE_PODS: usize = 3000;
const BASELINE_ROUNDS: usize = 4;

fn main() -> ExitCode {
    let started = Instant::now();
    match run() {
        Ok(()) => {
            println!("\nbench ran in {:.1} s", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("\nserve bench failed after {:.1} s: {e}", started.elapsed().as_secs_f64());
            ExitCode::FAILURE
        }
    }
}

/// One printed row: what, kapi's figure, the baseline's figure, and kapi ÷ baseline.
struct Row {
    what: String,
    kapi: String,
    baseline: String,
    ratio: String,
}

fn row(what: impl Into<String>, kapi: impl Into<String>) -> Row {
    Row { what: what.into(), kapi: kapi.into(), baseline: String::new(), ratio: String::new() }
}

fn compared(what: impl Into<String>, kapi: impl Into<String>, baseline: impl Into<String>, ratio: f64) -> Row {
    Row { what: what.into(), kapi: kapi.into(), baseline: baseline.into(), ratio: format!("{ratio:.3}") }
}

fn print_table(rows: &[Row]) {
    let w0 = rows.iter().map(|r| r.what.chars().count()).max().unwrap_or(0).max(4);
    let w1 = rows.iter().map(|r| r.kapi.chars().count()).max().unwrap_or(0).max(4);
    let w2 = rows.iter().map(|r| r.baseline.chars().count()).max().unwrap_or(0).max(8);
    println!();
    println!("{:<w0$}  {:>w1$}  {:<w2$}  kapi ÷ baseline", "what", "kapi", "baseline");
    println!("{}", "-".repeat(w0 + w1 + w2 + 21));
    for r in rows {
        println!("{:<w0$}  {:>w1$}  {:<w2$}  {}", r.what, r.kapi, r.baseline, r.ratio);
    }
}

fn run() -> Result<()> {
    let root = tempfile::Builder::new().prefix("kapi-serve-bench").tempdir()?;
    println!("kapi serve bench: {} cores, scratch files in {}", cores(), root.path().display());
    let mut rows = Vec::new();
    // `KAPI_BENCH_SECTION=rbac` runs section 9 alone.
    if std::env::var("KAPI_BENCH_SECTION").as_deref() == Ok("rbac") {
        rows.extend(bench_rbac(root.path())?);
        print_table(&rows);
        return Ok(());
    }
    let baseline_bin = std::env::var("KAPI_BENCH_BASELINE_BIN").ok().filter(|b| !b.is_empty());
    // `KAPI_BENCH_SECTION=get` runs section 4 alone, on a fresh server (for profiling it).
    if std::env::var("KAPI_BENCH_SECTION").as_deref() == Ok("get") {
        let (server, _) = Server::start(&root.path().join("data"), &root.path().join("kapi.log"))?;
        rows.extend(bench_gets(&server, &root.path().join("data"))?);
        server.stop()?;
        print_table(&rows);
        return Ok(());
    }
    // `KAPI_BENCH_SECTION=pods` runs sections 5 and 6 alone, on a fresh server.
    if std::env::var("KAPI_BENCH_SECTION").as_deref() == Ok("pods") {
        let (server, _) = Server::start(&root.path().join("data"), &root.path().join("kapi.log"))?;
        rows.extend(bench_pods(server, &root.path().join("data"))?);
        print_table(&rows);
        return Ok(());
    }
    // `KAPI_BENCH_SECTION=baseline` runs section 10 alone.
    if std::env::var("KAPI_BENCH_SECTION").as_deref() == Ok("baseline") {
        let baseline = baseline_bin.ok_or("KAPI_BENCH_SECTION=baseline needs KAPI_BENCH_BASELINE_BIN")?;
        rows.extend(bench_against_baseline(root.path(), &baseline)?);
        print_table(&rows);
        return Ok(());
    }

    // 1. Store.
    let (store_rate, store_n) = bench_store(&root.path().join("store.redb"))?;
    let (redb_rate, redb_n) = bench_raw_redb(&root.path().join("raw.redb"))?;
    rows.push(compared(
        format!("store creates, sequential, {STORE_VALUE_BYTES} B values"),
        format!("{store_rate:.0} /s ({store_n})"),
        format!("{redb_rate:.0} /s ({redb_n}) raw redb, 1 txn/insert, Immediate"),
        store_rate / redb_rate,
    ));
    let concurrent = bench_store_concurrent(&root.path().join("store-concurrent.redb"))?;
    let batch = concurrent.batch.round().max(1.0) as usize;
    let (redb_rate, redb_n) =
        bench_raw_redb_batched(&root.path().join("raw-batched.redb"), concurrent.load.requests, STORE_VALUE_BYTES, batch)?;
    rows.push(compared(
        format!("store creates, {STORE_TASKS} concurrent tasks, {STORE_VALUE_BYTES} B values"),
        format!("{:.0} /s ({}, {:.1} writes/commit)", concurrent.load.rate(), concurrent.load.requests, concurrent.batch),
        format!("{redb_rate:.0} /s ({redb_n}) raw redb, {batch} inserts/txn, Immediate"),
        concurrent.load.rate() / redb_rate,
    ));
    print_progress(&rows);

    // 2. + 3. Start-up and idle memory.
    // Medians of a few starts each: one start is a few milliseconds of mostly disk and page
    // cache, which other work on the machine moves by as much.
    let log = root.path().join("kapi.log");
    let mut fresh = Vec::new();
    for run in 1..STARTUP_RUNS {
        let (server, elapsed) = Server::start(&root.path().join(format!("data-{run}")), &log)?;
        fresh.push(elapsed);
        server.stop()?;
    }
    let data = root.path().join("data");
    let (server, elapsed) = Server::start(&data, &log)?;
    fresh.push(elapsed);
    std::thread::sleep(Duration::from_secs(1));
    let fresh_rss = server.memory()?;
    server.stop()?;
    let mut restart = Vec::new();
    for _ in 1..STARTUP_RUNS {
        let (server, elapsed) = Server::start(&data, &log)?;
        restart.push(elapsed);
        server.stop()?;
    }
    let (server, elapsed) = Server::start(&data, &log)?;
    restart.push(elapsed);
    std::thread::sleep(Duration::from_secs(1));
    let idle = server.memory()?;
    rows.push(row(format!("start-up to /readyz 200, fresh data dir (median of {STARTUP_RUNS})"), ms(median(fresh))));
    rows.push(row(format!("start-up to /readyz 200, restart (median of {STARTUP_RUNS})"), ms(median(restart))));
    rows.push(row("idle RSS after fresh start (1 s)", mib(fresh_rss.rss_kib)));
    rows.push(row("idle RSS after restart (1 s)", mib(idle.rss_kib)));
    print_progress(&rows);

    // 4. GET of one object against a bare hyper server answering the same bytes.
    rows.extend(bench_gets(&server, &data)?);
    print_progress(&rows);

    // 5. + 6. Create 10,000 pods, then LIST them (the server stops after).
    rows.extend(bench_pods(server, &data)?);
    print_progress(&rows);

    // 7. ConfigMap creates: the embedded store against kapi on etcd and against raw redb, in
    // alternating rounds so that each ratio pairs runs made moments apart (the disk's fsync time
    // and the cores' load on a shared machine drift by several times between runs).
    let mut rounds = Vec::new();
    for round in 0..CONFIGMAP_ROUNDS {
        let dir = root.path().join(format!("configmaps-{round}"));
        std::fs::create_dir_all(&dir)?;
        let embedded = bench_configmaps_embedded(&dir)?;
        let batch = embedded.batch.round().max(1.0) as usize;
        let (raw, _) = bench_raw_redb_batched(&dir.join("raw.redb"), embedded.load.requests, embedded.value_len, batch)?;
        let on_etcd = bench_configmaps_etcd(&dir)?;
        eprintln!(
            "  … ConfigMaps round {round}: embedded {:.0} /s ({:.1} writes/commit), raw redb {raw:.0} /s ({batch}/txn), on etcd {}",
            embedded.load.rate(),
            embedded.batch,
            on_etcd.as_ref().map_or("-".to_owned(), |e| format!("{:.0} /s", e.load.rate())),
        );
        rounds.push(ConfigMapRound { embedded, raw, on_etcd });
    }
    let rate = median_f64(rounds.iter().map(|r| r.embedded.load.rate()).collect());
    let batch = median_f64(rounds.iter().map(|r| r.embedded.batch).collect());
    let what = format!("create {CONFIGMAPS} ConfigMaps, {CREATE_THREADS} keep-alive conns, embedded store");
    let kapi = format!("{rate:.0} /s ({batch:.1} writes/commit)");
    let etcd_rounds: Vec<(&ConfigMapRound, &EtcdConfigMaps)> = rounds.iter().filter_map(|r| Some((r, r.on_etcd.as_ref()?))).collect();
    if etcd_rounds.is_empty() {
        rows.push(row(format!("{what} (no etcd on the PATH: no etcd baseline)"), kapi.clone()));
    } else {
        rows.push(compared(
            what.clone(),
            kapi.clone(),
            format!("{:.0} /s kapi on a local etcd", median_f64(etcd_rounds.iter().map(|(_, e)| e.load.rate()).collect())),
            median_f64(etcd_rounds.iter().map(|(r, e)| r.embedded.load.rate() / e.load.rate()).collect()),
        ));
    }
    rows.push(compared(
        what,
        kapi,
        format!(
            "{:.0} /s raw redb, as many {} B inserts, as many per Immediate txn",
            median_f64(rounds.iter().map(|r| r.raw).collect()),
            rounds[0].embedded.value_len
        ),
        median_f64(rounds.iter().map(|r| r.embedded.load.rate() / r.raw).collect()),
    ));
    // The cores are shared by kapi, etcd and the clients: the CPU one create costs the servers
    // says more than the rates when the cores are the limit.
    let embedded_cpu = median_f64(rounds.iter().map(|r| r.embedded.kapi_cpu_micros as f64 / r.embedded.load.requests as f64).collect());
    if etcd_rounds.is_empty() {
        rows.push(row("CPU per ConfigMap create, embedded store", format!("{embedded_cpu:.0} µs")));
    } else {
        let per_create =
            |cpu: fn(&EtcdConfigMaps) -> u64| median_f64(etcd_rounds.iter().map(|(_, e)| cpu(e) as f64 / e.load.requests as f64).collect());
        let (kapi_cpu, etcd_cpu) = (per_create(|e| e.kapi_cpu_micros), per_create(|e| e.etcd_cpu_micros));
        rows.push(compared(
            "CPU per ConfigMap create, embedded store",
            format!("{embedded_cpu:.0} µs"),
            format!("{:.0} µs on etcd: kapi {kapi_cpu:.0} + etcd {etcd_cpu:.0}", kapi_cpu + etcd_cpu),
            embedded_cpu / (kapi_cpu + etcd_cpu),
        ));
    }

    // 8. A custom resource (unstructured JSON through the same Store) against a ConfigMap of
    // the same data, creates and GETs, alternating on one server.
    rows.extend(bench_custom_resources(root.path())?);
    print_progress(&rows);

    // 9. RBAC: creates and GETs by a user whom a RoleBinding allows (the authorizer's rules
    // evaluated per request) against the admin's (`system:masters`, allowed first).
    rows.extend(bench_rbac(root.path())?);
    print_progress(&rows);

    // 10. Creates against an older build of kapi, when one is given.
    if let Some(baseline) = &baseline_bin {
        rows.extend(bench_against_baseline(root.path(), baseline)?);
        print_progress(&rows);
    }

    print_table(&rows);
    println!("ratios: throughputs (/s) are kapi ÷ baseline, so below 1 is slower; times (ms) are kapi ÷ baseline, so above 1 is slower");
    println!("ConfigMap rows: medians of {CONFIGMAP_ROUNDS} alternating rounds, each ratio the median of the rounds' ratios");
    Ok(())
}

/// Sections 5 and 6: [`PODS`] pods created through `server` (whose data directory is `data`),
/// then listed; the server is stopped after, and the memory rows set against their goals.
fn bench_pods(server: Server, data: &Path) -> Result<Vec<Row>> {
    let pod_path = "/api/v1/namespaces/default/pods";
    let creates =
        bench_creates(&server.tls, server.port, pod_path, PODS, CREATE_TIME_LIMIT, Arc::new(|i| pod_json(&format!("pod-{i:05}"))))?;
    let after_creates = server.memory()?;
    let mut rows = vec![row(
        format!("create pods, {CREATE_THREADS} keep-alive conns"),
        format!("{:.0} /s ({} in {:.1} s)", creates.rate(), creates.requests, creates.elapsed.as_secs_f64()),
    )];

    // LIST against re-serialising the same list in-process.
    let (list_time, list_body) = bench_list(&server.tls, server.port, pod_path)?;
    let value: serde_json::Value = serde_json::from_slice(&list_body)?;
    let items = value["items"].as_array().map_or(0, Vec::len);
    let encode_time = bench_encode(&value)?;
    let after_lists = server.memory()?;
    rows.push(compared(
        format!("LIST {items} pods ({:.1} MB), median of {LIST_REPS}", list_body.len() as f64 / 1e6),
        ms(list_time),
        format!("{} serde_json::to_vec of the same list", ms(encode_time)),
        list_time.as_secs_f64() / encode_time.as_secs_f64(),
    ));
    server.stop()?;
    // The memory goals: with the pods, at most their stored protobuf bytes × 1.5 + 40 MiB;
    // after the LISTs, within 1.5× of that.
    let (pods, stored) = stored_bytes(&data.join("store.redb"), "/registry/pods/")?;
    let goal_kib = stored as f64 * 1.5 / 1024.0 + 40.0 * 1024.0;
    rows.push(compared(
        format!("RSS with {pods} pods ÷ (their protobuf bytes × 1.5 + 40 MiB)"),
        after_creates.describe(),
        format!("{} ({} of protobuf)", mib(goal_kib as u64), mib(stored as u64 / 1024)),
        after_creates.rss_kib as f64 / goal_kib,
    ));
    rows.push(compared(
        "RSS after the LISTs ÷ 1.5 × that",
        after_lists.describe(),
        mib((goal_kib * 1.5) as u64),
        after_lists.rss_kib as f64 / (goal_kib * 1.5),
    ));

    Ok(rows)
}

/// Section 4: GETs of one pod, consistent and with `resourceVersion=0`, against a bare hyper
/// server answering the same bytes with the server's certificate from `data`.
fn bench_gets(server: &Server, data: &Path) -> Result<Vec<Row>> {
    let pod_path = "/api/v1/namespaces/default/pods";
    let mut conn = Conn::connect(&server.tls, server.port)?;
    let created = conn.request("POST", pod_path, &pod_json("bench-get"))?;
    if created.status != 201 {
        return Err(format!("creating pod bench-get: HTTP {}: {}", created.status, created.text()).into());
    }
    let get_path = format!("{pod_path}/bench-get");
    let reference = conn.request("GET", &get_path, b"")?;
    if reference.status != 200 {
        return Err(format!("GET {get_path}: HTTP {}: {}", reference.status, reference.text()).into());
    }
    drop(conn);
    let kapi_get = bench_get(&server.tls, server.port, &get_path, reference.body.len())?;
    // `resourceVersion=0`: any revision will do, so the watch cache (or the store's latest
    // state) answers without a consistent read.
    let cached_path = format!("{get_path}?resourceVersion=0");
    let kapi_cached_get = bench_get(&server.tls, server.port, &cached_path, reference.body.len())?;
    let bare = BareServer::start(&data.join("pki"), &reference)?;
    let bare_get = bench_get(&server.tls, bare.port, &get_path, reference.body.len())?;
    drop(bare);
    Ok(vec![
        compared(
            format!("GET one pod ({} B), consistent, {GET_THREADS} keep-alive conns", reference.body.len()),
            format!("{:.0} req/s", kapi_get.rate()),
            format!("{:.0} req/s bare hyper+rustls, same bytes", bare_get.rate()),
            kapi_get.rate() / bare_get.rate(),
        ),
        compared(
            format!("GET one pod, resourceVersion=0, {GET_THREADS} keep-alive conns"),
            format!("{:.0} req/s", kapi_cached_get.rate()),
            format!("{:.0} req/s bare hyper+rustls, same bytes", bare_get.rate()),
            kapi_cached_get.rate() / bare_get.rate(),
        ),
    ])
}

/// Echoes the rows added since the last call to stderr, so that a slow section shows progress.
fn print_progress(rows: &[Row]) {
    static PRINTED: AtomicUsize = AtomicUsize::new(0);
    for r in &rows[PRINTED.swap(rows.len(), Ordering::Relaxed).min(rows.len())..] {
        eprintln!("  … {}: {} {}", r.what, r.kapi, r.baseline);
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn value_bytes(i: usize) -> Bytes {
    let mut v = vec![b'x'; STORE_VALUE_BYTES];
    let tag = format!("{i:08}");
    v[..tag.len()].copy_from_slice(tag.as_bytes());
    Bytes::from(v)
}

fn store_key(i: usize) -> String {
    format!("/registry/benchmarks/default/key-{i:06}")
}

/// Sequential `EmbeddedStore::create`s: creates per second and how many were done.
fn bench_store(path: &Path) -> Result<(f64, usize)> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let store = EmbeddedStore::open(path)?;
        let values: Vec<(String, Bytes)> = (0..STORE_KEYS).map(|i| (store_key(i), value_bytes(i))).collect();
        let start = Instant::now();
        let mut done = 0;
        for (key, value) in values {
            store.create(&key, value).await?;
            done += 1;
            if start.elapsed() > STORE_TIME_LIMIT {
                break;
            }
        }
        Ok((done as f64 / start.elapsed().as_secs_f64(), done))
    })
}

/// Creates from a load and the store's average group-commit batch during it.
struct BatchedLoad {
    load: Load,
    /// Writes per durable commit, from the store's commit counters.
    batch: f64,
}

/// `STORE_TASKS` tasks creating `STORE_KEYS` keys between them, taking key numbers from a shared
/// counter: what concurrent API requests ask of the store.
fn bench_store_concurrent(path: &Path) -> Result<BatchedLoad> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let store = EmbeddedStore::open(path)?;
        let counters = store.commit_counters();
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let tasks: Vec<_> = (0..STORE_TASKS)
            .map(|_| {
                let (store, next) = (store.clone(), next.clone());
                tokio::spawn(async move {
                    let mut done = 0;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= STORE_KEYS || start.elapsed() > STORE_TIME_LIMIT {
                            return Ok::<_, Error>(done);
                        }
                        store.create(&store_key(i), value_bytes(i)).await?;
                        done += 1;
                    }
                })
            })
            .collect();
        let mut requests = 0;
        for task in tasks {
            requests += task.await??;
        }
        let load = Load { requests, elapsed: start.elapsed() };
        let batch = counters.writes.get() as f64 / counters.commits.get().max(1) as f64;
        Ok(BatchedLoad { load, batch })
    })
}

/// `count` keys with values of `value_len` bytes into a bare redb table, `batch` inserts per
/// write transaction committed with `Durability::Immediate`: redb's own rate at the batch size a
/// store reached.
fn bench_raw_redb_batched(path: &Path, count: usize, value_len: usize, batch: usize) -> Result<(f64, usize)> {
    const TABLE: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("bench");
    let db = redb::Database::create(path)?;
    let value = vec![b'x'; value_len];
    let keys: Vec<String> = (0..count).map(store_key).collect();
    let start = Instant::now();
    let mut done = 0;
    for chunk in keys.chunks(batch.max(1)) {
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        {
            let mut table = txn.open_table(TABLE)?;
            for key in chunk {
                table.insert(key.as_str(), value.as_slice())?;
            }
        }
        txn.commit()?;
        done += chunk.len();
        if start.elapsed() > STORE_TIME_LIMIT {
            break;
        }
    }
    Ok((done as f64 / start.elapsed().as_secs_f64(), done))
}

/// The same keys and values into a bare redb table, one write transaction per insert committed
/// with `Durability::Immediate` (what the embedded store does per write).
fn bench_raw_redb(path: &Path) -> Result<(f64, usize)> {
    const TABLE: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("bench");
    let db = redb::Database::create(path)?;
    let values: Vec<(String, Bytes)> = (0..STORE_KEYS).map(|i| (store_key(i), value_bytes(i))).collect();
    let start = Instant::now();
    let mut done = 0;
    for (key, value) in values {
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::Immediate)?;
        {
            let mut table = txn.open_table(TABLE)?;
            table.insert(key.as_str(), value.as_ref())?;
        }
        txn.commit()?;
        done += 1;
        if start.elapsed() > STORE_TIME_LIMIT {
            break;
        }
    }
    Ok((done as f64 / start.elapsed().as_secs_f64(), done))
}

/// The `kapi` binary the servers run: this build's, or `KAPI_BENCH_BIN` (another build, to
/// compare two versions in alternating runs on a machine whose load varies).
fn kapi_bin() -> String {
    std::env::var("KAPI_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kapi").to_owned())
}

/// A started `kapi serve`, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
    log: PathBuf,
}

struct Memory {
    rss_kib: u64,
    hwm_kib: u64,
    /// Of the resident memory, the anonymous part (heap, stacks) and the file-backed part
    /// (mostly the binary's code, clean and shared).
    anon_kib: u64,
    file_kib: u64,
}

impl Memory {
    fn describe(&self) -> String {
        format!("{} (anon {}, file {}; peak {})", mib(self.rss_kib), mib(self.anon_kib), mib(self.file_kib), mib(self.hwm_kib))
    }
}

/// How many keys are under `prefix` in the embedded store at `path`, and their values' bytes.
fn stored_bytes(path: &Path, prefix: &str) -> Result<(usize, usize)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let listed = runtime.block_on(async { EmbeddedStore::open(path)?.list(prefix, kapi::storage::ListOptions::default()).await })?;
    Ok((listed.kvs.len(), listed.kvs.iter().map(|kv| kv.value.len()).sum()))
}

impl Server {
    /// Starts `kapi serve` on `data` and waits for the first `/readyz` 200: the server and the
    /// time from exec to that answer.
    fn start(data: &Path, log: &Path) -> Result<(Server, Duration)> {
        Server::start_with(data, log, &[])
    }

    /// [`Server::start`] with more arguments for `kapi serve`.
    fn start_with(data: &Path, log: &Path, args: &[&str]) -> Result<(Server, Duration)> {
        Server::start_bin(&kapi_bin(), data, log, args)
    }

    /// [`Server::start_with`] from the `kapi` binary `bin`.
    fn start_bin(bin: &str, data: &Path, log: &Path, args: &[&str]) -> Result<(Server, Duration)> {
        let _ = std::fs::remove_file(data.join("port"));
        let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        let start = Instant::now();
        let child = Command::new(bin)
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(data)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("could not execute {bin}: {e}"))?;
        let mut server = Server { child, port: 0, tls: Arc::new(empty_client_config()?), log: log.to_owned() };
        let deadline = start + START_TIME_LIMIT;
        // The port file is written after the PKI and the kubeconfig.
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(data.join("port"))
                && let Ok(port) = text.trim().parse::<u16>()
            {
                break port;
            }
            server.check_alive(deadline, "write its port file")?;
            std::thread::sleep(Duration::from_micros(500));
        };
        server.port = port;
        server.tls = Arc::new(client_config(&data.join("pki"))?);
        loop {
            if let Ok(mut conn) = Conn::connect(&server.tls, port)
                && let Ok(response) = conn.request("GET", "/readyz", b"")
                && response.status == 200
            {
                break;
            }
            server.check_alive(deadline, "answer /readyz with 200")?;
            std::thread::sleep(Duration::from_millis(5));
        }
        let elapsed = start.elapsed();
        Ok((server, elapsed))
    }

    /// An error naming what the server failed to do, with its log, if it exited or is late.
    fn check_alive(&mut self, deadline: Instant, what: &str) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            return Err(format!("kapi serve exited ({status}) before it could {what}{}", self.log_tail()).into());
        }
        if Instant::now() > deadline {
            return Err(format!("kapi serve did not {what} within {START_TIME_LIMIT:?}{}", self.log_tail()).into());
        }
        Ok(())
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n  ");
        format!("; its stderr ({}) ends:\n  {tail}", self.log.display())
    }

    /// VmRSS and VmHWM from `/proc/<pid>/status`.
    fn memory(&self) -> Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let field = |name: &str| -> Result<u64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .ok_or_else(|| format!("no {name} in /proc/{}/status", self.child.id()).into())
        };
        Ok(Memory {
            rss_kib: field("VmRSS:")?,
            hwm_kib: field("VmHWM:")?,
            anon_kib: field("RssAnon:")?,
            file_kib: field("RssFile:")? + field("RssShmem:")?,
        })
    }

    /// SIGTERM (a graceful shutdown, so that a restart is not a crash recovery), then waits up
    /// to 10 s before killing.
    fn stop(mut self) -> Result<()> {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(format!("kapi serve did not stop within 10 s of SIGTERM{}", self.log_tail()).into())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn empty_client_config() -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

/// The admin client as kubectl would be: kapi's CA as the only root, the admin certificate.
fn client_config(pki: &Path) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(pki.join("ca.crt"))?)?;
    let certs = vec![CertificateDer::from_pem_file(pki.join("admin.crt"))?];
    let key = PrivateKeyDer::from_pem_file(pki.join("admin.key"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)?)
}

fn configmap_json(name: &str) -> Vec<u8> {
    let data = "x".repeat(CONFIGMAP_DATA_BYTES);
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"config":"{data}"}}}}"#).into_bytes()
}

fn configmap_name(i: usize) -> String {
    format!("cm-{i:05}")
}

/// A counter of the server's `/metrics` (0 when it has none).
fn counter(conn: &mut Conn, name: &str) -> Result<f64> {
    let response = conn.request("GET", "/metrics", b"")?;
    if response.status != 200 {
        return Err(format!("GET /metrics: HTTP {}: {}", response.status, response.text()).into());
    }
    let text = String::from_utf8_lossy(&response.body);
    let value = text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok());
    Ok(value.unwrap_or(0.0))
}

/// One round of section 7: creates on the embedded store, raw redb at the batch size they
/// reached (creates per second), and creates on etcd.
struct ConfigMapRound {
    embedded: EmbeddedConfigMaps,
    raw: f64,
    on_etcd: Option<EtcdConfigMaps>,
}

/// ConfigMap creates on the embedded store, the store's writes per commit during them, and the
/// size of one stored ConfigMap.
struct EmbeddedConfigMaps {
    load: Load,
    batch: f64,
    value_len: usize,
    /// The server's CPU time during the creates.
    kapi_cpu_micros: u64,
}

/// ConfigMap creates on kapi on etcd, and the CPU time each process spent on them.
struct EtcdConfigMaps {
    load: Load,
    kapi_cpu_micros: u64,
    etcd_cpu_micros: u64,
}

/// `CONFIGMAPS` ConfigMaps created through a fresh `kapi serve` on the embedded store.
fn bench_configmaps_embedded(root: &Path) -> Result<EmbeddedConfigMaps> {
    let data = root.join("data-configmaps");
    let (server, _) = Server::start(&data, &root.join("kapi-configmaps.log"))?;
    let path = "/api/v1/namespaces/default/configmaps";
    let mut conn = Conn::connect(&server.tls, server.port)?;
    let (commits, writes) =
        (counter(&mut conn, "kapi_embedded_store_commits_total")?, counter(&mut conn, "kapi_embedded_store_writes_total")?);
    let cpu = process::cpu_micros(server.child.id())?;
    let load =
        bench_creates(&server.tls, server.port, path, CONFIGMAPS, CONFIGMAP_TIME_LIMIT, Arc::new(|i| configmap_json(&configmap_name(i))))?;
    let kapi_cpu_micros = process::cpu_micros(server.child.id())?.saturating_sub(cpu);
    let commits = counter(&mut conn, "kapi_embedded_store_commits_total")? - commits;
    let writes = counter(&mut conn, "kapi_embedded_store_writes_total")? - writes;
    drop(conn);
    server.stop()?;
    // Without the counters (a store without group commit) every write was its own commit.
    let batch = if commits > 0.0 { writes / commits } else { 1.0 };
    // The bench's ConfigMaps (names `cm-…`), whose values are alike.
    let (stored, bytes) = stored_bytes(&data.join("store.redb"), "/registry/configmaps/default/cm-")?;
    let value_len = bytes.checked_div(stored).ok_or("no ConfigMap is in the store")?;
    Ok(EmbeddedConfigMaps { load, batch, value_len, kapi_cpu_micros })
}

/// `CONFIGMAPS` ConfigMaps created through a fresh `kapi serve` on a fresh one-member etcd;
/// `None` when there is no etcd to start.
fn bench_configmaps_etcd(root: &Path) -> Result<Option<EtcdConfigMaps>> {
    if !etcd_installed() {
        return Ok(None);
    }
    let etcd = etcd::Etcd::start(&root.join("etcd"));
    let endpoints = etcd.endpoints();
    let args = ["--etcd-servers", endpoints.as_str()];
    let (server, _) = Server::start_with(&root.join("data-etcd"), &root.join("kapi-etcd.log"), &args)?;
    let path = "/api/v1/namespaces/default/configmaps";
    let etcd_pid = etcd.members[0].child.as_ref().map(Child::id).ok_or("etcd is not running")?;
    let cpu = (process::cpu_micros(server.child.id())?, process::cpu_micros(etcd_pid)?);
    let load =
        bench_creates(&server.tls, server.port, path, CONFIGMAPS, CONFIGMAP_TIME_LIMIT, Arc::new(|i| configmap_json(&configmap_name(i))))?;
    let kapi_cpu_micros = process::cpu_micros(server.child.id())?.saturating_sub(cpu.0);
    let etcd_cpu_micros = process::cpu_micros(etcd_pid)?.saturating_sub(cpu.1);
    server.stop()?;
    drop(etcd);
    Ok(Some(EtcdConfigMaps { load, kapi_cpu_micros, etcd_cpu_micros }))
}

/// Whether an `etcd` to start is on the PATH (the etcd rows are left out without one).
fn etcd_installed() -> bool {
    Command::new("etcd").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// One server's creates in section 10: rates, and kapi's CPU per create.
struct BaselineSample {
    configmaps: Load,
    configmap_cpu_micros: f64,
    pods: Load,
    pod_cpu_micros: f64,
}

/// The stores section 10 compares writes on.
#[derive(Clone, Copy)]
enum BaselineStore {
    Embedded,
    Etcd,
}

impl BaselineStore {
    fn name(self) -> &'static str {
        match self {
            BaselineStore::Embedded => "embedded store",
            BaselineStore::Etcd => "etcd",
        }
    }
}

/// [`BASELINE_CONFIGMAPS`] ConfigMaps then [`BASELINE_PODS`] pods created through a fresh
/// `kapi serve` of `bin` on `store` (a fresh one-member etcd for [`BaselineStore::Etcd`]).
fn baseline_sample(bin: &str, dir: &Path, store: BaselineStore) -> Result<BaselineSample> {
    std::fs::create_dir_all(dir)?;
    let etcd = match store {
        BaselineStore::Embedded => None,
        BaselineStore::Etcd => Some(etcd::Etcd::start(&dir.join("etcd"))),
    };
    let endpoints = etcd.as_ref().map(etcd::Etcd::endpoints);
    let args: Vec<&str> = endpoints.iter().flat_map(|e| ["--etcd-servers", e.as_str()]).collect();
    let (server, _) = Server::start_bin(bin, &dir.join("data"), &dir.join("kapi.log"), &args)?;
    let pid = server.child.id();
    let cpu = process::cpu_micros(pid)?;
    let configmaps = bench_creates(
        &server.tls,
        server.port,
        "/api/v1/namespaces/default/configmaps",
        BASELINE_CONFIGMAPS,
        CONFIGMAP_TIME_LIMIT,
        Arc::new(|i| configmap_json(&configmap_name(i))),
    )?;
    let after_configmaps = process::cpu_micros(pid)?;
    let pods = bench_creates(
        &server.tls,
        server.port,
        "/api/v1/namespaces/default/pods",
        BASELINE_PODS,
        CREATE_TIME_LIMIT,
        Arc::new(|i| pod_json(&format!("pod-{i:05}"))),
    )?;
    let after_pods = process::cpu_micros(pid)?;
    server.stop()?;
    drop(etcd);
    Ok(BaselineSample {
        configmap_cpu_micros: after_configmaps.saturating_sub(cpu) as f64 / configmaps.requests.max(1) as f64,
        pod_cpu_micros: after_pods.saturating_sub(after_configmaps) as f64 / pods.requests.max(1) as f64,
        configmaps,
        pods,
    })
}

/// Section 10: this build against `baseline` (`KAPI_BENCH_BASELINE_BIN`) on each store,
/// alternating fresh servers round by round; medians, each ratio the median of the rounds'
/// ratios.
fn bench_against_baseline(root: &Path, baseline: &str) -> Result<Vec<Row>> {
    let stores = if etcd_installed() { &[BaselineStore::Embedded, BaselineStore::Etcd][..] } else { &[BaselineStore::Embedded][..] };
    let bin_name = Path::new(baseline).display();
    let mut rows = Vec::new();
    for &store in stores {
        let mut pairs = Vec::new();
        for round in 0..BASELINE_ROUNDS {
            let dir = |which: &str| root.join(format!("baseline-{}-{round}-{which}", store.name().replace(' ', "-")));
            // Which build runs first alternates: the first of a pair measured 5–10% more CPU
            // per pod create when both were the same binary.
            let (kapi, old) = if round % 2 == 0 {
                let kapi = baseline_sample(&kapi_bin(), &dir("kapi"), store)?;
                (kapi, baseline_sample(baseline, &dir("old"), store)?)
            } else {
                let old = baseline_sample(baseline, &dir("old"), store)?;
                (baseline_sample(&kapi_bin(), &dir("kapi"), store)?, old)
            };
            eprintln!(
                "  … baseline round {round}, {}: ConfigMaps {:.0} /s vs {:.0} /s, pods {:.0} /s vs {:.0} /s",
                store.name(),
                kapi.configmaps.rate(),
                old.configmaps.rate(),
                kapi.pods.rate(),
                old.pods.rate(),
            );
            pairs.push((kapi, old));
        }
        let median = |f: fn(&BaselineSample) -> f64| {
            (
                median_f64(pairs.iter().map(|(k, _)| f(k)).collect()),
                median_f64(pairs.iter().map(|(_, o)| f(o)).collect()),
                median_f64(pairs.iter().map(|(k, o)| f(k) / f(o)).collect()),
            )
        };
        let store = store.name();
        type Figure = fn(&BaselineSample) -> f64;
        let kinds: [(&str, Figure, Figure); 2] =
            [("ConfigMap", |s| s.configmaps.rate(), |s| s.configmap_cpu_micros), ("Pod", |s| s.pods.rate(), |s| s.pod_cpu_micros)];
        for (kind, rate, cpu) in kinds {
            let (k, o, r) = median(rate);
            rows.push(compared(
                format!("{kind} creates/s, {store}, {CREATE_THREADS} conns, vs baseline build"),
                format!("{k:.0} /s"),
                format!("{o:.0} /s {bin_name}"),
                r,
            ));
            let (k, o, r) = median(cpu);
            rows.push(compared(
                format!("kapi CPU per {kind} create, {store}, vs baseline build"),
                format!("{k:.0} µs"),
                format!("{o:.0} µs"),
                r,
            ));
        }
    }
    Ok(rows)
}

fn pod_json(name: &str) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"app","image":"registry.k8s.io/pause:3.10"}}]}}}}"#
    )
    .into_bytes()
}

/// A keep-alive HTTP/1.1 connection over rustls.
struct Conn {
    stream: rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body[..self.body.len().min(500)]).into_owned()
    }
}

impl Conn {
    fn connect(tls: &Arc<rustls::ClientConfig>, port: u16) -> Result<Conn> {
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
        let conn = rustls::ClientConnection::new(tls.clone(), ServerName::try_from("localhost")?)?;
        Ok(Conn { stream: rustls::StreamOwned::new(conn, tcp), buf: Vec::with_capacity(64 * 1024) })
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Result<Response> {
        let mut message = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n");
        if !body.is_empty() || method != "GET" {
            message.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        message.push_str("\r\n");
        let mut message = message.into_bytes();
        message.extend_from_slice(body);
        self.stream.write_all(&message)?;
        self.stream.flush()?;
        self.read_response()
    }

    /// Reads more into the buffer; an error at end of stream.
    fn fill(&mut self) -> Result<()> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed mid-response").into());
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    fn read_response(&mut self) -> Result<Response> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if self.buf.len() > 64 * 1024 {
                return Err("response head over 64 KiB".into());
            }
            self.fill()?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end])?.to_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 =
            status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let body = if let Some(length) = header("content-length") {
            let length: usize = length.parse().map_err(|_| format!("bad Content-Length {length:?}"))?;
            while self.buf.len() < length {
                self.fill()?;
            }
            self.buf.drain(..length).collect()
        } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            self.read_chunked()?
        } else if status == 204 || status == 304 {
            Vec::new()
        } else {
            return Err(format!("HTTP {status} response with neither Content-Length nor chunked encoding").into());
        };
        Ok(Response { status, headers, body })
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(&self.buf, b"\r\n") {
                    break i;
                }
                self.fill()?;
            };
            let size_text = std::str::from_utf8(&self.buf[..line_end])?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)
                .map_err(|_| format!("bad chunk size {size_text:?}"))?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // No trailers expected: the final CRLF.
                while self.buf.len() < 2 {
                    self.fill()?;
                }
                self.buf.drain(..2);
                return Ok(body);
            }
            while self.buf.len() < size + 2 {
                self.fill()?;
            }
            body.extend_from_slice(&self.buf[..size]);
            self.buf.drain(..size + 2);
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Requests done by a set of client threads and the time they took.
struct Load {
    requests: usize,
    elapsed: Duration,
}

impl Load {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn widget_json(name: &str) -> Vec<u8> {
    let data = "x".repeat(CONFIGMAP_DATA_BYTES);
    format!(r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"{name}"}},"data":{{"config":"{data}"}}}}"#).into_bytes()
}

fn widget_name(i: usize) -> String {
    format!("widget-{i:05}")
}

/// Custom resource creates and GETs against ConfigMaps of the same data on one fresh server
/// (embedded store), in alternating rounds; each ratio is the median of the rounds' ratios.
fn bench_custom_resources(root: &Path) -> Result<Vec<Row>> {
    let (server, _) = Server::start(&root.join("data-custom"), &root.join("kapi-custom.log"))?;
    let mut conn = Conn::connect(&server.tls, server.port)?;
    let definition = br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
        "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
        "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#;
    let created = conn.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", definition)?;
    if created.status != 201 {
        return Err(format!("creating the definition: HTTP {}: {}", created.status, created.text()).into());
    }
    let deadline = Instant::now() + START_TIME_LIMIT;
    while conn.request("GET", WIDGETS, b"")?.status != 200 {
        if Instant::now() > deadline {
            return Err("the custom resource was not served".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let (mut creates, mut gets) = (Vec::new(), Vec::new());
    for round in 0..CUSTOM_RESOURCE_ROUNDS {
        let offset = round * CUSTOM_RESOURCES;
        let widget_body = Arc::new(move |i: usize| widget_json(&widget_name(i + offset)));
        let cm_body = Arc::new(move |i: usize| configmap_json(&configmap_name(i + offset)));
        let widgets = bench_creates(&server.tls, server.port, WIDGETS, CUSTOM_RESOURCES, CONFIGMAP_TIME_LIMIT, widget_body)?;
        let cms = bench_creates(&server.tls, server.port, configmaps, CUSTOM_RESOURCES, CONFIGMAP_TIME_LIMIT, cm_body)?;
        creates.push((widgets.rate(), cms.rate()));
        let (widget_path, cm_path) = (format!("{WIDGETS}/{}", widget_name(offset)), format!("{configmaps}/{}", configmap_name(offset)));
        let widget_len = conn.request("GET", &widget_path, b"")?.body.len();
        let cm_len = conn.request("GET", &cm_path, b"")?.body.len();
        let widget_get = bench_get(&server.tls, server.port, &widget_path, widget_len)?;
        let cm_get = bench_get(&server.tls, server.port, &cm_path, cm_len)?;
        gets.push((widget_get.rate(), cm_get.rate()));
        eprintln!(
            "  … custom resources round {round}: creates {:.0} /s vs ConfigMaps {:.0} /s; GETs {:.0} vs {:.0} req/s",
            widgets.rate(),
            cms.rate(),
            widget_get.rate(),
            cm_get.rate()
        );
    }
    drop(conn);
    server.stop()?;
    let median_of = |pairs: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| median_f64(pairs.iter().map(pick).collect());
    Ok(vec![
        compared(
            format!("create {CUSTOM_RESOURCES} custom resources, {CREATE_THREADS} keep-alive conns, embedded store"),
            format!("{:.0} /s", median_of(&creates, |p| p.0)),
            format!("{:.0} /s ConfigMaps of the same data", median_of(&creates, |p| p.1)),
            median_of(&creates, |p| p.0 / p.1),
        ),
        compared(
            format!("GET one custom resource, {GET_THREADS} keep-alive conns"),
            format!("{:.0} req/s", median_of(&gets, |p| p.0)),
            format!("{:.0} req/s GET one ConfigMap", median_of(&gets, |p| p.1)),
            median_of(&gets, |p| p.0 / p.1),
        ),
    ])
}

/// Section 9: ConfigMap creates and GETs as a user with a Role and RoleBinding, alternating
/// rounds with the admin's on one server.
fn bench_rbac(root: &Path) -> Result<Vec<Row>> {
    use base64::Engine;
    let data = root.join("data-rbac");
    let (server, _) = Server::start(&data, &root.join("kapi-rbac.log"))?;
    let mut conn = Conn::connect(&server.tls, server.port)?;
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/bench";
    for (path, body) in [
        ("/api/v1/namespaces".to_owned(), r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}"#),
        (
            format!("{rbac}/roles"),
            r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"cm"},
                "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create","get"]}]}"#,
        ),
        (
            format!("{rbac}/rolebindings"),
            r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"cm"},
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm"},
                "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bench-user"}]}"#,
        ),
    ] {
        let created = conn.request("POST", &path, body.as_bytes())?;
        if created.status != 201 {
            return Err(format!("POST {path}: HTTP {}: {}", created.status, created.text()).into());
        }
    }
    let out = Command::new(kapi_bin()).args(["kubeconfig", "--user", "bench-user", "--data-dir"]).arg(&data).output()?;
    if !out.status.success() {
        return Err(format!("kapi kubeconfig: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let config: serde_json::Value = serde_yaml_ng::from_slice(&out.stdout)?;
    let field = |name: &str| -> Result<Vec<u8>> {
        let text = config["users"][0]["user"][name].as_str().ok_or("no client credentials in the kubeconfig")?;
        Ok(base64::engine::general_purpose::STANDARD.decode(text)?)
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(data.join("pki").join("ca.crt"))?)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let user_tls = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(&field("client-certificate-data")?)?],
                PrivateKeyDer::from_pem_slice(&field("client-key-data")?)?,
            )?,
    );
    let configmaps = "/api/v1/namespaces/bench/configmaps";
    // The binding reaches the authorizer's cache through a watch.
    let mut user_conn = Conn::connect(&user_tls, server.port)?;
    let deadline = Instant::now() + START_TIME_LIMIT;
    while user_conn.request("POST", configmaps, &configmap_json("probe"))?.status != 201 {
        if Instant::now() > deadline {
            return Err("the user's RoleBinding never took effect".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mut creates, mut gets) = (Vec::new(), Vec::new());
    for round in 0..CUSTOM_RESOURCE_ROUNDS {
        let offset = round * CUSTOM_RESOURCES * 2;
        let admin_body = Arc::new(move |i: usize| configmap_json(&configmap_name(i + offset)));
        let user_body = Arc::new(move |i: usize| configmap_json(&configmap_name(i + offset + CUSTOM_RESOURCES)));
        let admin = bench_creates(&server.tls, server.port, configmaps, CUSTOM_RESOURCES, CONFIGMAP_TIME_LIMIT, admin_body)?;
        let user = bench_creates(&user_tls, server.port, configmaps, CUSTOM_RESOURCES, CONFIGMAP_TIME_LIMIT, user_body)?;
        creates.push((user.rate(), admin.rate()));
        let path = format!("{configmaps}/{}", configmap_name(offset));
        let len = conn.request("GET", &path, b"")?.body.len();
        let admin_get = bench_get(&server.tls, server.port, &path, len)?;
        let user_get = bench_get(&user_tls, server.port, &path, len)?;
        gets.push((user_get.rate(), admin_get.rate()));
        eprintln!(
            "  … RBAC round {round}: creates {:.0} /s as the user vs {:.0} /s as the admin; GETs {:.0} vs {:.0} req/s",
            user.rate(),
            admin.rate(),
            user_get.rate(),
            admin_get.rate()
        );
    }
    drop((conn, user_conn));
    server.stop()?;
    let median_of = |pairs: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| median_f64(pairs.iter().map(pick).collect());
    Ok(vec![
        compared(
            format!("create {CUSTOM_RESOURCES} ConfigMaps as a RoleBinding's user, {CREATE_THREADS} keep-alive conns"),
            format!("{:.0} /s", median_of(&creates, |p| p.0)),
            format!("{:.0} /s as the admin (system:masters)", median_of(&creates, |p| p.1)),
            median_of(&creates, |p| p.0 / p.1),
        ),
        compared(
            format!("GET one ConfigMap as a RoleBinding's user, {GET_THREADS} keep-alive conns"),
            format!("{:.0} req/s", median_of(&gets, |p| p.0)),
            format!("{:.0} req/s as the admin", median_of(&gets, |p| p.1)),
            median_of(&gets, |p| p.0 / p.1),
        ),
    ])
}

/// `GET_THREADS` threads, each on one keep-alive connection, GET `path` for `GET_DURATION` (or
/// `GET_MAX_PER_THREAD` requests) after a warm-up; every answer must be a 200 of `body_len` bytes.
fn bench_get(tls: &Arc<rustls::ClientConfig>, port: u16, path: &str, body_len: usize) -> Result<Load> {
    let barrier = Arc::new(Barrier::new(GET_THREADS + 1));
    let threads: Vec<_> = (0..GET_THREADS)
        .map(|_| {
            let (tls, barrier, path) = (tls.clone(), barrier.clone(), path.to_owned());
            std::thread::spawn(move || -> Result<(usize, Duration)> {
                let warm = (|| -> Result<Conn> {
                    let mut conn = Conn::connect(&tls, port)?;
                    for _ in 0..GET_WARMUP {
                        conn.request("GET", &path, b"")?;
                    }
                    Ok(conn)
                })();
                barrier.wait();
                let mut conn = warm?;
                let start = Instant::now();
                let mut n = 0;
                while n < GET_MAX_PER_THREAD && start.elapsed() < GET_DURATION {
                    let response = conn.request("GET", &path, b"")?;
                    if response.status != 200 || response.body.len() != body_len {
                        return Err(format!("GET {path}: HTTP {} with {} bytes", response.status, response.body.len()).into());
                    }
                    n += 1;
                }
                Ok((n, start.elapsed()))
            })
        })
        .collect();
    barrier.wait();
    join_load(threads)
}

fn join_load(threads: Vec<std::thread::JoinHandle<Result<(usize, Duration)>>>) -> Result<Load> {
    let mut load = Load { requests: 0, elapsed: Duration::ZERO };
    for t in threads {
        let (n, elapsed) = t.join().map_err(|_| "a client thread panicked")??;
        load.requests += n;
        load.elapsed = load.elapsed.max(elapsed);
    }
    Ok(load)
}

/// `count` objects (the bodies `body(i)`) created by `CREATE_THREADS` keep-alive connections
/// taking numbers from a shared counter, within `limit`.
fn bench_creates(
    tls: &Arc<rustls::ClientConfig>,
    port: u16,
    path: &str,
    count: usize,
    limit: Duration,
    body: Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync>,
) -> Result<Load> {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..CREATE_THREADS)
        .map(|_| {
            let (tls, next, path, body) = (tls.clone(), next.clone(), path.to_owned(), body.clone());
            std::thread::spawn(move || -> Result<(usize, Duration)> {
                let mut conn = Conn::connect(&tls, port)?;
                let mut n = 0;
                loop {
                    if start.elapsed() > limit {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let response = conn.request("POST", &path, &body(i))?;
                    if response.status != 201 {
                        return Err(format!("creating object {i} in {path}: HTTP {}: {}", response.status, response.text()).into());
                    }
                    n += 1;
                }
                Ok((n, start.elapsed()))
            })
        })
        .collect();
    let load = join_load(threads)?;
    if load.requests < count {
        eprintln!("  (stopped at the {limit:?} limit after {} of {count} creates)", load.requests);
    }
    Ok(load)
}

/// `LIST_REPS` LISTs of all pods on one keep-alive connection (bounded by `LIST_TIME_LIMIT`):
/// the median time and the last body.
fn bench_list(tls: &Arc<rustls::ClientConfig>, port: u16, path: &str) -> Result<(Duration, Vec<u8>)> {
    let mut conn = Conn::connect(tls, port)?;
    let started = Instant::now();
    let mut times = Vec::new();
    let mut body = Vec::new();
    while times.len() < LIST_REPS && started.elapsed() < LIST_TIME_LIMIT {
        let start = Instant::now();
        let response = conn.request("GET", path, b"")?;
        times.push(start.elapsed());
        if response.status != 200 {
            return Err(format!("LIST {path}: HTTP {}: {}", response.status, response.text()).into());
        }
        body = response.body;
    }
    eprintln!("  … LIST times: {}", times.iter().map(|t| ms(*t)).collect::<Vec<_>>().join(", "));
    Ok((median(times), body))
}

/// The median time of `serde_json::to_vec` of the list.
fn bench_encode(value: &serde_json::Value) -> Result<Duration> {
    let mut times = Vec::new();
    for _ in 0..ENCODE_REPS {
        let start = Instant::now();
        let bytes = serde_json::to_vec(value)?;
        times.push(start.elapsed());
        std::hint::black_box(bytes);
    }
    Ok(median(times))
}

/// A bare hyper server with kapi's rustls settings (its own `Pki::server_config` over the same
/// certificates), answering every request with the given response's headers and body.
struct BareServer {
    runtime: Option<tokio::runtime::Runtime>,
    port: u16,
}

impl BareServer {
    fn start(pki: &Path, reference: &Response) -> Result<BareServer> {
        use http_body_util::Full;
        use hyper_util::rt::{TokioExecutor, TokioIo};

        let tls =
            kapi::pki::Pki::from_files(&pki.join("apiserver.crt"), &pki.join("apiserver.key"), &pki.join("ca.crt"))?.server_config()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let body = Bytes::from(reference.body.clone());
        let headers: Arc<Vec<(String, String)>> = Arc::new(
            reference
                .headers
                .iter()
                .filter(|(n, _)| !matches!(n.as_str(), "date" | "content-length" | "connection" | "transfer-encoding"))
                .cloned()
                .collect(),
        );
        // As kapi's main: a multi-threaded runtime with one worker per core.
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))?;
        let port = listener.local_addr()?.port();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, body, headers) = (acceptor.clone(), body.clone(), headers.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |_request: hyper::Request<hyper::body::Incoming>| {
                        let mut response = hyper::Response::builder();
                        for (name, value) in headers.iter() {
                            response = response.header(name.as_str(), value.as_str());
                        }
                        let response = response.body(Full::new(body.clone()));
                        async move { response }
                    });
                    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        Ok(BareServer { runtime: Some(runtime), port })
    }
}

impl Drop for BareServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
