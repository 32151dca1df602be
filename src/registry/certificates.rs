//! Certificate signing requests' strategy (`pkg/registry/certificates/certificates`): what the
//! server fills in on the conditions a write brings.

use serde_json::Value;

/// A request records who made it, whatever the body said: the user's name and groups (a
/// client certificate's user has no UID or extra attributes, so those are cleared).
pub fn record_requester(csr: &mut Value, user: Option<&crate::pki::UserInfo>) {
    let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["username", "uid", "groups", "extra"] {
        spec.remove(field);
    }
    if let Some(user) = user {
        spec.insert("username".into(), Value::String(user.name.clone()));
        if !user.groups.is_empty() {
            spec.insert("groups".into(), user.groups.iter().cloned().map(Value::String).collect());
        }
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets the current time;
/// one without `lastTransitionTime` keeps the stored condition's of the same type and status, or
/// gets the current time.
pub fn populate_condition_timestamps(csr: &mut Value, old: &Value) {
    let now = crate::server::objects::now();
    let old_conditions = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let Some(conditions) = csr["status"]["conditions"].as_array_mut() else { return };
    for condition in conditions {
        let is_set = |c: &Value, field: &str| c[field].as_str().is_some_and(|t| !t.is_empty());
        if !is_set(condition, "lastUpdateTime") {
            condition["lastUpdateTime"] = Value::String(now.clone());
        }
        if !is_set(condition, "lastTransitionTime") {
            let kept = old_conditions
                .iter()
                .find(|o| o["type"] == condition["type"] && o["status"] == condition["status"] && is_set(o, "lastTransitionTime"))
                .map(|o| o["lastTransitionTime"].clone());
            condition["lastTransitionTime"] = kept.unwrap_or_else(|| Value::String(now.clone()));
        }
    }
}
