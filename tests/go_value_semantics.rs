//! Generated types encode as upstream's Go types do: an object with only `metadata.name` set
//! (decoded from `{"metadata":{"name":"x"}}`) must serialise to the bytes Go's `encoding/json`
//! and gogo's protobuf marshallers write for the same zero-valued Go struct. The expected bytes
//! are worked out field by field from the Go declarations in
//! `api-specs/v1.36.0/go/k8s.io/<package>/types.go` (pointer or value, `omitempty`, `omitzero`);
//! each case names the rules it exercises.

use kapi_api::api::apps::v1::Deployment;
use kapi_api::api::batch::v1::{CronJob, Job};
use kapi_api::api::core::v1::{ConfigMap, Namespace, Node, PersistentVolumeClaim, Pod, Secret, Service};
use kapi_api::api::networking::v1::Ingress;
use kapi_api::api::rbac::v1::Role;
use kapi_api::apimachinery::pkg::apis::meta::v1::ListOptions;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;

const NAMED: &str = r#"{"metadata":{"name":"x"}}"#;

/// Decodes `input` into `T` and serialises it again.
fn json<T: DeserializeOwned + Serialize>(input: &str) -> String {
    let value: T = serde_json::from_str(input).unwrap();
    serde_json::to_string(&value).unwrap()
}

fn proto<T: DeserializeOwned + Message>(input: &str) -> Vec<u8> {
    let value: T = serde_json::from_str(input).unwrap();
    value.encode_to_vec()
}

/// `metav1.ObjectMeta` with only `name`: every other field is `omitempty` (strings, `int64`,
/// pointers, maps, slices), and `creationTimestamp` is a value `Time` with `omitzero` (1.36), so
/// the zero time is left out rather than written as `null`.
const META: &str = r#""metadata":{"name":"x"}"#;

/// A zero `PodTemplateSpec`: value `ObjectMeta` and value `PodSpec` are structs, which
/// `omitempty` never omits; `PodSpec.containers` is a `[]Container` without omitempty, so nil is
/// `null`; every other `PodSpec` field is `omitempty`.
const TEMPLATE: &str = r#"{"metadata":{},"spec":{"containers":null}}"#;

#[test]
fn json_of_zero_valued_objects() {
    let cases: Vec<(&str, String, String)> = vec![
        // Pod: `spec` and `status` are value structs (`omitempty` has no effect on structs);
        // `PodSpec.containers` has no omitempty (nil slice → null); every `PodStatus` field is
        // omitempty.
        ("Pod", json::<Pod>(NAMED), format!(r#"{{{META},"spec":{{"containers":null}},"status":{{}}}}"#)),
        // Deployment: `selector` is a `*LabelSelector` without omitempty (nil pointer → null);
        // `template` a value struct without omitempty; `strategy` a value struct with omitempty
        // (still written, `{}`); `paused` a `bool` and `minReadySeconds` an `int32` with omitempty
        // (zero left out); `status` a value struct whose fields are all omitempty.
        (
            "Deployment",
            json::<Deployment>(NAMED),
            format!(r#"{{{META},"spec":{{"selector":null,"template":{TEMPLATE},"strategy":{{}}}},"status":{{}}}}"#),
        ),
        // Service: `ServiceStatus.loadBalancer` is a value struct with omitempty, so an absent
        // status is `{"loadBalancer":{}}`; `ServiceSpec` fields are all omitempty.
        ("Service", json::<Service>(NAMED), format!(r#"{{{META},"spec":{{}},"status":{{"loadBalancer":{{}}}}}}"#)),
        // Namespace: value `spec` and `status` written as `{}`; `phase` is an omitempty string.
        ("Namespace", json::<Namespace>(NAMED), format!(r#"{{{META},"spec":{{}},"status":{{}}}}"#)),
        // ConfigMap: `data`/`binaryData` are omitempty maps, `immutable` an omitempty `*bool`.
        ("ConfigMap", json::<ConfigMap>(NAMED), format!(r#"{{{META}}}"#)),
        // Secret: `type` is an omitempty string, `data` an omitempty `map[string][]byte`.
        ("Secret", json::<Secret>(NAMED), format!(r#"{{{META}}}"#)),
        // Job: `JobSpec.template` is a value struct without omitempty; the rest of `JobSpec` and
        // all of `JobStatus` are pointers, slices or scalars with omitempty.
        ("Job", json::<Job>(NAMED), format!(r#"{{{META},"spec":{{"template":{TEMPLATE}}},"status":{{}}}}"#)),
        // CronJob: `schedule` is a `string` without omitempty (zero → `""`); `jobTemplate` a
        // value `JobTemplateSpec` without omitempty, whose value `metadata` and `spec` are written.
        (
            "CronJob",
            json::<CronJob>(NAMED),
            format!(
                r#"{{{META},"spec":{{"schedule":"","jobTemplate":{{"metadata":{{}},"spec":{{"template":{TEMPLATE}}}}}}},"status":{{}}}}"#
            ),
        ),
        // Node: `NodeStatus.daemonEndpoints` and `nodeInfo` are value structs (written despite
        // omitempty); `DaemonEndpoint.Port` is an `int32` without omitempty (`0`, and its JSON
        // name is `Port`); `NodeSystemInfo`'s ten strings have no omitempty (`""`), `swap` is an
        // omitempty pointer; `capacity`/`allocatable` (`ResourceList`, a named map) are omitempty.
        (
            "Node",
            json::<Node>(NAMED),
            format!(
                r#"{{{META},"spec":{{}},"status":{{"daemonEndpoints":{{"kubeletEndpoint":{{"Port":0}}}},"nodeInfo":{{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}}}}}"#
            ),
        ),
        // PersistentVolumeClaim: `spec.resources` is a value `VolumeResourceRequirements` with
        // omitempty (written, `{}`), whose `limits`/`requests` maps are omitempty.
        ("PersistentVolumeClaim", json::<PersistentVolumeClaim>(NAMED), format!(r#"{{{META},"spec":{{"resources":{{}}}},"status":{{}}}}"#)),
        // Ingress: `IngressStatus.loadBalancer` is a value struct with omitempty (written);
        // `IngressSpec` has only omitempty pointers and slices.
        ("Ingress", json::<Ingress>(NAMED), format!(r#"{{{META},"spec":{{}},"status":{{"loadBalancer":{{}}}}}}"#)),
        // Role: `rules` is a `[]PolicyRule` without omitempty: nil → `null`.
        ("Role", json::<Role>(NAMED), format!(r#"{{{META},"rules":null}}"#)),
    ];
    let mut failures = Vec::new();
    for (kind, got, want) in &cases {
        if got != want {
            failures.push(format!("{kind}:\n  got  {got}\n  want {want}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Presence Go cannot express is not kept: an omitempty `bool`/`int64` that is zero is left out
/// even when the input carried it.
#[test]
fn json_drops_zero_values_go_cannot_keep() {
    // `Container.stdin` is `bool` with omitempty; `ObjectMeta.generation` `int64` with omitempty.
    let input = r#"{"metadata":{"name":"x","generation":0},"spec":{"containers":[{"name":"c","stdin":false}],"hostNetwork":false}}"#;
    assert_eq!(json::<Pod>(input), format!(r#"{{{META},"spec":{{"containers":[{{"name":"c","resources":{{}}}}]}},"status":{{}}}}"#));
    // A set creation timestamp is written; the zero time (`null`) is left out (omitzero).
    let input = r#"{"metadata":{"name":"x","creationTimestamp":null}}"#;
    assert_eq!(json::<ConfigMap>(input), format!(r#"{{{META}}}"#));
    let input = r#"{"metadata":{"name":"x","creationTimestamp":"2024-01-02T03:04:05Z"}}"#;
    assert_eq!(json::<ConfigMap>(input), r#"{"metadata":{"name":"x","creationTimestamp":"2024-01-02T03:04:05Z"}}"#);
}

/// gogo's marshaller writes every value (non-pointer) field, as its zero value when absent; a
/// value struct is a nested message with its own value fields. Pointers only when set, repeated
/// and map fields per entry.
///
/// `ObjectMeta` with only `name`: `name` (1) `"x"`; `generateName` (2), `namespace` (3),
/// `selfLink` (4), `uid` (5), `resourceVersion` (6) empty strings; `generation` (7) varint 0;
/// `creationTimestamp` (8) the zero `Time`, an empty message (`Time.Marshal` writes nothing for
/// the zero time); `deletionTimestamp` (9) and `deletionGracePeriodSeconds` (10) are pointers;
/// the rest repeated or maps.
const META_PB: &[u8] = &[0x0a, 0x01, b'x', 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00];

#[test]
fn protobuf_of_zero_valued_objects() {
    let with_meta = |rest: &[u8]| -> Vec<u8> {
        let mut out = vec![0x0a, META_PB.len() as u8];
        out.extend_from_slice(META_PB);
        out.extend_from_slice(rest);
        out
    };
    let cases: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        // ConfigMap: `metadata` (1) value struct; `data`/`binaryData` maps with no entries;
        // `immutable` (4) a nil `*bool`, not written.
        ("ConfigMap", proto::<ConfigMap>(NAMED), with_meta(&[])),
        // Role: `rules` (2) repeated with no entries.
        ("Role", proto::<Role>(NAMED), with_meta(&[])),
        // Namespace: `spec` (2) value struct whose only field is repeated → empty message;
        // `status` (3) value struct with value string `phase` (1) → `0a 00`.
        ("Namespace", proto::<Namespace>(NAMED), with_meta(&[0x12, 0x00, 0x1a, 0x02, 0x0a, 0x00])),
        // Secret: `type` (3) is a value string → written empty; `immutable` (5) a nil pointer.
        ("Secret", proto::<Secret>(NAMED), with_meta(&[0x1a, 0x00])),
    ];
    let mut failures = Vec::new();
    for (kind, got, want) in &cases {
        if got != want {
            failures.push(format!("{kind}:\n  got  {got:02x?}\n  want {want:02x?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The issue's example: a v1 `ListOptions` decoded from JSON without `shardSelector` (a value
/// `string`, field 15) encodes it as an empty string, after the other value fields
/// (`labelSelector` 1, `fieldSelector` 2, `watch` 3, `resourceVersion` 4, `allowWatchBookmarks`
/// 9, `resourceVersionMatch` 10, `limit` 7, `continue` 8) and not the nil pointers.
#[test]
fn protobuf_list_options_writes_value_fields() {
    let got = proto::<ListOptions>("{}");
    let want: &[u8] = &[
        0x0a, 0x00, // labelSelector
        0x12, 0x00, // fieldSelector
        0x18, 0x00, // watch
        0x22, 0x00, // resourceVersion
        0x38, 0x00, // limit
        0x42, 0x00, // continue
        0x48, 0x00, // allowWatchBookmarks
        0x52, 0x00, // resourceVersionMatch
        0x7a, 0x00, // shardSelector
    ];
    assert_eq!(got, want, "got {got:02x?}");
}
