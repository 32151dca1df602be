//! Watch: a streamed sequence of events, as upstream's watch server writes them.
//!
//! - JSON: `{"type": ..., "object": ...}`, one event per chunk, newline-terminated; the response
//!   is `application/json`.
//! - Protobuf (`application/vnd.kubernetes.protobuf;stream=watch`): each event one frame of
//!   [`codec::watch_frame`]: a 4-byte big-endian length, then a raw `WatchEvent` message (no
//!   magic, no envelope: the stream serializer is the raw one) whose object holds the object's
//!   whole protobuf encoding (`k8s\0` + `runtime.Unknown`).
//! - Conversions ([`Conversion`]): each object is turned into a `Table` of one row (column
//!   definitions only on the first event: upstream sets `noHeaders` after it) or a
//!   `PartialObjectMetadata` before encoding; `ERROR` events carry the `Status` unchanged.
//!
//! Semantics as upstream: without a resourceVersion (or `0`), or with `sendInitialEvents=true`,
//! the current objects come first as `ADDED` (then, for a WatchList request, a `BOOKMARK`
//! annotated `k8s.io/initial-events-end`); with a resourceVersion, exactly the changes after it.
//! A compacted resourceVersion is an `ERROR` event carrying a 410 `Status`, so clients relist.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use kapi_apimachinery::codec::{self, Format};

use super::body::{self, Body};
use crate::registry::objects::{self, Kind};
use crate::status::ApiError;
use crate::storage::{Event, KeyValue, ListOptions, Revision, Storage, StorageError};

/// Decides which objects a watch reports (namespace prefix aside): label and field selectors.
pub type Filter = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

pub struct WatchRequest {
    /// Storage prefix of the collection watched.
    pub prefix: String,
    /// `None`: start with the current state (`resourceVersion` unset or `0`).
    pub from: Option<Revision>,
    pub send_initial_events: bool,
    /// How fresh the initial events must be: `None` the latest state (a consistent read),
    /// `Some(n)` any state at revision `>= n` (`resourceVersion=0`, or `sendInitialEvents`
    /// with a resourceVersion), which the watch cache serves from memory.
    pub initial_not_older_than: Option<Revision>,
    pub allow_bookmarks: bool,
    pub timeout: Duration,
    pub filter: Filter,
    /// `apiVersion`/`kind` of bookmark objects.
    pub api_version: String,
    pub kind: String,
    /// How events are written.
    pub encoder: Encoder,
}

/// What each watched object becomes before it is encoded.
pub enum Conversion {
    /// A `meta.k8s.io` `Table` of the object with the resource's columns.
    Table { group: &'static str, resource: &'static str, options: crate::tables::TableOptions },
    /// A `PartialObjectMetadata` of this `meta.k8s.io` version.
    PartialObjectMetadata(crate::tables::TableVersion),
}

/// Writes events in the negotiated wire form (JSON or protobuf frames), converting objects first.
pub struct Encoder {
    pub format: Format,
    pub conversion: Option<Conversion>,
}

impl Encoder {
    /// The response's `Content-Type` (upstream: JSON as is, other media types with
    /// `;stream=watch`).
    pub fn content_type(&self) -> &'static str {
        match self.format {
            Format::Protobuf => codec::PROTOBUF_WATCH,
            Format::Json | Format::Yaml => codec::JSON,
        }
    }

    /// One event carrying `object` (converted as asked).
    fn event(&mut self, kind: &str, object: &Value) -> Bytes {
        let converted = match &mut self.conversion {
            None => None,
            Some(Conversion::PartialObjectMetadata(version)) => Some(super::metadata::partial_object(object, *version)),
            Some(Conversion::Table { group, resource, options }) => {
                let table = crate::tables::to_table_with(group, resource, std::slice::from_ref(object), None, options, chrono::Utc::now());
                options.no_headers = true;
                Some(table)
            }
        };
        self.write(kind, converted.as_ref().unwrap_or(object))
    }

    /// An `ERROR` event: the `Status` is never converted.
    fn error(&mut self, status: &Value) -> Bytes {
        self.write("ERROR", status)
    }

    fn write(&self, kind: &str, object: &Value) -> Bytes {
        match self.format {
            Format::Protobuf => {
                let api_version = object["apiVersion"].as_str().unwrap_or_default();
                let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                let object_kind = Kind {
                    group: group.to_owned(),
                    version: version.to_owned(),
                    kind: object["kind"].as_str().unwrap_or_default().to_owned(),
                };
                match objects::encode(&object_kind, Format::Protobuf, object) {
                    Ok(raw) => Bytes::from(codec::watch_frame(kind, &raw)),
                    Err(e) => {
                        tracing::warn!(error = %e, kind = %object_kind.kind, "encoding a watch event");
                        Bytes::new()
                    }
                }
            }
            Format::Json | Format::Yaml => event_line(kind, object),
        }
    }
}

/// How often an idle watch with bookmarks allowed reports its position (upstream: about once a
/// minute).
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Starts the watch; the response streams until the timeout, the client leaving, or an error.
pub async fn start(store: Arc<dyn Storage>, mut req: WatchRequest) -> Result<http::Response<Body>, ApiError> {
    // A resourceVersion is an unsigned 64-bit number; one beyond the revisions' range can only
    // arrive here wrapped below zero. It is a revision from the future, as upstream's watch
    // cache sees it (a 504 "Too large resource version"), not an invalid one.
    req.from = req.from.map(future_if_negative);
    req.initial_not_older_than = req.initial_not_older_than.map(future_if_negative);
    let (tx, body) = body::channel(64);
    // Set the starting point up front, so that a bad request is an error response, not a
    // stream that ends at once.
    let (initial, from) = match req.from {
        Some(rev) if !req.send_initial_events => (Vec::new(), rev),
        _ => {
            let options = ListOptions { not_older_than: req.initial_not_older_than, ..ListOptions::default() };
            let list = store.list(&req.prefix, options).await.map_err(ApiError::from)?;
            (list.kvs, list.revision)
        }
    };
    let stream = match store.watch(&req.prefix, from).await {
        Ok(s) => Some(s),
        Err(StorageError::Compacted { requested, compacted }) => {
            let status = ApiError::too_old_resource_version(requested.max(0) as u64, compacted.max(0) as u64);
            let _ = tx.send(req.encoder.error(&serde_json::to_value(status.to_status()).unwrap_or(Value::Null))).await;
            None
        }
        Err(StorageError::FutureRevision { .. }) => {
            return Err(ApiError::timeout("Too large resource version", 1));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    let content_type = req.encoder.content_type();
    if let Some(stream) = stream {
        tokio::spawn(run(tx, stream, initial, from, req));
    }
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache, private"));
    Ok(resp)
}

async fn run(
    tx: mpsc::Sender<Bytes>,
    mut stream: crate::storage::WatchStream,
    initial: Vec<KeyValue>,
    mut last: Revision,
    mut req: WatchRequest,
) {
    // From the start: initial events count against the timeout too.
    let deadline = watch_deadline(tokio::time::Instant::now(), req.timeout);
    for kv in &initial {
        if let Some(obj) = object(kv, kv.mod_revision, &req.api_version)
            && (req.filter)(&obj)
            && !send_before(&tx, req.encoder.event("ADDED", &obj), deadline).await
        {
            return;
        }
    }
    if req.send_initial_events && req.allow_bookmarks {
        let mut bookmark = bookmark(&req, last);
        bookmark["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        if !send_before(&tx, req.encoder.event("BOOKMARK", &bookmark), deadline).await {
            return;
        }
    }
    let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
    ticker.tick().await;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            () = tx.closed() => return,
            _ = ticker.tick(), if req.allow_bookmarks => {
                let bookmark = bookmark(&req, last);
                if !send_before(&tx, req.encoder.event("BOOKMARK", &bookmark), deadline).await {
                    return;
                }
            }
            event = stream.next() => {
                let Some(Ok(event)) = event else {
                    // The store ended the watch (overflow, shutdown): the client re-lists.
                    return;
                };
                last = event.revision();
                if let Some((kind, object)) = translate(&event, &req.filter, &req.api_version)
                    && !send_before(&tx, req.encoder.event(kind, &object), deadline).await
                {
                    return;
                }
            }
        }
    }
}

/// Sends one frame unless the watch's deadline passes first — a client that stopped reading
/// must not hold the watch (and its place in the store's feed) past its timeout — or the client
/// left. `false`: the watch is over.
async fn send_before(tx: &mpsc::Sender<Bytes>, frame: Bytes, deadline: tokio::time::Instant) -> bool {
    matches!(tokio::time::timeout_at(deadline, tx.send(frame)).await, Ok(Ok(())))
}

/// The longest timeout upstream can represent: Go's `time.Duration` holds `i64::MAX`
/// nanoseconds (about 292 years).
const GO_MAX_DURATION: Duration = Duration::new(9_223_372_036, 854_775_807);

/// When a watch started at `now` ends. Upstream computes `time.Duration(timeoutSeconds) *
/// time.Second`, which wraps beyond [`GO_MAX_DURATION`]: for every `timeoutSeconds` from
/// 9223372037 to 18446744073 (`i64::MAX` included, which becomes -1s) the product is negative
/// and the watch ends at once. kapi ends every watch whose timeout is beyond that range at
/// once, without computing a wrap (the client sees a watch that timed out, and watches again),
/// and never overflows the clock: a deadline the clock cannot hold is about 30 years away.
fn watch_deadline(now: tokio::time::Instant, timeout: Duration) -> tokio::time::Instant {
    if timeout > GO_MAX_DURATION {
        return now;
    }
    now.checked_add(timeout).or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30))).unwrap_or(now)
}

/// A negative revision asked for (a resourceVersion beyond `i64::MAX`, wrapped) as the
/// furthest future revision.
fn future_if_negative(revision: Revision) -> Revision {
    if revision < 0 { Revision::MAX } else { revision }
}

/// A storage event as a watch event. An update moving an object out of the filter is a
/// `DELETED` for this watcher, and one moving it in an `ADDED`, as upstream's filtered watches.
fn translate(event: &Event, filter: &Filter, api_version: &str) -> Option<(&'static str, Value)> {
    match event {
        Event::Put { kv, prev } => {
            let obj = object(kv, kv.mod_revision, api_version)?;
            let was = prev.as_ref().and_then(|p| object(p, p.mod_revision, api_version)).is_some_and(|o| filter(&o));
            match (was, filter(&obj)) {
                (_, true) if prev.is_none() || !was => Some(("ADDED", obj)),
                (true, true) => Some(("MODIFIED", obj)),
                (true, false) => Some(("DELETED", obj)),
                _ => None,
            }
        }
        Event::Delete { prev, revision } => {
            let obj = object(prev, *revision, api_version)?;
            filter(&obj).then_some(("DELETED", obj))
        }
        // Only moves the watch's position (its next bookmark).
        Event::Progress { .. } => None,
    }
}

/// A stored object as JSON with the given resourceVersion, in the watched `api_version`
/// (converted from the storage version).
fn object(kv: &KeyValue, revision: Revision, api_version: &str) -> Option<Value> {
    let (kind, value) = decoded(kv)?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (_, mut value) = objects::convert_stored(&kind, Value::clone(&value), group, version).ok()?;
    value["metadata"]["resourceVersion"] = Value::String(revision.to_string());
    Some(value)
}

/// How many decoded objects [`decoded`] keeps.
const DECODED_CAPACITY: usize = 4096;

/// Recently decoded stored objects by key and mod revision, oldest first. With the watch cache
/// every watcher of a collection receives the same stored bytes, and decoding them is the
/// costly step of an event, so it is done once for all watchers (upstream's cacher likewise
/// shares an event's serialization between its watchers). Entries keep the bytes they were
/// decoded from and are used only when the bytes match.
#[allow(clippy::type_complexity)]
static DECODED: std::sync::Mutex<(
    std::collections::BTreeMap<(String, Revision), (Bytes, objects::Kind, Arc<Value>)>,
    std::collections::VecDeque<(String, Revision)>,
)> = std::sync::Mutex::new((std::collections::BTreeMap::new(), std::collections::VecDeque::new()));

fn decoded(kv: &KeyValue) -> Option<(objects::Kind, Arc<Value>)> {
    let id = (kv.key.clone(), kv.mod_revision);
    {
        let shared = DECODED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((bytes, kind, value)) = shared.0.get(&id)
            && *bytes == kv.value
        {
            return Some((kind.clone(), value.clone()));
        }
    }
    let (kind, value) = objects::decode_stored(&kv.value).ok()?;
    let value = Arc::new(value);
    let mut shared = DECODED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (map, order) = &mut *shared;
    if map.insert(id.clone(), (kv.value.clone(), kind.clone(), value.clone())).is_none() {
        order.push_back(id);
        while order.len() > DECODED_CAPACITY {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }
    Some((kind, value))
}

fn bookmark(req: &WatchRequest, revision: Revision) -> Value {
    json!({
        "kind": req.kind,
        "apiVersion": req.api_version,
        "metadata": { "resourceVersion": revision.to_string() },
    })
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({ "type": kind, "object": object })).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{IncludeObject, TableOptions, TableVersion};

    fn config_map(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": "7"}, "data": {"k": "v"}})
    }

    #[test]
    fn watchers_share_decoded_objects_of_the_same_bytes() {
        let kind = Kind { group: String::new(), version: "v1".into(), kind: "ConfigMap".into() };
        let stored = |data: &str| {
            let mut cm = config_map("shared");
            cm["data"]["k"] = json!(data);
            Bytes::from(objects::encode(&kind, Format::Protobuf, &cm).unwrap())
        };
        let kv = KeyValue { key: "/registry/configmaps/ns/shared-test".into(), value: stored("1"), create_revision: 3, mod_revision: 3 };
        let first = decoded(&kv).unwrap().1;
        assert!(Arc::ptr_eq(&first, &decoded(&kv.clone()).unwrap().1), "decoded once");
        // Same key and revision, other bytes (another store in the same process): decoded anew.
        let other = KeyValue { value: stored("2"), ..kv.clone() };
        assert_eq!(decoded(&other).unwrap().1["data"]["k"], "2");
        assert_eq!(object(&kv, 9, "v1").unwrap()["metadata"]["resourceVersion"], "9");
        assert_eq!(object(&kv, 9, "v1").unwrap()["data"]["k"], "1");
    }

    #[test]
    fn json_events_are_lines() {
        let mut encoder = Encoder { format: Format::Json, conversion: None };
        assert_eq!(encoder.content_type(), "application/json");
        let line = encoder.event("ADDED", &config_map("a"));
        assert!(line.ends_with(b"\n"));
        let event: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(event, json!({"type": "ADDED", "object": config_map("a")}));
    }

    #[test]
    fn protobuf_events_are_frames_of_whole_objects() {
        let mut encoder = Encoder { format: Format::Protobuf, conversion: None };
        assert_eq!(encoder.content_type(), "application/vnd.kubernetes.protobuf;stream=watch");
        let frame = encoder.event("MODIFIED", &config_map("a"));
        let (kind, raw, used) = codec::read_watch_frame(&frame).unwrap().unwrap();
        assert_eq!((kind.as_str(), used), ("MODIFIED", frame.len()));
        let (object_kind, object) = objects::decode_stored(&raw).unwrap();
        assert_eq!(object_kind.kind, "ConfigMap");
        assert_eq!(object, config_map("a"));

        // An ERROR carries the Status as it is, whatever the conversion.
        let mut encoder = Encoder { format: Format::Protobuf, conversion: Some(Conversion::PartialObjectMetadata(TableVersion::V1)) };
        let status = serde_json::to_value(ApiError::too_old_resource_version(1, 5).to_status()).unwrap();
        let frame = encoder.error(&status);
        let (kind, raw, _) = codec::read_watch_frame(&frame).unwrap().unwrap();
        assert_eq!(kind, "ERROR");
        let (object_kind, object) = objects::decode_stored(&raw).unwrap();
        assert_eq!((object_kind.kind.as_str(), object["code"].as_i64()), ("Status", Some(410)));
    }

    #[test]
    fn conversions_apply_to_each_object() {
        let mut encoder = Encoder { format: Format::Protobuf, conversion: Some(Conversion::PartialObjectMetadata(TableVersion::V1)) };
        let (_, raw, _) = codec::read_watch_frame(&encoder.event("ADDED", &config_map("a"))).unwrap().unwrap();
        let (kind, object) = objects::decode_stored(&raw).unwrap();
        assert_eq!((kind.group.as_str(), kind.kind.as_str()), ("meta.k8s.io", "PartialObjectMetadata"));
        assert_eq!(object["metadata"]["name"], "a");
        assert!(object.get("data").is_none());

        let options = TableOptions { include_object: IncludeObject::None, no_headers: false, version: TableVersion::V1 };
        let mut encoder =
            Encoder { format: Format::Json, conversion: Some(Conversion::Table { group: "", resource: "configmaps", options }) };
        let first: Value = serde_json::from_slice(&encoder.event("ADDED", &config_map("a"))).unwrap();
        let second: Value = serde_json::from_slice(&encoder.event("ADDED", &config_map("b"))).unwrap();
        assert_eq!(first["object"]["kind"], "Table");
        assert_eq!(first["object"]["columnDefinitions"][0]["name"], "Name");
        assert!(second["object"]["columnDefinitions"].is_null(), "headers only on the first event");
        assert_eq!(second["object"]["rows"][0]["cells"][0], "b");
        assert!(second["object"]["rows"][0]["object"].is_null());
    }

    #[test]
    fn huge_timeouts_never_overflow() {
        let now = tokio::time::Instant::now();
        // Beyond Go's Duration: upstream's product wraps (i64::MAX seconds is -1s); ended at once.
        for timeout in
            [Duration::MAX, Duration::from_secs(u64::MAX), Duration::from_secs(i64::MAX as u64), Duration::from_secs(9_223_372_037)]
        {
            assert_eq!(watch_deadline(now, timeout), now, "{timeout:?}");
        }
        // Up to it, exactly as asked.
        assert_eq!(watch_deadline(now, GO_MAX_DURATION), now + GO_MAX_DURATION);
        assert_eq!(watch_deadline(now, Duration::from_secs(9_223_372_036)), now + Duration::from_secs(9_223_372_036));
        assert_eq!(watch_deadline(now, Duration::from_secs(1800)), now + Duration::from_secs(1800));
    }

    #[tokio::test]
    async fn a_wrapped_resource_version_is_from_the_future() {
        assert_eq!(future_if_negative(-1), Revision::MAX);
        assert_eq!(future_if_negative(i64::MIN), Revision::MAX);
        assert_eq!(future_if_negative(0), 0);
        assert_eq!(future_if_negative(7), 7);

        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> = Arc::new(crate::storage::embedded::EmbeddedStore::open(dir.path().join("store.redb")).unwrap());
        let request = |from: Option<Revision>, send_initial_events: bool, timeout: Duration| WatchRequest {
            prefix: "/registry/configmaps/".into(),
            from,
            send_initial_events,
            initial_not_older_than: if send_initial_events { from } else { None },
            allow_bookmarks: true,
            timeout,
            filter: Arc::new(|_: &Value| true),
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            encoder: Encoder { format: Format::Json, conversion: None },
        };
        // resourceVersion=18446744073709551615 arrives as -1 (`u64 as i64`).
        // (With `sendInitialEvents` the initial list's freshness is the watch cache's to check.)
        for (from, initial) in [(-1, false), (i64::MIN, false), (i64::MAX, false)] {
            let e = start(store.clone(), request(Some(from), initial, Duration::from_secs(5))).await.unwrap_err();
            assert_eq!(e.code, 504, "{from} {initial}: {}", e.message);
            assert!(e.message.starts_with("Timeout: Too large resource version"), "{}", e.message);
        }
        // A watch with the longest timeout Go can hold runs (a panicked task would have ended
        // the stream) ...
        use http_body_util::BodyExt as _;
        let resp = start(store.clone(), request(None, false, GO_MAX_DURATION)).await.unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        assert!(tokio::time::timeout(Duration::from_millis(200), body.frame()).await.is_err(), "the watch ended");
        // ... and one beyond it ends at once, as upstream's wrapped timeout does.
        let resp = start(store.clone(), request(None, false, Duration::from_secs(i64::MAX as u64))).await.unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        assert!(tokio::time::timeout(Duration::from_secs(5), body.frame()).await.unwrap().is_none(), "the watch went on");
    }
}
