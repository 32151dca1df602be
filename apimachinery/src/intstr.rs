//! `IntOrString` (`k8s.io/apimachinery/pkg/util/intstr.IntOrString`): a field that holds either an
//! `int32` or a string, such as a port number or name, or a count or percentage.
//!
//! JSON: a bare integer or a string. `null` decodes to `Int(0)` (Go's `UnmarshalJSON` leaves the
//! zero value); any other JSON value (a non-integral or out-of-range number, a bool, an object)
//! is an error, as in Go.
//!
//! Protobuf: `message IntOrString { optional int64 type = 1; optional int32 intVal = 2;
//! optional string strVal = 3; }`. Upstream's marshaller always writes all three fields, so
//! `Int(5)` is `08 00 10 05 1a 00` and `String("http")` is `08 01 10 00 1a 04 68 74 74 70`.

use std::fmt;

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, int32, int64, skip_field, string};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Upstream's `intstr.Type`: 0 for an int, 1 for a string.
const TYPE_INT: i64 = 0;
const TYPE_STRING: i64 = 1;

/// An `int32` or a string (`intstr.IntOrString`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntOrString {
    Int(i32),
    String(String),
}

impl Default for IntOrString {
    /// Upstream's zero value: `{Type: Int, IntVal: 0}`.
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl IntOrString {
    /// Upstream's `intstr.Parse`: an integer if the whole string is a base-10 integer
    /// (`strconv.Atoi`, with an optional sign), otherwise the string itself. Upstream truncates an
    /// integer outside the `int32` range (logging an error); here such a value stays a string.
    pub fn parse(value: &str) -> IntOrString {
        match parse_go_atoi(value) {
            Some(i) => IntOrString::Int(i),
            None => IntOrString::String(value.to_string()),
        }
    }

    /// Upstream's `IntValue`: the int, or the string parsed as an integer (0 when it is not one).
    pub fn int_value(&self) -> i64 {
        match self {
            IntOrString::Int(i) => i64::from(*i),
            IntOrString::String(s) => parse_go_atoi64(s).unwrap_or(0),
        }
    }

    /// The int, if this holds one.
    pub fn as_int(&self) -> Option<i32> {
        match self {
            IntOrString::Int(i) => Some(*i),
            IntOrString::String(_) => None,
        }
    }

    /// The string, if this holds one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            IntOrString::Int(_) => None,
            IntOrString::String(s) => Some(s),
        }
    }

    fn type_code(&self) -> i64 {
        match self {
            IntOrString::Int(_) => TYPE_INT,
            IntOrString::String(_) => TYPE_STRING,
        }
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, decimal digits only.
fn parse_go_atoi64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// `intstr.Parse` keeps a value as an int only when it fits an `int32`.
fn parse_go_atoi(s: &str) -> Option<i32> {
    parse_go_atoi64(s).and_then(|i| i32::try_from(i).ok())
}

impl From<i32> for IntOrString {
    fn from(value: i32) -> Self {
        IntOrString::Int(value)
    }
}

impl From<String> for IntOrString {
    fn from(value: String) -> Self {
        IntOrString::String(value)
    }
}

impl From<&str> for IntOrString {
    fn from(value: &str) -> Self {
        IntOrString::String(value.to_string())
    }
}

impl fmt::Display for IntOrString {
    /// Upstream's `String()`: the string, or the decimal int.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(i) => write!(f, "{i}"),
            IntOrString::String(s) => f.write_str(s),
        }
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(i) => serializer.serialize_i32(*i),
            IntOrString::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntOrStringVisitor;

        impl<'de> Visitor<'de> for IntOrStringVisitor {
            type Value = IntOrString;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an int32 or a string")
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("json: cannot unmarshal number {v} into Go value of type int32")))
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("json: cannot unmarshal number {v} into Go value of type int32")))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<IntOrString, E> {
                Err(E::custom(format!("json: cannot unmarshal number {v} into Go value of type int32")))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v.to_string()))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v))
            }

            fn visit_unit<E: de::Error>(self) -> Result<IntOrString, E> {
                Ok(IntOrString::Int(0))
            }

            fn visit_none<E: de::Error>(self) -> Result<IntOrString, E> {
                Ok(IntOrString::Int(0))
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<IntOrString, D::Error> {
                d.deserialize_any(self)
            }
        }

        deserializer.deserialize_any(IntOrStringVisitor)
    }
}

#[allow(deprecated)] // prost offers no other way to build a DecodeError with a message.
fn decode_error(message: &'static str) -> DecodeError {
    DecodeError::new(message)
}

impl prost::Message for IntOrString {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        let (int_val, str_val) = match self {
            IntOrString::Int(i) => (*i, ""),
            IntOrString::String(s) => (0, s.as_str()),
        };
        int64::encode(1, &self.type_code(), buf);
        int32::encode(2, &int_val, buf);
        // `string::encode` wants a `&String`; write the same bytes without allocating.
        prost::encoding::encode_key(3, WireType::LengthDelimited, buf);
        prost::encoding::encode_varint(str_val.len() as u64, buf);
        buf.put_slice(str_val.as_bytes());
    }

    /// Fields arrive in tag order from upstream, so `type` selects the variant before its value
    /// arrives. A value for the variant not selected is read and dropped (upstream keeps it in the
    /// unused field, where nothing reads it).
    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        match tag {
            1 => {
                let mut code = 0i64;
                int64::merge(wire_type, &mut code, buf, ctx)?;
                match (code, &*self) {
                    (TYPE_INT, IntOrString::String(_)) => *self = IntOrString::Int(0),
                    (TYPE_STRING, IntOrString::Int(_)) => *self = IntOrString::String(String::new()),
                    (TYPE_INT | TYPE_STRING, _) => {}
                    _ => {
                        return Err(decode_error("invalid IntOrString type (want 0 for int or 1 for string)"));
                    }
                }
                Ok(())
            }
            2 => {
                let mut value = 0i32;
                int32::merge(wire_type, &mut value, buf, ctx)?;
                if let IntOrString::Int(i) = self {
                    *i = value;
                }
                Ok(())
            }
            3 => {
                let mut value = String::new();
                string::merge(wire_type, &mut value, buf, ctx)?;
                if let IntOrString::String(s) = self {
                    *s = value;
                }
                Ok(())
            }
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        let (int_val, str_len) = match self {
            IntOrString::Int(i) => (*i, 0),
            IntOrString::String(s) => (0, s.len()),
        };
        int64::encoded_len(1, &self.type_code())
            + int32::encoded_len(2, &int_val)
            + prost::encoding::key_len(3)
            + prost::encoding::encoded_len_varint(str_len as u64)
            + str_len
    }

    fn clear(&mut self) {
        *self = IntOrString::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::{hex, unhex};
    use prost::Message;

    #[test]
    fn protobuf_bytes() {
        for (value, expected) in [
            (IntOrString::Int(0), "080010001a00"),
            (IntOrString::Int(5), "080010051a00"),
            (IntOrString::Int(-1), "080010ffffffffffffffffff011a00"),
            (IntOrString::Int(i32::MAX), "080010ffffffff071a00"),
            (IntOrString::String(String::new()), "080110001a00"),
            (IntOrString::String("http".into()), "080110001a0468747470"),
            (IntOrString::String("25%".into()), "080110001a03323525"),
        ] {
            let bytes = value.encode_to_vec();
            assert_eq!(hex(&bytes), expected, "{value:?}");
            assert_eq!(value.encoded_len(), bytes.len());
            assert_eq!(IntOrString::decode(bytes.as_slice()).unwrap(), value);
        }
    }

    #[test]
    fn protobuf_decode_edge_cases() {
        // Empty message: the zero value.
        assert_eq!(IntOrString::decode(&[][..]).unwrap(), IntOrString::Int(0));
        // Only a type: the variant's zero value.
        assert_eq!(IntOrString::decode(&unhex("0801")[..]).unwrap(), IntOrString::String(String::new()));
        // Unknown fields are skipped.
        assert_eq!(IntOrString::decode(&unhex("08001007200a")[..]).unwrap(), IntOrString::Int(7));
        // Errors, never panics.
        for bad in ["0802", "08", "1a05616263", "0a00", "0f", "080110001a02ff"] {
            assert!(IntOrString::decode(&unhex(bad)[..]).is_err(), "{bad}");
        }
    }

    #[test]
    fn json() {
        for (value, json) in [
            (IntOrString::Int(8080), "8080"),
            (IntOrString::Int(-3), "-3"),
            (IntOrString::String("http".into()), r#""http""#),
            (IntOrString::String("80".into()), r#""80""#),
        ] {
            assert_eq!(serde_json::to_string(&value).unwrap(), json);
            assert_eq!(serde_json::from_str::<IntOrString>(json).unwrap(), value);
        }
        assert_eq!(serde_json::from_str::<IntOrString>("null").unwrap(), IntOrString::Int(0));
        for bad in ["1.5", "1.0", "2147483648", "-2147483649", "true", "{}", "[]"] {
            assert!(serde_json::from_str::<IntOrString>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_and_values() {
        assert_eq!(IntOrString::parse("42"), IntOrString::Int(42));
        assert_eq!(IntOrString::parse("+42"), IntOrString::Int(42));
        assert_eq!(IntOrString::parse("-42"), IntOrString::Int(-42));
        assert_eq!(IntOrString::parse("4x"), IntOrString::String("4x".into()));
        assert_eq!(IntOrString::parse(" 4"), IntOrString::String(" 4".into()));
        assert_eq!(IntOrString::parse("3000000000"), IntOrString::String("3000000000".into()));
        assert_eq!(IntOrString::String("12".into()).int_value(), 12);
        assert_eq!(IntOrString::String("x".into()).int_value(), 0);
        assert_eq!(IntOrString::Int(3).to_string(), "3");
    }
}
