//! `DefaultTolerationSeconds` (`plugin/pkg/admission/defaulttolerationseconds`).

use serde_json::{Value, json};

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
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

    fn admit_created<'a>(&'a self, _store: &'a dyn crate::storage::Storage, pod: &'a mut Value) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            default_toleration_seconds(pod);
            Ok(())
        })
    }
}

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
        let mut one =
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]}});
        default_toleration_seconds(&mut one);
        assert_eq!(one["spec"]["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(one["spec"]["tolerations"][1]["key"], "node.kubernetes.io/not-ready");
    }
}
