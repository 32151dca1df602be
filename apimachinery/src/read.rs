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

use serde::de::{DeserializeSeed, Deserializer, Error, Expected, IgnoredAny, MapAccess, Unexpected, Visitor};
use serde_json::Value;

/// A generated struct's fields, as its `Deserialize` reads them.
pub trait ReadFields: Default {
    /// What the struct is, in errors: `struct PodSpec`.
    const EXPECTING: &'static str;

    /// The number of the field a JSON key names, if it names one.
    fn field_index(key: &str) -> Option<usize>;

    /// Reads the value of field `index` from `map` into `self`.
    fn read_field<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error>;

    /// Reads field `index` from its `serde_json::Value` into `self` ([`FromValue`]).
    fn read_value_field(&mut self, index: usize, value: Value) -> Result<(), serde_json::Error>;
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

/// A type read from a `serde_json::Value` without serde's `Value` deserializer: what
/// `serde_json::from_value` does, with its errors word for word, but compiled once per generated
/// struct instead of once more per struct and field type for the `Value` reader.
pub trait FromValue: Sized {
    fn from_value(value: Value) -> Result<Self, serde_json::Error>;
}

/// A generated struct from a JSON object's value: what its `FromValue` calls.
pub fn struct_from_value<T: ReadFields>(value: Value) -> Result<T, serde_json::Error> {
    let mut object = T::default();
    read_object(value, T::EXPECTING, T::field_index, &mut |index, value| object.read_value_field(index, value))?;
    Ok(object)
}

/// The loop over a JSON object's entries, compiled once for every struct.
fn read_object(
    value: Value,
    expecting: &str,
    field_index: fn(&str) -> Option<usize>,
    read_field: &mut dyn FnMut(usize, Value) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    let Value::Object(fields) = value else {
        return Err(invalid_type(&value, &expecting));
    };
    for (key, value) in fields {
        if let Some(index) = field_index(&key) {
            read_field(index, value)?;
        }
    }
    Ok(())
}

/// A non-`Option` field: `null` is the zero value, as Go reads it ([`crate::serde_null`]).
pub fn null_as_default<T: FromValue + Default>(value: Value) -> Result<T, serde_json::Error> {
    if value.is_null() { Ok(T::default()) } else { T::from_value(value) }
}

/// serde_json's error for a value of the wrong type, as its `Value` deserializer words it.
fn invalid_type(value: &Value, expected: &dyn Expected) -> serde_json::Error {
    let unexpected = match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => number_unexpected(n),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    };
    serde_json::Error::invalid_type(unexpected, expected)
}

fn number_unexpected(n: &serde_json::Number) -> Unexpected<'static> {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => Unexpected::Unsigned(u),
        (None, Some(i)) => Unexpected::Signed(i),
        _ => Unexpected::Float(n.as_f64().unwrap_or_default()),
    }
}

/// An integer as serde's visitor for `T` reads a JSON number: out of range is an invalid value,
/// a float an invalid type.
fn integer<T: TryFrom<u64> + TryFrom<i64>>(value: Value, expected: &str) -> Result<T, serde_json::Error> {
    let Value::Number(n) = &value else {
        return Err(invalid_type(&value, &expected));
    };
    let read = match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => T::try_from(u).ok(),
        (None, Some(i)) => T::try_from(i).ok(),
        _ => return Err(invalid_type(&value, &expected)),
    };
    read.ok_or_else(|| serde_json::Error::invalid_value(number_unexpected(n), &expected))
}

impl FromValue for i32 {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        integer(value, "i32")
    }
}

impl FromValue for i64 {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        integer(value, "i64")
    }
}

impl FromValue for f64 {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match &value {
            Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
            _ => Err(invalid_type(&value, &"f64")),
        }
    }
}

impl FromValue for bool {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match value {
            Value::Bool(b) => Ok(b),
            other => Err(invalid_type(&other, &"a boolean")),
        }
    }
}

impl FromValue for String {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match value {
            Value::String(s) => Ok(s),
            other => Err(invalid_type(&other, &"a string")),
        }
    }
}

impl<T: FromValue> FromValue for Box<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        T::from_value(value).map(Box::new)
    }
}

/// `null` is `None`.
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        if value.is_null() { Ok(None) } else { T::from_value(value).map(Some) }
    }
}

impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match value {
            Value::Array(items) => {
                let mut read = Vec::with_capacity(items.len());
                for item in items {
                    read.push(T::from_value(item)?);
                }
                Ok(read)
            }
            other => Err(invalid_type(&other, &"a sequence")),
        }
    }
}

impl<T: FromValue> FromValue for std::collections::BTreeMap<String, T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        match value {
            Value::Object(entries) => {
                let mut read = std::collections::BTreeMap::new();
                for (key, value) in entries {
                    read.insert(key, T::from_value(value)?);
                }
                Ok(read)
            }
            other => Err(invalid_type(&other, &"a map")),
        }
    }
}

/// The special types and the `[]byte` shapes read themselves through their serde
/// `Deserialize`, each instantiated once for the `Value` reader.
macro_rules! read_by_serde {
    ($($ty:ty),* $(,)?) => {$(
        impl FromValue for $ty {
            fn from_value(value: Value) -> Result<Self, serde_json::Error> {
                serde_json::from_value(value)
            }
        }
    )*};
}

special_types!(read_by_serde);

read_by_serde!(
    crate::serde_bytes::Base64<Vec<u8>>,
    crate::serde_bytes::Base64<Option<Vec<u8>>>,
    crate::serde_bytes::Base64<std::collections::BTreeMap<String, Vec<u8>>>,
    crate::serde_bytes::Base64<Vec<Vec<u8>>>,
);

impl<T: crate::schema_or::Schema> FromValue for crate::JsonSchemaPropsOrBool<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }
}

impl<T: crate::schema_or::Schema> FromValue for crate::JsonSchemaPropsOrArray<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }
}

impl<T: crate::schema_or::Schema> FromValue for crate::JsonSchemaPropsOrStringArray<T> {
    fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
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

        fn read_value_field(&mut self, index: usize, value: Value) -> Result<(), serde_json::Error> {
            match index {
                0 => self.name = null_as_default(value)?,
                _ => self.count = FromValue::from_value(value)?,
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

    #[test]
    fn reads_values_as_serde_json_from_value_does() {
        for json in [
            r#"{"name": "a", "count": 2}"#,
            r#"{"count": -2, "unknown": {"deep": [1, 2]}, "name": null}"#,
            r#"{"count": null}"#,
            r#"{"count": "x"}"#,
            r#"{"count": 1.5}"#,
            r#"{"count": 3000000000}"#,
            r#"{"count": -3000000000}"#,
            r#"{"count": true}"#,
            r#"{"name": 5}"#,
            r#"{"name": [1]}"#,
            r#"{"name": {}}"#,
            r#""text""#,
            r#"null"#,
            r#"7"#,
            r#"["a", 2]"#,
        ] {
            let value: Value = serde_json::from_str(json).unwrap();
            let read = struct_from_value::<Read>(value.clone()).map(|r| (r.name, r.count)).map_err(|e| e.to_string());
            let derived = serde_json::from_value::<Sample>(value).map(|d| (d.name, d.count)).map_err(|e| e.to_string());
            // serde's derive reads an array by position; Go and the generated readers refuse it.
            if json.starts_with('[') {
                assert_eq!(read.unwrap_err(), "invalid type: sequence, expected struct Sample");
                continue;
            }
            assert_eq!(read, derived, "{json}");
        }
        for json in ["[1, 2.5, -3]", r#"{"a": [true], "b": []}"#, "null", "[1, null]", r#"[{"a": "x"}]"#, "1e400"] {
            let Ok(value) = serde_json::from_str::<Value>(json) else { continue };
            let read = <Option<Vec<f64>>>::from_value(value.clone()).map_err(|e| e.to_string());
            assert_eq!(read, serde_json::from_value::<Option<Vec<f64>>>(value.clone()).map_err(|e| e.to_string()), "{json}");
            type Map = std::collections::BTreeMap<String, Vec<bool>>;
            let read = Map::from_value(value.clone()).map_err(|e| e.to_string());
            assert_eq!(read, serde_json::from_value::<Map>(value.clone()).map_err(|e| e.to_string()), "{json}");
            let read = <Vec<i64>>::from_value(value.clone()).map_err(|e| e.to_string());
            assert_eq!(read, serde_json::from_value::<Vec<i64>>(value).map_err(|e| e.to_string()), "{json}");
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
