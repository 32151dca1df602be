//! `Duration` (`k8s.io/apimachinery/pkg/apis/meta/v1.Duration`): a Go `time.Duration`, a signed
//! count of nanoseconds.
//!
//! JSON: the string Go's `Duration.String()` prints (`"1h2m3.5s"`, `"0s"`, `"1.5µs"`, `"-100ms"`),
//! decoded with Go's `time.ParseDuration` rules and error messages. Anything but a string is an
//! error (so is `null`, which upstream turns into `time: invalid duration ""`).
//!
//! Protobuf: `message Duration { optional int64 duration = 1; }`, always written: one hour is
//! `08 80 c0 e2 85 e3 68`, zero is `08 00`.

use std::fmt;
use std::str::FromStr;

use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, int64, skip_field};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::time::quote;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1000 * NANOSECOND;
const MILLISECOND: u64 = 1000 * MICROSECOND;
const SECOND: u64 = 1000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// A signed span of nanoseconds (`metav1.Duration`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Duration {
    nanos: i64,
}

/// A string `time.ParseDuration` rejects; the message is Go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseDurationError(String);

impl Duration {
    pub const ZERO: Duration = Duration { nanos: 0 };

    pub const fn from_nanos(nanos: i64) -> Duration {
        Duration { nanos }
    }

    /// Whole seconds; saturates at the `i64` nanosecond range.
    pub const fn from_secs(secs: i64) -> Duration {
        Duration { nanos: secs.saturating_mul(SECOND as i64) }
    }

    pub const fn as_nanos(&self) -> i64 {
        self.nanos
    }

    /// The span as a `std::time::Duration`, or `None` when negative.
    pub fn to_std(&self) -> Option<std::time::Duration> {
        u64::try_from(self.nanos).ok().map(std::time::Duration::from_nanos)
    }

    /// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units ns, us, µs, μs, ms,
    /// s, m and h, a lone `0`, and fractions computed the way Go does (in `f64`, truncated).
    pub fn parse(text: &str) -> Result<Duration, ParseDurationError> {
        let invalid = || ParseDurationError(format!("time: invalid duration {}", quote(text)));

        let mut s = text;
        let mut neg = false;
        if let Some(rest) = s.strip_prefix('-') {
            neg = true;
            s = rest;
        } else if let Some(rest) = s.strip_prefix('+') {
            s = rest;
        }
        if s == "0" {
            return Ok(Duration::ZERO);
        }
        if s.is_empty() {
            return Err(invalid());
        }

        let mut total: u64 = 0;
        while !s.is_empty() {
            let first = s.as_bytes()[0];
            if !(first == b'.' || first.is_ascii_digit()) {
                return Err(invalid());
            }

            // [0-9]*
            let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
            let pre = rest.len() != s.len();
            s = rest;

            // (\.[0-9]*)?
            let mut frac: u64 = 0;
            let mut scale: f64 = 1.0;
            let mut post = false;
            if let Some(rest) = s.strip_prefix('.') {
                let (f, sc, rest2) = leading_fraction(rest);
                post = rest2.len() != rest.len();
                frac = f;
                scale = sc;
                s = rest2;
            }
            if !pre && !post {
                return Err(invalid());
            }

            // The unit runs up to the next '.' or digit (both ASCII, so this is a char boundary).
            let unit_len = s.bytes().position(|b| b == b'.' || b.is_ascii_digit()).unwrap_or(s.len());
            if unit_len == 0 {
                return Err(ParseDurationError(format!("time: missing unit in duration {}", quote(text))));
            }
            let (unit_name, rest) = s.split_at(unit_len);
            s = rest;
            let unit = match unit_name {
                "ns" => NANOSECOND,
                "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
                "ms" => MILLISECOND,
                "s" => SECOND,
                "m" => MINUTE,
                "h" => HOUR,
                _ => {
                    return Err(ParseDurationError(format!("time: unknown unit {} in duration {}", quote(unit_name), quote(text))));
                }
            };
            if whole > (1u64 << 63) / unit {
                return Err(invalid());
            }
            let mut value = whole * unit;
            if frac > 0 {
                // Go computes the fractional part in float64 (exact to the nanosecond for hours).
                value += (frac as f64 * (unit as f64 / scale)) as u64;
                if value > 1u64 << 63 {
                    return Err(invalid());
                }
            }
            total += value;
            if total > 1u64 << 63 {
                return Err(invalid());
            }
        }
        if neg {
            return Ok(Duration { nanos: (total as i64).wrapping_neg() });
        }
        if total > i64::MAX as u64 {
            return Err(invalid());
        }
        Ok(Duration { nanos: total as i64 })
    }
}

/// Go's `leadingInt`: the leading `[0-9]*` as a `u64`, `None` past 2^63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        if x > (1u64 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1u64 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Go's `leadingFraction`: the leading `[0-9]*` after a '.', as digits and a power-of-ten scale;
/// digits past the `u64` range are consumed without adding precision.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let mut x: u64 = 0;
    let mut scale = 1.0f64;
    let mut overflow = false;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > (i64::MAX as u64) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1u64 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

impl fmt::Display for Duration {
    /// Go's `time.Duration.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The longest output is "-2562047h47m16.854775808s" (25 bytes); fill from the end.
        let mut buf = [0u8; 32];
        let mut w = buf.len();
        let mut u = self.nanos.unsigned_abs();
        let neg = self.nanos < 0;

        let mut put = |w: &mut usize, b: u8| {
            *w -= 1;
            buf[*w] = b;
        };

        if u < SECOND {
            // Sub-second durations use a smaller unit: "1.2ms", "3µs", "5ns".
            if u == 0 {
                return f.write_str("0s");
            }
            put(&mut w, b's');
            let prec = if u < MICROSECOND {
                put(&mut w, b'n');
                0
            } else if u < MILLISECOND {
                // U+00B5 MICRO SIGN, as Go writes it.
                put(&mut w, 0xb5);
                put(&mut w, 0xc2);
                3
            } else {
                put(&mut w, b'm');
                6
            };
            u = fmt_frac(&mut put, &mut w, u, prec);
            fmt_int(&mut put, &mut w, u);
        } else {
            put(&mut w, b's');
            u = fmt_frac(&mut put, &mut w, u, 9);
            // u is now whole seconds.
            fmt_int(&mut put, &mut w, u % 60);
            u /= 60;
            if u > 0 {
                put(&mut w, b'm');
                fmt_int(&mut put, &mut w, u % 60);
                u /= 60;
                if u > 0 {
                    put(&mut w, b'h');
                    fmt_int(&mut put, &mut w, u);
                }
            }
        }
        if neg {
            put(&mut w, b'-');
        }
        // Only ASCII and the two bytes of 'µ' were written.
        f.write_str(std::str::from_utf8(&buf[w..]).map_err(|_| fmt::Error)?)
    }
}

/// Writes the fraction `v / 10^prec` (".25"), dropping trailing zeros and the point when the
/// fraction is zero; returns `v / 10^prec`.
fn fmt_frac(put: &mut impl FnMut(&mut usize, u8), w: &mut usize, mut v: u64, prec: u32) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            put(w, b'0' + digit);
        }
        v /= 10;
    }
    if print {
        put(w, b'.');
    }
    v
}

fn fmt_int(put: &mut impl FnMut(&mut usize, u8), w: &mut usize, mut v: u64) {
    if v == 0 {
        put(w, b'0');
        return;
    }
    while v > 0 {
        put(w, b'0' + (v % 10) as u8);
        v /= 10;
    }
}

impl FromStr for Duration {
    type Err = ParseDurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

impl From<std::time::Duration> for Duration {
    /// Saturates at `i64::MAX` nanoseconds (about 292 years).
    fn from(d: std::time::Duration) -> Self {
        Duration { nanos: i64::try_from(d.as_nanos()).unwrap_or(i64::MAX) }
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;

        impl Visitor<'_> for DurationVisitor {
            type Value = Duration;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration string such as \"1h2m3s\"")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                Duration::parse(v).map_err(E::custom)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Duration, E> {
                Duration::parse("").map_err(E::custom)
            }
        }

        deserializer.deserialize_str(DurationVisitor)
    }
}

impl prost::Message for Duration {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        int64::encode(1, &self.nanos, buf);
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        match tag {
            1 => int64::merge(wire_type, &mut self.nanos, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        int64::encoded_len(1, &self.nanos)
    }

    fn clear(&mut self) {
        self.nanos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::hex;
    use prost::Message;

    const US: i64 = 1_000;
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;

    /// Go's `durationTests` (time_test.go).
    #[test]
    fn string_matches_go() {
        for (text, nanos) in [
            ("0s", 0),
            ("1ns", 1),
            ("1.1µs", 1100),
            ("2.2ms", 2200 * US),
            ("3.3s", 3300 * MS),
            ("4m5s", 4 * M + 5 * S),
            ("4m5.001s", 4 * M + 5001 * MS),
            ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
            ("8m0.000000001s", 8 * M + 1),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("1h0m0s", H),
            ("1m0s", M),
            ("-1.5s", -1500 * MS),
            ("100ms", 100 * MS),
            ("1.5µs", 1500),
            ("1h2m3.5s", H + 2 * M + 3500 * MS),
        ] {
            assert_eq!(Duration::from_nanos(nanos).to_string(), text);
            assert_eq!(Duration::parse(text).unwrap().as_nanos(), nanos, "{text}");
        }
    }

    /// Go's `parseDurationTests`.
    #[test]
    fn parse_matches_go() {
        for (text, nanos) in [
            ("0", 0),
            ("5s", 5 * S),
            ("30s", 30 * S),
            ("1478s", 1478 * S),
            ("-5s", -5 * S),
            ("+5s", 5 * S),
            ("-0", 0),
            ("+0", 0),
            ("5.0s", 5 * S),
            ("5.6s", 5 * S + 600 * MS),
            ("5.s", 5 * S),
            (".5s", 500 * MS),
            ("1.0s", S),
            ("1.00s", S),
            ("1.004s", S + 4 * MS),
            ("1.0040s", S + 4 * MS),
            ("100.00100s", 100 * S + MS),
            ("10ns", 10),
            ("11us", 11 * US),
            ("12µs", 12 * US),
            ("12μs", 12 * US),
            ("13ms", 13 * MS),
            ("14s", 14 * S),
            ("15m", 15 * M),
            ("16h", 16 * H),
            ("3h30m", 3 * H + 30 * M),
            ("10.5s4m", 4 * M + 10 * S + 500 * MS),
            ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
            ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6),
            ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
            ("52763797000ns", 52763797000),
            ("0.3333333333333333333h", 20 * M),
            ("9007199254740993ns", (1 << 53) + 1),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("-9223372036s854ms775us808ns", i64::MIN),
            ("-2562047h47m16.854775808s", i64::MIN),
            ("0.100000000000000000000h", 6 * M),
            ("0.830103483285477580700h", 49 * M + 48 * S + 372539827),
        ] {
            assert_eq!(Duration::parse(text), Ok(Duration::from_nanos(nanos)), "{text}");
        }
    }

    /// Go's `parseDurationErrorTests` (the valid-UTF-8 ones) and its messages.
    #[test]
    fn parse_errors_match_go() {
        for (text, message) in [
            ("", r#"time: invalid duration """#),
            ("3", r#"time: missing unit in duration "3""#),
            ("-", r#"time: invalid duration "-""#),
            ("s", r#"time: invalid duration "s""#),
            (".", r#"time: invalid duration ".""#),
            ("-.", r#"time: invalid duration "-.""#),
            (".s", r#"time: invalid duration ".s""#),
            ("+.s", r#"time: invalid duration "+.s""#),
            ("1d", r#"time: unknown unit "d" in duration "1d""#),
            ("\u{fffd}", r#"time: invalid duration "\xef\xbf\xbd""#),
            ("1\u{fffd}", r#"time: unknown unit "\xef\xbf\xbd" in duration "1\xef\xbf\xbd""#),
            ("9223372036854775808ns", r#"time: invalid duration "9223372036854775808ns""#),
            ("9223372036854775.808us", r#"time: invalid duration "9223372036854775.808us""#),
            ("9223372036854ms775us808ns", r#"time: invalid duration "9223372036854ms775us808ns""#),
            ("-9223372036854775809ns", r#"time: invalid duration "-9223372036854775809ns""#),
            ("99999999999999999999h", r#"time: invalid duration "99999999999999999999h""#),
            ("1h\"", r#"time: unknown unit "h\"" in duration "1h\"""#),
        ] {
            assert_eq!(Duration::parse(text).unwrap_err().to_string(), message, "{text:?}");
        }
    }

    #[test]
    fn protobuf_bytes() {
        for (nanos, expected) in [(0, "0800"), (1, "0801"), (H, "0880c0e285e368"), (-1, "08ffffffffffffffffff01")] {
            let d = Duration::from_nanos(nanos);
            let bytes = d.encode_to_vec();
            assert_eq!(hex(&bytes), expected);
            assert_eq!(d.encoded_len(), bytes.len());
            assert_eq!(Duration::decode(bytes.as_slice()).unwrap(), d);
        }
        assert_eq!(Duration::decode(&[][..]).unwrap(), Duration::ZERO);
        for bad in [&[0x08][..], &[0x0a, 0x01][..], &[0x08, 0xff][..], &[0x0f][..]] {
            assert!(Duration::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn json() {
        let d = Duration::from_nanos(90 * S);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#""1m30s""#);
        assert_eq!(serde_json::from_str::<Duration>(r#""1m30s""#).unwrap(), d);
        assert_eq!(serde_json::to_string(&Duration::from_nanos(1500)).unwrap(), "\"1.5\u{b5}s\"");
        for bad in ["null", "5", r#""5""#, r#""""#, "{}"] {
            assert!(serde_json::from_str::<Duration>(bad).is_err(), "{bad}");
        }
    }
}
