//! `Priority` (`plugin/pkg/admission/priority`).

use kapi_api::api::core::v1::Pod;
use serde_json::{Value, json};

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
use crate::registry::object::Object;
use crate::registry::strategy::HookFuture;

/// The plugin in the chain: it acts on new pods.
pub struct Priority;

impl CreatePlugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    fn kind_plugin(&self) -> super::KindPlugin {
        super::KindPlugin::Priority
    }

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, pod: &'a mut Object) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            let pod = pod.typed_mut::<Pod>().map_err(Rejection::object_form)?;
            // The classes as cached (upstream's plugin reads them through an informer); a class
            // created a moment ago may not be cached yet: one consistent read before refusing.
            let mut classes = priority_classes(store, Some(0)).await?;
            let named = pod.spec.as_ref().and_then(|spec| spec.priority_class_name.as_deref());
            if let Some(named) = named.filter(|n| !n.is_empty())
                && !classes.iter().any(|c| c.object()["metadata"]["name"] == named)
            {
                classes = priority_classes(store, None).await?;
            }
            priority(pod, classes.iter().map(|c| c.object()))
        })
    }
}

/// `Priority` (`plugin/pkg/admission/priority`): a pod's `priority` and `preemptionPolicy` come
/// from its priority class; without one, from the global default class if there is one (its
/// name is recorded), else priority 0 preempting lower priorities. `classes` are the stored
/// priority classes.
pub fn priority<'c>(pod: &mut Pod, classes: impl Iterator<Item = &'c Value> + Clone) -> Result<(), Rejection> {
    let spec = pod.spec.get_or_insert_default();
    let name = spec.priority_class_name.clone().unwrap_or_default();
    let class_policy = |c: &Value| c["preemptionPolicy"].as_str().unwrap_or("PreemptLowerPriority").to_owned();
    let (value, policy) = if name.is_empty() {
        let default = classes.clone().filter(|c| c["globalDefault"] == json!(true)).min_by_key(|c| c["value"].as_i64().unwrap_or_default());
        match default {
            Some(c) => {
                spec.priority_class_name = c["metadata"]["name"].as_str().map(str::to_owned);
                (c["value"].as_i64().unwrap_or_default(), class_policy(c))
            }
            None => (0, "PreemptLowerPriority".to_owned()),
        }
    } else if let Some(class) = crate::registry::bootstrap::SYSTEM_PRIORITY_CLASSES.iter().find(|c| c.name == name) {
        // The start-up classes (`registry::bootstrap`), known even before the store has them.
        (class.value, "PreemptLowerPriority".to_owned())
    } else {
        match classes.clone().find(|c| c["metadata"]["name"] == json!(name)) {
            Some(c) => (c["value"].as_i64().unwrap_or_default(), class_policy(c)),
            None => {
                return Err(Rejection::Forbidden(format!("no PriorityClass with name {name} was found")));
            }
        }
    };
    if let Some(given) = spec.priority.filter(|p| i64::from(*p) != value) {
        return Err(Rejection::Forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    if let Some(given) = spec.preemption_policy.as_deref().filter(|p| *p != policy) {
        return Err(Rejection::Forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    // Class values are validated as int32s when the classes are written.
    let value = i32::try_from(value).map_err(|_| Rejection::Internal(format!("priority class value {value} is out of range")))?;
    spec.priority = Some(value);
    spec.preemption_policy = Some(policy);
    Ok(())
}

/// The stored priority classes; `not_older_than` as in [`crate::storage::ListOptions`].
async fn priority_classes(
    store: &dyn crate::storage::Storage,
    not_older_than: Option<crate::storage::Revision>,
) -> Result<Vec<std::sync::Arc<crate::registry::store::watched::Decoded>>, Rejection> {
    let options = crate::storage::ListOptions { not_older_than, ..Default::default() };
    let stored = store
        .list(&crate::registry::keys::key("scheduling.k8s.io", "priorityclasses", None, None), options)
        .await
        .map_err(|e| Rejection::Internal(format!("listing priority classes: {e}")))?;
    stored
        .kvs
        .iter()
        .map(crate::registry::store::watched::stored_object)
        .collect::<Result<_, _>>()
        .map_err(|e| Rejection::Internal(format!("decoding a priority class: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`priority`] on the pod `pod`, written as JSON: the pod's spec as JSON.
    fn prioritised<'c>(pod: Value, classes: impl Iterator<Item = &'c Value> + Clone) -> Result<Value, Rejection> {
        let mut pod: Pod = serde_json::from_value(pod).unwrap();
        priority(&mut pod, classes)?;
        let mut spec = serde_json::to_value(pod).unwrap()["spec"].take();
        // Written as Go writes a spec without containers: `null`, which is not what is tested.
        spec.as_object_mut().unwrap().remove("containers");
        Ok(spec)
    }

    #[test]
    fn priorities_come_from_classes() {
        let spec = prioritised(json!({"spec": {}}), [].iter()).unwrap();
        assert_eq!(spec, json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));

        let classes = [
            json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}),
            json!({"metadata": {"name": "low-default"}, "value": 10, "globalDefault": true}),
        ];
        let spec = prioritised(json!({"spec": {}}), classes.iter()).unwrap();
        assert_eq!(spec, json!({"priorityClassName": "low-default", "priority": 10, "preemptionPolicy": "PreemptLowerPriority"}));
        let spec = prioritised(json!({"spec": {"priorityClassName": "high"}}), classes.iter()).unwrap();
        assert_eq!(spec["priority"], 1000);
        assert_eq!(spec["preemptionPolicy"], "Never");
        let spec = prioritised(json!({"spec": {"priorityClassName": "system-node-critical"}}), classes.iter()).unwrap();
        assert_eq!(spec["priority"], 2_000_001_000);

        let err = prioritised(json!({"spec": {"priorityClassName": "nope"}}), classes.iter()).unwrap_err();
        assert!(matches!(&err, Rejection::Forbidden(m) if m == "no PriorityClass with name nope was found"), "{err:?}");
        let err = prioritised(json!({"spec": {"priority": 5}}), [].iter()).unwrap_err();
        assert!(
            matches!(&err, Rejection::Forbidden(m) if m.starts_with("the integer value of priority (5) must not be provided")),
            "{err:?}"
        );
    }
}
