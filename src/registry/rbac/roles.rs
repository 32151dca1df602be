//! Roles and ClusterRoles (`pkg/registry/rbac/role`, `clusterrole`): names are path segments.

use kapi_api::api::rbac::v1 as rbac_v1;
use serde_json::Value;

use crate::rbac::{Attributes, PolicyRule};
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, WriteContext};
use crate::registry::validation;
use crate::request_info::RequestInfo;
use crate::status::{ApiError, FieldError, GroupResource};

/// Upstream's `roleStrategy` and `clusterRoleStrategy`.
pub struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::PathSegment
    }

    /// A PUT to a missing Role or ClusterRole creates it (both upstream strategies allow it).
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// The rules read the generated type, a Role's or a ClusterRole's: the object's own type
    /// says which kind this strategy is serving.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match object.typed_ref::<rbac_v1::Role>() {
            Ok(role) => validation::rbac::role(role),
            Err(_) => validation::rbac::cluster_role(object.typed_ref()?),
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
    fn authorize_write(&self, context: &WriteContext<'_>, old: Option<&Value>, new: &Object) -> Result<(), ApiError> {
        let new = new.value()?;
        if old.is_some_and(|old| old["rules"] == new["rules"] && old["aggregationRule"] == new["aggregationRule"]) {
            return Ok(());
        }
        let name = new["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = context.namespace.unwrap_or_default();
        if escalation_authorized(context, "escalate", context.resource, namespace, name) {
            return Ok(());
        }
        let resource = GroupResource::new(context.group, context.resource);
        let policy = context.authorizer.policy();
        crate::rbac::confirm_no_escalation(&policy, context.user, namespace, &PolicyRule::of_role(new))
            .map_err(|message| ApiError::forbidden(resource, name, message))?;
        if new["aggregationRule"].is_object() {
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
        let invalid =
            |name: &str| !validation::validate_object_meta(&RoleStrategy, &serde_json::json!({"metadata": {"name": name}})).is_empty();
        assert!(!invalid("system:admin"));
        assert!(invalid("a/b"));
    }
}
