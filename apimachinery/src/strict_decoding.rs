//! Upstream's strict decoding errors (`sigs.k8s.io/json`'s `DisallowUnknownFields` and
//! `DisallowDuplicateFields`, which `fieldValidation=Strict|Warn` turn on): the keys of a JSON
//! body that no field of the type it is decoded into takes, and the keys an object repeats,
//! with their paths (`spec.containers[0].foo`, map values as `.key`, list items as `[i]`).
//!
//! The check reads the body's bytes once against the generated field tables ([`FieldInfo`]),
//! keeping nothing but the paths it reports: a key is unknown by its name, whatever its value
//! (`"foo": null` too), and a known field is never reported for holding its zero value
//! (`hostNetwork: false`), which the typed object leaves out.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::scheme::{FieldInfo, FieldShape};

/// At most this many errors are reported, as upstream's decoder caps its strict errors.
const MAX_REPORTED: usize = 100;

/// One strict decoding error, at a path; `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrictError {
    /// A key no field of the type takes.
    Unknown(String),
    /// A key an object has more than once (Go's decoder keeps the last value).
    Duplicate(String),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictError::Unknown(path) => write!(f, "unknown field \"{path}\""),
            StrictError::Duplicate(path) => write!(f, "duplicate field \"{path}\""),
        }
    }
}

/// The strict decoding errors of the JSON document `json`, decoded as a type whose fields are
/// `fields`, in document order, each once. A syntax error in `json` is the error.
pub fn strict_errors(json: &[u8], fields: &'static [FieldInfo]) -> Result<Vec<StrictError>, serde_json::Error> {
    let mut found = Found { path: String::new(), errors: Vec::new() };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    Walker { expect: Expect::Struct(fields), found: &mut found }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found.errors)
}

/// [`strict_errors`] of a JSON value (what a patch made), decoded as a type whose fields are
/// `fields`: the same errors its text would have, but for repeated keys, which a value cannot
/// hold.
pub fn value_strict_errors(value: &serde_json::Value, fields: &'static [FieldInfo]) -> Vec<StrictError> {
    let mut found = Found { path: String::new(), errors: Vec::new() };
    // Reading a value fails only where its visitor does, and the walker's never does.
    let _ = Walker { expect: Expect::Struct(fields), found: &mut found }.deserialize(value);
    found.errors
}

/// What the value at the walker's place is decoded as.
#[derive(Clone, Copy)]
enum Expect {
    /// A generated struct: its keys must be its fields.
    Struct(&'static [FieldInfo]),
    /// A map whose values are generated structs.
    MapOf(&'static [FieldInfo]),
    /// A list whose items are generated structs.
    ListOf(&'static [FieldInfo]),
    /// A map of anything else (labels, a special type's map): only repeated keys are errors.
    Map,
    /// A scalar, a special type or embedded JSON: anything goes.
    Anything,
}

impl Expect {
    fn of(field: &FieldInfo) -> Expect {
        match (field.shape, field.elem) {
            (FieldShape::Object, Some(elem)) => Expect::Struct(elem()),
            (FieldShape::List, Some(elem)) => Expect::ListOf(elem()),
            (FieldShape::Map, Some(elem)) => Expect::MapOf(elem()),
            (FieldShape::Map, None) => Expect::Map,
            _ => Expect::Anything,
        }
    }
}

/// The path walked so far and the errors found.
struct Found {
    path: String,
    errors: Vec<StrictError>,
}

impl Found {
    /// Extends the path by a key, as upstream joins them (`.` between, none first).
    fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
    }

    fn report(&mut self, error: fn(String) -> StrictError) {
        let error = error(self.path.clone());
        if self.errors.len() < MAX_REPORTED && !self.errors.contains(&error) {
            self.errors.push(error);
        }
    }
}

struct Walker<'f> {
    expect: Expect,
    found: &'f mut Found,
}

impl<'de> DeserializeSeed<'de> for Walker<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.expect {
            // Nothing inside can be an error: skipped without visiting it (serde_json checks
            // its syntax without decoding its strings). Embedded JSON such as `fieldsV1` is
            // much of an object read back.
            Expect::Anything => deserializer.deserialize_ignored_any(IgnoredAny).map(|_| ()),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Walker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Walker { expect, found } = self;
        // An object where a list or scalar was expected is a type error for the typed decoding
        // to report, and embedded JSON is anyone's: neither has strict errors.
        if matches!(expect, Expect::ListOf(_) | Expect::Anything) {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(());
        }
        // What was seen, for duplicates: a struct's known fields by index (as upstream, an
        // unknown key is only unknown), a map's keys.
        let mut seen_fields = SeenFields::default();
        let mut seen_keys = std::collections::HashSet::new();
        while let Some(Key(key)) = map.next_key()? {
            let len = found.path.len();
            found.push_key(&key);
            let value = match expect {
                Expect::Struct(fields) => fields.iter().position(|f| f.json_name == key).map(|i| {
                    if !seen_fields.insert(i) {
                        found.report(StrictError::Duplicate);
                    }
                    Expect::of(&fields[i])
                }),
                _ => {
                    let item = if let Expect::MapOf(fields) = expect { Expect::Struct(fields) } else { Expect::Anything };
                    if !seen_keys.insert(key) {
                        found.report(StrictError::Duplicate);
                    }
                    Some(item)
                }
            };
            match value {
                Some(expect) => map.next_value_seed(Walker { expect, found: &mut *found })?,
                None => {
                    found.report(StrictError::Unknown);
                    map.next_value::<IgnoredAny>()?;
                }
            }
            found.path.truncate(len);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Walker { expect, found } = self;
        let Expect::ListOf(fields) = expect else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let mut index = 0usize;
        loop {
            let len = found.path.len();
            {
                use std::fmt::Write;
                let _ = write!(found.path, "[{index}]");
            }
            let more = seq.next_element_seed(Walker { expect: Expect::Struct(fields), found: &mut *found })?.is_some();
            found.path.truncate(len);
            if !more {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The fields of one struct a body has given, by their index in the struct's fields: a set of
/// small numbers, kept without hashing or allocating for the first 128 (every generated struct
/// has fewer), as every object of a body needs one.
#[derive(Default)]
struct SeenFields {
    first: u128,
    others: Vec<usize>,
}

impl SeenFields {
    /// Adds `index`; false when it was there already.
    fn insert(&mut self, index: usize) -> bool {
        if index < 128 {
            let bit = 1u128 << index;
            let new = self.first & bit == 0;
            self.first |= bit;
            return new;
        }
        if self.others.contains(&index) {
            return false;
        }
        self.others.push(index);
        true
    }
}

/// An object key, borrowed from the body unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(json_name: &'static str, shape: FieldShape, elem: Option<fn() -> &'static [FieldInfo]>) -> FieldInfo {
        FieldInfo { elem, ..FieldInfo::new(json_name, shape) }
    }

    fn port() -> &'static [FieldInfo] {
        static FIELDS: std::sync::LazyLock<Vec<FieldInfo>> = std::sync::LazyLock::new(|| {
            vec![field("containerPort", FieldShape::Scalar, None), field("hostPort", FieldShape::Scalar, None)]
        });
        &FIELDS
    }

    fn container() -> &'static [FieldInfo] {
        static FIELDS: std::sync::LazyLock<Vec<FieldInfo>> = std::sync::LazyLock::new(|| {
            vec![
                field("name", FieldShape::Scalar, None),
                field("tty", FieldShape::Scalar, None),
                field("ports", FieldShape::List, Some(port)),
                field("env", FieldShape::Map, Some(port)),
                field("raw", FieldShape::Object, None),
                field("labels", FieldShape::Map, None),
            ]
        });
        &FIELDS
    }

    fn pod() -> &'static [FieldInfo] {
        static FIELDS: std::sync::LazyLock<Vec<FieldInfo>> = std::sync::LazyLock::new(|| {
            vec![
                field("kind", FieldShape::Scalar, None),
                field("spec", FieldShape::Object, Some(container)),
                field("containers", FieldShape::List, Some(container)),
            ]
        });
        &FIELDS
    }

    fn errors(json: &str) -> Vec<String> {
        strict_errors(json.as_bytes(), pod()).unwrap().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn known_fields_with_zero_values_are_known() {
        let json = r#"{"kind":"","spec":{"tty":false,"name":null,"ports":[{"hostPort":0}],"raw":{"any":{"thing":1}},"labels":{"a":"b"}}}"#;
        assert!(errors(json).is_empty());
    }

    #[test]
    fn unknown_keys_are_reported_with_their_paths_in_document_order() {
        let json = r#"{"zeta":null,"spec":{"ttty":true,"ports":[{"hostPort":1},{"hostPrt":2}],"env":{"X":{"bogus":1}}},
            "containers":[{"name":"a"},{"nmae":"b","ports":[{"x":{}}]}],"alpha":[]}"#;
        let unknown =
            ["zeta", "spec.ttty", "spec.ports[1].hostPrt", "spec.env.X.bogus", "containers[1].nmae", "containers[1].ports[0].x", "alpha"];
        assert_eq!(errors(json), unknown.map(|path| format!("unknown field \"{path}\"")));
    }

    #[test]
    fn repeated_keys_are_duplicates_in_structs_and_maps_but_not_in_embedded_json() {
        let json = r#"{"kind":"a","spec":{"name":"x","labels":{"a":"1","a":"2"},"raw":{"b":1,"b":2},"name":"y"},"kind":"b","x":1,"x":2}"#;
        assert_eq!(
            errors(json),
            [r#"duplicate field "spec.labels.a""#, r#"duplicate field "spec.name""#, r#"duplicate field "kind""#, r#"unknown field "x""#]
        );
    }

    #[test]
    fn shapes_other_than_the_expected_are_left_to_the_typed_decoding() {
        // A list where a struct is expected, an object where a list is: type errors, not unknown
        // fields.
        assert!(errors(r#"{"spec":[{"bogus":1}],"containers":{"bogus":1}}"#).is_empty());
        // Keys with escapes are compared unescaped.
        assert_eq!(errors(r#"{"spec":{"n\u0061me":"a","b\u0061d":1}}"#), [r#"unknown field "spec.bad""#]);
    }

    #[test]
    fn a_value_has_the_errors_of_its_text_but_repeated_keys() {
        let json = r#"{"zeta":null,"spec":{"ttty":true,"ports":[{"hostPort":1},{"hostPrt":2}],"env":{"X":{"bogus":1}},"raw":{"b":[1]}},
            "containers":[{"name":"a"},{"nmae":"b","ports":[{"x":{}}]}],"alpha":[],"kind":"a","kind":"b"}"#;
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let text = serde_json::to_vec(&value).unwrap();
        let of_value: Vec<String> = value_strict_errors(&value, pod()).iter().map(ToString::to_string).collect();
        assert_eq!(of_value, strict_errors(&text, pod()).unwrap().iter().map(ToString::to_string).collect::<Vec<_>>());
        let unknown =
            ["alpha", "containers[1].nmae", "containers[1].ports[0].x", "spec.env.X.bogus", "spec.ports[1].hostPrt", "spec.ttty", "zeta"];
        assert_eq!(of_value, unknown.map(|path| format!("unknown field \"{path}\"")));
    }

    #[test]
    fn seen_fields_are_a_set_of_indexes() {
        let mut seen = SeenFields::default();
        for index in [0, 127, 128, 300] {
            assert!(seen.insert(index), "{index} is new");
            assert!(!seen.insert(index), "{index} was seen");
        }
        assert!(seen.insert(1) && seen.insert(129));
    }

    #[test]
    fn reports_are_bounded_and_syntax_errors_are_errors() {
        assert!(strict_errors(br#"{"spec":{"#, pod()).is_err());
        assert!(strict_errors(br#"{} {}"#, pod()).is_err());
        // Embedded JSON is skipped, its syntax still checked.
        assert!(strict_errors(br#"{"spec":{"raw":{"a":[1,}}}"#, pod()).is_err());
        assert!(strict_errors(br#"{"spec":{"raw":{"a":"\q"}}}"#, pod()).is_err());
        let many = format!("{{{}}}", (0..150).map(|i| format!("\"f{i}\":1")).collect::<Vec<_>>().join(","));
        assert_eq!(errors(&many).len(), MAX_REPORTED);
    }
}
