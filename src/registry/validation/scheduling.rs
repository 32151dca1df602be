//! The scheduling.k8s.io group (`pkg/apis/scheduling/validation`): priority classes.

use kapi_api::hub::scheduling as hub;

use super::one_of_str;
use crate::status::FieldError;

/// The highest priority a user-defined class may have (`HighestUserDefinablePriority`); higher
/// ones are reserved for `system-` classes.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

pub fn priority_class(pc: &hub::PriorityClass) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = pc.metadata.as_ref().and_then(|m| m.name.as_deref()).unwrap_or_default();
    if !name.starts_with("system-") && pc.value.is_some_and(|v| i64::from(v) > HIGHEST_USER_DEFINABLE_PRIORITY) {
        errs.push(FieldError::forbidden(
            "value",
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
        ));
    }
    one_of_str(pc.preemption_policy.as_deref(), "preemptionPolicy", &["Never", "PreemptLowerPriority"], &mut errs);
    errs
}

pub fn priority_class_update(old: &hub::PriorityClass, new: &hub::PriorityClass) -> Vec<FieldError> {
    let mut errs = priority_class(new);
    if old.value != new.value {
        errs.push(FieldError::forbidden("value", "may not be changed in an update."));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pc(value: serde_json::Value) -> hub::PriorityClass {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn priority_classes() {
        let high = pc(json!({"metadata": {"name": "high"}, "value": 1000}));
        assert!(priority_class(&high).is_empty());
        assert_eq!(
            priority_class(&pc(json!({"metadata": {"name": "high"}, "value": 2_000_000_000})))[0].to_string(),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
        );
        assert!(priority_class(&pc(json!({"metadata": {"name": "system-x"}, "value": 2_000_000_000}))).is_empty());
        assert_eq!(priority_class_update(&high, &pc(json!({"metadata": {"name": "high"}, "value": 1}))).len(), 1);
    }
}
