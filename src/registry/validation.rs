//! Object metadata validation as upstream's `ValidateObjectMeta`: names by the resource's rule,
//! label keys and values, annotation keys and total size. Errors are field errors; the REST
//! layer answers them with a 422 `Invalid`.

use serde_json::Value;

use crate::selectors::{dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_key_errors, label_value_errors};
use crate::status::FieldError;

/// How a resource's object names are validated (upstream's per-resource `ValidateName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `IsDNS1123Subdomain`: most resources.
    Subdomain,
    /// `IsDNS1123Label`: namespaces.
    Label,
    /// `IsDNS1035Label`: services.
    Dns1035Label,
    /// `ValidatePathSegmentName`: anything but `.`, `..`, and `/` or `%` inside (RBAC, for one).
    PathSegment,
}

/// The name rule of a resource.
pub fn name_rule(group: &str, resource: &str) -> NameRule {
    match (group, resource) {
        ("", "namespaces") => NameRule::Label,
        ("", "services") => NameRule::Dns1035Label,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::Subdomain,
    }
}

fn name_errors(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => dns1123_subdomain_errors(name),
        NameRule::Label => dns1123_label_errors(name),
        NameRule::Dns1035Label => dns1035_label_errors(name),
        NameRule::PathSegment => {
            if name == "." || name == ".." {
                vec![format!("may not be '{name}'")]
            } else {
                ["/", "%"].iter().filter(|bad| name.contains(*bad)).map(|bad| format!("may not contain '{bad}'")).collect()
            }
        }
    }
}

/// The most bytes all annotations of an object may take (keys and values).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Validates an object's metadata for create (name given or generated).
pub fn validate_object_meta(group: &str, resource: &str, object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = &object["metadata"];
    if let Some(name) = meta["name"].as_str() {
        for e in name_errors(name_rule(group, resource), name) {
            errs.push(FieldError::invalid("metadata.name", name, e));
        }
    }
    if let Some(labels) = meta["labels"].as_object() {
        for (key, value) in labels {
            for e in label_key_errors(key) {
                errs.push(FieldError::invalid("metadata.labels", key.as_str(), e));
            }
            let value = value.as_str().unwrap_or_default();
            for e in label_value_errors(value) {
                errs.push(FieldError::invalid("metadata.labels", value, e));
            }
        }
    }
    if let Some(annotations) = meta["annotations"].as_object() {
        let mut total = 0;
        for (key, value) in annotations {
            for e in label_key_errors(&key.to_lowercase()) {
                errs.push(FieldError::invalid("metadata.annotations", key.as_str(), e));
            }
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errs.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT as i64));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_each_resources_rule() {
        let invalid = |g: &str, r: &str, name: &str| {
            !validate_object_meta(g, r, &serde_json::json!({"metadata": {"name": name}})).is_empty()
        };
        assert!(!invalid("", "configmaps", "a.b-c"));
        assert!(invalid("", "configmaps", "Bad_Name"));
        assert!(invalid("", "namespaces", "a.b"));
        assert!(invalid("", "services", "1abc"));
        assert!(!invalid("", "services", "abc-1"));
        assert!(!invalid("rbac.authorization.k8s.io", "clusterroles", "system:admin"));
        assert!(invalid("rbac.authorization.k8s.io", "clusterroles", "a/b"));
        let errs = validate_object_meta("", "pods", &serde_json::json!({"metadata": {"name": "ok", "labels": {"bad key!": "v"}}}));
        assert_eq!(errs.len(), 1);
    }
}
