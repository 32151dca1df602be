//! The autoscaling group (`pkg/apis/autoscaling/validation`): horizontal pod autoscalers.
//!
//! The rules read the internal object (the hub, shaped as `autoscaling/v2`), so a v1 object is
//! checked after its conversion: its `targetCPUUtilizationPercentage` is then
//! `spec.metrics[0].resource.target.averageUtilization`, the path upstream reports.

use std::cmp::Ordering;

use kapi_apimachinery::Quantity;
use serde_json::Value;

use super::{child, index, items, non_negative, str_of};
use crate::status::FieldError;

/// `MaxPeriodSeconds`: the longest scaling policy period.
const MAX_PERIOD_SECONDS: i64 = 1800;
/// `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;

pub fn horizontal_pod_autoscaler(hpa: &Value) -> Vec<FieldError> {
    spec(&hpa["spec"], 1)
}

/// Updates may keep a `minReplicas` of 0 the stored object already has (upstream's
/// `HPAScaleToZero` allowance for existing objects; the gate is off by default).
pub fn horizontal_pod_autoscaler_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let lower_bound = if old["spec"]["minReplicas"].as_i64() == Some(0) { 0 } else { 1 };
    spec(&new["spec"], lower_bound)
}

/// `ValidateHorizontalPodAutoscalerStatusUpdate`.
pub fn status(hpa: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    non_negative(&hpa["status"]["currentReplicas"], "status.currentReplicas", &mut errs);
    non_negative(&hpa["status"]["desiredReplicas"], "status.desiredReplicas", &mut errs);
    errs
}

fn spec(spec: &Value, min_replicas_lower_bound: i64) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let min = spec["minReplicas"].as_i64();
    if let Some(min) = min.filter(|m| *m < min_replicas_lower_bound) {
        errs.push(FieldError::invalid("spec.minReplicas", min, format!("must be greater than or equal to {min_replicas_lower_bound}")));
    }
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if max < 1 {
        errs.push(FieldError::invalid("spec.maxReplicas", max, "must be greater than 0"));
    }
    if min.is_some_and(|min| max < min) {
        errs.push(FieldError::invalid("spec.maxReplicas", max, "must be greater than or equal to `minReplicas`"));
    }
    object_reference(&spec["scaleTargetRef"], "spec.scaleTargetRef", &mut errs);
    metrics(&spec["metrics"], min, &mut errs);
    for direction in ["scaleUp", "scaleDown"] {
        let rules = &spec["behavior"][direction];
        if !rules.is_null() {
            scaling_rules(rules, &child("spec.behavior", direction), &mut errs);
        }
    }
    errs
}

/// `ValidateCrossVersionObjectReference`.
fn object_reference(target: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for field in ["kind", "name"] {
        let value = str_of(&target[field]);
        let path = child(path, field);
        if value.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else {
            for m in super::path_segment_errors(value) {
                errs.push(FieldError::invalid(&path, value, m));
            }
        }
    }
}

/// The metric source types and the field each one fills.
const METRIC_SOURCES: [(&str, &str); 5] = [
    ("Object", "object"),
    ("Pods", "pods"),
    ("Resource", "resource"),
    ("ContainerResource", "containerResource"),
    ("External", "external"),
];

fn metrics(metrics: &Value, min_replicas: Option<i64>, errs: &mut Vec<FieldError>) {
    for (i, metric) in items(metrics).iter().enumerate() {
        metric_spec(metric, &index("spec.metrics", i), errs);
    }
    let scales_to_zero_on = |t: &str| items(metrics).iter().any(|m| str_of(&m["type"]) == t);
    if min_replicas == Some(0) && !scales_to_zero_on("Object") && !scales_to_zero_on("External") {
        errs.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
}

fn metric_spec(metric: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let mut valid: Vec<&str> = METRIC_SOURCES.iter().map(|(t, _)| *t).collect();
    valid.sort_unstable();
    let kind = str_of(&metric["type"]);
    if kind.is_empty() {
        errs.push(FieldError::required(child(path, "type"), "must specify a metric source type"));
    }
    if !valid.contains(&kind) {
        errs.push(FieldError::not_supported(child(path, "type"), kind, &valid));
    }
    // The first source present is validated; more than one is an error on the others.
    let present: Vec<&str> =
        ["object", "external", "pods", "resource", "containerResource"].into_iter().filter(|f| !metric[*f].is_null()).collect();
    if let Some(first) = present.first() {
        let source = &metric[*first];
        let p = child(path, first);
        match *first {
            "object" => {
                object_reference(&source["describedObject"], &child(&p, "describedObject"), errs);
                metric_identifier(&source["metric"], &child(&p, "metric"), errs);
                metric_target(&source["target"], &child(&p, "target"), errs);
                if source["target"]["value"].is_null() && source["target"]["averageValue"].is_null() {
                    errs.push(FieldError::required(child(&p, "target.averageValue"), "must set either a target value or averageValue"));
                }
            }
            "external" => {
                metric_identifier(&source["metric"], &child(&p, "metric"), errs);
                metric_target(&source["target"], &child(&p, "target"), errs);
                exactly_one_target(
                    &source["target"],
                    &child(&p, "target"),
                    ["value", "averageValue"],
                    ("averageValue", "must set either a target value for metric or a per-pod target"),
                    ("value", "may not set both a target value for metric and a per-pod target"),
                    errs,
                );
            }
            "pods" => {
                metric_identifier(&source["metric"], &child(&p, "metric"), errs);
                metric_target(&source["target"], &child(&p, "target"), errs);
                if source["target"]["averageValue"].is_null() {
                    errs.push(FieldError::required(child(&p, "target.averageValue"), "must specify a positive target averageValue"));
                }
            }
            _ => {
                if str_of(&source["name"]).is_empty() {
                    errs.push(FieldError::required(child(&p, "name"), "must specify a resource name"));
                }
                if *first == "containerResource" {
                    let container = str_of(&source["container"]);
                    if container.is_empty() {
                        errs.push(FieldError::required(child(&p, "container"), "must specify a container"));
                    } else {
                        super::dns_label(container, &child(&p, "container"), errs);
                    }
                }
                metric_target(&source["target"], &child(&p, "target"), errs);
                exactly_one_target(
                    &source["target"],
                    &child(&p, "target"),
                    ["averageUtilization", "averageValue"],
                    ("averageUtilization", "must set either a target raw value or a target utilization"),
                    ("averageValue", "may not set both a target raw value and a target utilization"),
                    errs,
                );
            }
        }
    }
    let expected = METRIC_SOURCES.iter().find(|(t, _)| *t == kind).map(|(_, f)| *f);
    // (An unknown type is reported once above; upstream reports it twice and its error list
    // drops the duplicate.)
    if let Some(field) = expected.filter(|f| metric[*f].is_null()) {
        errs.push(FieldError::required(child(path, field), "must populate information for the given metric source"));
    }
    if present.len() > 1 {
        for other in present.iter().filter(|f| Some(**f) != expected) {
            errs.push(FieldError::forbidden(child(path, other), "must populate the given metric source only"));
        }
    }
}

/// One of a target's two `fields` must be set and not both: `required` and `both` are the field
/// and message of each error, which upstream words per metric source.
fn exactly_one_target(
    target: &Value,
    path: &str,
    fields: [&str; 2],
    required: (&str, &str),
    both: (&str, &str),
    errs: &mut Vec<FieldError>,
) {
    match fields.map(|f| !target[f].is_null()) {
        [false, false] => errs.push(FieldError::required(child(path, required.0), required.1)),
        [true, true] => errs.push(FieldError::forbidden(child(path, both.0), both.1)),
        _ => {}
    }
}

/// `validateMetricTarget`.
fn metric_target(target: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let kind = str_of(&target["type"]);
    if kind.is_empty() {
        errs.push(FieldError::required(child(path, "type"), "must specify a metric target type"));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&kind) {
        errs.push(FieldError::invalid(child(path, "type"), kind, "must be either Utilization, Value, or AverageValue"));
    }
    for field in ["value", "averageValue"] {
        if let Some(q) = target[field].as_str()
            && Quantity::parse(q).map_or(true, |q| q.signum() != Ordering::Greater)
        {
            errs.push(FieldError::invalid(child(path, field), q, "must be positive"));
        }
    }
    if let Some(u) = target["averageUtilization"].as_i64().filter(|u| *u < 1) {
        errs.push(FieldError::invalid(child(path, "averageUtilization"), u, "must be greater than 0"));
    }
}

/// `validateMetricIdentifier`.
fn metric_identifier(id: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let name = str_of(&id["name"]);
    if name.is_empty() {
        errs.push(FieldError::required(child(path, "name"), "must specify a metric name"));
    } else {
        for m in super::path_segment_errors(name) {
            errs.push(FieldError::invalid(child(path, "name"), name, m));
        }
    }
}

/// `validateScalingRules`.
fn scaling_rules(rules: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(window) = rules["stabilizationWindowSeconds"].as_i64() {
        let p = child(path, "stabilizationWindowSeconds");
        if window < 0 {
            errs.push(FieldError::invalid(&p, window, "must be greater than or equal to zero"));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(FieldError::invalid(&p, window, format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}")));
        }
    }
    if let Some(policy) = rules["selectPolicy"].as_str()
        && !["Disabled", "Max", "Min"].contains(&policy)
    {
        errs.push(FieldError::not_supported(child(path, "selectPolicy"), policy, &["Disabled", "Max", "Min"]));
    }
    let policies = child(path, "policies");
    if items(&rules["policies"]).is_empty() {
        errs.push(FieldError::required(&policies, "must specify at least one Policy"));
    }
    for (i, policy) in items(&rules["policies"]).iter().enumerate() {
        let p = index(&policies, i);
        let kind = str_of(&policy["type"]);
        if kind != "Pods" && kind != "Percent" {
            errs.push(FieldError::not_supported(child(&p, "type"), kind, &["Percent", "Pods"]));
        }
        let value = policy["value"].as_i64().unwrap_or(0);
        if value <= 0 {
            errs.push(FieldError::invalid(child(&p, "value"), value, "must be greater than zero"));
        }
        let period = policy["periodSeconds"].as_i64().unwrap_or(0);
        if period <= 0 {
            errs.push(FieldError::invalid(child(&p, "periodSeconds"), period, "must be greater than zero"));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(FieldError::invalid(
                child(&p, "periodSeconds"),
                period,
                format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn horizontal_pod_autoscalers() {
        let hpa = json!({"spec": {"minReplicas": 1, "maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
        assert!(horizontal_pod_autoscaler(&hpa).is_empty());
        let errs: Vec<String> =
            horizontal_pod_autoscaler(&json!({"spec": {"minReplicas": 3, "maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}}))
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(
            errs,
            [
                "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
                "spec.scaleTargetRef.name: Required value"
            ]
        );
    }
}
