//! `DefaultTolerationSeconds` (`plugin/pkg/admission/defaulttolerationseconds`).

use kapi_api::api::core::v1::{Pod, Toleration};

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
use crate::registry::object::Object;
use crate::registry::strategy::HookFuture;

/// The plugin in the chain: it acts on new pods.
pub struct DefaultTolerationSeconds;

impl CreatePlugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    fn kind_plugin(&self) -> super::KindPlugin {
        super::KindPlugin::DefaultTolerationSeconds
    }

    fn admit_created<'a>(&'a self, _store: &'a dyn crate::storage::Storage, pod: &'a mut Object) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            default_toleration_seconds(pod.typed_mut::<Pod>().map_err(Rejection::object_form)?);
            Ok(())
        })
    }
}

/// `DefaultTolerationSeconds` (`plugin/pkg/admission/defaulttolerationseconds`): a pod that
/// does not tolerate a node being not ready or unreachable (`NoExecute`) tolerates it for 300s,
/// so it is evicted five minutes after its node goes away. A toleration without key or effect
/// counts as tolerating both.
pub fn default_toleration_seconds(pod: &mut Pod) {
    let tolerations = &mut pod.spec.get_or_insert_default().tolerations;
    let tolerates = |tolerations: &[Toleration], key: &str| {
        tolerations.iter().any(|t| {
            let k = t.key.as_deref().unwrap_or_default();
            let effect = t.effect.as_deref().unwrap_or_default();
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> =
        ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].into_iter().filter(|key| !tolerates(tolerations, key)).collect();
    for key in missing {
        tolerations.push(Toleration {
            key: Some(key.to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some("NoExecute".to_owned()),
            toleration_seconds: Some(300),
            value: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// [`default_toleration_seconds`] on the pod `pod`, written as JSON: the pod's spec.
    fn defaulted(pod: Value) -> Value {
        let mut pod: Pod = serde_json::from_value(pod).unwrap();
        default_toleration_seconds(&mut pod);
        serde_json::to_value(pod).unwrap()["spec"].take()
    }

    #[test]
    fn pods_tolerate_lost_nodes_for_five_minutes() {
        assert_eq!(
            defaulted(json!({"spec": {}}))["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        // Tolerating everything (no key) tolerates both.
        let all = defaulted(json!({"spec": {"tolerations": [{"operator": "Exists"}]}}));
        assert_eq!(all["tolerations"], json!([{"operator": "Exists"}]));
        let one = defaulted(
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]}}),
        );
        assert_eq!(one["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(one["tolerations"][1]["key"], "node.kubernetes.io/not-ready");
    }
}
