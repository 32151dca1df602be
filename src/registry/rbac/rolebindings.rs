//! RoleBindings and ClusterRoleBindings (`pkg/registry/rbac/rolebinding`, `clusterrolebinding`):
//! names are path segments.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `roleBindingStrategy` and `clusterRoleBindingStrategy`.
pub struct RoleBindingStrategy;

impl Strategy for RoleBindingStrategy {
    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::PathSegment
    }

    /// A PUT to a missing RoleBinding or ClusterRoleBinding creates it (both upstream
    /// strategies allow it).
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::rbac::binding(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::rbac::binding_update(old, new)
    }
}
