//! `DefaultStorageClass` (`plugin/pkg/admission/storage/storageclass/setdefault`): a new
//! PersistentVolumeClaim that names no storage class gets the cluster's default one.

use serde_json::Value;

use super::on_create::CreatePlugin;
use crate::registry::Rejection;
use crate::registry::strategy::HookFuture;

/// The plugin in the chain.
pub struct DefaultStorageClass;

/// The annotations that mark a StorageClass as the default (`IsDefaultAnnotation`).
const DEFAULT_ANNOTATIONS: [&str; 2] = ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];
/// The annotation older claims name their class with (`PersistentVolumeClaimHasClass`).
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

impl CreatePlugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }

    fn kind_plugin(&self) -> super::KindPlugin {
        super::KindPlugin::DefaultStorageClass
    }

    fn admit_created<'a>(
        &'a self,
        store: &'a dyn crate::storage::Storage,
        claim: &'a mut crate::registry::object::Object,
    ) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            let claim = claim.value_mut().map_err(Rejection::object_form)?;
            if has_class(claim) {
                return Ok(());
            }
            let key = crate::registry::keys::key("storage.k8s.io", "storageclasses", None, None);
            // The classes as cached, as upstream's plugin reads them from an informer.
            let options = crate::storage::ListOptions { not_older_than: Some(0), ..Default::default() };
            let listed = store.list(&key, options).await.map_err(|e| Rejection::Internal(format!("listing storage classes: {e}")))?;
            let classes: Vec<_> = listed.kvs.iter().filter_map(|kv| crate::registry::store::watched::stored_object(kv).ok()).collect();
            if let Some(class) = default_class(classes.iter().map(|c| c.object())) {
                claim["spec"]["storageClassName"] = class["metadata"]["name"].clone();
            }
            Ok(())
        })
    }
}

/// Whether the claim names a class: `storageClassName` set (even to `""`, which asks for no
/// class), or the beta annotation.
fn has_class(claim: &Value) -> bool {
    !claim["spec"]["storageClassName"].is_null() || claim["metadata"]["annotations"].get(BETA_CLASS_ANNOTATION).is_some()
}

/// `GetDefaultClass`: of the classes marked default, the newest (by creation time; on a tie
/// the first by name).
fn default_class<'c>(classes: impl Iterator<Item = &'c Value>) -> Option<&'c Value> {
    let created = |class: &Value| {
        class["metadata"]["creationTimestamp"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.timestamp())
    };
    let name = |class: &'c Value| class["metadata"]["name"].as_str().unwrap_or_default();
    classes
        .filter(|class| DEFAULT_ANNOTATIONS.iter().any(|annotation| class["metadata"]["annotations"][annotation] == "true"))
        .min_by(|a, b| created(b).cmp(&created(a)).then_with(|| name(a).cmp(name(b))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_newest_default_class_is_chosen() {
        let class = |name: &str, created: &str, default: Option<&str>| {
            let annotations = match default {
                Some(annotation) => json!({annotation: "true"}),
                None => json!({}),
            };
            json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}})
        };
        let classes = [
            class("old", "2026-01-01T00:00:00Z", Some(DEFAULT_ANNOTATIONS[0])),
            class("plain", "2026-06-01T00:00:00Z", None),
            class("new-b", "2026-03-01T00:00:00Z", Some(DEFAULT_ANNOTATIONS[1])),
            class("new-a", "2026-03-01T00:00:00Z", Some(DEFAULT_ANNOTATIONS[0])),
        ];
        assert_eq!(default_class(classes.iter()).unwrap()["metadata"]["name"], "new-a");
        assert!(default_class(classes[1..2].iter()).is_none());

        assert!(has_class(&json!({"spec": {"storageClassName": ""}})), "an empty name asks for no class");
        assert!(has_class(&json!({"metadata": {"annotations": {BETA_CLASS_ANNOTATION: "x"}}, "spec": {}})));
        assert!(!has_class(&json!({"spec": {}})));
    }
}
