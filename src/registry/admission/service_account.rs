//! `ServiceAccount` (`plugin/pkg/admission/serviceaccount`).

use serde_json::{Value, json};

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
use crate::registry::strategy::HookFuture;

/// The plugin in the chain: new pods only, and not the kubelet's mirror pods.
pub struct ServiceAccount;

impl CreatePlugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }

    fn kind_plugin(&self) -> super::KindPlugin {
        super::KindPlugin::ServiceAccount
    }

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, pod: &'a mut Value) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            if !pod["metadata"]["annotations"][MIRROR_POD_ANNOTATION].is_null() {
                return Ok(());
            }
            let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default().to_owned();
            let name = pod["spec"]["serviceAccountName"].as_str().filter(|n| !n.is_empty()).unwrap_or("default").to_owned();
            let account = service_account_named(store, &namespace, &name).await?;
            service_account(pod, account.object(), &crate::registry::objects::random_suffix());
            Ok(())
        })
    }
}

/// Pods the kubelet mirrors from static manifests: they get no service account.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The ConfigMap every namespace gets (upstream's `RootCACertConfigMapName`).
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";

/// Where the service account volume is mounted in every container.
pub const SERVICE_ACCOUNT_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A pod's service account, as cached (upstream's plugin reads it through an informer). A namespace gets its `default` account from the
/// controller (`controllers::service_accounts`) right after it is created, so a pod created
/// just then waits for it briefly rather than fail.
async fn service_account_named(
    store: &dyn crate::storage::Storage,
    namespace: &str,
    name: &str,
) -> Result<std::sync::Arc<crate::registry::store::watched::Decoded>, Rejection> {
    let k = crate::registry::keys::key("", "serviceaccounts", Some(namespace), Some(name));
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match store.get_cached(&k).await {
            Ok(Some(kv)) => {
                return crate::registry::store::watched::stored_object(&kv)
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
    let spec = &mut pod["spec"];
    let name = &account["metadata"]["name"];
    spec["serviceAccountName"] = name.clone();
    spec["serviceAccount"] = name.clone();
    if spec["imagePullSecrets"].as_array().is_none_or(Vec::is_empty)
        && let Some(secrets) = account["imagePullSecrets"].as_array().filter(|s| !s.is_empty())
    {
        spec["imagePullSecrets"] = Value::Array(secrets.iter().map(|s| object([("name", s["name"].clone())])).collect());
    }
    let automount =
        spec["automountServiceAccountToken"].as_bool().or_else(|| account["automountServiceAccountToken"].as_bool()).unwrap_or(true);
    if !automount {
        return;
    }
    let mounted = |c: &Value| c["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| m["mountPath"] == SERVICE_ACCOUNT_MOUNT_PATH));
    let volume = format!("kube-api-access-{suffix}");
    let mut used = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        for container in containers.iter_mut().filter(|c| !mounted(c)) {
            let mount = object([
                ("name", Value::String(volume.clone())),
                ("readOnly", Value::Bool(true)),
                ("mountPath", Value::String(SERVICE_ACCOUNT_MOUNT_PATH.to_owned())),
            ]);
            match container["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount),
                None => container["volumeMounts"] = Value::Array(vec![mount]),
            }
            used = true;
        }
    }
    if !used {
        return;
    }
    // The same for every pod but its name: built once (a pod create builds nothing else as
    // large).
    static PROJECTED: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        json!({
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": 420,
        })
    });
    let projected = object([("name", Value::String(volume)), ("projected", PROJECTED.clone())]);
    match spec["volumes"].as_array_mut() {
        Some(volumes) => volumes.push(projected),
        None => spec["volumes"] = Value::Array(vec![projected]),
    }
}

/// A JSON object of these fields.
fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(name, value)| (name.to_owned(), value)).collect())
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
}
