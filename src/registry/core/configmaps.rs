//! ConfigMaps (`pkg/registry/core/configmap/strategy.go`).

use crate::rbac::Attributes;
use crate::rbac::node::{self, Decision, Graph, Vertex};
use crate::registry::kubelet::KubeletRules;
use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `strategy` for config maps.
pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&ConfigMapStrategy)
    }

    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::CONFIG_MAPS)
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::config_map(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::config_map_update(old.typed_ref()?, new.typed_ref()?))
    }
}

/// A kubelet reads the config maps its pods use (the Node authorizer's `authorizeReadNamespacedObject`).
impl KubeletRules for ConfigMapStrategy {
    fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
        Some(node::read_namespaced(graph, node, Vertex::ConfigMap, a))
    }
}

#[cfg(test)]
mod kubelet_tests {
    use crate::registry::admission::Operation;
    use crate::registry::kubelet::testing::*;

    #[test]
    fn resources_without_write_rules_are_left_to_rbac() {
        let request = write(Operation::Create, target("", "configmaps", None, "default", "c"), None, None);
        admit("n1", request, None).unwrap();
        let request = write(Operation::Create, target("apps", "deployments", None, "default", "d"), None, None);
        admit("n1", request, None).unwrap();
    }
}
