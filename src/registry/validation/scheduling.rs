//! The scheduling.k8s.io group (`pkg/apis/scheduling/validation`): priority classes.

use serde_json::Value;

use crate::status::FieldError;

/// The highest priority a user-defined class may have (`HighestUserDefinablePriority`); higher
/// ones are reserved for `system-` classes.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

pub fn priority_class(pc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = pc["metadata"]["name"].as_str().unwrap_or_default();
    if !name.starts_with("system-") && pc["value"].as_i64().is_some_and(|v| v > HIGHEST_USER_DEFINABLE_PRIORITY) {
        errs.push(FieldError::forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    super::one_of(&pc["preemptionPolicy"], "preemptionPolicy", &["Never", "PreemptLowerPriority"], &mut errs);
    errs
}

pub fn priority_class_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = priority_class(new);
    if old["value"] != new["value"] {
        errs.push(FieldError::forbidden("value", "may not be changed in an update."));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn priority_classes() {
        let pc = json!({"metadata": {"name": "high"}, "value": 1000});
        assert!(priority_class(&pc).is_empty());
        assert_eq!(
            priority_class(&json!({"metadata": {"name": "high"}, "value": 2_000_000_000}))[0].to_string(),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
        );
        assert!(priority_class(&json!({"metadata": {"name": "system-x"}, "value": 2_000_000_000})).is_empty());
        assert_eq!(priority_class_update(&pc, &json!({"metadata": {"name": "high"}, "value": 1})).len(), 1);
    }
}
