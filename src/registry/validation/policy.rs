//! The policy group (`pkg/apis/policy/validation`): pod disruption budgets.

use serde_json::Value;

use super::apps::int_or_percent;
use super::{label_selector, one_of};
use crate::status::{BadValue, FieldError};

pub fn pod_disruption_budget(pdb: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &pdb["spec"];
    if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
        errs.push(FieldError::invalid("spec", spec_value(spec), "minAvailable and maxUnavailable cannot be both set"));
    }
    for field in ["minAvailable", "maxUnavailable"] {
        int_or_percent(&spec[field], &format!("spec.{field}"), true, &mut errs);
    }
    label_selector(&spec["selector"], "spec.selector", &mut errs);
    one_of(&spec["unhealthyPodEvictionPolicy"], "spec.unhealthyPodEvictionPolicy", &["AlwaysAllow", "IfHealthyBudget"], &mut errs);
    errs
}

/// The spec as upstream prints it: JSON in the Go struct's field order.
fn spec_value(spec: &Value) -> BadValue {
    let parts: Vec<String> = ["minAvailable", "selector", "maxUnavailable", "unhealthyPodEvictionPolicy"]
        .iter()
        .filter(|k| !spec[**k].is_null())
        .map(|k| match k {
            &"selector" => match super::selector_value(&spec["selector"]) {
                BadValue::Raw(s) => format!("\"selector\":{s}"),
                _ => "\"selector\":null".to_owned(),
            },
            _ => format!("\"{k}\":{}", serde_json::to_string(&spec[*k]).unwrap_or_default()),
        })
        .collect();
    BadValue::Raw(format!("{{{}}}", parts.join(",")))
}

pub fn pod_disruption_budget_update(_old: &Value, new: &Value) -> Vec<FieldError> {
    pod_disruption_budget(new)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pod_disruption_budgets() {
        assert!(pod_disruption_budget(&json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"a": "b"}}}})).is_empty());
        let errs: Vec<String> = pod_disruption_budget(&json!({"spec": {"minAvailable": 1, "maxUnavailable": "150%"}}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "spec: Invalid value: {\"minAvailable\":1,\"maxUnavailable\":\"150%\"}: minAvailable and maxUnavailable cannot be both set",
                "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
            ]
        );
    }
}
