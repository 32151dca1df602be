//! CSINodes (`pkg/registry/storage/csinode`): generic but for its printer, and a kubelet
//! writes only its own (NodeRestriction's `admitCSINode`).

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph};
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, forbid};
use crate::registry::strategy::Strategy;
use crate::tables::{Columns, groups::CSI_NODES};

/// Upstream's `csiNodeStrategy`.
pub struct CsiNodeStrategy;

impl Strategy for CsiNodeStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&CSI_NODES)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&CsiNodeStrategy)
    }
}

impl KubeletRules for CsiNodeStrategy {
    /// `authorizeCSINode`: its own CSINode only (a create's name is NodeRestriction's to check).
    fn authorize(&self, _graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(if !matches!(a.verb, "get" | "create" | "update" | "patch" | "delete") {
            node::no_opinion("can only get, create, update, patch, or delete a CSINode")
        } else if !a.subresource.is_empty() {
            node::no_opinion("cannot authorize CSINode subresources")
        } else if a.verb != "create" && a.name != node {
            node::no_opinion("can only access CSINode with the same name as the requesting node")
        } else {
            Decision::Allow
        })
    }

    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.own_name() != node {
            return forbid("can only access CSINode with the same name as the requesting node".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod kubelet_tests {
    use crate::rbac::Attributes;
    use crate::rbac::node::{Decision, Graph};
    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

    #[test]
    fn a_node_updates_only_its_own_csinode() {
        let n1 = node_user("n1");
        let update = |name| {
            authorize(&Graph::default(), &[], &Attributes { api_group: "storage.k8s.io", ..attrs(&n1, "update", "", "csinodes", "", name) })
        };
        assert_eq!(update("n1"), Decision::Allow);
        assert_eq!(update("n2"), Decision::NoOpinion("can only access CSINode with the same name as the requesting node".into()));
    }

    #[test]
    fn a_node_writes_only_its_own_csinode() {
        let csinode = write(Operation::Update, target("storage.k8s.io", "csinodes", None, "", "n2"), None, None);
        assert_eq!(forbidden(admit("n1", csinode, None)), "can only access CSINode with the same name as the requesting node");
    }
}
