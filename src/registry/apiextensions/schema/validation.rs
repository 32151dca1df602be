//! Validation of a value against a schema as kube-openapi's `validate.SchemaValidator` does it
//! for apiextensions-apiserver, and the field errors `kubeOpenAPIResultToFieldErrors` makes of
//! its result (`pkg/apiserver/validation/validation.go`).
//!
//! The shape follows kube-openapi's, because its quirks are what clients see: every node runs
//! the type, junctor (`allOf`/`anyOf`/`oneOf`/`not`), string, format, number, array, enum and
//! object checks that apply to the value, in that order; errors are deduplicated by message;
//! paths are kube-openapi's (`spec.items[0].name`, map keys joined with `.`, the root `""`);
//! `anyOf`/`oneOf` report the failures of the alternative that got furthest (its "match
//! count"). The messages are kube-openapi's `errors` package's, with `body` as the location.
//!
//! Updates ratchet (upstream's `CRDValidationRatcheting`, on by default): a node whose value
//! equals the old value it correlates with (same field; same keys in a `map` list) reports no
//! errors, so an object stored before a schema tightened can still be updated elsewhere.

use serde_json::{Map, Number, Value};

use super::Node;
use crate::status::{BadValue, FieldError};

/// One error of kube-openapi's result.
#[derive(Debug, Clone)]
struct Failure {
    kind: FailureKind,
    /// kube-openapi's message (`spec.size in body must be of type integer: "string"`).
    message: String,
}

#[derive(Debug, Clone)]
enum FailureKind {
    /// An `errors.Validation`: its code, the path it names, and its value and bound.
    Validation { code: Code, name: String, value: Option<BadValue>, valid: Option<i64>, values: Vec<Value> },
    /// Any other error (a junctor's, a range check's): upstream reports it on the validator's
    /// own path, with an empty value.
    Other,
}

/// kube-openapi's error codes, as far as the conversion to field errors tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    /// Reported as `Invalid value`, like every code not named above.
    Other,
}

/// A validator's `Result`: its errors (no two with the same message) and how many checks
/// passed on the way, which picks the reported alternative of `anyOf`/`oneOf`.
#[derive(Debug, Default)]
struct Outcome {
    errors: Vec<Failure>,
    matches: usize,
}

impl Outcome {
    fn failed(failure: Failure) -> Outcome {
        Outcome { errors: vec![failure], matches: 0 }
    }

    fn add(&mut self, failure: Failure) {
        if !self.errors.iter().any(|e| e.message == failure.message) {
            self.errors.push(failure);
        }
    }

    fn merge(&mut self, other: Outcome) {
        for e in other.errors {
            self.add(e);
        }
        self.matches += other.matches;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    fn inc(&mut self) {
        self.matches += 1;
    }
}

fn invalid(code: Code, name: &str, message: String, value: Option<BadValue>) -> Failure {
    Failure { kind: FailureKind::Validation { code, name: name.to_owned(), value, valid: None, values: Vec::new() }, message }
}

fn other(message: String) -> Failure {
    Failure { kind: FailureKind::Other, message }
}

/// `errors.InvalidType` with a string value: `<path> in body must be of type <type>: "<value>"`.
fn invalid_type(path: &str, type_name: &str, value: &str) -> Failure {
    let message = format!("{path} in body must be of type {type_name}: {}", go_quote(value));
    invalid(Code::InvalidType, path, message, Some(BadValue::String(value.to_owned())))
}

/// The old value a node's value is compared with when an update ratchets: the same field of
/// the old object (or the item with the same keys of a `map` list), and the schema that says
/// how to correlate below it.
#[derive(Clone, Copy)]
pub(super) struct Correlation<'a> {
    pub old: &'a Value,
    pub schema: &'a Node,
}

impl<'a> Correlation<'a> {
    /// The old value of `field` (upstream's `CorrelatedObject.Key`): only for a field the
    /// schema describes.
    fn key(self, field: &str) -> Option<Correlation<'a>> {
        let old = self.old.as_object()?.get(field)?;
        let schema = self.schema.properties.get(field).or_else(|| self.schema.additional_schema())?;
        Some(Correlation { old, schema })
    }

    /// The old item of a `map` list with the same keys as `new` (`CorrelatedObject.Index`):
    /// items of other lists do not correlate.
    fn index(self, new: &Value) -> Option<Correlation<'a>> {
        let schema = self.schema.items.as_deref()?;
        let old = map_list_match(self.schema, self.old.as_array()?, new)?;
        Some(Correlation { old, schema })
    }

    /// Whether the value is unchanged, as upstream's `CachedDeepEqual` decides it: objects
    /// field by described field (a field the schema does not describe makes them differ),
    /// `map` lists item by keyed item, anything else by plain equality.
    fn unchanged(self, new: &Value) -> bool {
        unchanged(self.schema, self.old, new)
    }
}

fn unchanged(schema: &Node, old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Null, Value::Null) => true,
        (Value::Array(old_items), Value::Array(new_items)) => {
            if old_items.len() != new_items.len() {
                return false;
            }
            if !schema.is_map_list() {
                return old_items == new_items;
            }
            let Some(items) = schema.items.as_deref() else { return false };
            new_items.iter().all(|item| map_list_match(schema, old_items, item).is_some_and(|old| unchanged(items, old, item)))
        }
        (Value::Object(old_fields), Value::Object(new_fields)) => {
            old_fields.len() == new_fields.len()
                && new_fields.iter().all(|(field, value)| {
                    let described = schema.properties.get(field).or_else(|| schema.additional_schema());
                    match (described, old_fields.get(field)) {
                        (Some(described), Some(old)) => unchanged(described, old, value),
                        _ => false,
                    }
                })
        }
        _ => old == new,
    }
}

/// The first item of `old` whose `x-kubernetes-list-map-keys` are all present, scalar, and
/// equal to those of `new` (upstream's `MapList.Get`).
fn map_list_match<'a>(schema: &Node, old: &'a [Value], new: &Value) -> Option<&'a Value> {
    if !schema.is_map_list() {
        return None;
    }
    let key_of = |item: &Value| -> Option<Vec<Value>> {
        let fields = item.as_object()?;
        schema
            .list_map_keys
            .iter()
            .map(|key| fields.get(key).filter(|v| matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_))).cloned())
            .collect()
    };
    let wanted = key_of(new)?;
    old.iter().find(|item| key_of(item).as_ref() == Some(&wanted))
}

/// Validates `value` against `schema` (the root of a validator: `path` is `""`), comparing
/// with `old` when an update ratchets, and makes upstream's field errors of the result, their
/// paths under `prefix` (`status` for the status subresource's validator).
pub(super) fn validate(schema: &Node, value: &Value, old: Option<Correlation<'_>>, prefix: Option<&str>) -> Vec<FieldError> {
    let outcome = node(schema, value, "", old);
    outcome.errors.into_iter().map(|failure| field_error(failure, prefix)).collect()
}

/// `kubeOpenAPIResultToFieldErrors` for one error.
fn field_error(failure: Failure, prefix: Option<&str>) -> FieldError {
    // A nil `*field.Path` prints as `<nil>`: errors upstream reports on the object's root.
    let root = prefix.unwrap_or("<nil>").to_owned();
    let (code, name, value, valid, values) = match failure.kind {
        FailureKind::Other => return FieldError::invalid(root, "", failure.message),
        FailureKind::Validation { code, name, value, valid, values } => (code, name, value, valid, values),
    };
    let child = name.strip_prefix('.').unwrap_or(&name);
    let field = match (name.is_empty() || name == ".", prefix) {
        (true, _) => root,
        (false, None) => child.to_owned(),
        (false, Some(prefix)) => format!("{prefix}.{child}"),
    };
    // A missing value is shown as `""`, as upstream substitutes one.
    let shown = || value.clone().unwrap_or(BadValue::String(String::new()));
    match code {
        Code::Required => FieldError::required(field, ""),
        Code::Enum => {
            let supported: Vec<String> = values.iter().map(|v| v.as_str().map_or_else(|| go_json(v), str::to_owned)).collect();
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            FieldError::not_supported(field, value.unwrap_or(BadValue::Null), &supported)
        }
        Code::TooLong => FieldError::too_long(field, valid.unwrap_or(-1)),
        Code::MaxItems | Code::TooManyProperties => {
            let actual = match value {
                Some(BadValue::Int(n)) => Some(n),
                _ => None,
            };
            FieldError::too_many(field, actual, valid.unwrap_or(-1))
        }
        Code::InvalidType => FieldError::type_invalid(field, shown(), failure.message),
        Code::Other => FieldError::invalid(field, shown(), failure.message),
    }
}

/// A node reached through a field or an index: when it correlates with an old value equal
/// to it, its errors are dropped (kept as warnings upstream, which nobody sees).
fn node(schema: &Node, value: &Value, path: &str, old: Option<Correlation<'_>>) -> Outcome {
    let mut outcome = checks(schema, value, path, old);
    if !outcome.is_valid() && old.is_some_and(|old| old.unchanged(value)) {
        outcome.errors.clear();
    }
    outcome
}

/// One `SchemaValidator.Validate`: every check that applies to the value. `old` correlates
/// the value's fields and items; the node's own ratcheting is [`node`]'s.
fn checks(schema: &Node, value: &Value, path: &str, old: Option<Correlation<'_>>) -> Outcome {
    let mut result = Outcome::default();
    if value.is_null() {
        result.merge(type_check(schema, value, path));
        result.merge(enum_check(schema, value, path));
        return result;
    }
    if !schema.types.is_empty() || !schema.format.is_empty() {
        result.merge(type_check(schema, value, path));
        result.inc();
    }
    result.merge(junctors(schema, value, path, old));
    result.inc();
    if let Value::String(text) = value {
        result.merge(string_check(schema, text, path));
        result.inc();
        if super::formats::is_supported(&schema.format) {
            if !super::formats::validates(&schema.format, text) {
                // The format is reported as the type the value is not of.
                result.merge(Outcome::failed(invalid_type(path, &schema.format, text)));
            }
            result.inc();
        }
    }
    if let Value::Number(n) = value {
        result.merge(number_check(schema, number(n), path));
        result.inc();
    }
    if let Value::Array(items) = value {
        result.merge(array_check(schema, items, path, old));
        result.inc();
    }
    result.merge(enum_check(schema, value, path));
    result.inc();
    if let Value::Object(fields) = value {
        result.merge(object_check(schema, fields, path, old));
        result.inc();
    }
    result.inc();
    result
}

/// A JSON number as Go's unstructured decoding holds it.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// Go's `%v`.
    fn display(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => go_float(f),
        }
    }

    fn bad_value(self) -> BadValue {
        match self {
            Num::Int(i) => BadValue::Int(i),
            Num::Float(f) => BadValue::Raw(go_float(f)),
        }
    }
}

/// An integral number within int64 is an `int64`, any other a `float64`.
fn number(n: &Number) -> Num {
    n.as_i64().map_or_else(|| Num::Float(n.as_f64().unwrap_or(f64::NAN)), Num::Int)
}

/// The JSON type and format kube-openapi infers from a Go value (`schemaInfoForType`).
fn type_info(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match number(n) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("", ""),
    }
}

/// `typeValidator`. A string or an array passes any type that is not numeric when the schema
/// has a format (upstream lets the format check decide); a number of another format than the
/// schema's is reported by format.
fn type_check(schema: &Node, value: &Value, path: &str) -> Outcome {
    let types = schema.type_names();
    let has = |t: &str| types.contains(&t);
    let ok = Outcome { errors: Vec::new(), matches: 1 };
    if value.is_null() {
        if !types.is_empty() && !schema.nullable {
            return Outcome::failed(invalid_type(path, &types.join(","), "null"));
        }
        return ok;
    }
    let (json_type, format) = type_info(value);
    let string_or_array = matches!(value, Value::String(_) | Value::Array(_));
    let float_as_int = match value {
        Value::Number(n) => matches!(number(n), Num::Float(f) if is_json_integer(f)) && has("integer"),
        _ => false,
    };
    let int_as_float = json_type == "integer" && has("number");
    let has_format = !schema.format.is_empty();
    let type_or_format_fits = has(json_type) || format == schema.format || float_as_int || int_as_float;
    if has_format && !string_or_array && !type_or_format_fits {
        return Outcome::failed(invalid_type(path, &schema.format, format));
    }
    if has_format && string_or_array && !(has("number") || has("integer")) {
        return ok;
    }
    if !(has(json_type) || float_as_int || int_as_float) {
        return Outcome::failed(invalid_type(path, &types.join(","), json_type));
    }
    ok
}

/// `schemaPropsValidator`: `anyOf`, `oneOf`, `allOf`, `not`. The alternatives are validated
/// as plain validators of the same value (no ratcheting of their own), their fields still
/// correlated through the node's old value.
fn junctors(schema: &Node, value: &Value, path: &str, old: Option<Correlation<'_>>) -> Outcome {
    let mut main = Outcome::default();
    let quoted = go_quote(path);
    if !schema.any_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success = None;
        for alternative in &schema.any_of {
            let result = checks(alternative, value, path, old);
            if result.is_valid() {
                best = None;
                first_success = Some(result);
                break;
            }
            if best.as_ref().is_none_or(|b| result.matches > b.matches) {
                best = Some(result);
            }
        }
        if first_success.is_none() {
            main.add(other(format!("{quoted} must validate at least one schema (anyOf)")));
        }
        if let Some(reported) = best.or(first_success) {
            main.merge(reported);
        }
    }
    if !schema.one_of.is_empty() {
        let mut best: Option<Outcome> = None;
        let mut first_success = None;
        let mut validated = 0;
        for alternative in &schema.one_of {
            let result = checks(alternative, value, path, old);
            if result.is_valid() {
                validated += 1;
                best = None;
                first_success.get_or_insert(result);
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| result.matches > b.matches) {
                best = Some(result);
            }
        }
        if validated != 1 {
            let found = if validated == 0 { "Found none valid".to_owned() } else { format!("Found {validated} valid alternatives") };
            main.add(other(format!("{quoted} must validate one and only one schema (oneOf). {found}")));
            if let Some(best) = best {
                main.merge(best);
            }
        } else if let Some(success) = first_success {
            main.merge(success);
        }
    }
    if !schema.all_of.is_empty() {
        let mut validated = 0;
        for part in &schema.all_of {
            let result = checks(part, value, path, old);
            if result.is_valid() {
                validated += 1;
            }
            main.merge(result);
        }
        if validated != schema.all_of.len() {
            let none = if validated == 0 { ". None validated" } else { "" };
            main.add(other(format!("{quoted} must validate all the schemas (allOf){none}")));
        }
    }
    if let Some(not) = &schema.not
        && checks(not, value, path, old).is_valid()
    {
        main.add(other(format!("{quoted} must not validate the schema (not)")));
    }
    main.inc();
    main
}

/// `stringValidator`: the first of maxLength, minLength and pattern that fails (lengths in
/// characters).
fn string_check(schema: &Node, text: &str, path: &str) -> Outcome {
    let length = text.chars().count() as i64;
    if let Some(max) = schema.max_length
        && length > max
    {
        let failure = Failure {
            kind: FailureKind::Validation {
                code: Code::TooLong,
                name: path.to_owned(),
                value: Some(BadValue::String(text.to_owned())),
                valid: Some(max),
                values: Vec::new(),
            },
            message: format!("{path} in body should be at most {max} chars long"),
        };
        return Outcome::failed(failure);
    }
    if let Some(min) = schema.min_length
        && length < min
    {
        let message = format!("{path} in body should be at least {min} chars long");
        return Outcome::failed(invalid(Code::Other, path, message, Some(BadValue::String(text.to_owned()))));
    }
    if let Some(pattern) = &schema.pattern {
        let shown = match pattern.regex() {
            Err(e) => Some(format!("{}, but pattern is invalid: {e}", pattern.source)),
            Ok(re) if !re.is_match(text) => Some(pattern.source.clone()),
            Ok(_) => None,
        };
        if let Some(shown) = shown {
            let message = format!("{path} in body should match '{shown}'");
            return Outcome::failed(invalid(Code::Other, path, message, Some(BadValue::String(text.to_owned()))));
        }
    }
    Outcome::default()
}

/// The type and format the number checks hold a value to: only for a schema of exactly one
/// numeric type, only its own formats.
fn numeric_type(schema: &Node) -> (&'static str, &str) {
    match schema.type_names() {
        ["integer"] => ("integer", if matches!(schema.format.as_str(), "int32" | "int64") { &schema.format } else { "" }),
        ["number"] => ("number", if matches!(schema.format.as_str(), "float" | "double") { &schema.format } else { "" }),
        _ => ("", ""),
    }
}

/// `IsValueValidAgainstRange`: whether `value` fits the type and format (an int32, an int64,
/// a float32), as an error that names `what` and the path.
fn range_error(value: Num, type_name: &str, format: &str, what: &str, path: &str) -> Option<Failure> {
    let text = match value {
        Num::Int(i) => i.to_string(),
        // Go's `FormatFloat(f, 'f', -1, 64)`: shortest digits, no exponent.
        Num::Float(f) => format!("{f}"),
    };
    let fits = match (type_name, format) {
        ("integer", "int32") => text.parse::<i32>().is_ok(),
        ("integer", _) => text.parse::<i64>().is_ok(),
        (_, "float" | "float32") => text.parse::<f64>().is_ok_and(|f| f.abs() <= f64::from(f32::MAX)),
        _ => true,
    };
    if fits {
        return None;
    }
    Some(other(if format.is_empty() {
        format!("{what} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{what} value must be of type {type_name} with format {format} in {path}")
    }))
}

/// `numberValidator`: the value's own range, then multipleOf, minimum and maximum, each with
/// the value's native type when the bound fits the schema's type (an int64 value against a
/// bound truncated to an int64), as floats otherwise.
fn number_check(schema: &Node, value: Num, path: &str) -> Outcome {
    let (type_name, format) = numeric_type(schema);
    let mut result = Outcome::default();
    if let Some(e) = range_error(value, type_name, format, "Checked", path) {
        result.add(e);
    }
    let mut multiple = Outcome::default();
    if let Some(factor) = schema.multiple_of {
        match range_error(Num::Float(factor), type_name, format, "MultipleOf", path) {
            Some(e) => {
                multiple.add(e);
                multiple.errors.extend(multiple_of(path, Num::Float(value.as_f64()), Num::Float(factor)));
            }
            None => {
                let factor = match value {
                    Num::Int(_) => Num::Int(factor as i64),
                    Num::Float(_) => Num::Float(factor),
                };
                multiple.errors.extend(multiple_of(path, value, factor));
            }
        }
    }
    let bound = |limit: f64, what: &str, exclusive: bool, upper: bool| -> Outcome {
        let mut out = Outcome::default();
        let native = match range_error(Num::Float(limit), type_name, format, what, path) {
            Some(e) => {
                out.add(e);
                false
            }
            None => true,
        };
        let (value, limit) = match (native, value) {
            (true, Num::Int(i)) => (Num::Int(i), Num::Int(limit as i64)),
            (_, v) => (Num::Float(v.as_f64()), Num::Float(limit)),
        };
        let beyond = match (value, limit) {
            (Num::Int(v), Num::Int(l)) => {
                if upper {
                    v > l || (exclusive && v == l)
                } else {
                    v < l || (exclusive && v == l)
                }
            }
            (v, l) => {
                let (v, l) = (v.as_f64(), l.as_f64());
                if upper { v > l || (exclusive && v >= l) } else { v < l || (exclusive && v <= l) }
            }
        };
        if beyond {
            let relation = match (upper, exclusive) {
                (true, false) => "less than or equal to",
                (true, true) => "less than",
                (false, false) => "greater than or equal to",
                (false, true) => "greater than",
            };
            let message = format!("{path} in body should be {relation} {}", limit.display());
            out.add(invalid(Code::Other, path, message, Some(value.bad_value())));
        }
        out
    };
    let minimum = schema.minimum.map(|min| bound(min, "Minimum boundary", schema.exclusive_minimum, false));
    let maximum = schema.maximum.map(|max| bound(max, "Maximum boundary", schema.exclusive_maximum, true));
    result.merge(multiple);
    result.merge(minimum.unwrap_or_default());
    result.merge(maximum.unwrap_or_default());
    result.inc();
    result
}

/// `MultipleOfInt` / `MultipleOf`: a factor that is not positive, or a value it does not
/// divide (floats within kube-openapi's tolerance).
fn multiple_of(path: &str, value: Num, factor: Num) -> Option<Failure> {
    let positive = match factor {
        Num::Int(f) => f > 0,
        Num::Float(f) => f > 0.0,
    };
    if !positive {
        let message = format!("factor MultipleOf declared for {path} must be positive: {}", factor.display());
        return Some(invalid(Code::Other, path, message, Some(factor.bad_value())));
    }
    let divides = match (value, factor) {
        (Num::Int(v), Num::Int(f)) => v.wrapping_div(f).wrapping_mul(f) == v,
        (v, f) => {
            let (v, f) = (v.as_f64(), f.as_f64());
            is_json_integer(if f < 1.0 { 1.0 / f * v } else { v / f })
        }
    };
    (!divides).then(|| {
        let message = format!("{path} in body should be a multiple of {}", factor.display());
        invalid(Code::Other, path, message, Some(value.bad_value()))
    })
}

/// go-openapi's `IsFloat64AJSONInteger`: within ±2^53 and integral, or within a relative
/// 1e-9 of the integer below it.
fn is_json_integer(f: f64) -> bool {
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    if !f.is_finite() || !(-LIMIT..=LIMIT).contains(&f) {
        return false;
    }
    let truncated = f as u64 as f64;
    let diff = (f - truncated).abs();
    if f == truncated || f == (f as i64) as f64 {
        return true;
    }
    if f == 0.0 || truncated == 0.0 || diff < f64::MIN_POSITIVE {
        return diff < 1e-9 * f64::MIN_POSITIVE;
    }
    diff / (f.abs() + truncated.abs()).min(f64::MAX) < 1e-9
}

/// `schemaSliceValidator`: the items, then minItems, maxItems and uniqueItems.
fn array_check(schema: &Node, items: &[Value], path: &str, old: Option<Correlation<'_>>) -> Outcome {
    let mut result = Outcome::default();
    if let Some(item_schema) = &schema.items {
        for (i, item) in items.iter().enumerate() {
            let old = old.and_then(|old| old.index(item));
            result.merge(node(item_schema, item, &format!("{path}[{i}]"), old));
        }
    }
    let size = items.len() as i64;
    if let Some(min) = schema.min_items
        && size < min
    {
        let message = format!("{path} in body should have at least {min} items");
        result.add(invalid(Code::Other, path, message, Some(BadValue::Int(size))));
    }
    if let Some(max) = schema.max_items
        && size > max
    {
        result.add(Failure {
            kind: FailureKind::Validation {
                code: Code::MaxItems,
                name: path.to_owned(),
                value: Some(BadValue::Int(size)),
                valid: Some(max),
                values: Vec::new(),
            },
            message: format!("{path} in body should have at most {max} items"),
        });
    }
    if schema.unique_items && items.iter().enumerate().any(|(i, item)| items[..i].contains(item)) {
        result.add(invalid(Code::Other, path, format!("{path} in body shouldn't contain duplicates"), None));
    }
    result.inc();
    result
}

/// `basicCommonValidator`: the value must be one of `enum` (null never is), compared after
/// Go's conversion of the value to each member's type.
fn enum_check(schema: &Node, value: &Value, path: &str) -> Outcome {
    if schema.enumeration.is_empty() || schema.enumeration.iter().any(|member| enum_matches(value, member)) {
        return Outcome::default();
    }
    let listed: Vec<String> = schema.enumeration.iter().map(go_value).collect();
    let failure = Failure {
        kind: FailureKind::Validation {
            code: Code::Enum,
            name: path.to_owned(),
            value: Some(bad_value(value)),
            valid: None,
            values: schema.enumeration.clone(),
        },
        message: format!("{path} in body should be one of [{}]", listed.join(" ")),
    };
    Outcome::failed(failure)
}

/// Whether `value` equals `member` once converted to its Go type: numbers across int64 and
/// float64 (a float truncated to an int), an int64 to a string as the character it codes
/// (Go's `string(rune)`), anything else only within its own type.
fn enum_matches(value: &Value, member: &Value) -> bool {
    match (value, member) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(v), Value::Number(m)) => match (number(v), number(m)) {
            (Num::Int(v), Num::Int(m)) => v == m,
            (Num::Int(v), Num::Float(m)) => v as f64 == m,
            (Num::Float(v), Num::Int(m)) => v as i64 == m,
            (Num::Float(v), Num::Float(m)) => v == m,
        },
        (Value::Number(v), Value::String(m)) => match number(v) {
            Num::Int(code) => {
                let rune = u32::try_from(code).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                m.chars().eq(std::iter::once(rune))
            }
            Num::Float(_) => false,
        },
        _ => value == member,
    }
}

/// `objectValidator`: min/maxProperties, the fields no property describes (refused by
/// `additionalProperties: false`, else checked against its schema), the properties, then
/// `required`.
fn object_check(schema: &Node, fields: &Map<String, Value>, path: &str, old: Option<Correlation<'_>>) -> Outcome {
    let mut result = Outcome::default();
    let count = fields.len() as i64;
    if let Some(min) = schema.min_properties
        && count < min
    {
        let message = format!("{path} in body should have at least {min} properties");
        result.add(invalid(Code::Other, path, message, Some(BadValue::Int(count))));
    }
    if let Some(max) = schema.max_properties
        && count > max
    {
        result.add(Failure {
            kind: FailureKind::Validation {
                code: Code::TooManyProperties,
                name: path.to_owned(),
                value: Some(BadValue::Int(count)),
                valid: Some(max),
                values: Vec::new(),
            },
            message: format!("{path} in body should have at most {max} properties"),
        });
    }
    let field_node = |name: &str, field_schema: &Node, value: &Value, field_path: &str| {
        // The root's apiVersion and kind never ratchet: both objects have the request's.
        let old = old.filter(|_| !(path.is_empty() && matches!(name, "apiVersion" | "kind"))).and_then(|old| old.key(name));
        node(field_schema, value, field_path, old)
    };
    for (name, value) in fields {
        if schema.properties.contains_key(name) {
            continue;
        }
        match &schema.additional_properties {
            Some(super::Additional::Allowed(false)) => {
                let message = format!("{path}.{name} in body is a forbidden property");
                result.add(invalid(Code::Other, path, message, Some(BadValue::String(name.clone()))));
            }
            Some(super::Additional::Schema(extra)) => {
                result.merge(field_node(name, extra, value, &format!("{path}.{name}")));
            }
            _ => {}
        }
    }
    for (name, property) in &schema.properties {
        if let Some(value) = fields.get(name) {
            let field_path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            result.merge(field_node(name, property, value, &field_path));
        }
    }
    for name in &schema.required {
        if !fields.contains_key(name) {
            let required = format!("{path}.{name}");
            result.add(invalid(Code::Required, &required, format!("{required} in body is required"), None));
        }
    }
    result
}

/// A value as a field error shows it: strings quoted, numbers and booleans as Go's `%v`,
/// anything else as Go's JSON.
pub(super) fn bad_value(value: &Value) -> BadValue {
    match value {
        Value::Null => BadValue::Null,
        Value::Bool(b) => BadValue::Bool(*b),
        Value::String(s) => BadValue::String(s.clone()),
        Value::Number(n) => number(n).bad_value(),
        other => BadValue::Raw(go_json(other)),
    }
}

/// Go's `%v` of a JSON value (a member of `enum` in a message).
fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => number(n).display(),
        other => go_json(other),
    }
}

/// Go's `%q`.
fn go_quote(text: &str) -> String {
    crate::status::go_quote(text)
}

/// Go's `%v` of a float64 (`'g'` with the shortest precision): the shortest digits, in
/// exponent form when the exponent is below -4 or at least 6: `1e+06`, `123456`, `1e-05`.
pub(super) fn go_float(f: f64) -> String {
    let (mantissa, exponent) = scientific(f);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{f}")
    }
}

/// The shortest digits of `f` as `d.ddd` and its decimal exponent.
fn scientific(f: f64) -> (String, i32) {
    let text = format!("{f:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    (mantissa.to_owned(), exponent.parse().unwrap_or(0))
}

/// Go's `encoding/json` of an unstructured value: keys sorted, HTML characters escaped,
/// floats as `1.5`, `1e+21`, `1e-7`.
pub(super) fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_go_json(value, &mut out);
    out
}

fn write_go_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match number(n) {
            Num::Int(i) => out.push_str(&i.to_string()),
            Num::Float(f) => {
                let magnitude = f.abs();
                if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
                    let (mantissa, exponent) = scientific(f);
                    let sign = if exponent < 0 { '-' } else { '+' };
                    out.push_str(&format!("{mantissa}e{sign}{}", exponent.abs()));
                } else {
                    out.push_str(&format!("{f}"));
                }
            }
        },
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(key, out);
                out.push(':');
                write_go_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_number_and_json_forms() {
        assert_eq!(
            [1e6, 123456.0, 1.5, 1e-5, 0.0001, -2.5e10, 10.0].map(go_float),
            ["1e+06", "123456", "1.5", "1e-05", "0.0001", "-2.5e+10", "10"]
        );
        assert_eq!(
            go_json(&json!({"b": [1, 1.5, 1e21, 1e-7, 2.0], "a": "<&>\n"})),
            r#"{"a":"\u003c\u0026\u003e\n","b":[1,1.5,1e+21,1e-7,2]}"#
        );
    }

    #[test]
    fn json_integers_have_kube_openapis_tolerance() {
        assert!(is_json_integer(3.0) && is_json_integer(-3.0) && is_json_integer(3.0000000001));
        assert!(!is_json_integer(3.5) && !is_json_integer(1e20) && !is_json_integer(-0.5));
    }

    #[test]
    fn enum_members_compare_after_gos_conversions() {
        assert!(enum_matches(&json!(1.0), &json!(1)) && enum_matches(&json!(1.9), &json!(1)) && enum_matches(&json!(1), &json!(1.0)));
        assert!(enum_matches(&json!(65), &json!("A")) && !enum_matches(&json!("1"), &json!(1)));
        assert!(!enum_matches(&json!(null), &json!(null)) && enum_matches(&json!({"a": [1]}), &json!({"a": [1]})));
    }
}
