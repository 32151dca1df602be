//! A table of the generated scheme keyed by group and a name within it (a resource, a kind, a
//! version), for what is looked up on every request: the generated tables are slices, and a
//! scan of one compares hundreds of strings. I/O-free; built once from the tables.
//!
//! Also how names are compared where it is done per request or per watch event
//! ([`same_name`], [`Name`]): the core group is the empty name, and `==` on two empty strings
//! is slow.

use std::hash::{Hash, Hasher};

/// Whether two names (groups, versions, resources, kinds) are equal: `==`, but ~2 ns instead
/// of ~80 when both are empty.
///
/// Rust compares two byte strings of the same length with `memcmp` even when the length is 0;
/// an empty `&str` or `String` points at the dangling address 1; and glibc's AVX-512 `memcmp`
/// reads both pointers with a masked load, whose suppressed fault on that address costs a
/// microcode assist (measured on the project's AMD EPYC machines: 77–95 ns per comparison of
/// two empty strings, or a map lookup of one). The core group is empty, so every lookup of a
/// core resource by group, and every watcher of one on every event, paid it.
#[inline]
pub fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// A name in a map's key, compared with [`same_name`] (ordered and hashed as the string).
#[derive(Clone, Copy, Debug, PartialOrd, Ord)]
pub struct Name<'a>(pub &'a str);

impl PartialEq for Name<'_> {
    fn eq(&self, other: &Self) -> bool {
        same_name(self.0, other.0)
    }
}

impl Eq for Name<'_> {}

impl Hash for Name<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

/// The first entry of a key wins, as a scan of the table it indexes finds it. Hashed with
/// FxHash: built from the generated tables, a client's strings are only looked up in it.
pub struct GroupIndex<V>(rustc_hash::FxHashMap<Name<'static>, rustc_hash::FxHashMap<&'static str, V>>);

impl<V> GroupIndex<V> {
    /// The entry of `name` in `group`. (The answer borrows `group` too: the map's keys are
    /// looked at as names of its lifetime, which the map's covariance allows.)
    pub fn get<'a>(&'a self, group: &'a str, name: &str) -> Option<&'a V> {
        let groups: &'a rustc_hash::FxHashMap<Name<'a>, _> = &self.0;
        groups.get(&Name(group)).and_then(|names| names.get(name))
    }
}

impl<V> FromIterator<(&'static str, &'static str, V)> for GroupIndex<V> {
    fn from_iter<I: IntoIterator<Item = (&'static str, &'static str, V)>>(entries: I) -> Self {
        let mut index = rustc_hash::FxHashMap::<_, rustc_hash::FxHashMap<_, _>>::default();
        for (group, name, value) in entries {
            index.entry(Name(group)).or_default().entry(name).or_insert(value);
        }
        GroupIndex(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index keeps the first entry of a key, as the scan it replaces found it.
    #[test]
    fn group_index_finds_the_first_entry_of_a_key() {
        let index: GroupIndex<u8> = [("", "a", 1), ("g", "b", 2), ("", "a", 3)].into_iter().collect();
        assert_eq!(index.get("", "a"), Some(&1));
        assert_eq!(index.get("g", "b"), Some(&2));
        assert_eq!(index.get("g", "a"), None);
        assert_eq!(index.get("h", "c"), None);
    }

    #[test]
    fn names_compare_as_strings() {
        let names = ["", "v1", "v2", "apps", "", "apps"].map(String::from);
        for a in &names {
            for b in &names {
                assert_eq!(same_name(a, b), a == b, "{a:?} and {b:?}");
                assert_eq!(Name(a) == Name(b), a == b, "{a:?} and {b:?}");
                assert_eq!(Name(a).cmp(&Name(b)), a.cmp(b), "{a:?} and {b:?}");
            }
        }
    }
}
