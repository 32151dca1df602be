//! RoleBindings and ClusterRoleBindings (`pkg/registry/rbac/rolebinding`, `clusterrolebinding`):
//! names are path segments.

use kapi_api::api::rbac::v1 as rbac_v1;
use serde_json::Value;

use crate::rbac::PolicyRule;
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, WriteContext};
use crate::registry::validation;
use crate::status::{ApiError, FieldError, GroupResource};
use crate::tables::{self, Columns, Printer};

/// Upstream's `roleBindingStrategy` and `clusterRoleBindingStrategy`, with the printer of each.
pub struct RoleBindingStrategy(&'static Printer);

pub static ROLE_BINDINGS: RoleBindingStrategy = RoleBindingStrategy(&tables::ROLE_BINDINGS);
pub static CLUSTER_ROLE_BINDINGS: RoleBindingStrategy = RoleBindingStrategy(&tables::CLUSTER_ROLE_BINDINGS);

impl Strategy for RoleBindingStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(self.0)
    }

    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::PathSegment
    }

    /// A PUT to a missing RoleBinding or ClusterRoleBinding creates it (both upstream
    /// strategies allow it).
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// The rules read the generated type, a RoleBinding's or a ClusterRoleBinding's: the
    /// object's own type says which kind this strategy is serving.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match object.typed_ref::<rbac_v1::RoleBinding>() {
            Ok(binding) => validation::rbac::role_binding(binding),
            Err(_) => validation::rbac::cluster_role_binding(object.typed_ref()?),
        })
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match new.typed_ref::<rbac_v1::RoleBinding>() {
            Ok(new) => validation::rbac::role_binding_update(old.typed_ref()?, new),
            Err(_) => validation::rbac::cluster_role_binding_update(old.typed_ref()?, new.typed_ref()?),
        })
    }

    /// Upstream's escalation check (`pkg/registry/rbac/rolebinding/policybased`,
    /// `clusterrolebinding/policybased`): a user allowed to `bind` the role named writes the
    /// binding; anyone else only when they hold every permission of that role (a role that does
    /// not exist is NotFound). An update that keeps the roleRef passes.
    fn authorize_write(&self, context: &WriteContext<'_>, old: Option<&Value>, new: &Object) -> Result<(), ApiError> {
        let new = new.value()?;
        if old.is_some_and(|old| old["roleRef"] == new["roleRef"]) {
            return Ok(());
        }
        let name = new["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = context.namespace.unwrap_or_default();
        let (kind, role) = (new["roleRef"]["kind"].as_str().unwrap_or_default(), new["roleRef"]["name"].as_str().unwrap_or_default());
        let role_resource = if kind == "Role" { "roles" } else { "clusterroles" };
        if super::roles::escalation_authorized(context, "bind", role_resource, namespace, role) {
            return Ok(());
        }
        let policy = context.authorizer.policy();
        let rules = match kind {
            "Role" => policy.roles.get(namespace).and_then(|roles| roles.get(role)),
            _ => policy.cluster_roles.get(role),
        }
        .ok_or_else(|| ApiError::not_found(GroupResource::new("rbac.authorization.k8s.io", role_resource), role))?;
        let rules: Vec<PolicyRule> = rules.as_ref().clone();
        crate::rbac::confirm_no_escalation(&policy, context.user, namespace, &rules)
            .map_err(|message| ApiError::forbidden(GroupResource::new(context.group, context.resource), name, message))
    }
}
