//! Upstream's mutating admission plugins that give every new pod fields `kubectl get -o yaml`
//! shows: `DefaultTolerationSeconds` and `Priority`. (They run after defaulting, on the
//! created object, with the store at hand for priority classes.)
//!
//! Upstream answers a rejection by these plugins with 403 Forbidden; the registry's admission
//! hook reports field errors (422 Invalid) with upstream's messages.

use serde_json::{Value, json};

use crate::status::FieldError;

/// `DefaultTolerationSeconds` (`plugin/pkg/admission/defaulttolerationseconds`): a pod that
/// does not tolerate a node being not ready or unreachable (`NoExecute`) tolerates it for 300s,
/// so it is evicted five minutes after its node goes away. A toleration without key or effect
/// counts as tolerating both.
pub fn default_toleration_seconds(pod: &mut Value) {
    let tolerations = pod["spec"]["tolerations"].as_array().cloned().unwrap_or_default();
    let tolerates = |key: &str| {
        tolerations.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or_default();
            let effect = t["effect"].as_str().unwrap_or_default();
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let mut added = Vec::new();
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        if !tolerates(key) {
            added.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    if !added.is_empty() {
        let mut all = tolerations;
        all.extend(added);
        pod["spec"]["tolerations"] = Value::Array(all);
    }
}

/// The priority classes the API server creates at start-up (upstream's scheduling post-start
/// hook), which exist on every cluster: (name, value).
pub const SYSTEM_PRIORITY_CLASSES: &[(&str, i64)] =
    &[("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];

/// `Priority` (`plugin/pkg/admission/priority`): a pod's `priority` and `preemptionPolicy` come
/// from its priority class; without one, from the global default class if there is one (its
/// name is recorded), else priority 0 preempting lower priorities. `classes` are the stored
/// priority classes.
pub fn priority(pod: &mut Value, classes: &[Value]) -> Result<(), Vec<FieldError>> {
    let spec = &mut pod["spec"];
    let name = spec["priorityClassName"].as_str().unwrap_or_default().to_owned();
    let class_policy = |c: &Value| c["preemptionPolicy"].as_str().unwrap_or("PreemptLowerPriority").to_owned();
    let (value, policy) = if name.is_empty() {
        let default = classes
            .iter()
            .filter(|c| c["globalDefault"] == json!(true))
            .min_by_key(|c| c["value"].as_i64().unwrap_or_default());
        match default {
            Some(c) => {
                spec["priorityClassName"] = c["metadata"]["name"].clone();
                (c["value"].as_i64().unwrap_or_default(), class_policy(c))
            }
            None => (0, "PreemptLowerPriority".to_owned()),
        }
    } else if let Some((_, value)) = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
        (*value, "PreemptLowerPriority".to_owned())
    } else {
        match classes.iter().find(|c| c["metadata"]["name"] == json!(name)) {
            Some(c) => (c["value"].as_i64().unwrap_or_default(), class_policy(c)),
            None => {
                return Err(vec![FieldError::forbidden(
                    "spec.priorityClassName",
                    format!("no PriorityClass with name {name} was found"),
                )]);
            }
        }
    };
    if let Some(given) = spec["priority"].as_i64().filter(|p| *p != value) {
        return Err(vec![FieldError::forbidden(
            "spec.priority",
            format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            ),
        )]);
    }
    if let Some(given) = spec["preemptionPolicy"].as_str().filter(|p| *p != policy) {
        return Err(vec![FieldError::forbidden(
            "spec.preemptionPolicy",
            format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        )]);
    }
    spec["priority"] = json!(value);
    spec["preemptionPolicy"] = json!(policy);
    Ok(())
}

/// Both plugins on a new pod, reading the stored priority classes.
pub async fn admit_pod(store: &dyn crate::storage::Storage, pod: &mut Value) -> Result<(), Vec<FieldError>> {
    default_toleration_seconds(pod);
    let stored = store
        .list(&crate::server::rest::key("scheduling.k8s.io", "priorityclasses", None, None), crate::storage::ListOptions::default())
        .await
        .map_err(|e| vec![FieldError::internal("spec.priorityClassName", e)])?;
    let mut classes = Vec::with_capacity(stored.kvs.len());
    for kv in &stored.kvs {
        let (_, value) = crate::server::objects::decode_stored(&kv.value)
            .map_err(|e| vec![FieldError::internal("spec.priorityClassName", e)])?;
        classes.push(value);
    }
    priority(pod, &classes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_tolerate_lost_nodes_for_five_minutes() {
        let mut pod = json!({"spec": {}});
        default_toleration_seconds(&mut pod);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        // Tolerating everything (no key) tolerates both.
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        default_toleration_seconds(&mut all);
        assert_eq!(all["spec"]["tolerations"], json!([{"operator": "Exists"}]));
        let mut one = json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]}});
        default_toleration_seconds(&mut one);
        assert_eq!(one["spec"]["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(one["spec"]["tolerations"][1]["key"], "node.kubernetes.io/not-ready");
    }

    #[test]
    fn priorities_come_from_classes() {
        let mut pod = json!({"spec": {}});
        priority(&mut pod, &[]).unwrap();
        assert_eq!(pod["spec"], json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));

        let classes = [
            json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}),
            json!({"metadata": {"name": "low-default"}, "value": 10, "globalDefault": true}),
        ];
        let mut pod = json!({"spec": {}});
        priority(&mut pod, &classes).unwrap();
        assert_eq!(pod["spec"], json!({"priorityClassName": "low-default", "priority": 10, "preemptionPolicy": "PreemptLowerPriority"}));
        let mut pod = json!({"spec": {"priorityClassName": "high"}});
        priority(&mut pod, &classes).unwrap();
        assert_eq!(pod["spec"]["priority"], 1000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        let mut pod = json!({"spec": {"priorityClassName": "system-node-critical"}});
        priority(&mut pod, &classes).unwrap();
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);

        let mut unknown = json!({"spec": {"priorityClassName": "nope"}});
        let errs = priority(&mut unknown, &classes).unwrap_err();
        assert!(errs[0].to_string().contains("no PriorityClass with name nope was found"), "{errs:?}");
        let mut wrong = json!({"spec": {"priority": 5}});
        let errs = priority(&mut wrong, &[]).unwrap_err();
        assert!(errs[0].to_string().contains("the integer value of priority (5) must not be provided"), "{errs:?}");
    }
}
