//! What typed clients send and ask for, against a started kapi over HTTPS: bodies without
//! `apiVersion`/`kind` (the Python client's models leave them out), and write answers in the
//! representation the client asked for (`as=PartialObjectMetadata`, `as=Table`).

mod common;

use common::{Server, request_with, start};
use serde_json::{Value, json};

fn send(server: &Server, method: &str, path: &str, content_type: &str, accept: &str, body: &[u8]) -> (u16, Value) {
    let (code, bytes) = request_with(server, method, path, &[("Content-Type", content_type), ("Accept", accept)], body);
    (code, serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())))
}

#[test]
fn bodies_without_type_meta_take_the_urls() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    // create_namespace(V1Namespace(metadata=V1ObjectMeta(name="x"))), as the Python client sends it.
    let (code, ns) = send(&server, "POST", "/api/v1/namespaces", "application/json", "application/json", br#"{"metadata":{"name":"x"}}"#);
    assert_eq!(code, 201, "{ns}");
    assert_eq!((ns["apiVersion"].as_str(), ns["kind"].as_str()), (Some("v1"), Some("Namespace")));
    // Only a kind, only an apiVersion; YAML alike.
    let (code, cm) = send(
        &server,
        "POST",
        "/api/v1/namespaces/x/configmaps",
        "application/json",
        "application/json",
        br#"{"kind":"ConfigMap","metadata":{"name":"a"}}"#,
    );
    assert_eq!((code, cm["apiVersion"].as_str()), (201, Some("v1")), "{cm}");
    let (code, deploy) = send(
        &server,
        "POST",
        "/apis/apps/v1/namespaces/x/deployments",
        "application/yaml",
        "application/json",
        b"apiVersion: apps/v1\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: web, image: nginx}]\n",
    );
    assert_eq!((code, deploy["kind"].as_str()), (201, Some("Deployment")), "{deploy}");
    // An update without them too.
    let (code, updated) = send(
        &server,
        "PUT",
        "/api/v1/namespaces/x/configmaps/a",
        "application/json",
        "application/json",
        br#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#,
    );
    assert_eq!((code, updated["data"]["k"].as_str()), (200, Some("v")), "{updated}");
    // A body naming another group-version than the URL is refused, with upstream's wording.
    let (code, status) = send(
        &server,
        "POST",
        "/apis/apps/v1/namespaces/x/deployments",
        "application/json",
        "application/json",
        br#"{"apiVersion":"v1","metadata":{"name":"w2"}}"#,
    );
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], "the API version in the data (v1) does not match the expected API version (apps/v1)");
}

#[test]
fn write_answers_follow_the_requested_representation() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let metadata_only = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let (code, ns) = send(&server, "POST", "/api/v1/namespaces", "application/json", metadata_only, br#"{"metadata":{"name":"p"}}"#);
    assert_eq!(code, 201, "{ns}");
    assert_eq!(ns["kind"], "PartialObjectMetadata");
    assert_eq!(ns["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(ns["metadata"]["name"], "p");
    assert!(ns.get("spec").is_none() && ns.get("status").is_none(), "{ns}");
    // A metadata patch (what `kubectl label` and controllers send).
    let (code, patched) = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/p",
        "application/merge-patch+json",
        metadata_only,
        br#"{"metadata":{"labels":{"team":"a"}}}"#,
    );
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["kind"], "PartialObjectMetadata");
    assert_eq!(patched["metadata"]["labels"], json!({"kubernetes.io/metadata.name": "p", "team": "a"}));
    // A Table for an update.
    let table = "application/json;as=Table;g=meta.k8s.io;v=v1";
    let (code, _) =
        send(&server, "POST", "/api/v1/namespaces/p/configmaps", "application/json", "application/json", br#"{"metadata":{"name":"t"}}"#);
    assert_eq!(code, 201);
    let (code, answer) = send(
        &server,
        "PUT",
        "/api/v1/namespaces/p/configmaps/t",
        "application/json",
        table,
        br#"{"metadata":{"name":"t"},"data":{"a":"b"}}"#,
    );
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["kind"], "Table");
    assert_eq!(answer["rows"][0]["cells"][0], "t");
}

#[test]
fn value_structs_are_always_written() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    // A Service created without a status has Go's `ServiceStatus{}`: `{"loadBalancer":{}}`.
    let svc = br#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}"#;
    let (code, created) = send(&server, "POST", "/api/v1/namespaces/default/services", "application/json", "application/json", svc);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"], json!({"loadBalancer": {}}));
    let (_, read) = send(&server, "GET", "/api/v1/namespaces/default/services/s", "", "application/json", b"");
    assert_eq!(read["status"], json!({"loadBalancer": {}}));
    // A pod's `omitempty` booleans left false are not written back.
    let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"hostNetwork":false,"containers":[{"name":"c","image":"nginx","stdin":false,"tty":false}]}}"#;
    let (code, created) = send(&server, "POST", "/api/v1/namespaces/default/pods", "application/json", "application/json", pod);
    assert_eq!(code, 201, "{created}");
    assert!(created["spec"].get("hostNetwork").is_none(), "{created}");
    assert!(created["spec"]["containers"][0].get("stdin").is_none() && created["spec"]["containers"][0].get("tty").is_none(), "{created}");
    assert_eq!(created["status"]["phase"], "Pending");
}
