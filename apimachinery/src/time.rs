//! `Time` and `MicroTime` (`k8s.io/apimachinery/pkg/apis/meta/v1`): a Go `time.Time` that may be
//! the zero time (unset).
//!
//! JSON: an RFC 3339 string in UTC, `Time` at second precision (`"2006-01-02T15:04:05Z"`) and
//! `MicroTime` with exactly six fractional digits (`"2006-01-02T15:04:05.000000Z"`); fractions
//! are truncated, as Go's formatter does. The zero time is `null`, and `null` decodes to it.
//! Decoding follows Go's `time.Parse` with layout `time.RFC3339` (`Time`: any offset, an optional
//! fraction of any length) or `RFC3339Micro` (`MicroTime`: exactly six fractional digits), and
//! converts to UTC. A string naming Go's zero instant (`0001-01-01T00:00:00Z`) is the zero time.
//!
//! Protobuf: `message Timestamp { optional int64 seconds = 1; optional int32 nanos = 2; }`.
//! Upstream writes nothing for the zero time and otherwise both fields. `Time` always writes
//! `nanos = 0` and drops `nanos` when decoding (upstream's `Time.ProtoTime`/`Unmarshal`, kept so
//! JSON and protobuf clients agree); `MicroTime` writes and keeps them. Decoded values are
//! normalised like Go's `time.Unix` (nanos folded into `[0, 1e9)`), so re-encoding upstream's
//! bytes gives the same bytes.
//!
//! Representation: `None` is the zero time; `Some((seconds, nanos))` holds Unix seconds and
//! nanoseconds as given (normalised when read). Any `i64` of seconds is accepted without panics;
//! years outside 0..=9999 print with more digits or a sign (Go's own output there differs for
//! instants beyond its internal range of about ±292 billion years).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use chrono::{DateTime, Utc};
use prost::DecodeError;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, int32, int64, skip_field};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Unix seconds of Go's zero `time.Time`, 0001-01-01T00:00:00Z.
const GO_ZERO_UNIX: i64 = -62_135_596_800;
const NANOS_PER_SEC: i64 = 1_000_000_000;

const LAYOUT_RFC3339: &str = "2006-01-02T15:04:05Z07:00";
const LAYOUT_RFC3339_NANO: &str = "2006-01-02T15:04:05.999999999Z07:00";
const LAYOUT_RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// A string Go's `time.Parse` rejects; the message is Go's `time.ParseError` text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseTimeError(String);

/// Go's `time.Unix(sec, nsec)` normalisation: nanos folded into `[0, 1e9)`, seconds wrapping as
/// Go's `int64` arithmetic does.
fn normalize(secs: i64, nanos: i64) -> (i64, u32) {
    let (mut secs, mut nanos) = (secs, nanos);
    if !(0..NANOS_PER_SEC).contains(&nanos) {
        let n = nanos / NANOS_PER_SEC;
        secs = secs.wrapping_add(n);
        nanos -= n * NANOS_PER_SEC;
        if nanos < 0 {
            nanos += NANOS_PER_SEC;
            secs = secs.wrapping_sub(1);
        }
    }
    (secs, nanos as u32)
}

/// The instant shared by `Time` and `MicroTime`.
#[derive(Clone, Copy, Default)]
struct Instant(Option<(i64, i32)>);

impl Instant {
    fn from_unix(secs: i64, nanos: i64) -> Instant {
        let (secs, nanos) = normalize(secs, nanos);
        Instant(Some((secs, nanos as i32)))
    }

    /// Normalised `(unix seconds, nanos)`; the zero time is Go's zero instant.
    fn key(&self) -> (i64, u32) {
        match self.0 {
            None => (GO_ZERO_UNIX, 0),
            Some((secs, nanos)) => normalize(secs, i64::from(nanos)),
        }
    }

    fn is_zero(&self) -> bool {
        self.key() == (GO_ZERO_UNIX, 0)
    }

    fn now() -> Instant {
        let now = Utc::now();
        Instant::from_unix(now.timestamp(), i64::from(now.timestamp_subsec_nanos()))
    }

    fn from_chrono(dt: DateTime<Utc>) -> Instant {
        Instant::from_unix(dt.timestamp(), i64::from(dt.timestamp_subsec_nanos()))
    }

    fn to_chrono(self) -> Option<DateTime<Utc>> {
        if self.is_zero() {
            return None;
        }
        let (secs, nanos) = self.key();
        DateTime::from_timestamp(secs, nanos)
    }

    /// RFC 3339 in UTC with `frac` fractional digits, or (`None`) Go's `.999999999` form that
    /// drops trailing zeros.
    fn format(self, frac: Option<usize>) -> String {
        let (secs, nanos) = self.key();
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        // Digit by digit: every object's timestamps are written on every encode, and
        // `format!` cost several times more.
        let mut out = String::with_capacity(32);
        if year < 0 {
            out.push('-');
        }
        push_padded(&mut out, year.unsigned_abs(), 4);
        let clock = [('-', i64::from(month)), ('-', i64::from(day)), ('T', rem / 3600), (':', rem / 60 % 60), (':', rem % 60)];
        for (separator, value) in clock {
            out.push(separator);
            push_padded(&mut out, value.unsigned_abs(), 2);
        }
        let digits = match frac {
            Some(n) => n.min(9),
            None if nanos == 0 => 0,
            // Go's `.999999999`: the digits before the trailing zeros.
            None => {
                let (mut kept, mut rest) = (9, nanos);
                while rest % 10 == 0 {
                    rest /= 10;
                    kept -= 1;
                }
                kept
            }
        };
        if digits > 0 {
            out.push('.');
            let mut fraction = String::with_capacity(9);
            push_padded(&mut fraction, u64::from(nanos), 9);
            out.push_str(&fraction[..digits]);
        }
        out.push('Z');
        out
    }
}

impl PartialEq for Instant {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Instant {}

impl Ord for Instant {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Instant {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for Instant {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// `value` in decimal, zero-padded to `width` digits (more when it needs them): `{:0width$}`.
fn push_padded(out: &mut String, value: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let (mut rest, mut start) = (value, digits.len());
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &digit in &digits[start.min(digits.len().saturating_sub(width))..] {
        out.push(char::from(digit));
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i128::from(month <= 2);
    (year.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64, month, day)
}

/// A proleptic Gregorian date to days since 1970-01-01 (inverse of [`civil_from_days`]).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// How the fractional second is laid out.
#[derive(Clone, Copy, PartialEq)]
enum Fraction {
    /// `time.RFC3339` / `RFC3339Nano`: optional, any number of digits (beyond nine ignored).
    Optional,
    /// `RFC3339Micro`: exactly six digits.
    ExactlySix,
}

/// Go's `time.Parse` for the RFC 3339 layouts used by `Time` and `MicroTime`, returning UTC
/// (unix seconds, nanos). Errors carry Go's `ParseError` text.
fn parse_rfc3339(value: &str, layout: &'static str, fraction: Fraction) -> Result<(i64, i64), ParseTimeError> {
    let cannot = |rest: &str, elem: &str| {
        ParseTimeError(format!("parsing time {} as {}: cannot parse {} as {}", quote(value), quote(layout), quote(rest), quote(elem)))
    };
    let out_of_range = |what: &str| ParseTimeError(format!("parsing time {}: {what} out of range", quote(value)));

    let b = value.as_bytes();
    let mut pos = 0usize;
    let digits = |pos: usize, n: usize| -> Option<i64> {
        let s = b.get(pos..pos + n)?;
        s.iter().all(u8::is_ascii_digit).then(|| s.iter().fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
    };
    let rest = |pos: usize| value.get(pos..).unwrap_or("");

    let year = digits(pos, 4).ok_or_else(|| cannot(rest(pos), "2006"))?;
    pos += 4;
    let expect = |pos: &mut usize, lit: u8, elem: &str| -> Result<(), ParseTimeError> {
        if b.get(*pos) == Some(&lit) {
            *pos += 1;
            Ok(())
        } else {
            Err(cannot(rest(*pos), elem))
        }
    };
    expect(&mut pos, b'-', "-")?;
    let month = digits(pos, 2).ok_or_else(|| cannot(rest(pos), "01"))?;
    pos += 2;
    if !(1..=12).contains(&month) {
        return Err(out_of_range("month"));
    }
    expect(&mut pos, b'-', "-")?;
    let day = digits(pos, 2).ok_or_else(|| cannot(rest(pos), "02"))?;
    pos += 2;
    expect(&mut pos, b'T', "T")?;
    // Go's "15" takes one or two digits.
    let hour = match (digits(pos, 2), digits(pos, 1)) {
        (Some(h), _) => {
            pos += 2;
            h
        }
        (None, Some(h)) => {
            pos += 1;
            h
        }
        _ => return Err(cannot(rest(pos), "15")),
    };
    if hour >= 24 {
        return Err(out_of_range("hour"));
    }
    expect(&mut pos, b':', ":")?;
    let minute = digits(pos, 2).ok_or_else(|| cannot(rest(pos), "04"))?;
    pos += 2;
    if minute >= 60 {
        return Err(out_of_range("minute"));
    }
    expect(&mut pos, b':', ":")?;
    let second = digits(pos, 2).ok_or_else(|| cannot(rest(pos), "05"))?;
    pos += 2;
    if second >= 60 {
        return Err(out_of_range("second"));
    }

    let is_sep = |c: Option<&u8>| matches!(c, Some(b'.') | Some(b','));
    let mut nanos = 0i64;
    match fraction {
        Fraction::Optional => {
            if is_sep(b.get(pos)) && b.get(pos + 1).is_some_and(u8::is_ascii_digit) {
                let n = b[pos + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                nanos = frac_nanos(&b[pos + 1..pos + 1 + n]);
                pos += 1 + n;
            }
        }
        Fraction::ExactlySix => {
            if !is_sep(b.get(pos)) {
                return Err(cannot(rest(pos), ".000000"));
            }
            let d = digits(pos + 1, 6).ok_or_else(|| cannot(rest(pos), ".000000"))?;
            nanos = d * 1000;
            pos += 7;
        }
    }

    let offset_secs = if b.get(pos) == Some(&b'Z') {
        pos += 1;
        0
    } else {
        let sign = match b.get(pos) {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return Err(cannot(rest(pos), "Z07:00")),
        };
        let (Some(hh), Some(b':'), Some(mm)) = (digits(pos + 1, 2), b.get(pos + 3), digits(pos + 4, 2)) else {
            return Err(cannot(rest(pos), "Z07:00"));
        };
        if hh > 24 {
            return Err(out_of_range("time zone offset hour"));
        }
        if mm > 60 {
            return Err(out_of_range("time zone offset minute"));
        }
        pos += 6;
        sign * (hh * 3600 + mm * 60)
    };
    if pos < b.len() {
        return Err(ParseTimeError(format!("parsing time {}: extra text: {}", quote(value), quote(rest(pos)))));
    }
    if day < 1 || day > i64::from(days_in_month(year, month as u32)) {
        return Err(out_of_range("day"));
    }

    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Ok((secs, nanos))
}

/// Nanoseconds from fractional digits; digits past the ninth are dropped, as Go does.
fn frac_nanos(digits: &[u8]) -> i64 {
    let mut nanos = 0i64;
    for i in 0..9 {
        nanos = nanos * 10 + digits.get(i).map_or(0, |d| i64::from(d - b'0'));
    }
    nanos
}

/// The `time` package's own `quote` (`format.go`) for its parse errors, here and in
/// `Duration`'s: printable ASCII as is (`"` and `\` escaped), every byte of anything else as
/// `\xNN`. Unlike `strconv.Quote` ([`crate::strconv::quote`]) it escapes all non-ASCII, and
/// control characters as bytes (`\x09`, not `\t`).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if (c as u32) >= 0x80 || c < ' ' {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// The JSON visitor shared by both types: a string for `parse`, or `null` for the zero time.
struct TimeVisitor<T> {
    parse: fn(&str) -> Result<T, ParseTimeError>,
    zero: T,
}

impl<'de, T> Visitor<'de> for TimeVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an RFC 3339 time string or null")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(self.zero)
    }

    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(self.zero)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

macro_rules! time_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Instant);

        impl $name {
            /// The zero time (unset); the same as `Default`.
            pub const fn zero() -> Self {
                $name(Instant(None))
            }

            /// The current time, at full precision (serialisation truncates).
            pub fn now() -> Self {
                $name(Instant::now())
            }

            /// Go's `time.Unix(secs, nanos)`: nanos outside `[0, 1e9)` carry into the seconds.
            /// Go's zero instant (`0001-01-01T00:00:00Z`) gives the zero time.
            pub fn from_unix(secs: i64, nanos: i64) -> Self {
                $name(Instant::from_unix(secs, nanos))
            }

            pub fn from_chrono(dt: DateTime<Utc>) -> Self {
                $name(Instant::from_chrono(dt))
            }

            /// The instant as a chrono time, `None` for the zero time (or past chrono's range).
            pub fn to_chrono(&self) -> Option<DateTime<Utc>> {
                self.0.to_chrono()
            }

            /// Upstream's `IsZero`: unset, or Go's zero instant.
            pub fn is_zero(&self) -> bool {
                self.0.is_zero()
            }

            /// Unix seconds (Go's `Unix()`: the zero time gives -62135596800).
            pub fn unix_seconds(&self) -> i64 {
                self.0.key().0
            }

            /// Nanoseconds within the second, `0..1_000_000_000`.
            pub fn subsec_nanos(&self) -> u32 {
                self.0.key().1
            }
        }

        impl From<DateTime<Utc>> for $name {
            fn from(dt: DateTime<Utc>) -> Self {
                $name::from_chrono(dt)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.is_zero() {
                    f.write_str(concat!(stringify!($name), "(zero)"))
                } else {
                    write!(f, concat!(stringify!($name), "({})"), self.0.format(None))
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self.to_rfc3339() {
                    Some(text) => serializer.serialize_str(&text),
                    None => serializer.serialize_none(),
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_option(TimeVisitor { parse: $name::parse_rfc3339, zero: $name::zero() })
            }
        }
    };
}

time_type!(
    /// `metav1.Time`: a time serialised at second precision.
    Time
);

time_type!(
    /// `metav1.MicroTime`: a time serialised at microsecond precision.
    MicroTime
);

impl Time {
    /// Go's `time.Parse(time.RFC3339, text)` in UTC (a fraction is accepted and kept in memory).
    pub fn parse_rfc3339(text: &str) -> Result<Time, ParseTimeError> {
        let (secs, nanos) = parse_rfc3339(text, LAYOUT_RFC3339, Fraction::Optional)?;
        Ok(Time::from_unix(secs, nanos))
    }

    /// The JSON form without quotes, `"2006-01-02T15:04:05Z"`; `None` for the zero time.
    pub fn to_rfc3339(&self) -> Option<String> {
        (!self.is_zero()).then(|| self.0.format(Some(0)))
    }

    /// Upstream's `Rfc3339Copy`: this time truncated to whole seconds.
    pub fn truncate_to_seconds(&self) -> Time {
        if self.is_zero() {
            return Time::zero();
        }
        Time::from_unix(self.unix_seconds(), 0)
    }

    /// Upstream's `MarshalQueryParameter`: RFC 3339 with nanoseconds (trailing zeros dropped),
    /// or the empty string for the zero time.
    pub fn to_query_parameter(&self) -> String {
        if self.is_zero() { String::new() } else { self.0.format(None) }
    }

    /// Upstream's `UnmarshalQueryParameter`: empty or `null` is the zero time, otherwise
    /// `time.RFC3339Nano`.
    pub fn from_query_parameter(text: &str) -> Result<Time, ParseTimeError> {
        if text.is_empty() || text == "null" {
            return Ok(Time::zero());
        }
        let (secs, nanos) = parse_rfc3339(text, LAYOUT_RFC3339_NANO, Fraction::Optional)?;
        Ok(Time::from_unix(secs, nanos))
    }
}

impl MicroTime {
    /// Go's `time.Parse(RFC3339Micro, text)` in UTC: exactly six fractional digits.
    pub fn parse_rfc3339(text: &str) -> Result<MicroTime, ParseTimeError> {
        let (secs, nanos) = parse_rfc3339(text, LAYOUT_RFC3339_MICRO, Fraction::ExactlySix)?;
        Ok(MicroTime::from_unix(secs, nanos))
    }

    /// The JSON form without quotes, `"2006-01-02T15:04:05.000000Z"`; `None` for the zero time.
    pub fn to_rfc3339(&self) -> Option<String> {
        (!self.is_zero()).then(|| self.0.format(Some(6)))
    }

    /// This time truncated to whole microseconds.
    pub fn truncate_to_micros(&self) -> MicroTime {
        if self.is_zero() {
            return MicroTime::zero();
        }
        MicroTime::from_unix(self.unix_seconds(), i64::from(self.subsec_nanos() / 1000 * 1000))
    }

    /// Upstream's `MarshalQueryParameter`: the JSON form, or the empty string for the zero time.
    pub fn to_query_parameter(&self) -> String {
        self.to_rfc3339().unwrap_or_default()
    }

    /// Upstream's `UnmarshalQueryParameter`: empty or `null` is the zero time.
    pub fn from_query_parameter(text: &str) -> Result<MicroTime, ParseTimeError> {
        if text.is_empty() || text == "null" {
            return Ok(MicroTime::zero());
        }
        MicroTime::parse_rfc3339(text)
    }
}

impl From<MicroTime> for Time {
    fn from(t: MicroTime) -> Time {
        Time(t.0)
    }
}

impl From<Time> for MicroTime {
    fn from(t: Time) -> MicroTime {
        MicroTime(t.0)
    }
}

/// The `Timestamp` message body both types share: nothing for the zero time, otherwise seconds
/// and nanos (both always written).
fn encode_timestamp(instant: &Instant, keep_nanos: bool, buf: &mut impl BufMut) {
    if instant.is_zero() {
        return;
    }
    let (secs, nanos) = instant.key();
    let nanos = if keep_nanos { nanos as i32 } else { 0 };
    int64::encode(1, &secs, buf);
    int32::encode(2, &nanos, buf);
}

fn timestamp_len(instant: &Instant, keep_nanos: bool) -> usize {
    if instant.is_zero() {
        return 0;
    }
    let (secs, nanos) = instant.key();
    let nanos = if keep_nanos { nanos as i32 } else { 0 };
    int64::encoded_len(1, &secs) + int32::encoded_len(2, &nanos)
}

/// Merges one `Timestamp` field. Any field present makes the time non-zero (upstream decodes a
/// non-empty message as `time.Unix(seconds, nanos)`); `keep_nanos` false drops nanos as `Time`
/// does.
fn merge_timestamp(
    instant: &mut Instant,
    keep_nanos: bool,
    tag: u32,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    match tag {
        1 => {
            let mut secs = 0i64;
            int64::merge(wire_type, &mut secs, buf, ctx)?;
            let nanos = instant.0.map_or(0, |(_, n)| n);
            instant.0 = Some((secs, nanos));
            Ok(())
        }
        2 => {
            let mut nanos = 0i32;
            int32::merge(wire_type, &mut nanos, buf, ctx)?;
            let secs = instant.0.map_or(0, |(s, _)| s);
            instant.0 = Some((secs, if keep_nanos { nanos } else { 0 }));
            Ok(())
        }
        _ => {
            skip_field(wire_type, tag, buf, ctx)?;
            // Upstream turns any non-empty message into a time, unknown fields included.
            instant.0.get_or_insert((0, 0));
            Ok(())
        }
    }
}

impl prost::Message for Time {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_timestamp(&self.0, false, buf);
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        merge_timestamp(&mut self.0, false, tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        timestamp_len(&self.0, false)
    }

    fn clear(&mut self) {
        *self = Time::zero();
    }
}

impl prost::Message for MicroTime {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_timestamp(&self.0, true, buf);
    }

    fn merge_field(&mut self, tag: u32, wire_type: WireType, buf: &mut impl Buf, ctx: DecodeContext) -> Result<(), DecodeError> {
        merge_timestamp(&mut self.0, true, tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        timestamp_len(&self.0, true)
    }

    fn clear(&mut self) {
        *self = MicroTime::zero();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hex::{hex, unhex};
    use prost::Message;

    /// The digit-by-digit RFC 3339 form against `format!`'s, over the ranges that matter: years
    /// before 1 and after 9999, and fractions of every length.
    #[test]
    fn formats_as_format_macro_would() {
        let reference = |instant: Instant, frac: Option<usize>| {
            let (secs, nanos) = instant.key();
            let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
            let rem = secs.rem_euclid(86_400);
            let sign = if year < 0 { "-" } else { "" };
            let mut out =
                format!("{sign}{:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}", year.unsigned_abs(), rem / 3600, rem / 60 % 60, rem % 60);
            let digits = format!("{nanos:09}");
            let fraction = match frac {
                Some(n) => &digits[..n.min(9)],
                None => digits.trim_end_matches('0'),
            };
            if !fraction.is_empty() {
                out.push('.');
                out.push_str(fraction);
            }
            out + "Z"
        };
        for secs in [0, 1, -1, 86_399, 1_700_000_000, -62_135_596_800, -62_135_596_801, 253_402_300_799, 253_402_300_800, 1 << 40] {
            for nanos in [0, 1, 10, 120_000_000, 999_999_999, 500_000] {
                let instant = Instant::from_unix(secs, nanos);
                for frac in [None, Some(0), Some(3), Some(6), Some(9), Some(12)] {
                    assert_eq!(instant.format(frac), reference(instant, frac), "{secs}s {nanos}ns {frac:?}");
                }
            }
        }
    }

    /// The `time` package's `quote` against `strconv.Quote`: the same on printable ASCII, bytes
    /// for everything else (DEL is ASCII and passes as is).
    #[test]
    fn time_quote_escapes_every_non_ascii_byte() {
        for (input, want) in [
            ("2008-01-01", r#""2008-01-01""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\t\u{1}\u{7f}", "\"\\x09\\x01\u{7f}\""),
            ("é\u{fffd}", r#""\xc3\xa9\xef\xbf\xbd""#),
        ] {
            assert_eq!(quote(input), want, "{input:?}");
        }
        assert_eq!(crate::strconv::quote("\té"), r#""\té""#);
    }

    #[test]
    fn json_time() {
        for (secs, nanos, json) in [
            (1_199_149_261, 0, r#""2008-01-01T01:01:01Z""#),
            (1_199_149_261, 999_999_999, r#""2008-01-01T01:01:01Z""#),
            (0, 0, r#""1970-01-01T00:00:00Z""#),
            (-1, 0, r#""1969-12-31T23:59:59Z""#),
            (951_782_400, 0, r#""2000-02-29T00:00:00Z""#),
            (253_402_300_799, 0, r#""9999-12-31T23:59:59Z""#),
            (GO_ZERO_UNIX + 1, 0, r#""0001-01-01T00:00:01Z""#),
        ] {
            let t = Time::from_unix(secs, nanos);
            assert_eq!(serde_json::to_string(&t).unwrap(), json);
            let back: Time = serde_json::from_str(json).unwrap();
            assert_eq!(back, t.truncate_to_seconds());
        }
        assert_eq!(serde_json::to_string(&Time::zero()).unwrap(), "null");
        assert_eq!(serde_json::from_str::<Time>("null").unwrap(), Time::zero());
        // Go's zero instant is the zero time.
        assert!(serde_json::from_str::<Time>(r#""0001-01-01T00:00:00Z""#).unwrap().is_zero());
    }

    #[test]
    fn json_time_decode_variants() {
        let base = Time::from_unix(1_199_149_261, 0);
        for (text, nanos) in [
            ("2008-01-01T01:01:01Z", 0),
            ("2008-01-01T02:01:01+01:00", 0),
            ("2007-12-31T20:31:01-04:30", 0),
            ("2008-01-01T01:01:01.5Z", 500_000_000),
            ("2008-01-01T01:01:01,25Z", 250_000_000),
            ("2008-01-01T01:01:01.1234567891234Z", 123_456_789),
            ("2008-01-01T1:01:01Z", 0),
        ] {
            let t = Time::parse_rfc3339(text).unwrap();
            assert_eq!((t.unix_seconds(), t.subsec_nanos()), (base.unix_seconds(), nanos), "{text}");
            assert_eq!(t.to_rfc3339().unwrap(), "2008-01-01T01:01:01Z");
        }
    }

    #[test]
    fn parse_errors() {
        for (text, message) in [
            ("", r#"parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006""#),
            (
                "2008-01-01 01:01:01Z",
                r#"parsing time "2008-01-01 01:01:01Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 01:01:01Z" as "T""#,
            ),
            ("2008-13-01T01:01:01Z", r#"parsing time "2008-13-01T01:01:01Z": month out of range"#),
            ("2007-02-29T01:01:01Z", r#"parsing time "2007-02-29T01:01:01Z": day out of range"#),
            ("2008-01-01T24:01:01Z", r#"parsing time "2008-01-01T24:01:01Z": hour out of range"#),
            ("2008-01-01T01:01:60Z", r#"parsing time "2008-01-01T01:01:60Z": second out of range"#),
            ("2008-01-01T01:01:01Zx", r#"parsing time "2008-01-01T01:01:01Zx": extra text: "x""#),
            ("2008-01-01T01:01:01", r#"parsing time "2008-01-01T01:01:01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00""#),
            (
                "2008-01-01T01:01:01.Z",
                r#"parsing time "2008-01-01T01:01:01.Z" as "2006-01-02T15:04:05Z07:00": cannot parse ".Z" as "Z07:00""#,
            ),
            (
                "2008-01-01t01:01:01z",
                r#"parsing time "2008-01-01t01:01:01z" as "2006-01-02T15:04:05Z07:00": cannot parse "t01:01:01z" as "T""#,
            ),
            (
                "2008-01-01T01:01:01+0100",
                r#"parsing time "2008-01-01T01:01:01+0100" as "2006-01-02T15:04:05Z07:00": cannot parse "+0100" as "Z07:00""#,
            ),
            (
                "2008-01-01T01:01:01\u{e9}",
                r#"parsing time "2008-01-01T01:01:01\xc3\xa9" as "2006-01-02T15:04:05Z07:00": cannot parse "\xc3\xa9" as "Z07:00""#,
            ),
        ] {
            assert_eq!(Time::parse_rfc3339(text).unwrap_err().to_string(), message, "{text:?}");
        }
        for bad in ["5", "true", "{}", r#""yesterday""#] {
            assert!(serde_json::from_str::<Time>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_micro_time() {
        let t = MicroTime::from_unix(1_041_382_861, 3_000);
        assert_eq!(serde_json::to_string(&t).unwrap(), r#""2003-01-01T01:01:01.000003Z""#);
        assert_eq!(serde_json::from_str::<MicroTime>(r#""2003-01-01T01:01:01.000003Z""#).unwrap(), t);
        // Truncated (not rounded) to microseconds.
        let t = MicroTime::from_unix(1_041_382_861, 999_999_999);
        assert_eq!(t.to_rfc3339().unwrap(), "2003-01-01T01:01:01.999999Z");
        assert_eq!(MicroTime::from_unix(0, 0).to_rfc3339().unwrap(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(MicroTime::parse_rfc3339("2003-01-01T02:01:01.000003+01:00").unwrap(), MicroTime::from_unix(1_041_382_861, 3_000));
        assert_eq!(serde_json::to_string(&MicroTime::zero()).unwrap(), "null");
        // RFC3339Micro wants exactly six digits.
        for bad in ["2003-01-01T01:01:01Z", "2003-01-01T01:01:01.00003Z", "2003-01-01T01:01:01.0000031Z"] {
            assert!(MicroTime::parse_rfc3339(bad).is_err(), "{bad}");
        }
        assert_eq!(
            MicroTime::parse_rfc3339("2003-01-01T01:01:01Z").unwrap_err().to_string(),
            r#"parsing time "2003-01-01T01:01:01Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
    }

    #[test]
    fn protobuf_time() {
        // 2004-01-01T01:01:01Z as in the upstream fixtures: `08 cd e2 cd ff 03 10 00`.
        let t = Time::parse_rfc3339("2004-01-01T01:01:01Z").unwrap();
        let bytes = t.encode_to_vec();
        assert_eq!(hex(&bytes), "08cde2cdff031000");
        assert_eq!(t.encoded_len(), bytes.len());
        assert_eq!(Time::decode(bytes.as_slice()).unwrap(), t);

        // Nanos are never written for Time, and dropped on decode.
        let t = Time::from_unix(1, 5);
        assert_eq!(hex(&t.encode_to_vec()), "08011000");
        let back = Time::decode(&unhex("08011005")[..]).unwrap();
        assert_eq!(back, Time::from_unix(1, 0));
        assert_eq!(hex(&back.encode_to_vec()), "08011000");

        // The epoch is a time, not the zero time.
        let epoch = Time::decode(&unhex("08001000")[..]).unwrap();
        assert!(!epoch.is_zero());
        assert_eq!(hex(&epoch.encode_to_vec()), "08001000");

        // The zero time writes nothing; an empty message decodes to it.
        assert!(Time::zero().encode_to_vec().is_empty());
        assert_eq!(Time::zero().encoded_len(), 0);
        assert!(Time::decode(&[][..]).unwrap().is_zero());
        // Go's zero instant decodes to the zero time and re-encodes as nothing.
        let mut go_zero = Vec::new();
        int64::encode(1, &GO_ZERO_UNIX, &mut go_zero);
        int32::encode(2, &0, &mut go_zero);
        let zero = Time::decode(go_zero.as_slice()).unwrap();
        assert!(zero.is_zero());
        assert!(zero.encode_to_vec().is_empty());
    }

    #[test]
    fn protobuf_micro_time() {
        // 2003-01-01T01:01:01.000003Z as in the upstream Lease fixture.
        let t = MicroTime::parse_rfc3339("2003-01-01T01:01:01.000003Z").unwrap();
        let bytes = t.encode_to_vec();
        assert_eq!(hex(&bytes), "08cdfbc8f00310b817");
        assert_eq!(t.encoded_len(), bytes.len());
        assert_eq!(MicroTime::decode(bytes.as_slice()).unwrap(), t);

        // Nanos are kept at full precision.
        let t = MicroTime::decode(&unhex("08011001")[..]).unwrap();
        assert_eq!((t.unix_seconds(), t.subsec_nanos()), (1, 1));
        assert_eq!(hex(&t.encode_to_vec()), "08011001");

        // Out-of-range nanos normalise like Go's time.Unix.
        // seconds 1, nanos -1
        let t = MicroTime::decode(&unhex("080110ffffffffffffffffff01")[..]).unwrap();
        assert_eq!((t.unix_seconds(), t.subsec_nanos()), (0, 999_999_999));
        assert_eq!(hex(&t.encode_to_vec()), "080010ff93ebdc03");
        // Field order does not matter.
        assert_eq!(MicroTime::decode(&unhex("10b8170801")[..]).unwrap(), MicroTime::from_unix(1, 3000));
    }

    #[test]
    fn protobuf_errors() {
        for bad in ["08", "0a00", "10ff", "0f", "0880808080808080808080"] {
            assert!(Time::decode(&unhex(bad)[..]).is_err(), "{bad}");
            assert!(MicroTime::decode(&unhex(bad)[..]).is_err(), "{bad}");
        }
    }

    #[test]
    fn extreme_values_do_not_panic() {
        for secs in [i64::MIN, i64::MIN + 1, -1, i64::MAX - 1, i64::MAX] {
            for nanos in [i64::MIN, -1, 0, 999_999_999, i64::MAX] {
                let t = MicroTime::from_unix(secs, nanos);
                let _ = t.to_rfc3339();
                let _ = t.to_chrono();
                let _ = format!("{t:?}");
                let bytes = t.encode_to_vec();
                let _ = MicroTime::decode(bytes.as_slice()).unwrap();
                let _ = Time::from(t).to_query_parameter();
            }
        }
        let t = Time::from_unix(-62_167_219_200 - 86_400, 0); // 0000-01-01 minus a day
        assert_eq!(t.to_rfc3339().unwrap(), "-0001-12-31T00:00:00Z");
        assert_eq!(Time::from_unix(253_402_300_800, 0).to_rfc3339().unwrap(), "10000-01-01T00:00:00Z");
    }

    #[test]
    fn ordering_and_conversions() {
        assert!(Time::zero() < Time::from_unix(0, 0));
        assert!(Time::from_unix(0, 1) > Time::from_unix(0, 0));
        assert_eq!(Time::from_unix(1, -1), Time::from_unix(0, 999_999_999));
        let now = Time::now();
        assert!(!now.is_zero());
        assert_eq!(Time::from_chrono(now.to_chrono().unwrap()), now);
        assert_eq!(Time::zero().unix_seconds(), GO_ZERO_UNIX);
        assert_eq!(Time::from_unix(1, 5).to_query_parameter(), "1970-01-01T00:00:01.000000005Z");
        assert_eq!(Time::from_query_parameter("1970-01-01T00:00:01.5Z").unwrap(), Time::from_unix(1, 500_000_000));
        assert!(Time::from_query_parameter("").unwrap().is_zero());
        assert_eq!(format!("{:?}", Time::from_unix(0, 0)), "Time(1970-01-01T00:00:00Z)");
        assert_eq!(format!("{:?}", MicroTime::zero()), "MicroTime(zero)");
    }
}
