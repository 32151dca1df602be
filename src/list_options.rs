//! The options of list, watch and deletecollection requests, and continue tokens, as
//! kube-apiserver reads and checks them.
//!
//! - [`ListOptions::from_query`] reads the query as `req.URL.Query()` does
//!   ([`crate::url::parse_query`]), then is the handlers' `DecodeParameters` into
//!   `metainternalversion.ListOptions` (a bad number or selector is a 400 with upstream's text)
//!   followed by `ValidateListOptions` (a forbidden combination is the 422
//!   `ListOptions.meta.k8s.io "" is invalid: ...`).
//! - [`ListOptions::list_plan`] is the storage's `ListReadConsistency`: which revision a list
//!   reads at and where a continue token resumes it.
//! - Continue tokens are upstream's byte for byte (`k8s.io/apiserver/pkg/storage/continue.go`):
//!   unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":<int64>,"start":"<key after the
//!   prefix>"}`, where the start is the last returned key plus a NUL byte.
//!
//! I/O-free; the tables of cases are upstream's validation and continue tests'.

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError, FieldError, GroupKind, go_quote};

/// A resourceVersion as a number: the store's revision (etcd's, or the embedded store's).
pub type Revision = i64;

/// `metav1.ResourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResourceVersionMatch {
    Exact,
    NotOlderThan,
}

impl ResourceVersionMatch {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "Exact",
            Self::NotOlderThan => "NotOlderThan",
        }
    }
}

/// The options of a list, watch or deletecollection request (`metainternalversion.ListOptions`).
/// Empty `resourceVersion`, `resourceVersionMatch` and `continue` parameters count as absent,
/// as upstream's empty strings do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    pub label_selector: LabelSelector,
    /// As the client sent it; [`ListOptions::convert_field_selector`] checks its keys against
    /// the resource.
    pub field_selector: FieldSelector,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// As sent; zero and negative values mean no limit ([`ListOptions::page_limit`]).
    pub limit: Option<i64>,
    pub continue_token: Option<String>,
    /// The `watch` parameter. The legacy `/watch/` paths watch without it, and upstream
    /// validates their options as a list's (the `watch` parameter alone decides).
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub timeout_seconds: Option<i64>,
}

/// The `ListOptions` kind that 422s name (`ListOptions.meta.k8s.io "" is invalid: ...`).
const LIST_OPTIONS_KIND: GroupKind<'static> = GroupKind::new("meta.k8s.io", "ListOptions");

impl ListOptions {
    /// Reads a raw query string (`labelSelector=app%3Dweb&limit=500`): decoding as upstream's
    /// `DecodeParameters` (400 for a malformed number or selector) and validating as
    /// `ValidateListOptions` (422).
    pub fn from_query(query: &str) -> Result<Self, ApiError> {
        Self::from_values(&crate::url::parse_query(query))
    }

    /// [`ListOptions::from_query`] on decoded query values; the first value of a repeated
    /// parameter counts, as upstream's conversions take it.
    pub fn from_values(values: &BTreeMap<String, Vec<String>>) -> Result<Self, ApiError> {
        decode_parameters(values)?.into_validated()
    }

    /// The page size: `limit` when positive.
    pub fn page_limit(&self) -> Option<i64> {
        self.limit.filter(|l| *l > 0)
    }

    /// Checks the field selector's keys against the resource and renames them for its storage
    /// with `convert` (the resource's field label conversion: `FieldSelector::convert_for` for
    /// the scheme's resources); an unsupported key is upstream's 400.
    pub fn convert_field_selector(
        &mut self,
        convert: impl FnMut(&str, &str) -> Result<(String, String), crate::selectors::SelectorError>,
    ) -> Result<(), ApiError> {
        self.field_selector = self.field_selector.transform(convert)?;
        Ok(())
    }

    /// A watch of one object (`.../pods/<name>` with `watch=true`, or a legacy `/watch/` path
    /// with a name): the name becomes a `metadata.name` field selector; a field selector that
    /// does not pin the same name is upstream's 400.
    pub fn select_name(&mut self, name: &str) -> Result<(), ApiError> {
        if self.field_selector.is_empty() {
            self.field_selector = FieldSelector::one_term_equal("metadata.name", name);
            return Ok(());
        }
        match self.field_selector.requires_exact_match("metadata.name") {
            Some(selected) if selected == name => Ok(()),
            _ => Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name")),
        }
    }

    /// How a list reads storage (upstream's `ListReadConsistency`): a continue token resumes
    /// at its revision (or the latest for a token of a compacted list), no `resourceVersion`
    /// reads the latest state, `resourceVersionMatch` decides otherwise, and a legacy paged
    /// list at a non-zero revision reads exactly there. `key_prefix` is the collection's key
    /// prefix, ending with `/`.
    pub fn list_plan(&self, key_prefix: &str) -> Result<ListPlan, ApiError> {
        let rv = self.resource_version.as_deref().unwrap_or("");
        if let Some(token) = &self.continue_token {
            let decoded = decode_continue(token, key_prefix)?;
            if !rv.is_empty() && rv != "0" {
                return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
            }
            let consistency = if decoded.revision > 0 { ReadConsistency::Exact(decoded.revision) } else { ReadConsistency::Latest };
            return Ok(ListPlan { consistency, continue_key: Some(decoded.start_key) });
        }
        if rv.is_empty() {
            return Ok(ListPlan { consistency: ReadConsistency::Latest, continue_key: None });
        }
        let parsed = parse_resource_version(rv).map_err(|e| ApiError::bad_request(format!("invalid resource version: {e}")))?;
        let parsed = Revision::try_from(parsed).unwrap_or(Revision::MAX);
        let consistency = match self.resource_version_match {
            Some(ResourceVersionMatch::NotOlderThan) => ReadConsistency::NotOlderThan(parsed),
            Some(ResourceVersionMatch::Exact) if parsed == 0 => {
                return Err(ApiError::bad_request("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
            }
            Some(ResourceVersionMatch::Exact) => ReadConsistency::Exact(parsed),
            None if self.page_limit().is_some() && parsed > 0 => ReadConsistency::Exact(parsed),
            None => ReadConsistency::NotOlderThan(parsed),
        };
        Ok(ListPlan { consistency, continue_key: None })
    }
}

/// The query decoded into `metainternalversion.ListOptions`, not yet validated.
pub(crate) struct Decoded<'a> {
    pub(crate) label_selector: LabelSelector,
    pub(crate) field_selector: FieldSelector,
    pub(crate) watch: bool,
    allow_watch_bookmarks: bool,
    resource_version: Option<&'a str>,
    resource_version_match: Option<&'a str>,
    timeout_seconds: Option<i64>,
    limit: Option<i64>,
    continue_token: Option<&'a str>,
    send_initial_events: Option<bool>,
}

impl Decoded<'_> {
    /// `ValidateListOptions` (a 422 listing every forbidden combination), then the options.
    fn into_validated(self) -> Result<ListOptions, ApiError> {
        let errors =
            validate(self.watch, self.resource_version, self.resource_version_match, self.continue_token, self.send_initial_events);
        if !errors.is_empty() {
            return Err(ApiError::invalid(LIST_OPTIONS_KIND, "", &errors));
        }
        let resource_version_match = match self.resource_version_match {
            None => None,
            Some("Exact") => Some(ResourceVersionMatch::Exact),
            Some("NotOlderThan") => Some(ResourceVersionMatch::NotOlderThan),
            // Validation refuses every other value.
            Some(other) => return Err(ApiError::bad_request(format!("unknown ResourceVersionMatch value: {other}"))),
        };
        Ok(ListOptions {
            label_selector: self.label_selector,
            field_selector: self.field_selector,
            resource_version: self.resource_version.map(str::to_owned),
            resource_version_match,
            limit: self.limit,
            continue_token: self.continue_token.map(str::to_owned),
            watch: self.watch,
            allow_watch_bookmarks: self.allow_watch_bookmarks,
            send_initial_events: self.send_initial_events,
            timeout_seconds: self.timeout_seconds,
        })
    }
}

/// Upstream's `ParameterCodec.DecodeParameters` into `metainternalversion.ListOptions`: the
/// first value of each parameter, converted in the generated conversion's field order (a
/// number that is no int64 is a 400 with `strconv`'s text), then the selectors parsed (a bad
/// one is a 400 with the parser's text). Request info reads it too (a list's name).
pub(crate) fn decode_parameters(values: &BTreeMap<String, Vec<String>>) -> Result<Decoded<'_>, ApiError> {
    let first = |k: &str| values.get(k).and_then(|v| v.first()).map(String::as_str);
    // url.Values → metav1.ListOptions.
    let label_selector = first("labelSelector").unwrap_or("");
    let field_selector = first("fieldSelector").unwrap_or("");
    let watch = first("watch").is_some_and(go_bool);
    let allow_watch_bookmarks = first("allowWatchBookmarks").is_some_and(go_bool);
    let resource_version = first("resourceVersion").filter(|s| !s.is_empty());
    let resource_version_match = first("resourceVersionMatch").filter(|s| !s.is_empty());
    let timeout_seconds = first("timeoutSeconds").map(go_parse_int).transpose().map_err(ApiError::bad_request)?;
    let limit = first("limit").map(go_parse_int).transpose().map_err(ApiError::bad_request)?;
    let continue_token = first("continue").filter(|s| !s.is_empty());
    let send_initial_events = first("sendInitialEvents").map(go_bool);
    // metav1 → internal: the selectors are parsed.
    Ok(Decoded {
        label_selector: LabelSelector::parse(label_selector)?,
        field_selector: FieldSelector::parse(field_selector)?,
        watch,
        allow_watch_bookmarks,
        resource_version,
        resource_version_match,
        timeout_seconds,
        limit,
        continue_token,
        send_initial_events,
    })
}

/// `ValidateListOptions` with the WatchList feature on (the default).
fn validate(
    watch: bool,
    resource_version: Option<&str>,
    resource_version_match: Option<&str>,
    continue_token: Option<&str>,
    send_initial_events: Option<bool>,
) -> Vec<FieldError> {
    const MATCH: &str = "resourceVersionMatch";
    let mut errs = Vec::new();
    if watch {
        if send_initial_events.is_some() && resource_version_match != Some("NotOlderThan") {
            errs.push(FieldError::forbidden(MATCH, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
        }
        if let Some(m) = resource_version_match {
            if send_initial_events.is_none() {
                errs.push(FieldError::forbidden(MATCH, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
            }
            if m != "NotOlderThan" {
                errs.push(FieldError::not_supported(MATCH, m, &["NotOlderThan"]));
            }
            if continue_token.is_some() {
                errs.push(FieldError::forbidden(MATCH, "resourceVersionMatch is forbidden when continue is provided"));
            }
        }
        return errs;
    }
    if let Some(m) = resource_version_match {
        if resource_version.is_none() {
            errs.push(FieldError::forbidden(MATCH, "resourceVersionMatch is forbidden unless resourceVersion is provided"));
        }
        if continue_token.is_some() {
            errs.push(FieldError::forbidden(MATCH, "resourceVersionMatch is forbidden when continue is provided"));
        }
        if m != "Exact" && m != "NotOlderThan" {
            errs.push(FieldError::not_supported(MATCH, m, &["Exact", "NotOlderThan", ""]));
        }
        if m == "Exact" && resource_version == Some("0") {
            errs.push(FieldError::forbidden(MATCH, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
    }
    if send_initial_events.is_some() {
        errs.push(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
    }
    errs
}

/// How a list reads storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadConsistency {
    /// The latest state (a quorum read).
    Latest,
    /// The state exactly at this revision (410 once compacted).
    Exact(Revision),
    /// The state at this revision or later; `0` means any state.
    NotOlderThan(Revision),
}

/// Where and how a list reads ([`ListOptions::list_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPlan {
    pub consistency: ReadConsistency,
    /// The full key a continue token resumes at, inclusive (upstream's continue key: the last
    /// key of the previous page plus a NUL byte).
    pub continue_key: Option<String>,
}

impl ListPlan {
    /// The continue key as the storage's `start_after` ([`DecodedContinue::start_after`]).
    pub fn start_after(&self) -> Option<String> {
        self.continue_key.as_deref().map(start_after_key)
    }
}

/// Upstream's `APIObjectVersioner.ParseResourceVersion`: `""` and `"0"` are 0, anything else
/// must be an unsigned decimal. The error is upstream's field error,
/// `resourceVersion: Invalid value: "x": strconv.ParseUint: parsing "x": invalid syntax`.
pub fn parse_resource_version(value: &str) -> Result<u64, FieldError> {
    if value.is_empty() || value == "0" {
        return Ok(0);
    }
    go_parse_uint(value).map_err(|e| FieldError::invalid("resourceVersion", value, e))
}

/// Upstream's `Convert_Slice_string_To_bool`: `false` (any case) and `0` are false, anything
/// else (the empty string too) is true.
pub(crate) fn go_bool(s: &str) -> bool {
    !(s == "0" || s.eq_ignore_ascii_case("false"))
}

/// Go's `strconv.ParseInt(s, 10, 64)` with its error text (`strconv.ParseInt: parsing "x":
/// invalid syntax`, `... value out of range` beyond the int64 range), as `DecodeParameters`
/// reports a query parameter that is no int64.
pub(crate) fn go_parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| num_error("ParseInt", s, e.kind()))
}

/// Go's `strconv.ParseUint(s, 10, 64)` with its error text (no sign allowed).
fn go_parse_uint(s: &str) -> Result<u64, String> {
    if s.starts_with('+') {
        return Err(num_error("ParseUint", s, &std::num::IntErrorKind::InvalidDigit));
    }
    s.parse::<u64>().map_err(|e| num_error("ParseUint", s, e.kind()))
}

fn num_error(func: &str, s: &str, kind: &std::num::IntErrorKind) -> String {
    use std::num::IntErrorKind::{NegOverflow, PosOverflow};
    let why = if matches!(kind, PosOverflow | NegOverflow) { "value out of range" } else { "invalid syntax" };
    format!("strconv.{func}: parsing {}: {why}", go_quote(s))
}

// ---------------------------------------------------------------------------------------------
// Continue tokens
// ---------------------------------------------------------------------------------------------

/// The only continue token version upstream writes and reads.
pub const CONTINUE_TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// A continue token upstream would refuse, with its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContinueError {
    /// Not base64, not JSON, wrong types, or a start key that is not a clean path
    /// (`continue key is not valid: illegal base64 data at input byte 4`).
    #[error("continue key is not valid: {0}")]
    Invalid(String),
    #[error("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")]
    InvalidStartRevision,
    #[error("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")]
    EmptyStartKey,
    #[error("continue key is not valid: server does not recognize this encoded version {0}")]
    UnrecognizedVersion(String),
    /// Encoding a key outside the collection's prefix (a bug of the caller).
    #[error("unable to encode next field: the key and key prefix do not match {prefix} {key}")]
    KeyPrefixMismatch { key: String, prefix: String },
}

impl From<ContinueError> for ApiError {
    /// A bad token is the storage's 400 `invalid continue token: ...`; an encoding failure a 500.
    fn from(e: ContinueError) -> Self {
        match e {
            ContinueError::KeyPrefixMismatch { .. } => ApiError::internal(e),
            e => ApiError::bad_request(format!("invalid continue token: {e}")),
        }
    }
}

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedContinue {
    /// The revision of the list's snapshot; `-1` asks for the latest state (the token of a
    /// compacted list, [`compacted_continue_error`]).
    pub revision: i64,
    /// The full key the list resumes at, inclusive.
    pub start_key: String,
}

impl DecodedContinue {
    /// The key the next page starts strictly after, for the storage's `start_after`. Upstream's
    /// tokens hold the last key plus a NUL byte, and "from `k\0` inclusive" is "after `k`".
    /// A token without the NUL (never written by upstream or kapi) resumes after its key, not
    /// at it.
    pub fn start_after(&self) -> String {
        start_after_key(&self.start_key)
    }
}

fn start_after_key(key: &str) -> String {
    key.strip_suffix('\0').unwrap_or(key).to_owned()
}

/// The token that continues a list after `last_key` at `revision` (upstream's
/// `EncodeContinue(lastKey + "\x00", keyPrefix, rv)`).
pub fn continue_after(last_key: &str, key_prefix: &str, revision: i64) -> Result<String, ContinueError> {
    encode_continue_key(&format!("{last_key}\0"), key_prefix, revision)
}

/// Upstream's `EncodeContinue`: the token resuming at the full key `key` (inclusive).
pub fn encode_continue_key(key: &str, key_prefix: &str, revision: i64) -> Result<String, ContinueError> {
    match key.strip_prefix(key_prefix) {
        Some(relative) if key != relative => Ok(encode_continue(revision, relative)),
        _ => Err(ContinueError::KeyPrefixMismatch { key: key.to_owned(), prefix: key_prefix.to_owned() }),
    }
}

/// The token for a start key relative to the collection's prefix, as Go's `json.Marshal` and
/// `base64.RawURLEncoding` write it.
pub fn encode_continue(revision: i64, start_relative: &str) -> String {
    let json = format!("{{\"v\":\"{CONTINUE_TOKEN_VERSION}\",\"rv\":{revision},\"start\":{}}}", go_json_string(start_relative));
    GO_RAW_URL.encode(json)
}

/// Upstream's `DecodeContinue`: the revision and the full start key (`key_prefix` joined with
/// the token's start, which must be a clean relative path).
pub fn decode_continue(token: &str, key_prefix: &str) -> Result<DecodedContinue, ContinueError> {
    let data = go_raw_url_decode(token).map_err(ContinueError::Invalid)?;
    let parsed = GoContinueToken::from_json(&data).map_err(ContinueError::Invalid)?;
    if parsed.version != CONTINUE_TOKEN_VERSION {
        return Err(ContinueError::UnrecognizedVersion(parsed.version));
    }
    if parsed.revision == 0 {
        return Err(ContinueError::InvalidStartRevision);
    }
    if parsed.start.is_empty() {
        return Err(ContinueError::EmptyStartKey);
    }
    // Defends against path traversal: the start may not climb above the prefix.
    let key = if parsed.start.starts_with('/') { parsed.start.clone() } else { format!("/{}", parsed.start) };
    let cleaned = crate::url::path_clean(&key);
    if cleaned != key {
        return Err(ContinueError::Invalid(parsed.start));
    }
    Ok(DecodedContinue { revision: parsed.revision, start_key: format!("{key_prefix}{}", &cleaned[1..]) })
}

/// The 410 for a continue token whose revision was compacted, as upstream's etcd3 store
/// answers: `Expired` with [`status::INCONSISTENT_CONTINUE`] and a fresh token (revision `-1`:
/// continue at the latest state) in `metadata.continue`; [`status::CONTINUE_EXPIRED`] alone if
/// no token can be made. `continue_key` is [`ListPlan::continue_key`].
pub fn compacted_continue_error(continue_key: &str, key_prefix: &str) -> ApiError {
    match encode_continue_key(continue_key, key_prefix, -1) {
        Ok(token) => ApiError::inconsistent_continue(token),
        Err(_) => ApiError::resource_expired(status::CONTINUE_EXPIRED),
    }
}

/// Go's `json.Marshal` of a string: `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u00XX`, the
/// control characters as `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`.
fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `base64.RawURLEncoding`: the URL alphabet, no padding (a `=` is a byte outside the
/// alphabet), and, as Go's encodings unless made `Strict()`, set bits after the last whole byte
/// ignored.
const GO_RAW_URL: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireNone),
);

/// Go's `base64.RawURLEncoding.DecodeString`: `\r` and `\n` skipped anywhere, and Go's
/// `illegal base64 data at input byte N`. Go reads left to right, so `N` is the first byte
/// outside the alphabet, or, when the last quantum holds a single symbol, the last byte read
/// (the input's last, a trailing newline included).
fn go_raw_url_decode(s: &str) -> Result<Vec<u8>, String> {
    let symbols = if s.contains(['\r', '\n']) { Cow::Owned(s.replace(['\r', '\n'], "")) } else { Cow::Borrowed(s) };
    GO_RAW_URL.decode(symbols.as_bytes()).map_err(|_| {
        let in_alphabet = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'\r' | b'\n');
        let at = s.bytes().position(|b| !in_alphabet(b)).unwrap_or(s.len().saturating_sub(1));
        format!("illegal base64 data at input byte {at}")
    })
}

/// The fields of upstream's `continueToken`, read as Go's `json.Unmarshal` reads them: keys
/// matched case-insensitively, the last of duplicates winning, `null` leaving the zero value,
/// unknown keys ignored.
struct GoContinueToken {
    version: String,
    revision: i64,
    start: String,
}

impl GoContinueToken {
    fn from_json(data: &[u8]) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_slice(data).map_err(|e| go_json_syntax_error(data, &e))?;
        let mut token = Self { version: String::new(), revision: 0, start: String::new() };
        let object = match value {
            serde_json::Value::Object(o) => o,
            serde_json::Value::Null => return Ok(token),
            other => {
                return Err(format!("json: cannot unmarshal {} into Go value of type storage.continueToken", go_json_kind(&other)));
            }
        };
        let mut first_error = None;
        let mut type_error = |field: &str, v: &serde_json::Value, want: &str| {
            let kind = match v {
                serde_json::Value::Number(n) => format!("number {n}"),
                other => go_json_kind(other).to_owned(),
            };
            first_error
                .get_or_insert_with(|| format!("json: cannot unmarshal {kind} into Go struct field continueToken.{field} of type {want}"));
        };
        for (k, v) in &object {
            let field = ["v", "rv", "start"].into_iter().find(|f| k.eq_ignore_ascii_case(f));
            match (field, v) {
                (None, _) | (Some(_), serde_json::Value::Null) => {}
                (Some("v"), serde_json::Value::String(s)) => token.version = s.clone(),
                (Some("start"), serde_json::Value::String(s)) => token.start = s.clone(),
                (Some("rv"), serde_json::Value::Number(n)) if n.as_i64().is_some() => {
                    token.revision = n.as_i64().unwrap_or_default();
                }
                (Some("rv"), v) => type_error("rv", v, "int64"),
                (Some(f), v) => type_error(f, v, "string"),
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(token),
        }
    }
}

fn go_json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// An approximation of Go's `encoding/json` syntax errors: `unexpected end of JSON input`,
/// `invalid character 'x' after top-level value`, otherwise
/// `invalid character 'x' looking for beginning of value` (Go names the context more
/// precisely in some positions).
fn go_json_syntax_error(data: &[u8], e: &serde_json::Error) -> String {
    if e.is_eof() {
        return "unexpected end of JSON input".to_owned();
    }
    let text = String::from_utf8_lossy(data);
    let offset: usize = text.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
    let line = text.get(offset..).unwrap_or("");
    // serde's column is 1-based and counts bytes.
    let c = line.get(e.column().saturating_sub(1)..).and_then(|rest| rest.chars().next()).unwrap_or(' ');
    let quoted = match c {
        '\'' => "'\\''".to_owned(),
        '"' => "'\"'".to_owned(),
        c => {
            let q = go_quote(&c.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    };
    if e.to_string().starts_with("trailing characters") {
        format!("invalid character {quoted} after top-level value")
    } else {
        format!("invalid character {quoted} looking for beginning of value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token and the start key and revision it decodes to, or the error.
    type DecodeCase = (String, Result<(&'static str, i64), &'static str>);

    fn err(query: &str) -> ApiError {
        ListOptions::from_query(query).unwrap_err()
    }

    #[test]
    fn decodes_parameters() {
        let o = ListOptions::from_query(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&fieldSelector=metadata.name%3Dx&watch=1&allowWatchBookmarks=true\
             &resourceVersion=10&timeoutSeconds=30&limit=500&continue=&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        )
        .unwrap();
        assert_eq!(o.label_selector.to_string(), "app=web,tier in (a,b)");
        assert_eq!(o.field_selector.to_string(), "metadata.name=x");
        assert!(o.watch && o.allow_watch_bookmarks);
        assert_eq!(o.resource_version.as_deref(), Some("10"));
        assert_eq!(o.resource_version_match, Some(ResourceVersionMatch::NotOlderThan));
        assert_eq!((o.timeout_seconds, o.limit, o.page_limit()), (Some(30), Some(500), Some(500)));
        assert_eq!(o.continue_token, None);
        assert_eq!(o.send_initial_events, Some(true));

        let o = ListOptions::from_query("").unwrap();
        assert_eq!(o, ListOptions::default());
        assert!(o.label_selector.is_empty() && o.field_selector.is_empty());

        // Upstream's bool conversion: only "false" (any case) and "0" are false.
        for (v, want) in [("true", true), ("1", true), ("", true), ("yes", true), ("FALSE", false), ("0", false), ("False", false)] {
            assert_eq!(ListOptions::from_query(&format!("watch={v}")).unwrap().watch, want, "{v:?}");
        }
        assert!(ListOptions::from_query("watch").unwrap().watch);
        // The first of repeated values counts.
        assert_eq!(ListOptions::from_query("limit=5&limit=x").unwrap().limit, Some(5));
        assert_eq!(ListOptions::from_query("limit=0").unwrap().page_limit(), None);
        assert_eq!(ListOptions::from_query("limit=-3").unwrap().page_limit(), None);
        assert_eq!(ListOptions::from_query("limit=%2B3").unwrap().page_limit(), Some(3));
        assert_eq!(err("limit=+3").message, "strconv.ParseInt: parsing \" 3\": invalid syntax");
    }

    #[test]
    fn decode_errors_are_bad_requests() {
        let cases = [
            ("limit=abc", "strconv.ParseInt: parsing \"abc\": invalid syntax"),
            ("limit=", "strconv.ParseInt: parsing \"\": invalid syntax"),
            ("timeoutSeconds=99999999999999999999", "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"),
            ("timeoutSeconds=1.5&limit=x", "strconv.ParseInt: parsing \"1.5\": invalid syntax"),
            ("labelSelector=a%20in%20b&limit=x", "strconv.ParseInt: parsing \"x\": invalid syntax"),
            ("labelSelector=a%20in%20b", "unable to parse requirement: found 'b' expected: '('"),
            ("labelSelector=x%3Da%2C&fieldSelector=x", "found '', expected: identifier after ','"),
            ("fieldSelector=x", "invalid selector: 'x'; can't understand 'x'"),
        ];
        for (q, want) in cases {
            let e = err(q);
            assert_eq!((e.code, e.message.as_str()), (400, want), "{q}");
        }
    }

    // upstream's validation_test.go for ValidateListOptions (WatchList enabled).
    #[test]
    fn validation() {
        let ok = [
            "",
            "resourceVersion=1&resourceVersionMatch=Exact",
            "resourceVersion=0&resourceVersionMatch=NotOlderThan",
            "resourceVersion=0",
            "resourceVersionMatch=",
            "watch=true&resourceVersion=5",
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
            "watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            "continue=abc",
        ];
        for q in ok {
            assert!(ListOptions::from_query(q).is_ok(), "{q}: {:?}", ListOptions::from_query(q));
        }
        let bad = [
            (
                "resourceVersionMatch=Exact",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
            (
                "resourceVersion=0&resourceVersionMatch=Exact",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            (
                "resourceVersion=1&resourceVersionMatch=exact",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"exact\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
            ),
            (
                "resourceVersionMatch=Exact&continue=x",
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided]",
            ),
            (
                "sendInitialEvents=true",
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ),
            (
                "sendInitialEvents=false",
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
            ),
            (
                "watch=true&sendInitialEvents=true",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ),
            (
                "watch=true&resourceVersionMatch=NotOlderThan",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ),
            (
                "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact",
                "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
            ),
            (
                "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=x",
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ),
        ];
        for (q, want) in bad {
            let e = err(q);
            assert_eq!((e.code, e.message.as_str()), (422, want), "{q}");
            let status = e.to_status();
            let details = status.details.unwrap();
            assert_eq!((details.group.as_deref(), details.kind.as_deref()), (Some("meta.k8s.io"), Some("ListOptions")));
        }
    }

    // Numbers a client controls: parsed as Go parses them, refused with its words beyond the
    // int64/uint64 range, and saturating where they meet revisions.
    #[test]
    fn huge_numbers() {
        let huge = "9".repeat(10_000);
        for (param, value, want) in [
            ("timeoutSeconds", i64::MAX.to_string(), Ok(i64::MAX)),
            ("timeoutSeconds", i64::MIN.to_string(), Ok(i64::MIN)),
            ("timeoutSeconds", "-1".to_owned(), Ok(-1)),
            ("timeoutSeconds", "0".to_owned(), Ok(0)),
            ("timeoutSeconds", "9223372036854775808".to_owned(), Err("value out of range")),
            ("timeoutSeconds", huge.clone(), Err("value out of range")),
            ("timeoutSeconds", format!("-{huge}"), Err("value out of range")),
            ("timeoutSeconds", "1e9".to_owned(), Err("invalid syntax")),
            ("limit", i64::MAX.to_string(), Ok(i64::MAX)),
            ("limit", i64::MIN.to_string(), Ok(i64::MIN)),
            ("limit", huge.clone(), Err("value out of range")),
        ] {
            let got = ListOptions::from_query(&format!("{param}={value}"));
            let short = &value[..value.len().min(30)];
            match want {
                Ok(n) => {
                    let o = got.unwrap();
                    assert_eq!(if param == "limit" { o.limit } else { o.timeout_seconds }, Some(n), "{param}={short}");
                }
                Err(why) => {
                    let e = got.unwrap_err();
                    assert_eq!(
                        (e.code, e.message),
                        (400, format!("strconv.ParseInt: parsing {}: {why}", go_quote(&value))),
                        "{param}={short}"
                    );
                }
            }
        }
        assert_eq!(ListOptions::from_query(&format!("limit={}", i64::MAX)).unwrap().page_limit(), Some(i64::MAX));
        assert_eq!(ListOptions::from_query(&format!("limit={}", i64::MIN)).unwrap().page_limit(), None);
        assert_eq!(ListOptions::from_query("limit=-1").unwrap().page_limit(), None);
        assert_eq!(ListOptions::from_query("limit=0").unwrap().page_limit(), None);

        // resourceVersion is a uint64; beyond the revisions' int64 range it saturates.
        let plan = |q: &str| ListOptions::from_query(q).unwrap().list_plan("/registry/pods/").map(|p| p.consistency);
        assert_eq!(plan("resourceVersion=18446744073709551615"), Ok(ReadConsistency::NotOlderThan(Revision::MAX)));
        assert_eq!(plan("resourceVersion=9223372036854775808&limit=1"), Ok(ReadConsistency::Exact(Revision::MAX)));
        assert_eq!(plan("resourceVersion=9223372036854775807&resourceVersionMatch=Exact"), Ok(ReadConsistency::Exact(Revision::MAX)));
        let e = plan("resourceVersion=18446744073709551616").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "invalid resource version: resourceVersion: Invalid value: \"18446744073709551616\": strconv.ParseUint: parsing \"18446744073709551616\": value out of range"
            )
        );
        let e = plan(&format!("resourceVersion={huge}")).unwrap_err();
        assert!(e.message.ends_with(": value out of range"), "{}", &e.message[..80]);

        // Continue tokens carry an int64 revision: the extremes decode, anything beyond is Go's
        // type error, and no value reaches arithmetic.
        let token = |rv: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"a"}}"#))
        };
        let plan = |t: &str| ListOptions::from_query(&format!("continue={t}")).unwrap().list_plan("/registry/pods/").map(|p| p.consistency);
        assert_eq!(plan(&token(&i64::MAX.to_string())), Ok(ReadConsistency::Exact(i64::MAX)));
        assert_eq!(plan(&token(&i64::MIN.to_string())), Ok(ReadConsistency::Latest));
        assert_eq!(plan(&token("-1")), Ok(ReadConsistency::Latest));
        for rv in ["9223372036854775808", "-9223372036854775809", "1.5"] {
            let e = plan(&token(rv)).unwrap_err();
            assert_eq!(e.code, 400);
            assert!(e.message.contains("json: cannot unmarshal number") && e.message.ends_with("of type int64"), "{}", e.message);
        }
        assert_eq!(plan(&token(&huge)).unwrap_err().code, 400);
        assert_eq!(
            plan(&token("0")).unwrap_err().message,
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
    }

    #[test]
    fn single_object_watch() {
        let mut o = ListOptions::default();
        o.select_name("x").unwrap();
        assert_eq!(o.field_selector.to_string(), "metadata.name=x");
        let mut o = ListOptions::from_query("fieldSelector=metadata.name%3Dx").unwrap();
        o.select_name("x").unwrap();
        let mut o = ListOptions::from_query("fieldSelector=metadata.name%3Dy").unwrap();
        assert_eq!(o.select_name("x").unwrap_err().message, "fieldSelector metadata.name doesn't match requested name");
        let mut o = ListOptions::from_query("fieldSelector=spec.nodeName%3Dn").unwrap();
        assert_eq!(o.select_name("x").unwrap_err().code, 400);
    }

    #[test]
    fn field_selector_conversion() {
        let mut o = ListOptions::from_query("fieldSelector=spec.host%3Dn1").unwrap();
        let pods = |label: &str, value: &str| crate::selectors::convert_field_label("", "v1", "pods", label, value);
        o.convert_field_selector(pods).unwrap();
        assert_eq!(o.field_selector.to_string(), "spec.nodeName=n1");
        let mut o = ListOptions::from_query("fieldSelector=spec.foo%3Dn1").unwrap();
        let e = o.convert_field_selector(pods).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (400, "field label not supported: spec.foo"));
    }

    // upstream's continue_test.go (TestEncodeContinue, TestDecodeContinue).
    #[test]
    fn continue_tokens_encode_as_upstream() {
        // base64.RawURLEncoding of {"v":"meta.k8s.io/v1","rv":1,"start":"a/b\u0000"}
        let token = continue_after("/registry/pods/a/b", "/registry/pods/", 1).unwrap();
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).unwrap();
        assert_eq!(String::from_utf8(json).unwrap(), r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a/b\u0000"}"#);
        assert!(!token.contains('=') && !token.contains('+') && !token.contains('/'));
        assert_eq!(encode_continue(10, "ns/x"), "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAsInN0YXJ0IjoibnMveCJ9");
        assert_eq!(go_json_string("<a&b>\u{2028}\t\u{1}"), r#""\u003ca\u0026b\u003e\u2028\t\u0001""#);
        assert_eq!(
            encode_continue_key("/other/x", "/registry/pods/", 1).unwrap_err().to_string(),
            "unable to encode next field: the key and key prefix do not match /registry/pods/ /other/x"
        );
        assert!(encode_continue_key("/registry/pods/", "/registry/pods/", 1).is_ok());

        let decoded = decode_continue(&token, "/registry/pods/").unwrap();
        assert_eq!(decoded, DecodedContinue { revision: 1, start_key: "/registry/pods/a/b\0".to_owned() });
        assert_eq!(decoded.start_after(), "/registry/pods/a/b");
    }

    #[test]
    fn continue_tokens_decode_as_upstream() {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let prefix = "/test/";
        let cases: Vec<DecodeCase> = vec![
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"key"}"#), Ok(("/test/key", 1))),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"/key"}"#), Ok(("/test/key", 1))),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"key"}"#), Ok(("/test/key", -1))),
            (b64(r#"{"V":"meta.k8s.io/v1","RV":7,"Start":"x","extra":1}"#), Ok(("/test/x", 7))),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../key"}"#), Err("continue key is not valid: ../key")),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"key/../x"}"#), Err("continue key is not valid: key/../x")),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"key/"}"#), Err("continue key is not valid: key/")),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"//key"}"#), Err("continue key is not valid: //key")),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"key"}"#),
                Err("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"),
            ),
            (b64(r#"{"v":"meta.k8s.io/v1","rv":1}"#), Err("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")),
            (
                b64(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"key"}"#),
                Err("continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"),
            ),
            (b64(r#"{}"#), Err("continue key is not valid: server does not recognize this encoded version ")),
            (b64("null"), Err("continue key is not valid: server does not recognize this encoded version ")),
            (
                b64(r#"{"v":"meta.k8s.io/v1","rv":"1","start":"key"}"#),
                Err("continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64"),
            ),
            (
                b64(r#"{"v":1,"rv":1,"start":"key"}"#),
                Err("continue key is not valid: json: cannot unmarshal number 1 into Go struct field continueToken.v of type string"),
            ),
            (b64("[]"), Err("continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken")),
            (b64(""), Err("continue key is not valid: unexpected end of JSON input")),
            (b64("{\"v\":"), Err("continue key is not valid: unexpected end of JSON input")),
            (b64("x"), Err("continue key is not valid: invalid character 'x' looking for beginning of value")),
            (b64("{} x"), Err("continue key is not valid: invalid character 'x' after top-level value")),
            ("a=b".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 1")),
            ("abcd!".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 4")),
            ("abcde".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 4")),
            (format!("{}==", b64("{}")), Err("continue key is not valid: illegal base64 data at input byte 3")),
            // Go's base64.RawURLEncoding: padding is a byte outside the alphabet, the first bad
            // byte is the one reported, newlines are skipped (but counted), and set bits after
            // the last whole byte are ignored ("e31" decodes as "e30", `{}`).
            (
                format!("{}=", b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"key"}"#)),
                Err("continue key is not valid: illegal base64 data at input byte 58"),
            ),
            ("a!cd!".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 1")),
            ("abcd+".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 4")),
            ("abcde\n".to_owned(), Err("continue key is not valid: illegal base64 data at input byte 5")),
            ("e3\r\n0".to_owned(), Err("continue key is not valid: server does not recognize this encoded version ")),
            ("e31".to_owned(), Err("continue key is not valid: server does not recognize this encoded version ")),
        ];
        for (token, want) in cases {
            let got = decode_continue(&token, prefix).map(|d| (d.start_key, d.revision)).map_err(|e| e.to_string());
            let want = want.map(|(k, rv)| (k.to_owned(), rv)).map_err(str::to_owned);
            assert_eq!(got, want, "{token}");
        }
        let e: ApiError = decode_continue("!", prefix).unwrap_err().into();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "invalid continue token: continue key is not valid: illegal base64 data at input byte 0")
        );
    }

    #[test]
    fn list_plans() {
        let plan = |q: &str| ListOptions::from_query(q).unwrap().list_plan("/registry/pods/");
        let token = continue_after("/registry/pods/ns/a", "/registry/pods/", 42).unwrap();
        let cases: Vec<(String, Result<ReadConsistency, &str>)> = vec![
            (String::new(), Ok(ReadConsistency::Latest)),
            ("resourceVersion=0".to_owned(), Ok(ReadConsistency::NotOlderThan(0))),
            ("resourceVersion=10".to_owned(), Ok(ReadConsistency::NotOlderThan(10))),
            ("resourceVersion=10&limit=5".to_owned(), Ok(ReadConsistency::Exact(10))),
            ("resourceVersion=0&limit=5".to_owned(), Ok(ReadConsistency::NotOlderThan(0))),
            ("resourceVersion=10&limit=5&resourceVersionMatch=NotOlderThan".to_owned(), Ok(ReadConsistency::NotOlderThan(10))),
            ("resourceVersion=10&resourceVersionMatch=Exact".to_owned(), Ok(ReadConsistency::Exact(10))),
            (
                "resourceVersion=abc".to_owned(),
                Err(
                    "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
                ),
            ),
            (
                "resourceVersion=-1".to_owned(),
                Err("invalid resource version: resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid syntax"),
            ),
            (
                "resourceVersion=%2B1".to_owned(),
                Err("invalid resource version: resourceVersion: Invalid value: \"+1\": strconv.ParseUint: parsing \"+1\": invalid syntax"),
            ),
            (format!("continue={token}"), Ok(ReadConsistency::Exact(42))),
            (format!("continue={token}&resourceVersion=0"), Ok(ReadConsistency::Exact(42))),
            (format!("continue={token}&resourceVersion=5"), Err("specifying resource version is not allowed when using continue")),
            ("continue=abc!".to_owned(), Err("invalid continue token: continue key is not valid: illegal base64 data at input byte 3")),
        ];
        for (q, want) in cases {
            let got = plan(&q).map(|p| p.consistency).map_err(|e| {
                assert_eq!(e.code, 400);
                e.message
            });
            assert_eq!(got, want.map_err(str::to_owned), "{q}");
        }
        let p = plan(&format!("continue={token}")).unwrap();
        assert_eq!(p.continue_key.as_deref(), Some("/registry/pods/ns/a\0"));
        assert_eq!(p.start_after().as_deref(), Some("/registry/pods/ns/a"));
        let compacted = continue_after("/registry/pods/ns/a", "/registry/pods/", -1).unwrap();
        let p = plan(&format!("continue={compacted}")).unwrap();
        assert_eq!(p.consistency, ReadConsistency::Latest);
    }

    #[test]
    fn compacted_continue() {
        let e = compacted_continue_error("/registry/pods/ns/a\0", "/registry/pods/");
        assert_eq!((e.code, e.message.as_str()), (410, status::INCONSISTENT_CONTINUE));
        let token = e.continue_token.clone().unwrap();
        assert_eq!(
            decode_continue(&token, "/registry/pods/").unwrap(),
            DecodedContinue { revision: -1, start_key: "/registry/pods/ns/a\0".to_owned() }
        );
        assert_eq!(e.to_status().metadata.unwrap().r#continue, Some(token));
        let e = compacted_continue_error("/elsewhere", "/registry/pods/");
        assert_eq!((e.code, e.message.as_str()), (410, status::CONTINUE_EXPIRED));
    }
}
