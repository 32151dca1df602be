//! Upstream's strict decoding of unknown fields (`sigs.k8s.io/json`'s `DisallowUnknownFields`,
//! which `fieldValidation=Strict|Warn` turns on): the keys of a JSON body that no field of the
//! type it is decoded into takes, with their paths (`spec.containers[0].foo`, map values as
//! `.key`, list items as `[i]`).
//!
//! The check reads the body's bytes once against the generated field tables ([`FieldInfo`]),
//! keeping nothing but the paths it reports: a key is unknown by its name, whatever its value
//! (`"foo": null` too), and a known field is never reported for holding its zero value
//! (`hostNetwork: false`), which the typed object leaves out.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::scheme::{FieldInfo, FieldShape};

/// At most this many unknown fields are reported, as upstream's decoder caps its strict errors.
const MAX_REPORTED: usize = 100;

/// The unknown fields of the JSON document `json`, decoded as a type whose fields are `fields`,
/// in document order, each once. A syntax error in `json` is the error.
pub fn unknown_fields(json: &[u8], fields: &'static [FieldInfo]) -> Result<Vec<String>, serde_json::Error> {
    let mut found = Found { path: String::new(), unknown: Vec::new() };
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    Walker { expect: Expect::Struct(fields), found: &mut found }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found.unknown)
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
    /// A scalar, a special type or embedded JSON: anything goes.
    Anything,
}

impl Expect {
    fn of(field: &FieldInfo) -> Expect {
        match (field.shape, field.elem) {
            (FieldShape::Object, Some(elem)) => Expect::Struct(elem()),
            (FieldShape::List, Some(elem)) => Expect::ListOf(elem()),
            (FieldShape::Map, Some(elem)) => Expect::MapOf(elem()),
            _ => Expect::Anything,
        }
    }
}

/// The path walked so far and the unknown fields found.
struct Found {
    path: String,
    unknown: Vec<String>,
}

impl Found {
    /// Extends the path by a key, as upstream joins them (`.` between, none first).
    fn push_key(&mut self, key: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
    }

    fn report(&mut self) {
        if self.unknown.len() < MAX_REPORTED && !self.unknown.contains(&self.path) {
            self.unknown.push(self.path.clone());
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
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Walker { expect, found } = self;
        let item = match expect {
            Expect::Struct(_) => None,
            Expect::MapOf(fields) => Some(Expect::Struct(fields)),
            // An object where a list or scalar was expected: a type error for the typed decoding
            // to report, not an unknown field.
            Expect::ListOf(_) | Expect::Anything => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(());
            }
        };
        while let Some(Key(key)) = map.next_key()? {
            let len = found.path.len();
            found.push_key(&key);
            let expect = match (expect, item) {
                (_, Some(item)) => Some(item),
                (Expect::Struct(fields), None) => fields.iter().find(|f| f.json_name == key).map(Expect::of),
                _ => Some(Expect::Anything),
            };
            match expect {
                Some(expect) => map.next_value_seed(Walker { expect, found: &mut *found })?,
                None => {
                    found.report();
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
        FieldInfo {
            json_name,
            description: "",
            required: false,
            shape,
            patch_strategy: None,
            patch_merge_key: None,
            list_type: None,
            list_map_keys: &[],
            map_type: None,
            default: None,
            elem,
        }
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

    fn unknown(json: &str) -> Vec<String> {
        unknown_fields(json.as_bytes(), pod()).unwrap()
    }

    #[test]
    fn known_fields_with_zero_values_are_known() {
        let json = r#"{"kind":"","spec":{"tty":false,"name":null,"ports":[{"hostPort":0}],"raw":{"any":{"thing":1}},"labels":{"a":"b"}}}"#;
        assert!(unknown(json).is_empty());
    }

    #[test]
    fn unknown_keys_are_reported_with_their_paths_in_document_order() {
        let json = r#"{"zeta":null,"spec":{"ttty":true,"ports":[{"hostPort":1},{"hostPrt":2}],"env":{"X":{"bogus":1}}},
            "containers":[{"name":"a"},{"nmae":"b","ports":[{"x":{}}]}],"alpha":[]}"#;
        assert_eq!(
            unknown(json),
            ["zeta", "spec.ttty", "spec.ports[1].hostPrt", "spec.env.X.bogus", "containers[1].nmae", "containers[1].ports[0].x", "alpha"]
        );
    }

    #[test]
    fn shapes_other_than_the_expected_are_left_to_the_typed_decoding() {
        // A list where a struct is expected, an object where a list is: type errors, not unknown
        // fields.
        assert!(unknown(r#"{"spec":[{"bogus":1}],"containers":{"bogus":1}}"#).is_empty());
        // Keys with escapes are compared unescaped.
        assert_eq!(unknown(r#"{"spec":{"n\u0061me":"a","b\u0061d":1}}"#), ["spec.bad"]);
    }

    #[test]
    fn each_path_is_reported_once_and_syntax_errors_are_errors() {
        assert_eq!(unknown(r#"{"x":1,"x":2}"#), ["x"]);
        assert!(unknown_fields(br#"{"spec":{"#, pod()).is_err());
        assert!(unknown_fields(br#"{} {}"#, pod()).is_err());
        let many = format!("{{{}}}", (0..150).map(|i| format!("\"f{i}\":1")).collect::<Vec<_>>().join(","));
        assert_eq!(unknown(&many).len(), MAX_REPORTED);
    }
}
