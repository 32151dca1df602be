//! Whether a definition's schema is structural (apiextensions-apiserver's
//! `schema.ValidateStructural`), with upstream's messages: every specified field and array item
//! has a type (unless `x-kubernetes-int-or-string` or `-preserve-unknown-fields` say what it
//! holds), the root is an object whose `metadata` says nothing but `name`/`generateName`, the
//! extensions do not contradict each other, and the value validations (`allOf`, `anyOf`,
//! `oneOf`, `not`) only constrain values: they name no type, default, title, description,
//! nullability or extension, and every field or item they mention is also specified outside
//! them. Works on the definition's JSON (`JSONSchemaProps`), so it can report what
//! [`super::Schema::parse`] would not read.

use serde_json::{Map, Value};

use crate::registry::validation::{child, index, key};
use crate::status::FieldError;

/// Where a node sits, which decides the message for a missing type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural-schema violations of `schema` (a version's `openAPIV3Schema`) at `path`,
/// sorted by their text as upstream sorts them.
pub fn structural_errors(schema: &Value, path: &str) -> Vec<FieldError> {
    let Some(node) = schema.as_object() else { return Vec::new() };
    let mut errs = Vec::new();
    invariants(node, Level::Root, path, &mut errs);
    completeness_of(node, Some(node), path, path, &mut errs);
    errs.sort_by_cached_key(ToString::to_string);
    errs
}

fn flag(node: &Map<String, Value>, name: &str) -> bool {
    node.get(name) == Some(&Value::Bool(true))
}

fn text<'a>(node: &'a Map<String, Value>, name: &str) -> &'a str {
    node.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn properties(node: &Map<String, Value>) -> impl Iterator<Item = (&String, &Map<String, Value>)> {
    node.get("properties").and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| Some((k, v.as_object()?)))
}

fn schemas<'a>(node: &'a Map<String, Value>, name: &str) -> impl Iterator<Item = (usize, &'a Map<String, Value>)> {
    node.get(name).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object).enumerate()
}

/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string pattern upstream allows
/// where it would otherwise forbid a type in a value validation.
fn is_int_or_string_any_of(node: &Map<String, Value>) -> bool {
    let Some(Value::Array(any_of)) = node.get("anyOf") else { return false };
    let only_type = |clause: &Value, t: &str| clause.as_object().is_some_and(|c| c.len() == 1 && c.get("type") == Some(&Value::from(t)));
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// `validateStructuralInvariants`: a node of the structure (not of a value validation).
fn invariants(node: &Map<String, Value>, level: Level, path: &str, errs: &mut Vec<FieldError>) {
    let node_type = text(node, "type");
    let items = node.get("items").and_then(Value::as_object);
    if node_type == "array" && items.is_none() {
        errs.push(FieldError::required(child(path, "items"), "must be specified"));
    }
    if let Some(items) = items {
        invariants(items, Level::Item, &child(path, "items"), errs);
    }
    for (name, field) in properties(node) {
        invariants(field, Level::Field, &key(&child(path, "properties"), name), errs);
    }
    if let Some(additional) = node.get("additionalProperties") {
        if level == Level::Root {
            errs.push(FieldError::forbidden(child(path, "additionalProperties"), "must not be used at the root"));
        }
        if let Some(additional) = additional.as_object() {
            invariants(additional, Level::Field, &child(path, "additionalProperties"), errs);
        }
    }
    let (int_or_string, preserve, embedded) = (
        flag(node, "x-kubernetes-int-or-string"),
        flag(node, "x-kubernetes-preserve-unknown-fields"),
        flag(node, "x-kubernetes-embedded-resource"),
    );
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    value_validation(node, is_int_or_string_any_of(node), first_all_of_is_int_or_string(node), path, errs);

    let type_path = child(path, "type");
    if embedded && node_type != "object" {
        if node_type.is_empty() {
            errs.push(FieldError::required(type_path.as_str(), "must be object if x-kubernetes-embedded-resource is true"));
        } else {
            errs.push(FieldError::invalid(type_path.as_str(), node_type, "must be object if x-kubernetes-embedded-resource is true"));
        }
    } else if node_type.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(type_path.as_str(), detail));
    }
    if embedded && node.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(child(path, "additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"));
    }
    if level == Level::Root && !node_type.is_empty() && node_type != "object" {
        errs.push(FieldError::invalid(type_path.as_str(), node_type, "must be object at the root"));
    }
    let check_metadata = level == Level::Root || embedded;
    let properties_path = child(path, "properties");
    for name in ["kind", "apiVersion"] {
        if let Some(field) = node.get("properties").and_then(|p| p.get(name)).and_then(Value::as_object)
            && check_metadata
            && text(field, "type") != "string"
        {
            errs.push(FieldError::invalid(child(&key(&properties_path, name), "type"), text(field, "type"), "must be string"));
        }
    }
    if let Some(metadata) = node.get("properties").and_then(|p| p.get("metadata")).and_then(Value::as_object) {
        metadata_invariants(metadata, check_metadata, level, &key(&properties_path, "metadata"), errs);
    }
    let has_properties = node.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    if embedded && !preserve && !has_properties {
        errs.push(FieldError::required(
            properties_path,
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn first_all_of_is_int_or_string(node: &Map<String, Value>) -> bool {
    schemas(node, "allOf").next().is_some_and(|(_, first)| is_int_or_string_any_of(first))
}

/// `validateStructuralMetadataInvariants`: the root's `metadata` is implied (ObjectMeta); it
/// may only narrow `name` and `generateName`.
fn metadata_invariants(metadata: &Map<String, Value>, check_metadata: bool, level: Level, path: &str, errs: &mut Vec<FieldError>) {
    let metadata_type = text(metadata, "type");
    if check_metadata && metadata_type != "object" {
        errs.push(FieldError::invalid(child(path, "type"), metadata_type, "must be object"));
    }
    if level != Level::Root {
        return;
    }
    let only_names = properties(metadata).all(|(name, _)| name == "name" || name == "generateName");
    let specifies_more = metadata.iter().any(|(name, value)| match name.as_str() {
        "type" | "default" => false,
        "properties" => !only_names,
        _ => !matches!(value, Value::Null | Value::Bool(false)) && value != "",
    });
    if specifies_more {
        errs.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `validateValueValidation`: the value validations of a node, each checked as nested ones.
fn value_validation(node: &Map<String, Value>, skip_any_of: bool, skip_first_all_of_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    if !skip_any_of {
        for (i, clause) in schemas(node, "anyOf") {
            nested(clause, false, &index(&child(path, "anyOf"), i), errs);
        }
    }
    for (i, clause) in schemas(node, "allOf") {
        nested(clause, skip_first_all_of_any_of && i == 0, &index(&child(path, "allOf"), i), errs);
    }
    for (i, clause) in schemas(node, "oneOf") {
        nested(clause, false, &index(&child(path, "oneOf"), i), errs);
    }
    if let Some(not) = node.get("not").and_then(Value::as_object) {
        nested(not, false, &child(path, "not"), errs);
    }
    let pattern = text(node, "pattern");
    if !pattern.is_empty()
        && let Err(e) = regex::Regex::new(&super::rust_pattern(pattern))
    {
        errs.push(FieldError::invalid(child(path, "pattern"), pattern, format!("must be a valid regular expression, but isn't: {e}")));
    }
}

/// `validateNestedValueValidation`: a schema inside `allOf`/`anyOf`/`oneOf`/`not`, which may
/// only constrain values.
fn nested(node: &Map<String, Value>, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    value_validation(node, skip_any_of, false, path, errs);
    if let Some(items) = node.get("items").and_then(Value::as_object) {
        nested(items, false, &child(path, "items"), errs);
    }
    for (name, field) in properties(node) {
        nested(field, false, &key(&child(path, "properties"), name), errs);
    }
    let present = |name: &str| node.get(name).is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)) && v != "");
    let forbidden = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
        ("x-kubernetes-embedded-resource", "must be false to be structural"),
        ("x-kubernetes-int-or-string", "must be false to be structural"),
        ("x-kubernetes-list-map-keys", "must be empty to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
        ("x-kubernetes-map-type", "must be undefined to be structural"),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (name, detail) in forbidden {
        let empty_list = node.get(name).and_then(Value::as_array).is_some_and(Vec::is_empty);
        if present(name) && !empty_list {
            errs.push(FieldError::forbidden(child(path, name), detail));
        }
    }
    if node.get("properties").and_then(|p| p.get("metadata")).is_some() {
        errs.push(FieldError::forbidden(key(&child(path, "properties"), "metadata"), "must not be specified in a nested context"));
    }
}

/// `validateValueValidationCompleteness`: what the value validations of `validation` name
/// must be specified in `structure` too (`None`: not specified at all).
fn completeness_of(
    validation: &Map<String, Value>,
    structure: Option<&Map<String, Value>>,
    structure_path: &str,
    validation_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let clauses = ["not", "allOf", "anyOf", "oneOf"];
    if clauses.iter().all(|c| !validation.contains_key(*c)) {
        return;
    }
    let Some(structure) = structure else {
        errs.push(FieldError::required(structure_path, format!("because it is defined in {validation_path}")));
        return;
    };
    if let Some(not) = validation.get("not").and_then(Value::as_object) {
        nested_completeness(not, structure, structure_path, &child(validation_path, "not"), errs);
    }
    for name in ["allOf", "anyOf", "oneOf"] {
        for (i, clause) in schemas(validation, name) {
            nested_completeness(clause, structure, structure_path, &index(&child(validation_path, name), i), errs);
        }
    }
}

/// `validateNestedValueValidationCompleteness`.
fn nested_completeness(
    validation: &Map<String, Value>,
    structure: &Map<String, Value>,
    structure_path: &str,
    validation_path: &str,
    errs: &mut Vec<FieldError>,
) {
    completeness_of(validation, Some(structure), structure_path, validation_path, errs);
    if let Some(items) = validation.get("items").and_then(Value::as_object) {
        let (structure_items, items_path) = (structure.get("items").and_then(Value::as_object), child(structure_path, "items"));
        match structure_items {
            Some(structure_items) => nested_completeness(items, structure_items, &items_path, &child(validation_path, "items"), errs),
            None => errs.push(FieldError::required(items_path, format!("because it is defined in {}", child(validation_path, "items")))),
        }
    }
    for (name, field) in properties(validation) {
        let field_path = key(&child(structure_path, "properties"), name);
        let validation_field_path = key(&child(validation_path, "properties"), name);
        match structure.get("properties").and_then(|p| p.get(name)).and_then(Value::as_object) {
            Some(structure_field) => nested_completeness(field, structure_field, &field_path, &validation_field_path, errs),
            None => errs.push(FieldError::required(field_path, format!("because it is defined in {validation_field_path}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(schema: Value) -> Vec<String> {
        structural_errors(&schema, "spec.versions[0].schema.openAPIV3Schema").iter().map(ToString::to_string).collect()
    }

    #[test]
    fn structural_schemas_pass() {
        assert!(
            messages(json!({"type": "object", "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                "spec": {"type": "object", "properties": {
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "any": {"x-kubernetes-preserve-unknown-fields": true},
                    "list": {"type": "array", "items": {"type": "string"}},
                    "either": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                }},
            }}))
            .is_empty()
        );
    }

    #[test]
    fn missing_types_and_misplaced_keywords_are_named_as_upstream_names_them() {
        assert_eq!(
            messages(json!({"properties": {
                "spec": {"properties": {"list": {"type": "array"}}},
                "status": {"type": "object", "anyOf": [{"type": "object", "description": "d", "properties": {"x": {"minimum": 1}}}]},
            }})),
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
                "spec.versions[0].schema.openAPIV3Schema.properties[status].anyOf[0].description: Forbidden: must be empty to be structural",
                "spec.versions[0].schema.openAPIV3Schema.properties[status].anyOf[0].type: Forbidden: must be empty to be structural",
                "spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root",
            ]
        );
        // What the root's value validations name must be specified (upstream checks this
        // from the root only).
        assert_eq!(
            messages(json!({"type": "object", "properties": {"spec": {"type": "object"}},
                "anyOf": [{"properties": {"spec": {"properties": {"x": {"minimum": 1}}}}}]})),
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.anyOf[0].properties[spec].properties[x]",
            ]
        );
    }

    #[test]
    fn the_root_is_an_object_with_implicit_metadata() {
        assert_eq!(
            messages(json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {
                "kind": {"type": "integer"},
                "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            }})),
            [
                "spec.versions[0].schema.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root",
                "spec.versions[0].schema.openAPIV3Schema.properties[kind].type: Invalid value: \"integer\": must be string",
                "spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ]
        );
        assert_eq!(
            messages(json!({"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true}})),
            [
                "spec.versions[0].schema.openAPIV3Schema.items.properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"array\": must be object at the root",
            ]
        );
    }
}
