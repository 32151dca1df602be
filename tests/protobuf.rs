//! Protobuf on the wire, as client-go sends and asks for it: a create in protobuf, get and list
//! answered in protobuf (`k8s\0` envelope), and the same objects in JSON.

mod common;

use common::{request_with, start};
use kapi_apimachinery::codec::{Format, PROTOBUF};

#[test]
fn protobuf_requests_and_responses() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    server.wait_ready();
    let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pb","labels":{"a":""}},"data":{"k":"v"}}"#;
    let body = kapi::convert::convert(json, Some(Format::Json), Format::Protobuf, None).unwrap();
    let (code, created) = request_with(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", PROTOBUF), ("Accept", PROTOBUF)],
        &body,
    );
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
