//! kapi on etcd (`--etcd-servers`): the storage conformance suite against a real etcd, the
//! on-disk contract shared with kube-apiserver (keys, `k8s\0` protobuf values, both ways),
//! readiness while etcd is away, and several kapi replicas on one etcd cluster.

mod common;

use std::time::{Duration, Instant};

use common::etcd::Etcd;
use common::{request, start_with};
use kapi::storage::conformance;
use kapi::storage::etcd::{EtcdConfig, EtcdStore};
use serde_json::{Value, json};

/// A one-member etcd in a temporary directory, and kapi's store on it.
async fn etcd_and_store() -> (tempfile::TempDir, Etcd, EtcdStore) {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let store = EtcdStore::connect(&EtcdConfig::new(vec![etcd.members[0].client_url.clone()])).await.unwrap();
    (dir, etcd, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_on_etcd() {
    let (_dir, _etcd, store) = etcd_and_store().await;
    assert!(store.version().starts_with("3."), "{}", store.version());
    if let Err(failure) = conformance::run_all(&store).await {
        panic!("{failure}");
    }
}

/// The suite through the watch cache on etcd: watches come from the cache's one etcd watch
/// per prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_through_the_watch_cache_on_etcd() {
    use kapi::storage::cache::{WatchCache, WatchCacheOptions};
    let (_dir, _etcd, store) = etcd_and_store().await;
    assert!(!store.supports_progress_requests(), "Debian's etcd {} predates progress requests", store.version());
    let cache = WatchCache::new(std::sync::Arc::new(store), WatchCacheOptions::default());
    if let Err(failure) = conformance::run_all(&cache).await {
        panic!("{failure}");
    }
}

/// A gauge of etcd's `/metrics` (plain HTTP on the client URL).
fn etcd_gauge(client_url: &str, name: &str) -> f64 {
    use std::io::{Read, Write};
    let address = client_url.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(address).unwrap();
    // HTTP/1.0: the body comes whole, not in chunks whose size lines could split a metric's line.
    write!(tcp, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("{name} not in etcd's metrics"))
}

/// kapi on etcd with its watch cache: twenty HTTP watches of one resource cost at most one etcd
/// watch, all of them see a later write; lists read their writes; a NotOlderThan list at a
/// revision etcd has not reached is upstream's 504.
#[test]
fn watch_cache_on_etcd_shares_one_watch() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let server = start_with(&dir.path().join("kapi"), &["--etcd-servers", &etcd.endpoints()]);
    server.wait_ready();
    let url = etcd.members[0].client_url.clone();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string();
    assert_eq!(request(&server, "POST", cms, "application/json", cm("first").as_bytes()).0, 201);
    // The server's controllers open their caches' etcd watches as they come up, some after
    // readiness on a loaded machine: count from a settled state.
    let mut before = etcd_gauge(&url, "etcd_debugging_mvcc_watcher_total");
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(500));
        let now = etcd_gauge(&url, "etcd_debugging_mvcc_watcher_total");
        if now == before {
            break;
        }
        before = now;
    }
    const WATCHERS: usize = 20;
    let bodies = std::thread::scope(|scope| {
        let watches: Vec<_> = (0..WATCHERS)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let rv = if i % 2 == 0 { "0" } else { "" };
                    request(server, "GET", &format!("{cms}?watch=1&resourceVersion={rv}&timeoutSeconds=4"), "", b"")
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        let during = etcd_gauge(&url, "etcd_debugging_mvcc_watcher_total");
        assert!(during - before <= 1.0, "{WATCHERS} HTTP watches made {} etcd watches", during - before);
        assert_eq!(request(&server, "POST", cms, "application/json", cm("watched").as_bytes()).0, 201);
        watches.into_iter().map(|w| w.join().unwrap()).collect::<Vec<_>>()
    });
    for (i, (code, body)) in bodies.iter().enumerate() {
        assert_eq!(*code, 200, "watch {i}: {body}");
        assert!(body.contains("\"name\":\"first\""), "watch {i} starts with the current state: {body}");
        assert!(body.contains("\"name\":\"watched\""), "watch {i} saw the write: {body}");
    }

    for i in 0..10 {
        let (code, body) = request(&server, "POST", cms, "application/json", cm(&format!("ryw-{i}")).as_bytes());
        assert_eq!(code, 201, "{body}");
        let rv = serde_json::from_str::<Value>(&body).unwrap()["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
        for query in ["".to_owned(), format!("?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")] {
            let (code, list) = request(&server, "GET", &format!("{cms}{query}"), "", b"");
            assert_eq!(code, 200, "{list}");
            assert!(list.contains(&format!("\"name\":\"ryw-{i}\"")), "list{query} after a write misses it");
        }
        let (code, got) = request(&server, "GET", &format!("{cms}/ryw-{i}?resourceVersion={rv}"), "", b"");
        assert_eq!(code, 200, "{got}");
    }
    let (code, body) = request(&server, "GET", &format!("{cms}?resourceVersion=999999&resourceVersionMatch=NotOlderThan"), "", b"");
    assert_eq!(code, 504, "{body}");
    assert!(body.contains("Too large resource version"), "{body}");
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})
}

#[test]
fn values_are_upstreams_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let server = start_with(&dir.path().join("kapi"), &["--etcd-servers", &etcd.endpoints()]);
    server.wait_ready();
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let (code, body) = request(&server, "POST", deployments, "application/json", deployment("web").to_string().as_bytes());
    assert_eq!(code, 201, "{body}");
    let created: Value = serde_json::from_str(&body).unwrap();

    // kapi's write, read with etcdctl: upstream's key and a `k8s\0` protobuf value that decodes
    // to the same object.
    let keys = String::from_utf8(etcd.etcdctl(&["get", "--prefix", "--keys-only", "/registry/deployments/"])).unwrap();
    assert_eq!(keys.trim(), "/registry/deployments/default/web");
    let value = etcd.etcdctl(&["get", "--print-value-only", "/registry/deployments/default/web"]);
    let value = value.strip_suffix(b"\n").unwrap_or(&value);
    assert!(value.starts_with(b"k8s\0"), "value is not the Kubernetes protobuf envelope");
    let (kind, decoded) = kapi::registry::objects::decode_stored(value).unwrap();
    assert_eq!((kind.api_version(), kind.kind.as_str()), ("apps/v1".to_owned(), "Deployment"));
    assert_eq!(decoded["spec"], created["spec"]);
    assert_eq!(decoded["metadata"]["uid"], created["metadata"]["uid"]);

    // Upstream's exceptions to `/registry/<resource>/`: services, replication controllers,
    // nodes; and the aggregator's group-keyed JSON values.
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                     "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}});
    assert_eq!(request(&server, "POST", "/api/v1/namespaces/default/services", "application/json", svc.to_string().as_bytes()).0, 201);
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
    assert_eq!(request(&server, "POST", "/api/v1/nodes", "application/json", node.to_string().as_bytes()).0, 201);
    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.example.com"},
                            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10}});
    let (code, body) =
        request(&server, "POST", "/apis/apiregistration.k8s.io/v1/apiservices", "application/json", apiservice.to_string().as_bytes());
    assert_eq!(code, 201, "{body}");
    let keys = String::from_utf8(etcd.etcdctl(&["get", "--prefix", "--keys-only", "/registry/"])).unwrap();
    for key in
        ["/registry/services/specs/default/web", "/registry/minions/n1", "/registry/apiregistration.k8s.io/apiservices/v1.example.com"]
    {
        assert!(keys.lines().any(|l| l == key), "{key} missing from {keys}");
    }
    let stored = etcd.etcdctl(&["get", "--print-value-only", "/registry/apiregistration.k8s.io/apiservices/v1.example.com"]);
    let stored: Value = serde_json::from_slice(&stored).expect("aggregator objects are stored as JSON");
    assert_eq!(stored["kind"], "APIService");
    let (code, body) = request(&server, "GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com", "", b"");
    assert_eq!(code, 200, "{body}");

    // A value written the way kube-apiserver writes it (upstream's own protobuf fixture) is
    // served by kapi.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api-specs/v1.36.0/fixtures/apps.v1.Deployment.pb");
    let bytes = std::fs::read(&fixture).expect("fixtures filled by api-specs/fill");
    let (_, upstream) = kapi::registry::objects::decode_stored(&bytes).unwrap();
    let name = upstream["metadata"]["name"].as_str().unwrap().to_owned();
    let key = format!("/registry/deployments/default/{name}");
    let put = std::process::Command::new("etcdctl")
        .args(["--endpoints", &etcd.endpoints(), "put", &key])
        .env("ETCDCTL_API", "3")
        .stdin(std::fs::File::open(&fixture).unwrap())
        .output()
        .unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let (code, body) = request(&server, "GET", &format!("{deployments}/{name}"), "", b"");
    assert_eq!(code, 200, "{body}");
    let served: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(served["spec"], upstream["spec"]);
    assert_ne!(served["metadata"]["resourceVersion"], upstream["metadata"]["resourceVersion"], "RV is etcd's");
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn unready_while_etcd_is_away_and_back_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut etcd = Etcd::start(dir.path());
    let server = start_with(&dir.path().join("kapi"), &["--etcd-servers", &etcd.endpoints()]);
    server.wait_ready();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string();
    assert_eq!(request(&server, "POST", cms, "application/json", cm("before").as_bytes()).0, 201);

    etcd.stop(0);
    wait_for("readyz to fail", Duration::from_secs(10), || request(&server, "GET", "/readyz", "", b"").0 == 500);
    assert_eq!(request(&server, "GET", "/readyz/etcd", "", b"").0, 500);
    assert_eq!(request(&server, "GET", "/livez", "", b"").0, 200, "livez stays up");
    let started = Instant::now();
    let (code, body) = request(&server, "POST", cms, "application/json", cm("during").as_bytes());
    assert!(matches!(code, 503 | 504), "{code} {body}");
    assert!(started.elapsed() < Duration::from_secs(10), "a dead etcd fails requests promptly");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["kind"], "Status");

    etcd.restart(0);
    etcd.wait_healthy();
    wait_for("readyz to recover", Duration::from_secs(20), || request(&server, "GET", "/readyz", "", b"").0 == 200);
    assert_eq!(request(&server, "POST", cms, "application/json", cm("after").as_bytes()).0, 201);
    let (code, body) = request(&server, "GET", &format!("{cms}/before"), "", b"");
    assert_eq!(code, 200, "{body}");
}

/// Two replicas on a three-member etcd cluster behave as one server, survive losing a member,
/// report unready without etcd, and resume when it is back, losing no acknowledged write.
#[test]
fn replicas_on_an_etcd_cluster_act_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut etcd = Etcd::cluster(dir.path(), 3);
    let endpoints = etcd.endpoints();
    let a = start_with(&dir.path().join("a"), &["--etcd-servers", &endpoints]);
    let b = common::start_replica(&dir.path().join("b"), &dir.path().join("a/pki"), &["--etcd-servers", &endpoints]);
    a.wait_ready();
    b.wait_ready();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).to_string();
    let mut acknowledged = Vec::new();
    let mut create = |server: &common::Server, name: &str| -> u16 {
        let code = request(server, "POST", cms, "application/json", cm(name).as_bytes()).0;
        if code == 201 {
            acknowledged.push(name.to_owned());
        }
        code
    };

    // `kubectl get -w` through B sees a create through A.
    let kubeconfig = dir.path().join("b.kubeconfig");
    let config = std::fs::read_to_string(dir.path().join("a/admin.kubeconfig")).unwrap();
    let config = config.replace(&format!("127.0.0.1:{}", a.port), &format!("127.0.0.1:{}", b.port));
    std::fs::write(&kubeconfig, config).unwrap();
    let mut watcher = std::process::Command::new("kubectl")
        .args(["get", "configmaps", "-n", "default", "-w", "-o", "name", "--request-timeout=30s"])
        .env("KUBECONFIG", &kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(create(&a, "from-a"), 201);
    let stdout = watcher.stdout.take().unwrap();
    let seen = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.trim() == "configmap/from-a")
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    assert!(seen.join().unwrap(), "the watch through B saw the create through A");

    // One member down: both replicas keep serving (after the client notices).
    etcd.stop(0);
    for (i, server) in [&a, &b].into_iter().enumerate() {
        let mut served = false;
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut n = 0;
        while Instant::now() < deadline && !served {
            n += 1;
            served = create(server, &format!("one-down-{i}-{n}")) == 201;
        }
        assert!(served, "replica {i} serves with one etcd member down");
        for k in 0..5 {
            assert_eq!(create(server, &format!("one-down-{i}-steady-{k}")), 201, "replica {i} keeps serving");
        }
    }

    // All down: 503/504 and not ready, on both.
    etcd.stop(1);
    etcd.stop(2);
    for server in [&a, &b] {
        wait_for("readyz to fail", Duration::from_secs(15), || request(server, "GET", "/readyz", "", b"").0 == 500);
        let code = create(server, "all-down");
        assert!(matches!(code, 503 | 504), "{code}");
    }

    // Back: both serve again within a few seconds, and every acknowledged write is there.
    for i in 0..3 {
        etcd.restart(i);
    }
    etcd.wait_healthy();
    for server in [&a, &b] {
        wait_for("readyz to recover", Duration::from_secs(20), || request(server, "GET", "/readyz", "", b"").0 == 200);
    }
    assert_eq!(create(&b, "after"), 201);
    let (code, body) = request(&a, "GET", cms, "", b"");
    assert_eq!(code, 200);
    let list: Value = serde_json::from_str(&body).unwrap();
    let names: std::collections::BTreeSet<&str> =
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    for name in &acknowledged {
        assert!(names.contains(name.as_str()), "acknowledged {name} is lost");
    }
}

/// Events live `--event-ttl` after their last write: an etcd lease, as upstream.
#[test]
fn events_expire_with_their_lease() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let server = start_with(&dir.path().join("kapi"), &["--etcd-servers", &etcd.endpoints(), "--event-ttl", "2s"]);
    server.wait_ready();
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
                       "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                       "reason": "Tested", "message": "m", "type": "Normal"});
    let events = "/api/v1/namespaces/default/events";
    let (code, body) = request(&server, "POST", events, "application/json", event.to_string().as_bytes());
    assert_eq!(code, 201, "{body}");
    let listing = String::from_utf8(etcd.etcdctl(&["get", "/registry/events/default/e1", "-w", "json"])).unwrap();
    let listing: Value = serde_json::from_str(&listing).unwrap();
    assert!(listing["kvs"][0]["lease"].as_i64().is_some_and(|l| l != 0), "the event has a lease: {listing}");
    // Other objects have none.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}});
    assert_eq!(request(&server, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm.to_string().as_bytes()).0, 201);
    let listing = String::from_utf8(etcd.etcdctl(&["get", "/registry/configmaps/default/kept", "-w", "json"])).unwrap();
    let listing: Value = serde_json::from_str(&listing).unwrap();
    assert!(listing["kvs"][0].get("lease").is_none_or(|l| l == 0), "{listing}");
    wait_for("the event to expire", Duration::from_secs(15), || request(&server, "GET", &format!("{events}/e1"), "", b"").0 == 404);
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/default/configmaps/kept", "", b"").0, 200);
}

/// etcd's progress notifications reach an idle watch as `Event::Progress`, so its bookmarks can
/// move past writes elsewhere (upstream feeds bookmarks from them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_watches_hear_progress() {
    use kapi::storage::{Event, Storage};
    let (_dir, _etcd, store) = etcd_and_store().await;
    let mut watch = store.watch("/registry/quiet/", 0).await.unwrap();
    let elsewhere = store.create("/registry/busy/a", bytes::Bytes::from_static(b"x")).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let event = tokio::time::timeout_at(deadline, watch.next()).await.expect("a progress notification").unwrap().unwrap();
        match event {
            Event::Progress { revision } if revision >= elsewhere.mod_revision => break,
            Event::Progress { .. } => continue,
            other => panic!("nothing changed under the watched prefix: {other:?}"),
        }
    }
}

/// Lists bigger than gRPC's default 4 MiB message (10k pods are) are read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_larger_than_four_mebibytes() {
    use kapi::storage::{ListOptions, Storage};
    let (_dir, _etcd, store) = etcd_and_store().await;
    let value = bytes::Bytes::from(vec![b'x'; 1024 * 1024]);
    for i in 0..6 {
        store.create(&format!("/registry/big/{i}"), value.clone()).await.unwrap();
    }
    let list = store.list("/registry/big/", ListOptions::default()).await.unwrap();
    assert_eq!(list.kvs.len(), 6);
}

/// Custom resources on etcd, across two replicas and a restart: a definition created through
/// one replica is served by the other within a second, objects written through either are read
/// through both, stored as JSON at upstream's key, and still served after both restart.
#[test]
fn custom_resources_on_two_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let endpoints = etcd.endpoints();
    let a = start_with(&dir.path().join("a"), &["--etcd-servers", &endpoints]);
    let b = common::start_replica(&dir.path().join("b"), &dir.path().join("a/pki"), &["--etcd-servers", &endpoints]);
    a.wait_ready();
    b.wait_ready();
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    });
    let definitions = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(request(&a, "POST", definitions, "application/json", definition.to_string().as_bytes()).0, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let created = Instant::now();
    wait_for("the other replica serves the definition", Duration::from_secs(5), || request(&b, "GET", widgets, "", b"").0 == 200);
    assert!(created.elapsed() < Duration::from_secs(1), "served by the other replica after {:?}", created.elapsed());
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
    assert_eq!(request(&b, "POST", widgets, "application/json", widget.to_string().as_bytes()).0, 201);
    let (code, body) = request(&a, "GET", &format!("{widgets}/w"), "", b"");
    assert_eq!(code, 200, "{body}");

    // Upstream's key and JSON value, as kube-apiserver would read them.
    let stored = std::process::Command::new("etcdctl")
        .args(["--endpoints", &endpoints, "get", "/registry/example.com/widgets/default/w", "--print-value-only"])
        .output()
        .unwrap();
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap_or(Value::Null);
    assert_eq!((stored["apiVersion"].as_str(), stored["spec"]["size"].as_i64()), (Some("example.com/v1"), Some(1)), "{stored}");

    drop((a, b));
    let a = start_with(&dir.path().join("a"), &["--etcd-servers", &endpoints]);
    a.wait_ready();
    let (code, body) = request(&a, "GET", &format!("{widgets}/w"), "", b"");
    assert_eq!(code, 200, "served at once after a restart: {body}");
}

/// The `kubernetes` Endpoints and EndpointSlice list every replica's advertised address (each
/// holds a lease under `/registry/masterleases/`), and a replica that stops takes its address
/// out, as kube-apiserver's lease reconciler does.
#[test]
fn the_kubernetes_endpoints_list_every_replica() {
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let endpoints = etcd.endpoints();
    let a = start_with(&dir.path().join("a"), &["--etcd-servers", &endpoints, "--advertise-address", "10.1.2.3"]);
    let mut b = common::start_replica(
        &dir.path().join("b"),
        &dir.path().join("a/pki"),
        &["--etcd-servers", &endpoints, "--advertise-address", "10.1.2.4"],
    );
    a.wait_ready();
    b.wait_ready();
    let addresses = |server: &common::Server| {
        let (code, body) = request(server, "GET", "/api/v1/namespaces/default/endpoints/kubernetes", "", b"");
        let endpoints: Value = serde_json::from_str(&body).unwrap_or_default();
        let ips: Vec<String> = endpoints["subsets"][0]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["ip"].as_str().map(str::to_owned))
            .collect();
        (code, ips, endpoints)
    };
    let wait_for = |wanted: &[&str]| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (code, ips, endpoints) = addresses(&a);
            if code == 200 && ips == wanted {
                return endpoints;
            }
            assert!(Instant::now() < deadline, "waiting for {wanted:?}: {code} {endpoints}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // B's first pass finds A's lease and its own.
    let both = wait_for(&["10.1.2.3", "10.1.2.4"]);
    assert_eq!(both["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"], "true");
    let port = both["subsets"][0]["ports"][0].clone();
    assert!(port["port"] == json!(a.port) || port["port"] == json!(b.port), "{port}");
    assert_eq!((&port["name"], &port["protocol"]), (&json!("https"), &json!("TCP")));
    // The slice is written after the Endpoints (as upstream's reconciler writes them), so it may
    // follow a moment later.
    let both_ready =
        json!([{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}, {"addresses": ["10.1.2.4"], "conditions": {"ready": true}}]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let slice = loop {
        let (code, body) = request(&a, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", "", b"");
        assert_eq!(code, 200, "{body}");
        let slice: Value = serde_json::from_str(&body).unwrap();
        if slice["endpoints"] == both_ready {
            break slice;
        }
        assert!(Instant::now() < deadline, "waiting for both replicas in the slice: {body}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(slice["metadata"]["labels"]["kubernetes.io/service-name"], "kubernetes");
    assert_eq!(slice["addressType"], "IPv4");

    // B stops (SIGTERM): its address goes at once, not when its lease expires.
    let stopped = std::process::Command::new("kill").args(["-TERM", &b.child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    b.child.wait().unwrap();
    wait_for(&["10.1.2.3"]);
}

/// Watches that end while etcd is still sending to them do not cost the connection (see
/// `EtcdStore`'s `TrustedPeer`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_many_busy_watches_keeps_the_connection() {
    use kapi::storage::Storage;
    let (_dir, _etcd, store) = etcd_and_store().await;
    let store = std::sync::Arc::new(store);
    // A writer keeps events flowing to every watch while the watches end.
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = tokio::spawn({
        let (store, writing) = (store.clone(), writing.clone());
        async move {
            let mut i = 0;
            while writing.load(std::sync::atomic::Ordering::Relaxed) {
                store.create(&format!("/registry/busy/{i}"), bytes::Bytes::from_static(b"x")).await.unwrap();
                i += 1;
            }
        }
    });
    for _ in 0..5 {
        let mut opening = tokio::task::JoinSet::new();
        for _ in 0..500 {
            let store = store.clone();
            opening.spawn(async move { store.watch("/registry/busy/", 0).await.unwrap() });
        }
        let watches = opening.join_all().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(watches);
    }
    writing.store(false, std::sync::atomic::Ordering::Relaxed);
    writer.await.unwrap();
    let kv = store.create("/registry/after/a", bytes::Bytes::from_static(b"x")).await.expect("the connection still serves");
    assert_eq!(store.get("/registry/after/a").await.unwrap().unwrap().mod_revision, kv.mod_revision);
}

/// A watch nobody reads holds at most its own backlog, and ends after a short wait as one that
/// falls behind the watch cache does; meanwhile etcd's frames for it stop at the stream's
/// window, and every other call goes on. The watch cache's own feed is waited for instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_watch_overflows_alone() {
    use kapi::storage::{Event, Storage, StorageError};
    let (_dir, etcd, store) = etcd_and_store().await;
    let mut unread = store.watch("/registry/big/", 0).await.unwrap();
    let mut patient = store.watch_patiently("/registry/big/", 0).await.unwrap();
    let value = bytes::Bytes::from(vec![b'x'; 1 << 20]);
    for i in 0..8 {
        store.create(&format!("/registry/big/{i}"), value.clone()).await.expect("writes go on");
    }
    store.get("/registry/big/0").await.expect("reads go on");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (mut delivered, mut progress) = (0, 0);
    loop {
        match tokio::time::timeout(Duration::from_secs(10), unread.next()).await.expect("the watch ends") {
            Some(Ok(Event::Put { .. })) => delivered += 1,
            Some(Ok(Event::Progress { .. })) => progress += 1,
            Some(Ok(other)) => panic!("only the creations: {other:?}"),
            Some(Err(StorageError::WatchOverflow { capacity })) => {
                assert_eq!(capacity, delivered + progress, "it reports the events it held");
                break;
            }
            other => panic!("the backlog overflows: {other:?}"),
        }
    }
    assert_eq!(delivered, 4, "4 MiB and a little hold four 1 MiB events and their keys");
    // A patient watch whose consumer goes away while it waits (8 MiB to replay, none read)
    // ends, and so does its etcd watch.
    let watchers = etcd_gauge(&etcd.members[0].client_url, "etcd_debugging_mvcc_watcher_total");
    let waiting = store.watch_patiently("/registry/big/", 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(waiting);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while etcd_gauge(&etcd.members[0].client_url, "etcd_debugging_mvcc_watcher_total") > watchers {
        assert!(std::time::Instant::now() < deadline, "the dropped watch's etcd watch is cancelled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut created = 0;
    while created < 8 {
        match tokio::time::timeout(Duration::from_secs(10), patient.next()).await.expect("every event") {
            Some(Ok(Event::Put { kv, .. })) => {
                assert_eq!(kv.key, format!("/registry/big/{created}"));
                created += 1;
            }
            Some(Ok(Event::Progress { .. })) => {}
            other => panic!("the patient watch goes on: {other:?}"),
        }
    }
}

/// Calls abandoned before etcd answers (an API client that goes away mid-request) do not cost
/// the connection either: etcd's answers to them arrive for streams h2 has reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_calls_keep_the_connection() {
    use kapi::storage::Storage;
    let (_dir, _etcd, store) = etcd_and_store().await;
    let store = std::sync::Arc::new(store);
    for round in 0..60 {
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..2_000 {
            let store = store.clone();
            calls.spawn(async move { store.current_revision().await });
        }
        // Abandoned at different points of their flight.
        tokio::time::sleep(Duration::from_millis(1 + round % 20)).await;
        calls.abort_all();
        while calls.join_next().await.is_some() {}
        store.current_revision().await.expect("the connection still serves");
    }
}

/// A TCP proxy in front of etcd that, when told, closes the connection on etcd's next bytes
/// for kapi: the request before them reached etcd and was applied, its answer never arrives.
struct CuttingProxy {
    url: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CuttingProxy {
    async fn start(etcd_url: &str) -> CuttingProxy {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let target = etcd_url.trim_start_matches("http://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cutting = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut etcd = tokio::net::TcpStream::connect(&target).await.unwrap();
                let cut = cutting.clone();
                tokio::spawn(async move {
                    let (mut to_etcd, mut from_etcd) = (vec![0; 65536], vec![0; 65536]);
                    loop {
                        tokio::select! {
                            n = client.read(&mut to_etcd) => match n {
                                Ok(n) if n > 0 && etcd.write_all(&to_etcd[..n]).await.is_ok() => {}
                                _ => return,
                            },
                            n = etcd.read(&mut from_etcd) => match n {
                                Ok(n) if n > 0 && !cut.swap(false, std::sync::atomic::Ordering::SeqCst) => {
                                    if client.write_all(&from_etcd[..n]).await.is_err() {
                                        return;
                                    }
                                }
                                _ => return,
                            },
                        }
                    }
                });
            }
        });
        CuttingProxy { url, cut }
    }

    /// Loses etcd's next answer, and the connection with it.
    fn cut_next_answer(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A write whose answer is lost is retried; the retry finds the write applied and answers with
/// it, as if the answer had arrived: a create is not refused as AlreadyExists for its own
/// object, an update is not taken for a conflict (which would apply its change again), and a
/// delete does not answer NotFound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_whose_answer_is_lost_are_not_refused_or_applied_twice() {
    use kapi::storage::Storage;
    let dir = tempfile::tempdir().unwrap();
    let etcd = Etcd::start(dir.path());
    let proxy = CuttingProxy::start(&etcd.members[0].client_url).await;
    let store = EtcdStore::connect(&EtcdConfig::new(vec![proxy.url.clone()])).await.unwrap();
    store.get("/registry/lost/warm").await.unwrap();

    let before = store.current_revision().await.unwrap();
    proxy.cut_next_answer();
    let created = store.create("/registry/lost/a", bytes::Bytes::from_static(b"one")).await.expect("the create succeeds");
    assert_eq!(created.mod_revision, before + 1);
    assert_eq!(store.get("/registry/lost/a").await.unwrap().unwrap(), created);

    proxy.cut_next_answer();
    let updated =
        store.update("/registry/lost/a", bytes::Bytes::from_static(b"two"), created.mod_revision).await.expect("the update succeeds");
    assert_eq!((updated.create_revision, updated.mod_revision), (created.mod_revision, created.mod_revision + 1));
    assert_eq!(store.get("/registry/lost/a").await.unwrap().unwrap(), updated);
    assert_eq!(store.current_revision().await.unwrap(), before + 2, "each write applied once");

    // A delete guarded on the version it read answers with what it deleted, at its revision.
    store.create("/registry/lost/b", bytes::Bytes::from_static(b"other")).await.unwrap();
    proxy.cut_next_answer();
    let (deleted, revision) = store.delete("/registry/lost/a", Some(updated.mod_revision)).await.expect("the delete succeeds");
    assert_eq!((deleted, revision), (updated.clone(), before + 4));
    assert_eq!(store.get("/registry/lost/a").await.unwrap(), None);

    // Someone else's object is still someone else's.
    proxy.cut_next_answer();
    let error = store.create("/registry/lost/b", bytes::Bytes::from_static(b"three")).await.unwrap_err();
    assert!(matches!(error, kapi::storage::StorageError::AlreadyExists { .. }), "{error:?}");
}
