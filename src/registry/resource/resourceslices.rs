//! ResourceSlices (`pkg/registry/resource/resourceslice`): generic but for its printer, and a
//! kubelet creates and deletes only the slices of its own node (NodeRestriction's
//! `admitResourceSlice`).

use serde_json::Value;

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Relations, Vertex};
use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, Wanted, forbid, str_at};
use crate::registry::strategy::Strategy;
use crate::selectors::FieldSelector;
use crate::tables::{Columns, groups::RESOURCE_SLICES};

/// Upstream's `resourceSliceStrategy`.
pub struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&RESOURCE_SLICES)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&ResourceSliceStrategy)
    }
}

impl KubeletRules for ResourceSliceStrategy {
    /// `authorizeResourceSlice`: creates (NodeRestriction checks the node), the slices of its
    /// node by name, and lists, watches and deletes of collections selected by
    /// `spec.nodeName=<node>`.
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        if !a.subresource.is_empty() {
            return Some(node::no_opinion("cannot authorize ResourceSlice subresources"));
        }
        Some(match a.verb {
            "create" => Decision::Allow,
            "get" | "update" | "patch" | "delete" => node::related(graph, node, Vertex::ResourceSlice, a),
            "watch" | "list" | "deletecollection" => {
                let selected =
                    FieldSelector::parse(a.field_selector).ok().is_some_and(|s| s.requires_exact_match("spec.nodeName") == Some(node));
                if selected {
                    Decision::Allow
                } else {
                    node::no_opinion("can only list/watch/deletecollection resourceslices with nodeName field selector")
                }
            }
            _ => node::no_opinion(
                "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
            ),
        })
    }

    fn relates_objects(&self) -> bool {
        true
    }

    /// The slice → its node (`spec.nodeName`).
    fn relations(&self, _namespace: &str, name: &str, slice: &Value) -> Option<Relations> {
        Relations::bound_to(Vertex::ResourceSlice, name, slice["spec"]["nodeName"].as_str().unwrap_or_default())
    }

    /// A delete without the stored slice at hand reads it.
    fn needs(&self, _node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
        (write.operation == Operation::Delete && write.old.is_none()).then(|| Wanted {
            group: "resource.k8s.io",
            resource: "resourceslices",
            namespace: None,
            name: write.target.name.to_owned(),
        })
    }

    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        match write.operation {
            Operation::Create if str_at(write.object, "/spec/nodeName") != node => {
                forbid("can only create ResourceSlice with the same NodeName as the requesting node".into())
            }
            Operation::Delete => {
                let slice = match write.old {
                    Some(old) => old,
                    None => write.stored()?,
                };
                if str_at(Some(slice), "/spec/nodeName") != node {
                    return forbid("can only delete ResourceSlice with the same NodeName as the requesting node".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
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
    fn a_node_reads_and_lists_only_its_own_slices() {
        let mut graph = Graph::default();
        let (n1, n2) = (node_user("n1"), node_user("n2"));
        let request = |user, verb, field_selector, name| Attributes {
            api_group: "resource.k8s.io",
            field_selector,
            ..attrs(user, verb, "", "resourceslices", "", name)
        };
        assert_eq!(authorize(&graph, &[], &request(&n1, "get", "", "slice-1")), unrelated("n1"));
        relate(&mut graph, "resource.k8s.io", "resourceslices", "", "slice-1", Some(&json!({"spec": {"nodeName": "n1"}})));
        assert_eq!(authorize(&graph, &[], &request(&n1, "get", "", "slice-1")), Decision::Allow);
        assert_eq!(authorize(&graph, &[], &request(&n2, "get", "", "slice-1")), unrelated("n2"));
        assert_eq!(authorize(&graph, &[], &request(&n1, "list", "spec.nodeName=n1", "")), Decision::Allow);
        assert_eq!(
            authorize(&graph, &[], &request(&n1, "list", "", "")),
            Decision::NoOpinion("can only list/watch/deletecollection resourceslices with nodeName field selector".into())
        );
        relate(&mut graph, "resource.k8s.io", "resourceslices", "", "slice-1", None);
        assert!(graph.is_empty());
    }

    #[test]
    fn a_node_creates_and_deletes_only_its_own_slices() {
        let slice = json!({"spec": {"nodeName": "n2"}});
        let create = write(Operation::Create, target("resource.k8s.io", "resourceslices", None, "", "s"), Some(&slice), None);
        assert_eq!(forbidden(admit("n1", create, None)), "can only create ResourceSlice with the same NodeName as the requesting node");
        admit("n2", create, None).unwrap();
        let delete = write(Operation::Delete, target("resource.k8s.io", "resourceslices", None, "", "s"), None, None);
        assert_eq!(needs("n1", delete).unwrap().name, "s");
        assert_eq!(
            forbidden(admit("n1", delete, Some(&slice))),
            "can only delete ResourceSlice with the same NodeName as the requesting node"
        );
    }
}
