//! The apiextensions v1 "schema or something else" unions, generic over the schema type `T` (the
//! generated `JSONSchemaProps`, which lives in a crate that depends on this one and contains these
//! types recursively, hence the boxes).
//!
//! JSON forms follow upstream's `MarshalJSON`/`UnmarshalJSON`
//! (`apiextensions-apiserver/pkg/apis/apiextensions/v1/marshal.go`):
//!
//! - [`JsonSchemaPropsOrBool`]: `true`/`false`, or a schema object (which also means
//!   `allows = true`); anything else, `null` included, is the error
//!   `boolean or JSON schema expected`. Encodes the schema when set, otherwise the bool.
//! - [`JsonSchemaPropsOrArray`]: a schema object or an array of schemas. Any other value decodes
//!   to the empty value without error, as upstream. Encodes the array when non-empty, otherwise
//!   the schema, otherwise `null`.
//! - [`JsonSchemaPropsOrStringArray`]: a schema object or an array of strings; other values decode
//!   to the empty value. Encodes the strings when non-empty, otherwise the schema, otherwise `null`.
//!
//! Protobuf follows upstream's `generated.pb.go`: fields in tag order, `allows` always written,
//! the schema only when set, repeated fields one entry per element.

use std::fmt::{self, Debug};
use std::marker::PhantomData;

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, bool as pbool, message, skip_field, string};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::write::{JsonWriter, WriteJson};

/// What the schema type must provide; the generated `JSONSchemaProps` has all of it.
pub trait Schema: prost::Message + Default + Clone + PartialEq + Debug + Serialize + DeserializeOwned {}

impl<T: prost::Message + Default + Clone + PartialEq + Debug + Serialize + DeserializeOwned> Schema for T {}

/// Merges a length-delimited schema message into an optional boxed schema.
fn merge_schema<T: Schema>(
    slot: &mut Option<Box<T>>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    message::merge(wire_type, slot.get_or_insert_with(Box::default).as_mut(), buf, ctx)
}

/// `JSONSchemaPropsOrBool`: `additionalProperties`/`additionalItems`, either a bool or a schema.
///
/// Protobuf: `{ optional bool allows = 1; optional JSONSchemaProps schema = 2; }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonSchemaPropsOrBool<T> {
    pub allows: bool,
    pub schema: Option<Box<T>>,
}

impl<T> JsonSchemaPropsOrBool<T> {
    pub fn from_bool(allows: bool) -> Self {
        JsonSchemaPropsOrBool { allows, schema: None }
    }

    /// A schema, which also allows (as decoding a schema object does).
    pub fn from_schema(schema: T) -> Self {
        JsonSchemaPropsOrBool { allows: true, schema: Some(Box::new(schema)) }
    }
}

impl<T: Serialize> Serialize for JsonSchemaPropsOrBool<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_bool(self.allows),
        }
    }
}

/// As its `Serialize`, without going through serde (a schema's nested schemas are written by the
/// same writer).
impl<T: WriteJson> WriteJson for JsonSchemaPropsOrBool<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        match &self.schema {
            Some(schema) => schema.write_json(w),
            None => w.bool(self.allows),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for JsonSchemaPropsOrBool<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrBoolVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned> Visitor<'de> for OrBoolVisitor<T> {
            type Value = JsonSchemaPropsOrBool<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("boolean or JSON schema expected")
            }

            fn visit_bool<E: de::Error>(self, allows: bool) -> Result<Self::Value, E> {
                Ok(JsonSchemaPropsOrBool { allows, schema: None })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema = T::deserialize(MapAccessDeserializer::new(map))?;
                Ok(JsonSchemaPropsOrBool { allows: true, schema: Some(Box::new(schema)) })
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }

            // Every other JSON value gets upstream's message.
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Err(E::custom(OR_BOOL_EXPECTED))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
                Err(de::Error::custom(OR_BOOL_EXPECTED))
            }
        }

        deserializer.deserialize_any(OrBoolVisitor(PhantomData))
    }
}

const OR_BOOL_EXPECTED: &str = "boolean or JSON schema expected";

impl<T: Schema> prost::Message for JsonSchemaPropsOrBool<T> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        pbool::encode(1, &self.allows, buf);
        if let Some(schema) = &self.schema {
            message::encode(2, schema.as_ref(), buf);
        }
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        match tag {
            1 => pbool::merge(wire_type, &mut self.allows, buf, ctx),
            2 => merge_schema(&mut self.schema, wire_type, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        pbool::encoded_len(1, &self.allows) + self.schema.as_ref().map_or(0, |s| message::encoded_len(2, s.as_ref()))
    }

    fn clear(&mut self) {
        self.allows = false;
        self.schema = None;
    }
}

/// `JSONSchemaPropsOrArray`: `items`, either one schema or a list of schemas.
///
/// Protobuf: `{ optional JSONSchemaProps schema = 1; repeated JSONSchemaProps jSONSchemas = 2; }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonSchemaPropsOrArray<T> {
    pub schema: Option<Box<T>>,
    pub json_schemas: Vec<T>,
}

impl<T> JsonSchemaPropsOrArray<T> {
    pub fn from_schema(schema: T) -> Self {
        JsonSchemaPropsOrArray { schema: Some(Box::new(schema)), json_schemas: Vec::new() }
    }

    pub fn from_schemas(json_schemas: Vec<T>) -> Self {
        JsonSchemaPropsOrArray { schema: None, json_schemas }
    }
}

impl<T: Serialize> Serialize for JsonSchemaPropsOrArray<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.json_schemas.is_empty() {
            return self.json_schemas.serialize(serializer);
        }
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// Implements the "anything else is the empty value" arms shared by the two array unions.
macro_rules! ignore_other_json_values {
    ($empty:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($empty)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    };
}

/// As its `Serialize`.
impl<T: WriteJson> WriteJson for JsonSchemaPropsOrArray<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        if !self.json_schemas.is_empty() {
            return self.json_schemas.write_json(w);
        }
        self.schema.write_json(w);
    }
}

impl<'de, T: DeserializeOwned + Default> Deserialize<'de> for JsonSchemaPropsOrArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrArrayVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned + Default> Visitor<'de> for OrArrayVisitor<T> {
            type Value = JsonSchemaPropsOrArray<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON schema or an array of JSON schemas")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema = T::deserialize(MapAccessDeserializer::new(map))?;
                Ok(JsonSchemaPropsOrArray { schema: Some(Box::new(schema)), json_schemas: Vec::new() })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let json_schemas = Vec::<NullIsDefault<T>>::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(JsonSchemaPropsOrArray { schema: None, json_schemas: json_schemas.into_iter().map(|s| s.0).collect() })
            }

            ignore_other_json_values!(JsonSchemaPropsOrArray { schema: None, json_schemas: Vec::new() });
        }

        deserializer.deserialize_any(OrArrayVisitor(PhantomData))
    }
}

/// An array element that Go's decoder leaves at its zero value when it is `null`.
struct NullIsDefault<T>(T);

impl<'de, T: DeserializeOwned + Default> Deserialize<'de> for NullIsDefault<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(deserializer).map(|v| NullIsDefault(v.unwrap_or_default()))
    }
}

impl<T: Schema> prost::Message for JsonSchemaPropsOrArray<T> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if let Some(schema) = &self.schema {
            message::encode(1, schema.as_ref(), buf);
        }
        message::encode_repeated(2, &self.json_schemas, buf);
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        match tag {
            1 => merge_schema(&mut self.schema, wire_type, buf, ctx),
            2 => message::merge_repeated(wire_type, &mut self.json_schemas, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        self.schema.as_ref().map_or(0, |s| message::encoded_len(1, s.as_ref())) + message::encoded_len_repeated(2, &self.json_schemas)
    }

    fn clear(&mut self) {
        self.schema = None;
        self.json_schemas.clear();
    }
}

/// `JSONSchemaPropsOrStringArray`: `dependencies` values, either a schema or a list of property
/// names.
///
/// Protobuf: `{ optional JSONSchemaProps schema = 1; repeated string property = 2; }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonSchemaPropsOrStringArray<T> {
    pub schema: Option<Box<T>>,
    pub property: Vec<String>,
}

impl<T> JsonSchemaPropsOrStringArray<T> {
    pub fn from_schema(schema: T) -> Self {
        JsonSchemaPropsOrStringArray { schema: Some(Box::new(schema)), property: Vec::new() }
    }

    pub fn from_properties(property: Vec<String>) -> Self {
        JsonSchemaPropsOrStringArray { schema: None, property }
    }
}

impl<T: Serialize> Serialize for JsonSchemaPropsOrStringArray<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.property.is_empty() {
            return self.property.serialize(serializer);
        }
        match &self.schema {
            Some(schema) => schema.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }
}

/// As its `Serialize`.
impl<T: WriteJson> WriteJson for JsonSchemaPropsOrStringArray<T> {
    fn write_json(&self, w: &mut JsonWriter<'_>) {
        if !self.property.is_empty() {
            return self.property.write_json(w);
        }
        self.schema.write_json(w);
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for JsonSchemaPropsOrStringArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrStringArrayVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned> Visitor<'de> for OrStringArrayVisitor<T> {
            type Value = JsonSchemaPropsOrStringArray<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON schema or an array of strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let schema = T::deserialize(MapAccessDeserializer::new(map))?;
                Ok(JsonSchemaPropsOrStringArray { schema: Some(Box::new(schema)), property: Vec::new() })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                let property = Vec::<NullIsDefault<String>>::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(JsonSchemaPropsOrStringArray { schema: None, property: property.into_iter().map(|s| s.0).collect() })
            }

            ignore_other_json_values!(JsonSchemaPropsOrStringArray { schema: None, property: Vec::new() });
        }

        deserializer.deserialize_any(OrStringArrayVisitor(PhantomData))
    }
}

impl<T: Schema> prost::Message for JsonSchemaPropsOrStringArray<T> {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if let Some(schema) = &self.schema {
            message::encode(1, schema.as_ref(), buf);
        }
        string::encode_repeated(2, &self.property, buf);
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        match tag {
            1 => merge_schema(&mut self.schema, wire_type, buf, ctx),
            2 => string::merge_repeated(wire_type, &mut self.property, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        self.schema.as_ref().map_or(0, |s| message::encoded_len(1, s.as_ref())) + string::encoded_len_repeated(2, &self.property)
    }

    fn clear(&mut self) {
        self.schema = None;
        self.property.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::{hex, unhex};
    use prost::Message;

    /// A stand-in for the generated `JSONSchemaProps`, recursive through the unions.
    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    struct TestSchema {
        #[prost(string, tag = "1")]
        #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
        type_: String,
        #[prost(message, optional, tag = "2")]
        #[serde(default, rename = "additionalProperties", skip_serializing_if = "Option::is_none")]
        additional_properties: Option<JsonSchemaPropsOrBool<TestSchema>>,
        #[prost(message, optional, tag = "3")]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        items: Option<JsonSchemaPropsOrArray<TestSchema>>,
    }

    /// Written as the generated `JSONSchemaProps` writes itself: by field, with the same rules
    /// as the serde attributes above.
    impl WriteJson for TestSchema {
        fn write_json(&self, w: &mut JsonWriter<'_>) {
            w.begin_object();
            if !self.type_.is_empty() {
                w.field("type");
                self.type_.write_json(w);
            }
            if self.additional_properties.is_some() {
                w.field("additionalProperties");
                self.additional_properties.write_json(w);
            }
            if self.items.is_some() {
                w.field("items");
                self.items.write_json(w);
            }
            w.end_object();
        }
    }

    #[test]
    fn written_as_serialized() {
        let odd = OrBool { allows: false, schema: Some(Box::new(schema("x"))) };
        let both = OrArray { schema: Some(Box::new(schema("a"))), json_schemas: vec![schema("b")] };
        let nested = r#"{"type":"object","additionalProperties":{"type":"array","items":[{"additionalProperties":false}]}}"#;
        for value in [
            TestSchema { additional_properties: Some(odd), items: Some(both), ..schema("t") },
            TestSchema { additional_properties: Some(OrBool::from_bool(true)), items: Some(OrArray::default()), ..schema("") },
            TestSchema { items: Some(OrArray::from_schema(schema("a"))), ..schema("") },
            serde_json::from_str(nested).unwrap(),
        ] {
            let written = String::from_utf8(crate::write::to_vec(&value).unwrap()).unwrap();
            assert_eq!(written, serde_json::to_string(&value).unwrap());
            assert_eq!(crate::write::to_value(&value).unwrap(), serde_json::to_value(&value).unwrap());
        }
        for strings in [OrStrings::default(), OrStrings::from_schema(schema("a")), OrStrings { schema: None, property: vec!["x".into()] }] {
            let written = String::from_utf8(crate::write::to_vec(&strings).unwrap()).unwrap();
            assert_eq!(written, serde_json::to_string(&strings).unwrap());
        }
    }

    fn schema(type_: &str) -> TestSchema {
        TestSchema { type_: type_.to_string(), ..Default::default() }
    }

    type OrBool = JsonSchemaPropsOrBool<TestSchema>;
    type OrArray = JsonSchemaPropsOrArray<TestSchema>;
    type OrStrings = JsonSchemaPropsOrStringArray<TestSchema>;

    #[test]
    fn or_bool_json() {
        assert_eq!(serde_json::from_str::<OrBool>("true").unwrap(), OrBool::from_bool(true));
        assert_eq!(serde_json::from_str::<OrBool>("false").unwrap(), OrBool::from_bool(false));
        assert_eq!(serde_json::from_str::<OrBool>(r#"{"type":"string"}"#).unwrap(), OrBool::from_schema(schema("string")));
        assert_eq!(serde_json::from_str::<OrBool>("{}").unwrap(), OrBool::from_schema(schema("")));
        for bad in ["null", "1", r#""true""#, "[]", "[true]"] {
            let err = serde_json::from_str::<OrBool>(bad).unwrap_err().to_string();
            assert!(err.starts_with("boolean or JSON schema expected"), "{bad}: {err}");
        }
        assert_eq!(serde_json::to_string(&OrBool::from_bool(false)).unwrap(), "false");
        assert_eq!(serde_json::to_string(&OrBool::from_bool(true)).unwrap(), "true");
        assert_eq!(serde_json::to_string(&OrBool::from_schema(schema("x"))).unwrap(), r#"{"type":"x"}"#);
        // The schema wins over `allows` when both are set.
        let odd = OrBool { allows: false, schema: Some(Box::new(schema("x"))) };
        assert_eq!(serde_json::to_string(&odd).unwrap(), r#"{"type":"x"}"#);
    }

    #[test]
    fn or_bool_protobuf() {
        for (value, expected) in [
            (OrBool::from_bool(false), "0800"),
            (OrBool::from_bool(true), "0801"),
            (OrBool::from_schema(schema("a")), "080112030a0161"),
            (OrBool::from_schema(schema("")), "08011200"),
        ] {
            let bytes = value.encode_to_vec();
            assert_eq!(hex(&bytes), expected);
            assert_eq!(value.encoded_len(), bytes.len());
            assert_eq!(OrBool::decode(bytes.as_slice()).unwrap(), value);
        }
        for bad in ["0a00", "08", "1205", "0f"] {
            assert!(OrBool::decode(&unhex(bad)[..]).is_err(), "{bad}");
        }
    }

    #[test]
    fn or_array_json() {
        assert_eq!(serde_json::from_str::<OrArray>(r#"{"type":"a"}"#).unwrap(), OrArray::from_schema(schema("a")));
        assert_eq!(
            serde_json::from_str::<OrArray>(r#"[{"type":"a"},null,{}]"#).unwrap(),
            OrArray::from_schemas(vec![schema("a"), schema(""), schema("")])
        );
        // Anything else is the empty value, without error, as upstream.
        for other in ["null", "1", "true", r#""s""#, "[]"] {
            assert_eq!(serde_json::from_str::<OrArray>(other).unwrap(), OrArray::default(), "{other}");
        }
        assert!(serde_json::from_str::<OrArray>("[1]").is_err());
        assert_eq!(serde_json::to_string(&OrArray::default()).unwrap(), "null");
        assert_eq!(serde_json::to_string(&OrArray::from_schema(schema("a"))).unwrap(), r#"{"type":"a"}"#);
        let both = OrArray { schema: Some(Box::new(schema("a"))), json_schemas: vec![schema("b")] };
        assert_eq!(serde_json::to_string(&both).unwrap(), r#"[{"type":"b"}]"#);
    }

    #[test]
    fn or_array_protobuf() {
        let value = OrArray { schema: Some(Box::new(schema("a"))), json_schemas: vec![schema("b"), schema("")] };
        let bytes = value.encode_to_vec();
        assert_eq!(hex(&bytes), "0a030a0161".to_string() + "12030a0162" + "1200");
        assert_eq!(value.encoded_len(), bytes.len());
        assert_eq!(OrArray::decode(bytes.as_slice()).unwrap(), value);
        assert!(OrArray::default().encode_to_vec().is_empty());
        for bad in ["0801", "0a05", "1202ff"] {
            assert!(OrArray::decode(&unhex(bad)[..]).is_err(), "{bad}");
        }
    }

    #[test]
    fn or_string_array_json_and_protobuf() {
        assert_eq!(serde_json::from_str::<OrStrings>(r#"["a","b"]"#).unwrap(), OrStrings::from_properties(vec!["a".into(), "b".into()]));
        assert_eq!(
            serde_json::from_str::<OrStrings>(r#"["a",null]"#).unwrap(),
            OrStrings::from_properties(vec!["a".into(), String::new()])
        );
        assert_eq!(serde_json::from_str::<OrStrings>(r#"{"type":"a"}"#).unwrap(), OrStrings::from_schema(schema("a")));
        for other in ["null", "1", "false", r#""s""#] {
            assert_eq!(serde_json::from_str::<OrStrings>(other).unwrap(), OrStrings::default(), "{other}");
        }
        assert!(serde_json::from_str::<OrStrings>("[1]").is_err());
        assert_eq!(serde_json::to_string(&OrStrings::default()).unwrap(), "null");
        assert_eq!(serde_json::to_string(&OrStrings::from_properties(vec!["x".into()])).unwrap(), r#"["x"]"#);
        assert_eq!(serde_json::to_string(&OrStrings::from_schema(schema("a"))).unwrap(), r#"{"type":"a"}"#);

        let value = OrStrings { schema: Some(Box::new(schema("a"))), property: vec!["x".into(), String::new()] };
        let bytes = value.encode_to_vec();
        assert_eq!(hex(&bytes), "0a030a01611201781200");
        assert_eq!(value.encoded_len(), bytes.len());
        assert_eq!(OrStrings::decode(bytes.as_slice()).unwrap(), value);
        assert!(OrStrings::decode(&unhex("1202ffff")[..]).is_err());
    }

    #[test]
    fn recursive_schemas() {
        let json = r#"{"type":"object","additionalProperties":{"type":"array","items":[{"additionalProperties":false}]}}"#;
        let value: TestSchema = serde_json::from_str(json).unwrap();
        let inner = value.additional_properties.as_ref().unwrap().schema.as_ref().unwrap();
        assert_eq!(inner.type_, "array");
        assert_eq!(inner.items.as_ref().unwrap().json_schemas[0].additional_properties, Some(OrBool::from_bool(false)));
        assert_eq!(serde_json::to_string(&value).unwrap(), json);
        let bytes = value.encode_to_vec();
        assert_eq!(TestSchema::decode(bytes.as_slice()).unwrap(), value);
    }

    #[test]
    fn deep_nesting_is_a_decode_error_not_a_stack_overflow() {
        // 200 levels of additionalProperties.schema: prost's recursion limit (100) stops it.
        let mut bytes = Vec::new();
        for _ in 0..200 {
            let mut outer = Vec::new();
            // TestSchema.additional_properties (2) { OrBool.schema (2) { bytes } }
            let mut or_bool = vec![0x12];
            prost::encoding::encode_varint(bytes.len() as u64, &mut or_bool);
            or_bool.extend_from_slice(&bytes);
            outer.push(0x12);
            prost::encoding::encode_varint(or_bool.len() as u64, &mut outer);
            outer.extend_from_slice(&or_bool);
            bytes = outer;
        }
        assert!(TestSchema::decode(bytes.as_slice()).is_err());
    }
}
