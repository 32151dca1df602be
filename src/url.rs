//! Go's `net/url` as kube-apiserver meets it: the request path decoded as `URL.Path` is
//! ([`path_unescape`], Go's `url.PathUnescape`), the query read as `req.URL.Query()` reads it
//! ([`parse_query`], Go's `url.ParseQuery` with `url.QueryUnescape`: `+` is a space, a pair with
//! a malformed escape is dropped), a path escaped again as `URL.EscapedPath` writes it
//! ([`escaped_path`]), and Go's `path.Clean` ([`path_clean`]) that `ServeMux` cleans request
//! paths with and the storage checks continue keys with.
//!
//! Decoding and encoding are the `percent-encoding` crate's. That crate leaves a malformed
//! escape as written, where Go refuses it, so escapes are checked first as Go's `unescape`
//! checks them. Go's strings may hold any bytes; a Rust string holds UTF-8, so a path that
//! decodes to other bytes is refused and a query value's invalid bytes become U+FFFD.
//!
//! I/O-free; the cases are in the tests.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kapi_apimachinery::strconv::quote;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Why a path or query component could not be unescaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnescapeError {
    /// Go's `url.EscapeError`: a `%` not followed by two hex digits (the escape as written, at
    /// most three bytes).
    #[error("invalid URL escape {}", quote(.0))]
    InvalidEscape(String),
    /// A path whose escapes decode to bytes that are not UTF-8.
    #[error("invalid UTF-8 in URL path {}", quote(.0))]
    InvalidUtf8(String),
}

/// Go's `url.PathUnescape` (and how `URL.Path` is decoded): `%XX` escapes decoded, `+` kept.
pub fn path_unescape(s: &str) -> Result<Cow<'_, str>, UnescapeError> {
    // Nearly every path has nothing to decode: one pass finds that out.
    if !s.as_bytes().contains(&b'%') {
        return Ok(Cow::Borrowed(s));
    }
    check_escapes(s)?;
    percent_decode_str(s).decode_utf8().map_err(|_| UnescapeError::InvalidUtf8(s.to_owned()))
}

/// Go's `url.QueryUnescape`: `%XX` escapes decoded, `+` a space.
pub fn query_unescape(s: &str) -> Result<Cow<'_, str>, UnescapeError> {
    // Nearly every key and value has nothing to decode: one pass finds that out.
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Ok(Cow::Borrowed(s));
    }
    check_escapes(s)?;
    if s.contains('+') {
        Ok(Cow::Owned(percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned()))
    } else {
        Ok(percent_decode_str(s).decode_utf8_lossy())
    }
}

/// Go's `unescape` refuses a `%` that two hex digits do not follow.
fn check_escapes(s: &str) -> Result<(), UnescapeError> {
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let escape = bytes.get(i + 1..i + 3);
        if !escape.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
            let end = bytes.len().min(i + 3);
            return Err(UnescapeError::InvalidEscape(String::from_utf8_lossy(&bytes[i..end]).into_owned()));
        }
    }
    Ok(())
}

/// Go's `url.ParseQuery` as `URL.Query()` uses it: pairs split at `&`, a pair containing `;`
/// or a malformed escape dropped, a key without `=` given the value `""`. Values keep their
/// order.
pub fn parse_query(query: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in query_pairs(query) {
        out.entry(k.into_owned()).or_default().push(v.into_owned());
    }
    out
}

/// The pairs [`parse_query`] keeps, as written: split at `&`, empty ones and those containing
/// `;` skipped, a key without `=` given `""`.
fn raw_pairs(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query.split('&').filter(|pair| !pair.is_empty() && !pair.contains(';')).map(|pair| pair.split_once('=').unwrap_or((pair, "")))
}

/// The pairs [`parse_query`] keeps, decoded, in order: for reading one parameter without
/// building the map.
pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    raw_pairs(query).filter_map(|(k, v)| Some((query_unescape(k).ok()?, query_unescape(v).ok()?)))
}

/// Go's `URL.Query().Get(key)`: the first value of `key`, if it has one.
pub fn query_first<'q>(query: &'q str, key: &str) -> Option<Cow<'q, str>> {
    query_values(query, key).next()
}

/// Go's `URL.Query()[key]`: the values of `key`, in order.
pub fn query_values<'q>(query: &'q str, key: &str) -> impl Iterator<Item = Cow<'q, str>> {
    // Every request reads a few parameters, most of which its query lacks: only the value
    // asked for is decoded (a name with nothing to decode is borrowed, not copied). A pair
    // either half of which does not decode is left out, as `query_pairs` does.
    raw_pairs(query).filter_map(move |(k, v)| match query_unescape(k).ok()? == key {
        true => query_unescape(v).ok(),
        false => None,
    })
}

/// Go's `path.Clean`: one slash between segments, no `.` segments, a `..` removes the segment
/// before it (and stops at the root of a rooted path), no trailing slash; `.` for nothing.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// Go's `URL.EscapedPath` for a path without a raw form: unreserved characters and
/// `$&+,/:;=@` stay, everything else is `%XX`.
pub fn escaped_path(path: &str) -> String {
    const PATH: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'$')
        .remove(b'&')
        .remove(b'+')
        .remove(b',')
        .remove(b'/')
        .remove(b':')
        .remove(b';')
        .remove(b'=')
        .remove(b'@');
    utf8_percent_encode(path, PATH).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_unescape_as_go() {
        assert_eq!(path_unescape("/api/v1/pods").unwrap(), "/api/v1/pods");
        assert!(matches!(path_unescape("/api/v1/pods").unwrap(), Cow::Borrowed(_)));
        assert_eq!(path_unescape("/a%20b+c%2Fd%e2%9c%93").unwrap(), "/a b+c/d✓");
        for (bad, escape) in [("/a%zz", "%zz"), ("/a%2", "%2"), ("%", "%"), ("/a%g1b", "%g1"), ("/%+1", "%+1")] {
            assert_eq!(path_unescape(bad).unwrap_err(), UnescapeError::InvalidEscape(escape.to_owned()), "{bad:?}");
        }
        assert_eq!(path_unescape("/a%zz").unwrap_err().to_string(), r#"invalid URL escape "%zz""#);
        assert!(matches!(path_unescape("/a%ff").unwrap_err(), UnescapeError::InvalidUtf8(_)));
    }

    #[test]
    fn query_unescape_as_go() {
        assert_eq!(query_unescape("a+b%2Bc%3D").unwrap(), "a b+c=");
        assert_eq!(query_unescape("%41%4a").unwrap(), "AJ");
        assert!(matches!(query_unescape("resourceVersion").unwrap(), Cow::Borrowed("resourceVersion")));
        assert_eq!(query_unescape("%ff").unwrap(), "\u{fffd}");
        assert_eq!(query_unescape("x%z").unwrap_err(), UnescapeError::InvalidEscape("%z".to_owned()));
        assert_eq!(query_unescape("%é").unwrap_err(), UnescapeError::InvalidEscape("%é".to_owned()));
    }

    #[test]
    fn query_decoding() {
        let q = parse_query("a=1&b=x+y%2Fz&a=2&&c&d=%zz&e;f=1&g=%E2%9C%93&h=%41%4a&i=%&j=%4");
        let get = |k: &str| q.get(k).cloned().unwrap_or_default();
        assert_eq!(get("a"), vec!["1", "2"]);
        assert_eq!(get("b"), vec!["x y/z"]);
        assert_eq!(get("c"), vec![""]);
        assert!(!q.contains_key("d") && !q.contains_key("i") && !q.contains_key("j"));
        assert!(!q.contains_key("e") && !q.contains_key("e;f"));
        assert_eq!(get("g"), vec!["✓"]);
        assert_eq!(get("h"), vec!["AJ"]);
        assert!(parse_query("").is_empty());
        // One parameter read without the map: the same pairs, the first value.
        let query = "a=1&b=x+y%2Fz&a=2&&c&d=%zz&e;f=1&d=ok";
        assert_eq!(query_first(query, "a").as_deref(), Some("1"));
        assert_eq!(query_first(query, "b").as_deref(), Some("x y/z"));
        assert_eq!(query_first(query, "c").as_deref(), Some(""));
        assert_eq!(query_first(query, "d").as_deref(), Some("ok"));
        assert_eq!(query_first(query, "e"), None);
        assert_eq!(query_pairs(query).count(), parse_query(query).values().map(Vec::len).sum::<usize>());
    }

    /// The look-up of one key answers as the parsed query does: escaped keys and `+`
    /// included, pairs with `;` or a half that does not decode left out.
    #[test]
    fn query_values_answer_as_the_parsed_query() {
        let queries = [
            "",
            "timeout=5s",
            "a=1&timeout=&timeout=2s",
            "time%6Fut=3s",
            "dry+Run=x",
            "dry%20Run=y&dryRun=All",
            "x=timeout",
            "timeout=%zz&timeout=4s",
            "a;b=1&timeout=5s;&timeout=6s",
            "timeout&=x&timeout%=1&timeout=7s",
        ];
        for query in queries {
            let parsed = parse_query(query);
            for key in ["timeout", "dryRun", "dry Run", "x", "missing"] {
                let values: Vec<String> = query_values(query, key).map(Cow::into_owned).collect();
                assert_eq!(values, parsed.get(key).cloned().unwrap_or_default(), "{query:?} {key:?}");
                assert_eq!(query_first(query, key), values.first().map(|v| Cow::Owned(v.clone())), "{query:?} {key:?}");
            }
        }
    }

    #[test]
    fn path_clean_as_go() {
        for (p, want) in [
            ("", "."),
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/a/b/", "/a/b"),
            ("//a", "/a"),
            ("/a/./b", "/a/b"),
            ("/a/../b", "/b"),
            ("/../a", "/a"),
            ("a/../..", ".."),
            ("a/..", "."),
            ("/a\0", "/a\0"),
        ] {
            assert_eq!(path_clean(p), want, "{p:?}");
        }
    }

    #[test]
    fn escaped_path_as_go() {
        assert_eq!(escaped_path("/api/v1/namespaces/x/pods/a b"), "/api/v1/namespaces/x/pods/a%20b");
        assert_eq!(escaped_path("/a$&+,:;=@-_.~/b"), "/a$&+,:;=@-_.~/b");
        assert_eq!(escaped_path("/a?b#c%✓"), "/a%3Fb%23c%25%E2%9C%93");
    }
}
