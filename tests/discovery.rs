//! Discovery and errors as a client sees them: kubectl's negotiation, the documents decoded back
//! from every wire form, and error bodies read back as `Status`.

mod common;

use kapi::discovery::{self, EnabledGroupVersions};
use kapi::request_info;
use kapi::status::{ApiError, GroupResource};
use kapi_api::api::apidiscovery::v2::APIGroupDiscoveryList;
use kapi_api::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, Status};
use kapi_apimachinery::codec::{self, Format};

/// What kubectl 1.32 sends to `/api` and `/apis`.
const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
     application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// An object as upstream's JSON encoder writes it.
fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn kubectl_gets_aggregated_discovery_it_can_read() {
    let format = discovery::negotiate_aggregated(Some(KUBECTL_ACCEPT)).expect("aggregated");
    assert_eq!(format, Format::Json);
    // client-go checks these parameters to tell the aggregated form from the legacy one.
    assert_eq!(discovery::aggregated_content_type(format), "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    let enabled = EnabledGroupVersions::default();
    for doc in [discovery::aggregated_legacy(&enabled), discovery::aggregated_apis(&enabled, &[])] {
        for format in [Format::Json, Format::Yaml, Format::Protobuf] {
            let bytes = codec::encode(format, &doc).unwrap();
            let back: APIGroupDiscoveryList = codec::decode(format, &bytes).unwrap();
            // Protobuf writes Go's value fields even when empty (they come back present): the
            // same document as upstream writes it, and the same bytes again.
            assert_eq!(json(&back), json(&doc), "{format:?}");
            assert_eq!(codec::encode(format, &back).unwrap(), bytes, "{format:?}");
        }
    }
}

#[test]
fn legacy_documents_round_trip() {
    let enabled = EnabledGroupVersions::default();
    let groups = discovery::api_group_list(&enabled, &[]);
    for format in [Format::Json, Format::Protobuf] {
        let back: APIGroupList = codec::decode(format, &codec::encode(format, &groups).unwrap()).unwrap();
        assert_eq!(json(&back), json(&groups));
    }
    for group in &groups.groups {
        for v in &group.versions {
            let list = discovery::api_resource_list(&enabled, &[], &group.name, &v.version).unwrap();
            let back: APIResourceList = codec::decode(Format::Protobuf, &codec::encode(Format::Protobuf, &list).unwrap()).unwrap();
            assert_eq!(json(&back), json(&list), "{}", v.group_version);
        }
    }
}

#[test]
fn every_discovered_resource_has_routes() {
    let enabled = EnabledGroupVersions::default();
    for (group, version) in enabled.iter() {
        let prefix = if group.is_empty() { "/api/v1".to_owned() } else { format!("/apis/{group}/{version}") };
        let list = discovery::api_resource_list(&enabled, &[], group, version).unwrap();
        for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
            let path = if r.namespaced { format!("{prefix}/namespaces/ns/{}/x", r.name) } else { format!("{prefix}/{}/x", r.name) };
            let method = if r.verbs.items.iter().any(|v| v == "get") { "GET" } else { "POST" };
            let path = if method == "POST" { path.trim_end_matches("/x").to_owned() } else { path };
            let info = request_info::parse(method, &path, None).unwrap();
            let route = request_info::match_route(&info, method).unwrap_or_else(|| panic!("{method} {path}"));
            let target = route.target.unwrap();
            assert_eq!((target.group, target.version, target.resource), (group, version, r.name.as_str()));
            assert_eq!(target.kind.kind, r.kind, "{path}");
        }
    }
}

#[test]
fn errors_read_back_as_status() {
    let err = ApiError::not_found(GroupResource::new("apps", "deployments"), "web");
    for format in [Format::Json, Format::Yaml, Format::Protobuf] {
        let response = err.into_response(format);
        assert_eq!(response.status(), 404);
        assert_eq!(response.headers()["content-type"], format.content_type());
        let status: Status = codec::decode(format, response.body()).unwrap();
        assert_eq!(status.reason.as_deref(), Some("NotFound"));
        assert_eq!(status.message.as_deref(), Some("deployments.apps \"web\" not found"));
        assert_eq!(status.code, Some(404));
    }
}

/// `--runtime-config` changes what is served, and discovery, OpenAPI and routing agree.
#[test]
fn runtime_config_selects_the_served_group_versions() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::start_with(dir.path(), &["--runtime-config", "api/all=true,batch/v1=false"]);
    server.wait_ready();
    let get = |path: &str| common::request(&server, "GET", path, "", b"");
    // A beta group-version upstream leaves off is on with api/all.
    assert_eq!(get("/apis/certificates.k8s.io/v1beta1").0, 200);
    assert_eq!(get("/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies").0, 200);
    // The one switched off is gone everywhere.
    assert_eq!(get("/apis/batch/v1/namespaces/default/jobs").0, 404);
    let (_, groups) = get("/apis");
    let groups: serde_json::Value = serde_json::from_str(&groups).unwrap();
    // batch serves only v1: the group is gone.
    assert!(groups["groups"].as_array().unwrap().iter().all(|g| g["name"] != "batch"), "{groups}");
    assert!(groups["groups"].as_array().unwrap().iter().any(|g| g["name"] == "certificates.k8s.io"));
    let (_, index) = get("/openapi/v3");
    assert!(!index.contains("\"apis/batch/v1\""), "{index}");
    assert!(index.contains("\"apis/certificates.k8s.io/v1beta1\""));
    assert_eq!(get("/openapi/v3/apis/batch/v1").0, 404);
    drop(server);

    // An unknown group-version is refused at start.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(dir.path().join("bad"))
        .args(["--runtime-config", "nope.example.com/v1=true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.example.com/v1"), "{}", String::from_utf8_lossy(&out.stderr));
}
