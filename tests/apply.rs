//! Server-side apply and `managedFields` against a started kapi, in upstream's documented
//! scenarios (https://kubernetes.io/docs/reference/using-api/server-side-apply/). Expected
//! `fieldsV1` are written from structured-merge-diff's rules; each case says which.

use serde_json::{Value, json};

mod common;

const APPLY: &str = "application/apply-patch+yaml";

fn send(server: &common::Server, method: &str, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
    let headers = [("Content-Type", content_type), ("Accept", "application/json"), ("User-Agent", "apply-test/v0 (linux)")];
    let (code, bytes) = common::request_with(server, method, path, &headers, body.to_string().as_bytes());
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The object's `managedFields` with each `time` checked to be RFC 3339 seconds and removed
/// (an applier whose apply changed nothing has none, as upstream).
fn managed(object: &Value) -> Value {
    let mut entries = object["metadata"]["managedFields"].clone();
    for entry in entries.as_array_mut().into_iter().flatten() {
        if let Some(time) = entry.as_object_mut().unwrap().remove("time") {
            let time = time.as_str().unwrap_or_default().to_owned();
            assert!(chrono::DateTime::parse_from_rfc3339(&time).is_ok() && time.ends_with('Z') && !time.contains('.'), "{entry}");
        }
    }
    entries
}

/// The entry of `manager` in [`managed`].
fn of(object: &Value, manager: &str) -> Value {
    let entries = managed(object);
    entries.as_array().into_iter().flatten().find(|e| e["manager"] == manager).cloned().unwrap_or(Value::Null)
}

fn entry(manager: &str, operation: &str, api_version: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": api_version, "fieldsType": "FieldsV1", "fieldsV1": fields})
}

fn start() -> (tempfile::TempDir, common::Server) {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start(dir.path());
    server.wait_ready();
    (dir, server)
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

#[test]
fn creates_and_updates_record_their_managers() {
    let (_dir, server) = start();
    // A POST is an Update of the user agent's manager. Compared with the zero ConfigMap (no
    // `data`), `data` is added as a whole (`.`) and `data.a` as a leaf; identity fields are
    // never managed (upstream's strip set).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"x": "1"}}, "data": {"a": "1"}});
    let (code, created) = send(&server, "POST", CMS, "application/json", &cm);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        managed(&created),
        json!([entry(
            "apply-test",
            "Update",
            "v1",
            json!({
                "f:data": {".": {}, "f:a": {}},
                "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
            })
        )])
    );

    // Another manager's merge patch: it takes the field it changed, which the first loses; a
    // field it adds is its own. The first keeps `data` itself, now a member with no children
    // left: `{}` (a `.` is written only beside children). Entries are ordered by operation,
    // time, then manager.
    let patch = json!({"data": {"a": "2", "b": "3"}});
    let (code, patched) = send(&server, "PATCH", &format!("{CMS}/c?fieldManager=editor"), "application/merge-patch+json", &patch);
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        managed(&patched),
        json!([
            entry("apply-test", "Update", "v1", json!({"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})),
            entry("editor", "Update", "v1", json!({"f:data": {"f:a": {}, "f:b": {}}})),
        ])
    );

    // A PUT without managedFields keeps the stored ones (upstream's decodeLiveOrNew), and so
    // does one with `null`.
    let mut put = patched.clone();
    put["metadata"].as_object_mut().unwrap().remove("managedFields");
    put["data"]["c"] = json!("4");
    let (code, replaced) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=putter"), "application/json", &put);
    assert_eq!(code, 200, "{replaced}");
    assert_eq!(managed(&replaced).as_array().map(Vec::len), Some(3), "{replaced}");
    assert_eq!(managed(&replaced)[2], entry("putter", "Update", "v1", json!({"f:data": {"f:c": {}}})));
    let mut nulled = replaced.clone();
    nulled["metadata"]["managedFields"] = Value::Null;
    nulled["data"]["e"] = json!("6");
    let (code, kept) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=other"), "application/json", &nulled);
    assert_eq!(code, 200, "{kept}");
    assert_eq!(managed(&kept).as_array().map(Vec::len), Some(4), "{kept}");
    assert_eq!(of(&kept, "other"), entry("other", "Update", "v1", json!({"f:data": {"f:e": {}}})));

    // `[{}]` clears them, and so does an explicit empty list (upstream's isResetManagedFields
    // tells `[]` from none): the object is left with none, even though the write changed a
    // field (upstream's skipNonApplied tracks no update of an object without entries).
    let mut reset = kept.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["data"]["d"] = json!("5");
    let (code, cleared) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=putter"), "application/json", &reset);
    assert_eq!(code, 200, "{cleared}");
    assert!(cleared["metadata"].get("managedFields").is_none(), "{cleared}");
    // Nor is the next update tracked.
    let (code, untracked) =
        send(&server, "PATCH", &format!("{CMS}/c?fieldManager=editor"), "application/merge-patch+json", &json!({"data": {"g": "8"}}));
    assert_eq!(code, 200, "{untracked}");
    assert!(untracked["metadata"].get("managedFields").is_none(), "{untracked}");
    // Given entries again, a PUT with `[]` clears them; so does a patch setting `[]`.
    let mut given = untracked.clone();
    given["metadata"]["managedFields"] = json!([entry("owner", "Update", "v1", json!({"f:data": {"f:a": {}}}))]);
    let (code, restored) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=putter"), "application/json", &given);
    assert_eq!(code, 200, "{restored}");
    assert_eq!(managed(&restored), json!([entry("owner", "Update", "v1", json!({"f:data": {"f:a": {}}}))]));
    let mut emptied = restored.clone();
    emptied["metadata"]["managedFields"] = json!([]);
    emptied["data"]["f"] = json!("7");
    let (code, emptied) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=putter"), "application/json", &emptied);
    assert_eq!((code, emptied["data"]["f"].as_str()), (200, Some("7")), "{emptied}");
    assert!(emptied["metadata"].get("managedFields").is_none(), "{emptied}");
    let mut given = emptied.clone();
    given["metadata"]["managedFields"] = json!([entry("owner", "Update", "v1", json!({"f:data": {"f:a": {}}}))]);
    let (code, restored) = send(&server, "PUT", &format!("{CMS}/c?fieldManager=putter"), "application/json", &given);
    assert_eq!((code, managed(&restored).as_array().map(Vec::len)), (200, Some(1)), "{restored}");
    let patch = json!({"metadata": {"managedFields": []}});
    let (code, patched) = send(&server, "PATCH", &format!("{CMS}/c?fieldManager=patcher"), "application/merge-patch+json", &patch);
    assert_eq!(code, 200, "{patched}");
    assert!(patched["metadata"].get("managedFields").is_none(), "{patched}");

    // fieldManager is validated as upstream's options are.
    let long = "m".repeat(129);
    let (code, status) = send(&server, "POST", &format!("{CMS}?fieldManager={long}"), "application/json", &cm);
    assert_eq!(
        (code, status["message"].as_str()),
        (422, Some("CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"))
    );
}

#[test]
fn apply_creates_merges_conflicts_and_forces() {
    let (_dir, server) = start();
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "args": ["a"], "ports": [{"containerPort": 80}]}]},
            },
        },
    });
    // Apply without fieldManager: 422, as upstream's PatchOptions validation.
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/web"), APPLY, &config);
    assert_eq!(
        (code, status["message"].as_str()),
        (422, Some("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"))
    );
    // Create on apply (201). The applied set is the configuration's own fields (not the
    // defaults): `selector` is an atomic map (LabelSelector is `x-kubernetes-map-type:
    // atomic`), `args` an atomic list (a leaf), containers a list map keyed by `name` (`k:`),
    // ports keyed by `containerPort` and `protocol` (defaulted to TCP in the key, upstream's
    // `+default`); a keyed item is a member with children (`.`).
    let (code, created) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=alice"), APPLY, &config);
    assert_eq!(code, 201, "{created}");
    let alice = json!({
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                    ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
                }}},
            },
        },
    });
    assert_eq!(managed(&created), json!([entry("alice", "Apply", "apps/v1", alice.clone())]));
    // Defaulted as any write.
    assert_eq!(created["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent", "{created}");

    // A second applier setting replicas and an atomic list differently: 409 listing both,
    // causes naming each field.
    let bob = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "nginx", "args": ["b"]}]}}},
    });
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob"), APPLY, &bob);
    assert_eq!(code, 409, "{status}");
    assert_eq!(
        status["message"],
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].args"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([
            {"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.replicas"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.template.spec.containers[name=\"nginx\"].args"},
        ])
    );
    // The same values are no conflict: both own them.
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
    let (code, shared) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=carol"), APPLY, &same);
    assert_eq!(code, 200, "{shared}");
    // Its apply changed nothing: its entry has no time (upstream moves it only on change).
    assert_eq!(of(&shared, "carol"), entry("carol", "Apply", "apps/v1", json!({"f:spec": {"f:replicas": {}}})));
    assert!(shared["metadata"]["managedFields"].as_array().unwrap().iter().any(|e| e["manager"] == "carol" && e.get("time").is_none()));

    // force=true takes ownership: alice loses replicas and args; bob owns them.
    let (code, forced) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob&force=true"), APPLY, &bob);
    assert_eq!(code, 200, "{forced}");
    assert_eq!(forced["spec"]["replicas"], 5);
    assert_eq!(forced["spec"]["template"]["spec"]["containers"][0]["args"], json!(["b"]));
    let alice_now = of(&forced, "alice");
    assert!(alice_now["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{alice_now}");
    assert_eq!(
        of(&forced, "bob")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:args": {}, "f:name": {}}}}}}})
    );

    // A conflict with an Update manager names its version.
    let (code, _) = send(
        &server,
        "PATCH",
        &format!("{DEPLOYS}/web?fieldManager=scaler"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 7}}),
    );
    assert_eq!(code, 200);
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob"), APPLY, &bob);
    assert_eq!(
        (code, status["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"scaler\" using apps/v1: .spec.replicas"))
    );

    // A field the schema does not declare: upstream's typed conversion refuses the
    // configuration as a plain error (500, no reason).
    let typo = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicaz": 1}});
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob"), APPLY, &typo);
    assert_eq!(
        (code, status["reason"].as_str(), status["message"].as_str()),
        (
            500,
            None,
            Some("failed to create typed patch object (/web; apps/v1, Kind=Deployment): .spec.replicaz: field not declared in schema")
        )
    );

    // An item named twice in the configuration: refused the same way (upstream validates the
    // configuration without AllowDuplicates).
    let twice = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}}}});
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob"), APPLY, &twice);
    assert_eq!(
        (code, status["message"].as_str()),
        (
            500,
            Some(
                "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name=\"a\"]"
            )
        )
    );

    // dryRun: answered, nothing stored.
    let (code, dry) = send(&server, "PATCH", &format!("{DEPLOYS}/web?fieldManager=bob&force=true&dryRun=All"), APPLY, &bob);
    assert_eq!((code, dry["spec"]["replicas"].as_i64()), (200, Some(5)));
    let (_, stored) = send(&server, "GET", &format!("{DEPLOYS}/web"), "application/json", &Value::Null);
    assert_eq!(stored["spec"]["replicas"], 7);
}

#[test]
fn apply_removes_only_fields_no_one_else_owns() {
    let (_dir, server) = start();
    // Two appliers share label `b` (same value); a set list (`finalizers`, `v:` elements).
    let a = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}, "finalizers": ["example.com/f"]}, "data": {"x": "1"}});
    let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"b": "2"}}});
    assert_eq!(send(&server, "PATCH", &format!("{CMS}/c?fieldManager=a"), APPLY, &a).0, 201);
    let (code, both) = send(&server, "PATCH", &format!("{CMS}/c?fieldManager=b"), APPLY, &b);
    assert_eq!(code, 200, "{both}");
    assert_eq!(
        of(&both, "a"),
        entry(
            "a",
            "Apply",
            "v1",
            json!({"f:data": {"f:x": {}}, "f:metadata": {"f:finalizers": {"v:\"example.com/f\"": {}}, "f:labels": {"f:a": {}, "f:b": {}}}})
        )
    );
    assert_eq!(of(&both, "b"), entry("b", "Apply", "v1", json!({"f:metadata": {"f:labels": {"f:b": {}}}})));
    // `a` stops applying labels, the finalizer and data: `a` label and `x` go (only `a` had
    // them), `b` stays (`b` still owns it).
    let a2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"y": "2"}});
    let (code, pruned) = send(&server, "PATCH", &format!("{CMS}/c?fieldManager=a"), APPLY, &a2);
    assert_eq!(code, 200, "{pruned}");
    assert_eq!(pruned["metadata"]["labels"], json!({"b": "2"}), "{pruned}");
    assert_eq!(pruned["data"], json!({"y": "2"}));
    assert!(pruned["metadata"].get("finalizers").is_none(), "{pruned}");
}

#[test]
fn apply_to_status_is_recorded_with_its_subresource() {
    let (_dir, server) = start();
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(send(&server, "PATCH", &format!("{DEPLOYS}/d?fieldManager=owner"), APPLY, &deploy).0, 201);
    // Status through `status`: the spec in the configuration is reset (not owned, not
    // changed); the entry names the subresource.
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 9}, "status": {"observedGeneration": 1}});
    let (code, written) = send(&server, "PATCH", &format!("{DEPLOYS}/d/status?fieldManager=ctl"), APPLY, &status);
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"]["observedGeneration"], 1);
    assert_eq!(written["spec"]["replicas"], 1, "the spec is not written through status");
    let mut want = entry("ctl", "Apply", "apps/v1", json!({"f:status": {"f:observedGeneration": {}}}));
    want["subresource"] = json!("status");
    assert_eq!(of(&written, "ctl"), want);

    // A write through `scale` is not tracked while no manager owns the replicas field (the
    // applier left it to its default): upstream's skipNonApplied sees a Scale with no entries.
    let (code, _) = send(
        &server,
        "PATCH",
        &format!("{DEPLOYS}/d/scale?fieldManager=hpa"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 2}}),
    );
    assert_eq!(code, 200);
    let (_, scaled) = send(&server, "GET", &format!("{DEPLOYS}/d"), "application/json", &Value::Null);
    assert_eq!((scaled["spec"]["replicas"].as_i64(), of(&scaled, "hpa")), (Some(2), Value::Null));
    // Once the applier owns it, a write through `scale` is an Update of the object's replicas
    // field, recorded for the subresource in the object's version (upstream's ToParent).
    let mut owned = deploy.clone();
    owned["spec"]["replicas"] = json!(2);
    assert_eq!(send(&server, "PATCH", &format!("{DEPLOYS}/d?fieldManager=owner"), APPLY, &owned).0, 200);
    let (code, _) = send(
        &server,
        "PATCH",
        &format!("{DEPLOYS}/d/scale?fieldManager=hpa"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 3}}),
    );
    assert_eq!(code, 200);
    let (_, scaled) = send(&server, "GET", &format!("{DEPLOYS}/d"), "application/json", &Value::Null);
    let mut want = entry("hpa", "Update", "apps/v1", json!({"f:spec": {"f:replicas": {}}}));
    want["subresource"] = json!("scale");
    assert_eq!((scaled["spec"]["replicas"].as_i64(), of(&scaled, "hpa")), (Some(3), want));
}

/// A custom resource's schema drives its field management: a `map` list keyed by `name`
/// (`k:`), a `set` list (`v:`), an atomic list (the default for a custom resource's lists: a
/// leaf) and an atomic map.
#[test]
fn custom_resources_merge_by_their_schema() {
    let (_dir, server) = start();
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}, "required": ["name"]});
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "boxes.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "boxes", "singular": "box", "kind": "Box"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                }}},
            }}}],
        },
    });
    let (code, body) = send(&server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &definition);
    assert_eq!(code, 201, "{body}");
    let boxes = "/apis/example.com/v1/namespaces/default/boxes";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while send(&server, "GET", boxes, "application/json", &Value::Null).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "the definition is never served");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let a = json!({"apiVersion": "example.com/v1", "kind": "Box", "metadata": {"name": "b"},
        "spec": {"items": [{"name": "x", "size": 1}], "tags": ["t1"], "args": ["a"], "selector": {"k": "v"}}});
    let (code, created) = send(&server, "PATCH", &format!("{boxes}/b?fieldManager=a"), APPLY, &a);
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        of(&created, "a"),
        entry(
            "a",
            "Apply",
            "example.com/v1",
            json!({"f:spec": {
                "f:items": {"k:{\"name\":\"x\"}": {".": {}, "f:name": {}, "f:size": {}}},
                "f:tags": {"v:\"t1\"": {}},
                "f:args": {},
                "f:selector": {},
            }})
        )
    );
    // A second applier adds an item and a tag: merged by key and by value, no conflict.
    let b = json!({"apiVersion": "example.com/v1", "kind": "Box", "metadata": {"name": "b"},
        "spec": {"items": [{"name": "y", "size": 2}], "tags": ["t2"]}});
    let (code, merged) = send(&server, "PATCH", &format!("{boxes}/b?fieldManager=b"), APPLY, &b);
    assert_eq!(code, 200, "{merged}");
    assert_eq!(merged["spec"]["items"], json!([{"name": "x", "size": 1}, {"name": "y", "size": 2}]));
    assert_eq!(merged["spec"]["tags"], json!(["t1", "t2"]));
    // Replacing the atomic list another manager owns is a conflict.
    let c = json!({"apiVersion": "example.com/v1", "kind": "Box", "metadata": {"name": "b"}, "spec": {"args": ["z"]}});
    let (code, status) = send(&server, "PATCH", &format!("{boxes}/b?fieldManager=b"), APPLY, &c);
    assert_eq!((code, status["message"].as_str()), (409, Some("Apply failed with 1 conflict: conflict with \"a\": .spec.args")));
}

/// Apply through `scale` (upstream's ScaleHandler): the Scale's `.spec.replicas` is the
/// object's replicas field, owned by whoever owns that field on the object; a conflict names the
/// object's manager; forced, the Scale's applier owns the field in the object's version with
/// the `scale` subresource, and the object's applier then conflicts with it.
#[test]
fn apply_to_scale_owns_the_replicas_field() {
    let (_dir, server) = start();
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(send(&server, "PATCH", &format!("{DEPLOYS}/d?fieldManager=owner"), APPLY, &deploy).0, 201);
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 4}});
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale?fieldManager=scaler"), APPLY, &scale);
    assert_eq!(
        (code, status["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"owner\": .spec.replicas")),
        "{status}"
    );
    // No fieldManager: required, as for any apply.
    let (code, _) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale"), APPLY, &scale);
    assert_eq!(code, 422);
    // Another name than the URL's: refused.
    let mut renamed = scale.clone();
    renamed["metadata"]["name"] = json!("e");
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale?fieldManager=scaler&force=true"), APPLY, &renamed);
    assert_eq!((code, status["message"].as_str()), (400, Some("the name of the object (e) does not match the name on the URL (d)")));
    // Another kind than Scale: refused.
    let (code, _) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale?fieldManager=scaler"), APPLY, &deploy);
    assert_eq!(code, 400);

    let (code, scaled) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale?fieldManager=scaler&force=true"), APPLY, &scale);
    assert_eq!(code, 200, "{scaled}");
    assert_eq!((scaled["kind"].as_str(), scaled["spec"]["replicas"].as_i64()), (Some("Scale"), Some(4)));
    let (_, object) = send(&server, "GET", &format!("{DEPLOYS}/d"), "application/json", &Value::Null);
    assert_eq!(object["spec"]["replicas"], 4);
    let mut want = entry("scaler", "Apply", "apps/v1", json!({"f:spec": {"f:replicas": {}}}));
    want["subresource"] = json!("scale");
    assert_eq!(of(&object, "scaler"), want);
    assert!(of(&object, "owner")["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{object}");

    // The object's applier now conflicts with the Scale's.
    let (code, status) = send(&server, "PATCH", &format!("{DEPLOYS}/d?fieldManager=owner"), APPLY, &deploy);
    assert_eq!(
        (code, status["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"scaler\" with subresource \"scale\": .spec.replicas"))
    );
    // Applying the same count again through scale changes nothing and keeps the entry.
    let (code, again) = send(&server, "PATCH", &format!("{DEPLOYS}/d/scale?fieldManager=scaler"), APPLY, &scale);
    assert_eq!((code, again["spec"]["replicas"].as_i64()), (200, Some(4)));
    // An Update through scale by another manager takes the field; the applier's entry goes.
    let (code, _) = send(
        &server,
        "PATCH",
        &format!("{DEPLOYS}/d/scale?fieldManager=hpa"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 6}}),
    );
    assert_eq!(code, 200);
    let (_, object) = send(&server, "GET", &format!("{DEPLOYS}/d"), "application/json", &Value::Null);
    assert_eq!(of(&object, "scaler"), Value::Null, "{object}");
    let mut want = entry("hpa", "Update", "apps/v1", json!({"f:spec": {"f:replicas": {}}}));
    want["subresource"] = json!("scale");
    assert_eq!((object["spec"]["replicas"].as_i64(), of(&object, "hpa")), (Some(6), want));
}

/// A custom resource's `scale` subresource goes through the same field management: the
/// Scale's `.spec.replicas` is the definition's `specReplicasPath`.
#[test]
fn apply_to_a_custom_resource_scale() {
    let (_dir, server) = start();
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "pools", "singular": "pool", "kind": "Pool"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"size": {"type": "integer"}}},
                }}}}],
        },
    });
    let (code, body) = send(&server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &definition);
    assert_eq!(code, 201, "{body}");
    let pools = "/apis/example.com/v1/namespaces/default/pools";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while send(&server, "GET", pools, "application/json", &Value::Null).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "the definition is never served");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pool = json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {"size": 1, "color": "red"}});
    assert_eq!(send(&server, "PATCH", &format!("{pools}/p?fieldManager=owner"), APPLY, &pool).0, 201);
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "p"}, "spec": {"replicas": 3}});
    let (code, status) = send(&server, "PATCH", &format!("{pools}/p/scale?fieldManager=scaler"), APPLY, &scale);
    assert_eq!((code, status["message"].as_str()), (409, Some("Apply failed with 1 conflict: conflict with \"owner\": .spec.replicas")));
    let (code, scaled) = send(&server, "PATCH", &format!("{pools}/p/scale?fieldManager=scaler&force=true"), APPLY, &scale);
    assert_eq!((code, scaled["spec"]["replicas"].as_i64()), (200, Some(3)), "{scaled}");
    let (_, object) = send(&server, "GET", &format!("{pools}/p"), "application/json", &Value::Null);
    assert_eq!(object["spec"], json!({"size": 3, "color": "red"}));
    let mut want = entry("scaler", "Apply", "example.com/v1", json!({"f:spec": {"f:size": {}}}));
    want["subresource"] = json!("scale");
    assert_eq!(of(&object, "scaler"), want);
    assert_eq!(of(&object, "owner"), entry("owner", "Apply", "example.com/v1", json!({"f:spec": {"f:color": {}}})));
}

/// Entries of another version of the kind see a write in their own version (upstream's
/// updater compares the objects converted to each manager's version): an HPA applied through
/// `autoscaling/v2` owns `.spec.metrics`; an apply through `autoscaling/v1` that changes the
/// CPU target changes those metrics, a conflict named in the v2 manager's path; forced, the v2
/// manager loses them.
#[test]
fn managers_of_other_versions_see_writes_in_their_version() {
    let (_dir, server) = start();
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"});
    let a = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": target, "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
    let (code, created) = send(&server, "PATCH", &format!("{v2}/h?fieldManager=a"), APPLY, &a);
    assert_eq!(code, 201, "{created}");
    assert!(of(&created, "a")["fieldsV1"]["f:spec"].get("f:metrics").is_some(), "{created}");
    let b = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": target, "maxReplicas": 5, "targetCPUUtilizationPercentage": 80}});
    let (code, status) = send(&server, "PATCH", &format!("{v1}/h?fieldManager=b"), APPLY, &b);
    assert_eq!(
        (code, status["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"a\": .spec.metrics")),
        "{status}"
    );
    let (code, forced) = send(&server, "PATCH", &format!("{v1}/h?fieldManager=b&force=true"), APPLY, &b);
    assert_eq!((code, forced["spec"]["targetCPUUtilizationPercentage"].as_i64()), (200, Some(80)), "{forced}");
    let (_, object) = send(&server, "GET", &format!("{v2}/h"), "application/json", &Value::Null);
    assert_eq!(object["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80);
    let a_now = of(&object, "a");
    assert!(a_now["fieldsV1"]["f:spec"].get("f:metrics").is_none(), "{a_now}");
    assert!(a_now["fieldsV1"]["f:spec"].get("f:maxReplicas").is_some(), "{a_now}");
    assert_eq!(of(&object, "b")["apiVersion"], "autoscaling/v1");
}

/// `fieldsV1` bytes as upstream's `Set.ToJSON` writes a built-in kind's (kept verbatim in
/// storage and answers): children in path element order, key values compared typed, so the
/// port keyed `9` comes before `10` (a `serde_json::Map` would put `10` first), in the
/// create's answer, a GET and a list.
#[test]
fn fields_v1_bytes_follow_the_set_order() {
    let (_dir, server) = start();
    let container = json!({"name": "c", "image": "nginx", "ports": [{"containerPort": 10}, {"containerPort": 9}]});
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ports"},
        "spec": {"selector": {"matchLabels": {"app": "p"}},
            "template": {"metadata": {"labels": {"app": "p"}}, "spec": {"containers": [container]}}}});
    let apply = [("Content-Type", APPLY), ("Accept", "application/json")];
    let (code, body) =
        common::request_with(&server, "PATCH", &format!("{DEPLOYS}/ports?fieldManager=a"), &apply, deploy.to_string().as_bytes());
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    // Fields by name, `.` first; keyed items by their key values (numbers as numbers).
    let want = concat!(
        r#""fieldsV1":{"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"#,
        r#""f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"#,
        r#""k:{\"containerPort\":9,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}},"#,
        r#""k:{\"containerPort\":10,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
    );
    let text = |body: &[u8]| String::from_utf8_lossy(body).into_owned();
    assert!(text(&body).contains(want), "{}", text(&body));
    let json = [("Accept", "application/json")];
    let (_, got) = common::request_with(&server, "GET", &format!("{DEPLOYS}/ports"), &json, b"");
    assert!(text(&got).contains(want), "{}", text(&got));
    let (_, list) = common::request_with(&server, "GET", DEPLOYS, &json, b"");
    assert!(text(&list).contains(want), "{}", text(&list));
}

/// A custom resource served in two versions with `strategy: None` (only `apiVersion` changes),
/// whose `v1` keys `spec.items` by name and whose `v2` has it atomic: an entry written in `v1`
/// sees a `v2` apply in `v1`'s schema (upstream's versionConverter converts the objects to
/// each entry's version), so changing an item's `size` conflicts on that item's field.
#[test]
fn custom_resource_entries_are_read_in_their_version() {
    let (_dir, server) = start();
    let item = json!({"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}, "required": ["name"]});
    let schema = |items: Value| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"items": items}}}}});
    let keyed = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item});
    let atomic = json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": item});
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crates.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "crates", "singular": "crate", "kind": "Crate"},
            "conversion": {"strategy": "None"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(keyed)},
                {"name": "v2", "served": true, "storage": false, "schema": schema(atomic)},
            ],
        },
    });
    let (code, body) = send(&server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &definition);
    assert_eq!(code, 201, "{body}");
    let v1 = "/apis/example.com/v1/namespaces/default/crates";
    let v2 = "/apis/example.com/v2/namespaces/default/crates";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while send(&server, "GET", v2, "application/json", &Value::Null).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "the definition is never served");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let a = json!({"apiVersion": "example.com/v1", "kind": "Crate", "metadata": {"name": "c"},
        "spec": {"items": [{"name": "x", "size": 1}]}});
    let (code, created) = send(&server, "PATCH", &format!("{v1}/c?fieldManager=a"), APPLY, &a);
    assert_eq!(code, 201, "{created}");
    let b = json!({"apiVersion": "example.com/v2", "kind": "Crate", "metadata": {"name": "c"},
        "spec": {"items": [{"name": "x", "size": 2}]}});
    let (code, status) = send(&server, "PATCH", &format!("{v2}/c?fieldManager=b"), APPLY, &b);
    assert_eq!(
        (code, status["message"].as_str()),
        (409, Some("Apply failed with 1 conflict: conflict with \"a\": .spec.items[name=\"x\"].size")),
        "{status}"
    );
    // Forced, "a" loses the item's size in its own version and keeps the rest.
    let (code, forced) = send(&server, "PATCH", &format!("{v2}/c?fieldManager=b&force=true"), APPLY, &b);
    assert_eq!(code, 200, "{forced}");
    assert_eq!(of(&forced, "a")["fieldsV1"], json!({"f:spec": {"f:items": {"k:{\"name\":\"x\"}": {".": {}, "f:name": {}}}}}));
    assert_eq!(of(&forced, "b"), entry("b", "Apply", "example.com/v2", json!({"f:spec": {"f:items": {}}})));
}
