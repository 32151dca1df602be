//! The patches kubectl sends (`patch`, `apply`, `edit`, `label`, `annotate`, `scale`, `set`),
//! applied to real kinds with their generated field facts, as kube-apiserver applies them.

use kapi::patch::{PatchError, PatchType, apply_patch};
use kapi_api::api::apps::v1::Deployment;
use kapi_api::api::autoscaling::v1::Scale;
use kapi_api::api::core::v1::Namespace;
use kapi_apimachinery::TypeInfo;
use serde_json::{Value, json};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A Deployment as the server stores it.
fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "6f1d3a52-5a0e-4c53-9d2e-0d7a1c3e4b5f",
            "resourceVersion": "42",
            "generation": 3,
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {LAST_APPLIED: "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}\n"},
            "finalizers": ["example.com/a"]
        },
        "spec": {
            "replicas": 2,
            "minReadySeconds": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "resources": {"claims": [{"name": "gpu"}]},
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                        },
                        {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {"medium": "Memory"}}]
                }
            }
        },
        "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}
    })
}

fn patch_deployment(patch_type: PatchType, patch: &Value) -> Result<Value, PatchError> {
    apply_patch(&deployment(), patch.to_string().as_bytes(), patch_type, Deployment::fields())
}

/// (what kubectl does, patch type, body, expected values at JSON pointers of the result).
type Case = (&'static str, PatchType, Value, Vec<(&'static str, Value)>);

fn deployment_cases() -> Vec<Case> {
    use PatchType::{Json, Merge, StrategicMerge};
    vec![
        (
            "kubectl set image: containers merge by name, the rest of the container stays",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}),
            vec![
                ("/spec/template/spec/containers/0/name", json!("app")),
                ("/spec/template/spec/containers/0/image", json!("nginx:1.27")),
                ("/spec/template/spec/containers/0/env", json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
                ("/spec/template/spec/containers/1", json!({"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]})),
                ("/spec/replicas", json!(2)),
            ],
        ),
        (
            "env merges by name",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}
            ]}}}}),
            vec![(
                "/spec/template/spec/containers/0/env",
                json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]),
            )],
        ),
        (
            "kubectl set env: $setElementOrder/env places the new variable",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{
                    "$setElementOrder/env": [{"name": "C"}, {"name": "A"}, {"name": "B"}],
                    "env": [{"name": "C", "value": "0"}],
                    "name": "app"
                }]
            }}}}),
            vec![(
                "/spec/template/spec/containers/0/env",
                json!([{"name": "C", "value": "0"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            )],
        ),
        (
            "$patch: delete removes a container",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}),
            vec![("/spec/template/spec/containers/0/name", json!("app")), ("/spec/template/spec/containers/1", Value::Null)],
        ),
        (
            "$setElementOrder/containers reorders the containers",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]
            }}}}),
            vec![
                ("/spec/template/spec/containers/0/name", json!("sidecar")),
                ("/spec/template/spec/containers/1/name", json!("app")),
                ("/spec/template/spec/containers/1/image", json!("nginx:1.25")),
            ],
        ),
        (
            "kubectl edit adding a container in the middle",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "logger"}, {"name": "sidecar"}],
                "containers": [{"image": "fluent-bit", "name": "logger"}]
            }}}}),
            vec![
                ("/spec/template/spec/containers/0/name", json!("app")),
                ("/spec/template/spec/containers/1", json!({"name": "logger", "image": "fluent-bit"})),
                ("/spec/template/spec/containers/2/name", json!("sidecar")),
            ],
        ),
        (
            "kubectl edit changing an image and deleting an env var",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
                "containers": [{
                    "$setElementOrder/env": [{"name": "A"}],
                    "env": [{"$patch": "delete", "name": "B"}],
                    "image": "nginx:1.26",
                    "name": "app"
                }]
            }}}}),
            vec![
                ("/spec/template/spec/containers/0/image", json!("nginx:1.26")),
                ("/spec/template/spec/containers/0/env", json!([{"name": "A", "value": "1"}])),
                ("/spec/template/spec/containers/1/name", json!("sidecar")),
            ],
        ),
        (
            "$retainKeys on a volume switches its source (PodSpec.volumes is merge,retainKeys)",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/volumes": [{"name": "data"}],
                "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"}, "name": "data"}]
            }}}}),
            vec![("/spec/template/spec/volumes", json!([{"name": "data", "configMap": {"name": "cfg"}}]))],
        ),
        (
            "without $retainKeys the volume keeps both sources (why kubectl sends it)",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"volumes": [{"configMap": {"name": "cfg"}, "name": "data"}]}}}}),
            vec![(
                "/spec/template/spec/volumes",
                json!([{"name": "data", "emptyDir": {"medium": "Memory"}, "configMap": {"name": "cfg"}}]),
            )],
        ),
        (
            "kubectl apply switching the strategy to Recreate ($retainKeys on DeploymentSpec.strategy)",
            StrategicMerge,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"}}}),
            vec![("/spec/strategy", json!({"type": "Recreate"}))],
        ),
        (
            "a null deletes a label",
            StrategicMerge,
            json!({"metadata": {"labels": {"tier": null}}}),
            vec![("/metadata/labels", json!({"app": "web"}))],
        ),
        (
            "ObjectMeta.finalizers (merge, no key) is a set: strategic merge adds",
            StrategicMerge,
            json!({"metadata": {"finalizers": ["example.com/b", "example.com/a"]}}),
            vec![("/metadata/finalizers", json!(["example.com/b", "example.com/a"]))],
        ),
        (
            "a new finalizer goes first, as upstream orders it",
            StrategicMerge,
            json!({"metadata": {"finalizers": ["example.com/b"]}}),
            vec![("/metadata/finalizers", json!(["example.com/b", "example.com/a"]))],
        ),
        (
            "$deleteFromPrimitiveList/finalizers removes one",
            StrategicMerge,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}),
            vec![("/metadata/finalizers", json!([]))],
        ),
        (
            "a merge patch replaces the finalizers",
            Merge,
            json!({"metadata": {"finalizers": ["example.com/b"]}}),
            vec![("/metadata/finalizers", json!(["example.com/b"]))],
        ),
        (
            "ports merge by containerPort",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 443, "protocol": "TCP"}
            ]}]}}}}),
            vec![(
                "/spec/template/spec/containers/0/ports",
                json!([
                    {"containerPort": 80, "protocol": "TCP", "name": "http"},
                    {"containerPort": 443, "protocol": "TCP"}
                ]),
            )],
        ),
        (
            "resources.claims (listType=map, no patch strategy) is replaced, as upstream's struct tags say",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "resources": {"claims": [{"name": "fpga"}]}}]}}}}),
            vec![("/spec/template/spec/containers/0/resources/claims", json!([{"name": "fpga"}]))],
        ),
        (
            "container args (no patch strategy) are replaced",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "args": ["sleep", "60"]}]}}}}),
            vec![("/spec/template/spec/containers/1/args", json!(["sleep", "60"]))],
        ),
        (
            "kubectl label env=prod tier- (a merge patch)",
            Merge,
            json!({"metadata": {"labels": {"env": "prod", "tier": null}}}),
            vec![("/metadata/labels", json!({"app": "web", "env": "prod"})), ("/spec/replicas", json!(2))],
        ),
        (
            "kubectl annotate example.com/owner=team-a (a merge patch)",
            Merge,
            json!({"metadata": {"annotations": {"example.com/owner": "team-a"}}}),
            vec![
                ("/metadata/annotations/example.com~1owner", json!("team-a")),
                (
                    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
                    json!("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}\n"),
                ),
            ],
        ),
        (
            "kubectl annotate example.com/owner- on a missing annotation changes nothing",
            Merge,
            json!({"metadata": {"annotations": {"example.com/owner": null}}}),
            vec![("/metadata/annotations/example.com~1owner", Value::Null)],
        ),
        (
            "a merge patch replaces the containers list",
            Merge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}),
            vec![("/spec/template/spec/containers", json!([{"name": "app", "image": "nginx:2"}]))],
        ),
        (
            "kubectl apply: changed replicas, a field removed from the configuration",
            StrategicMerge,
            json!({
                "metadata": {"annotations": {LAST_APPLIED: "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":3}}\n"}},
                "spec": {"minReadySeconds": null, "replicas": 3}
            }),
            vec![
                ("/spec/replicas", json!(3)),
                ("/spec/minReadySeconds", Value::Null),
                ("/spec/strategy/type", json!("RollingUpdate")),
                ("/spec/template/spec/containers/1/name", json!("sidecar")),
                (
                    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
                    json!("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":3}}\n"),
                ),
            ],
        ),
        (
            "kubectl apply: a container removed from the configuration",
            StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"$patch": "delete", "name": "sidecar"}]
            }}}}),
            vec![("/spec/template/spec/containers/0/name", json!("app")), ("/spec/template/spec/containers/1", Value::Null)],
        ),
        (
            "kubectl patch --type json",
            Json,
            json!([
                {"op": "replace", "path": "/spec/replicas", "value": 4},
                {"op": "add", "path": "/metadata/labels/env", "value": "prod"},
                {"op": "remove", "path": "/spec/template/spec/containers/1"}
            ]),
            vec![("/spec/replicas", json!(4)), ("/metadata/labels/env", json!("prod")), ("/spec/template/spec/containers/1", Value::Null)],
        ),
    ]
}

#[test]
fn kubectl_patches_on_a_deployment() {
    for (description, patch_type, patch, expectations) in deployment_cases() {
        let got = patch_deployment(patch_type, &patch).unwrap_or_else(|e| panic!("{description}: {e}"));
        for (pointer, expected) in expectations {
            let actual = got.pointer(pointer).cloned().unwrap_or(Value::Null);
            assert_eq!(actual, expected, "{description}: {pointer}");
        }
        // What the handler does next: decode into the kind.
        serde_json::from_value::<Deployment>(got).unwrap_or_else(|e| panic!("{description}: result does not decode: {e}"));
    }
}

#[test]
fn failed_patches_on_a_deployment() {
    let cases: Vec<(PatchType, Value, &str, u16)> = vec![
        (
            PatchType::Json,
            json!([{"op": "test", "path": "/spec/replicas", "value": 3}]),
            "testing value /spec/replicas failed: test failed",
            422,
        ),
        (
            PatchType::StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}}),
            "map: map[image:nginx] does not contain declared merge key: name",
            500,
        ),
        (
            PatchType::StrategicMerge,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}}),
            "merging lists cannot yet be specified in the patch",
            500,
        ),
        (
            PatchType::StrategicMerge,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 1}}}}),
            "invalid patch format of retainKeys",
            400,
        ),
        (
            PatchType::StrategicMerge,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"name": "sidecar", "image": "x"}]
            }}}}),
            "doesn't match $setElementOrder list",
            500,
        ),
        (PatchType::Apply, json!({"apiVersion": "apps/v1"}), "server-side apply", 415),
    ];
    for (patch_type, patch, message, code) in cases {
        let err = patch_deployment(patch_type, &patch).unwrap_err();
        assert!(err.to_string().contains(message), "{patch}: {err}");
        assert_eq!(err.status_code(), code, "{patch}: {err}");
    }
}

#[test]
fn kubectl_scale_patches_the_scale_subresource() {
    let scale = json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "42"},
        "spec": {"replicas": 2},
        "status": {"replicas": 2, "selector": "app=web"}
    });
    for patch_type in [PatchType::Merge, PatchType::StrategicMerge] {
        let got = apply_patch(&scale, br#"{"spec":{"replicas":5}}"#, patch_type, Scale::fields()).unwrap();
        assert_eq!(got["spec"]["replicas"], json!(5));
        assert_eq!(got["status"], scale["status"]);
        serde_json::from_value::<Scale>(got).unwrap();
    }
    // The same on the Deployment itself.
    let got = patch_deployment(PatchType::Merge, &json!({"spec": {"replicas": 5}})).unwrap();
    assert_eq!(got["spec"]["replicas"], json!(5));
}

#[test]
fn namespace_spec_finalizers_are_replaced() {
    // NamespaceSpec.finalizers has no patch strategy (atomic), unlike ObjectMeta.finalizers.
    let namespace = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "finalizers": ["example.com/a"]},
        "spec": {"finalizers": ["kubernetes"]}
    });
    let patch = br#"{"metadata":{"finalizers":["example.com/b"]},"spec":{"finalizers":["example.com/x"]}}"#;
    let got = apply_patch(&namespace, patch, PatchType::StrategicMerge, Namespace::fields()).unwrap();
    assert_eq!(got["spec"]["finalizers"], json!(["example.com/x"]));
    assert_eq!(got["metadata"]["finalizers"], json!(["example.com/b", "example.com/a"]));
    serde_json::from_value::<Namespace>(got).unwrap();
}
