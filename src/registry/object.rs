//! The object a write works on (upstream's `runtime.Object` as its registry passes it along):
//! the generated type a request body decoded to, its kind's hub value when the kind is served
//! in several versions, or JSON where that is the object's natural form (custom resources,
//! what a hook edits as JSON). Built-in objects stay typed from decoding to encoding as long
//! as no step asks to change them as JSON, so storing them needs no conversion from JSON; the
//! JSON form that field management, the JSON-written validation rules and hooks still read is
//! made once, and kept in step with the metadata the store sets ([`Object::set_meta`]). Rules
//! written over the generated type read it as such ([`Object::typed_ref`], or
//! [`Object::hub_ref`]), from JSON only when a JSON step came last.
//!
//! The codecs that read and write objects are [`super::objects`]'s.

use std::any::Any;
use std::sync::OnceLock;

use kapi_apimachinery::codec::{CodecError, Format};
use kapi_apimachinery::dynamic::hub_as;
use kapi_apimachinery::{DynKind, DynObject, Hub, HubObject};
use serde_json::{Map, Value};

use super::objects::{self, Kind};
use crate::status::ApiError;

/// An object on its way through the store: typed, JSON, or both while they agree. Each step
/// takes the form it is written for; the object changes form only when a step asks for the
/// other one.
pub struct Object {
    /// The generated object, until a step changes the object as JSON ([`Object::value_mut`]);
    /// read from the JSON form the first time a step reads it as its type after such a change
    /// ([`Object::typed_ref`]).
    typed: OnceLock<Box<dyn DynObject>>,
    /// The object as JSON: made from `typed` the first time it is read, or the only form.
    json: OnceLock<Value>,
    /// The generated type, for a step that changes the object as such
    /// ([`Object::typed_mut`]) after one that changed it as JSON: set for the kinds that go
    /// to storage as decoded.
    kind: Option<&'static dyn DynKind>,
    /// The internal object of a kind served in several versions as its hub type: what the
    /// object decoded in any version converts to ([`Object::hub`]), or what
    /// [`Object::hub_ref`] read from the JSON form. Kept in step with the metadata the store
    /// sets, and what storing the object converts to the storage version. Dropped when a step
    /// changes the object in another form.
    hub: OnceLock<Hub>,
}

/// An object taken in one form ([`Object::into_form`]).
pub enum Form {
    /// The generated object of a kind stored as decoded.
    Typed(Box<dyn DynObject>),
    /// The hub object of a kind served in several versions.
    Hub(Hub),
    /// JSON: the internal object of a kind the scheme has, or a custom resource.
    Json(Value),
}

/// The parts of an object a write compares or carries over as a whole.
#[derive(Clone, Copy)]
enum Part {
    Spec,
    Status,
}

/// The `metadata` fields an update keeps from the stored object ([`Object::keep_identity_of`]).
const IDENTITY: [&str; 4] = ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"];

/// A `metadata` field the store sets on the objects it writes, in both forms of an
/// [`Object`] ([`Object::set_meta`]).
#[derive(Debug, Clone, Copy)]
pub enum MetaChange<'a> {
    Name(&'a str),
    /// The namespace, or none (`None` removes it).
    Namespace(Option<&'a str>),
    Uid(&'a str),
    /// A time, kept to the second as `metav1.Time` is written.
    CreationTimestamp(chrono::DateTime<chrono::Utc>),
    /// The generation, or none.
    Generation(Option<i64>),
    /// The `resourceVersion` an object read from storage is answered with: its revision.
    ResourceVersion(&'a str),
    /// No `resourceVersion`: storage keeps the revision beside the object.
    NoResourceVersion,
    /// No `managedFields`: field management gives the stored object its own.
    NoManagedFields,
}

impl From<Value> for Object {
    fn from(value: Value) -> Object {
        Object::from_value(value)
    }
}

impl Object {
    /// An object known as JSON only.
    pub fn from_value(value: Value) -> Object {
        Object { typed: OnceLock::new(), json: OnceLock::from(value), kind: None, hub: OnceLock::new() }
    }

    /// A generated object of `kind` and its JSON form, which must agree (as decoding makes
    /// them).
    pub fn typed(kind: &'static dyn DynKind, typed: Box<dyn DynObject>, json: Value) -> Object {
        Object { typed: OnceLock::from(typed), json: OnceLock::from(json), kind: Some(kind), hub: OnceLock::new() }
    }

    /// A generated object of `kind`, its JSON form made when a step first reads it.
    pub fn from_typed(kind: &'static dyn DynKind, typed: Box<dyn DynObject>) -> Object {
        Object { typed: OnceLock::from(typed), json: OnceLock::new(), kind: Some(kind), hub: OnceLock::new() }
    }

    /// The internal object of a kind served in several versions, as its hub value.
    pub fn hub(hub: Hub) -> Object {
        Object { typed: OnceLock::new(), json: OnceLock::new(), kind: None, hub: OnceLock::from(hub) }
    }

    /// The object, which is of `kind`, known as the generated type too
    /// ([`Object::typed_mut`]).
    pub fn of_kind(self, kind: &'static dyn DynKind) -> Object {
        Object { kind: Some(kind), ..self }
    }

    /// A request body of `kind` in `format`, decoded and defaulted ([`objects::decode_defaulted`]):
    /// typed when the scheme has the kind.
    pub fn decode(kind: &Kind, format: Format, bytes: &[u8]) -> Result<Object, CodecError> {
        let Some(dyn_kind) = objects::dyn_kind(kind) else {
            return objects::decode_defaulted(kind, format, bytes).map(Object::from_value);
        };
        Ok(Object::from_typed(dyn_kind, objects::decode_typed(dyn_kind, format, bytes)?))
    }

    /// A JSON value of the generated type `kind`, read and defaulted as a JSON request body
    /// with its text is decoded ([`objects::read_typed`]): what a patch made.
    pub fn read(kind: &'static dyn DynKind, value: Value) -> Result<Object, CodecError> {
        Ok(Object::from_typed(kind, objects::read_typed(kind, value)?))
    }

    /// A JSON object of `kind` decoded and defaulted as a JSON request body of it is
    /// ([`objects::defaulted`]), typed when the scheme has the kind: an object the server
    /// writes itself.
    pub fn defaulted(kind: &Kind, object: &Value) -> Result<Object, CodecError> {
        Object::decode(kind, Format::Json, &serde_json::to_vec(object)?)
    }

    /// A hub value as the generated object of `kind`, with its `apiVersion` and `kind`
    /// ([`objects::external_from_hub`]).
    pub fn from_hub(kind: &Kind, hub: kapi_apimachinery::dynamic::Hub) -> Result<Object, CodecError> {
        let (dyn_kind, typed) = objects::typed_from_hub(kind, hub)?;
        Ok(Object::from_typed(dyn_kind, typed))
    }

    /// Whether the object is at hand as its generated type (no step has changed it as JSON
    /// since, or a step has read it as its type after).
    pub fn is_typed(&self) -> bool {
        self.typed.get().is_some()
    }

    /// The object as `kind`'s version writes it (what field management compares): converted
    /// from its hub value when it has one, else from its JSON ([`objects::external_of`]).
    pub fn external_value(&self, kind: &Kind) -> Result<std::borrow::Cow<'_, Value>, ApiError> {
        if let (None, Some(hub)) = (self.typed.get(), self.hub.get())
            && objects::dyn_kind(kind).is_some_and(|typed| !typed.internal_is_external())
        {
            let (_, external) = objects::typed_from_hub(kind, hub.clone_hub()).map_err(ApiError::internal)?;
            let value = external.to_value().map_err(|e| ApiError::internal(format!("writing an object as JSON: {e}")))?;
            return Ok(std::borrow::Cow::Owned(value));
        }
        objects::external_of(kind, self.value()?).map_err(ApiError::internal)
    }

    /// Whether the object is at hand as its hub type and not as a generated external one (the
    /// internal object of a kind served in several versions).
    pub fn is_hub(&self) -> bool {
        self.typed.get().is_none() && self.hub.get().is_some()
    }

    /// The object as JSON, to read.
    pub fn value(&self) -> Result<&Value, ApiError> {
        if let Some(value) = self.json.get() {
            return Ok(value);
        }
        let value = self.json_of_typed()?;
        Ok(self.json.get_or_init(|| value))
    }

    /// The object as JSON, to change: from here on JSON is the object's only form.
    pub fn value_mut(&mut self) -> Result<&mut Value, ApiError> {
        if self.json.get().is_none() {
            let value = self.json_of_typed()?;
            self.json = OnceLock::from(value);
        }
        self.typed = OnceLock::new();
        self.hub = OnceLock::new();
        self.json.get_mut().ok_or_else(|| ApiError::internal("an object with no form"))
    }

    /// The object as its generated type `T`, to change: read from its JSON form if a step
    /// changed it as JSON, and from here on the only form until one is read again.
    pub fn typed_mut<T: Any>(&mut self) -> Result<&mut T, ApiError> {
        if self.typed.get().is_none() {
            if self.kind.is_none() {
                return Err(no_generated_type());
            }
            let value = match self.json.take() {
                Some(value) => value,
                None => self.json_of_typed()?,
            };
            self.typed = OnceLock::from(self.typed_from_json(value)?);
        }
        self.json = OnceLock::new();
        self.hub = OnceLock::new();
        let typed: &mut dyn Any = self.typed.get_mut().ok_or_else(|| ApiError::internal("an object with no form"))?.as_walk();
        typed.downcast_mut::<T>().ok_or_else(|| not_a::<T>())
    }

    /// The object as its generated type `T`, to read: read from (a copy of) its JSON form if a
    /// step changed it as JSON, and kept beside it from then on.
    pub fn typed_ref<T: Any>(&self) -> Result<&T, ApiError> {
        let typed = match self.typed.get() {
            Some(typed) => typed,
            None => {
                let value = self.value()?.clone();
                let typed = self.typed_from_json(value)?;
                self.typed.get_or_init(|| typed)
            }
        };
        typed.as_any().downcast_ref::<T>().ok_or_else(|| not_a::<T>())
    }

    /// The object, an internal object, as its kind's hub type `T` (the generated internal
    /// struct of a kind served in several versions), to read: the hub form when the object
    /// has it, else read from the JSON form and kept until the object changes.
    pub fn hub_ref<T: serde::de::DeserializeOwned + HubObject>(&self) -> Result<&T, ApiError> {
        let hub = match self.hub.get() {
            Some(hub) => hub,
            None => {
                let hub: Hub = Box::new(
                    T::deserialize(self.value()?)
                        .map_err(|e| ApiError::internal(format!("reading the object as its internal type: {e}")))?,
                );
                self.hub.get_or_init(|| hub)
            }
        };
        hub_as::<T>(hub.as_ref()).ok_or_else(|| not_a::<T>())
    }

    /// The object, an internal object, as its kind's hub type `T`, to change: the hub form
    /// when the object has it, else read from the JSON form; from here on the only form until
    /// another is read.
    pub fn hub_mut<T: serde::de::DeserializeOwned + HubObject>(&mut self) -> Result<&mut T, ApiError> {
        if self.hub.get().is_none() {
            let hub: Hub = Box::new(
                T::deserialize(self.value()?).map_err(|e| ApiError::internal(format!("reading the object as its internal type: {e}")))?,
            );
            self.hub = OnceLock::from(hub);
        }
        (self.json, self.typed) = (OnceLock::new(), OnceLock::new());
        let hub: &mut dyn Any = self.hub.get_mut().ok_or_else(|| ApiError::internal("an object with no form"))?.as_mut();
        hub.downcast_mut::<T>().ok_or_else(|| not_a::<T>())
    }

    /// The object's `metadata` as the generated `ObjectMeta`, when the object is at hand as
    /// its generated or hub type (none is read from JSON for it).
    pub fn typed_meta(&self) -> Option<&kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        self.most_typed()?.object_meta()?.downcast_ref()
    }

    fn typed_from_json(&self, value: Value) -> Result<Box<dyn DynObject>, ApiError> {
        let kind = self.kind.ok_or_else(no_generated_type)?;
        objects::read_value(kind, value).map_err(|e| ApiError::internal(format!("reading the object as its type: {e}")))
    }

    /// The object as JSON, taken.
    pub fn into_value(mut self) -> Result<Value, ApiError> {
        self.value_mut()?;
        self.json.take().ok_or_else(|| ApiError::internal("an object with no form"))
    }

    /// The object, of the generated type `kind`, converted to its kind's hub value
    /// ([`kapi_apimachinery::Object::into_hub`]): the internal object of a kind served in
    /// several versions ([`Object::hub`]).
    pub fn into_hub(self, kind: &'static dyn DynKind) -> Result<Hub, ApiError> {
        let typed = match self.into_form() {
            Form::Typed(typed) => typed,
            Form::Hub(hub) => return Ok(hub),
            Form::Json(value) => {
                objects::read_value(kind, value).map_err(|e| ApiError::internal(format!("reading the object as its type: {e}")))?
            }
        };
        Ok(typed.into_hub())
    }

    /// The object in its most typed form: what storing it encodes. (A hub form read from the
    /// JSON one is kept in step with it, so either is the object.)
    pub fn into_form(self) -> Form {
        match (self.typed.into_inner(), self.hub.into_inner()) {
            (Some(typed), _) => Form::Typed(typed),
            (None, Some(hub)) => Form::Hub(hub),
            _ => Form::Json(self.json.into_inner().unwrap_or_default()),
        }
    }

    /// A copy of the object in its most typed form (the generated object or the hub value,
    /// without the JSON form made from it): for a write that starts from the stored object,
    /// and for a request that proposes the same object on each attempt.
    pub fn clone_object(&self) -> Object {
        let (typed, hub, json) = match (self.typed.get(), self.hub.get()) {
            (Some(typed), _) => (OnceLock::from(typed.clone_object()), OnceLock::new(), OnceLock::new()),
            (None, Some(hub)) => (OnceLock::new(), OnceLock::from(hub.clone_hub()), OnceLock::new()),
            (None, None) => (OnceLock::new(), OnceLock::new(), self.json.clone()),
        };
        Object { typed, json, kind: self.kind, hub }
    }

    /// The zero object of `kind` (what `{}` reads as) in the form this object, of that kind, is
    /// at hand in: the generated type, the hub type, or JSON (`{}`).
    pub fn zero_of_form(&self, kind: &Kind) -> Result<Object, ApiError> {
        let dyn_kind = match (self.is_typed() || self.is_hub(), objects::dyn_kind(kind)) {
            (true, Some(dyn_kind)) => dyn_kind,
            _ => return Ok(Object::from_value(Value::Object(Map::new()))),
        };
        let zero = dyn_kind
            .read_value(Value::Object(Map::new()))
            .map_err(|e| ApiError::internal(format!("making the zero {}: {e}", kind.kind)))?;
        Ok(match self.is_typed() {
            true => Object::from_typed(dyn_kind, zero),
            false => Object::hub(zero.into_hub()),
        })
    }

    /// Whether `other`'s `spec` is this object's: compared as their generated or hub type when
    /// both objects are at hand as the same one (as Go values, so as their JSON forms:
    /// [`kapi_apimachinery::Object::spec_equals`]), else as JSON.
    pub fn spec_equals(&self, other: &Object) -> Result<bool, ApiError> {
        match self.typed_parts_equal(other, Part::Spec) {
            Some(equal) => Ok(equal),
            None => Ok(self.value()?.get("spec") == other.value()?.get("spec")),
        }
    }

    /// Whether `other`'s `status` is this object's, compared as [`Object::spec_equals`]
    /// compares specs.
    pub fn status_equals(&self, other: &Object) -> Result<bool, ApiError> {
        match self.typed_parts_equal(other, Part::Status) {
            Some(equal) => Ok(equal),
            None => Ok(self.value()?.get("status") == other.value()?.get("status")),
        }
    }

    /// The parts compared as the generated or hub type, when both objects are at hand as the
    /// same one (`None` otherwise).
    fn typed_parts_equal(&self, other: &Object, part: Part) -> Option<bool> {
        let (typed, other) = (self.most_typed()?, other.most_typed()?);
        match part {
            Part::Spec => typed.spec_equals(other),
            Part::Status => typed.status_equals(other),
        }
    }

    /// The generated object, else the hub value, as what both are ([`HubObject`]).
    fn most_typed(&self) -> Option<&dyn HubObject> {
        match (self.typed.get(), self.hub.get()) {
            (Some(typed), _) => Some(typed.as_hub_object()),
            (None, Some(hub)) => Some(hub.as_ref()),
            (None, None) => None,
        }
    }

    /// Puts `from`'s `status` in place of this object's, in the most typed form both have
    /// (as [`Object::spec_equals`] compares). An object whose status is `from`'s already is
    /// left as it is, in all its forms.
    pub fn set_status_from(&mut self, from: &Object) -> Result<(), ApiError> {
        if self.status_equals(from)? {
            return Ok(());
        }
        if let Some(from) = from.most_typed() {
            if let Some(typed) = self.typed.get_mut()
                && typed.as_hub_object_mut().copy_status_from(from)
            {
                (self.json, self.hub) = (OnceLock::new(), OnceLock::new());
                return Ok(());
            }
            if let Some(hub) = self.hub.get_mut()
                && hub.copy_status_from(from)
            {
                (self.json, self.typed) = (OnceLock::new(), OnceLock::new());
                return Ok(());
            }
        }
        super::strategy::copy_field(self.value_mut()?, from.value()?, "status");
        Ok(())
    }

    /// Gives the object the identity of `old`, the stored object an update replaces, whatever
    /// the request said (upstream's `rest.BeforeUpdate`): its uid, creation and deletion times
    /// and deletion grace period, and the request's name and namespace (`None`: a
    /// cluster-scoped object's, left as they are). Set in the typed forms when both objects
    /// have their `metadata` as the generated `ObjectMeta`, else as JSON; an object that
    /// carries them already (a PUT of what was read, a patch) keeps all its forms.
    pub fn keep_identity_of(&mut self, old: &Object, name: &str, namespace: Option<&str>) -> Result<(), ApiError> {
        if let (Some(old_meta), Some(meta)) = (old.typed_meta(), self.typed_meta()) {
            let differs = meta.uid != old_meta.uid
                || meta.creation_timestamp != old_meta.creation_timestamp
                || meta.deletion_timestamp != old_meta.deletion_timestamp
                || meta.deletion_grace_period_seconds != old_meta.deletion_grace_period_seconds
                || meta.name.as_deref() != Some(name)
                || namespace.is_some_and(|ns| meta.namespace.as_deref() != Some(ns));
            if differs {
                self.edit_typed_meta(|meta| {
                    meta.uid.clone_from(&old_meta.uid);
                    meta.creation_timestamp.clone_from(&old_meta.creation_timestamp);
                    meta.deletion_timestamp.clone_from(&old_meta.deletion_timestamp);
                    meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds;
                    meta.name = Some(name.to_owned());
                    if let Some(ns) = namespace {
                        meta.namespace = Some(ns.to_owned());
                    }
                });
                self.json = OnceLock::new();
            }
            return Ok(());
        }
        let (old, value) = (old.value()?, self.value()?);
        let (meta, old_meta) = (&value["metadata"], &old["metadata"]);
        let differs = IDENTITY.iter().any(|field| meta.get(field) != old_meta.get(field))
            || meta["name"].as_str() != Some(name)
            || namespace.is_some_and(|ns| meta["namespace"].as_str() != Some(ns));
        if differs {
            let value = self.value_mut()?;
            for field in IDENTITY {
                super::strategy::copy_field(&mut value["metadata"], &old["metadata"], field);
            }
            value["metadata"]["name"] = Value::String(name.to_owned());
            if let Some(ns) = namespace {
                value["metadata"]["namespace"] = Value::String(ns.to_owned());
            }
        }
        Ok(())
    }

    /// `metadata.generation`, read from the form at hand.
    pub fn generation(&self) -> Result<Option<i64>, ApiError> {
        if let Some(meta) = self.typed_meta() {
            return Ok(meta.generation);
        }
        Ok(self.value()?["metadata"]["generation"].as_i64())
    }

    /// Whether `metadata.deletionTimestamp` is set, read from the form at hand.
    pub fn is_being_deleted(&self) -> Result<bool, ApiError> {
        if let Some(meta) = self.typed_meta() {
            return Ok(meta.deletion_timestamp.is_some());
        }
        Ok(!self.value()?["metadata"]["deletionTimestamp"].is_null())
    }

    /// Whether the object is one whose deletion was asked for and that nothing holds any
    /// longer: no finalizers and no grace period left (what makes an update delete it).
    pub fn deletion_completes(&self) -> Result<bool, ApiError> {
        if let Some(meta) = self.typed_meta() {
            return Ok(meta.deletion_timestamp.is_some()
                && meta.finalizers.is_empty()
                && meta.deletion_grace_period_seconds.unwrap_or(0) == 0);
        }
        let meta = &self.value()?["metadata"];
        Ok(meta["deletionTimestamp"].is_string()
            && meta["finalizers"].as_array().is_none_or(Vec::is_empty)
            && meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) == 0)
    }

    /// `metadata.uid`, read from the form at hand.
    pub fn uid(&self) -> Result<Option<String>, ApiError> {
        if let Some(meta) = self.typed_meta() {
            return Ok(meta.uid.clone());
        }
        Ok(self.value()?["metadata"]["uid"].as_str().map(str::to_owned))
    }

    /// Changes the generated `ObjectMeta` of the typed and hub forms the object has; the caller
    /// drops the JSON form or changes it alike.
    fn edit_typed_meta(&mut self, edit: impl Fn(&mut kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta)) {
        let typed = self.typed.get_mut().and_then(|typed| typed.object_meta_mut());
        let hub = self.hub.get_mut().and_then(|hub| hub.object_meta_mut());
        for meta in [typed, hub].into_iter().flatten() {
            if let Some(meta) = meta.downcast_mut() {
                edit(meta);
            }
        }
    }

    /// The object's `metadata.namespace` (`""` when unset), or `None` when it has no
    /// `metadata`: read from the generated object when it has its metadata at hand, so that
    /// no JSON form is made for it.
    pub fn namespace(&self) -> Result<Option<String>, ApiError> {
        if self.json.get().is_none()
            && let Some(meta) = self.typed_meta()
        {
            return Ok(Some(meta.namespace.clone().unwrap_or_default()));
        }
        let meta = self.value()?.get("metadata").and_then(Value::as_object);
        Ok(meta.map(|meta| meta.get("namespace").and_then(Value::as_str).unwrap_or_default().to_owned()))
    }

    /// `metadata.name` and `metadata.generateName`, read from the form at hand.
    pub fn names(&self) -> Result<(Option<String>, Option<String>), ApiError> {
        if self.json.get().is_none()
            && let Some(meta) = self.typed_meta()
        {
            return Ok((meta.name.clone(), meta.generate_name.clone()));
        }
        let meta = &self.value()?["metadata"];
        Ok((meta["name"].as_str().map(str::to_owned), meta["generateName"].as_str().map(str::to_owned)))
    }

    /// Sets `apiVersion` and `kind`.
    pub fn set_type_meta(&mut self, api_version: &str, kind: &str) {
        if let Some(typed) = self.typed.get_mut() {
            typed.set_type_meta(api_version, kind);
        }
        if let Some(hub) = self.hub.get_mut() {
            hub.set_type_meta(api_version, kind);
        }
        if let Some(fields) = self.json.get_mut().and_then(Value::as_object_mut) {
            fields.insert("apiVersion".into(), Value::String(api_version.to_owned()));
            fields.insert("kind".into(), Value::String(kind.to_owned()));
        }
    }

    /// Makes changes to `metadata`, in each form the object has, so that its JSON form stays
    /// the generated object's and neither is made again.
    pub fn set_meta(&mut self, changes: &[MetaChange<'_>]) {
        if let Some(typed) = self.typed.get_mut() {
            set_typed_meta(typed.object_meta_mut(), changes);
        }
        // A hub without metadata gets none added: its JSON form, which does, becomes the object.
        if self.hub.get_mut().is_some_and(|hub| hub.object_meta_mut().is_none()) {
            if self.json.get().is_none()
                && let Ok(value) = self.json_of_typed()
            {
                self.json = OnceLock::from(value);
            }
            self.hub = OnceLock::new();
        }
        if let Some(hub) = self.hub.get_mut() {
            set_typed_meta(hub.object_meta_mut(), changes);
        }
        if let Some(value) = self.json.get_mut() {
            set_json_meta(value, changes);
        }
    }

    /// The JSON form, made from the typed or the hub form.
    fn json_of_typed(&self) -> Result<Value, ApiError> {
        let typed = self.most_typed().ok_or_else(|| ApiError::internal("an object with no form"))?;
        typed.to_value().map_err(|e| ApiError::internal(format!("writing an object as JSON: {e}")))
    }
}

fn no_generated_type() -> ApiError {
    ApiError::internal("the object has no generated type")
}

fn not_a<T>() -> ApiError {
    ApiError::internal(format!("the object is not a {}", std::any::type_name::<T>()))
}

/// Makes `changes` to a generated object's `metadata` (given as its `object_meta_mut`).
fn set_typed_meta(meta: Option<&mut dyn Any>, changes: &[MetaChange<'_>]) {
    use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let Some(meta) = meta.and_then(|meta| meta.downcast_mut::<ObjectMeta>()) else { return };
    for change in changes {
        set_typed_field(meta, *change);
    }
}

fn set_typed_field(meta: &mut kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta, change: MetaChange<'_>) {
    match change {
        MetaChange::Name(name) => meta.name = Some(name.to_owned()),
        MetaChange::Namespace(namespace) => meta.namespace = namespace.map(str::to_owned),
        MetaChange::Uid(uid) => meta.uid = Some(uid.to_owned()),
        MetaChange::CreationTimestamp(at) => {
            meta.creation_timestamp = Some(kapi_apimachinery::Time::from_chrono(at).truncate_to_seconds());
        }
        MetaChange::Generation(generation) => meta.generation = generation,
        MetaChange::ResourceVersion(version) => meta.resource_version = Some(version.to_owned()),
        MetaChange::NoResourceVersion => meta.resource_version = None,
        MetaChange::NoManagedFields => meta.managed_fields.clear(),
    }
}

fn set_json_meta(object: &mut Value, changes: &[MetaChange<'_>]) {
    let Some(fields) = object.as_object_mut() else { return };
    if !fields.get("metadata").is_some_and(Value::is_object) {
        fields.insert("metadata".into(), Value::Object(Map::new()));
    }
    let Some(meta) = fields.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    for change in changes {
        set_json_field(meta, *change);
    }
}

fn set_json_field(meta: &mut Map<String, Value>, change: MetaChange<'_>) {
    let set = |meta: &mut Map<String, Value>, field: &str, value: Option<Value>| match value {
        Some(value) => meta.insert(field.to_owned(), value),
        None => meta.remove(field),
    };
    let text = |s: &str| Some(Value::String(s.to_owned()));
    match change {
        MetaChange::Name(name) => set(meta, "name", text(name)),
        MetaChange::Namespace(namespace) => set(meta, "namespace", namespace.and_then(text)),
        MetaChange::Uid(uid) => set(meta, "uid", text(uid)),
        MetaChange::CreationTimestamp(at) => set(meta, "creationTimestamp", Some(Value::String(objects::timestamp(at)))),
        MetaChange::Generation(generation) => set(meta, "generation", generation.map(Value::from)),
        MetaChange::ResourceVersion(version) => set(meta, "resourceVersion", text(version)),
        MetaChange::NoResourceVersion => set(meta, "resourceVersion", None),
        MetaChange::NoManagedFields => set(meta, "managedFields", None),
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn typed_form(object: Object) -> Box<dyn DynObject> {
        match object.into_form() {
            Form::Typed(typed) => typed,
            _ => panic!("not typed"),
        }
    }

    fn config_map() -> Object {
        let kind = Kind::core_v1("ConfigMap");
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","resourceVersion":"7"},"data":{"a":"b"}}"#;
        let object = Object::decode(&kind, Format::Json, body).unwrap();
        assert!(object.is_typed());
        object
    }

    #[test]
    fn metadata_changes_keep_both_forms_alike() {
        let mut object = config_map();
        object.set_meta(&[
            MetaChange::Namespace(Some("ns")),
            MetaChange::Uid("u-1"),
            MetaChange::CreationTimestamp("2026-11-28T12:00:00.75Z".parse().unwrap()),
            MetaChange::Generation(Some(1)),
            MetaChange::NoResourceVersion,
            MetaChange::NoManagedFields,
        ]);
        let json = object.value().unwrap().clone();
        assert!(object.is_typed());
        let typed = typed_form(object).to_value().unwrap();
        assert_eq!(json, typed);
        assert_eq!(
            json["metadata"],
            json!({"name": "c", "namespace": "ns", "uid": "u-1", "generation": 1, "creationTimestamp": "2026-11-28T12:00:00Z"})
        );
    }

    #[test]
    fn a_json_change_is_read_as_the_type_once_and_kept_beside_it() {
        use kapi_api::api::core::v1::ConfigMap;
        let mut object = config_map();
        object.value_mut().unwrap()["data"]["c"] = json!("d");
        assert!(object.typed_meta().is_none());
        let typed = object.typed_ref::<ConfigMap>().unwrap();
        assert_eq!(typed.data.get("c").map(String::as_str), Some("d"));
        assert!(object.is_typed());
        assert_eq!(object.typed_meta().and_then(|meta| meta.name.as_deref()), Some("c"));
        let json = object.value().unwrap().clone();
        assert_eq!(typed_form(object).to_value().unwrap(), json);
        // An object of no known kind has no generated form to read.
        assert!(Object::from_value(json!({"data": {}})).typed_ref::<ConfigMap>().is_err());
    }

    #[test]
    fn changing_the_json_form_ends_the_typed_one() {
        let mut object = config_map();
        object.value_mut().unwrap()["data"]["c"] = json!("d");
        assert!(!object.is_typed());
        object.set_meta(&[MetaChange::Namespace(None)]);
        let Form::Json(value) = object.into_form() else { panic!("JSON only") };
        assert_eq!(value["data"], json!({"a": "b", "c": "d"}));
    }

    #[test]
    fn a_json_object_has_its_metadata_made() {
        let mut object = Object::from_value(json!({"kind": "Widget", "metadata": null}));
        object.set_meta(&[MetaChange::Name("w")]);
        object.set_type_meta("example.com/v1", "Widget");
        assert_eq!(object.into_value().unwrap(), json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}));
    }

    /// What the store relies on to leave a new object typed when its status is written as the
    /// zero status: stored, that status is no status.
    #[test]
    fn an_empty_status_is_stored_as_none() {
        for (kind, body) in [
            (Kind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() }, r#"{"metadata":{"name":"d"},"spec":{}"#),
            (Kind::core_v1("Service"), r#"{"metadata":{"name":"s"},"spec":{}"#),
            (Kind { group: "batch".into(), version: "v1".into(), kind: "CronJob".into() }, r#"{"metadata":{"name":"c"},"spec":{}"#),
        ] {
            let with_empty = format!("{body},\"status\":{{}}}}");
            let typed = Object::decode(&kind, Format::Json, with_empty.as_bytes()).unwrap();
            // Written as the zero object's (a status that defaulting fills in, such as a
            // namespace's phase, is not: the store clears it as JSON).
            assert_eq!(typed.value().unwrap()["status"], typed.zero_of_form(&kind).unwrap().value().unwrap()["status"], "{}", kind.kind);
            let typed = typed_form(typed);
            let (typed_bytes, _) = objects::encode_typed_with(&kind, typed, None).unwrap();
            let mut json = objects::decode_defaulted(&kind, Format::Json, with_empty.as_bytes()).unwrap();
            json.as_object_mut().unwrap().remove("status");
            let (json_bytes, _) = objects::encode_internal_with(&kind, json, None).unwrap();
            assert_eq!(typed_bytes, json_bytes, "{}", kind.kind);
        }
    }

    /// [`an_empty_status_is_stored_as_none`] for hub objects, which the store leaves as
    /// such when their status is the internal zero object's.
    #[test]
    fn a_hubs_zero_status_is_stored_as_none() {
        for (kind, body) in [
            (
                Kind { group: "autoscaling".into(), version: "v2".into(), kind: "HorizontalPodAutoscaler".into() },
                r#"{"metadata":{"name":"h"},"spec":{}}"#,
            ),
            (
                Kind { group: "networking.k8s.io".into(), version: "v1".into(), kind: "Ingress".into() },
                r#"{"metadata":{"name":"i"},"spec":{}}"#,
            ),
        ] {
            let object = hub_object(&kind, body);
            assert!(object.status_equals(&object.zero_of_form(&kind).unwrap()).unwrap(), "{}", kind.kind);
            assert_eq!(object.value().unwrap()["status"], object.zero_of_form(&kind).unwrap().value().unwrap()["status"], "{}", kind.kind);
            let mut json = object.value().unwrap().clone();
            json.as_object_mut().unwrap().remove("status");
            let Form::Hub(hub) = object.into_form() else { panic!("a hub") };
            let (hub_bytes, _) = objects::encode_hub_with(&kind, hub, None).unwrap();
            let (json_bytes, _) = objects::encode_internal_with(&kind, json, None).unwrap();
            assert_eq!(hub_bytes, json_bytes, "{}", kind.kind);
        }
    }

    /// A request body of `kind`, a kind served in several versions, as the store carries it:
    /// its hub value.
    fn hub_object(kind: &Kind, body: &str) -> Object {
        let external = Object::decode(kind, Format::Json, body.as_bytes()).unwrap();
        Object::hub(external.into_hub(objects::dyn_kind(kind).unwrap()).unwrap())
    }

    /// An HPA in `autoscaling/v1`, and a body of one.
    fn hpa_v1() -> (Kind, &'static str) {
        let kind = Kind { group: "autoscaling".into(), version: "v1".into(), kind: "HorizontalPodAutoscaler".into() };
        let body = r#"{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},
            "spec":{"scaleTargetRef":{"kind":"Deployment","name":"d"},"maxReplicas":3,"targetCPUUtilizationPercentage":50}}"#;
        (kind, body)
    }

    /// A kind served in several versions is carried as its hub value from decoding to
    /// storage: its JSON is the internal object converting through JSON gives, and it is
    /// stored as that JSON would be.
    #[test]
    fn a_hub_object_is_carried_as_its_hub_type() {
        use kapi_api::hub::autoscaling::HorizontalPodAutoscaler;
        let (kind, body) = hpa_v1();
        // No status: Go's value struct is there all the same, as its JSON shows.
        let external = Object::decode(&kind, Format::Json, body.as_bytes()).unwrap();
        let mut expected = objects::to_internal(&kind, external.value().unwrap().clone()).unwrap();
        let mut object = Object::hub(external.into_hub(objects::dyn_kind(&kind).unwrap()).unwrap());
        object.set_meta(&[MetaChange::Uid("u-1"), MetaChange::ResourceVersion("4")]);
        let hub = object.hub_ref::<HorizontalPodAutoscaler>().unwrap();
        assert_eq!((hub.spec.max_replicas, hub.spec.metrics.len()), (3, 1));
        expected["metadata"]["uid"] = json!("u-1");
        expected["metadata"]["resourceVersion"] = json!("4");
        assert_eq!(object.value().unwrap(), &expected);
        let Form::Hub(hub) = object.into_form() else { panic!("carried as its hub") };
        let (hub_bytes, _) = objects::encode_hub_with(&kind, hub, None).unwrap();
        let (json_bytes, _) = objects::encode_internal_with(&kind, expected, None).unwrap();
        assert_eq!(hub_bytes, json_bytes);
    }

    /// The hub value a kind's rules read an internal object as is kept in step with the
    /// metadata the store sets and is what the object is stored from: the bytes are those
    /// the JSON form gives.
    #[test]
    fn the_hub_read_is_kept_and_stored() {
        use kapi_api::hub::autoscaling::HorizontalPodAutoscaler;
        let (kind, body) = hpa_v1();
        let external = Object::decode(&kind, Format::Json, body.as_bytes()).unwrap();
        let mut object = Object::from_value(objects::to_internal(&kind, external.into_value().unwrap()).unwrap());
        let hub = object.hub_ref::<HorizontalPodAutoscaler>().unwrap();
        assert_eq!((hub.spec.max_replicas, hub.spec.metrics.len()), (3, 1));
        object.set_meta(&[MetaChange::Uid("u-1"), MetaChange::Generation(Some(1))]);
        object.set_type_meta("autoscaling/v2", "HorizontalPodAutoscaler");
        let hub = object.hub_ref::<HorizontalPodAutoscaler>().unwrap();
        assert_eq!((hub.api_version.as_deref(), hub.metadata.as_ref().unwrap().generation), (Some("autoscaling/v2"), Some(1)));
        assert_eq!(object.typed_meta().and_then(|meta| meta.uid.as_deref()), Some("u-1"));
        let json = object.value().unwrap().clone();
        assert_eq!(serde_json::to_value(object.hub_ref::<HorizontalPodAutoscaler>().unwrap()).unwrap(), json);
        let Form::Hub(hub) = object.into_form() else { panic!("stored from its hub") };
        let (hub_bytes, _) = objects::encode_hub_with(&kind, hub, None).unwrap();
        let (json_bytes, _) = objects::encode_internal_with(&kind, json, None).unwrap();
        assert_eq!(hub_bytes, json_bytes);
    }

    /// A hub kind's internal object is read as its hub type, again after it changed as JSON.
    #[test]
    fn an_internal_object_is_read_as_its_hub_type() {
        use kapi_api::hub::autoscaling::HorizontalPodAutoscaler;
        let mut object = Object::from_value(json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3}}));
        assert_eq!(object.hub_ref::<HorizontalPodAutoscaler>().unwrap().spec.max_replicas, 3);
        object.value_mut().unwrap()["spec"]["maxReplicas"] = json!(5);
        assert_eq!(object.hub_ref::<HorizontalPodAutoscaler>().unwrap().spec.max_replicas, 5);
        object.set_meta(&[MetaChange::Name("g")]);
        let meta = object.hub_ref::<HorizontalPodAutoscaler>().unwrap().metadata.as_ref().unwrap();
        assert_eq!(meta.name.as_deref(), Some("g"));
        assert!(object.hub_ref::<kapi_api::hub::networking::Ingress>().is_err());
    }

    fn apps_v1(kind: &str) -> Kind {
        Kind { group: "apps".into(), version: "v1".into(), kind: kind.into() }
    }

    /// A Deployment as a request body decodes it.
    fn deployment(body: &str) -> Object {
        Object::decode(&apps_v1("Deployment"), Format::Json, body.as_bytes()).unwrap()
    }

    /// The object written to protobuf and read back, as an update reads the stored object.
    fn through_protobuf(object: Object, kind: &Kind) -> Object {
        let dyn_kind = objects::dyn_kind(kind).unwrap();
        let bytes = typed_form(object).encode(Format::Protobuf).unwrap();
        let typed = dyn_kind.decode(Format::Protobuf, &bytes).unwrap();
        let value = typed.to_value().unwrap();
        Object::typed(dyn_kind, typed, value)
    }

    /// Specs and statuses compare as their JSON forms do, whichever Go form each typed object
    /// holds (a zero value written out or left absent, one read back from protobuf).
    #[test]
    fn typed_parts_compare_as_their_json_forms() {
        let stored = r#"{"metadata":{"name":"d"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":2}}"#;
        let cases = [
            // Zero values written out: the same spec and status as Go values.
            (
                r#"{"metadata":{"name":"d"},"spec":{"replicas":2,"paused":false,"minReadySeconds":0,"template":{"metadata":{},"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":2,"readyReplicas":0}}"#,
                true,
                true,
            ),
            (
                r#"{"metadata":{"name":"d"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#,
                false,
                false,
            ),
            (
                r#"{"metadata":{"name":"d","labels":{"a":"b"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":2}}"#,
                true,
                true,
            ),
            (
                r#"{"metadata":{"name":"d"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"j"}]}}},"status":{}}"#,
                false,
                false,
            ),
        ];
        let old = through_protobuf(deployment(stored), &apps_v1("Deployment"));
        for (body, same_spec, same_status) in cases {
            let new = deployment(body);
            let (old_json, new_json) = (old.value().unwrap(), new.value().unwrap());
            assert_eq!(new.spec_equals(&old).unwrap(), same_spec, "{body}");
            assert_eq!(new_json["spec"] == old_json["spec"], same_spec, "{body}");
            assert_eq!(new.status_equals(&old).unwrap(), same_status, "{body}");
            assert_eq!(new_json["status"] == old_json["status"], same_status, "{body}");
            // The same answers as JSON only.
            let (old_json, new_json) = (Object::from_value(old_json.clone()), Object::from_value(new_json.clone()));
            assert_eq!(new_json.spec_equals(&old_json).unwrap(), same_spec, "{body}");
        }
    }

    /// An update's object takes the stored identity and status in its typed form, and its JSON
    /// form is made from that.
    #[test]
    fn identity_and_status_are_kept_as_the_generated_type() {
        let stored = r#"{"metadata":{"name":"d","namespace":"ns","uid":"u-1","creationTimestamp":"2026-11-28T12:00:00Z","generation":4},"spec":{"replicas":2},"status":{"replicas":2}}"#;
        let old = through_protobuf(deployment(stored), &apps_v1("Deployment"));
        let mut new = deployment(r#"{"metadata":{"name":"other","labels":{"a":"b"}},"spec":{"replicas":3},"status":{"replicas":9}}"#);
        new.keep_identity_of(&old, "d", Some("ns")).unwrap();
        new.set_status_from(&old).unwrap();
        assert!(new.is_typed());
        assert_eq!((old.generation().unwrap(), old.uid().unwrap().as_deref()), (Some(4), Some("u-1")));
        let json = new.value().unwrap().clone();
        assert_eq!(
            json["metadata"],
            json!({"name": "d", "namespace": "ns", "uid": "u-1", "creationTimestamp": "2026-11-28T12:00:00Z", "labels": {"a": "b"}})
        );
        assert_eq!((&json["spec"]["replicas"], &json["status"]), (&json!(3), &json!({"replicas": 2})));
        let copy = new.clone_object();
        assert!(copy.is_typed());
        assert_eq!(typed_form(copy).to_value().unwrap(), json);
        assert_eq!(typed_form(new).to_value().unwrap(), json);
    }

    /// A hub object's status is taken as its hub value.
    #[test]
    fn a_hubs_status_is_kept_as_its_hub_value() {
        let kind = Kind { group: "autoscaling".into(), version: "v2".into(), kind: "HorizontalPodAutoscaler".into() };
        let hub = |body: &str| hub_object(&kind, body);
        let old = hub(r#"{"metadata":{"name":"h"},"spec":{"maxReplicas":3},"status":{"currentReplicas":2,"desiredReplicas":2}}"#);
        let mut new = hub(r#"{"metadata":{"name":"h"},"spec":{"maxReplicas":4}}"#);
        assert!(!new.spec_equals(&old).unwrap() && !new.status_equals(&old).unwrap());
        new.set_status_from(&old).unwrap();
        assert!(new.is_hub() && new.status_equals(&old).unwrap());
        assert_eq!(new.value().unwrap()["status"], old.value().unwrap()["status"]);
    }
}
