//! ResourceSlices (`pkg/registry/resource/resourceslice`): generic but for its printer, and a
//! kubelet creates and deletes only the slices of its own node (NodeRestriction's
//! `admitResourceSlice`).

use crate::registry::admission::Operation;
use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, Wanted, forbid, str_at};
use crate::registry::strategy::Strategy;
use crate::tables::{Columns, groups::RESOURCE_SLICES};

/// Upstream's `resourceSliceStrategy`.
pub struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    fn table(&self) -> Columns {
        Columns::Printer(&RESOURCE_SLICES)
    }

    fn kubelet(&self) -> Option<&'static dyn KubeletRules> {
        Some(&ResourceSliceStrategy)
    }
}

impl KubeletRules for ResourceSliceStrategy {
    /// A delete without the stored slice at hand reads it.
    fn needs(&self, _node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
        (write.operation == Operation::Delete && write.old.is_none()).then(|| Wanted {
            group: "resource.k8s.io",
            resource: "resourceslices",
            namespace: None,
            name: write.target.name.to_owned(),
        })
    }

    fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        match write.operation {
            Operation::Create if str_at(write.object, "/spec/nodeName") != node => {
                forbid("can only create ResourceSlice with the same NodeName as the requesting node".into())
            }
            Operation::Delete => {
                let slice = match write.old {
                    Some(old) => old,
                    None => write.stored()?,
                };
                if str_at(Some(slice), "/spec/nodeName") != node {
                    return forbid("can only delete ResourceSlice with the same NodeName as the requesting node".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
