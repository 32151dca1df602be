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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn bindings() {
        assert_defaults::<rbac::RoleBinding>(
            json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
                {"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]}),
            json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"}, "subjects": [
                {"kind": "User", "apiGroup": GROUP, "name": "u"}, {"kind": "ServiceAccount", "apiGroup": "", "name": "s", "namespace": "n"}]}),
        );
        assert_defaults::<rbac::ClusterRoleBinding>(
            json!({"roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "Group", "name": "g"}]}),
            json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "Group", "apiGroup": GROUP, "name": "g"}]}),
        );
    }
}
