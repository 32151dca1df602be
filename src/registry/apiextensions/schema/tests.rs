//! The schema's behaviour, construct by construct. Expected messages are upstream's: those of
//! apiextensions-apiserver v0.36.0's own tables where it has one (`pkg/apiserver/validation/
//! validation_test.go` `TestValidateCustomResource`, `ratcheting_test.go`,
//! `schema/objectmeta`, `schema/listtype`, `schema/pruning` and `schema/defaulting` tests),
//! the rest composed from kube-openapi's `pkg/validation/errors` formats and apimachinery's
//! `field.Error` as the conversion in `validation.go` combines them.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;

fn schema(json: Value) -> Schema {
    Schema::parse(&json, false).unwrap_or_else(|e| panic!("schema: {e}"))
}

/// An object schema with the one property `field`, as upstream's table writes its cases.
fn field_schema(field: Value) -> Schema {
    schema(json!({"type": "object", "properties": {"field": field}}))
}

fn messages(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// The set of messages (upstream's table compares sets).
fn message_set(errs: &[FieldError]) -> BTreeSet<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn assert_errors(schema: &Schema, object: Value, expected: &[&str]) {
    let got = message_set(&schema.validate(&object));
    let want: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(got, want, "errors of {object}");
}

fn assert_valid(schema: &Schema, object: Value) {
    assert_eq!(messages(&schema.validate(&object)), Vec::<String>::new(), "errors of {object}");
}

#[test]
fn types_and_nullable() {
    let not_nullable = field_schema(json!({"type": "object"}));
    assert_valid(&not_nullable, json!({}));
    assert_valid(&not_nullable, json!({"field": {}}));
    for (value, name) in [
        (json!("foo"), "string"),
        (json!(42), "integer"),
        (json!(true), "boolean"),
        (json!(1.2), "number"),
        (json!([]), "array"),
        (json!(null), "null"),
    ] {
        let expected = format!(r#"field: Invalid value: "{name}": field in body must be of type object: "{name}""#);
        assert_errors(&not_nullable, json!({ "field": value }), &[&expected]);
    }
    let nullable = field_schema(json!({"type": "object", "nullable": true}));
    assert_valid(&nullable, json!({"field": null}));
    assert_errors(
        &nullable,
        json!({"field": 42}),
        &[r#"field: Invalid value: "integer": field in body must be of type object: "integer""#],
    );
    let untyped = field_schema(json!({"nullable": true}));
    for value in [json!(null), json!("foo"), json!(42), json!(true), json!(1.2), json!([]), json!({})] {
        assert_valid(&untyped, json!({ "field": value }));
    }
    // Integral floats are integers; integers are numbers.
    assert_valid(&field_schema(json!({"type": "integer"})), json!({"field": 3.0}));
    assert_valid(&field_schema(json!({"type": "number"})), json!({"field": 3}));
}

#[test]
fn int_or_string() {
    let schema = field_schema(json!({"x-kubernetes-int-or-string": true}));
    for value in [json!(42), json!("foo")] {
        assert_valid(&schema, json!({ "field": value }));
    }
    for (value, name) in
        [(json!(null), "null"), (json!(true), "boolean"), (json!(1.2), "number"), (json!({}), "object"), (json!([]), "array")]
    {
        let expected = format!(r#"field: Invalid value: "{name}": field in body must be of type integer,string: "{name}""#);
        assert_errors(&schema, json!({ "field": value }), &[&expected]);
    }
}

#[test]
fn junctors_report_the_best_alternative() {
    let any_of =
        field_schema(json!({"nullable": true, "x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}));
    for value in [json!(null), json!(42), json!("foo")] {
        assert_valid(&any_of, json!({ "field": value }));
    }
    assert_errors(
        &any_of,
        json!({"field": true}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
            r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
        ],
    );
    assert_errors(
        &any_of,
        json!({"field": 1.2}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
            r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
            r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in field"#,
        ],
    );
    let all_of = field_schema(json!({
        "nullable": true, "x-kubernetes-int-or-string": true,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}],
    }));
    assert_errors(
        &all_of,
        json!({"field": []}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "array": field in body must be of type integer,string: "array""#,
            r#"field: Invalid value: "array": field in body must be of type integer: "array""#,
        ],
    );
    let one_of = field_schema(json!({"oneOf": [{"minimum": 1}, {"maximum": 10}]}));
    assert_valid(&one_of, json!({"field": 20}));
    assert_errors(
        &one_of,
        json!({"field": 5}),
        &[r#"<nil>: Invalid value: "": "field" must validate one and only one schema (oneOf). Found 2 valid alternatives"#],
    );
    let not = field_schema(json!({"not": {"type": "string"}}));
    assert_errors(&not, json!({"field": "x"}), &[r#"<nil>: Invalid value: "": "field" must not validate the schema (not)"#]);
    assert_valid(&not, json!({"field": 1}));
}

#[test]
fn required_and_enum() {
    let required = schema(json!({
        "type": "object", "required": ["field"],
        "properties": {"field": {"type": "object", "required": ["nested"], "properties": {"nested": {}}}},
    }));
    assert_errors(&required, json!({"test": "a"}), &["field: Required value"]);
    assert_errors(&required, json!({"field": {}}), &["field.nested: Required value"]);
    let enums = field_schema(json!({
        "type": "object", "required": ["nestedint", "nestedstring"],
        "properties": {"nestedint": {"type": "integer", "enum": [1, 2]}, "nestedstring": {"type": "string", "enum": ["a", "b"]}},
    }));
    assert_errors(&enums, json!({"field": {}}), &["field.nestedint: Required value", "field.nestedstring: Required value"]);
    assert_errors(
        &enums,
        json!({"field": {"nestedint": "x", "nestedstring": true}}),
        &[
            r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
            r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
            r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
            r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
        ],
    );
    assert_valid(&enums, json!({"field": {"nestedint": 2, "nestedstring": "a"}}));
    // Null is in no enum, even a nullable field's.
    let nullable = field_schema(json!({"type": "string", "nullable": true, "enum": ["a"]}));
    assert_errors(&nullable, json!({"field": null}), &[r#"field: Unsupported value: null: supported values: "a""#]);
}

#[test]
fn numbers() {
    let bounded = field_schema(json!({"type": "integer", "minimum": 1, "maximum": 10}));
    assert_valid(&bounded, json!({"field": 10}));
    assert_errors(&bounded, json!({"field": 11}), &["field: Invalid value: 11: field in body should be less than or equal to 10"]);
    assert_errors(&bounded, json!({"field": 0}), &["field: Invalid value: 0: field in body should be greater than or equal to 1"]);
    let exclusive =
        field_schema(json!({"type": "number", "minimum": 0.5, "exclusiveMinimum": true, "maximum": 2.5, "exclusiveMaximum": true}));
    assert_errors(&exclusive, json!({"field": 2.5}), &["field: Invalid value: 2.5: field in body should be less than 2.5"]);
    assert_errors(&exclusive, json!({"field": 0.5}), &["field: Invalid value: 0.5: field in body should be greater than 0.5"]);
    let multiple = field_schema(json!({"type": "number", "multipleOf": 0.5}));
    assert_valid(&multiple, json!({"field": 1.5}));
    assert_errors(&multiple, json!({"field": 0.3}), &["field: Invalid value: 0.3: field in body should be a multiple of 0.5"]);
    // kube-openapi holds an int64 value to the factor truncated to an int64: 0.
    assert_errors(&multiple, json!({"field": 2}), &["field: Invalid value: 0: factor MultipleOf declared for field must be positive: 0"]);
    let whole = field_schema(json!({"type": "integer", "multipleOf": 3}));
    assert_errors(&whole, json!({"field": 7}), &["field: Invalid value: 7: field in body should be a multiple of 3"]);
    // Bounds print as Go prints them.
    let big = field_schema(json!({"type": "number", "maximum": 1e6}));
    assert_errors(&big, json!({"field": 2e6}), &["field: Invalid value: 2e+06: field in body should be less than or equal to 1e+06"]);
}

#[test]
fn numeric_formats() {
    let formats = schema(json!({"type": "object", "properties": {
        "intThirtyTwo": {"type": "integer", "format": "int32"},
        "intSixtyFour": {"type": "integer", "format": "int64"},
        "floatThreeTwo": {"type": "number", "format": "float"},
        "floatSixFour": {"type": "number", "format": "double"},
    }}));
    assert_valid(
        &formats,
        json!({"intThirtyTwo": i32::MIN, "intSixtyFour": i64::MIN, "floatThreeTwo": -f64::from(f32::MAX), "floatSixFour": -f64::MAX}),
    );
    assert_valid(
        &formats,
        json!({"intThirtyTwo": i32::MAX, "intSixtyFour": i64::MAX, "floatThreeTwo": f64::from(f32::MAX), "floatSixFour": f64::MAX}),
    );
    let int32 = r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in intThirtyTwo"#;
    assert_errors(&formats, json!({"intThirtyTwo": i64::from(i32::MAX) + 1}), &[int32]);
    assert_errors(&formats, json!({"intThirtyTwo": i64::from(i32::MIN) - 1}), &[int32]);
    assert_errors(
        &formats,
        json!({"intSixtyFour": i64::MAX as f64 * 1.1}),
        &[
            r#"intSixtyFour: Invalid value: "float64": intSixtyFour in body must be of type int64: "float64""#,
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int64 in intSixtyFour"#,
        ],
    );
    assert_errors(
        &formats,
        json!({"floatThreeTwo": f64::from(f32::MAX) * 1.1}),
        &[r#"<nil>: Invalid value: "": Checked value must be of type number with format float in floatThreeTwo"#],
    );
    // A fraction in an integer field: the type, and the range check.
    assert_errors(
        &field_schema(json!({"type": "integer"})),
        json!({"field": 1.5}),
        &[
            r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
            r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in field"#,
        ],
    );
    // Formats upstream does not check for a type are dropped.
    assert_valid(&field_schema(json!({"type": "integer", "format": "uint8"})), json!({"field": 300}));
}

#[test]
fn strings_and_formats() {
    let lengths = field_schema(json!({"type": "string", "maxLength": 2}));
    assert_errors(&lengths, json!({"fieldX": "abc", "field": "abc"}), &["field: Too long: may not be more than 2 bytes"]);
    assert_valid(&lengths, json!({"field": "éé"}));
    let min = field_schema(json!({"type": "string", "minLength": 2}));
    assert_errors(&min, json!({"field": "a"}), &[r#"field: Invalid value: "a": field in body should be at least 2 chars long"#]);
    let pattern = field_schema(json!({"type": "string", "pattern": "^a\\d+$"}));
    assert_valid(&pattern, json!({"field": "a12"}));
    assert_errors(&pattern, json!({"field": "a١"}), &[r#"field: Invalid value: "a١": field in body should match '^a\d+$'"#]);
    let long_name = field_schema(json!({"type": "string", "format": "k8s-long-name"}));
    assert_errors(
        &long_name,
        json!({"field": "a.-"}),
        &[r#"field: Invalid value: "a.-": field in body must be of type k8s-long-name: "a.-""#],
    );
    let short_name = field_schema(json!({"type": "string", "format": "k8s-short-name"}));
    assert_errors(
        &short_name,
        json!({"field": "a-"}),
        &[r#"field: Invalid value: "a-": field in body must be of type k8s-short-name: "a-""#],
    );
    let date_time = field_schema(json!({"type": "string", "format": "date-time"}));
    assert_valid(&date_time, json!({"field": "2024-05-06T07:08:09Z"}));
    assert_errors(
        &date_time,
        json!({"field": "yesterday"}),
        &[r#"field: Invalid value: "yesterday": field in body must be of type date-time: "yesterday""#],
    );
    // A number where a formatted string goes is reported by the format.
    assert_errors(&date_time, json!({"field": 5}), &[r#"field: Invalid value: "int64": field in body must be of type date-time: "int64""#]);
    let bytes = field_schema(json!({"type": "string", "format": "byte"}));
    assert_errors(&bytes, json!({"field": "???"}), &[r#"field: Invalid value: "???": field in body must be of type byte: "???""#]);
    // Unknown formats check nothing.
    assert_valid(&field_schema(json!({"type": "string", "format": "color"})), json!({"field": "anything"}));
}

#[test]
fn invalid_patterns_are_reported_on_use() {
    let schema = field_schema(json!({"type": "string", "pattern": "+"}));
    let errs = messages(&schema.validate(&json!({"field": "foo"})));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with(r#"field: Invalid value: "foo": field in body should match '+, but pattern is invalid: "#), "{errs:?}");
}

#[test]
fn arrays() {
    let bounded = field_schema(json!({"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}}));
    assert_errors(&bounded, json!({"field": ["a", "b", "c"]}), &["field: Too many: 3: must have at most 2 items"]);
    assert_errors(&bounded, json!({"field": []}), &["field: Invalid value: 0: field in body should have at least 1 items"]);
    assert_errors(
        &bounded,
        json!({"field": [1]}),
        &[r#"field[0]: Invalid value: "integer": field[0] in body must be of type string: "integer""#],
    );
    let unique = field_schema(json!({"type": "array", "uniqueItems": true}));
    assert_errors(&unique, json!({"field": [1, 2, 1]}), &[r#"field: Invalid value: "": field in body shouldn't contain duplicates"#]);
}

#[test]
fn objects() {
    let bounded =
        field_schema(json!({"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}}));
    assert_errors(&bounded, json!({"field": {"a": "x", "b": "x", "c": "x"}}), &["field: Too many: 3: must have at most 2 items"]);
    assert_errors(&bounded, json!({"field": {}}), &["field: Invalid value: 0: field in body should have at least 1 properties"]);
    assert_errors(
        &bounded,
        json!({"field": {"a": 1}}),
        &[r#"field.a: Invalid value: "integer": field.a in body must be of type string: "integer""#],
    );
    let closed = field_schema(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}));
    assert_errors(&closed, json!({"field": {"a": 1, "b": 2}}), &[r#"field: Invalid value: "b": field.b in body is a forbidden property"#]);
}

#[test]
fn status_is_validated_by_its_own_schema() {
    let schema = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    }}));
    let old = json!({"spec": {"size": "stored before the schema"}, "status": {}});
    let new = json!({"spec": {"size": "stored before the schema"}, "status": {"replicas": "many"}});
    assert_eq!(
        messages(&schema.validate_status_update(&new, &old)),
        [r#"status.replicas: Invalid value: "string": replicas in body must be of type integer: "string""#]
    );
    assert!(schema.validate_status_update(&json!({"status": {"replicas": 1}}), &old).is_empty());
}

#[test]
fn updates_ratchet_what_did_not_change() {
    let schema = schema(json!({"type": "object", "properties": {
        "small": {"type": "integer", "maximum": 10},
        "nested": {"type": "object", "properties": {"small": {"type": "integer", "maximum": 10}, "other": {"type": "string"}}},
        "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                 "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer", "maximum": 10}}}},
        "atomic": {"type": "array", "items": {"type": "integer", "maximum": 10}},
        "intThirtyTwo": {"type": "integer", "format": "int32"},
        "unrelated": {"type": "string"},
    }}));
    let update = |new: Value, old: Value| messages(&schema.validate_update(&new, &old));
    assert!(update(json!({"small": 500}), json!({"small": 500})).is_empty());
    assert!(update(json!({"small": 500, "unrelated": "x"}), json!({"small": 500})).is_empty());
    assert_eq!(
        update(json!({"small": 500}), json!({"small": 501})),
        ["small: Invalid value: 500: small in body should be less than or equal to 10"]
    );
    assert!(update(json!({"nested": {"small": 500, "other": "b"}}), json!({"nested": {"small": 500, "other": "a"}})).is_empty());
    // Keyed items correlate wherever they moved; items of other lists do not.
    assert!(update(json!({"list": [{"k": "new"}, {"k": "a", "v": 50}]}), json!({"list": [{"k": "a", "v": 50}]})).is_empty());
    assert_eq!(
        update(json!({"atomic": [1, 50]}), json!({"atomic": [50]})),
        ["atomic[1]: Invalid value: 50: atomic[1] in body should be less than or equal to 10"]
    );
    let too_big = i64::from(i32::MAX) + 1;
    assert!(
        update(json!({"intThirtyTwo": too_big, "unrelated": "changed"}), json!({"intThirtyTwo": too_big, "unrelated": "original"}))
            .is_empty()
    );
    assert_eq!(update(json!({"intThirtyTwo": too_big + 1}), json!({"intThirtyTwo": too_big})).len(), 1);
    // A create holds everything to the schema.
    assert_eq!(messages(&schema.validate(&json!({"small": 500}))).len(), 1);
}

#[test]
fn keyed_lists_refuse_duplicates() {
    let schema = schema(json!({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "objects": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "multi": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}}}},
        "nested": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}},
    }}));
    assert_errors(
        &schema,
        json!({"set": ["a", "b", "a", "a", "b"]}),
        &[r#"set[2]: Duplicate value: "a""#, r#"set[4]: Duplicate value: "b""#],
    );
    assert_errors(&schema, json!({"objects": [{"a": 1}, {"a": 1.0}]}), &[r#"objects[1]: Duplicate value: {"a":1}"#]);
    assert_errors(
        &schema,
        json!({"map": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}),
        &[r#"map[1]: Duplicate value: {"name":"a"}"#],
    );
    assert_errors(&schema, json!({"map": [{"port": 1}, {"port": 2}]}), &["map[1]: Duplicate value: {}"]);
    assert_errors(
        &schema,
        json!({"map": ["x"]}),
        &[
            r#"map[0]: Invalid value: "string": map[0] in body must be of type object: "string""#,
            r#"map[0]: Invalid value: "x": must be an object for an array of list-type map"#,
        ],
    );
    assert_errors(
        &schema,
        json!({"multi": [{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "UDP"}, {"name": "a", "protocol": "TCP"}]}),
        &[r#"multi[2]: Duplicate value: {"name":"a","protocol":"TCP"}"#],
    );
    assert_errors(&schema, json!({"nested": {"x": [1, 1]}}), &["nested[x][1]: Duplicate value: 1"]);
    assert_valid(&schema, json!({"set": ["a", "b"], "map": [{"name": "a"}, {"name": "b"}], "nested": {"x": [1, 2]}}));
    // An update reports broken lists only when the old object's were fine.
    let broken = json!({"set": ["a", "a"]});
    assert!(schema.validate_update(&json!({"set": ["b", "b"]}), &broken).is_empty());
    assert_eq!(schema.validate_update(&json!({"set": ["b", "b"]}), &json!({"set": ["b"]})).len(), 1);
}

#[test]
fn embedded_resources_are_checked_as_objects() {
    let schema = schema(json!({"type": "object", "properties": {
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "items": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
        "byName": {"type": "object", "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
    }}));
    assert_errors(&schema, json!({"embedded": {}}), &["embedded.apiVersion: Required value", "embedded.kind: Required value"]);
    assert_errors(&schema, json!({"items": [{}]}), &["items[0].apiVersion: Required value", "items[0].kind: Required value"]);
    assert_errors(&schema, json!({"byName": {"foo": {}}}), &["byName[foo].apiVersion: Required value", "byName[foo].kind: Required value"]);
    assert_valid(&schema, json!({"embedded": {"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"namespace": "kube-system"}}}));
    assert_errors(
        &schema,
        json!({"embedded": {"apiVersion": "a/b/c", "kind": "foo.bar-com"}}),
        &[
            r#"embedded.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            r#"embedded.kind: Invalid value: "foo.bar-com": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
        ],
    );
    let errs = schema.validate(&json!({"embedded": {"apiVersion": "v1", "kind": "Foo", "metadata": {
        "name": "..", "namespace": "$$$", "labels": {"#": "#"}, "annotations": {"#": "#"},
    }}}));
    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "embedded.metadata.namespace",
            "embedded.metadata.name",
            "embedded.metadata.labels",
            "embedded.metadata.labels",
            "embedded.metadata.annotations"
        ],
        "{errs:?}"
    );
    assert_errors(
        &schema,
        json!({"embedded": {"apiVersion": "v1", "kind": "Foo", "metadata": {"name": 5}}}),
        &[
            r#"embedded.metadata: Invalid value: {"name":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"#,
        ],
    );
}

fn widgets() -> Schema {
    schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer", "default": 1},
            "color": {"type": "string", "default": "red"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "port": {"type": "integer", "default": 80},
            }}},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "value": {"type": "string", "default": "none"},
            }}},
            "nested": {"type": "object", "default": {"enabled": true, "unknown": 1}, "properties": {
                "enabled": {"type": "boolean"}, "mode": {"type": "string", "default": "auto"},
            }},
            "optional": {"type": "string"},
            "nullable": {"type": "string", "nullable": true},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "strict": {"type": "object", "properties": {"known": {"type": "string"}}},
            }},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "open": {"type": "object", "additionalProperties": true},
        }},
    }}))
}

#[test]
fn pruning_drops_unknown_fields_and_reports_them() {
    let schema = widgets();
    let mut object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "a", "foo": "bar"},
        "spec": {
            "size": 2, "bogus": true,
            "ports": [{"name": "http", "port": 8080, "x": 1}],
            "extra": {"anything": {"goes": 1}, "strict": {"known": "k", "unknown": "u"}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"kept": true}},
            "open": {"a": {"inner": 1}, "b": 2},
        },
        "top": 1,
    });
    let unknown = schema.normalize(&mut object);
    assert_eq!(
        unknown,
        [
            "metadata.foo",
            "spec.bogus",
            "spec.extra.strict.unknown",
            "spec.open.a.inner",
            "spec.ports[0].x",
            "top",
            "spec.template.metadata.bogus"
        ]
    );
    assert_eq!(object["metadata"], json!({"name": "a"}));
    assert_eq!(object["spec"]["ports"], json!([{"name": "http", "port": 8080}]));
    assert_eq!(object["spec"]["extra"], json!({"anything": {"goes": 1}, "strict": {"known": "k"}}));
    assert_eq!(object["spec"]["template"], json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"kept": true}}));
    assert_eq!(object["spec"]["open"], json!({"a": {}, "b": 2}));
    assert!(object.get("top").is_none());
    // A definition that preserves unknown fields prunes nothing but metadata.
    let preserving = Schema::parse(&json!({"type": "object"}), true).unwrap();
    let mut object = json!({"metadata": {"name": "a", "foo": 1}, "spec": {"anything": 1}});
    assert_eq!(preserving.normalize(&mut object), ["metadata.foo"]);
    assert_eq!(object, json!({"metadata": {"name": "a"}, "spec": {"anything": 1}}));
}

#[test]
fn defaults_fill_what_is_missing() {
    let schema = widgets();
    let mut object = json!({"spec": {
        "size": 3,
        "ports": [{"name": "http"}, {"name": "https", "port": 443}, null],
        "labels": {"a": {}, "b": {"value": "set"}},
        "optional": null,
        "nullable": null,
    }});
    assert!(schema.normalize(&mut object).is_empty());
    assert_eq!(
        object,
        json!({"spec": {
            "size": 3,
            "color": "red",
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}, null],
            "labels": {"a": {"value": "none"}, "b": {"value": "set"}},
            // The default was pruned by its schema, then defaulted below.
            "nested": {"enabled": true, "mode": "auto"},
            "nullable": null,
        }})
    );
    // Nothing is created where the parent is missing.
    let mut empty = json!({});
    schema.normalize(&mut empty);
    assert_eq!(empty, json!({}));
    // A null where null is not allowed takes the default.
    let mut null_size = json!({"spec": {"size": null}});
    schema.normalize(&mut null_size);
    assert_eq!(null_size["spec"]["size"], 1);
}

#[test]
fn schemas_that_cannot_be_served_are_refused() {
    let error = |json: Value| Schema::parse(&json, false).unwrap_err().to_string();
    assert_eq!(
        error(json!({"type": "object", "properties": {"spec": {"type": "thing"}}})),
        r#"openAPIV3Schema.properties[spec].type: Unsupported value: "thing": supported values: "array", "boolean", "integer", "number", "object", "string""#
    );
    assert_eq!(
        error(json!({"type": "array", "items": [{"type": "string"}]})),
        "openAPIV3Schema.items: Forbidden: must be a schema, not an array of schemas"
    );
    assert_eq!(
        error(json!({"type": "object", "$ref": "#/definitions/x"})),
        "openAPIV3Schema.$ref: Forbidden: must not be set in a structural schema"
    );
    assert_eq!(error(json!({"type": "string", "maxLength": "5"})), r#"openAPIV3Schema.maxLength: Invalid value: "5": must be an integer"#);
    // CEL rules, descriptions and the like are read past.
    assert!(
        Schema::parse(
            &json!({"type": "object", "description": "d", "x-kubernetes-validations": [{"rule": "self.metadata.name != ''"}]}),
            false
        )
        .is_ok()
    );
}

#[test]
fn go_patterns_keep_their_ascii_classes() {
    assert_eq!(rust_pattern(r"^\d+\.\w\s\D\\d$"), r"^[0-9]+\.[0-9A-Za-z_][\t\n\x0C\r ][^0-9]\\d$");
}

/// The smallest value a node accepts, as far as its keywords say: required fields (and those
/// the first alternative of a junctor requires), the first member of an enum, the least
/// number, the shortest string, the fewest items.
fn minimal(node: &Node) -> Value {
    if let Some(first) = node.enumeration.first() {
        return first.clone();
    }
    if let Some(default) = &node.default {
        return default.clone();
    }
    match node.types.first().copied() {
        Some("object") | None if !node.properties.is_empty() || !node.required.is_empty() => {
            let mut required: Vec<&String> = node.required.iter().collect();
            for alternatives in [&node.one_of, &node.any_of] {
                if let Some(first) = alternatives.first() {
                    required.extend(first.required.iter());
                }
            }
            let fields = required
                .into_iter()
                .map(|name| (name.clone(), node.properties.get(name).map_or(json!({}), minimal)))
                .collect::<serde_json::Map<_, _>>();
            Value::Object(fields)
        }
        Some("object") | None => json!({}),
        Some("string") if node.types.len() == 2 => json!(0),
        Some("string") => {
            let length = node.min_length.unwrap_or(0).max(1) as usize;
            match node.format.as_str() {
                "date-time" => json!("2024-01-01T00:00:00Z"),
                "duration" => json!("1s"),
                "byte" => json!("YQ=="),
                _ => json!("a".repeat(length)),
            }
        }
        Some("integer") => json!(node.minimum.map_or(0, |m| m as i64 + i64::from(node.exclusive_minimum))),
        Some("number") => json!(node.minimum.map_or(0.0, |m| m + f64::from(u8::from(node.exclusive_minimum)))),
        Some("boolean") => json!(false),
        Some("array") => {
            let count = node.min_items.unwrap_or(0) as usize;
            Value::Array((0..count).map(|_| node.items.as_deref().map_or(json!({}), minimal)).collect())
        }
        Some(_) => Value::Null,
    }
}

/// Every CustomResourceDefinition published by cert-manager and prometheus-operator (read in
/// place from `../shared/crds`, or `KAPI_SHARED_CRDS`): each version's schema is served; an
/// object with the least its spec requires is valid (once pruned and defaulted), one whose spec
/// is a string is not.
#[test]
fn published_definitions_are_served() {
    let root = std::env::var_os("KAPI_SHARED_CRDS")
        .map_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/crds"), std::path::PathBuf::from);
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared CRDs, see its README; KAPI_SHARED_CRDS names another place)", root.display()))
        .flat_map(|group| std::fs::read_dir(group.unwrap().path()).into_iter().flatten())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 16, "{files:?}");
    let mut versions = 0;
    let mut checked_rules = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let definition: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let (group, kind) = (definition["spec"]["group"].as_str().unwrap(), definition["spec"]["names"]["kind"].as_str().unwrap());
        for version in definition["spec"]["versions"].as_array().unwrap().iter().filter(|v| v["served"] == true) {
            let name = format!("{} {}", file.display(), version["name"]);
            let schema = Schema::parse(&version["schema"]["openAPIV3Schema"], false).unwrap_or_else(|e| panic!("{name}: {e}"));
            // Its rules type-check (above) and are within upstream's cost limits.
            assert_eq!(messages(&schema.cost_errors("openAPIV3Schema", true)), Vec::<String>::new(), "{name}");
            checked_rules += checked(&schema.root);
            let spec = schema.root.properties.get("spec").unwrap_or_else(|| panic!("{name}: no spec"));
            let mut object = json!({
                "apiVersion": format!("{group}/{}", version["name"].as_str().unwrap()),
                "kind": kind,
                "metadata": {"name": "minimal", "namespace": "default"},
                "spec": minimal(spec),
            });
            assert!(schema.normalize(&mut object).is_empty(), "{name}: {object}");
            assert_eq!(messages(&schema.validate(&object)), Vec::<String>::new(), "{name}: {object}");
            let wrong = json!({"apiVersion": object["apiVersion"], "kind": kind, "metadata": {"name": "wrong"}, "spec": "wrong"});
            let errs = messages(&schema.validate(&wrong));
            assert!(
                errs.contains(&r#"spec: Invalid value: "string": spec in body must be of type object: "string""#.to_owned()),
                "{name}: {errs:?}"
            );
            versions += 1;
        }
    }
    assert!(versions >= 16, "{versions} versions");
    assert!(checked_rules >= 28, "{checked_rules} rules type-checked");
}

/// How many rules of `node`'s tree were type-checked (and their cost estimated).
fn checked(node: &Node) -> usize {
    let own = node.rules.iter().filter(|r| r.is_checked()).count();
    own + node.structural_children().map(checked).sum::<usize>()
}
