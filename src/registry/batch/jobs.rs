//! Jobs (`pkg/registry/batch/job/strategy.go`): a new job gets its generated selector.

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `jobStrategy`.
pub struct JobStrategy;

impl Strategy for JobStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::JOBS)
    }

    fn prepare_for_create(&self, object: &mut Object, _user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        crate::registry::defaults::batch::generate_job_selector(object.typed_mut()?);
        Ok(())
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::job(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::job_update(old.typed_ref()?, new.typed_ref()?))
    }
}
