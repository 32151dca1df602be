//! What a kubelet may do with pods (upstream's Node authorizer's `authorizePod` and graph
//! population, NodeRestriction's `admitPod`, `admitPodStatus` and `admitPodEviction`): read and
//! list the pods bound to it, create mirror pods of itself referring to no other object, update
//! its pods' status and delete or evict its pods. A bound pod makes its node reach the secrets,
//! config maps, claims and service account it uses.

use serde_json::Value;

use super::PodStrategy;
use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Key, Relations, Vertex};
use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, Wanted, forbid, str_at};
use crate::selectors::FieldSelector;

/// Pods the kubelet mirrors from static manifests (`api.MirrorPodAnnotationKey`).
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The volume sources that name a Secret by `secretRef` (`VisitPodSecretNames`).
const SECRET_REF_SOURCES: [&str; 7] = ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"];

impl KubeletRules for PodStrategy {
    /// `authorizePod`: pods bound to the node, or listed by `spec.nodeName=<node>`.
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(match (a.subresource, a.verb) {
            ("", "get") => node::get(graph, node, Vertex::Pod, a),
            ("", "list" | "watch") => {
                let scoped =
                    FieldSelector::parse(a.field_selector).ok().is_some_and(|s| s.requires_exact_match("spec.nodeName") == Some(node));
                if scoped {
                    Decision::Allow
                } else if !a.name.is_empty() {
                    node::related(graph, node, Vertex::Pod, a)
                } else {
                    node::no_opinion("can only list/watch pods with spec.nodeName field selector")
                }
            }
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => Decision::Allow,
            _ => node::no_opinion(""),
        })
    }

    fn relates_objects(&self) -> bool {
        true
    }

    /// Upstream's `AddPod`: the pod → its node; unless it is a mirror pod (which must grant
    /// nothing), its service account, the secrets `VisitPodSecretNames` and the config maps
    /// `VisitPodConfigmapNames` visit, its claims (an ephemeral volume's is `<pod>-<volume>`)
    /// and its resource claims → the pod.
    fn relations(&self, namespace: &str, name: &str, pod: &Value) -> Option<Relations> {
        let spec = &pod["spec"];
        let node = spec["nodeName"].as_str().filter(|n| !n.is_empty())?;
        let this: Key = (Vertex::Pod, namespace.to_owned(), name.to_owned());
        let mut relations = Relations::default();
        relations.add(this.clone(), node::node_key(node));
        if pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_some() {
            return Some(relations);
        }
        let mut add = |vertex: Vertex, name: &Value| {
            if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
                relations.add((vertex, namespace.to_owned(), name.to_owned()), this.clone());
            }
        };
        add(Vertex::ServiceAccount, &spec["serviceAccountName"]);
        for secret in items(spec, "imagePullSecrets") {
            add(Vertex::Secret, &secret["name"]);
        }
        for container in containers(spec) {
            for from in items(container, "envFrom") {
                add(Vertex::Secret, &from["secretRef"]["name"]);
                add(Vertex::ConfigMap, &from["configMapRef"]["name"]);
            }
            for env in items(container, "env") {
                add(Vertex::Secret, &env["valueFrom"]["secretKeyRef"]["name"]);
                add(Vertex::ConfigMap, &env["valueFrom"]["configMapKeyRef"]["name"]);
            }
        }
        for volume in items(spec, "volumes") {
            add(Vertex::Secret, &volume["secret"]["secretName"]);
            add(Vertex::Secret, &volume["azureFile"]["secretName"]);
            for source in SECRET_REF_SOURCES {
                add(Vertex::Secret, &volume[source]["secretRef"]["name"]);
            }
            add(Vertex::Secret, &volume["csi"]["nodePublishSecretRef"]["name"]);
            add(Vertex::ConfigMap, &volume["configMap"]["name"]);
            for source in projected_sources(volume) {
                add(Vertex::Secret, &source["secret"]["name"]);
                add(Vertex::ConfigMap, &source["configMap"]["name"]);
            }
            add(Vertex::PersistentVolumeClaim, &volume["persistentVolumeClaim"]["claimName"]);
            if volume["ephemeral"].is_object()
                && let Some(volume_name) = volume["name"].as_str()
            {
                add(Vertex::PersistentVolumeClaim, &Value::String(format!("{name}-{volume_name}")));
            }
        }
        // `resourceclaim.Name`: a claim named in the spec, or the one made from a template as
        // the status records it.
        for claim in items(spec, "resourceClaims") {
            if claim["resourceClaimName"].is_string() {
                add(Vertex::ResourceClaim, &claim["resourceClaimName"]);
            } else if let Some(made) = items(&pod["status"], "resourceClaimStatuses").find(|s| s["name"] == claim["name"]) {
                add(Vertex::ResourceClaim, &made["resourceClaimName"]);
            }
        }
        Some(relations)
    }

    /// A delete and an eviction read the pod, a mirror pod's create reads the Node (its uid).
    fn needs(&self, node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
        let t = &write.target;
        let pod = |name: &str| Wanted { group: "", resource: "pods", namespace: Some(t.namespace.to_owned()), name: name.to_owned() };
        match (t.subresource, write.operation) {
            (None, Operation::Delete) => Some(pod(t.name)),
            (None, Operation::Create) => Some(Wanted { group: "", resource: "nodes", namespace: None, name: node.to_owned() }),
            (Some("eviction"), Operation::Create) => {
                let name = if t.name.is_empty() { str_at(write.object, "/metadata/name") } else { t.name };
                (!name.is_empty()).then(|| pod(name))
            }
            _ => None,
        }
    }

    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        match write.target.subresource {
            None => admit_pod(node, write),
            Some("status") => admit_pod_status(node, write),
            Some("eviction") => {
                if write.operation != Operation::Create {
                    return forbid(format!("unexpected operation {}", write.operation_name()));
                }
                if write.target.name.is_empty() && str_at(write.object, "/metadata/name").is_empty() {
                    return forbid("could not determine pod from request data".into());
                }
                if str_at(Some(write.stored()?), "/spec/nodeName") != node {
                    return forbid(format!("node {node} can only evict pods with spec.nodeName set to itself"));
                }
                Ok(())
            }
            Some(other) => forbid(format!("unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed")),
        }
    }
}

/// `admitPod`: a node creates mirror pods and deletes pods bound to it, nothing else.
fn admit_pod(node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
    match write.operation {
        Operation::Create => admit_pod_create(node, write.object.unwrap_or(&Value::Null), write),
        Operation::Delete => {
            if str_at(Some(write.stored()?), "/spec/nodeName") != node {
                return forbid(format!("node {node:?} can only delete pods with spec.nodeName set to itself"));
            }
            Ok(())
        }
        _ => forbid(format!("unexpected operation {:?}, node {node:?} can only create and delete mirror pods", write.operation_name())),
    }
}

/// `admitPodCreate`: a mirror pod bound to the node, controlled by its Node (read as
/// `write`'s stored object), referring to no other object.
fn admit_pod_create(node: &str, pod: &Value, write: &NodeWrite<'_>) -> Result<(), Refusal> {
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
            let uid = str_at(Some(write.stored()?), "/metadata/uid");
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
                || SECRET_REF_SOURCES.iter().any(|s| v.get(*s).is_some_and(|s| present(s, "secretRef")))
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
fn admit_pod_status(node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
    if write.operation != Operation::Update {
        return forbid(format!("unexpected operation {:?}", write.operation_name()));
    }
    if str_at(write.old, "/spec/nodeName") != node {
        return forbid(format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself"));
    }
    let labels = |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).and_then(Value::as_object).cloned().unwrap_or_default();
    if labels(write.old) != labels(write.object) {
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
    if claims(write.old) != claims(write.object) {
        return forbid(format!("node {node:?} cannot update resource claim statues"));
    }
    Ok(())
}
