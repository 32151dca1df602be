//! The generic REST handlers: one implementation of get, list, create, update and delete for
//! every resource of the generated route table, over the storage interface (upstream's generic
//! registry store). Resource-specific behaviour does not belong here.

use bytes::Bytes;
use kapi_apimachinery::codec::Format;
use serde_json::{Value, json};

use std::sync::Arc;
use std::time::Duration;

use super::body::Body;
use crate::group_index::same_name;
use crate::registry::object::{MetaChange, Object};
use crate::registry::objects::{self, Kind};
use crate::registry::store::{
    Current, Incoming, Proposed, Store, StoreConfig, WriteOptions, Written, read_for, read_internal, stored_kind,
};
use crate::registry::strategy::SubresourceWrite;
use crate::request_info::RequestInfo;
use crate::status::{ApiError, FieldError, GroupKind, GroupResource};
use crate::storage::{KeyValue, Storage};
use kapi_apimachinery::strict_decoding::StrictError;

/// One resource request, resolved against the route table.
pub struct ResourceCall<'a> {
    pub info: &'a RequestInfo,
    /// Who asks (their client certificate's user), for what a strategy records of them.
    pub user: Option<&'a crate::request_info::UserInfo>,
    pub target: &'a kapi_apimachinery::scheme::RouteTarget,
    /// The resource's strategy: the scheme's (`registry::strategy`), or a custom resource's.
    pub strategy: &'a dyn crate::registry::strategy::Strategy,
    pub query: &'a str,
    pub content_type: Option<&'a str>,
    pub accept: Format,
    /// The client asked for a `meta.k8s.io` Table (kubectl get does).
    pub table: Option<crate::tables::TableRequest>,
    /// The representation asked for with `as=...;g=meta.k8s.io` (Table or
    /// PartialObjectMetadata[List]); `table` repeats the Table case with its encoding.
    pub convert: Option<crate::negotiation::Conversion>,
    /// `dryRun=All` ([`parse_dry_run`]).
    pub dry_run: bool,
    /// What the registry's stores read of the server's settings (Service ranges, `--event-ttl`).
    pub config: &'a StoreConfig,
    /// `--etcd-servers` (empty on the embedded store), which `componentstatuses` probes.
    pub etcd_servers: &'a [String],
    /// The request's `User-Agent`, which names the field manager when `fieldManager` does not.
    pub user_agent: &'a str,
    pub body: Bytes,
}

pub use crate::registry::keys::{key, object_key};

pub(super) fn group_resource(t: &kapi_apimachinery::scheme::RouteTarget) -> GroupResource<'static> {
    GroupResource::new(t.group, t.resource)
}

pub(super) fn kind_of(t: &kapi_apimachinery::scheme::RouteTarget) -> Kind {
    Kind { group: t.kind.group.to_owned(), version: t.kind.version.to_owned(), kind: t.kind.kind.to_owned() }
}

/// `dryRun=All`: the request does everything but write (what `kubectl diff` and
/// `--dry-run=server` rely on). Any other value is upstream's 400.
pub fn parse_dry_run(query: &str) -> Result<bool, ApiError> {
    let values: Vec<_> = crate::url::query_values(query, "dryRun").collect();
    match values.as_slice() {
        [] => Ok(false),
        values if values.iter().all(|v| v == "All") => Ok(true),
        values => Err(ApiError::bad_request(format!("Invalid dryRun: {}: supported values: \"All\"", values.join(",")))),
    }
}

/// The `DeleteOptions` body of a delete, as JSON (`{}` when there is none).
pub(super) fn delete_options(call: &ResourceCall<'_>) -> Result<Value, ApiError> {
    if call.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let kind = Kind::core_v1("DeleteOptions");
    objects::decode(&kind, body_format(call)?, &call.body)
        .map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded: {e}")))
}

/// The request's resource (and subresource) store, reading objects in the URL's version.
pub(super) fn store<'a>(storage: &'a dyn Storage, call: &'a ResourceCall<'_>) -> Store<'a> {
    let t = call.target;
    Store::new(storage, call.config, t.group, t.resource, kind_of(t)).with_strategy(call.strategy).with_subresource(t.subresource)
}

/// Who writes and whether it is a dry run.
pub(super) fn write_options<'a>(call: &'a ResourceCall<'_>) -> WriteOptions<'a> {
    WriteOptions { user: call.user, dry_run: call.dry_run, ..Default::default() }
}

/// The field manager a write is recorded for: `fieldManager`, validated as upstream validates
/// the verb's options (`CreateOptions`, `UpdateOptions`, `PatchOptions`), else the user agent's
/// prefix.
fn field_manager(call: &ResourceCall<'_>, options_kind: &str) -> Result<String, ApiError> {
    let given = crate::url::query_first(call.query, "fieldManager");
    // `force` is for apply patches only.
    let force = options_kind == "PatchOptions" && crate::url::query_values(call.query, "force").next().is_some();
    crate::registry::fieldmanager::validate_field_manager(options_kind, given.as_deref(), false, force)?;
    Ok(crate::registry::fieldmanager::manager_name(given.as_deref(), call.user_agent))
}

pub(super) fn respond(kind: &Kind, format: Format, code: u16, value: &Value) -> http::Response<Body> {
    respond_encoded(format, code, objects::encode(kind, format, value))
}

fn respond_encoded(
    format: Format,
    code: u16,
    body: Result<impl Into<bytes::Bytes>, kapi_apimachinery::codec::CodecError>,
) -> http::Response<Body> {
    match body {
        Ok(body) => {
            let mut resp = http::Response::new(super::body::full(body));
            *resp.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
            resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(format.content_type()));
            resp
        }
        Err(e) => super::error_response(&ApiError::internal(e)),
    }
}

/// The answer to a create or update: the object as stored, in the URL's version (`kind`'s).
/// When that is the storage version, the typed object the write encoded is the stored object,
/// and answers without decoding the stored bytes again; otherwise the stored value is read as
/// the resource's strategy reads it.
fn respond_written(call: &ResourceCall<'_>, kind: &Kind, code: u16, written: Written) -> Result<http::Response<Body>, ApiError> {
    let Written { kv, object: mut written, warnings, .. } = written;
    for warning in warnings {
        warn(warning);
    }
    let kv = &kv;
    let read = |kv: &KeyValue| read_for(call.strategy, kv, kind);
    // `as=Table` / `as=PartialObjectMetadata` apply to write answers too, as upstream's
    // `transformResponseObject` does for every verb.
    let converted = match (call.table, call.convert) {
        (Some(table), _) => Some(read(kv).and_then(|(_, value)| table_response(call, table, std::slice::from_ref(&value), None))),
        (None, Some(convert)) => {
            Some(read(kv).and_then(|(kind, value)| super::metadata::object_response(convert, call.accept, &kind, &value)))
        }
        (None, None) => None,
    };
    if let Some(converted) = converted {
        let mut resp = converted?;
        *resp.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
        return Ok(resp);
    }
    if stored_kind(call.strategy, kind) == *kind {
        // A dry-run create was never written: it has no resourceVersion yet.
        if kv.mod_revision > 0 {
            written.set_resource_version(&kv.mod_revision.to_string());
        }
        return Ok(respond_encoded(call.accept, code, written.encode(call.accept)));
    }
    let (kind, value) = read(kv)?;
    Ok(respond(&kind, call.accept, code, &value))
}

pub async fn handle(store: &Arc<dyn Storage>, call: ResourceCall<'_>) -> http::Response<Body> {
    let is_watch = matches!(call.target.action, "watch" | "watchlist")
        || (call.target.action == "list"
            && crate::url::parse_query(call.query)
                .get("watch")
                .and_then(|v| v.first())
                .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "True")));
    if is_watch {
        return match Box::pin(watch(store, &call)).await {
            Ok(resp) => resp,
            Err(e) => super::error_response(&e),
        };
    }
    let (result, warnings) = WARNINGS
        .scope(std::cell::RefCell::new(Vec::new()), async {
            let result = dispatch(store.as_ref(), &call).await;
            (result, WARNINGS.with(|w| w.take()))
        })
        .await;
    let mut resp = match result {
        Ok(resp) => resp,
        Err(e) => super::error_response(&e),
    };
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

async fn dispatch(store: &dyn Storage, call: &ResourceCall<'_>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let namespace = Some(call.info.namespace.as_str()).filter(|ns| !ns.is_empty() && t.namespaced);
    let strategy = call.strategy;
    if t.action == "connect" || strategy.reads_from_kubelet(t.subresource) {
        let name = call.info.name.as_str();
        let (_, object) = self::store(store, call).get(namespace, name, None).await?;
        return Err(strategy.connect_error(t.resource, t.subresource.unwrap_or_default(), name, &object));
    }
    if let Some(own) = strategy.own_rest(t.subresource) {
        return Box::pin(super::own_rest::handle(store, call, namespace, own)).await;
    }
    match t.subresource {
        None => {}
        Some("scale") if strategy.scale().is_some() => {
            return Box::pin(scale(store, call, namespace)).await;
        }
        Some(sub) => match SubresourceWrite::with(strategy, t.group, t.resource, sub) {
            Some(_) => return Box::pin(partial(store, call, namespace)).await,
            None => return Err(ApiError::method_not_supported(group_resource(t), t.action)),
        },
    }
    match t.action {
        "get" => {
            let resource_version = get_resource_version(call.query)?;
            if call.table.is_none() && call.convert.is_none() {
                let bytes = self::store(store, call).get_encoded(namespace, &call.info.name, resource_version, call.accept).await?;
                return Ok(respond_encoded(call.accept, 200, Ok(bytes)));
            }
            let (kind, value) = self::store(store, call).get(namespace, &call.info.name, resource_version).await?;
            if let Some(table) = call.table {
                return table_response(call, table, std::slice::from_ref(&value), None);
            }
            if let Some(convert) = call.convert {
                return super::metadata::object_response(convert, call.accept, &kind, &value);
            }
            Ok(respond(&kind, call.accept, 200, &value))
        }
        // Each verb's future is boxed here (and above): inlined, they made this future, and the
        // chain's that every request moves around, 8 KiB; a GET's answer needs none of them.
        "list" => Box::pin(list(store, call, namespace)).await,
        "post" => Box::pin(create(store, call, namespace)).await,
        "put" => Box::pin(update(store, call, namespace)).await,
        "patch" => Box::pin(patch(store, call, namespace)).await,
        "delete" => Box::pin(super::delete::delete(store, call, namespace)).await,
        "deletecollection" => Box::pin(super::delete::delete_collection(store, call, namespace)).await,
        other => Err(ApiError::method_not_supported(group_resource(t), other)),
    }
}

async fn list(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let options = list_options(call)?;
    let item_kind = kind_of(call.target);
    let list_kind = Kind { kind: format!("{}List", item_kind.kind), ..item_kind.clone() };
    // A plain JSON list (the common case for clients) is streamed: its items are written in
    // pieces as the body is sent (upstream's streaming collection encoder), so a list of many
    // objects is never held whole as JSON, and encoding overlaps sending.
    if call.table.is_none() && call.convert.is_none() && call.accept == Format::Json {
        let (listed, items) = store(storage, call).list_json(namespace, &options).await?;
        // The list's own fields, then `"items":[…]` spliced in before the closing brace.
        let head = json!({"kind": list_kind.kind, "apiVersion": list_kind.api_version(), "metadata": list_meta(listed)});
        let mut head = serde_json::to_vec(&head).map_err(ApiError::internal)?;
        head.pop();
        head.extend_from_slice(b",\"items\":[");
        return Ok(stream_json_list(head, items));
    }
    let mut items = Vec::new();
    let listed = store(storage, call)
        .list(namespace, &options, &mut |item| {
            items.push(item);
            Ok(())
        })
        .await?;
    let list_meta = list_meta(listed);
    if let Some(table) = call.table {
        return table_response(call, table, &items, Some(&list_meta));
    }
    if let Some(convert) = call.convert {
        return super::metadata::list_response(convert, call.accept, &item_kind, &items, &list_meta);
    }
    let list = json!({
        "kind": list_kind.kind,
        "apiVersion": list_kind.api_version(),
        "metadata": list_meta,
        "items": items,
    });
    Ok(respond(&list_kind, call.accept, 200, &list))
}

/// How many bytes of a streamed list are written before they are handed to the connection.
const LIST_CHUNK_BYTES: usize = 256 * 1024;

/// A JSON list's answer whose body is `head`, then the items written piece by piece as the
/// connection takes them (a few pieces ahead at most), then `]}`. An item that cannot be
/// encoded ends the body early, so the client sees a truncated list rather than a short one.
fn stream_json_list(head: Vec<u8>, mut items: crate::registry::store::JsonListItems) -> http::Response<Body> {
    let (tx, body) = super::body::channel(2);
    tokio::spawn(async move {
        let mut chunk = head;
        loop {
            let more = match items.write_next(&mut chunk, LIST_CHUNK_BYTES) {
                Ok(more) => more,
                Err(e) => {
                    tracing::error!(error = %e, "a streamed list ends early");
                    return;
                }
            };
            if !more {
                chunk.extend_from_slice(b"]}");
            }
            let next = Vec::with_capacity(if more { LIST_CHUNK_BYTES + LIST_CHUNK_BYTES / 4 } else { 0 });
            if tx.send(std::mem::replace(&mut chunk, next).into()).await.is_err() || !more {
                return;
            }
        }
    });
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(Format::Json.content_type()));
    resp
}

/// A list's `ListMeta` as JSON.
fn list_meta(listed: crate::registry::store::ListedMeta) -> Value {
    let mut meta = json!({ "resourceVersion": listed.resource_version.to_string() });
    if let Some(token) = listed.continue_token {
        meta["continue"] = json!(token);
    }
    if let Some(n) = listed.remaining_item_count {
        meta["remainingItemCount"] = json!(n);
    }
    meta
}

/// A GET's `resourceVersion`: `None` when unset (a consistent read).
fn get_resource_version(query: &str) -> Result<Option<crate::storage::Revision>, ApiError> {
    match crate::url::query_first(query, "resourceVersion").filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(rv) => crate::list_options::parse_resource_version(&rv)
            .map(|n| Some(i64::try_from(n).unwrap_or(i64::MAX)))
            .map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}"))),
    }
}

/// The request's list options, with the field selector checked against the resource.
pub(super) fn list_options(call: &ResourceCall<'_>) -> Result<crate::list_options::ListOptions, ApiError> {
    let t = call.target;
    let mut opts = crate::list_options::ListOptions::from_query(call.query)?;
    opts.convert_field_selector(|label, value| call.strategy.convert_field_label((t.group, t.version, t.resource), label, value))?;
    if !call.info.name.is_empty() && t.named {
        // A watch on one object (`/watch/namespaces/x/pods/name`).
        opts.select_name(&call.info.name)?;
    }
    Ok(opts)
}

/// How the resource's objects become table rows: its strategy says.
fn table_columns(call: &ResourceCall<'_>) -> crate::tables::Columns {
    call.strategy.table()
}

/// Objects as a `meta.k8s.io` Table with the resource's columns (upstream's printers).
pub(super) fn table_response(
    call: &ResourceCall<'_>,
    table: crate::tables::TableRequest,
    objects: &[Value],
    list_meta: Option<&Value>,
) -> Result<http::Response<Body>, ApiError> {
    use crate::tables::{IncludeObject, TableMediaType, TableOptions};
    let include_object = IncludeObject::from_query(call.query).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let options = TableOptions { include_object, no_headers: false, version: table.version };
    let value = table_columns(call).to_table(objects, list_meta, &options, chrono::Utc::now());
    let body = match table.media_type {
        TableMediaType::Json => serde_json::to_vec(&value).map_err(ApiError::internal)?,
        TableMediaType::Yaml => {
            kapi_apimachinery::codec::json_to_yaml(&serde_json::to_vec(&value).map_err(ApiError::internal)?).map_err(ApiError::internal)?
        }
    };
    let content_type = format!(
        "{};as=Table;v={};g=meta.k8s.io",
        table.media_type.content_type(),
        match table.version {
            crate::tables::TableVersion::V1 => "v1",
            crate::tables::TableVersion::V1Beta1 => "v1beta1",
        }
    );
    let mut resp = http::Response::new(super::body::full(body));
    if let Ok(v) = http::HeaderValue::from_str(&content_type) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    Ok(resp)
}

pub(super) fn body_format(call: &ResourceCall<'_>) -> Result<Format, ApiError> {
    match call.content_type {
        None => Ok(Format::detect(&call.body)),
        Some(ct) => Format::from_content_type(ct).ok_or_else(|| {
            ApiError::unsupported_media_type(&[
                kapi_apimachinery::codec::JSON,
                kapi_apimachinery::codec::YAML,
                kapi_apimachinery::codec::PROTOBUF,
            ])
        }),
    }
}

/// Decodes the request body as the route's kind; a body of another kind is a 400 as upstream.
pub(super) fn decode_body(call: &ResourceCall<'_>) -> Result<(Kind, Value), ApiError> {
    let (kind, object) = decode_body_object(call)?;
    Ok((kind, object.into_value()?))
}

/// [`decode_body`], the object kept typed when its kind has a generated type
/// ([`Object::decode`]).
fn decode_body_object(call: &ResourceCall<'_>) -> Result<(Kind, Object), ApiError> {
    let format = body_format(call)?;
    let kind = kind_of(call.target);
    let undecodable =
        |e: kapi_apimachinery::codec::CodecError| ApiError::bad_request(format!("the body of the request could not be decoded: {e}"));
    let given = body_type_meta(format, &call.body).map_err(undecodable)?;
    let tm = type_meta_with_defaults(given, &kind);
    if tm.api_version != kind.api_version() || tm.kind != kind.kind {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            tm.api_version,
            kind.api_version()
        )));
    }
    let strict = strict_errors(call, format, &kind)?;
    // A repeated key keeps its last value, as Go's decoder keeps it (strict decoding reports
    // it). An error is upstream's `transformDecodeError`: the body's kind and version (checked
    // above to be the URL's) and the kind it was decoded as.
    let mut object = Object::decode(&kind, format, &call.body).map_err(|e| {
        ApiError::bad_request(format!("{} in version {:?} cannot be handled as a {}: {e}", kind.kind, kind.version, kind.kind))
    })?;
    // A body without `apiVersion`/`kind` (typed clients leave them out) carries the URL's from
    // here on, as the object upstream's decoder returns does.
    object.set_type_meta(&tm.api_version, &tm.kind);
    let dropped = prune_unstructured(call, &mut object)?;
    report_strict_errors(call, &kind, strict.unwrap_or_else(|| dropped.into_iter().map(StrictError::Unknown).collect()))?;
    ensure_namespace_matches_request(call, &mut object)?;
    Ok((kind, object))
}

/// The `apiVersion` and `kind` a body names, either possibly empty.
fn body_type_meta(format: Format, body: &[u8]) -> Result<kapi_apimachinery::codec::TypeMeta, kapi_apimachinery::codec::CodecError> {
    use kapi_apimachinery::codec;
    Ok(match format {
        Format::Json => serde_json::from_slice(body)?,
        Format::Yaml => serde_json::from_slice(&codec::yaml_to_json(body)?)?,
        Format::Protobuf => codec::decode_envelope(body)?.type_meta,
    })
}

/// Whether the body gives `metadata.managedFields` as an empty list, which upstream tells from
/// none (`isResetManagedFields`: an empty list resets the object's managed fields; none keeps
/// them). Protobuf cannot tell them apart, as upstream's decoding cannot.
fn body_empties_managed_fields(call: &ResourceCall<'_>) -> Result<bool, ApiError> {
    #[derive(serde::Deserialize)]
    struct Body {
        metadata: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "managedFields")]
        managed_fields: Option<Vec<serde::de::IgnoredAny>>,
    }
    let format = body_format(call)?;
    // Most bodies never name the field: no second parse for them.
    if format == Format::Protobuf || !call.body.windows(13).any(|w| w == b"managedFields") {
        return Ok(false);
    }
    let json = match format {
        Format::Yaml => match kapi_apimachinery::codec::yaml_to_json(&call.body) {
            Ok(json) => json,
            Err(_) => return Ok(false),
        },
        _ => call.body.to_vec(),
    };
    let probe: Option<Body> = serde_json::from_slice(&json).ok();
    Ok(probe.and_then(|b| b.metadata).and_then(|m| m.managed_fields).is_some_and(|f| f.is_empty()))
}

/// Marks the decoded object as asking for its managed fields to be reset: typed decoding drops
/// an empty list, so it is kept as the other form upstream resets with, `[{}]`.
fn keep_managed_fields_reset(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), json!([{}]));
    }
}

/// Go's `gvkWithDefaults` with the URL's kind as the default: a missing kind is the URL's, a
/// missing group and version are the URL's, and so is a missing version of the URL's group.
fn type_meta_with_defaults(given: kapi_apimachinery::codec::TypeMeta, url: &Kind) -> kapi_apimachinery::codec::TypeMeta {
    let kind = if given.kind.is_empty() { url.kind.clone() } else { given.kind };
    let (group, version) = match given.api_version.split_once('/') {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (String::new(), given.api_version),
    };
    let (group, version) = match (group.is_empty(), version.is_empty()) {
        (true, true) => (url.group.clone(), url.version.clone()),
        (_, true) if group == url.group => (group, url.version.clone()),
        _ => (group, version),
    };
    let api_version = if group.is_empty() { version } else { format!("{group}/{version}") };
    kapi_apimachinery::codec::TypeMeta { api_version, kind }
}

/// The namespace the request addresses: the URL's for a namespaced resource, none otherwise.
fn request_namespace<'a>(call: &'a ResourceCall<'_>) -> &'a str {
    if call.target.namespaced { &call.info.namespace } else { "" }
}

/// A custom resource's schema prunes and defaults an object decoded from a request, as
/// upstream's decoder does (`Strategy::decode_unstructured`), giving the pruned paths; a
/// generated type has pruned it already.
fn prune_unstructured(call: &ResourceCall<'_>, object: &mut Object) -> Result<Vec<String>, ApiError> {
    if object.is_typed() {
        return Ok(Vec::new());
    }
    Ok(call.strategy.decode_unstructured(object.value_mut()?))
}

/// Upstream's `EnsureObjectNamespaceMatchesRequestNamespace`, run on every body before anything
/// reads it (create, update, subresources): a body without a namespace takes the request's, a
/// cluster-scoped object's namespace is cleared, and a body naming another namespace than the
/// URL is a 400 — never a lookup or a write in the body's namespace.
fn ensure_namespace_matches_request(call: &ResourceCall<'_>, object: &mut Object) -> Result<(), ApiError> {
    let wanted = request_namespace(call);
    let Some(given) = object.namespace()? else {
        return Ok(());
    };
    match given.as_str() {
        given if given == wanted => {}
        "" => object.set_meta(&[MetaChange::Namespace(Some(wanted))]),
        _ if wanted.is_empty() => object.set_meta(&[MetaChange::Namespace(None)]),
        _ => {
            return Err(ApiError::bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
    }
    Ok(())
}

/// Upstream's `checkName` on a patched object: a patch may not rename the object or move it to
/// another namespace.
fn check_patched_identity(call: &ResourceCall<'_>, patched: &Value) -> Result<(), ApiError> {
    let name = patched["metadata"]["name"].as_str().unwrap_or_default();
    if name != call.info.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            call.info.name
        )));
    }
    let wanted = request_namespace(call);
    let namespace = patched["metadata"]["namespace"].as_str().unwrap_or_default();
    if !wanted.is_empty() && !namespace.is_empty() && namespace != wanted {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({namespace}) does not match the namespace on the request ({wanted})"
        )));
    }
    Ok(())
}

tokio::task_local! {
    /// Warnings for the current request, sent as `Warning: 299` headers (upstream's
    /// `warning.AddWarning`).
    static WARNINGS: std::cell::RefCell<Vec<String>>;
}

/// Adds a warning to the request's answer, once: upstream's recorder drops repeats (an update
/// retried on a conflict warns again).
pub(super) fn warn(message: String) {
    let _ = WARNINGS.try_with(|w| {
        let mut warnings = w.borrow_mut();
        if !warnings.contains(&message) {
            warnings.push(message);
        }
    });
}

/// A request's server-side field validation (`fieldValidation`; Warn when absent, as upstream).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

fn field_validation(call: &ResourceCall<'_>) -> Result<FieldValidation, ApiError> {
    match crate::url::query_first(call.query, "fieldValidation").as_deref().unwrap_or("Warn") {
        "Strict" => Ok(FieldValidation::Strict),
        "Warn" => Ok(FieldValidation::Warn),
        "Ignore" => Ok(FieldValidation::Ignore),
        mode => Err(ApiError::bad_request(format!("fieldValidation: Invalid value: {mode:?}: must be one of Ignore, Warn, or Strict"))),
    }
}

/// The strict decoding errors of a typed kind's body ([`objects::strict_errors`]) when the
/// request asks for them (not under `fieldValidation=Ignore`, nor for protobuf, which has
/// none); `None` for a custom resource, whose schema's pruning reports its unknown fields.
fn strict_errors(call: &ResourceCall<'_>, format: Format, kind: &Kind) -> Result<Option<Vec<StrictError>>, ApiError> {
    if !objects::is_registered(kind) {
        return Ok(None);
    }
    if field_validation(call)? == FieldValidation::Ignore || format == Format::Protobuf {
        return Ok(Some(Vec::new()));
    }
    let errors = match format {
        Format::Yaml => kapi_apimachinery::codec::yaml_to_json(&call.body).and_then(|json| objects::strict_errors(kind, &json)),
        _ => objects::strict_errors(kind, &call.body),
    };
    errors.map(Some).map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded: {e}")))
}

/// Server-side field validation of a request body: its strict decoding errors are a 400 under
/// Strict and warnings under Warn.
fn report_strict_errors(call: &ResourceCall<'_>, kind: &Kind, errors: Vec<StrictError>) -> Result<(), ApiError> {
    report_field_errors(field_validation(call)?, errors, |joined| {
        ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: strict decoding error: {joined}",
            kind.kind, kind.version, kind.kind
        ))
    })
}

/// Server-side field validation of a patched object, as upstream's patchers decode it: fields
/// the kind does not have (a typed kind's by its fields, a custom resource's as its schema
/// `pruned` them) are warnings under Warn; under Strict the patch is invalid (422, see
/// [`invalid_patch`]).
fn check_patched_fields(call: &ResourceCall<'_>, found: PatchedFieldErrors) -> Result<(), ApiError> {
    report_field_errors(field_validation(call)?, found.errors, |joined| {
        invalid_patch(call, &found.text, format!("strict decoding error: {joined}"))
    })
}

/// What [`check_patched_fields`] reports of a patched object: its fields the kind does not
/// have, and, when there are some, its JSON text for the message.
struct PatchedFieldErrors {
    errors: Vec<StrictError>,
    text: Vec<u8>,
}

/// [`PatchedFieldErrors`] of `patched`: a typed kind's by its fields, a custom resource's the
/// `pruned` ones; none under Ignore.
fn patched_field_errors(
    call: &ResourceCall<'_>,
    kind: &Kind,
    patched: &Value,
    pruned: Vec<String>,
) -> Result<PatchedFieldErrors, ApiError> {
    let errors = if field_validation(call)? == FieldValidation::Ignore {
        Vec::new()
    } else if objects::is_registered(kind) {
        objects::value_strict_errors(kind, patched)
    } else {
        pruned.into_iter().map(StrictError::Unknown).collect()
    };
    let text = if errors.is_empty() { Vec::new() } else { serde_json::to_vec(patched).map_err(ApiError::internal)? };
    Ok(PatchedFieldErrors { errors, text })
}

/// What `fieldValidation` makes of strict decoding errors: nothing under Ignore, a warning each
/// under Warn, and under Strict the error `strict` makes of their messages joined.
fn report_field_errors(mode: FieldValidation, errors: Vec<StrictError>, strict: impl FnOnce(String) -> ApiError) -> Result<(), ApiError> {
    if errors.is_empty() || mode == FieldValidation::Ignore {
        return Ok(());
    }
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    if mode == FieldValidation::Strict {
        return Err(strict(messages.join(", ")));
    }
    for m in messages {
        warn(m);
    }
    Ok(())
}

/// Upstream's patchers' answer for a patched object that does not decode as its kind: a 422
/// for the `patch` field, showing a strategic merge patch as Go prints the decoded patch and a
/// JSON or merge patch as the patched object.
fn invalid_patch(call: &ResourceCall<'_>, patched_json: &[u8], detail: String) -> ApiError {
    use crate::patch::PatchType;
    let shown = match call.content_type.and_then(PatchType::from_content_type) {
        Some(PatchType::StrategicMerge) => {
            serde_json::from_slice::<Value>(&call.body).map(|patch| crate::patch::go_format(&patch)).unwrap_or_default()
        }
        _ => String::from_utf8_lossy(patched_json).into_owned(),
    };
    ApiError::invalid(GroupKind::new("", ""), "", &[FieldError::invalid("patch", shown.as_str(), detail)])
}

async fn create(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let (kind, external) = decode_body_object(call)?;
    let incoming = Incoming::from_external(t.group, t.resource, &kind, external)?;
    let manager = field_manager(call, "CreateOptions")?;
    let options = WriteOptions { manager: Some(&manager), ..write_options(call) };
    let written = store(storage, call).create(options, namespace, incoming).await?;
    respond_written(call, &kind, 201, written)
}

async fn update(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let name = call.info.name.clone();
    let (kind, mut external) = decode_body_object(call)?;
    if body_empties_managed_fields(call)? {
        keep_managed_fields_reset(external.value_mut()?);
    }
    let meta = &external.value()?["metadata"];
    if meta["name"].as_str().is_some_and(|n| n != name) {
        return Err(ApiError::bad_request("the name of the object does not match the name on the URL"));
    }
    // A resourceVersion in the body is a precondition (optimistic concurrency), and so is a uid.
    let precondition = meta["resourceVersion"].as_str().filter(|rv| !rv.is_empty()).map(str::to_owned);
    let uid = meta["uid"].as_str().filter(|uid| !uid.is_empty()).map(str::to_owned);
    let incoming = Incoming::from_external(t.group, t.resource, &kind, external)?;
    // The body is decoded once; each attempt proposes it, also when nothing is stored and the
    // resource creates on update: the first as decoded, a later one a copy. The store attempts
    // again only a write without a precondition, or a create on update that found the name
    // taken meanwhile: no copy is made for any other (a PUT of what was read, as
    // `kubectl replace` and `edit` send). Should one be asked for all the same, the object has
    // changed since the precondition was met.
    let retry_copy = match precondition.is_none() || call.strategy.allow_create_on_update() {
        true => Some(incoming.clone_incoming()),
        false => None,
    };
    let mut first = Some(incoming);
    let mut body = |_: Option<&Current<'_>>| {
        let incoming = match (first.take(), &retry_copy) {
            (Some(incoming), _) => incoming,
            (None, Some(copy)) => copy.clone_incoming(),
            (None, None) => return Err(ApiError::conflict(group_resource(t), &name)),
        };
        Ok(Proposed { incoming, precondition: precondition.clone(), uid: uid.clone(), managed_fields: None })
    };
    let manager = field_manager(call, "UpdateOptions")?;
    let options = WriteOptions { manager: Some(&manager), ..write_options(call) };
    let written = store(storage, call).update(options, namespace, &name, &mut body).await?;
    let code = if written.created { 201 } else { 200 };
    respond_written(call, &kind, code, written)
}

/// What a PATCH proposes given the current object: the patch applied to it, still a valid
/// object of its kind, with the patch's resourceVersion as a precondition. A patch never
/// creates: with nothing stored it is NotFound (upstream's patchers' `createNewObject`).
fn patched_proposal(call: &ResourceCall<'_>, current: Option<&Current<'_>>) -> Result<Proposed, ApiError> {
    let t = call.target;
    let current = current.ok_or_else(|| ApiError::not_found(group_resource(t), &call.info.name))?;
    let patched = patched(call, &current.kind, current.external()?)?;
    check_patched_identity(call, &patched)?;
    let precondition = patched["metadata"]["resourceVersion"].as_str().map(str::to_owned);
    let resets_managed_fields = patched["metadata"]["managedFields"].as_array().is_some_and(Vec::is_empty);
    let mut patched = match objects::dyn_kind(&current.kind) {
        // A kind with a generated type reads the patched value as it is, not its text (which
        // would be written out and parsed again): the same object, or the same failure, for
        // which the text is decoded after all, as the error names a position in it.
        // Its fields are checked first, and reported after: a type error goes first.
        Some(dyn_kind) => {
            let unknown = patched_field_errors(call, &current.kind, &patched, Vec::new())?;
            let object = match Object::read(dyn_kind, patched) {
                Ok(object) => object,
                Err(_) => decode_patched(call, &current.kind, &self::patched(call, &current.kind, current.external()?)?)?,
            };
            check_patched_fields(call, unknown)?;
            object
        }
        None => {
            let mut object = decode_patched(call, &current.kind, &patched)?;
            // Decoded as a body is: what a custom resource's schema prunes is unknown, as a
            // typed kind's fields it lacks are.
            let pruned = prune_unstructured(call, &mut object)?;
            check_patched_fields(call, patched_field_errors(call, &current.kind, &patched, pruned)?)?;
            object
        }
    };
    if resets_managed_fields {
        keep_managed_fields_reset(patched.value_mut()?);
    }
    Ok(Proposed {
        incoming: Incoming::from_external(t.group, t.resource, &current.kind, patched)?,
        precondition,
        uid: None,
        managed_fields: None,
    })
}

/// A patched object decoded from its JSON text; one its kind cannot hold is upstream's 422 for
/// the `patch` field.
fn decode_patched(call: &ResourceCall<'_>, kind: &Kind, patched: &Value) -> Result<Object, ApiError> {
    let bytes = serde_json::to_vec(patched).map_err(ApiError::internal)?;
    Object::decode(kind, Format::Json, &bytes).map_err(|e| invalid_patch(call, &bytes, e.to_string()))
}

/// `<resource>/status` and the other subresources that are a view of part of the object
/// (`registry::strategy::SubresourceWrite`): reads give the object; writes (update or patch) change only
/// that part.
async fn partial(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let name = call.info.name.clone();
    match t.action {
        "get" => {
            let (kind, external) = store(storage, call).get(namespace, &name, None).await?;
            Ok(respond(&kind, call.accept, 200, &external))
        }
        "put" => update(storage, call, namespace).await,
        "patch" => patch(storage, call, namespace).await,
        other => Err(ApiError::method_not_supported(group_resource(t), other)),
    }
}

/// Applies the request's patch to `old` (any patch type the route accepts).
fn patched(call: &ResourceCall<'_>, kind: &Kind, old: &Value) -> Result<Value, ApiError> {
    use crate::patch::{PatchType, apply_patch};
    let accepted: Vec<&str> = call.target.patch_types.to_vec();
    let patch_type = call
        .content_type
        .and_then(PatchType::from_content_type)
        .filter(|p| accepted.contains(&p.content_type()))
        .ok_or_else(|| ApiError::unsupported_media_type(&accepted))?;
    let fields = objects::fields(kind).unwrap_or(&[]);
    apply_patch(old, &call.body, patch_type, fields).map_err(|e| match e.status_code() {
        415 => ApiError::unsupported_media_type(&accepted),
        422 => ApiError::unprocessable_patch(&e.to_string()),
        413 => ApiError::request_entity_too_large(&e.to_string()),
        _ => ApiError::bad_request(e.to_string()),
    })
}

/// `<resource>/scale`: the object seen as an `autoscaling/v1` `Scale`; writes change only
/// `spec.replicas` of the object.
async fn scale(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    use crate::patch::PatchType;
    use crate::registry::fieldmanager;
    let t = call.target;
    let name = call.info.name.clone();
    let scale_kind = Kind { group: "autoscaling".into(), version: "v1".into(), kind: "Scale".into() };
    let facts = call.strategy.scale().ok_or_else(|| ApiError::method_not_supported(group_resource(t), t.action))?;
    // The scale reads and writes the main resource's object, with its rules; its writes are
    // recorded for the `scale` subresource in the object's version (upstream's ScaleHandler
    // maps them onto the object's replicas field).
    let parent = match kapi_api::scheme::RESOURCES
        .iter()
        .find(|r| same_name(r.group, t.group) && r.version == t.version && r.resource == t.resource)
    {
        Some(r) => Kind { group: r.kind.group.to_owned(), version: r.kind.version.to_owned(), kind: r.kind.kind.to_owned() },
        None => {
            let probe = Store::new(storage, call.config, t.group, t.resource, kind_of(t)).with_strategy(call.strategy);
            let (stored, _) = read_internal(&probe.current(&probe.object_key(namespace, &name)?, &name).await?)?;
            Kind { group: t.group.to_owned(), version: t.version.to_owned(), kind: stored.kind }
        }
    };
    let store = Store::new(storage, call.config, t.group, t.resource, parent.clone()).with_strategy(call.strategy);
    let store = if t.action == "get" { store } else { store.with_subresource(Some("scale")) };
    if t.action == "get" {
        let (_, object) = read_internal(&store.current(&store.object_key(namespace, &name)?, &name).await?)?;
        return Ok(respond(&scale_kind, call.accept, 200, &facts.view(&object)?));
    }
    if !matches!(t.action, "put" | "patch") {
        return Err(ApiError::method_not_supported(group_resource(t), t.action));
    }
    let is_apply = t.action == "patch" && call.content_type.and_then(PatchType::from_content_type) == Some(PatchType::Apply);
    let body = if t.action == "put" {
        let format = body_format(call)?;
        Some(
            objects::decode(&scale_kind, format, &call.body)
                .map_err(|e| ApiError::bad_request(format!("the body of the request could not be decoded: {e}")))?,
        )
    } else {
        None
    };
    let (manager, force, config) = if is_apply {
        let (manager, force) = apply_options(call)?;
        (manager, force, Some(apply_configuration(call, &scale_kind)?))
    } else {
        (field_manager(call, if t.action == "put" { "UpdateOptions" } else { "PatchOptions" })?, false, None)
    };
    // Field management on the Scale, mapped from and back to the object's entries (upstream's
    // ScaleHandler).
    let parent_version = parent.api_version();
    let replicas_field = facts.spec_replicas.clone();
    let owner = fieldmanager::scale::Parent { group: &parent.group, api_version: &parent_version, replicas: &replicas_field };
    let no_reset = fieldmanager::reset_set(&[]);
    let zero_scale = objects::zero_object(&scale_kind);
    // The object with the Scale's replicas: what the main resource's update proposes.
    let mut scaled = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(group_resource(t), &call.info.name))?;
        let scale = facts.view(current.internal()?)?;
        let parent_managed = &current.external()?["metadata"]["managedFields"];
        let now = objects::now();
        let cx = fieldmanager::Context {
            ty: fieldmanager::schemas::scale_type(),
            reset: &no_reset,
            writer: fieldmanager::Writer { manager: &manager, api_version: "autoscaling/v1", subresource: Some("scale") },
            now: &now,
            convert: None,
        };
        let (proposed, managed_fields) = match (&body, &config) {
            (_, Some(config)) => {
                let applied = fieldmanager::scale::apply(&cx, &owner, &scale, &zero_scale, config, parent_managed, force)?;
                (applied.object, applied.managed_fields)
            }
            (Some(body), None) => (body.clone(), None),
            (None, None) => (patched(call, &scale_kind, &scale)?, None),
        };
        if body.is_none() {
            // A patch or an apply names the object on the URL (upstream's patcher `checkName`).
            check_patched_identity(call, &proposed)?;
        }
        let managed_fields = match config {
            Some(_) => managed_fields,
            None => fieldmanager::scale::update(&cx, &owner, &scale, &proposed, parent_managed),
        };
        let precondition = proposed["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty()).map(str::to_owned);
        let Some(replicas) = proposed["spec"]["replicas"].as_i64().or(Some(0)).filter(|r| *r >= 0) else {
            return Err(ApiError::invalid(
                GroupKind::new("autoscaling", "Scale"),
                &call.info.name,
                &[FieldError::invalid("spec.replicas", proposed["spec"]["replicas"].to_string(), "must be greater than or equal to 0")],
            ));
        };
        let mut object = current.internal()?.clone();
        facts.set_replicas(&mut object, replicas);
        Ok(Proposed {
            incoming: Incoming { object: object.into(), required: Vec::new() },
            precondition,
            uid: None,
            managed_fields: Some(managed_fields.unwrap_or(Value::Null)),
        })
    };
    let options = WriteOptions { manager: Some(&manager), ..write_options(call) };
    let written = store.update(options, namespace, &name, &mut scaled).await?;
    let (_, updated) = read_internal(&written.kv)?;
    Ok(respond(&scale_kind, call.accept, 200, &facts.view(&updated)?))
}

/// The `fieldManager` (required) and `force` of an apply.
fn apply_options(call: &ResourceCall<'_>) -> Result<(String, bool), ApiError> {
    let query = crate::url::parse_query(call.query);
    let given = query.get("fieldManager").and_then(|v| v.first()).map(String::as_str);
    let force = match query.get("force").and_then(|v| v.first()).map(String::as_str) {
        None | Some("") => false,
        Some("true" | "1" | "t" | "T" | "TRUE" | "True") => true,
        Some("false" | "0" | "f" | "F" | "FALSE" | "False") => false,
        Some(other) => {
            return Err(ApiError::bad_request(format!("failed to parse force: strconv.ParseBool: parsing {other:?}: invalid syntax")));
        }
    };
    crate::registry::fieldmanager::validate_field_manager("PatchOptions", given, true, false)?;
    Ok((given.unwrap_or_default().to_owned(), force))
}

/// The applied configuration of an apply (YAML or JSON), which must be an object of `kind`
/// (upstream's applyPatcher).
fn apply_configuration(call: &ResourceCall<'_>, kind: &Kind) -> Result<Value, ApiError> {
    let json =
        kapi_apimachinery::codec::yaml_to_json(&call.body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let config: Value = serde_json::from_slice(&json).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("error decoding YAML: the applied configuration is not an object"));
    }
    let (given_version, given_kind) = (config["apiVersion"].as_str().unwrap_or_default(), config["kind"].as_str().unwrap_or_default());
    if given_version != kind.api_version() || given_kind != kind.kind {
        let (group, version) = given_version.split_once('/').unwrap_or(("", given_version));
        return Err(ApiError::bad_request(format!("invalid object type: {group}/{version}, Kind={given_kind}")));
    }
    Ok(config)
}

async fn patch(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    use crate::patch::PatchType;
    if call.content_type.and_then(PatchType::from_content_type) == Some(PatchType::Apply)
        && call.target.patch_types.contains(&PatchType::Apply.content_type())
    {
        return apply(storage, call, namespace).await;
    }
    let name = call.info.name.clone();
    let manager = field_manager(call, "PatchOptions")?;
    let options = WriteOptions { manager: Some(&manager), ..write_options(call) };
    let mut patch = |current: Option<&Current<'_>>| patched_proposal(call, current);
    let written = store(storage, call).update(options, namespace, &name, &mut patch).await?;
    let kind = kind_of(call.target);
    respond_written(call, &kind, 200, written)
}

/// Server-side apply (`application/apply-patch+yaml`, upstream's `applyPatcher`): the applied
/// configuration merged into the object by the field manager (conflicts are a 409 unless
/// `force`), then defaulted, admitted, validated and stored as any update; with nothing stored
/// the object is created from it (201).
async fn apply(storage: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    use crate::registry::fieldmanager::{self, Context, Writer};
    let t = call.target;
    let (manager, force) = apply_options(call)?;
    let kind = kind_of(t);
    let config = apply_configuration(call, &kind)?;
    let precondition = config["metadata"]["resourceVersion"].as_str().filter(|rv| !rv.is_empty()).map(str::to_owned);
    let store = store(storage, call);
    let reset = store.reset_fields();
    let api_version = kind.api_version();
    let zero_object = objects::zero_object(&kind);
    let zero: &Value = &zero_object;
    let schema = store.field_schema();
    let converter = store.version_converter();
    let mut merge = |current: Option<&Current<'_>>| {
        let (live, live_managed) = match current {
            Some(current) => (current.external()?, &current.external()?["metadata"]["managedFields"]),
            None => (zero, &Value::Null),
        };
        let now = objects::now();
        // The context's borrows (`now`) live shorter than the store the converter reads.
        let converter = |object: &Value, from: &str, to: &str| converter(object, from, to);
        let cx = Context {
            ty: store.field_type(&schema),
            reset: &reset,
            writer: Writer { manager: &manager, api_version: &api_version, subresource: t.subresource },
            now: &now,
            convert: Some(&converter),
        };
        let applied = fieldmanager::apply(&cx, live, zero, &config, live_managed, force)?;
        let mut merged = applied.object;
        if current.is_none() {
            // A new object: what the store gives it, not what the zero object had.
            if let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("creationTimestamp");
            }
        }
        if merged["metadata"]["namespace"].as_str().is_none_or(str::is_empty) && !request_namespace(call).is_empty() {
            merged["metadata"]["namespace"] = json!(request_namespace(call));
        }
        check_patched_identity(call, &merged)?;
        let bytes = serde_json::to_vec(&merged).map_err(ApiError::internal)?;
        let mut external = objects::decode_defaulted(&kind, Format::Json, &bytes)
            .map_err(|e| ApiError::bad_request(format!("the applied object is not a valid {}: {e}", kind.kind)))?;
        call.strategy.decode_unstructured(&mut external);
        Ok(Proposed {
            incoming: Incoming::from_external(t.group, t.resource, &kind, external)?,
            precondition: precondition.clone(),
            uid: None,
            managed_fields: Some(applied.managed_fields.unwrap_or(Value::Null)),
        })
    };
    let options = WriteOptions { manager: Some(&manager), create_missing: true, ..write_options(call) };
    let written = store.update(options, namespace, &call.info.name, &mut merge).await?;
    let code = if written.created { 201 } else { 200 };
    respond_written(call, &kind, code, written)
}

async fn watch(storage: &Arc<dyn Storage>, call: &ResourceCall<'_>) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    let namespace = Some(call.info.namespace.as_str()).filter(|ns| !ns.is_empty() && t.namespaced);
    let options = list_options(call)?;
    // Upstream's default: a random time between the minimum request timeout and twice it.
    // Unset or 0: the default. A negative one ends the watch at once, as upstream's negative
    // duration does; `watch::watch_deadline` keeps a huge one from overflowing.
    let timeout = match options.timeout_seconds {
        None | Some(0) => Duration::from_secs(1800),
        Some(s) => Duration::from_secs(u64::try_from(s).unwrap_or(0)),
    };
    let request = super::watch::WatchRequest {
        encoder: watch_encoder(call)?,
        send_initial_events: options.send_initial_events == Some(true),
        allow_bookmarks: options.allow_watch_bookmarks,
        timeout,
    };
    let objects = store(storage.as_ref(), call).watch(namespace, &options).await?;
    Ok(super::watch::start(objects, request))
}

/// The watch's wire form and conversion. YAML has no stream form: upstream's 406. A
/// `PartialObjectMetadataList` cannot be made of one object; upstream then sends the objects
/// unconverted.
fn watch_encoder(call: &ResourceCall<'_>) -> Result<super::watch::Encoder, ApiError> {
    use super::watch::Conversion as Convert;
    use crate::negotiation::Conversion;
    let format = match call.accept {
        Format::Yaml => return Err(crate::negotiation::not_acceptable(true)),
        f => f,
    };
    let conversion = match call.convert {
        Some(Conversion::Table(version)) => {
            let include_object = crate::tables::IncludeObject::from_query(call.query).map_err(|e| ApiError::bad_request(e.to_string()))?;
            let options = crate::tables::TableOptions { include_object, no_headers: false, version };
            Some(Convert::Table { columns: table_columns(call), options })
        }
        Some(Conversion::PartialObjectMetadata(version)) => Some(Convert::PartialObjectMetadata(version)),
        Some(Conversion::PartialObjectMetadataList(_)) | None => None,
    };
    Ok(super::watch::Encoder { format, conversion })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_type_meta_comes_from_the_url_as_go_defaults_it() {
        use kapi_apimachinery::codec::TypeMeta;
        let deployments = Kind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() };
        let pods = Kind::core_v1("Pod");
        let tm = |api_version: &str, kind: &str| TypeMeta { api_version: api_version.into(), kind: kind.into() };
        let cases = [
            (&deployments, tm("", ""), tm("apps/v1", "Deployment")),
            (&deployments, tm("apps/v1", ""), tm("apps/v1", "Deployment")),
            (&deployments, tm("", "Deployment"), tm("apps/v1", "Deployment")),
            // A group without a version takes the URL's version when the groups agree.
            (&deployments, tm("apps/", "Deployment"), tm("apps/v1", "Deployment")),
            // What the body names is kept, to be refused when it contradicts the URL.
            (&deployments, tm("v1", ""), tm("v1", "Deployment")),
            (&deployments, tm("apps/v1beta2", "Deployment"), tm("apps/v1beta2", "Deployment")),
            (&pods, tm("", ""), tm("v1", "Pod")),
            (&pods, tm("", "ConfigMap"), tm("v1", "ConfigMap")),
        ];
        for (url, given, want) in cases {
            assert_eq!(type_meta_with_defaults(given.clone(), url), want, "{given:?}");
        }
    }
}
