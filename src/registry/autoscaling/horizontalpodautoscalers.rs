//! HorizontalPodAutoscalers (`pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go`).

use serde_json::Value;

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

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::autoscaling::horizontal_pod_autoscaler(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::autoscaling::horizontal_pod_autoscaler_update(old, new)
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let _ = old;
        Ok(validation::autoscaling::status(new.value()?))
    }
}
