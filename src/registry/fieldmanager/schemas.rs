//! The types field management reads objects with: upstream's field manager reads its OpenAPI
//! models (list types, map keys, map types, patch strategies, key defaults). For built-in
//! kinds this one reads the same facts from the generated field tables
//! (`kapi_apimachinery::TypeInfo`, static data: nothing is parsed or kept at run time); for a
//! custom resource, its version's schema.

use serde_json::Value;

use super::typed::Type;
use crate::registry::objects::Kind;

/// The type of a built-in kind's objects, or [`Type::Deduced`] for a kind without generated
/// fields.
pub fn kind_type(kind: &Kind) -> Type<'static> {
    match crate::registry::objects::fields(kind) {
        Some(fields) => Type::Struct(fields),
        None => Type::Deduced,
    }
}

/// The type of a custom resource's objects with `schema` (its version's `openAPIV3Schema`):
/// `metadata` is ObjectMeta, as upstream's models make it.
pub fn resource_type(schema: &Value) -> Type<'_> {
    Type::Resource(schema)
}

/// The type of `autoscaling/v1` `Scale`, which a `scale` subresource reads and writes.
pub fn scale_type() -> Type<'static> {
    kind_type(&Kind { group: "autoscaling".into(), version: "v1".into(), kind: "Scale".into() })
}
