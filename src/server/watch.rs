//! Watch: a streamed sequence of `{"type": ..., "object": ...}` events, as upstream's watch
//! server writes them in JSON (one event per chunk, newline-terminated).
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

use super::body::{self, Body};
use super::objects;
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
    pub allow_bookmarks: bool,
    pub timeout: Duration,
    pub filter: Filter,
    /// `apiVersion`/`kind` of bookmark objects.
    pub api_version: String,
    pub kind: String,
}

/// How often an idle watch with bookmarks allowed reports its position (upstream: about once a
/// minute).
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Starts the watch; the response streams until the timeout, the client leaving, or an error.
pub async fn start(store: Arc<dyn Storage>, req: WatchRequest) -> Result<http::Response<Body>, ApiError> {
    let (tx, body) = body::channel(64);
    // Set the starting point up front, so that a bad request is an error response, not a
    // stream that ends at once.
    let (initial, from) = match req.from {
        Some(rev) if !req.send_initial_events => (Vec::new(), rev),
        _ => {
            let list = store.list(&req.prefix, ListOptions::default()).await.map_err(ApiError::from)?;
            (list.kvs, list.revision)
        }
    };
    let stream = match store.watch(&req.prefix, from).await {
        Ok(s) => Some(s),
        Err(StorageError::Compacted { requested, compacted }) => {
            let status = ApiError::too_old_resource_version(requested.max(0) as u64, compacted.max(0) as u64);
            let _ = tx.send(event_line("ERROR", &serde_json::to_value(status.to_status()).unwrap_or(Value::Null))).await;
            None
        }
        Err(StorageError::FutureRevision { .. }) => {
            return Err(ApiError::timeout("Too large resource version", 1));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    if let Some(stream) = stream {
        tokio::spawn(run(tx, stream, initial, from, req));
    }
    let mut resp = http::Response::new(body);
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp.headers_mut().insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache, private"));
    Ok(resp)
}

async fn run(
    tx: mpsc::Sender<Bytes>,
    mut stream: crate::storage::WatchStream,
    initial: Vec<KeyValue>,
    mut last: Revision,
    req: WatchRequest,
) {
    for kv in &initial {
        if let Some(obj) = object(kv, kv.mod_revision)
            && (req.filter)(&obj)
            && tx.send(event_line("ADDED", &obj)).await.is_err()
        {
            return;
        }
    }
    if req.send_initial_events && req.allow_bookmarks {
        let mut bookmark = bookmark(&req, last);
        bookmark["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        if tx.send(event_line("BOOKMARK", &bookmark)).await.is_err() {
            return;
        }
    }
    let deadline = tokio::time::Instant::now() + req.timeout;
    let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
    ticker.tick().await;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            () = tx.closed() => return,
            _ = ticker.tick(), if req.allow_bookmarks => {
                if tx.send(event_line("BOOKMARK", &bookmark(&req, last))).await.is_err() {
                    return;
                }
            }
            event = stream.next() => {
                let Some(Ok(event)) = event else {
                    // The store ended the watch (overflow, shutdown): the client re-lists.
                    return;
                };
                last = event.revision();
                if let Some(line) = translate(&event, &req.filter)
                    && tx.send(line).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// A storage event as a watch event. An update moving an object out of the filter is a
/// `DELETED` for this watcher, and one moving it in an `ADDED`, as upstream's filtered watches.
fn translate(event: &Event, filter: &Filter) -> Option<Bytes> {
    match event {
        Event::Put { kv, prev } => {
            let obj = object(kv, kv.mod_revision)?;
            let was = prev.as_ref().and_then(|p| object(p, p.mod_revision)).is_some_and(|o| filter(&o));
            match (was, filter(&obj)) {
                (_, true) if prev.is_none() || !was => Some(event_line("ADDED", &obj)),
                (true, true) => Some(event_line("MODIFIED", &obj)),
                (true, false) => Some(event_line("DELETED", &obj)),
                _ => None,
            }
        }
        Event::Delete { prev, revision } => {
            let obj = object(prev, *revision)?;
            filter(&obj).then(|| event_line("DELETED", &obj))
        }
    }
}

/// A stored object as JSON with the given resourceVersion.
fn object(kv: &KeyValue, revision: Revision) -> Option<Value> {
    let (_, mut value) = objects::decode_stored(&kv.value).ok()?;
    value["metadata"]["resourceVersion"] = Value::String(revision.to_string());
    Some(value)
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
