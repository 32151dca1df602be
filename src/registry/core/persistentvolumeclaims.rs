//! PersistentVolumeClaims (`pkg/registry/core/persistentvolumeclaim/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `persistentvolumeclaimStrategy`.
pub struct PersistentVolumeClaimStrategy;

impl Strategy for PersistentVolumeClaimStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PERSISTENT_VOLUME_CLAIMS)
    }

    /// A new claim is `Pending` (upstream's defaulting of the cleared status on read).
    fn prepare_for_create(&self, object: &mut Value, _user: Option<&crate::request_info::UserInfo>) {
        object["status"]["phase"] = Value::String("Pending".into());
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::core::persistent_volume_claim(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::core::persistent_volume_claim_update(old, new)
    }
}
