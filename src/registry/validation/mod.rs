//! Object validation as upstream's `pkg/apis/<group>/validation` and
//! `apimachinery/pkg/api/validation`: metadata (names by the resource's rule, labels,
//! annotations), the generic required-field check driven by the generated field facts
//! ([`schema`]), and per-group rules in one module per API group. Errors are field errors with
//! upstream's paths and wording; the REST layer answers them with a 422 `Invalid`.
//!
//! Entry points: [`validate_create`] and [`validate_update`] (which adds immutability), given
//! the resource's strategy, whose `validate`/`validate_update` call the group modules' rules.

pub(crate) mod apps;
pub(crate) mod autoscaling;
pub(crate) mod batch;
pub(crate) mod certificates;
pub(crate) mod core;
pub(crate) mod networking;
pub(crate) mod policy;
pub(crate) mod rbac;
pub(crate) mod scheduling;
mod schema;
pub(crate) mod storage;

use kapi_api::apimachinery::pkg::apis::meta::v1 as metav1;
use serde_json::Value;

use super::object::Object;
use super::strategy::Strategy;
use crate::selectors::{dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, label_key_errors, label_value_errors};
use crate::status::{ApiError, BadValue, FieldError};

/// How a resource's object names are validated (upstream's per-resource `ValidateName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `IsDNS1123Subdomain`: most resources.
    Subdomain,
    /// `IsDNS1123Label`: namespaces.
    Label,
    /// `IsDNS1035Label`: services.
    Dns1035Label,
    /// `ValidatePathSegmentName`: anything but `.`, `..`, and `/` or `%` inside (RBAC, for one).
    PathSegment,
}

fn name_errors(rule: NameRule, name: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => dns1123_subdomain_errors(name),
        NameRule::Label => dns1123_label_errors(name),
        NameRule::Dns1035Label => dns1035_label_errors(name),
        NameRule::PathSegment => path_segment_errors(name),
    }
}

/// `IsValidPathSegmentName`.
pub(super) fn path_segment_errors(name: &str) -> Vec<String> {
    crate::request_info::path_segment_name_errors(name)
}

/// The most bytes all annotations of an object may take (keys and values).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Validates an object's metadata for create (name given or generated).
pub fn validate_object_meta(strategy: &dyn Strategy, object: &Value) -> Vec<FieldError> {
    let meta = &object["metadata"];
    fn strings(map: &Value) -> impl Iterator<Item = (&str, &str)> {
        map.as_object().into_iter().flatten().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
    }
    meta_errors(strategy.name_rule(), meta["name"].as_str(), strings(&meta["labels"]), strings(&meta["annotations"]))
}

/// [`validate_object_meta`] of an object in the form at hand: its generated `ObjectMeta` when
/// typed, else its JSON.
pub fn object_meta_errors(strategy: &dyn Strategy, object: &Object) -> Result<Vec<FieldError>, ApiError> {
    let Some(meta) = object.typed_meta() else { return Ok(validate_object_meta(strategy, object.value()?)) };
    fn strings(map: &std::collections::BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
        map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    Ok(meta_errors(strategy.name_rule(), meta.name.as_deref(), strings(&meta.labels), strings(&meta.annotations)))
}

/// The metadata rules: the name by the resource's rule, label keys and values, annotation keys
/// and their total size.
fn meta_errors<'a>(
    rule: NameRule,
    name: Option<&str>,
    labels: impl Iterator<Item = (&'a str, &'a str)>,
    annotations: impl Iterator<Item = (&'a str, &'a str)>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(name) = name {
        for e in name_errors(rule, name) {
            errs.push(FieldError::invalid("metadata.name", name, e));
        }
    }
    label_pairs(labels, "metadata.labels", &mut errs);
    let mut total = 0;
    for (key, value) in annotations {
        for e in label_key_errors(&key.to_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", key, e));
        }
        total += key.len() + value.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
    errs
}

/// The generic required-field errors of an external object (the request's version, before it
/// is converted to its internal object): see [`schema`]. The REST code finds them at decoding
/// and hands them to [`validate_create`] or [`validate_update`], which report them with the
/// rules' errors in one answer.
pub fn required_errors(group: &str, resource: &str, external: &Value) -> Vec<FieldError> {
    schema::required_errors(group, resource, external)
}

/// Everything upstream checks when an object of the resource is created: the rules, on the
/// internal object, and the `required` errors of its external form ([`required_errors`]).
pub fn validate_create(strategy: &dyn Strategy, object: &Object, required: Vec<FieldError>) -> Result<Vec<FieldError>, ApiError> {
    let mut errs = object_meta_errors(strategy, object)?;
    errs.extend(strategy.validate_object(object)?);
    Ok(merge_schema_errors(errs, required))
}

/// Everything upstream checks when `old` is replaced by `new` (update, patch, apply; both
/// internal objects): the create checks on `new` plus what may not change.
pub fn validate_update(
    strategy: &dyn Strategy,
    old: &Object,
    new: &Object,
    required: Vec<FieldError>,
) -> Result<Vec<FieldError>, ApiError> {
    let mut errs = object_meta_errors(strategy, new)?;
    errs.extend(strategy.validate_update_object(old, new)?);
    Ok(merge_schema_errors(errs, required))
}

/// Appends the generic required-field errors a hand-written rule did not already report.
fn merge_schema_errors(mut errs: Vec<FieldError>, generic: Vec<FieldError>) -> Vec<FieldError> {
    for e in generic {
        if !errs.iter().any(|have| have.field == e.field && have.error_type == e.error_type) {
            errs.push(e);
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Helpers the group modules share: paths, values, and upstream's small validators.

/// A field's path as upstream's `field.Path` prints it (`spec.containers[0].name`): each part
/// links to its parent on the stack, and the path is written out only when an error names it.
/// The typed rules walk every field of an object, and most objects have no errors.
#[derive(Debug, Clone, Copy)]
pub(super) enum FieldPath<'a> {
    /// A path written out already (`""` for the object itself).
    Root(&'a str),
    /// `parent.name`.
    Child(&'a FieldPath<'a>, &'a str),
    /// `parent[i]`.
    Index(&'a FieldPath<'a>, usize),
    /// `parent[key]`.
    Key(&'a FieldPath<'a>, &'a str),
}

impl<'a> FieldPath<'a> {
    pub(super) fn child(&'a self, name: &'a str) -> FieldPath<'a> {
        FieldPath::Child(self, name)
    }

    pub(super) fn index(&'a self, i: usize) -> FieldPath<'a> {
        FieldPath::Index(self, i)
    }

    pub(super) fn key(&'a self, key: &'a str) -> FieldPath<'a> {
        FieldPath::Key(self, key)
    }
}

impl std::fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldPath::Root(path) => f.write_str(path),
            FieldPath::Child(FieldPath::Root(""), name) => f.write_str(name),
            FieldPath::Child(parent, name) => write!(f, "{parent}.{name}"),
            FieldPath::Index(parent, i) => write!(f, "{parent}[{i}]"),
            FieldPath::Key(parent, key) => write!(f, "{parent}[{key}]"),
        }
    }
}

impl From<FieldPath<'_>> for String {
    fn from(path: FieldPath<'_>) -> String {
        path.to_string()
    }
}

impl From<&FieldPath<'_>> for String {
    fn from(path: &FieldPath<'_>) -> String {
        path.to_string()
    }
}

/// `field.Path.Child`: `a.b`.
pub(super) fn child(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

/// `field.Path.Index`: `a[0]`.
pub(super) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `field.Path.Key`: `a[key]`.
pub(super) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// The string at `v`, `""` when absent or not a string.
pub(super) fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The items of the list at `v` (none when absent).
pub(super) fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// A non-scalar bad value as upstream (v1.34 on) prints it: JSON, with Go's HTML escaping.
pub(super) fn json_value(v: &(impl serde::Serialize + ?Sized)) -> BadValue {
    BadValue::Raw(go_json(&serde_json::to_string(v).unwrap_or_default()))
}

fn go_json(s: &str) -> String {
    s.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

/// An optional field's value as a bad value (`null` when absent).
pub(super) fn optional_value(v: Option<impl Into<BadValue>>) -> BadValue {
    v.map_or(BadValue::Null, Into::into)
}

/// Upstream's message for a changed immutable field (`apimachinery`'s `FieldImmutableErrorMsg`).
pub(super) const FIELD_IMMUTABLE: &str = "field is immutable";

/// `ValidateNonnegativeField` of a typed (optional) number.
pub(super) fn non_negative_int(v: Option<i64>, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    if let Some(n) = v.filter(|n| *n < 0) {
        errs.push(FieldError::invalid(path.to_string(), n, IS_NEGATIVE));
    }
}

/// `isNegativeErrorMsg`.
pub(super) const IS_NEGATIVE: &str = "must be greater than or equal to 0";

/// An enumerated string field: `Unsupported value` unless one of `valid` (absent or empty
/// values pass: defaulting fills them upstream).
pub(super) fn one_of_str(v: Option<&str>, path: &(impl std::fmt::Display + ?Sized), valid: &[&str], errs: &mut Vec<FieldError>) {
    if let Some(s) = v.filter(|s| !s.is_empty())
        && !valid.contains(&s)
    {
        errs.push(FieldError::not_supported(path.to_string(), s, valid));
    }
}

/// `IsValidPortNum`.
pub(super) fn port_num_errors(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) { Vec::new() } else { vec!["must be between 1 and 65535, inclusive".to_owned()] }
}

/// `IsValidPortName` (an IANA service name).
pub(super) fn port_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_owned());
    }
    if !name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned());
    }
    if !name.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// `IsDNS1123Label` as field errors on `path` (the value `""` is `Required value`).
pub(super) fn dns_label(value: &str, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    if value.is_empty() {
        errs.push(FieldError::required(path.to_string(), ""));
        return;
    }
    for m in dns1123_label_errors(value) {
        errs.push(FieldError::invalid(path.to_string(), value, m));
    }
}

/// `IsDNS1123Subdomain` as field errors on `path`.
pub(super) fn dns_subdomain(value: &str, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    for m in dns1123_subdomain_errors(value) {
        errs.push(FieldError::invalid(path.to_string(), value, m));
    }
}

/// `ValidateLabels`: keys and values of a label map at `path`.
pub(super) fn label_map(
    map: &std::collections::BTreeMap<String, String>,
    path: &(impl std::fmt::Display + ?Sized),
    errs: &mut Vec<FieldError>,
) {
    label_pairs(map.iter().map(|(k, v)| (k.as_str(), v.as_str())), path, errs);
}

fn label_pairs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    for (k, v) in pairs {
        for m in label_key_errors(k) {
            errs.push(FieldError::invalid(path.to_string(), k, m));
        }
        for m in label_value_errors(v) {
            errs.push(FieldError::invalid(path.to_string(), v, m));
        }
    }
}

/// `ValidateLabelSelector`: match labels and expressions (operators and their values).
pub(super) fn typed_label_selector(selector: &metav1::LabelSelector, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    label_map(&selector.match_labels, &path.child("matchLabels"), errs);
    let expressions = path.child("matchExpressions");
    for (i, expr) in selector.match_expressions.iter().enumerate() {
        let p = expressions.index(i);
        let has_values = !expr.values.is_empty();
        match expr.operator.as_str() {
            "In" | "NotIn" if !has_values => {
                errs.push(FieldError::required(p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
            }
            "Exists" | "DoesNotExist" if has_values => {
                errs.push(FieldError::forbidden(p.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(p.child("operator"), other, "not a valid selector operator")),
        }
        for m in label_key_errors(&expr.key) {
            errs.push(FieldError::invalid(p.child("key"), expr.key.as_str(), m));
        }
    }
}

/// Whether a `metav1.LabelSelector` selects nothing in particular (absent or empty: the
/// generated type cannot tell an empty selector from none).
pub(super) fn selector_is_empty(selector: Option<&metav1::LabelSelector>) -> bool {
    selector.is_none_or(|s| s.match_labels.is_empty() && s.match_expressions.is_empty())
}

/// Whether `selector` matches `labels` (upstream's `LabelSelectorAsSelector(...).Matches`; an
/// absent or empty selector matches nothing here).
pub(super) fn selector_matches(selector: Option<&metav1::LabelSelector>, labels: &std::collections::BTreeMap<String, String>) -> bool {
    !selector_is_empty(selector) && crate::selectors::LabelSelector::from_api(selector).is_ok_and(|s| s.matches(labels))
}

/// A `metav1.LabelSelector` as a bad value: as Go's JSON encoding writes it (struct order,
/// empty parts left out), `null` when absent.
pub(super) fn selector_value(selector: Option<&metav1::LabelSelector>) -> BadValue {
    selector.map_or(BadValue::Null, json_value)
}

/// A test's JSON object read as its generated type `T`.
#[cfg(test)]
pub(crate) fn test_typed<T: serde::de::DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).expect("the test's object reads as its type")
}

/// A test's JSON object as the store carries it: known as its `group`/`resource`'s kind, so
/// that rules written over the generated type read it as such.
#[cfg(test)]
pub(crate) fn test_object(group: &str, resource: &str, value: &Value) -> Object {
    let object = Object::from_value(value.clone());
    let info = kapi_api::scheme::RESOURCES.iter().find(|r| r.group == group && r.resource == resource);
    match info.and_then(|r| kapi_api::scheme::dyn_kind(r.kind.group, r.kind.version, r.kind.kind)) {
        Some(kind) => object.of_kind(kind),
        None => object,
    }
}

/// Field errors as their messages (for the group modules' tests).
#[cfg(test)]
pub(crate) fn test_messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_validates_without_panicking() {
        let shapes = [serde_json::json!({}), serde_json::json!({"spec": null, "metadata": {"name": "x"}}), serde_json::json!([1])];
        for r in kapi_api::scheme::RESOURCES {
            for v in &shapes {
                let strategy = crate::registry::strategy(r.group, r.resource);
                let object = test_object(r.group, r.resource, v);
                let _ = validate_create(strategy, &object, required_errors(r.group, r.resource, v));
                let _ = validate_update(
                    strategy,
                    &test_object(r.group, r.resource, v),
                    &test_object(r.group, r.resource, &shapes[0]),
                    required_errors(r.group, r.resource, v),
                );
                let _ = strategy.validate_status_update(&test_object(r.group, r.resource, &shapes[0]), &object);
            }
        }
    }

    #[test]
    fn field_paths_print_as_upstreams() {
        let spec = FieldPath::Root("spec");
        let containers = spec.child("containers");
        let first = containers.index(0);
        let resources = first.child("resources");
        let limits = resources.child("limits");
        assert_eq!(limits.key("cpu").to_string(), "spec.containers[0].resources.limits[cpu]");
        assert_eq!(FieldPath::Root("").child("metadata").to_string(), "metadata");
        assert_eq!(String::from(&first), "spec.containers[0]");
    }

    /// Metadata by the strategy's name rule (the resources' own rules are tested beside their
    /// strategies) and label keys.
    #[test]
    fn names_follow_the_strategys_rule() {
        use crate::registry::strategy::Generic;
        let invalid = |name: &str| !validate_object_meta(&Generic, &serde_json::json!({"metadata": {"name": name}})).is_empty();
        assert!(!invalid("a.b-c"));
        assert!(invalid("Bad_Name"));
        let errs = validate_object_meta(&Generic, &serde_json::json!({"metadata": {"name": "ok", "labels": {"bad key!": "v"}}}));
        assert_eq!(errs.len(), 1);
    }
}
