//! The three wire forms of an object, as kube-apiserver reads and writes them.
//!
//! - JSON: serde over the generated types.
//! - YAML: converted to JSON first and decoded as JSON, and encoded as JSON then converted, as
//!   upstream's `sigs.k8s.io/yaml` does (so keys come out sorted, as upstream's do). Alias
//!   expansion is bounded by the document's length ([`yaml_to_json`]).
//! - Protobuf: the 4-byte magic `k8s\0` followed by a `runtime.Unknown` whose `typeMeta` names
//!   the kind and whose `raw` is the object's own message.
//!
//! [`Format::from_content_type`] is the entry point the runtime uses to pick a codec.

use prost::Message;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType};
use serde::Deserialize;

use crate::scheme::Object;

/// The prefix of every Kubernetes protobuf-encoded object.
pub const PROTOBUF_MAGIC: &[u8; 4] = b"k8s\0";

pub const JSON: &str = "application/json";
pub const YAML: &str = "application/yaml";
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
    Protobuf,
}

impl Format {
    /// The format of a `Content-Type` (or one `Accept` entry); parameters are ignored.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        match media.as_str() {
            JSON | "application/*" | "*/*" => Some(Self::Json),
            YAML | "application/x-yaml" | "text/yaml" => Some(Self::Yaml),
            PROTOBUF => Some(Self::Protobuf),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => JSON,
            Self::Yaml => YAML,
            Self::Protobuf => PROTOBUF,
        }
    }

    /// `json`, `yaml`/`yml`, `protobuf`/`pb`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "json" => Some(Self::Json),
            "yaml" | "yml" => Some(Self::Yaml),
            "protobuf" | "proto" | "pb" => Some(Self::Protobuf),
            _ => None,
        }
    }

    /// Guesses the format of a body: the protobuf magic, else JSON if it starts with `{` or `[`,
    /// else YAML.
    pub fn detect(bytes: &[u8]) -> Self {
        if bytes.starts_with(PROTOBUF_MAGIC) {
            return Self::Protobuf;
        }
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') | Some(b'[') => Self::Json,
            _ => Self::Yaml,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("invalid YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("invalid protobuf: {0}")]
    Protobuf(#[from] prost::DecodeError),
    #[error("not a Kubernetes protobuf object: the body does not start with the magic \"k8s\\0\"")]
    MissingMagic,
    #[error("the object has no {0}")]
    MissingTypeMeta(&'static str),
    #[error("no kind {kind} is registered for apiVersion {api_version}")]
    UnknownKind { api_version: String, kind: String },
}

/// `apiVersion` and `kind`, as in `runtime.TypeMeta` (proto fields 1 and 2, always written).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct TypeMeta {
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
}

impl TypeMeta {
    /// `(group, version)` of `apiVersion` (`apps/v1` → `("apps", "v1")`, `v1` → `("", "v1")`).
    pub fn group_version(&self) -> (&str, &str) {
        self.api_version.split_once('/').unwrap_or(("", &self.api_version))
    }
}

impl Message for TypeMeta {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        prost::encoding::string::encode(1, &self.api_version, buf);
        prost::encoding::string::encode(2, &self.kind, buf);
    }
    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), prost::DecodeError> {
        match tag {
            1 => prost::encoding::string::merge(wire_type, &mut self.api_version, buf, ctx),
            2 => prost::encoding::string::merge(wire_type, &mut self.kind, buf, ctx),
            _ => prost::encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }
    fn encoded_len(&self) -> usize {
        prost::encoding::string::encoded_len(1, &self.api_version) + prost::encoding::string::encoded_len(2, &self.kind)
    }
    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// `runtime.Unknown`: the protobuf envelope. Upstream writes `typeMeta`, `contentEncoding` and
/// `contentType` always and `raw` when set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unknown {
    pub type_meta: TypeMeta,
    pub raw: Option<Vec<u8>>,
    pub content_encoding: String,
    pub content_type: String,
}

impl Message for Unknown {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        prost::encoding::message::encode(1, &self.type_meta, buf);
        if let Some(raw) = &self.raw {
            prost::encoding::bytes::encode(2, raw, buf);
        }
        prost::encoding::string::encode(3, &self.content_encoding, buf);
        prost::encoding::string::encode(4, &self.content_type, buf);
    }
    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), prost::DecodeError> {
        match tag {
            1 => prost::encoding::message::merge(wire_type, &mut self.type_meta, buf, ctx),
            2 => prost::encoding::bytes::merge(wire_type, self.raw.get_or_insert_with(Vec::new), buf, ctx),
            3 => prost::encoding::string::merge(wire_type, &mut self.content_encoding, buf, ctx),
            4 => prost::encoding::string::merge(wire_type, &mut self.content_type, buf, ctx),
            _ => prost::encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }
    fn encoded_len(&self) -> usize {
        prost::encoding::message::encoded_len(1, &self.type_meta)
            + self.raw.as_ref().map_or(0, |r| prost::encoding::bytes::encoded_len(2, r))
            + prost::encoding::string::encoded_len(3, &self.content_encoding)
            + prost::encoding::string::encoded_len(4, &self.content_type)
    }
    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// Reads the protobuf envelope of a `k8s\0`-prefixed body.
pub fn decode_envelope(bytes: &[u8]) -> Result<Unknown, CodecError> {
    let body = bytes.strip_prefix(PROTOBUF_MAGIC).ok_or(CodecError::MissingMagic)?;
    Ok(Unknown::decode(body)?)
}

/// Writes the protobuf envelope: magic, then the `Unknown`.
pub fn encode_envelope(unknown: &Unknown) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + unknown.encoded_len());
    out.extend_from_slice(PROTOBUF_MAGIC);
    unknown.encode(&mut out).expect("a Vec grows as needed");
    out
}

/// The `Content-Type` of a protobuf watch stream.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// One frame of a protobuf watch stream, as upstream's watch server writes it: the stream
/// serializer is the *raw* protobuf serializer (no magic, no `runtime.Unknown`), framed by
/// `protobuf.LengthDelimitedFramer` (a 4-byte big-endian length, then the message). The message
/// is a `meta.k8s.io/v1` `WatchEvent` (`type` = 1, `object` = 2, a `RawExtension` whose `raw` = 1
/// holds the object encoded by the embedded serializer: `object` must be a whole protobuf object,
/// `k8s\0` and envelope included).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    use prost::encoding::{encode_key, encode_varint, encoded_len_varint};
    let raw_len = prost::encoding::bytes::encoded_len(1, &object.to_vec());
    let len = prost::encoding::string::encoded_len(1, &event_type.to_owned()) + 1 + encoded_len_varint(raw_len as u64) + raw_len;
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    prost::encoding::string::encode(1, &event_type.to_owned(), &mut out);
    encode_key(2, WireType::LengthDelimited, &mut out);
    encode_varint(raw_len as u64, &mut out);
    encode_key(1, WireType::LengthDelimited, &mut out);
    encode_varint(object.len() as u64, &mut out);
    out.extend_from_slice(object);
    out
}

/// Reads one [`watch_frame`] from the front of `stream`: the event type, the object's bytes and
/// the length of the frame; `None` when `stream` does not hold a whole frame yet.
pub fn read_watch_frame(stream: &[u8]) -> Result<Option<(String, Vec<u8>, usize)>, CodecError> {
    let Some(header) = stream.get(..4) else { return Ok(None) };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let Some(mut message) = stream.get(4..4 + len) else { return Ok(None) };
    let (mut event_type, mut raw) = (String::new(), Vec::new());
    let ctx = DecodeContext::default();
    while message.has_remaining() {
        let (tag, wire_type) = prost::encoding::decode_key(&mut message)?;
        match tag {
            1 => prost::encoding::string::merge(wire_type, &mut event_type, &mut message, ctx.clone())?,
            2 => {
                // The RawExtension message, read as bytes first.
                let mut extension = Vec::new();
                prost::encoding::bytes::merge(wire_type, &mut extension, &mut message, ctx.clone())?;
                let mut inner = extension.as_slice();
                while inner.has_remaining() {
                    let (tag, wire_type) = prost::encoding::decode_key(&mut inner)?;
                    match tag {
                        1 => prost::encoding::bytes::merge(wire_type, &mut raw, &mut inner, ctx.clone())?,
                        _ => prost::encoding::skip_field(wire_type, tag, &mut inner, ctx.clone())?,
                    }
                }
            }
            _ => prost::encoding::skip_field(wire_type, tag, &mut message, ctx.clone())?,
        }
    }
    Ok(Some((event_type, raw, 4 + len)))
}

/// YAML text to JSON bytes, as `sigs.k8s.io/yaml` does before decoding. Aliases are expanded
/// within a budget ([`yaml_to_value`]).
pub fn yaml_to_json(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    Ok(serde_json::to_vec(&yaml_to_value(bytes)?)?)
}

/// go-yaml's refusal of a document whose aliases expand too far (`yaml: document contains
/// excessive aliasing`), shown here as `invalid YAML: document contains excessive aliasing`.
pub const EXCESSIVE_ALIASING: &str = "document contains excessive aliasing";

/// Any document may expand its aliases to this many units (see [`yaml_to_value`]).
const YAML_EXPANSION_FLOOR: u64 = 1 << 20;
/// ... or to this many units per byte of the document ...
const YAML_EXPANSION_PER_BYTE: u64 = 4;
/// ... but aliases take no document past this many units.
const YAML_EXPANSION_CAP: u64 = 4 << 20;

/// The most units a document of `len` bytes may expand to: what a document of that length could
/// cost without aliases (`3 * len + 1`, [`yaml_to_value`]), or `4 * len` units within
/// `[1 Mi, 4 Mi]`, whichever is more.
fn yaml_expansion_budget(len: usize) -> u64 {
    let len = len as u64;
    (3 * len + 1).max((YAML_EXPANSION_PER_BYTE * len).clamp(YAML_EXPANSION_FLOOR, YAML_EXPANSION_CAP))
}

/// A YAML document as JSON, as `serde_yaml_ng::from_slice::<serde_json::Value>` reads it (same
/// values, key order, numbers and errors), with alias expansion bounded.
///
/// `serde_yaml_ng` replays an anchored node at each alias, so a short document can stand for a
/// huge one (a 100 kB string referenced 20,000 times, or "billion laughs": nine levels of lists
/// of ten aliases to the level below). The value is built here by a visitor that counts what it
/// builds, in units: one per node (scalar, list, map, key) plus one per byte of each scalar and
/// key. A document without aliases costs at most `3 * len + 1` units: every node but an empty
/// document's stands for at least one byte of YAML and its text for no more than its source
/// (escapes such as `\L` aside, at most 3 bytes for 2), so such a document is never refused. Once
/// the count passes [`yaml_expansion_budget`] the conversion stops, before the next scalar is
/// copied, with go-yaml's [`EXCESSIVE_ALIASING`] error (as also for `serde_yaml_ng`'s own
/// "repetition limit exceeded", which counts alias jumps).
///
/// So a document of `len` bytes builds at most `max(3 * len + 1, min(max(1 Mi, 4 * len), 4 Mi))`
/// units: for a request body (at most 3 MiB) at most 9 Mi + 1 units, i.e. at most about 9 MiB of
/// text or 9 Mi `serde_json::Value` nodes (some 32 to 100 bytes each), what a 3 MiB document
/// without aliases can already cost. (go-yaml bounds the share of nodes decoded through aliases
/// instead, `allowedAliasRatio`; its Go strings are shared, not copied, per alias, so it counts
/// no bytes.)
fn yaml_to_value(bytes: &[u8]) -> Result<serde_json::Value, CodecError> {
    yaml_to_value_within(bytes, yaml_expansion_budget(bytes.len()))
}

fn yaml_to_value_within(bytes: &[u8], budget: u64) -> Result<serde_json::Value, CodecError> {
    use serde::de::DeserializeSeed;
    let budget = YamlBudget { left: std::cell::Cell::new(budget), exceeded: std::cell::Cell::new(false) };
    YamlValue(&budget).deserialize(serde_yaml_ng::Deserializer::from_slice(bytes)).map_err(|err| {
        if budget.exceeded.get() || err.to_string() == "repetition limit exceeded" {
            CodecError::Yaml(serde::de::Error::custom(EXCESSIVE_ALIASING))
        } else {
            CodecError::Yaml(err)
        }
    })
}

/// What is left of a conversion's units ([`yaml_to_value`]).
struct YamlBudget {
    left: std::cell::Cell<u64>,
    exceeded: std::cell::Cell<bool>,
}

impl YamlBudget {
    /// Spends a node and `bytes` bytes of text, or fails once the budget is gone.
    fn spend<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(1 + bytes as u64) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.exceeded.set(true);
                Err(E::custom(EXCESSIVE_ALIASING))
            }
        }
    }
}

/// Builds a `serde_json::Value` exactly as its own `Deserialize` impl does (serde_json's
/// `ValueVisitor`, with this workspace's `raw_value` feature), spending [`YamlBudget`] units.
#[derive(Clone, Copy)]
struct YamlValue<'b>(&'b YamlBudget);

impl<'de> serde::de::DeserializeSeed<'de> for YamlValue<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for YamlValue<'_> {
    type Value = serde_json::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Value::Bool(value))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Value::Number(value.into()))
    }

    fn visit_i128<E: serde::de::Error>(self, value: i128) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        serde_json::Number::deserialize(serde::de::value::I128Deserializer::<E>::new(value)).map(serde_json::Value::Number)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Value::Number(value.into()))
    }

    fn visit_u128<E: serde::de::Error>(self, value: u128) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        serde_json::Number::deserialize(serde::de::value::U128Deserializer::<E>::new(value)).map(serde_json::Value::Number)
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, serde_json::Value::Number))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        self.0.spend(value.len())?;
        Ok(serde_json::Value::String(value.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
        self.0.spend(value.len())?;
        Ok(serde_json::Value::String(value))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, deserializer)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.spend(0)?;
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.0.spend(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.0.spend(0)?;
        match map.next_key_seed(YamlKey { budget: self.0, first: true })? {
            None => Ok(serde_json::Value::Object(serde_json::Map::new())),
            // serde_json's `KeyClassifier`: a first key naming its raw value token makes the
            // value a JSON text to parse.
            Some(first) if first == crate::raw::RAW_VALUE_TOKEN => {
                let raw = map.next_value_seed(YamlRawValue(self.0))?;
                serde_json::from_str(&raw).map_err(serde::de::Error::custom)
            }
            Some(first) => {
                let mut values = serde_json::Map::new();
                values.insert(first, map.next_value_seed(self)?);
                while let Some(key) = map.next_key_seed(YamlKey { budget: self.0, first: false })? {
                    values.insert(key, map.next_value_seed(self)?);
                }
                Ok(serde_json::Value::Object(values))
            }
        }
    }
}

/// A map key, as `serde_json` reads one: the first through its `KeyClassifier` ("a string key"),
/// the others as `String`s ("a string").
struct YamlKey<'b> {
    budget: &'b YamlBudget,
    first: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for YamlKey<'_> {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for YamlKey<'_> {
    type Value = String;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str(if self.first { "a string key" } else { "a string" })
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        self.budget.spend(value.len())?;
        Ok(value.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
        self.budget.spend(value.len())?;
        Ok(value)
    }
}

/// The JSON text of a raw value (serde_json's `BoxedFromString`).
struct YamlRawValue<'b>(&'b YamlBudget);

impl<'de> serde::de::DeserializeSeed<'de> for YamlRawValue<'_> {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for YamlRawValue<'_> {
    type Value = String;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("raw value")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        self.0.spend(value.len())?;
        Ok(value.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
        self.0.spend(value.len())?;
        Ok(value)
    }
}

/// JSON bytes to YAML text, with keys sorted as upstream's output has them.
pub fn json_to_yaml(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)?;
    Ok(serde_yaml_ng::to_string(&value)?.into_bytes())
}

/// `apiVersion` and `kind` of a body in any format, without decoding the rest; `default` stands
/// in when the body has none (the caller knows the kind, as for a watch event).
pub fn peek_type_meta(format: Format, bytes: &[u8], default: Option<&TypeMeta>) -> Result<TypeMeta, CodecError> {
    let mut tm = match format {
        Format::Json => serde_json::from_slice::<TypeMeta>(bytes)?,
        Format::Yaml => serde_json::from_slice::<TypeMeta>(&yaml_to_json(bytes)?)?,
        Format::Protobuf => decode_envelope(bytes)?.type_meta,
    };
    if let Some(d) = default
        && tm.api_version.is_empty()
        && tm.kind.is_empty()
    {
        tm = d.clone();
    }
    if tm.api_version.is_empty() {
        return Err(CodecError::MissingTypeMeta("apiVersion"));
    }
    if tm.kind.is_empty() {
        return Err(CodecError::MissingTypeMeta("kind"));
    }
    Ok(tm)
}

/// Decodes an object of a known type. Protobuf sets `apiVersion`/`kind` from the envelope, as
/// upstream's decoder sets the object's GroupVersionKind.
pub fn decode<T: Object>(format: Format, bytes: &[u8]) -> Result<T, CodecError> {
    match format {
        Format::Json => Ok(serde_json::from_slice(bytes)?),
        Format::Yaml => Ok(serde_json::from_slice(&yaml_to_json(bytes)?)?),
        Format::Protobuf => {
            let envelope = decode_envelope(bytes)?;
            let mut obj = T::decode(envelope.raw.as_deref().unwrap_or_default())?;
            // Types without TypeMeta (e.g. WatchEvent) travel with an empty one.
            let tm = &envelope.type_meta;
            if !tm.api_version.is_empty() || !tm.kind.is_empty() {
                obj.set_type_meta(&tm.api_version, &tm.kind);
            }
            Ok(obj)
        }
    }
}

/// Encodes an object. The protobuf envelope carries the object's `apiVersion`/`kind`, empty when
/// it has none (as upstream writes types without TypeMeta, e.g. WatchEvent).
pub fn encode<T: Object>(format: Format, obj: &T) -> Result<Vec<u8>, CodecError> {
    match format {
        Format::Json => Ok(crate::write::to_vec(obj)?),
        Format::Yaml => json_to_yaml(&crate::write::to_vec(obj)?),
        Format::Protobuf => {
            let (api_version, kind) = obj.type_meta();
            let type_meta = TypeMeta { api_version: api_version.unwrap_or_default().to_owned(), kind: kind.unwrap_or_default().to_owned() };
            Ok(encode_envelope(&Unknown {
                type_meta,
                raw: Some(obj.encode_to_vec()),
                content_encoding: String::new(),
                content_type: String::new(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let cases = [
            ("application/json", Some(Format::Json)),
            ("application/json;charset=utf-8", Some(Format::Json)),
            ("application/yaml", Some(Format::Yaml)),
            ("application/vnd.kubernetes.protobuf", Some(Format::Protobuf)),
            ("application/vnd.kubernetes.protobuf;stream=watch", Some(Format::Protobuf)),
            ("text/html", None),
        ];
        for (ct, want) in cases {
            assert_eq!(Format::from_content_type(ct), want, "{ct}");
        }
    }

    #[test]
    fn detects_formats() {
        assert_eq!(Format::detect(b"k8s\0\x0a\x00"), Format::Protobuf);
        assert_eq!(Format::detect(b"  {\"a\":1}"), Format::Json);
        assert_eq!(Format::detect(b"apiVersion: v1\n"), Format::Yaml);
    }

    #[test]
    fn envelope_round_trip_matches_upstream_layout() {
        let u = Unknown {
            type_meta: TypeMeta { api_version: "v1".into(), kind: "Pod".into() },
            raw: Some(vec![0x0a, 0x00]),
            content_encoding: String::new(),
            content_type: String::new(),
        };
        let bytes = encode_envelope(&u);
        // magic, typeMeta{apiVersion "v1", kind "Pod"}, raw, and the two empty strings.
        assert_eq!(bytes, b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x02\x0a\x00\x1a\x00\x22\x00".to_vec());
        assert_eq!(decode_envelope(&bytes).unwrap(), u);
        assert!(matches!(decode_envelope(b"nope"), Err(CodecError::MissingMagic)));
        assert!(decode_envelope(b"k8s\0\x0a\xff").is_err());
    }

    #[test]
    fn watch_frames_are_length_prefixed_raw_watch_events() {
        let object = b"k8s\0\x0a\x00";
        let frame = watch_frame("ADDED", object);
        // length, type "ADDED", object { raw = the enveloped object }.
        let mut want = vec![0, 0, 0, 17, 0x0a, 5];
        want.extend_from_slice(b"ADDED");
        want.extend_from_slice(&[0x12, 8, 0x0a, 6]);
        want.extend_from_slice(object);
        assert_eq!(frame, want);
        let mut two = frame.clone();
        two.extend_from_slice(&watch_frame("BOOKMARK", b"x"));
        let (t, raw, used) = read_watch_frame(&two).unwrap().unwrap();
        assert_eq!((t.as_str(), raw.as_slice(), used), ("ADDED", &object[..], frame.len()));
        let (t, raw, _) = read_watch_frame(&two[used..]).unwrap().unwrap();
        assert_eq!((t.as_str(), raw.as_slice()), ("BOOKMARK", &b"x"[..]));
        assert!(read_watch_frame(&frame[..frame.len() - 1]).unwrap().is_none());
    }

    /// The conversion as it was before its budget: `serde_yaml_ng` straight into a `Value`.
    fn unbounded_yaml_to_json(bytes: &[u8]) -> Result<Vec<u8>, String> {
        let value: serde_json::Value = serde_yaml_ng::from_slice(bytes).map_err(|e| CodecError::from(e).to_string())?;
        Ok(serde_json::to_vec(&value).unwrap())
    }

    fn excessive_aliasing(bytes: &[u8]) -> bool {
        matches!(yaml_to_json(bytes), Err(err) if err.to_string() == "invalid YAML: document contains excessive aliasing")
    }

    #[test]
    fn yaml_converts_as_serde_yaml_ng_does() {
        let documents = [
            "",
            "~",
            "a: 1\na: 2",
            "1: a\ntrue: b\nnull: c\n~: d\n1.5: e",
            "? [a]\n: 1",
            "a: 1\n? [a]\n: 1",
            "a: 1\n? {b: 1}\n: 1",
            "a: !foo 1",
            "a: !!str 1",
            "a: !!binary aGVsbG8=",
            "<<: {a: 1}\nb: 2",
            "a: .nan\nb: .inf\nc: 0x1F\nd: 1e3\nf: -99999999999999999999\ng: 0o17\nh: +5\ni: 1_000\nj: -.inf",
            "e: 99999999999999999999999",
            "a: 340282366920938463463374607431768211456",
            "a: -170141183460469231731687303715884105729",
            "a: 18446744073709551616",
            "a: -9223372036854775809",
            "a: &x [*x]",
            "---\na: 1\n---\nb: 2",
            "a: *nope",
            "a: yes\nb: on\nc: True\nd: FALSE\ne: Null",
            "[1, 2]\n",
            "'x'",
            "!!null ''",
            "a: [1, {b: c}, [d, e], \"f\\u00e9\\L\", 'g''h']",
            "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
            "a: &a {b: 1, c: [2, 3]}\nd: *a\ne: [*a, *a]\n",
            "$serde_json::private::RawValue: '[1, {\"a\": 2}]'",
            "$serde_json::private::RawValue: '[1,'",
            "$serde_json::private::RawValue: [1]",
            "a: 1\n$serde_json::private::RawValue: '[1]'",
            "{a, b: , : c}",
            "[a: b, : , c]",
            "- - - x\n  - y\n-\n- ? z\n",
            "a:\n  - b\n  -   c: d\n      e: f\n",
            "key: value\n  bad indent: x\n",
            "a: \"unterminated",
            "\t- tab",
            "a: b: c",
            "%YAML 1.2\n---\na: 1\n",
            "a: !!int 3\nb: !!float 3\nc: !!bool true",
            "a: !!int x",
            "? |\n  block key\n: v",
            "a: 2001-12-14t21:59:43.10-05:00",
        ];
        for document in documents {
            let want = unbounded_yaml_to_json(document.as_bytes());
            let got = yaml_to_json(document.as_bytes()).map_err(|e| e.to_string());
            assert_eq!(got, want, "{document:?}");
        }
        let deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert_eq!(yaml_to_json(deep.as_bytes()).map_err(|e| e.to_string()), unbounded_yaml_to_json(deep.as_bytes()));
        let too_deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            yaml_to_json(too_deep.as_bytes()).unwrap_err().to_string(),
            "invalid YAML: recursion limit exceeded at line 1 column 129"
        );
    }

    #[test]
    fn yaml_with_a_few_anchors_converts() {
        let document = "defaults: &defaults\n  image: nginx\n  ports: [80, 443]\ncontainers:\n- name: a\n  <<: *defaults\n- name: b\n  spec: *defaults\n- *defaults\n";
        let json: serde_json::Value = serde_json::from_slice(&yaml_to_json(document.as_bytes()).unwrap()).unwrap();
        assert_eq!(json["containers"][1]["spec"]["ports"], serde_json::json!([80, 443]));
        assert_eq!(json["containers"][2]["image"], "nginx");
        // Many aliases to small nodes in a small document: within the floor of 1 Mi units.
        let mut document = String::from("base: &b {name: x, value: y}\nitems:\n");
        for _ in 0..20_000 {
            document.push_str("- *b\n");
        }
        assert_eq!(yaml_to_json(document.as_bytes()).unwrap(), unbounded_yaml_to_json(document.as_bytes()).unwrap());
    }

    #[test]
    fn yaml_documents_without_aliases_cost_at_most_three_units_a_byte() {
        // The densest shapes: nodes of one or two bytes, text longer than its escapes.
        let nulls = "- \n".repeat(1 << 16);
        let empty_pairs = format!("[{}]", "{? },".repeat(1 << 16));
        let single_pairs = format!("[{}]", "a: ,".repeat(1 << 16));
        let empty_keys = "- ? \n".repeat(1 << 16);
        let flow_keys = format!("{{{}}}", (0..1 << 16).map(|i| format!("k{i},")).collect::<String>());
        let nested = "- ".repeat(120) + "x\n";
        let line_separators = format!("a: \"{}\"\n", "\\L".repeat(1 << 16));
        for document in [nulls, empty_pairs, single_pairs, empty_keys, flow_keys, nested, line_separators] {
            let bytes = document.as_bytes();
            let tight = yaml_to_value_within(bytes, 3 * bytes.len() as u64 + 1).map_err(|e| e.to_string());
            assert!(tight.is_ok(), "{:?}...: {tight:?}", &document[..40.min(document.len())]);
            assert_eq!(serde_json::to_vec(&tight.unwrap()).unwrap(), unbounded_yaml_to_json(bytes).unwrap());
        }
        // A large document (a request body's 3 MiB, past the 4 Mi units aliases may reach)
        // converts whole.
        let mut document = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n");
        let mut key = 0;
        while document.len() < (3 << 20) - 64 {
            document.push_str(&format!("  key-{key}: {key} {}\n", "v".repeat(100)));
            key += 1;
        }
        let json: serde_json::Value = serde_json::from_slice(&yaml_to_json(document.as_bytes()).unwrap()).unwrap();
        assert_eq!(json["data"].as_object().unwrap().len(), key);
    }

    #[test]
    fn yaml_alias_expansion_is_bounded() {
        // A 100 kB string referenced 20,000 times: 2 GB expanded, from a 200 kB document.
        let mut document = format!("a: &a {}\nb:\n", "x".repeat(100_000));
        for _ in 0..20_000 {
            document.push_str("- *a\n");
        }
        assert!(excessive_aliasing(document.as_bytes()));
        // Billion laughs: nine levels of ten aliases to the level below.
        let mut document = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..=9 {
            let aliases = vec![format!("*l{}", level - 1); 10].join(", ");
            document.push_str(&format!("l{level}: &l{level} [{aliases}]\n"));
        }
        assert!(excessive_aliasing(document.as_bytes()));
        // Fewer levels of longer strings: stopped by the budget, not by serde_yaml_ng's count
        // of alias jumps.
        let mut document = format!("l0: &l0 [{}]\n", vec!["x".repeat(1000); 10].join(", "));
        for level in 1..=4 {
            let aliases = vec![format!("*l{}", level - 1); 10].join(", ");
            document.push_str(&format!("l{level}: &l{level} [{aliases}]\n"));
        }
        assert!(excessive_aliasing(document.as_bytes()));
        // Also when the conversion is part of decoding.
        assert!(matches!(
            peek_type_meta(Format::Yaml, document.as_bytes(), None),
            Err(CodecError::Yaml(err)) if err.to_string() == EXCESSIVE_ALIASING
        ));
    }

    #[test]
    fn yaml_expansion_budgets() {
        assert_eq!(yaml_expansion_budget(0), 1 << 20);
        assert_eq!(yaml_expansion_budget(1000), 1 << 20);
        assert_eq!(yaml_expansion_budget(512 << 10), 2 << 20);
        assert_eq!(yaml_expansion_budget(1 << 20), 4 << 20);
        assert_eq!(yaml_expansion_budget(3 << 20), (9 << 20) + 1);
    }

    #[test]
    fn peeks_type_meta() {
        let tm = peek_type_meta(Format::Yaml, b"apiVersion: apps/v1\nkind: Deployment\n", None).unwrap();
        assert_eq!(tm.group_version(), ("apps", "v1"));
        assert!(matches!(peek_type_meta(Format::Json, b"{\"kind\":\"Pod\"}", None), Err(CodecError::MissingTypeMeta(_))));
        assert!(peek_type_meta(Format::Json, b"{not json", None).is_err());
        let hint = TypeMeta { api_version: "v1".into(), kind: "WatchEvent".into() };
        assert_eq!(peek_type_meta(Format::Json, b"{\"type\":\"ADDED\"}", Some(&hint)).unwrap(), hint);
    }
}
