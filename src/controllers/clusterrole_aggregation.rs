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
    /// Passes until nothing changes (an aggregated role may aggregate another: `admin` takes
    /// `edit`'s rules, which takes `view`'s), at most a few.
    pub async fn settle(&self, storage: &dyn Storage) -> Result<(), ApiError> {
        for _ in 0..5 {
            if !self.pass(storage).await? {
                break;
            }
        }
        Ok(())
    }

    /// One pass over every ClusterRole; true when it wrote something.
    pub async fn pass(&self, storage: &dyn Storage) -> Result<bool, ApiError> {
        let mut wrote = false;
        let listed = storage.list(&keys::key(GROUP, "clusterroles", None, None), ListOptions::default()).await?;
        // Decoded once and shared: every pass reads every role, and the authorizer reads them too.
        let decoded: Vec<_> = listed.kvs.iter().filter_map(|kv| stored_object(kv).ok()).collect();
        let mut roles: Vec<&Value> = decoded.iter().map(|role| role.object()).collect();
        roles.sort_by(|a, b| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()));
        let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: "ClusterRole".into() };
        let store = Store::new(storage, &self.config, GROUP, "clusterroles", kind);
        for &role in &roles {
            let Some(rules) = aggregated_rules(role, &roles) else { continue };
            let current_rules = role["rules"].as_array().cloned().unwrap_or_default();
            if current_rules == rules {
                continue;
            }
            let name = role["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let mut write = |current: Option<&Current<'_>>| {
                let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, "clusterroles"), &name))?;
                let mut object = current.external.clone();
                object["rules"] = Value::Array(rules.clone());
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
}
