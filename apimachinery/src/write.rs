//! Writing the generated structs as JSON: as bytes, or as a `serde_json::Value`.
//!
//! The generator writes, for each struct, a [`WriteJson`] impl that names its fields in order
//! and applies Go's `encoding/json` rule to each (see [`crate::go`]); the tokens go to a
//! [`JsonWriter`], which either appends JSON text to a buffer or builds a `Value`. serde's derive
//! would write each struct's `Serialize` once per serializer it meets (the JSON writer, the
//! `Value` builder), each field's through serde's generic compound types, and that made up a
//! quarter of the generated crate's build; here each struct's writing is compiled once.
//!
//! The generated structs still implement `Serialize`, for runtime code that puts them in its own
//! serde types: [`serialize`] writes the JSON text and hands it on as serde_json's raw value
//! (the protocol `RawExtension` already uses), which serde_json's writer copies and its `Value`
//! serializer parses. Other serde formats would see that protocol's private struct, so YAML is
//! made from JSON ([`crate::codec`]), as upstream's YAML serializer does.

use serde::Serialize;
use serde::ser::Error as _;
use serde_json::{Map, Value};

/// A type written as JSON through a [`JsonWriter`].
pub trait WriteJson {
    fn write_json(&self, w: &mut JsonWriter<'_>);
}

/// Where the JSON tokens go, and the first error met (from a special type's own serializer, e.g.
/// a `RawExtension` holding invalid JSON); writing goes on after an error, and its result is
/// dropped.
pub struct JsonWriter<'a> {
    sink: Sink<'a>,
    error: Option<serde_json::Error>,
}

enum Sink<'a> {
    /// JSON text appended to a buffer. Separators are decided by the last byte written: after `{`
    /// or `[` nothing, otherwise a comma.
    Bytes(&'a mut Vec<u8>),
    /// A `Value` being built: the containers open, innermost last, and the finished root.
    Value { open: Vec<Open>, root: Option<Value> },
}

/// A container of the `Value` being built.
enum Open {
    /// An object and the key its next value goes under.
    Object(Map<String, Value>, String),
    Array(Vec<Value>),
}

impl JsonWriter<'_> {
    pub fn begin_object(&mut self) {
        match &mut self.sink {
            Sink::Bytes(out) => out.push(b'{'),
            Sink::Value { open, .. } => open.push(Open::Object(Map::new(), String::new())),
        }
    }

    /// The key of the next value in the object open: a struct field's JSON name, which has
    /// nothing to escape (no `"`, `\` or control character; the generator checks).
    pub fn field(&mut self, name: &str) {
        match &mut self.sink {
            Sink::Bytes(out) => {
                if out.last() != Some(&b'{') {
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
            }
            Sink::Value { open, .. } => {
                if let Some(Open::Object(_, next_key)) = open.last_mut() {
                    *next_key = name.to_owned();
                }
            }
        }
    }

    /// The key of the next value in the object open (a map's key, escaped as needed).
    pub fn key(&mut self, key: &str) {
        match &mut self.sink {
            Sink::Bytes(out) => {
                if out.last() != Some(&b'{') {
                    out.push(b',');
                }
                write_text(out, key);
                out.push(b':');
            }
            Sink::Value { open, .. } => {
                if let Some(Open::Object(_, next_key)) = open.last_mut() {
                    *next_key = key.to_owned();
                }
            }
        }
    }

    pub fn end_object(&mut self) {
        match &mut self.sink {
            Sink::Bytes(out) => out.push(b'}'),
            Sink::Value { open, .. } => {
                if let Some(Open::Object(map, _)) = open.pop() {
                    self.value(Value::Object(map));
                }
            }
        }
    }

    pub fn begin_array(&mut self) {
        match &mut self.sink {
            Sink::Bytes(out) => out.push(b'['),
            Sink::Value { open, .. } => open.push(Open::Array(Vec::new())),
        }
    }

    /// Before each element of the array open.
    pub fn element(&mut self) {
        if let Sink::Bytes(out) = &mut self.sink
            && out.last() != Some(&b'[')
        {
            out.push(b',');
        }
    }

    pub fn end_array(&mut self) {
        match &mut self.sink {
            Sink::Bytes(out) => out.push(b']'),
            Sink::Value { open, .. } => {
                if let Some(Open::Array(items)) = open.pop() {
                    self.value(Value::Array(items));
                }
            }
        }
    }

    pub fn null(&mut self) {
        match &mut self.sink {
            Sink::Bytes(out) => out.extend_from_slice(b"null"),
            Sink::Value { .. } => self.value(Value::Null),
        }
    }

    pub fn bool(&mut self, v: bool) {
        match &mut self.sink {
            Sink::Bytes(out) => out.extend_from_slice(if v { b"true" } else { b"false" }),
            Sink::Value { .. } => self.value(Value::Bool(v)),
        }
    }

    pub fn i64(&mut self, v: i64) {
        match &mut self.sink {
            Sink::Bytes(out) => {
                // Writing into a `Vec` cannot fail.
                let _ = serde_json::to_writer(&mut **out, &v);
            }
            Sink::Value { .. } => self.value(Value::from(v)),
        }
    }

    /// A float as serde_json writes it (shortest round-trip form; not finite is `null`).
    pub fn f64(&mut self, v: f64) {
        self.serde(&v);
    }

    pub fn string(&mut self, v: &str) {
        match &mut self.sink {
            Sink::Bytes(out) => write_text(out, v),
            Sink::Value { .. } => self.value(Value::String(v.to_owned())),
        }
    }

    /// A value written by its own serde `Serialize`: the special types (`Time`, `Quantity`,
    /// `RawExtension`, …), whose JSON forms are hand-written once for every format.
    pub fn serde<T: Serialize + ?Sized>(&mut self, v: &T) {
        let written = match &mut self.sink {
            Sink::Bytes(out) => serde_json::to_writer(&mut **out, v),
            Sink::Value { .. } => match serde_json::to_value(v) {
                Ok(value) => {
                    self.value(value);
                    Ok(())
                }
                Err(err) => Err(err),
            },
        };
        if let Err(err) = written
            && self.error.is_none()
        {
            self.error = Some(err);
        }
    }

    /// A finished value, put where the `Value` being built has its next one.
    fn value(&mut self, value: Value) {
        if let Sink::Value { open, root } = &mut self.sink {
            match open.last_mut() {
                Some(Open::Object(map, key)) => {
                    map.insert(std::mem::take(key), value);
                }
                Some(Open::Array(items)) => items.push(value),
                None => *root = Some(value),
            }
        }
    }
}

/// A JSON string, escaped as serde_json escapes it.
fn write_text(out: &mut Vec<u8>, text: &str) {
    // Writing into a `Vec` cannot fail, and a `str` is always representable.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Appends `v`'s JSON text to `out`.
pub fn to_writer(v: &dyn WriteJson, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let mut w = JsonWriter { sink: Sink::Bytes(out), error: None };
    v.write_json(&mut w);
    w.error.map_or(Ok(()), Err)
}

/// `v`'s JSON text.
pub fn to_vec(v: &dyn WriteJson) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    to_writer(v, &mut out)?;
    Ok(out)
}

/// `v` as a `serde_json::Value`, built directly (not through its text).
pub fn to_value(v: &dyn WriteJson) -> Result<Value, serde_json::Error> {
    let mut w = JsonWriter { sink: Sink::Value { open: Vec::new(), root: None }, error: None };
    v.write_json(&mut w);
    if let Some(err) = w.error {
        return Err(err);
    }
    match w.sink {
        Sink::Value { root: Some(value), .. } => Ok(value),
        _ => Err(serde_json::Error::custom("a JSON writer left its value unfinished")),
    }
}

/// What a generated struct's `Serialize` does: its JSON text, handed to `serializer` as
/// serde_json's raw value (see the module's note).
pub fn serialize<S: serde::Serializer>(v: &dyn WriteJson, serializer: S) -> Result<S::Ok, S::Error> {
    let text = to_vec(v).map_err(S::Error::custom)?;
    // Only `str`s are written into the text, so it is UTF-8.
    let text = String::from_utf8(text).map_err(S::Error::custom)?;
    crate::raw::CompactJson(&text).serialize(serializer)
}

impl WriteJson for String {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.string(self);
    }
}

impl WriteJson for bool {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.bool(*self);
    }
}

impl WriteJson for i32 {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.i64(i64::from(*self));
    }
}

impl WriteJson for i64 {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.i64(*self);
    }
}

impl WriteJson for f64 {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.f64(*self);
    }
}

impl<T: WriteJson + ?Sized> WriteJson for Box<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        (**self).write_json(w);
    }
}

/// `None` is `null`.
impl<T: WriteJson> WriteJson for Option<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        match self {
            Some(v) => v.write_json(w),
            None => w.null(),
        }
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        self.as_slice().write_json(w);
    }
}

impl<T: WriteJson> WriteJson for [T] {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.begin_array();
        for item in self {
            w.element();
            item.write_json(w);
        }
        w.end_array();
    }
}

impl<T: WriteJson> WriteJson for std::collections::BTreeMap<String, T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.begin_object();
        for (key, value) in self {
            w.key(key);
            value.write_json(w);
        }
        w.end_object();
    }
}

/// The special types write themselves through their serde `Serialize`.
macro_rules! written_by_serde {
    ($($ty:ty),* $(,)?) => {$(
        impl WriteJson for $ty {
            fn write_json(&self, w: &mut JsonWriter<'_>) {
                w.serde(self);
            }
        }
    )*};
}

special_types!(written_by_serde);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A struct written the generated way.
    #[derive(Default)]
    struct Sample {
        name: String,
        count: Option<i32>,
        tags: Vec<String>,
        labels: BTreeMap<String, String>,
        ratio: f64,
        created: Option<crate::Time>,
        raw: crate::RawExtension,
        nested: Option<Box<Sample>>,
    }

    impl WriteJson for Sample {
        fn write_json(&self, w: &mut JsonWriter<'_>) {
            w.begin_object();
            w.field("name");
            self.name.write_json(w);
            if self.count.is_some() {
                w.field("count");
                self.count.write_json(w);
            }
            w.field("tags");
            self.tags.write_json(w);
            w.field("labels");
            self.labels.write_json(w);
            w.field("ratio");
            self.ratio.write_json(w);
            w.field("created");
            self.created.write_json(w);
            w.field("raw");
            self.raw.write_json(w);
            if let Some(nested) = &self.nested {
                w.field("nested");
                nested.write_json(w);
            }
            w.end_object();
        }
    }

    impl Serialize for Sample {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serialize(self, serializer)
        }
    }

    fn sample() -> Sample {
        Sample {
            name: "a \"quoted\" <name>\n".into(),
            count: Some(-3),
            tags: vec!["x".into(), String::new()],
            labels: BTreeMap::from([("k".into(), "v".into()), ("é".into(), "ü".into())]),
            ratio: 0.1,
            created: Some(crate::Time::parse_rfc3339("2024-01-02T03:04:05Z").unwrap()),
            raw: crate::RawExtension::from_json(r#"{"b":[1,2.5,null],"a":{}}"#).unwrap(),
            nested: Some(Box::new(Sample { ratio: f64::NAN, ..Sample::default() })),
        }
    }

    const SAMPLE_JSON: &str = concat!(
        r#"{"name":"a \"quoted\" <name>\n","count":-3,"tags":["x",""],"labels":{"k":"v","é":"ü"},"ratio":0.1,"#,
        r#""created":"2024-01-02T03:04:05Z","raw":{"b":[1,2.5,null],"a":{}},"#,
        r#""nested":{"name":"","tags":[],"labels":{},"ratio":null,"created":null,"raw":null}}"#
    );

    #[test]
    fn text_value_and_serde_agree() {
        let sample = sample();
        let text = to_vec(&sample).unwrap();
        assert_eq!(std::str::from_utf8(&text).unwrap(), SAMPLE_JSON);
        let parsed: Value = serde_json::from_str(SAMPLE_JSON).unwrap();
        assert_eq!(to_value(&sample).unwrap(), parsed);
        // Through serde: the writer copies the text, the `Value` serializer parses it; nested in
        // another serde type too.
        assert_eq!(serde_json::to_string(&sample).unwrap(), SAMPLE_JSON);
        assert_eq!(serde_json::to_value(&sample).unwrap(), parsed);
        assert_eq!(serde_json::to_string(&[&sample]).unwrap(), format!("[{SAMPLE_JSON}]"));
    }

    #[test]
    fn appends_to_what_the_buffer_holds() {
        let mut out = b"[1,".to_vec();
        to_writer(&Sample::default(), &mut out).unwrap();
        assert_eq!(out, br#"[1,{"name":"","tags":[],"labels":{},"ratio":0.0,"created":null,"raw":null}"#);
    }

    #[test]
    fn a_special_types_error_is_the_result() {
        let raw = crate::RawExtension::from_bytes(b"{not json".to_vec());
        let bad = Sample { raw, ..Sample::default() };
        let err = to_vec(&bad).unwrap_err().to_string();
        assert!(err.starts_with("json: error calling MarshalJSON for type runtime.RawExtension"), "{err}");
        assert!(to_value(&bad).is_err());
        assert!(serde_json::to_string(&bad).is_err());
    }
}
