//! Custom resources on the wire, against a started `kapi serve`: what apiextensions-apiserver
//! answers that kubectl does not show (media types, unserved versions, name conflicts, a
//! terminating definition). `tests/kubectl.rs` drives the same resources with kubectl.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::webhook::ConversionWebhook;
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
    // A schema that is not structural is refused with upstream's list of violations.
    let mut loose = definition("widgets", "Widget", &[]);
    loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object", "properties": {
        "spec": {"properties": {"size": {"type": "integer"}}, "anyOf": [{"type": "object"}]}}});
    let (code, status) = call(&server, "POST", DEFINITIONS, &loose);
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: [\
         spec.validation.openAPIV3Schema.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural, \
         spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields]"
    );
    let openapi_v2_etag = |server: &Server| {
        let (code, headers, _) = common::request_full(server, "GET", "/openapi/v2", &[("Accept", JSON)], b"");
        assert_eq!(code, 200);
        common::header(&headers, "etag").unwrap().to_owned()
    };
    let built_in_etag = openapi_v2_etag(&server);
    assert_eq!(call(&server, "POST", DEFINITIONS, &definition("widgets", "Widget", &["wd"])).0, 201);
    wait_until(&server, &format!("{DEFINITIONS}/widgets.example.com"), "established", |_, d| {
        condition(d, "Established")["status"] == "True"
    });
    wait_until(&server, WIDGETS, "served", |code, _| code == 200);
    // `/openapi/v2` shows the served kinds beside the built-in ones, under a new ETag.
    let (_, v2) = call(&server, "GET", "/openapi/v2", &Value::Null);
    let widget = &v2["definitions"]["com.example.v1.Widget"];
    assert_eq!(widget["x-kubernetes-group-version-kind"], json!([{"group": "example.com", "kind": "Widget", "version": "v1"}]), "{widget}");
    assert!(v2["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"].is_object());
    assert!(v2["definitions"]["io.k8s.api.core.v1.Pod"].is_object());
    assert_ne!(openapi_v2_etag(&server), built_in_etag);

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

/// A definition whose versions differ converts through its webhook: v1 (stored) has
/// `spec.cronSpec`, v2 `spec.schedule`; the webhook renames the field each way and labels what
/// it converted. Objects are written and read in either version; the server keeps the
/// original's metadata but for labels and annotations, and a failing webhook fails the read
/// with upstream's message.
#[test]
fn conversion_webhooks_convert_between_versions() {
    let webhook = ConversionWebhook::start(|object, desired| {
        let mut converted = object.clone();
        let spec = converted["spec"].as_object_mut().ok_or("no spec")?;
        if spec.contains_key("unconvertible") {
            return Err("cannot convert this one".into());
        }
        let (from, to) = if desired == "example.com/v2" { ("cronSpec", "schedule") } else { ("schedule", "cronSpec") };
        if let Some(value) = spec.remove(from) {
            spec.insert(to.into(), value);
        }
        converted["apiVersion"] = json!(desired);
        converted["metadata"]["labels"] = json!({"converted": "yes"});
        // Not the webhook's to change: the server puts the original's back.
        converted["metadata"]["generation"] = json!(99);
        Ok(converted)
    });
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {field: {"type": "string"}}}}}})
    };
    let mut crontabs = definition("crontabs", "CronTab", &[]);
    crontabs["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": schema("cronSpec")},
        {"name": "v2", "served": true, "storage": false, "schema": schema("schedule")},
    ]);
    // The webhook's client configuration is validated as upstream validates it.
    let mut insecure = crontabs.clone();
    insecure["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://localhost/convert"}}});
    let (code, status) = call(&server, "POST", DEFINITIONS, &insecure);
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"].as_str().unwrap().ends_with(
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#
        ),
        "{status}"
    );
    crontabs["spec"]["conversion"] = webhook.conversion();
    assert_eq!(call(&server, "POST", DEFINITIONS, &crontabs).0, 201);
    let (v1, v2) = ("/apis/example.com/v1/namespaces/default/crontabs", "/apis/example.com/v2/namespaces/default/crontabs");
    wait_until(&server, v2, "served", |code, _| code == 200);

    // Written in v2: converted to v1 for storage, answered in v2.
    let tab = json!({"apiVersion": "example.com/v2", "kind": "CronTab", "metadata": {"name": "a"}, "spec": {"schedule": "*/5 * * * *"}});
    let (code, created) = call(&server, "POST", v2, &tab);
    assert_eq!(code, 201, "{created}");
    assert_eq!((created["apiVersion"].as_str(), created["spec"]["schedule"].as_str()), (Some("example.com/v2"), Some("*/5 * * * *")));
    assert_eq!(created["metadata"]["generation"], 1);
    // Read in the storage version: the webhook's v1 form, with its labels and the original's
    // generation.
    let (code, stored) = call(&server, "GET", &format!("{v1}/a"), &Value::Null);
    assert_eq!(code, 200, "{stored}");
    assert_eq!(stored["spec"], json!({"cronSpec": "*/5 * * * *"}));
    assert_eq!((stored["metadata"]["labels"]["converted"].as_str(), stored["metadata"]["generation"].as_i64()), (Some("yes"), Some(1)));
    // Lists and updates in v2 go through the webhook too.
    let (code, list) = call(&server, "GET", v2, &Value::Null);
    assert_eq!((code, list["items"][0]["spec"]["schedule"].as_str()), (200, Some("*/5 * * * *")), "{list}");
    let (code, patched) =
        request(&server, "PATCH", &format!("{v2}/a"), "application/merge-patch+json", br#"{"spec":{"schedule":"0 * * * *"}}"#);
    assert_eq!(code, 200, "{patched}");
    assert_eq!(call(&server, "GET", &format!("{v1}/a"), &Value::Null).1["spec"], json!({"cronSpec": "0 * * * *"}));
    assert!(webhook.reviews() >= 4, "{} reviews", webhook.reviews());

    // An object the webhook cannot convert: its read in the other version fails with the
    // webhook's message, as upstream's converter reports it; the stored version still reads.
    let odd = json!({"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "odd"}, "spec": {"unconvertible": true}});
    assert_eq!(call(&server, "POST", v1, &odd).0, 201);
    let (code, status) = call(&server, "GET", &format!("{v2}/odd"), &Value::Null);
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(message.contains("conversion webhook for example.com/v1, Kind=CronTab failed: cannot convert this one"), "{message}");
    assert_eq!(call(&server, "GET", &format!("{v1}/odd"), &Value::Null).0, 200);
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

const GIZMOS: &str = "/apis/example.com/v1/namespaces/default/gizmos";

/// A definition whose schema has types, an enum, bounds, required fields, defaults, nested
/// objects and arrays (a `map` list), and a status subresource with its own schema.
fn gizmos_definition() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                        "ports": {
                            "type": "array", "maxItems": 3,
                            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "default": 80},
                            }},
                        },
                        "settings": {"type": "object", "default": {}, "properties": {
                            "mode": {"type": "string", "default": "auto"},
                            "retries": {"type": "integer", "default": 3},
                        }},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string", "enum": ["Pending", "Ready"]},
                    }},
                }}},
            }],
        },
    })
}

fn gizmo(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec})
}

/// Objects are pruned, defaulted and validated by their definition's schema, as
/// apiextensions-apiserver does it: unknown fields dropped (reported under
/// `fieldValidation`), defaults applied (also to objects stored before a default was added),
/// and invalid objects refused with a 422 in upstream's words.
#[test]
fn custom_resources_follow_their_schema() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    assert_eq!(call(&server, "POST", DEFINITIONS, &gizmos_definition()).0, 201);
    wait_until(&server, &format!("{DEFINITIONS}/gizmos.example.com"), "established", |_, d| {
        condition(d, "Established")["status"] == "True"
    });
    wait_until(&server, GIZMOS, "served", |code, _| code == 200);

    // Stored pruned and defaulted; the unknown field is a warning (Warn is the default).
    let headers = [("Content-Type", JSON), ("Accept", JSON)];
    let body = gizmo("a", json!({"size": 2, "shape": "round", "ports": [{"name": "http", "protocol": "TCP"}]})).to_string();
    let (code, answer_headers, created) = common::request_full(&server, "POST", GIZMOS, &headers, body.as_bytes());
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&created));
    let warnings: Vec<&str> = answer_headers.iter().filter(|(n, _)| n == "warning").map(|(_, v)| v.as_str()).collect();
    assert_eq!(warnings, [r#"299 - "unknown field \"spec.ports[0].protocol\"""#, r#"299 - "unknown field \"spec.shape\"""#]);
    let (code, stored) = call(&server, "GET", &format!("{GIZMOS}/a"), &Value::Null);
    assert_eq!(code, 200);
    assert_eq!(
        stored["spec"],
        json!({"size": 2, "color": "red", "ports": [{"name": "http", "port": 80}], "settings": {"mode": "auto", "retries": 3}})
    );

    // Strict: the unknown field is a 400, as upstream's strict decoding error.
    let strict = gizmo("strict", json!({"size": 2, "shape": "round"}));
    let (code, status) = call(&server, "POST", &format!("{GIZMOS}?fieldValidation=Strict"), &strict);
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some(r#"Gizmo in version "v1" cannot be handled as a Gizmo: strict decoding error: unknown field "spec.shape""#))
    );
    // A patch that adds a field the schema lacks: pruned with a warning, or under Strict the
    // patchers' 422.
    let merge = [("Content-Type", "application/merge-patch+json"), ("Accept", JSON)];
    let patch = br#"{"spec":{"shape":"square"}}"#;
    let (code, answer_headers, patched) = common::request_full(&server, "PATCH", &format!("{GIZMOS}/a"), &merge, patch);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&patched));
    let warnings: Vec<&str> = answer_headers.iter().filter(|(n, _)| n == "warning").map(|(_, v)| v.as_str()).collect();
    assert_eq!(warnings, [r#"299 - "unknown field \"spec.shape\"""#]);
    let (code, _, answer) = common::request_full(&server, "PATCH", &format!("{GIZMOS}/a?fieldValidation=Strict"), &merge, patch);
    let status: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!((code, &status["details"]["causes"][0]["field"]), (422, &json!("patch")), "{status}");
    assert!(status["message"].as_str().unwrap().ends_with(r#": strict decoding error: unknown field "spec.shape""#), "{status}");

    // Invalid objects: a 422 naming the kind with its group, each error in upstream's words.
    let invalid = |spec: Value| {
        let (code, status) = call(&server, "POST", GIZMOS, &gizmo("b", spec));
        assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")), "{status}");
        status["message"].as_str().unwrap_or_default().to_owned()
    };
    let cases = [
        (json!({"size": "big"}), r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#),
        (json!({"size": 11}), "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
        (json!({"color": "blue"}), "spec.size: Required value"),
        (json!({"size": 1, "color": "green"}), r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        (json!({"size": 1, "name": "abcdefghij"}), "spec.name: Too long: may not be more than 8 bytes"),
        (json!({"size": 1, "name": "Abc"}), r#"spec.name: Invalid value: "Abc": spec.name in body should match '^[a-z]+$'"#),
        (json!({"size": 1, "ports": [{"name": "a"}, {"name": "a", "port": 81}]}), r#"spec.ports[1]: Duplicate value: {"name":"a"}"#),
        (
            json!({"size": 1, "ports": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]}),
            "spec.ports: Too many: 4: must have at most 3 items",
        ),
        (json!({"size": 1, "ports": [{"port": 1}]}), "spec.ports[0].name: Required value"),
        (
            json!({"size": 1, "labels": {"a": 1}}),
            r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
        ),
        (json!("wrong"), r#"spec: Invalid value: "string": spec in body must be of type object: "string""#),
    ];
    for (spec, error) in cases {
        assert_eq!(invalid(spec.clone()), format!(r#"Gizmo.example.com "b" is invalid: {error}"#), "{spec}");
    }
    // Several errors, bracketed (kapi lists properties in name order; upstream's order is Go's
    // map order); the details carry the group, the kind and one cause per error.
    let (code, status) = call(&server, "POST", GIZMOS, &gizmo("b", json!({"size": 0, "color": "green"})));
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        r#"Gizmo.example.com "b" is invalid: [spec.color: Unsupported value: "green": supported values: "red", "blue", spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1]"#
    );
    assert_eq!(
        status["details"],
        json!({"name": "b", "group": "example.com", "kind": "Gizmo", "causes": [
            {"reason": "FieldValueNotSupported", "message": r#"Unsupported value: "green": supported values: "red", "blue""#, "field": "spec.color"},
            {"reason": "FieldValueInvalid", "message": "Invalid value: 0: spec.size in body should be greater than or equal to 1", "field": "spec.size"},
        ]})
    );

    // Updates are validated (what changed), patches pruned and defaulted too.
    let mut replaced = stored.clone();
    replaced["spec"]["size"] = json!(20);
    let (code, status) = call(&server, "PUT", &format!("{GIZMOS}/a"), &replaced);
    assert_eq!(
        (code, status["message"].as_str()),
        (
            422,
            Some(r#"Gizmo.example.com "a" is invalid: spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"#)
        )
    );
    let patch = json!({"spec": {"size": 5, "settings": null, "extra": 1}});
    let (code, patched) = request(&server, "PATCH", &format!("{GIZMOS}/a"), "application/merge-patch+json", patch.to_string().as_bytes());
    assert_eq!(code, 200, "{patched}");
    let patched: Value = serde_json::from_str(&patched).unwrap();
    assert_eq!(patched["spec"]["size"], 5);
    assert_eq!(patched["spec"]["settings"], json!({"mode": "auto", "retries": 3}), "defaulted again");
    assert!(patched["spec"].get("extra").is_none(), "{patched}");

    // The status subresource: validated by the status schema, pruned.
    let status_path = format!("{GIZMOS}/a/status");
    let merge = "application/merge-patch+json";
    let (code, refused) = request(&server, "PATCH", &status_path, merge, br#"{"status":{"phase":"Done"}}"#);
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(
        (code, refused["message"].as_str()),
        (422, Some(r#"Gizmo.example.com "a" is invalid: status.phase: Unsupported value: "Done": supported values: "Pending", "Ready""#))
    );
    let (code, ready) = request(&server, "PATCH", &status_path, merge, br#"{"status":{"phase":"Ready","note":"x"}}"#);
    assert_eq!(code, 200, "{ready}");
    assert_eq!(serde_json::from_str::<Value>(&ready).unwrap()["status"], json!({"phase": "Ready"}));

    // A default added to the definition shows on the objects stored before it, when read.
    let (_, mut definition) = call(&server, "GET", &format!("{DEFINITIONS}/gizmos.example.com"), &Value::Null);
    definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["owner"] =
        json!({"type": "string", "default": "nobody"});
    let (code, status) = call(&server, "PUT", &format!("{DEFINITIONS}/gizmos.example.com"), &definition);
    assert_eq!(code, 200, "{status}");
    wait_until(&server, &format!("{GIZMOS}/a"), "defaulted on read", |_, g| g["spec"]["owner"] == "nobody");
    let (_, list) = call(&server, "GET", GIZMOS, &Value::Null);
    assert_eq!(list["items"][0]["spec"]["owner"], "nobody");

    // A definition whose schema cannot be served is refused.
    let mut broken = gizmos_definition();
    broken["metadata"]["name"] = json!("broken.example.com");
    broken["spec"]["names"] = json!({"plural": "broken", "kind": "Broken"});
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"] = json!("thing");
    let (code, status) = call(&server, "POST", DEFINITIONS, &broken);
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        r#"CustomResourceDefinition.apiextensions.k8s.io "broken.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].type: Unsupported value: "thing": supported values: "array", "boolean", "integer", "number", "object", "string""#
    );
}

const THINGS: &str = "/apis/example.com/v1/namespaces/default/things";

/// A definition with `x-kubernetes-validations` rules: a plain rule, a transition rule with a
/// `messageExpression`, a `reason` with a `fieldPath`, and a rule on the status.
fn things_definition(spec_rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-validations": spec_rules, "properties": {
                        "replicas": {"type": "integer"},
                        "max": {"type": "integer"},
                        "mode": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "messageExpression": "'mode is immutable, was ' + oldSelf"},
                        ]},
                    }},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0", "message": "must not be negative"}]},
                    }},
                }}},
            }],
        },
    })
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": name}, "spec": spec})
}

/// `x-kubernetes-validations`: rules that do not compile refuse the definition; objects that
/// break a rule are refused on create, update and status writes in upstream's words.
#[test]
fn custom_resources_follow_their_cel_rules() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    let (code, status) = call(&server, "POST", DEFINITIONS, &things_definition(json!([{"rule": "self.replicas <"}])));
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            r#"CustomResourceDefinition.apiextensions.k8s.io "things.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.replicas \u003c","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:"#
        ),
        "{message}"
    );
    // Rules are type-checked against the schema, as cel-go's checker does.
    let (code, status) = call(&server, "POST", DEFINITIONS, &things_definition(json!([{"rule": "self.replicas == self.mode"}])));
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(
            "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == self.mode\n | ..............^"
        ),
        "{message}"
    );
    // A rule whose worst case is over upstream's static budget: a string of up to 3 MiB
    // matched against a regular expression of up to 3 MiB.
    let (code, status) = call(&server, "POST", DEFINITIONS, &things_definition(json!([{"rule": "self.mode.matches(self.mode)"}])));
    assert_eq!(code, 422, "{status}");
    let try_bounds =
        "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        status["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"things.example.com\" is invalid: [spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {try_bounds}, spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {try_bounds}]"
        )
    );

    let rules = json!([
        {"rule": "!has(self.max) || self.replicas <= self.max", "message": "replicas must not exceed max"},
        {"rule": "self.replicas != 13", "reason": "FieldValueForbidden", "fieldPath": ".replicas", "message": "unlucky"},
    ]);
    assert_eq!(call(&server, "POST", DEFINITIONS, &things_definition(rules)).0, 201);
    wait_until(&server, &format!("{DEFINITIONS}/things.example.com"), "established", |_, d| {
        condition(d, "Established")["status"] == "True"
    });
    wait_until(&server, THINGS, "served", |code, _| code == 200);

    let (code, created) = call(&server, "POST", THINGS, &thing("a", json!({"replicas": 2, "max": 3, "mode": "fast"})));
    assert_eq!(code, 201, "{created}");
    let refused = |method: &str, path: &str, body: &Value| {
        let (code, status) = call(&server, method, path, body);
        assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")), "{status}");
        (status["message"].as_str().unwrap_or_default().to_owned(), status["details"]["causes"].clone())
    };
    let (message, causes) = refused("POST", THINGS, &thing("b", json!({"replicas": 5, "max": 3})));
    assert_eq!(message, r#"Thing.example.com "b" is invalid: spec: Invalid value: replicas must not exceed max"#);
    assert_eq!(causes, json!([{"reason": "FieldValueInvalid", "message": "Invalid value: replicas must not exceed max", "field": "spec"}]));
    let (message, causes) = refused("POST", THINGS, &thing("b", json!({"replicas": 13})));
    assert_eq!(message, r#"Thing.example.com "b" is invalid: spec.replicas: Forbidden: unlucky"#);
    assert_eq!(causes[0]["reason"], "FieldValueForbidden");

    // A transition rule: checked against the stored object on update.
    let mut changed = created.clone();
    changed["spec"]["mode"] = json!("slow");
    let (message, _) = refused("PUT", &format!("{THINGS}/a"), &changed);
    assert_eq!(message, r#"Thing.example.com "a" is invalid: spec.mode: Invalid value: "slow": mode is immutable, was fast"#);
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(3);
    assert_eq!(call(&server, "PUT", &format!("{THINGS}/a"), &scaled).0, 200);

    // Status writes are checked by the status's rules.
    let (code, answer) =
        request(&server, "PATCH", &format!("{THINGS}/a/status"), "application/merge-patch+json", br#"{"status":{"ready":-1}}"#);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (code, answer["message"].as_str()),
        (422, Some(r#"Thing.example.com "a" is invalid: status.ready: Invalid value: -1: must not be negative"#))
    );
}

/// Rules of real definitions, read in place from `../shared/crds`: cert-manager's Issuer
/// (`exactly one of tpp, cloud, or ngts`) and prometheus-operator's Alertmanager
/// (`rollingUpdate requires type to be RollingUpdate`).
#[test]
fn rules_of_real_world_definitions() {
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/crds");
    let read = |file: &str| -> Value {
        let text = std::fs::read_to_string(crds.join(file)).expect("../shared/crds beside the project");
        serde_yaml_ng::from_str(&text).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    for (file, name) in [
        ("cert-manager/cert-manager.io_issuers.yaml", "issuers.cert-manager.io"),
        ("prometheus-operator/monitoring.coreos.com_alertmanagers.yaml", "alertmanagers.monitoring.coreos.com"),
    ] {
        let (code, status) = call(&server, "POST", DEFINITIONS, &read(file));
        assert_eq!(code, 201, "{file}: {status}");
        wait_until(&server, &format!("{DEFINITIONS}/{name}"), "established", |_, d| condition(d, "Established")["status"] == "True");
    }
    let issuers = "/apis/cert-manager.io/v1/namespaces/default/issuers";
    wait_until(&server, issuers, "served", |code, _| code == 200);
    let issuer = |name: &str, venafi: Value| json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": name}, "spec": {"venafi": venafi}});
    let tpp = json!({"url": "https://tpp.example.com", "credentialsRef": {"name": "tpp"}});
    let cloud = json!({"apiTokenSecretRef": {"name": "token"}});
    let (code, answer) = call(&server, "POST", issuers, &issuer("one", json!({"zone": "z", "tpp": tpp})));
    assert_eq!(code, 201, "{answer}");
    let (code, answer) = call(&server, "POST", issuers, &issuer("two", json!({"zone": "z", "tpp": tpp, "cloud": cloud})));
    assert_eq!(
        (code, answer["message"].as_str()),
        (
            422,
            Some(
                r#"Issuer.cert-manager.io "two" is invalid: spec.venafi: Invalid value: exactly one of tpp, cloud, or ngts must be configured"#
            )
        )
    );

    let alertmanagers = "/apis/monitoring.coreos.com/v1/namespaces/default/alertmanagers";
    wait_until(&server, alertmanagers, "served", |code, _| code == 200);
    let alertmanager = |name: &str, strategy: Value| json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager", "metadata": {"name": name}, "spec": {"updateStrategy": strategy}});
    let (code, answer) = call(
        &server,
        "POST",
        alertmanagers,
        &alertmanager("rolling", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})),
    );
    assert_eq!(code, 201, "{answer}");
    let (code, answer) = call(
        &server,
        "POST",
        alertmanagers,
        &alertmanager("ondelete", json!({"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 1}})),
    );
    assert_eq!(
        (code, answer["message"].as_str()),
        (
            422,
            Some(
                r#"Alertmanager.monitoring.coreos.com "ondelete" is invalid: spec.updateStrategy: Invalid value: rollingUpdate requires type to be RollingUpdate"#
            )
        )
    );
}

/// Defaults are checked when a definition is written (upstream's `ValidateDefaults`): no
/// unknown fields, valid by their own schema and its CEL rules, reported where upstream's
/// internal form has the schema (`spec.validation` when every version shares it).
#[test]
fn definitions_with_bad_defaults_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    let mut crd = definition("widgets", "Widget", &[]);
    let properties = json!({
        "size": {"type": "integer", "maximum": 10, "default": 20},
        "extra": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}},
        "name": {"type": "string", "default": "Bad", "x-kubernetes-validations": [{"rule": "self == self.lowerAscii()", "message": "must be lower case"}]},
    });
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}});
    let (code, status) = call(&server, "POST", DEFINITIONS, &crd);
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: [\
         spec.validation.openAPIV3Schema.properties[spec].properties[extra].default: Invalid value: {\"a\":\"x\",\"b\":\"y\"}: must not have unknown fields, \
         spec.validation.openAPIV3Schema.properties[spec].properties[name].default: Invalid value: \"Bad\": must be lower case, \
         spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: 20:  in body should be less than or equal to 10]"
    );

    // Fixed, the definition is accepted and its defaults applied.
    let fixed = json!({
        "size": {"type": "integer", "maximum": 10, "default": 5},
        "extra": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x"}},
        "name": {"type": "string", "default": "good", "x-kubernetes-validations": [{"rule": "self == self.lowerAscii()", "message": "must be lower case"}]},
    });
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = fixed;
    let (code, status) = call(&server, "POST", DEFINITIONS, &crd);
    assert_eq!(code, 201, "{status}");
    wait_until(&server, WIDGETS, "served", |code, _| code == 200);
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    let (code, created) = call(&server, "POST", WIDGETS, &widget);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"], json!({"size": 5, "extra": {"a": "x"}, "name": "good"}));
}
