//! `NodeRestriction` (`plugin/pkg/admission/noderestriction`): what a kubelet (user
//! `system:node:<name>` in group `system:nodes`) may write. Mirror pods bound to itself and
//! owned by its Node, the status of its pods, deletes and evictions of its pods, its own Node
//! (not its taints, its `configSource` or restricted labels), its own Lease in
//! `kube-node-lease`, CSINode and ResourceSlices, the status of PVCs, and tokens bound to its
//! pods. Requests of other users pass untouched.
//!
//! The decision is I/O-free ([`decide`]); the one stored object it may need (a pod, the Node,
//! a ResourceSlice being deleted) is read first ([`needed`]), from the cache as upstream reads
//! its informers.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Attributes, Operation, Plugin, Target};
use crate::registry::strategy::HookFuture;
use crate::status::{ApiError, GroupResource};

/// Pods the kubelet mirrors from static manifests (`api.MirrorPodAnnotationKey`).
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The namespace of node leases (`api.NamespaceNodeLease`).
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The label namespace kubelets may never set (`v1.LabelNamespaceNodeRestriction`).
const NODE_RESTRICTION_LABELS: &str = "node-restriction.kubernetes.io";
/// The `kubernetes.io`/`k8s.io` labels a kubelet may set (`kubeletapis.IsKubeletLabel`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
/// ... and the label namespaces (with their subdomains) it may set.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

pub struct NodeRestriction;

impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let Some(node) = attributes.user.and_then(crate::rbac::node::node_identity) else { return Ok(()) };
            // Upstream's handler: creates, updates and deletes only.
            if attributes.operation == Operation::Connect {
                return Ok(());
            }
            let request = Request {
                operation: attributes.operation,
                target: attributes.target,
                object: attributes.object.as_deref(),
                old: attributes.old,
            };
            let fetched = match needed(node, &request) {
                Some(wanted) => stored(attributes.store, &wanted).await?,
                None => None,
            };
            decide(node, &request, fetched.as_ref()).map_err(|refusal| match refusal {
                Refusal::Forbidden(message) => {
                    ApiError::forbidden(GroupResource::new(request.target.group, request.target.resource), request.target.name, message)
                }
                Refusal::NotFound(wanted) => ApiError::not_found(GroupResource::new(wanted.group, wanted.resource), &wanted.name),
            })
        })
    }
}

/// What [`decide`] looks at.
pub(super) struct Request<'a> {
    pub operation: Operation,
    pub target: Target<'a>,
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
}

/// A stored object a decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wanted {
    group: &'static str,
    resource: &'static str,
    namespace: Option<String>,
    name: String,
}

/// Why a request is refused: upstream's `admission.NewForbidden`, or the lister's NotFound.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    Forbidden(String),
    NotFound(Wanted),
}

fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

fn str_at<'v>(value: Option<&'v Value>, pointer: &str) -> &'v str {
    value.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or_default()
}

/// The stored object `decide` will need for `request`, if any.
pub(super) fn needed(node: &str, request: &Request<'_>) -> Option<Wanted> {
    let t = &request.target;
    let namespace = Some(t.namespace.to_owned());
    let pod = |name: &str| Wanted { group: "", resource: "pods", namespace: namespace.clone(), name: name.to_owned() };
    match (t.group, t.resource, t.subresource, request.operation) {
        ("", "pods", None, Operation::Delete) => Some(pod(t.name)),
        ("", "pods", None, Operation::Create) => Some(Wanted { group: "", resource: "nodes", namespace: None, name: node.to_owned() }),
        ("", "pods", Some("eviction"), Operation::Create) => {
            let name = if t.name.is_empty() { str_at(request.object, "/metadata/name") } else { t.name };
            (!name.is_empty()).then(|| pod(name))
        }
        ("", "serviceaccounts", Some("token"), Operation::Create) => {
            let name = str_at(request.object, "/spec/boundObjectRef/name");
            (!name.is_empty()).then(|| pod(name))
        }
        ("resource.k8s.io", "resourceslices", _, Operation::Delete) if request.old.is_none() => {
            Some(Wanted { group: "resource.k8s.io", resource: "resourceslices", namespace: None, name: t.name.to_owned() })
        }
        _ => None,
    }
}

/// `Wanted` as stored (cache first, then the store), `None` when missing.
async fn stored(store: &dyn crate::storage::Storage, wanted: &Wanted) -> Result<Option<Value>, ApiError> {
    let key = crate::registry::keys::key(wanted.group, wanted.resource, wanted.namespace.as_deref(), Some(&wanted.name));
    let kv = match store.get_cached(&key).await.map_err(ApiError::from)? {
        Some(kv) => Some(kv),
        None => store.get(&key).await.map_err(ApiError::from)?,
    };
    let Some(kv) = kv else { return Ok(None) };
    let (_, value) = crate::registry::objects::decode_stored(&kv.value).map_err(|e| ApiError::internal(format!("decoding {key}: {e}")))?;
    Ok(Some(value))
}

/// Upstream's `Plugin.Admit` for a request of node `node`, given what [`needed`] asked for
/// (`None` when it is not stored).
pub(super) fn decide(node: &str, request: &Request<'_>, fetched: Option<&Value>) -> Result<(), Refusal> {
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    if node.is_empty() {
        return forbid(format!("could not determine node from user {:?}", crate::rbac::node::NODE_USER_PREFIX));
    }
    let t = &request.target;
    let missing = || needed(node, request).map(Refusal::NotFound).unwrap_or_else(|| Refusal::Forbidden("missing object".into()));
    match (t.group, t.resource) {
        ("", "pods") => match t.subresource {
            None => admit_pod(node, request, fetched, missing),
            Some("status") => admit_pod_status(node, request),
            Some("eviction") => {
                if request.operation != Operation::Create {
                    return forbid(format!("unexpected operation {}", operation_name(request.operation)));
                }
                if t.name.is_empty() && str_at(request.object, "/metadata/name").is_empty() {
                    return forbid("could not determine pod from request data".into());
                }
                let pod = fetched.ok_or_else(missing)?;
                if str_at(Some(pod), "/spec/nodeName") != node {
                    return forbid(format!("node {node} can only evict pods with spec.nodeName set to itself"));
                }
                Ok(())
            }
            Some(other) => forbid(format!("unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed")),
        },
        ("", "nodes") => admit_node(node, request),
        ("", "persistentvolumeclaims") => match t.subresource {
            Some("status") => admit_pvc_status(node, request),
            _ => forbid("may only update PVC status".into()),
        },
        ("", "serviceaccounts") => admit_token(node, request, fetched, missing),
        ("coordination.k8s.io", "leases") => {
            if t.namespace != NODE_LEASE_NAMESPACE {
                return forbid(format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"));
            }
            if own_name(request) != node {
                return forbid("can only access node lease with the same name as the requesting node".into());
            }
            Ok(())
        }
        ("storage.k8s.io", "csinodes") => {
            if own_name(request) != node {
                return forbid("can only access CSINode with the same name as the requesting node".into());
            }
            Ok(())
        }
        ("resource.k8s.io", "resourceslices") => match request.operation {
            Operation::Create if str_at(request.object, "/spec/nodeName") != node => {
                forbid("can only create ResourceSlice with the same NodeName as the requesting node".into())
            }
            Operation::Delete => {
                let Some(slice) = request.old.or(fetched) else { return Err(missing()) };
                if str_at(Some(slice), "/spec/nodeName") != node {
                    return forbid("can only delete ResourceSlice with the same NodeName as the requesting node".into());
                }
                Ok(())
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The name a request is about: the object's on create (the URL has none), else the URL's.
fn own_name<'a>(request: &'a Request<'a>) -> &'a str {
    if request.operation == Operation::Create { str_at(request.object, "/metadata/name") } else { request.target.name }
}

/// `admitPod`: a node creates mirror pods and deletes pods bound to it, nothing else.
fn admit_pod(node: &str, request: &Request<'_>, fetched: Option<&Value>, missing: impl Fn() -> Refusal) -> Result<(), Refusal> {
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    match request.operation {
        Operation::Create => {
            let pod = request.object.unwrap_or(&Value::Null);
            admit_pod_create(node, pod, || fetched.ok_or_else(&missing))
        }
        Operation::Delete => {
            let existing = fetched.ok_or_else(missing)?;
            if str_at(Some(existing), "/spec/nodeName") != node {
                return forbid(format!("node {node:?} can only delete pods with spec.nodeName set to itself"));
            }
            Ok(())
        }
        other => forbid(format!("unexpected operation {:?}, node {node:?} can only create and delete mirror pods", operation_name(other))),
    }
}

/// `admitPodCreate`: a mirror pod bound to the node, controlled by its Node, referring to no
/// other object.
fn admit_pod_create<'v>(node: &str, pod: &Value, node_object: impl FnOnce() -> Result<&'v Value, Refusal>) -> Result<(), Refusal> {
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    if pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_none() {
        return forbid(format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"));
    }
    if str_at(Some(pod), "/spec/nodeName") != node {
        return forbid(format!("node {node:?} can only create pods with spec.nodeName set to itself"));
    }
    let owners = pod.pointer("/metadata/ownerReferences").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    match owners {
        [] => return forbid(format!("node {node:?} can only create pods with an owner reference set to itself")),
        [owner] => {
            let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or_default();
            if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
                return forbid(format!("node {node:?} can only create pods with an owner reference set to itself"));
            }
            if owner.get("controller") != Some(&Value::Bool(true)) {
                return forbid(format!("node {node:?} can only create pods with a controller owner reference set to itself"));
            }
            if owner.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                return forbid(format!("node {node:?} must not set blockOwnerDeletion on an owner reference"));
            }
            let uid = str_at(Some(node_object()?), "/metadata/uid");
            if field("uid") != uid {
                return forbid(format!("node {node} UID mismatch: expected {} got {uid}", field("uid")));
            }
        }
        _ => return forbid(format!("node {node:?} can only create pods with a single owner reference set to itself")),
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let account = |f: &str| spec.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if account("serviceAccountName") || account("serviceAccount") {
        return forbid(format!("node {node:?} can not create pods that reference a service account"));
    }
    if references_secrets(spec) {
        return forbid(format!("node {node:?} can not create pods that reference secrets"));
    }
    if references_configmaps(spec) {
        return forbid(format!("node {node:?} can not create pods that reference configmaps"));
    }
    let volumes = spec.get("volumes").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if volumes.iter().any(|v| projected_sources(v).any(|s| present(s, "clusterTrustBundle"))) {
        return forbid(format!("node {node:?} can not create pods that reference clustertrustbundles"));
    }
    if volumes.iter().any(|v| present(v, "persistentVolumeClaim")) {
        return forbid(format!("node {node:?} can not create pods that reference persistentvolumeclaims"));
    }
    Ok(())
}

fn present(value: &Value, field: &str) -> bool {
    value.get(field).is_some_and(|v| !v.is_null())
}

fn items<'v>(value: &'v Value, field: &str) -> impl Iterator<Item = &'v Value> {
    value.get(field).and_then(Value::as_array).into_iter().flatten()
}

/// Every container of the pod: init, regular and ephemeral (`podutil.AllContainers`).
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"].into_iter().flat_map(move |f| items(spec, f))
}

fn projected_sources(volume: &Value) -> impl Iterator<Item = &Value> {
    volume.get("projected").into_iter().flat_map(|p| items(p, "sources"))
}

/// `podutil.VisitPodSecretNames` finds any name.
fn references_secrets(spec: &Value) -> bool {
    if items(spec, "imagePullSecrets").next().is_some() {
        return true;
    }
    let in_containers = containers(spec).any(|c| {
        items(c, "envFrom").any(|e| present(e, "secretRef"))
            || items(c, "env").any(|e| e.get("valueFrom").is_some_and(|f| present(f, "secretKeyRef")))
    });
    // The volume sources that name a Secret (a `secretRef`, a `secretName`, CSI's
    // `nodePublishSecretRef`).
    in_containers
        || items(spec, "volumes").any(|v| {
            present(v, "secret")
                || present(v, "azureFile")
                || ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"]
                    .iter()
                    .any(|s| v.get(*s).is_some_and(|s| present(s, "secretRef")))
                || v.get("csi").is_some_and(|c| present(c, "nodePublishSecretRef"))
                || projected_sources(v).any(|s| present(s, "secret"))
        })
}

/// `podutil.VisitPodConfigmapNames` finds any name.
fn references_configmaps(spec: &Value) -> bool {
    containers(spec).any(|c| {
        items(c, "envFrom").any(|e| present(e, "configMapRef"))
            || items(c, "env").any(|e| e.get("valueFrom").is_some_and(|f| present(f, "configMapKeyRef")))
    }) || items(spec, "volumes").any(|v| present(v, "configMap") || projected_sources(v).any(|s| present(s, "configMap")))
}

/// `admitPodStatus`: the status of pods bound to the node, without relabelling them.
fn admit_pod_status(node: &str, request: &Request<'_>) -> Result<(), Refusal> {
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    if request.operation != Operation::Update {
        return forbid(format!("unexpected operation {:?}", operation_name(request.operation)));
    }
    if str_at(request.old, "/spec/nodeName") != node {
        return forbid(format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself"));
    }
    let labels = |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).and_then(Value::as_object).cloned().unwrap_or_default();
    if labels(request.old) != labels(request.object) {
        return forbid(format!("node {node:?} cannot update labels through pod status"));
    }
    let claims = |v: Option<&Value>| -> Vec<(String, Option<String>)> {
        v.and_then(|v| v.pointer("/status/resourceClaimStatuses"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| (str_at(Some(s), "/name").to_owned(), s.get("resourceClaimName").and_then(Value::as_str).map(str::to_owned)))
            .collect()
    };
    if claims(request.old) != claims(request.object) {
        return forbid(format!("node {node:?} cannot update resource claim statues"));
    }
    Ok(())
}

/// `admitPVCStatus`: only `status.capacity`, `status.conditions` and the expansion fields.
fn admit_pvc_status(node: &str, request: &Request<'_>) -> Result<(), Refusal> {
    if request.operation != Operation::Update {
        return Err(Refusal::Forbidden(format!("unexpected operation {:?}", operation_name(request.operation))));
    }
    let comparable = |v: Option<&Value>| {
        let mut v = v.cloned().unwrap_or(Value::Null);
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
        if let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
            for field in ["capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"] {
                status.remove(field);
            }
        }
        v
    };
    let (old, new) = (comparable(request.old), comparable(request.object));
    if old != new {
        return Err(Refusal::Forbidden(format!(
            "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: {}",
            json_diff(&old, &new)
        )));
    }
    Ok(())
}

/// The paths at which two objects differ (upstream prints `cmp.Diff`).
fn json_diff(old: &Value, new: &Value) -> String {
    fn walk(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                    walk(&format!("{path}.{k}"), x, y, out);
                }
            }
            (a, b) if a != b => out.push(format!("{path}: {a} -> {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", old, new, &mut out);
    out.join("; ")
}

/// `admitNode`: only its own Node, without changing its taints, its `configSource` or
/// restricted labels.
fn admit_node(node: &str, request: &Request<'_>) -> Result<(), Refusal> {
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    let requested = request.target.name;
    if requested != node {
        return forbid(format!("node {node:?} is not allowed to modify node {requested:?}"));
    }
    let labels = |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).and_then(Value::as_object).cloned().unwrap_or_default();
    match request.operation {
        Operation::Create => {
            if set(request.object, "/spec/configSource").is_some() {
                return forbid(format!("node {node:?} is not allowed to create pods with a non-nil configSource"));
            }
            let forbidden = forbidden_labels(&labels(request.object), &Map::new());
            if !forbidden.is_empty() {
                return forbid(format!("node {node:?} is not allowed to set the following labels: {}", forbidden.join(", ")));
            }
        }
        Operation::Update => {
            let source = set(request.object, "/spec/configSource");
            if source.is_some() && source != set(request.old, "/spec/configSource") {
                return forbid(format!("node {node:?} is not allowed to update configSource to a new non-nil configSource"));
            }
            // Semantic equality: no taints and an empty list are the same.
            let taints = |v| set(v, "/spec/taints").filter(|t| t.as_array().is_none_or(|a| !a.is_empty())).cloned();
            if taints(request.object) != taints(request.old) {
                return forbid(format!("node {node:?} is not allowed to modify taints"));
            }
            let forbidden = forbidden_labels(&labels(request.object), &labels(request.old));
            if !forbidden.is_empty() {
                return forbid(format!("is not allowed to modify labels: {}", forbidden.join(", ")));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The value at `pointer`, unless missing or null.
fn set<'v>(value: Option<&'v Value>, pointer: &str) -> Option<&'v Value> {
    value.and_then(|v| v.pointer(pointer)).filter(|v| !v.is_null())
}

/// The label's namespace: what comes before a `/`.
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or_default()
}

fn in_domain(namespace: &str, domain: &str) -> bool {
    namespace == domain || namespace.strip_suffix(domain).is_some_and(|prefix| prefix.ends_with('.'))
}

/// `getForbiddenLabels` over `getModifiedLabels`: the keys added, removed or changed that a
/// kubelet may not touch, sorted.
fn forbidden_labels(new: &Map<String, Value>, old: &Map<String, Value>) -> Vec<String> {
    let modified: BTreeSet<&String> = new.keys().chain(old.keys()).filter(|k| new.get(*k) != old.get(*k)).collect();
    modified
        .into_iter()
        .filter(|key| {
            let namespace = label_namespace(key);
            let restricted = in_domain(namespace, NODE_RESTRICTION_LABELS);
            let kubernetes = in_domain(namespace, "kubernetes.io") || in_domain(namespace, "k8s.io");
            let kubelet =
                KUBELET_LABELS.contains(&key.as_str()) || KUBELET_LABEL_NAMESPACES.iter().any(|allowed| in_domain(namespace, allowed));
            restricted || (kubernetes && !kubelet)
        })
        .cloned()
        .collect()
}

/// `admitServiceAccount`: tokens only bound to a pod on the node.
fn admit_token(node: &str, request: &Request<'_>, fetched: Option<&Value>, missing: impl Fn() -> Refusal) -> Result<(), Refusal> {
    if request.operation != Operation::Create || request.target.subresource != Some("token") {
        return Ok(());
    }
    let forbid = |message: String| Err(Refusal::Forbidden(message));
    let reference = request.object.and_then(|r| r.pointer("/spec/boundObjectRef")).filter(|r| r.is_object());
    let field = |f: &str| reference.and_then(|r| r.get(f)).and_then(Value::as_str).unwrap_or_default();
    if reference.is_none() || field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
        return forbid("node requested token not bound to a pod".into());
    }
    if field("uid").is_empty() {
        return forbid("node requested token with a pod binding without a uid".into());
    }
    let pod = fetched.ok_or_else(missing)?;
    if field("uid") != str_at(Some(pod), "/metadata/uid") {
        return forbid(format!(
            "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
            field("uid")
        ));
    }
    if str_at(Some(pod), "/spec/nodeName") != node {
        return forbid("node requested token bound to a pod scheduled on a different node".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn target<'a>(group: &'a str, resource: &'a str, subresource: Option<&'a str>, namespace: &'a str, name: &'a str) -> Target<'a> {
        Target { group, resource, subresource, kind: "", namespace, name }
    }

    fn forbidden(result: Result<(), Refusal>) -> String {
        match result {
            Err(Refusal::Forbidden(message)) => message,
            other => panic!("not forbidden: {other:?}"),
        }
    }

    fn mirror_pod() -> Value {
        json!({
            "metadata": {"name": "m", "namespace": "default",
                "annotations": {"kubernetes.io/config.mirror": "x"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1", "controller": true}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        })
    }

    fn create_pod(pod: &Value) -> Result<(), Refusal> {
        let request =
            Request { operation: Operation::Create, target: target("", "pods", None, "default", "m"), object: Some(pod), old: None };
        assert_eq!(needed("n1", &request).unwrap().resource, "nodes");
        decide("n1", &request, Some(&json!({"metadata": {"name": "n1", "uid": "u1"}})))
    }

    #[test]
    fn nodes_create_only_their_own_mirror_pods_referring_to_nothing() {
        create_pod(&mirror_pod()).unwrap();
        let cases: &[(&str, Value, &str)] = &[
            (
                "/metadata/annotations",
                json!({}),
                r#"pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#,
            ),
            ("/spec/nodeName", json!("n2"), r#"node "n1" can only create pods with spec.nodeName set to itself"#),
            ("/metadata/ownerReferences", json!([]), r#"node "n1" can only create pods with an owner reference set to itself"#),
            (
                "/metadata/ownerReferences/0/controller",
                json!(false),
                r#"node "n1" can only create pods with a controller owner reference set to itself"#,
            ),
            (
                "/metadata/ownerReferences/0/blockOwnerDeletion",
                json!(true),
                r#"node "n1" must not set blockOwnerDeletion on an owner reference"#,
            ),
            ("/metadata/ownerReferences/0/uid", json!("u2"), "node n1 UID mismatch: expected u2 got u1"),
            ("/metadata/ownerReferences/0/name", json!("n2"), r#"node "n1" can only create pods with an owner reference set to itself"#),
            ("/spec/serviceAccountName", json!("default"), r#"node "n1" can not create pods that reference a service account"#),
            ("/spec/imagePullSecrets", json!([{"name": "p"}]), r#"node "n1" can not create pods that reference secrets"#),
            (
                "/spec/containers/0/env",
                json!([{"name": "e", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]),
                r#"node "n1" can not create pods that reference secrets"#,
            ),
            (
                "/spec/volumes",
                json!([{"name": "v", "secret": {"secretName": "s"}}]),
                r#"node "n1" can not create pods that reference secrets"#,
            ),
            (
                "/spec/containers/0/envFrom",
                json!([{"configMapRef": {"name": "c"}}]),
                r#"node "n1" can not create pods that reference configmaps"#,
            ),
            (
                "/spec/volumes",
                json!([{"name": "v", "projected": {"sources": [{"configMap": {"name": "c"}}]}}]),
                r#"node "n1" can not create pods that reference configmaps"#,
            ),
            (
                "/spec/volumes",
                json!([{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "c", "path": "p"}}]}}]),
                r#"node "n1" can not create pods that reference clustertrustbundles"#,
            ),
            (
                "/spec/volumes",
                json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
                r#"node "n1" can not create pods that reference persistentvolumeclaims"#,
            ),
        ];
        for (pointer, value, message) in cases {
            let mut pod = mirror_pod();
            let (parent, field) = pointer.rsplit_once('/').unwrap();
            pod.pointer_mut(parent).unwrap()[field] = value.clone();
            assert_eq!(forbidden(create_pod(&pod)), *message, "{pointer}");
        }
        let mut two = mirror_pod();
        let owner = two["metadata"]["ownerReferences"][0].clone();
        two["metadata"]["ownerReferences"].as_array_mut().unwrap().push(owner);
        assert_eq!(forbidden(create_pod(&two)), r#"node "n1" can only create pods with a single owner reference set to itself"#);
        // The Node must exist to check its uid.
        let pod = mirror_pod();
        let request =
            Request { operation: Operation::Create, target: target("", "pods", None, "default", "m"), object: Some(&pod), old: None };
        assert!(matches!(decide("n1", &request, None), Err(Refusal::NotFound(w)) if w.name == "n1"));
    }

    #[test]
    fn nodes_touch_only_pods_bound_to_them() {
        let mine = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"nodeName": "n1"}});
        let other = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n2"}});
        let delete = Request { operation: Operation::Delete, target: target("", "pods", None, "default", "p"), object: None, old: None };
        decide("n1", &delete, Some(&mine)).unwrap();
        assert_eq!(forbidden(decide("n1", &delete, Some(&other))), r#"node "n1" can only delete pods with spec.nodeName set to itself"#);
        assert!(matches!(decide("n1", &delete, None), Err(Refusal::NotFound(_))));

        let update = Request {
            operation: Operation::Update,
            target: target("", "pods", None, "default", "p"),
            object: Some(&mine),
            old: Some(&mine),
        };
        assert_eq!(
            forbidden(decide("n1", &update, None)),
            r#"unexpected operation "UPDATE", node "n1" can only create and delete mirror pods"#
        );

        let status = |old: &'static Value, new: &'static Value| Request {
            operation: Operation::Update,
            target: target("", "pods", Some("status"), "default", "p"),
            object: Some(new),
            old: Some(old),
        };
        let mine: &'static Value = Box::leak(Box::new(mine));
        let other: &'static Value = Box::leak(Box::new(other));
        decide("n1", &status(mine, mine), None).unwrap();
        assert_eq!(
            forbidden(decide("n1", &status(other, other), None)),
            r#"node "n1" can only update pod status for pods with spec.nodeName set to itself"#
        );
        let relabelled: &'static Value = Box::leak(Box::new(json!({"metadata": {"labels": {"a": "c"}}, "spec": {"nodeName": "n1"}})));
        assert_eq!(forbidden(decide("n1", &status(mine, relabelled), None)), r#"node "n1" cannot update labels through pod status"#);

        let eviction = json!({"metadata": {"name": "p"}});
        let evict = Request {
            operation: Operation::Create,
            target: target("", "pods", Some("eviction"), "default", "p"),
            object: Some(&eviction),
            old: None,
        };
        decide("n1", &evict, Some(mine)).unwrap();
        assert_eq!(forbidden(decide("n1", &evict, Some(other))), "node n1 can only evict pods with spec.nodeName set to itself");

        let bind =
            Request { operation: Operation::Create, target: target("", "pods", Some("binding"), "default", "p"), object: None, old: None };
        assert_eq!(
            forbidden(decide("n1", &bind, None)),
            r#"unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#
        );
    }

    #[test]
    fn nodes_modify_only_themselves_and_not_their_taints_or_restricted_labels() {
        let node = |labels: Value, taints: Value| json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}});
        let create = |object: &Value, name: &str| {
            let request =
                Request { operation: Operation::Create, target: target("", "nodes", None, "", name), object: Some(object), old: None };
            decide("n1", &request, None)
        };
        let plain = node(json!({"kubernetes.io/hostname": "n1", "node.kubernetes.io/x": "y", "example.com/a": "b"}), json!(null));
        create(&plain, "n1").unwrap();
        assert_eq!(forbidden(create(&plain, "n2")), r#"node "n1" is not allowed to modify node "n2""#);
        let restricted = node(
            json!({"node-restriction.kubernetes.io/a": "b", "foo.k8s.io/b": "c", "kubernetes.io/role": "x", "a.kubelet.kubernetes.io/ok": "y"}),
            json!(null),
        );
        assert_eq!(
            forbidden(create(&restricted, "n1")),
            r#"node "n1" is not allowed to set the following labels: foo.k8s.io/b, kubernetes.io/role, node-restriction.kubernetes.io/a"#
        );
        let configured = json!({"metadata": {"name": "n1"}, "spec": {"configSource": {"configMap": {}}}});
        assert_eq!(forbidden(create(&configured, "n1")), r#"node "n1" is not allowed to create pods with a non-nil configSource"#);

        let update = |old: &Value, new: &Value| {
            let request =
                Request { operation: Operation::Update, target: target("", "nodes", None, "", "n1"), object: Some(new), old: Some(old) };
            decide("n1", &request, None)
        };
        let tainted = node(json!({}), json!([{"key": "k", "effect": "NoSchedule"}]));
        update(&tainted, &tainted).unwrap();
        update(&node(json!({}), json!([])), &node(json!({}), json!(null))).unwrap();
        assert_eq!(forbidden(update(&tainted, &node(json!({}), json!([])))), r#"node "n1" is not allowed to modify taints"#);
        update(&node(json!({}), json!(null)), &node(json!({"example.com/a": "b"}), json!(null))).unwrap();
        let removed = update(&node(json!({"node-restriction.kubernetes.io/a": "b"}), json!(null)), &node(json!({}), json!(null)));
        assert_eq!(forbidden(removed), "is not allowed to modify labels: node-restriction.kubernetes.io/a");
        assert_eq!(
            forbidden(update(&plain, &configured)),
            r#"node "n1" is not allowed to update configSource to a new non-nil configSource"#
        );
    }

    #[test]
    fn leases_csinodes_slices_and_tokens_are_the_nodes_own() {
        let lease = json!({"metadata": {"name": "n1"}});
        let in_ns = |ns: &'static str, op: Operation, name: &'static str| Request {
            operation: op,
            target: target("coordination.k8s.io", "leases", None, ns, name),
            object: Some(Box::leak(Box::new(lease.clone()))),
            old: None,
        };
        decide("n1", &in_ns("kube-node-lease", Operation::Create, "n1"), None).unwrap();
        assert_eq!(
            forbidden(decide("n1", &in_ns("default", Operation::Create, "n1"), None)),
            r#"can only access leases in the "kube-node-lease" system namespace"#
        );
        assert_eq!(
            forbidden(decide("n2", &in_ns("kube-node-lease", Operation::Create, "n1"), None)),
            "can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            forbidden(decide("n1", &in_ns("kube-node-lease", Operation::Update, "n2"), None)),
            "can only access node lease with the same name as the requesting node"
        );

        let csinode =
            Request { operation: Operation::Update, target: target("storage.k8s.io", "csinodes", None, "", "n2"), object: None, old: None };
        assert_eq!(forbidden(decide("n1", &csinode, None)), "can only access CSINode with the same name as the requesting node");

        let slice = json!({"spec": {"nodeName": "n2"}});
        let create = Request {
            operation: Operation::Create,
            target: target("resource.k8s.io", "resourceslices", None, "", "s"),
            object: Some(&slice),
            old: None,
        };
        assert_eq!(forbidden(decide("n1", &create, None)), "can only create ResourceSlice with the same NodeName as the requesting node");
        decide("n2", &create, None).unwrap();
        let delete = Request {
            operation: Operation::Delete,
            target: target("resource.k8s.io", "resourceslices", None, "", "s"),
            object: None,
            old: None,
        };
        assert_eq!(needed("n1", &delete).unwrap().name, "s");
        assert_eq!(
            forbidden(decide("n1", &delete, Some(&slice))),
            "can only delete ResourceSlice with the same NodeName as the requesting node"
        );

        let token = |reference: Value| json!({"spec": {"boundObjectRef": reference}});
        let request = |object: &'static Value| Request {
            operation: Operation::Create,
            target: target("", "serviceaccounts", Some("token"), "default", "sa"),
            object: Some(object),
            old: None,
        };
        let leak = |v: Value| -> &'static Value { Box::leak(Box::new(v)) };
        let pod = json!({"metadata": {"uid": "pu"}, "spec": {"nodeName": "n1"}});
        let bound = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu"})));
        assert_eq!(needed("n1", &request(bound)).unwrap().name, "p");
        decide("n1", &request(bound), Some(&pod)).unwrap();
        assert_eq!(
            forbidden(decide("n2", &request(bound), Some(&pod))),
            "node requested token bound to a pod scheduled on a different node"
        );
        let unbound = leak(json!({"spec": {}}));
        assert_eq!(forbidden(decide("n1", &request(unbound), None)), "node requested token not bound to a pod");
        let secret = leak(token(json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "x"})));
        assert_eq!(forbidden(decide("n1", &request(secret), None)), "node requested token not bound to a pod");
        let no_uid = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p"})));
        assert_eq!(forbidden(decide("n1", &request(no_uid), None)), "node requested token with a pod binding without a uid");
        let stale = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "old"})));
        assert_eq!(
            forbidden(decide("n1", &request(stale), Some(&pod))),
            "the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"
        );
        // Other writes to service accounts are not the plugin's.
        let plain =
            Request { operation: Operation::Create, target: target("", "serviceaccounts", None, "default", "sa"), object: None, old: None };
        decide("n1", &plain, None).unwrap();
    }

    #[test]
    fn pvcs_only_through_status() {
        let pvc = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound"}});
        let resized =
            json!({"metadata": {"name": "c"}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}}});
        let request = |sub, new: &'static Value| Request {
            operation: Operation::Update,
            target: target("", "persistentvolumeclaims", sub, "default", "c"),
            object: Some(new),
            old: Some(Box::leak(Box::new(pvc.clone()))),
        };
        let resized: &'static Value = Box::leak(Box::new(resized));
        decide("n1", &request(Some("status"), resized), None).unwrap();
        assert_eq!(forbidden(decide("n1", &request(None, resized), None)), "may only update PVC status");
        let relabelled: &'static Value = Box::leak(Box::new(
            json!({"metadata": {"name": "c", "labels": {"a": "b"}}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound"}}),
        ));
        let message = forbidden(decide("n1", &request(Some("status"), relabelled), None));
        assert!(
            message.starts_with(r#"node "n1" is not allowed to update fields other than status.quantity and status.conditions: "#),
            "{message}"
        );
    }

    #[test]
    fn a_node_without_a_name_is_refused() {
        let request =
            Request { operation: Operation::Create, target: target("", "configmaps", None, "default", "c"), object: None, old: None };
        assert_eq!(forbidden(decide("", &request, None)), r#"could not determine node from user "system:node:""#);
        decide("n1", &request, None).unwrap();
    }
}
