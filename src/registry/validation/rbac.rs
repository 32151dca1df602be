//! The rbac.authorization.k8s.io group (`pkg/apis/rbac/validation`): policy rules need verbs
//! and either resources or non-resource URLs; bindings refer to a role they cannot change.

use kapi_api::api::rbac::v1 as rbac;

use super::{FieldPath, json_value};
use crate::status::FieldError;

/// The API group a binding's role is in.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `ValidateRole`.
pub fn role(role: &rbac::Role) -> Vec<FieldError> {
    policy_rules(&role.rules, true)
}

/// `ValidateClusterRole`.
pub fn cluster_role(role: &rbac::ClusterRole) -> Vec<FieldError> {
    policy_rules(&role.rules, false)
}

fn policy_rules(rules: &[rbac::PolicyRule], namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::Root("rules");
    for (i, rule) in rules.iter().enumerate() {
        policy_rule(rule, namespaced, &path.index(i), &mut errs);
    }
    errs
}

/// `ValidatePolicyRule`.
fn policy_rule(rule: &rbac::PolicyRule, namespaced: bool, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    if rule.verbs.is_empty() {
        errs.push(FieldError::required(path.child("verbs"), "verbs must contain at least one value"));
    }
    if !rule.non_resource_urls.is_empty() {
        if namespaced {
            errs.push(FieldError::invalid(
                path.child("nonResourceURLs"),
                json_value(&rule.non_resource_urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty() || !rule.resources.is_empty() || !rule.resource_names.is_empty() {
            errs.push(FieldError::invalid(
                path.child("nonResourceURLs"),
                json_value(&rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if rule.api_groups.is_empty() {
        errs.push(FieldError::required(path.child("apiGroups"), "resource rules must supply at least one api group"));
    }
    if rule.resources.is_empty() {
        errs.push(FieldError::required(path.child("resources"), "resource rules must supply at least one resource"));
    }
}

/// `ValidateRoleBinding`.
pub fn role_binding(b: &rbac::RoleBinding) -> Vec<FieldError> {
    binding(&b.role_ref, &b.subjects, true)
}

/// `ValidateClusterRoleBinding`.
pub fn cluster_role_binding(b: &rbac::ClusterRoleBinding) -> Vec<FieldError> {
    binding(&b.role_ref, &b.subjects, false)
}

/// The rules both kinds of binding share: the role referred to, and the subjects.
fn binding(role_ref: &rbac::RoleRef, subjects: &[rbac::Subject], namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = role_ref.api_group.as_deref().unwrap_or_default();
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported("roleRef.apiGroup", group, &[RBAC_GROUP]));
    }
    let kinds: &[&str] = if namespaced { &["ClusterRole", "Role"] } else { &["ClusterRole"] };
    if !kinds.contains(&role_ref.kind.as_str()) {
        errs.push(FieldError::not_supported("roleRef.kind", role_ref.kind.as_str(), kinds));
    }
    if role_ref.name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    let path = FieldPath::Root("subjects");
    for (i, subject) in subjects.iter().enumerate() {
        let p = path.index(i);
        if subject.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        match subject.kind.as_str() {
            "ServiceAccount" => {
                if !namespaced && subject.namespace.as_deref().unwrap_or_default().is_empty() {
                    errs.push(FieldError::required(p.child("namespace"), ""));
                }
            }
            "User" | "Group" => {}
            other => errs.push(FieldError::not_supported(p.child("kind"), other, &["ServiceAccount", "User", "Group"])),
        }
    }
    errs
}

pub fn role_binding_update(old: &rbac::RoleBinding, new: &rbac::RoleBinding) -> Vec<FieldError> {
    let mut errs = role_binding(new);
    role_ref_unchanged(&old.role_ref, &new.role_ref, &mut errs);
    errs
}

pub fn cluster_role_binding_update(old: &rbac::ClusterRoleBinding, new: &rbac::ClusterRoleBinding) -> Vec<FieldError> {
    let mut errs = cluster_role_binding(new);
    role_ref_unchanged(&old.role_ref, &new.role_ref, &mut errs);
    errs
}

/// A binding's roleRef never changes. Go's `APIGroup` is a plain string: absent is empty.
fn role_ref_unchanged(old: &rbac::RoleRef, new: &rbac::RoleRef, errs: &mut Vec<FieldError>) {
    fn group(role_ref: &rbac::RoleRef) -> &str {
        role_ref.api_group.as_deref().unwrap_or_default()
    }
    if group(old) != group(new) || old.kind != new.kind || old.name != new.name {
        errs.push(FieldError::invalid("roleRef", json_value(new), "cannot change roleRef"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::{test_messages as messages, test_typed as typed};

    #[test]
    fn roles_and_bindings() {
        let r = json!({"kind": "Role", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(role(&typed(&r)).is_empty());
        assert_eq!(
            messages(&role(&typed(&json!({"kind": "Role", "rules": [{"nonResourceURLs": ["/healthz"]}]})))),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
            ]
        );
        let b = json!({"kind": "RoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}]});
        assert!(role_binding(&typed(&b)).is_empty());
        let mut changed = b.clone();
        changed["roleRef"]["name"] = json!("other");
        assert_eq!(
            messages(&role_binding_update(&typed(&b), &typed(&changed))),
            [
                "roleRef: Invalid value: {\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"other\"}: cannot change roleRef"
            ]
        );
        let crb = json!({"kind": "ClusterRoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "s"}]});
        assert_eq!(
            messages(&cluster_role_binding(&typed(&crb))),
            ["roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"", "subjects[0].namespace: Required value"]
        );
    }

    /// A cluster role may name non-resource URLs (alone); a cluster role binding may keep its
    /// roleRef, and then only its own rules apply.
    #[test]
    fn cluster_roles_and_their_bindings() {
        let urls = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
        assert!(cluster_role(&typed(&urls)).is_empty());
        let both = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}]});
        assert_eq!(
            messages(&cluster_role(&typed(&both))),
            ["rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs"]
        );
        let resources = json!({"rules": [{"verbs": ["get"]}]});
        assert_eq!(
            messages(&cluster_role(&typed(&resources))),
            [
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ]
        );
        let crb = json!({"roleRef": {"kind": "ClusterRole", "name": "c"}, "subjects": [{"kind": "Robot"}]});
        assert_eq!(
            messages(&cluster_role_binding_update(&typed(&crb), &typed(&crb))),
            [
                "roleRef.apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
                "subjects[0].name: Required value",
                "subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
    }
}
