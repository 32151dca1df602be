//! The `flowcontrol.apiserver.k8s.io` group's strategies.

use crate::registry::strategy::Strategy;

/// FlowSchemas and PriorityLevelConfigurations (`pkg/registry/flowcontrol/flowschema`,
/// `prioritylevelconfiguration`): the generation follows the spec.
pub struct FlowControlStrategy;

impl Strategy for FlowControlStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }
}
