//! Hand-written conversions of `autoscaling` (upstream's `pkg/apis/autoscaling/v1/conversion.go`):
//! v1 has one CPU target where v2 has `metrics`; everything v1 cannot express travels in
//! upstream's round-trip annotations on the object, in upstream's JSON shapes, so objects
//! round-trip with a real kube-apiserver:
//!
//! - `autoscaling.alpha.kubernetes.io/metrics`: the spec's metrics other than the CPU
//!   utilization target, as autoscaling/v1's (v2beta1-shaped) `MetricSpec` list
//!   (`{"type":"Pods","pods":{"metricName":..,"targetAverageValue":..}}`);
//! - `autoscaling.alpha.kubernetes.io/current-metrics`: every current metric (the CPU one too), as
//!   v1's `MetricStatus` list;
//! - `autoscaling.alpha.kubernetes.io/conditions`: the conditions, as v1's
//!   `HorizontalPodAutoscalerCondition` list;
//! - `autoscaling.alpha.kubernetes.io/behavior`: the behavior as upstream marshals its *internal*
//!   type — Go field names, no JSON tags (`{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":..,
//!   "SelectPolicy":..,"Policies":[{"Type":..,"Value":..,"PeriodSeconds":..}],"Tolerance":null}}`);
//!   read back case-insensitively as Go's `encoding/json` does.
//!
//! Upstream's v1 metric shapes cannot hold everything v2 can (a Resource metric's `Value`
//! target, an Object metric without a value), and v1 → internal applies the implicit CPU target of
//! 80% when there is no metric at all: kapi does the same (`tests/roundtrip.rs` lists these).

use serde_json::{Map, Value, json};

use crate::api::autoscaling::{v1, v2};
use crate::hub::autoscaling as hub;
use ::kapi_apimachinery::Quantity;

pub const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
pub const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
pub const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const ALL: [&str; 4] = [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR];
/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i32 = 80;

fn is_cpu_utilization(m: &hub::MetricSpec) -> bool {
    m.r#type == "Resource" && m.resource.as_ref().is_some_and(|r| r.name == "cpu" && r.target.average_utilization.is_some())
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

/// The first CPU resource metric gives v1's target, if it is a utilization
/// (`Convert_autoscaling_HorizontalPodAutoscalerSpec_To_v1_HorizontalPodAutoscalerSpec`); the
/// other metrics go to the annotation (whole object).
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_metrics_to_v1(
    value: Vec<hub::MetricSpec>,
    out: &mut v1::HorizontalPodAutoscalerSpec,
) {
    if let Some(r) = value.iter().filter(|m| m.r#type == "Resource").find_map(|m| m.resource.as_ref().filter(|r| r.name == "cpu")) {
        out.target_cpu_utilization_percentage = r.target.average_utilization;
    }
}

/// Kept in the `behavior` annotation by the whole-object conversion.
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_behavior_to_v1(
    _value: Option<hub::HorizontalPodAutoscalerBehavior>,
    _out: &mut v1::HorizontalPodAutoscalerSpec,
) {
}

pub fn convert_autoscaling_hub_HorizontalPodAutoscalerSpec_targetCPUUtilizationPercentage_to_v2(
    value: Option<i32>,
    out: &mut v2::HorizontalPodAutoscalerSpec,
) {
    let Some(p) = value else { return };
    out.metrics.retain(|m| !is_cpu_utilization(&v2::conversion::MetricSpec_to_hub(m.clone())));
    out.metrics.push(v2::conversion::MetricSpec_from_hub(cpu_metric(p)));
}

/// The last CPU resource metric with a utilization gives v1's current utilization.
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_currentMetrics_to_v1(
    value: Vec<hub::MetricStatus>,
    out: &mut v1::HorizontalPodAutoscalerStatus,
) {
    for m in &value {
        if let Some(r) = m.resource.as_ref().filter(|r| m.r#type == "Resource" && r.name == "cpu")
            && let Some(u) = r.current.average_utilization
        {
            out.current_cpu_utilization_percentage = Some(u);
        }
    }
}

/// Kept in the `conditions` annotation by the whole-object conversion.
pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_conditions_to_v1(
    _value: Vec<hub::HorizontalPodAutoscalerCondition>,
    _out: &mut v1::HorizontalPodAutoscalerStatus,
) {
}

pub fn convert_autoscaling_hub_HorizontalPodAutoscalerStatus_currentCPUUtilizationPercentage_to_v2(
    value: Option<i32>,
    out: &mut v2::HorizontalPodAutoscalerStatus,
) {
    let Some(p) = value else { return };
    out.current_metrics.push(v2::conversion::MetricStatus_from_hub(cpu_status(p)));
}

// ---- annotation payloads: autoscaling/v1's metric shapes ------------------------------------

fn quantity(q: &Quantity) -> Value {
    serde_json::to_value(q).unwrap_or(Value::Null)
}

/// A Go non-pointer `resource.Quantity` (marshals its zero value as `"0"`).
fn quantity_or_zero(q: &Option<Quantity>) -> Value {
    quantity(q.as_ref().unwrap_or(&Quantity::zero()))
}

fn put<T: serde::Serialize>(m: &mut Map<String, Value>, key: &str, v: &Option<T>) {
    if let Some(v) = v {
        m.insert(key.to_owned(), serde_json::to_value(v).unwrap_or(Value::Null));
    }
}

/// v1 `CrossVersionObjectReference` (`apiVersion` omitempty).
fn reference(r: &hub::CrossVersionObjectReference) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(r.kind));
    m.insert("name".into(), json!(r.name));
    put(&mut m, "apiVersion", &r.api_version.as_ref().filter(|s| !s.is_empty()));
    Value::Object(m)
}

fn obj(v: Map<String, Value>) -> Value {
    Value::Object(v)
}

/// `Convert_autoscaling_MetricSpec_To_v1_MetricSpec`.
fn metric_spec_to_v1(m: &hub::MetricSpec) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(m.r#type));
    if let Some(s) = &m.object {
        let mut o = Map::new();
        o.insert("target".into(), reference(&s.described_object));
        o.insert("metricName".into(), json!(s.metric.name));
        o.insert("targetValue".into(), quantity_or_zero(&s.target.value));
        put(&mut o, "selector", &s.metric.selector);
        put(&mut o, "averageValue", &s.target.average_value);
        out.insert("object".into(), obj(o));
    }
    if let Some(s) = &m.pods {
        let mut o = Map::new();
        o.insert("metricName".into(), json!(s.metric.name));
        o.insert("targetAverageValue".into(), quantity_or_zero(&s.target.average_value));
        put(&mut o, "selector", &s.metric.selector);
        out.insert("pods".into(), obj(o));
    }
    if let Some(s) = &m.resource {
        let mut o = Map::new();
        o.insert("name".into(), json!(s.name));
        put(&mut o, "targetAverageUtilization", &s.target.average_utilization);
        put(&mut o, "targetAverageValue", &s.target.average_value);
        out.insert("resource".into(), obj(o));
    }
    if let Some(s) = &m.container_resource {
        let mut o = Map::new();
        o.insert("name".into(), json!(s.name));
        put(&mut o, "targetAverageUtilization", &s.target.average_utilization);
        put(&mut o, "targetAverageValue", &s.target.average_value);
        o.insert("container".into(), json!(s.container));
        out.insert("containerResource".into(), obj(o));
    }
    if let Some(s) = &m.external {
        let mut o = Map::new();
        o.insert("metricName".into(), json!(s.metric.name));
        put(&mut o, "metricSelector", &s.metric.selector);
        put(&mut o, "targetValue", &s.target.value);
        put(&mut o, "targetAverageValue", &s.target.average_value);
        out.insert("external".into(), obj(o));
    }
    obj(out)
}

/// `Convert_autoscaling_MetricStatus_To_v1_MetricStatus`.
fn metric_status_to_v1(m: &hub::MetricStatus) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(m.r#type));
    if let Some(s) = &m.object {
        let mut o = Map::new();
        o.insert("target".into(), reference(&s.described_object));
        o.insert("metricName".into(), json!(s.metric.name));
        o.insert("currentValue".into(), quantity_or_zero(&s.current.value));
        put(&mut o, "selector", &s.metric.selector);
        put(&mut o, "averageValue", &s.current.average_value);
        out.insert("object".into(), obj(o));
    }
    if let Some(s) = &m.pods {
        let mut o = Map::new();
        o.insert("metricName".into(), json!(s.metric.name));
        o.insert("currentAverageValue".into(), quantity_or_zero(&s.current.average_value));
        put(&mut o, "selector", &s.metric.selector);
        out.insert("pods".into(), obj(o));
    }
    if let Some(s) = &m.resource {
        let mut o = Map::new();
        o.insert("name".into(), json!(s.name));
        put(&mut o, "currentAverageUtilization", &s.current.average_utilization);
        o.insert("currentAverageValue".into(), quantity_or_zero(&s.current.average_value));
        out.insert("resource".into(), obj(o));
    }
    if let Some(s) = &m.container_resource {
        let mut o = Map::new();
        o.insert("name".into(), json!(s.name));
        put(&mut o, "currentAverageUtilization", &s.current.average_utilization);
        o.insert("currentAverageValue".into(), quantity_or_zero(&s.current.average_value));
        o.insert("container".into(), json!(s.container));
        out.insert("containerResource".into(), obj(o));
    }
    if let Some(s) = &m.external {
        let mut o = Map::new();
        o.insert("metricName".into(), json!(s.metric.name));
        put(&mut o, "metricSelector", &s.metric.selector);
        o.insert("currentValue".into(), quantity_or_zero(&s.current.value));
        put(&mut o, "currentAverageValue", &s.current.average_value);
        out.insert("external".into(), obj(o));
    }
    obj(out)
}

/// v1 `HorizontalPodAutoscalerCondition` (`lastTransitionTime` is a Go struct: `null` when unset).
fn condition_to_v1(c: &hub::HorizontalPodAutoscalerCondition) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!(c.r#type));
    o.insert("status".into(), json!(c.status));
    o.insert(
        "lastTransitionTime".into(),
        c.last_transition_time.as_ref().map_or(Value::Null, |t| serde_json::to_value(t).unwrap_or(Value::Null)),
    );
    put(&mut o, "reason", &c.reason.as_ref().filter(|s| !s.is_empty()));
    put(&mut o, "message", &c.message.as_ref().filter(|s| !s.is_empty()));
    obj(o)
}

/// The behavior as `json.Marshal` writes upstream's internal type: Go field names, `null` for nil.
fn behavior_to_annotation(b: &hub::HorizontalPodAutoscalerBehavior) -> Value {
    let rules = |r: &Option<hub::HPAScalingRules>| match r {
        None => Value::Null,
        Some(r) => json!({
            "StabilizationWindowSeconds": r.stabilization_window_seconds,
            "SelectPolicy": r.select_policy,
            "Policies": if r.policies.is_empty() { Value::Null } else {
                r.policies.iter().map(|p| json!({"Type": p.r#type, "Value": p.value, "PeriodSeconds": p.period_seconds})).collect()
            },
            "Tolerance": r.tolerance.as_ref().map(quantity),
        }),
    };
    json!({"ScaleUp": rules(&b.scale_up), "ScaleDown": rules(&b.scale_down)})
}

// ---- reading the annotations back -------------------------------------------------------------

/// A field of a JSON object, matched as Go's `encoding/json` matches: exactly, else ignoring case.
fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let m = v.as_object()?;
    m.get(name).or_else(|| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v)).filter(|v| !v.is_null())
}

fn string(v: &Value, name: &str) -> Result<String, ()> {
    match field(v, name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(()),
    }
}

fn typed<T: serde::de::DeserializeOwned>(v: &Value, name: &str) -> Result<Option<T>, ()> {
    field(v, name).map(|x| serde_json::from_value(x.clone()).map_err(|_| ())).transpose()
}

fn reference_from_v1(v: Option<&Value>) -> Result<hub::CrossVersionObjectReference, ()> {
    let Some(v) = v else { return Ok(Default::default()) };
    Ok(hub::CrossVersionObjectReference {
        kind: string(v, "kind")?,
        name: string(v, "name")?,
        api_version: Some(string(v, "apiVersion")?).filter(|s| !s.is_empty()),
    })
}

type Selector = crate::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// `Convert_v1_MetricSpec_To_autoscaling_MetricSpec`.
fn metric_spec_from_v1(v: &Value) -> Result<hub::MetricSpec, ()> {
    let mut out = hub::MetricSpec { r#type: string(v, "type")?, ..Default::default() };
    if let Some(s) = field(v, "object") {
        let average: Option<Quantity> = typed(s, "averageValue")?;
        out.object = Some(hub::ObjectMetricSource {
            described_object: reference_from_v1(field(s, "target"))?,
            target: hub::MetricTarget {
                r#type: if average.is_none() { "Value" } else { "AverageValue" }.into(),
                value: Some(typed(s, "targetValue")?.unwrap_or_else(Quantity::zero)),
                average_value: average,
                average_utilization: None,
            },
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "selector")? },
        });
    }
    if let Some(s) = field(v, "pods") {
        out.pods = Some(hub::PodsMetricSource {
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "selector")? },
            target: hub::MetricTarget {
                r#type: "AverageValue".into(),
                average_value: Some(typed(s, "targetAverageValue")?.unwrap_or_else(Quantity::zero)),
                ..Default::default()
            },
        });
    }
    let resource_target = |s: &Value| -> Result<hub::MetricTarget, ()> {
        let utilization: Option<i32> = typed(s, "targetAverageUtilization")?;
        Ok(hub::MetricTarget {
            r#type: if utilization.is_none() { "AverageValue" } else { "Utilization" }.into(),
            average_value: typed(s, "targetAverageValue")?,
            average_utilization: utilization,
            value: None,
        })
    };
    if let Some(s) = field(v, "resource") {
        out.resource = Some(hub::ResourceMetricSource { name: string(s, "name")?, target: resource_target(s)? });
    }
    if let Some(s) = field(v, "containerResource") {
        out.container_resource = Some(hub::ContainerResourceMetricSource {
            name: string(s, "name")?,
            target: resource_target(s)?,
            container: string(s, "container")?,
        });
    }
    if let Some(s) = field(v, "external") {
        let value: Option<Quantity> = typed(s, "targetValue")?;
        out.external = Some(hub::ExternalMetricSource {
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "metricSelector")? },
            target: hub::MetricTarget {
                r#type: if value.is_none() { "AverageValue" } else { "Value" }.into(),
                value,
                average_value: typed(s, "targetAverageValue")?,
                average_utilization: None,
            },
        });
    }
    Ok(out)
}

/// `Convert_v1_MetricStatus_To_autoscaling_MetricStatus`.
fn metric_status_from_v1(v: &Value) -> Result<hub::MetricStatus, ()> {
    let mut out = hub::MetricStatus { r#type: string(v, "type")?, ..Default::default() };
    let zero = |q: Option<Quantity>| Some(q.unwrap_or_else(Quantity::zero));
    if let Some(s) = field(v, "object") {
        out.object = Some(hub::ObjectMetricStatus {
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "selector")? },
            current: hub::MetricValueStatus {
                value: zero(typed(s, "currentValue")?),
                average_value: typed(s, "averageValue")?,
                average_utilization: None,
            },
            described_object: reference_from_v1(field(s, "target"))?,
        });
    }
    if let Some(s) = field(v, "pods") {
        out.pods = Some(hub::PodsMetricStatus {
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "selector")? },
            current: hub::MetricValueStatus { average_value: zero(typed(s, "currentAverageValue")?), ..Default::default() },
        });
    }
    let resource_current = |s: &Value| -> Result<hub::MetricValueStatus, ()> {
        Ok(hub::MetricValueStatus {
            average_value: zero(typed(s, "currentAverageValue")?),
            average_utilization: typed(s, "currentAverageUtilization")?,
            value: None,
        })
    };
    if let Some(s) = field(v, "resource") {
        out.resource = Some(hub::ResourceMetricStatus { name: string(s, "name")?, current: resource_current(s)? });
    }
    if let Some(s) = field(v, "containerResource") {
        out.container_resource = Some(hub::ContainerResourceMetricStatus {
            name: string(s, "name")?,
            current: resource_current(s)?,
            container: string(s, "container")?,
        });
    }
    if let Some(s) = field(v, "external") {
        out.external = Some(hub::ExternalMetricStatus {
            metric: hub::MetricIdentifier { name: string(s, "metricName")?, selector: typed::<Selector>(s, "metricSelector")? },
            current: hub::MetricValueStatus {
                value: zero(typed(s, "currentValue")?),
                average_value: typed(s, "currentAverageValue")?,
                average_utilization: None,
            },
        });
    }
    Ok(out)
}

fn condition_from_v1(v: &Value) -> Result<hub::HorizontalPodAutoscalerCondition, ()> {
    Ok(hub::HorizontalPodAutoscalerCondition {
        r#type: string(v, "type")?,
        status: string(v, "status")?,
        last_transition_time: typed(v, "lastTransitionTime")?,
        reason: Some(string(v, "reason")?).filter(|s| !s.is_empty()),
        message: Some(string(v, "message")?).filter(|s| !s.is_empty()),
    })
}

fn behavior_from_annotation(v: &Value) -> Result<hub::HorizontalPodAutoscalerBehavior, ()> {
    let rules = |name: &str| -> Result<Option<hub::HPAScalingRules>, ()> {
        let Some(r) = field(v, name) else { return Ok(None) };
        let policies = match field(r, "Policies") {
            None => Vec::new(),
            Some(Value::Array(ps)) => ps
                .iter()
                .map(|p| {
                    Ok(hub::HPAScalingPolicy {
                        r#type: string(p, "Type")?,
                        value: typed(p, "Value")?.unwrap_or_default(),
                        period_seconds: typed(p, "PeriodSeconds")?.unwrap_or_default(),
                    })
                })
                .collect::<Result<_, ()>>()?,
            Some(_) => return Err(()),
        };
        Ok(Some(hub::HPAScalingRules {
            stabilization_window_seconds: typed(r, "StabilizationWindowSeconds")?,
            select_policy: typed(r, "SelectPolicy")?,
            policies,
            tolerance: typed(r, "Tolerance")?,
        }))
    };
    Ok(hub::HorizontalPodAutoscalerBehavior { scale_up: rules("ScaleUp")?, scale_down: rules("ScaleDown")? })
}

/// An annotation's JSON list, each item read by `f`; `None` when it does not parse (upstream
/// ignores an annotation it cannot unmarshal).
fn list<T>(json: &str, f: impl Fn(&Value) -> Result<T, ()>) -> Option<Vec<T>> {
    match serde_json::from_str::<Value>(json).ok()? {
        Value::Array(items) => items.iter().map(f).collect::<Result<_, ()>>().ok(),
        Value::Null => Some(Vec::new()),
        _ => None,
    }
}

// ---- whole object ---------------------------------------------------------------------------

/// Hub → v1 (upstream's `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`):
/// what v1 cannot hold goes to the annotations.
pub fn convert_autoscaling_hub_HorizontalPodAutoscaler_to_v1(in_: hub::HorizontalPodAutoscaler) -> v1::HorizontalPodAutoscaler {
    let other_metrics: Vec<Value> = in_.spec.metrics.iter().filter(|m| !is_cpu_utilization(m)).map(metric_spec_to_v1).collect();
    let behavior = in_.spec.behavior.as_ref().map(behavior_to_annotation);
    let (current, conditions): (Vec<Value>, Vec<Value>) = match &in_.status {
        Some(s) => (s.current_metrics.iter().map(metric_status_to_v1).collect(), s.conditions.iter().map(condition_to_v1).collect()),
        None => (Vec::new(), Vec::new()),
    };
    let mut out = v1::conversion::auto_HorizontalPodAutoscaler_from_hub(in_);
    // Only the annotations this conversion produces (`DropRoundTripHorizontalPodAutoscalerAnnotations`).
    if let Some(m) = out.metadata.as_mut() {
        for key in ALL {
            m.annotations.remove(key);
        }
    }
    let mut set = |key: &str, json: Option<Value>| {
        if let Some(j) = json {
            out.metadata.get_or_insert_default().annotations.insert(key.to_owned(), j.to_string());
        }
    };
    set(METRICS, (!other_metrics.is_empty()).then(|| Value::Array(other_metrics)));
    set(CURRENT_METRICS, (!current.is_empty()).then(|| Value::Array(current)));
    set(BEHAVIOR, behavior);
    set(CONDITIONS, (!conditions.is_empty()).then(|| Value::Array(conditions)));
    out
}

/// v1 → hub (upstream's `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`):
/// the annotations come back as fields and are dropped; the CPU target joins the metrics last;
/// with no metric at all, the implicit CPU target of 80% is made explicit.
pub fn convert_autoscaling_v1_HorizontalPodAutoscaler_to_hub(in_: v1::HorizontalPodAutoscaler) -> hub::HorizontalPodAutoscaler {
    let mut out = v1::conversion::auto_HorizontalPodAutoscaler_to_hub(in_);
    let mut annotations = out.metadata.as_mut().map(|m| std::mem::take(&mut m.annotations)).unwrap_or_default();
    let metrics = annotations.get(METRICS).and_then(|j| list(j, metric_spec_from_v1));
    let behavior = annotations
        .get(BEHAVIOR)
        .and_then(|j| serde_json::from_str::<Value>(j).ok())
        .and_then(|v| behavior_from_annotation(&v).ok())
        .filter(|b| *b != hub::HorizontalPodAutoscalerBehavior::default());
    let current = annotations.get(CURRENT_METRICS).and_then(|j| list(j, metric_status_from_v1));
    let conditions = annotations.get(CONDITIONS).and_then(|j| list(j, condition_from_v1));
    for key in ALL {
        annotations.remove(key);
    }
    if let Some(m) = out.metadata.as_mut() {
        m.annotations = annotations;
    }

    let cpu = out.spec.target_cpu_utilization_percentage.take().map(cpu_metric);
    let mut all: Vec<hub::MetricSpec> = metrics.unwrap_or_default();
    all.extend(cpu);
    if all.is_empty() {
        all.push(cpu_metric(DEFAULT_CPU_UTILIZATION));
    }
    out.spec.metrics = all;
    if behavior.is_some() {
        out.spec.behavior = behavior;
    }
    if let Some(status) = out.status.as_mut() {
        let cpu = status.current_cpu_utilization_percentage.take();
        status.current_metrics = match current {
            // The annotation has every metric, with more than the field.
            Some(current) => current,
            None => cpu.map(cpu_status).into_iter().collect(),
        };
        if let Some(conditions) = conditions {
            status.conditions = conditions;
        }
    }
    out
}
