//! The RBAC authorizer's view of storage: every Role, ClusterRole, RoleBinding and
//! ClusterRoleBinding held in memory as one [`Policy`] snapshot (upstream's authorizer reads
//! informers' listers), loaded at start and kept current by one watch per resource, so that a
//! request's authorization reads no storage. A failed watch lists again and resumes.
//!
//! With the Node authorizer (`--authorization-mode Node,RBAC`) the objects that relate others
//! to nodes (pods: see `strategy::node_graph_sources`) are followed the same way into
//! `rbac::node::Graph`, and a kubelet's request is first put to the Node authorizer, with the
//! requested resource's own rules (`Strategy::kubelet`), then to the mode's (upstream's union).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use kapi_api::api::rbac::v1 as rbac_v1;

use super::bootstrap::PolicyObject;
use crate::rbac::node::{self, Decision, Graph, Relations};
use crate::rbac::{Attributes, Binding, Mode, Policy, PolicyRule};
use crate::registry::keys;
use crate::registry::kubelet::KubeletRules;
use crate::registry::objects;
use crate::registry::strategy;
use crate::status::ApiError;
use crate::storage::{Event, ListOptions, Revision, Storage};

const GROUP: &str = "rbac.authorization.k8s.io";
const RESOURCES: [&str; 4] = ["clusterroles", "roles", "clusterrolebindings", "rolebindings"];

/// The stored objects by resource, then storage key, as the policy holds them.
type Sources = [BTreeMap<String, Source>; 4];

/// A stored Role or ClusterRole (its rules) or binding, decoded straight from its stored bytes
/// into its generated type and kept only as what authorization reads.
#[derive(Clone)]
enum Source {
    Role { namespace: String, name: String, rules: Arc<Vec<PolicyRule>> },
    Binding(Binding),
}

impl Source {
    fn decode(stored: &[u8]) -> Result<Source, String> {
        Ok(match PolicyObject::decode_stored(stored)? {
            PolicyObject::ClusterRole(rbac_v1::ClusterRole { metadata, rules, .. })
            | PolicyObject::Role(rbac_v1::Role { metadata, rules, .. }) => {
                let metadata = metadata.unwrap_or_default();
                Source::Role {
                    namespace: metadata.namespace.unwrap_or_default(),
                    name: metadata.name.unwrap_or_default(),
                    rules: Arc::new(PolicyRule::of_rules(&rules)),
                }
            }
            PolicyObject::ClusterRoleBinding(binding) => {
                Source::Binding(Binding::of(binding.metadata.as_ref(), &binding.role_ref, &binding.subjects))
            }
            PolicyObject::RoleBinding(binding) => {
                Source::Binding(Binding::of(binding.metadata.as_ref(), &binding.role_ref, &binding.subjects))
            }
        })
    }
}

/// The authorizer of `--authorization-mode` with its cached policy.
pub struct Authorizer {
    mode: Mode,
    policy: RwLock<Arc<Policy>>,
    sources: Mutex<Sources>,
    /// The Node authorizer, when enabled: the pods' graph and the `system:node` role's rules.
    nodes: Option<(RwLock<Graph>, Vec<PolicyRule>)>,
}

impl Default for Authorizer {
    fn default() -> Self {
        Authorizer::new(Mode::Rbac)
    }
}

impl Authorizer {
    /// An authorizer whose policy is empty (for modes that read none, and tests).
    pub fn new(mode: Mode) -> Authorizer {
        Authorizer { mode, policy: RwLock::new(Arc::new(Policy::default())), sources: Mutex::new(Default::default()), nodes: None }
    }

    /// This authorizer with the Node authorizer before it (`--authorization-mode Node,...`),
    /// whose static rules are the bootstrap `system:node` role's (upstream's `NodeRules`).
    pub fn with_node_authorizer(mut self) -> Authorizer {
        let rules = super::bootstrap::policy()
            .into_iter()
            .find_map(|o| match o {
                PolicyObject::ClusterRole(role) if role.metadata.as_ref().and_then(|m| m.name.as_deref()) == Some("system:node") => {
                    Some(PolicyRule::of_rules(&role.rules))
                }
                _ => None,
            })
            .unwrap_or_default();
        self.nodes = Some((RwLock::new(Graph::default()), rules));
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The current snapshot.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Upstream's authorizer chain: `system:masters`, then the mode's authorizer; a refusal
    /// carries upstream's reason (possibly empty).
    pub fn authorize(&self, a: &Attributes<'_>) -> Result<String, String> {
        let mut reasons = Vec::new();
        if let Some((graph, rules)) = &self.nodes
            && node::node_identity(a.user).is_some()
        {
            let graph = graph.read().unwrap_or_else(|e| e.into_inner());
            let resource_rules = |node: &str| strategy::for_resource(a.api_group, a.resource).kubelet()?.authorize(&graph, node, a);
            match node::authorize(rules, a, resource_rules) {
                Decision::Allow => return Ok(String::new()),
                Decision::NoOpinion(reason) if !reason.is_empty() => reasons.push(reason),
                Decision::NoOpinion(_) => {}
            }
        }
        crate::rbac::decide(self.mode, &self.policy(), a).map_err(|reason| {
            reasons.push(reason);
            reasons.retain(|r| !r.is_empty());
            reasons.join("\n")
        })
    }

    /// Loads the policy from `storage`, then keeps it current in the background (for RBAC;
    /// the other modes read none).
    pub async fn follow(self: &Arc<Self>, storage: Arc<dyn Storage>) -> Result<(), ApiError> {
        if self.nodes.is_some() {
            for (group, resource, rules) in strategy::node_graph_sources() {
                self.follow_relations(storage.clone(), keys::key(group, resource, None, None), rules).await?;
            }
        }
        if self.mode != Mode::Rbac {
            return Ok(());
        }
        // All four read, then the policy built once (not once per resource read).
        let mut revisions = [0; RESOURCES.len()];
        for (index, resource) in RESOURCES.into_iter().enumerate() {
            revisions[index] = self.read(storage.as_ref(), index, resource).await?;
        }
        self.rebuild();
        for ((index, resource), from) in RESOURCES.into_iter().enumerate().zip(revisions) {
            let (authorizer, storage) = (self.clone(), storage.clone());
            tokio::spawn(async move {
                let mut from = from;
                loop {
                    if let Err(e) = authorizer.apply_changes(storage.as_ref(), index, resource, from).await {
                        tracing::warn!(error = %e, resource, "RBAC cache: watch ended; listing again");
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    match authorizer.load(storage.as_ref(), index, resource).await {
                        Ok(revision) => from = revision,
                        Err(e) => tracing::warn!(error = %e, resource, "RBAC cache: list failed"),
                    }
                }
            });
        }
        Ok(())
    }

    /// Loads the objects under `prefix` into the Node authorizer's graph by their `rules`,
    /// then keeps them current.
    async fn follow_relations(
        self: &Arc<Self>,
        storage: Arc<dyn Storage>,
        prefix: String,
        rules: &'static dyn KubeletRules,
    ) -> Result<(), ApiError> {
        let from = self.load_relations(storage.as_ref(), &prefix, rules).await?;
        let authorizer = self.clone();
        tokio::spawn(async move {
            let mut from = from;
            loop {
                if let Err(e) = authorizer.apply_relation_changes(storage.as_ref(), &prefix, rules, from).await {
                    tracing::warn!(error = %e, prefix, "Node authorizer: the watch ended; listing again");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
                match authorizer.load_relations(storage.as_ref(), &prefix, rules).await {
                    Ok(revision) => from = revision,
                    Err(e) => tracing::warn!(error = %e, prefix, "Node authorizer: listing failed"),
                }
            }
        });
        Ok(())
    }

    fn graph(&self) -> Option<std::sync::RwLockWriteGuard<'_, Graph>> {
        self.nodes.as_ref().map(|(graph, _)| graph.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// Lists the objects under `prefix` into the graph, replacing what it held of them;
    /// returns the revision to watch after.
    async fn load_relations(&self, storage: &dyn Storage, prefix: &str, rules: &dyn KubeletRules) -> Result<Revision, ApiError> {
        let listed = storage.list(prefix, ListOptions::default()).await?;
        if let Some(mut graph) = self.graph() {
            graph.retain_sources(|key| !key.starts_with(prefix));
            for kv in &listed.kvs {
                graph.set(&kv.key, relations_of(rules, &kv.value));
            }
        }
        Ok(listed.revision)
    }

    /// Applies the changes under `prefix` after `from` until the watch ends.
    async fn apply_relation_changes(
        &self,
        storage: &dyn Storage,
        prefix: &str,
        rules: &dyn KubeletRules,
        from: Revision,
    ) -> Result<(), ApiError> {
        let mut changes = storage.watch(prefix, from).await?;
        while let Some(event) = changes.next().await {
            let event = event?;
            let relations = match &event {
                Event::Put { kv, .. } => relations_of(rules, &kv.value),
                Event::Delete { .. } => None,
                Event::Progress { .. } => continue,
            };
            if let Some(mut graph) = self.graph() {
                graph.set(event.key(), relations);
            }
        }
        Ok(())
    }

    fn prefix(resource: &str) -> String {
        keys::key(GROUP, resource, None, None)
    }

    /// Lists one resource into the cache and rebuilds the policy; returns the revision to
    /// watch after.
    async fn load(&self, storage: &dyn Storage, index: usize, resource: &str) -> Result<Revision, ApiError> {
        let revision = self.read(storage, index, resource).await?;
        self.rebuild();
        Ok(revision)
    }

    /// [`Self::load`] without rebuilding the policy.
    async fn read(&self, storage: &dyn Storage, index: usize, resource: &str) -> Result<Revision, ApiError> {
        let listed = storage.list(&Self::prefix(resource), ListOptions::default()).await?;
        let objects: BTreeMap<String, Source> =
            listed.kvs.iter().filter_map(|kv| Source::decode(&kv.value).ok().map(|source| (kv.key.clone(), source))).collect();
        self.sources.lock().unwrap_or_else(|e| e.into_inner())[index] = objects;
        Ok(listed.revision)
    }

    /// Applies the changes after `from` until the watch ends.
    async fn apply_changes(&self, storage: &dyn Storage, index: usize, resource: &str, from: Revision) -> Result<(), ApiError> {
        let mut changes = storage.watch(&Self::prefix(resource), from).await?;
        while let Some(event) = changes.next().await {
            match event? {
                Event::Put { kv, .. } => {
                    if let Ok(source) = Source::decode(&kv.value) {
                        self.sources.lock().unwrap_or_else(|e| e.into_inner())[index].insert(kv.key.clone(), source);
                    }
                }
                Event::Delete { prev, .. } => {
                    self.sources.lock().unwrap_or_else(|e| e.into_inner())[index].remove(&prev.key);
                }
                Event::Progress { .. } => continue,
            }
            self.rebuild();
        }
        Ok(())
    }

    fn rebuild(&self) {
        let policy = {
            let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
            policy_of(&sources)
        };
        *self.policy.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(policy);
    }
}

/// The namespace and name of a pod's storage key (`.../pods/<namespace>/<name>`).
/// What a stored object relates, by its resource's `rules`.
fn relations_of(rules: &dyn KubeletRules, stored: &[u8]) -> Option<Relations> {
    let (_, object) = objects::decode_stored(stored).ok()?;
    let meta = &object["metadata"];
    rules.relations(meta["namespace"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default(), &object)
}

/// The snapshot of the stored objects.
fn policy_of(sources: &Sources) -> Policy {
    let mut policy = Policy::default();
    for source in sources.iter().flat_map(BTreeMap::values) {
        match source.clone() {
            Source::Role { namespace, name, rules } if namespace.is_empty() => {
                policy.cluster_roles.insert(name, rules);
            }
            Source::Role { namespace, name, rules } => {
                policy.roles.entry(namespace).or_default().insert(name, rules);
            }
            Source::Binding(binding) if binding.namespace.is_empty() => policy.cluster_role_bindings.push(binding),
            Source::Binding(binding) => policy.role_bindings.entry(binding.namespace.clone()).or_default().push(binding),
        }
    }
    policy
}
