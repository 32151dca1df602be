//! Jobs (`pkg/registry/batch/job/strategy.go`): a new job gets its generated selector.

use serde_json::Value;

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

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::batch::job(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::batch::job_update(old, new)
    }
}
