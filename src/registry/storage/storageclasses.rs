//! StorageClasses (`pkg/registry/storage/storageclass/strategy.go`): a delete answers with the
//! deleted object.

use kapi_api::hub::storage as hub;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `storageClassStrategy`.
pub struct StorageClassStrategy;

impl Strategy for StorageClassStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::STORAGE_CLASSES)
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    /// The rules read the internal object as its hub type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::storage::storage_class(object.hub_ref::<hub::StorageClass>()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::storage::storage_class_update(old.hub_ref::<hub::StorageClass>()?, new.hub_ref()?))
    }
}
