//! Hand-written Kubernetes wire primitives shared by the generated API types and the runtime.
//!
//! Upstream keeps these in `k8s.io/apimachinery`: types whose JSON form is not what their
//! protobuf message suggests (`Time` is a string in JSON and a `Timestamp` message on the wire),
//! the `k8s\0` protobuf envelope, and the codecs. The generator maps the matching spec
//! definitions onto the types here instead of emitting them (see `codegen/src/model/special.rs`).
//!
//! Every special type implements `serde` (JSON/YAML) and `prost::Message` (protobuf) with
//! upstream's exact forms, so a generated field of that type needs no special casing.

/// Calls the macro `$then` with the special types, which read and write themselves through
/// their own serde impls (`read::FromValue` and `write::WriteJson` for each).
macro_rules! special_types {
    ($then:ident) => {
        $then!(
            crate::Time,
            crate::MicroTime,
            crate::Duration,
            crate::Quantity,
            crate::IntOrString,
            crate::RawExtension,
            crate::FieldsV1,
            crate::Json,
        );
    };
}

pub mod codec;
pub mod duration;
pub mod dynamic;
pub mod go;
pub mod intstr;
pub mod quantity;
pub mod raw;
pub mod read;
pub mod schema_or;
pub mod scheme;
pub mod serde_bytes;
pub mod serde_null;
pub mod strconv;
pub mod strict_decoding;
pub mod time;
pub mod walk;
pub mod wire;
pub mod write;

pub use duration::Duration;
pub use dynamic::{DynKind, DynObject, Hub, HubObject};
pub use intstr::IntOrString;
pub use quantity::Quantity;
pub use raw::{FieldsV1, Json, RawExtension};
pub use schema_or::{JsonSchemaPropsOrArray, JsonSchemaPropsOrBool, JsonSchemaPropsOrStringArray};
pub use scheme::{KindVisitor, Object, TypeInfo};
pub use time::{MicroTime, Time};
pub use walk::Walk;

#[cfg(test)]
mod test_hex {
    //! Hex forms of the wire bytes the tests compare with upstream's.

    pub(crate) fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }
}
