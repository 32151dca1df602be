//! PersistentVolumes (`pkg/registry/core/persistentvolume/strategy.go`). A kubelet gets the
//! volumes bound to the claims its pods use, and they make it reach the secrets they name for
//! the kubelet (the Node authorizer's `AddPV` and `authorizeGet`).

use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Relations, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::status::ApiError;

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

    fn sets_status_on_create(&self) -> bool {
        true
    }

    /// A new volume is `Pending` with nothing else in its status (upstream's defaulting of the cleared status on read).
    fn prepare_for_create(&self, object: &mut Object, _user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        use kapi_api::api::core::v1::{PersistentVolume, PersistentVolumeStatus};
        object.typed_mut::<PersistentVolume>()?.status =
            Some(PersistentVolumeStatus { phase: Some("Pending".to_owned()), ..Default::default() });
        Ok(())
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

#[cfg(test)]
mod kubelet_tests {
    use serde_json::json;

    use crate::rbac::node::{Decision, Graph, Relations, Vertex, node_key};
    use crate::registry::kubelet::testing::*;

    /// A node reaches a volume through a claim one of its pods uses, and through the volume the
    /// secrets it names for the kubelet (not the controller's).
    #[test]
    fn a_node_reads_the_volumes_its_pods_claim_and_their_node_secrets() {
        let mut graph = Graph::default();
        let volume = json!({"spec": {"claimRef": {"namespace": "ns", "name": "data"},
            "csi": {"driver": "d", "volumeHandle": "h", "nodeStageSecretRef": {"namespace": "ns", "name": "stage-secret"},
                    "controllerPublishSecretRef": {"namespace": "ns", "name": "controller-secret"}}}});
        relate(&mut graph, "", "persistentvolumes", "", "pv-data", Some(&volume));
        let get = |graph: &Graph, node: &str, resource: &str, namespace: &str, name: &str| {
            authorize(graph, &[], &attrs(&node_user(node), "get", namespace, resource, "", name))
        };
        assert_eq!(get(&graph, "n1", "persistentvolumes", "", "pv-data"), unrelated("n1"), "before a pod claims it");
        assert_eq!(get(&graph, "n1", "secrets", "ns", "stage-secret"), unrelated("n1"));
        // A pod on n1 using the claim, as the pod's rules relate it.
        let pod = (Vertex::Pod, "ns".to_owned(), "p".to_owned());
        let mut relations = Relations::default();
        relations.add(pod.clone(), node_key("n1"));
        relations.add((Vertex::PersistentVolumeClaim, "ns".to_owned(), "data".to_owned()), pod);
        graph.set("/registry/pods/ns/p", Some(relations));
        assert_eq!(get(&graph, "n1", "persistentvolumes", "", "pv-data"), Decision::Allow);
        assert_eq!(get(&graph, "n1", "secrets", "ns", "stage-secret"), Decision::Allow);
        assert_eq!(
            get(&graph, "n1", "secrets", "ns", "controller-secret"),
            unrelated("n1"),
            "the controller's secrets are not the kubelet's"
        );
        assert_ne!(get(&graph, "n2", "persistentvolumes", "", "pv-data"), Decision::Allow);
        relate(&mut graph, "", "persistentvolumes", "", "pv-data", None);
        graph.set("/registry/pods/ns/p", None);
        assert!(graph.is_empty());
    }
}
