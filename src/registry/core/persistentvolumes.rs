//! PersistentVolumes (`pkg/registry/core/persistentvolume/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;

/// Upstream's `persistentvolumeStrategy`.
pub struct PersistentVolumeStrategy;

impl Strategy for PersistentVolumeStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PERSISTENT_VOLUMES)
    }

    /// A new volume is `Pending` (upstream's defaulting of the cleared status on read).
    fn prepare_for_create(&self, object: &mut Value, _user: Option<&crate::request_info::UserInfo>) {
        object["status"]["phase"] = Value::String("Pending".into());
    }
}
