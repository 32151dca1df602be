//! The autoscaling group (`pkg/apis/autoscaling/validation`): horizontal pod autoscalers.
//!
//! The rules read the internal object as its hub type (shaped as `autoscaling/v2`), so a v1
//! object is checked after its conversion: its `targetCPUUtilizationPercentage` is then
//! `spec.metrics[0].resource.target.averageUtilization`, the path upstream reports.

use std::cmp::Ordering;

use kapi_api::hub::autoscaling as hub;

use super::{FieldPath, non_negative_int};
use crate::status::FieldError;

/// `MaxPeriodSeconds`: the longest scaling policy period.
const MAX_PERIOD_SECONDS: i32 = 1800;
/// `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i32 = 3600;

pub fn horizontal_pod_autoscaler(hpa: &hub::HorizontalPodAutoscaler) -> Vec<FieldError> {
    spec(&hpa.spec, 1)
}

/// Updates may keep a `minReplicas` of 0 the stored object already has (upstream's
/// `HPAScaleToZero` allowance for existing objects; the gate is off by default).
pub fn horizontal_pod_autoscaler_update(old: &hub::HorizontalPodAutoscaler, new: &hub::HorizontalPodAutoscaler) -> Vec<FieldError> {
    let lower_bound = if old.spec.min_replicas == Some(0) { 0 } else { 1 };
    spec(&new.spec, lower_bound)
}

/// `ValidateHorizontalPodAutoscalerStatusUpdate`.
pub fn status(hpa: &hub::HorizontalPodAutoscaler) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let status = hpa.status.as_ref();
    non_negative_int(status.and_then(|s| s.current_replicas).map(i64::from), "status.currentReplicas", &mut errs);
    non_negative_int(status.map(|s| i64::from(s.desired_replicas)), "status.desiredReplicas", &mut errs);
    errs
}

fn spec(spec: &hub::HorizontalPodAutoscalerSpec, min_replicas_lower_bound: i32) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let at = FieldPath::Root("spec");
    let min = spec.min_replicas;
    if let Some(min) = min.filter(|m| *m < min_replicas_lower_bound) {
        errs.push(FieldError::invalid(
            at.child("minReplicas"),
            min,
            format!("must be greater than or equal to {min_replicas_lower_bound}"),
        ));
    }
    let max = spec.max_replicas;
    if max < 1 {
        errs.push(FieldError::invalid(at.child("maxReplicas"), max, "must be greater than 0"));
    }
    if min.is_some_and(|min| max < min) {
        errs.push(FieldError::invalid(at.child("maxReplicas"), max, "must be greater than or equal to `minReplicas`"));
    }
    object_reference(&spec.scale_target_ref, &at.child("scaleTargetRef"), &mut errs);
    metrics(&spec.metrics, min, &at.child("metrics"), &mut errs);
    let behavior = spec.behavior.as_ref();
    let behavior_path = at.child("behavior");
    for (direction, rules) in
        [("scaleUp", behavior.and_then(|b| b.scale_up.as_ref())), ("scaleDown", behavior.and_then(|b| b.scale_down.as_ref()))]
    {
        if let Some(rules) = rules {
            scaling_rules(rules, &behavior_path.child(direction), &mut errs);
        }
    }
    errs
}

/// `ValidateCrossVersionObjectReference`.
fn object_reference(target: &hub::CrossVersionObjectReference, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    for (field, value) in [("kind", &target.kind), ("name", &target.name)] {
        let path = path.child(field);
        if value.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else {
            for m in super::path_segment_errors(value) {
                errs.push(FieldError::invalid(path, value.as_str(), m));
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

fn metrics(metrics: &[hub::MetricSpec], min_replicas: Option<i32>, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    for (i, metric) in metrics.iter().enumerate() {
        metric_spec(metric, &path.index(i), errs);
    }
    let scales_to_zero_on = |t: &str| metrics.iter().any(|m| m.r#type == t);
    if min_replicas == Some(0) && !scales_to_zero_on("Object") && !scales_to_zero_on("External") {
        errs.push(FieldError::forbidden(path, "must specify at least one Object or External metric to support scaling to zero replicas"));
    }
}

fn metric_spec(metric: &hub::MetricSpec, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let mut valid: Vec<&str> = METRIC_SOURCES.iter().map(|(t, _)| *t).collect();
    valid.sort_unstable();
    let kind = metric.r#type.as_str();
    if kind.is_empty() {
        errs.push(FieldError::required(path.child("type"), "must specify a metric source type"));
    }
    if !valid.contains(&kind) {
        errs.push(FieldError::not_supported(path.child("type"), kind, &valid));
    }
    // The first source present (in this order) is validated; more than one is an error on the
    // others.
    let present: Vec<&str> = [
        ("object", metric.object.is_some()),
        ("external", metric.external.is_some()),
        ("pods", metric.pods.is_some()),
        ("resource", metric.resource.is_some()),
        ("containerResource", metric.container_resource.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, set)| set.then_some(field))
    .collect();
    if let Some(object) = &metric.object {
        let p = path.child("object");
        object_reference(&object.described_object, &p.child("describedObject"), errs);
        metric_identifier(&object.metric, &p.child("metric"), errs);
        let target = p.child("target");
        metric_target(&object.target, &target, errs);
        if object.target.value.is_none() && object.target.average_value.is_none() {
            errs.push(FieldError::required(target.child("averageValue"), "must set either a target value or averageValue"));
        }
    } else if let Some(external) = &metric.external {
        let p = path.child("external");
        metric_identifier(&external.metric, &p.child("metric"), errs);
        let target = p.child("target");
        metric_target(&external.target, &target, errs);
        exactly_one_target(
            [external.target.value.is_some(), external.target.average_value.is_some()],
            &target,
            ("averageValue", "must set either a target value for metric or a per-pod target"),
            ("value", "may not set both a target value for metric and a per-pod target"),
            errs,
        );
    } else if let Some(pods) = &metric.pods {
        let p = path.child("pods");
        metric_identifier(&pods.metric, &p.child("metric"), errs);
        let target = p.child("target");
        metric_target(&pods.target, &target, errs);
        if pods.target.average_value.is_none() {
            errs.push(FieldError::required(target.child("averageValue"), "must specify a positive target averageValue"));
        }
    } else if let Some(resource) = &metric.resource {
        resource_source(&resource.name, None, &resource.target, &path.child("resource"), errs);
    } else if let Some(source) = &metric.container_resource {
        resource_source(&source.name, Some(&source.container), &source.target, &path.child("containerResource"), errs);
    }
    let expected = METRIC_SOURCES.iter().find(|(t, _)| *t == kind).map(|(_, f)| *f);
    // (An unknown type is reported once above; upstream reports it twice and its error list
    // drops the duplicate.)
    if let Some(field) = expected.filter(|f| !present.contains(f)) {
        errs.push(FieldError::required(path.child(field), "must populate information for the given metric source"));
    }
    if present.len() > 1 {
        for other in present.iter().filter(|f| Some(**f) != expected) {
            errs.push(FieldError::forbidden(path.child(other), "must populate the given metric source only"));
        }
    }
}

/// A `resource` or (with its `container`) a `containerResource` metric source at `path`.
fn resource_source(name: &str, container: Option<&str>, target: &hub::MetricTarget, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), "must specify a resource name"));
    }
    if let Some(container) = container {
        if container.is_empty() {
            errs.push(FieldError::required(path.child("container"), "must specify a container"));
        } else {
            super::dns_label(container, &path.child("container"), errs);
        }
    }
    let target_path = path.child("target");
    metric_target(target, &target_path, errs);
    exactly_one_target(
        [target.average_utilization.is_some(), target.average_value.is_some()],
        &target_path,
        ("averageUtilization", "must set either a target raw value or a target utilization"),
        ("averageValue", "may not set both a target raw value and a target utilization"),
        errs,
    );
}

/// One of a target's two fields must be set (`set`) and not both: `required` and `both` are
/// the field and message of each error, which upstream words per metric source.
fn exactly_one_target(set: [bool; 2], path: &FieldPath<'_>, required: (&str, &str), both: (&str, &str), errs: &mut Vec<FieldError>) {
    match set {
        [false, false] => errs.push(FieldError::required(path.child(required.0), required.1)),
        [true, true] => errs.push(FieldError::forbidden(path.child(both.0), both.1)),
        _ => {}
    }
}

/// `validateMetricTarget`.
fn metric_target(target: &hub::MetricTarget, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let kind = target.r#type.as_str();
    if kind.is_empty() {
        errs.push(FieldError::required(path.child("type"), "must specify a metric target type"));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&kind) {
        errs.push(FieldError::invalid(path.child("type"), kind, "must be either Utilization, Value, or AverageValue"));
    }
    for (field, quantity) in [("value", &target.value), ("averageValue", &target.average_value)] {
        if let Some(q) = quantity.as_ref().filter(|q| q.signum() != Ordering::Greater) {
            errs.push(FieldError::invalid(path.child(field), q.as_str(), "must be positive"));
        }
    }
    if let Some(u) = target.average_utilization.filter(|u| *u < 1) {
        errs.push(FieldError::invalid(path.child("averageUtilization"), u, "must be greater than 0"));
    }
}

/// `validateMetricIdentifier`.
fn metric_identifier(id: &hub::MetricIdentifier, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let name = id.name.as_str();
    if name.is_empty() {
        errs.push(FieldError::required(path.child("name"), "must specify a metric name"));
    } else {
        for m in super::path_segment_errors(name) {
            errs.push(FieldError::invalid(path.child("name"), name, m));
        }
    }
}

/// `validateScalingRules`.
fn scaling_rules(rules: &hub::HPAScalingRules, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    if let Some(window) = rules.stabilization_window_seconds {
        let p = path.child("stabilizationWindowSeconds");
        if window < 0 {
            errs.push(FieldError::invalid(p, window, "must be greater than or equal to zero"));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(FieldError::invalid(p, window, format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}")));
        }
    }
    // Unlike most enumerations, an empty policy is not let through.
    if let Some(policy) = rules.select_policy.as_deref().filter(|p| !["Disabled", "Max", "Min"].contains(p)) {
        errs.push(FieldError::not_supported(path.child("selectPolicy"), policy, &["Disabled", "Max", "Min"]));
    }
    let policies = path.child("policies");
    if rules.policies.is_empty() {
        errs.push(FieldError::required(policies, "must specify at least one Policy"));
    }
    for (i, policy) in rules.policies.iter().enumerate() {
        let p = policies.index(i);
        let kind = policy.r#type.as_str();
        if kind != "Pods" && kind != "Percent" {
            errs.push(FieldError::not_supported(p.child("type"), kind, &["Percent", "Pods"]));
        }
        if policy.value <= 0 {
            errs.push(FieldError::invalid(p.child("value"), policy.value, "must be greater than zero"));
        }
        let period = policy.period_seconds;
        if period <= 0 {
            errs.push(FieldError::invalid(p.child("periodSeconds"), period, "must be greater than zero"));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(FieldError::invalid(p.child("periodSeconds"), period, format!("must be less than or equal to {MAX_PERIOD_SECONDS}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::test_typed as typed;

    #[test]
    fn horizontal_pod_autoscalers() {
        let hpa = json!({"spec": {"minReplicas": 1, "maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
        assert!(horizontal_pod_autoscaler(&typed(&hpa)).is_empty());
        let errs: Vec<String> = horizontal_pod_autoscaler(&typed(
            &json!({"spec": {"minReplicas": 3, "maxReplicas": 2, "scaleTargetRef": {"kind": "Deployment"}}}),
        ))
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
