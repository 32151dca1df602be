//! What apiextensions-apiserver's controllers do for CustomResourceDefinitions, in one loop:
//! the naming controller (which names a definition may take: `status.acceptedNames`,
//! `NamesAccepted`), the establishing controller (`Established`), the stored-versions record
//! (`status.storedVersions`), the finalizer controller (a deleted definition's objects are
//! deleted, then its `customresourcecleanup` finalizer removed), and the served-resource map
//! the server routes custom resources by ([`CustomResources`]).
//!
//! Every pass reads all definitions and is idempotent, so it runs on every replica and resumes
//! after a restart from what is stored; a replica serves a definition another one created as
//! soon as its watch reports it. Writes go through the registry's `Store` as a client's would.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kapi_api::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, CustomResourceDefinitionStatus};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::registry::apiextensions::customresourcedefinitions::set_condition;
use crate::registry::apiextensions::customresources::{CLEANUP_FINALIZER, CustomResource, CustomResources, Names, TakenNames};
use crate::registry::objects::Kind;
use crate::registry::store::{Current, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::Storage;

const GROUP: &str = "apiextensions.k8s.io";
const RESOURCE: &str = "customresourcedefinitions";

/// The definitions' loop (see [`super::Reconciler`]).
pub struct DefinitionController {
    pub config: Arc<StoreConfig>,
    /// What the server routes custom resources by: replaced at each pass.
    pub served: Arc<CustomResources>,
}

impl super::Reconciler for DefinitionController {
    const NAME: &'static str = "custom resource definitions";

    fn prefix(&self) -> String {
        // No store I/O: only the key layout is read.
        crate::registry::keys::key(GROUP, RESOURCE, None, None)
    }

    fn reconcile<'a>(&'a self, storage: &'a dyn Storage) -> Pin<Box<dyn Future<Output = Result<bool, ApiError>> + Send + 'a>> {
        Box::pin(reconcile(storage, &self.config, &self.served))
    }
}

fn definitions<'a>(storage: &'a dyn Storage, config: &'a StoreConfig) -> Store<'a> {
    let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: "CustomResourceDefinition".into() };
    Store::new(storage, config, GROUP, RESOURCE, kind)
}

/// One pass over every definition: names and conditions recorded, the served map replaced,
/// deleted definitions' objects deleted. True while a deletion waits for objects' finalizers.
pub async fn reconcile(storage: &dyn Storage, config: &StoreConfig, served: &CustomResources) -> Result<bool, ApiError> {
    let store = definitions(storage, config);
    let mut all = Vec::new();
    store
        .list(None, &Default::default(), &mut |definition| {
            all.push(definition);
            Ok(())
        })
        .await?;
    // Definitions holding accepted names keep them; the others are considered oldest first.
    all.sort_by_key(|d| {
        let holds_names = d["status"]["acceptedNames"]["plural"].as_str().is_some_and(|p| !p.is_empty());
        (!holds_names, d["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_owned(), name_of(d).to_owned())
    });
    let mut taken: BTreeMap<String, TakenNames> = BTreeMap::new();
    let mut serving = Vec::new();
    let mut cleanups = Vec::new();
    let mut pending = false;
    for definition in all {
        let name = name_of(&definition).to_owned();
        let group = definition["spec"]["group"].as_str().unwrap_or_default().to_owned();
        let mut desired = definition.clone();
        record_status(&mut desired, taken.entry(group).or_default());
        if desired["status"] != definition["status"] {
            let status = CustomResourceDefinitionStatus::deserialize(&desired["status"])
                .map_err(|e| ApiError::internal(format!("reading the status made for {name}: {e}")))?;
            let mut with_status = |current: Option<&Current<'_>>| {
                let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, RESOURCE), &name))?;
                let mut object = current.internal_object();
                object.typed_mut::<CustomResourceDefinition>()?.status = Some(status.clone());
                Ok(Proposed::edited(object))
            };
            let statuses = definitions(storage, config).with_subresource(Some("status"));
            match statuses
                .update(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, None, &name, &mut with_status)
                .await
            {
                Ok(_) => {}
                // Changed or gone meanwhile: the watch brings it back to the next pass.
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        let resource = CustomResource::from_definition(&desired).filter(|_| condition_is_true(&desired, "Established"));
        if definition["metadata"]["deletionTimestamp"].is_string() && has_cleanup_finalizer(&definition) {
            cleanups.push(name);
        }
        // A terminating definition is still served (reads and deletes) until it is gone.
        serving.extend(resource);
    }
    // Served as terminating (no creates) before any of its objects is deleted.
    served.replace(serving);
    let current = served.snapshot();
    for name in cleanups {
        let resource = current.values().find(|r| format!("{}.{}", r.names.plural, r.group) == name);
        pending |= !clean_up(storage, config, &store, &name, resource.map(|r| r.as_ref())).await?;
    }
    Ok(pending)
}

fn name_of(definition: &Value) -> &str {
    definition["metadata"]["name"].as_str().unwrap_or_default()
}

fn has_cleanup_finalizer(definition: &Value) -> bool {
    definition["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|v| v == CLEANUP_FINALIZER))
}

fn condition_is_true(definition: &Value, kind: &str) -> bool {
    definition["status"]["conditions"].as_array().is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// The status upstream's naming and establishing controllers give a definition, given the
/// names the definitions before it took: accepted names with `NamesAccepted` and
/// `Established`, or the conflict; and the storage version among `storedVersions`.
fn record_status(definition: &mut Value, taken: &mut TakenNames) {
    let requested = Names::of(&definition["spec"]["names"]);
    match taken.accept(&requested) {
        Ok(()) => {
            definition["status"]["acceptedNames"] = requested.to_json();
            set_condition(definition, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
            set_condition(definition, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted");
        }
        Err(conflict) => {
            if !definition["status"]["acceptedNames"].is_object() {
                definition["status"]["acceptedNames"] = json!({"plural": "", "kind": ""});
            }
            set_condition(definition, "NamesAccepted", "False", conflict.reason, &conflict.message);
            if !condition_is_true(definition, "Established") {
                set_condition(definition, "Established", "False", "NotAccepted", "not all names are accepted");
            }
        }
    }
    let storage_version =
        definition["spec"]["versions"].as_array().and_then(|v| v.iter().find(|v| v["storage"] == true)).and_then(|v| v["name"].as_str());
    if let Some(version) = storage_version.map(str::to_owned) {
        let stored = &mut definition["status"]["storedVersions"];
        if !stored.is_array() {
            *stored = json!([]);
        }
        if let Some(stored) = stored.as_array_mut()
            && !stored.iter().any(|v| v == version.as_str())
        {
            stored.push(json!(version));
        }
    }
}

/// The finalizer controller for one deleted definition: deletes its objects (each through the
/// store, so their own finalizers hold them), and once none is left removes the cleanup
/// finalizer, which completes the deletion. True when done.
async fn clean_up(
    storage: &dyn Storage,
    config: &StoreConfig,
    definitions: &Store<'_>,
    name: &str,
    resource: Option<&CustomResource>,
) -> Result<bool, ApiError> {
    if let Some(objects) = resource.and_then(|r| r.store(storage, config))
        && super::delete_all(storage, &objects, None, &json!({})).await? > 0
    {
        return Ok(false);
    }
    let mut without_ours = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, RESOURCE), name))?;
        let mut object = current.internal_object();
        let definition: &mut CustomResourceDefinition = object.typed_mut()?;
        if let Some(meta) = &mut definition.metadata {
            meta.finalizers.retain(|f| f != CLEANUP_FINALIZER);
        }
        Ok(Proposed::edited(object))
    };
    match definitions.update(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, None, name, &mut without_ours).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == 404 => Ok(true),
        Err(e) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}
