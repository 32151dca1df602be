//! ResourceClaims (`pkg/registry/resource/resourceclaim`): generic but for its printer, and a
//! kubelet gets the claims of the pods bound to it (the Node authorizer's `authorizeGet`; the
//! pods' strategy relates them).

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::strategy::Strategy;
use crate::tables::{Columns, groups::RESOURCE_CLAIMS};

/// Upstream's `resourceclaimStrategy`.
pub struct ResourceClaimStrategy;

impl Strategy for ResourceClaimStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&RESOURCE_CLAIMS)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&ResourceClaimStrategy)
    }
}

impl KubeletRules for ResourceClaimStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(node::get(graph, node, Vertex::ResourceClaim, a))
    }
}
