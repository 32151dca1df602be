//! Field management: `metadata.managedFields` as upstream's field manager keeps it
//! (`k8s.io/apimachinery/pkg/util/managedfields` over structured-merge-diff). Every write
//! records which fields its manager set or changed; an apply (server-side apply) merges a
//! configuration into the object, owns exactly the fields it names, removes those its manager
//! stopped applying (when nobody else owns them) and fails on fields another manager owns,
//! unless forced. I/O-free: the store calls it with the objects in the request's version.
//!
//! - [`set`]: field sets and their `FieldsV1` encoding.
//! - [`typed`]: objects walked with their schema (field sets, comparison, merge, removal).
//! - [`schemas`]: the schemas of built-in kinds, from the OpenAPI v3 documents.
//! - [`scale`]: writes through the `scale` subresource, managed on the `Scale`.

pub mod scale;
pub mod schemas;
pub mod set;
pub mod typed;

use serde_json::{Map, Value, json};

use self::set::{PathElement, Set, path_string};
use self::typed::Type;
use crate::status::{ApiError, FieldError, GroupKind};
use kapi_api::apimachinery::pkg::apis::meta::v1::StatusCause;

/// The longest `fieldManager` upstream accepts (`FieldManagerMaxLength`).
pub const MAX_MANAGER_LENGTH: usize = 128;

/// The manager kubectl applies as, whose client-side apply annotation upstream keeps in step.
const KUBECTL: &str = "kubectl";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `Apply` or `Update`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who writes: the manager's name, the API version the request speaks and the subresource.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: Option<&'a str>,
}

/// Upstream's `managerOrUserAgent`: the `fieldManager` given, else the User-Agent up to its
/// first `/`, printable characters only, at most [`MAX_MANAGER_LENGTH`] bytes.
pub fn manager_name(field_manager: Option<&str>, user_agent: &str) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_print(*c)) {
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Go's `unicode.IsPrint` for what a header can carry: no control characters, and the only
/// space allowed is U+0020.
fn is_print(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// Upstream's `ValidateFieldManager` (and, for an apply, that one is given), as the
/// `<Kind>Options` 422 (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
pub fn validate_field_manager(options_kind: &str, field_manager: Option<&str>, apply: bool, force: bool) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    let manager = field_manager.unwrap_or_default();
    if !apply && force {
        errs.push(FieldError::forbidden("force", "may not be specified for non-apply patch"));
    }
    if apply && manager.is_empty() {
        errs.push(FieldError::required("fieldManager", "is required for apply patch"));
    }
    if manager.len() > MAX_MANAGER_LENGTH {
        errs.push(FieldError::too_long("fieldManager", MAX_MANAGER_LENGTH as i64));
    }
    for (i, c) in manager.chars().enumerate() {
        if !is_print(c) {
            errs.push(FieldError::invalid(
                "fieldManager",
                manager.to_owned(),
                format!("invalid character {} (at position {i})", go_rune(c)),
            ));
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(GroupKind::new("meta.k8s.io", options_kind), "", &errs))
}

/// Go's `%#U`: `U+0007`, with the character quoted when printable.
fn go_rune(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    if is_print(c) { format!("{code} '{c}'") } else { code }
}

/// One `managedFields` entry.
#[derive(Clone, Debug)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
    time: Option<String>,
    set: Set,
}

impl Entry {
    /// Upstream's manager identifier: what makes two entries the same manager (an applier's
    /// version is not part of it).
    fn same_manager(&self, writer: &Writer<'_>, operation: Operation) -> bool {
        self.manager == writer.manager
            && self.operation == operation
            && self.subresource == writer.subresource.unwrap_or_default()
            && (operation == Operation::Apply || self.api_version == writer.api_version)
    }

    /// Whether `other` is the same manager (upstream's identifiers are equal).
    fn same_entry(&self, other: &Entry) -> bool {
        let writer = Writer { manager: &other.manager, api_version: &other.api_version, subresource: Some(&other.subresource) };
        self.same_manager(&writer, other.operation)
    }

    /// How conflicts name the manager (upstream's `printManager`).
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// The entry as the generated type a built-in object holds, its `fieldsV1` written in
    /// set order: what [`Entry::encode`] read back by [`put_managed_fields`] gives, without the
    /// JSON between.
    fn typed(&self) -> Result<kapi_api::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry, String> {
        let time = match self.time.as_deref() {
            Some(time) => Some(kapi_apimachinery::Time::parse_rfc3339(time).map_err(|e| format!("managedFields time {time:?}: {e}"))?),
            None => None,
        };
        Ok(kapi_api::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
            manager: Some(self.manager.clone()),
            operation: Some(self.operation.as_str().to_owned()),
            api_version: Some(self.api_version.clone()),
            time,
            fields_type: Some("FieldsV1".to_owned()),
            fields_v1: Some(kapi_apimachinery::FieldsV1::from_compact_json(self.set.to_fields_v1_bytes())),
            subresource: Some(self.subresource.clone()).filter(|s| !s.is_empty()),
        })
    }

    fn encode(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("manager".into(), json!(self.manager));
        entry.insert("operation".into(), json!(self.operation.as_str()));
        entry.insert("apiVersion".into(), json!(self.api_version));
        if let Some(time) = &self.time {
            entry.insert("time".into(), json!(time));
        }
        entry.insert("fieldsType".into(), json!("FieldsV1"));
        entry.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            entry.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(entry)
    }
}

/// Whether `object` (JSON) has `managedFields` entries, whose `fieldsV1` a built-in kind's bytes
/// must write in set order ([`order_typed`], [`BuiltinJson`]).
pub fn has_managed_fields(object: &Value) -> bool {
    object.get("metadata").and_then(|m| m.get("managedFields")).and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

/// Rewrites the `fieldsV1` of a typed built-in object's `managedFields` (a list's: each
/// item's) in upstream's order (`Set.ToJSON`, [`Set::to_fields_v1_bytes`]). A built-in kind's
/// `FieldsV1` are bytes that upstream writes once in set order and keeps verbatim (protobuf,
/// JSON); here objects pass through `serde_json::Value`, whose maps sort keys bytewise, so the
/// order is restored where a typed object is made from a value to be written out. Only the
/// object's own metadata is reached, not the whole object walked: field management writes no
/// other `managedFields`.
pub fn order_typed(object: &mut dyn kapi_apimachinery::DynObject) {
    use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    if let Some(items) = object.list_items_mut() {
        items.into_iter().for_each(order_typed);
        return;
    }
    let Some(meta) = object.object_meta_mut().and_then(|meta| meta.downcast_mut::<ObjectMeta>()) else { return };
    for fields in meta.managed_fields.iter_mut().filter_map(|e| e.fields_v1.as_mut()) {
        if let Some(ordered) = set::ordered_fields_v1(fields.as_bytes()) {
            *fields = kapi_apimachinery::FieldsV1::from_compact_json(ordered);
        }
    }
}

/// A built-in object's `managedFields`, taken out of its JSON before the typed object is made
/// from the rest and put into that with [`put_managed_fields`]. Read from a `Value` with the
/// object, each entry's `fieldsV1` is written out through `Value`'s `Display` (the `fmt`
/// machinery, token by token), compacted and then put in set order ([`order_typed`]): ~7% of
/// the instructions of a pod create.
pub fn take_managed_fields(object: &mut Value) -> Option<Value> {
    object.get_mut("metadata")?.as_object_mut()?.remove("managedFields")
}

/// Puts entries [`take_managed_fields`] took into a typed object's metadata, each `fieldsV1`
/// written once, in upstream's order (as [`order_typed`] leaves them). What reading them with
/// the rest of the object would do otherwise: `null` is none, anything but a list fails, and an
/// object whose metadata is not an `ObjectMeta` has no such field and drops them.
pub fn put_managed_fields(object: &mut dyn kapi_apimachinery::DynObject, entries: Value) -> Result<(), serde_json::Error> {
    use kapi_api::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
    let Some(meta) = object.object_meta_mut().and_then(|meta| meta.downcast_mut::<ObjectMeta>()) else { return Ok(()) };
    meta.managed_fields = match entries {
        Value::Null => Vec::new(),
        Value::Array(entries) => entries
            .into_iter()
            .map(|mut entry| {
                let fields = entry.as_object_mut().and_then(|fields| fields.remove("fieldsV1")).filter(|f| !f.is_null());
                let mut typed: ManagedFieldsEntry = serde_json::from_value(entry)?;
                if let Some(fields) = fields {
                    let bytes = serde_json::to_vec(&fields)?;
                    typed.fields_v1 = Some(kapi_apimachinery::FieldsV1::from_compact_json(set::ordered_fields_v1(&bytes).unwrap_or(bytes)));
                }
                Ok(typed)
            })
            .collect::<Result<_, serde_json::Error>>()?,
        // Not a list: the error reading it as one gives.
        other => serde_json::from_value(other)?,
    };
    Ok(())
}

/// A built-in object's JSON (or a list's, item by item) with its `managedFields`' `fieldsV1`
/// written in upstream's order, for values written straight to JSON (see [`order_typed`]).
/// A custom resource's are not: upstream keeps them in an unstructured map, which Go writes
/// with sorted keys, as a `Value` does.
pub struct BuiltinJson<'a>(pub &'a Value);

impl serde::Serialize for BuiltinJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        write_object(serializer, self.0, |out, k, v| match k {
            "metadata" => out.serialize_entry(k, &Metadata(v)),
            "items" => out.serialize_entry(k, &Each(v, BuiltinJson)),
            _ => out.serialize_entry(k, v),
        })
    }
}

struct Metadata<'a>(&'a Value);

impl serde::Serialize for Metadata<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        write_object(serializer, self.0, |out, k, v| match k {
            "managedFields" => out.serialize_entry(k, &Each(v, ManagedFieldsEntry)),
            _ => out.serialize_entry(k, v),
        })
    }
}

struct ManagedFieldsEntry<'a>(&'a Value);

impl serde::Serialize for ManagedFieldsEntry<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        write_object(serializer, self.0, |out, k, v| {
            if k == "fieldsV1"
                && let Some(set) = Set::from_fields_v1(v)
            {
                let text = String::from_utf8(set.to_fields_v1_bytes()).map_err(S::Error::custom)?;
                return out.serialize_entry(k, &serde_json::value::RawValue::from_string(text).map_err(S::Error::custom)?);
            }
            out.serialize_entry(k, v)
        })
    }
}

/// A JSON array written item by item through `item`'s wrapper (anything else as it is).
struct Each<'a, W>(&'a Value, fn(&'a Value) -> W);

impl<'a, W: serde::Serialize> serde::Serialize for Each<'a, W> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let Value::Array(items) = self.0 else { return self.0.serialize(serializer) };
        let mut out = serializer.serialize_seq(Some(items.len()))?;
        for item in items {
            out.serialize_element(&(self.1)(item))?;
        }
        out.end()
    }
}

/// A JSON object written field by field through `field` (anything else as it is).
fn write_object<S: serde::Serializer>(
    serializer: S,
    value: &Value,
    mut field: impl FnMut(&mut S::SerializeMap, &str, &Value) -> Result<(), S::Error>,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let Value::Object(map) = value else { return serde::Serialize::serialize(value, serializer) };
    let mut out = serializer.serialize_map(Some(map.len()))?;
    for (k, v) in map {
        field(&mut out, k, v)?;
    }
    out.end()
}

/// The entries of a `managedFields` value; `None` when any entry is not valid (upstream's
/// `DecodeManagedFields` errors: an operation other than Apply or Update, no apiVersion, a
/// fieldsType other than FieldsV1, fields that are not a set).
fn decode(managed: &Value) -> Option<Vec<Entry>> {
    let Value::Array(items) = managed else { return if managed.is_null() { Some(Vec::new()) } else { None } };
    let mut entries: Vec<Entry> = Vec::with_capacity(items.len());
    for item in items {
        let text = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let operation = match item.get("operation").and_then(Value::as_str) {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            _ => return None,
        };
        if text("apiVersion").is_empty() || text("fieldsType") != "FieldsV1" {
            return None;
        }
        let set = match item.get("fieldsV1") {
            None | Some(Value::Null) => Set::new(),
            Some(fields) => Set::from_fields_v1(fields)?,
        };
        let entry = Entry {
            manager: text("manager"),
            operation,
            api_version: text("apiVersion"),
            subresource: text("subresource"),
            time: item.get("time").and_then(Value::as_str).map(str::to_owned),
            set,
        };
        // A later entry for the same manager replaces an earlier one, as upstream's map does.
        let writer = Writer { manager: &entry.manager, api_version: &entry.api_version, subresource: Some(&entry.subresource) };
        entries.retain(|e| !e.same_manager(&writer, entry.operation));
        entries.push(entry);
    }
    Some(entries)
}

/// The `managedFields` value of `entries`, in upstream's order (operation, time, manager,
/// apiVersion, subresource); `None` when there are none (the field is left out).
fn encode(entries: Vec<Entry>) -> Option<Value> {
    ManagedFields::of(entries).map(|managed| managed.to_value())
}

/// An object's `managedFields` as field management leaves them: the entries in upstream's
/// order, each with its set, not yet written out. A write of a built-in kind hands them to the
/// typed object it stores ([`ManagedFields::put`]), each `fieldsV1` written once in set order,
/// rather than as JSON that encoding reads back and puts in order again.
pub struct ManagedFields(Vec<Entry>);

impl ManagedFields {
    /// The entries with something in their sets, in upstream's order; `None` when none has.
    fn of(mut entries: Vec<Entry>) -> Option<ManagedFields> {
        entries.retain(|e| !e.set.is_empty());
        if entries.is_empty() {
            return None;
        }
        let seconds = |e: &Entry| e.time.as_deref().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map_or(0, |t| t.timestamp());
        entries.sort_by(|p, q| {
            p.operation
                .as_str()
                .cmp(q.operation.as_str())
                .then_with(|| seconds(p).cmp(&seconds(q)))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        Some(ManagedFields(entries))
    }

    /// The entries as JSON, as an object's `metadata.managedFields` holds them.
    pub fn to_value(&self) -> Value {
        Value::Array(self.0.iter().map(Entry::encode).collect())
    }

    /// Makes the entries a typed object's `metadata.managedFields` (nothing when its metadata
    /// is not an `ObjectMeta`), as [`put_managed_fields`] makes [`ManagedFields::to_value`].
    pub fn put(&self, object: &mut dyn kapi_apimachinery::DynObject) -> Result<(), serde_json::Error> {
        use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let Some(meta) = object.object_meta_mut().and_then(|meta| meta.downcast_mut::<ObjectMeta>()) else { return Ok(()) };
        meta.managed_fields = self.0.iter().map(Entry::typed).collect::<Result<_, _>>().map_err(serde::de::Error::custom)?;
        Ok(())
    }
}

/// Upstream's `isResetManagedFields`: an empty list or `[{}]` asks for the fields to be cleared
/// (`null` or no field keeps them). Typed decoding drops an empty list, so the handlers keep a
/// body's empty list as `[{}]`.
fn is_reset(managed: &Value) -> bool {
    match managed.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([only]) => only.as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// The fields no entry ever holds (upstream's `stripMetaManager`).
fn strip_set() -> &'static Set {
    static STRIP: std::sync::LazyLock<Set> = std::sync::LazyLock::new(|| {
        let mut set = Set::new();
        let f = |s: &str| PathElement::Field(s.to_owned());
        set.insert(&[f("apiVersion")]);
        set.insert(&[f("kind")]);
        set.insert(&[f("metadata")]);
        for field in
            ["name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields", "resourceVersion"]
        {
            set.insert(&[f("metadata"), f(field)]);
        }
        set
    });
    &STRIP
}

/// The fields a write leaves to another endpoint (upstream's `GetResetFields`), as a set.
pub fn reset_set(paths: &[&[&str]]) -> Set {
    let mut set = Set::new();
    for path in paths {
        let path: Vec<PathElement> = path.iter().map(|s| PathElement::Field((*s).to_owned())).collect();
        set.insert(&path);
    }
    set
}

/// Converts an object of the kind from one version (`apiVersion`, the first) to another (the
/// second), with that version's schema; `None` when it cannot (another group, a version not
/// known), which upstream's updater treats as a missing version.
pub type Converter<'a> = &'a dyn Fn(&Value, &str, &str) -> Option<(Value, Type<'a>)>;

/// What a write's field management works with.
pub struct Context<'a> {
    /// The kind's schema.
    pub ty: Type<'a>,
    /// The fields the endpoint resets ([`reset_set`]).
    pub reset: &'a Set,
    pub writer: Writer<'a>,
    /// The time of the write (RFC 3339, seconds).
    pub now: &'a str,
    /// How an entry of another version sees the write (upstream's updater compares the objects
    /// converted to each manager's version); `None`: every entry is read in the writer's.
    pub convert: Option<Converter<'a>>,
}

impl<'a> Context<'a> {
    /// `object`, in the version `from`, as the version `to` sees it, with `to`'s schema
    /// (upstream's `Converter.Convert` of a typed value); the writer's own version, or every
    /// version when there is no converter, is read as it is.
    fn in_version(&self, object: &Value, from: &str, to: &str) -> Option<(Value, Type<'a>)> {
        let writer = self.writer.api_version;
        match self.convert {
            Some(convert) if !(from == writer && to == writer) => convert(object, from, to),
            _ => Some((object.clone(), self.ty)),
        }
    }
}

/// What a write changed (added or modified) and removed.
struct Change {
    changed: Set,
    removed: Set,
}

impl Change {
    fn of(comparison: typed::Comparison) -> Change {
        // A create's comparison has only additions: they are the change as they are.
        let changed = match comparison.modified.is_empty() {
            true => comparison.added,
            false => comparison.modified.union(&comparison.added),
        };
        Change { changed, removed: comparison.removed }
    }
}

/// A write from `live` to `new` as the entries see it: in the writer's version, and in each
/// other version an entry was written in (converted once per version, as upstream's updater
/// does; in the writer's when the objects cannot be converted).
struct Changes<'c, 'a> {
    cx: &'c Context<'a>,
    live: &'c Value,
    new: &'c Value,
    own: Change,
    others: std::collections::HashMap<String, Option<Change>>,
}

impl<'c, 'a> Changes<'c, 'a> {
    fn new(cx: &'c Context<'a>, live: &'c Value, new: &'c Value) -> Changes<'c, 'a> {
        let own = Change::of(typed::compare(live, new, cx.ty).without(cx.reset));
        Changes { cx, live, new, own, others: std::collections::HashMap::new() }
    }

    fn seen_by(&mut self, api_version: &str) -> &Change {
        let Some(convert) = self.cx.convert.filter(|_| api_version != self.cx.writer.api_version) else { return &self.own };
        if !self.others.contains_key(api_version) {
            let writer = self.cx.writer.api_version;
            let change = convert(self.live, writer, api_version).and_then(|(live, ty)| {
                let (new, _) = convert(self.new, writer, api_version)?;
                Some(Change::of(typed::compare(&live, &new, ty).without(self.cx.reset)))
            });
            self.others.insert(api_version.to_owned(), change);
        }
        self.others.get(api_version).and_then(Option::as_ref).unwrap_or(&self.own)
    }
}

/// An Update (create, update, patch, a subresource's write): the `managedFields` of `new`
/// after it replaces `live` (the kind's zero object on a create). Both are in the writer's
/// version. `live_managed` and `new_managed` are their `managedFields` (`Null` when none).
///
/// The manager takes the fields this write added or changed, which every other manager loses;
/// fields it removed leave every manager. A request's own `managedFields` (not through a
/// subresource) replace the stored ones when they are valid and not empty; `[]` or `[{}]`
/// clears them. An update of a stored object left with no entries is not tracked (upstream's
/// `skipNonApplied`): it has no `managedFields` after it.
pub fn update(cx: &Context<'_>, live: &Value, new: &Value, live_managed: &Value, new_managed: &Value) -> Option<ManagedFields> {
    let base = if cx.writer.subresource.is_some() {
        decode(live_managed).unwrap_or_default()
    } else if is_reset(new_managed) {
        Vec::new()
    } else {
        match decode(new_managed) {
            Some(entries) if !entries.is_empty() => entries,
            _ => decode(live_managed).unwrap_or_default(),
        }
    };
    if base.is_empty() && is_stored(live) {
        return None;
    }
    ManagedFields::of(update_entries(cx, live, new, base))
}

/// Whether `live` is a stored object (it has a uid) rather than the zero object of a create.
/// Upstream's `skipNonApplied`: an update of an object with no entries (never tracked, or
/// reset) is not tracked; only a create or an apply starts tracking.
fn is_stored(live: &Value) -> bool {
    live["metadata"]["uid"].as_str().is_some_and(|uid| !uid.is_empty())
}

/// The entries after an Update of `live` to `new` by `cx`'s writer.
fn update_entries(cx: &Context<'_>, live: &Value, new: &Value, mut entries: Vec<Entry>) -> Vec<Entry> {
    record_update(&mut entries, &mut Changes::new(cx, live, new), cx);
    cap_update_managers(&mut entries);
    entries
}

/// The most `Update` entries an object keeps (upstream's `DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;

/// Upstream's `capManagersManager`: past [`MAX_UPDATE_MANAGERS`] Update entries, the oldest
/// are folded, per API version, into an `ancient-changes` entry.
fn cap_update_managers(entries: &mut Vec<Entry>) {
    let seconds = |e: &Entry| e.time.as_deref().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map_or(0, |t| t.timestamp());
    let mut updaters: Vec<usize> = (0..entries.len()).filter(|i| entries[*i].operation == Operation::Update).collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| {
        let (p, q) = (&entries[*a], &entries[*b]);
        seconds(p).cmp(&seconds(q)).then_with(|| identifier(p).cmp(&identifier(q)))
    });
    let mut first_of_version: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut removed = vec![false; entries.len()];
    let mut length = updaters.len();
    for &i in &updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = entries[i].api_version.clone();
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        // The version's first entry becomes the bucket, then takes this one in.
        let bucket = &mut entries[first];
        bucket.manager = "ancient-changes".into();
        bucket.subresource.clear();
        let (set, time) = (entries[i].set.clone(), entries[i].time.clone());
        let bucket = &mut entries[first];
        bucket.set.union_with(&set);
        bucket.time = time;
        removed[i] = true;
        length -= 1;
    }
    let mut index = 0;
    entries.retain(|_| {
        index += 1;
        !removed[index - 1]
    });
}

/// Upstream's manager identifier as JSON text (`BuildManagerIdentifier`), what ties between
/// entries of the same time are ordered by.
fn identifier(entry: &Entry) -> String {
    let mut id = Map::new();
    id.insert("manager".into(), json!(entry.manager));
    id.insert("operation".into(), json!(entry.operation.as_str()));
    if entry.operation == Operation::Update {
        id.insert("apiVersion".into(), json!(entry.api_version));
    }
    if !entry.subresource.is_empty() {
        id.insert("subresource".into(), json!(entry.subresource));
    }
    // Go marshals the struct's fields in declaration order: manager, operation, apiVersion,
    // (time, fieldsType, fieldsV1,) subresource.
    let order = ["manager", "operation", "apiVersion", "subresource"];
    let parts: Vec<String> = order.iter().filter_map(|k| id.get(*k).map(|v| format!("{k:?}:{v}"))).collect();
    format!("{{{}}}", parts.join(","))
}

fn record_update(entries: &mut Vec<Entry>, changes: &mut Changes<'_, '_>, cx: &Context<'_>) {
    for entry in entries.iter_mut() {
        let change = changes.seen_by(&entry.api_version);
        entry.set = std::mem::take(&mut entry.set).difference(&change.removed).difference(&change.changed);
    }
    let own = std::mem::take(&mut changes.own.changed).difference(strip_set());
    entries.retain(|e| !e.set.is_empty());
    if own.is_empty() {
        return;
    }
    match entries.iter_mut().find(|e| e.same_manager(&cx.writer, Operation::Update)) {
        Some(entry) => {
            entry.set.union_with(&own);
            entry.time = Some(cx.now.to_owned());
        }
        None => entries.push(Entry {
            manager: cx.writer.manager.to_owned(),
            operation: Operation::Update,
            api_version: cx.writer.api_version.to_owned(),
            subresource: cx.writer.subresource.unwrap_or_default().to_owned(),
            time: Some(cx.now.to_owned()),
            set: own,
        }),
    }
}

/// An apply's outcome: the merged object (in the writer's version, not yet defaulted) and its
/// `managedFields`.
pub struct Applied {
    pub object: Value,
    pub managed_fields: Option<Value>,
}

/// An Apply: `config` (the applied configuration, as sent) merged into `live` (the stored
/// object, or the kind's zero object when there is none; `zero` is that zero object), with
/// `live_managed` its `managedFields`.
pub fn apply(cx: &Context<'_>, live: &Value, zero: &Value, config: &Value, live_managed: &Value, force: bool) -> Result<Applied, ApiError> {
    let (object, entries) = apply_to_entries(cx, live, zero, config, decode(live_managed).unwrap_or_default(), force)?;
    Ok(Applied { object, managed_fields: encode(entries) })
}

/// [`apply`] on decoded entries: the merged object and the entries after it.
fn apply_to_entries(
    cx: &Context<'_>,
    live: &Value,
    zero: &Value,
    config: &Value,
    mut entries: Vec<Entry>,
    force: bool,
) -> Result<(Value, Vec<Entry>), ApiError> {
    if config.get("metadata").and_then(|m| m.get("managedFields")).is_some_and(|m| !m.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let errors = typed::check(config, cx.ty);
    if !errors.is_empty() {
        // Upstream returns this as a plain error: a 500 with no reason.
        let text = |field: &str| config["metadata"][field].as_str().unwrap_or_default().to_owned();
        let (group, version) = cx.writer.api_version.split_once('/').unwrap_or(("", cx.writer.api_version));
        let kind = config["kind"].as_str().unwrap_or_default();
        let errors = if errors.len() == 1 { errors[0].clone() } else { format!("errors:\n  {}", errors.join("\n  ")) };
        return Err(ApiError::new(
            500,
            crate::status::StatusReason::Unknown,
            format!(
                "failed to create typed patch object ({}/{}; {group}/{version}, Kind={kind}): {errors}",
                text("namespace"),
                text("name")
            ),
        ));
    }
    if entries.is_empty() {
        // Fields set before any manager was recorded belong to `before-first-apply`.
        let first = Context { writer: Writer { manager: "before-first-apply", ..cx.writer }, ..*cx };
        record_update(&mut entries, &mut Changes::new(&first, zero, live), &first);
    }
    let outcome = apply_entries(cx, live, config, entries.clone(), force);
    let (object, entries) = match outcome {
        Err(conflicts) if cx.writer.manager == KUBECTL && !force => {
            // kubectl's server-side apply after a client-side one: conflicts over fields the
            // last client-side apply set (and that still hold those values) are taken.
            match allowed_by_last_applied(cx, live) {
                Some(allowed) if conflicts.iter().all(|(_, path)| allowed.has(path)) => {
                    apply_entries(cx, live, config, entries, true).map_err(|c| conflict_error(&c))?
                }
                Some(allowed) => {
                    let left: Vec<_> = conflicts.into_iter().filter(|(_, path)| !allowed.has(path)).collect();
                    return Err(conflict_error(&left));
                }
                None => return Err(conflict_error(&conflicts)),
            }
        }
        Err(conflicts) => return Err(conflict_error(&conflicts)),
        Ok(done) => done,
    };
    let mut object = object;
    if cx.writer.manager == KUBECTL && last_applied(live).is_some() {
        let mut applied = config.clone();
        if let Some(annotations) = applied.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty()
                && let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.remove("annotations");
            }
        }
        let text = format!("{applied}\n");
        object["metadata"]["annotations"][LAST_APPLIED] = Value::String(text);
    }
    Ok((object, entries))
}

/// A conflict: the manager that owns the field, and the field.
type Conflict = (Entry, Vec<PathElement>);

fn apply_entries(
    cx: &Context<'_>,
    live: &Value,
    config: &Value,
    mut entries: Vec<Entry>,
    force: bool,
) -> Result<(Value, Vec<Entry>), Vec<Conflict>> {
    let merged = typed::merge(live, config, cx.ty);
    let applied = typed::to_field_set(config, cx.ty).recursive_difference(cx.reset);
    let position = entries.iter().position(|e| e.same_manager(&cx.writer, Operation::Apply));
    let (last, last_time) = match position.map(|i| entries.remove(i)) {
        Some(entry) => (Some((entry.set, entry.api_version)), entry.time),
        None => (None, None),
    };
    entries.push(Entry {
        manager: cx.writer.manager.to_owned(),
        operation: Operation::Apply,
        api_version: cx.writer.api_version.to_owned(),
        subresource: cx.writer.subresource.unwrap_or_default().to_owned(),
        time: last_time,
        set: applied,
    });
    let me = entries.len() - 1;
    let merged = match &last {
        Some((last, version)) if !last.is_empty() => prune(cx, merged, &entries, last, version),
        _ => merged,
    };
    let mut changes = Changes::new(cx, live, &merged);
    let mut conflicts = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if i == me {
            continue;
        }
        // A manager of another version conflicts on its own paths (upstream compares in it).
        for path in entry.set.intersection(&changes.seen_by(&entry.api_version).changed).paths() {
            conflicts.push((entry.clone(), path));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by(|a, b| (&a.0.manager, a.0.operation.as_str()).cmp(&(&b.0.manager, b.0.operation.as_str())));
        return Err(conflicts);
    }
    for (i, entry) in entries.iter_mut().enumerate() {
        if i != me {
            let change = changes.seen_by(&entry.api_version);
            entry.set = std::mem::take(&mut entry.set).difference(&change.changed).difference(&change.removed);
        }
    }
    entries[me].set = std::mem::take(&mut entries[me].set).difference(strip_set());
    // The time moves only when the object changed (upstream's `managedFieldsUpdater`).
    if merged != *live {
        entries[me].time = Some(cx.now.to_owned());
    }
    Ok((merged, entries))
}

/// Upstream's prune (`Updater.prune`): what the manager applied last time (`last`, in the
/// version it applied in) and no longer does, and that no one (the manager's new configuration
/// included) owns, is removed from the merged object. Each set is read in its own version: the
/// last applied fields are removed from the merged object converted to that version, then,
/// version by version (that one first), whatever an entry of the version owns is put back
/// (`addBackOwnedItems`), and only what the last apply owned stays removed
/// (`addBackDanglingItems`). A version the object cannot be converted to is skipped, as
/// upstream skips a missing version.
fn prune(cx: &Context<'_>, merged: Value, entries: &[Entry], last: &Set, last_version: &str) -> Value {
    let writer = cx.writer.api_version;
    let Some((merged_last, ty_last)) = cx.in_version(&merged, writer, last_version) else { return merged };
    let mut pruned = typed::remove_items(&merged_last, &typed::with_named_fields(last, ty_last, &merged_last), ty_last);
    let mut pruned_version = last_version.to_owned();
    let mut versions: Vec<&str> = Vec::new();
    for entry in entries {
        if !versions.contains(&entry.api_version.as_str()) {
            versions.push(&entry.api_version);
        }
    }
    versions.sort_by_key(|v| *v != last_version);
    for version in versions {
        let mut owned = Set::new();
        for entry in entries.iter().filter(|e| e.api_version == version) {
            owned.union_with(&entry.set);
        }
        let Some((merged_v, ty)) = cx.in_version(&merged, writer, version) else { continue };
        let Some((pruned_v, _)) = cx.in_version(&pruned, &pruned_version, version) else { continue };
        let named = |set: &Set| typed::with_named_fields(set, ty, &merged_v);
        let merged_set = named(&typed::to_field_set(&merged_v, ty));
        let kept = named(&typed::to_field_set(&pruned_v, ty)).union(&named(&owned));
        pruned = typed::remove_items(&merged_v, &merged_set.difference(&kept), ty);
        pruned_version = version.to_owned();
    }
    let Some((pruned_last, _)) = cx.in_version(&pruned, &pruned_version, last_version) else { return merged };
    let named = |set: &Set| typed::with_named_fields(set, ty_last, &merged_last);
    let removed = named(&typed::to_field_set(&merged_last, ty_last)).difference(&named(&typed::to_field_set(&pruned_last, ty_last)));
    let remove = removed.intersection(&named(last));
    if remove.is_empty() {
        return merged;
    }
    let result = typed::remove_items(&merged_last, &remove, ty_last);
    cx.in_version(&result, last_version, writer).map_or(merged, |(object, _)| object)
}

fn last_applied(live: &Value) -> Option<&str> {
    live.get("metadata")?.get("annotations")?.get(LAST_APPLIED)?.as_str().filter(|s| !s.is_empty())
}

/// The fields of the client-side apply annotation whose values the live object still has
/// (upstream's `allowedConflictsFromLastApplied`).
fn allowed_by_last_applied(cx: &Context<'_>, live: &Value) -> Option<Set> {
    let last: Value = serde_json::from_str(last_applied(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(cx.writer.api_version) {
        return None;
    }
    let set = typed::to_field_set(&last, cx.ty);
    let comparison = typed::compare(&last, live, cx.ty);
    Some(set.difference(&comparison.modified).difference(&comparison.added).difference(&comparison.removed))
}

/// The 409 of an apply's conflicts (upstream's `NewConflictError`).
fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|(entry, path)| StatusCause {
            reason: Some("FieldManagerConflict".into()),
            message: Some(format!("conflict with {}", entry.printed())),
            field: Some(path_string(path)),
        })
        .collect();
    let message = match conflicts {
        [(entry, path)] => format!("Apply failed with 1 conflict: conflict with {}: {}", entry.printed(), path_string(path)),
        _ => {
            let mut lines = Vec::new();
            let mut managers: Vec<String> = conflicts.iter().map(|(e, _)| e.printed()).collect();
            managers.sort();
            managers.dedup();
            for manager in managers {
                lines.push(format!("conflicts with {manager}:"));
                for (_, path) in conflicts.iter().filter(|(e, _)| e.printed() == manager) {
                    lines.push(format!("- {}", path_string(path)));
                }
            }
            format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
        }
    };
    ApiError::apply_conflict(causes, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `fieldsV1` of a typed object's own `managedFields` come back in upstream's order, and
    /// a list's items' do too.
    #[test]
    fn typed_objects_and_list_items_get_upstream_field_order() {
        use kapi_api::api::core::v1::{ConfigMap, ConfigMapList};
        // Bytewise (a `serde_json::Map`'s) order puts `k:{"port":10}` before `k:{"port":9}`.
        let sorted = r#"{"f:data":{".":{},"f:a":{}},"f:spec":{"k:{\"port\":10}":{},"k:{\"port\":9}":{}}}"#;
        let ordered = r#"{"f:data":{".":{},"f:a":{}},"f:spec":{"k:{\"port\":9}":{},"k:{\"port\":10}":{}}}"#;
        let object: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "c", "managedFields": [{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": serde_json::from_str::<Value>(sorted).unwrap()}]},
        }))
        .unwrap();
        let fields = |object: &ConfigMap| {
            let entry = &object.metadata.as_ref().unwrap().managed_fields[0];
            String::from_utf8(entry.fields_v1.as_ref().unwrap().as_bytes().to_vec()).unwrap()
        };
        assert_eq!(fields(&object), sorted, "as decoded");
        let mut single = object.clone();
        order_typed(&mut single);
        assert_eq!(fields(&single), ordered);
        let mut list = ConfigMapList { items: vec![object.clone(), ConfigMap::default()], ..Default::default() };
        order_typed(&mut list);
        assert_eq!(fields(&list.items[0]), ordered);
        assert_eq!(list.items[1], ConfigMap::default(), "an item without metadata is left as it is");
    }

    /// Entries taken out of an object's JSON and put into its typed form make the same object
    /// as reading them with the rest and ordering after, a `null` `fieldsV1` is none, entries
    /// that are not a list fail as they would have, and an object without metadata drops them.
    #[test]
    fn managed_fields_put_into_a_typed_object_as_read_with_it() {
        use kapi_api::api::core::v1::ConfigMap;
        use kapi_apimachinery::DynObject;
        let sorted = r#"{"f:data":{".":{},"f:a":{}},"f:spec":{"k:{\"port\":10}":{},"k:{\"port\":9}":{}}}"#;
        let object = json!({
            "metadata": {"name": "c", "managedFields": [
                {"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": serde_json::from_str::<Value>(sorted).unwrap()},
                {"manager": "n", "operation": "Apply", "fieldsV1": null, "subresource": "status"},
            ]},
            "data": {"a": "1"},
        });
        let mut whole: ConfigMap = serde_json::from_value(object.clone()).unwrap();
        order_typed(&mut whole);
        let mut rest = object.clone();
        let entries = take_managed_fields(&mut rest).unwrap();
        assert!(rest["metadata"].get("managedFields").is_none());
        let mut put: ConfigMap = serde_json::from_value(rest).unwrap();
        put_managed_fields(&mut put, entries).unwrap();
        assert_eq!(put, whole);
        assert!(put.metadata.as_ref().unwrap().managed_fields[1].fields_v1.is_none());

        let mut put: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
        let refused = put_managed_fields(&mut put, json!({"not": "a list"})).unwrap_err().to_string();
        let whole = serde_json::from_value::<ConfigMap>(json!({"metadata": {"name": "c", "managedFields": {"not": "a list"}}}));
        assert_eq!(refused, whole.unwrap_err().to_string());
        put_managed_fields(&mut put, Value::Null).unwrap();
        assert!(put.metadata.as_ref().unwrap().managed_fields.is_empty());
        let mut bare = ConfigMap::default();
        assert!(bare.object_meta_mut().is_none());
        put_managed_fields(&mut bare, json!([{"manager": "m"}])).unwrap();
        assert_eq!(bare, ConfigMap::default());
    }

    fn deployment() -> Type<'static> {
        schemas::kind_type(&crate::registry::objects::Kind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() })
    }

    fn cx<'a>(manager: &'a str, reset: &'a Set) -> Context<'a> {
        Context {
            ty: deployment(),
            reset,
            writer: Writer { manager, api_version: "apps/v1", subresource: None },
            now: "2026-01-01T00:00:00Z",
            convert: None,
        }
    }

    /// A kind whose `ex/v1` calls `spec.a` what `ex/v2` calls `spec.b` (a renaming
    /// conversion, as a webhook may do), read without a schema (every field is undeclared, so
    /// `spec` is a member too).
    fn renaming<'a>(object: &Value, from: &str, to: &str) -> Option<(Value, Type<'a>)> {
        let mut object = object.clone();
        if from != to
            && let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
        {
            let (old, new) = if to == "ex/v2" { ("a", "b") } else { ("b", "a") };
            if let Some(v) = spec.remove(old) {
                spec.insert(new.into(), v);
            }
        }
        object["apiVersion"] = json!(to);
        Some((object, Type::Deduced))
    }

    fn renamed_cx<'a>(manager: &'a str, api_version: &'a str, reset: &'a Set, convert: Converter<'a>) -> Context<'a> {
        Context {
            ty: Type::Deduced,
            reset,
            writer: Writer { manager, api_version, subresource: None },
            now: "2026-01-01T00:00:00Z",
            convert: Some(convert),
        }
    }

    /// Upstream's prune reads the applier's last applied set in the version it applied in:
    /// `spec.a` applied in `ex/v1` is `spec.b` in `ex/v2`, so applying in `ex/v2` without it
    /// removes `spec.b`; unless another manager owns it, in its own version.
    #[test]
    fn prune_reads_the_last_apply_in_its_version() {
        let reset = Set::new();
        let zero = json!({});
        let convert: Converter<'_> = &renaming;
        let first = json!({"apiVersion": "ex/v1", "kind": "K", "metadata": {"name": "k"}, "spec": {"a": 1, "keep": 1}});
        let applied = apply(&renamed_cx("m", "ex/v1", &reset, convert), &zero, &zero, &first, &Value::Null, false).unwrap();
        let managed = applied.managed_fields.unwrap();
        let (live, _) = renaming(&applied.object, "ex/v1", "ex/v2").unwrap();
        assert_eq!(live["spec"], json!({"b": 1, "keep": 1}));
        let second = json!({"apiVersion": "ex/v2", "kind": "K", "metadata": {"name": "k"}, "spec": {"keep": 1}});
        let cx2 = renamed_cx("m", "ex/v2", &reset, convert);
        let pruned = apply(&cx2, &live, &zero, &second, &managed, false).unwrap();
        assert_eq!(pruned.object["spec"], json!({"keep": 1}));
        assert_eq!(
            pruned.managed_fields.unwrap(),
            json!([{"manager": "m", "operation": "Apply", "apiVersion": "ex/v2", "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:keep": {}}}}])
        );
        // Another manager's Update in `ex/v1` owns `spec.a` (and, untyped, `spec`): `spec.b` stays.
        let mut shared = managed.clone();
        shared.as_array_mut().unwrap().push(json!({"manager": "o", "operation": "Update", "apiVersion": "ex/v1",
            "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}, "f:a": {}}}}));
        let kept = apply(&cx2, &live, &zero, &second, &shared, false).unwrap();
        assert_eq!(kept.object["spec"], json!({"b": 1, "keep": 1}));
    }

    #[test]
    fn manager_names_come_from_the_user_agent_prefix() {
        assert_eq!(manager_name(None, "kubectl/v1.36.0 (linux/amd64) kubernetes/abc"), "kubectl");
        assert_eq!(manager_name(Some("mine"), "kubectl/v1.36.0"), "mine");
        assert_eq!(manager_name(None, &"x".repeat(300)).len(), MAX_MANAGER_LENGTH);
        assert_eq!(manager_name(None, "a\u{7}b/c"), "ab");
        let err = validate_field_manager("PatchOptions", None, true, false).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (422, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
        );
    }

    /// Two appliers: the second conflicts on `.spec.replicas` until forced; then the first
    /// loses it, and when it stops applying a field the second still owns, the field stays.
    #[test]
    fn applies_conflict_and_force_takes_ownership() {
        let reset = reset_set(&[&["status"]]);
        let zero = json!({});
        let config =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2, "paused": true}});
        let first = apply(&cx("a", &reset), &zero, &zero, &config, &Value::Null, false).unwrap();
        assert_eq!(
            first.managed_fields,
            Some(json!([{"manager": "a", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}, "f:replicas": {}}}}]))
        );
        let live = first.object;
        let managed = first.managed_fields.unwrap();
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
        let err = apply(&cx("b", &reset), &live, &zero, &other, &managed, false).err().unwrap();
        assert_eq!((err.code, err.message.as_str()), (409, "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"));
        let forced = apply(&cx("b", &reset), &live, &zero, &other, &managed, true).unwrap();
        assert_eq!(forced.object["spec"]["replicas"], 3);
        let managed = forced.managed_fields.unwrap();
        assert_eq!(managed[0]["fieldsV1"], json!({"f:spec": {"f:paused": {}}}));
        assert_eq!(managed[1]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        // "a" applies without replicas and paused: paused (solely its own) goes, replicas stays.
        let again = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"x": "y"}}});
        let pruned = apply(&cx("a", &reset), &forced.object, &zero, &again, &managed, false).unwrap();
        assert_eq!(pruned.object["spec"], json!({"replicas": 3}));
    }

    /// Past ten Update managers, the oldest are folded into `ancient-changes` per version.
    #[test]
    fn update_managers_are_capped() {
        let reset = Set::new();
        let mut live = json!({"metadata": {"labels": {}}});
        let mut managed = Value::Null;
        for i in 0..12 {
            let mut new = live.clone();
            new["metadata"]["labels"][format!("l{i}")] = json!("v");
            let mut cx = cx("", &reset);
            let name = format!("m{i:02}");
            cx.writer.manager = &name;
            let time = format!("2026-01-01T00:00:{i:02}Z");
            cx.now = &time;
            managed = update(&cx, &live, &new, &managed, &Value::Null).unwrap().to_value();
            live = new;
        }
        let entries = managed.as_array().unwrap();
        assert_eq!(entries.len(), 10);
        assert_eq!(entries[0]["manager"], "ancient-changes");
        assert_eq!(entries[0]["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:l0": {}, "f:l1": {}, "f:l2": {}}}}));
        assert_eq!(entries[0]["time"], "2026-01-01T00:00:02Z");
        assert_eq!(entries[1]["manager"], "m03");
    }

    /// Updates: a new manager takes what it changed from the others.
    #[test]
    fn updates_move_changed_fields() {
        let reset = Set::new();
        let live = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1}});
        let managed = json!([{"manager": "x", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}, "f:spec": {"f:replicas": {}}}}]);
        let new = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 5}});
        let out = update(&cx("y", &reset), &live, &new, &managed, &managed).unwrap().to_value();
        assert_eq!(out[0]["fieldsV1"], json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}));
        assert_eq!((out[1]["manager"].as_str(), &out[1]["fieldsV1"]), (Some("y"), &json!({"f:spec": {"f:replicas": {}}})));
    }
}
