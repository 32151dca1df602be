//! Object lifecycle beyond create/update, end to end against a started server: namespace
//! termination (Terminating phase, NamespaceLifecycle, the in-process finalizer), delete
//! answers and options, deletecollection, a PUT that creates (`AllowCreateOnUpdate`), pod
//! binding and eviction (admitted as creates), the subresources that write one part of an
//! object (CSR approval, ephemeral containers), and Services created at once getting distinct
//! cluster IPs and node ports.

mod common;

use std::time::{Duration, Instant};

use common::{request, start};
use serde_json::{Value, json};

const JSON: &str = "application/json";

fn call(server: &common::Server, method: &str, path: &str, body: Value) -> (u16, Value) {
    let bytes = if body.is_null() { Vec::new() } else { body.to_string().into_bytes() };
    let (code, text) = request(server, method, path, JSON, &bytes);
    (code, serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text })))
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

fn pod(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn namespace_terminates_then_disappears_with_its_contents() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    assert_eq!(call(&server, "POST", "/api/v1/namespaces", namespace("doomed")).0, 201);
    let cms = "/api/v1/namespaces/doomed/configmaps";
    assert_eq!(call(&server, "POST", cms, configmap("plain", json!({}))).0, 201);
    // One object holds on with a finalizer: the namespace waits for it.
    let mut held = configmap("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(call(&server, "POST", cms, held).0, 201);

    let (code, body) = call(&server, "DELETE", "/api/v1/namespaces/doomed", Value::Null);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Terminating", "{body}");
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");

    // NamespaceLifecycle: nothing new in a terminating namespace.
    let (code, body) = call(&server, "POST", cms, configmap("late", json!({})));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        r#"configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated"#
    );
    // A second delete while it terminates: upstream's 409.
    let (code, body) = call(&server, "DELETE", "/api/v1/namespaces/doomed", Value::Null);
    assert_eq!(code, 409, "{body}");
    assert!(body["message"].as_str().unwrap().contains("The system is ensuring all content is removed"), "{body}");

    // The plain object goes; the held one is marked and keeps the namespace.
    wait_until("plain configmap deleted", || call(&server, "GET", &format!("{cms}/plain"), Value::Null).0 == 404);
    let (_, held) = call(&server, "GET", &format!("{cms}/held"), Value::Null);
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    assert_eq!(call(&server, "GET", "/api/v1/namespaces/doomed", Value::Null).0, 200);

    // Its finalizer removed, everything goes.
    let patch = br#"{"metadata":{"finalizers":null}}"#;
    let (code, text) = request(&server, "PATCH", &format!("{cms}/held"), "application/merge-patch+json", patch);
    assert_eq!(code, 200, "{text}");
    wait_until("namespace deleted", || call(&server, "GET", "/api/v1/namespaces/doomed", Value::Null).0 == 404);

    // System namespaces stay.
    let (code, body) = call(&server, "DELETE", "/api/v1/namespaces/kube-system", Value::Null);
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["message"], r#"namespaces "kube-system" is forbidden: this namespace may not be deleted"#);
}

#[test]
fn finalize_subresource_replaces_only_spec_finalizers() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    assert_eq!(call(&server, "POST", "/api/v1/namespaces", namespace("fin")).0, 201);
    let mut body = namespace("fin");
    body["spec"] = json!({"finalizers": ["kubernetes", "example.com/extra"]});
    body["metadata"]["labels"] = json!({"ignored": "yes"});
    let (code, ns) = call(&server, "PUT", "/api/v1/namespaces/fin/finalize", body);
    assert_eq!(code, 200, "{ns}");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes", "example.com/extra"]));
    assert!(ns["metadata"]["labels"].get("ignored").is_none(), "{ns}");
}

#[test]
fn deletes_answer_as_upstream_and_collections_delete_by_selector() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let cms = "/api/v1/namespaces/default/configmaps";
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        assert_eq!(call(&server, "POST", cms, configmap(name, json!({"tier": tier}))).0, 201);
    }
    // A ConfigMap's store answers a delete with a Status naming it; a pod's with the pod.
    let (code, body) = call(&server, "DELETE", &format!("{cms}/c"), Value::Null);
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Success");
    assert_eq!(body["details"]["name"], "c");
    assert_eq!(body["details"]["kind"], "configmaps");
    assert!(body["details"].get("group").is_none(), "{body}");

    // Bad DeleteOptions: 422 from upstream's validation.
    let (code, body) = call(&server, "DELETE", &format!("{cms}/a"), json!({"propagationPolicy": "Sometimes"}));
    assert_eq!(code, 422, "{body}");
    assert!(body["message"].as_str().unwrap().contains("Unsupported value: \"Sometimes\""), "{body}");
    // Valid policies are accepted.
    let (code, body) = call(&server, "DELETE", &format!("{cms}/a?propagationPolicy=Foreground"), Value::Null);
    assert_eq!(code, 200, "{body}");

    assert_eq!(call(&server, "POST", cms, configmap("a", json!({"tier": "web"}))).0, 201);
    assert_eq!(call(&server, "POST", cms, configmap("d", json!({"tier": "db"}))).0, 201);
    let (code, body) = call(&server, "DELETE", &format!("{cms}?labelSelector=tier%3Dweb"), Value::Null);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "ConfigMapList");
    let mut deleted: Vec<&str> = body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    deleted.sort();
    assert_eq!(deleted, ["a", "b"]);
    let (_, list) = call(&server, "GET", cms, Value::Null);
    let left: Vec<&str> = list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(left, ["d", "kube-root-ca.crt"]);
}

#[test]
fn a_put_creates_only_what_upstream_creates_on_update() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let ns = "/api/v1/namespaces/default";

    // ConfigMaps do not create on update: a PUT to a missing one is upstream's 404 Status.
    let (code, body) = call(&server, "PUT", &format!("{ns}/configmaps/absent"), configmap("absent", json!({})));
    assert_eq!(code, 404, "{body}");
    assert_eq!(
        (body["kind"].as_str(), body["reason"].as_str(), body["message"].as_str()),
        (Some("Status"), Some("NotFound"), Some(r#"configmaps "absent" not found"#)),
        "{body}"
    );
    assert_eq!(body["details"], json!({"name": "absent", "kind": "configmaps"}));

    // Services do: 201, created as a POST creates, with the same defaults and allocation.
    let service = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    };
    let (code, put) = call(&server, "PUT", &format!("{ns}/services/by-put"), service("by-put"));
    assert_eq!(code, 201, "{put}");
    assert!(put["metadata"]["uid"].is_string() && put["metadata"]["creationTimestamp"].is_string(), "{put}");
    assert!(put["metadata"]["resourceVersion"].is_string(), "{put}");
    assert!(put["spec"]["clusterIP"].as_str().is_some_and(|ip| !ip.is_empty()), "a cluster IP is allocated: {put}");
    let (code, posted) = call(&server, "POST", &format!("{ns}/services"), service("by-post"));
    assert_eq!(code, 201, "{posted}");
    let (code, got) = call(&server, "GET", &format!("{ns}/services/by-put"), Value::Null);
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["metadata"]["uid"], put["metadata"]["uid"]);
    let without_ips = |service: &Value| {
        let mut spec = service["spec"].clone();
        spec.as_object_mut().unwrap().retain(|field, _| !matches!(field.as_str(), "clusterIP" | "clusterIPs"));
        spec
    };
    assert_eq!(without_ips(&got), without_ips(&posted), "a PUT's create defaults as a POST's");
    // Now it exists, the same PUT replaces it: 200.
    let mut again = got.clone();
    again["metadata"]["labels"] = json!({"step": "two"});
    let (code, body) = call(&server, "PUT", &format!("{ns}/services/by-put"), again);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["labels"]["step"], "two", "{body}");

    // A resourceVersion plays no part in a create (upstream compares it only with a stored
    // object's); a uid is a precondition nothing stored meets: 409.
    let mut stale = service("with-rv");
    stale["metadata"]["resourceVersion"] = json!("12345");
    let (code, body) = call(&server, "PUT", &format!("{ns}/services/with-rv"), stale);
    assert_eq!(code, 201, "{body}");
    let mut deleted = service("with-uid");
    deleted["metadata"]["uid"] = json!("0a1b2c3d");
    let (code, body) = call(&server, "PUT", &format!("{ns}/services/with-uid"), deleted.clone());
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on services \"with-uid\": StorageError: invalid object, Code: 4, \
         Key: /registry/services/specs/default/with-uid, ResourceVersion: 0, AdditionalErrorMsg: \
         Precondition failed: UID in precondition: 0a1b2c3d, UID in object meta: "
    );
    // So is another uid than the stored object's.
    deleted["metadata"]["name"] = json!("by-post");
    let (code, body) = call(&server, "PUT", &format!("{ns}/services/by-post"), deleted);
    assert_eq!(code, 409, "{body}");
    assert!(body["message"].as_str().unwrap().ends_with(&format!("UID in object meta: {}", posted["metadata"]["uid"].as_str().unwrap())));

    // Neither a patch nor a subresource write creates.
    let (code, text) = request(&server, "PATCH", &format!("{ns}/services/patched"), "application/merge-patch+json", b"{}");
    assert_eq!(code, 404, "{text}");
    let (code, body) = call(&server, "PUT", &format!("{ns}/services/status-only/status"), service("status-only"));
    assert_eq!(code, 404, "{body}");
    assert_eq!(call(&server, "GET", &format!("{ns}/services/status-only"), Value::Null).0, 404);

    // Cluster-scoped and other groups alike; a dry run creates nothing.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    let (code, body) = call(&server, "PUT", &format!("{roles}/reader"), role);
    assert_eq!(code, 201, "{body}");
    assert_eq!(call(&server, "GET", &format!("{roles}/reader"), Value::Null).0, 200);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "holder"}});
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let (code, body) = call(&server, "PUT", &format!("{leases}/holder?dryRun=All"), lease);
    assert_eq!(code, 201, "{body}");
    assert_eq!(call(&server, "GET", &format!("{leases}/holder"), Value::Null).0, 404);
    // The create is admitted as one: nothing is created in a missing namespace.
    let (code, body) = call(&server, "PUT", "/api/v1/namespaces/nowhere/services/s", service("s"));
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], r#"namespaces "nowhere" not found"#);
}

#[test]
fn pods_bind_once_and_evict_under_their_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(call(&server, "POST", pods, pod("p1", json!({"app": "x"}))).0, 201);
    let binding = |pod: &str, node: &str| json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"kind": "Node", "name": node}});
    let (code, body) = call(&server, "POST", &format!("{pods}/p1/binding"), binding("p1", "node-1"));
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"], "Success");
    let (_, p1) = call(&server, "GET", &format!("{pods}/p1"), Value::Null);
    assert_eq!(p1["spec"]["nodeName"], "node-1");
    assert_eq!(p1["status"]["conditions"][0]["type"], "PodScheduled");
    let (code, body) = call(&server, "POST", &format!("{pods}/p1/binding"), binding("p1", "node-2"));
    assert_eq!(code, 409, "{body}");
    assert!(body["message"].as_str().unwrap().contains(r#"pod p1 is already assigned to node "node-1""#), "{body}");
    // The legacy collection names the pod in the body.
    assert_eq!(call(&server, "POST", pods, pod("p2", json!({"app": "x"}))).0, 201);
    let (code, body) = call(&server, "POST", "/api/v1/namespaces/default/bindings", binding("p2", "node-1"));
    assert_eq!(code, 201, "{body}");
    let (code, body) = call(&server, "POST", &format!("{pods}/p1/binding"), binding("other", "node-1"));
    assert_eq!(code, 400, "{body}");

    // A running pod covered by a budget that allows no disruption cannot be evicted.
    let status = br#"{"status":{"phase":"Running"}}"#;
    let (code, text) = request(&server, "PATCH", &format!("{pods}/p1/status"), "application/merge-patch+json", status);
    assert_eq!(code, 200, "{text}");
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "budget"},
                     "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}});
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    assert_eq!(call(&server, "POST", pdbs, pdb).0, 201);
    let eviction = |pod: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}});
    let (code, body) = call(&server, "POST", &format!("{pods}/p1/eviction"), eviction("p1"));
    assert_eq!(code, 429, "{body}");
    assert_eq!(body["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(body["details"]["causes"][0]["reason"], "DisruptionBudget", "{body}");
    // A pending pod ignores the budget (bound to a node, it is deleted gracefully: marked).
    let (code, body) = call(&server, "POST", &format!("{pods}/p2/eviction"), eviction("p2"));
    assert_eq!(code, 201, "{body}");
    let (_, p2) = call(&server, "GET", &format!("{pods}/p2"), Value::Null);
    assert!(p2["metadata"]["deletionTimestamp"].is_string(), "{p2}");
    // An unscheduled pod goes at once.
    assert_eq!(call(&server, "POST", pods, pod("p3", json!({"app": "x"}))).0, 201);
    let (code, body) = call(&server, "POST", &format!("{pods}/p3/eviction"), eviction("p3"));
    assert_eq!(code, 201, "{body}");
    assert_eq!(call(&server, "GET", &format!("{pods}/p3"), Value::Null).0, 404);
    // Once the budget allows one disruption, the eviction goes through and is recorded.
    let allow = br#"{"status":{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}}"#;
    let (code, text) = request(&server, "PATCH", &format!("{pdbs}/budget/status"), "application/merge-patch+json", allow);
    assert_eq!(code, 200, "{text}");
    let (code, body) = call(&server, "POST", &format!("{pods}/p1/eviction"), eviction("p1"));
    assert_eq!(code, 201, "{body}");
    // A scheduled pod is deleted gracefully: marked for its grace period (no kubelet finishes
    // it here), until a delete with a zero grace period.
    let (_, evicted) = call(&server, "GET", &format!("{pods}/p1"), Value::Null);
    assert!(evicted["metadata"]["deletionTimestamp"].is_string(), "{evicted}");
    assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30, "{evicted}");
    let (code, body) = call(&server, "DELETE", &format!("{pods}/p1"), json!({"gracePeriodSeconds": 0}));
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&server, "GET", &format!("{pods}/p1"), Value::Null);
    assert_eq!(code, 404, "{body}");
    let (_, budget) = call(&server, "GET", &format!("{pdbs}/budget"), Value::Null);
    assert_eq!(budget["status"]["disruptionsAllowed"], 0, "{budget}");
    assert!(budget["status"]["disruptedPods"]["p1"].is_string(), "{budget}");
}

/// A binding and an eviction are creates, admitted as such: NamespaceLifecycle refuses both in
/// a terminating namespace, before the pod is looked at (upstream's 403).
#[test]
fn bindings_and_evictions_are_admitted_as_creates() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    assert_eq!(call(&server, "POST", "/api/v1/namespaces", namespace("closing")).0, 201);
    // A config map with a finalizer keeps the namespace terminating.
    let mut held = configmap("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(call(&server, "POST", "/api/v1/namespaces/closing/configmaps", held).0, 201);
    let pods = "/api/v1/namespaces/closing/pods";
    assert_eq!(call(&server, "POST", pods, pod("p", json!({}))).0, 201);
    assert_eq!(call(&server, "DELETE", "/api/v1/namespaces/closing", Value::Null).0, 200);

    let refused = r#"pods "p" is forbidden: unable to create new content in namespace closing because it is being terminated"#;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}});
    let (code, body) = call(&server, "POST", &format!("{pods}/p/binding"), binding);
    assert_eq!((code, body["message"].as_str()), (403, Some(refused)), "{body}");
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}});
    let (code, body) = call(&server, "POST", &format!("{pods}/p/eviction"), eviction);
    assert_eq!((code, body["message"].as_str()), (403, Some(refused)), "{body}");
}

#[test]
fn certificate_requests_record_their_requester_and_are_approved_through_approval() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let base = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    // The body names someone else: the server records the client certificate's user.
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K", "signerName": "example.com/signer",
                 "usages": ["client auth"], "username": "mallory",
                 "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
    let (code, created) = call(&server, "POST", base, csr);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["username"], "kubernetes-admin", "{created}");
    assert!(created["spec"]["groups"].as_array().unwrap().contains(&json!("system:authenticated")), "{created}");
    assert!(created["status"].get("conditions").is_none(), "a new request has no conditions: {created}");

    // Approved and Denied are not the status endpoint's to add.
    let mut approved = created.clone();
    approved["status"]["conditions"] = json!([{"type": "Approved", "status": "True", "reason": "Test"}]);
    let (code, refused) = call(&server, "PUT", &format!("{base}/alice/status"), approved.clone());
    assert_eq!(code, 422, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("updates may not add a condition of type \"Approved\""), "{refused}");

    // The approval endpoint adds it, with the server's timestamps, and leaves the spec alone.
    approved["spec"]["usages"] = json!(["server auth"]);
    let (code, stored) = call(&server, "PUT", &format!("{base}/alice/approval"), approved);
    assert_eq!(code, 200, "{stored}");
    let condition = &stored["status"]["conditions"][0];
    assert_eq!((condition["type"].as_str(), condition["reason"].as_str()), (Some("Approved"), Some("Test")), "{stored}");
    assert!(condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string(), "{stored}");
    assert_eq!(stored["spec"]["usages"], json!(["client auth"]), "{stored}");

    // Denied next to Approved, or Approved taken away, is refused.
    let (code, refused) = call(&server, "PATCH", &format!("{base}/alice/approval"), json!(null));
    assert_eq!(code, 415, "a patch needs a patch content type: {refused}");
    let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
    let (code, text) =
        request(&server, "PATCH", &format!("{base}/alice/approval"), "application/merge-patch+json", both.to_string().as_bytes());
    assert_eq!(code, 422, "{text}");
    assert!(text.contains("Approved and Denied conditions are mutually exclusive"), "{text}");
    let none = json!({"status": {"conditions": []}});
    let (code, text) =
        request(&server, "PATCH", &format!("{base}/alice/approval"), "application/merge-patch+json", none.to_string().as_bytes());
    assert_eq!(code, 422, "{text}");
    assert!(text.contains("updates may not remove a condition of type \\\"Approved\\\""), "{text}");
}

#[test]
fn ephemeral_containers_are_only_added_through_their_subresource() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let path = "/api/v1/namespaces/default/pods/web";
    let (code, created) = call(&server, "POST", "/api/v1/namespaces/default/pods", pod("web", json!({})));
    assert_eq!(code, 201, "{created}");

    let debug = json!({"name": "debugger", "image": "busybox", "targetContainerName": "c", "command": ["sh"]});
    let mut with_debugger = created.clone();
    with_debugger["spec"]["ephemeralContainers"] = json!([debug]);
    // Not through the pod itself.
    let (code, refused) = call(&server, "PUT", path, with_debugger.clone());
    assert_eq!(code, 422, "{refused}");
    let (code, stored) = call(&server, "PUT", &format!("{path}/ephemeralcontainers"), with_debugger.clone());
    assert_eq!(code, 200, "{stored}");
    assert_eq!(stored["spec"]["ephemeralContainers"][0]["name"], "debugger", "{stored}");
    assert_eq!(stored["spec"]["ephemeralContainers"][0]["terminationMessagePolicy"], "File", "defaulted: {stored}");
    let (_, read) = call(&server, "GET", &format!("{path}/ephemeralcontainers"), json!(null));
    assert_eq!(read["spec"]["ephemeralContainers"], stored["spec"]["ephemeralContainers"]);

    // Existing ones stay as they are; new ones follow the ephemeral container rules.
    let mut changed = stored.clone();
    changed["spec"]["ephemeralContainers"][0]["image"] = json!("alpine");
    changed["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "second", "image": "busybox", "targetContainerName": "nope", "ports": [{"containerPort": 80}]}));
    let (code, refused) = call(&server, "PUT", &format!("{path}/ephemeralcontainers"), changed);
    assert_eq!(code, 422, "{refused}");
    let causes: Vec<&str> = refused["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    assert!(causes.contains(&"spec.ephemeralContainers[1].ports"), "{refused}");
    assert!(causes.contains(&"spec.ephemeralContainers[1].targetContainerName"), "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("existing ephemeral containers \"debugger\" may not be changed"), "{refused}");
    let mut removed = stored.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let (code, refused) = call(&server, "PUT", &format!("{path}/ephemeralcontainers"), removed);
    assert_eq!(code, 422, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("may not be removed"), "{refused}");
}

/// `pods/resize` (upstream's resize strategy and `ValidatePodResize`): only the containers'
/// CPU and memory change, the QoS class stays, and memory limits do not shrink in place.
#[test]
fn pods_resize_cpu_and_memory_through_their_subresource() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let path = "/api/v1/namespaces/default/pods/sized";
    let mut sized = pod("sized", json!({}));
    sized["spec"]["containers"][0]["resources"] =
        json!({"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"}});
    let (code, created) = call(&server, "POST", "/api/v1/namespaces/default/pods", sized);
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"]["qosClass"], "Burstable");
    let resize = |patch: Value| {
        let (code, text) =
            request(&server, "PATCH", &format!("{path}/resize"), "application/strategic-merge-patch+json", patch.to_string().as_bytes());
        (code, serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)))
    };
    let container =
        |resources: Value, image: &str| json!({"spec": {"containers": [{"name": "c", "image": image, "resources": resources}]}});

    // CPU grows; the image change in the same request is dropped, as upstream drops it.
    let (code, resized) = resize(container(json!({"requests": {"cpu": "150m"}}), "nginx:2"));
    assert_eq!(code, 200, "{resized}");
    assert_eq!(resized["spec"]["containers"][0]["resources"]["requests"]["cpu"], "150m", "{resized}");
    assert_eq!(resized["spec"]["containers"][0]["image"], "nginx:1.27", "{resized}");
    assert_eq!(resized["metadata"]["generation"], 2, "a spec change bumps the generation: {resized}");
    let (code, read) = call(&server, "GET", &format!("{path}/resize"), Value::Null);
    assert_eq!((code, &read["spec"]), (200, &resized["spec"]));

    // Memory limits only shrink with a restart policy that allows it.
    let (code, refused) = resize(container(json!({"limits": {"memory": "150Mi"}}), "nginx:1.27"));
    assert_eq!(code, 422, "{refused}");
    assert_eq!(refused["details"]["causes"][0]["field"], "spec.containers[0].resources.limits[memory]", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("memory limits cannot be decreased unless resizePolicy is RestartContainer"),
        "{refused}"
    );

    // The QoS class may not change.
    let guaranteed = json!({"requests": {"cpu": "200m", "memory": "200Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"}});
    let (code, refused) = resize(container(guaranteed, "nginx:1.27"));
    assert_eq!(code, 422, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("spec: Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"),
        "{refused}"
    );

    // Only CPU and memory: other resources are not resized.
    let (code, refused) = resize(container(json!({"requests": {"ephemeral-storage": "1Gi"}}), "nginx:1.27"));
    assert_eq!(code, 422, "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("only cpu and memory resources are mutable"), "{refused}");

    let (_, unchanged) = call(&server, "GET", path, Value::Null);
    assert_eq!(unchanged["metadata"]["resourceVersion"], resized["metadata"]["resourceVersion"], "{unchanged}");
}

/// The pod strategy's `WarningsOnCreate`: a name that is not a DNS label is allowed, with
/// upstream's warning about the hostname it becomes.
#[test]
fn pods_named_other_than_a_dns_label_are_created_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let headers = [("Content-Type", "application/json"), ("Accept", "application/json")];
    let body = pod("web.v1", json!({})).to_string();
    let (code, answer_headers, answer) =
        common::request_full(&server, "POST", "/api/v1/namespaces/default/pods", &headers, body.as_bytes());
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&answer));
    let warning = common::header(&answer_headers, "warning").unwrap_or_default();
    assert!(
        warning.starts_with("299 - \"metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [a lowercase RFC 1123 label"),
        "{warning}"
    );
    let body = pod("web", json!({})).to_string();
    let (code, answer_headers, _) = common::request_full(&server, "POST", "/api/v1/namespaces/default/pods", &headers, body.as_bytes());
    assert_eq!((code, common::header(&answer_headers, "warning")), (201, None));
}

/// Services created at the same time each get their own cluster IP and node port (each create
/// reads the stored Services to choose; two must not both choose the first free one).
#[test]
fn services_created_at_once_get_distinct_addresses_and_ports() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    const SERVICES: usize = 24;
    std::thread::scope(|scope| {
        for i in 0..SERVICES {
            let server = &server;
            scope.spawn(move || {
                let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("s{i}")},
                    "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
                let (code, body) = call(server, "POST", "/api/v1/namespaces/default/services", service);
                assert_eq!(code, 201, "{body}");
            });
        }
    });
    let (code, list) = call(&server, "GET", "/api/v1/namespaces/default/services", Value::Null);
    assert_eq!(code, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), SERVICES + 1, "with the kubernetes Service");
    let ips: std::collections::BTreeSet<&str> = items.iter().map(|s| s["spec"]["clusterIP"].as_str().unwrap()).collect();
    assert_eq!(ips.len(), items.len(), "cluster IPs are distinct: {ips:?}");
    let ports: std::collections::BTreeSet<u64> = items.iter().filter_map(|s| s["spec"]["ports"][0]["nodePort"].as_u64()).collect();
    assert_eq!(ports.len(), SERVICES, "node ports are distinct: {ports:?}");
}

/// A Service whose type is patched gets what the new type needs and loses what only the old
/// one used, as upstream's: ClusterIP → NodePort allocates node ports, back to ClusterIP drops
/// them and the external traffic policy, and a node port another Service holds is refused.
#[test]
fn services_patched_to_another_type_gain_and_lose_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let services = "/api/v1/namespaces/default/services";
    let patch = |name: &str, body: &str| {
        let (code, text) = request(&server, "PATCH", &format!("{services}/{name}"), "application/merge-patch+json", body.as_bytes());
        (code, serde_json::from_str::<Value>(&text).unwrap())
    };
    for name in ["a", "b"] {
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
        assert_eq!(call(&server, "POST", services, service).0, 201);
    }
    let (code, a) = patch("a", r#"{"spec": {"type": "NodePort"}}"#);
    assert_eq!(code, 200, "{a}");
    let node_port = a["spec"]["ports"][0]["nodePort"].as_u64().unwrap_or_else(|| panic!("a node port is allocated: {a}"));
    assert_eq!(a["spec"]["externalTrafficPolicy"], "Cluster");
    let (code, b) = patch("b", r#"{"spec": {"type": "NodePort"}}"#);
    assert_eq!(code, 200, "{b}");
    assert_ne!(b["spec"]["ports"][0]["nodePort"], node_port, "{b}");
    assert_ne!(b["spec"]["clusterIP"], a["spec"]["clusterIP"]);

    let (code, back) = patch("a", r#"{"spec": {"type": "ClusterIP"}}"#);
    assert_eq!(code, 200, "{back}");
    assert_eq!(back["spec"]["ports"][0].get("nodePort"), None, "{back}");
    assert_eq!(back["spec"].get("externalTrafficPolicy"), None, "{back}");
    assert_eq!(back["spec"]["clusterIP"], a["spec"]["clusterIP"], "the address stays");

    let taken =
        format!(r#"{{"spec": {{"type": "NodePort", "ports": [{{"port": 80, "nodePort": {}}}]}}}}"#, b["spec"]["ports"][0]["nodePort"]);
    let (code, refused) = patch("a", &taken);
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["details"]["causes"][0]["message"],
        format!("Invalid value: {}: provided port is already allocated", b["spec"]["ports"][0]["nodePort"])
    );
}

/// Deleting a Service deletes the Endpoints of the same name (upstream's `afterDelete`); a dry
/// run deletes neither.
#[test]
fn a_deleted_services_endpoints_go_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let ns = "/api/v1/namespaces/default";
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
    assert_eq!(call(&server, "POST", &format!("{ns}/services"), service).0, 201);
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.1.1.1"}], "ports": [{"port": 80}]}]});
    assert_eq!(call(&server, "POST", &format!("{ns}/endpoints"), endpoints).0, 201);
    assert_eq!(call(&server, "DELETE", &format!("{ns}/services/web?dryRun=All"), Value::Null).0, 200);
    assert_eq!(call(&server, "GET", &format!("{ns}/endpoints/web"), Value::Null).0, 200, "a dry run leaves them");
    assert_eq!(call(&server, "DELETE", &format!("{ns}/services/web"), Value::Null).0, 200);
    assert_eq!(call(&server, "GET", &format!("{ns}/endpoints/web"), Value::Null).0, 404);
}

/// A Service held by a finalizer is gone, with its Endpoints, when an update takes the last
/// finalizer off.
#[test]
fn a_finalized_services_endpoints_go_when_its_finalizer_does() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let ns = "/api/v1/namespaces/default";
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {"ports": [{"port": 80}]}});
    assert_eq!(call(&server, "POST", &format!("{ns}/services"), service).0, 201);
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "held"}});
    assert_eq!(call(&server, "POST", &format!("{ns}/endpoints"), endpoints).0, 201);
    assert_eq!(call(&server, "DELETE", &format!("{ns}/services/held"), Value::Null).0, 200);
    assert_eq!(call(&server, "GET", &format!("{ns}/endpoints/held"), Value::Null).0, 200, "the Service is only marked");
    let (code, text) =
        request(&server, "PATCH", &format!("{ns}/services/held"), "application/merge-patch+json", br#"{"metadata": {"finalizers": null}}"#);
    assert_eq!(code, 200, "{text}");
    assert_eq!(call(&server, "GET", &format!("{ns}/services/held"), Value::Null).0, 404);
    assert_eq!(call(&server, "GET", &format!("{ns}/endpoints/held"), Value::Null).0, 404);
}

/// An update or patch that changes nothing is not written, as upstream's `GuaranteedUpdate`:
/// the object keeps its resourceVersion. A patch that adds a field the kind does not have is
/// warned about by default and refused under `fieldValidation=Strict` (upstream's patchers).
#[test]
fn unchanged_writes_keep_the_revision_and_patched_unknown_fields_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(call(&server, "POST", path, configmap("same", json!({"a": "b"}))).0, 201);
    let (_, stored) = call(&server, "GET", &format!("{path}/same"), Value::Null);
    let revision = stored["metadata"]["resourceVersion"].clone();
    // The same object put back, and patches that change nothing.
    let (code, put) = call(&server, "PUT", &format!("{path}/same"), stored.clone());
    assert_eq!((code, &put["metadata"]["resourceVersion"]), (200, &revision), "{put}");
    for (content_type, patch) in [
        ("application/strategic-merge-patch+json", json!({"data": {"k": "v"}})),
        ("application/merge-patch+json", json!({"metadata": {"labels": {"a": "b"}}})),
        ("application/json-patch+json", json!([{"op": "replace", "path": "/data/k", "value": "v"}])),
    ] {
        let (code, text) = request(&server, "PATCH", &format!("{path}/same"), content_type, patch.to_string().as_bytes());
        let patched: Value = serde_json::from_str(&text).unwrap();
        assert_eq!((code, &patched["metadata"]["resourceVersion"]), (200, &revision), "{content_type}: {text}");
    }
    // A change is written.
    let (code, text) = request(&server, "PATCH", &format!("{path}/same"), "application/merge-patch+json", br#"{"data":{"k":"w"}}"#);
    let patched: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, 200);
    assert_ne!(patched["metadata"]["resourceVersion"], revision);

    // An unknown field in a patch: a warning (the field is dropped), or under Strict a 422.
    let smp = ("Content-Type", "application/strategic-merge-patch+json");
    let (code, headers, _) =
        common::request_full(&server, "PATCH", &format!("{path}/same"), &[smp, ("Accept", JSON)], br#"{"bogus":1,"data":{"k":"x"}}"#);
    assert_eq!(code, 200);
    assert!(headers.iter().any(|(name, value)| name == "warning" && value == r#"299 - "unknown field \"bogus\"""#), "{headers:?}");
    let (code, text) = request(
        &server,
        "PATCH",
        &format!("{path}/same?fieldValidation=Strict"),
        "application/strategic-merge-patch+json",
        br#"{"bogus":{"deep":[1,2.5]}}"#,
    );
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, 422, "{text}");
    assert_eq!(
        status["message"],
        r#" "" is invalid: patch: Invalid value: "map[bogus:map[deep:[1 2.5]]]": strict decoding error: unknown field "bogus""#
    );
    assert_eq!(status["details"]["causes"][0]["field"], "patch");
    // A patched value the kind cannot hold: the same 422, whatever the validation.
    for (content_type, patch, shown) in [
        ("application/strategic-merge-patch+json", r#"{"data":{"k":9}}"#, "map[data:map[k:9]]"),
        ("application/merge-patch+json", r#"{"data":{"k":9}}"#, r#"{\"apiVersion\":\"v1\""#),
    ] {
        let (code, text) = request(&server, "PATCH", &format!("{path}/same"), content_type, patch.as_bytes());
        let status: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (code, &status["reason"], &status["details"]["causes"][0]["field"]),
            (422, &json!("Invalid"), &json!("patch")),
            "{text}"
        );
        let message = status["message"].as_str().unwrap();
        assert!(message.starts_with(&format!(r#" "" is invalid: patch: Invalid value: "{shown}"#)), "{content_type}: {message}");
    }
    // A type error goes before an unknown field, as upstream's converter finds both in one pass
    // and fails on the first.
    let (code, text) = request(
        &server,
        "PATCH",
        &format!("{path}/same?fieldValidation=Strict"),
        "application/merge-patch+json",
        br#"{"bogus":1,"data":{"k":9}}"#,
    );
    let status: Value = serde_json::from_str(&text).unwrap();
    let message = status["message"].as_str().unwrap();
    assert_eq!((code, &status["details"]["causes"][0]["field"]), (422, &json!("patch")), "{text}");
    assert!(message.contains("invalid type") && !message.contains("strict decoding error"), "{message}");
    // A body whose value its kind cannot hold: upstream's `transformDecodeError` wording.
    let (code, text) =
        request(&server, "POST", path, JSON, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"k":9}}"#);
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, 400, "{text}");
    assert!(status["message"].as_str().unwrap().starts_with(r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: "#), "{text}");
    // A JSON array where a struct goes is refused, as Go's decoder refuses it (serde's derive
    // read it by position: this made a ConfigMap named `by-position`).
    let (code, text) =
        request(&server, "POST", path, JSON, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":["by-position"],"data":{"k":"v"}}"#);
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, 400, "{text}");
    assert!(status["message"].as_str().unwrap().contains("invalid type: sequence, expected struct ObjectMeta"), "{text}");

    // A body that repeats a key: the last value is kept and the repeat is warned about; under
    // Strict it is a 400 listing every strict decoding error, as upstream's decoder.
    let repeated =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"first","name":"twice"},"data":{"k":"1","k":"2"},"bogus":1}"#;
    let (code, headers, body) = common::request_full(&server, "POST", path, &[("Content-Type", JSON), ("Accept", JSON)], repeated);
    let created: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((code, &created["metadata"]["name"], &created["data"]["k"]), (201, &json!("twice"), &json!("2")), "{created}");
    let warnings: Vec<&str> = headers.iter().filter(|(name, _)| name == "warning").map(|(_, value)| value.as_str()).collect();
    assert_eq!(
        warnings,
        [r#"299 - "duplicate field \"metadata.name\"""#, r#"299 - "duplicate field \"data.k\"""#, r#"299 - "unknown field \"bogus\"""#]
    );
    let (code, text) = request(&server, "POST", &format!("{path}?fieldValidation=Strict"), JSON, repeated);
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(code, 400, "{text}");
    assert_eq!(
        status["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", duplicate field "data.k", unknown field "bogus""#
    );
}
