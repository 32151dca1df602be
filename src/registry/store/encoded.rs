//! The encoded answers of recent reads of stored objects, as upstream's watch cache keeps an
//! object's serializations (`cachingObject`): a GET of an object that did not change since the
//! last GET in the same version and wire form answers the same bytes without decoding,
//! converting and encoding the object again. An entry is found by key, revision, version and
//! form, and used only when the stored bytes it was made from are the ones read now (another
//! store in the same process may have the same key and revision). Bounded by bytes; objects
//! larger than [`MAX_OBJECT_BYTES`] are not kept.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use kapi_apimachinery::codec::Format;

use crate::storage::{KeyValue, Revision};

/// The most bytes (stored and encoded) the cache holds.
const MAX_BYTES: usize = 32 << 20;
/// The largest encoded object kept.
const MAX_OBJECT_BYTES: usize = 256 << 10;

/// An answer's identity: key, revision, `apiVersion` and wire form.
type Id = (String, Revision, String, &'static str);

#[derive(Default)]
struct Entries {
    /// The stored bytes an answer was made from, and the answer.
    map: BTreeMap<Id, (Bytes, Bytes)>,
    /// Oldest first.
    order: VecDeque<Id>,
    bytes: usize,
}

static ENCODED: Mutex<Option<Entries>> = Mutex::new(None);

/// The answer for `kv` read as `api_version` in `format`: kept from an earlier read, or made by
/// `encode` (and kept).
pub fn encoded<E>(kv: &KeyValue, api_version: &str, format: Format, encode: impl FnOnce() -> Result<Vec<u8>, E>) -> Result<Bytes, E> {
    let id: Id = (kv.key.clone(), kv.mod_revision, api_version.to_owned(), format.content_type());
    {
        let entries = ENCODED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((stored, answer)) = entries.as_ref().and_then(|e| e.map.get(&id))
            && *stored == kv.value
        {
            return Ok(answer.clone());
        }
    }
    let answer = Bytes::from(encode()?);
    // A dry run's object was never written (revision 0): its bytes are not the store's.
    if kv.mod_revision > 0 && answer.len() <= MAX_OBJECT_BYTES {
        let mut entries = ENCODED.lock().unwrap_or_else(PoisonError::into_inner);
        let entries = entries.get_or_insert_with(Entries::default);
        let size = kv.value.len() + answer.len();
        if let Some((stored, old)) = entries.map.insert(id.clone(), (kv.value.clone(), answer.clone())) {
            entries.bytes -= stored.len() + old.len();
        } else {
            entries.order.push_back(id);
        }
        entries.bytes += size;
        while entries.bytes > MAX_BYTES {
            let Some(oldest) = entries.order.pop_front() else { break };
            if let Some((stored, old)) = entries.map.remove(&oldest) {
                entries.bytes -= stored.len() + old.len();
            }
        }
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(value: &'static [u8], revision: Revision) -> KeyValue {
        KeyValue {
            key: "/registry/configmaps/ns/encoded-test".into(),
            value: Bytes::from_static(value),
            create_revision: 1,
            mod_revision: revision,
        }
    }

    #[test]
    fn answers_are_made_once_per_stored_bytes_version_and_form() {
        let made = std::cell::Cell::new(0);
        let encode = |text: &str| {
            made.set(made.get() + 1);
            Ok::<_, ()>(text.as_bytes().to_vec())
        };
        assert_eq!(encoded(&kv(b"a", 2), "v1", Format::Json, || encode("A")).unwrap(), "A");
        assert_eq!(encoded(&kv(b"a", 2), "v1", Format::Json, || encode("other")).unwrap(), "A");
        assert_eq!(made.get(), 1);
        // Another form, version, revision or stored bytes: made anew.
        assert_eq!(encoded(&kv(b"a", 2), "v1", Format::Yaml, || encode("Y")).unwrap(), "Y");
        assert_eq!(encoded(&kv(b"a", 2), "v2", Format::Json, || encode("B")).unwrap(), "B");
        assert_eq!(encoded(&kv(b"a", 3), "v1", Format::Json, || encode("C")).unwrap(), "C");
        assert_eq!(encoded(&kv(b"b", 2), "v1", Format::Json, || encode("D")).unwrap(), "D");
        assert_eq!(made.get(), 5);
        // A dry run's object (revision 0) is never kept.
        assert_eq!(encoded(&kv(b"a", 0), "v1", Format::Json, || encode("E")).unwrap(), "E");
        assert_eq!(encoded(&kv(b"a", 0), "v1", Format::Json, || encode("F")).unwrap(), "F");
    }
}
