//! Server-side printing through the public API, as the REST layer uses it for `kubectl get`.

use chrono::{DateTime, TimeDelta, Utc};
use kapi::tables::{Columns, IncludeObject, Table, TableMediaType, TableVersion, build_table, human_duration, to_table};
use serde_json::{Value, json};

/// What kubectl v1.32 sends for `kubectl get`.
const KUBECTL_ACCEPT: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// How the resource's strategy prints its objects.
fn printer(group: &str, resource: &str) -> Columns {
    kapi::registry::strategy::for_resource(group, resource).table()
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap()
}

fn ago(secs: i64) -> String {
    (now() - TimeDelta::seconds(secs)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[test]
fn kubectl_get_pods_gets_a_table() {
    let table_of = |accept| kapi::negotiation::negotiate(Some(accept)).and_then(|n| n.table());
    let request = table_of(KUBECTL_ACCEPT).expect("a table request");
    assert_eq!(request.version, TableVersion::V1);
    assert_eq!(request.media_type, TableMediaType::Json);
    assert_eq!(table_of("application/json"), None);

    let include = IncludeObject::from_query("?limit=500").unwrap();
    let pods = [json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web-0", "namespace": "default", "resourceVersion": "11", "creationTimestamp": ago(125)},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
        "status": {"phase": "Running", "podIP": "10.244.1.3", "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
    })];
    let table = to_table(&printer("", "pods"), &pods, Some(&json!({"resourceVersion": "12"})), include, now());

    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["metadata"], json!({"resourceVersion": "12"}));
    let headers: Vec<&str> = table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(headers, ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]);
    assert_eq!(table["rows"][0]["cells"], json!(["web-0", "1/1", "Running", "0", "2m5s", "10.244.1.3", "node-1", "<none>", "<none>"]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "web-0");

    // The JSON is a meta.k8s.io Table.
    let typed: Table = serde_json::from_value(table.clone()).unwrap();
    assert_eq!(typed.rows.map(|rows| rows.len()), Some(1));
}

#[test]
fn unknown_resources_get_the_default_columns() {
    let widget = json!({"metadata": {"name": "w", "resourceVersion": "3", "creationTimestamp": "2026-02-28T10:00:00Z"}});
    let options = kapi::tables::TableOptions { include_object: IncludeObject::None, ..Default::default() };
    let table = build_table(&printer("example.com", "widgets"), &[widget], None, &options, now());
    let columns = table.column_definitions.unwrap();
    assert_eq!(columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["Name", "Created At"]);
    assert_eq!(columns[1].type_, "date");
    let rows = table.rows.unwrap();
    assert_eq!(rows[0].cells, vec![json!("w"), json!("2026-02-28T10:00:00Z")]);
    assert_eq!(rows[0].object, Value::Null);
    assert_eq!(table.metadata.resource_version.as_deref(), Some("3"));
    assert_eq!(human_duration(TimeDelta::hours(26)), "26h");
}

// ---------------------------------------------------------------------------------------------
// Printers of the later API groups (`pkg/printers/internalversion` of v1.36)

fn meta(name: &str, age_secs: i64) -> Value {
    json!({"name": name, "resourceVersion": "5", "creationTimestamp": ago(age_secs)})
}

/// The cells of each row of a table of `objects`.
fn cells(group: &str, resource: &str, objects: &[Value]) -> Vec<Vec<Value>> {
    let options = kapi::tables::TableOptions { include_object: IncludeObject::None, ..Default::default() };
    build_table(&printer(group, resource), objects, None, &options, now())
        .rows
        .expect("printers always have rows")
        .into_iter()
        .map(|row| row.cells)
        .collect()
}

fn one(group: &str, resource: &str, object: Value) -> Vec<Value> {
    let mut rows = cells(group, resource, &[object]);
    let row = rows.remove(0);
    assert_eq!(row.len(), kapi::tables::column_definitions(&printer(group, resource)).len(), "a cell per column: {row:?}");
    row
}

/// Column names with type, format and priority.
fn headers(group: &str, resource: &str) -> Vec<(String, String, String, i32)> {
    kapi::tables::column_definitions(&printer(group, resource)).into_iter().map(|c| (c.name, c.type_, c.format, c.priority)).collect()
}

fn names(group: &str, resource: &str) -> Vec<String> {
    headers(group, resource).into_iter().map(|h| h.0).collect()
}

#[test]
fn horizontal_pod_autoscalers_print_targets_like_upstream() {
    assert_eq!(names("autoscaling", "horizontalpodautoscalers"), ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]);
    let hpa = |metrics: Value, current: Value| {
        json!({"metadata": meta("web", 90),
               "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                        "minReplicas": 2, "maxReplicas": 10, "metrics": metrics},
               "status": {"currentReplicas": 3, "desiredReplicas": 3, "currentMetrics": current}})
    };
    let cpu = json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]);
    let cpu_now = json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 50, "averageValue": "250m"}}}]);
    assert_eq!(
        one("autoscaling", "horizontalpodautoscalers", hpa(cpu.clone(), cpu_now)),
        vec![json!("web"), json!("Deployment/web"), json!("cpu: 50%/60%"), json!("2"), json!(10), json!(3), json!("90s")]
    );
    // No current metric yet; no minimum.
    let mut fresh = hpa(cpu, json!([]));
    fresh["spec"].as_object_mut().unwrap().remove("minReplicas");
    let row = one("autoscaling", "horizontalpodautoscalers", fresh);
    assert_eq!((&row[2], &row[3]), (&json!("cpu: <unknown>/60%"), &json!("<unset>")));

    // Two shown, then how many more; averages, values and quantities in canonical form.
    let metrics = json!([
        {"type": "Pods", "pods": {"metric": {"name": "packets"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1024Mi"}}}
    ]);
    let current = json!([
        {"type": "Pods", "pods": {"metric": {"name": "packets"}, "current": {"averageValue": "500"}}},
        {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"averageValue": "20"}}}
    ]);
    let row = one("autoscaling", "horizontalpodautoscalers", hpa(metrics, current));
    assert_eq!(row[2], json!("500/1k, 20/30 (avg) + 1 more..."));

    let metrics = json!([
        {"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"kind": "Service", "name": "s"},
                                       "target": {"type": "Value", "value": "10"}}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization"}}}
    ]);
    let current = json!([{"type": "Object", "object": {"metric": {"name": "rps"}, "current": {"value": "7"}}}]);
    let row = one("autoscaling", "horizontalpodautoscalers", hpa(metrics, current));
    assert_eq!(row[2], json!("7/10, cpu: <unknown>/<auto>"));
    let row = one("autoscaling", "horizontalpodautoscalers", hpa(json!([{"type": "Custom"}]), json!([])));
    assert_eq!(row[2], json!("<unknown type>"));
    let row = one("autoscaling", "horizontalpodautoscalers", hpa(json!([]), json!([])));
    assert_eq!(row[2], json!("<none>"));
}

#[test]
fn autoscaling_v1_objects_print_as_their_internal_object() {
    // A get through autoscaling/v1: the CPU target and utilization fields.
    let v1 = json!({"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1", "metadata": meta("web", 90),
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                 "targetCPUUtilizationPercentage": 60},
        "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 50}});
    assert_eq!(
        one("autoscaling", "horizontalpodautoscalers", v1),
        vec![json!("web"), json!("Deployment/web"), json!("cpu: 50%/60%"), json!("1"), json!(5), json!(2), json!("90s")]
    );

    // A list item (no apiVersion) of an object written through v2 with CPU first, then memory:
    // v1 keeps the memory target and every current metric in annotations. The internal object
    // has them back, in the stored order.
    let item = json!({"metadata": {"name": "api", "creationTimestamp": ago(60), "annotations": {
            "autoscaling.alpha.kubernetes.io/metrics":
                r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1Gi"}}]"#,
            "autoscaling.alpha.kubernetes.io/current-metrics":
                r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"200m"}},{"type":"Resource","resource":{"name":"memory","currentAverageValue":"512Mi"}}]"#}},
        "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "api"}, "maxReplicas": 4,
                 "targetCPUUtilizationPercentage": 50},
        "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 40}});
    let rows = cells("autoscaling", "horizontalpodautoscalers", &[item]);
    assert_eq!(
        rows[0],
        vec![
            json!("api"),
            json!("StatefulSet/api"),
            json!("cpu: 40%/50%, memory: 512Mi/1Gi"),
            json!("<unset>"),
            json!(4),
            json!(1),
            json!("60s")
        ]
    );
}

#[test]
fn certificates() {
    assert_eq!(
        names("certificates.k8s.io", "certificatesigningrequests"),
        ["Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"]
    );
    let csr = json!({"metadata": meta("csr-1", 30), "spec": {"request": "LS0t", "signerName": "kubernetes.io/kube-apiserver-client",
        "username": "alice", "expirationSeconds": 86400, "usages": ["client auth"]},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved"}], "certificate": "LS0tLS1CRUdJTg=="}});
    assert_eq!(
        one("certificates.k8s.io", "certificatesigningrequests", csr),
        vec![
            json!("csr-1"),
            json!("30s"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );
    let denied = json!({"metadata": meta("csr-2", 30), "spec": {"request": "LS0t", "username": "bob"},
        "status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}, {"type": "Failed", "status": "True"}]}});
    let row = one("certificates.k8s.io", "certificatesigningrequests", denied);
    assert_eq!(row[2..], [json!("<none>"), json!("bob"), json!("<none>"), json!("Denied,Failed")]);
    let pending = json!({"metadata": meta("csr-3", 30), "spec": {"request": "LS0t", "expirationSeconds": 600}});
    let row = one("certificates.k8s.io", "certificatesigningrequests", pending);
    assert_eq!(row[4..], [json!("10m"), json!("Pending")]);

    assert_eq!(names("certificates.k8s.io", "clustertrustbundles"), ["Name", "SignerName"]);
    let bundle = json!({"metadata": meta("example.com:foo:abc", 10), "spec": {"signerName": "example.com/foo", "trustBundle": "..."}});
    assert_eq!(one("certificates.k8s.io", "clustertrustbundles", bundle), vec![json!("example.com:foo:abc"), json!("example.com/foo")]);
    let unsigned = json!({"metadata": meta("roots", 10), "spec": {"trustBundle": "..."}});
    assert_eq!(one("certificates.k8s.io", "clustertrustbundles", unsigned)[1], json!("<none>"));

    assert_eq!(
        headers("certificates.k8s.io", "podcertificaterequests").into_iter().map(|h| (h.0, h.3)).collect::<Vec<_>>(),
        [
            ("Name", 0),
            ("PodName", 0),
            ("ServiceAccountName", 0),
            ("NodeName", 0),
            ("SignerName", 0),
            ("State", 0),
            ("UnverifiedUserAnnotations", 0)
        ]
        .map(|(n, p)| (n.to_string(), p))
    );
    let pcr = json!({"metadata": meta("web-0-abc", 5), "spec": {"podName": "web-0", "serviceAccountName": "default", "nodeName": "node-1",
        "signerName": "example.com/pod", "unverifiedUserAnnotations": {"b": "2", "a": "1"}},
        "status": {"conditions": [{"type": "Issued", "status": "True"}]}});
    assert_eq!(
        one("certificates.k8s.io", "podcertificaterequests", pcr),
        vec![
            json!("web-0-abc"),
            json!("web-0"),
            json!("default"),
            json!("node-1"),
            json!("example.com/pod"),
            json!("Issued"),
            json!("a=1,b=2")
        ]
    );
    let pending = json!({"metadata": meta("p", 5), "spec": {"podName": "p"}});
    let row = one("certificates.k8s.io", "podcertificaterequests", pending);
    assert_eq!(row[5..], [json!("Pending"), json!("<none>")]);
}

#[test]
fn lease_candidates_and_storage() {
    let candidate = json!({"metadata": meta("kube-apiserver-a", 20), "spec": {"leaseName": "kube-scheduler",
        "binaryVersion": "1.36.0", "emulationVersion": "1.35.0", "strategy": "OldestEmulationVersion"}});
    assert_eq!(
        one("coordination.k8s.io", "leasecandidates", candidate),
        vec![json!("kube-apiserver-a"), json!("kube-scheduler"), json!("1.36.0"), json!("1.35.0"), json!("20s")]
    );
    assert_eq!(names("coordination.k8s.io", "leasecandidates")[1..4], ["LeaseName", "BinaryVersion", "EmulationVersion"]);

    let vac = json!({"metadata": meta("gold", 20), "driverName": "csi.example.com", "parameters": {"iops": "3000"}});
    assert_eq!(one("storage.k8s.io", "volumeattributesclasses", vac), vec![json!("gold"), json!("csi.example.com"), json!("20s")]);

    let attacher = &headers("storage.k8s.io", "volumeattachments")[1];
    assert_eq!((attacher.0.as_str(), attacher.2.as_str()), ("Attacher", "name"));
    let va = json!({"metadata": meta("csi-123", 20), "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
        "source": {"persistentVolumeName": "pv-1"}}, "status": {"attached": true}});
    assert_eq!(
        one("storage.k8s.io", "volumeattachments", va),
        vec![json!("csi-123"), json!("csi.example.com"), json!("pv-1"), json!("node-1"), json!(true), json!("20s")]
    );
    let inline = json!({"metadata": meta("csi-456", 20), "spec": {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {}}}});
    assert_eq!(one("storage.k8s.io", "volumeattachments", inline)[2..5], [json!(""), json!("n"), json!(false)]);

    let node = json!({"metadata": meta("node-1", 20), "spec": {"drivers": [{"name": "a", "nodeID": "1"}, {"name": "b", "nodeID": "1"}]}});
    assert_eq!(one("storage.k8s.io", "csinodes", node), vec![json!("node-1"), json!(2), json!("20s")]);

    assert_eq!(
        names("storage.k8s.io", "csidrivers"),
        ["Name", "AttachRequired", "PodInfoOnMount", "StorageCapacity", "TokenRequests", "RequiresRepublish", "Modes", "Age"]
    );
    let bare = json!({"metadata": meta("csi.example.com", 20), "spec": {}});
    assert_eq!(
        one("storage.k8s.io", "csidrivers", bare),
        vec![
            json!("csi.example.com"),
            json!(true),
            json!(false),
            json!(false),
            json!("<unset>"),
            json!(false),
            json!("<none>"),
            json!("20s")
        ]
    );
    let full = json!({"metadata": meta("d", 20), "spec": {"attachRequired": false, "podInfoOnMount": true, "storageCapacity": true,
        "tokenRequests": [{"audience": "vault"}, {"audience": "aws", "expirationSeconds": 3600}], "requiresRepublish": true,
        "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
    assert_eq!(
        one("storage.k8s.io", "csidrivers", full)[1..7],
        [json!(false), json!(true), json!(true), json!("vault,aws"), json!(true), json!("Persistent,Ephemeral")]
    );

    assert_eq!(names("storage.k8s.io", "csistoragecapacities"), ["Name", "StorageClassName", "Capacity"]);
    let capacity = json!({"metadata": meta("csisc-1", 20), "storageClassName": "fast", "capacity": "1024Mi"});
    assert_eq!(one("storage.k8s.io", "csistoragecapacities", capacity), vec![json!("csisc-1"), json!("fast"), json!("1Gi")]);
    let unknown = json!({"metadata": meta("csisc-2", 20), "storageClassName": "fast"});
    assert_eq!(one("storage.k8s.io", "csistoragecapacities", unknown)[2], json!("<unset>"));
}

#[test]
fn admission_policies_and_bindings() {
    let g = "admissionregistration.k8s.io";
    assert_eq!(names(g, "validatingadmissionpolicies"), ["Name", "Validations", "ParamKind", "Age"]);
    let policy = json!({"metadata": meta("replicas", 40), "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "true"}, {"expression": "false"}]}});
    assert_eq!(one(g, "validatingadmissionpolicies", policy), vec![json!("replicas"), json!(2), json!("v1/ConfigMap"), json!("40s")]);
    let plain = json!({"metadata": meta("m", 40), "spec": {"mutations": [{"patchType": "ApplyConfiguration"}]}});
    assert_eq!(names(g, "mutatingadmissionpolicies"), ["Name", "Mutations", "ParamKind", "Age"]);
    assert_eq!(one(g, "mutatingadmissionpolicies", plain), vec![json!("m"), json!(1), json!("<unset>"), json!("40s")]);

    assert_eq!(names(g, "validatingadmissionpolicybindings"), ["Name", "PolicyName", "ParamRef", "Age"]);
    let binding = |param: Value| json!({"metadata": meta("b", 40), "spec": {"policyName": "replicas", "paramRef": param}});
    let param = |resource: &str, param: Value| one(g, resource, binding(param))[2].clone();
    assert_eq!(param("validatingadmissionpolicybindings", json!({"name": "cfg", "namespace": "ns"})), json!("ns/cfg"));
    assert_eq!(param("mutatingadmissionpolicybindings", json!({"name": "cfg"})), json!("*/cfg"));
    assert_eq!(param("validatingadmissionpolicybindings", json!(null)), json!("<unset>"));
    assert_eq!(
        param(
            "validatingadmissionpolicybindings",
            json!({"selector": {"matchLabels": {"env": "prod", "app": "x"},
                                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}})
        ),
        json!(
            "&LabelSelector{MatchLabels:map[string]string{app: x,env: prod,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,Values:[a b],},},}"
        )
    );
    assert_eq!(
        param("validatingadmissionpolicybindings", json!({"selector": {}})),
        json!("&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}")
    );
}

#[test]
fn flow_control() {
    let g = "flowcontrol.apiserver.k8s.io";
    assert_eq!(names(g, "flowschemas"), ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"]);
    let schema = |name: &str, precedence: i64, extra: Value| {
        let mut fs = json!({"metadata": meta(name, 50), "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
            "matchingPrecedence": precedence}});
        if let (Some(fs), Some(extra)) = (fs.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                if k == "distinguisherMethod" {
                    fs["spec"][k] = v.clone();
                } else {
                    fs.insert(k.clone(), v.clone());
                }
            }
        }
        fs
    };
    // Lists print in matching order: precedence, then name.
    let list = [
        schema("service-accounts", 9000, json!({"distinguisherMethod": {"type": "ByUser"}})),
        schema("exempt", 1, json!({"status": {"conditions": [{"type": "Dangling", "status": "False"}]}})),
        schema("b-global", 9000, json!({})),
    ];
    let rows = cells(g, "flowschemas", &list);
    assert_eq!(
        rows,
        vec![
            vec![json!("exempt"), json!("workload-low"), json!(1), json!("<none>"), json!("50s"), json!("False")],
            vec![json!("b-global"), json!("workload-low"), json!(9000), json!("<none>"), json!("50s"), json!("?")],
            vec![json!("service-accounts"), json!("workload-low"), json!(9000), json!("ByUser"), json!("50s"), json!("?")],
        ]
    );

    assert_eq!(
        names(g, "prioritylevelconfigurations"),
        ["Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit", "Age"]
    );
    let limited = json!({"metadata": meta("workload-low", 50), "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}});
    assert_eq!(
        one(g, "prioritylevelconfigurations", limited),
        vec![json!("workload-low"), json!("Limited"), json!(100), json!(128), json!(6), json!(50), json!("50s")]
    );
    let rejecting = json!({"metadata": meta("r", 50), "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Reject"}}}});
    assert_eq!(one(g, "prioritylevelconfigurations", rejecting)[2..6], [json!(5), json!("<none>"), json!("<none>"), json!("<none>")]);
    let exempt = json!({"metadata": meta("exempt", 50), "spec": {"type": "Exempt", "exempt": {}}});
    assert_eq!(
        one(g, "prioritylevelconfigurations", exempt),
        vec![json!("exempt"), json!("Exempt"), json!("<none>"), json!("<none>"), json!("<none>"), json!("<none>"), json!("50s")]
    );
}

#[test]
fn storage_versions_and_migrations() {
    let sv = json!({"metadata": meta("apps.deployments", 70), "status": {"commonEncodingVersion": "apps/v1", "storageVersions": [
        {"apiServerID": "a", "encodingVersion": "apps/v1"}, {"apiServerID": "b", "encodingVersion": "apps/v1"},
        {"apiServerID": "c", "encodingVersion": "apps/v1"}, {"apiServerID": "d", "encodingVersion": "apps/v1"}]}});
    assert_eq!(
        one("internal.apiserver.k8s.io", "storageversions", sv),
        vec![json!("apps.deployments"), json!("apps/v1"), json!("a=apps/v1,b=apps/v1,c=apps/v1 + 1 more..."), json!("70s")]
    );
    let empty = json!({"metadata": meta("x", 70), "status": {}});
    assert_eq!(one("internal.apiserver.k8s.io", "storageversions", empty)[1..3], [json!("<unset>"), json!("<unset>")]);

    let migration_headers = headers("storagemigration.k8s.io", "storageversionmigrations");
    assert_eq!(
        migration_headers.iter().map(|h| (h.0.as_str(), h.2.as_str())).collect::<Vec<_>>(),
        [("Name", ""), ("Resource", ""), ("Status", "")]
    );
    let svm = json!({"metadata": meta("m", 70), "spec": {"resource": {"group": "apps", "resource": "deployments"}},
        "status": {"conditions": [{"type": "Running", "status": "True"}, {"type": "Succeeded", "status": "True"}, {"type": "Failed", "status": "False"}]}});
    assert_eq!(
        one("storagemigration.k8s.io", "storageversionmigrations", svm),
        vec![json!("m"), json!("deployments.apps"), json!("Succeeded")]
    );
    let core = json!({"metadata": meta("n", 70), "spec": {"resource": {"resource": "secrets"}}});
    assert_eq!(one("storagemigration.k8s.io", "storageversionmigrations", core)[1..], [json!("secrets"), json!("Unknown")]);
}

#[test]
fn dynamic_resource_allocation() {
    let g = "resource.k8s.io";
    for resource in ["deviceclasses", "resourceclaimtemplates"] {
        assert_eq!(names(g, resource), ["Name", "Age"]);
        assert_eq!(one(g, resource, json!({"metadata": meta("gpu", 80), "spec": {}})), vec![json!("gpu"), json!("80s")]);
    }
    assert_eq!(names(g, "resourceclaims"), ["Name", "State", "Age"]);
    let claim = |status: Value, deleting: bool| {
        let mut c = json!({"metadata": meta("claim", 80), "spec": {}, "status": status});
        if deleting {
            c["metadata"]["deletionTimestamp"] = json!(ago(1));
        }
        one(g, "resourceclaims", c)[1].clone()
    };
    assert_eq!(claim(json!({}), false), json!("pending"));
    assert_eq!(claim(json!({"allocation": {"devices": {}}}), false), json!("allocated"));
    assert_eq!(
        claim(json!({"allocation": {}, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}), false),
        json!("allocated,reserved")
    );
    assert_eq!(claim(json!({}), true), json!("deleted"));
    assert_eq!(claim(json!({"allocation": {}}), true), json!("deleted,allocated"));

    let slice = json!({"metadata": meta("node-1-gpu", 80), "spec": {"nodeName": "node-1", "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1}}});
    assert_eq!(names(g, "resourceslices"), ["Name", "Node", "Driver", "Pool", "Age"]);
    assert_eq!(
        one(g, "resourceslices", slice),
        vec![json!("node-1-gpu"), json!("node-1"), json!("gpu.example.com"), json!("node-1"), json!("80s")]
    );

    assert_eq!(
        names(g, "resourcepoolstatusrequests"),
        ["Name", "Driver", "Total", "Available", "Allocated", "Unavailable", "Errors", "Pools", "Status", "Completed"]
    );
    let pending = json!({"metadata": meta("r", 80), "spec": {"driver": "gpu.example.com"}});
    assert_eq!(
        one(g, "resourcepoolstatusrequests", pending),
        vec![
            json!("r"),
            json!("gpu.example.com"),
            json!("-"),
            json!("-"),
            json!("-"),
            json!("-"),
            json!("-"),
            json!(0),
            json!("Pending"),
            json!("<none>")
        ]
    );
    let done = json!({"metadata": meta("r", 80), "spec": {"driver": "gpu.example.com"}, "status": {"poolCount": 3,
        "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": ago(15), "reason": "Done", "message": ""}],
        "pools": [{"driver": "gpu.example.com", "poolName": "a", "totalDevices": 4, "availableDevices": 3, "allocatedDevices": 1, "unavailableDevices": 0},
                  {"driver": "gpu.example.com", "poolName": "b", "totalDevices": 2, "availableDevices": 0, "allocatedDevices": 2, "unavailableDevices": 0,
                   "validationError": "bad"}]}});
    assert_eq!(
        one(g, "resourcepoolstatusrequests", done),
        vec![
            json!("r"),
            json!("gpu.example.com"),
            json!(6),
            json!(3),
            json!(3),
            json!(0),
            json!(1),
            json!(3),
            json!("Complete (2/3 pools)"),
            json!("15s")
        ]
    );
    let failed = json!({"metadata": meta("r", 80), "spec": {"driver": "d"}, "status": {"poolCount": 1,
        "conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": ago(15)}], "pools": [{"totalDevices": 4}]}});
    assert_eq!(
        one(g, "resourcepoolstatusrequests", failed)[2..],
        [json!("-"), json!("-"), json!("-"), json!("-"), json!("-"), json!(1), json!("Failed"), json!("<none>")]
    );

    assert_eq!(names(g, "devicetaintrules"), ["Name", "Key", "Value", "Effect", "TimeAdded", "Age"]);
    let rule = json!({"metadata": meta("maintenance", 80), "spec": {"deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "example.com/maintenance", "value": "planned", "effect": "NoExecute", "timeAdded": ago(40)}}});
    assert_eq!(
        one(g, "devicetaintrules", rule),
        vec![json!("maintenance"), json!("example.com/maintenance"), json!("planned"), json!("NoExecute"), json!("40s"), json!("80s")]
    );
    let untimed = json!({"metadata": meta("t", 80), "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}});
    assert_eq!(one(g, "devicetaintrules", untimed)[2..5], [json!(""), json!("NoSchedule"), json!("")]);
}

#[test]
fn service_cidrs_and_ip_addresses() {
    let cidr = json!({"metadata": meta("kubernetes", 100), "spec": {"cidrs": ["10.96.0.0/16", "fd00::/108"]}});
    assert_eq!(one("networking.k8s.io", "servicecidrs", cidr), vec![json!("kubernetes"), json!("10.96.0.0/16,fd00::/108"), json!("100s")]);
    // Upstream declares two columns and prints the age as a third cell.
    assert_eq!(names("networking.k8s.io", "ipaddresses"), ["Name", "ParentRef"]);
    let ip = |parent: Value| json!({"metadata": meta("10.96.0.1", 100), "spec": {"parentRef": parent}});
    let rows = cells(
        "networking.k8s.io",
        "ipaddresses",
        &[
            ip(json!({"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"})),
            ip(json!({"group": "gateway.networking.k8s.io", "resource": "Gateways", "name": "gw"})),
            json!({"metadata": meta("10.96.0.2", 100), "spec": {}}),
        ],
    );
    assert_eq!(
        rows,
        vec![
            vec![json!("10.96.0.1"), json!("services/default/kubernetes"), json!("100s")],
            vec![json!("10.96.0.1"), json!("gateways.gateway.networking.k8s.io/gw"), json!("100s")],
            vec![json!("10.96.0.2"), json!("<none>"), json!("100s")],
        ]
    );
}

#[test]
fn scheduling_workloads_and_pod_groups() {
    let g = "scheduling.k8s.io";
    assert_eq!(names(g, "workloads"), ["Name", "Age"]);
    assert_eq!(one(g, "workloads", json!({"metadata": meta("job-1", 120), "spec": {}})), vec![json!("job-1"), json!("2m")]);

    assert_eq!(names(g, "podgroups"), ["Name", "Policy", "Workload", "Status", "Age"]);
    let group = |policy: Value, reference: Value, conditions: Value| {
        json!({"metadata": meta("pg", 120), "spec": {"schedulingPolicy": policy, "podGroupTemplateRef": reference},
               "status": {"conditions": conditions}})
    };
    let gang = json!({"gang": {"minCount": 4}});
    let workload = json!({"workload": {"workloadName": "job-1", "podGroupTemplateName": "workers"}});
    assert_eq!(
        one(g, "podgroups", group(gang.clone(), workload.clone(), json!([{"type": "PodGroupScheduled", "status": "True"}]))),
        vec![json!("pg"), json!("Gang"), json!("job-1"), json!("Scheduled"), json!("2m")]
    );
    let row = one(g, "podgroups", group(json!({"basic": {}}), json!(null), json!([{"type": "PodGroupScheduled", "status": "False"}])));
    assert_eq!(row[1..4], [json!("Basic"), json!("<none>"), json!("Unschedulable")]);
    let row = one(
        g,
        "podgroups",
        group(
            gang,
            workload,
            json!([{"type": "PodGroupScheduled", "status": "True"}, {"type": "DisruptionTarget", "status": "True", "reason": "Preempted"}]),
        ),
    );
    assert_eq!(row[3], json!("Preempted"));
    let row = one(g, "podgroups", group(json!({}), json!(null), json!([])));
    assert_eq!(row[3], json!("Pending"));
}

/// Every column of the new printers that upstream describes with a served field's doc carries
/// the pinned spec's description of that field; `certificates/v1beta1`'s CSR, no longer served,
/// carries its Go comment as `SwaggerDoc()` formats it.
#[test]
fn new_printer_descriptions_match_the_pinned_spec() {
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("autoscaling", "horizontalpodautoscalers", "Reference", "autoscaling.v2.HorizontalPodAutoscalerSpec", "scaleTargetRef"),
        ("autoscaling", "horizontalpodautoscalers", "Targets", "autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"),
        ("autoscaling", "horizontalpodautoscalers", "MinPods", "autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas"),
        ("autoscaling", "horizontalpodautoscalers", "MaxPods", "autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas"),
        ("autoscaling", "horizontalpodautoscalers", "Replicas", "autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"),
        ("certificates.k8s.io", "clustertrustbundles", "SignerName", "certificates.v1beta1.ClusterTrustBundleSpec", "signerName"),
        ("certificates.k8s.io", "podcertificaterequests", "PodName", "certificates.v1beta1.PodCertificateRequestSpec", "podName"),
        (
            "certificates.k8s.io",
            "podcertificaterequests",
            "ServiceAccountName",
            "certificates.v1beta1.PodCertificateRequestSpec",
            "serviceAccountName",
        ),
        ("certificates.k8s.io", "podcertificaterequests", "NodeName", "certificates.v1beta1.PodCertificateRequestSpec", "nodeName"),
        ("certificates.k8s.io", "podcertificaterequests", "SignerName", "certificates.v1beta1.PodCertificateRequestSpec", "signerName"),
        (
            "certificates.k8s.io",
            "podcertificaterequests",
            "UnverifiedUserAnnotations",
            "certificates.v1beta1.PodCertificateRequestSpec",
            "unverifiedUserAnnotations",
        ),
        ("coordination.k8s.io", "leasecandidates", "LeaseName", "coordination.v1alpha2.LeaseCandidateSpec", "leaseName"),
        ("storage.k8s.io", "volumeattributesclasses", "DriverName", "storage.v1.VolumeAttributesClass", "driverName"),
        ("storage.k8s.io", "volumeattachments", "Attacher", "storage.v1.VolumeAttachmentSpec", "attacher"),
        ("storage.k8s.io", "volumeattachments", "PV", "storage.v1.VolumeAttachmentSource", "persistentVolumeName"),
        ("storage.k8s.io", "volumeattachments", "Node", "storage.v1.VolumeAttachmentSpec", "nodeName"),
        ("storage.k8s.io", "volumeattachments", "Attached", "storage.v1.VolumeAttachmentStatus", "attached"),
        ("storage.k8s.io", "csidrivers", "AttachRequired", "storage.v1.CSIDriverSpec", "attachRequired"),
        ("storage.k8s.io", "csidrivers", "PodInfoOnMount", "storage.v1.CSIDriverSpec", "podInfoOnMount"),
        ("storage.k8s.io", "csidrivers", "StorageCapacity", "storage.v1.CSIDriverSpec", "storageCapacity"),
        ("storage.k8s.io", "csidrivers", "TokenRequests", "storage.v1.CSIDriverSpec", "tokenRequests"),
        ("storage.k8s.io", "csidrivers", "RequiresRepublish", "storage.v1.CSIDriverSpec", "requiresRepublish"),
        ("storage.k8s.io", "csidrivers", "Modes", "storage.v1.CSIDriverSpec", "volumeLifecycleModes"),
        ("storage.k8s.io", "csistoragecapacities", "StorageClassName", "storage.v1.CSIStorageCapacity", "storageClassName"),
        ("storage.k8s.io", "csistoragecapacities", "Capacity", "storage.v1.CSIStorageCapacity", "capacity"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas", "PriorityLevel", "flowcontrol.v1.PriorityLevelConfigurationReference", "name"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas", "MatchingPrecedence", "flowcontrol.v1.FlowSchemaSpec", "matchingPrecedence"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas", "DistinguisherMethod", "flowcontrol.v1.FlowSchemaSpec", "distinguisherMethod"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "Type", "flowcontrol.v1.PriorityLevelConfigurationSpec", "type"),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            "NominalConcurrencyShares",
            "flowcontrol.v1.LimitedPriorityLevelConfiguration",
            "nominalConcurrencyShares",
        ),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "Queues", "flowcontrol.v1.QueuingConfiguration", "queues"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "HandSize", "flowcontrol.v1.QueuingConfiguration", "handSize"),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            "QueueLengthLimit",
            "flowcontrol.v1.QueuingConfiguration",
            "queueLengthLimit",
        ),
        (
            "internal.apiserver.k8s.io",
            "storageversions",
            "CommonEncodingVersion",
            "apiserverinternal.v1alpha1.StorageVersionStatus",
            "commonEncodingVersion",
        ),
        (
            "internal.apiserver.k8s.io",
            "storageversions",
            "StorageVersions",
            "apiserverinternal.v1alpha1.StorageVersionStatus",
            "storageVersions",
        ),
        ("resource.k8s.io", "resourceslices", "Node", "resource.v1.ResourceSliceSpec", "nodeName"),
        ("resource.k8s.io", "resourceslices", "Driver", "resource.v1.ResourceSliceSpec", "driver"),
        ("resource.k8s.io", "resourceslices", "Pool", "resource.v1.ResourcePool", "name"),
        ("resource.k8s.io", "devicetaintrules", "Key", "resource.v1.DeviceTaint", "key"),
        ("resource.k8s.io", "devicetaintrules", "Value", "resource.v1.DeviceTaint", "value"),
        ("resource.k8s.io", "devicetaintrules", "Effect", "resource.v1.DeviceTaint", "effect"),
        ("resource.k8s.io", "devicetaintrules", "TimeAdded", "resource.v1.DeviceTaint", "timeAdded"),
        ("networking.k8s.io", "servicecidrs", "CIDRs", "networking.v1.ServiceCIDRSpec", "cidrs"),
        ("networking.k8s.io", "ipaddresses", "ParentRef", "networking.v1.IPAddressSpec", "parentRef"),
        ("scheduling.k8s.io", "podgroups", "Policy", "scheduling.v1alpha2.PodGroupSpec", "schedulingPolicy"),
    ];
    let description = |group: &str, resource: &str, column: &str| {
        kapi::tables::column_definitions(&printer(group, resource))
            .into_iter()
            .find(|c| c.name == column)
            .map(|c| c.description)
            .unwrap_or_else(|| panic!("{resource} has a {column} column"))
    };
    // Columns with upstream's own text, and ObjectMeta's absent docs.
    assert_eq!(description("coordination.k8s.io", "leasecandidates", "BinaryVersion"), "");
    assert_eq!(description("certificates.k8s.io", "podcertificaterequests", "State"), "Is the request Pending, Issued, Denied, or Failed?");
    // Formatted from the Go comment, as upstream's generated SwaggerDoc has it.
    let csr = "certificatesigningrequests";
    assert_eq!(description("certificates.k8s.io", csr, "Requestor"), "Base64-encoded PKCS#10 CSR data");
    assert_eq!(description("certificates.k8s.io", csr, "Condition"), "Conditions applied to the request, such as approval or denial.");
    assert_eq!(
        description("certificates.k8s.io", csr, "SignerName"),
        "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`."
    );
    assert!(!description("rbac.authorization.k8s.io", "rolebindings", "Role").contains("+optional"));

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api-specs");
    let Ok(version) = std::fs::read_to_string(root.join("VERSION")) else {
        return;
    };
    let path = root.join(format!("v{}", version.trim())).join("openapi/swagger.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return; // a clone without specs
    };
    let spec: Value = serde_json::from_str(&text).unwrap();
    for (group, resource, column, definition, field) in cases {
        let want = &spec["definitions"][format!("io.k8s.api.{definition}")]["properties"][field]["description"];
        assert_eq!(want.as_str(), Some(description(group, resource, column).as_str()), "{resource} {column}: {definition}.{field}");
    }
}
