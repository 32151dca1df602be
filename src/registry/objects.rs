//! Objects of any registered kind as JSON values, with their typed codecs picked at run time.
//!
//! The generic REST code works on `serde_json::Value` (metadata, lists), and goes through the
//! generated type of the kind whenever bytes come in or go out: decoding a request body checks
//! it against the type (as upstream's decoder does), and storage holds the type's protobuf form.

use super::fieldmanager;
use crate::group_index::same_name;
use kapi_apimachinery::codec::{self, CodecError, Format};
use kapi_apimachinery::dynamic::Hub;
use kapi_apimachinery::strict_decoding::StrictError;
use kapi_apimachinery::{DynKind, DynObject};
use serde_json::Value;

/// A kind by `apiVersion` and `kind`.
#[derive(Debug, Clone, Eq)]
pub struct Kind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// Compared with [`same_name`]: a core kind's group is empty.
impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        same_name(&self.group, &other.group) && same_name(&self.version, &other.version) && same_name(&self.kind, &other.kind)
    }
}

impl Kind {
    /// A kind of the core group's `v1` (`Pod`, `ConfigMap`, `Status`, ...).
    pub fn core_v1(kind: &str) -> Kind {
        Kind { group: String::new(), version: "v1".into(), kind: kind.into() }
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// Whether the generated scheme has `kind`. A kind it does not have is a custom resource's,
/// known only at run time: its objects are unstructured JSON (upstream's `Unstructured`), with
/// no protobuf form, no hub and no generated defaults; a version change only rewrites
/// `apiVersion` (a CRD's `None` conversion).
pub fn is_registered(kind: &Kind) -> bool {
    dyn_kind(kind).is_some()
}

/// Whether an object of `kind` decoded from a request is also its internal object and its
/// storage version's, so that the generated object can go from decoding to storage as it is
/// ([`encode_typed_with`]): a kind of the scheme that is its own hub and stored as itself.
pub fn stores_as_decoded(kind: &Kind) -> bool {
    // Compared in place: every write asks, and `storage_kind` would allocate its answer.
    let stored_as_itself = storage_version(kind).is_none_or(|s| s.group == kind.group && s.version == kind.version && s.kind == kind.kind);
    stored_as_itself && dyn_kind(kind).is_some_and(|typed| typed.internal_is_external())
}

/// The scheme's kind as a trait object (`kapi_api::scheme::dyn_kind`): every typed step below
/// goes through it, so the per-kind code is compiled in the generated crate, not here.
pub fn dyn_kind(kind: &Kind) -> Option<&'static dyn DynKind> {
    kapi_api::scheme::dyn_kind(&kind.group, &kind.version, &kind.kind)
}

/// [`dyn_kind`], or the error of a kind the scheme does not have.
fn known(kind: &Kind) -> Result<&'static dyn DynKind, CodecError> {
    dyn_kind(kind).ok_or_else(|| CodecError::UnknownKind { api_version: kind.api_version(), kind: kind.kind.clone() })
}

/// The error of asking for the protobuf form of an unstructured object.
fn no_protobuf(kind: &Kind) -> CodecError {
    CodecError::UnknownKind { api_version: kind.api_version(), kind: format!("{} (custom resources have no protobuf form)", kind.kind) }
}

/// An unstructured body as JSON: a JSON object (JSON or YAML on the wire).
fn decode_unstructured(kind: &Kind, format: Format, bytes: &[u8]) -> Result<Value, CodecError> {
    let value: Value = match format {
        Format::Json => serde_json::from_slice(bytes)?,
        Format::Yaml => serde_json::from_slice(&codec::yaml_to_json(bytes)?)?,
        Format::Protobuf => return Err(no_protobuf(kind)),
    };
    if !value.is_object() {
        return Err(CodecError::Json(<serde_json::Error as serde::de::Error>::custom("the object is not a JSON object")));
    }
    Ok(value)
}

/// An unstructured object with `kind`'s `apiVersion` and `kind`.
fn with_type_meta(kind: &Kind, mut value: Value) -> Value {
    if let Some(fields) = value.as_object_mut() {
        fields.insert("apiVersion".into(), Value::String(kind.api_version()));
        fields.insert("kind".into(), Value::String(kind.kind.clone()));
    }
    value
}

/// A `metav1.Time` as the API writes it: RFC 3339 in UTC, whole seconds.
pub fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    // The fixed RFC 3339 writer, not a strftime pattern parsed on every call.
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The current time as a `metav1.Time` ([`timestamp`]).
pub fn now() -> String {
    timestamp(chrono::Utc::now())
}

/// Five characters from upstream's consonant-heavy alphabet (`SimpleNameGenerator`: the
/// `generateName` suffix, `kube-api-access-*` volume names).
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4().into_bytes().iter().take(5).map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect()
}

/// Decodes a body of `kind` in `format` into its JSON value (checked against the type).
pub fn decode(kind: &Kind, format: Format, bytes: &[u8]) -> Result<Value, CodecError> {
    match dyn_kind(kind) {
        Some(typed) => Ok(typed.decode(format, bytes)?.to_value()?),
        None => decode_unstructured(kind, format, bytes),
    }
}

/// Decodes a request body of `kind` in `format` into its JSON value, defaulted as upstream
/// defaults a decoded request (`registry::defaults`): on the typed struct, before validation,
/// admission and storage see it. Empty strings of a protobuf body (Go's zero values) are dropped
/// first ([`drop_zero_strings`]), so a default of `""` (a host path's `type`) survives.
/// Objects read from storage are never defaulted again.
pub fn decode_defaulted(kind: &Kind, format: Format, bytes: &[u8]) -> Result<Value, CodecError> {
    // A custom resource's defaults come from its definition's schema, which its strategy
    // applies.
    let Some(typed) = dyn_kind(kind) else { return decode_unstructured(kind, format, bytes) };
    Ok(decode_typed(typed, format, bytes)?.to_value()?)
}

/// [`decode_defaulted`] for a kind of the scheme (`typed`, [`dyn_kind`]), as the generated
/// object: what a request's object starts as ([`crate::registry::object::Object`]).
pub fn decode_typed(typed: &dyn DynKind, format: Format, bytes: &[u8]) -> Result<Box<dyn DynObject>, CodecError> {
    let mut object = typed.decode(format, bytes)?;
    if format == Format::Protobuf {
        let mut value = object.to_value()?;
        drop_zero_strings(&mut value, typed.fields());
        object = read_value(typed, value)?;
    }
    Ok(defaulted_typed(object))
}

/// [`decode_typed`] of a JSON value (what a patch made) instead of its text: the same object,
/// read without writing the value out and parsing it again.
pub fn read_typed(typed: &dyn DynKind, value: Value) -> Result<Box<dyn DynObject>, CodecError> {
    Ok(defaulted_typed(read_value(typed, value)?))
}

/// The generated object of `typed` a JSON value holds, its managed fields put in apart
/// ([`fieldmanager::put_managed_fields`]: each `fieldsV1` written as text once and in
/// upstream's order, where the value deserializer would write it through `Value`'s `Display`,
/// token by token, in the value's sorted order).
pub fn read_value(typed: &dyn DynKind, mut value: Value) -> Result<Box<dyn DynObject>, CodecError> {
    let managed_fields = fieldmanager::take_managed_fields(&mut value);
    let mut object = typed.read_value(value)?;
    if let Some(entries) = managed_fields {
        fieldmanager::put_managed_fields(object.as_mut(), entries)?;
    }
    Ok(object)
}

/// A decoded object, defaulted.
fn defaulted_typed(mut object: Box<dyn DynObject>) -> Box<dyn DynObject> {
    crate::registry::defaults::apply_defaults(object.as_walk());
    object
}

/// Encodes a JSON value of `kind` in `format` (protobuf through the generated type).
pub fn encode(kind: &Kind, format: Format, value: &Value) -> Result<Vec<u8>, CodecError> {
    match format {
        Format::Json => to_json(kind, value),
        // YAML is written from a value, keys sorted (upstream's goes through yaml.v2 maps,
        // sorted too), so a `FieldsV1` order would not survive it.
        Format::Yaml => codec::json_to_yaml(&serde_json::to_vec(value)?),
        Format::Protobuf => {
            let mut object = dyn_kind(kind).ok_or_else(|| no_protobuf(kind))?.read_value(value.clone())?;
            fieldmanager::order_typed(object.as_mut());
            object.set_type_meta(&kind.api_version(), &kind.kind);
            object.encode(Format::Protobuf)
        }
    }
}

/// The JSON of a value of `kind`: a built-in kind's `managedFields` with their `fieldsV1` in
/// upstream's order ([`fieldmanager::BuiltinJson`]), a custom resource's as any JSON value.
pub fn to_json(kind: &Kind, value: &Value) -> Result<Vec<u8>, CodecError> {
    if is_registered(kind) && (fieldmanager::has_managed_fields(value) || value.get("items").is_some_and(Value::is_array)) {
        return Ok(serde_json::to_vec(&fieldmanager::BuiltinJson(value))?);
    }
    Ok(serde_json::to_vec(value)?)
}

/// The generated field facts of a kind (for patching and for [`drop_zero_strings`]).
pub fn fields(kind: &Kind) -> Option<&'static [kapi_apimachinery::scheme::FieldInfo]> {
    dyn_kind(kind).map(|typed| typed.fields())
}

/// Removes optional string fields holding `""` from an object decoded from a protobuf request.
///
/// Go clients write every non-pointer field, so a protobuf body carries `generateName: ""`,
/// `selfLink: ""`, `status.phase: ""` ... where upstream's Go types hold the zero value and its
/// JSON leaves them out (`omitempty`). The specs do not say which fields are Go pointers, so a
/// pointer string explicitly set to `""` in a protobuf request (rare: e.g.
/// `storageClassName: ""`) is dropped too; JSON and YAML requests keep it. Map values (labels
/// with empty values) are never touched: only scalar fields the schema names are.
pub fn drop_zero_strings(value: &mut Value, fields: &'static [kapi_apimachinery::scheme::FieldInfo]) {
    use kapi_apimachinery::scheme::FieldShape;
    let Some(obj) = value.as_object_mut() else { return };
    for f in fields {
        match (f.shape, obj.get_mut(f.json_name)) {
            (FieldShape::Scalar, Some(Value::String(s))) if s.is_empty() && !f.required => {
                obj.remove(f.json_name);
            }
            (FieldShape::Object, Some(inner)) => {
                if let Some(elem) = f.elem {
                    drop_zero_strings(inner, elem());
                }
            }
            (FieldShape::List, Some(Value::Array(items))) => {
                if let Some(elem) = f.elem {
                    for item in items {
                        drop_zero_strings(item, elem());
                    }
                }
            }
            _ => {}
        }
    }
}

/// `object` (an external JSON object of `kind`) decoded and defaulted as a JSON request body
/// of it is.
pub fn defaulted(kind: &Kind, object: &Value) -> Result<Value, CodecError> {
    let body = serde_json::to_vec(object)?;
    decode_defaulted(kind, Format::Json, &body)
}

/// Upstream's strict decoding errors of a JSON request body of `kind`: the fields its type does
/// not have (`unknown field "spec.foo"`) and the keys an object repeats (see
/// [`kapi_apimachinery::strict_decoding`]). None for a kind without generated fields.
pub fn strict_errors(kind: &Kind, json: &[u8]) -> Result<Vec<StrictError>, CodecError> {
    let Some(fields) = fields(kind) else { return Ok(Vec::new()) };
    Ok(kapi_apimachinery::strict_decoding::strict_errors(json, fields)?)
}

/// [`strict_errors`] of a JSON value of `kind` (a patched object).
pub fn value_strict_errors(kind: &Kind, value: &Value) -> Vec<StrictError> {
    let Some(fields) = fields(kind) else { return Vec::new() };
    kapi_apimachinery::strict_decoding::value_strict_errors(value, fields)
}

/// The kind `kind` is stored as: its resource's storage version (the generated
/// `STORAGE_VERSIONS`; cohabiting kinds such as `events.k8s.io` `Event` are stored as core's).
pub fn storage_kind(kind: &Kind) -> Kind {
    storage_version(kind)
        .map_or_else(|| kind.clone(), |s| Kind { group: s.group.to_owned(), version: s.version.to_owned(), kind: s.kind.to_owned() })
}

/// The generated `STORAGE_VERSIONS` entry of `kind`'s resource, if it has one ([`storage_kind`]).
fn storage_version(kind: &Kind) -> Option<&'static kapi_apimachinery::scheme::GroupVersionKind> {
    static INDEX: std::sync::LazyLock<crate::group_index::GroupIndex<&'static kapi_apimachinery::scheme::GroupVersionKind>> =
        std::sync::LazyLock::new(|| {
            kapi_api::scheme::STORAGE_VERSIONS.iter().map(|(group, kind, stored)| (*group, *kind, stored)).collect()
        });
    INDEX.get(&kind.group, &kind.kind).copied()
}

/// Converts an object from one version to another through the kinds' hub (internal) type, as
/// upstream's scheme does (`from` → internal → `to`). The same kind is returned as is.
pub fn convert(value: &Value, from: &Kind, to: &Kind) -> Result<Value, CodecError> {
    if from == to {
        return Ok(value.clone());
    }
    convert_via_hub(value, from, to)
}

/// [`convert`] without the shortcut for the same kind: always `from` → hub → `to` (what the
/// round-trip property tests exercise).
pub fn convert_via_hub(value: &Value, from: &Kind, to: &Kind) -> Result<Value, CodecError> {
    if !is_registered(from) && !is_registered(to) && from.group == to.group && from.kind == to.kind {
        return Ok(with_type_meta(to, value.clone()));
    }
    external_from_hub(to, hub_from_external(from, value.clone())?)
}

/// A stored object as the version `to` asks for (same group and kind name as the URL's route).
pub fn convert_stored(stored: &Kind, value: Value, group: &str, version: &str) -> Result<(Kind, Value), CodecError> {
    let to = Kind { group: group.to_owned(), version: version.to_owned(), kind: stored.kind.clone() };
    if !is_registered(stored) && stored.group == to.group {
        return Ok((to.clone(), with_type_meta(&to, value)));
    }
    if &to == stored || !is_registered(&to) {
        return Ok((stored.clone(), value));
    }
    let converted = convert(&value, stored, &to)?;
    Ok((to, converted))
}

/// Converts an external object (the JSON of `kind`, as decoded and defaulted from a request) to
/// its internal object: the kind's hub type as JSON (`kapi_apimachinery::Object::into_hub`, as JSON), what
/// validation, admission and strategies work on whichever version the request used. A kind of a
/// group served in one version is its own hub, so its object passes through unchanged.
pub fn to_internal(kind: &Kind, external: Value) -> Result<Value, CodecError> {
    match dyn_kind(kind) {
        Some(typed) if !typed.internal_is_external() => Ok(typed.read_value(external)?.into_hub().to_value()?),
        // A custom resource's, or a kind that is its own hub: the object is its internal one.
        _ => Ok(external),
    }
}

/// The external object of `kind` converted from an internal object: the reverse of
/// [`to_internal`].
pub fn from_internal(kind: &Kind, internal: &Value) -> Result<Value, CodecError> {
    let Some(typed) = dyn_kind(kind) else { return Ok(with_type_meta(kind, internal.clone())) };
    let mut object = typed.read_internal(internal.clone())?;
    object.set_type_meta(&kind.api_version(), &kind.kind);
    Ok(object.to_value()?)
}

/// The object as `kind`'s version writes it, given its internal object: the internal object
/// itself when the kind is its own hub (or not in the scheme), else converted
/// ([`from_internal`]).
pub fn external_of<'v>(kind: &Kind, internal: &'v Value) -> Result<std::borrow::Cow<'v, Value>, CodecError> {
    if dyn_kind(kind).is_none_or(|typed| typed.internal_is_external()) {
        return Ok(std::borrow::Cow::Borrowed(internal));
    }
    from_internal(kind, internal).map(std::borrow::Cow::Owned)
}

/// `kind`'s zero object as its version writes it (upstream's `ObjectCreater.New`, encoded):
/// what a create's fields are compared with. A kind the scheme does not have is `{}`. Made
/// once per kind (the scheme's kinds are a fixed set).
pub fn zero_object(kind: &Kind) -> std::sync::Arc<Value> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    type Zeros = HashMap<(String, String, String), Arc<Value>>;
    static ZERO: OnceLock<Mutex<Zeros>> = OnceLock::new();
    if !is_registered(kind) {
        return Arc::new(Value::Object(Default::default()));
    }
    let key = (kind.group.clone(), kind.version.clone(), kind.kind.clone());
    let mut zeros = ZERO.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
    zeros
        .entry(key)
        .or_insert_with(|| Arc::new(decode(kind, Format::Json, b"{}").unwrap_or_else(|_| Value::Object(Default::default()))))
        .clone()
}

/// An object of a kind chosen at run time, still typed: what a write encoded for storage, kept
/// to answer the request without decoding the stored bytes again.
pub trait TypedObject: Send {
    /// Sets `metadata.resourceVersion` (`kapi_apimachinery::Object::set_resource_version`).
    fn set_resource_version(&mut self, resource_version: &str);
    /// The object in a wire format (as [`codec::encode`]).
    fn encode(&self, format: Format) -> Result<Vec<u8>, CodecError>;
}

/// A custom resource's object: JSON, which is also how it is stored.
pub struct Unstructured {
    pub kind: Kind,
    pub object: Value,
}

impl TypedObject for Unstructured {
    fn set_resource_version(&mut self, resource_version: &str) {
        if let Some(meta) = self.object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(resource_version.to_owned()));
        }
    }

    fn encode(&self, format: Format) -> Result<Vec<u8>, CodecError> {
        encode(&self.kind, format, &self.object)
    }
}

impl TypedObject for Box<dyn DynObject> {
    fn set_resource_version(&mut self, resource_version: &str) {
        (**self).set_resource_version(resource_version);
    }

    fn encode(&self, format: Format) -> Result<Vec<u8>, CodecError> {
        (**self).encode(format)
    }
}

/// Encodes an internal object of `kind`'s resource for storage as upstream stores it: converted
/// to the resource's storage version ([`storage_kind`]), protobuf in the `k8s\0` envelope, or
/// JSON with its `apiVersion` and `kind` for the groups upstream keeps in JSON
/// ([`crate::registry::stored_as_json`]). Also gives back the typed storage-version object.
pub fn encode_internal(kind: &Kind, internal: Value) -> Result<(Vec<u8>, Box<dyn TypedObject>), CodecError> {
    encode_internal_with(kind, internal, None)
}

/// [`encode_internal`], the object's `managedFields` given as field management left them
/// (`Some`), in place of any the JSON object has.
pub fn encode_internal_with(
    kind: &Kind,
    mut internal: Value,
    managed_fields: Option<&fieldmanager::ManagedFields>,
) -> Result<(Vec<u8>, Box<dyn TypedObject>), CodecError> {
    let storage = storage_kind(kind);
    let Some(typed) = dyn_kind(&storage) else {
        if let (Some(managed), Some(meta)) = (managed_fields, internal.get_mut("metadata").and_then(Value::as_object_mut)) {
            meta.insert("managedFields".into(), managed.to_value());
        }
        // Stored as JSON, as upstream stores custom resources.
        let object = with_type_meta(&storage, internal);
        return Ok((serde_json::to_vec(&object)?, Box::new(Unstructured { kind: storage, object })));
    };
    let in_object = fieldmanager::take_managed_fields(&mut internal);
    let mut object = typed.read_internal(internal)?;
    match (managed_fields, in_object) {
        (Some(managed), _) => managed.put(object.as_mut())?,
        (None, Some(entries)) => fieldmanager::put_managed_fields(object.as_mut(), entries)?,
        (None, None) => {}
    }
    encode_storage_object(&storage, object)
}

/// [`encode_internal_with`] for the generated object of a kind that is its own hub and its
/// storage version (`storage_kind(kind) == kind`): stored as it is, with no JSON between.
/// Its `managedFields` are `managed_fields` when given, else the object's own.
pub fn encode_typed_with(
    kind: &Kind,
    mut object: Box<dyn DynObject>,
    managed_fields: Option<&fieldmanager::ManagedFields>,
) -> Result<(Vec<u8>, Box<dyn TypedObject>), CodecError> {
    match managed_fields {
        Some(managed) => managed.put(object.as_mut())?,
        None => fieldmanager::order_typed(object.as_mut()),
    }
    encode_storage_object(kind, object)
}

/// [`encode_internal_with`] for an internal object held as its hub value (`Object::hub`):
/// converted to the storage version with no JSON between.
pub fn encode_hub_with(
    kind: &Kind,
    hub: Hub,
    managed_fields: Option<&fieldmanager::ManagedFields>,
) -> Result<(Vec<u8>, Box<dyn TypedObject>), CodecError> {
    let storage = storage_kind(kind);
    let (_, object) = typed_from_hub(&storage, hub)?;
    encode_typed_with(&storage, object, managed_fields)
}

/// The generated object of the storage version `storage`, with its TypeMeta, as stored:
/// JSON for the groups upstream keeps in JSON, else protobuf.
fn encode_storage_object(storage: &Kind, mut object: Box<dyn DynObject>) -> Result<(Vec<u8>, Box<dyn TypedObject>), CodecError> {
    object.set_type_meta(&storage.api_version(), &storage.kind);
    let bytes = if crate::registry::stored_as_json(&storage.group) {
        let mut out = Vec::new();
        object.write_json(&mut out)?;
        out
    } else {
        object.encode(Format::Protobuf)?
    };
    Ok((bytes, Box::new(object)))
}

/// Encodes an external object of `kind` for storage: [`to_internal`], then [`encode_internal`].
pub fn encode_stored(kind: &Kind, value: &Value) -> Result<Vec<u8>, CodecError> {
    Ok(encode_internal(kind, to_internal(kind, value.clone())?)?.0)
}

/// Reads a stored value as its internal object (its kind is the storage version's).
pub fn decode_stored_internal(bytes: &[u8]) -> Result<(Kind, Value), CodecError> {
    let (kind, value) = decode_stored(bytes)?;
    let internal = to_internal(&kind, value)?;
    Ok((kind, internal))
}

/// Writes a stored object of `kind` as an item of a JSON list (without TypeMeta, with
/// `resourceVersion`) straight from its typed object: protobuf decoded into the generated type
/// and encoded as JSON, with no JSON value between. `false` (nothing written) when the stored
/// object is not protobuf of exactly `kind`, which the caller then converts the usual way.
pub fn write_list_item_json(kind: &Kind, stored: &[u8], revision: i64, out: &mut Vec<u8>) -> Result<bool, CodecError> {
    if !stored.starts_with(b"k8s\0") {
        return Ok(false);
    }
    let envelope = codec::decode_envelope(stored)?;
    let (group, version) = envelope.type_meta.group_version();
    if !same_name(group, &kind.group) || !same_name(version, &kind.version) || envelope.type_meta.kind != kind.kind {
        return Ok(false);
    }
    // Decoded without the envelope's TypeMeta, which list items leave out.
    let raw = envelope.raw.as_deref().unwrap_or_default();
    let mut object = dyn_kind(kind).ok_or_else(|| no_protobuf(kind))?.decode_message(raw)?;
    if revision > 0 {
        object.set_resource_version(&revision.to_string());
    }
    object.write_json(out)?;
    Ok(true)
}

/// Reads a stored object of a scheme kind as its hub value (the generated struct the registry's
/// typed code works on; a kind served in one version is its own hub), with no JSON value
/// between: protobuf straight into the generated type, or JSON for the groups stored as JSON.
pub fn decode_stored_hub(bytes: &[u8]) -> Result<(Kind, Hub), CodecError> {
    let format = if bytes.starts_with(b"k8s\0") { Format::Protobuf } else { Format::Json };
    let tm = codec::peek_type_meta(format, bytes, None)?;
    let (group, version) = tm.group_version();
    let kind = Kind { group: group.to_owned(), version: version.to_owned(), kind: tm.kind.clone() };
    let hub = known(&kind)?.decode(format, bytes)?.into_hub();
    Ok((kind, hub))
}

/// An external object of `kind` (a JSON value, as the `Store` hands it to an update) as its hub
/// value: the reverse of [`external_from_hub`].
pub fn hub_from_external(kind: &Kind, external: Value) -> Result<Hub, CodecError> {
    Ok(known(kind)?.read_value(external)?.into_hub())
}

/// A hub value as the external object of `kind` (with its `apiVersion` and `kind`), as the
/// `Store` takes it.
pub fn external_from_hub(kind: &Kind, hub: Hub) -> Result<Value, CodecError> {
    Ok(typed_from_hub(kind, hub)?.1.to_value()?)
}

/// [`external_from_hub`], the generated object (and its kind's) rather than its JSON.
pub fn typed_from_hub(kind: &Kind, hub: Hub) -> Result<(&'static dyn DynKind, Box<dyn DynObject>), CodecError> {
    let typed = known(kind)?;
    let mut object = typed.convert_hub(hub).map_err(|_| CodecError::UnknownKind {
        api_version: kind.api_version(),
        kind: format!("{} (no conversion from this hub)", kind.kind),
    })?;
    object.set_type_meta(&kind.api_version(), &kind.kind);
    Ok((typed, object))
}

/// Reads a stored value (protobuf with its envelope, or JSON) back into JSON.
pub fn decode_stored(bytes: &[u8]) -> Result<(Kind, Value), CodecError> {
    let StoredObject { kind, value, .. } = decode_stored_typed(bytes)?;
    Ok((kind, value))
}

/// A stored object decoded ([`decode_stored_typed`]).
pub struct StoredObject {
    /// The kind it is stored as.
    pub kind: Kind,
    /// The generated object it was decoded into (none for a kind the scheme does not know).
    pub typed: Option<Box<dyn DynObject>>,
    /// The object as JSON.
    pub value: Value,
}

/// [`decode_stored`], keeping the generated object the JSON was made from: what an update's
/// current object is read as.
pub fn decode_stored_typed(bytes: &[u8]) -> Result<StoredObject, CodecError> {
    let (format, kind) = stored_format_and_kind(bytes)?;
    match dyn_kind(&kind) {
        Some(typed) => {
            let object = typed.decode(format, bytes)?;
            let value = object.to_value()?;
            Ok(StoredObject { kind, typed: Some(object), value })
        }
        None => {
            let value = decode_unstructured(&kind, format, bytes)?;
            Ok(StoredObject { kind, typed: None, value })
        }
    }
}

/// A stored object read as the generated type `T` of the kind it is stored as, and nothing
/// else: for a strategy that reads the other stored objects of its kind (a Service's
/// allocations).
pub fn decode_stored_as<T: std::any::Any + Default>(bytes: &[u8]) -> Result<T, CodecError> {
    let (format, kind) = stored_format_and_kind(bytes)?;
    let unknown = || CodecError::UnknownKind { api_version: kind.api_version(), kind: kind.kind.clone() };
    let mut object = dyn_kind(&kind).ok_or_else(unknown)?.decode(format, bytes)?;
    let object: &mut dyn std::any::Any = object.as_walk();
    object.downcast_mut::<T>().map(std::mem::take).ok_or_else(unknown)
}

/// How a stored value is written (protobuf with its envelope, or JSON) and the kind it is.
fn stored_format_and_kind(bytes: &[u8]) -> Result<(Format, Kind), CodecError> {
    let format = if bytes.starts_with(b"k8s\0") { Format::Protobuf } else { Format::Json };
    let tm = codec::peek_type_meta(format, bytes, None)?;
    let (group, version) = tm.group_version();
    Ok((format, Kind { group: group.to_owned(), version: version.to_owned(), kind: tm.kind.clone() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_round_trips_through_protobuf() {
        let kind = Kind::core_v1("ConfigMap");
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":""}},"data":{"k":"v"}}"#;
        let value = decode(&kind, Format::Json, body).unwrap();
        let stored = encode(&kind, Format::Protobuf, &value).unwrap();
        let (back_kind, back) = decode_stored(&stored).unwrap();
        assert_eq!(back_kind, kind);
        assert_eq!(back, value);
        assert!(decode(&kind, Format::Json, br#"{"data": 5}"#).is_err());
    }

    #[test]
    fn strict_errors_are_found_by_path() {
        let errors =
            |kind: &Kind, body: &[u8]| -> Vec<String> { strict_errors(kind, body).unwrap().iter().map(ToString::to_string).collect() };
        let kind = Kind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() };
        let body = br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","bogus":1,"labels":{"x":""}},
               "spec":{"replicas":0,"paused":false,"template":{"spec":{"hostNetwork":false,"containers":[{"name":"c","imagee":"x","tty":false}]}},"status":null}}"#;
        // Known fields holding their zero values are known; an unknown one is unknown whatever it holds.
        assert_eq!(
            errors(&kind, body),
            [
                r#"unknown field "metadata.bogus""#,
                r#"unknown field "spec.template.spec.containers[0].imagee""#,
                r#"unknown field "spec.status""#
            ]
        );
        let kind = Kind::core_v1("Pod");
        let body = br#"{"metadata":{"name":"p"},"spec":{"enableServiceLinks":false,"containers":[{"name":"a","ports":[{"containerPort":80,"hostPort":0}]}]}}"#;
        assert!(errors(&kind, body).is_empty());
        let kind = Kind::core_v1("ConfigMap");
        let body = br#"{"metadata":{"name":"a","name":"b"},"data":{"k":"1","k":"2"}}"#;
        assert_eq!(errors(&kind, body), [r#"duplicate field "metadata.name""#, r#"duplicate field "data.k""#]);
        // The typed decoding keeps the last value of each, as Go's decoder does.
        let value = decode(&kind, Format::Json, body).unwrap();
        assert_eq!((&value["metadata"]["name"], &value["data"]["k"]), (&json!("b"), &json!("2")));
    }

    #[test]
    fn request_bodies_are_defaulted_in_every_format() {
        let kind = Kind::core_v1("Pod");
        // A Go client's protobuf carries its zero values: `imagePullPolicy: ""` is unset.
        let value = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1", "imagePullPolicy": ""}],
                     "volumes": [{"name": "h", "hostPath": {"path": "/h"}}]}});
        let json = value.to_string();
        let proto = encode(&kind, Format::Protobuf, &value).unwrap();
        for (format, bytes) in [(Format::Json, json.as_bytes()), (Format::Protobuf, proto.as_slice())] {
            let got = decode_defaulted(&kind, format, bytes).unwrap();
            let c = &got["spec"]["containers"][0];
            assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{format:?}");
            assert_eq!(c["terminationMessagePath"], "/dev/termination-log", "{format:?}");
            assert_eq!(got["spec"]["restartPolicy"], "Always", "{format:?}");
            // A default of "" survives the protobuf zero-string cleanup.
            assert_eq!(got["spec"]["volumes"][0]["hostPath"]["type"], "", "{format:?}");
        }
        // What comes back from storage is not defaulted again.
        assert!(decode(&kind, Format::Protobuf, &proto).unwrap()["spec"].get("restartPolicy").is_none());
    }

    #[test]
    fn zero_strings_go_but_empty_label_values_stay() {
        let kind = Kind::core_v1("Namespace");
        let mut v = serde_json::json!({
            "metadata": {"name": "a", "generateName": "", "labels": {"x": ""}},
            "status": {"phase": ""}
        });
        drop_zero_strings(&mut v, fields(&kind).unwrap());
        assert_eq!(v, serde_json::json!({"metadata": {"name": "a", "labels": {"x": ""}}, "status": {}}));
    }
}
