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
