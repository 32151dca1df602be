//! Roles and ClusterRoles (`pkg/registry/rbac/role`, `clusterrole`): names are path segments.

use kapi_api::api::rbac::v1 as rbac_v1;
use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::rbac::{Attributes, PolicyRule};
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, WriteContext};
use crate::registry::validation;
use crate::request_info::RequestInfo;
use crate::status::{ApiError, FieldError, GroupResource};

/// Upstream's `roleStrategy` and `clusterRoleStrategy`: which of the two kinds it serves.
pub enum RoleStrategy {
    Role,
    ClusterRole,
}

impl Strategy for RoleStrategy {
    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::PathSegment
    }

    /// A PUT to a missing Role or ClusterRole creates it (both upstream strategies allow it).
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// The rules read the generated type of the kind served.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match self {
            RoleStrategy::Role => validation::rbac::role(object.typed_ref::<rbac_v1::Role>()?),
            RoleStrategy::ClusterRole => validation::rbac::cluster_role(object.typed_ref()?),
        })
    }

    /// An update is checked as a create: nothing of the old role is read.
    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        self.validate_object(new)
    }

    /// Upstream's escalation check (`pkg/registry/rbac/role/policybased`, `clusterrole/
    /// policybased`): a user allowed to `escalate` the role writes anything; anyone else only
    /// rules they hold themselves (in the role's namespace), and an `aggregationRule` only with
    /// every permission. An update that leaves the rules and aggregation as they were passes.
    fn authorize_write(&self, context: &WriteContext<'_>, old: Option<&Object>, new: &Object) -> Result<(), ApiError> {
        let (new, old) = (self.policy(new)?, old.map(|old| self.policy(old)).transpose()?);
        if old.is_some_and(|old| old.rules == new.rules && old.aggregation_rule == new.aggregation_rule) {
            return Ok(());
        }
        let name = new.name;
        let namespace = context.namespace.unwrap_or_default();
        if escalation_authorized(context, "escalate", context.resource, namespace, name) {
            return Ok(());
        }
        let resource = GroupResource::new(context.group, context.resource);
        let policy = context.authorizer.policy();
        crate::rbac::confirm_no_escalation(&policy, context.user, namespace, &PolicyRule::of_rules(new.rules))
            .map_err(|message| ApiError::forbidden(resource, name, message))?;
        if new.aggregation_rule.is_some() {
            let everything = [
                PolicyRule { verbs: vec!["*".into()], api_groups: vec!["*".into()], resources: vec!["*".into()], ..Default::default() },
                PolicyRule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..Default::default() },
            ];
            if crate::rbac::confirm_no_escalation(&policy, context.user, namespace, &everything).is_err() {
                return Err(ApiError::forbidden(resource, name, "must have cluster-admin privileges to use the aggregationRule"));
            }
        }
        Ok(())
    }
}

/// What the escalation check reads of a Role or ClusterRole.
struct Policy<'o> {
    name: &'o str,
    rules: &'o [rbac_v1::PolicyRule],
    aggregation_rule: Option<&'o rbac_v1::AggregationRule>,
}

impl RoleStrategy {
    fn policy<'o>(&self, object: &'o Object) -> Result<Policy<'o>, ApiError> {
        let name = |meta: &'o Option<ObjectMeta>| meta.as_ref().and_then(|meta| meta.name.as_deref()).unwrap_or_default();
        Ok(match self {
            RoleStrategy::Role => {
                let role = object.typed_ref::<rbac_v1::Role>()?;
                Policy { name: name(&role.metadata), rules: &role.rules, aggregation_rule: None }
            }
            RoleStrategy::ClusterRole => {
                let role = object.typed_ref::<rbac_v1::ClusterRole>()?;
                Policy { name: name(&role.metadata), rules: &role.rules, aggregation_rule: role.aggregation_rule.as_ref() }
            }
        })
    }
}

/// Whether the authorizer allows `user` the `escalate` or `bind` verb on a role
/// (`RoleEscalationAuthorized`, `BindingAuthorized`).
pub(super) fn escalation_authorized(context: &WriteContext<'_>, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
    let info = RequestInfo {
        is_resource_request: true,
        verb: verb.into(),
        api_group: "rbac.authorization.k8s.io".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    };
    context.authorizer.authorize(&Attributes::of_request(context.user, &info)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_path_segments() {
        let invalid = |name: &str| {
            !validation::validate_object_meta(&RoleStrategy::Role, &serde_json::json!({"metadata": {"name": name}})).is_empty()
        };
        assert!(!invalid("system:admin"));
        assert!(invalid("a/b"));
    }
}
