//! Protobuf helpers with upstream's (gogo-protobuf) encoding rules, for the generated
//! `prost::Message` impls.
//!
//! prost's own map encoder skips a key or value equal to its default; upstream's generated
//! marshallers always write both, so `labels: {a: ""}` must encode as `0a 01 61 12 00`. Everything
//! else upstream does (fields in tag order, proto2 repeated scalars unpacked) prost's per-type
//! functions already do, and the generated code calls them directly.

use std::collections::BTreeMap;

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, encode_key, encode_varint, encoded_len_varint, key_len};

/// Encodes a map field as upstream does: one entry message per key, in key order, each with its
/// key (tag 1) and value (tag 2) always present.
pub fn encode_map<K, V, B: BufMut>(
    tag: u32,
    map: &BTreeMap<K, V>,
    buf: &mut B,
    key_encode: impl Fn(u32, &K, &mut B),
    key_len: impl Fn(u32, &K) -> usize,
    val_encode: impl Fn(u32, &V, &mut B),
    val_len: impl Fn(u32, &V) -> usize,
) {
    for (k, v) in map {
        let len = key_len(1, k) + val_len(2, v);
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        key_encode(1, k, buf);
        val_encode(2, v, buf);
    }
}

/// The encoded length of a map field written by [`encode_map`].
pub fn encoded_len_map<K, V>(
    tag: u32,
    map: &BTreeMap<K, V>,
    key_len_fn: impl Fn(u32, &K) -> usize,
    val_len_fn: impl Fn(u32, &V) -> usize,
) -> usize {
    map.iter()
        .map(|(k, v)| {
            let len = key_len_fn(1, k) + val_len_fn(2, v);
            key_len(tag) + encoded_len_varint(len as u64) + len
        })
        .sum()
}

/// Decodes one map entry into `map`; a missing key or value takes its default, as upstream.
pub fn merge_map<K: Default + Ord + std::hash::Hash, V: Default, B: Buf>(
    map: &mut BTreeMap<K, V>,
    buf: &mut B,
    ctx: DecodeContext,
    key_merge: impl Fn(WireType, &mut K, &mut B, DecodeContext) -> Result<(), DecodeError>,
    val_merge: impl Fn(WireType, &mut V, &mut B, DecodeContext) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    prost::encoding::btree_map::merge(key_merge, val_merge, map, buf, ctx)
}
