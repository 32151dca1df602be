//! CSINodes (`pkg/registry/storage/csinode`): generic but for its printer, and a kubelet
//! writes only its own (NodeRestriction's `admitCSINode`).

use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, forbid};
use crate::registry::strategy::Strategy;
use crate::tables::{Columns, groups::CSI_NODES};

/// Upstream's `csiNodeStrategy`.
pub struct CsiNodeStrategy;

impl Strategy for CsiNodeStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&CSI_NODES)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&CsiNodeStrategy)
    }
}

impl KubeletRules for CsiNodeStrategy {
    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.own_name() != node {
            return forbid("can only access CSINode with the same name as the requesting node".into());
        }
        Ok(())
    }
}
