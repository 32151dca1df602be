//! Modules for protobuf `bytes` fields, whose JSON form is Go's `[]byte`: a base64
//! string (standard alphabet, padded).
//!
//! Decoding follows Go's `encoding/json` + `base64.StdEncoding`: padding is required, `\r` and `\n`
//! anywhere in the string are ignored, non-zero trailing bits are accepted, and JSON `null`
//! decodes to an empty value. Go also accepts a JSON array of small integers for a `[]byte`; so do
//! we: each module's `deserialize`. Encoding, each module's `write` (a generated struct's writer,
//! [`crate::write`]), always writes a (possibly empty) base64 string; whether an empty field is
//! omitted is the caller's choice.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::write::JsonWriter;

/// Go's `base64.StdEncoding`: padded on output, padding required on input, trailing bits ignored.
const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// Encodes `bytes` as Go's `base64.StdEncoding` does.
pub fn encode(bytes: &[u8]) -> String {
    GO_STD.encode(bytes)
}

/// Decodes a base64 string as Go's `base64.StdEncoding` does; the error text is Go's.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let result = if text.bytes().any(|b| b == b'\r' || b == b'\n') {
        let stripped: Vec<u8> = text.bytes().filter(|&b| b != b'\r' && b != b'\n').collect();
        GO_STD.decode(stripped)
    } else {
        GO_STD.decode(text)
    };
    result.map_err(|err| {
        let at = match err {
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            base64::DecodeError::InvalidLength(at) => at,
            base64::DecodeError::InvalidPadding => text.len(),
        };
        format!("illegal base64 data at input byte {at}")
    })
}

/// Visitor for one `[]byte` value: a base64 string, `null`, an array of bytes, or (from
/// non-JSON formats) raw bytes.
struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a base64-encoded string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        decode(v).map_err(E::custom)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<u8>, E> {
        Ok(Vec::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<u8>, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(b) = seq.next_element::<u8>()? {
            out.push(b);
        }
        Ok(out)
    }
}

/// Like [`BytesVisitor`] but keeps `null` apart from an empty string.
struct OptionBytesVisitor;

impl<'de> Visitor<'de> for OptionBytesVisitor {
    type Value = Option<Vec<u8>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a base64-encoded string or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(BytesVisitor).map(Some)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        BytesVisitor.visit_str(v).map(Some)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
        Ok(Some(v.to_vec()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        BytesVisitor.visit_seq(seq).map(Some)
    }
}

/// A `[]byte` element inside a map or list.
struct Elem(Vec<u8>);

impl<'de> de::Deserialize<'de> for Elem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BytesVisitor).map(Elem)
    }
}

/// `Vec<u8>` as a base64 string; `null` decodes to empty.
pub mod base64_vec {
    use super::*;

    pub fn write(value: &[u8], w: &mut JsonWriter<'_>) {
        w.string(&encode(value));
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        deserializer.deserialize_any(BytesVisitor)
    }
}

/// `Option<Vec<u8>>` as a base64 string or `null`.
pub mod base64_option {
    use super::*;

    pub fn write(value: &Option<Vec<u8>>, w: &mut JsonWriter<'_>) {
        match value {
            Some(bytes) => w.string(&encode(bytes)),
            None => w.null(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<u8>>, D::Error> {
        deserializer.deserialize_option(OptionBytesVisitor)
    }
}

/// `BTreeMap<String, Vec<u8>>` (Go `map[string][]byte`) with base64 values; `null` decodes to an
/// empty map and a `null` value to an empty byte string.
pub mod base64_map {
    use super::*;

    pub fn write(value: &BTreeMap<String, Vec<u8>>, w: &mut JsonWriter<'_>) {
        w.begin_object();
        for (k, v) in value {
            w.key(k);
            w.string(&encode(v));
        }
        w.end_object();
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, Vec<u8>>, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = BTreeMap<String, Vec<u8>>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of base64-encoded strings")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BTreeMap::new())
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BTreeMap::new())
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, Elem(v))) = access.next_entry::<String, Elem>()? {
                    out.insert(k, v);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_option(MapVisitor)
    }
}

/// `Vec<Vec<u8>>` (Go `[][]byte`) as a list of base64 strings; `null` decodes to an empty list and
/// a `null` element to an empty byte string.
pub mod base64_list {
    use super::*;

    pub fn write(value: &[Vec<u8>], w: &mut JsonWriter<'_>) {
        w.begin_array();
        for v in value {
            w.element();
            w.string(&encode(v));
        }
        w.end_array();
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Vec<u8>>, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = Vec<Vec<u8>>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of base64-encoded strings")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(self)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(Elem(v)) = seq.next_element::<Elem>()? {
                    out.push(v);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_option(ListVisitor)
    }
}

/// A `[]byte` field's value read as base64 by the module for its shape ([`base64_vec`],
/// [`base64_option`], [`base64_map`], [`base64_list`]): what the generated structs read such
/// fields through (see [`crate::read`]).
pub struct Base64<T>(pub T);

macro_rules! base64_reads {
    ($($shape:ty => $module:ident),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for Base64<$shape> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $module::deserialize(deserializer).map(Base64)
            }
        }
    )*};
}

base64_reads!(
    Vec<u8> => base64_vec,
    Option<Vec<u8>> => base64_option,
    BTreeMap<String, Vec<u8>> => base64_map,
    Vec<Vec<u8>> => base64_list,
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "base64_vec::deserialize")]
        v: Vec<u8>,
        #[serde(default, deserialize_with = "base64_option::deserialize")]
        o: Option<Vec<u8>>,
        #[serde(default, deserialize_with = "base64_map::deserialize")]
        m: BTreeMap<String, Vec<u8>>,
        #[serde(default, deserialize_with = "base64_list::deserialize")]
        l: Vec<Vec<u8>>,
    }

    /// Written as a generated struct writes such fields (an absent `o` left out).
    impl crate::write::WriteJson for Holder {
        fn write_json(&self, w: &mut JsonWriter<'_>) {
            w.begin_object();
            w.field("v");
            base64_vec::write(&self.v, w);
            if self.o.is_some() {
                w.field("o");
                base64_option::write(&self.o, w);
            }
            w.field("m");
            base64_map::write(&self.m, w);
            w.field("l");
            base64_list::write(&self.l, w);
            w.end_object();
        }
    }

    #[test]
    fn encode_matches_go_std_encoding() {
        for (bytes, text) in [(&b""[..], ""), (b"f", "Zg=="), (b"fo", "Zm8="), (b"foo", "Zm9v"), (b"\x00\xff\xfe", "AP/+")] {
            assert_eq!(encode(bytes), text);
            assert_eq!(decode(text).unwrap(), bytes);
        }
    }

    #[test]
    fn decode_follows_go() {
        // Newlines are ignored anywhere.
        assert_eq!(decode("Zm\r\n9v").unwrap(), b"foo");
        // Non-zero trailing bits are accepted ("Zh==" carries bits Go throws away).
        assert_eq!(decode("Zh==").unwrap(), b"f");
        // Padding is required, the URL alphabet is rejected, garbage is rejected.
        for bad in ["Zg", "Zm8", "_-8=", "Zm9v!", "Zg==Zg==", "===="] {
            let err = decode(bad).unwrap_err();
            assert!(err.starts_with("illegal base64 data at input byte "), "{bad}: {err}");
        }
    }

    #[test]
    fn json_round_trip() {
        let h = Holder {
            v: b"foo".to_vec(),
            o: Some(Vec::new()),
            m: BTreeMap::from([("a".to_string(), b"fo".to_vec()), ("b".to_string(), Vec::new())]),
            l: vec![b"f".to_vec(), Vec::new()],
        };
        let json = String::from_utf8(crate::write::to_vec(&h).unwrap()).unwrap();
        assert_eq!(json, r#"{"v":"Zm9v","o":"","m":{"a":"Zm8=","b":""},"l":["Zg==",""]}"#);
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), h);
    }

    #[test]
    fn json_null_and_arrays() {
        let h: Holder = serde_json::from_str(r#"{"v":null,"o":null,"m":{"a":null},"l":[null,"Zg=="]}"#).unwrap();
        assert_eq!(h, Holder { v: vec![], o: None, m: BTreeMap::from([("a".to_string(), vec![])]), l: vec![vec![], b"f".to_vec()] });
        let h: Holder = serde_json::from_str(r#"{"v":[1,2,255],"m":null,"l":null}"#).unwrap();
        assert_eq!(h.v, vec![1, 2, 255]);
        assert!(h.m.is_empty() && h.l.is_empty());
    }

    #[test]
    fn json_errors() {
        for bad in [
            r#"{"v":"Zg"}"#,
            r#"{"v":5}"#,
            r#"{"v":[256]}"#,
            r#"{"o":"%%%%"}"#,
            r#"{"m":{"a":"x"}}"#,
            r#"{"m":[]}"#,
            r#"{"l":["Zg=","Zg=="]}"#,
            r#"{"l":{}}"#,
        ] {
            assert!(serde_json::from_str::<Holder>(bad).is_err(), "{bad}");
        }
    }
}
