//! CustomResourceDefinitions (`apiextensions-apiserver/pkg/registry/customresourcedefinition`).

use crate::registry::strategy::Strategy;

/// Upstream's `strategy` of the apiextensions server: the generation follows the spec.
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }
}
