//! Nodes (`pkg/registry/core/node`): stored under `minions`; proxying reaches a kubelet. A
//! kubelet reads its own Node only, and writes it without changing its taints, its
//! `configSource` or restricted labels (upstream's Node authorizer's `authorizeNode` and
//! NodeRestriction's `admitNode`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph};
use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, forbid};
use crate::registry::strategy::Strategy;
use crate::status::ApiError;

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

/// Upstream's `nodeStrategy`.
pub struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::NODES)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("minions")
    }

    fn connect_error(&self, _resource: &str, _subresource: &str, name: &str, _object: &Value) -> ApiError {
        ApiError::service_unavailable(format!("no kubelet is reachable for node {name}"))
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&NodeStrategy)
    }
}

impl KubeletRules for NodeStrategy {
    /// `authorizeNode`: a node reads only its own Node object; its writes are
    /// NodeRestriction's.
    fn authorize(&self, _graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(match (a.subresource, a.verb) {
            ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Decision::Allow,
            ("", "get" | "list" | "watch") => match a.name {
                n if n == node => Decision::Allow,
                "" => node::no_opinion(format!("node '{node}' cannot read all nodes, only its own Node object")),
                other => node::no_opinion(format!("node '{node}' cannot read '{other}', only its own Node object")),
            },
            _ => node::no_opinion(""),
        })
    }

    /// `admitNode`: only its own Node, without changing its taints, its `configSource` or
    /// restricted labels.
    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        let requested = write.target.name;
        if requested != node {
            return forbid(format!("node {node:?} is not allowed to modify node {requested:?}"));
        }
        let labels =
            |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).and_then(Value::as_object).cloned().unwrap_or_default();
        match write.operation {
            Operation::Create => {
                if set(write.object, "/spec/configSource").is_some() {
                    return forbid(format!("node {node:?} is not allowed to create pods with a non-nil configSource"));
                }
                let forbidden = forbidden_labels(&labels(write.object), &Map::new());
                if !forbidden.is_empty() {
                    return forbid(format!("node {node:?} is not allowed to set the following labels: {}", forbidden.join(", ")));
                }
            }
            Operation::Update => {
                let source = set(write.object, "/spec/configSource");
                if source.is_some() && source != set(write.old, "/spec/configSource") {
                    return forbid(format!("node {node:?} is not allowed to update configSource to a new non-nil configSource"));
                }
                // Semantic equality: no taints and an empty list are the same.
                let taints = |v| set(v, "/spec/taints").filter(|t| t.as_array().is_none_or(|a| !a.is_empty())).cloned();
                if taints(write.object) != taints(write.old) {
                    return forbid(format!("node {node:?} is not allowed to modify taints"));
                }
                let forbidden = forbidden_labels(&labels(write.object), &labels(write.old));
                if !forbidden.is_empty() {
                    return forbid(format!("is not allowed to modify labels: {}", forbidden.join(", ")));
                }
            }
            _ => {}
        }
        Ok(())
    }
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

#[cfg(test)]
mod kubelet_tests {
    use serde_json::{Value, json};

    use crate::rbac::node::{Decision, Graph};
    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

    #[test]
    fn a_node_reads_only_its_own_node() {
        let (graph, n1) = (Graph::default(), node_user("n1"));
        let decide = |verb, sub, name| authorize(&graph, &[], &attrs(&n1, verb, "", "nodes", sub, name));
        assert_eq!(decide("get", "", "n1"), Decision::Allow);
        assert_ne!(decide("get", "", "n2"), Decision::Allow);
        assert_eq!(decide("patch", "status", "n1"), Decision::Allow);
        assert_eq!(decide("list", "", ""), Decision::NoOpinion("node 'n1' cannot read all nodes, only its own Node object".into()));
    }

    #[test]
    fn nodes_modify_only_themselves_and_not_their_taints_or_restricted_labels() {
        let node = |labels: Value, taints: Value| json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}});
        let create = |object: &Value, name: &str| {
            let request = write(Operation::Create, target("", "nodes", None, "", name), Some(object), None);
            admit("n1", request, None)
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
            let request = write(Operation::Update, target("", "nodes", None, "", "n1"), Some(new), Some(old));
            admit("n1", request, None)
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
}
