//! kube-controller-manager's ClusterRole aggregation controller
//! (`pkg/controller/clusterroleaggregation`): a ClusterRole with an `aggregationRule` gets as
//! `rules` the rules of every ClusterRole its selectors match (by name order, each rule once,
//! itself left out). Each pass looks at every ClusterRole and writes through the `Store` only
//! the roles whose rules differ.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::registry::keys;
use crate::registry::objects::Kind;
use crate::registry::store::watched::stored_object;
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::selectors::LabelSelector;
use crate::status::{ApiError, GroupResource};
use crate::storage::{ListOptions, Storage};

const GROUP: &str = "rbac.authorization.k8s.io";

pub struct Aggregation {
    pub config: Arc<StoreConfig>,
}

/// The rules an aggregated role gets from `roles` (sorted by name).
pub fn aggregated_rules(role: &Value, roles: &[&Value]) -> Option<Vec<Value>> {
    let selectors = role["aggregationRule"]["clusterRoleSelectors"].as_array()?;
    let name = &role["metadata"]["name"];
    let mut rules: Vec<Value> = Vec::new();
    for selector in selectors {
        let Ok(selector) = LabelSelector::from_json(selector) else { continue };
        for &other in roles {
            if &other["metadata"]["name"] == name || !selector.matches_json(&other["metadata"]["labels"]) {
                continue;
            }
            for rule in other["rules"].as_array().into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

impl Aggregation {
    /// Passes until nothing changes: a pass settles every role it read, so a second one only
    /// finds what was written meanwhile (or lost a conflict).
    pub async fn settle(&self, storage: &dyn Storage) -> Result<(), ApiError> {
        for _ in 0..MAX_LEVELS {
            if !self.pass(storage).await? {
                break;
            }
        }
        Ok(())
    }

    /// One pass over every ClusterRole; true when it wrote something. An aggregated role may
    /// aggregate another (`admin` takes `edit`'s rules, which takes `view`'s): the rules each
    /// role ends with are worked out on the roles read, level by level, and each role whose
    /// rules change is written once, rather than a pass (a list and a decode of every role)
    /// per level.
    pub async fn pass(&self, storage: &dyn Storage) -> Result<bool, ApiError> {
        let listed = storage.list(&keys::key(GROUP, "clusterroles", None, None), ListOptions::default()).await?;
        // Decoded once and shared: every pass reads every role, and the authorizer reads them too.
        let decoded: Vec<_> = listed.kvs.iter().filter_map(|kv| stored_object(kv).ok()).collect();
        let mut stored: Vec<&Value> = decoded.iter().map(|role| role.object()).collect();
        stored.sort_by(|a, b| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()));
        let settled = settle_in_memory(&stored);
        let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: "ClusterRole".into() };
        let store = Store::new(storage, &self.config, GROUP, "clusterroles", kind);
        let mut wrote = false;
        for (role, settled) in stored.iter().zip(&settled) {
            let rules = rules_of(settled);
            if rules_of(role) == rules {
                continue;
            }
            let name = role["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let mut write = |current: Option<&Current<'_>>| {
                let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, "clusterroles"), &name))?;
                let mut object = current.external.clone();
                object["rules"] = Value::Array(rules.to_vec());
                let incoming = Incoming::from_external(GROUP, "clusterroles", &current.kind, object)?;
                Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
            };
            match store
                .update(WriteOptions { manager: Some("kube-controller-manager"), ..Default::default() }, None, &name, &mut write)
                .await
            {
                Err(e) if e.code != 404 && e.code != 409 => return Err(e),
                Err(_) => {}
                Ok(_) => wrote = true,
            }
        }
        Ok(wrote)
    }
}

/// How deep aggregations may nest (roles aggregating aggregated roles) before a pass stops
/// following them; the bootstrap policy nests three deep.
const MAX_LEVELS: usize = 5;

/// `roles` (sorted by name) with the rules their aggregations end with, nested ones
/// included: level by level, until nothing changes or [`MAX_LEVELS`] are done.
fn settle_in_memory(roles: &[&Value]) -> Vec<Value> {
    let mut settled: Vec<Value> = roles.iter().map(|role| (*role).clone()).collect();
    for _ in 0..MAX_LEVELS {
        let roles: Vec<&Value> = settled.iter().collect();
        let changes: Vec<(usize, Vec<Value>)> = roles
            .iter()
            .enumerate()
            .filter_map(|(i, role)| Some((i, aggregated_rules(role, &roles)?)).filter(|(_, rules)| rules_of(role) != rules.as_slice()))
            .collect();
        if changes.is_empty() {
            break;
        }
        for (i, rules) in changes {
            settled[i]["rules"] = Value::Array(rules);
        }
    }
    settled
}

/// A role's rules (none when it has no `rules`).
fn rules_of(role: &Value) -> &[Value] {
    role["rules"].as_array().map_or(&[], Vec::as_slice)
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
    use serde_json::json;

    #[test]
    fn aggregation_collects_matching_roles_rules_once() {
        let admin = json!({"metadata": {"name": "admin"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "true"}}]}});
        let roles = [
            admin.clone(),
            json!({"metadata": {"name": "x", "labels": {"a": "true"}}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]}),
            json!({"metadata": {"name": "y", "labels": {"a": "true"}}, "rules": [{"verbs": ["get"]}]}),
            json!({"metadata": {"name": "z"}, "rules": [{"verbs": ["delete"]}]}),
        ];
        let roles: Vec<&Value> = roles.iter().collect();
        assert_eq!(aggregated_rules(&admin, &roles).unwrap(), vec![json!({"verbs": ["get"]}), json!({"verbs": ["list"]})]);
        assert!(aggregated_rules(roles[1], &roles).is_none());
    }

    #[test]
    fn nested_aggregations_settle_in_one_pass() {
        let aggregates = |to: &str| json!({"clusterRoleSelectors": [{"matchLabels": {format!("to-{to}"): "true"}}]});
        let roles = [
            json!({"metadata": {"name": "admin"}, "aggregationRule": aggregates("admin")}),
            json!({"metadata": {"name": "edit", "labels": {"to-admin": "true"}}, "aggregationRule": aggregates("edit")}),
            json!({"metadata": {"name": "more-edit", "labels": {"to-edit": "true"}}, "rules": [{"verbs": ["update"]}]}),
            json!({"metadata": {"name": "view", "labels": {"to-edit": "true"}}, "aggregationRule": aggregates("view")}),
            json!({"metadata": {"name": "widgets", "labels": {"to-view": "true"}}, "rules": [{"verbs": ["get"]}]}),
        ];
        let settled = settle_in_memory(&roles.iter().collect::<Vec<_>>());
        let rules = |i: usize| settled[i]["rules"].clone();
        assert_eq!(rules(3), json!([{"verbs": ["get"]}]), "view");
        assert_eq!(rules(1), json!([{"verbs": ["update"]}, {"verbs": ["get"]}]), "edit: its own roles' rules and view's, by name");
        assert_eq!(rules(0), rules(1), "admin: edit's, once edit is settled");
        assert_eq!(settled[2], roles[2], "a role that aggregates nothing is left");
    }
}
