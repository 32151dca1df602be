//! `rbac.authorization.k8s.io/v1` (upstream `pkg/apis/rbac/v1/defaults.go`).

use kapi_api::api::rbac::v1 as rbac;

use super::Registry;

const GROUP: &str = "rbac.authorization.k8s.io";

pub fn register(r: &mut Registry) {
    r.add(set_defaults_cluster_role_binding);
    r.add(set_defaults_role_binding);
    r.add(set_defaults_subject);
}

/// A role reference without an API group refers to an RBAC role.
pub fn set_defaults_cluster_role_binding(b: &mut rbac::ClusterRoleBinding) {
    if b.role_ref.api_group.as_deref().is_none_or(str::is_empty) {
        b.role_ref.api_group = Some(GROUP.into());
    }
}

pub fn set_defaults_role_binding(b: &mut rbac::RoleBinding) {
    if b.role_ref.api_group.as_deref().is_none_or(str::is_empty) {
        b.role_ref.api_group = Some(GROUP.into());
    }
}

/// Users and groups are RBAC subjects; service accounts belong to the core group (`""`).
pub fn set_defaults_subject(s: &mut rbac::Subject) {
    if s.api_group.as_deref().is_none_or(str::is_empty) {
        match s.kind.as_str() {
            "ServiceAccount" => s.api_group = Some(String::new()),
            "User" | "Group" => s.api_group = Some(GROUP.into()),
            _ => {}
        }
    }
}
