//! HorizontalPodAutoscalers (`pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go`).

use kapi_api::hub::autoscaling::HorizontalPodAutoscaler;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `autoscalerStrategy`.
pub struct HorizontalPodAutoscalerStrategy;

impl Strategy for HorizontalPodAutoscalerStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::groups::HORIZONTAL_POD_AUTOSCALERS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::autoscaling::horizontal_pod_autoscaler(object.hub_ref::<HorizontalPodAutoscaler>()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::autoscaling::horizontal_pod_autoscaler_update(
            old.hub_ref::<HorizontalPodAutoscaler>()?,
            new.hub_ref::<HorizontalPodAutoscaler>()?,
        ))
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let _ = old;
        Ok(validation::autoscaling::status(new.hub_ref::<HorizontalPodAutoscaler>()?))
    }
}
