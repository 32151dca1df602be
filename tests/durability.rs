//! The server's durability promises, end to end: every create acknowledged with a 2xx survives
//! `kill -9`, objects keep their resourceVersions across a restart, and a watch resumed from an
//! old resourceVersion after the restart gets exactly the later events.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{request, start};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> Vec<u8> {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#).into_bytes()
}

fn names_in(list_body: &str) -> BTreeSet<String> {
    let list: serde_json::Value = serde_json::from_str(list_body).unwrap();
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn acknowledged_creates_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(start(dir.path()));
    server.wait_ready();
    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..16)
        .map(|c| {
            let (server, acknowledged, stop) = (server.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("c{c}-{i}");
                    let (code, _) = request(&server, "POST", CONFIGMAPS, "application/json", &configmap(&name));
                    if code == 201 {
                        acknowledged.lock().unwrap().insert(name);
                    } else if code == 0 {
                        break; // the server is gone
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // kill -9 while the clients are still writing.
    let pid = server.child.id();
    let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() > 16, "the clients got only {} creates through", acknowledged.len());
    drop(server);

    let server = start(dir.path());
    server.wait_ready();
    let (code, body) = request(&server, "GET", CONFIGMAPS, "", b"");
    assert_eq!(code, 200);
    let present = names_in(&body);
    let lost: Vec<&String> = acknowledged.difference(&present).collect();
    assert!(lost.is_empty(), "{} acknowledged creates lost after kill -9: {lost:?}", lost.len());
    server.kill();
}

#[test]
fn restart_keeps_resource_versions_and_watches_resume() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let (code, body) = request(&server, "POST", CONFIGMAPS, "application/json", &configmap("before"));
    assert_eq!(code, 201);
    let created: serde_json::Value = serde_json::from_str(&body).unwrap();
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    for name in ["after-1", "after-2"] {
        assert_eq!(request(&server, "POST", CONFIGMAPS, "application/json", &configmap(name)).0, 201);
    }
    assert_eq!(request(&server, "DELETE", &format!("{CONFIGMAPS}/after-1"), "", b"").0, 200);
    server.kill();

    let server = start(dir.path());
    server.wait_ready();
    let (_, body) = request(&server, "GET", &format!("{CONFIGMAPS}/before"), "", b"");
    let again: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(again["metadata"]["resourceVersion"], rv.as_str(), "same resourceVersion after restart");

    let (code, body) = request(&server, "GET", &format!("{CONFIGMAPS}?watch=1&resourceVersion={rv}&timeoutSeconds=1"), "", b"");
    assert_eq!(code, 200);
    // The body is chunked: keep the lines that are events.
    let events: Vec<(String, String)> = body
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let e: serde_json::Value = serde_json::from_str(l).unwrap();
            (e["type"].as_str().unwrap().to_owned(), e["object"]["metadata"]["name"].as_str().unwrap().to_owned())
        })
        .collect();
    let expected: Vec<(String, String)> =
        [("ADDED", "after-1"), ("ADDED", "after-2"), ("DELETED", "after-1")].iter().map(|(t, n)| (t.to_string(), n.to_string())).collect();
    assert_eq!(events, expected);
    server.kill();
}
