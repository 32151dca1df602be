//! Upstream's mutating admission plugins that give every new pod fields `kubectl get -o yaml`
//! shows: `ServiceAccount`, `DefaultTolerationSeconds` and `Priority`. (They run after defaulting, on the
//! created object, with the store at hand for priority classes.)
//!
//! Upstream answers a rejection by these plugins with 403 Forbidden; the registry's admission
//! hook reports field errors (422 Invalid) with upstream's messages.

use serde_json::{Value, json};

use super::Rejection;

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

/// Pods the kubelet mirrors from static manifests: they get no service account.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Where the service account volume is mounted in every container.
pub const SERVICE_ACCOUNT_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A pod's service account, as cached (upstream's plugin reads it through an informer). A namespace gets its `default` account from the
/// controller (`controllers::service_accounts`) right after it is created, so a pod created
/// just then waits for it briefly rather than fail.
async fn service_account_named(store: &dyn crate::storage::Storage, namespace: &str, name: &str) -> Result<Value, Rejection> {
    let k = crate::server::rest::key("", "serviceaccounts", Some(namespace), Some(name));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match store.get_cached(&k).await {
            Ok(Some(kv)) => {
                return crate::server::objects::decode_stored(&kv.value)
                    .map(|(_, account)| account)
                    .map_err(|e| Rejection::Internal(format!("decoding service account {namespace}/{name}: {e}")));
            }
            Ok(None) if tokio::time::Instant::now() < deadline && name == "default" => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Ok(None) => {
                return Err(Rejection::Forbidden(format!(
                    "error looking up service account {namespace}/{name}: serviceaccount \"{name}\" not found"
                )));
            }
            Err(e) => return Err(Rejection::Internal(format!("looking up service account {namespace}/{name}: {e}"))),
        }
    }
}

/// `ServiceAccount` admission (`plugin/pkg/admission/serviceaccount`): the pod runs as
/// `default` unless it names an account; it inherits the account's image pull secrets when it
/// has none; and unless the pod or the account opts out of automounting, it gets the projected
/// `kube-api-access-<suffix>` volume (token, cluster CA, namespace) mounted read-only in every
/// container and init container.
pub fn service_account(pod: &mut Value, account: &Value, suffix: &str) {
    let name = account["metadata"]["name"].clone();
    pod["spec"]["serviceAccountName"] = name.clone();
    pod["spec"]["serviceAccount"] = name;
    if pod["spec"]["imagePullSecrets"].as_array().is_none_or(Vec::is_empty)
        && let Some(secrets) = account["imagePullSecrets"].as_array().filter(|s| !s.is_empty())
    {
        pod["spec"]["imagePullSecrets"] = json!(secrets.iter().map(|s| json!({"name": s["name"]})).collect::<Vec<_>>());
    }
    let automount =
        pod["spec"]["automountServiceAccountToken"].as_bool().or_else(|| account["automountServiceAccountToken"].as_bool()).unwrap_or(true);
    if !automount {
        return;
    }
    let mounted = |c: &Value| c["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| m["mountPath"] == SERVICE_ACCOUNT_MOUNT_PATH));
    let volume = format!("kube-api-access-{suffix}");
    let mut used = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = pod["spec"][list].as_array_mut() else { continue };
        for container in containers.iter_mut().filter(|c| !mounted(c)) {
            let mount = json!({"name": volume, "readOnly": true, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH});
            match container["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount),
                None => container["volumeMounts"] = json!([mount]),
            }
            used = true;
        }
    }
    if !used {
        return;
    }
    let projected = json!({
        "name": volume,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": crate::controllers::service_accounts::ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": 420,
        },
    });
    match pod["spec"]["volumes"].as_array_mut() {
        Some(volumes) => volumes.push(projected),
        None => pod["spec"]["volumes"] = json!([projected]),
    }
}

/// `Priority` (`plugin/pkg/admission/priority`): a pod's `priority` and `preemptionPolicy` come
/// from its priority class; without one, from the global default class if there is one (its
/// name is recorded), else priority 0 preempting lower priorities. `classes` are the stored
/// priority classes.
pub fn priority(pod: &mut Value, classes: &[Value]) -> Result<(), Rejection> {
    let spec = &mut pod["spec"];
    let name = spec["priorityClassName"].as_str().unwrap_or_default().to_owned();
    let class_policy = |c: &Value| c["preemptionPolicy"].as_str().unwrap_or("PreemptLowerPriority").to_owned();
    let (value, policy) = if name.is_empty() {
        let default = classes.iter().filter(|c| c["globalDefault"] == json!(true)).min_by_key(|c| c["value"].as_i64().unwrap_or_default());
        match default {
            Some(c) => {
                spec["priorityClassName"] = c["metadata"]["name"].clone();
                (c["value"].as_i64().unwrap_or_default(), class_policy(c))
            }
            None => (0, "PreemptLowerPriority".to_owned()),
        }
    } else if let Some(class) = super::bootstrap::SYSTEM_PRIORITY_CLASSES.iter().find(|c| c.name == name) {
        // The start-up classes (`registry::bootstrap`), known even before the store has them.
        (class.value, "PreemptLowerPriority".to_owned())
    } else {
        match classes.iter().find(|c| c["metadata"]["name"] == json!(name)) {
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

/// Both plugins on a new pod, reading the priority classes as cached (upstream's plugin reads
/// them through an informer).
pub async fn admit_pod(store: &dyn crate::storage::Storage, pod: &mut Value) -> Result<(), Rejection> {
    if pod["metadata"]["annotations"][MIRROR_POD_ANNOTATION].is_null() {
        let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default().to_owned();
        let name = pod["spec"]["serviceAccountName"].as_str().filter(|n| !n.is_empty()).unwrap_or("default").to_owned();
        let account = service_account_named(store, &namespace, &name).await?;
        service_account(pod, &account, &crate::server::objects::random_suffix());
    }
    default_toleration_seconds(pod);
    let mut classes = priority_classes(store, Some(0)).await?;
    // A class created a moment ago may not be cached yet: one consistent read before refusing.
    if let Some(named) = pod["spec"]["priorityClassName"].as_str().filter(|n| !n.is_empty())
        && !classes.iter().any(|c| c["metadata"]["name"] == named)
    {
        classes = priority_classes(store, None).await?;
    }
    priority(pod, &classes)
}

/// The stored priority classes; `not_older_than` as in [`crate::storage::ListOptions`].
async fn priority_classes(
    store: &dyn crate::storage::Storage,
    not_older_than: Option<crate::storage::Revision>,
) -> Result<Vec<Value>, Rejection> {
    let options = crate::storage::ListOptions { not_older_than, ..Default::default() };
    let stored = store
        .list(&crate::server::rest::key("scheduling.k8s.io", "priorityclasses", None, None), options)
        .await
        .map_err(|e| Rejection::Internal(format!("listing priority classes: {e}")))?;
    stored
        .kvs
        .iter()
        .map(|kv| crate::server::objects::decode_stored(&kv.value).map(|(_, class)| class))
        .collect::<Result<_, _>>()
        .map_err(|e| Rejection::Internal(format!("decoding a priority class: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_their_service_account_and_token_volume() {
        let account = json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "regcred"}]});
        let mut pod = json!({"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}});
        service_account(&mut pod, &account, "abcde");
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(pod["spec"]["serviceAccount"], "default");
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "regcred"}]));
        assert_eq!(pod["spec"]["volumes"][0]["name"], "kube-api-access-abcde");
        assert_eq!(pod["spec"]["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3607);
        for list in ["containers", "initContainers"] {
            assert_eq!(
                pod["spec"][list][0]["volumeMounts"],
                json!([{"name": "kube-api-access-abcde", "readOnly": true, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH}])
            );
        }
        // Opting out, on the pod or the account, mounts nothing.
        let mut quiet = json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "a"}]}});
        service_account(&mut quiet, &account, "abcde");
        assert!(quiet["spec"]["volumes"].is_null());
        let mut quiet = json!({"spec": {"containers": [{"name": "a"}]}});
        service_account(&mut quiet, &json!({"metadata": {"name": "x"}, "automountServiceAccountToken": false}), "abcde");
        assert!(quiet["spec"]["volumes"].is_null() && quiet["spec"]["serviceAccountName"] == "x");
    }

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
        let err = priority(&mut unknown, &classes).unwrap_err();
        assert!(matches!(&err, Rejection::Forbidden(m) if m == "no PriorityClass with name nope was found"), "{err:?}");
        let mut wrong = json!({"spec": {"priority": 5}});
        let err = priority(&mut wrong, &[]).unwrap_err();
        assert!(
            matches!(&err, Rejection::Forbidden(m) if m.starts_with("the integer value of priority (5) must not be provided")),
            "{err:?}"
        );
    }
}
