//! Bad input against a started `kapi serve`, over raw HTTPS so that every byte and header is
//! under the test's control: each gets the right 4xx `Status`, and the server keeps serving.

mod common;

use std::time::{Duration, Instant};

use common::{request, start};

#[test]
fn bad_requests_get_status_errors_and_the_server_survives() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(&server, "GET", "/readyz", "text/plain", b"").0 != 200 {
        assert!(Instant::now() < deadline, "not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024 + 1)
    );
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        ("malformed JSON", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"#.to_vec(), 400, "BadRequest"),
        ("malformed YAML", "application/yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: [\n".to_vec(), 400, "BadRequest"),
        ("malformed protobuf", "application/vnd.kubernetes.protobuf", b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x05\x0a\xff".to_vec(), 400, "BadRequest"),
        ("protobuf without magic", "application/vnd.kubernetes.protobuf", b"\x0a\x02v1".to_vec(), 400, "BadRequest"),
        ("wrong kind for the URL", "application/json", br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#.to_vec(), 400, "BadRequest"),
        ("wrong field type", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":[1]}"#.to_vec(), 400, "BadRequest"),
        ("invalid name", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#.to_vec(), 422, "Invalid"),
        ("no name", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(), 422, "Invalid"),
        ("unsupported media type", "text/html", b"<html/>".to_vec(), 415, "UnsupportedMediaType"),
        ("body over 3 MiB", "application/json", big.into_bytes(), 413, "RequestEntityTooLarge"),
    ];
    for (what, content_type, body, code, reason) in cases {
        let (got, text) = request(&server, "POST", configmaps, content_type, &body);
        assert_eq!(got, code, "{what}: {text}");
        let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
        assert_eq!(status["kind"], "Status", "{what}");
        assert_eq!(status["reason"], reason, "{what}: {text}");
        assert_eq!(status["code"], code, "{what}");
    }
    // Unknown paths and methods.
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/default/widgets", "", b"").0, 404);
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/default/configmaps/nope", "", b"").0, 404);
    // Still serving after all of it.
    let (code, _) = request(
        &server,
        "POST",
        configmaps,
        "application/json",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}"#,
    );
    assert_eq!(code, 201);
    assert_eq!(request(&server, "GET", "/readyz", "text/plain", b"").0, 200);
}
