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

    /// Its template's rules read the generated type; the rest reads JSON.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::job(object.value()?, template(object)?))
    }

    fn validate_update_object(&self, old: &Value, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::batch::job_update(old, new.value()?, template(new)?))
    }
}

/// The Job's pod template as its generated type.
fn template(object: &Object) -> Result<Option<&kapi_api::api::core::v1::PodTemplateSpec>, ApiError> {
    let workload = object.typed_ref::<kapi_api::api::batch::v1::Job>()?;
    Ok(workload.spec.as_ref().map(|spec| &spec.template))
}
