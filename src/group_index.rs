//! A table of the generated scheme keyed by group and a name within it (a resource, a kind, a
//! version), for what is looked up on every request: the generated tables are slices, and a
//! scan of one compares hundreds of strings. I/O-free; built once from the tables.

/// The first entry of a key wins, as a scan of the table it indexes finds it. Hashed with
/// FxHash: built from the generated tables, a client's strings are only looked up in it.
pub struct GroupIndex<V>(rustc_hash::FxHashMap<&'static str, rustc_hash::FxHashMap<&'static str, V>>);

impl<V> GroupIndex<V> {
    pub fn get(&self, group: &str, name: &str) -> Option<&V> {
        self.0.get(group).and_then(|names| names.get(name))
    }
}

impl<V> FromIterator<(&'static str, &'static str, V)> for GroupIndex<V> {
    fn from_iter<I: IntoIterator<Item = (&'static str, &'static str, V)>>(entries: I) -> Self {
        let mut index = rustc_hash::FxHashMap::<_, rustc_hash::FxHashMap<_, _>>::default();
        for (group, name, value) in entries {
            index.entry(group).or_default().entry(name).or_insert(value);
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
}
