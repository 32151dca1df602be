//! Leases (`pkg/registry/coordination/lease`): generic but for a PUT, which creates one. A
//! kubelet reads and writes its own Lease in `kube-node-lease` only (the Node authorizer's
//! lease rule, NodeRestriction's `admitLease`).

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph};
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, forbid};
use crate::registry::strategy::Strategy;

/// The namespace of node leases (`api.NamespaceNodeLease`).
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Upstream's `leaseStrategy`.
pub struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::LEASES)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&LeaseStrategy)
    }
}

impl KubeletRules for LeaseStrategy {
    fn authorize(&self, _graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
            node::no_opinion("can only get, create, update, patch, or delete a node lease")
        } else if a.namespace != NODE_LEASE_NAMESPACE {
            node::no_opinion(format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"))
        } else if a.verb != "create" && a.name != node {
            node::no_opinion("can only access node lease with the same name as the requesting node")
        } else {
            Decision::Allow
        })
    }

    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.target.namespace != NODE_LEASE_NAMESPACE {
            return forbid(format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"));
        }
        if write.own_name() != node {
            return forbid("can only access node lease with the same name as the requesting node".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod kubelet_tests {
    use serde_json::json;

    use crate::rbac::Attributes;
    use crate::rbac::node::{Decision, Graph};
    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

    #[test]
    fn a_node_updates_only_its_own_lease_in_the_node_lease_namespace() {
        let n1 = node_user("n1");
        let update = |namespace, name| {
            authorize(
                &Graph::default(),
                &[],
                &Attributes { api_group: "coordination.k8s.io", ..attrs(&n1, "update", namespace, "leases", "", name) },
            )
        };
        assert_eq!(update("kube-node-lease", "n1"), Decision::Allow);
        assert_eq!(
            update("kube-node-lease", "n2"),
            Decision::NoOpinion("can only access node lease with the same name as the requesting node".into())
        );
        assert_eq!(
            update("default", "n1"),
            Decision::NoOpinion("can only access leases in the \"kube-node-lease\" system namespace".into())
        );
    }

    #[test]
    fn a_node_writes_only_its_own_lease() {
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
    }
}
