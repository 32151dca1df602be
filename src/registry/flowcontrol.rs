//! The `flowcontrol.apiserver.k8s.io` group's strategies.

use crate::registry::strategy::Strategy;
use crate::tables::{self, Columns, Printer};

/// FlowSchemas and PriorityLevelConfigurations (`pkg/registry/flowcontrol/flowschema`,
/// `prioritylevelconfiguration`): the generation follows the spec; each prints with its own
/// printer.
pub struct FlowControlStrategy(&'static Printer);

pub static FLOW_SCHEMAS: FlowControlStrategy = FlowControlStrategy(&tables::groups::FLOW_SCHEMAS);
pub static PRIORITY_LEVEL_CONFIGURATIONS: FlowControlStrategy = FlowControlStrategy(&tables::groups::PRIORITY_LEVEL_CONFIGURATIONS);

impl Strategy for FlowControlStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn table(&self) -> Columns {
        Columns::Printer(self.0)
    }
}
