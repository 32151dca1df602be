//! RoleBindings and ClusterRoleBindings (`pkg/registry/rbac/rolebinding`, `clusterrolebinding`):
//! names are path segments.

use kapi_api::api::rbac::v1 as rbac_v1;
use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::rbac::PolicyRule;
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, WriteContext};
use crate::registry::validation;
use crate::status::{ApiError, FieldError, GroupResource};
use crate::tables::{self, Columns};

/// Upstream's `roleBindingStrategy` and `clusterRoleBindingStrategy`: which of the two kinds
/// it serves.
pub enum RoleBindingStrategy {
    RoleBinding,
    ClusterRoleBinding,
}

impl Strategy for RoleBindingStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(match self {
            RoleBindingStrategy::RoleBinding => &tables::ROLE_BINDINGS,
            RoleBindingStrategy::ClusterRoleBinding => &tables::CLUSTER_ROLE_BINDINGS,
        })
    }

    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::PathSegment
    }

    /// A PUT to a missing RoleBinding or ClusterRoleBinding creates it (both upstream
    /// strategies allow it).
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// The rules read the generated type of the kind served.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match self {
            RoleBindingStrategy::RoleBinding => validation::rbac::role_binding(object.typed_ref::<rbac_v1::RoleBinding>()?),
            RoleBindingStrategy::ClusterRoleBinding => validation::rbac::cluster_role_binding(object.typed_ref()?),
        })
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match self {
            RoleBindingStrategy::RoleBinding => {
                validation::rbac::role_binding_update(old.typed_ref()?, new.typed_ref::<rbac_v1::RoleBinding>()?)
            }
            RoleBindingStrategy::ClusterRoleBinding => validation::rbac::cluster_role_binding_update(old.typed_ref()?, new.typed_ref()?),
        })
    }

    /// Upstream's escalation check (`pkg/registry/rbac/rolebinding/policybased`,
    /// `clusterrolebinding/policybased`): a user allowed to `bind` the role named writes the
    /// binding; anyone else only when they hold every permission of that role (a role that does
    /// not exist is NotFound). An update that keeps the roleRef passes.
    fn authorize_write(&self, context: &WriteContext<'_>, old: Option<&Object>, new: &Object) -> Result<(), ApiError> {
        let (new, old) = (self.binding(new)?, old.map(|old| self.binding(old)).transpose()?);
        // Compared as Go's values: an absent `apiGroup` is the empty one.
        let same_ref = |a: &rbac_v1::RoleRef, b: &rbac_v1::RoleRef| {
            (a.api_group.as_deref().unwrap_or_default(), &a.kind, &a.name) == (b.api_group.as_deref().unwrap_or_default(), &b.kind, &b.name)
        };
        if old.is_some_and(|(_, old_ref)| same_ref(old_ref, new.1)) {
            return Ok(());
        }
        let (name, role_ref) = new;
        let namespace = context.namespace.unwrap_or_default();
        let (kind, role) = (role_ref.kind.as_str(), role_ref.name.as_str());
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

impl RoleBindingStrategy {
    /// A RoleBinding's or ClusterRoleBinding's name and `roleRef`: what the escalation check reads.
    fn binding<'o>(&self, object: &'o Object) -> Result<(&'o str, &'o rbac_v1::RoleRef), ApiError> {
        let name = |meta: &'o Option<ObjectMeta>| meta.as_ref().and_then(|meta| meta.name.as_deref()).unwrap_or_default();
        Ok(match self {
            RoleBindingStrategy::RoleBinding => {
                let binding = object.typed_ref::<rbac_v1::RoleBinding>()?;
                (name(&binding.metadata), &binding.role_ref)
            }
            RoleBindingStrategy::ClusterRoleBinding => {
                let binding = object.typed_ref::<rbac_v1::ClusterRoleBinding>()?;
                (name(&binding.metadata), &binding.role_ref)
            }
        })
    }
}
