//! Decoding and encoding objects of any registered kind, picked at run time from the body's
//! `apiVersion`/`kind` (or protobuf envelope): what `kapi decode`/`kapi encode` do, and what
//! the REST handlers will do with request bodies.

use kapi_apimachinery::codec::{self, CodecError, Format, TypeMeta};

/// Reads `bytes` in `from` (detected when `None`) and writes the same object in `to`. `kind`
/// names the kind when the body carries no `apiVersion`/`kind` (e.g. a watch event).
pub fn convert(bytes: &[u8], from: Option<Format>, to: Format, kind: Option<&TypeMeta>) -> Result<Vec<u8>, CodecError> {
    let from = from.unwrap_or_else(|| Format::detect(bytes));
    let tm = codec::peek_type_meta(from, bytes, kind)?;
    let (group, version) = tm.group_version();
    let kind = kapi_api::scheme::dyn_kind(group, version, &tm.kind)
        .ok_or_else(|| CodecError::UnknownKind { api_version: tm.api_version.clone(), kind: tm.kind.clone() })?;
    kind.decode(from, bytes)?.encode(to)
}

/// JSON bytes indented for people (two spaces, as kubectl prints).
pub fn pretty_json(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)?;
    let mut out = serde_json::to_vec_pretty(&value)?;
    out.push(b'\n');
    Ok(out)
}
