//! The store's reads (upstream's `Store.Get`, `Store.List`, `Store.Watch`): objects in the
//! caller's version, selected by label and field selectors. How they are written to the wire
//! (formats, tables, metadata-only forms, watch framing, bookmarks and timeouts) is the
//! handlers' business; what is read, at which revision, and what a watch reports is decided
//! here.

use std::sync::Arc;

use bytes::Bytes;
use kapi_apimachinery::codec::Format;
use serde_json::Value;

use super::Store;
use super::watched::{Decoded, WatchedObject, event_objects, watched_object};
use crate::list_options::{self, ListOptions, ReadConsistency, compacted_continue_error, continue_after};
use crate::registry::objects::{self, Kind};
use crate::registry::strategy::{Converter, FieldSet, Strategy};
use crate::status::ApiError;
use crate::storage::{self, Event, KeyValue, Revision, SharedEvent, StorageError, WatchStream};

/// Which objects a list or watch reports (the namespace aside, which the key prefix selects):
/// upstream's `SelectionPredicate` over labels and the resource's selectable fields.
pub type Filter = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// The list's own metadata (`ListMeta`).
#[derive(Debug, Clone, PartialEq)]
pub struct ListedMeta {
    pub resource_version: Revision,
    /// The token that continues the list after its last item, when more remain.
    pub continue_token: Option<String>,
    /// How many objects remain, when the store knows and nothing was filtered out.
    pub remaining_item_count: Option<i64>,
}

/// The items of a JSON list, written in pieces as they are sent ([`Store::list_json`]): a
/// long list is never held whole as JSON, and encoding the next piece overlaps sending the last.
pub struct JsonListItems {
    kind: Kind,
    items: std::vec::IntoIter<JsonListItem>,
    first: bool,
}

enum JsonListItem {
    /// A stored object of the kind asked for, written when its turn comes.
    Stored(KeyValue),
    /// An item already written (selected, or converted from another version).
    Written(Vec<u8>),
}

impl JsonListItems {
    /// Writes the next items, comma-separated, into `out` until it holds at least `at_least`
    /// bytes or no item remains; answers whether items remain.
    pub fn write_next(&mut self, out: &mut Vec<u8>, at_least: usize) -> Result<bool, ApiError> {
        while out.len() < at_least {
            let Some(item) = self.items.next() else { return Ok(false) };
            if !std::mem::take(&mut self.first) {
                out.push(b',');
            }
            match item {
                JsonListItem::Written(bytes) => out.extend_from_slice(&bytes),
                JsonListItem::Stored(kv) => {
                    let start = out.len();
                    let written = objects::write_list_item_json(&self.kind, &kv.value, kv.mod_revision, out)
                        .map_err(|e| ApiError::internal(format!("encoding {}: {e}", kv.key)))?;
                    if !written {
                        // Stored in another version (written before the storage version changed).
                        out.truncate(start);
                        let (_, mut object) = super::read_as(&kv, Some((&self.kind.group, &self.kind.version)))?;
                        if let Some(fields) = object.as_object_mut() {
                            fields.remove("kind");
                            fields.remove("apiVersion");
                        }
                        serde_json::to_writer(&mut *out, &object).map_err(ApiError::internal)?;
                    }
                }
            }
        }
        Ok(self.items.len() > 0)
    }
}

/// What a watch reports: objects shared with every other watcher of the same version
/// (`store::watched`), which selects them but never changes them.
pub enum WatchEvent {
    Added(Arc<WatchedObject>),
    Modified(Arc<WatchedObject>),
    Deleted(Arc<WatchedObject>),
}

impl WatchEvent {
    /// The event's `type` on the wire, and its object.
    pub fn into_parts(self) -> (&'static str, Arc<WatchedObject>) {
        match self {
            WatchEvent::Added(object) => ("ADDED", object),
            WatchEvent::Modified(object) => ("MODIFIED", object),
            WatchEvent::Deleted(object) => ("DELETED", object),
        }
    }
}

/// A watch of a collection: the initial objects (when asked for), then every later change
/// that concerns the selected objects, each in the watched version.
pub struct ObjectWatch {
    initial: std::vec::IntoIter<KeyValue>,
    /// `None` once the watch has ended, or when it could not start (then `error` says why).
    stream: Option<WatchStream>,
    error: Option<ApiError>,
    filter: Filter,
    kind: Kind,
    /// How stored objects are converted when not through the scheme (the strategy's).
    converter: Option<Converter>,
    /// The revision of the last event read (or of the initial state): where a bookmark puts
    /// the client.
    position: Revision,
}

impl ObjectWatch {
    /// The revision the watch has reached.
    pub fn position(&self) -> Revision {
        self.position
    }

    /// The watched kind (what bookmarks are made of).
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Why the watch could not start (its resourceVersion was compacted: the 410 the client
    /// re-lists on), if so; such a watch has no events.
    pub fn take_error(&mut self) -> Option<ApiError> {
        self.error.take()
    }

    /// The next of the initial objects (as `ADDED`), or `None` once all were reported.
    pub fn initial_event(&mut self) -> Option<WatchEvent> {
        self.initial
            .by_ref()
            .filter_map(|kv| watched_object(&kv, kv.mod_revision, &self.kind, self.converter.as_ref()))
            .find(|object| (self.filter)(object.object()))
            .map(WatchEvent::Added)
    }

    /// The next change, `None` once the watch has ended (the store ended it: the client
    /// re-lists). Cancel-safe: an event is taken from the storage stream only at its one await
    /// and handled before the next.
    pub async fn next(&mut self) -> Option<WatchEvent> {
        loop {
            let event = match self.stream.as_mut()?.next_shared().await {
                Some(Ok(event)) => event,
                // The store ended the watch (overflow, shutdown).
                _ => {
                    self.stream = None;
                    return None;
                }
            };
            self.position = event.revision();
            if let Some(event) = translate(&event, &self.filter, &self.kind, self.converter.as_ref()) {
                return Some(event);
            }
        }
    }
}

impl Store<'_> {
    /// `Get`: the object named `name`, in the caller's version. Without a resourceVersion a
    /// consistent read; with one (`0` or `N`), any state not older than it, which the watch
    /// cache may answer.
    pub async fn get(&self, namespace: Option<&str>, name: &str, resource_version: Option<Revision>) -> Result<(Kind, Value), ApiError> {
        let kv = self.stored(namespace, name, resource_version).await?;
        self.read(&kv)
    }

    /// [`Store::get`], answered in `format`: the object's bytes as the client receives them,
    /// kept from an earlier GET of the same stored object in the same version and form
    /// (`store::encoded`), except for custom resources, whose reading changes with their
    /// definition.
    pub async fn get_encoded(
        &self,
        namespace: Option<&str>,
        name: &str,
        resource_version: Option<Revision>,
        format: Format,
    ) -> Result<Bytes, ApiError> {
        let kv = self.stored(namespace, name, resource_version).await?;
        let encode = || {
            let (kind, value) = self.read(&kv)?;
            objects::encode(&kind, format, &value).map_err(ApiError::internal)
        };
        if self.strategy.converter().is_some() {
            return encode().map(Bytes::from);
        }
        super::encoded::encoded(&kv, &self.kind.api_version(), format, encode)
    }

    /// The stored object named `name` for a GET (see [`Store::get`]).
    async fn stored(&self, namespace: Option<&str>, name: &str, resource_version: Option<Revision>) -> Result<KeyValue, ApiError> {
        let key = self.object_key(namespace, name)?;
        match resource_version {
            None => self.storage.get(&key).await,
            Some(revision) => self.storage.get_not_older_than(&key, revision).await,
        }
        .map_err(|e| self.storage_error(e, name))?
        .ok_or_else(|| ApiError::not_found(self.group_resource(), name))
    }

    /// `List`: the objects the selectors select, in the caller's version and without their
    /// TypeMeta (as in upstream's typed lists), each handed to `item` as it is read, so a large
    /// list is never held whole. Pages are read at one revision (a continue token pins it)
    /// until `limit` objects were selected or the collection ends, as upstream's store does.
    pub async fn list(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
        item: &mut (dyn FnMut(Value) -> Result<(), ApiError> + Send),
    ) -> Result<ListedMeta, ApiError> {
        let filter = self.filter(options);
        self.list_stored(namespace, options, &mut |kv| match self.selected_item(kv, &filter)? {
            Some(object) => item(object).map(|()| true),
            None => Ok(false),
        })
        .await
    }

    /// [`Store::list`] for a JSON answer, whose items the handler writes as it sends them
    /// ([`JsonListItems`]). Without selectors, a built-in kind read in the version it is
    /// stored in keeps its stored values, each written from its decoded typed object (in its
    /// fields' order, as upstream's encoder writes it) without becoming a JSON value; other
    /// items are selected and written as the store reads them.
    pub async fn list_json(&self, namespace: Option<&str>, options: &ListOptions) -> Result<(ListedMeta, JsonListItems), ApiError> {
        let filter = self.filter(options);
        let typed = options.label_selector.is_empty()
            && options.field_selector.is_empty()
            && self.strategy.converter().is_none()
            && objects::is_registered(&self.kind)
            && super::stored_kind(self.strategy, &self.kind) == self.kind;
        let mut items = Vec::new();
        let listed = self
            .list_stored(namespace, options, &mut |kv| {
                if typed {
                    items.push(JsonListItem::Stored(kv.clone()));
                    return Ok(true);
                }
                let Some(object) = self.selected_item(kv, &filter)? else {
                    return Ok(false);
                };
                items.push(JsonListItem::Written(serde_json::to_vec(&object).map_err(ApiError::internal)?));
                Ok(true)
            })
            .await?;
        Ok((listed, JsonListItems { kind: self.kind.clone(), items: items.into_iter(), first: true }))
    }

    /// A stored object as a list item: in the caller's version, without its TypeMeta (as in
    /// upstream's typed lists); `None` when the filter leaves it out.
    fn selected_item(&self, kv: &KeyValue, filter: &Filter) -> Result<Option<Value>, ApiError> {
        let (_, mut object) = self.read(kv)?;
        if !filter(&object) {
            return Ok(None);
        }
        if let Some(fields) = object.as_object_mut() {
            fields.remove("kind");
            fields.remove("apiVersion");
        }
        Ok(Some(object))
    }

    /// The stored objects a list reads, each handed to `item`, which says whether it selected
    /// it. Pages are read at one revision (a continue token pins it) until `limit` objects were
    /// selected or the collection ends, as upstream's store does.
    async fn list_stored(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
        item: &mut (dyn FnMut(&KeyValue) -> Result<bool, ApiError> + Send),
    ) -> Result<ListedMeta, ApiError> {
        let prefix = self.collection_key(namespace);
        let plan = options.list_plan(&prefix)?;
        let limit = options.page_limit().map(|l| l as usize);
        let mut revision = match plan.consistency {
            ReadConsistency::Exact(r) => Some(r),
            ReadConsistency::Latest | ReadConsistency::NotOlderThan(_) => None,
        };
        let mut start_after = plan.start_after();
        let mut selected = 0;
        let mut last_key = None;
        let (more, remaining) = loop {
            let page = self
                .storage
                .list(
                    &prefix,
                    storage::ListOptions {
                        revision,
                        limit: limit.map(|l| l - selected),
                        start_after: start_after.clone(),
                        // resourceVersion=0 / NotOlderThan: the watch cache may answer (first page
                        // only; later pages read at its revision).
                        not_older_than: match plan.consistency {
                            ReadConsistency::NotOlderThan(n) if revision.is_none() => Some(n),
                            _ => None,
                        },
                    },
                )
                .await
                .map_err(|e| match (e, &plan.continue_key) {
                    (StorageError::Compacted { .. }, Some(key)) => compacted_continue_error(key, &prefix),
                    (e, _) => self.storage_error(e, ""),
                })?;
            revision = Some(page.revision);
            for kv in &page.kvs {
                last_key = Some(kv.key.clone());
                if item(kv)? {
                    selected += 1;
                }
            }
            start_after = last_key.clone();
            if !page.more || limit.is_some_and(|l| selected >= l) {
                break (page.more, page.remaining);
            }
        };
        let resource_version = revision.unwrap_or_default();
        let mut meta = ListedMeta { resource_version, continue_token: None, remaining_item_count: None };
        if more && let Some(last) = &last_key {
            meta.continue_token = Some(continue_after(last, &prefix, resource_version).map_err(ApiError::internal)?);
            // Upstream counts what remains only when nothing is filtered out.
            if options.label_selector.is_empty() && options.field_selector.is_empty() {
                meta.remaining_item_count = remaining;
            }
        }
        Ok(meta)
    }

    /// `Watch`: without a resourceVersion (or `0`), or with `sendInitialEvents=true`, the
    /// current objects first as `ADDED`; with a resourceVersion, exactly the changes after it.
    /// A compacted resourceVersion makes a watch whose one event is the 410 `Error`; one from
    /// the future is upstream's 504 "Too large resource version".
    pub async fn watch(&self, namespace: Option<&str>, options: &ListOptions) -> Result<ObjectWatch, ApiError> {
        let prefix = self.collection_key(namespace);
        // A resourceVersion is an unsigned 64-bit number; one beyond the revisions' range
        // can only be a revision from the future, as upstream's watch cache sees it.
        let from = match options.resource_version.as_deref() {
            None | Some("") | Some("0") => None,
            Some(rv) => Some(
                i64::try_from(list_options::parse_resource_version(rv).map_err(|e| ApiError::bad_request(e.to_string()))?)
                    .unwrap_or(Revision::MAX),
            ),
        };
        let send_initial_events = options.send_initial_events == Some(true);
        // How fresh the initial state must be: the latest (a consistent read), or any state
        // not older than `n` (`resourceVersion=0`, or `sendInitialEvents` with a
        // resourceVersion), which the watch cache serves from memory.
        let not_older_than = match options.resource_version.as_deref() {
            Some("0") => Some(0),
            _ if send_initial_events => from,
            _ => None,
        };
        let (initial, start) = match from {
            Some(revision) if !send_initial_events => (Vec::new(), revision),
            _ => {
                let list_options = storage::ListOptions { not_older_than, ..storage::ListOptions::default() };
                let list = self.storage.list(&prefix, list_options).await.map_err(ApiError::from)?;
                (list.kvs, list.revision)
            }
        };
        let (stream, error, initial) = match self.storage.watch(&prefix, start).await {
            Ok(stream) => (Some(stream), None, initial),
            Err(StorageError::Compacted { requested, compacted }) => {
                let error = ApiError::too_old_resource_version(requested.max(0) as u64, compacted.max(0) as u64);
                (None, Some(error), Vec::new())
            }
            Err(StorageError::FutureRevision { .. }) => return Err(ApiError::timeout("Too large resource version", 1)),
            Err(e) => return Err(ApiError::from(e)),
        };
        Ok(ObjectWatch {
            initial: initial.into_iter(),
            stream,
            error,
            filter: self.filter(options),
            kind: self.kind.clone(),
            converter: self.strategy.converter(),
            position: start,
        })
    }

    /// The options' label and field selectors as a predicate on objects of this resource.
    pub fn filter(&self, options: &ListOptions) -> Filter {
        selection(self.strategy, self.group, self.resource, options)
    }
}

/// The options' label and field selectors as a predicate on objects of `resource`, whose
/// strategy (`strategy`) says what fields an object has, for reads that do not go through a
/// store.
pub fn selection(strategy: &dyn Strategy, group: &str, resource: &str, options: &ListOptions) -> Filter {
    let labels = options.label_selector.clone();
    let fields = options.field_selector.clone();
    // Only when there is a field selector: the field set is computed per object.
    let field_set: Option<FieldSet> = (!fields.is_empty()).then(|| strategy.field_set(group, resource));
    Arc::new(move |object: &Value| {
        let labels_match = labels.is_empty() || labels.matches_json(&object["metadata"]["labels"]);
        labels_match && field_set.as_ref().is_none_or(|set| fields.matches_fields(&set(object)))
    })
}

/// A storage event as a watch event. An update moving an object out of the filter is a
/// `DELETED` for this watcher, and one moving it in an `ADDED`, as upstream's filtered watches.
fn translate(event: &SharedEvent, filter: &Filter, kind: &Kind, converter: Option<&Converter>) -> Option<WatchEvent> {
    let objects = event_objects(event);
    let view = |decoded: &Option<Arc<Decoded>>, revision: Revision| decoded.as_ref()?.view(revision, kind, converter);
    match &**event {
        Event::Put { kv, prev } => {
            let object = view(&objects.object, kv.mod_revision)?;
            let was = prev.as_ref().and_then(|p| view(&objects.previous, p.mod_revision)).is_some_and(|o| filter(o.object()));
            match (was, filter(object.object())) {
                (_, true) if prev.is_none() || !was => Some(WatchEvent::Added(object)),
                (true, true) => Some(WatchEvent::Modified(object)),
                (true, false) => Some(WatchEvent::Deleted(object)),
                _ => None,
            }
        }
        Event::Delete { revision, .. } => {
            let object = view(&objects.previous, *revision)?;
            filter(object.object()).then_some(WatchEvent::Deleted(object))
        }
        // Only moves the watch's position (its next bookmark).
        Event::Progress { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items written piece by piece make the same JSON as written at once, whatever the piece
    /// size: stored pods (typed) and already written items alike, commas only between items.
    #[test]
    fn json_list_items_write_in_pieces() {
        let kind = Kind::core_v1("Pod");
        let pod = |name: &str| {
            let value = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}});
            let stored = objects::encode(&kind, Format::Protobuf, &value).unwrap();
            KeyValue { key: format!("/registry/pods/ns/{name}"), value: stored.into(), create_revision: 3, mod_revision: 7 }
        };
        let items = || JsonListItems {
            kind: kind.clone(),
            items: vec![
                JsonListItem::Stored(pod("a")),
                JsonListItem::Written(br#"{"metadata":{"name":"b"}}"#.to_vec()),
                JsonListItem::Stored(pod("c")),
            ]
            .into_iter(),
            first: true,
        };
        for piece in [1, 30, 1 << 20] {
            let (mut items, mut body, mut pieces) = (items(), b"[".to_vec(), 0);
            loop {
                let mut chunk = Vec::new();
                let more = items.write_next(&mut chunk, piece).unwrap();
                body.extend_from_slice(&chunk);
                pieces += 1;
                if !more {
                    break;
                }
            }
            body.push(b']');
            let list: Value = serde_json::from_slice(&body).unwrap();
            let names: Vec<_> = list.as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
            assert_eq!(names, ["a", "b", "c"], "pieces of {piece} bytes");
            assert_eq!(list[0]["metadata"]["resourceVersion"], "7");
            assert!(list[0].get("kind").is_none(), "list items carry no TypeMeta");
            let expected = match piece {
                1 => 3,
                30 => 2,
                _ => 1,
            };
            assert_eq!(pieces, expected, "pieces of {piece} bytes");
        }
    }
}
