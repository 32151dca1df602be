//! CronJobs (`pkg/registry/batch/cronjob/strategy.go`).

use serde_json::Value;

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

    /// Its template's rules read the generated type; the rest reads JSON.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::cron_job(object.value()?, template(object)?))
    }

    fn validate_update_object(&self, _old: &Value, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::cron_job(new.value()?, template(new)?))
    }
}

/// The CronJob's pod template as its generated type.
fn template(object: &Object) -> Result<Option<&kapi_api::api::core::v1::PodTemplateSpec>, ApiError> {
    let workload = object.typed_ref::<kapi_api::api::batch::v1::CronJob>()?;
    Ok(workload.spec.job_template.spec.as_ref().map(|spec| &spec.template))
}
