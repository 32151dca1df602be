//! `autoscaling/v1` and `autoscaling/v2` (upstream `pkg/apis/autoscaling/v{1,2}/defaults.go`).

use kapi_api::api::autoscaling::{v1, v2};

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_horizontal_pod_autoscaler_v1);
    r.add(set_defaults_horizontal_pod_autoscaler_v2);
}

/// At least one replica.
pub fn set_defaults_horizontal_pod_autoscaler_v1(hpa: &mut v1::HorizontalPodAutoscaler) {
    hpa.spec.min_replicas.get_or_insert(1);
}

/// At least one replica, scaling on 80% average CPU utilization when no metric is given, and a
/// given `behavior` completed with the default scaling rules: up by at most 4 pods or 100%
/// every 15s without stabilization, down by at most 100% every 15s (the scale-down
/// stabilization window is the controller's flag and stays unset).
pub fn set_defaults_horizontal_pod_autoscaler_v2(hpa: &mut v2::HorizontalPodAutoscaler) {
    let spec = &mut hpa.spec;
    spec.min_replicas.get_or_insert(1);
    if spec.metrics.is_empty() {
        spec.metrics = vec![v2::MetricSpec {
            r#type: "Resource".into(),
            resource: Some(v2::ResourceMetricSource {
                name: "cpu".into(),
                target: v2::MetricTarget { r#type: "Utilization".into(), average_utilization: Some(80), ..Default::default() },
            }),
            ..Default::default()
        }];
    }
    if let Some(behavior) = &mut spec.behavior {
        let policy = |t: &str, value, period_seconds| v2::HPAScalingPolicy { r#type: t.into(), value, period_seconds };
        let up = v2::HPAScalingRules {
            stabilization_window_seconds: Some(0),
            select_policy: Some("Max".into()),
            policies: vec![policy("Pods", 4, 15), policy("Percent", 100, 15)],
            tolerance: None,
        };
        let down = v2::HPAScalingRules {
            stabilization_window_seconds: None,
            select_policy: Some("Max".into()),
            policies: vec![policy("Percent", 100, 15)],
            tolerance: None,
        };
        behavior.scale_up = Some(complete_rules(behavior.scale_up.take(), up));
        behavior.scale_down = Some(complete_rules(behavior.scale_down.take(), down));
    }
}

/// Upstream's `copyHPAScalingRules`: what is set wins over the defaults. (Policies set to an
/// empty list count as unset: JSON does not tell an empty list from a missing one here.)
fn complete_rules(given: Option<v2::HPAScalingRules>, mut defaults: v2::HPAScalingRules) -> v2::HPAScalingRules {
    let Some(given) = given else { return defaults };
    if given.select_policy.is_some() {
        defaults.select_policy = given.select_policy;
    }
    if given.stabilization_window_seconds.is_some() {
        defaults.stabilization_window_seconds = given.stabilization_window_seconds;
    }
    if !given.policies.is_empty() {
        defaults.policies = given.policies;
    }
    if given.tolerance.is_some() {
        defaults.tolerance = given.tolerance;
    }
    defaults
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    /// What `kubectl autoscale deployment web --max=5` shows through `autoscaling/v2`.
    #[test]
    fn horizontal_pod_autoscalers() {
        let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
        assert_defaults::<v1::HorizontalPodAutoscaler>(
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5}}),
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5, "minReplicas": 1}}),
        );
        assert_defaults::<v2::HorizontalPodAutoscaler>(
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 5, "minReplicas": 1,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
                "behavior": {
                    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                    "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}}}),
        );
    }
}
