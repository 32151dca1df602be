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
        (
            "malformed protobuf",
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x05\x0a\xff".to_vec(),
            400,
            "BadRequest",
        ),
        ("protobuf without magic", "application/vnd.kubernetes.protobuf", b"\x0a\x02v1".to_vec(), 400, "BadRequest"),
        (
            "wrong kind for the URL",
            "application/json",
            br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "wrong field type",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":[1]}"#.to_vec(),
            400,
            "BadRequest",
        ),
        (
            "invalid name",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#.to_vec(),
            422,
            "Invalid",
        ),
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
    let (code, _) =
        request(&server, "POST", configmaps, "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}"#);
    assert_eq!(code, 201);
    assert_eq!(request(&server, "GET", "/readyz", "text/plain", b"").0, 200);
}

/// Objects that decode but break upstream's validation rules get upstream's 422 `Invalid`, with
/// its message and one cause per field error; dry-run validates too.
#[test]
fn invalid_objects_get_upstreams_field_errors() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(&server, "GET", "/readyz", "text/plain", b"").0 != 200 {
        assert!(Instant::now() < deadline, "not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let invalid = |method: &str, path: &str, content_type: &str, body: &str| -> serde_json::Value {
        let (code, text) = request(&server, method, path, content_type, body.as_bytes());
        assert_eq!(code, 422, "{method} {path}: {text}");
        let status: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status["reason"], "Invalid", "{text}");
        status
    };
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = |selector: &str, labels: &str| {
        format!(
            r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"web"}},"spec":{{"selector":{{"matchLabels":{selector}}},"template":{{"metadata":{{"labels":{labels}}},"spec":{{"containers":[{{"name":"web","image":"nginx"}}]}}}}}}}}"#
        )
    };

    // The selector must select the template's pods.
    let status = invalid("POST", deployments, "application/json", &deployment(r#"{"app":"web"}"#, r#"{"app":"other"}"#));
    assert_eq!(
        status["message"],
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"
    );
    assert_eq!(status["details"]["causes"][0]["field"], "spec.template.metadata.labels");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
    // A missing selector: both errors, as upstream reports them.
    let status = invalid(
        "POST",
        deployments,
        "application/json",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx"}]}}}}"#,
    );
    assert_eq!(
        status["message"],
        "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`]"
    );
    // Dry-run validates as well.
    invalid("POST", &format!("{deployments}?dryRun=All"), "application/json", &deployment(r#"{"app":"web"}"#, r#"{"app":"x"}"#));

    // The selector of a stored deployment does not change: update and patch.
    let (code, text) =
        request(&server, "POST", deployments, "application/json", deployment(r#"{"app":"web"}"#, r#"{"app":"web"}"#).as_bytes());
    assert_eq!(code, 201, "{text}");
    let status = invalid(
        "PUT",
        &format!("{deployments}/web"),
        "application/json",
        &deployment(r#"{"app":"web","tier":"x"}"#, r#"{"app":"web","tier":"x"}"#),
    );
    assert_eq!(
        status["message"],
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable"
    );
    invalid(
        "PATCH",
        &format!("{deployments}/web"),
        "application/merge-patch+json",
        r#"{"spec":{"selector":{"matchLabels":{"tier":"x"}},"template":{"metadata":{"labels":{"tier":"x"}}}}}"#,
    );
    // Changes that keep the selector are fine.
    let (code, text) =
        request(&server, "PATCH", &format!("{deployments}/web"), "application/merge-patch+json", br#"{"spec":{"replicas":3}}"#);
    assert_eq!(code, 200, "{text}");
    // Status writes are checked too.
    let status =
        invalid("PATCH", &format!("{deployments}/web/status"), "application/merge-patch+json", r#"{"status":{"readyReplicas":-1}}"#);
    assert_eq!(
        status["message"],
        "Deployment.apps \"web\" is invalid: status.readyReplicas: Invalid value: -1: must be greater than or equal to 0"
    );

    // A pod needs an image for each container.
    let status = invalid(
        "POST",
        "/api/v1/namespaces/default/pods",
        "application/json",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"app"}]}}"#,
    );
    assert_eq!(status["message"], "Pod \"p\" is invalid: spec.containers[0].image: Required value");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.containers[0].image");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueRequired");

    // An immutable config map keeps its data.
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let (code, text) = request(
        &server,
        "POST",
        configmaps,
        "application/json",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}"#,
    );
    assert_eq!(code, 201, "{text}");
    let status = invalid("PATCH", &format!("{configmaps}/frozen"), "application/merge-patch+json", r#"{"data":{"a":"2"}}"#);
    assert_eq!(status["message"], "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set");
}
