//! Upstream's Node authorizer (`plugin/pkg/auth/authorizer/node`), I/O-free: what a kubelet
//! (user `system:node:<name>` in group `system:nodes`) may read beyond the `system:node` role.
//! The objects its pods use (secrets, config maps, claims, service-account tokens), its own
//! Node and its pods; which resource allows what is that resource's strategy's business
//! (`registry::kubelet::KubeletRules`), asked through [`authorize`]'s `resource_rules`. The
//! relations live in a [`Graph`] of objects bound to nodes (upstream's graph; the pods'
//! edges only so far: no PersistentVolumes, VolumeAttachments, ResourceClaims or
//! ResourceSlices), which the registry keeps current from a watch of the relating resources.

use std::collections::{BTreeMap, HashMap};

use super::{Attributes, PolicyRule};
use crate::request_info::UserInfo;

/// The group every node's user is in.
pub const NODES_GROUP: &str = "system:nodes";
/// The prefix of a node's user name.
pub const NODE_USER_PREFIX: &str = "system:node:";

/// The kinds of object a pod relates to its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    ServiceAccount,
}

/// One object: its kind, namespace and name.
pub type Key = (Vertex, String, String);

/// What one object (a pod) relates: the node it is bound to and the objects it makes that
/// node reach, itself included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relations {
    pub node: String,
    pub objects: Vec<Key>,
}

/// For each relating object the node and objects it relates, and for each related object the
/// nodes it reaches (with how many relating objects make the path).
#[derive(Debug, Default)]
pub struct Graph {
    /// By the relating object's storage key.
    sources: HashMap<String, Relations>,
    reach: HashMap<Key, BTreeMap<String, usize>>,
}

impl Graph {
    /// Records what the object stored at `source` relates (`None`: deleted, or bound to no
    /// node).
    pub fn set(&mut self, source: &str, relations: Option<Relations>) {
        if let Some(old) = self.sources.remove(source) {
            self.unreach(old);
        }
        let Some(relations) = relations.filter(|r| !r.node.is_empty()) else { return };
        for key in &relations.objects {
            *self.reach.entry(key.clone()).or_default().entry(relations.node.clone()).or_default() += 1;
        }
        self.sources.insert(source.to_owned(), relations);
    }

    /// Keeps only the relating objects whose storage key passes `keep`.
    pub fn retain_sources(&mut self, keep: impl Fn(&str) -> bool) {
        let dropped: Vec<String> = self.sources.keys().filter(|k| !keep(k)).cloned().collect();
        for key in dropped {
            if let Some(old) = self.sources.remove(&key) {
                self.unreach(old);
            }
        }
    }

    /// Takes away the paths `relations` made.
    fn unreach(&mut self, relations: Relations) {
        for key in relations.objects {
            if let Some(nodes) = self.reach.get_mut(&key) {
                if let Some(count) = nodes.get_mut(&relations.node) {
                    *count -= 1;
                    if *count == 0 {
                        nodes.remove(&relations.node);
                    }
                }
                if nodes.is_empty() {
                    self.reach.remove(&key);
                }
            }
        }
    }

    /// Whether `node` reaches the object (upstream's `hasPathFrom`).
    pub fn has_path(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        self.reach.get(&(vertex, namespace.to_owned(), name.to_owned())).is_some_and(|nodes| nodes.contains_key(node))
    }

    /// Whether nothing relates anything.
    pub fn is_empty(&self) -> bool {
        self.reach.is_empty()
    }
}

/// The Node authorizer's answer: allowed, or no opinion (with a reason, possibly empty) so
/// that the next authorizer decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    NoOpinion(String),
}

/// No opinion, for `reason`.
pub fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

/// The node a user is (`nodeidentifier.NodeIdentity`): `None` for a user who is no node,
/// `Some("")` for a node user without a name.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    if !user.groups.iter().any(|g| g == NODES_GROUP) {
        return None;
    }
    user.name.strip_prefix(NODE_USER_PREFIX)
}

/// Upstream's `NodeAuthorizer.Authorize` (with `AuthorizeNodeWithSelectors`) for a node's
/// request: `resource_rules` is the decision of the requested resource's own rules (given the
/// node's name), `rules` the `system:node` role's, which decide what those leave open.
pub fn authorize(rules: &[PolicyRule], a: &Attributes<'_>, resource_rules: impl FnOnce(&str) -> Option<Decision>) -> Decision {
    let Some(node) = node_identity(a.user) else { return no_opinion("") };
    if node.is_empty() {
        return no_opinion(format!("unknown node for user {:?}", a.user.name));
    }
    if a.is_resource_request
        && let Some(decision) = resource_rules(node)
    {
        return decision;
    }
    if rules.iter().any(|r| r.allows(a)) { Decision::Allow } else { no_opinion("") }
}

/// `authorizeReadNamespacedObject`: get, list and watch of one related object.
pub fn read_namespaced(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if !matches!(a.verb, "get" | "list" | "watch") {
        return no_opinion("can only read resources of this type");
    }
    if !a.subresource.is_empty() {
        return no_opinion("cannot read subresource");
    }
    if a.namespace.is_empty() {
        return no_opinion("can only read namespaced object of this type");
    }
    related(graph, node, vertex, a)
}

/// `authorizeGet`.
pub fn get(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if a.verb != "get" {
        return no_opinion("can only get individual resources of this type");
    }
    if !a.subresource.is_empty() {
        return no_opinion("cannot get subresource");
    }
    related(graph, node, vertex, a)
}

/// `authorize`: the named object must be related to the node.
pub fn related(graph: &Graph, node: &str, vertex: Vertex, a: &Attributes<'_>) -> Decision {
    if a.name.is_empty() {
        return no_opinion("No Object name found");
    }
    if graph.has_path(node, vertex, a.namespace, a.name) {
        return Decision::Allow;
    }
    no_opinion(format!("no relationship found between node '{node}' and this object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relations(node: &str, secret: &str) -> Option<Relations> {
        Some(Relations { node: node.into(), objects: vec![(Vertex::Secret, "ns".into(), secret.into())] })
    }

    #[test]
    fn a_path_lasts_while_any_relating_object_makes_it() {
        let mut graph = Graph::default();
        graph.set("/registry/pods/ns/a", relations("n1", "s"));
        graph.set("/registry/pods/ns/b", relations("n1", "s"));
        graph.set("/registry/pods/ns/c", relations("", "t"));
        assert!(graph.has_path("n1", Vertex::Secret, "ns", "s") && !graph.has_path("n2", Vertex::Secret, "ns", "s"));
        assert!(!graph.has_path("", Vertex::Secret, "ns", "t"), "an unbound object relates nothing");
        graph.set("/registry/pods/ns/a", None);
        assert!(graph.has_path("n1", Vertex::Secret, "ns", "s"));
        graph.set("/registry/pods/ns/b", relations("n2", "s"));
        assert!(!graph.has_path("n1", Vertex::Secret, "ns", "s") && graph.has_path("n2", Vertex::Secret, "ns", "s"));
        graph.retain_sources(|key| !key.starts_with("/registry/pods/"));
        assert!(graph.is_empty());
    }
}
