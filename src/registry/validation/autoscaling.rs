//! The autoscaling group (`pkg/apis/autoscaling/validation`): horizontal pod autoscalers.

use serde_json::Value;

use super::{child, str_of};
use crate::status::FieldError;

pub fn horizontal_pod_autoscaler(hpa: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &hpa["spec"];
    let min = spec["minReplicas"].as_i64();
    if let Some(min) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid("spec.minReplicas", min, "must be greater than or equal to 1"));
    }
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if max < 1 {
        errs.push(FieldError::invalid("spec.maxReplicas", max, "must be greater than 0"));
    }
    if min.is_some_and(|min| max < min) {
        errs.push(FieldError::invalid("spec.maxReplicas", max, "must be greater than or equal to `minReplicas`"));
    }
    let target = &spec["scaleTargetRef"];
    for field in ["kind", "name"] {
        let value = str_of(&target[field]);
        let path = child("spec.scaleTargetRef", field);
        if value.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else {
            for m in super::path_segment_errors(value) {
                errs.push(FieldError::invalid(&path, value, m));
            }
        }
    }
    if let Some(percent) = spec["targetCPUUtilizationPercentage"].as_i64().filter(|p| *p < 1) {
        errs.push(FieldError::invalid("spec.targetCPUUtilizationPercentage", percent, "must be greater than 0"));
    }
    errs
}

pub fn horizontal_pod_autoscaler_update(_old: &Value, new: &Value) -> Vec<FieldError> {
    horizontal_pod_autoscaler(new)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn horizontal_pod_autoscalers() {
        let hpa = json!({"spec": {"minReplicas": 1, "maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}});
        assert!(horizontal_pod_autoscaler(&hpa).is_empty());
        let errs: Vec<String> = horizontal_pod_autoscaler(&json!({"spec": {"minReplicas": 3, "maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`", "spec.scaleTargetRef.name: Required value"]
        );
    }
}
