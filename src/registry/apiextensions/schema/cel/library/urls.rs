//! Kubernetes' URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`): `url()` values and
//! their getters, and `isURL`, on a port of the parts of Go's `net/url` they use
//! (`ParseRequestURI` to accept, `Parse` to split, `Hostname`, `Port`, `EscapedPath`,
//! `Query`), with Go's error messages.

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::common::types::{STRING_TYPE, Type};
use ::cel::objects::{Key, Map, Opaque};
use ::cel::{DeclarationError, Env, ExecutionError, Value as CelValue};

use super::{Answer, text};

fn url_type() -> Type {
    Type::new_opaque_type("kubernetes.URL")
}

/// Which part of a URL a string is escaped or unescaped for (Go's `encoding` modes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// A parsed URL: Go's `url.URL`, the fields the library reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct GoUrl {
    scheme: String,
    opaque: String,
    host: String,
    /// The path as written (escaped).
    raw_path: String,
    /// The path unescaped.
    path: String,
    raw_query: String,
    fragment: String,
}

impl Opaque for GoUrl {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'[' | b']' | b'<' | b'>' | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::QueryComponent => true,
                Mode::Fragment => false,
                Mode::Host | Mode::Zone => true,
            };
        }
        _ => {}
    }
    !(mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*'))
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Go's `unescape`.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("invalid URL escape {bad:?}"));
                }
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {:?}", &s[i..i + 3]));
                }
                out.push(unhex(b[i + 1]) << 4 | unhex(b[i + 2]));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {:?} in host name", (c as char).to_string()));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape` for a path.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `validEncoded` for a path.
fn valid_encoded_path(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(c, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@' | b'[' | b']' | b'%')
            || !should_escape(c, Mode::Path)
    })
}

/// Go's `getScheme`: the scheme and the rest.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".to_owned());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
        if let Some(zone) = host[..i].find("%25") {
            return Ok(unescape(&host[..zone], Mode::Host)? + &unescape(&host[zone..i], Mode::Zone)? + &unescape(&host[i..], Mode::Host)?);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

/// Go's `parseAuthority`, keeping only the host (the library has no user getter).
fn parse_authority(authority: &str) -> Result<String, String> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    if let Some(userinfo) = userinfo {
        let valid = userinfo.bytes().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'-' | b'.'
                        | b'_'
                        | b':'
                        | b'~'
                        | b'!'
                        | b'$'
                        | b'&'
                        | b'\''
                        | b'('
                        | b')'
                        | b'*'
                        | b'+'
                        | b','
                        | b';'
                        | b'='
                        | b'%'
                        | b'@'
                )
        });
        if !valid {
            return Err("net/url: invalid userinfo".to_owned());
        }
        let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
        unescape(user, Mode::UserPassword)?;
        unescape(password, Mode::UserPassword)?;
    }
    Ok(host)
}

/// Go's `parse` (the part after the fragment is cut, for `Parse`).
fn parse(raw: &str, via_request: bool) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_owned());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        url.path = "*".to_owned();
        url.raw_path = "*".to_owned();
        return Ok(url);
    }
    let (scheme, rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        rest = before;
        url.raw_query = query.to_owned();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_owned());
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = authority.find('/').map_or((authority, ""), |i| (&authority[..i], &authority[i..]));
        url.host = parse_authority(authority)?;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    url.raw_path = rest.to_owned();
    Ok(url)
}

/// `parse "<raw>": <err>`, Go's `url.Error`.
fn url_error(raw: &str, err: String) -> String {
    format!("parse {raw:?}: {err}")
}

/// Go's `url.ParseRequestURI`.
pub(super) fn parse_request_uri(raw: &str) -> Result<GoUrl, String> {
    parse(raw, true).map_err(|e| url_error(raw, e))
}

/// Go's `url.Parse`.
pub(super) fn parse_url(raw: &str) -> Result<GoUrl, String> {
    let (before, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse(before, false).map_err(|e| url_error(before, e))?;
    url.fragment = unescape(fragment, Mode::Fragment).map_err(|e| url_error(raw, e))?;
    Ok(url)
}

impl GoUrl {
    /// Go's `splitHostPort`.
    fn host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':')
            && valid_optional_port(&host[colon..])
        {
            port = &host[colon + 1..];
            host = &host[..colon];
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// Go's `EscapedPath`.
    fn escaped_path(&self) -> String {
        if valid_encoded_path(&self.raw_path) { self.raw_path.clone() } else { escape_path(&self.path) }
    }

    /// Go's `Query`: `key=value` pairs split on `&`; a pair with `;` or a bad escape is
    /// skipped.
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (unescape(key, Mode::QueryComponent), unescape(value, Mode::QueryComponent)) else {
                continue;
            };
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => out.push((key, vec![value])),
            }
        }
        out
    }
}

on_values!(url_fn, url);
on_values!(is_url_fn, is_url);
on_values!(get_scheme_fn, get_scheme);
on_values!(get_host_fn, get_host);
on_values!(get_hostname_fn, get_hostname);
on_values!(get_port_fn, get_port);
on_values!(get_escaped_path_fn, get_escaped_path);
on_values!(get_query_fn, get_query);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url_fn)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url_fn)?;
    env.add_member_overload("getScheme", "url_get_scheme", url_type(), vec![], get_scheme_fn)?;
    env.add_member_overload("getHost", "url_get_host", url_type(), vec![], get_host_fn)?;
    env.add_member_overload("getHostname", "url_get_hostname", url_type(), vec![], get_hostname_fn)?;
    env.add_member_overload("getPort", "url_get_port", url_type(), vec![], get_port_fn)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", url_type(), vec![], get_escaped_path_fn)?;
    env.add_member_overload("getQuery", "url_get_query", url_type(), vec![], get_query_fn)?;
    Ok(())
}

fn url_at<'a>(values: &'a [CelValue], function: &str) -> Answer<&'a GoUrl> {
    match values.first() {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<GoUrl>(),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_overload(function, vec!["dyn".to_owned()]))
}

fn string_value(s: &str) -> CelValue {
    CelValue::String(Arc::new(s.to_owned()))
}

/// Upstream's `stringToUrl`: accepted by `ParseRequestURI`, split by `Parse`.
fn url(values: &[CelValue]) -> Answer<CelValue> {
    let s = text(values, 0, "url")?;
    let fail = |e: String| ExecutionError::function_error("url", format!("URL parse error during conversion from string: {e}"));
    parse_request_uri(s).map_err(fail)?;
    Ok(CelValue::Opaque(Arc::new(parse_url(s).map_err(fail)?)))
}

fn is_url(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(parse_request_uri(text(values, 0, "isURL")?).is_ok()))
}

fn get_scheme(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(&url_at(values, "getScheme")?.scheme))
}

fn get_host(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(&url_at(values, "getHost")?.host))
}

fn get_hostname(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(url_at(values, "getHostname")?.host_port().0))
}

fn get_port(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(url_at(values, "getPort")?.host_port().1))
}

fn get_escaped_path(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(&url_at(values, "getEscapedPath")?.escaped_path()))
}

fn get_query(values: &[CelValue]) -> Answer<CelValue> {
    let query = url_at(values, "getQuery")?.query();
    let map: HashMap<Key, CelValue> = query
        .into_iter()
        .map(|(k, vs)| {
            (Key::String(Arc::new(k)), CelValue::List(Arc::new(vs.into_iter().map(|v| CelValue::String(Arc::new(v))).collect())))
        })
        .collect();
    Ok(CelValue::Map(Map { map: Arc::new(map) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_uris_are_accepted_as_go_accepts_them() {
        for ok in ["https://example.com/a", "/absolute/path", "mailto:someone@example.com", "*", "http://[::1]:80/x", "a+b-c.d:opaque"] {
            assert!(parse_request_uri(ok).is_ok(), "{ok}");
        }
        for (bad, err) in [
            ("", r#"parse "": empty url"#),
            ("not a url", r#"parse "not a url": invalid URI for request"#),
            ("relative/path", r#"parse "relative/path": invalid URI for request"#),
            (":nope", r#"parse ":nope": missing protocol scheme"#),
            ("http://a b/", r#"parse "http://a b/": invalid character " " in host name"#),
            ("http://host:8x/", r#"parse "http://host:8x/": invalid port ":8x" after host"#),
            ("/a%zz", r#"parse "/a%zz": invalid URL escape "%zz""#),
            ("http://[::1/", r#"parse "http://[::1/": missing ']' in host"#),
            ("/a\tb", r#"parse "/a\tb": net/url: invalid control character in URL"#),
        ] {
            assert_eq!(parse_request_uri(bad), Err(err.to_owned()), "{bad}");
        }
    }

    #[test]
    fn parts_split_as_go_splits_them() {
        let u = parse_url("HTTPS://user:pw@Example.com:8443/a%2Fb c/?x=1&x=2&y=a+b&bad=%zz&semi;colon=1#frag").expect("url");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "Example.com:8443");
        assert_eq!(u.host_port(), ("Example.com", "8443"));
        assert_eq!(u.path, "/a/b c/");
        // Not a valid encoding (the space), so the path is escaped again, losing `%2F`.
        assert_eq!(u.escaped_path(), "/a/b%20c/");
        assert_eq!(u.query(), [("x".to_owned(), vec!["1".to_owned(), "2".to_owned()]), ("y".to_owned(), vec!["a b".to_owned()])]);
        assert_eq!(u.fragment, "frag");
        let v6 = parse_url("http://[fe80::1%25eth0]:80/").expect("v6");
        assert_eq!(v6.host_port(), ("fe80::1%eth0", "80"));
        let plain = parse_url("https://example.com/a%2Fb").expect("url");
        assert_eq!(plain.escaped_path(), "/a%2Fb");
        assert_eq!(plain.host_port(), ("example.com", ""));
    }
}
