//! PersistentVolumeClaims (`pkg/registry/core/persistentvolumeclaim/strategy.go`). A kubelet
//! gets the claims its pods use and updates their status's capacity and conditions only (the
//! Node authorizer's claim rules, NodeRestriction's `admitPVCStatus`).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Vertex};
use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, forbid};
use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `persistentvolumeclaimStrategy`.
pub struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PERSISTENT_VOLUME_CLAIMS)
    }

    fn admitted_by(&self) -> &'static [crate::registry::admission::KindPlugin] {
        use crate::registry::admission::KindPlugin::{DefaultStorageClass, LimitRangerClaims};
        &[LimitRangerClaims, DefaultStorageClass]
    }

    fn sets_status_on_create(&self) -> bool {
        true
    }

    /// A new claim is `Pending` with nothing else in its status (upstream's defaulting of the cleared status on read).
    fn prepare_for_create(&self, object: &mut Object, _user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        use kapi_api::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimStatus};
        object.typed_mut::<PersistentVolumeClaim>()?.status =
            Some(PersistentVolumeClaimStatus { phase: Some("Pending".to_owned()), ..Default::default() });
        Ok(())
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::persistent_volume_claim(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::persistent_volume_claim_update(old.typed_ref()?, new.typed_ref()?))
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&PersistentVolumeClaimStrategy)
    }
}

impl KubeletRules for PersistentVolumeClaimStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        if a.subresource == "status" {
            return Some(match a.verb {
                "update" | "patch" => node::related(graph, node, Vertex::PersistentVolumeClaim, a),
                _ => node::no_opinion("can only get/update/patch this type"),
            });
        }
        Some(node::get(graph, node, Vertex::PersistentVolumeClaim, a))
    }

    /// `admitPVCStatus`: only `status.capacity`, `status.conditions` and the expansion fields.
    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.target.subresource != Some("status") {
            return forbid("may only update PVC status".into());
        }
        if write.operation != Operation::Update {
            return forbid(format!("unexpected operation {:?}", write.operation_name()));
        }
        let comparable = |v: Option<&Value>| {
            let mut v = v.cloned().unwrap_or(Value::Null);
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
            }
            if let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
                for field in ["capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"] {
                    status.remove(field);
                }
            }
            v
        };
        let (old, new) = (comparable(write.old), comparable(write.object));
        if old != new {
            return forbid(format!(
                "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: {}",
                json_diff(&old, &new)
            ));
        }
        Ok(())
    }
}

/// The paths at which two objects differ (upstream prints `cmp.Diff`).
fn json_diff(old: &Value, new: &Value) -> String {
    fn walk(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let (x, y) = (a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null));
                    walk(&format!("{path}.{k}"), x, y, out);
                }
            }
            (a, b) if a != b => out.push(format!("{path}: {a} -> {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", old, new, &mut out);
    out.join("; ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::PersistentVolumeClaimStrategy;
    use crate::registry::strategy::prepared_for_create;

    #[test]
    fn new_claims_are_pending_with_nothing_else_in_their_status() {
        let claim = json!({"metadata": {"name": "c"}, "spec": {}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let claim = prepared_for_create(&PersistentVolumeClaimStrategy, "PersistentVolumeClaim", claim);
        assert_eq!(claim["status"], json!({"phase": "Pending"}));
        let volume = json!({"metadata": {"name": "v"}, "spec": {}, "status": {"phase": "Released"}});
        let volume = prepared_for_create(&crate::registry::core::persistentvolumes::PersistentVolumeStrategy, "PersistentVolume", volume);
        assert_eq!(volume["status"], json!({"phase": "Pending"}));
    }
}

#[cfg(test)]
mod kubelet_tests {
    use serde_json::{Value, json};

    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

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
}
