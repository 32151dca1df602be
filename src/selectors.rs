//! Label and field selectors, parsed and matched as kube-apiserver does.
//!
//! - [`LabelSelector`] is upstream's `labels.Selector` (`k8s.io/apimachinery/pkg/labels`): the
//!   `labelSelector` query parameter with its full grammar (`a=b`, `a==b`, `a!=b`,
//!   `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-joined), its lexer quirks and
//!   its exact error messages, plus the conversion of a `metav1.LabelSelector` object
//!   (`matchLabels`/`matchExpressions`, upstream's `LabelSelectorAsSelector`).
//! - [`FieldSelector`] is upstream's `fields.Selector`: `a=b`, `a==b`, `a!=b`, comma-joined, with
//!   `\,`, `\=` and `\\` escapes in values.
//! - The per-resource field selector tables ([`resource_fields`]): which keys a resource accepts
//!   (upstream's field label conversion functions, registered per kind in
//!   `pkg/apis/<group>/<version>/conversion.go`) and the values an object has for them (the
//!   registry strategies' `GetAttrs`/`ToSelectableFields`). [`FieldSelector::convert_for`] turns
//!   an unsupported key into upstream's 400 text; [`selectable_fields`] computes an object's
//!   fields for [`FieldSelector::matches_fields`].
//!
//! I/O-free; the tables of cases are upstream's `selector_test.go` ones.

use std::collections::BTreeMap;
use std::fmt;

use kapi_api::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::Value;

use crate::group_index::same_name;
use crate::status::{ApiError, go_quote};

/// Every way a selector can be refused. The message of each variant is upstream's, word for
/// word; the REST layer answers all of them with a 400 (`From<SelectorError> for ApiError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A `labelSelector` that `labels.Parse` refuses, e.g.
    /// `unable to parse requirement: found '', expected: in, notin, =, ==, !=, gt, lt`.
    #[error("{0}")]
    Label(String),
    /// A `metav1.LabelSelector` object that `LabelSelectorAsSelector` refuses, e.g.
    /// `"Foo" is not a valid pod selector operator`.
    #[error("{0}")]
    LabelSelectorObject(String),
    /// A `fieldSelector` that `fields.ParseSelector` refuses, e.g.
    /// `invalid selector: 'x'; can't understand 'x'`.
    #[error("{0}")]
    Field(String),
    /// A field selector key the resource does not support, e.g.
    /// `field label not supported: spec.foo`.
    #[error("{0}")]
    UnsupportedField(String),
}

impl From<SelectorError> for ApiError {
    /// The handlers' `errors.NewBadRequest(err.Error())`.
    fn from(e: SelectorError) -> Self {
        ApiError::bad_request(e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Label and name validation (upstream's `k8s.io/apimachinery/pkg/api/validate/content`)
// ---------------------------------------------------------------------------------------------

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_MAX_LENGTH: usize = 63;
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// The longest label value (`content.LabelValueMaxLength`).
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// The longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

/// `content.RegexError`: `<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')` —
/// the double space is upstream's.
pub(crate) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

/// `content.MaxLenError`.
pub(crate) fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`: non-empty, alphanumeric at both ends.
fn is_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn is_dns1123_label_format(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-'),
        _ => false,
    }
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
/// The longest DNS label.
pub const DNS_LABEL_MAX_LENGTH: usize = 63;

/// Upstream's `IsDNS1123Label` (namespace names, for one).
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label_format(value) {
        errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
    }
    errs
}

/// Upstream's `IsDNS1035Label` (service names, for one).
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS_LABEL_MAX_LENGTH));
    }
    if !(is_dns1123_label_format(value) && value.as_bytes().first().is_some_and(u8::is_ascii_lowercase)) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// Upstream's `IsDNS1123Subdomain`: the reasons `value` is not a lowercase RFC 1123 subdomain
/// (empty when it is one).
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.split('.').all(is_dns1123_label_format) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// Upstream's `IsLabelKey` (also `IsQualifiedName`): the reasons `value` is not a label key,
/// `[prefix/]name` (empty when it is one).
pub fn label_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                errs.extend(dns1123_subdomain_errors(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_KEY_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(LABEL_KEY_MAX_LENGTH)));
    }
    if !is_label_key_name(name) {
        errs.push(format!("name part {}", regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])));
    }
    errs
}

/// Upstream's `IsLabelValue`: the reasons `value` is not a label value (empty when it is one).
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_label_key_name(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// `field.Invalid(path, value, detail).Error()` for a string value.
fn invalid_field(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Go's `%#v` of a `[]string` (`[]string(nil)` when empty: upstream passes a nil slice there).
fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_owned();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `utilerrors.NewAggregate(...).Error()`: duplicates dropped, one bare, several in brackets.
fn aggregate(messages: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for m in messages {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    if seen.len() == 1 { seen.remove(0) } else { format!("[{}]", seen.join(", ")) }
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

/// `selection.Operator`, as label selector requirements use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
    /// A bare key.
    Exists,
    /// `!key`
    DoesNotExist,
    /// `>`
    GreaterThan,
    /// `<`
    LessThan,
}

impl Operator {
    /// Upstream's string value of the operator (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`,
    /// `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        }
    }
}

/// One `key op values` term of a label selector (`labels.Requirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Upstream's `NewRequirement`: validates the key, the number of values for the operator,
    /// integer values for `gt`/`lt` and every value as a label value. The error is the
    /// aggregate of upstream's field errors (`values[0][app]: Invalid value: "-x": ...`).
    pub fn new(key: impl Into<String>, operator: Operator, values: Vec<String>) -> Result<Self, Vec<String>> {
        let key = key.into();
        let mut errs = Vec::new();
        let key_errs = label_key_errors(&key);
        if !key_errs.is_empty() {
            errs.push(invalid_field("key", &key, &key_errs.join("; ")));
        }
        let n = values.len();
        match operator {
            Operator::In | Operator::NotIn if n == 0 => errs.push(format!(
                "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                go_string_slice(&values)
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if n != 1 => errs
                .push(format!("values: Invalid value: {}: exact-match compatibility requires one single value", go_string_slice(&values))),
            Operator::Exists | Operator::DoesNotExist if n != 0 => errs.push(format!(
                "values: Invalid value: {}: values set must be empty for exists and does not exist",
                go_string_slice(&values)
            )),
            Operator::GreaterThan | Operator::LessThan => {
                if n != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        go_string_slice(&values)
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(invalid_field(&format!("values[{i}]"), v, "for 'Gt', 'Lt' operators, the value must be an integer"));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = label_value_errors(v);
            if !value_errs.is_empty() {
                errs.push(invalid_field(&format!("values[{i}][{key}]"), v, &value_errs.join("; ")));
            }
        }
        if errs.is_empty() { Ok(Self { key, operator, values }) } else { Err(errs) }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values in the order given (sorted and deduplicated when parsed from a string).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels `lookup` describes satisfy this requirement: `in`/`=`/`==` need the
    /// key with one of the values; `notin`/`!=` match a missing key; `gt`/`lt` need an integer
    /// value.
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                lookup(&self.key).is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => lookup(&self.key).is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => lookup(&self.key).is_some(),
            Operator::DoesNotExist => lookup(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = lookup(&self.key).and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else { return false };
                let Ok(want) = want.parse::<i64>() else { return false };
                if self.operator == Operator::GreaterThan { have > want } else { have < want }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's `Requirement.String()`: `!a`, `a`, `a=b`, `a in (x,y)` (values sorted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: requirements that must all hold (`labels.Selector`).
///
/// The default is [`LabelSelector::everything`]. [`LabelSelector::nothing`] (a nil
/// `metav1.LabelSelector`) matches no object at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object (`labels.Everything()`).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches no object (`labels.Nothing()`).
    pub fn nothing() -> Self {
        Self { requirements: Vec::new(), nothing: true }
    }

    /// Parses the `labelSelector` syntax as upstream's `labels.Parse`; requirements are sorted by
    /// key.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut requirements = Parser::new(selector).parse().map_err(SelectorError::Label)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements, nothing: false })
    }

    /// A selector requiring exactly these labels (`labels.SelectorFromSet`), without validating
    /// them.
    pub fn from_set(labels: &BTreeMap<String, String>) -> Self {
        let requirements =
            labels.iter().map(|(k, v)| Requirement { key: k.clone(), operator: Operator::Equals, values: vec![v.clone()] }).collect();
        Self { requirements, nothing: false }
    }

    /// Upstream's `metav1.LabelSelectorAsSelector`: `None` matches nothing, an empty selector
    /// everything; `matchLabels` become `=` requirements, `matchExpressions` `in`, `notin`,
    /// exists and does-not-exist, each validated as `NewRequirement` does.
    pub fn from_api(selector: Option<&metav1::LabelSelector>) -> Result<Self, SelectorError> {
        let Some(selector) = selector else { return Ok(Self::nothing()) };
        let mut requirements = Vec::new();
        for (k, v) in &selector.match_labels {
            let r = Requirement::new(k.clone(), Operator::Equals, vec![v.clone()])
                .map_err(|e| SelectorError::LabelSelectorObject(aggregate(e)))?;
            requirements.push(r);
        }
        for expr in &selector.match_expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::LabelSelectorObject(format!("{} is not a valid pod selector operator", go_quote(other))));
                }
            };
            let r = Requirement::new(expr.key.clone(), operator, expr.values.clone())
                .map_err(|e| SelectorError::LabelSelectorObject(aggregate(e)))?;
            requirements.push(r);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements, nothing: false })
    }

    /// [`LabelSelector::from_api`] on the JSON form of a `metav1.LabelSelector` (a missing or
    /// `null` selector matches nothing).
    pub fn from_json(selector: &Value) -> Result<Self, SelectorError> {
        if selector.is_null() {
            return Ok(Self::nothing());
        }
        let typed: metav1::LabelSelector = serde_json::from_value(selector.clone())
            .map_err(|e| SelectorError::LabelSelectorObject(format!("invalid label selector: {e}")))?;
        Self::from_api(Some(&typed))
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Adds a requirement (`Selector.Add`); requirements stay sorted by key.
    pub fn add(&mut self, requirement: Requirement) {
        if self.nothing {
            return;
        }
        self.requirements.push(requirement);
        self.requirements.sort_by(|a, b| a.key.cmp(&b.key));
    }

    /// Whether the selector restricts nothing (`Selector.Empty()`; false for `nothing`).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Whether this is [`LabelSelector::nothing`] (upstream's `MatchesNothing`).
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// Whether labels, looked up by key, satisfy every requirement.
    pub fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str> + Copy) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(lookup))
    }

    /// Whether a label map satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Whether a JSON labels object (`metadata.labels`; `null` or absent means no labels)
    /// satisfies every requirement. Non-string values are ignored.
    pub fn matches_json(&self, labels: &Value) -> bool {
        self.matches_with(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Upstream's `RequiresExactMatch`: the value the first requirement on `label` pins it to
    /// (`=`, `==`, or `in` with one value).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// Upstream's `String()`: the requirements joined with `,` (empty for everything and
    /// nothing).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The lexer's tokens (upstream's `labels.Token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn literal_token(lit: &[u8]) -> Option<Token> {
    Some(match lit {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Upstream's byte-wise lexer. As upstream's, it reads a NUL byte like the end of the input:
/// a NUL where a token starts ends the selector, one after a token is consumed as a separator.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(b) => {
                self.pos += 1;
                *b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) { self.scan_special() } else { self.scan_identifier() }
    }

    fn scan_identifier(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
        }
        let lit = String::from_utf8_lossy(&buf).into_owned();
        (literal_token(&buf).unwrap_or(Token::Identifier), lit)
    }

    /// The longest operator made of special characters (`!=` rather than `!`).
    fn scan_special(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        let mut last: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
            match literal_token(&buf) {
                Some(t) => last = Some((t, buf.len())),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        match last {
            Some((t, n)) => (t, String::from_utf8_lossy(&buf[..n]).into_owned()),
            None => (Token::Error, format!("error expected: keyword found '{}'", String::from_utf8_lossy(&buf))),
        }
    }
}

/// Whether the parser reads a key and operator or values: in values, `in` and `notin` are
/// plain identifiers (`a in (in,notin)`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// Upstream's recursive-descent parser over the scanned tokens.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

/// The message of upstream's `parseOperator` failure lists the binary operators.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn new(selector: &str) -> Self {
        let mut lexer = Lexer { s: selector.as_bytes(), pos: 0 };
        let mut items = Vec::new();
        loop {
            let (t, lit) = lexer.lex();
            items.push((t, lit));
            if t == Token::EndOfString {
                break;
            }
        }
        Self { items, position: 0 }
    }

    fn item(&self, i: usize, context: Context) -> (Token, String) {
        let (t, lit) = self.items.get(i).cloned().unwrap_or((Token::EndOfString, String::new()));
        match t {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, lit),
            _ => (t, lit),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        self.item(self.position - 1, context)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (t, lit) = self.lookahead(Context::Values);
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, lit) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, lit2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!("found '{lit2}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{lit}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(key, op, Vec::new()).map_err(aggregate);
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        // Upstream collects values in a set and passes its sorted list.
        let mut values: Vec<String> = values;
        values.sort();
        values.dedup();
        Requirement::new(key, operator, values).map_err(aggregate)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut t, mut lit) = self.consume(Context::Values);
        if t == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (t, lit) = self.consume(Context::Values);
        }
        if t != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = label_key_errors(&lit);
        if !errs.is_empty() {
            // Upstream validates with a nil field path, printed as `<nil>`.
            return Err(invalid_field("<nil>", &lit, &errs.join("; ")));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator != Some(Operator::DoesNotExist) {
            operator = Some(Operator::Exists);
        }
        Ok((lit, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (t, lit) = self.consume(Context::KeyAndOperator);
        Ok(match t {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.consume(Context::Values);
        if t != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.lookahead(Context::Values);
        match t {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// A possibly empty list of possibly empty values: `(a,,b)`, `(,a)`, `(a,)`.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (t, lit) = self.consume(Context::Values);
            match t {
                Token::Identifier => {
                    values.push(lit);
                    let (t2, lit2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if t2 == Token::Comma {
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (t, _) = self.lookahead(Context::Values);
        if matches!(t, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (t, lit) = self.consume(Context::Values);
        if t == Token::Identifier { Ok(vec![lit]) } else { Err(format!("found '{lit}', expected: identifier")) }
    }
}

// ---------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------

/// The operator of a field selector term. `=` and `==` mean the same and print as `=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    NotEquals,
}

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    pub field: String,
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

impl FieldTerm {
    /// Whether the term holds; a field the object does not have counts as the empty string.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

/// A field selector: terms that must all hold (`fields.Selector`). The default matches every
/// object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

/// Upstream's `fields.EscapeValue`: `\` → `\\`, `,` → `\,`, `=` → `\=`.
pub fn escape_field_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Upstream's `fields.UnescapeValue`.
pub fn unescape_field_value(value: &str) -> Result<String, SelectorError> {
    if !value.contains(['\\', ',', '=']) {
        return Ok(value.to_owned());
    }
    let mut out = String::with_capacity(value.len());
    let mut in_slash = false;
    for c in value.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::Field(format!("invalid field selector: invalid escape sequence: \\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v: its code point.
            ',' | '=' => {
                return Err(SelectorError::Field(format!("invalid field selector: unescaped character in value: {}", c as u32)));
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::Field("invalid field selector: invalid escape sequence: \\".to_owned()));
    }
    Ok(out)
}

/// Splits at commas not escaped by a backslash; the escapes stay in the terms.
fn split_field_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` at each position); the
/// field part knows no escapes.
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, operator) in [("!=", FieldOperator::NotEquals), ("==", FieldOperator::Equals), ("=", FieldOperator::Equals)] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

impl FieldSelector {
    /// The selector that matches every object (`fields.Everything()`).
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector of one `field=value` term (`fields.OneTermEqualSelector`).
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self { terms: vec![FieldTerm { field: field.into(), operator: FieldOperator::Equals, value: value.into() }] }
    }

    /// Parses the `fieldSelector` syntax as upstream's `fields.ParseSelector`: terms sorted as
    /// strings, empty terms skipped, values unescaped.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut parts = split_field_terms(selector);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, operator, value)) = split_field_term(part) else {
                return Err(SelectorError::Field(format!("invalid selector: '{selector}'; can't understand '{part}'")));
            };
            let value = unescape_field_value(value)?;
            terms.push(FieldTerm { field: field.to_owned(), operator, value });
        }
        Ok(Self { terms })
    }

    /// The terms, in parse order.
    pub fn terms(&self) -> &[FieldTerm] {
        &self.terms
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether an object's fields, looked up by name, satisfy every term.
    pub fn matches(&self, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| t.matches(lookup(&t.field).as_deref()))
    }

    /// Whether a field set (as [`selectable_fields`] computes it) satisfies every term.
    pub fn matches_fields(&self, fields: &BTreeMap<String, String>) -> bool {
        self.terms.iter().all(|t| t.matches(fields.get(&t.field).map(String::as_str)))
    }

    /// Upstream's `RequiresExactMatch`: the value the first `field=value` term pins `field` to.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms.iter().find(|t| t.field == field && t.operator == FieldOperator::Equals).map(|t| t.value.as_str())
    }

    /// Upstream's `Transform`: rewrites every term's field and value, or fails with the first
    /// error.
    pub fn transform<E>(&self, mut f: impl FnMut(&str, &str) -> Result<(String, String), E>) -> Result<Self, E> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let (field, value) = f(&t.field, &t.value)?;
            terms.push(FieldTerm { field, operator: t.operator, value });
        }
        Ok(Self { terms })
    }

    /// The selector as the resource's storage sees it: every key checked against the
    /// resource's field label conversion ([`convert_field_label`]) and renamed where upstream
    /// renames (`spec.host` → `spec.nodeName` for pods, `regarding.kind` →
    /// `involvedObject.kind` for `events.k8s.io`). `version` only shapes error messages.
    pub fn convert_for(&self, group: &str, version: &str, resource: &str) -> Result<Self, SelectorError> {
        self.transform(|field, value| convert_field_label(group, version, resource, field, value))
    }
}

impl fmt::Display for FieldSelector {
    /// Upstream's `String()`: `a=b,c!=d`, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if t.operator == FieldOperator::Equals { "=" } else { "!=" };
            write!(f, "{}{op}{}", t.field, escape_field_value(&t.value))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Per-resource field selectors
// ---------------------------------------------------------------------------------------------

/// Where an object's value for a selectable field comes from, in its JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldSource {
    /// The first non-empty string among these JSON paths, else `""`. Alternatives cover an
    /// object served in two shapes (core and `events.k8s.io` events) and upstream's fallbacks
    /// (an event's `source` falls back to its reporting controller).
    Text(&'static [&'static [&'static str]]),
    /// A boolean, `"true"`/`"false"`, absent meaning `false` (Go's `FormatBool`).
    Flag(&'static [&'static str]),
    /// An integer in decimal, absent meaning `0` (Go's `Itoa`).
    Count(&'static [&'static str]),
    /// A pod's primary IP: `status.podIPs[0].ip`, else `status.podIP`.
    PodIp,
    /// Accepted by the field label conversion but absent from the object's field set, so only
    /// `key=` or `key!=x` can match (pods' `status.podIPs`, upstream's quirk).
    Unset,
}

/// One field selector key a resource accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectableField {
    /// The key clients send.
    pub label: &'static str,
    /// The key in the object's field set (differs for upstream's renames: pods' `spec.host`,
    /// `events.k8s.io`'s `regarding.*`).
    pub key: &'static str,
    pub source: FieldSource,
}

/// How a resource words an unsupported key (each upstream conversion function has its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// `field label not supported: <label>`.
    Plain,
    /// `field label "<label>" not supported for <what>`.
    QuotedFor(&'static str),
    /// `field label not supported for <group>/<version>, Kind=<kind>: <label>`.
    ForKind,
}

/// The field selectors of one resource that upstream registers a field label conversion
/// function for. Resources without one accept only `metadata.name` and `metadata.namespace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceFields {
    pub group: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub fields: &'static [SelectableField],
    pub unsupported: Unsupported,
}

const fn field(label: &'static str, source: FieldSource) -> SelectableField {
    SelectableField { label, key: label, source }
}

const fn renamed(label: &'static str, key: &'static str, source: FieldSource) -> SelectableField {
    SelectableField { label, key, source }
}

const NAME: SelectableField = field("metadata.name", FieldSource::Text(&[&["metadata", "name"]]));
const NAMESPACE: SelectableField = field("metadata.namespace", FieldSource::Text(&[&["metadata", "namespace"]]));

/// The core group (`pkg/apis/core/v1/conversion.go`; values from `pkg/registry/core/*/strategy.go`).
/// Nodes and namespaces accept no `metadata.namespace`.
const CORE_FIELDS: &[ResourceFields] = &[
    ResourceFields {
        group: "",
        resource: "pods",
        kind: "Pod",
        fields: &[
            NAME,
            NAMESPACE,
            field("spec.nodeName", FieldSource::Text(&[&["spec", "nodeName"]])),
            field("spec.restartPolicy", FieldSource::Text(&[&["spec", "restartPolicy"]])),
            field("spec.schedulerName", FieldSource::Text(&[&["spec", "schedulerName"]])),
            field("spec.serviceAccountName", FieldSource::Text(&[&["spec", "serviceAccountName"]])),
            field("spec.hostNetwork", FieldSource::Flag(&["spec", "hostNetwork"])),
            field("status.phase", FieldSource::Text(&[&["status", "phase"]])),
            field("status.podIP", FieldSource::PodIp),
            field("status.podIPs", FieldSource::Unset),
            field("status.nominatedNodeName", FieldSource::Text(&[&["status", "nominatedNodeName"]])),
            // For old v1 clients.
            renamed("spec.host", "spec.nodeName", FieldSource::Text(&[&["spec", "nodeName"]])),
        ],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "nodes",
        kind: "Node",
        fields: &[NAME, field("spec.unschedulable", FieldSource::Flag(&["spec", "unschedulable"]))],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "replicationcontrollers",
        kind: "ReplicationController",
        fields: &[NAME, NAMESPACE, field("status.replicas", FieldSource::Count(&["status", "replicas"]))],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "events",
        kind: "Event",
        fields: &[
            field("involvedObject.kind", EVENT_KIND),
            field("involvedObject.namespace", EVENT_NAMESPACE),
            field("involvedObject.name", EVENT_NAME),
            field("involvedObject.uid", EVENT_UID),
            field("involvedObject.apiVersion", EVENT_API_VERSION),
            field("involvedObject.resourceVersion", EVENT_RESOURCE_VERSION),
            field("involvedObject.fieldPath", EVENT_FIELD_PATH),
            field("reason", FieldSource::Text(&[&["reason"]])),
            field("reportingComponent", EVENT_REPORTING),
            field("source", EVENT_SOURCE),
            field("type", FieldSource::Text(&[&["type"]])),
            NAMESPACE,
            NAME,
        ],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "namespaces",
        kind: "Namespace",
        fields: &[field("status.phase", FieldSource::Text(&[&["status", "phase"]])), NAME],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "secrets",
        kind: "Secret",
        fields: &[field("type", FieldSource::Text(&[&["type"]])), NAMESPACE, NAME],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "",
        resource: "services",
        kind: "Service",
        fields: &[
            NAMESPACE,
            NAME,
            field("spec.clusterIP", FieldSource::Text(&[&["spec", "clusterIP"]])),
            field("spec.type", FieldSource::Text(&[&["spec", "type"]])),
        ],
        unsupported: Unsupported::Plain,
    },
];

// Events are stored once and served as core `v1` (`involvedObject`, `source.component`,
// `reportingComponent`) and `events.k8s.io/v1` (`regarding`, `deprecatedSource.component`,
// `reportingController`); each value reads whichever shape the object has.
const EVENT_KIND: FieldSource = FieldSource::Text(&[&["involvedObject", "kind"], &["regarding", "kind"]]);
const EVENT_NAMESPACE: FieldSource = FieldSource::Text(&[&["involvedObject", "namespace"], &["regarding", "namespace"]]);
const EVENT_NAME: FieldSource = FieldSource::Text(&[&["involvedObject", "name"], &["regarding", "name"]]);
const EVENT_UID: FieldSource = FieldSource::Text(&[&["involvedObject", "uid"], &["regarding", "uid"]]);
const EVENT_API_VERSION: FieldSource = FieldSource::Text(&[&["involvedObject", "apiVersion"], &["regarding", "apiVersion"]]);
const EVENT_RESOURCE_VERSION: FieldSource = FieldSource::Text(&[&["involvedObject", "resourceVersion"], &["regarding", "resourceVersion"]]);
const EVENT_FIELD_PATH: FieldSource = FieldSource::Text(&[&["involvedObject", "fieldPath"], &["regarding", "fieldPath"]]);
const EVENT_REPORTING: FieldSource = FieldSource::Text(&[&["reportingComponent"], &["reportingController"]]);
const EVENT_SOURCE: FieldSource =
    FieldSource::Text(&[&["source", "component"], &["deprecatedSource", "component"], &["reportingComponent"], &["reportingController"]]);

/// `events.k8s.io` (`pkg/apis/events/v1/conversion.go`): its own names, mapped to the core
/// event's field set.
const EVENTS_FIELDS: &[ResourceFields] = &[ResourceFields {
    group: "events.k8s.io",
    resource: "events",
    kind: "Event",
    fields: &[
        field("reason", FieldSource::Text(&[&["reason"]])),
        renamed("regarding.kind", "involvedObject.kind", EVENT_KIND),
        renamed("regarding.namespace", "involvedObject.namespace", EVENT_NAMESPACE),
        renamed("regarding.name", "involvedObject.name", EVENT_NAME),
        renamed("regarding.uid", "involvedObject.uid", EVENT_UID),
        renamed("regarding.apiVersion", "involvedObject.apiVersion", EVENT_API_VERSION),
        renamed("regarding.resourceVersion", "involvedObject.resourceVersion", EVENT_RESOURCE_VERSION),
        renamed("regarding.fieldPath", "involvedObject.fieldPath", EVENT_FIELD_PATH),
        renamed("reportingController", "reportingComponent", EVENT_REPORTING),
        field("source", EVENT_SOURCE),
        field("type", FieldSource::Text(&[&["type"]])),
        NAMESPACE,
        NAME,
    ],
    unsupported: Unsupported::Plain,
}];

/// `batch` (`pkg/apis/batch/v1/conversion.go`): jobs only; `status.successful` is the
/// `status.succeeded` count.
const BATCH_FIELDS: &[ResourceFields] = &[ResourceFields {
    group: "batch",
    resource: "jobs",
    kind: "Job",
    fields: &[NAME, NAMESPACE, field("status.successful", FieldSource::Count(&["status", "succeeded"]))],
    unsupported: Unsupported::QuotedFor("batchv1.Job"),
}];

const SIGNER_NAME: SelectableField = field("spec.signerName", FieldSource::Text(&[&["spec", "signerName"]]));

/// `certificates.k8s.io` (`pkg/apis/certificates/*/conversion.go`).
const CERTIFICATES_FIELDS: &[ResourceFields] = &[
    ResourceFields {
        group: "certificates.k8s.io",
        resource: "certificatesigningrequests",
        kind: "CertificateSigningRequest",
        fields: &[NAME, SIGNER_NAME],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "certificates.k8s.io",
        resource: "clustertrustbundles",
        kind: "ClusterTrustBundle",
        fields: &[NAME, SIGNER_NAME],
        unsupported: Unsupported::Plain,
    },
    ResourceFields {
        group: "certificates.k8s.io",
        resource: "podcertificaterequests",
        kind: "PodCertificateRequest",
        fields: &[
            NAME,
            SIGNER_NAME,
            field("spec.podName", FieldSource::Text(&[&["spec", "podName"]])),
            field("spec.nodeName", FieldSource::Text(&[&["spec", "nodeName"]])),
        ],
        unsupported: Unsupported::Plain,
    },
];

/// `resource.k8s.io` (`pkg/apis/resource/*/conversion.go`).
const RESOURCE_FIELDS: &[ResourceFields] = &[ResourceFields {
    group: "resource.k8s.io",
    resource: "resourceslices",
    kind: "ResourceSlice",
    fields: &[
        NAME,
        field("spec.nodeName", FieldSource::Text(&[&["spec", "nodeName"]])),
        field("spec.driver", FieldSource::Text(&[&["spec", "driver"]])),
    ],
    unsupported: Unsupported::ForKind,
}];

/// Every group's table.
const ALL_FIELDS: &[&[ResourceFields]] = &[CORE_FIELDS, EVENTS_FIELDS, BATCH_FIELDS, CERTIFICATES_FIELDS, RESOURCE_FIELDS];

/// The field selector table of a resource, if upstream registers a field label conversion for
/// it; `None` means only `metadata.name` and `metadata.namespace`.
pub fn resource_fields(group: &str, resource: &str) -> Option<&'static ResourceFields> {
    ALL_FIELDS.iter().flat_map(|t| t.iter()).find(|r| same_name(r.group, group) && r.resource == resource)
}

/// Upstream's field label conversion (`Scheme.ConvertFieldLabel`) for a resource: the key the
/// storage matches on and the value, or the resource's own 400 text for an unsupported key.
/// Resources without a table use `DefaultMetaV1FieldSelectorConversion`.
pub fn convert_field_label(
    group: &str,
    version: &str,
    resource: &str,
    label: &str,
    value: &str,
) -> Result<(String, String), SelectorError> {
    let Some(table) = resource_fields(group, resource) else {
        return match label {
            "metadata.name" | "metadata.namespace" => Ok((label.to_owned(), value.to_owned())),
            _ => Err(SelectorError::UnsupportedField(format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                go_quote(label)
            ))),
        };
    };
    if let Some(f) = table.fields.iter().find(|f| f.label == label) {
        return Ok((f.key.to_owned(), value.to_owned()));
    }
    Err(SelectorError::UnsupportedField(match table.unsupported {
        Unsupported::Plain => format!("field label not supported: {label}"),
        Unsupported::QuotedFor(what) => format!("field label {} not supported for {what}", go_quote(label)),
        Unsupported::ForKind => {
            format!("field label not supported for {}/{version}, Kind={}: {label}", table.group, table.kind)
        }
    }))
}

fn json_at<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, k| v.get(k))
}

fn source_value(object: &Value, source: FieldSource) -> Option<String> {
    Some(match source {
        FieldSource::Text(alternatives) => {
            alternatives.iter().filter_map(|p| json_at(object, p).and_then(Value::as_str)).find(|s| !s.is_empty()).unwrap_or("").to_owned()
        }
        FieldSource::Flag(path) => json_at(object, path).and_then(Value::as_bool).unwrap_or(false).to_string(),
        FieldSource::Count(path) => json_at(object, path).and_then(Value::as_i64).unwrap_or(0).to_string(),
        FieldSource::PodIp => json_at(object, &["status", "podIPs"])
            .and_then(|ips| ips.get(0))
            .and_then(|ip| ip.get("ip"))
            .or_else(|| json_at(object, &["status", "podIP"]))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        FieldSource::Unset => return None,
    })
}

/// An object's field set, as its registry strategy's `GetAttrs` computes it: `metadata.name`,
/// `metadata.namespace` when the object has one, and the resource's own fields under their
/// storage keys. Match it with [`FieldSelector::matches_fields`] after
/// [`FieldSelector::convert_for`].
pub fn selectable_fields(group: &str, resource: &str, object: &Value) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    let meta = |k: &str| json_at(object, &["metadata", k]).and_then(Value::as_str);
    fields.insert("metadata.name".to_owned(), meta("name").unwrap_or("").to_owned());
    if let Some(ns) = meta("namespace").filter(|ns| !ns.is_empty()) {
        fields.insert("metadata.namespace".to_owned(), ns.to_owned());
    }
    if let Some(table) = resource_fields(group, resource) {
        for f in table.fields {
            if f.key.starts_with("metadata.") {
                continue;
            }
            if let Some(v) = source_value(object, f.source) {
                fields.insert(f.key.to_owned(), v);
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A selector, the labels or fields it is matched against, and whether it matches.
    type MatchCase = (&'static str, &'static [(&'static str, &'static str)], bool);
    type SplitTerm = (&'static str, FieldOperator, &'static str);
    /// Group, version, resource, field selector, and the converted selector or the error.
    type ConversionCase = (&'static str, &'static str, &'static str, &'static str, Result<&'static str, &'static str>);

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn lex_all(s: &str) -> Vec<Token> {
        let mut l = Lexer { s: s.as_bytes(), pos: 0 };
        let mut out = Vec::new();
        loop {
            let (t, _) = l.lex();
            if t == Token::EndOfString {
                return out;
            }
            out.push(t);
        }
    }

    // upstream TestLexer
    #[test]
    fn lexer_single_tokens() {
        use Token::*;
        let cases = [
            ("", EndOfString),
            (",", Comma),
            ("notin", NotIn),
            ("in", In),
            ("=", Equals),
            ("==", DoubleEquals),
            (">", GreaterThan),
            ("<", LessThan),
            ("!", DoesNotExist),
            ("!=", NotEquals),
            ("(", OpenPar),
            (")", ClosedPar),
            ("~", Identifier),
            ("||", Identifier),
        ];
        for (s, want) in cases {
            let (t, lit) = Lexer { s: s.as_bytes(), pos: 0 }.lex();
            assert_eq!(t, want, "{s:?}");
            assert_eq!(lit, s, "{s:?}");
        }
    }

    // upstream TestLexerSequence
    #[test]
    fn lexer_sequences() {
        use Token::*;
        let cases: &[(&str, &[Token])] = &[
            ("key in ( value )", &[Identifier, In, OpenPar, Identifier, ClosedPar]),
            ("key notin ( value )", &[Identifier, NotIn, OpenPar, Identifier, ClosedPar]),
            ("key in ( value1, value2 )", &[Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar]),
            ("key", &[Identifier]),
            ("!key", &[DoesNotExist, Identifier]),
            ("()", &[OpenPar, ClosedPar]),
            ("x in (),y", &[Identifier, In, OpenPar, ClosedPar, Comma, Identifier]),
            ("== != (), = notin", &[DoubleEquals, NotEquals, OpenPar, ClosedPar, Comma, Equals, NotIn]),
            ("key>2", &[Identifier, GreaterThan, Identifier]),
            ("key<1", &[Identifier, LessThan, Identifier]),
            ("a===b", &[Identifier, DoubleEquals, Equals, Identifier]),
            ("a<=b", &[Identifier, LessThan, Equals, Identifier]),
        ];
        for (s, want) in cases {
            assert_eq!(lex_all(s), *want, "{s:?}");
        }
    }

    // upstream TestSelectorParse: good strings restring to themselves without spaces.
    #[test]
    fn parse_and_restring() {
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"] {
            let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.to_string(), s.replace(' ', ""), "{s:?}");
        }
        for s in ["x=a||y=b", "x==a==b", "!x=a", "x<a"] {
            assert!(LabelSelector::parse(s).is_err(), "{s:?} should fail");
        }
        assert_eq!(LabelSelector::parse("x=a,a=x").unwrap().to_string(), LabelSelector::parse("a=x,x=a").unwrap().to_string());
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement::new(key, op, values.iter().map(|v| (*v).to_owned()).collect()).unwrap()
    }

    // upstream TestSetSelectorParser
    #[test]
    fn parse_structure() {
        use Operator::*;
        let cases: Vec<(&str, Option<Vec<Requirement>>)> = vec![
            ("", Some(vec![])),
            ("\rx", Some(vec![req("x", Exists, &[])])),
            ("this-is-a-dns.domain.com/key-with-dash", Some(vec![req("this-is-a-dns.domain.com/key-with-dash", Exists, &[])])),
            (
                "this-is-another-dns.domain.com/key-with-dash in (so,what)",
                Some(vec![req("this-is-another-dns.domain.com/key-with-dash", In, &["so", "what"])]),
            ),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                Some(vec![req("0.1.2.domain/99", NotIn, &["10.10.100.1", "tick.tack.clock"])]),
            ),
            ("foo  in\t (abc)", Some(vec![req("foo", In, &["abc"])])),
            ("x notin\n (abc)", Some(vec![req("x", NotIn, &["abc"])])),
            ("x  notin\t\t\t(abc,def)", Some(vec![req("x", NotIn, &["abc", "def"])])),
            ("x in (abc,def)", Some(vec![req("x", In, &["abc", "def"])])),
            ("x in (abc,)", Some(vec![req("x", In, &["", "abc"])])),
            ("x in ()", Some(vec![req("x", In, &[""])])),
            (
                "x notin (abc,,def),bar,z in (),w",
                Some(vec![req("bar", Exists, &[]), req("w", Exists, &[]), req("x", NotIn, &["", "abc", "def"]), req("z", In, &[""])]),
            ),
            ("x,y in (a)", Some(vec![req("x", Exists, &[]), req("y", In, &["a"])])),
            ("x=a", Some(vec![req("x", Equals, &["a"])])),
            ("x>1", Some(vec![req("x", GreaterThan, &["1"])])),
            ("x<7", Some(vec![req("x", LessThan, &["7"])])),
            ("x=a,y!=b", Some(vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"])])),
            ("x=a,y!=b,z in (h,i,j)", Some(vec![req("x", Equals, &["a"]), req("y", NotEquals, &["b"]), req("z", In, &["h", "i", "j"])])),
            ("x=a||y=b", None),
            ("x,y", Some(vec![req("x", Exists, &[]), req("y", Exists, &[])])),
            ("x,,y", None),
            (",x,y", None),
            ("x nott in (y)", None),
            ("x notin ( )", Some(vec![req("x", NotIn, &[""])])),
            ("x notin (, a)", Some(vec![req("x", NotIn, &["", "a"])])),
            ("a in (xyz),", None),
            ("a in (xyz)b notin ()", None),
            ("a ", Some(vec![req("a", Exists, &[])])),
            ("a in (x,y,notin, z,in)", Some(vec![req("a", In, &["in", "notin", "x", "y", "z"])])),
            ("a in (xyz abc)", None),
            ("a notin(", None),
            ("a (", None),
            ("(", None),
            ("x==a", Some(vec![req("x", DoubleEquals, &["a"])])),
            ("in in (in)", Some(vec![req("in", In, &["in"])])),
        ];
        for (s, want) in cases {
            match (LabelSelector::parse(s), want) {
                (Ok(sel), Some(want)) => assert_eq!(sel.requirements(), want.as_slice(), "{s:?}"),
                (Err(_), None) => {}
                (got, want) => panic!("{s:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    // Error texts, derived from upstream's parser and validation messages.
    #[test]
    fn parse_error_messages() {
        let key_regex = "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'";
        let value_regex = "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'";
        let cases: Vec<(String, String)> = vec![
            (
                "x=a||y=b".to_owned(),
                format!(
                    "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is {value_regex})"
                ),
            ),
            ("x,,y".to_owned(), "found ',', expected: identifier after ','".to_owned()),
            ("x==a==b".to_owned(), "found '==', expected: ',' or 'end of string'".to_owned()),
            ("!x=a".to_owned(), "found '=', expected: ',' or 'end of string'".to_owned()),
            (",x".to_owned(), "found ',', expected: !, identifier, or 'end of string'".to_owned()),
            ("x,".to_owned(), "found '', expected: identifier after ','".to_owned()),
            ("a in (xyz),".to_owned(), "found '', expected: identifier after ','".to_owned()),
            ("x nott in (y)".to_owned(), "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt".to_owned()),
            ("x in y".to_owned(), "unable to parse requirement: found 'y' expected: '('".to_owned()),
            ("a notin(".to_owned(), "unable to parse requirement: found '', expected: ',', ')' or identifier".to_owned()),
            ("a in (xyz abc)".to_owned(), "unable to parse requirement: found 'abc', expected: ',' or ')'".to_owned()),
            ("a in (=)".to_owned(), "unable to parse requirement: found '=', expected: ',', ')' or identifier".to_owned()),
            ("a in (x,=)".to_owned(), "unable to parse requirement: found '=', expected: ',', or identifier".to_owned()),
            ("a=(".to_owned(), "unable to parse requirement: found '(', expected: identifier".to_owned()),
            ("!".to_owned(), "unable to parse requirement: found '', expected: identifier".to_owned()),
            ("(".to_owned(), "found '(', expected: !, identifier, or 'end of string'".to_owned()),
            (
                "x<a".to_owned(),
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
                    .to_owned(),
            ),
            (
                "x>-1".to_owned(),
                format!(
                    "unable to parse requirement: values[0][x]: Invalid value: \"-1\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is {value_regex})"
                ),
            ),
            (
                "a/b/c".to_owned(),
                format!(
                    "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is {key_regex}) with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            ),
            (
                "/a".to_owned(),
                "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".to_owned(),
            ),
            (
                "Example.com/a=b".to_owned(),
                "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned(),
            ),
            (
                "a/".to_owned(),
                format!(
                    "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is {key_regex})"
                ),
            ),
            (
                format!("{}=b", "a".repeat(64)),
                format!("unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 bytes", "a".repeat(64)),
            ),
            (
                format!("a={}", "b".repeat(64)),
                format!("unable to parse requirement: values[0][a]: Invalid value: \"{}\": must be no more than 63 bytes", "b".repeat(64)),
            ),
            (
                "a in (-x,y_)".to_owned(),
                format!(
                    "unable to parse requirement: [values[0][a]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is {value_regex}), values[1][a]: Invalid value: \"y_\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is {value_regex})]"
                ),
            ),
        ];
        for (s, want) in cases {
            let s: &str = &s;
            match LabelSelector::parse(s) {
                Err(SelectorError::Label(got)) => assert_eq!(got, want, "{s:?}"),
                other => panic!("{s:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn nul_bytes_read_as_end_of_input() {
        // A NUL where a token starts ends the selector; after a token it separates.
        assert_eq!(LabelSelector::parse("a=b, \0junk(").unwrap_err().to_string(), "found '', expected: identifier after ','");
        assert_eq!(
            LabelSelector::parse("a=b,\0junk(").unwrap_err().to_string(),
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(LabelSelector::parse("a=b\0").unwrap().to_string(), "a=b");
    }

    // upstream TestSelectorMatches and TestRequirementSelectorMatching
    #[test]
    fn label_matching() {
        let cases: &[MatchCase] = &[
            ("", &[("x", "y")], true),
            ("x=y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true),
            ("x", &[("x", "z")], true),
            ("!x", &[("y", "z")], true),
            ("x>1", &[("x", "2")], true),
            ("x<1", &[("x", "0")], true),
            ("x=z", &[], false),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("x", &[("y", "z")], false),
            ("!x", &[("x", "z")], false),
            ("x>1", &[("x", "0")], false),
            ("x<1", &[("x", "2")], false),
            ("foo=bar", &[("foo", "bar"), ("baz", "blah")], true),
            ("baz=blah", &[("foo", "bar"), ("baz", "blah")], true),
            ("foo=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")], true),
            ("foo=blah", &[("foo", "bar"), ("baz", "blah")], false),
            ("baz=bar", &[("foo", "bar"), ("baz", "blah")], false),
            ("foo=bar,foobar=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")], false),
            ("x in (foo),y notin (alpha)", &[("x", "foo"), ("y", "baz")], true),
            ("x in (foo),y in (alpha)", &[("x", "foo"), ("y", "baz")], false),
            ("x notin (),y", &[("y", "")], true),
            ("!x,y", &[("y", "")], true),
            ("x notin (),!y", &[("y", "")], false),
            ("x in ()", &[("y", "baz")], false),
            ("z>1", &[("z", "2")], true),
            ("z>1", &[("z", "v2")], false),
            ("x=", &[("x", "")], true),
            ("x=", &[], false),
            ("x!=", &[], true),
        ];
        for (s, labels, want) in cases {
            let sel = LabelSelector::parse(s).unwrap();
            assert_eq!(sel.matches(&set(labels)), *want, "{s:?} on {labels:?}");
            let json: Value = labels.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect::<serde_json::Map<_, _>>().into();
            assert_eq!(sel.matches_json(&json), *want, "{s:?} on JSON {labels:?}");
        }
        assert!(LabelSelector::everything().matches(&set(&[("x", "y")])));
        assert!(LabelSelector::everything().is_empty());
        assert!(!LabelSelector::nothing().matches(&set(&[])));
        assert!(!LabelSelector::nothing().is_empty());
        assert!(LabelSelector::parse("a").unwrap().matches_json(&json!({"a": "b"})));
        assert!(!LabelSelector::parse("a").unwrap().matches_json(&Value::Null));
    }

    // upstream TestToString
    #[test]
    fn requirement_strings() {
        use Operator::*;
        let cases: &[(&[Requirement], &str)] = &[
            (&[req("x", In, &["abc", "def"]), req("y", NotIn, &["jkl"]), req("z", Exists, &[])], "x in (abc,def),y notin (jkl),z"),
            (
                &[req("x", NotIn, &["abc", "def"]), req("y", NotEquals, &["jkl"]), req("z", DoesNotExist, &[])],
                "x notin (abc,def),y!=jkl,!z",
            ),
            (
                &[req("x", NotIn, &["abc"]), req("y", In, &["jkl", "mno"]), req("z", NotIn, &[""])],
                "x notin (abc),y in (jkl,mno),z notin ()",
            ),
            (
                &[req("x", Equals, &["abc"]), req("y", DoubleEquals, &["jkl"]), req("z", NotEquals, &["a"]), req("z", Exists, &[])],
                "x=abc,y==jkl,z!=a,z",
            ),
            (&[req("x", GreaterThan, &["2"]), req("y", LessThan, &["8"]), req("z", Exists, &[])], "x>2,y<8,z"),
            (&[req("x", In, &["def", "abc"])], "x in (abc,def)"),
        ];
        for (reqs, want) in cases {
            let sel = LabelSelector { requirements: reqs.to_vec(), nothing: false };
            assert_eq!(sel.to_string(), *want);
        }
    }

    // upstream TestRequirementConstructor
    #[test]
    fn requirement_constructor() {
        use Operator::*;
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let long = "a".repeat(254);
        let cases = [
            ("x", In, s(&[]), false),
            ("x", NotIn, s(&[]), false),
            ("x", In, s(&["foo"]), true),
            ("x", NotIn, s(&["foo"]), true),
            ("x", Exists, s(&[]), true),
            ("x", DoesNotExist, s(&[]), true),
            ("1foo", In, s(&["bar"]), true),
            ("1234", In, s(&["bar"]), true),
            ("y", GreaterThan, s(&["1"]), true),
            ("z", LessThan, s(&["6"]), true),
            ("foo", GreaterThan, s(&["bar"]), false),
            ("barz", LessThan, s(&["blah"]), false),
            (long.as_str(), Exists, s(&[]), false),
            ("x", Equals, s(&["a", "b"]), false),
            ("x", Exists, s(&["a"]), false),
        ];
        for (key, op, values, ok) in cases {
            assert_eq!(Requirement::new(key, op, values.clone()).is_ok(), ok, "{key} {op:?} {values:?}");
        }
    }

    #[test]
    fn requires_exact_match() {
        let sel = LabelSelector::parse("a=b,c in (d),e in (f,g),h!=i").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("b"));
        assert_eq!(sel.requires_exact_match("c"), Some("d"));
        assert_eq!(sel.requires_exact_match("e"), None);
        assert_eq!(sel.requires_exact_match("h"), None);
        assert_eq!(sel.requires_exact_match("z"), None);
    }

    #[test]
    fn metav1_label_selectors() {
        let ok = |v: Value| LabelSelector::from_json(&v).unwrap();
        assert!(ok(Value::Null).matches_nothing());
        assert!(ok(json!({})).is_empty());
        let sel = ok(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "x", "operator": "Exists"},
                {"key": "y", "operator": "DoesNotExist"}
            ]
        }));
        assert_eq!(sel.to_string(), "app=web,env notin (prod),tier in (a,b),x,!y");
        assert!(sel.matches(&set(&[("app", "web"), ("tier", "a"), ("x", "")])));
        assert!(!sel.matches(&set(&[("app", "web"), ("tier", "a"), ("x", ""), ("y", "")])));
        assert!(!sel.matches(&set(&[("app", "web"), ("tier", "a"), ("x", ""), ("env", "prod")])));

        let err = |v: Value| LabelSelector::from_json(&v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})),
            "\"Gt\" is not a valid pod selector operator"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]})),
            "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            err(json!({"matchLabels": {"a/b/c": "x"}})),
            "key: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert!(err(json!({"matchLabels": {"a": "-"}})).starts_with("values[0][a]: Invalid value: \"-\": a valid label must"));
    }

    #[test]
    fn validation_helpers() {
        assert!(label_key_errors("example.com/My_Name-1.x").is_empty());
        assert!(label_key_errors("a").is_empty());
        assert_eq!(label_key_errors("").len(), 2);
        assert!(label_value_errors("").is_empty());
        assert!(label_value_errors("A.b-c_d").is_empty());
        assert_eq!(label_value_errors(&"a".repeat(64)), vec!["must be no more than 63 bytes".to_owned()]);
        assert!(dns1123_subdomain_errors("a.b-c.d").is_empty());
        assert_eq!(dns1123_subdomain_errors("a..b").len(), 1);
        assert_eq!(dns1123_subdomain_errors("-a").len(), 1);
        assert_eq!(dns1123_subdomain_errors(&"a".repeat(254)).len(), 1);
    }

    // upstream fields TestSplitTerms
    #[test]
    fn field_split_terms() {
        let cases: &[(&str, &[&str])] = &[
            ("a", &["a"]),
            ("a=avalue", &["a=avalue"]),
            ("a=avalue,b=bvalue", &["a=avalue", "b=bvalue"]),
            ("a=avalue,b==bvalue,c!=cvalue", &["a=avalue", "b==bvalue", "c!=cvalue"]),
            ("", &[]),
            ("a=a,", &["a=a", ""]),
            (",a=a", &["", "a=a"]),
            (r"k=\,,k2=v2", &[r"k=\,", "k2=v2"]),
            (r"k=\\,k2=v2", &[r"k=\\", "k2=v2"]),
            (r"k=\\\,,k2=v2", &[r"k=\\\,", "k2=v2"]),
            (r"k=\a\b\", &[r"k=\a\b\"]),
            (r"k=\", &[r"k=\"]),
            ("함=수,목=록", &["함=수", "목=록"]),
        ];
        for (s, want) in cases {
            assert_eq!(split_field_terms(s), *want, "{s:?}");
        }
    }

    // upstream fields TestSplitTerm
    #[test]
    fn field_split_term() {
        use FieldOperator::*;
        let cases: &[(&str, Option<SplitTerm>)] = &[
            ("a=value", Some(("a", Equals, "value"))),
            ("b==value", Some(("b", Equals, "value"))),
            ("c!=value", Some(("c", NotEquals, "value"))),
            ("", None),
            ("a", None),
            (r"k=\,", Some(("k", Equals, r"\,"))),
            (r"k=\=", Some(("k", Equals, r"\="))),
            (r"k=\\\a\b\=\,\", Some(("k", Equals, r"\\\a\b\=\,\"))),
            ("함=수", Some(("함", Equals, "수"))),
        ];
        for (s, want) in cases {
            assert_eq!(split_field_term(s), *want, "{s:?}");
        }
    }

    // upstream fields TestEscapeValue
    #[test]
    fn field_escaping() {
        for (raw, escaped) in [("", ""), ("a", "a"), ("=", r"\="), (",", r"\,"), (r"\", r"\\"), (r"\=\,\", r"\\\=\\\,\\")] {
            assert_eq!(escape_field_value(raw), escaped);
            assert_eq!(unescape_field_value(escaped).unwrap(), raw);
        }
        for (bad, want) in [
            (r"\", r"invalid field selector: invalid escape sequence: \"),
            (r"\\\", r"invalid field selector: invalid escape sequence: \"),
            (r"\a", r"invalid field selector: invalid escape sequence: \a"),
            ("a=b", "invalid field selector: unescaped character in value: 61"),
            ("a,b", "invalid field selector: unescaped character in value: 44"),
        ] {
            assert_eq!(unescape_field_value(bad).unwrap_err().to_string(), want, "{bad:?}");
        }
    }

    // upstream fields TestSelectorParse
    #[test]
    fn field_parse_and_restring() {
        for s in ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"] {
            assert_eq!(FieldSelector::parse(s).unwrap().to_string(), s, "{s:?}");
        }
        for s in ["x=a||y=b", "x==a==b", "x=a,b", "x in (a)", "x in (a,b,c)", "x"] {
            assert!(FieldSelector::parse(s).is_err(), "{s:?}");
        }
        assert_eq!(FieldSelector::parse("x=a,a=x").unwrap().to_string(), "a=x,x=a");
        assert_eq!(FieldSelector::parse("b==c").unwrap().to_string(), "b=c");
        assert_eq!(FieldSelector::parse("x=a,b").unwrap_err().to_string(), "invalid selector: 'x=a,b'; can't understand 'b'");
        assert_eq!(FieldSelector::parse("x==a==b").unwrap_err().to_string(), "invalid field selector: unescaped character in value: 61");
    }

    // upstream fields TestSelectorMatches
    #[test]
    fn field_matching() {
        let cases: &[MatchCase] = &[
            ("", &[("x", "y")], true),
            ("x=y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("foo=bar,baz=blah,complex=\\=value\\\\\\,\\\\", &[("foo", "bar"), ("baz", "blah"), ("complex", r"=value\,\")], true),
            ("foo=bar,foobar=bar,baz=blah", &[("foo", "bar"), ("baz", "blah")], false),
            ("missing=", &[], true),
            ("missing!=x", &[], true),
            ("missing=x", &[], false),
        ];
        for (s, fields, want) in cases {
            let sel = FieldSelector::parse(s).unwrap();
            let map = set(fields);
            assert_eq!(sel.matches_fields(&map), *want, "{s:?}");
            assert_eq!(sel.matches(&|k: &str| map.get(k).cloned()), *want, "{s:?}");
        }
    }

    // upstream fields TestRequiresExactMatch
    #[test]
    fn field_requires_exact_match() {
        let sel = FieldSelector::parse("a=b,test!=c").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("b"));
        assert_eq!(sel.requires_exact_match("test"), None);
        assert_eq!(FieldSelector::everything().requires_exact_match("a"), None);
        assert_eq!(FieldSelector::one_term_equal("test", "").requires_exact_match("test"), Some(""));
    }

    #[test]
    fn field_label_conversion() {
        let conv = |g: &str, v: &str, r: &str, s: &str| {
            FieldSelector::parse(s).unwrap().convert_for(g, v, r).map(|s| s.to_string()).map_err(|e| e.to_string())
        };
        let cases: &[ConversionCase] = &[
            ("", "v1", "pods", "spec.nodeName=n1,status.phase!=Running", Ok("spec.nodeName=n1,status.phase!=Running")),
            ("", "v1", "pods", "spec.host=n1", Ok("spec.nodeName=n1")),
            ("", "v1", "pods", "spec.foo=x", Err("field label not supported: spec.foo")),
            ("", "v1", "nodes", "spec.unschedulable=false,metadata.name=a", Ok("metadata.name=a,spec.unschedulable=false")),
            ("", "v1", "nodes", "metadata.namespace=a", Err("field label not supported: metadata.namespace")),
            ("", "v1", "namespaces", "status.phase=Active", Ok("status.phase=Active")),
            ("", "v1", "secrets", "type=Opaque", Ok("type=Opaque")),
            ("", "v1", "services", "spec.type=ClusterIP", Ok("spec.type=ClusterIP")),
            ("", "v1", "replicationcontrollers", "status.replicas=1", Ok("status.replicas=1")),
            ("", "v1", "events", "involvedObject.name=a,reportingComponent=b", Ok("involvedObject.name=a,reportingComponent=b")),
            ("", "v1", "events", "regarding.name=a", Err("field label not supported: regarding.name")),
            ("events.k8s.io", "v1", "events", "regarding.name=a,reportingController=b", Ok("involvedObject.name=a,reportingComponent=b")),
            ("events.k8s.io", "v1", "events", "involvedObject.name=a", Err("field label not supported: involvedObject.name")),
            ("", "v1", "configmaps", "metadata.namespace=a", Ok("metadata.namespace=a")),
            (
                "",
                "v1",
                "configmaps",
                "data.x=a",
                Err("\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
            ),
            (
                "apps",
                "v1",
                "replicasets",
                "status.replicas=1",
                Err("\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
            ),
            ("batch", "v1", "jobs", "status.successful=1", Ok("status.successful=1")),
            ("batch", "v1", "jobs", "status.succeeded=1", Err("field label \"status.succeeded\" not supported for batchv1.Job")),
            ("certificates.k8s.io", "v1", "certificatesigningrequests", "spec.signerName=a/b", Ok("spec.signerName=a/b")),
            (
                "certificates.k8s.io",
                "v1",
                "certificatesigningrequests",
                "metadata.namespace=a",
                Err("field label not supported: metadata.namespace"),
            ),
            ("resource.k8s.io", "v1", "resourceslices", "spec.driver=d", Ok("spec.driver=d")),
            (
                "resource.k8s.io",
                "v1beta2",
                "resourceslices",
                "spec.pool=p",
                Err("field label not supported for resource.k8s.io/v1beta2, Kind=ResourceSlice: spec.pool"),
            ),
        ];
        for (g, v, r, s, want) in cases {
            assert_eq!(conv(g, v, r, s), want.map(str::to_owned).map_err(str::to_owned), "{g}/{r} {s:?}");
        }
        let e: ApiError = FieldSelector::parse("a=b").unwrap().convert_for("", "v1", "pods").unwrap_err().into();
        assert_eq!(e.code, 400);
        assert_eq!(e.message, "field label not supported: a");
    }

    #[test]
    fn selectable_fields_of_objects() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler", "serviceAccountName": "sa"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}
        });
        assert_eq!(
            selectable_fields("", "pods", &pod),
            set(&[
                ("metadata.name", "p"),
                ("metadata.namespace", "ns"),
                ("spec.hostNetwork", "false"),
                ("spec.nodeName", "n1"),
                ("spec.restartPolicy", "Always"),
                ("spec.schedulerName", "default-scheduler"),
                ("spec.serviceAccountName", "sa"),
                ("status.nominatedNodeName", ""),
                ("status.phase", "Running"),
                ("status.podIP", "10.0.0.1"),
            ])
        );
        let sel = FieldSelector::parse("spec.host=n1,status.podIPs=").unwrap().convert_for("", "v1", "pods").unwrap();
        assert!(sel.matches_fields(&selectable_fields("", "pods", &pod)));

        let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert_eq!(selectable_fields("", "nodes", &node), set(&[("metadata.name", "n"), ("spec.unschedulable", "true")]));

        let job = json!({"metadata": {"name": "j", "namespace": "ns"}, "status": {"succeeded": 2}});
        assert_eq!(selectable_fields("batch", "jobs", &job)["status.successful"], "2");
        let job = json!({"metadata": {"name": "j", "namespace": "ns"}});
        assert_eq!(selectable_fields("batch", "jobs", &job)["status.successful"], "0");

        let core_event = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Started", "type": "Normal", "reportingComponent": "kubelet", "source": {}
        });
        let fields = selectable_fields("", "events", &core_event);
        assert_eq!(fields["involvedObject.kind"], "Pod");
        assert_eq!(fields["source"], "kubelet");
        assert_eq!(fields["reportingComponent"], "kubelet");
        let new_event = json!({
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e", "namespace": "ns"},
            "regarding": {"kind": "Pod", "name": "p"},
            "reportingController": "ctrl", "deprecatedSource": {"component": "old"}
        });
        let fields = selectable_fields("events.k8s.io", "events", &new_event);
        assert_eq!(fields["involvedObject.name"], "p");
        assert_eq!(fields["reportingComponent"], "ctrl");
        assert_eq!(fields["source"], "old");
        let sel = FieldSelector::parse("regarding.kind=Pod").unwrap().convert_for("events.k8s.io", "v1", "events").unwrap();
        assert!(sel.matches_fields(&fields));

        let cm = json!({"metadata": {"name": "c", "namespace": "ns"}, "data": {"x": "y"}});
        assert_eq!(selectable_fields("", "configmaps", &cm), set(&[("metadata.name", "c"), ("metadata.namespace", "ns")]));
    }
}
