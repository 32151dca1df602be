//! Deletion as upstream's generic store does it (`registry/generic/registry/store.go`, `Delete`
//! and `DeleteCollection`): `DeleteOptions` and their preconditions, finalizers and
//! `deletionTimestamp`, objects a system component has to finish first (a namespace's
//! contents), and upstream's answer (the object for the resources that return it, else a
//! `Status`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::body::Body;
use super::rest::{ResourceCall, delete_options, kind_of, list_options, respond, store, write_options};
use crate::registry::objects::Kind;
use crate::registry::store::Deleted;
use crate::status::{ApiError, FieldError, GroupKind};
use crate::storage::Storage;

/// `DELETE <resource>/<name>`.
pub async fn delete(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let name = call.info.name.as_str();
    let options = checked_delete_options(call)?;
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: Bytes::new(), ..*call };
    let outcome = store(storage, call).delete(write_options(call), namespace, name, &options).await?;
    Ok(deleted_response(call, outcome, &options))
}

/// `DELETE <resource>` (a collection): every object the label and field selectors match is
/// deleted as by [`delete`]; the answer lists what was deleted, as upstream's.
pub async fn delete_collection(
    storage: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let options = checked_delete_options(call)?;
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: Bytes::new(), ..*call };
    let selected = list_options(call)?;
    let (items, revision) = store(storage, call).delete_collection(write_options(call), namespace, &selected, &options).await?;
    let item_kind = kind_of(t);
    let list_kind = Kind { kind: format!("{}List", item_kind.kind), ..item_kind };
    let list = json!({
        "kind": list_kind.kind,
        "apiVersion": list_kind.api_version(),
        "metadata": { "resourceVersion": revision.to_string() },
        "items": items,
    });
    Ok(respond(&list_kind, call.accept, 200, &list))
}

/// The request's `DeleteOptions`, checked as upstream's `ValidateDeleteOptions`.
fn checked_delete_options(call: &ResourceCall<'_>) -> Result<Value, ApiError> {
    let body = if call.body.iter().all(u8::is_ascii_whitespace) { None } else { Some(delete_options(call)?) };
    delete_options_from(body, call.query)
}

/// `DeleteOptions` from the decoded body, or, without a body, from the query (upstream's
/// `DeleteResource` reads one or the other, never both), then `ValidateDeleteOptions`. A
/// `gracePeriodSeconds` that is not an int64 is `DecodeParameters`' 400 (`strconv.ParseInt:
/// parsing "x": invalid syntax` / `value out of range`). Upstream does not refuse a negative
/// grace period: the delete path treats it as 1 ([`requested_grace_period`]).
fn delete_options_from(body: Option<Value>, query: &str) -> Result<Value, ApiError> {
    let options = match body {
        Some(options) => options,
        None => {
            let query = crate::url::parse_query(query);
            let first = |k: &str| query.get(k).and_then(|v| v.first());
            let mut options = json!({});
            if let Some(policy) = first("propagationPolicy") {
                options["propagationPolicy"] = json!(policy);
            }
            if let Some(seconds) = first("gracePeriodSeconds") {
                options["gracePeriodSeconds"] = json!(crate::list_options::go_parse_int(seconds).map_err(ApiError::bad_request)?);
            }
            options
        }
    };
    let mut errs = Vec::new();
    if let Some(policy) = options.get("propagationPolicy").and_then(Value::as_str) {
        if !options["orphanDependents"].is_null() {
            errs.push(FieldError::invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"));
        }
        if !matches!(policy, "Foreground" | "Background" | "Orphan") {
            errs.push(FieldError::not_supported("propagationPolicy", policy, &["Foreground", "Background", "Orphan", "nil"]));
        }
    }
    if errs.is_empty() {
        return Ok(options);
    }
    Err(ApiError::invalid(GroupKind::new("meta.k8s.io", "DeleteOptions"), "", &errs))
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
        Deleted::Gone(kind, value) if call.strategy.returns_deleted_object() => respond(&kind, call.accept, 200, &value),
        Deleted::Gone(_, value) => {
            let status_kind = Kind::core_v1("Status");
            let mut details = json!({ "name": value["metadata"]["name"], "kind": t.resource, "uid": value["metadata"]["uid"] });
            if !t.group.is_empty() {
                details["group"] = json!(t.group);
            }
            let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details });
            respond(&status_kind, call.accept, 200, &status)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn from_query(query: &str) -> Result<Value, ApiError> {
        delete_options_from(None, query)
    }

    #[test]
    fn grace_periods_in_the_query_are_int64s() {
        for (query, want) in [
            ("gracePeriodSeconds=0", 0),
            ("gracePeriodSeconds=-1", -1),
            ("gracePeriodSeconds=9223372036854775807", i64::MAX),
            ("gracePeriodSeconds=-9223372036854775808", i64::MIN),
        ] {
            assert_eq!(from_query(query).unwrap()["gracePeriodSeconds"], json!(want), "{query}");
        }
        let huge = "9".repeat(10_000);
        for (value, why) in [
            ("9223372036854775808", "value out of range"),
            ("-9223372036854775809", "value out of range"),
            (&huge, "value out of range"),
            ("1e3", "invalid syntax"),
            ("1.5", "invalid syntax"),
            ("", "invalid syntax"),
        ] {
            let e = from_query(&format!("gracePeriodSeconds={value}")).unwrap_err();
            let want = format!("strconv.ParseInt: parsing \"{value}\": {why}");
            assert_eq!((e.code, e.message.as_str()), (400, want.as_str()), "{}", &value[..value.len().min(40)]);
        }
        // A body wins over the query, as upstream reads one or the other.
        let options = delete_options_from(Some(json!({"gracePeriodSeconds": 5})), "gracePeriodSeconds=x&propagationPolicy=Bad").unwrap();
        assert_eq!(options, json!({"gracePeriodSeconds": 5}));
        let e = from_query("propagationPolicy=Sometimes").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sometimes\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
            )
        );
    }
}
