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

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use kapi_apimachinery::codec::{self, Format};

use super::body::{self, Body};
use crate::registry::objects::{self, Kind};
use crate::registry::store::{ObjectWatch, WatchedObject};

/// How a watch of the store's objects is served.
pub struct WatchRequest {
    /// Whether the initial objects end with a bookmark (a WatchList request).
    pub send_initial_events: bool,
    pub allow_bookmarks: bool,
    pub timeout: Duration,
    /// How events are written.
    pub encoder: Encoder,
}

/// What each watched object becomes before it is encoded.
pub enum Conversion {
    /// A `meta.k8s.io` `Table` of the object with the resource's columns.
    Table { columns: crate::tables::Columns, options: crate::tables::TableOptions },
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

    /// One event carrying `object` (converted as asked), this watcher's own.
    fn event(&mut self, kind: &str, object: &Value) -> Bytes {
        if let Some(Conversion::Table { columns, options }) = &mut self.conversion {
            let table = columns.to_table(std::slice::from_ref(object), None, options, chrono::Utc::now());
            options.no_headers = true;
            return self.write(kind, &table);
        }
        self.untabled_event(kind, object)
    }

    /// One event carrying a watched object: in every form but a Table the bytes are made once
    /// for all watchers asking for the same form (`WatchedObject::encoded`), as upstream's
    /// cacher serializes an event once per encoder.
    fn shared_event(&mut self, kind: &'static str, object: &WatchedObject) -> Bytes {
        match self.shared_form() {
            Some(form) => object.encoded(kind, form, |value| self.untabled_event(kind, value)),
            None => self.event(kind, object.object()),
        }
    }

    /// The name of this encoder's form among the forms watchers share; `None` for a Table,
    /// whose column definitions come only with a watcher's first event.
    fn shared_form(&self) -> Option<&'static str> {
        use crate::tables::TableVersion;
        let protobuf = self.format == Format::Protobuf;
        match &self.conversion {
            None if protobuf => Some("protobuf"),
            None => Some("json"),
            Some(Conversion::PartialObjectMetadata(TableVersion::V1)) if protobuf => Some("protobuf;as=PartialObjectMetadata;v=v1"),
            Some(Conversion::PartialObjectMetadata(TableVersion::V1)) => Some("json;as=PartialObjectMetadata;v=v1"),
            Some(Conversion::PartialObjectMetadata(TableVersion::V1Beta1)) if protobuf => {
                Some("protobuf;as=PartialObjectMetadata;v=v1beta1")
            }
            Some(Conversion::PartialObjectMetadata(TableVersion::V1Beta1)) => Some("json;as=PartialObjectMetadata;v=v1beta1"),
            Some(Conversion::Table { .. }) => None,
        }
    }

    /// An event in any form but a Table: the same for every watcher of that form.
    fn untabled_event(&self, kind: &str, object: &Value) -> Bytes {
        match &self.conversion {
            Some(Conversion::PartialObjectMetadata(version)) => self.write(kind, &super::metadata::partial_object(object, *version)),
            _ => self.write(kind, object),
        }
    }

    /// An `ERROR` event: the `Status` is never converted.
    fn error(&mut self, status: &Value) -> Bytes {
        self.write("ERROR", status)
    }

    fn write(&self, kind: &str, object: &Value) -> Bytes {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let object_kind =
            Kind { group: group.to_owned(), version: version.to_owned(), kind: object["kind"].as_str().unwrap_or_default().to_owned() };
        match self.format {
            Format::Protobuf => match objects::encode(&object_kind, Format::Protobuf, object) {
                Ok(raw) => Bytes::from(codec::watch_frame(kind, &raw)),
                Err(e) => {
                    tracing::warn!(error = %e, kind = %object_kind.kind, "encoding a watch event");
                    Bytes::new()
                }
            },
            Format::Json | Format::Yaml => event_line(kind, &object_kind, object),
        }
    }
}

/// How often an idle watch with bookmarks allowed reports its position (upstream: about once a
/// minute).
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Starts streaming the watch; the response streams until the timeout, the client leaving,
/// or the store ending the watch. A watch that could not start (a compacted resourceVersion)
/// streams its one `ERROR` event.
///
/// The events are made as the response body is polled (`body::unfold`), with no task or
/// channel of the watch's own: with thousands of watchers, a task's wake and a channel per
/// event and watcher were a large part of a delivery. A client that stops reading stops the
/// watch from being polled; the store drops its place in the feed once its buffer fills
/// (`storage::cache`), and the watch ends at its deadline when polled again.
pub fn start(mut objects: ObjectWatch, mut req: WatchRequest) -> http::Response<Body> {
    if let Some(error) = objects.take_error() {
        let status = serde_json::to_value(error.to_status()).unwrap_or(Value::Null);
        let frame = req.encoder.error(&status);
        return response(body::full(frame), req.encoder.content_type());
    }
    let content_type = req.encoder.content_type();
    // From the start: initial events count against the timeout too.
    let deadline = watch_deadline(tokio::time::Instant::now(), req.timeout);
    // Boxed: the state moves into each event's future and out of it again, and a pointer moves
    // for free where the whole watch (several hundred bytes) was copied twice per event.
    let events = Box::new(Events {
        objects,
        timeout: Box::pin(tokio::time::sleep_until(deadline)),
        ticker: tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_INTERVAL, BOOKMARK_INTERVAL),
        initial: true,
        req,
    });
    response(body::unfold(events, Events::next_frame), content_type)
}

fn response(body: Body, content_type: &'static str) -> http::Response<Body> {
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache, private"));
    resp
}

/// A watch in progress: where it is, and what makes its next event.
struct Events {
    objects: ObjectWatch,
    req: WatchRequest,
    /// The watch's deadline: one timer for its life.
    timeout: std::pin::Pin<Box<tokio::time::Sleep>>,
    ticker: tokio::time::Interval,
    /// Whether the initial objects are still being sent.
    initial: bool,
}

impl Events {
    /// The next event's frame and the watch after it; `None` once the watch is over (its
    /// deadline passed, or the store ended it).
    async fn next_frame(mut self: Box<Self>) -> Option<(Bytes, Box<Self>)> {
        if self.initial {
            // The timer is not polled while the initial objects go out: the clock says.
            if tokio::time::Instant::now() >= self.timeout.deadline() {
                return None;
            }
            if let Some(event) = self.objects.initial_event() {
                let (kind, object) = event.into_parts();
                let frame = self.req.encoder.shared_event(kind, &object);
                return Some((frame, self));
            }
            self.initial = false;
            if self.req.send_initial_events && self.req.allow_bookmarks {
                let mut bookmark = bookmark(&self.objects);
                bookmark["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
                let frame = self.req.encoder.event("BOOKMARK", &bookmark);
                return Some((frame, self));
            }
        }
        let frame = tokio::select! {
            // A watch polled after its deadline ends, whatever else is ready.
            biased;
            () = &mut self.timeout => return None,
            _ = self.ticker.tick(), if self.req.allow_bookmarks => {
                let bookmark = bookmark(&self.objects);
                self.req.encoder.event("BOOKMARK", &bookmark)
            }
            event = self.objects.next() => {
                // None: the store ended the watch (overflow, shutdown): the client re-lists.
                let (kind, object) = event?.into_parts();
                self.req.encoder.shared_event(kind, &object)
            }
        };
        Some((frame, self))
    }
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

/// Where the watch is, for the client to resume from.
fn bookmark(objects: &ObjectWatch) -> Value {
    json!({
        "kind": objects.kind().kind,
        "apiVersion": objects.kind().api_version(),
        "metadata": { "resourceVersion": objects.position().to_string() },
    })
}
/// A JSON watch event: `{"object":…,"type":…}` and a newline, written around the object as
/// [`objects::to_json`] writes it (a built-in kind's `fieldsV1` in set order) rather than
/// through a JSON value holding a copy of it. The keys are in the order serde_json writes a
/// JSON object's (sorted), which is how kapi has always written them; decoders do not depend
/// on it.
fn event_line(kind: &str, object_kind: &Kind, object: &Value) -> Bytes {
    let Ok(text) = objects::to_json(object_kind, object) else { return Bytes::new() };
    let mut line = Vec::with_capacity(text.len() + kind.len() + 24);
    line.extend_from_slice(b"{\"object\":");
    line.extend_from_slice(&text);
    line.extend_from_slice(b",\"type\":");
    line.extend_from_slice(&serde_json::to_vec(kind).unwrap_or_default());
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ApiError;
    use crate::tables::{IncludeObject, TableOptions, TableVersion};

    fn config_map(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "resourceVersion": "7"}, "data": {"k": "v"}})
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
        let mut encoder = Encoder {
            format: Format::Json,
            conversion: Some(Conversion::Table { columns: crate::tables::Columns::Printer(&crate::tables::CONFIG_MAPS), options }),
        };
        let first: Value = serde_json::from_slice(&encoder.event("ADDED", &config_map("a"))).unwrap();
        let second: Value = serde_json::from_slice(&encoder.event("ADDED", &config_map("b"))).unwrap();
        assert_eq!(first["object"]["kind"], "Table");
        assert_eq!(first["object"]["columnDefinitions"][0]["name"], "Name");
        assert!(second["object"]["columnDefinitions"].is_null(), "headers only on the first event");
        assert_eq!(second["object"]["rows"][0]["cells"][0], "b");
        assert!(second["object"]["rows"][0]["object"].is_null());
    }

    #[test]
    fn watchers_of_one_form_share_the_event_bytes() {
        let object = WatchedObject::new(config_map("a"));
        let json = || Encoder { format: Format::Json, conversion: None };
        let (first, second) = (json().shared_event("ADDED", &object), json().shared_event("ADDED", &object));
        assert_eq!(first.as_ptr(), second.as_ptr(), "encoded once, the bytes shared");
        // The bytes a JSON value of the event made before the event was shared.
        let mut line = serde_json::to_vec(&json!({"type": "ADDED", "object": config_map("a")})).unwrap();
        line.push(b'\n');
        assert_eq!(first, line);
        // Another event type or form is encoded for itself, once.
        let deleted = json().shared_event("DELETED", &object);
        assert!(deleted.starts_with(b"{\"object\":") && deleted.ends_with(b",\"type\":\"DELETED\"}\n"));
        let protobuf = || Encoder { format: Format::Protobuf, conversion: None };
        let frame = protobuf().shared_event("ADDED", &object);
        assert_eq!(frame.as_ptr(), protobuf().shared_event("ADDED", &object).as_ptr());
        assert_eq!(frame, protobuf().event("ADDED", &config_map("a")));
        let metadata = || Encoder { format: Format::Json, conversion: Some(Conversion::PartialObjectMetadata(TableVersion::V1)) };
        let partial = metadata().shared_event("ADDED", &object);
        assert_eq!(partial.as_ptr(), metadata().shared_event("ADDED", &object).as_ptr());
        assert_eq!(serde_json::from_slice::<Value>(&partial).unwrap()["object"]["kind"], "PartialObjectMetadata");
        assert_ne!(partial.as_ptr(), first.as_ptr());
        // A Table is each watcher's own: its columns come with the watcher's first event.
        let options = TableOptions { include_object: IncludeObject::None, no_headers: false, version: TableVersion::V1 };
        let table = || Encoder {
            format: Format::Json,
            conversion: Some(Conversion::Table { columns: crate::tables::Columns::Printer(&crate::tables::CONFIG_MAPS), options }),
        };
        let mut one = table();
        let headed: Value = serde_json::from_slice(&one.shared_event("ADDED", &object)).unwrap();
        let headless: Value = serde_json::from_slice(&one.shared_event("ADDED", &object)).unwrap();
        assert!(headed["object"]["columnDefinitions"].is_array() && headless["object"]["columnDefinitions"].is_null());
        let other: Value = serde_json::from_slice(&table().shared_event("ADDED", &object)).unwrap();
        assert!(other["object"]["columnDefinitions"].is_array(), "another watcher's first event has the columns");
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
    async fn a_resource_version_beyond_the_revisions_is_from_the_future() {
        use crate::registry::store::{Store, StoreConfig};
        let dir = tempfile::tempdir().unwrap();
        let storage = crate::storage::embedded::EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
        let config = StoreConfig { network: Default::default(), event_ttl: Duration::ZERO, ..Default::default() };
        let kind = Kind::core_v1("ConfigMap");
        let store = Store::new(&storage, &config, "", "configmaps", kind);
        async fn watch(store: &Store<'_>, query: &str) -> Result<ObjectWatch, ApiError> {
            store.watch(None, &crate::list_options::ListOptions::from_query(query).unwrap()).await
        }
        // (With `sendInitialEvents` the initial list's freshness is the watch cache's to check.)
        for query in ["resourceVersion=18446744073709551615".to_owned(), format!("resourceVersion={}", i64::MAX)] {
            let e = watch(&store, &query).await.err().unwrap();
            assert_eq!(e.code, 504, "{query}: {}", e.message);
            assert!(e.message.starts_with("Timeout: Too large resource version"), "{}", e.message);
        }
        let request = |timeout: Duration| WatchRequest {
            send_initial_events: false,
            allow_bookmarks: true,
            timeout,
            encoder: Encoder { format: Format::Json, conversion: None },
        };
        // A watch with the longest timeout Go can hold runs (a panicked task would have ended
        // the stream) ...
        use http_body_util::BodyExt as _;
        let resp = start(watch(&store, "").await.unwrap(), request(GO_MAX_DURATION));
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        assert!(tokio::time::timeout(Duration::from_millis(200), body.frame()).await.is_err(), "the watch ended");
        // ... and one beyond it ends at once, as upstream's wrapped timeout does.
        let resp = start(watch(&store, "").await.unwrap(), request(Duration::from_secs(i64::MAX as u64)));
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        assert!(tokio::time::timeout(Duration::from_secs(5), body.frame()).await.unwrap().is_none(), "the watch went on");
    }
}
