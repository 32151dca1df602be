//! Every verb of every stored built-in resource through the registry's `Store` directly, with
//! no HTTP in between: create, read, update (guarded and unguarded), the status subresource
//! where there is one, and delete, on the embedded store. Each object is the smallest the
//! resource accepts: its required fields from the pinned OpenAPI schema, or, for resources whose
//! strategy validates more, a hand-written one ([`hand_written`]).

mod common;

use std::collections::BTreeSet;

use kapi::registry::object::Object;
use kapi::registry::objects::Kind;
use kapi::registry::store::{Current, Deleted, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use kapi::storage::Storage;
use kapi::storage::embedded::EmbeddedStore;
use kapi_apimachinery::codec::Format;
use serde_json::{Map, Value, json};

fn definitions() -> &'static Map<String, Value> {
    common::swagger_definitions()
}

fn definition_of(kind: &Kind) -> Option<&'static Value> {
    definitions().values().find(|d| {
        d["x-kubernetes-group-version-kind"].as_array().is_some_and(|gvks| {
            gvks.iter()
                .any(|g| g["group"] == kind.group.as_str() && g["version"] == kind.version.as_str() && g["kind"] == kind.kind.as_str())
        })
    })
}

/// The smallest value of a schema: only its required fields, each the simplest value of its type.
fn minimal(schema: &Value) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/definitions/");
        return match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => json!("1"),
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => json!(1),
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => json!("2026-01-01T00:00:00Z"),
            "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => json!("2026-01-01T00:00:00.000000Z"),
            _ => minimal(&definitions()[name]),
        };
    }
    match schema["type"].as_str() {
        Some("string") if schema["format"] == "byte" => json!("eA=="),
        Some("string") => schema["enum"].get(0).cloned().unwrap_or(json!("x")),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("array") => json!([minimal(&schema["items"])]),
        _ => {
            let mut object = Map::new();
            for field in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                object.insert(field.to_owned(), minimal(&schema["properties"][field]));
            }
            Value::Object(object)
        }
    }
}

/// The objects of the resources whose strategy validates more than required fields.
fn hand_written(resource: &str) -> Option<Value> {
    let labels = json!({"app": "x"});
    let pod_spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    let template = json!({"metadata": {"labels": labels}, "spec": pod_spec});
    let selector = json!({"matchLabels": labels});
    Some(match resource {
        "pods" => json!({"spec": pod_spec}),
        "podtemplates" => json!({"template": template}),
        "replicationcontrollers" => json!({"spec": {"selector": labels, "template": template}}),
        "services" => json!({"spec": {"ports": [{"port": 80}]}}),
        "persistentvolumeclaims" => {
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        }
        "deployments" | "replicasets" | "daemonsets" => json!({"spec": {"selector": selector, "template": template}}),
        "statefulsets" => json!({"spec": {"selector": selector, "template": template, "serviceName": "s"}}),
        "jobs" => json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}}}}),
        "cronjobs" => json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}}}}}}),
        "horizontalpodautoscalers" => json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d", "apiVersion": "apps/v1"},
            "maxReplicas": 2}}),
        "poddisruptionbudgets" => json!({"spec": {"minAvailable": 1, "selector": selector}}),
        "ingresses" => json!({"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
        "networkpolicies" => json!({"spec": {"podSelector": {}}}),
        "endpointslices" => json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.9"]}]}),
        "priorityclasses" => json!({"value": 10}),
        "roles" | "clusterroles" => json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        "rolebindings" | "clusterrolebindings" => {
            json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]})
        }
        "storageclasses" => json!({"provisioner": "example.com/p"}),
        "limitranges" => json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
        "flowschemas" => json!({"spec": {"priorityLevelConfiguration": {"name": "global-default"}}}),
        "prioritylevelconfigurations" => json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Reject"}}}}),
        "storageversionmigrations" => json!({"spec": {"resource": {"group": "apps", "resource": "deployments"}}}),
        // Named `<plural>.<group>`: see `object_for`.
        "customresourcedefinitions" => json!({"spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
        "certificatesigningrequests" => return None,
        _ => return None,
    })
}

/// Resources this test leaves to their own tests: answered by their own REST code (never stored),
/// or needing an object no schema-minimal value makes valid (a CSR holds a real PEM request).
fn skipped(group: &str, resource: &str) -> bool {
    kapi::registry::strategy(group, resource).own_rest(None).is_some() || resource == "certificatesigningrequests"
}

fn object_for(kind: &Kind, resource: &str, name: &str) -> Value {
    let mut object = match hand_written(resource) {
        Some(object) => object,
        None => minimal(definition_of(kind).unwrap_or_else(|| panic!("no schema for {kind:?}"))),
    };
    object["apiVersion"] = json!(kind.api_version());
    object["kind"] = json!(kind.kind);
    object["metadata"] = json!({"name": name, "labels": {"app": "x"}});
    if resource == "customresourcedefinitions" {
        object["spec"]["names"]["plural"] = json!(name.split('.').next());
    }
    object
}

/// The object as a request body decodes it: typed when the scheme has its kind, as the create
/// handler passes it to the store.
fn incoming(group: &str, resource: &str, kind: &Kind, object: &Value) -> Result<Incoming, String> {
    let bytes = serde_json::to_vec(object).unwrap();
    let external = Object::decode(kind, Format::Json, &bytes).map_err(|e| format!("decoding: {e}"))?;
    Incoming::from_external(group, resource, kind, external).map_err(|e| e.message)
}

fn relabelled(
    value: &'static str,
    precondition: Option<String>,
) -> impl FnMut(Option<&Current<'_>>) -> Result<Proposed, kapi::status::ApiError> + Send {
    move |current: Option<&Current<'_>>| {
        let mut object = current.expect("the object is stored").internal()?.clone();
        object["metadata"]["labels"]["step"] = json!(value);
        Ok(Proposed {
            incoming: Incoming { object: object.into(), required: Vec::new() },
            precondition: precondition.clone(),
            uid: None,
            managed_fields: None,
        })
    }
}

#[tokio::test]
async fn every_verb_of_every_built_in_resource_through_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
    let config = StoreConfig { network: Default::default(), event_ttl: std::time::Duration::ZERO, ..Default::default() };
    let options = WriteOptions::default();
    let ns_kind = Kind { group: String::new(), version: "v1".into(), kind: "Namespace".into() };
    let namespaces = Store::new(&storage, &config, "", "namespaces", ns_kind.clone());
    let ns = object_for(&ns_kind, "namespaces", "ns");
    namespaces.create(options, None, incoming("", "namespaces", &ns_kind, &ns).unwrap()).await.unwrap();
    // The account pods run as (the service account controller is not running here).
    let sa_kind = Kind { group: String::new(), version: "v1".into(), kind: "ServiceAccount".into() };
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    let accounts = Store::new(&storage, &config, "", "serviceaccounts", sa_kind.clone());
    accounts.create(options, Some("ns"), incoming("", "serviceaccounts", &sa_kind, &account).unwrap()).await.unwrap();

    let mut failures = Vec::new();
    let mut seen = BTreeSet::new();
    let mut exercised = 0;
    for r in kapi_api::scheme::RESOURCES {
        let verbs = r.verbs;
        if r.resource.contains('/')
            || !["create", "get", "update", "delete"].iter().all(|v| verbs.contains(v))
            || skipped(r.group, r.resource)
            || !seen.insert((r.group, r.resource))
        {
            continue;
        }
        let kind = Kind { group: r.kind.group.into(), version: r.kind.version.into(), kind: r.kind.kind.into() };
        let namespace = r.namespaced.then_some("ns");
        // A definition's name is its plural and group.
        let name = match r.resource {
            "customresourcedefinitions" => format!("obj-{}.example.com", seen.len()),
            _ => format!("obj-{}", seen.len()),
        };
        let store = Store::new(&storage, &config, r.group, r.resource, kind.clone());
        let what = format!("{}/{} {}", r.group, r.resource, kind.api_version());
        let object = object_for(&kind, r.resource, &name);
        let result: Result<(), String> = async {
            let created = store
                .create(options, namespace, incoming(r.group, r.resource, &kind, &object)?)
                .await
                .map_err(|e| format!("create: {}", e.message))?;
            let (_, read) = store.read(&created.kv).map_err(|e| e.message)?;
            if read["metadata"]["name"] != name.as_str() || !read["metadata"]["uid"].is_string() {
                return Err(format!("create stored {read}"));
            }
            let stale = Some("1".to_owned());
            match store.update(options, namespace, &name, &mut relabelled("stale", stale)).await {
                Err(e) if e.code == 409 => {}
                other => return Err(format!("a stale precondition: {:?}", other.map(|w| w.kv.mod_revision).map_err(|e| e.message))),
            }
            let updated = store
                .update(options, namespace, &name, &mut relabelled("one", None))
                .await
                .map_err(|e| format!("update: {}", e.message))?;
            let (_, read) = store.read(&updated.kv).map_err(|e| e.message)?;
            if read["metadata"]["labels"]["step"] != "one" || updated.kv.mod_revision <= created.kv.mod_revision {
                return Err(format!("update stored {read}"));
            }
            if r.subresources.iter().any(|s| s.name == "status") {
                let status = Store::new(&storage, &config, r.group, r.resource, kind.clone()).with_subresource(Some("status"));
                status
                    .update(options, namespace, &name, &mut relabelled("status", None))
                    .await
                    .map_err(|e| format!("status: {}", e.message))?;
            }
            match store
                .delete(options, namespace, &name, &json!({"gracePeriodSeconds": 0}))
                .await
                .map_err(|e| format!("delete: {}", e.message))?
            {
                Deleted::Gone(..) => {}
                // A namespace waits for the namespace controller, a definition for the finalizer
                // controller deleting its objects (neither runs here).
                Deleted::Pending(_, object) if r.resource == "namespaces" && object["status"]["phase"] == "Terminating" => return Ok(()),
                Deleted::Pending(_, object)
                    if r.resource == "customresourcedefinitions"
                        && object["metadata"]["finalizers"] == serde_json::json!(["customresourcecleanup.apiextensions.k8s.io"]) =>
                {
                    return Ok(());
                }
                Deleted::Pending(_, object) => return Err(format!("delete left {object}")),
            }
            let key = kapi::registry::keys::key(r.group, r.resource, namespace, Some(&name));
            if storage.get(&key).await.map_err(|e| e.to_string())?.is_some() {
                return Err("still stored after delete".into());
            }
            Ok(())
        }
        .await;
        exercised += 1;
        if let Err(e) = result {
            failures.push(format!("{what}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} of {exercised} resources failed:\n{}", failures.len(), failures.join("\n"));
    assert!(exercised > 40, "only {exercised} resources exercised");
}
