//! The string formats a custom resource schema may name, checked as kube-openapi's default
//! format registry (`pkg/validation/strfmt`) checks them, for the formats apiextensions-apiserver
//! keeps (`pkg/apiserver/validation/formats.go`: every other format is dropped from the schema
//! before validation, so it checks nothing).
//!
//! Names are compared as go-openapi normalizes them: without dashes (`date-time` is
//! `datetime`). Most checks are written out by hand from upstream's definitions; the few that
//! are regular expressions upstream use the `regex` crate, with Go's ASCII meaning of `\d` and
//! `\s` spelled out.

use std::net::Ipv6Addr;
use std::sync::LazyLock;

use regex::Regex;

/// The formats kept in a schema (by normalized name): those upstream validates at the
/// compatibility version of kube-apiserver v1.36 (`k8s-short-name` and `k8s-long-name` came
/// in v1.34).
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// go-openapi's name normalization: dashes dropped.
pub(super) fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether upstream keeps and checks the string format `format` (any spelling).
pub(super) fn is_supported(format: &str) -> bool {
    SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether `value` is of the string format `format` (a supported one; any other holds).
pub(super) fn validates(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => parse_ip_sloppy(value) && value.contains('.'),
        "ipv6" => value.parse::<Ipv6Addr>().is_ok() && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => UUID.is_match(value),
        "uuid3" => UUID3.is_match(value),
        "uuid4" => UUID4.is_match(value),
        "uuid5" => UUID5.is_match(value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() == 11 && SSN.is_match(value),
        "hexcolor" => HEX_COLOR.is_match(value),
        "rgbcolor" => RGB_COLOR.is_match(value),
        "byte" => is_base64(value),
        "date" => is_date(value),
        "duration" => is_duration(value),
        "datetime" => is_date_time(value),
        "k8sshortname" => value.len() <= 63 && is_short_name(value),
        "k8slongname" => value.len() <= 253 && value.split('.').all(is_short_name),
        _ => true,
    }
}

fn regex(pattern: &str) -> Regex {
    // The patterns are constants of this file, checked by its tests.
    Regex::new(pattern).unwrap_or_else(|e| panic!("format pattern {pattern:?}: {e}"))
}

static UUID: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static SSN: LazyLock<Regex> = LazyLock::new(|| regex(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEX_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
/// One 0-255 component of `rgb(r, g, b)`, as govalidator spells it.
const RGB_PART: &str = r"[\t\n\x0C\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\x0C\r ]*";
static RGB_COLOR: LazyLock<Regex> = LazyLock::new(|| regex(&format!(r"^rgb\({RGB_PART},{RGB_PART},{RGB_PART}\)$")));
/// strfmt's host name pattern (letters and symbols of any script allowed); the dash of its
/// middle class moved first, where both Go and Rust read it as a dash.
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    regex(concat!(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|",
        r"([a-zA-Z0-9\p{S}\p{L}](([-a-zA-Z0-9\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
    ))
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});

/// `IsHostname`: the pattern, at most 255 bytes, labels of at most 63.
fn is_hostname(value: &str) -> bool {
    HOSTNAME.is_match(value) && value.len() <= 255 && value.split('.').all(|label| label.len() <= 63)
}

/// `IsShortName`'s pattern: a lowercase RFC 1123 label (the length is checked apart).
fn is_short_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty() && bytes.first().is_some_and(alnum) && bytes.last().is_some_and(alnum) && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// govalidator's `IsBase64`: standard alphabet, padded, at least one group of four.
fn is_base64(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    let padding = bytes.iter().rev().take_while(|b| **b == b'=').count();
    padding <= 2 && bytes[..bytes.len() - padding].iter().all(alphabet)
}

/// `IsDate`: Go's `time.Parse("2006-01-02", value)`: four-digit year, two-digit month and day,
/// a day the month has.
fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else { return false };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `IsDateTime`: lower-cased and split at `t`, a date, then `hh:mm:ss`, an optional fraction
/// (any one character and digits, as strfmt's unescaped `.` allows) and `z` or an offset.
fn is_date_time(value: &str) -> bool {
    if value.len() < 4 {
        return false;
    }
    let lower = value.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let time: Vec<char> = parts[1].chars().collect();
    let digit = |i: usize| time.get(i).is_some_and(char::is_ascii_digit);
    if !(time.len() >= 8 && digit(0) && digit(1) && time[2] == ':' && digit(3) && digit(4) && time[5] == ':' && digit(6) && digit(7)) {
        return false;
    }
    let zone = |rest: &[char]| -> bool {
        match rest {
            ['z'] => true,
            [sign, h1, h2, ':', m1, m2] => matches!(sign, '+' | '-') && [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()),
            _ => false,
        }
    };
    let rest = &time[8..];
    // The fraction: one character other than a newline, then one or more digits; the zone
    // must follow one of the ways the digits can end.
    let with_fraction =
        rest.len() > 1 && rest[0] != '\n' && (1..rest.len()).take_while(|i| rest[*i].is_ascii_digit()).any(|last| zone(&rest[last + 1..]));
    let text = |i: usize| time[i..i + 2].iter().collect::<String>();
    (zone(rest) || with_fraction) && text(0).as_str() <= "23" && text(3).as_str() <= "59" && text(6).as_str() <= "59"
}

/// `IsDuration`: Go's `time.ParseDuration`, or else strfmt's lenient reading (`3 days`,
/// `1hr`: a number and a unit anywhere in the text).
fn is_duration(value: &str) -> bool {
    go_parse_duration(value) || lenient_duration(value)
}

/// Go's `time.ParseDuration` grammar: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, known units only,
/// at most 2^63-1 nanoseconds.
fn go_parse_duration(value: &str) -> bool {
    let mut s = value.strip_prefix(['-', '+']).unwrap_or(value);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let integer_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let (integer, rest) = s.split_at(integer_len);
        let (fraction, rest) = match rest.strip_prefix('.') {
            Some(after) => {
                let len = after.bytes().take_while(u8::is_ascii_digit).count();
                (Some(&after[..len]), &after[len..])
            }
            None => (None, rest),
        };
        if integer.is_empty() && fraction.is_none_or(str::is_empty) {
            return false;
        }
        let unit_len = rest.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(rest.len());
        let (unit, rest) = rest.split_at(unit_len);
        let nanos: f64 = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return false,
        };
        let number: f64 =
            format!("{}.{}", if integer.is_empty() { "0" } else { integer }, fraction.unwrap_or("0")).parse().unwrap_or(f64::MAX);
        total += number * nanos;
        s = rest;
    }
    total <= i64::MAX as f64
}

/// strfmt's fallback: every `<digits> <letters>` in the text, a known unit (or a prefix of
/// its long name) in at least one of them; a number too big for an int fails it all.
fn lenient_duration(value: &str) -> bool {
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "\u{b5}s", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let chars: Vec<char> = value.chars().collect();
    let mut ok = false;
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let digits_end = i + chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let letters_start = digits_end + chars[digits_end..].iter().take_while(|c| matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')).count();
        let letters_len = chars[letters_start..].iter().take_while(|c| c.is_ascii_alphabetic() || **c == '\u{b5}').count();
        if letters_len == 0 {
            i = digits_end;
            continue;
        }
        let digits: String = chars[i..digits_end].iter().collect();
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = chars[letters_start..letters_start + letters_len].iter().collect::<String>().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (n, variant) in variants.iter().enumerate() {
                if (n == last && unit.starts_with(variant)) || unit.eq_ignore_ascii_case(variant) {
                    ok = true;
                }
            }
        }
        i = letters_start + letters_len;
    }
    ok
}

/// `ParseIPSloppy` (kube's copy of Go 1.16's `net.ParseIP`, leading zeros allowed in IPv4):
/// whether `value` is an IP address.
fn parse_ip_sloppy(value: &str) -> bool {
    parse_ipv4_sloppy(value) || value.parse::<Ipv6Addr>().is_ok()
}

fn parse_ipv4_sloppy(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u64>().is_ok_and(|n| n <= 255))
}

/// `ParseCIDRSloppy`: an address, `/`, a prefix length its family allows.
fn is_cidr(value: &str) -> bool {
    let Some((address, bits)) = value.split_once('/') else { return false };
    let max = if parse_ipv4_sloppy(address) {
        32
    } else if address.parse::<Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()) && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 bytes as pairs of hex digits separated by `:` or `-`, or
/// as groups of four separated by `.`, one separator throughout.
fn is_mac(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex = |s: &[u8]| s.iter().all(u8::is_ascii_hexdigit);
    let (group, separator) = if b[2] == b':' || b[2] == b'-' {
        (2, b[2])
    } else if b[4] == b'.' {
        (4, b'.')
    } else {
        return false;
    };
    let groups: Vec<&[u8]> = b.split(|c| *c == separator).collect();
    let bytes = groups.len() * group / 2;
    matches!(bytes, 6 | 8 | 20) && groups.iter().all(|g| g.len() == group && hex(g))
}

/// Go's `url.ParseRequestURI`, as far as it refuses a value: control characters, nothing at
/// all, neither an absolute URI (`scheme:...`) nor an absolute path, a host with characters
/// hosts may not have, or a bad `%` escape.
fn is_request_uri(value: &str) -> bool {
    if value.is_empty() || value.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if value == "*" {
        return true;
    }
    let (scheme, rest) = match value.find(|c: char| !c.is_ascii_alphanumeric() && !matches!(c, '+' | '-' | '.')) {
        Some(i) if value.as_bytes()[i] == b':' => {
            if i == 0 || !value.as_bytes()[0].is_ascii_alphabetic() {
                return false;
            }
            (&value[..i], &value[i + 1..])
        }
        _ => ("", value),
    };
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    if !rest.starts_with('/') {
        // An opaque URI (`mailto:x`) is fine; a relative reference is not a request URI.
        return !scheme.is_empty();
    }
    let path = match rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            let authority = &after[..end];
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            if host.contains([' ', '"', '<', '>', '\\', '^', '`', '{', '|', '}']) {
                return false;
            }
            &after[end..]
        }
        None => rest,
    };
    valid_escapes(path)
}

/// Every `%` of `text` starts a two-hex-digit escape.
fn valid_escapes(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)) {
            return false;
        }
        i += 3;
    }
    true
}

/// Go's `mail.ParseAddress`, as far as an address goes: `local@domain`, possibly inside
/// `Name <...>`; the local part a dot-atom or a quoted string, the domain a dot-atom or a
/// literal in brackets.
fn is_email(value: &str) -> bool {
    let value = value.trim();
    let address = match (value.find('<'), value.strip_suffix('>')) {
        (Some(open), Some(inner)) => &inner[open + 1..],
        (None, None) => value,
        _ => return false,
    };
    let Some((local, domain)) = address.rsplit_once('@') else { return false };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let dot_atom = |s: &str| !s.is_empty() && s.split('.').all(|part| !part.is_empty() && part.chars().all(atext));
    let quoted = local.len() >= 2 && local.starts_with('"') && local.ends_with('"');
    let literal = domain.starts_with('[') && domain.ends_with(']');
    (quoted || dot_atom(local)) && (literal || dot_atom(domain))
}

/// govalidator's `IsISBN(value, 10)`: spaces and dashes dropped, nine digits and a digit or
/// `X`, a weighted sum that 11 divides.
fn is_isbn10(value: &str) -> bool {
    let digits = isbn_sanitized(value);
    let b = digits.as_bytes();
    if b.len() != 10 || !b[..9].iter().all(u8::is_ascii_digit) || !(b[9].is_ascii_digit() || b[9] == b'X') {
        return false;
    }
    let mut sum: u32 = b[..9].iter().enumerate().map(|(i, d)| (i as u32 + 1) * u32::from(d - b'0')).sum();
    sum += 10 * if b[9] == b'X' { 10 } else { u32::from(b[9] - b'0') };
    sum.is_multiple_of(11)
}

/// govalidator's `IsISBN(value, 13)`: spaces and dashes dropped, 13 digits, the EAN check digit.
fn is_isbn13(value: &str) -> bool {
    let digits = isbn_sanitized(value);
    let b = digits.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b[..12].iter().enumerate().map(|(i, d)| if i % 2 == 0 { 1 } else { 3 } * u32::from(d - b'0')).sum();
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

fn isbn_sanitized(value: &str) -> String {
    value.chars().filter(|c| !matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ' | '-')).collect()
}

/// govalidator's `IsCreditCard`: the digits (anything else dropped) of a known issuer's
/// numbering, passing the Luhn check.
fn is_credit_card(value: &str) -> bool {
    let digits: Vec<u32> = value.chars().filter_map(|c| c.to_digit(10).filter(|_| c.is_ascii_digit())).collect();
    let text: String = digits.iter().map(|d| char::from_digit(*d, 10).unwrap_or('0')).collect();
    if !CREDIT_CARD.is_match(&text) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| match (i % 2 == 1, d * 2) {
            (true, doubled) if doubled >= 10 => doubled % 10 + 1,
            (true, doubled) => doubled,
            (false, _) => *d,
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (format, valid values, invalid values), from upstream's definitions.
    #[test]
    fn formats_accept_and_refuse_as_upstream() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("date", &["2024-02-29", "1999-12-31"], &["2023-02-29", "2024-1-01", "2024-13-01", "20240101", ""]),
            (
                "date-time",
                &["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.123+01:00", "2024-01-02T23:59:59-07:00"],
                &["2024-01-02", "2024-01-02T24:00:00Z", "2024-01-02T03:04:05", "2024-01-02T03:04Z", "x"],
            ),
            ("byte", &["aGVsbG8=", "aGk=", "YWJj"], &["", "aGVsbG8", "a===", "a b="]),
            (
                "uuid",
                &["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"],
                &["123e4567", "g23e4567-e89b-12d3-a456-426614174000"],
            ),
            ("uuid4", &["123e4567-e89b-42d3-a456-426614174000"], &["123e4567-e89b-12d3-a456-426614174000"]),
            ("k8s-short-name", &["my-name", "a1"], &["My-name", "-a", "a.b", ""]),
            ("k8s-long-name", &["my.name-1.example"], &["my..name", "A.b", ""]),
            ("hostname", &["example.com", "localhost", "bücher.de"], &["-x.com", "a..b", ""]),
            ("ipv4", &["10.0.0.1", "010.0.0.1", "::ffff:1.2.3.4"], &["10.0.0", "256.0.0.1", "::1"]),
            ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80::1%eth0"]),
            ("cidr", &["10.0.0.0/8", "fe80::/64"], &["10.0.0.0/33", "10.0.0.0", "x/8"]),
            (
                "mac",
                &["01:23:45:67:89:ab", "01-23-45-67-89-AB", "0123.4567.89ab"],
                &["01:23:45:67:89", "01:23-45:67:89:ab", "0123.4567.89"],
            ),
            ("duration", &["1h30m", "-1.5s", "0", "300ms", "3 days", "1hr"], &["", "h", "1x", "abc"]),
            ("email", &["a@b.c", "Joe <joe@example.com>", "\"x y\"@example.com"], &["nobody", "a@", "@b", "a..b@c"]),
            ("uri", &["http://example.com/a?b", "/path", "mailto:x@y", "*"], &["relative/path", "", "http://exa mple.com/", "/bad%zz"]),
            ("isbn10", &["0306406152", "0-306-40615-2"], &["0306406153"]),
            ("isbn13", &["9780306406157"], &["9780306406158"]),
            ("isbn", &["0306406152", "9780306406157"], &["123"]),
            ("creditcard", &["4111 1111 1111 1111"], &["4111 1111 1111 1112"]),
            ("ssn", &["123-45-6789", "123 45 6789"], &["123456789", "12-345-6789"]),
            ("hexcolor", &["#fff", "A0B1C2"], &["#ffff"]),
            ("rgbcolor", &["rgb(255, 0, 10)"], &["rgb(256,0,0)", "rgb(1,2)"]),
            ("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f1f77bcf86cd79943901"]),
            ("password", &["anything at all"], &[]),
        ];
        for (format, valid, invalid) in cases {
            assert!(is_supported(format), "{format} is supported");
            for v in *valid {
                assert!(validates(format, v), "{v:?} is a valid {format}");
            }
            for v in *invalid {
                assert!(!validates(format, v), "{v:?} is not a valid {format}");
            }
        }
        assert!(!is_supported("int-or-percent") && validates("int-or-percent", "x"));
    }
}
