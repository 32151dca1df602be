//! Upstream's Node authorizer (`plugin/pkg/auth/authorizer/node`), I/O-free: what a kubelet
//! (user `system:node:<name>` in group `system:nodes`) may do. Secrets, ConfigMaps,
//! PersistentVolumeClaims and service-account tokens only when a pod bound to the node refers
//! to them; its own Node object, and pods bound to it; everything else by the `system:node`
//! role's rules. The relations live in a [`Graph`] of the pods bound to nodes (upstream's graph,
//! with the pod edges only: no PersistentVolumes, VolumeAttachments, ResourceClaims or
//! ResourceSlices), which the registry keeps current from a watch on pods.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Attributes, PolicyRule};
use crate::request_info::UserInfo;
use crate::selectors::FieldSelector;

/// The group every node's user is in.
pub const NODES_GROUP: &str = "system:nodes";
/// The prefix of a node's user name.
pub const NODE_USER_PREFIX: &str = "system:node:";

/// The kinds of object a pod relates to its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    ServiceAccount,
}

/// One object: its kind, namespace and name.
type Key = (Vertex, String, String);

/// The objects each bound pod relates to its node, and for each object the nodes it reaches
/// (with how many pods make the path).
#[derive(Debug, Default)]
pub struct Graph {
    pods: HashMap<(String, String), (String, Vec<Key>)>,
    reach: HashMap<Key, BTreeMap<String, usize>>,
}

impl Graph {
    /// Records a pod as stored (`None`: deleted). A pod not bound to a node relates nothing.
    pub fn set_pod(&mut self, namespace: &str, name: &str, pod: Option<&Value>) {
        let id = (namespace.to_owned(), name.to_owned());
        if let Some((node, keys)) = self.pods.remove(&id) {
            for key in keys {
                if let Some(nodes) = self.reach.get_mut(&key) {
                    if let Some(count) = nodes.get_mut(&node) {
                        *count -= 1;
                        if *count == 0 {
                            nodes.remove(&node);
                        }
                    }
                    if nodes.is_empty() {
                        self.reach.remove(&key);
                    }
                }
            }
        }
        let Some(pod) = pod else { return };
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        if node.is_empty() {
            return;
        }
        let keys = pod_relations(namespace, name, pod);
        for key in &keys {
            *self.reach.entry(key.clone()).or_default().entry(node.to_owned()).or_default() += 1;
        }
        self.pods.insert(id, (node.to_owned(), keys));
    }

    /// Whether `node` reaches the object (upstream's `hasPathFrom`).
    pub fn has_path(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        self.reach.get(&(vertex, namespace.to_owned(), name.to_owned())).is_some_and(|nodes| nodes.contains_key(node))
    }
}

/// The objects a pod refers to (upstream's `AddPod`: the pod itself, its service account, the
/// secrets `VisitPodSecretNames` and the config maps `VisitPodConfigmapNames` visit, and its
/// claims — an ephemeral volume's claim is `<pod>-<volume>`).
fn pod_relations(namespace: &str, name: &str, pod: &Value) -> Vec<Key> {
    let spec = &pod["spec"];
    let mut out = vec![(Vertex::Pod, namespace.to_owned(), name.to_owned())];
    let mut add = |vertex: Vertex, name: &Value| {
        if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
            let key = (vertex, namespace.to_owned(), name.to_owned());
            if !out.contains(&key) {
                out.push(key);
            }
        }
    };
    add(Vertex::ServiceAccount, &spec["serviceAccountName"]);
    for secret in spec["imagePullSecrets"].as_array().into_iter().flatten() {
        add(Vertex::Secret, &secret["name"]);
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in spec[list].as_array().into_iter().flatten() {
            for from in container["envFrom"].as_array().into_iter().flatten() {
                add(Vertex::Secret, &from["secretRef"]["name"]);
                add(Vertex::ConfigMap, &from["configMapRef"]["name"]);
            }
            for env in container["env"].as_array().into_iter().flatten() {
                add(Vertex::Secret, &env["valueFrom"]["secretKeyRef"]["name"]);
                add(Vertex::ConfigMap, &env["valueFrom"]["configMapKeyRef"]["name"]);
            }
        }
    }
    for volume in spec["volumes"].as_array().into_iter().flatten() {
        add(Vertex::Secret, &volume["secret"]["secretName"]);
        add(Vertex::Secret, &volume["azureFile"]["secretName"]);
        for source in ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"] {
            add(Vertex::Secret, &volume[source]["secretRef"]["name"]);
        }
        add(Vertex::Secret, &volume["csi"]["nodePublishSecretRef"]["name"]);
        add(Vertex::ConfigMap, &volume["configMap"]["name"]);
        for source in volume["projected"]["sources"].as_array().into_iter().flatten() {
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
    out
}

/// The Node authorizer's answer: allowed, or no opinion (with a reason, possibly empty) so
/// that the next authorizer decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    NoOpinion(String),
}

fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

/// The node a user is (`nodeidentifier.NodeIdentity`): `None` for a user who is no node,
/// `Some("")` for a node user without a name.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    if !user.groups.iter().any(|g| g == NODES_GROUP) {
        return None;
    }
    user.name.strip_prefix(NODE_USER_PREFIX)
}

/// Upstream's `NodeAuthorizer.Authorize` (with `AuthorizeNodeWithSelectors`): `rules` are the
/// `system:node` role's, which decide what the authorizer does not subdivide.
pub fn authorize(graph: &Graph, rules: &[PolicyRule], a: &Attributes<'_>) -> Decision {
    let Some(node) = node_identity(a.user) else { return no_opinion("") };
    if node.is_empty() {
        return no_opinion(format!("unknown node for user {:?}", a.user.name));
    }
    if a.is_resource_request {
        match (a.api_group, a.resource) {
            ("", "secrets") => return read_namespaced(graph, node, Vertex::Secret, a),
            ("", "configmaps") => return read_namespaced(graph, node, Vertex::ConfigMap, a),
            ("", "persistentvolumeclaims") => {
                if a.subresource == "status" {
                    return match a.verb {
                        "update" | "patch" => related(graph, node, Vertex::PersistentVolumeClaim, a),
                        _ => no_opinion("can only get/update/patch this type"),
                    };
                }
                return get(graph, node, Vertex::PersistentVolumeClaim, a);
            }
            ("", "serviceaccounts") => {
                if a.verb != "create" || a.name.is_empty() {
                    return no_opinion("can only create tokens for individual service accounts");
                }
                if a.subresource != "token" {
                    return no_opinion("can only create token subresource of serviceaccount");
                }
                return related(graph, node, Vertex::ServiceAccount, a);
            }
            ("coordination.k8s.io", "leases") => {
                if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
                    return no_opinion("can only get, create, update, patch, or delete a node lease");
                }
                if a.namespace != "kube-node-lease" {
                    return no_opinion("can only access leases in the \"kube-node-lease\" system namespace");
                }
                if a.verb != "create" && a.name != node {
                    return no_opinion("can only access node lease with the same name as the requesting node");
                }
                return Decision::Allow;
            }
            ("", "nodes") => return own_node(node, a),
            ("", "pods") => return pod(graph, node, a),
            _ => {}
        }
    }
    if rules.iter().any(|r| r.allows(a)) { Decision::Allow } else { no_opinion("") }
}

/// `authorizeReadNamespacedObject`: get, list and watch of one related object.
fn read_namespaced(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if !matches!(a.verb, "get" | "list" | "watch") {
        return no_opinion("can only read resources of this type");
    }
    if !a.subresource.is_empty() {
        return no_opinion("cannot read subresource");
    }
    if a.namespace.is_empty() {
        return no_opinion("can only read namespaced object of this type");
    }
    related(graph, node, vertex, a)
}

/// `authorizeGet`.
fn get(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if a.verb != "get" {
        return no_opinion("can only get individual resources of this type");
    }
    if !a.subresource.is_empty() {
        return no_opinion("cannot get subresource");
    }
    related(graph, node, vertex, a)
}

/// `authorize`: the named object must be related to the node.
fn related(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if a.name.is_empty() {
        return no_opinion("No Object name found");
    }
    if graph.has_path(node, vertex, a.namespace, a.name) {
        return Decision::Allow;
    }
    no_opinion(format!("no relationship found between node '{node}' and this object"))
}

/// `authorizeNode`: a node reads only its own Node object; writes are NodeRestriction's.
fn own_node(node: &str, a: &Attributes<'_>) -> Decision {
    match (a.subresource, a.verb) {
        ("", "create" | "update" | "patch") => Decision::Allow,
        ("", "get" | "list" | "watch") => match a.name {
            n if n == node => Decision::Allow,
            "" => no_opinion(format!("node '{node}' cannot read all nodes, only its own Node object")),
            other => no_opinion(format!("node '{node}' cannot read '{other}', only its own Node object")),
        },
        ("status", "update" | "patch") => Decision::Allow,
        _ => no_opinion(""),
    }
}

/// `authorizePod`: pods bound to the node, or listed by `spec.nodeName=<node>`.
fn pod(graph: &Graph, node: &str, a: &Attributes<'_>) -> Decision {
    match (a.subresource, a.verb) {
        ("", "get") => get(graph, node, Vertex::Pod, a),
        ("", "list" | "watch") => {
            let scoped = FieldSelector::parse(a.field_selector).ok().is_some_and(|s| s.requires_exact_match("spec.nodeName") == Some(node));
            if scoped {
                return Decision::Allow;
            }
            if !a.name.is_empty() {
                return related(graph, node, Vertex::Pod, a);
            }
            no_opinion("can only list/watch pods with spec.nodeName field selector")
        }
        ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => Decision::Allow,
        _ => no_opinion(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node_user(name: &str) -> UserInfo {
        UserInfo {
            name: format!("{NODE_USER_PREFIX}{name}"),
            groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
            ..Default::default()
        }
    }

    fn attrs<'a>(u: &'a UserInfo, verb: &'a str, ns: &'a str, resource: &'a str, sub: &'a str, name: &'a str) -> Attributes<'a> {
        Attributes {
            user: u,
            verb,
            is_resource_request: true,
            namespace: ns,
            api_group: "",
            api_version: "v1",
            resource,
            subresource: sub,
            name,
            path: "",
            field_selector: "",
        }
    }

    #[test]
    fn a_node_reaches_what_its_pods_use() {
        let mut graph = Graph::default();
        let pod = json!({"spec": {"nodeName": "n1", "serviceAccountName": "sa",
            "imagePullSecrets": [{"name": "pull"}],
            "containers": [{"name": "c", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}}],
                            "envFrom": [{"configMapRef": {"name": "env-cm"}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "vol-secret"}},
                        {"name": "p", "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]}},
                        {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}]}});
        graph.set_pod("ns", "p1", Some(&pod));
        graph.set_pod("ns", "unbound", Some(&json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}})));
        let n1 = node_user("n1");
        let n2 = node_user("n2");
        let rules = [PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["services".into()],
            ..Default::default()
        }];
        let decide = |u: &UserInfo, verb: &str, resource: &str, sub: &str, name: &str| {
            authorize(&graph, &rules, &attrs(u, verb, "ns", resource, sub, name)) == Decision::Allow
        };
        for secret in ["pull", "env-secret", "vol-secret"] {
            assert!(decide(&n1, "get", "secrets", "", secret), "{secret}");
            assert!(decide(&n1, "watch", "secrets", "", secret), "{secret}");
            assert!(!decide(&n2, "get", "secrets", "", secret), "{secret}");
        }
        assert!(!decide(&n1, "get", "secrets", "", "other"));
        assert!(!decide(&n1, "update", "secrets", "", "vol-secret"));
        assert!(!decide(&n1, "list", "secrets", "", ""));
        assert!(decide(&n1, "get", "configmaps", "", "env-cm") && decide(&n1, "get", "configmaps", "", "proj-cm"));
        assert!(decide(&n1, "get", "persistentvolumeclaims", "", "data") && decide(&n1, "get", "persistentvolumeclaims", "", "p1-e"));
        assert!(decide(&n1, "create", "serviceaccounts", "token", "sa"));
        assert!(!decide(&n1, "create", "serviceaccounts", "token", "default"));
        assert!(decide(&n1, "get", "pods", "", "p1") && !decide(&n2, "get", "pods", "", "p1"));
        assert!(!decide(&n1, "get", "pods", "", "unbound"));
        assert!(decide(&n1, "get", "nodes", "", "n1") && !decide(&n1, "get", "nodes", "", "n2"));
        assert!(decide(&n1, "patch", "nodes", "status", "n1"));
        assert!(decide(&n1, "get", "services", "", "x"), "the node rules decide the rest");
        let reason = authorize(&graph, &rules, &attrs(&n2, "get", "ns", "secrets", "", "vol-secret"));
        assert_eq!(reason, Decision::NoOpinion("no relationship found between node 'n2' and this object".into()));
        let list_all = authorize(&graph, &rules, &attrs(&n1, "list", "", "nodes", "", ""));
        assert_eq!(list_all, Decision::NoOpinion("node 'n1' cannot read all nodes, only its own Node object".into()));
        let scoped = Attributes { field_selector: "spec.nodeName=n1", ..attrs(&n1, "list", "", "pods", "", "") };
        assert_eq!(authorize(&graph, &rules, &scoped), Decision::Allow);
        let other = Attributes { field_selector: "spec.nodeName=n2", ..attrs(&n1, "list", "", "pods", "", "") };
        assert_eq!(
            authorize(&graph, &rules, &other),
            Decision::NoOpinion("can only list/watch pods with spec.nodeName field selector".into())
        );
        // Not a node: no opinion, silently.
        let bob = UserInfo { name: "system:node:n1".into(), ..Default::default() };
        assert_eq!(authorize(&graph, &rules, &attrs(&bob, "get", "ns", "secrets", "", "pull")), Decision::NoOpinion(String::new()));
        // The pod gone, so is the path.
        graph.set_pod("ns", "p1", None);
        assert_ne!(authorize(&graph, &rules, &attrs(&n1, "get", "ns", "secrets", "", "pull")), Decision::Allow);
        assert!(graph.reach.is_empty() || graph.reach.keys().all(|(_, _, n)| n != "pull"));
    }
}
