//! `scheduling.k8s.io/v1` (upstream `pkg/apis/scheduling/v1/defaults.go`).

use kapi_api::api::scheduling::v1 as scheduling;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_priority_class);
}

/// Pods of a priority class preempt lower-priority pods.
pub fn set_defaults_priority_class(pc: &mut scheduling::PriorityClass) {
    pc.preemption_policy.get_or_insert_with(|| "PreemptLowerPriority".into());
}

#[cfg(test)]
mod tests {
    #[test]
    fn priority_class() {
        crate::registry::defaults::testing::assert_defaults::<super::scheduling::PriorityClass>(
            serde_json::json!({"value": 1000}),
            serde_json::json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}),
        );
    }
}
