//! Server-side printing through the public API, as the REST layer uses it for `kubectl get`.

use chrono::{DateTime, TimeDelta, Utc};
use kapi::tables::{
    IncludeObject, Table, TableMediaType, TableVersion, build_table, human_duration, to_table,
};
use serde_json::{Value, json};

/// What kubectl v1.32 sends for `kubectl get`.
const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap()
}

fn ago(secs: i64) -> String {
    (now() - TimeDelta::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
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
    let table = to_table(
        "",
        "pods",
        &pods,
        Some(&json!({"resourceVersion": "12"})),
        include,
        now(),
    );

    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["metadata"], json!({"resourceVersion": "12"}));
    let headers: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        headers,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"],
        json!([
            "web-0",
            "1/1",
            "Running",
            "0",
            "2m5s",
            "10.244.1.3",
            "node-1",
            "<none>",
            "<none>"
        ])
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "web-0");

    // The JSON is a meta.k8s.io Table.
    let typed: Table = serde_json::from_value(table.clone()).unwrap();
    assert_eq!(typed.rows.map(|rows| rows.len()), Some(1));
}

#[test]
fn unknown_resources_get_the_default_columns() {
    let widget = json!({"metadata": {"name": "w", "resourceVersion": "3", "creationTimestamp": "2026-02-28T10:00:00Z"}});
    let options = kapi::tables::TableOptions {
        include_object: IncludeObject::None,
        ..Default::default()
    };
    let table = build_table("example.com", "widgets", &[widget], None, &options, now());
    let columns = table.column_definitions.unwrap();
    assert_eq!(
        columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["Name", "Created At"]
    );
    assert_eq!(columns[1].type_, "date");
    let rows = table.rows.unwrap();
    assert_eq!(
        rows[0].cells,
        vec![json!("w"), json!("2026-02-28T10:00:00Z")]
    );
    assert_eq!(rows[0].object, Value::Null);
    assert_eq!(table.metadata.resource_version.as_deref(), Some("3"));
    assert_eq!(human_duration(TimeDelta::hours(26)), "26h");
}
