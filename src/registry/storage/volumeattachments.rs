//! VolumeAttachments (`pkg/registry/storage/volumeattachment`): generic but for its printer,
//! and a kubelet gets the attachments to its node (the Node authorizer's
//! `AddVolumeAttachment` and `authorizeGet`).

use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Relations, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::strategy::Strategy;
use crate::tables::{Columns, groups::VOLUME_ATTACHMENTS};

/// Upstream's `volumeAttachmentStrategy`.
pub struct VolumeAttachmentStrategy;

impl Strategy for VolumeAttachmentStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&VOLUME_ATTACHMENTS)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&VolumeAttachmentStrategy)
    }
}

impl KubeletRules for VolumeAttachmentStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(node::get(graph, node, Vertex::VolumeAttachment, a))
    }

    fn relates_objects(&self) -> bool {
        true
    }

    /// The attachment → its node (`spec.nodeName`).
    fn relations(&self, _namespace: &str, name: &str, attachment: &Value) -> Option<Relations> {
        Relations::bound_to(Vertex::VolumeAttachment, name, attachment["spec"]["nodeName"].as_str().unwrap_or_default())
    }
}

#[cfg(test)]
mod kubelet_tests {
    use serde_json::json;

    use crate::rbac::Attributes;
    use crate::rbac::node::{Decision, Graph};
    use crate::registry::kubelet::testing::*;

    #[test]
    fn a_node_reads_the_attachments_to_it() {
        let mut graph = Graph::default();
        let get = |graph: &Graph, node: &str| {
            let user = node_user(node);
            authorize(graph, &[], &Attributes { api_group: "storage.k8s.io", ..attrs(&user, "get", "", "volumeattachments", "", "va-1") })
        };
        assert_eq!(get(&graph, "n1"), unrelated("n1"));
        relate(&mut graph, "storage.k8s.io", "volumeattachments", "", "va-1", Some(&json!({"spec": {"nodeName": "n1"}})));
        assert_eq!(get(&graph, "n1"), Decision::Allow);
        assert_eq!(get(&graph, "n2"), unrelated("n2"));
        relate(&mut graph, "storage.k8s.io", "volumeattachments", "", "va-1", None);
        assert!(graph.is_empty());
    }
}
