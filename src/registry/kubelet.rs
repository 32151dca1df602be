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
use crate::rbac::node::{Decision, Graph, Relations};

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

/// `Err(Refusal::Forbidden(message))`, the usual answer.
pub fn forbid(message: String) -> Result<(), Refusal> {
    Err(Refusal::Forbidden(message))
}

/// The string at `pointer`, or `""`.
pub fn str_at<'v>(value: Option<&'v Value>, pointer: &str) -> &'v str {
    value.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod testing {
    //! Building kubelets' requests for the resources' tests.

    use super::*;
    use crate::rbac::PolicyRule;
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

    /// A request for a resource of the core group.
    pub fn attrs<'a>(u: &'a UserInfo, verb: &'a str, ns: &'a str, resource: &'a str, sub: &'a str, name: &'a str) -> Attributes<'a> {
        crate::rbac::tests::attrs(u, verb, ns, "", resource, sub, name)
    }

    /// Records `object` (`None`: deleted) in the graph as its resource's rules relate it, under
    /// its storage key.
    pub fn relate(graph: &mut Graph, group: &str, resource: &str, namespace: &str, name: &str, object: Option<&Value>) {
        let rules = crate::registry::strategy::for_resource(group, resource).kubelet().expect("the resource has kubelet rules");
        let key = crate::registry::keys::key(group, resource, Some(namespace).filter(|ns| !ns.is_empty()), Some(name));
        graph.set(&key, object.and_then(|object| rules.relations(namespace, name, object)));
    }

    /// The Node authorizer's answer when no object relates the requested one to the node.
    pub fn unrelated(node: &str) -> Decision {
        Decision::NoOpinion(format!("no relationship found between node '{node}' and this object"))
    }

    /// The Node authorizer's decision with the resources' own rules, as the authorizer asks.
    pub fn authorize(graph: &Graph, rules: &[PolicyRule], a: &Attributes<'_>) -> Decision {
        crate::rbac::node::authorize(rules, a, |node| {
            crate::registry::strategy::for_resource(a.api_group, a.resource).kubelet()?.authorize(graph, node, a)
        })
    }
}
