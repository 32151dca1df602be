//! Embedded JSON documents: `RawExtension` (`k8s.io/apimachinery/pkg/runtime.RawExtension`),
//! `FieldsV1` (`meta/v1.FieldsV1`, the managed-fields set) and `Json` (apiextensions `v1.JSON`,
//! arbitrary JSON in CRD schemas).
//!
//! All three hold raw bytes, normally a JSON document.
//!
//! JSON: the embedded document itself. Decoding keeps the value's bytes compacted as Go's
//! `json.Compact` does (insignificant whitespace removed; key order, escapes and number text
//! untouched); `null` leaves the value unset. Encoding writes the stored document; an unset or
//! empty value is `null`. Upstream (Go's `encoding/json`) validates and compacts what
//! `MarshalJSON` returns, so bytes that are not JSON (a `RawExtension` read from protobuf may hold
//! a protobuf-encoded object) fail to encode with Go's message shape
//! (`json: error calling MarshalJSON for type runtime.RawExtension: ...`) rather than producing
//! broken output.
//!
//! Decoding and encoding go through `serde_json::value::RawValue`, so they work with serde_json's
//! text and `Value` (de)serializers; other formats (YAML) must go through JSON, as upstream's own
//! YAML support does.
//!
//! Protobuf: `message X { optional bytes raw = 1; }`, the field written whenever the bytes are set
//! (even when empty, like gogo's `if m.Raw != nil`) and the bytes kept verbatim.

use std::fmt;

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, bytes, skip_field};
use serde::de::Deserializer;
use serde::ser::Error as _;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// Go's `json.Compact` on a valid JSON text: drops whitespace outside strings and keeps every
/// other byte as written. (Validation is the caller's: decoding input has been parsed already and
/// encoding validates first.)
pub fn compact_json(input: &[u8]) -> Vec<u8> {
    if !has_whitespace(input) {
        return input.to_vec();
    }
    let mut out = Vec::with_capacity(input.len());
    let mut in_string = false;
    let mut escaped = false;
    for &b in input {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {}
                b'"' => {
                    in_string = true;
                    out.push(b);
                }
                _ => out.push(b),
            }
        }
    }
    out
}

/// Whether JSON whitespace is anywhere in `input` (inside strings too): bytes without any are
/// compact as they are.
fn has_whitespace(input: &[u8]) -> bool {
    input.iter().any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Writes `raw` as one JSON document, validated and compacted as Go's encoder does with a
/// `MarshalJSON` result. Bytes already compact (as stored ones nearly always are) are parsed once
/// where they are; others are validated as they are before being compacted, since dropping
/// whitespace can join an invalid document into a valid one (`1 2` into `12`).
fn serialize_validated<S: Serializer>(raw: &[u8], go_type: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let fail = |detail: &dyn fmt::Display| S::Error::custom(format!("json: error calling MarshalJSON for type {go_type}: {detail}"));
    if !has_whitespace(raw) {
        let text = std::str::from_utf8(raw).map_err(|e| fail(&e))?;
        let document: &RawValue = serde_json::from_str(text).map_err(|e| fail(&e))?;
        return document.serialize(serializer);
    }
    let compact = compact_json(raw);
    if compact.len() != raw.len() {
        serde_json::from_slice::<serde::de::IgnoredAny>(raw).map_err(|e| fail(&e))?;
    }
    let text = String::from_utf8(compact).map_err(|e| fail(&e))?;
    RawValue::from_string(text).map_err(|e| fail(&e))?.serialize(serializer)
}

/// serde_json's name for a raw document in its serializers' protocol: a struct of this name
/// with one field of this name holding the text is written as that text (the JSON writer) or
/// parsed into a value (the `Value` serializer). It is how `RawValue` serializes itself.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A text known to be one compact JSON document, written as `RawValue` is but without parsing
/// it first: what `RawValue::from_string` would check is already known.
pub(crate) struct CompactJson<'a>(pub(crate) &'a str);

impl Serialize for CompactJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
        raw.serialize_field(RAW_VALUE_TOKEN, self.0)?;
        raw.end()
    }
}

macro_rules! raw_type {
    ($(#[$doc:meta])* $name:ident, $go_type:literal) => {
        $(#[$doc])*
        #[derive(Clone, Default)]
        pub struct $name {
            /// `None` is Go's nil `Raw`; `Some(empty)` is a present but empty field.
            raw: Option<Vec<u8>>,
            /// The bytes are known to be one compact JSON document (they were parsed, or
            /// written by a JSON encoder), so encoding them as JSON need not check them again.
            /// Not part of the value: equality and hashing ignore it.
            compact_json: bool,
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.raw == other.raw
            }
        }

        impl Eq for $name {}

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.raw.hash(state);
            }
        }

        impl $name {
            /// Wraps bytes verbatim (normally a JSON document).
            pub fn from_bytes(raw: impl Into<Vec<u8>>) -> Self {
                $name { raw: Some(raw.into()), compact_json: false }
            }

            /// Wraps bytes that a JSON encoder wrote as one compact document (field
            /// management's `FieldsV1` writer): encoding them as JSON writes them without
            /// parsing them again, as bytes decoded from JSON are.
            pub fn from_compact_json(raw: Vec<u8>) -> Self {
                debug_assert!(
                    serde_json::from_slice::<serde::de::IgnoredAny>(&raw).is_ok() && compact_json(&raw) == raw,
                    "not one compact JSON document: {:?}",
                    String::from_utf8_lossy(&raw)
                );
                $name { raw: Some(raw), compact_json: true }
            }

            /// The compact JSON text of `value`; `Value::Null` gives an unset value, as JSON
            /// `null` does on decode.
            pub fn from_value(value: &serde_json::Value) -> Self {
                if value.is_null() {
                    return $name::default();
                }
                // Serialising a `Value` cannot fail: its map keys are strings.
                $name { raw: serde_json::to_vec(value).ok(), compact_json: true }
            }

            /// Parses a JSON text and keeps it compacted, as decoding from JSON does.
            pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
                serde_json::from_str(text)
            }

            /// The stored bytes; empty when unset.
            pub fn as_bytes(&self) -> &[u8] {
                self.raw.as_deref().unwrap_or_default()
            }

            /// The stored bytes, `None` when unset (Go's nil).
            pub fn raw(&self) -> Option<&[u8]> {
                self.raw.as_deref()
            }

            pub fn into_bytes(self) -> Vec<u8> {
                self.raw.unwrap_or_default()
            }

            /// Unset or empty: what JSON encodes as `null`.
            pub fn is_empty(&self) -> bool {
                self.as_bytes().is_empty()
            }

            /// The stored document as a JSON value; `None` when unset or empty.
            pub fn to_value(&self) -> Result<Option<serde_json::Value>, serde_json::Error> {
                if self.is_empty() {
                    return Ok(None);
                }
                serde_json::from_slice(self.as_bytes()).map(Some)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match &self.raw {
                    None => f.write_str(concat!(stringify!($name), "(None)")),
                    Some(raw) => match std::str::from_utf8(raw) {
                        Ok(text) => write!(f, concat!(stringify!($name), "({})"), text),
                        Err(_) => write!(f, concat!(stringify!($name), "({:02x?})"), raw),
                    },
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                if self.is_empty() {
                    return serializer.serialize_none();
                }
                if self.compact_json
                    && let Ok(text) = std::str::from_utf8(self.as_bytes())
                {
                    return CompactJson(text).serialize(serializer);
                }
                serialize_validated(self.as_bytes(), $go_type, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = Box::<RawValue>::deserialize(deserializer)?;
                let text = raw.get();
                if text == "null" {
                    return Ok($name::default());
                }
                Ok($name { raw: Some(compact_json(text.as_bytes())), compact_json: true })
            }
        }

        impl prost::Message for $name {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                if let Some(raw) = &self.raw {
                    bytes::encode(1, raw, buf);
                }
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                match tag {
                    1 => {
                        self.compact_json = false;
                        bytes::merge(wire_type, self.raw.get_or_insert_with(Vec::new), buf, ctx)
                    }
                    _ => skip_field(wire_type, tag, buf, ctx),
                }
            }

            fn encoded_len(&self) -> usize {
                self.raw.as_ref().map_or(0, |raw| bytes::encoded_len(1, raw))
            }

            fn clear(&mut self) {
                self.raw = None;
                self.compact_json = false;
            }
        }
    };
}

raw_type!(
    /// `runtime.RawExtension`: an embedded object (for example `AdmissionRequest.object`) kept as
    /// raw bytes.
    RawExtension,
    "runtime.RawExtension"
);

raw_type!(
    /// `meta/v1.FieldsV1`: a managed-fields set in its JSON encoding.
    FieldsV1,
    "v1.FieldsV1"
);

raw_type!(
    /// apiextensions `v1.JSON`: an arbitrary JSON value in a CRD schema (`default`, `enum`,
    /// `example`).
    Json,
    "v1.JSON"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;
    use prost::Message;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(default)]
        object: RawExtension,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fields: Option<FieldsV1>,
    }

    #[test]
    fn compact_like_go() {
        for (input, expected) in [
            ("{}", "{}"),
            (" { \"a\" : [ 1 , 2.50 , -0e0 ] ,\n\t\"b\":null } ", r#"{"a":[1,2.50,-0e0],"b":null}"#),
            (r#"{"s":" spaced \" \\ out ","u":"\u00e9"}"#, r#"{"s":" spaced \" \\ out ","u":"\u00e9"}"#),
            ("\"x\\\\\"", "\"x\\\\\""),
            ("[ \"a b\" , \"\\\" c\" ]", "[\"a b\",\"\\\" c\"]"),
        ] {
            assert_eq!(String::from_utf8(compact_json(input.as_bytes())).unwrap(), expected, "{input}");
        }
    }

    #[test]
    fn admission_review_fixture_object() {
        // `request.object` of the upstream AdmissionReview fixture, pretty-printed in its JSON
        // form and compact in its protobuf form.
        let json = r#"{
          "object": {
            "apiVersion": "example.com/v1",
            "kind": "CustomType",
            "spec": {
              "replicas": 1
            },
            "status": {
              "available": 1
            }
          }
        }"#;
        let compact = r#"{"apiVersion":"example.com/v1","kind":"CustomType","spec":{"replicas":1},"status":{"available":1}}"#;
        let h: Holder = serde_json::from_str(json).unwrap();
        assert_eq!(h.object.as_bytes(), compact.as_bytes());
        assert_eq!(serde_json::to_string(&h).unwrap(), format!(r#"{{"object":{compact}}}"#));
        // Protobuf: field 1, verbatim bytes.
        let pb = h.object.encode_to_vec();
        assert_eq!(pb[0], 0x0a);
        assert_eq!(usize::from(pb[1]), compact.len());
        assert_eq!(&pb[2..], compact.as_bytes());
        assert_eq!(RawExtension::decode(pb.as_slice()).unwrap(), h.object);
    }

    #[test]
    fn json_null_and_empty() {
        let h: Holder = serde_json::from_str(r#"{"object":null,"fields":null}"#).unwrap();
        assert_eq!(h, Holder::default());
        assert_eq!(serde_json::to_string(&h).unwrap(), r#"{"object":null}"#);
        assert_eq!(serde_json::to_string(&RawExtension::from_bytes(Vec::new())).unwrap(), "null");
        // Scalars and arrays are documents too, kept as written.
        for text in ["true", "12.50", r#""s""#, "[1,{\"b\":2,\"a\":1}]", "1e400"] {
            let v = Json::from_json(text).unwrap();
            assert_eq!(v.as_bytes(), text.as_bytes());
            assert_eq!(serde_json::to_string(&v).unwrap(), text);
        }
    }

    #[test]
    fn from_value_through_serde_json_value() {
        let value = serde_json::json!({"f:metadata": {"f:labels": {}}});
        let f = FieldsV1::from_value(&value);
        assert_eq!(f.as_bytes(), br#"{"f:metadata":{"f:labels":{}}}"#);
        assert_eq!(f.to_value().unwrap(), Some(value.clone()));
        // serde_json::Value (de)serialisers go through RawValue as well.
        assert_eq!(serde_json::to_value(&f).unwrap(), value);
        assert_eq!(serde_json::from_value::<FieldsV1>(value).unwrap(), f);
        assert_eq!(FieldsV1::from_value(&serde_json::Value::Null), FieldsV1::default());
    }

    #[test]
    fn known_compact_json_is_written_as_it_is() {
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"k:{\"name\":\"c d\"}":{}}}"#;
        let written = FieldsV1::from_compact_json(text.as_bytes().to_vec());
        let decoded = FieldsV1::from_json(text).unwrap();
        assert_eq!(written, decoded);
        let holder = |fields: &FieldsV1| Holder { object: RawExtension::default(), fields: Some(fields.clone()) };
        // The JSON writer and the `Value` serializer give what a checked document gives.
        for fields in [&written, &decoded, &FieldsV1::from_bytes(text.as_bytes())] {
            assert_eq!(serde_json::to_string(&holder(fields)).unwrap(), format!(r#"{{"object":null,"fields":{text}}}"#));
            assert_eq!(serde_json::to_value(fields).unwrap(), serde_json::from_str::<serde_json::Value>(text).unwrap());
        }
        // Bytes from protobuf are checked again when written as JSON.
        let mut read = FieldsV1::decode(FieldsV1::from_bytes(*b"{").encode_to_vec().as_slice()).unwrap();
        assert!(serde_json::to_string(&read).is_err());
        read = FieldsV1::decode(written.encode_to_vec().as_slice()).unwrap();
        assert!(!read.compact_json);
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
    }

    #[test]
    fn protobuf_bytes() {
        assert!(RawExtension::default().encode_to_vec().is_empty());
        assert_eq!(RawExtension::default().encoded_len(), 0);
        // A present but empty field stays present.
        let empty = RawExtension::from_bytes(Vec::new());
        assert_eq!(hex(&empty.encode_to_vec()), "0a00");
        assert_eq!(RawExtension::decode(&[0x0a, 0x00][..]).unwrap(), empty);
        // The Lease fixture's managedFields entry: FieldsV1 `{}`.
        let f = FieldsV1::from_bytes(*b"{}");
        assert_eq!(hex(&f.encode_to_vec()), "0a027b7d");
        assert_eq!(f.encoded_len(), 4);
        assert_eq!(Json::decode(&[0x0a, 0x01, b'1'][..]).unwrap(), Json::from_bytes(*b"1"));
        assert_eq!(RawExtension::decode(&[][..]).unwrap(), RawExtension::default());
        for bad in [&[0x0a][..], &[0x0a, 0x05, b'x'][..], &[0x08, 0x01, 0x0f][..], &[0x0d][..]] {
            assert!(RawExtension::decode(bad).is_err(), "{bad:?}");
        }
        // Unknown fields are skipped.
        assert_eq!(Json::decode(&[0x10, 0x01, 0x0a, 0x01, b'2'][..]).unwrap(), Json::from_bytes(*b"2"));
    }

    #[test]
    fn non_json_bytes_fail_to_encode_without_panicking() {
        for raw in [&b"k8s\x00\x0a\x02v1"[..], b"{", b"1 2", b"\xff", b"{\"a\":\"\xff\"}"] {
            let err = serde_json::to_string(&RawExtension::from_bytes(raw)).unwrap_err();
            assert!(err.to_string().starts_with("json: error calling MarshalJSON for type runtime.RawExtension: "), "{err}");
        }
        // Whitespace around a stored document is dropped on output, as Go's encoder does.
        assert_eq!(serde_json::to_string(&Json::from_bytes(*b" {\"a\": 1}\n")).unwrap(), r#"{"a":1}"#);
        assert_eq!(format!("{:?}", RawExtension::from_bytes(*b"\xff")), "RawExtension([ff])");
        // Compact bytes are written as they are, to text and to a `Value`; so are bytes whose
        // only whitespace is inside strings.
        for text in [r#"{"f:a":{},"f:b":{".":{}}}"#, r#"{"k:{\"x\":\"a b\"}":{}}"#] {
            let fields = FieldsV1::from_bytes(text.as_bytes());
            assert_eq!(serde_json::to_string(&fields).unwrap(), text);
            assert_eq!(serde_json::to_value(&fields).unwrap(), serde_json::from_str::<serde_json::Value>(text).unwrap());
        }
    }

    #[test]
    fn decode_errors() {
        assert!(serde_json::from_str::<Holder>(r#"{"object":}"#).is_err());
        assert!(serde_json::from_str::<Holder>(r#"{"object":{"a":1}"#).is_err());
    }
}
