//! Hand-written conversions of `autoscaling` (upstream's `pkg/apis/autoscaling/v1/conversion.go`):
//! v1 has one CPU target where v2 has `metrics`; everything v1 cannot express travels in
//! upstream's round-trip annotations on the object, so v2 → v1 → v2 loses nothing.
//!
//! Not yet upstream's exact annotation payloads: the metric lists are written in their
//! autoscaling/v2 JSON form (upstream writes autoscaling/v1's v2beta1-shaped `MetricSpec`).

use crate::api::autoscaling::{v1, v2};
use crate::hub::autoscaling as hub;

pub const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
pub const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
pub const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ALL: [&str; 4] = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR];

fn is_cpu_utilization(m: &hub::MetricSpec) -> bool {
    m.r#type == "Resource"
        && m.resource.as_ref().is_some_and(|r| r.name == "cpu" && r.target.r#type == "Utilization" && r.target.average_utilization.is_some())
}

fn is_cpu_status(m: &hub::MetricStatus) -> bool {
    m.r#type == "Resource" && m.resource.as_ref().is_some_and(|r| r.name == "cpu" && r.current.average_utilization.is_some())
}

fn cpu_metric(percent: i32) -> hub::MetricSpec {
    hub::MetricSpec {
        r#type: "Resource".into(),
        resource: Some(hub::ResourceMetricSource {
            name: "cpu".into(),
            target: hub::MetricTarget { r#type: "Utilization".into(), average_utilization: Some(percent), ..Default::default() },
        }),
        ..Default::default()
    }
}

fn cpu_status(percent: i32) -> hub::MetricStatus {
    hub::MetricStatus {
        r#type: "Resource".into(),
        resource: Some(hub::ResourceMetricStatus {
            name: "cpu".into(),
            current: hub::MetricValueStatus { average_utilization: Some(percent), ..Default::default() },
        }),
        ..Default::default()
    }
}

// ---- spec and status fields -----------------------------------------------------------------

/// The CPU utilization target is v1's; the other metrics go to the annotation (whole object).
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_metrics_to_v1(value: Vec<hub::MetricSpec>, out: &mut v1::HorizontalPodAutoscalerSpec) {
    if let Some(m) = value.iter().find(|m| is_cpu_utilization(m)) {
        out.target_cpu_utilization_percentage = m.resource.as_ref().and_then(|r| r.target.average_utilization);
    }
}

/// Kept in the `behavior` annotation by the whole-object conversion.
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_behavior_to_v1(_value: Option<hub::HorizontalPodAutoscalerBehavior>, _out: &mut v1::HorizontalPodAutoscalerSpec) {}

pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_targetCPUUtilizationPercentage_to_v2(value: Option<i32>, out: &mut v2::HorizontalPodAutoscalerSpec) {
    let Some(p) = value else { return };
    out.metrics.retain(|m| !is_cpu_utilization(&v2::conversion::MetricSpec_to_hub(m.clone())));
    out.metrics.push(v2::conversion::MetricSpec_from_hub(cpu_metric(p)));
}

pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_currentMetrics_to_v1(value: Vec<hub::MetricStatus>, out: &mut v1::HorizontalPodAutoscalerStatus) {
    if let Some(m) = value.iter().find(|m| is_cpu_status(m)) {
        out.current_cpu_utilization_percentage = m.resource.as_ref().and_then(|r| r.current.average_utilization);
    }
}

/// Kept in the `conditions` annotation by the whole-object conversion.
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_conditions_to_v1(_value: Vec<hub::HorizontalPodAutoscalerCondition>, _out: &mut v1::HorizontalPodAutoscalerStatus) {}

pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_currentCPUUtilizationPercentage_to_v2(value: Option<i32>, out: &mut v2::HorizontalPodAutoscalerStatus) {
    let Some(p) = value else { return };
    out.current_metrics.retain(|m| !is_cpu_status(&v2::conversion::MetricStatus_to_hub(m.clone())));
    out.current_metrics.push(v2::conversion::MetricStatus_from_hub(cpu_status(p)));
}

// ---- whole object ---------------------------------------------------------------------------

/// Hub → v1 (upstream's `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`):
/// what v1 cannot hold goes to the annotations.
pub fn convert_autoscaling_hub_HorizontalPodAutoscaler_to_v1(in_: hub::HorizontalPodAutoscaler) -> v1::HorizontalPodAutoscaler {
    let other_metrics: Vec<v2::MetricSpec> =
        in_.spec.metrics.iter().filter(|m| !is_cpu_utilization(m)).cloned().map(v2::conversion::MetricSpec_from_hub).collect();
    let behavior = in_.spec.behavior.clone().map(v2::conversion::HorizontalPodAutoscalerBehavior_from_hub);
    let (current, conditions): (Vec<v2::MetricStatus>, Vec<v2::HorizontalPodAutoscalerCondition>) = match &in_.status {
        Some(s) => (
            s.current_metrics.iter().filter(|m| !is_cpu_status(m)).cloned().map(v2::conversion::MetricStatus_from_hub).collect(),
            s.conditions.iter().cloned().map(v2::conversion::HorizontalPodAutoscalerCondition_from_hub).collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    let mut out = v1::conversion::auto_HorizontalPodAutoscaler_from_hub(in_);
    let annotations = &mut out.metadata.get_or_insert_default().annotations;
    for key in ALL {
        annotations.remove(key);
    }
    let mut put = |key: &str, json: Option<String>| {
        if let Some(j) = json {
            annotations.insert(key.to_owned(), j);
        }
    };
    put(METRICS, (!other_metrics.is_empty()).then(|| serde_json::to_string(&other_metrics).unwrap_or_default()));
    put(BEHAVIOR, behavior.map(|b| serde_json::to_string(&b).unwrap_or_default()));
    put(CURRENT_METRICS, (!current.is_empty()).then(|| serde_json::to_string(&current).unwrap_or_default()));
    put(CONDITIONS, (!conditions.is_empty()).then(|| serde_json::to_string(&conditions).unwrap_or_default()));
    out
}

/// v1 → hub (upstream's `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`):
/// the annotations come back as fields and are dropped; the CPU target joins the metrics last.
pub fn convert_autoscaling_v1_HorizontalPodAutoscaler_to_hub(in_: v1::HorizontalPodAutoscaler) -> hub::HorizontalPodAutoscaler {
    let mut out = v1::conversion::auto_HorizontalPodAutoscaler_to_hub(in_);
    let annotations = &mut out.metadata.get_or_insert_default().annotations;
    let take = |a: &mut std::collections::BTreeMap<String, String>, k: &str| a.remove(k);
    let metrics = take(annotations, METRICS).and_then(|j| serde_json::from_str::<Vec<v2::MetricSpec>>(&j).ok()).unwrap_or_default();
    let behavior = take(annotations, BEHAVIOR).and_then(|j| serde_json::from_str::<v2::HorizontalPodAutoscalerBehavior>(&j).ok());
    let current = take(annotations, CURRENT_METRICS).and_then(|j| serde_json::from_str::<Vec<v2::MetricStatus>>(&j).ok()).unwrap_or_default();
    let conditions = take(annotations, CONDITIONS)
        .and_then(|j| serde_json::from_str::<Vec<v2::HorizontalPodAutoscalerCondition>>(&j).ok())
        .unwrap_or_default();

    let mut all: Vec<hub::MetricSpec> = metrics.into_iter().map(v2::conversion::MetricSpec_to_hub).collect();
    if let Some(p) = out.spec.target_cpu_utilization_percentage.take() {
        all.push(cpu_metric(p));
    }
    out.spec.metrics = all;
    if behavior.is_some() {
        out.spec.behavior = behavior.map(v2::conversion::HorizontalPodAutoscalerBehavior_to_hub);
    }
    if let Some(status) = out.status.as_mut() {
        let mut all: Vec<hub::MetricStatus> = current.into_iter().map(v2::conversion::MetricStatus_to_hub).collect();
        if let Some(p) = status.current_cpu_utilization_percentage.take() {
            all.push(cpu_status(p));
        }
        status.current_metrics = all;
        status.conditions = conditions.into_iter().map(v2::conversion::HorizontalPodAutoscalerCondition_to_hub).collect();
    }
    out
}
