//! ServiceAccounts (`pkg/registry/core/serviceaccount`): a delete answers with the deleted
//! object; `serviceaccounts/<name>/token` is the TokenRequest subresource (`tokens`). A kubelet
//! may request tokens only for the service accounts of its pods, bound to one of them (the
//! Node authorizer's token rule, NodeRestriction's `admitServiceAccount`).

pub mod tokens;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Vertex};
use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, Wanted, forbid, str_at};
use crate::registry::strategy::Strategy;

/// Upstream's `strategy` for service accounts, with its store's `ReturnDeletedObject`.
pub struct ServiceAccountStrategy;

impl Strategy for ServiceAccountStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::SERVICE_ACCOUNTS)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn own_rest(&self, subresource: Option<&str>) -> Option<crate::registry::OwnRest> {
        (subresource == Some("token")).then_some(crate::registry::OwnRest::ServiceAccountToken)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&ServiceAccountStrategy)
    }
}

impl KubeletRules for ServiceAccountStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        if a.verb != "create" || a.name.is_empty() {
            return Some(node::no_opinion("can only create tokens for individual service accounts"));
        }
        if a.subresource != "token" {
            return Some(node::no_opinion("can only create token subresource of serviceaccount"));
        }
        Some(node::related(graph, node, Vertex::ServiceAccount, a))
    }

    /// A token request reads the pod it binds to.
    fn needs(&self, _node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
        if write.target.subresource != Some("token") || write.operation != Operation::Create {
            return None;
        }
        let name = str_at(write.object, "/spec/boundObjectRef/name");
        (!name.is_empty()).then(|| Wanted {
            group: "",
            resource: "pods",
            namespace: Some(write.target.namespace.to_owned()),
            name: name.to_owned(),
        })
    }

    /// `admitServiceAccount`: tokens only bound to a pod on the node.
    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.operation != Operation::Create || write.target.subresource != Some("token") {
            return Ok(());
        }
        let reference = write.object.and_then(|r| r.pointer("/spec/boundObjectRef")).filter(|r| r.is_object());
        let field = |f: &str| reference.and_then(|r| r.get(f)).and_then(serde_json::Value::as_str).unwrap_or_default();
        if reference.is_none() || field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
            return forbid("node requested token not bound to a pod".into());
        }
        if field("uid").is_empty() {
            return forbid("node requested token with a pod binding without a uid".into());
        }
        let pod = write.stored()?;
        if field("uid") != str_at(Some(pod), "/metadata/uid") {
            return forbid(format!(
                "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                field("uid")
            ));
        }
        if str_at(Some(pod), "/spec/nodeName") != node {
            return forbid("node requested token bound to a pod scheduled on a different node".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod kubelet_tests {
    use serde_json::{Value, json};

    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

    #[test]
    fn a_node_requests_tokens_bound_to_its_pods_only() {
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
}
