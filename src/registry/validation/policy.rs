//! The policy group (`pkg/apis/policy/validation`): pod disruption budgets. The rules read the
//! generated types.

use kapi_api::api::policy::v1 as policy;

use super::apps::int_or_percent;
use super::{FieldPath, json_value, one_of_str, typed_label_selector};
use crate::status::FieldError;

pub fn pod_disruption_budget(pdb: &policy::PodDisruptionBudget) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = &pdb.spec else { return errs };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        // The spec as upstream prints it: JSON in the Go struct's field order.
        errs.push(FieldError::invalid("spec", json_value(spec), "minAvailable and maxUnavailable cannot be both set"));
    }
    int_or_percent(spec.min_available.as_ref(), "spec.minAvailable", true, &mut errs);
    int_or_percent(spec.max_unavailable.as_ref(), "spec.maxUnavailable", true, &mut errs);
    if let Some(selector) = &spec.selector {
        typed_label_selector(selector, &FieldPath::Root("spec.selector"), &mut errs);
    }
    one_of_str(
        spec.unhealthy_pod_eviction_policy.as_deref(),
        "spec.unhealthyPodEvictionPolicy",
        &["AlwaysAllow", "IfHealthyBudget"],
        &mut errs,
    );
    errs
}

pub fn pod_disruption_budget_update(_old: &policy::PodDisruptionBudget, new: &policy::PodDisruptionBudget) -> Vec<FieldError> {
    pod_disruption_budget(new)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::{test_messages as messages, test_typed as typed};

    #[test]
    fn pod_disruption_budgets() {
        assert!(
            pod_disruption_budget(&typed(&json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"a": "b"}}}}))).is_empty()
        );
        assert_eq!(
            messages(&pod_disruption_budget(&typed(&json!({"spec": {"minAvailable": 1, "maxUnavailable": "150%"}})))),
            [
                "spec: Invalid value: {\"minAvailable\":1,\"maxUnavailable\":\"150%\"}: minAvailable and maxUnavailable cannot be both set",
                "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
            ]
        );
        let spec = json!({"spec": {"minAvailable": "x", "selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}, "unhealthyPodEvictionPolicy": "Never"}});
        assert_eq!(
            messages(&pod_disruption_budget(&typed(&spec))),
            [
                "spec.minAvailable: Invalid value: \"x\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
            ]
        );
    }
}
