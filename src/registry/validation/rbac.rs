//! The rbac.authorization.k8s.io group (`pkg/apis/rbac/validation`): policy rules need verbs
//! and either resources or non-resource URLs; bindings refer to a role they cannot change.

use serde_json::Value;

use super::{child, index, items, json_value, str_of};
use crate::status::FieldError;

/// Roles and cluster roles (`ValidateRole`, `ValidateClusterRole`).
pub fn role(role: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespaced = role["kind"] == "Role";
    for (i, rule) in items(&role["rules"]).iter().enumerate() {
        policy_rule(rule, namespaced, &index("rules", i), &mut errs);
    }
    errs
}

/// `ValidatePolicyRule`.
fn policy_rule(rule: &Value, namespaced: bool, path: &str, errs: &mut Vec<FieldError>) {
    let has = |k: &str| !items(&rule[k]).is_empty();
    if !has("verbs") {
        errs.push(FieldError::required(child(path, "verbs"), "verbs must contain at least one value"));
    }
    if has("nonResourceURLs") {
        if namespaced {
            errs.push(FieldError::invalid(
                child(path, "nonResourceURLs"),
                json_value(&rule["nonResourceURLs"]),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if has("apiGroups") || has("resources") || has("resourceNames") {
            errs.push(FieldError::invalid(
                child(path, "nonResourceURLs"),
                json_value(&rule["nonResourceURLs"]),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if !has("apiGroups") {
        errs.push(FieldError::required(child(path, "apiGroups"), "resource rules must supply at least one api group"));
    }
    if !has("resources") {
        errs.push(FieldError::required(child(path, "resources"), "resource rules must supply at least one resource"));
    }
}

/// Role bindings and cluster role bindings (`ValidateRoleBinding`, `ValidateClusterRoleBinding`).
pub fn binding(b: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespaced = b["kind"] == "RoleBinding";
    let role_ref = &b["roleRef"];
    let group = str_of(&role_ref["apiGroup"]);
    if group != "rbac.authorization.k8s.io" {
        errs.push(FieldError::not_supported("roleRef.apiGroup", group, &["rbac.authorization.k8s.io"]));
    }
    let kinds: &[&str] = if namespaced { &["ClusterRole", "Role"] } else { &["ClusterRole"] };
    let kind = str_of(&role_ref["kind"]);
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    if str_of(&role_ref["name"]).is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    for (i, subject) in items(&b["subjects"]).iter().enumerate() {
        let p = index("subjects", i);
        if str_of(&subject["name"]).is_empty() {
            errs.push(FieldError::required(child(&p, "name"), ""));
        }
        match str_of(&subject["kind"]) {
            "ServiceAccount" => {
                if !namespaced && str_of(&subject["namespace"]).is_empty() {
                    errs.push(FieldError::required(child(&p, "namespace"), ""));
                }
            }
            "User" | "Group" => {}
            other => errs.push(FieldError::not_supported(child(&p, "kind"), other, &["ServiceAccount", "User", "Group"])),
        }
    }
    errs
}

pub fn binding_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = binding(new);
    if old["roleRef"] != new["roleRef"] {
        errs.push(FieldError::invalid("roleRef", json_value(&new["roleRef"]), "cannot change roleRef"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::test_messages as messages;

    #[test]
    fn roles_and_bindings() {
        let r = json!({"kind": "Role", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(role(&r).is_empty());
        assert_eq!(
            messages(&role(&json!({"kind": "Role", "rules": [{"nonResourceURLs": ["/healthz"]}]}))),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
            ]
        );
        let b = json!({"kind": "RoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}]});
        assert!(binding(&b).is_empty());
        let mut changed = b.clone();
        changed["roleRef"]["name"] = json!("other");
        assert_eq!(
            messages(&binding_update(&b, &changed)),
            [
                "roleRef: Invalid value: {\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"other\"}: cannot change roleRef"
            ]
        );
        let crb = json!({"kind": "ClusterRoleBinding", "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "s"}]});
        assert_eq!(
            messages(&binding(&crb)),
            ["roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"", "subjects[0].namespace: Required value"]
        );
    }
}
