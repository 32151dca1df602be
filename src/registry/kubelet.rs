//! What kubelets may do beyond their RBAC role, per resource. Upstream splits this over the
//! Node authorizer (`plugin/pkg/auth/authorizer/node`: which objects a node may read) and the
//! NodeRestriction admission plugin (`plugin/pkg/admission/noderestriction`: which writes it
//! may make), each naming the few resources it knows. Here a resource's part of both is its
//! strategy's [`KubeletRules`] (in the resource's own file); the authorizer
//! (`registry::rbac::authorizer`) and the plugin (`admission::node_restriction`) only ask the
//! strategy of the resource a kubelet's request is for.

use serde_json::Value;

use super::admission::{Operation, Target};
use crate::rbac::Attributes;
use crate::rbac::node::{Decision, Graph, Relations, Vertex};

/// A resource's part in what a kubelet (user `system:node:<name>` in `system:nodes`) may do.
/// Every method's default leaves the decision to the kubelet's RBAC rules.
pub trait KubeletRules: Send + Sync {
    /// The Node authorizer's decision on a request of node `node` (never empty) for this
    /// resource; `None` when the `system:node` role's rules decide.
    fn authorize(&self, graph: &Graph, node: &str, request: &Attributes<'_>) -> Option<Decision> {
        let _ = (graph, node, request);
        None
    }

    /// Whether this resource's objects relate other objects to nodes: the authorizer then
    /// follows them into its [`Graph`] through [`KubeletRules::relations`].
    fn relates_objects(&self) -> bool {
        false
    }

    /// The node a stored object binds to and the objects it relates to that node (`None`:
    /// none).
    fn relations(&self, namespace: &str, name: &str, object: &Value) -> Option<Relations> {
        let _ = (namespace, name, object);
        None
    }

    /// The stored object NodeRestriction's decision on `write` needs, if any; the plugin reads
    /// it (as upstream reads its informers) and hands it over as [`NodeWrite::stored`].
    fn needs(&self, node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
        let _ = (node, write);
        None
    }

    /// NodeRestriction's answer to a write of node `node` (never empty).
    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        let _ = (node, write);
        Ok(())
    }
}

/// A kubelet's write as NodeRestriction sees it.
#[derive(Clone, Copy)]
pub struct NodeWrite<'a> {
    pub operation: Operation,
    pub target: Target<'a>,
    /// The object to be written (create, update).
    pub object: Option<&'a Value>,
    /// The stored object (update, delete).
    pub old: Option<&'a Value>,
    /// What [`KubeletRules::needs`] asked for and whether it is stored.
    pub fetched: Fetched<'a>,
}

/// The stored object a decision needed: not asked for, missing, or found.
#[derive(Debug, Clone, Copy)]
pub enum Fetched<'a> {
    NotNeeded,
    Missing(&'a Wanted),
    Found(&'a Value),
}

impl<'a> Fetched<'a> {
    /// What was asked for (`wanted`) and what the store held (`stored`).
    pub fn of(wanted: Option<&'a Wanted>, stored: Option<&'a Value>) -> Fetched<'a> {
        match (wanted, stored) {
            (None, _) => Fetched::NotNeeded,
            (Some(_), Some(object)) => Fetched::Found(object),
            (Some(wanted), None) => Fetched::Missing(wanted),
        }
    }
}

impl<'a> NodeWrite<'a> {
    /// The stored object [`KubeletRules::needs`] asked for, or the refusal its absence is
    /// (upstream's lister NotFound).
    pub fn stored(&self) -> Result<&'a Value, Refusal> {
        match self.fetched {
            Fetched::Found(object) => Ok(object),
            Fetched::Missing(wanted) => Err(Refusal::NotFound(wanted.clone())),
            Fetched::NotNeeded => Err(Refusal::Forbidden("missing object".into())),
        }
    }

    /// The name the write is about: the object's on create (the URL has none), else the URL's.
    pub fn own_name(&self) -> &'a str {
        if self.operation == Operation::Create { str_at(self.object, "/metadata/name") } else { self.target.name }
    }

    /// Upstream's `unexpected operation "X"` refusal text's operation.
    pub fn operation_name(&self) -> &'static str {
        match self.operation {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// A stored object a decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub group: &'static str,
    pub resource: &'static str,
    pub namespace: Option<String>,
    pub name: String,
}

/// Why a write is refused: upstream's `admission.NewForbidden`, or the lister's NotFound.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    Forbidden(String),
    NotFound(Wanted),
}

/// The relation of a cluster-scoped object bound to one node by `spec.nodeName`: it → the
/// node (an attachment, a slice).
pub fn bound_to_node(vertex: Vertex, name: &str, object: &Value) -> Option<Relations> {
    let node = object["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())?;
    let mut relations = Relations::default();
    relations.add((vertex, String::new(), name.to_owned()), crate::rbac::node::node_key(node));
    Some(relations)
}

/// `Err(Refusal::Forbidden(message))`, the usual answer.
pub fn forbid(message: String) -> Result<(), Refusal> {
    Err(Refusal::Forbidden(message))
}

/// The string at `pointer`, or `""`.
pub fn str_at<'v>(value: Option<&'v Value>, pointer: &str) -> &'v str {
    value.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod testing {
    //! Building kubelets' requests for the resources' tests.

    use super::*;
    use crate::rbac::node::{NODE_USER_PREFIX, NODES_GROUP};
    use crate::request_info::UserInfo;

    pub fn target<'a>(group: &'a str, resource: &'a str, subresource: Option<&'a str>, namespace: &'a str, name: &'a str) -> Target<'a> {
        Target { group, resource, subresource, kind: "", namespace, name }
    }

    /// A write with nothing fetched.
    pub fn write<'a>(operation: Operation, target: Target<'a>, object: Option<&'a Value>, old: Option<&'a Value>) -> NodeWrite<'a> {
        NodeWrite { operation, target, object, old, fetched: Fetched::NotNeeded }
    }

    /// The resource's strategy's answer to `write` of node `node`, given the stored object its
    /// `needs` asks for (`None`: missing).
    pub fn needs(node: &str, write: NodeWrite<'_>) -> Option<Wanted> {
        crate::registry::strategy::for_resource(write.target.group, write.target.resource).kubelet()?.needs(node, &write)
    }

    pub fn admit(node: &str, write: NodeWrite<'_>, stored: Option<&Value>) -> Result<(), Refusal> {
        let rules = crate::registry::strategy::for_resource(write.target.group, write.target.resource).kubelet();
        let Some(rules) = rules else { return Ok(()) };
        let wanted = rules.needs(node, &write);
        rules.admit(node, &NodeWrite { fetched: Fetched::of(wanted.as_ref(), stored), ..write })
    }

    pub fn forbidden(result: Result<(), Refusal>) -> String {
        match result {
            Err(Refusal::Forbidden(message)) => message,
            other => panic!("not forbidden: {other:?}"),
        }
    }

    pub fn node_user(name: &str) -> UserInfo {
        UserInfo {
            name: format!("{NODE_USER_PREFIX}{name}"),
            groups: vec![NODES_GROUP.into(), "system:authenticated".into()],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::testing::*;
    use super::*;
    use crate::rbac::PolicyRule;
    use crate::registry::strategy;
    use crate::request_info::UserInfo;

    fn mirror_pod() -> Value {
        json!({
            "metadata": {"name": "m", "namespace": "default",
                "annotations": {"kubernetes.io/config.mirror": "x"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1", "controller": true}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
        })
    }

    fn create_pod(pod: &Value) -> Result<(), Refusal> {
        let request = write(Operation::Create, target("", "pods", None, "default", "m"), Some(pod), None);
        assert_eq!(needs("n1", request).unwrap().resource, "nodes");
        admit("n1", request, Some(&json!({"metadata": {"name": "n1", "uid": "u1"}})))
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
        let request = write(Operation::Create, target("", "pods", None, "default", "m"), Some(&pod), None);
        assert!(matches!(admit("n1", request, None), Err(Refusal::NotFound(w)) if w.name == "n1"));
    }

    #[test]
    fn nodes_touch_only_pods_bound_to_them() {
        let mine = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"nodeName": "n1"}});
        let other = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n2"}});
        let delete = write(Operation::Delete, target("", "pods", None, "default", "p"), None, None);
        admit("n1", delete, Some(&mine)).unwrap();
        assert_eq!(forbidden(admit("n1", delete, Some(&other))), r#"node "n1" can only delete pods with spec.nodeName set to itself"#);
        assert!(matches!(admit("n1", delete, None), Err(Refusal::NotFound(_))));

        let update = write(Operation::Update, target("", "pods", None, "default", "p"), Some(&mine), Some(&mine));
        assert_eq!(
            forbidden(admit("n1", update, None)),
            r#"unexpected operation "UPDATE", node "n1" can only create and delete mirror pods"#
        );

        let status = |old: &'static Value, new: &'static Value| {
            write(Operation::Update, target("", "pods", Some("status"), "default", "p"), Some(new), Some(old))
        };
        let mine: &'static Value = Box::leak(Box::new(mine));
        let other: &'static Value = Box::leak(Box::new(other));
        admit("n1", status(mine, mine), None).unwrap();
        assert_eq!(
            forbidden(admit("n1", status(other, other), None)),
            r#"node "n1" can only update pod status for pods with spec.nodeName set to itself"#
        );
        let relabelled: &'static Value = Box::leak(Box::new(json!({"metadata": {"labels": {"a": "c"}}, "spec": {"nodeName": "n1"}})));
        assert_eq!(forbidden(admit("n1", status(mine, relabelled), None)), r#"node "n1" cannot update labels through pod status"#);

        let eviction = json!({"metadata": {"name": "p"}});
        let evict = write(Operation::Create, target("", "pods", Some("eviction"), "default", "p"), Some(&eviction), None);
        admit("n1", evict, Some(mine)).unwrap();
        assert_eq!(forbidden(admit("n1", evict, Some(other))), "node n1 can only evict pods with spec.nodeName set to itself");

        let bind = write(Operation::Create, target("", "pods", Some("binding"), "default", "p"), None, None);
        assert_eq!(forbidden(admit("n1", bind, None)), r#"unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#);
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

    #[test]
    fn leases_csinodes_slices_and_tokens_are_the_nodes_own() {
        let lease = json!({"metadata": {"name": "n1"}});
        let in_ns = |ns: &'static str, op: Operation, name: &'static str| {
            write(op, target("coordination.k8s.io", "leases", None, ns, name), Some(Box::leak(Box::new(lease.clone()))), None)
        };
        admit("n1", in_ns("kube-node-lease", Operation::Create, "n1"), None).unwrap();
        assert_eq!(
            forbidden(admit("n1", in_ns("default", Operation::Create, "n1"), None)),
            r#"can only access leases in the "kube-node-lease" system namespace"#
        );
        assert_eq!(
            forbidden(admit("n2", in_ns("kube-node-lease", Operation::Create, "n1"), None)),
            "can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            forbidden(admit("n1", in_ns("kube-node-lease", Operation::Update, "n2"), None)),
            "can only access node lease with the same name as the requesting node"
        );

        let csinode = write(Operation::Update, target("storage.k8s.io", "csinodes", None, "", "n2"), None, None);
        assert_eq!(forbidden(admit("n1", csinode, None)), "can only access CSINode with the same name as the requesting node");

        let slice = json!({"spec": {"nodeName": "n2"}});
        let create = write(Operation::Create, target("resource.k8s.io", "resourceslices", None, "", "s"), Some(&slice), None);
        assert_eq!(forbidden(admit("n1", create, None)), "can only create ResourceSlice with the same NodeName as the requesting node");
        admit("n2", create, None).unwrap();
        let delete = write(Operation::Delete, target("resource.k8s.io", "resourceslices", None, "", "s"), None, None);
        assert_eq!(needs("n1", delete).unwrap().name, "s");
        assert_eq!(
            forbidden(admit("n1", delete, Some(&slice))),
            "can only delete ResourceSlice with the same NodeName as the requesting node"
        );

        let token = |reference: Value| json!({"spec": {"boundObjectRef": reference}});
        let request = |object: &'static Value| {
            write(Operation::Create, target("", "serviceaccounts", Some("token"), "default", "sa"), Some(object), None)
        };
        let leak = |v: Value| -> &'static Value { Box::leak(Box::new(v)) };
        let pod = json!({"metadata": {"uid": "pu"}, "spec": {"nodeName": "n1"}});
        let bound = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu"})));
        assert_eq!(needs("n1", request(bound)).unwrap().name, "p");
        admit("n1", request(bound), Some(&pod)).unwrap();
        assert_eq!(forbidden(admit("n2", request(bound), Some(&pod))), "node requested token bound to a pod scheduled on a different node");
        let unbound = leak(json!({"spec": {}}));
        assert_eq!(forbidden(admit("n1", request(unbound), None)), "node requested token not bound to a pod");
        let secret = leak(token(json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "x"})));
        assert_eq!(forbidden(admit("n1", request(secret), None)), "node requested token not bound to a pod");
        let no_uid = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p"})));
        assert_eq!(forbidden(admit("n1", request(no_uid), None)), "node requested token with a pod binding without a uid");
        let stale = leak(token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "old"})));
        assert_eq!(
            forbidden(admit("n1", request(stale), Some(&pod))),
            "the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"
        );
        // Other writes to service accounts are not the plugin's.
        let plain = write(Operation::Create, target("", "serviceaccounts", None, "default", "sa"), None, None);
        admit("n1", plain, None).unwrap();
    }

    #[test]
    fn pvcs_only_through_status() {
        let pvc = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound"}});
        let resized =
            json!({"metadata": {"name": "c"}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}}});
        let request = |sub, new: &'static Value| {
            write(
                Operation::Update,
                target("", "persistentvolumeclaims", sub, "default", "c"),
                Some(new),
                Some(Box::leak(Box::new(pvc.clone()))),
            )
        };
        let resized: &'static Value = Box::leak(Box::new(resized));
        admit("n1", request(Some("status"), resized), None).unwrap();
        assert_eq!(forbidden(admit("n1", request(None, resized), None)), "may only update PVC status");
        let relabelled: &'static Value = Box::leak(Box::new(
            json!({"metadata": {"name": "c", "labels": {"a": "b"}}, "spec": {"volumeName": "v"}, "status": {"phase": "Bound"}}),
        ));
        let message = forbidden(admit("n1", request(Some("status"), relabelled), None));
        assert!(
            message.starts_with(r#"node "n1" is not allowed to update fields other than status.quantity and status.conditions: "#),
            "{message}"
        );
    }

    #[test]
    fn resources_without_write_rules_are_left_to_rbac() {
        let request = write(Operation::Create, target("", "configmaps", None, "default", "c"), None, None);
        admit("n1", request, None).unwrap();
        let request = write(Operation::Create, target("apps", "deployments", None, "default", "d"), None, None);
        admit("n1", request, None).unwrap();
    }

    /// A request for a resource of the core group.
    fn attrs<'a>(u: &'a UserInfo, verb: &'a str, ns: &'a str, resource: &'a str, sub: &'a str, name: &'a str) -> Attributes<'a> {
        crate::rbac::tests::attrs(u, verb, ns, "", resource, sub, name)
    }

    /// The Node authorizer's decision with the resources' own rules, as the authorizer asks.
    fn authorize(graph: &Graph, rules: &[PolicyRule], a: &Attributes<'_>) -> Decision {
        crate::rbac::node::authorize(rules, a, |node| strategy::for_resource(a.api_group, a.resource).kubelet()?.authorize(graph, node, a))
    }

    /// Records a pod as its strategy relates it.
    fn set_pod(graph: &mut Graph, namespace: &str, name: &str, pod: Option<&Value>) {
        let rules = strategy::for_resource("", "pods").kubelet().unwrap();
        graph.set(&format!("/registry/pods/{namespace}/{name}"), pod.and_then(|pod| rules.relations(namespace, name, pod)));
    }

    #[test]
    fn a_node_reaches_what_its_pods_use() {
        let sources: Vec<_> = strategy::node_graph_sources().map(|(g, r, _)| (g, r)).collect();
        assert_eq!(
            sources,
            [("", "pods"), ("", "persistentvolumes"), ("resource.k8s.io", "resourceslices"), ("storage.k8s.io", "volumeattachments")]
        );
        let mut graph = Graph::default();
        let pod = json!({"spec": {"nodeName": "n1", "serviceAccountName": "sa",
            "imagePullSecrets": [{"name": "pull"}],
            "containers": [{"name": "c", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}}],
                            "envFrom": [{"configMapRef": {"name": "env-cm"}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "vol-secret"}},
                        {"name": "p", "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]}},
                        {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                        {"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}, {"name": "tpl", "resourceClaimTemplateName": "t"}]},
            "status": {"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "p1-tpl-x"}]}});
        set_pod(&mut graph, "ns", "p1", Some(&pod));
        set_pod(&mut graph, "ns", "unbound", Some(&json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}})));
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
        // Claims made from a template as the status names them; a claim's volume and the
        // secrets the volume names for the kubelet, through the claim.
        for (group, resource, ns, name) in [
            ("", "persistentvolumes", "", "pv-data"),
            ("", "secrets", "ns", "stage-secret"),
            ("storage.k8s.io", "volumeattachments", "", "va-1"),
            ("resource.k8s.io", "resourceslices", "", "slice-1"),
        ] {
            let request = Attributes { api_group: group, ..attrs(&n1, "get", ns, resource, "", name) };
            assert_eq!(
                authorize(&graph, &rules, &request),
                Decision::NoOpinion("no relationship found between node 'n1' and this object".into()),
                "{resource} {name} before its source"
            );
        }
        let set = |graph: &mut Graph, group: &str, resource: &str, name: &str, object: Value| {
            let rules = strategy::for_resource(group, resource).kubelet().unwrap();
            graph.set(&format!("/registry/{resource}/{name}"), rules.relations("", name, &object));
        };
        set(
            &mut graph,
            "",
            "persistentvolumes",
            "pv-data",
            json!({"spec": {"claimRef": {"namespace": "ns", "name": "data"},
            "csi": {"driver": "d", "volumeHandle": "h", "nodeStageSecretRef": {"namespace": "ns", "name": "stage-secret"},
                    "controllerPublishSecretRef": {"namespace": "ns", "name": "controller-secret"}}}}),
        );
        set(&mut graph, "storage.k8s.io", "volumeattachments", "va-1", json!({"spec": {"nodeName": "n1"}}));
        set(&mut graph, "resource.k8s.io", "resourceslices", "slice-1", json!({"spec": {"nodeName": "n1"}}));
        for (group, resource, ns, name) in [
            ("resource.k8s.io", "resourceclaims", "ns", "shared-gpu"),
            ("resource.k8s.io", "resourceclaims", "ns", "p1-tpl-x"),
            ("", "persistentvolumes", "", "pv-data"),
            ("", "secrets", "ns", "stage-secret"),
            ("storage.k8s.io", "volumeattachments", "", "va-1"),
            ("resource.k8s.io", "resourceslices", "", "slice-1"),
        ] {
            let request = |u| Attributes { api_group: group, ..attrs(u, "get", ns, resource, "", name) };
            assert_eq!(authorize(&graph, &rules, &request(&n1)), Decision::Allow, "{resource} {name}");
            assert_ne!(authorize(&graph, &rules, &request(&n2)), Decision::Allow, "{resource} {name}");
        }
        let allowed = |graph: &Graph, u: &UserInfo, resource: &str, name: &str| {
            authorize(graph, &rules, &attrs(u, "get", "ns", resource, "", name)) == Decision::Allow
        };
        assert!(!allowed(&graph, &n1, "secrets", "controller-secret"), "the controller's secrets are not the kubelet's");
        let slices = |selector| Attributes {
            api_group: "resource.k8s.io",
            field_selector: selector,
            ..attrs(&n1, "list", "", "resourceslices", "", "")
        };
        assert_eq!(authorize(&graph, &rules, &slices("spec.nodeName=n1")), Decision::Allow);
        assert_eq!(
            authorize(&graph, &rules, &slices("")),
            Decision::NoOpinion("can only list/watch/deletecollection resourceslices with nodeName field selector".into())
        );
        let csinode =
            |name| authorize(&graph, &rules, &Attributes { api_group: "storage.k8s.io", ..attrs(&n1, "update", "", "csinodes", "", name) });
        assert_eq!(csinode("n1"), Decision::Allow);
        assert_eq!(csinode("n2"), Decision::NoOpinion("can only access CSINode with the same name as the requesting node".into()));
        // A mirror pod grants its node nothing but itself.
        let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}},
            "spec": {"nodeName": "n2", "volumes": [{"name": "v", "secret": {"secretName": "vol-secret"}}]}});
        set_pod(&mut graph, "ns", "m", Some(&mirror));
        assert!(allowed(&graph, &n2, "pods", "m") && !allowed(&graph, &n2, "secrets", "vol-secret"));
        set_pod(&mut graph, "ns", "m", None);
        for (resource, name) in [("persistentvolumes", "pv-data"), ("volumeattachments", "va-1"), ("resourceslices", "slice-1")] {
            graph.set(&format!("/registry/{resource}/{name}"), None);
        }

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
        let lease = |ns, name| {
            authorize(&graph, &rules, &Attributes { api_group: "coordination.k8s.io", ..attrs(&n1, "update", ns, "leases", "", name) })
        };
        assert_eq!(lease("kube-node-lease", "n1"), Decision::Allow);
        assert_eq!(
            lease("kube-node-lease", "n2"),
            Decision::NoOpinion("can only access node lease with the same name as the requesting node".into())
        );
        assert_eq!(
            lease("default", "n1"),
            Decision::NoOpinion("can only access leases in the \"kube-node-lease\" system namespace".into())
        );
        // Not a node: no opinion, silently; a node without a name: no opinion, with a reason.
        let bob = UserInfo { name: "system:node:n1".into(), ..Default::default() };
        assert_eq!(authorize(&graph, &rules, &attrs(&bob, "get", "ns", "secrets", "", "pull")), Decision::NoOpinion(String::new()));
        let nameless = node_user("");
        assert_eq!(
            authorize(&graph, &rules, &attrs(&nameless, "get", "ns", "secrets", "", "pull")),
            Decision::NoOpinion("unknown node for user \"system:node:\"".into())
        );
        // The pod gone, so is every path it made.
        set_pod(&mut graph, "ns", "p1", None);
        assert_ne!(authorize(&graph, &rules, &attrs(&n1, "get", "ns", "secrets", "", "pull")), Decision::Allow);
        assert!(graph.is_empty());
    }
}
