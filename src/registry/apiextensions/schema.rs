//! The schema part of apiextensions-apiserver: what a CustomResourceDefinition version's
//! `schema.openAPIV3Schema` (a structural schema) does to that version's objects. I/O-free.
//!
//! - [`Schema::parse`] reads the schema once, when the definition is served: formats upstream
//!   does not check are dropped (`StripUnsupportedFormatsPostProcessor`), defaults pruned by
//!   their own schema (`PruneDefaults`); patterns compile on first use.
//! - [`Schema::normalize`] is what upstream's decoder does to every object it reads, from a
//!   request or from storage: unknown fields pruned (`pruning.Prune`: kept under
//!   `x-kubernetes-preserve-unknown-fields`, and `apiVersion`/`kind`/`metadata` of the root
//!   and of embedded resources), nulls of non-nullable fields without a default dropped
//!   (`PruneNonNullableNullsWithoutDefaults`), the metadata of the root and of embedded
//!   resources cleared of fields ObjectMeta does not have (`objectmeta.Coerce`), then
//!   `default`s applied to missing fields (`structuraldefaulting.Default`). It answers the
//!   paths of the unknown fields, which `fieldValidation=Strict|Warn` reports.
//!   [`Schema::prune`] is the same without the defaults: what converting an object read to
//!   another version does.
//! - [`Schema::validate`] and its update forms check an object as upstream's strategy does:
//!   kube-openapi's validator ([`validation`], ratcheting on update), the embedded resources'
//!   `apiVersion`/`kind`/`metadata` (`objectmeta.Validate`) and the uniqueness of
//!   `x-kubernetes-list-type: set|map` lists (`listtype.ValidateListSetsAndMaps`).
//!
//! - `x-kubernetes-validations` (CEL rules) are compiled with the schema ([`cel`]) and
//!   evaluated by the validations above, after the schema's own checks, unless one of those
//!   blocks them (upstream's `hasBlockingErr`).

mod cel;
mod formats;
pub mod structural;
mod validation;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value, json};

use self::validation::{Correlation, bad_value, go_json};
use crate::registry::strategy::Strategy;
use crate::registry::validation::{NameRule, child, index, key, validate_object_meta};
use crate::status::{BadValue, FieldError};

/// Why a schema could not be served: the field error a definition's validation reports,
/// its path from the schema (`openAPIV3Schema.properties[spec].type`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub FieldError);

/// One version's schema, read once and applied to every object of that version.
#[derive(Debug)]
pub struct Schema {
    root: Node,
    /// Unknown fields are pruned: always in `apiextensions.k8s.io/v1`, unless a definition
    /// from v1beta1 days still says `preserveUnknownFields: true`.
    prunes: bool,
}

/// A schema node: the structural part (properties, items, additionalProperties, extensions)
/// that pruning and defaulting walk, and the value validations kube-openapi checks, including
/// the junctors' sub-schemas.
#[derive(Debug, Default)]
struct Node {
    /// The JSON types a value may have, as kube-openapi sees `type`: none, one, or `integer`
    /// and `string` for `x-kubernetes-int-or-string`.
    types: Vec<&'static str>,
    nullable: bool,
    /// The format, when upstream checks it for the type (`""` otherwise).
    format: String,
    /// The default (pruned by its own schema), never JSON null (upstream's "no default").
    default: Option<Value>,
    /// The default as written, when pruning changed it (a definition's validation refuses
    /// that, see [`Schema::default_errors`]).
    unpruned_default: Option<Value>,
    enumeration: Vec<Value>,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    multiple_of: Option<f64>,
    max_length: Option<i64>,
    min_length: Option<i64>,
    pattern: Option<Pattern>,
    max_items: Option<i64>,
    min_items: Option<i64>,
    unique_items: bool,
    max_properties: Option<i64>,
    min_properties: Option<i64>,
    required: Vec<String>,
    properties: BTreeMap<String, Node>,
    additional_properties: Option<Additional>,
    items: Option<Box<Node>>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
    preserve_unknown_fields: bool,
    embedded_resource: bool,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    /// This node or one below it (through properties, additionalProperties, items) is an
    /// embedded resource: the walks that only concern those skip the other subtrees.
    has_embedded: bool,
    /// Likewise for `set` and `map` lists.
    has_keyed_lists: bool,
    /// `x-kubernetes-validations`, compiled.
    rules: Vec<cel::Rule>,
    /// This node or one below it (through the structural children and `allOf`) has rules.
    has_rules: bool,
}

/// `additionalProperties`: a boolean, or the schema of every field no property names.
#[derive(Debug)]
enum Additional {
    Allowed(bool),
    Schema(Box<Node>),
}

/// A `pattern`, compiled the first time a value is checked against it (a definition's many
/// patterns cost nothing until used).
#[derive(Debug)]
struct Pattern {
    /// As the schema writes it, which is how errors show it.
    source: String,
    compiled: OnceLock<Result<Regex, String>>,
}

impl Pattern {
    fn regex(&self) -> Result<&Regex, &str> {
        self.compiled.get_or_init(|| Regex::new(&rust_pattern(&self.source)).map_err(|e| e.to_string())).as_ref().map_err(String::as_str)
    }
}

/// A Go (RE2) pattern in the `regex` crate's syntax. Both are RE2 dialects; where they differ
/// is what the Perl classes mean: Go's `\d`, `\w`, `\s` are ASCII, the crate's Unicode, so
/// they are written out as Go means them.
fn rust_pattern(go: &str) -> String {
    let mut out = String::with_capacity(go.len());
    let mut chars = go.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("[0-9]"),
            Some('D') => out.push_str("[^0-9]"),
            Some('w') => out.push_str("[0-9A-Za-z_]"),
            Some('W') => out.push_str("[^0-9A-Za-z_]"),
            Some('s') => out.push_str(r"[\t\n\x0C\r ]"),
            Some('S') => out.push_str(r"[^\t\n\x0C\r ]"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

impl Node {
    fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(Additional::Schema(schema)) => Some(schema),
            _ => None,
        }
    }

    fn type_names(&self) -> &[&'static str] {
        &self.types
    }

    /// An array whose items are keyed by `x-kubernetes-list-map-keys`.
    fn is_map_list(&self) -> bool {
        self.types == ["array"] && self.list_type.as_deref() == Some("map") && !self.list_map_keys.is_empty()
    }

    /// The schema of the field `name` of an object of this node, if any describes it.
    fn field(&self, name: &str) -> Option<&Node> {
        self.properties.get(name).or_else(|| self.additional_schema())
    }

    /// The structural children (the nodes pruning, defaulting and the walks below descend to).
    fn structural_children(&self) -> impl Iterator<Item = &Node> {
        self.properties.values().chain(self.additional_schema()).chain(self.items.as_deref())
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a schema.

/// The JSON types `type` may name.
const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// What `NewStructural` refuses (and upstream's definition validation before it).
const UNSUPPORTED: [&str; 7] = ["id", "$schema", "$ref", "patternProperties", "dependencies", "additionalItems", "definitions"];

/// The keywords of one schema object, read with their path for errors.
struct Keywords<'a> {
    fields: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Keywords<'a> {
    fn at(&self, keyword: &str) -> String {
        format!("{}.{keyword}", self.path)
    }

    fn forbidden(&self, keyword: &str, detail: &str) -> SchemaError {
        SchemaError(FieldError::forbidden(self.at(keyword), detail))
    }

    fn get<T>(&self, keyword: &str, what: &str, read: impl Fn(&'a Value) -> Option<T>) -> Result<Option<T>, SchemaError> {
        match self.fields.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => read(value)
                .map(Some)
                .ok_or_else(|| SchemaError(FieldError::invalid(self.at(keyword), bad_value(value), format!("must be {what}")))),
        }
    }

    fn string(&self, keyword: &str) -> Result<Option<&'a str>, SchemaError> {
        self.get(keyword, "a string", Value::as_str)
    }

    fn flag(&self, keyword: &str) -> Result<bool, SchemaError> {
        Ok(self.get(keyword, "a boolean", Value::as_bool)?.unwrap_or(false))
    }

    fn number(&self, keyword: &str) -> Result<Option<f64>, SchemaError> {
        self.get(keyword, "a number", Value::as_f64)
    }

    fn integer(&self, keyword: &str) -> Result<Option<i64>, SchemaError> {
        self.get(keyword, "an integer", Value::as_i64)
    }

    fn strings(&self, keyword: &str) -> Result<Vec<String>, SchemaError> {
        let read = |v: &Value| v.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>();
        Ok(self.get(keyword, "an array of strings", read)?.unwrap_or_default())
    }

    fn schemas(&self, keyword: &str) -> Result<Vec<Node>, SchemaError> {
        let Some(items) = self.get(keyword, "an array of schemas", Value::as_array)? else { return Ok(Vec::new()) };
        items.iter().enumerate().map(|(i, item)| Node::parse(item, &format!("{}.{keyword}[{i}]", self.path))).collect()
    }

    fn schema(&self, keyword: &str) -> Result<Option<Box<Node>>, SchemaError> {
        match self.fields.get(keyword) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(_)) => Err(self.forbidden(keyword, "must be a schema, not an array of schemas")),
            Some(value) => Ok(Some(Box::new(Node::parse(value, &format!("{}.{keyword}", self.path))?))),
        }
    }
}

impl Node {
    fn parse(json: &Value, path: &str) -> Result<Node, SchemaError> {
        let fields = json.as_object().ok_or_else(|| SchemaError(FieldError::invalid(path, bad_value(json), "must be a schema object")))?;
        let k = Keywords { fields, path };
        if let Some(unsupported) = UNSUPPORTED.iter().find(|u| fields.contains_key(**u)) {
            return Err(k.forbidden(unsupported, "must not be set in a structural schema"));
        }
        let mut types = Vec::new();
        if let Some(name) = k.string("type")? {
            let known =
                TYPES.iter().find(|t| **t == name).ok_or_else(|| SchemaError(FieldError::not_supported(k.at("type"), name, &TYPES)))?;
            types.push(*known);
        }
        if k.flag("x-kubernetes-int-or-string")? {
            types = vec!["integer", "string"];
        }
        let format = k.string("format")?.unwrap_or_default();
        let kept = match types.as_slice() {
            ["integer"] => matches!(format, "int32" | "int64"),
            ["number"] => matches!(format, "float" | "double"),
            [] | ["string"] | [_, _] => formats::is_supported(format),
            _ => false,
        };
        let properties = match k.get("properties", "an object of schemas", Value::as_object)? {
            None => BTreeMap::new(),
            Some(properties) => properties
                .iter()
                .map(|(name, schema)| Ok((name.clone(), Node::parse(schema, &format!("{path}.properties[{name}]"))?)))
                .collect::<Result<_, SchemaError>>()?,
        };
        let additional_properties = match fields.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(allowed)) => Some(Additional::Allowed(*allowed)),
            Some(schema @ Value::Object(_)) => {
                Some(Additional::Schema(Box::new(Node::parse(schema, &format!("{path}.additionalProperties"))?)))
            }
            Some(other) => {
                return Err(SchemaError(FieldError::invalid(
                    k.at("additionalProperties"),
                    bad_value(other),
                    "must be a schema or a boolean",
                )));
            }
        };
        let mut node = Node {
            types,
            nullable: k.flag("nullable")?,
            format: if kept { format.to_owned() } else { String::new() },
            default: fields.get("default").filter(|d| !d.is_null()).cloned(),
            unpruned_default: None,
            enumeration: k.get("enum", "an array", Value::as_array)?.cloned().unwrap_or_default(),
            maximum: k.number("maximum")?,
            exclusive_maximum: k.flag("exclusiveMaximum")?,
            minimum: k.number("minimum")?,
            exclusive_minimum: k.flag("exclusiveMinimum")?,
            multiple_of: k.number("multipleOf")?,
            max_length: k.integer("maxLength")?,
            min_length: k.integer("minLength")?,
            pattern: k.string("pattern")?.map(|p| Pattern { source: p.to_owned(), compiled: OnceLock::new() }),
            max_items: k.integer("maxItems")?,
            min_items: k.integer("minItems")?,
            unique_items: k.flag("uniqueItems")?,
            max_properties: k.integer("maxProperties")?,
            min_properties: k.integer("minProperties")?,
            required: k.strings("required")?,
            properties,
            additional_properties,
            items: k.schema("items")?,
            all_of: k.schemas("allOf")?,
            any_of: k.schemas("anyOf")?,
            one_of: k.schemas("oneOf")?,
            not: k.schema("not")?,
            preserve_unknown_fields: k.flag("x-kubernetes-preserve-unknown-fields")?,
            embedded_resource: k.flag("x-kubernetes-embedded-resource")?,
            list_type: k.string("x-kubernetes-list-type")?.map(str::to_owned),
            list_map_keys: k.strings("x-kubernetes-list-map-keys")?,
            has_embedded: false,
            has_keyed_lists: false,
            rules: Vec::new(),
            has_rules: false,
        };
        if let Some(rules) = fields.get("x-kubernetes-validations").filter(|r| !r.is_null()) {
            node.rules = cel::Rule::compile_all(rules, &node, path).map_err(SchemaError)?;
        }
        node.has_rules =
            !node.rules.is_empty() || node.structural_children().any(|c| c.has_rules) || node.all_of.iter().any(|c| c.has_rules);
        node.has_embedded = node.embedded_resource || node.structural_children().any(|c| c.has_embedded);
        node.has_keyed_lists =
            matches!(node.list_type.as_deref(), Some("set" | "map")) || node.structural_children().any(|c| c.has_keyed_lists);
        Ok(node)
    }

    /// `PruneDefaults`: every default cleared of what its own schema would prune, so that a
    /// default never brings back what pruning removes.
    fn prune_defaults(&mut self) {
        if let Some(mut default) = self.default.take() {
            let written = default.clone();
            Pruner::untracked().prune(&mut default, Some(self), false);
            if default != written {
                self.unpruned_default = Some(written);
            }
            self.default = Some(default);
        }
        for property in self.properties.values_mut() {
            property.prune_defaults();
        }
        if let Some(Additional::Schema(extra)) = &mut self.additional_properties {
            extra.prune_defaults();
        }
        if let Some(items) = &mut self.items {
            items.prune_defaults();
        }
    }
}

impl Schema {
    /// Reads a version's `schema.openAPIV3Schema`. `preserve_unknown_fields` is the
    /// definition's `spec.preserveUnknownFields` (pruning off).
    pub fn parse(schema: &Value, preserve_unknown_fields: bool) -> Result<Schema, SchemaError> {
        let mut root = Node::parse(schema, "openAPIV3Schema")?;
        if let Some(error) = cel::uncorrelatable_old_self(&root, "openAPIV3Schema", None) {
            return Err(SchemaError(error));
        }
        root.prune_defaults();
        Ok(Schema { root, prunes: !preserve_unknown_fields })
    }

    /// Upstream's `ValidateDefaults` for a definition being written: every `default` (outside
    /// the `apiVersion`, `kind` and `metadata` of the resource and of embedded resources) must
    /// be what pruning leaves of it when `require_pruned` ("must not have unknown fields"),
    /// then must pass its own schema's validation and, if it does, its CEL rules. Errors are
    /// at `<path>.default`, `path` being where the schema sits
    /// (`spec.validation.openAPIV3Schema`). A default of a resource's `apiVersion`, `kind` or
    /// `metadata` (at the root or in an embedded resource) must make valid metadata; an
    /// embedded resource's default must be a valid resource. Not yet as upstream: each
    /// default's rules get their own cost budget (upstream's defaults share one).
    pub fn default_errors(&self, path: &str, require_pruned: bool) -> Vec<FieldError> {
        let mut errs = Vec::new();
        default_errors(&self.root, path, require_pruned, false, true, &[], &mut errs);
        errs
    }

    /// Upstream's static cost checks of the schema's CEL rules at definition write (each
    /// rule's worst case times the most times its node can appear, and their total), at
    /// `path` (`spec.validation.openAPIV3Schema`); each rule's own only if `per_expression`.
    pub fn cost_errors(&self, path: &str, per_expression: bool) -> Vec<FieldError> {
        cel::cost_errors(&self.root, path, per_expression)
    }

    /// Whether a default somewhere is not what pruning leaves of it (upstream's
    /// `requirePrunedDefaults` is off for a definition whose stored form has one).
    pub fn has_unpruned_defaults(&self) -> bool {
        fn walk(node: &Node) -> bool {
            node.unpruned_default.is_some() || node.items.as_deref().is_some_and(walk) || node.properties.values().any(walk)
        }
        walk(&self.root)
    }

    /// What upstream's decoder does to an object of this version (see the module's doc):
    /// pruning, metadata coercion, defaults. Answers the paths of the unknown fields it
    /// dropped: the root's metadata's first, then the pruned ones, then those of embedded
    /// resources' metadata, each group sorted, as upstream lists them.
    pub fn normalize(&self, object: &mut Value) -> Vec<String> {
        let unknown = self.prune(object);
        apply_defaults(object, &self.root);
        unknown
    }

    /// [`Schema::normalize`] without the defaults: what converting an object to this version
    /// does to it.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        if let Some(metadata) = object.get_mut("metadata") {
            coerce_metadata(metadata, "metadata", &mut unknown);
        }
        if self.prunes {
            let mut pruner = Pruner { track: true, ..Pruner::default() };
            pruner.prune(object, Some(&self.root), true);
            pruner.unknown.sort();
            unknown.extend(pruner.unknown);
            drop_nulls(object, Some(&self.root));
        }
        let mut embedded = Vec::new();
        coerce_embedded(object, &self.root, "", &mut embedded);
        embedded.sort();
        unknown.extend(embedded);
        unknown
    }

    /// The errors of a new object (upstream's `customResourceStrategy.Validate` beyond
    /// metadata): the schema, embedded resources, keyed lists.
    pub fn validate(&self, object: &Value) -> Vec<FieldError> {
        let mut errs = validation::validate(&self.root, object, None, None);
        errs.extend(self.embedded_errors(object));
        errs.extend(self.keyed_list_errors(object));
        self.rule_errors(object, None, &mut errs);
        errs
    }

    /// The CEL rules' errors, appended to `errs` (what the schema's own checks found), unless
    /// one of those blocks them (upstream's `hasBlockingErr`).
    fn rule_errors(&self, object: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
        use crate::status::FieldErrorType as T;
        if !self.root.has_rules {
            return;
        }
        if errs.iter().any(|e| matches!(e.error_type, T::NotSupported | T::Required | T::TooLong | T::TooMany | T::TypeInvalid)) {
            errs.push(FieldError::new(
                T::Invalid,
                "<nil>",
                crate::status::BadValue::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
            return;
        }
        errs.extend(cel::validate(&self.root, object, old.map(|old| cel::Old::of(object, Some(old))), "", true));
    }

    /// The errors of `new` replacing `old`: as [`Schema::validate`], but what did not change
    /// is not held to the schema (ratcheting), and keyed lists are checked only when the old
    /// object's were fine.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validation::validate(&self.root, new, Some(Correlation { old, schema: &self.root }), None);
        errs.extend(self.embedded_errors(new));
        if self.keyed_list_errors(old).is_empty() {
            errs.extend(self.keyed_list_errors(new));
        }
        self.rule_errors(new, Some(old), &mut errs);
        errs
    }

    /// The errors of a write through the status subresource: the status against the schema's
    /// `status` (its paths as that validator sees them, under `status`), ratcheting; keyed
    /// lists anywhere, unless the old object already broke them.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let (Some(status), Some(schema)) = (new.get("status"), self.root.properties.get("status")) {
            let correlation = old.get("status").map(|old| Correlation { old, schema });
            errs.extend(validation::validate(schema, status, correlation, Some("status")));
        }
        let list_errors = self.keyed_list_errors(new);
        if !list_errors.is_empty() && self.keyed_list_errors(old).is_empty() {
            errs.extend(list_errors);
        }
        self.rule_errors(new, Some(old), &mut errs);
        errs
    }

    /// `objectmeta.Validate` below the root.
    fn embedded_errors(&self, object: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        embedded_errors(object, &self.root, "", &mut errs);
        errs
    }

    /// `listtype.ValidateListSetsAndMaps` from the root.
    fn keyed_list_errors(&self, object: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Value::Object(fields) = object {
            keyed_lists_in_object(fields, &self.root, "", &mut errs);
        }
        errs
    }
}

// ---------------------------------------------------------------------------------------------
// Pruning, nulls, metadata, defaults.

/// The fields a resource root or embedded resource keeps whatever its schema says.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `ObjectMeta`: any other in an object's metadata is unknown.
const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// `pruning.Prune`, recording the paths it prunes when `track` is on (`spec.foo`,
/// `spec.items[0].bar`).
#[derive(Default)]
struct Pruner {
    track: bool,
    path: String,
    unknown: Vec<String>,
}

impl Pruner {
    fn untracked() -> Pruner {
        Pruner::default()
    }

    fn record(&mut self, field: &str) {
        if self.track {
            self.unknown.push(if self.path.is_empty() { field.to_owned() } else { format!("{}.{field}", self.path) });
        }
    }

    /// Enters a field (or index); answers where to come back to.
    fn enter(&mut self, field: &str) -> usize {
        let back = self.path.len();
        if self.track {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(field);
        }
        back
    }

    fn enter_index(&mut self, i: usize) -> usize {
        let back = self.path.len();
        if self.track {
            let _ = write!(self.path, "[{i}]");
        }
        back
    }

    /// Prunes `value` by `schema` (none: every field goes). `root` keeps the resource's
    /// `apiVersion`, `kind` and `metadata`, as an embedded resource does.
    fn prune(&mut self, value: &mut Value, schema: Option<&Node>, root: bool) {
        if let Some(schema) = schema.filter(|s| s.preserve_unknown_fields) {
            self.skip(value, schema, root);
            return;
        }
        match value {
            Value::Object(fields) => {
                let Some(schema) = schema else {
                    for field in fields.keys() {
                        self.record(field);
                    }
                    fields.clear();
                    return;
                };
                let embedded = root || schema.embedded_resource;
                fields.retain(|field, value| {
                    if embedded && META_FIELDS.contains(&field.as_str()) {
                        return true;
                    }
                    let described = match (schema.properties.get(field), &schema.additional_properties) {
                        (Some(property), _) => Some(Some(property)),
                        (None, Some(Additional::Schema(extra))) => Some(Some(&**extra)),
                        // `additionalProperties: true|false` keeps the field, and prunes
                        // everything inside it.
                        (None, Some(Additional::Allowed(_))) => Some(None),
                        (None, None) => None,
                    };
                    match described {
                        Some(inner) => {
                            let back = self.enter(field);
                            self.prune(value, inner, false);
                            self.path.truncate(back);
                            true
                        }
                        None => {
                            // A stray apiVersion/kind/metadata at the very top is dropped
                            // silently (only a default's pruning meets one).
                            if !META_FIELDS.contains(&field.as_str()) || !self.path.is_empty() {
                                self.record(field);
                            }
                            false
                        }
                    }
                });
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                for (i, item) in items.iter_mut().enumerate() {
                    let back = self.enter_index(i);
                    self.prune(item, item_schema, false);
                    self.path.truncate(back);
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay; described ones are
    /// pruned by their own schema again.
    fn skip(&mut self, value: &mut Value, schema: &Node, root: bool) {
        let embedded = root || schema.embedded_resource;
        match value {
            Value::Object(fields) => {
                for (field, value) in fields.iter_mut() {
                    if embedded && META_FIELDS.contains(&field.as_str()) {
                        continue;
                    }
                    let inner = match (schema.properties.get(field), &schema.additional_properties) {
                        (Some(property), _) => Some(property),
                        (None, Some(Additional::Schema(extra))) => Some(&**extra),
                        (None, Some(Additional::Allowed(_))) => None,
                        (None, None) => continue,
                    };
                    let back = self.enter(field);
                    self.prune(value, inner, false);
                    self.path.truncate(back);
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref() {
                    for (i, item) in items.iter_mut().enumerate() {
                        let back = self.enter_index(i);
                        self.skip(item, item_schema, false);
                        self.path.truncate(back);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `PruneNonNullableNullsWithoutDefaults`: a null where the schema allows none and has no
/// default to put there goes (as a Go struct would read it: absent).
fn drop_nulls(value: &mut Value, schema: Option<&Node>) {
    match value {
        Value::Object(fields) => fields.retain(|field, value| {
            let described = schema.and_then(|s| s.field(field));
            if value.is_null() && described.is_some_and(|d| !d.nullable && d.default.is_none()) {
                return false;
            }
            drop_nulls(value, described);
            true
        }),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            for item in items {
                drop_nulls(item, item_schema);
            }
        }
        _ => {}
    }
}

/// An object's metadata as a round trip through `ObjectMeta` leaves it: fields it does not
/// have dropped (their paths recorded, `<path>.<field>`), nulls dropped.
fn coerce_metadata(metadata: &mut Value, path: &str, unknown: &mut Vec<String>) {
    let Value::Object(fields) = metadata else { return };
    fields.retain(|field, value| {
        if !OBJECT_META_FIELDS.contains(&field.as_str()) {
            unknown.push(format!("{path}.{field}"));
            return false;
        }
        !value.is_null()
    });
}

/// `objectmeta.Coerce` below the root: the metadata of every embedded resource coerced.
/// Paths are `field.Path`s (`spec.templates[name].metadata.foo`).
fn coerce_embedded(value: &mut Value, schema: &Node, path: &str, unknown: &mut Vec<String>) {
    if !schema.has_embedded {
        return;
    }
    match value {
        Value::Object(fields) => {
            if schema.embedded_resource
                && let Some(metadata) = fields.get_mut("metadata")
            {
                coerce_metadata(metadata, &child(path, "metadata"), unknown);
            }
            for (field, value) in fields.iter_mut() {
                if let Some(property) = schema.properties.get(field) {
                    coerce_embedded(value, property, &child(path, field), unknown);
                } else if let Some(extra) = schema.additional_schema() {
                    coerce_embedded(value, extra, &key(path, field), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter_mut().enumerate() {
                    coerce_embedded(item, item_schema, &index(path, i), unknown);
                }
            }
        }
        _ => {}
    }
}

/// A step from a resource (the schema's root or an embedded resource) down to a default.
#[derive(Clone)]
enum Step {
    Field(String),
    Item,
}

/// [`Schema::default_errors`] at `node` (at `path`); `inside_meta` below the `apiVersion`,
/// `kind` or `metadata` of a resource, `resource` at a resource's root (the schema's root, as
/// upstream treats it as an embedded resource, or an embedded resource), `steps` the way from
/// that resource to `node`.
fn default_errors(
    node: &Node,
    path: &str,
    require_pruned: bool,
    inside_meta: bool,
    resource: bool,
    steps: &[Step],
    errs: &mut Vec<FieldError>,
) {
    let resource = resource || node.embedded_resource;
    let inside_meta = inside_meta && !node.embedded_resource;
    let steps = if node.embedded_resource { &[][..] } else { steps };
    if let Some(pruned) = &node.default {
        let at = format!("{path}.default");
        let written = node.unpruned_default.as_ref().unwrap_or(pruned);
        let found = if inside_meta {
            // Part of a resource's metadata: the resource it would make must be valid.
            match surrounding_meta_problems(written, steps) {
                Some(problems) => {
                    vec![FieldError::invalid(at.clone(), bad_value(written), format!("must result in valid metadata: {problems}"))]
                }
                None => Vec::new(),
            }
        } else {
            if require_pruned && node.unpruned_default.is_some() {
                errs.push(FieldError::invalid(at.clone(), bad_value(written), "must not have unknown fields"));
            }
            // The default's own embedded resources (itself, if it is one): coerced, then
            // validated.
            match embedded_coerce_error(written, node, &at) {
                Some(error) => vec![error],
                None => {
                    let mut found = Vec::new();
                    embedded_errors(written, node, &at, &mut found);
                    found
                }
            }
        };
        let found = if found.is_empty() { validation::validate(node, written, None, Some(&at)) } else { found };
        if !found.is_empty() {
            errs.extend(found);
        } else if node.has_rules {
            // As upstream: once with the default as its own old value (transition rules run,
            // the others ratchet), then, if that passed, as a create.
            let transition = cel::validate(node, written, Some(cel::Old::of(written, Some(written))), &at, node.embedded_resource);
            if transition.is_empty() {
                errs.extend(cel::validate(node, written, None, &at, node.embedded_resource));
            } else {
                errs.extend(transition);
            }
        }
    }
    let below = |step: Step| steps.iter().cloned().chain([step]).collect::<Vec<_>>();
    if let Some(items) = &node.items {
        default_errors(items, &format!("{path}.items"), require_pruned, inside_meta, false, &below(Step::Item), errs);
    }
    for (name, property) in &node.properties {
        let meta = inside_meta || resource && META_FIELDS.contains(&name.as_str());
        let steps = below(Step::Field(name.clone()));
        default_errors(property, &format!("{path}.properties[{name}]"), require_pruned, meta, false, &steps, errs);
    }
}

/// The first field of an embedded resource in `value` that upstream's `objectmeta.Coerce`
/// cannot make typed: an `apiVersion` or `kind` not a string, a `metadata` not an
/// `ObjectMeta`.
fn embedded_coerce_error(value: &Value, schema: &Node, path: &str) -> Option<FieldError> {
    if !schema.has_embedded {
        return None;
    }
    match value {
        Value::Object(fields) => {
            if schema.embedded_resource {
                for name in ["apiVersion", "kind"] {
                    if let Some(value) = fields.get(name).filter(|v| !v.is_string()) {
                        return Some(FieldError::invalid(child(path, name), bad_value(value), "must be a string"));
                    }
                }
                if let Some(metadata) = fields.get("metadata")
                    && let Some(error) = object_meta_error(metadata)
                {
                    return Some(FieldError::invalid(child(path, "metadata"), bad_value(metadata), error));
                }
            }
            fields.iter().find_map(|(field, value)| match schema.properties.get(field) {
                Some(property) => embedded_coerce_error(value, property, &child(path, field)),
                None => schema.additional_schema().and_then(|extra| embedded_coerce_error(value, extra, &key(path, field))),
            })
        }
        Value::Array(items) => {
            let item_schema = schema.items.as_deref()?;
            items.iter().enumerate().find_map(|(i, item)| embedded_coerce_error(item, item_schema, &index(path, i)))
        }
        _ => None,
    }
}

/// What is wrong with the resource a default of its `apiVersion`, `kind` or `metadata` (at
/// `steps` from it) makes, as upstream's `ValidateDefaults` checks it: the default put in an
/// otherwise empty object of kind `Validation`, its type and object metadata coerced, then
/// validated; `None` when it is valid.
fn surrounding_meta_problems(default: &Value, steps: &[Step]) -> Option<String> {
    let mut resource = default.clone();
    for step in steps.iter().rev() {
        resource = match step {
            Step::Field(name) => json!({ name.as_str(): resource }),
            Step::Item => Value::Array(vec![resource]),
        };
    }
    let Value::Object(mut fields) = resource else { return Some("object root default value must be of object type".into()) };
    fields.entry("apiVersion").or_insert_with(|| json!("validation/v1"));
    fields.entry("kind").or_insert_with(|| json!("Validation"));
    let resource = Node { embedded_resource: true, has_embedded: true, ..Node::default() };
    let fields = Value::Object(fields);
    if let Some(error) = embedded_coerce_error(&fields, &resource, "") {
        return Some(error.to_string());
    }
    let Value::Object(fields) = fields else { return None };
    let mut problems = Vec::new();
    embedded_resource_errors(&fields, "", &mut problems);
    crate::status::aggregate(problems.iter().map(ToString::to_string))
}

/// `structuraldefaulting.Default`: each property's default where the field is missing (or
/// null without being nullable), recursively, in objects, additionalProperties and arrays.
fn apply_defaults(value: &mut Value, schema: &Node) {
    let fill = |value: &mut Value, schema: &Node| {
        if value.is_null() && !schema.nullable {
            *value = schema.default.clone().unwrap_or(Value::Null);
        }
    };
    match value {
        Value::Object(fields) => {
            for (name, property) in &schema.properties {
                if let Some(default) = &property.default {
                    match fields.get_mut(name) {
                        None => {
                            fields.insert(name.clone(), default.clone());
                        }
                        Some(present) => fill(present, property),
                    }
                }
            }
            for (name, value) in fields.iter_mut() {
                if let Some(property) = schema.properties.get(name) {
                    apply_defaults(value, property);
                } else if let Some(extra) = schema.additional_schema() {
                    fill(value, extra);
                    apply_defaults(value, extra);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in items {
                    fill(item, item_schema);
                    apply_defaults(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Embedded resources and keyed lists.

/// `objectmeta.Validate` below the root: every embedded resource's `apiVersion`, `kind` and
/// `metadata`.
fn embedded_errors(value: &Value, schema: &Node, path: &str, errs: &mut Vec<FieldError>) {
    if !schema.has_embedded {
        return;
    }
    match value {
        Value::Object(fields) => {
            if schema.embedded_resource {
                embedded_resource_errors(fields, path, errs);
            }
            for (field, value) in fields {
                if let Some(property) = schema.properties.get(field) {
                    embedded_errors(value, property, &child(path, field), errs);
                } else if let Some(extra) = schema.additional_schema() {
                    embedded_errors(value, extra, &key(path, field), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    embedded_errors(item, item_schema, &index(path, i), errs);
                }
            }
        }
        _ => {}
    }
}

/// How an embedded resource's metadata names are checked: `ValidatePathSegmentName`.
struct EmbeddedNames;

impl Strategy for EmbeddedNames {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
}

/// `validateEmbeddedResource`: `apiVersion` and `kind` present and well-formed, `metadata`
/// an ObjectMeta with valid names, labels and annotations (a missing name is fine).
fn embedded_resource_errors(fields: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    for required in ["apiVersion", "kind"] {
        if !fields.contains_key(required) {
            errs.push(FieldError::required(child(path, required), ""));
        }
    }
    if let Some(api_version) = fields.get("apiVersion") {
        let field = child(path, "apiVersion");
        match api_version.as_str() {
            None => errs.push(FieldError::invalid(field, bad_value(api_version), "must be a string")),
            Some("") => errs.push(FieldError::invalid(field, "", "must not be empty")),
            // `schema.ParseGroupVersion`: at most one `/`.
            Some(text) if text != "/" && text.matches('/').count() > 1 => {
                errs.push(FieldError::invalid(field, text, format!("unexpected GroupVersion string: {text}")));
            }
            Some(_) => {}
        }
    }
    if let Some(kind) = fields.get("kind") {
        let field = child(path, "kind");
        match kind.as_str() {
            None => errs.push(FieldError::invalid(field, bad_value(kind), "must be a string")),
            Some("") => errs.push(FieldError::invalid(field, "", "must not be empty")),
            Some(text) => {
                let problems = crate::selectors::dns1035_label_errors(&text.to_lowercase());
                if !problems.is_empty() {
                    let detail = format!("may have mixed case, but should otherwise match: {}", problems.join(","));
                    errs.push(FieldError::invalid(field, text, detail));
                }
            }
        }
    }
    if let Some(metadata) = fields.get("metadata") {
        let field = child(path, "metadata");
        match object_meta_error(metadata) {
            Some(error) => errs.push(FieldError::invalid(field, bad_value(metadata), error)),
            None => embedded_metadata_errors(metadata, path, errs),
        }
    }
}

/// What decoding `metadata` into an `ObjectMeta` would say of a field of the wrong type, in
/// Go's words (`json: cannot unmarshal number into Go struct field ObjectMeta.name of type
/// string`); `None` when it decodes. Only the field types are checked.
fn object_meta_error(metadata: &Value) -> Option<String> {
    fn json_type(value: &Value) -> String {
        match value {
            Value::Null => "null".into(),
            Value::Bool(_) => "bool".into(),
            Value::Number(n) if n.is_i64() || n.is_u64() => "number".into(),
            Value::Number(n) => format!("number {n}"),
            Value::String(_) => "string".into(),
            Value::Array(_) => "array".into(),
            Value::Object(_) => "object".into(),
        }
    }
    let Some(fields) = metadata.as_object() else {
        return Some(format!("json: cannot unmarshal {} into Go value of type v1.ObjectMeta", json_type(metadata)));
    };
    let wrong = |field: &str, value: &Value, go_type: &str| {
        Some(format!("json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type {go_type}", json_type(value)))
    };
    for (field, value) in fields.iter().filter(|(_, v)| !v.is_null()) {
        let strings = |value: &Value| value.as_object().and_then(|m| m.values().find(|v| !v.is_string()).cloned());
        match field.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" | "creationTimestamp" | "deletionTimestamp"
                if !value.is_string() =>
            {
                return wrong(field, value, "string");
            }
            "generation" | "deletionGracePeriodSeconds" if value.as_i64().is_none() => return wrong(field, value, "int64"),
            "labels" | "annotations" if !value.is_object() => return wrong(field, value, "map[string]string"),
            "labels" | "annotations" => {
                if let Some(bad) = strings(value) {
                    return wrong(field, &bad, "string");
                }
            }
            "finalizers" => match value.as_array() {
                None => return wrong(field, value, "[]string"),
                Some(items) => {
                    if let Some(bad) = items.iter().find(|v| !v.is_string()) {
                        return wrong(field, bad, "string");
                    }
                }
            },
            "ownerReferences" if !value.is_array() => return wrong(field, value, "[]v1.OwnerReference"),
            "managedFields" if !value.is_array() => return wrong(field, value, "[]v1.ManagedFieldsEntry"),
            _ => {}
        }
    }
    None
}

/// `ValidateObjectMeta` of an embedded resource's metadata: names as path segments (a
/// missing name stands for a valid one), the namespace a DNS label, labels and annotations.
fn embedded_metadata_errors(metadata: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let mut metadata = metadata.clone();
    if metadata["name"].as_str().is_none_or(str::is_empty) {
        metadata["name"] = json!("fakename");
    }
    let at = |field: &str| child(path, field);
    if let Some(prefix) = metadata["generateName"].as_str() {
        for bad in ["/", "%"].iter().filter(|bad| prefix.contains(**bad)) {
            errs.push(FieldError::invalid(at("metadata.generateName"), prefix, format!("may not contain '{bad}'")));
        }
    }
    if let Some(namespace) = metadata["namespace"].as_str().filter(|ns| !ns.is_empty()) {
        for problem in crate::selectors::dns1123_label_errors(namespace) {
            errs.push(FieldError::invalid(at("metadata.namespace"), namespace, problem));
        }
    }
    for mut e in validate_object_meta(&EmbeddedNames, &json!({ "metadata": metadata })) {
        e.field = at(&e.field);
        errs.push(e);
    }
}

/// `ValidateListSetsAndMaps` over an object's fields.
fn keyed_lists_in_object(fields: &Map<String, Value>, schema: &Node, path: &str, errs: &mut Vec<FieldError>) {
    if !schema.has_keyed_lists {
        return;
    }
    if let Some(extra) = schema.additional_schema() {
        for (field, value) in fields {
            keyed_lists_in(value, extra, &key(path, field), errs);
        }
    }
    for (field, value) in fields {
        if let Some(property) = schema.properties.get(field) {
            keyed_lists_in(value, property, &child(path, field), errs);
        }
    }
}

fn keyed_lists_in(value: &Value, schema: &Node, path: &str, errs: &mut Vec<FieldError>) {
    if !schema.has_keyed_lists {
        return;
    }
    match value {
        Value::Object(fields) => keyed_lists_in_object(fields, schema, path, errs),
        Value::Array(items) => {
            match schema.list_type.as_deref() {
                Some("set") => {
                    for i in repeated(items.iter().map(Some)) {
                        errs.push(FieldError::duplicate(index(path, i), bad_value(&items[i])));
                    }
                }
                Some("map") => errs.extend(map_list_errors(items, &schema.list_map_keys, path)),
                _ => {}
            }
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    keyed_lists_in(item, item_schema, &index(path, i), errs);
                }
            }
        }
        _ => {}
    }
}

/// The index of the second appearance of each value that appears more than once, in order
/// (`validateListSet`): scalars equal by Go type and value, objects and arrays by their
/// JSON; `None` is one more value (an item without the key).
fn repeated<'a>(values: impl Iterator<Item = Option<&'a Value>>) -> Vec<usize> {
    let identity = |value: Option<&Value>| -> String {
        match value {
            None => "unspecified".into(),
            Some(Value::Null) => "null".into(),
            Some(Value::Bool(b)) => format!("bool:{b}"),
            Some(Value::String(s)) => format!("string:{s}"),
            Some(Value::Number(n)) if n.is_i64() => format!("int:{n}"),
            Some(Value::Number(n)) => format!("float:{}", n.as_f64().unwrap_or_default().to_bits()),
            Some(compound) => format!("json:{}", go_json(compound)),
        }
    };
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, value) in values.enumerate() {
        let times = seen.entry(identity(value)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// `validateListMap`: items must be objects (or null); no two with the same keys, the
/// duplicate shown by its keys (`{"name":"a"}`; `{}` when it has none).
fn map_list_errors(items: &[Value], keys: &[String], path: &str) -> Vec<FieldError> {
    if let Some((i, item)) = items.iter().enumerate().find(|(_, item)| !item.is_null() && !item.is_object()) {
        return vec![FieldError::invalid(index(path, i), bad_value(item), "must be an object for an array of list-type map")];
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    if let [only] = keys {
        let values: Vec<Option<&Value>> = items.iter().map(|item| item.get(only)).collect();
        return repeated(values.iter().copied())
            .into_iter()
            .map(|i| {
                let shown = match values[i] {
                    None => json!({}),
                    Some(value) => json!({ only.as_str(): value }),
                };
                FieldError::duplicate(index(path, i), BadValue::Raw(go_json(&shown)))
            })
            .collect();
    }
    let composite: Vec<Value> =
        items.iter().map(|item| Value::Object(keys.iter().filter_map(|k| Some((k.clone(), item.get(k)?.clone()))).collect())).collect();
    repeated(composite.iter().map(Some))
        .into_iter()
        .map(|i| FieldError::duplicate(index(path, i), BadValue::Raw(go_json(&composite[i]))))
        .collect()
}

#[cfg(test)]
mod tests;
