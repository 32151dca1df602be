//! The wire forms beyond plain JSON, against a started server: protobuf as client-go sends and
//! asks for it (create, get, list; watch frames), metadata-only answers
//! (`as=PartialObjectMetadata[List]`), Table watches, 406s, and `/openapi/v2`.

mod common;

use common::{header, request_full, request_with, start};
use kapi_apimachinery::codec::{Format, PROTOBUF};

#[test]
fn protobuf_requests_and_responses() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pb","labels":{"a":""}},"data":{"k":"v"}}"#;
    let body = kapi::convert::convert(json, Some(Format::Json), Format::Protobuf, None).unwrap();
    let (code, created) =
        request_with(&server, "POST", "/api/v1/namespaces/default/configmaps", &[("Content-Type", PROTOBUF), ("Accept", PROTOBUF)], &body);
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&created));
    assert!(created.starts_with(b"k8s\0"));

    let (code, got) = request_with(&server, "GET", "/api/v1/namespaces/default/configmaps/pb", &[("Accept", PROTOBUF)], b"");
    assert_eq!(code, 200);
    let as_json = kapi::convert::convert(&got, Some(Format::Protobuf), Format::Json, None).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&as_json).unwrap();
    assert_eq!(value["data"]["k"], "v");
    assert_eq!(value["metadata"]["labels"]["a"], "", "an empty label value survives protobuf");

    let (code, list) = request_with(&server, "GET", "/api/v1/namespaces/default/configmaps", &[("Accept", PROTOBUF)], b"");
    assert_eq!(code, 200);
    let tm = kapi_apimachinery::codec::peek_type_meta(Format::Protobuf, &list, None).unwrap();
    assert_eq!((tm.api_version.as_str(), tm.kind.as_str()), ("v1", "ConfigMapList"));
    let list = kapi::convert::convert(&list, Some(Format::Protobuf), Format::Json, None).unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    assert!(list["items"].as_array().unwrap().iter().any(|i| i["metadata"]["name"] == "pb"));
    server.kill();
}

/// The frames of a protobuf watch stream as (type, object as JSON).
fn frames(mut stream: &[u8]) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    while let Some((event_type, raw, used)) = kapi_apimachinery::codec::read_watch_frame(stream).unwrap() {
        assert!(raw.starts_with(b"k8s\0"), "the event's object is a whole protobuf object");
        let json = kapi::convert::convert(&raw, Some(Format::Protobuf), Format::Json, None).unwrap();
        out.push((event_type, serde_json::from_slice(&json).unwrap()));
        stream = &stream[used..];
    }
    assert!(stream.is_empty(), "a partial frame is left: {stream:?}");
    out
}

fn json_lines(body: &[u8]) -> Vec<serde_json::Value> {
    body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect()
}

fn resource_version(server: &common::Server, path: &str) -> String {
    let (code, body) = request_with(server, "GET", path, &[("Accept", "application/json")], b"");
    assert_eq!(code, 200);
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
    value["metadata"]["resourceVersion"].as_str().unwrap().to_owned()
}

const WATCH_PB: &str = "application/vnd.kubernetes.protobuf;stream=watch";

#[test]
fn protobuf_watch_streams_framed_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let collection = "/api/v1/namespaces/default/configmaps";
    let start_rv = resource_version(&server, collection);
    let json = ("Content-Type", "application/json");
    let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w1"},"data":{"k":"v1"}}"#;
    assert_eq!(request_with(&server, "POST", collection, &[json], cm).0, 201);
    let changed = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w1"},"data":{"k":"v2"}}"#;
    assert_eq!(request_with(&server, "PUT", &format!("{collection}/w1"), &[json], changed).0, 200);
    assert_eq!(request_with(&server, "DELETE", &format!("{collection}/w1"), &[], b"").0, 200);

    // client-go's watch of a built-in type.
    let accept = format!("{WATCH_PB}, application/json");
    let (code, headers, body) = request_full(
        &server,
        "GET",
        &format!("{collection}?watch=true&resourceVersion={start_rv}&timeoutSeconds=1"),
        &[("Accept", &accept)],
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), Some(WATCH_PB));
    let events = frames(&body);
    let seen: Vec<(&str, &str)> = events.iter().map(|(t, o)| (t.as_str(), o["data"]["k"].as_str().unwrap_or_default())).collect();
    assert_eq!(seen, [("ADDED", "v1"), ("MODIFIED", "v2"), ("DELETED", "v2")]);
    for (_, object) in &events {
        assert_eq!((object["apiVersion"].as_str(), object["kind"].as_str()), (Some("v1"), Some("ConfigMap")));
        assert_eq!(object["metadata"]["name"], "w1");
        assert!(object["metadata"]["resourceVersion"].as_str().is_some_and(|rv| rv != start_rv));
    }

    // A WatchList: the current objects, then the initial-events-end BOOKMARK.
    let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w2"},"data":{"k":"kept"}}"#;
    assert_eq!(request_with(&server, "POST", collection, &[json], cm).0, 201);
    let (code, body) = request_with(
        &server,
        "GET",
        &format!("{collection}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"),
        &[("Accept", WATCH_PB)],
        b"",
    );
    assert_eq!(code, 200);
    // (The namespace's `kube-root-ca.crt` is one of them.)
    let events: Vec<_> = frames(&body).into_iter().filter(|(_, o)| o["metadata"]["name"] != "kube-root-ca.crt").collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!((events[0].0.as_str(), &events[0].1["metadata"]["name"]), ("ADDED", &serde_json::json!("w2")));
    let (kind, bookmark) = &events[1];
    assert_eq!(kind, "BOOKMARK");
    assert_eq!(bookmark["kind"], "ConfigMap");
    assert_eq!(bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert!(bookmark["metadata"]["resourceVersion"].is_string());

    // JSON watches are unchanged.
    let (code, headers, body) = request_full(
        &server,
        "GET",
        &format!("{collection}?watch=1&resourceVersion={start_rv}&timeoutSeconds=1"),
        &[("Accept", "application/json")],
        b"",
    );
    assert_eq!((code, header(&headers, "content-type")), (200, Some("application/json")));
    let lines = json_lines(&body);
    assert_eq!(lines.iter().map(|l| l["type"].as_str().unwrap()).collect::<Vec<_>>(), ["ADDED", "MODIFIED", "DELETED", "ADDED"]);
    assert_eq!(lines[0]["object"]["data"]["k"], "v1");
    server.kill();
}

const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

#[test]
fn metadata_only_get_list_and_watch() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let collection = "/apis/apps/v1/namespaces/default/deployments";
    let start_rv = resource_version(&server, collection);
    let deployment = br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"meta","labels":{"app":"m"}},
        "spec":{"selector":{"matchLabels":{"app":"m"}},"template":{"metadata":{"labels":{"app":"m"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#;
    assert_eq!(request_with(&server, "POST", collection, &[("Content-Type", "application/json")], deployment).0, 201);

    // What client-go's metadata client sends for a list: protobuf first.
    let (code, headers, body) = request_full(&server, "GET", collection, &[("Accept", METADATA_LIST)], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
    );
    let tm = kapi_apimachinery::codec::peek_type_meta(Format::Protobuf, &body, None).unwrap();
    assert_eq!((tm.api_version.as_str(), tm.kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadataList"));
    let list: serde_json::Value =
        serde_json::from_slice(&kapi::convert::convert(&body, Some(Format::Protobuf), Format::Json, None).unwrap()).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "meta");
    assert_eq!(list["items"][0]["metadata"]["labels"]["app"], "m");
    assert!(list["items"][0].get("spec").is_none());
    assert!(list["metadata"]["resourceVersion"].is_string());

    // JSON, both versions.
    for version in ["v1", "v1beta1"] {
        let accept = format!("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v={version}");
        let (code, body) = request_with(&server, "GET", collection, &[("Accept", &accept)], b"");
        assert_eq!(code, 200);
        let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["apiVersion"], format!("meta.k8s.io/{version}"));
        assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(list["items"][0]["apiVersion"], format!("meta.k8s.io/{version}"));
        assert_eq!(list["items"][0]["metadata"]["name"], "meta");
    }

    // Get, protobuf and JSON.
    let (code, body) = request_with(&server, "GET", &format!("{collection}/meta"), &[("Accept", METADATA)], b"");
    assert_eq!(code, 200);
    let tm = kapi_apimachinery::codec::peek_type_meta(Format::Protobuf, &body, None).unwrap();
    assert_eq!((tm.api_version.as_str(), tm.kind.as_str()), ("meta.k8s.io/v1", "PartialObjectMetadata"));
    let accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let (code, body) = request_with(&server, "GET", &format!("{collection}/meta"), &[("Accept", accept)], b"");
    assert_eq!(code, 200);
    let object: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert_eq!(object["metadata"]["generation"], 1);
    assert!(object.get("spec").is_none());

    // Watch, protobuf: each object a PartialObjectMetadata.
    let (code, body) = request_with(
        &server,
        "GET",
        &format!("{collection}?watch=1&resourceVersion={start_rv}&timeoutSeconds=1"),
        &[("Accept", &format!("application/vnd.kubernetes.protobuf;stream=watch;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,{METADATA}"))],
        b"",
    );
    assert_eq!(code, 200);
    let events = frames(&body);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, "ADDED");
    assert_eq!(events[0].1["kind"], "PartialObjectMetadata");
    assert_eq!(events[0].1["metadata"]["name"], "meta");
    // ... and JSON.
    let (code, body) = request_with(
        &server,
        "GET",
        &format!("{collection}?watch=1&resourceVersion={start_rv}&timeoutSeconds=1"),
        &[("Accept", accept)],
        b"",
    );
    assert_eq!(code, 200);
    let lines = json_lines(&body);
    assert_eq!(lines[0]["object"]["kind"], "PartialObjectMetadata");
    assert!(lines[0]["object"].get("spec").is_none());

    // What cannot be served is a 406 Status.
    let status = |path: &str, accept: &str| {
        let (code, body) = request_with(&server, "GET", path, &[("Accept", accept)], b"");
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!((code, status["reason"].as_str()), (406, Some("NotAcceptable")), "{status}");
        status["message"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        status(&format!("{collection}/meta"), "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        "you requested PartialObjectMetadataList, but the requested object is not a list (*apps.Deployment)"
    );
    assert_eq!(
        status(collection, accept),
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
    assert_eq!(
        status(collection, "text/html"),
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    assert_eq!(
        status(collection, "application/json;as=Unknown;g=meta.k8s.io;v=v1"),
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    assert_eq!(
        status(&format!("{collection}?watch=1"), "application/yaml"),
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    server.kill();
}

#[test]
fn table_watch_sends_headers_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let collection = "/api/v1/namespaces/default/configmaps";
    let start_rv = resource_version(&server, collection);
    for name in ["t1", "t2"] {
        let cm = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"a":"1","b":"2"}}}}"#);
        assert_eq!(request_with(&server, "POST", collection, &[("Content-Type", "application/json")], cm.as_bytes()).0, 201);
    }
    // kubectl get -w.
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let (code, headers, body) = request_full(
        &server,
        "GET",
        &format!("{collection}?watch=1&resourceVersion={start_rv}&timeoutSeconds=1&includeObject=Object"),
        &[("Accept", accept)],
        b"",
    );
    assert_eq!((code, header(&headers, "content-type")), (200, Some("application/json")));
    let lines = json_lines(&body);
    assert_eq!(lines.len(), 2);
    let columns = |line: &serde_json::Value| -> Vec<String> {
        line["object"]["columnDefinitions"]
            .as_array()
            .map_or_else(Vec::new, |c| c.iter().map(|d| d["name"].as_str().unwrap().to_owned()).collect())
    };
    assert_eq!(columns(&lines[0]), ["Name", "Data", "Age"]);
    assert!(lines[1]["object"]["columnDefinitions"].is_null(), "later events have no headers");
    for (line, name) in lines.iter().zip(["t1", "t2"]) {
        assert_eq!(line["type"], "ADDED");
        assert_eq!(line["object"]["kind"], "Table");
        let row = &line["object"]["rows"][0];
        assert_eq!(row["cells"][0], name);
        assert_eq!(row["cells"][1], 2);
        assert_eq!(row["object"]["kind"], "ConfigMap", "includeObject=Object");
    }
    server.kill();
}

#[test]
fn openapi_v2_is_served_from_the_v3_documents() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let (code, headers, body) = request_full(&server, "GET", "/openapi/v2", &[("Accept", "application/json")], b"");
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let etag = header(&headers, "etag").unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    let deployment = &doc["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(deployment["x-kubernetes-group-version-kind"][0]["kind"], "Deployment");
    assert_eq!(deployment["properties"]["spec"]["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentSpec");
    let create = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"];
    assert_eq!(create["operationId"], "createAppsV1NamespacedDeployment");
    assert_eq!(create["parameters"][0]["in"], "body");
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["get"].is_object());
    assert!(!String::from_utf8_lossy(&body).contains("#/components/schemas/"));

    // Cached by ETag.
    let (code, _, body) = request_full(&server, "GET", "/openapi/v2", &[("If-None-Match", &etag)], b"");
    assert_eq!((code, body.len()), (304, 0));
    // The protobuf form (gnostic's openapi.v2.Document) for the clause that comes first.
    let pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let (code, headers, body) = request_full(&server, "GET", "/openapi/v2", &[("Accept", pb)], b"");
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
    assert!(body.starts_with(b"\x0a\x032.0\x12"), "swagger = 1, then info = 2");
    assert_ne!(header(&headers, "etag"), Some(etag.as_str()));
    let (code, headers, _) = request_full(&server, "GET", "/openapi/v2", &[("Accept", &format!("application/json, {pb};q=0.5"))], b"");
    assert_eq!((code, header(&headers, "etag")), (200, Some(etag.as_str())));
    assert_eq!(request_with(&server, "GET", "/openapi/v2", &[("Accept", "text/html")], b"").0, 406);
    server.kill();
}
