//! CronJobs (`pkg/registry/batch/cronjob/strategy.go`).

use serde_json::Value;

use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::FieldError;

/// Upstream's `cronJobStrategy`.
pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::CRON_JOBS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::batch::cron_job(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::batch::cron_job_update(old, new)
    }
}
