//! StorageClasses (`pkg/registry/storage/storageclass/strategy.go`): a delete answers with the
//! deleted object.

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `storageClassStrategy`.
pub struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::STORAGE_CLASSES)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::storage::storage_class(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::storage::storage_class_update(old, new)
    }
}
