//! Reading the generated structs from JSON: the one map visitor they share.
//!
//! The generator writes, for each struct, the lookup of a JSON key among its fields and the
//! reading of each field ([`ReadFields`]); the loop over the object's keys and the skipping of
//! unknown keys are here. serde's derive would write all of it again for every struct, with a
//! visitor of the struct as a JSON array beside it, and that made up most of the generated
//! crate's build time. The reading is Go's `encoding/json`'s: unknown keys are skipped, a key
//! given twice keeps its last value (serde's derive refused it; Go reads a repeated object into
//! the first one's fields, which is not done here), and a JSON array is not read as a struct
//! (serde's derive read it by position). Type errors are serde's (`expected struct X`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, Visitor};

/// A generated struct's fields, as its `Deserialize` reads them.
pub trait ReadFields: Default {
    /// What the struct is, in errors: `struct PodSpec`.
    const EXPECTING: &'static str;

    /// The number of the field a JSON key names, if it names one.
    fn field_index(key: &str) -> Option<usize>;

    /// Reads the value of field `index` from `map` into `self`.
    fn read_field<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error>;
}

/// Reads a struct from a JSON object: what a generated `Deserialize` impl calls.
pub fn read_struct<'de, T: ReadFields, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(StructVisitor(PhantomData))
}

struct StructVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: ReadFields> Visitor<'de> for StructVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut object = T::default();
        while let Some(index) = map.next_key_seed(FieldKey(T::field_index))? {
            match index {
                // A repeated key's value replaces the first one's (see the module's note).
                Some(index) => object.read_field(index, &mut map)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(object)
    }
}

/// A JSON key, looked up among a struct's fields without being copied.
struct FieldKey(fn(&str) -> Option<usize>);

impl<'de> DeserializeSeed<'de> for FieldKey {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for FieldKey {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok((self.0)(key))
    }

    fn visit_bytes<E: Error>(self, key: &[u8]) -> Result<Option<usize>, E> {
        Ok(std::str::from_utf8(key).ok().and_then(self.0))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    /// A struct read the generated way, and its twin read by serde's derive.
    #[derive(Debug, Default, PartialEq)]
    struct Read {
        name: String,
        count: Option<i32>,
    }

    impl ReadFields for Read {
        const EXPECTING: &'static str = "struct Sample";

        fn field_index(key: &str) -> Option<usize> {
            match key {
                "name" => Some(0),
                "count" => Some(1),
                _ => None,
            }
        }

        fn read_field<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
            match index {
                0 => self.name = map.next_value::<crate::serde_null::NullAsDefault<String>>()?.0,
                _ => self.count = map.next_value()?,
            }
            Ok(())
        }
    }

    impl<'de> Deserialize<'de> for Read {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            read_struct(deserializer)
        }
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Sample {
        #[serde(default, deserialize_with = "crate::serde_null::null_as_default")]
        name: String,
        #[serde(default)]
        count: Option<i32>,
    }

    /// What a reader made of a document: the fields, or the error's text.
    type Outcome = Result<(String, Option<i32>), String>;

    fn both(json: &str) -> (Outcome, Outcome) {
        let read = serde_json::from_str::<Read>(json).map(|r| (r.name, r.count)).map_err(|e| e.to_string());
        let derived = serde_json::from_str::<Sample>(json).map(|d| (d.name, d.count)).map_err(|e| e.to_string());
        (read, derived)
    }

    #[test]
    fn reads_as_serde_derive_reads() {
        for json in [
            r#"{"name": "a", "count": 2}"#,
            r#"{"count": 2, "unknown": {"deep": [1, 2]}, "name": null}"#,
            r#"{}"#,
            r#"{"count": "x"}"#,
            r#""text""#,
            r#"null"#,
            r#"{"na\u006de": "\u0061", "count": 3}"#,
        ] {
            let (read, derived) = both(json);
            assert_eq!(read, derived, "{json}");
        }
    }

    /// Go's `encoding/json` keeps the last value of a repeated key; serde's derive refused it.
    #[test]
    fn keeps_the_last_value_of_a_repeated_key() {
        let (read, derived) = both(r#"{"name": "a", "count": 1, "name": "b"}"#);
        assert_eq!(read.unwrap(), ("b".to_owned(), Some(1)));
        assert_eq!(derived.unwrap_err(), "duplicate field `name` at line 1 column 32");
    }

    /// Go's `encoding/json` does not read an array as a struct; serde's derive did, by position.
    #[test]
    fn refuses_an_array() {
        let (read, derived) = both(r#"["a", 2]"#);
        assert_eq!(read.unwrap_err(), "invalid type: sequence, expected struct Sample at line 1 column 0");
        assert_eq!(derived.unwrap(), ("a".to_owned(), Some(2)));
    }
}
