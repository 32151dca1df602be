//! Kubernetes' semver library (`k8s.io/apiserver/pkg/cel/library/semverlib.go`): `semver()`
//! values (optionally normalized: a `v` prefix, leading zeros and missing minor or patch
//! allowed), `isSemver`, `major`, `minor`, `patch` and comparisons, with the parsing and
//! error messages of `github.com/blang/semver/v4`.

use std::cmp::Ordering;
use std::sync::Arc;

use ::cel::common::types::{BOOL_TYPE, STRING_TYPE, Type};
use ::cel::objects::Opaque;
use ::cel::{DeclarationError, Env, ExecutionError, Value as CelValue};

use super::{Answer, text};

pub(super) fn semver_type() -> Type {
    Type::new_opaque_type("kubernetes.Semver")
}

/// A prerelease identifier: numeric ones sort before alphanumeric ones.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

impl Pre {
    fn cmp(&self, other: &Pre) -> Ordering {
        match (self, other) {
            (Pre::Num(a), Pre::Num(b)) => a.cmp(b),
            (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
            (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
            (Pre::Str(a), Pre::Str(b)) => a.cmp(b),
        }
    }
}

/// A version. Equal when it compares equal (build metadata does not count), as upstream's
/// `Semver.Equal` (`Version.EQ`).
#[derive(Debug, Clone)]
pub(super) struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Version {}

impl Opaque for Version {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Semver"
    }
}

impl Version {
    /// blang's `Version.Compare`: numbers, then a version without prerelease above one with,
    /// then the prerelease identifiers in order (a prefix is lower).
    pub(super) fn compare(&self, other: &Version) -> Ordering {
        let numbers = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let o = a.cmp(b);
            if o != Ordering::Equal {
                return o;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn digits_only(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn alphanumeric_or_dash(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn leading_zeros(s: &str) -> bool {
    s.len() > 1 && s.starts_with('0')
}

/// Go's `strconv.ParseUint(s, 10, 64)` error text.
fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Err(format!("strconv.ParseUint: parsing {s:?}: invalid syntax"));
    }
    s.parse::<u64>().map_err(|_| format!("strconv.ParseUint: parsing {s:?}: value out of range"))
}

fn number(s: &str, which: &str) -> Result<u64, String> {
    if !digits_only(s) {
        return Err(format!("Invalid character(s) found in {which} number {s:?}"));
    }
    if leading_zeros(s) {
        let capital = format!("{}{}", which[..1].to_ascii_uppercase(), &which[1..]);
        return Err(format!("{capital} number must not contain leading zeroes {s:?}"));
    }
    parse_uint(s)
}

/// blang's `Parse`.
pub(super) fn parse(s: &str) -> Result<Version, String> {
    if s.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let parts: Vec<&str> = s.splitn(3, '.').collect();
    let [major, minor, rest] = parts.as_slice() else {
        return Err("No Major.Minor.Patch elements found".to_owned());
    };
    let (major, minor) = (number(major, "major")?, number(minor, "minor")?);
    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (*rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    let patch = number(patch, "patch")?;
    let mut identifiers = Vec::new();
    for p in pre.map(|p| p.split('.').collect::<Vec<_>>()).unwrap_or_default() {
        if p.is_empty() {
            return Err("Prerelease is empty".to_owned());
        }
        if digits_only(p) {
            if leading_zeros(p) {
                return Err(format!("Numeric PreRelease version must not contain leading zeroes {p:?}"));
            }
            identifiers.push(Pre::Num(parse_uint(p)?));
        } else if alphanumeric_or_dash(p) {
            identifiers.push(Pre::Str(p.to_owned()));
        } else {
            return Err(format!("Invalid character(s) found in prerelease {p:?}"));
        }
    }
    for b in build.map(|b| b.split('.').collect::<Vec<_>>()).unwrap_or_default() {
        if b.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !alphanumeric_or_dash(b) {
            return Err(format!("Invalid character(s) found in build meta data {b:?}"));
        }
    }
    Ok(Version { major, minor, patch, pre: identifiers })
}

/// Upstream's `normalizeAndParse`: no `v` prefix, no leading zeros, `.0` for a missing minor
/// or patch.
pub(super) fn normalize_and_parse(s: &str) -> Result<Version, String> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s
        .splitn(3, '.')
        .map(|p| {
            if p.len() <= 1 {
                return p.to_owned();
            }
            let trimmed = p.trim_start_matches('0');
            if trimmed.starts_with(|c: char| c.is_ascii_digit()) { trimmed.to_owned() } else { format!("0{trimmed}") }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        while parts.len() < 3 {
            parts.push("0".to_owned());
        }
    }
    parse(&parts.join("."))
}

on_values!(semver_fn, semver);
on_values!(is_semver_fn, is_semver);
on_values!(major_fn, major);
on_values!(minor_fn, minor);
on_values!(patch_fn, patch);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], semver_fn)?;
    env.add_overload("semver", "string_bool_to_semver", vec![STRING_TYPE, BOOL_TYPE], semver_fn)?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver_fn)?;
    env.add_overload("isSemver", "is_semver_string_bool", vec![STRING_TYPE, BOOL_TYPE], is_semver_fn)?;
    env.add_member_overload("major", "semver_major", semver_type(), vec![], major_fn)?;
    env.add_member_overload("minor", "semver_minor", semver_type(), vec![], minor_fn)?;
    env.add_member_overload("patch", "semver_patch", semver_type(), vec![], patch_fn)?;
    Ok(())
}

/// The version from `semver(s)` or `semver(s, normalize)`.
fn parse_args(values: &[CelValue], function: &str) -> Answer<Result<Version, String>> {
    let s = text(values, 0, function)?;
    let normalize = matches!(values.get(1), Some(CelValue::Bool(true)));
    Ok(if normalize { normalize_and_parse(s) } else { parse(s) })
}

fn semver(values: &[CelValue]) -> Answer<CelValue> {
    let v = parse_args(values, "semver")?.map_err(|e| ExecutionError::function_error("semver", e))?;
    Ok(CelValue::Opaque(Arc::new(v)))
}

fn is_semver(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(parse_args(values, "isSemver")?.is_ok()))
}

pub(super) fn version_at(values: &[CelValue], i: usize) -> Option<&Version> {
    match values.get(i) {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<Version>(),
        _ => None,
    }
}

fn part(values: &[CelValue], function: &str, get: fn(&Version) -> u64) -> Answer<CelValue> {
    let v = version_at(values, 0).ok_or_else(|| ExecutionError::no_such_overload(function, vec!["dyn".to_owned()]))?;
    // Upstream converts with `types.Int(...)`, wrapping past the int range.
    Ok(CelValue::Int(get(v) as i64))
}

fn major(values: &[CelValue]) -> Answer<CelValue> {
    part(values, "major", |v| v.major)
}

fn minor(values: &[CelValue]) -> Answer<CelValue> {
    part(values, "minor", |v| v.minor)
}

fn patch(values: &[CelValue]) -> Answer<CelValue> {
    part(values, "patch", |v| v.patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_blang_parses_them() {
        let v = parse("1.2.3-alpha.1+build.5").expect("version");
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
        assert_eq!(v.pre, [Pre::Str("alpha".to_owned()), Pre::Num(1)]);
        for (bad, err) in [
            ("", "Version string empty"),
            ("1.2", "No Major.Minor.Patch elements found"),
            ("v1.2.3", r#"Invalid character(s) found in major number "v1""#),
            ("01.2.3", r#"Major number must not contain leading zeroes "01""#),
            ("1.2.03", r#"Patch number must not contain leading zeroes "03""#),
            ("1.2.3-01", r#"Numeric PreRelease version must not contain leading zeroes "01""#),
            ("1.2.3-a..b", "Prerelease is empty"),
            ("1.2.3+b_1", r#"Invalid character(s) found in build meta data "b_1""#),
            ("1..3", r#"strconv.ParseUint: parsing "": invalid syntax"#),
        ] {
            assert_eq!(parse(bad).map(|_| ()), Err(err.to_owned()), "{bad}");
        }
    }

    #[test]
    fn normalizing_fills_in_and_trims() {
        let v = normalize_and_parse("v01.02").expect("version");
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 0));
        assert_eq!(normalize_and_parse("v1.0-rc1").map(|_| ()), Err("short version cannot contain PreRelease/Build meta data".to_owned()));
        assert!(normalize_and_parse("1.00.3").is_ok());
    }

    #[test]
    fn versions_order_by_semver_precedence() {
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
        ];
        for pair in order.windows(2) {
            let (a, b) = (parse(pair[0]).expect("a"), parse(pair[1]).expect("b"));
            assert_eq!(a.compare(&b), Ordering::Less, "{} < {}", pair[0], pair[1]);
            assert_eq!(b.compare(&a), Ordering::Greater);
        }
        assert_eq!(parse("1.0.0+a").expect("a"), parse("1.0.0+b").expect("b"));
    }
}
