//! `scheduling.k8s.io` (upstream `pkg/apis/scheduling/<version>/defaults.go`): v1, and v1alpha2
//! when `--runtime-config` turns it on (its only default is a declarative `+default`).

use kapi_api::api::scheduling::{v1, v1alpha2};

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_priority_class);
    r.add(set_defaults_v1alpha2_pod_group_spec);
}

/// Pods of a priority class preempt lower-priority pods.
pub fn set_defaults_priority_class(pc: &mut v1::PriorityClass) {
    pc.preemption_policy.get_or_insert_with(|| "PreemptLowerPriority".into());
}

/// A pod group's pods are disrupted one by one unless the group says otherwise. (Upstream's
/// PodGroup strategy then drops the field while the alpha `WorkloadAwarePreemption` gate is off;
/// kapi keeps the gated PodGroup fields, as with that gate on.)
pub fn set_defaults_v1alpha2_pod_group_spec(s: &mut v1alpha2::PodGroupSpec) {
    s.disruption_mode.get_or_insert_with(|| "Pod".into());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn priority_class() {
        assert_defaults::<v1::PriorityClass>(json!({"value": 1000}), json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}));
    }

    /// Only the PodGroup is defaulted: the Workload's templates have no default upstream.
    #[test]
    fn pod_groups_are_disrupted_pod_by_pod() {
        let policy = json!({"gang": {"minCount": 2}});
        assert_defaults::<v1alpha2::PodGroup>(
            json!({"spec": {"schedulingPolicy": policy}}),
            json!({"spec": {"schedulingPolicy": policy, "disruptionMode": "Pod"}}),
        );
        assert_defaults::<v1alpha2::PodGroup>(
            json!({"spec": {"schedulingPolicy": policy, "disruptionMode": "PodGroup"}}),
            json!({"spec": {"schedulingPolicy": policy, "disruptionMode": "PodGroup"}}),
        );
        let workload = json!({"spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": policy}]}});
        assert_defaults::<v1alpha2::Workload>(workload.clone(), workload);
    }
}
