//! RuntimeClasses (`pkg/registry/node/runtimeclass`): generic but for a PUT, which creates one.

use crate::registry::strategy::Strategy;

/// Upstream's runtime class `strategy`.
pub struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::RUNTIME_CLASSES)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}
