//! Kinds and objects chosen at run time, as trait objects: what the runtime works through so
//! that the per-type code (serde, prost, conversion) is compiled once, in the generated crate,
//! where the scheme's table makes the vtables ([`kind_of`]), and not again for every generic
//! helper of the runtime that would otherwise be instantiated for each of the ~700 kinds.

use std::any::Any;
use std::marker::PhantomData;

use crate::codec::{self, CodecError, Format};
use crate::scheme::{FieldInfo, Object};
use crate::walk::Walk;

/// A hub (internal) value of some kind, as [`Object::into_hub`] makes it.
pub type Hub = Box<dyn HubObject>;

/// A kind's hub (internal) object behind a trait object: what every version of the kind
/// converts to and from, and what the registry's rules read and the store carries from
/// decoding to storage, whichever version a request came in. The hub of a kind served in one
/// version is the generated type itself (the blanket implementation below); the hub structs of
/// groups served in more versions implement it in the generated crate.
pub trait HubObject: Any + Send + Sync {
    /// The internal object as JSON: the hub serialised with the JSON names of its fields.
    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error>;

    /// Sets `apiVersion` and `kind` ([`Object::set_type_meta`]).
    fn set_type_meta(&mut self, api_version: &str, kind: &str);

    /// The object's `metadata` when it is an `ObjectMeta` ([`Object::object_meta`]).
    fn object_meta(&self) -> Option<&dyn Any>;

    /// [`HubObject::object_meta`], to change (`None` when absent: nothing is added).
    fn object_meta_mut(&mut self) -> Option<&mut dyn Any>;

    /// A copy, to convert while the object goes on.
    fn clone_hub(&self) -> Hub;

    /// [`Object::spec_equals`] with a hub of the same type; `None` for another type.
    fn spec_equals(&self, other: &dyn HubObject) -> Option<bool>;

    /// [`Object::status_equals`] with a hub of the same type; `None` for another type.
    fn status_equals(&self, other: &dyn HubObject) -> Option<bool>;

    /// [`Object::copy_status_from`] a hub of the same type; `false` (nothing copied) for
    /// another type.
    fn copy_status_from(&mut self, other: &dyn HubObject) -> bool;
}

impl<T: Object> HubObject for T {
    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        crate::write::to_value(self)
    }

    fn set_type_meta(&mut self, api_version: &str, kind: &str) {
        Object::set_type_meta(self, api_version, kind);
    }

    fn object_meta(&self) -> Option<&dyn Any> {
        Object::object_meta(self)
    }

    fn object_meta_mut(&mut self) -> Option<&mut dyn Any> {
        Object::object_meta_mut(self)
    }

    fn clone_hub(&self) -> Hub {
        Box::new(self.clone())
    }

    fn spec_equals(&self, other: &dyn HubObject) -> Option<bool> {
        hub_as::<T>(other).map(|other| Object::spec_equals(self, other))
    }

    fn status_equals(&self, other: &dyn HubObject) -> Option<bool> {
        hub_as::<T>(other).map(|other| Object::status_equals(self, other))
    }

    fn copy_status_from(&mut self, other: &dyn HubObject) -> bool {
        hub_as::<T>(other).map(|other| Object::copy_status_from(self, other)).is_some()
    }
}

/// The hub value as its type `H`, or the value back when it is another type.
pub fn downcast_hub<H: HubObject>(hub: Hub) -> Result<H, Hub> {
    if !(&*hub as &dyn Any).is::<H>() {
        return Err(hub);
    }
    let any: Box<dyn Any + Send> = hub;
    match any.downcast::<H>() {
        Ok(h) => Ok(*h),
        Err(_) => unreachable!("the hub's type was checked above"),
    }
}

/// The hub value read as its type `H`, when it is one.
pub fn hub_as<H: HubObject>(hub: &dyn HubObject) -> Option<&H> {
    (hub as &dyn Any).downcast_ref::<H>()
}

/// One kind of the scheme: how its objects are decoded and made. Reached through
/// `kapi_api::scheme::kind`, which answers the generated table's instance of [`KindOf`].
pub trait DynKind: Send + Sync {
    /// The JSON fields of the kind's type ([`crate::TypeInfo::fields`]).
    fn fields(&self) -> &'static [FieldInfo];

    /// [`Object::INTERNAL_IS_EXTERNAL`].
    fn internal_is_external(&self) -> bool;

    /// An object decoded from a body in `format` ([`codec::decode`]).
    fn decode(&self, format: Format, bytes: &[u8]) -> Result<Box<dyn DynObject>, CodecError>;

    /// An object decoded from its bare protobuf message (what a stored envelope's `raw` holds),
    /// without TypeMeta.
    fn decode_message(&self, message: &[u8]) -> Result<Box<dyn DynObject>, CodecError>;

    /// An object read from its JSON value. (There is no borrowing form: deserialising from
    /// `&Value` would compile a third deserialiser for every type, beside the byte and owned
    /// value ones.)
    fn read_value(&self, value: serde_json::Value) -> Result<Box<dyn DynObject>, serde_json::Error>;

    /// An object converted from a hub value ([`Object::from_hub`]); the value back when it is
    /// not this kind's hub type.
    fn convert_hub(&self, hub: Hub) -> Result<Box<dyn DynObject>, Hub>;

    /// An object converted from an internal object ([`Object::from_internal`]).
    fn read_internal(&self, internal: serde_json::Value) -> Result<Box<dyn DynObject>, serde_json::Error>;
}

/// An object of a kind chosen at run time: a generated type behind a trait object.
pub trait DynObject: Send + Sync {
    /// The object as its JSON value.
    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error>;

    /// The object's JSON written at the end of `out`.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;

    /// The object in a wire format ([`codec::encode`]).
    fn encode(&self, format: Format) -> Result<Vec<u8>, CodecError>;

    /// [`Object::set_type_meta`].
    fn set_type_meta(&mut self, api_version: &str, kind: &str);

    /// [`Object::set_resource_version`].
    fn set_resource_version(&mut self, resource_version: &str);

    /// [`Object::object_meta`].
    fn object_meta(&self) -> Option<&dyn Any>;

    /// [`Object::object_meta_mut`].
    fn object_meta_mut(&mut self) -> Option<&mut dyn Any>;

    /// [`Object::list_items_mut`].
    fn list_items_mut(&mut self) -> Option<Vec<&mut dyn DynObject>>;

    /// The object and everything nested in it, for defaulting and other walks.
    fn as_walk(&mut self) -> &mut dyn Walk;

    /// The generated value, for code that knows the type.
    fn as_any(&self) -> &dyn Any;

    /// [`Object::into_hub`].
    fn into_hub(self: Box<Self>) -> Hub;

    /// A copy.
    fn clone_object(&self) -> Box<dyn DynObject>;

    /// The object as a [`HubObject`], which every generated kind is (the blanket
    /// implementation): how its metadata, spec and status are reached without naming its
    /// type, as a hub value's are.
    fn as_hub_object(&self) -> &dyn HubObject;

    /// [`DynObject::as_hub_object`], to change.
    fn as_hub_object_mut(&mut self) -> &mut dyn HubObject;
}

impl<T: Object> DynObject for T {
    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        crate::write::to_value(self)
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        crate::write::to_writer(self, out)
    }

    fn encode(&self, format: Format) -> Result<Vec<u8>, CodecError> {
        codec::encode(format, self)
    }

    fn set_type_meta(&mut self, api_version: &str, kind: &str) {
        Object::set_type_meta(self, api_version, kind);
    }

    fn set_resource_version(&mut self, resource_version: &str) {
        Object::set_resource_version(self, resource_version);
    }

    fn object_meta(&self) -> Option<&dyn Any> {
        Object::object_meta(self)
    }

    fn object_meta_mut(&mut self) -> Option<&mut dyn Any> {
        Object::object_meta_mut(self)
    }

    fn list_items_mut(&mut self) -> Option<Vec<&mut dyn DynObject>> {
        Object::list_items_mut(self)
    }

    fn as_walk(&mut self) -> &mut dyn Walk {
        self
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_hub(self: Box<Self>) -> Hub {
        Object::into_hub(*self)
    }

    fn clone_object(&self) -> Box<dyn DynObject> {
        Box::new(self.clone())
    }

    fn as_hub_object(&self) -> &dyn HubObject {
        self
    }

    fn as_hub_object_mut(&mut self) -> &mut dyn HubObject {
        self
    }
}

/// The [`DynKind`] of the generated type `T`.
pub struct KindOf<T>(PhantomData<fn() -> T>);

/// The kind `T` as a trait object. Its vtable, and so every method of `T` it reaches, is
/// compiled in the crate that calls this: the generated crate's scheme table does.
pub fn kind_of<T: Object>() -> &'static dyn DynKind {
    &KindOf::<T>(PhantomData)
}

impl<T: Object> DynKind for KindOf<T> {
    fn fields(&self) -> &'static [FieldInfo] {
        T::fields()
    }

    fn internal_is_external(&self) -> bool {
        T::INTERNAL_IS_EXTERNAL
    }

    fn decode(&self, format: Format, bytes: &[u8]) -> Result<Box<dyn DynObject>, CodecError> {
        Ok(Box::new(codec::decode::<T>(format, bytes)?))
    }

    fn decode_message(&self, message: &[u8]) -> Result<Box<dyn DynObject>, CodecError> {
        Ok(Box::new(T::decode(message)?))
    }

    fn read_value(&self, value: serde_json::Value) -> Result<Box<dyn DynObject>, serde_json::Error> {
        Ok(Box::new(<T as crate::read::FromValue>::from_value(value)?))
    }

    fn convert_hub(&self, hub: Hub) -> Result<Box<dyn DynObject>, Hub> {
        Ok(Box::new(T::from_hub(hub)?))
    }

    fn read_internal(&self, internal: serde_json::Value) -> Result<Box<dyn DynObject>, serde_json::Error> {
        Ok(Box::new(T::from_internal(internal)?))
    }
}
