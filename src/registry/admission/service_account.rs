//! `ServiceAccount` (`plugin/pkg/admission/serviceaccount`).

use kapi_api::api::core::v1::{
    ConfigMapProjection, DownwardAPIProjection, DownwardAPIVolumeFile, KeyToPath, LocalObjectReference, ObjectFieldSelector, Pod,
    ProjectedVolumeSource, ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};
use serde_json::Value;

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
use crate::registry::object::Object;
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

    fn admit_created<'a>(&'a self, store: &'a dyn crate::storage::Storage, pod: &'a mut Object) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            let pod = pod.typed_mut::<Pod>().map_err(Rejection::object_form)?;
            let meta = pod.metadata.as_ref();
            if meta.is_some_and(|meta| meta.annotations.contains_key(MIRROR_POD_ANNOTATION)) {
                return Ok(());
            }
            let namespace = meta.and_then(|meta| meta.namespace.clone()).unwrap_or_default();
            let named = pod.spec.as_ref().and_then(|spec| spec.service_account_name.as_deref()).filter(|n| !n.is_empty());
            let name = named.unwrap_or("default").to_owned();
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
pub fn service_account(pod: &mut Pod, account: &Value, suffix: &str) {
    let spec = pod.spec.get_or_insert_default();
    let name = account["metadata"]["name"].as_str().map(str::to_owned);
    spec.service_account_name.clone_from(&name);
    spec.service_account = name;
    if spec.image_pull_secrets.is_empty()
        && let Some(secrets) = account["imagePullSecrets"].as_array()
    {
        let named = |s: &Value| LocalObjectReference { name: s["name"].as_str().map(str::to_owned) };
        spec.image_pull_secrets = secrets.iter().map(named).collect();
    }
    let automount = spec.automount_service_account_token.or_else(|| account["automountServiceAccountToken"].as_bool()).unwrap_or(true);
    if !automount {
        return;
    }
    let volume = format!("kube-api-access-{suffix}");
    let mut used = false;
    for container in spec.init_containers.iter_mut().chain(spec.containers.iter_mut()) {
        if container.volume_mounts.iter().any(|m| m.mount_path == SERVICE_ACCOUNT_MOUNT_PATH) {
            continue;
        }
        container.volume_mounts.push(VolumeMount {
            name: volume.clone(),
            read_only: Some(true),
            mount_path: SERVICE_ACCOUNT_MOUNT_PATH.to_owned(),
            ..Default::default()
        });
        used = true;
    }
    if !used {
        return;
    }
    spec.volumes.push(Volume { name: volume, projected: Some(token_volume_source()), ..Default::default() });
}

/// The projected source of every pod's token volume: its token (an hour and seven seconds,
/// upstream's `DefaultAPITokenExpirationSeconds`), the cluster's CA and its namespace.
fn token_volume_source() -> ProjectedVolumeSource {
    let token = ServiceAccountTokenProjection { expiration_seconds: Some(3607), path: "token".into(), ..Default::default() };
    let ca = ConfigMapProjection {
        name: Some(ROOT_CA_CONFIGMAP.into()),
        items: vec![KeyToPath { key: "ca.crt".into(), path: "ca.crt".into(), mode: None }],
        optional: None,
    };
    let namespace = DownwardAPIVolumeFile {
        path: "namespace".into(),
        field_ref: Some(ObjectFieldSelector { api_version: Some("v1".into()), field_path: "metadata.namespace".into() }),
        ..Default::default()
    };
    ProjectedVolumeSource {
        sources: vec![
            VolumeProjection { service_account_token: Some(token), ..Default::default() },
            VolumeProjection { config_map: Some(ca), ..Default::default() },
            VolumeProjection { downward_api: Some(DownwardAPIProjection { items: vec![namespace] }), ..Default::default() },
        ],
        default_mode: Some(420),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `service_account` on the pod `pod` is written as JSON, the pod it leaves as JSON.
    fn admitted(pod: Value, account: &Value) -> Value {
        let mut pod: Pod = serde_json::from_value(pod).unwrap();
        service_account(&mut pod, account, "abcde");
        serde_json::to_value(pod).unwrap()
    }

    #[test]
    fn pods_get_their_service_account_and_token_volume() {
        let account = json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "regcred"}]});
        let pod = admitted(json!({"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}}), &account);
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(pod["spec"]["serviceAccount"], "default");
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "regcred"}]));
        assert_eq!(pod["spec"]["volumes"][0]["name"], "kube-api-access-abcde");
        assert_eq!(
            pod["spec"]["volumes"][0]["projected"],
            json!({
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
                "defaultMode": 420,
            })
        );
        for list in ["containers", "initContainers"] {
            assert_eq!(
                pod["spec"][list][0]["volumeMounts"],
                json!([{"name": "kube-api-access-abcde", "readOnly": true, "mountPath": SERVICE_ACCOUNT_MOUNT_PATH}])
            );
        }
        // Opting out, on the pod or the account, mounts nothing.
        let quiet = admitted(json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "a"}]}}), &account);
        assert!(quiet["spec"]["volumes"].is_null());
        let account = json!({"metadata": {"name": "x"}, "automountServiceAccountToken": false});
        let quiet = admitted(json!({"spec": {"containers": [{"name": "a"}]}}), &account);
        assert!(quiet["spec"]["volumes"].is_null() && quiet["spec"]["serviceAccountName"] == "x");
    }
}
