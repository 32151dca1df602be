//! Requests a resource serves with its own REST code rather than the generic store
//! (`registry::OwnRest`): pod binding and eviction, namespace finalize, the reviews. The decisions are the
//! registry's (`registry::core::pods`); this module reads and writes the objects.

use serde_json::{Value, json};

use super::body::Body;
use super::rest::{ResourceCall, current, decode_body, key, object_key, read, respond, storage_error, write_options};
use crate::registry::OwnRest;
use crate::registry::core::pods;
use crate::registry::objects::{self, Kind};
use crate::registry::store::Store;
use crate::status::{ApiError, GroupResource};
use crate::storage::{Storage, StorageError};

/// How often a write is retried when the object changed between its read and its write.
const ATTEMPTS: usize = 5;

pub async fn handle(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
    own: OwnRest,
) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    match (own, t.action) {
        (OwnRest::PodBinding, "post") => bind(store, call, namespace).await,
        (OwnRest::PodEviction, "post") => evict(store, call, namespace).await,
        (OwnRest::Review(review), "post") => answer_review(call, namespace, review),
        (OwnRest::ComponentStatuses, "get" | "list") => component_statuses(call).await,
        (_, action) => Err(ApiError::method_not_supported(GroupResource::new(t.group, t.resource), action)),
    }
}

/// The `Status` a create-like subresource answers with (upstream writes `code` 201 into it).
fn created_status(call: &ResourceCall<'_>) -> http::Response<Body> {
    let kind = Kind { group: String::new(), version: "v1".into(), kind: "Status".into() };
    let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201 });
    respond(&kind, call.accept, 201, &status)
}

/// `POST` of a review: the request comes back with its status answered (201, as a create).
fn answer_review(
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
    review: crate::registry::reviews::Review,
) -> Result<http::Response<Body>, ApiError> {
    use crate::registry::reviews::{Refusal, answer};
    let (kind, mut object) = decode_body(call)?;
    if let Some(ns) = namespace {
        object["metadata"]["namespace"] = Value::String(ns.to_owned());
    }
    answer(review, &mut object, call.user, namespace, &objects::now()).map_err(|refusal| match refusal {
        Refusal::BadRequest(message) => ApiError::bad_request(message),
        Refusal::Invalid(errs) => ApiError::invalid(crate::status::GroupKind::new(&kind.group, &kind.kind), "", &errs),
    })?;
    Ok(respond(&kind, call.accept, 201, &object))
}

/// `POST pods/<name>/binding` (or `bindings` with the pod named in the body).
async fn bind(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let (_, binding) = decode_body(call)?;
    let name = if call.target.subresource.is_some() {
        pods::check_name("Binding", &call.info.name, &binding)?;
        call.info.name.clone()
    } else {
        binding["metadata"]["name"].as_str().unwrap_or_default().to_owned()
    };
    let errs = pods::validate_binding(&binding);
    if !errs.is_empty() || name.is_empty() {
        let mut errs = errs;
        if name.is_empty() {
            errs.insert(0, crate::status::FieldError::required("metadata.name", "name or generateName is required"));
        }
        return Err(pods::invalid_binding(&name, &errs));
    }
    let k = object_key("", "pods", namespace, &name)?;
    for _ in 0..ATTEMPTS {
        let current = current(store, call, &k, &name).await.map_err(|_| ApiError::not_found(GroupResource::new("", "pods"), &name))?;
        let (kind, mut pod) = read(&current)?;
        if let Some(rv) = binding["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty())
            && rv != current.mod_revision.to_string()
        {
            return Err(ApiError::conflict(GroupResource::new("", "pods"), &name));
        }
        pods::bind(&mut pod, &binding, &objects::now())?;
        if let Some(meta) = pod["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        let stored = objects::encode_stored(&kind, &pod).map_err(ApiError::internal)?;
        let pods = Store::new(store, call.config, "", "pods", kind);
        match pods.write_update(write_options(call), &k, stored.into(), current.mod_revision).await {
            Ok(_) => return Ok(created_status(call)),
            Err(StorageError::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e, call)),
        }
    }
    Err(ApiError::conflict(GroupResource::new("", "pods"), &name))
}

/// `POST pods/<name>/eviction`: the pod is deleted (with the eviction's `deleteOptions`) if
/// it does not run or its one disruption budget allows a disruption, which is recorded first.
async fn evict(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let (_, eviction) = decode_body(call)?;
    let name = call.info.name.clone();
    pods::check_name("Eviction", &name, &eviction)?;
    let mut options = eviction.get("deleteOptions").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: bytes::Bytes::new(), ..*call };
    let k = object_key("", "pods", namespace, &name)?;
    for _ in 0..ATTEMPTS {
        let current = current(store, call, &k, &name).await?;
        let (pod_kind, pod) = read(&current)?;
        if !pods::eviction_ignores_budget(&pod) {
            let listed = store
                .list(&key("policy", "poddisruptionbudgets", namespace, None), Default::default())
                .await
                .map_err(|e| storage_error(e, call))?;
            let stored: Vec<(crate::storage::KeyValue, Kind, Value)> =
                listed.kvs.into_iter().map(|kv| read(&kv).map(|(kind, v)| (kv, kind, v))).collect::<Result<_, _>>()?;
            let budgets: Vec<Value> = stored.iter().map(|(_, _, v)| v.clone()).collect();
            let matching = pods::budgets_for(&pod, &budgets);
            if matching.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(budget) = matching.first() {
                let (pdb_kv, pdb_kind, _) = stored
                    .iter()
                    .find(|(_, _, v)| v["metadata"]["name"] == budget["metadata"]["name"])
                    .ok_or_else(|| ApiError::internal("disruption budget vanished"))?;
                let mut pdb = (*budget).clone();
                pods::charge_budget(&mut pdb, &name, &objects::now())?;
                if let Some(meta) = pdb["metadata"].as_object_mut() {
                    meta.remove("resourceVersion");
                }
                let bytes = objects::encode_stored(pdb_kind, &pdb).map_err(ApiError::internal)?;
                let budgets = Store::new(store, call.config, "policy", "poddisruptionbudgets", pdb_kind.clone());
                match budgets.write_update(write_options(call), &pdb_kv.key, bytes.into(), pdb_kv.mod_revision).await {
                    Ok(_) => {}
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(storage_error(e, call)),
                }
                // The budget was charged for this pod as read: delete exactly that pod.
                options["preconditions"]["resourceVersion"] = json!(current.mod_revision.to_string());
            }
        }
        Store::new(store, call.config, "", "pods", pod_kind.clone()).delete_at(write_options(call), &k, &name, &options).await?;
        return Ok(created_status(call));
    }
    Err(ApiError::conflict(GroupResource::new("", "pods"), &name))
}

/// A resource made at each read rather than stored (`registry::OwnRest::ComponentStatuses`):
/// the registry makes the object or the items; this answers them in the route's kind and the
/// representation asked for.
async fn component_statuses(call: &ResourceCall<'_>) -> Result<http::Response<Body>, ApiError> {
    use crate::registry::core::componentstatuses;
    let kind = super::rest::kind_of(call.target);
    if call.target.action == "get" {
        let object = componentstatuses::get(call.etcd_servers, &call.info.name)
            .await
            .ok_or_else(|| ApiError::not_found(super::rest::group_resource(call.target), &call.info.name))?;
        if let Some(table) = call.table {
            return super::rest::table_response(call, table, std::slice::from_ref(&object), None);
        }
        if let Some(convert) = call.convert {
            return super::metadata::object_response(convert, call.accept, &kind, &object);
        }
        return Ok(respond(&kind, call.accept, 200, &object));
    }
    let filter = crate::registry::store::selection(call.target.group, call.target.resource, &super::rest::list_options(call)?);
    let items: Vec<Value> = componentstatuses::list(call.etcd_servers).await.into_iter().filter(|item| filter(item)).collect();
    let list_meta = json!({});
    if let Some(table) = call.table {
        return super::rest::table_response(call, table, &items, Some(&list_meta));
    }
    if let Some(convert) = call.convert {
        return super::metadata::list_response(convert, call.accept, &kind, &items, &list_meta);
    }
    let list_kind = Kind { kind: format!("{}List", kind.kind), ..kind };
    let list = json!({ "kind": list_kind.kind, "apiVersion": list_kind.api_version(), "metadata": list_meta, "items": items });
    Ok(respond(&list_kind, call.accept, 200, &list))
}
