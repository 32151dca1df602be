//! Watched objects shared by every watcher, as upstream's watch cache shares an event's
//! object between its watchers and caches its serializations (`cacher`'s `cachingObject`).
//!
//! With the watch cache every watcher of a collection receives the same stored bytes for an
//! event. Decoding them, converting the object to the watched version and encoding it for the
//! wire are the costly steps of delivering an event, and with thousands of watchers they were
//! done thousands of times per write. Here they are done once: the stored bytes are decoded
//! once ([`Decoded`]), converted once per watched version and resourceVersion
//! ([`WatchedObject`]), and each of those encoded once per event type and wire form
//! ([`WatchedObject::encoded`]), the bytes shared by every watcher asking for the same form.
//! Selection (label and field selectors) stays per watcher, on the shared object. A watch
//! cache's event reaches its watchers as one [`SharedEvent`], whose first reader decodes its
//! objects for all of them ([`event_objects`]); the shared versions and encodings are read
//! without a lock once made.
//!
//! Admission plugins that read other objects (a pod's namespace, service account and priority
//! classes) share the decoded objects too ([`stored_object`]), as upstream's plugins read them
//! from informers' decoded caches instead of decoding a stored copy on every request. (The RBAC
//! readers — the authorizer's cache, role aggregation, start-up's policy reconciliation — decode
//! stored bytes straight into the generated types instead, which costs less than a JSON value.)
//!
//! Entries are found by the mod revision of the stored bytes and used only when key and bytes
//! match (another store in the same process may have the same key and revision); the most
//! recent [`CAPACITY`] stored objects are kept.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use bytes::Bytes;
use serde_json::Value;

use crate::group_index::same_name;
use crate::registry::objects::{self, Kind};
use crate::registry::strategy::Converter;
use crate::storage::{Event, KeyValue, Revision, SharedEvent};

/// How many decoded stored objects are kept (with their versions and encodings).
const CAPACITY: usize = 4096;

/// An object as a watch reports it: in the watched version, with its resourceVersion, and its
/// encodings as watch events, made once for every watcher that shares it.
pub struct WatchedObject {
    object: Value,
    /// By event type and wire form.
    encodings: Memo<Encoding>,
}

struct Encoding {
    event_type: &'static str,
    form: &'static str,
    bytes: Bytes,
}

impl WatchedObject {
    /// An object no other watcher shares (bookmarks, tests, custom resources' conversions).
    pub fn new(object: Value) -> Self {
        WatchedObject { object, encodings: Memo::default() }
    }

    pub fn object(&self) -> &Value {
        &self.object
    }

    /// The event of type `event_type` carrying this object in wire form `form` (a name the
    /// caller chooses, one per distinct encoding): made by `encode` for the first watcher that
    /// asks, the same bytes for every later one. Watchers asking at once wait for the one
    /// encoding instead of each making their own.
    pub fn encoded(&self, event_type: &'static str, form: &'static str, encode: impl Fn(&Value) -> Bytes) -> Bytes {
        self.encodings.get_or_make(
            |e| e.event_type == event_type && e.form == form,
            || Encoding { event_type, form, bytes: encode(&self.object) },
            |e| e.bytes.clone(),
        )
    }
}

/// Values made once and shared by every watcher, found by what they were made for: the first
/// one made is read without a lock (thousands of watchers mostly ask for the same version and
/// form), any others under a mutex (a handful at most).
struct Memo<T> {
    first: OnceLock<T>,
    more: Mutex<Vec<T>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo { first: OnceLock::new(), more: Mutex::new(Vec::new()) }
    }
}

impl<T> Memo<T> {
    /// `read` of the kept value `is_asked` accepts, else of the one `make` makes now (and
    /// keeps). Callers asking at once for the same value wait for one making of it.
    fn get_or_make<R>(&self, is_asked: impl Fn(&T) -> bool, make: impl Fn() -> T, read: impl Fn(&T) -> R) -> R {
        let first = self.first.get_or_init(&make);
        if is_asked(first) {
            return read(first);
        }
        let mut more = self.more.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = more.iter().find(|v| is_asked(v)) {
            return read(found);
        }
        let made = make();
        let answer = read(&made);
        more.push(made);
        answer
    }
}

/// One stored object, decoded, and the versions watchers asked for.
pub struct Decoded {
    key: String,
    stored: Bytes,
    kind: Kind,
    object: Value,
    /// By group, version and resourceVersion.
    views: Memo<View>,
}

/// A decoded object as watchers of one group and version see it at one resourceVersion (a
/// deletion reports the last stored object at the deletion's revision); `None` when it does
/// not convert.
struct View {
    group: String,
    version: String,
    revision: Revision,
    object: Option<Arc<WatchedObject>>,
}

#[derive(Default)]
struct Entries {
    /// By mod revision: one revision holds one write per store.
    map: HashMap<Revision, Vec<Arc<Decoded>>>,
    /// Oldest first.
    order: VecDeque<Revision>,
    len: usize,
}

static DECODED: Mutex<Option<Entries>> = Mutex::new(None);

impl Decoded {
    /// The object as stored (in its storage version).
    pub fn object(&self) -> &Value {
        &self.object
    }

    /// The object in the watched `kind`'s version with the given resourceVersion, shared with
    /// every other watcher of the same version (see [`watched_object`]).
    pub fn view(&self, revision: Revision, kind: &Kind, converter: Option<&Converter>) -> Option<Arc<WatchedObject>> {
        let with_revision = |mut object: Value| {
            object["metadata"]["resourceVersion"] = Value::String(revision.to_string());
            object
        };
        if let Some(convert) = converter
            && !objects::is_registered(&self.kind)
        {
            let object = convert(&self.kind, self.object.clone(), &kind.version).ok()?;
            return Some(Arc::new(WatchedObject::new(with_revision(object))));
        }
        let make = || View {
            group: kind.group.clone(),
            version: kind.version.clone(),
            revision,
            object: objects::convert_stored(&self.kind, self.object.clone(), &kind.group, &kind.version)
                .ok()
                .map(|(_, object)| Arc::new(WatchedObject::new(with_revision(object)))),
        };
        self.views.get_or_make(
            |v| v.revision == revision && same_name(&v.group, &kind.group) && same_name(&v.version, &kind.version),
            make,
            |v| v.object.clone(),
        )
    }
}

/// The stored objects of one watch event: the written one, and the one before it (for the
/// selection's before and after, and a deletion's report).
pub struct EventObjects {
    pub object: Option<Arc<Decoded>>,
    pub previous: Option<Arc<Decoded>>,
}

/// What a [`SharedEvent`] keeps of its decoded objects for its later readers: weak references,
/// so that the events a watch cache keeps (up to 100k, for 75 s) hold no more decoded objects
/// than the [`CAPACITY`] most recent ones, as before; one dropped meanwhile is found or decoded
/// again by [`stored_object`].
struct DecodedEvent {
    object: Option<Weak<Decoded>>,
    previous: Option<Weak<Decoded>>,
}

/// `event`'s objects, decoded by its first reader and shared with the others: each watcher of
/// a watch cache's event used to look them up in the shared map (a global lock, a hash and a
/// key comparison per delivery).
pub fn event_objects(event: &SharedEvent) -> EventObjects {
    let (written, before) = match &**event {
        Event::Put { kv, prev } => (Some(kv), prev.as_ref()),
        Event::Delete { prev, .. } => (None, Some(prev)),
        Event::Progress { .. } => (None, None),
    };
    let decode = |kv: Option<&KeyValue>| stored_object(kv?).ok();
    let mut made = None;
    let kept = event.derived(|_| {
        let objects = EventObjects { object: decode(written), previous: decode(before) };
        let kept =
            DecodedEvent { object: objects.object.as_ref().map(Arc::downgrade), previous: objects.previous.as_ref().map(Arc::downgrade) };
        made = Some(objects);
        kept
    });
    if let Some(objects) = made {
        return objects;
    }
    let find = |weak: Option<&Weak<Decoded>>, kv: Option<&KeyValue>| weak.and_then(Weak::upgrade).or_else(|| decode(kv));
    EventObjects {
        object: find(kept.and_then(|k| k.object.as_ref()), written),
        previous: find(kept.and_then(|k| k.previous.as_ref()), before),
    }
}

/// The object `kv` holds, decoded once and shared (see the module documentation): kept from an
/// earlier watcher or lookup, or decoded now (and kept). The error says why bytes do not decode.
pub fn stored_object(kv: &KeyValue) -> Result<Arc<Decoded>, String> {
    // Watchers of one event hold the same bytes: comparing where they are spares comparing
    // them byte by byte for every watcher.
    let same_bytes = |d: &Decoded| (d.stored.as_ptr() == kv.value.as_ptr() && d.stored.len() == kv.value.len()) || d.stored == kv.value;
    let find =
        |entries: &Option<Entries>| entries.as_ref()?.map.get(&kv.mod_revision)?.iter().find(|d| same_bytes(d) && d.key == kv.key).cloned();
    if let Some(found) = find(&DECODED.lock().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(found);
    }
    // Decoded outside the lock: other stores' watchers need not wait for it.
    let (kind, object) = objects::decode_stored(&kv.value).map_err(|e| e.to_string())?;
    let decoded = Arc::new(Decoded { key: kv.key.clone(), stored: kv.value.clone(), kind, object, views: Memo::default() });
    let mut guard = DECODED.lock().unwrap_or_else(PoisonError::into_inner);
    // Another watcher may have decoded it meanwhile: all share the first.
    if let Some(found) = find(&guard) {
        return Ok(found);
    }
    let entries = guard.get_or_insert_with(Entries::default);
    entries.map.entry(kv.mod_revision).or_default().push(decoded.clone());
    entries.order.push_back(kv.mod_revision);
    entries.len += 1;
    while entries.len > CAPACITY {
        let Some(oldest) = entries.order.pop_front() else { break };
        if let Some(list) = entries.map.get_mut(&oldest) {
            // Entries of one revision were pushed in order: the first is the oldest.
            if !list.is_empty() {
                list.remove(0);
                entries.len -= 1;
            }
            if list.is_empty() {
                entries.map.remove(&oldest);
            }
        }
    }
    Ok(decoded)
}

/// A stored object in the watched `kind`'s version (converted from the storage version, by
/// `converter` when the scheme does not know the stored kind) with the given resourceVersion,
/// shared with every other watcher of the same version; `None` for bytes that do not decode or
/// an object that does not convert, which a watch skips. A custom resource's conversion depends
/// on its definition at the time, so it is made for each watcher and not shared.
pub fn watched_object(kv: &KeyValue, revision: Revision, kind: &Kind, converter: Option<&Converter>) -> Option<Arc<WatchedObject>> {
    stored_object(kv).ok()?.view(revision, kind, converter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_apimachinery::codec::Format;
    use serde_json::json;

    #[test]
    fn watchers_share_objects_of_the_same_bytes_version_and_revision() {
        let kind = Kind::core_v1("ConfigMap");
        let stored = |data: &str| {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"k": data}});
            Bytes::from(objects::encode(&kind, Format::Protobuf, &cm).unwrap())
        };
        let kv = KeyValue { key: "/registry/configmaps/ns/shared-test".into(), value: stored("1"), create_revision: 3, mod_revision: 3 };
        let first = watched_object(&kv, 3, &kind, None).unwrap();
        assert!(Arc::ptr_eq(&first, &watched_object(&kv.clone(), 3, &kind, None).unwrap()), "converted once");
        assert_eq!(first.object()["metadata"]["resourceVersion"], "3");
        // A deletion's revision: another view of the same decoded object.
        let deleted = watched_object(&kv, 9, &kind, None).unwrap();
        assert!(!Arc::ptr_eq(&first, &deleted));
        assert_eq!(deleted.object()["metadata"]["resourceVersion"], "9");
        assert_eq!(deleted.object()["data"]["k"], "1");
        // Same key and revision, other bytes (another store in the same process): decoded anew.
        let other = KeyValue { value: stored("2"), ..kv.clone() };
        assert_eq!(watched_object(&other, 3, &kind, None).unwrap().object()["data"]["k"], "2");
    }

    /// The watchers of one shared event see the same decoded objects, versions and bytes; an
    /// update's previous object is decoded with it, for the selection's before and after.
    #[test]
    fn watchers_of_a_shared_event_share_its_decoding() {
        let kind = Kind::core_v1("ConfigMap");
        let kv = |data: &str, revision: Revision| {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "event"}, "data": {"k": data}});
            let value = Bytes::from(objects::encode(&kind, Format::Protobuf, &cm).unwrap());
            KeyValue { key: "/registry/configmaps/ns/shared-event-test".into(), value, create_revision: 3, mod_revision: revision }
        };
        let event = SharedEvent::new(Event::Put { kv: kv("new", 8), prev: Some(kv("old", 5)) });
        let seen = || {
            let objects = event_objects(&event);
            (objects.object.unwrap().view(8, &kind, None).unwrap(), objects.previous.unwrap().view(5, &kind, None).unwrap())
        };
        let ((object, previous), (again, previous_again)) = (seen(), seen());
        assert!(Arc::ptr_eq(&object, &again) && Arc::ptr_eq(&previous, &previous_again));
        assert_eq!((object.object()["data"]["k"].as_str(), previous.object()["data"]["k"].as_str()), (Some("new"), Some("old")));
        assert_eq!(object.object()["metadata"]["resourceVersion"], "8");
        let bytes = |o: &WatchedObject| o.encoded("MODIFIED", "json", |v| Bytes::from(v.to_string()));
        assert_eq!(bytes(&object).as_ptr(), bytes(&again).as_ptr());
        // A deletion reports the last object at the deletion's revision.
        let deleted = SharedEvent::new(Event::Delete { prev: kv("new", 8), revision: 9 });
        let objects = event_objects(&deleted);
        assert!(objects.object.is_none());
        assert_eq!(objects.previous.unwrap().view(9, &kind, None).unwrap().object()["metadata"]["resourceVersion"], "9");
    }

    /// An event keeps its decoded objects weakly: the shared map of decoded objects bounds what
    /// stays decoded, not the watch cache's window of events.
    #[test]
    fn events_do_not_keep_decoded_objects_alive() {
        let kind = Kind::core_v1("ConfigMap");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "weak"}, "data": {"k": "v"}});
        let value = Bytes::from(objects::encode(&kind, Format::Protobuf, &cm).unwrap());
        let kv = KeyValue { key: "/registry/configmaps/ns/weak-event-test".into(), value, create_revision: 4, mod_revision: 4 };
        let event = SharedEvent::new(Event::Put { kv, prev: None });
        let first = event_objects(&event).object.unwrap();
        assert_eq!(Arc::strong_count(&first), 2, "held by the shared map and by this reader, not by the event");
        let again = event_objects(&event).object.unwrap();
        assert!(Arc::ptr_eq(&first, &again), "shared while alive");
        assert_eq!(again.object()["data"]["k"], "v");
    }

    #[test]
    fn encodings_are_made_once_per_event_type_and_form() {
        let object = WatchedObject::new(json!({"kind": "ConfigMap"}));
        let made = std::cell::Cell::new(0);
        let made = &made;
        let encode = |text: &'static str| {
            move |_: &Value| {
                made.set(made.get() + 1);
                Bytes::from_static(text.as_bytes())
            }
        };
        let first = object.encoded("ADDED", "json", encode("a"));
        assert_eq!(object.encoded("ADDED", "json", encode("other")), "a");
        assert_eq!(object.encoded("ADDED", "json", encode("other")).as_ptr(), first.as_ptr(), "the same bytes");
        assert_eq!(object.encoded("DELETED", "json", encode("d")), "d");
        assert_eq!(object.encoded("ADDED", "protobuf", encode("p")), "p");
        assert_eq!(made.get(), 3, "encoded once per event type and form");
    }
}
