//! The generated scheme and route table, as the runtime will read them.

use kapi_api::api::core::v1::{Container, PodSpec};
use kapi_api::routes::ROUTES;
use kapi_api::scheme::{GROUPS, KINDS, RESOURCES};
use kapi_apimachinery::TypeInfo;
use kapi_apimachinery::scheme::{FieldInfo, FieldShape};

fn field(fields: &'static [FieldInfo], name: &str) -> &'static FieldInfo {
    fields.iter().find(|f| f.json_name == name).unwrap_or_else(|| panic!("no field {name}"))
}

#[test]
fn patch_facts_come_from_the_openapi_document() {
    let containers = field(PodSpec::fields(), "containers");
    assert_eq!(containers.shape, FieldShape::List);
    assert_eq!((containers.patch_strategy, containers.patch_merge_key), (Some("merge"), Some("name")));
    assert!(containers.required);
    // Navigate into the element type, as strategic merge patch will.
    let ports = field((containers.elem.unwrap())(), "ports");
    assert_eq!(ports.list_type, Some("map"));
    assert_eq!(ports.list_map_keys, ["containerPort", "protocol"]);
    assert_eq!(field(Container::fields(), "name").shape, FieldShape::Scalar);
    // An embedded struct's fields are inlined, as in JSON: Volume has `configMap` directly.
    let volumes = field(PodSpec::fields(), "volumes");
    assert_eq!(volumes.patch_strategy, Some("merge,retainKeys"));
    assert_eq!(field((volumes.elem.unwrap())(), "configMap").shape, FieldShape::Object);
}

#[test]
fn groups_resources_and_routes() {
    let names: Vec<&str> = GROUPS.iter().map(|g| g.name).collect();
    let pos = |n: &str| names.iter().position(|g| *g == n).unwrap_or_else(|| panic!("no group {n:?}"));
    assert!(pos("") < pos("apps") && pos("apps") < pos("batch"), "discovery order: {names:?}");
    let autoscaling = GROUPS.iter().find(|g| g.name == "autoscaling").unwrap();
    assert_eq!(autoscaling.preferred_version, "v2");
    assert_eq!(autoscaling.versions, ["v2", "v1"]);
    let resource = GROUPS.iter().find(|g| g.name == "resource.k8s.io").unwrap();
    assert_eq!(resource.preferred_version, "v1");

    let deployments = RESOURCES.iter().find(|r| r.group == "apps" && r.resource == "deployments").unwrap();
    assert_eq!((deployments.kind.kind, deployments.list_kind), ("Deployment", Some("DeploymentList")));
    assert_eq!(deployments.short_names, ["deploy"]);
    assert_eq!(deployments.categories, ["all"]);
    let namespaces = RESOURCES.iter().find(|r| r.group.is_empty() && r.resource == "namespaces").unwrap();
    assert!(!namespaces.namespaced);

    let paths: std::collections::BTreeSet<&str> = ROUTES.iter().map(|r| r.path).collect();
    assert_eq!(paths.len(), 562);
    let exec =
        ROUTES.iter().find(|r| r.path == "/api/v1/namespaces/{namespace}/pods/{name}/exec" && r.method == "POST").unwrap().target.unwrap();
    assert_eq!((exec.action, exec.subresource, exec.kind.kind), ("connect", Some("exec"), "PodExecOptions"));
    let patch = ROUTES
        .iter()
        .find(|r| r.path == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" && r.method == "PATCH")
        .unwrap()
        .target
        .unwrap();
    assert!(patch.patch_types.contains(&"application/strategic-merge-patch+json"));
    assert!(patch.patch_types.contains(&"application/apply-patch+yaml"));

    // Every kind has a Rust type reachable through the visitor.
    struct Name;
    impl kapi_apimachinery::KindVisitor for Name {
        type Output = &'static str;
        fn visit<T: kapi_apimachinery::Object>(self) -> &'static str {
            T::MESSAGE
        }
    }
    for k in KINDS {
        let message = kapi_api::scheme::visit_kind(k.gvk.group, k.gvk.version, k.gvk.kind, Name).unwrap();
        assert_eq!(message, k.message);
    }
}
