//! Roles and ClusterRoles (`pkg/registry/rbac/role`, `clusterrole`): names are path segments.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

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

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::rbac::role(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        validation::rbac::role(new)
    }
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
