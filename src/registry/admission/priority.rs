//! `Priority` (`plugin/pkg/admission/priority`).

use serde_json::{Value, json};

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
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

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, pod: &'a mut Value) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            // The classes as cached (upstream's plugin reads them through an informer); a class
            // created a moment ago may not be cached yet: one consistent read before refusing.
            let mut classes = priority_classes(store, Some(0)).await?;
            if let Some(named) = pod["spec"]["priorityClassName"].as_str().filter(|n| !n.is_empty())
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
pub fn priority<'c>(pod: &mut Value, classes: impl Iterator<Item = &'c Value> + Clone) -> Result<(), Rejection> {
    let spec = &mut pod["spec"];
    let name = spec["priorityClassName"].as_str().unwrap_or_default().to_owned();
    let class_policy = |c: &Value| c["preemptionPolicy"].as_str().unwrap_or("PreemptLowerPriority").to_owned();
    let (value, policy) = if name.is_empty() {
        let default = classes.clone().filter(|c| c["globalDefault"] == json!(true)).min_by_key(|c| c["value"].as_i64().unwrap_or_default());
        match default {
            Some(c) => {
                spec["priorityClassName"] = c["metadata"]["name"].clone();
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
    if let Some(given) = spec["priority"].as_i64().filter(|p| *p != value) {
        return Err(Rejection::Forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    if let Some(given) = spec["preemptionPolicy"].as_str().filter(|p| *p != policy) {
        return Err(Rejection::Forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    spec["priority"] = json!(value);
    spec["preemptionPolicy"] = json!(policy);
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

    #[test]
    fn priorities_come_from_classes() {
        let mut pod = json!({"spec": {}});
        priority(&mut pod, [].iter()).unwrap();
        assert_eq!(pod["spec"], json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));

        let classes = [
            json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}),
            json!({"metadata": {"name": "low-default"}, "value": 10, "globalDefault": true}),
        ];
        let mut pod = json!({"spec": {}});
        priority(&mut pod, classes.iter()).unwrap();
        assert_eq!(pod["spec"], json!({"priorityClassName": "low-default", "priority": 10, "preemptionPolicy": "PreemptLowerPriority"}));
        let mut pod = json!({"spec": {"priorityClassName": "high"}});
        priority(&mut pod, classes.iter()).unwrap();
        assert_eq!(pod["spec"]["priority"], 1000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        let mut pod = json!({"spec": {"priorityClassName": "system-node-critical"}});
        priority(&mut pod, classes.iter()).unwrap();
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);

        let mut unknown = json!({"spec": {"priorityClassName": "nope"}});
        let err = priority(&mut unknown, classes.iter()).unwrap_err();
        assert!(matches!(&err, Rejection::Forbidden(m) if m == "no PriorityClass with name nope was found"), "{err:?}");
        let mut wrong = json!({"spec": {"priority": 5}});
        let err = priority(&mut wrong, [].iter()).unwrap_err();
        assert!(
            matches!(&err, Rejection::Forbidden(m) if m.starts_with("the integer value of priority (5) must not be provided")),
            "{err:?}"
        );
    }
}
