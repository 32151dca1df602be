//! The objects a server creates at start-up (`registry::bootstrap`), end to end: the system
//! priority classes and API Priority and Fairness' mandatory and suggested configuration exist
//! with upstream's values, a restart on the same data creates nothing twice and rewrites
//! nothing it need not (resourceVersions kept), restores the spec of mandatory objects and of
//! suggested ones still marked for auto-update, keeps a suggested spec whose auto-update was
//! turned off, recreates a deleted suggested object; and pods still get the system classes'
//! priorities.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{request, start};
use serde_json::{Value, json};

const JSON: &str = "application/json";
const PRIORITY_CLASSES: &str = "/apis/scheduling.k8s.io/v1/priorityclasses";
const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const PRIORITY_LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

fn call(server: &common::Server, method: &str, path: &str, content_type: &str, body: Value) -> (u16, Value) {
    let bytes = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    let (code, text) = request(server, method, path, content_type, &bytes);
    (code, serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text })))
}

/// name → object of a cluster-scoped collection.
fn list(server: &common::Server, path: &str) -> BTreeMap<String, Value> {
    let (code, body) = call(server, "GET", path, JSON, Value::Null);
    assert_eq!(code, 200, "{body}");
    body["items"].as_array().unwrap().iter().map(|item| (item["metadata"]["name"].as_str().unwrap().to_owned(), item.clone())).collect()
}

fn resource_versions(objects: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    objects.iter().map(|(name, o)| (name.clone(), o["metadata"]["resourceVersion"].as_str().unwrap().to_owned())).collect()
}

#[test]
fn start_up_objects_exist_once_with_upstream_values() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();

    let classes = list(&server, PRIORITY_CLASSES);
    let node = &classes["system-node-critical"];
    assert_eq!(node["value"], 2_000_001_000);
    assert_eq!(node["description"], "Used for system critical pods that must not be moved from their current node.");
    assert_eq!(node["preemptionPolicy"], "PreemptLowerPriority");
    assert_ne!(node["globalDefault"], true);
    let cluster = &classes["system-cluster-critical"];
    assert_eq!(cluster["value"], 2_000_000_000);
    assert_eq!(
        cluster["description"],
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."
    );

    let schemas = list(&server, FLOW_SCHEMAS);
    let names: Vec<&str> = schemas.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election",
        ]
    );
    let catch_all = &schemas["catch-all"];
    assert_eq!(catch_all["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"], "true");
    assert_eq!(catch_all["metadata"]["generation"], 1);
    assert_eq!(catch_all["spec"]["matchingPrecedence"], 10000);
    assert_eq!(catch_all["spec"]["distinguisherMethod"]["type"], "ByUser");
    assert_eq!(catch_all["spec"]["priorityLevelConfiguration"]["name"], "catch-all");
    assert_eq!(
        catch_all["spec"]["rules"][0]["subjects"],
        json!([{"kind": "Group", "group": {"name": "system:unauthenticated"}}, {"kind": "Group", "group": {"name": "system:authenticated"}}])
    );
    assert_eq!(schemas["exempt"]["spec"]["matchingPrecedence"], 1);
    assert!(schemas["exempt"]["spec"]["distinguisherMethod"].is_null());
    assert_eq!(schemas["probes"]["spec"]["rules"][0]["nonResourceRules"][0]["nonResourceURLs"], json!(["/healthz", "/readyz", "/livez"]));
    assert_eq!(schemas["kube-scheduler"]["spec"]["distinguisherMethod"]["type"], "ByNamespace");
    assert_eq!(
        schemas["endpoint-controller"]["spec"]["rules"][0]["subjects"][2]["serviceAccount"],
        json!({"name": "endpointslicemirroring-controller", "namespace": "kube-system"})
    );

    let levels = list(&server, PRIORITY_LEVELS);
    assert_eq!(levels.len(), 8);
    assert_eq!(levels["exempt"]["spec"]["type"], "Exempt");
    assert_eq!(levels["exempt"]["spec"]["exempt"], json!({"nominalConcurrencyShares": 0, "lendablePercent": 0}));
    assert_eq!(levels["catch-all"]["spec"]["limited"]["nominalConcurrencyShares"], 5);
    assert_eq!(levels["catch-all"]["spec"]["limited"]["limitResponse"], json!({"type": "Reject"}));
    let low = &levels["workload-low"]["spec"]["limited"];
    assert_eq!(low["nominalConcurrencyShares"], 100);
    assert_eq!(low["lendablePercent"], 90);
    assert_eq!(low["limitResponse"]["queuing"], json!({"queues": 128, "handSize": 6, "queueLengthLimit": 50}));

    // Changes to make before the restart: a mandatory spec changed with auto-update turned off
    // (restored all the same), a suggested spec changed (restored: still auto-updated), a
    // suggested spec changed with auto-update turned off (kept), a suggested object deleted
    // (recreated).
    let merge = "application/merge-patch+json";
    let off = json!({"apf.kubernetes.io/autoupdate-spec": "false"});
    for (name, patch) in [
        ("catch-all", json!({"metadata": {"annotations": off}, "spec": {"matchingPrecedence": 9999}})),
        ("global-default", json!({"spec": {"matchingPrecedence": 9800}})),
        ("service-accounts", json!({"metadata": {"annotations": off}, "spec": {"matchingPrecedence": 8000}})),
    ] {
        let (code, body) = call(&server, "PATCH", &format!("{FLOW_SCHEMAS}/{name}"), merge, patch);
        assert_eq!(code, 200, "{body}");
    }
    let (code, body) = call(&server, "DELETE", &format!("{FLOW_SCHEMAS}/probes"), JSON, Value::Null);
    assert_eq!(code, 200, "{body}");
    let classes_rv = resource_versions(&classes);
    let schemas_rv = resource_versions(&list(&server, FLOW_SCHEMAS));
    let levels_rv = resource_versions(&levels);
    server.kill();

    let server = start(dir.path());
    server.wait_ready();
    assert_eq!(resource_versions(&list(&server, PRIORITY_CLASSES)), classes_rv, "priority classes untouched");
    assert_eq!(resource_versions(&list(&server, PRIORITY_LEVELS)), levels_rv, "priority levels untouched");
    let schemas = list(&server, FLOW_SCHEMAS);
    assert_eq!(schemas.len(), 13);
    assert_eq!(schemas["catch-all"]["spec"]["matchingPrecedence"], 10000, "mandatory spec restored");
    assert_eq!(schemas["catch-all"]["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"], "true");
    assert_eq!(schemas["catch-all"]["metadata"]["generation"], 3);
    assert_eq!(schemas["global-default"]["spec"]["matchingPrecedence"], 9900, "auto-updated suggested spec restored");
    assert_eq!(schemas["service-accounts"]["spec"]["matchingPrecedence"], 8000, "suggested spec without auto-update kept");
    assert_eq!(schemas["probes"]["spec"]["matchingPrecedence"], 2, "deleted suggested object recreated");
    for name in ["catch-all", "global-default"] {
        assert_ne!(schemas[name]["metadata"]["resourceVersion"], schemas_rv[name].as_str(), "{name} rewritten");
    }
    for (name, rv) in &schemas_rv {
        if !["catch-all", "global-default"].contains(&name.as_str()) {
            assert_eq!(schemas[name]["metadata"]["resourceVersion"], rv.as_str(), "{name} untouched");
        }
    }
    let rv_after_restore = resource_versions(&schemas);
    server.kill();

    // A second restart has nothing left to do.
    let server = start(dir.path());
    server.wait_ready();
    assert_eq!(resource_versions(&list(&server, FLOW_SCHEMAS)), rv_after_restore);
    assert_eq!(resource_versions(&list(&server, PRIORITY_LEVELS)), levels_rv);
    assert_eq!(resource_versions(&list(&server, PRIORITY_CLASSES)), classes_rv);

    // Pods still get the system classes' priorities.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "critical"},
                     "spec": {"priorityClassName": "system-node-critical", "containers": [{"name": "c", "image": "nginx:1.27"}]}});
    let deadline = Instant::now() + Duration::from_secs(20);
    let created = loop {
        let (code, body) = call(&server, "POST", "/api/v1/namespaces/kube-system/pods", JSON, pod.clone());
        if code == 201 {
            break body;
        }
        // The namespace's default ServiceAccount may not be there yet.
        assert!(Instant::now() < deadline, "{code} {body}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(created["spec"]["priority"], 2_000_001_000);
    assert_eq!(created["spec"]["preemptionPolicy"], "PreemptLowerPriority");
}
