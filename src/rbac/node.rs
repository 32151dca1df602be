//! Upstream's Node authorizer (`plugin/pkg/auth/authorizer/node`), I/O-free: what a kubelet
//! (user `system:node:<name>` in group `system:nodes`) may read beyond the `system:node` role.
//! The objects its pods use (secrets, config maps, claims, volumes, service-account tokens),
//! its own Node and its pods; which resource allows what is that resource's strategy's
//! business (`registry::kubelet::KubeletRules`), asked through [`authorize`]'s
//! `resource_rules`. The relations live in a [`Graph`] of edges toward nodes (upstream's
//! graph), which the registry keeps current from a watch of the relating resources.

use std::collections::HashMap;

use super::{Attributes, PolicyRule};
use crate::request_info::UserInfo;

/// The group every node's user is in.
pub const NODES_GROUP: &str = "system:nodes";
/// The prefix of a node's user name.
pub const NODE_USER_PREFIX: &str = "system:node:";

/// The kinds of object the graph relates (upstream's vertex types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Node,
    Pod,
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    PersistentVolume,
    ServiceAccount,
    ResourceClaim,
    ResourceSlice,
    VolumeAttachment,
}

/// One object: its kind, namespace (empty for cluster-scoped ones) and name.
pub type Key = (Vertex, String, String);

/// The key of node `name`'s vertex.
pub fn node_key(name: &str) -> Key {
    (Vertex::Node, String::new(), name.to_owned())
}

/// What one stored object relates: edges `from → to`, each saying that whatever `to` reaches
/// (a node, at the end), `from` reaches too — a secret → the pod using it → the pod's node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relations {
    pub edges: Vec<(Key, Key)>,
}

impl Relations {
    /// A cluster-scoped object bound to `node` (an attachment, a slice): it → the node;
    /// nothing when `node` is empty.
    pub fn bound_to(vertex: Vertex, name: &str, node: &str) -> Option<Relations> {
        if node.is_empty() {
            return None;
        }
        let mut relations = Relations::default();
        relations.add((vertex, String::new(), name.to_owned()), node_key(node));
        Some(relations)
    }

    /// Adds `from → to`, once.
    pub fn add(&mut self, from: Key, to: Key) {
        let edge = (from, to);
        if !self.edges.contains(&edge) {
            self.edges.push(edge);
        }
    }
}

/// The edges of every relating object, counted (two pods using one secret make its edge to
/// each pod; the same edge from two sources counts twice).
#[derive(Debug, Default)]
pub struct Graph {
    /// By the relating object's storage key.
    sources: HashMap<String, Relations>,
    out: HashMap<Key, HashMap<Key, usize>>,
}

impl Graph {
    /// Records what the object stored at `source` relates (`None`: deleted, or relating
    /// nothing).
    pub fn set(&mut self, source: &str, relations: Option<Relations>) {
        if let Some(old) = self.sources.remove(source) {
            self.remove_edges(old);
        }
        let Some(relations) = relations.filter(|r| !r.edges.is_empty()) else { return };
        for (from, to) in &relations.edges {
            *self.out.entry(from.clone()).or_default().entry(to.clone()).or_default() += 1;
        }
        self.sources.insert(source.to_owned(), relations);
    }

    /// Keeps only the relating objects whose storage key passes `keep`.
    pub fn retain_sources(&mut self, keep: impl Fn(&str) -> bool) {
        let dropped: Vec<String> = self.sources.keys().filter(|k| !keep(k)).cloned().collect();
        for key in dropped {
            if let Some(old) = self.sources.remove(&key) {
                self.remove_edges(old);
            }
        }
    }

    fn remove_edges(&mut self, relations: Relations) {
        for (from, to) in relations.edges {
            if let Some(targets) = self.out.get_mut(&from) {
                if let Some(count) = targets.get_mut(&to) {
                    *count -= 1;
                    if *count == 0 {
                        targets.remove(&to);
                    }
                }
                if targets.is_empty() {
                    self.out.remove(&from);
                }
            }
        }
    }

    /// Whether a path of edges leads from the object to `node` (upstream's `hasPathFrom`).
    pub fn has_path(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        let goal = node_key(node);
        let start: Key = (vertex, namespace.to_owned(), name.to_owned());
        let mut seen = std::collections::HashSet::from([start.clone()]);
        let mut next = vec![start];
        while let Some(at) = next.pop() {
            for to in self.out.get(&at).into_iter().flat_map(HashMap::keys) {
                if *to == goal {
                    return true;
                }
                if seen.insert(to.clone()) {
                    next.push(to.clone());
                }
            }
        }
        false
    }

    /// Whether nothing relates anything.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
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

    fn key(vertex: Vertex, name: &str) -> Key {
        (vertex, "ns".into(), name.into())
    }

    /// A pod `pod` on `node` using secret `secret`.
    fn pod(pod: &str, node: &str, secret: &str) -> Option<Relations> {
        let mut relations = Relations::default();
        relations.add(key(Vertex::Pod, pod), node_key(node));
        relations.add(key(Vertex::Secret, secret), key(Vertex::Pod, pod));
        Some(relations)
    }

    /// Users who are not nodes get no opinion, silently; a node user without a node name gets
    /// one with upstream's reason. Neither reaches the resources' rules.
    #[test]
    fn only_named_nodes_are_judged() {
        let unjudged = |_: &str| -> Option<Decision> { panic!("the resource's rules were asked") };
        let not_a_node = UserInfo { name: format!("{NODE_USER_PREFIX}n1"), ..Default::default() };
        let request = crate::rbac::tests::attrs(&not_a_node, "get", "ns", "", "secrets", "", "pull");
        assert_eq!(authorize(&[], &request, unjudged), Decision::NoOpinion(String::new()));
        let nameless = UserInfo { name: NODE_USER_PREFIX.into(), groups: vec![NODES_GROUP.into()], ..Default::default() };
        let request = crate::rbac::tests::attrs(&nameless, "get", "ns", "", "secrets", "", "pull");
        assert_eq!(authorize(&[], &request, unjudged), Decision::NoOpinion("unknown node for user \"system:node:\"".into()));
    }

    #[test]
    fn a_path_lasts_while_any_relating_object_makes_it() {
        let mut graph = Graph::default();
        graph.set("/registry/pods/ns/a", pod("a", "n1", "s"));
        graph.set("/registry/pods/ns/b", pod("b", "n1", "s"));
        assert!(graph.has_path("n1", Vertex::Secret, "ns", "s") && !graph.has_path("n2", Vertex::Secret, "ns", "s"));
        graph.set("/registry/pods/ns/a", None);
        assert!(graph.has_path("n1", Vertex::Secret, "ns", "s"));
        graph.set("/registry/pods/ns/b", pod("b", "n2", "s"));
        assert!(!graph.has_path("n1", Vertex::Secret, "ns", "s") && graph.has_path("n2", Vertex::Secret, "ns", "s"));
        // Several hops: a volume's secret → the volume → its claim → a pod → the node.
        let mut volume = Relations::default();
        volume.add((Vertex::PersistentVolume, String::new(), "pv".into()), key(Vertex::PersistentVolumeClaim, "c"));
        volume.add(key(Vertex::Secret, "pv-secret"), (Vertex::PersistentVolume, String::new(), "pv".into()));
        graph.set("/registry/persistentvolumes/pv", Some(volume));
        assert!(!graph.has_path("n2", Vertex::Secret, "ns", "pv-secret"));
        let mut claimant = pod("b", "n2", "s").unwrap();
        claimant.add(key(Vertex::PersistentVolumeClaim, "c"), key(Vertex::Pod, "b"));
        graph.set("/registry/pods/ns/b", Some(claimant));
        assert!(graph.has_path("n2", Vertex::Secret, "ns", "pv-secret"));
        assert!(graph.has_path("n2", Vertex::PersistentVolume, "", "pv"));
        graph.retain_sources(|key| !key.starts_with("/registry/pods/"));
        assert!(!graph.has_path("n2", Vertex::PersistentVolume, "", "pv"));
        graph.set("/registry/persistentvolumes/pv", None);
        assert!(graph.is_empty());
    }
}
