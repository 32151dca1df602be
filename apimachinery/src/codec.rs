//! The three wire forms of an object, as kube-apiserver reads and writes them.
//!
//! - JSON: serde over the generated types.
//! - YAML: converted to JSON first and decoded as JSON, and encoded as JSON then converted, as
//!   upstream's `sigs.k8s.io/yaml` does (so keys come out sorted, as upstream's do).
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
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
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
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
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

/// YAML text to JSON bytes, as `sigs.k8s.io/yaml` does before decoding.
pub fn yaml_to_json(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    let value: serde_json::Value = serde_yaml_ng::from_slice(bytes)?;
    Ok(serde_json::to_vec(&value)?)
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
        Format::Json => Ok(serde_json::to_vec(obj)?),
        Format::Yaml => json_to_yaml(&serde_json::to_vec(obj)?),
        Format::Protobuf => {
            let (api_version, kind) = obj.type_meta();
            let type_meta = TypeMeta {
                api_version: api_version.unwrap_or_default().to_owned(),
                kind: kind.unwrap_or_default().to_owned(),
            };
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
        assert_eq!(
            bytes,
            b"k8s\0\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x02\x0a\x00\x1a\x00\x22\x00".to_vec()
        );
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
