//! Custom resources on the wire, against a started `kapi serve`: what apiextensions-apiserver
//! answers that kubectl does not show (media types, unserved versions, name conflicts, a
//! terminating definition). `tests/kubectl.rs` drives the same resources with kubectl.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::{Server, request, request_with};

const JSON: &str = "application/json";
const DEFINITIONS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn definition(plural: &str, kind: &str, short_names: &[&str]) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind, "shortNames": short_names},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

fn call(server: &Server, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let body = if body.is_null() { Vec::new() } else { serde_json::to_vec(body).unwrap() };
    let (code, text) = request(server, method, path, JSON, &body);
    (code, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Waits until `done` holds of the answer to a GET of `path`.
fn wait_until(server: &Server, path: &str, what: &str, done: impl Fn(u16, &Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = call(server, "GET", path, &Value::Null);
        if done(code, &body) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {code} {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn condition<'a>(definition: &'a Value, kind: &str) -> &'a Value {
    definition["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == kind)).unwrap_or(&Value::Null)
}

#[test]
fn custom_resources_on_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    // Definitions are validated as upstream validates them.
    let mut invalid = definition("widgets", "Widget", &["wd"]);
    invalid["metadata"]["name"] = json!("others.example.com");
    invalid["spec"]["names"]["shortNames"] = json!(["Wd"]);
    let (code, status) = call(&server, "POST", DEFINITIONS, &invalid);
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"others.example.com\" is invalid: [metadata.name: Invalid value: \"others.example.com\": \
         must be spec.names.plural+\".\"+spec.group, spec.names.shortNames[0]: Invalid value: \"Wd\": a DNS-1035 label must \
         consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric \
         character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
    );
    assert_eq!(call(&server, "POST", DEFINITIONS, &definition("widgets", "Widget", &["wd"])).0, 201);
    wait_until(&server, &format!("{DEFINITIONS}/widgets.example.com"), "established", |_, d| {
        condition(d, "Established")["status"] == "True"
    });
    wait_until(&server, WIDGETS, "served", |code, _| code == 200);

    let (code, created) =
        call(&server, "POST", WIDGETS, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}}));
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1);
    // Protobuf has no custom resource form: 406 for answers, 415 for bodies.
    let protobuf = "application/vnd.kubernetes.protobuf";
    assert_eq!(request_with(&server, "GET", &format!("{WIDGETS}/a"), &[("Accept", protobuf)], b"").0, 406);
    assert_eq!(request_with(&server, "POST", WIDGETS, &[("Content-Type", protobuf)], b"k8s\0").0, 415);
    // Strategic merge patches need Go types: 415, as upstream.
    let (code, status) = request(&server, "PATCH", &format!("{WIDGETS}/a"), "application/strategic-merge-patch+json", b"{}");
    assert_eq!(code, 415, "{status}");
    // A version no definition serves, a subresource it does not have: not found.
    assert_eq!(call(&server, "GET", "/apis/example.com/v2/namespaces/default/widgets/a", &Value::Null).0, 404);
    assert_eq!(call(&server, "GET", &format!("{WIDGETS}/a/status"), &Value::Null).0, 404);
    // Stored as JSON at upstream's key; cluster-wide lists reach every namespace.
    let (code, list) = call(&server, "GET", "/apis/example.com/v1/widgets", &Value::Null);
    assert_eq!((code, list["kind"].as_str(), list["items"][0]["metadata"]["name"].as_str()), (200, Some("WidgetList"), Some("a")));

    // A second definition whose kind is taken is not accepted, and serves nothing.
    assert_eq!(call(&server, "POST", DEFINITIONS, &definition("gadgets", "Widget", &[])).0, 201);
    wait_until(&server, &format!("{DEFINITIONS}/gadgets.example.com"), "conflict recorded", |_, d| {
        let accepted = condition(d, "NamesAccepted");
        accepted["status"] == "False" && accepted["reason"] == "KindConflict" && accepted["message"] == "\"Widget\" is already in use"
    });
    assert_eq!(call(&server, "GET", "/apis/example.com/v1/namespaces/default/gadgets", &Value::Null).0, 404);

    // A definition being deleted waits for its objects' finalizers, refuses creates meanwhile,
    // and goes once they are gone.
    let held = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(call(&server, "POST", WIDGETS, &held).0, 201);
    let (code, deleting) = call(&server, "DELETE", &format!("{DEFINITIONS}/widgets.example.com"), &Value::Null);
    assert_eq!(code, 200, "{deleting}");
    assert!(deleting["metadata"]["finalizers"].as_array().unwrap().iter().any(|f| f == "customresourcecleanup.apiextensions.k8s.io"));
    assert_eq!(condition(&deleting, "Terminating")["reason"], "InstanceDeletionPending");
    wait_until(&server, &format!("{WIDGETS}/a"), "unheld object deleted", |code, _| code == 404);
    wait_until(&server, &format!("{WIDGETS}/held"), "held object marked", |_, w| w["metadata"]["deletionTimestamp"].is_string());
    let (code, refused) =
        call(&server, "POST", WIDGETS, &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "b"}}));
    assert_eq!((code, refused["message"].as_str()), (405, Some("create not allowed while custom resource definition is terminating")));
    let release = json!([{"op": "remove", "path": "/metadata/finalizers"}]);
    let (code, _) =
        request(&server, "PATCH", &format!("{WIDGETS}/held"), "application/json-patch+json", &serde_json::to_vec(&release).unwrap());
    assert_eq!(code, 200);
    wait_until(&server, &format!("{DEFINITIONS}/widgets.example.com"), "definition deleted", |code, _| code == 404);
    wait_until(&server, WIDGETS, "no longer served", |code, _| code == 404);
}

/// A version's `selectableFields` are field selectors on its objects; other labels are
/// upstream's 400.
#[test]
fn selectable_fields_select() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    let mut colored = definition("widgets", "Widget", &[]);
    colored["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}]);
    assert_eq!(call(&server, "POST", DEFINITIONS, &colored).0, 201);
    wait_until(&server, WIDGETS, "served", |code, _| code == 200);
    for (name, color, size) in [("a", "red", 1), ("b", "blue", 2), ("c", "red", 3)] {
        let widget =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"color": color, "size": size}});
        assert_eq!(call(&server, "POST", WIDGETS, &widget).0, 201);
    }
    let names = |selector: &str| -> Vec<String> {
        let (code, list) = call(&server, "GET", &format!("{WIDGETS}?fieldSelector={selector}"), &Value::Null);
        assert_eq!(code, 200, "{list}");
        list["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("spec.color%3Dred"), ["a", "c"]);
    assert_eq!(names("spec.color%3Dred,spec.size%21%3D3"), ["a"]);
    assert_eq!(names("metadata.name%3Db"), ["b"]);
    let (code, status) = call(&server, "GET", &format!("{WIDGETS}?fieldSelector=spec.shape%3Dround"), &Value::Null);
    assert_eq!(code, 400);
    assert!(status["message"].as_str().is_some_and(|m| m.ends_with("field label not supported: spec.shape")), "{status}");
}
