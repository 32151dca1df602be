//! kube-controller-manager's ClusterRole aggregation controller
//! (`pkg/controller/clusterroleaggregation`): a ClusterRole with an `aggregationRule` gets as
//! `rules` the rules of every ClusterRole its selectors match (by name order, each rule once,
//! itself left out). Each pass looks at every ClusterRole and writes through the `Store` only
//! the roles whose rules differ.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kapi_api::api::rbac::v1::{ClusterRole, PolicyRule};

use crate::registry::keys;
use crate::registry::objects::Kind;
use crate::registry::rbac::bootstrap::PolicyObject;
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::selectors::LabelSelector;
use crate::status::{ApiError, GroupResource};
use crate::storage::{ListOptions, Storage};

const GROUP: &str = "rbac.authorization.k8s.io";

pub struct Aggregation {
    pub config: Arc<StoreConfig>,
}

fn name_of(role: &ClusterRole) -> &str {
    role.metadata.as_ref().and_then(|meta| meta.name.as_deref()).unwrap_or_default()
}

/// The rules an aggregated role gets from `roles` (sorted by name).
pub fn aggregated_rules(role: &ClusterRole, roles: &[ClusterRole]) -> Option<Vec<PolicyRule>> {
    let selectors = &role.aggregation_rule.as_ref()?.cluster_role_selectors;
    let name = name_of(role);
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in selectors {
        let Ok(selector) = LabelSelector::from_api(Some(selector)) else { continue };
        for other in roles {
            let labels = other.metadata.as_ref().map(|meta| &meta.labels);
            if name_of(other) == name || !labels.is_some_and(|labels| selector.matches(labels)) {
                continue;
            }
            for rule in &other.rules {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

impl Aggregation {
    /// Passes until every role is settled: a pass settles every role it read, so another pass
    /// is needed only when a write lost a conflict (the role changed after the pass read it).
    pub async fn settle(&self, storage: &dyn Storage) -> Result<(), ApiError> {
        for _ in 0..MAX_LEVELS {
            if !self.pass(storage).await? {
                break;
            }
        }
        Ok(())
    }

    /// One pass over every ClusterRole; true when a role it had to write changed meanwhile, so
    /// that it is not settled (a conflict), false when every role read is. An aggregated role may
    /// aggregate another (`admin` takes `edit`'s rules, which takes `view`'s): the rules each
    /// role ends with are worked out on the roles read, level by level, and each role whose
    /// rules change is written once, rather than a pass (a list and a decode of every role)
    /// per level.
    pub async fn pass(&self, storage: &dyn Storage) -> Result<bool, ApiError> {
        let listed = storage.list(&keys::key(GROUP, "clusterroles", None, None), ListOptions::default()).await?;
        // Decoded straight into the generated type: every pass reads every role.
        let mut stored: Vec<ClusterRole> = listed
            .kvs
            .iter()
            .filter_map(|kv| match PolicyObject::decode_stored(&kv.value) {
                Ok(PolicyObject::ClusterRole(role)) => Some(role),
                _ => None,
            })
            .collect();
        stored.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        let settled = settle_in_memory(&stored);
        let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: "ClusterRole".into() };
        let store = Store::new(storage, &self.config, GROUP, "clusterroles", kind);
        // The roles to write are written together: concurrent writes share the store's commits.
        let writes = stored.iter().zip(&settled).filter(|(role, settled)| role.rules != settled.rules).map(|(role, settled)| {
            let name = name_of(role);
            let store = &store;
            async move {
                let mut write = |current: Option<&Current<'_>>| {
                    let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, "clusterroles"), name))?;
                    let object = match PolicyObject::from_external(&current.kind, current.external()?.clone())? {
                        PolicyObject::ClusterRole(current) => {
                            PolicyObject::ClusterRole(ClusterRole { rules: settled.rules.clone(), ..current })
                        }
                        other => other,
                    };
                    let incoming = Incoming::from_external(GROUP, "clusterroles", &current.kind, object.to_external()?)?;
                    Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
                };
                store.update(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, None, name, &mut write).await
            }
        });
        let mut conflicted = false;
        for written in futures_util::future::join_all(writes).await {
            match written {
                // Deleted meanwhile: nothing left to settle.
                Err(e) if e.code == 404 => {}
                Err(e) if e.code == 409 => conflicted = true,
                Err(e) => return Err(e),
                Ok(_) => {}
            }
        }
        Ok(conflicted)
    }
}

/// How deep aggregations may nest (roles aggregating aggregated roles) before a pass stops
/// following them; the bootstrap policy nests three deep.
const MAX_LEVELS: usize = 5;

/// `roles` (sorted by name) with the rules their aggregations end with, nested ones
/// included: level by level, until nothing changes or [`MAX_LEVELS`] are done.
fn settle_in_memory(roles: &[ClusterRole]) -> Vec<ClusterRole> {
    let mut settled = roles.to_vec();
    for _ in 0..MAX_LEVELS {
        let changes: Vec<(usize, Vec<PolicyRule>)> = settled
            .iter()
            .enumerate()
            .filter_map(|(i, role)| Some((i, aggregated_rules(role, &settled)?)).filter(|(_, rules)| role.rules != *rules))
            .collect();
        if changes.is_empty() {
            break;
        }
        for (i, rules) in changes {
            settled[i].rules = rules;
        }
    }
    settled
}

impl super::Reconciler for Aggregation {
    const NAME: &'static str = "clusterrole aggregation";

    fn prefix(&self) -> String {
        keys::key(GROUP, "clusterroles", None, None)
    }

    fn reconcile<'a>(&'a self, storage: &'a dyn Storage) -> Pin<Box<dyn Future<Output = Result<bool, ApiError>> + Send + 'a>> {
        Box::pin(async move { self.pass(storage).await.map(|_| false) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn role(value: Value) -> ClusterRole {
        let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: "ClusterRole".into() };
        match PolicyObject::from_external(&kind, value).unwrap() {
            PolicyObject::ClusterRole(role) => role,
            other => panic!("{other:?}"),
        }
    }

    fn rules(value: Value) -> Vec<PolicyRule> {
        role(json!({"rules": value})).rules
    }

    #[test]
    fn aggregation_collects_matching_roles_rules_once() {
        let admin =
            role(json!({"metadata": {"name": "admin"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "true"}}]}}));
        let roles = [
            admin.clone(),
            role(json!({"metadata": {"name": "x", "labels": {"a": "true"}}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]})),
            role(json!({"metadata": {"name": "y", "labels": {"a": "true"}}, "rules": [{"verbs": ["get"]}]})),
            role(json!({"metadata": {"name": "z"}, "rules": [{"verbs": ["delete"]}]})),
        ];
        assert_eq!(aggregated_rules(&admin, &roles).unwrap(), rules(json!([{"verbs": ["get"]}, {"verbs": ["list"]}])));
        assert!(aggregated_rules(&roles[1], &roles).is_none());
    }

    #[test]
    fn nested_aggregations_settle_in_one_pass() {
        let aggregates = |to: &str| json!({"clusterRoleSelectors": [{"matchLabels": {format!("to-{to}"): "true"}}]});
        let roles = [
            role(json!({"metadata": {"name": "admin"}, "aggregationRule": aggregates("admin")})),
            role(json!({"metadata": {"name": "edit", "labels": {"to-admin": "true"}}, "aggregationRule": aggregates("edit")})),
            role(json!({"metadata": {"name": "more-edit", "labels": {"to-edit": "true"}}, "rules": [{"verbs": ["update"]}]})),
            role(json!({"metadata": {"name": "view", "labels": {"to-edit": "true"}}, "aggregationRule": aggregates("view")})),
            role(json!({"metadata": {"name": "widgets", "labels": {"to-view": "true"}}, "rules": [{"verbs": ["get"]}]})),
        ];
        let settled = settle_in_memory(&roles);
        assert_eq!(settled[3].rules, rules(json!([{"verbs": ["get"]}])), "view");
        assert_eq!(
            settled[1].rules,
            rules(json!([{"verbs": ["update"]}, {"verbs": ["get"]}])),
            "edit: its own roles' rules and view's, by name"
        );
        assert_eq!(settled[0].rules, settled[1].rules, "admin: edit's, once edit is settled");
        assert_eq!(settled[2], roles[2], "a role that aggregates nothing is left");
    }
}
