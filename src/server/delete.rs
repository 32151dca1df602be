//! Deletion as upstream's generic store does it (`registry/generic/registry/store.go`, `Delete`
//! and `DeleteCollection`): `DeleteOptions` and their preconditions, finalizers and
//! `deletionTimestamp`, objects a system component has to finish first (a namespace's
//! contents), and upstream's answer (the object for the resources that return it, else a
//! `Status`).

use bytes::Bytes;
use serde_json::{Value, json};

use super::body::Body;
use super::rest::{
    ResourceCall, current, delete_options, group_resource, key, kind_of, list_options, object_filter, object_key, read, respond,
    storage_error, write_delete, write_update,
};
use crate::registry::DeletionFlow;
use crate::registry::objects::Kind;
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
pub async fn delete(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let name = call.info.name.as_str();
    let options = checked_delete_options(call)?;
    let dry_run = call.dry_run || options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let call = &ResourceCall { dry_run, body: Bytes::new(), ..*call };
    let kind = kind_of(t);
    let target = super::rest::admission_target(call, &kind, namespace, name);
    let mut attributes = crate::registry::admission::Attributes {
        store,
        operation: crate::registry::admission::Operation::Delete,
        target,
        object: None,
        old: None,
        user: call.user,
        dry_run,
    };
    crate::registry::admission::admit(&mut attributes).await?;
    let outcome = delete_one(store, call, &object_key(t.group, t.resource, namespace, name)?, name, &options).await?;
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
            let query = crate::list_options::parse_query(query);
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

/// The grace period a delete asks for: upstream's `BeforeDelete` treats a negative one as 1
/// second ("Negative values will be treated as the value `1s` on the delete path"), and so
/// does kapi; it never reaches time arithmetic negative.
fn requested_grace_period(options: &Value) -> Option<i64> {
    options["gracePeriodSeconds"].as_i64().map(|s| if s < 0 { 1 } else { s })
}

/// The latest instant a `metav1.Time` can hold on the wire: RFC 3339 has four-digit years,
/// and Go clients cannot parse a later one.
fn max_timestamp() -> chrono::DateTime<chrono::Utc> {
    chrono::NaiveDate::from_ymd_opt(9999, 12, 31)
        .and_then(|d| d.and_hms_opt(23, 59, 59))
        .map_or(chrono::DateTime::<chrono::Utc>::MAX_UTC, |t| t.and_utc())
}

/// `at` moved by `seconds`, saturating at [`max_timestamp`] and the Unix epoch instead of
/// overflowing. Upstream computes `now + time.Second * time.Duration(grace)`, which wraps for
/// grace periods beyond ~292 years; kapi's deletion timestamp stays the latest it can write.
fn shifted(at: chrono::DateTime<chrono::Utc>, seconds: i64) -> chrono::DateTime<chrono::Utc> {
    let shifted = chrono::TimeDelta::try_seconds(seconds).and_then(|d| at.checked_add_signed(d));
    let earliest = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    match shifted {
        Some(t) => t.clamp(earliest, max_timestamp()),
        None if seconds < 0 => earliest,
        None => max_timestamp(),
    }
}

/// A shortened grace period of an object already being deleted, as upstream's `BeforeDelete`:
/// the deletion timestamp moves back by the old period and forward by the new one, but not
/// into the past; a graceful (non-zero) period whose time has already run out becomes 1.
/// Returns the period and the new deletion timestamp. An unreadable timestamp counts as
/// marked now.
fn shortened_grace(
    deletion_timestamp: &Value,
    old_period: i64,
    new_period: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> (i64, chrono::DateTime<chrono::Utc>) {
    let marked = deletion_timestamp
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(|| shifted(now, old_period), |t| t.with_timezone(&chrono::Utc));
    // Both periods are non-negative here, so the difference cannot overflow.
    let at = shifted(marked, new_period.saturating_sub(old_period));
    if at < now { (if new_period == 0 { 0 } else { 1 }, now) } else { (new_period, at) }
}

/// Deletes the object at `key`, or marks it when finalizers (its own, or a system's such as a
/// namespace's `kubernetes`) have to run first.
///
/// The garbage collector is not part of kapi yet, so `propagationPolicy` is accepted but adds
/// no `orphan` or `foregroundDeletion` finalizer: nothing would ever remove them.
pub async fn delete_one(store: &dyn Storage, call: &ResourceCall<'_>, k: &str, name: &str, options: &Value) -> Result<Deleted, ApiError> {
    let t = call.target;
    let gr = group_resource(t);
    for _ in 0..DELETE_ATTEMPTS {
        let current = current(store, call, k, name).await?;
        let (kind, old) = read(&current)?;
        check_preconditions(call, &old, current.mod_revision, &options["preconditions"], name)?;
        let deleting = old["metadata"]["deletionTimestamp"].is_string();
        let has_finalizers = old["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
        let strategy = crate::registry::strategy(t.group, t.resource);
        let flow = strategy.deletion_flow(&old);
        if let (DeletionFlow::AwaitSystem { in_progress }, true) = (&flow, deleting) {
            return Err(ApiError::conflict_because(gr, name, in_progress));
        }
        // Graceful deletion (pods): the object stays, marked, for its grace period; a later
        // delete may only shorten it, and a zero period deletes at once.
        let requested = requested_grace_period(options);
        let grace = strategy.grace_period(&old, requested);
        // A negative period stored by someone else counts as 1, as upstream's `BeforeDelete`.
        let pending_grace = old["metadata"]["deletionGracePeriodSeconds"].as_i64().map_or(0, |s| if s < 0 { 1 } else { s });
        let now = chrono::Utc::now();
        let mark = if deleting {
            // Only a period the client gives may shorten a pending graceful deletion.
            match grace.and(requested) {
                Some(g) if g < pending_grace => Some(shortened_grace(&old["metadata"]["deletionTimestamp"], pending_grace, g, now)),
                _ if has_finalizers || pending_grace > 0 => return Ok(Deleted::Pending(kind, old)),
                _ => None,
            }
        } else if has_finalizers || matches!(flow, DeletionFlow::AwaitSystem { .. }) || grace.is_some_and(|g| g > 0) {
            let period = grace.unwrap_or(0);
            Some((period, shifted(now, period)))
        } else {
            None
        };
        if let Some((period, at)) = mark
            && (period > 0 || has_finalizers || matches!(flow, DeletionFlow::AwaitSystem { .. }))
        {
            let mut marked = old.clone();
            marked["metadata"]["deletionTimestamp"] = json!(crate::registry::objects::timestamp(at));
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(period);
            strategy.mark_deleting(&mut marked);
            if let Some(meta) = marked["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            let stored = crate::registry::objects::encode_stored(&kind, &marked).map_err(ApiError::internal)?;
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
        Deleted::Gone(kind, value) if crate::registry::strategy(t.group, t.resource).returns_deleted_object() => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::embedded::EmbeddedStore;

    fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc)
    }

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

    #[test]
    fn negative_grace_periods_count_as_one_second() {
        for (seconds, want) in [(json!(-1), Some(1)), (json!(i64::MIN), Some(1)), (json!(0), Some(0)), (json!(i64::MAX), Some(i64::MAX))] {
            assert_eq!(requested_grace_period(&json!({ "gracePeriodSeconds": seconds })), want, "{seconds}");
        }
        assert_eq!(requested_grace_period(&json!({})), None);
    }

    #[test]
    fn deletion_timestamps_saturate() {
        let now = at("2026-01-02T03:04:05Z");
        assert_eq!(shifted(now, 0), now);
        assert_eq!(shifted(now, 30), at("2026-01-02T03:04:35Z"));
        // Go's Duration would wrap past ~292 years; the timestamp stays the latest RFC 3339 can
        // write (chrono itself would panic on `now + i64::MAX seconds`).
        for seconds in [i64::MAX, i64::MAX / 1000, 8_000 * 366 * 86_400] {
            assert_eq!(crate::registry::objects::timestamp(shifted(now, seconds)), "9999-12-31T23:59:59Z", "{seconds}");
        }
        // The largest period Go's Duration holds, and one past it (where Go wraps): exact.
        assert_eq!(shifted(now, 9_223_372_036), at("2318-04-14T02:51:21Z"));
        assert_eq!(shifted(now, 9_223_372_037), at("2318-04-14T02:51:22Z"));
        for seconds in [i64::MIN, -1 - i64::MAX / 1000, -100 * 366 * 86_400] {
            assert_eq!(shifted(now, seconds), chrono::DateTime::<chrono::Utc>::UNIX_EPOCH, "{seconds}");
        }
    }

    #[test]
    fn shortened_grace_periods_move_the_timestamp_back_as_upstream() {
        let now = at("2026-01-02T03:04:05Z");
        // Marked 10s ago with 30s: 20s remain; shortening to 5s ends 5s after the mark.
        let marked = json!("2026-01-02T03:04:25Z");
        assert_eq!(shortened_grace(&marked, 30, 15, now), (15, at("2026-01-02T03:04:10Z")));
        // Already past: now, and a graceful period becomes 1.
        assert_eq!(shortened_grace(&marked, 30, 5, now), (1, now));
        assert_eq!(shortened_grace(&marked, 30, 0, now), (0, now));
        // The largest periods never overflow.
        let far = json!("9999-12-31T23:59:59Z");
        assert_eq!(shortened_grace(&far, i64::MAX, 0, now), (0, now));
        assert_eq!(shortened_grace(&far, i64::MAX, 7, now), (1, now));
        assert_eq!(shortened_grace(&far, i64::MAX, i64::MAX - 1, now), (i64::MAX - 1, at("9999-12-31T23:59:58Z")));
        assert_eq!(shortened_grace(&json!("not a time"), 30, 10, now), (10, at("2026-01-02T03:04:15Z")));
    }

    /// Deletes a scheduled, running pod (deleted gracefully) with each of the given options in
    /// turn, through the real store, and returns its metadata after each.
    async fn delete_pod_with(options: &[Value]) -> Vec<Result<Value, ApiError>> {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
        let route = kapi_api::routes::ROUTES
            .iter()
            .find(|r| r.path == "/api/v1/namespaces/{namespace}/pods/{name}" && r.method == "DELETE")
            .unwrap();
        let info = crate::request_info::parse("DELETE", "/api/v1/namespaces/ns/pods/p", None).unwrap();
        let network = crate::registry::core::services::ServiceNetwork::parse("10.0.0.0/24", "30000-32767").unwrap();
        let call = ResourceCall {
            info: &info,
            user: None,
            target: route.target.as_ref().unwrap(),
            query: "",
            content_type: None,
            accept: kapi_apimachinery::codec::Format::Json,
            table: None,
            convert: None,
            dry_run: false,
            network: &network,
            etcd_servers: &[],
            ttl: None,
            body: Bytes::new(),
        };
        let kind = Kind { group: String::new(), version: "v1".into(), kind: "Pod".into() };
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        });
        let k = key("", "pods", Some("ns"), Some("p"));
        store.create(&k, crate::registry::objects::encode_stored(&kind, &pod).unwrap().into()).await.unwrap();
        let mut out = Vec::new();
        for o in options {
            let o = delete_options_from(Some(o.clone()), "");
            let result = match o {
                Ok(o) => delete_one(&store, &call, &k, "p", &o).await.map(|d| match d {
                    Deleted::Gone(_, v) => json!({"gone": v["metadata"]}),
                    Deleted::Pending(_, v) => v["metadata"].clone(),
                }),
                Err(e) => Err(e),
            };
            out.push(result);
        }
        out
    }

    #[tokio::test]
    async fn huge_and_negative_grace_periods_never_panic() {
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": i64::MAX}), json!({"gracePeriodSeconds": 10})]).await;
        let first = got[0].as_ref().unwrap();
        assert_eq!(
            (first["deletionGracePeriodSeconds"].as_i64(), first["deletionTimestamp"].as_str()),
            (Some(i64::MAX), Some("9999-12-31T23:59:59Z"))
        );
        // Shortened: the old end minus i64::MAX seconds is long past, so now, with 1s left.
        let second = got[1].as_ref().unwrap();
        assert_eq!(second["deletionGracePeriodSeconds"], 1, "{second}");

        // Negative periods are 1 second (upstream's `BeforeDelete`), then 0 deletes.
        for negative in [-1, i64::MIN] {
            let got = delete_pod_with(&[json!({"gracePeriodSeconds": negative}), json!({"gracePeriodSeconds": 0})]).await;
            let first = got[0].as_ref().unwrap();
            assert_eq!(first["deletionGracePeriodSeconds"], 1, "{negative}: {first}");
            assert!(got[1].as_ref().unwrap()["gone"].is_object(), "{negative}: {:?}", got[1]);
        }
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": 0})]).await;
        assert!(got[0].as_ref().unwrap()["gone"].is_object());
        // Pending with the largest period: a longer one changes nothing.
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": i64::MAX - 1}), json!({"gracePeriodSeconds": i64::MAX}), json!({})]).await;
        for r in &got {
            assert_eq!(r.as_ref().unwrap()["deletionGracePeriodSeconds"].as_i64(), Some(i64::MAX - 1));
        }
    }
}
