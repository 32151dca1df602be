//! PersistentVolumes (`pkg/registry/core/persistentvolume/strategy.go`). A kubelet gets the
//! volumes bound to the claims its pods use, and they make it reach the secrets they name for
//! the kubelet (the Node authorizer's `AddPV` and `authorizeGet`).

use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Relations, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::strategy::Strategy;

/// The volume sources that name a Secret by `secretRef`, the kubelet using it
/// (`VisitPVSecretNames`; the namespace is the reference's, else the bound claim's).
const SECRET_REF_SOURCES: [&str; 7] = ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"];
/// The CSI secrets the kubelet uses (the controller's are not its business).
const CSI_KUBELET_SECRETS: [&str; 3] = ["nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef"];

/// Upstream's `persistentvolumeStrategy`.
pub struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PERSISTENT_VOLUMES)
    }

    /// A new volume is `Pending` (upstream's defaulting of the cleared status on read).
    fn prepare_for_create(&self, object: &mut Value, _user: Option<&crate::request_info::UserInfo>) {
        object["status"]["phase"] = Value::String("Pending".into());
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&PersistentVolumeStrategy)
    }
}

impl KubeletRules for PersistentVolumeStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(node::get(graph, node, Vertex::PersistentVolume, a))
    }

    fn relates_objects(&self) -> bool {
        true
    }

    /// The volume → its claim (`spec.claimRef`); each secret the kubelet uses → the volume.
    fn relations(&self, _namespace: &str, name: &str, volume: &Value) -> Option<Relations> {
        let this = (Vertex::PersistentVolume, String::new(), name.to_owned());
        let spec = &volume["spec"];
        let claim_namespace = spec["claimRef"]["namespace"].as_str().unwrap_or_default();
        let mut relations = Relations::default();
        let mut secret = |namespace: Option<&str>, name: &Value| {
            if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
                let namespace = namespace.filter(|ns| !ns.is_empty()).unwrap_or(claim_namespace);
                relations.add((Vertex::Secret, namespace.to_owned(), name.to_owned()), this.clone());
            }
        };
        secret(spec["azureFile"]["secretNamespace"].as_str(), &spec["azureFile"]["secretName"]);
        for source in SECRET_REF_SOURCES {
            let reference = &spec[source]["secretRef"];
            secret(reference["namespace"].as_str(), &reference["name"]);
        }
        for field in CSI_KUBELET_SECRETS {
            let reference = &spec["csi"][field];
            secret(reference["namespace"].as_str(), &reference["name"]);
        }
        if let Some(claim) = spec["claimRef"]["name"].as_str() {
            relations.add(this.clone(), (Vertex::PersistentVolumeClaim, claim_namespace.to_owned(), claim.to_owned()));
        }
        Some(relations)
    }
}
