//! Deletion as upstream's generic store does it (`registry/generic/registry/store.go`, `Delete`
//! and `DeleteCollection`): `DeleteOptions` and their preconditions, finalizers and
//! `deletionTimestamp`, objects a system component has to finish first (a namespace's
//! contents), and upstream's answer (the object for the resources that return it, else a
//! `Status`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::body::Body;
use super::objects::Kind;
use super::rest::{
    ResourceCall, current, delete_options, group_resource, key, kind_of, list_options, object_filter, read, respond,
    storage_error, write_delete, write_update,
};
use crate::registry::DeletionFlow;
use crate::status::{ApiError, FieldError, GroupKind};
use crate::storage::{ListOptions, Storage, StorageError};

/// How often a delete re-reads the object when it changed between the read and the write
/// (upstream's `GuaranteedUpdate` retries the same way).
const DELETE_ATTEMPTS: usize = 5;

/// What a delete did to one object.
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Kind, Value),
    /// The object is marked for deletion and waits for finalizers; this is its new state.
    Pending(Kind, Value),
}

/// `DELETE <resource>/<name>`.
pub async fn delete(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let name = call.info.name.as_str();
    let options = checked_delete_options(call)?;
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: Bytes::new(), ..*call };
    if let Some(reason) = crate::registry::undeletable(t.group, t.resource, name) {
        return Err(ApiError::forbidden(group_resource(t), name, reason));
    }
    let outcome = delete_one(store, call, &key(t.group, t.resource, namespace, Some(name)), name, &options).await?;
    Ok(deleted_response(call, outcome, &options))
}

/// `DELETE <resource>` (a collection): every object the label and field selectors match is
/// deleted as by [`delete`]; the answer lists what was deleted, as upstream's.
pub async fn delete_collection(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let options = checked_delete_options(call)?;
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: Bytes::new(), ..*call };
    let opts = list_options(call)?;
    let filter = object_filter(t, &opts);
    let prefix = key(t.group, t.resource, namespace, None);
    let listed = store.list(&prefix, ListOptions::default()).await.map_err(|e| storage_error(e, call))?;
    let mut items = Vec::new();
    for kv in &listed.kvs {
        let (_, object) = read(kv)?;
        if !filter(&object) {
            continue;
        }
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        if crate::registry::undeletable(t.group, t.resource, &name).is_some() {
            continue;
        }
        // Deleted meanwhile by someone else: nothing left to do for it.
        let mut item = match delete_one(store, call, &kv.key, &name, &options).await {
            Ok(Deleted::Gone(_, v) | Deleted::Pending(_, v)) => v,
            Err(e) if e.code == 404 => continue,
            Err(e) => return Err(e),
        };
        if let Some(obj) = item.as_object_mut() {
            obj.remove("kind");
            obj.remove("apiVersion");
        }
        items.push(item);
    }
    let item_kind = kind_of(t);
    let list_kind = Kind { kind: format!("{}List", item_kind.kind), ..item_kind };
    let list = json!({
        "kind": list_kind.kind,
        "apiVersion": list_kind.api_version(),
        "metadata": { "resourceVersion": listed.revision.to_string() },
        "items": items,
    });
    Ok(respond(&list_kind, call.accept, 200, &list))
}

/// The request's `DeleteOptions`, checked as upstream's `ValidateDeleteOptions`.
fn checked_delete_options(call: &ResourceCall<'_>) -> Result<Value, ApiError> {
    let mut options = delete_options(call)?;
    // Query parameters are the other way to give them (kubectl sends a body).
    let query = crate::list_options::parse_query(call.query);
    if let Some(policy) = query.get("propagationPolicy").and_then(|v| v.first()) {
        options["propagationPolicy"] = json!(policy);
    }
    if let Some(seconds) = query.get("gracePeriodSeconds").and_then(|v| v.first()) {
        let seconds: i64 = seconds
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {seconds:?}: not an integer")))?;
        options["gracePeriodSeconds"] = json!(seconds);
    }
    let mut errs = Vec::new();
    if let Some(policy) = options.get("propagationPolicy").and_then(Value::as_str) {
        if !options["orphanDependents"].is_null() {
            errs.push(FieldError::invalid(
                "propagationPolicy",
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        const POLICIES: &[&str] = &["Background", "Foreground", "Orphan"];
        if !POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported("propagationPolicy", policy, POLICIES));
        }
    }
    if options["gracePeriodSeconds"].as_i64().is_some_and(|s| s < 0) {
        let seconds = options["gracePeriodSeconds"].as_i64().unwrap_or_default();
        errs.push(FieldError::invalid("gracePeriodSeconds", seconds, "must be greater than or equal to 0"));
    }
    if errs.is_empty() {
        return Ok(options);
    }
    Err(ApiError::invalid(GroupKind::new("meta.k8s.io", "DeleteOptions"), "", &errs))
}

/// Deletes the object at `key`, or marks it when finalizers (its own, or a system's such as a
/// namespace's `kubernetes`) have to run first.
///
/// The garbage collector is not part of kapi yet, so `propagationPolicy` is accepted but adds
/// no `orphan` or `foregroundDeletion` finalizer: nothing would ever remove them.
pub async fn delete_one(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    k: &str,
    name: &str,
    options: &Value,
) -> Result<Deleted, ApiError> {
    let t = call.target;
    let gr = group_resource(t);
    for _ in 0..DELETE_ATTEMPTS {
        let current = current(store, call, k, name).await?;
        let (kind, old) = read(&current)?;
        check_preconditions(call, &old, current.mod_revision, &options["preconditions"], name)?;
        let deleting = old["metadata"]["deletionTimestamp"].is_string();
        let has_finalizers = old["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
        let flow = crate::registry::deletion_flow(t.group, t.resource, &old);
        if let (DeletionFlow::AwaitSystem { in_progress }, true) = (&flow, deleting) {
            return Err(ApiError::conflict_because(gr, name, in_progress));
        }
        // Graceful deletion (pods): the object stays, marked, for its grace period; a later
        // delete may only shorten it, and a zero period deletes at once.
        let grace = crate::registry::grace_period(t.group, t.resource, &old, options["gracePeriodSeconds"].as_i64());
        let pending_grace = old["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
        let mark = if deleting {
            match grace {
                Some(g) if g < pending_grace => Some(g),
                _ if has_finalizers || pending_grace > 0 => return Ok(Deleted::Pending(kind, old)),
                _ => None,
            }
        } else if has_finalizers || matches!(flow, DeletionFlow::AwaitSystem { .. }) || grace.is_some_and(|g| g > 0) {
            Some(grace.unwrap_or(0))
        } else {
            None
        };
        if let Some(period) = mark
            && (period > 0 || has_finalizers || matches!(flow, DeletionFlow::AwaitSystem { .. }))
        {
            let mut marked = old.clone();
            let at = chrono::Utc::now() + chrono::Duration::seconds(period);
            marked["metadata"]["deletionTimestamp"] = json!(super::objects::timestamp(at));
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(period);
            crate::registry::mark_deleting(t.group, t.resource, &mut marked);
            if let Some(meta) = marked["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            let stored = super::objects::encode_stored(&kind, &marked).map_err(ApiError::internal)?;
            match write_update(store, call, k, stored.into(), current.mod_revision).await {
                Ok(kv) => {
                    let (kind, value) = read(&kv)?;
                    return Ok(Deleted::Pending(kind, value));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e, call)),
            }
        }
        match write_delete(store, call, k, Some(current.mod_revision)).await {
            Ok((prev, _)) => {
                let (kind, value) = read(&prev)?;
                return Ok(Deleted::Gone(kind, value));
            }
            Err(StorageError::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e, call)),
        }
    }
    Err(ApiError::conflict(gr, name))
}

/// `DeleteOptions.preconditions`: the object must still be the one the client means.
fn check_preconditions(
    call: &ResourceCall<'_>,
    old: &Value,
    mod_revision: crate::storage::Revision,
    precondition: &Value,
    name: &str,
) -> Result<(), ApiError> {
    let gr = group_resource(call.target);
    let uid = old["metadata"]["uid"].as_str().unwrap_or_default();
    if let Some(wanted) = precondition["uid"].as_str()
        && wanted != uid
    {
        return Err(ApiError::conflict_because(
            gr,
            name,
            format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {uid}"),
        ));
    }
    if let Some(rv) = precondition["resourceVersion"].as_str()
        && rv != mod_revision.to_string()
    {
        return Err(ApiError::conflict_because(
            gr,
            name,
            format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {mod_revision}"),
        ));
    }
    Ok(())
}

/// Upstream's answer to a delete: the object while it waits for finalizers (202 when the client
/// asked for `orphanDependents: false`), and once gone the object for the resources whose
/// store returns it, a `Status` naming it for the others.
fn deleted_response(call: &ResourceCall<'_>, outcome: Deleted, options: &Value) -> http::Response<Body> {
    let t = call.target;
    match outcome {
        Deleted::Pending(kind, value) => {
            let code = if options["orphanDependents"] == json!(false) { 202 } else { 200 };
            respond(&kind, call.accept, code, &value)
        }
        Deleted::Gone(kind, value) if crate::registry::returns_deleted_object(t.group, t.resource) => {
            respond(&kind, call.accept, 200, &value)
        }
        Deleted::Gone(_, value) => {
            let status_kind = Kind { group: String::new(), version: "v1".into(), kind: "Status".into() };
            let mut details = json!({ "name": value["metadata"]["name"], "kind": t.resource, "uid": value["metadata"]["uid"] });
            if !t.group.is_empty() {
                details["group"] = json!(t.group);
            }
            let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details });
            respond(&status_kind, call.accept, 200, &status)
        }
    }
}
