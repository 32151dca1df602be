//! CronJobs (`pkg/registry/batch/cronjob/strategy.go`).

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `cronJobStrategy`.
pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::CRON_JOBS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::cron_job(object.typed_ref()?))
    }

    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::cron_job(new.typed_ref()?))
    }
}
