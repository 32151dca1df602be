//! Regression tests for the holes a review found in the request path (path normalisation,
//! body/URL disagreement, amplification, connection handling, unbounded memory, file modes,
//! large numbers), each against a started kapi over HTTPS, asserting upstream's status and that
//! nothing was written or deleted that should not have been — through the API, and through the
//! store itself once the server is stopped.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Server, header, request, request_full, start, start_with};
use serde_json::{Value, json};

fn call(server: &Server, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let body = if body.is_null() { Vec::new() } else { serde_json::to_vec(body).unwrap() };
    let content_type = if method == "PATCH" { "application/merge-patch+json" } else { "application/json" };
    let (code, text) = request(server, method, path, content_type, &body);
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn create_namespace(server: &Server, name: &str) {
    let (code, body) =
        call(server, "POST", "/api/v1/namespaces", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}));
    assert_eq!(code, 201, "{body}");
}

fn create_configmap(server: &Server, namespace: &str, name: &str) {
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}});
    let (code, body) = call(server, "POST", &path, &cm);
    assert_eq!(code, 201, "{body}");
}

fn configmap_names(server: &Server) -> Vec<String> {
    let (code, list) = call(server, "GET", "/api/v1/configmaps", &Value::Null);
    assert_eq!(code, 200, "{list}");
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cm| cm["metadata"]["name"] != "kube-root-ca.crt")
        .map(|cm| format!("{}/{}", cm["metadata"]["namespace"].as_str().unwrap_or("<none>"), cm["metadata"]["name"].as_str().unwrap()))
        .collect();
    names.sort();
    names
}

/// The keys under `/registry/<resource>/` in the embedded store of a stopped server.
fn stored_keys(dir: &Path, resource: &str) -> Vec<String> {
    use kapi::storage::Storage;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let store = kapi::storage::embedded::EmbeddedStore::open(dir.join("store.redb")).unwrap();
        let page = store.list(&format!("/registry/{resource}/"), Default::default()).await.unwrap();
        page.kvs.into_iter().map(|kv| kv.key).collect()
    })
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

#[test]
fn unclean_paths_are_redirected_before_anything_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    for ns in ["sa", "sb"] {
        create_namespace(&server, ns);
        create_configmap(&server, ns, "keep");
    }
    let before = configmap_names(&server);
    assert_eq!(before, ["sa/keep", "sb/keep"]);

    // An empty segment once dropped the namespace: the DELETE acted on every namespace and
    // the POST stored an object without one. Now both are a 301 to the clean path (which
    // clients follow with a GET), and nothing is written.
    let cases = [
        ("DELETE", "/api/v1//namespaces/sa/configmaps", "/api/v1/namespaces/sa/configmaps"),
        ("POST", "/api/v1//namespaces/sa/configmaps", "/api/v1/namespaces/sa/configmaps"),
        ("DELETE", "/api/v1/namespaces/sa/./configmaps/keep", "/api/v1/namespaces/sa/configmaps/keep"),
        ("DELETE", "/api/v1/namespaces/sa/../sb/configmaps/keep", "/api/v1/namespaces/sb/configmaps/keep"),
        // Escaped separators are cleaned once decoded, as Go's URL.Path is.
        ("DELETE", "/api/v1/namespaces/sa%2F..%2Fsb/configmaps", "/api/v1/namespaces/sb/configmaps"),
        ("PUT", "/api/v1/namespaces/sa/configmaps/%2E%2E/keep", "/api/v1/namespaces/sa/keep"),
        ("GET", "/healthz/../api/v1/secrets?watch=1", "/api/v1/secrets?watch=1"),
    ];
    let stray = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "stray"}})).unwrap();
    for (method, path, location) in cases {
        let (code, headers, _) = request_full(&server, method, path, &[("Content-Type", "application/json")], &stray);
        assert_eq!(code, 301, "{method} {path}");
        assert_eq!(header(&headers, "location"), Some(location), "{method} {path}");
    }
    assert_eq!(configmap_names(&server), before);

    // A name that is not one path segment never reaches a key.
    let (code, body) = call(&server, "GET", "/api/v1/namespaces/sa/configmaps/a%25b", &Value::Null);
    assert_eq!((code, message(&body)), (400, r#"Name parameter invalid: "a%b": may not contain '%'"#));

    drop(server);
    let keys = stored_keys(dir.path(), "configmaps");
    assert!(
        keys.contains(&"/registry/configmaps/sa/keep".to_owned()) && keys.contains(&"/registry/configmaps/sb/keep".to_owned()),
        "{keys:?}"
    );
    assert!(keys.iter().all(|k| k.split('/').count() == 5), "a key outside a namespace: {keys:?}");
}

#[test]
fn bodies_may_not_name_another_namespace_or_a_name_with_a_slash() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    for ns in ["a", "b"] {
        create_namespace(&server, ns);
    }
    create_configmap(&server, "a", "cm");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "victim"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/b/pods", &pod).0, 201);

    let mismatch = "the namespace of the provided object does not match the namespace sent on the request";
    // A binding in namespace b sent to namespace a: refused before any lookup.
    let binding =
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "victim", "namespace": "b"}, "target": {"name": "node-1"}});
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/a/bindings", &binding);
    assert_eq!((code, message(&body)), (400, mismatch));
    // Create, update and subresources alike.
    let cm_b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "b"}});
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/a/configmaps", &cm_b);
    assert_eq!((code, message(&body)), (400, mismatch));
    let (code, body) = call(&server, "PUT", "/api/v1/namespaces/a/configmaps/cm", &cm_b);
    assert_eq!((code, message(&body)), (400, mismatch));
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "victim", "namespace": "a"}});
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/b/pods/victim/eviction", &eviction);
    assert_eq!((code, message(&body)), (400, mismatch));
    // A patch may not move or rename the object (upstream's checkName wording).
    let (code, body) = call(&server, "PATCH", "/api/v1/namespaces/a/configmaps/cm", &json!({"metadata": {"namespace": "b"}}));
    assert_eq!((code, message(&body)), (400, "the namespace of the object (b) does not match the namespace on the request (a)"));
    let (code, body) = call(&server, "PATCH", "/api/v1/namespaces/a/configmaps/cm", &json!({"metadata": {"name": "other"}}));
    assert_eq!((code, message(&body)), (400, "the name of the object (other) does not match the name on the URL (cm)"));

    // A name with a slash in a body never becomes a key.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b/victim"}, "target": {"name": "node-1"}});
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/a/bindings", &binding);
    assert_eq!(code, 400, "{body}");
    assert_eq!(message(&body), r#"Name parameter invalid: "b/victim": may not contain '/'"#);

    // Nothing moved: the pod is unbound, the config map unchanged, nothing in namespace b.
    let (_, victim) = call(&server, "GET", "/api/v1/namespaces/b/pods/victim", &Value::Null);
    assert!(victim["spec"]["nodeName"].is_null(), "{victim}");
    assert_eq!(configmap_names(&server), ["a/cm"]);
    drop(server);
    let keys = stored_keys(dir.path(), "configmaps");
    assert!(keys.iter().all(|k| !k.starts_with("/registry/configmaps/b/") || k.ends_with("/kube-root-ca.crt")), "{keys:?}");
    assert_eq!(stored_keys(dir.path(), "pods"), ["/registry/pods/b/victim"]);
}

#[test]
fn json_patches_cannot_amplify_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "p");
    create_configmap(&server, "p", "cm");
    let path = "/api/v1/namespaces/p/configmaps/cm";
    let patch = |ops: &Value| request(&server, "PATCH", path, "application/json-patch+json", &serde_json::to_vec(ops).unwrap());

    // Each copy doubles the document: 30 of them would be 200 GB.
    let mut ops = vec![json!({"op": "add", "path": "/data/x", "value": "y".repeat(200)})];
    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
    for i in 0..30 {
        ops.push(json!({"op": "copy", "from": "/data", "path": format!("/metadata/annotations/a{i}")}));
        ops.push(json!({"op": "copy", "from": "/metadata/annotations", "path": "/data/nested"}));
    }
    let rss_before = server.rss_kib();
    let (code, body) = patch(&Value::Array(ops));
    assert_eq!(code, 422, "{body}");
    let rss_after = server.rss_kib();
    assert!(rss_after < rss_before + 200 * 1024, "RSS grew from {rss_before} to {rss_after} KiB");

    // More operations than upstream's maxJSONPatchOperations: 413.
    let ops: Vec<Value> = (0..10_001).map(|_| json!({"op": "test", "path": "/data/k", "value": "v"})).collect();
    let (code, body) = patch(&Value::Array(ops));
    assert_eq!(code, 413, "{body}");
    assert!(body.contains("The allowed maximum operations in a JSON patch is 10000, got 10001"), "{body}");

    let (_, cm) = call(&server, "GET", path, &Value::Null);
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert!(cm["metadata"]["annotations"].is_null(), "{cm}");
}

#[test]
fn yaml_aliases_cannot_amplify_a_body() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "y");
    // A 100 kB anchored string referenced 20,000 times: 2 GB once expanded, from a 180 kB body.
    let mut yaml =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  annotations:\n    a: &a {}\ndata:\n", "x".repeat(100_000));
    for i in 0..20_000 {
        yaml.push_str(&format!("  k{i}: *a\n"));
    }
    // Nested aliases, each level nine times the one before.
    let mut laughs =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..10 {
        let refs = vec![format!("*x{}", level - 1); 9].join(", ");
        laughs.push_str(&format!("x{level}: &x{level} [{refs}]\n"));
    }
    let rss_before = server.rss_kib();
    for body in [yaml, laughs] {
        let (code, text) = request(&server, "POST", "/api/v1/namespaces/y/configmaps", "application/yaml", body.as_bytes());
        assert_eq!(code, 400, "{text}");
        assert!(text.contains("excessive aliasing"), "{text}");
    }
    let rss_after = server.rss_kib();
    assert!(rss_after < rss_before + 200 * 1024, "RSS grew from {rss_before} to {rss_after} KiB");
    assert_eq!(configmap_names(&server), Vec::<String>::new());

    // A document with a few anchors is fine.
    let fine = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  labels: &l {app: web}\n  annotations: *l\n";
    let (code, text) = request(&server, "POST", "/api/v1/namespaces/y/configmaps", "application/yaml", fine.as_bytes());
    assert_eq!(code, 201, "{text}");
}

/// Reads until the server closes the connection; how long that took.
fn time_until_closed(stream: &mut impl Read) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return started.elapsed(),
            Ok(_) => {}
        }
    }
}

#[test]
fn idle_slow_and_silent_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--read-header-timeout", "2s", "--idle-timeout", "4s"]);
    server.wait_ready();

    // A TCP connection that never starts TLS: closed at the handshake deadline.
    let mut silent = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let waited = time_until_closed(&mut silent);
    assert!(waited >= Duration::from_millis(1500) && waited < Duration::from_secs(6), "{waited:?}");

    // TLS done, no request: closed at the header deadline.
    let mut quiet = common::tls_stream(&server).unwrap();
    let waited = time_until_closed(&mut quiet);
    assert!(waited >= Duration::from_millis(1500) && waited < Duration::from_secs(6), "{waited:?}");

    // Headers dripped a byte a second (slow loris): closed at the header deadline too.
    let mut slow = common::tls_stream(&server).unwrap();
    slow.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    let started = Instant::now();
    let mut closed = false;
    while started.elapsed() < Duration::from_secs(10) {
        if slow.write_all(b"X").and_then(|()| slow.flush()).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        let mut probe = [0u8; 1];
        slow.sock.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        if let Ok(0) = slow.read(&mut probe) {
            closed = true;
            break;
        }
    }
    assert!(closed && started.elapsed() < Duration::from_secs(8), "slow headers kept the connection {:?}", started.elapsed());

    // A keep-alive connection after one answer: kept past the header deadline, closed at the
    // idle timeout.
    let mut kept = common::tls_stream(&server).unwrap();
    kept.write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = kept.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let waited = time_until_closed(&mut kept);
    assert!(waited >= Duration::from_millis(3500) && waited < Duration::from_secs(9), "{waited:?}");
}

#[test]
fn a_request_body_sent_too_slowly_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "t");
    let mut stream = common::tls_stream(&server).unwrap();
    stream
        .write_all(b"POST /api/v1/namespaces/t/configmaps?timeout=1s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"apiVersion\"")
        .unwrap();
    let started = Instant::now();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    while !response.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(configmap_names(&server), Vec::<String>::new());
}

#[test]
fn connections_beyond_the_cap_wait_for_a_free_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--max-connections", "8"]);
    server.wait_ready();
    // `wait_ready`'s connections have closed; hold all eight slots.
    std::thread::sleep(Duration::from_millis(200));
    let held: Vec<_> = (0..8).map(|_| common::tls_stream(&server).unwrap()).collect();
    // The ninth connects (the kernel's backlog) but is not served while all slots are taken.
    let ninth =
        std::thread::scope(|scope| scope.spawn(|| common::tls_stream_within(&server, Duration::from_secs(1)).is_ok()).join().unwrap());
    assert!(!ninth, "a ninth connection was served");
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    while request(&server, "GET", "/version", "text/plain", b"").0 != 200 {
        assert!(Instant::now() < deadline, "no slot came free");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn thousands_of_idle_and_slow_connections_leave_room_for_real_clients() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--read-header-timeout", "15s"]);
    server.wait_ready();
    std::thread::sleep(Duration::from_millis(300));
    let (rss_before, fds_before) = (server.rss_kib(), server.open_fds());

    // 1,000 TCP connections that never speak, 1,000 TLS connections that start a request and
    // stall (slow loris).
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap());
    }
    let mut slow = Vec::new();
    for _ in 0..1000 {
        let mut s = common::tls_stream(&server).unwrap();
        s.write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\nX-Slow: ").unwrap();
        slow.push(s);
    }
    let started = Instant::now();
    let (code, body) = request(&server, "GET", "/api/v1/namespaces", "application/json", b"");
    let answered_in = started.elapsed();
    assert_eq!(code, 200, "{body}");
    // The last connections may still be in the accept queue: the most fds seen over a second.
    let mut fds_held = 0;
    for _ in 0..10 {
        fds_held = fds_held.max(server.open_fds());
        std::thread::sleep(Duration::from_millis(100));
    }
    let rss_held = server.rss_kib();
    assert!(fds_held >= fds_before + 1900, "the server holds {fds_held} fds (before: {fds_before})");

    // The server closes them all itself at the header deadline.
    let deadline = Instant::now() + Duration::from_secs(40);
    while server.open_fds() > fds_before + 10 {
        assert!(Instant::now() < deadline, "still {} fds open (before: {fds_before})", server.open_fds());
        std::thread::sleep(Duration::from_millis(200));
    }
    let (rss_after, fds_after) = (server.rss_kib(), server.open_fds());
    eprintln!(
        "2,000 idle/slow connections: RSS {rss_before} → {rss_held} → {rss_after} KiB, fds {fds_before} → {fds_held} → {fds_after}; a real request answered in {answered_in:?} meanwhile"
    );
    assert!(rss_held < rss_before + 256 * 1024, "RSS {rss_held} KiB with the connections open (before: {rss_before})");
    drop((idle, slow));
}

#[test]
fn metrics_series_do_not_grow_with_made_up_paths() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let series = |server: &Server| {
        let (code, text) = request(server, "GET", "/metrics", "text/plain", b"");
        assert_eq!(code, 200);
        text.lines().filter(|l| l.starts_with("apiserver_request_total")).count()
    };
    for i in 0..50 {
        request(&server, "GET", &format!("/made/up/{i}"), "text/plain", b"");
    }
    let before = series(&server);
    for i in 0..200 {
        request(&server, "GET", &format!("/made/up/{i}/again"), "text/plain", b"");
        request(&server, "GET", &format!("/apis/made.up/v{i}/things"), "text/plain", b"");
        request(&server, "FROB", &format!("/api/v1/x{i}"), "text/plain", b"");
    }
    assert!(series(&server) <= before + 2, "{} series after 600 made-up requests, {before} before", series(&server));
}

#[test]
fn objects_larger_than_etcd_accepts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "e");
    // An Event with a 2 MB message: under the 3 MiB body limit, over etcd's 1.5 MiB request limit.
    let event = json!({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "big"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "e"}, "message": "m".repeat(2_000_000),
    });
    // Upstream passes etcd's refusal through as a 500 without a reason
    // (test/integration/apiserver TestObjectSizeResponses).
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/e/events", &event);
    assert_eq!((code, message(&body)), (500, "etcdserver: request is too large"), "{body}");
    let (code, _) = call(&server, "GET", "/api/v1/namespaces/e/events/big", &Value::Null);
    assert_eq!(code, 404);
}

#[test]
fn events_expire_on_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["--event-ttl", "2s"]);
    server.wait_ready();
    create_namespace(&server, "ttl");
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "short"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ttl"}});
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/ttl/events", &event).0, 201);
    create_configmap(&server, "ttl", "stays");
    let deadline = Instant::now() + Duration::from_secs(10);
    while call(&server, "GET", "/api/v1/namespaces/ttl/events/short", &Value::Null).0 != 404 {
        assert!(Instant::now() < deadline, "the event outlived its TTL");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/ttl/configmaps/stays", &Value::Null).0, 200);
    drop(server);
    assert!(stored_keys(dir.path(), "events").is_empty());
}

#[test]
fn state_on_disk_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = start(&data);
    server.wait_ready();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    for file in ["store.redb", "admin.kubeconfig"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    for entry in walk(&data.join("pki")) {
        if entry.extension().is_some_and(|e| e == "key") {
            assert_eq!(mode(&entry), 0o600, "{}", entry.display());
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn huge_numbers_are_range_checked_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "n");
    create_configmap(&server, "n", "cm");
    let cases = [
        ("GET", "/api/v1/namespaces/n/configmaps?timeoutSeconds=9223372036854775807", true),
        ("GET", "/api/v1/namespaces/n/configmaps?limit=9223372036854775807", true),
        ("GET", "/api/v1/namespaces/n/configmaps?limit=-9223372036854775808", true),
        ("GET", "/api/v1/namespaces/n/configmaps?timeoutSeconds=99999999999999999999999", false),
        ("GET", "/api/v1/namespaces/n/configmaps?resourceVersion=99999999999999999999999", false),
        ("DELETE", "/api/v1/namespaces/n/configmaps/none?gracePeriodSeconds=9223372036854775807", false),
        ("DELETE", "/api/v1/namespaces/n/configmaps/none?gracePeriodSeconds=-9223372036854775808", false),
    ];
    for (method, path, ok) in cases {
        let (code, headers, body) = request_full(&server, method, path, &[("Accept", "application/json")], b"");
        let body = String::from_utf8_lossy(&body);
        assert!(code != 0 && code != 500, "{method} {path}: {code} {body}");
        if ok {
            assert_eq!(code, 200, "{method} {path}: {body}");
        } else {
            assert!((400..500).contains(&code), "{method} {path}: {code} {body}");
        }
        let _ = headers;
    }
    // A watch with the largest timeout starts (its first event arrives) and is not crashed on.
    let mut watch = common::tls_stream(&server).unwrap();
    watch
        .write_all(b"GET /api/v1/namespaces/n/configmaps?watch=1&timeoutSeconds=9223372036854775807 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 64];
    let n = watch.read(&mut head).unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head[..n]));
    drop(watch);

    // A pod deleted with the largest grace period is marked, not crashed on.
    let pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/n/pods", &pod).0, 201);
    let options = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": i64::MAX});
    let (code, body) = call(&server, "DELETE", "/api/v1/namespaces/n/pods/p", &options);
    assert!(code == 200 || code == 422 || code == 400, "{code} {body}");
    server.wait_ready();
}

#[test]
fn a_watch_whose_client_stops_reading_still_ends_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    create_namespace(&server, "w");
    // 200 objects of 100 kB: more than the response's buffers and the socket's hold.
    let data = "d".repeat(100_000);
    for i in 0..200 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm{i}")}, "data": {"d": data}});
        assert_eq!(call(&server, "POST", "/api/v1/namespaces/w/configmaps", &cm).0, 201);
    }
    let mut watch = common::tls_stream(&server).unwrap();
    watch
        .write_all(b"GET /api/v1/namespaces/w/configmaps?watch=1&resourceVersion=0&timeoutSeconds=2 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // Not reading while the deadline passes: the server's sends block on the full buffers.
    std::thread::sleep(Duration::from_secs(4));
    let mut received = Vec::new();
    let _ = watch.read_to_end(&mut received);
    let events = received.windows(7).filter(|w| w == b"\"ADDED\"").count();
    assert!(events > 0 && events < 200, "{events} events arrived: the watch went on past its timeout");
}
