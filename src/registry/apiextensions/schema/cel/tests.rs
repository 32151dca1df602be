use serde_json::{Value, json};

use crate::registry::apiextensions::schema::{Schema, SchemaError};

/// A schema whose `spec` has `rules`, and the fields `replicas`, `name`, `items`, `tags`.
fn schema(rules: Value) -> Result<Schema, SchemaError> {
    Schema::parse(
        &json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": rules,
            "properties": {
                "replicas": {"type": "integer"},
                "min": {"type": "integer"},
                "name": {"type": "string"},
                "ratio": {"type": "number"},
                "items": {"type": "array", "items": {"type": "integer"}},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "foo-bar": {"type": "string"},
            },
        }}}),
        false,
    )
}

fn errors(rules: Value, spec: Value) -> Vec<String> {
    let schema = schema(rules).expect("schema");
    schema.validate(&json!({"spec": spec})).iter().map(ToString::to_string).collect()
}

fn update_errors(rules: Value, old: Value, new: Value) -> Vec<String> {
    let schema = schema(rules).expect("schema");
    schema.validate_update(&json!({"spec": new}), &json!({"spec": old})).iter().map(ToString::to_string).collect()
}

fn compile_error(rules: Value) -> String {
    schema(rules).expect_err("a compile error").0.to_string()
}

#[test]
fn rules_pass_and_fail_with_upstreams_messages() {
    let rules = json!([{"rule": "self.replicas >= self.min", "message": "replicas must be at least min"}]);
    assert!(errors(rules.clone(), json!({"replicas": 3, "min": 1})).is_empty());
    assert_eq!(errors(rules, json!({"replicas": 0, "min": 1})), ["spec: Invalid value: replicas must be at least min"]);
    // No message: the rule is the message.
    assert_eq!(
        errors(json!([{"rule": "self.replicas < 10"}]), json!({"replicas": 10})),
        ["spec: Invalid value: failed rule: self.replicas < 10"]
    );
}

#[test]
fn scalars_show_their_value() {
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]},
            "count": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1", "message": "too small"}]},
        }}}}),
        false,
    )
    .expect("schema");
    let errs: Vec<String> = schema.validate(&json!({"spec": {"name": "bob", "count": 1}})).iter().map(ToString::to_string).collect();
    assert_eq!(errs, ["spec.count: Invalid value: 1: too small", r#"spec.name: Invalid value: "bob": failed rule: self.startsWith('a')"#]);
}

#[test]
fn reasons_choose_the_error_type_and_field_path_the_field() {
    let rule = |reason: &str| json!([{"rule": "self.replicas < 10", "message": "too many", "reason": reason, "fieldPath": ".replicas"}]);
    assert_eq!(errors(rule("FieldValueForbidden"), json!({"replicas": 10})), ["spec.replicas: Forbidden: too many"]);
    assert_eq!(errors(rule("FieldValueRequired"), json!({"replicas": 10})), ["spec.replicas: Required value: too many"]);
    assert_eq!(errors(rule("FieldValueDuplicate"), json!({"replicas": 10})), ["spec.replicas: Duplicate value"]);
    assert_eq!(errors(rule("FieldValueInvalid"), json!({"replicas": 10})), ["spec.replicas: Invalid value: too many"]);
    assert_eq!(
        compile_error(rule("Other")),
        r#"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: "Other": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#
    );
    assert_eq!(
        compile_error(json!([{"rule": "true", "fieldPath": ".nope"}])),
        r#"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: ".nope": must be a valid path"#
    );
    // Map keys and quoted names.
    assert_eq!(
        errors(json!([{"rule": "false", "message": "m", "fieldPath": ".tags['a.b']"}]), json!({})),
        ["spec.tags[a.b]: Invalid value: m"]
    );
}

#[test]
fn message_expressions_write_the_message() {
    let rules = json!([{"rule": "self.replicas < 10", "messageExpression": "'replicas is ' + string(self.replicas)"}]);
    assert_eq!(errors(rules, json!({"replicas": 12})), ["spec: Invalid value: replicas is 12"]);
    // A message expression that fails falls back to the message.
    let rules = json!([{"rule": "false", "message": "fallback", "messageExpression": "self.missing"}]);
    assert_eq!(errors(rules, json!({})), ["spec: Invalid value: fallback"]);
}

#[test]
fn rules_that_do_not_compile_refuse_the_definition() {
    let error = compile_error(json!([{"rule": "self.replicas >"}]));
    assert!(
        error.starts_with(
            r#"openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.replicas \u003e","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:"#
        ),
        "{error}"
    );
    let error = compile_error(json!([{"rule": "slef.replicas > 1"}]));
    assert!(
        error.ends_with(
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'slef' (in container '')\n | slef.replicas > 1\n | ^"
        ),
        "{error}"
    );
    assert!(compile_error(json!([{"rule": "'a'"}])).ends_with("cel expression must evaluate to a bool"));
    assert!(
        compile_error(json!([{"rule": "true", "messageExpression": "'a' +"}]))
            .contains("x-kubernetes-validations[0].messageExpression: Invalid value: {\"Rule\":\"true\"")
    );
    assert_eq!(
        compile_error(json!([{"rule": " "}])),
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified"
    );
    assert_eq!(
        compile_error(json!([{"rule": "true", "optionalOldSelf": true}])),
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
    );
    assert_eq!(
        compile_error(json!([{"rule": "true\n&& true"}])),
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].message: Required value: message must be specified if rule contains line breaks"
    );
    // Comprehension variables are declared within their macro.
    assert!(schema(json!([{"rule": "self.items.all(i, i > 0)"}])).is_ok());
}

#[test]
fn transition_rules_see_the_old_value() {
    let rules = json!([{"rule": "self.replicas >= oldSelf.replicas", "message": "replicas may not decrease"}]);
    // Skipped on create.
    assert!(errors(rules.clone(), json!({"replicas": 1})).is_empty());
    assert!(update_errors(rules.clone(), json!({"replicas": 1}), json!({"replicas": 2})).is_empty());
    assert_eq!(update_errors(rules, json!({"replicas": 2}), json!({"replicas": 1})), ["spec: Invalid value: replicas may not decrease"]);
    // Immutability through oldSelf on a scalar.
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
        }}}}),
        false,
    )
    .expect("schema");
    let errs = schema.validate_update(&json!({"spec": {"name": "b"}}), &json!({"spec": {"name": "a"}}));
    assert_eq!(errs.iter().map(ToString::to_string).collect::<Vec<_>>(), [r#"spec.name: Invalid value: "b": name is immutable"#]);
}

#[test]
fn optional_old_self_is_an_optional() {
    let rules = json!([{
        "rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas",
        "message": "no decrease",
        "optionalOldSelf": true,
    }]);
    // Evaluated on create too, with no old value.
    assert!(errors(rules.clone(), json!({"replicas": 1})).is_empty());
    let rules_on_create = json!([{"rule": "oldSelf.hasValue()", "message": "needs an old value", "optionalOldSelf": true}]);
    assert_eq!(errors(rules_on_create, json!({})), ["spec: Invalid value: needs an old value"]);
    assert_eq!(update_errors(rules, json!({"replicas": 2}), json!({"replicas": 1})), ["spec: Invalid value: no decrease"]);
}

#[test]
fn unchanged_values_ratchet() {
    let rules = json!([{"rule": "self.replicas < 10"}]);
    // The old object already broke the rule and the node did not change: not an error.
    assert!(update_errors(rules.clone(), json!({"replicas": 12}), json!({"replicas": 12})).is_empty());
    assert_eq!(update_errors(rules, json!({"replicas": 12}), json!({"replicas": 13})).len(), 1);
}

#[test]
fn values_are_typed_by_the_schema() {
    assert!(errors(json!([{"rule": "self.ratio == 1.0 && type(self.ratio) == double"}]), json!({"ratio": 1})).is_empty());
    assert!(errors(json!([{"rule": "self.foo__dash__bar == 'x'"}]), json!({"foo-bar": "x"})).is_empty());
    assert!(errors(json!([{"rule": "self.tags['a.b'] == 'c' && 'a.b' in self.tags"}]), json!({"tags": {"a.b": "c"}})).is_empty());
    // A missing field is an evaluation error, reported with the rule.
    assert_eq!(
        errors(json!([{"rule": "self.name == 'x'"}]), json!({})),
        [r#"spec: Invalid value: "object": no such key: name evaluating rule: self.name == 'x'"#]
    );
}

#[test]
fn the_root_is_the_resource_with_its_name() {
    let schema = Schema::parse(
        &json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('a')", "message": "bad name"}],
            "properties": {"spec": {"type": "object"}}}),
        false,
    )
    .expect("schema");
    assert!(schema.validate(&json!({"metadata": {"name": "abc"}, "spec": {}})).is_empty());
    let errs = schema.validate(&json!({"metadata": {"name": "xyz"}, "spec": {}}));
    assert_eq!(errs.iter().map(ToString::to_string).collect::<Vec<_>>(), ["<nil>: Invalid value: bad name"]);
}

#[test]
fn schema_errors_block_the_rules() {
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["name"],
            "x-kubernetes-validations": [{"rule": "false"}], "properties": {"name": {"type": "string"}}}}}),
        false,
    )
    .expect("schema");
    let errs: Vec<String> = schema.validate(&json!({"spec": {}})).iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(
        errs[1],
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
    );
}

#[test]
fn kubernetes_libraries() {
    for rule in [
        "[1, 2, 3].isSorted() && ![2, 1].isSorted()",
        "[1, 2, 3].sum() == 6 && [1, 5, 3].max() == 5 && [4, 2].min() == 2",
        "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2",
        "'abc123def456'.find('[0-9]+') == '123' && 'abc123def456'.findAll('[0-9]+') == ['123', '456']",
        "sets.contains([1, 2, 3], [2]) && sets.equivalent([1, 2], [2, 1]) && sets.intersects([1], [1, 5])",
        "isQuantity('500m') && isQuantity('1Gi') && !isQuantity('1 Gi')",
        "quantity('500m').isLessThan(quantity('1')) && quantity('1Gi').isGreaterThan(quantity('1G')) && quantity('1').compareTo(quantity('1000m')) == 0",
        "quantity('-2').sign() == -1 && quantity('2').isInteger() && quantity('2k').asInteger() == 2000 && quantity('500m').asApproximateFloat() == 0.5",
        "isIP('10.0.0.1') && isIP('::1') && !isIP('10.0.0') && isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0/33')",
        "isURL('https://example.com/a') && !isURL('not a url')",
        "'a,b'.split(',').size() == 2 && 'Hello'.lowerAscii() == 'hello'",
        "self.name.matches('^[a-z]+$')",
        "[1, 2, 3].exists_one(x, x == 2) && [1, 2].map(x, x * 2) == [2, 4] && [1, 2, 3].filter(x, x > 1).size() == 2",
    ] {
        let errs = errors(json!([{"rule": rule}]), json!({"name": "abc"}));
        assert!(errs.is_empty(), "{rule}: {errs:?}");
    }
}

#[test]
fn kubernetes_value_libraries() {
    for rule in [
        // IP and CIDR.
        "ip('10.0.0.1').family() == 4 && ip('::1').family() == 6 && ip('::1').isLoopback() && ip('0.0.0.0').isUnspecified()",
        "ip('fe80::1').isLinkLocalUnicast() && ip('ff02::1').isLinkLocalMulticast() && ip('10.0.0.1').isGlobalUnicast() && !ip('127.0.0.1').isGlobalUnicast()",
        "string(ip('2001:DB8::1')) == '2001:db8::1' && ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')",
        "ip('10.0.0.1') == ip('10.0.0.1') && ip('10.0.0.1') != ip('10.0.0.2')",
        "!isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4') && isCIDR('2001:db8::/32') && !isCIDR('10.0.0.0/08')",
        "cidr('10.0.0.0/8').containsIP('10.1.2.3') && cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && !cidr('10.0.0.0/8').containsIP('11.0.0.1')",
        "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR(cidr('10.0.0.0/8'))",
        "cidr('10.1.2.3/8').ip() == ip('10.1.2.3') && string(cidr('10.1.2.3/8').masked()) == '10.0.0.0/8' && cidr('10.0.0.0/8').prefixLength() == 8",
        // URLs.
        "url('https://user@Example.com:8443/a%20b?x=1&x=2&y=z').getScheme() == 'https'",
        "url('https://Example.com:8443/a%20b').getHost() == 'Example.com:8443' && url('https://Example.com:8443/').getHostname() == 'Example.com'",
        "url('https://[::1]:80/').getHostname() == '::1' && url('https://[::1]:80/').getPort() == '80' && url('https://example.com/').getPort() == ''",
        "url('https://example.com/a%20b').getEscapedPath() == '/a%20b' && url('/just/a/path').getHost() == ''",
        "url('https://example.com/?x=1&x=2&y=z').getQuery() == {'x': ['1', '2'], 'y': ['z']}",
        "isURL('https://example.com/a') && isURL('/a/b') && !isURL('a/b') && !isURL('')",
        // Semver.
        "isSemver('1.2.3-rc.1+build') && !isSemver('v1.2.3') && isSemver('v1.2', true) && !isSemver('1.2')",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('1.0.0-rc.1').isLessThan(semver('1.0.0')) && semver('1.10.0').isGreaterThan(semver('1.9.0')) && semver('1.0.0+a').compareTo(semver('1.0.0')) == 0",
        "semver('v01.2', true) == semver('1.2.0') && semver('1.2.3') != semver('1.2.4')",
        // Named formats.
        "format.dns1123Label().validate('my-name') == optional.none() && format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()",
        "format.dns1123Label().validate('My_Name').value().size() == 1 && format.named('uri').value().validate('nope').hasValue()",
        "format.labelValue().validate('') == optional.none() && format.dns1123LabelPrefix().validate('abc-') == optional.none()",
        "format.dns1123Label() == format.named('dns1123Label').value() && format.dns1123Label() != format.labelValue()",
        // Quantities: arithmetic.
        "quantity('1').add(quantity('500m')) == quantity('1500m') && quantity('1').add(2) == quantity('3') && quantity('1Gi').sub(quantity('512Mi')) == quantity('512Mi')",
        "quantity('1').sub(2).sign() == -1 && sign(quantity('-1')) == -1 && quantity('1k').sub(1).asInteger() == 999",
        // Durations and timestamps (the crate's own).
        "duration('1h30m') == duration('90m') && timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')",
        "timestamp('2024-03-04T05:06:07Z').getFullYear() == 2024 && duration('1h').getMinutes() == 60",
    ] {
        let errs = errors(json!([{"rule": rule}]), json!({"name": "abc"}));
        assert!(errs.is_empty(), "{rule}: {errs:?}");
    }
}

#[test]
fn kubernetes_value_libraries_fail_with_upstreams_messages() {
    let failing = |rule: &str| errors(json!([{"rule": rule}]), json!({}));
    assert_eq!(
        failing("url('nope').getScheme() == ''"),
        [
            r#"spec: Invalid value: "object": URL parse error during conversion from string: parse "nope": invalid URI for request evaluating rule: url('nope').getScheme() == ''"#
        ]
    );
    assert_eq!(
        failing("ip('10.0.0').family() == 4"),
        [
            r#"spec: Invalid value: "object": IP Address "10.0.0" parse error during conversion from string: ParseAddr("10.0.0"): unable to parse IP evaluating rule: ip('10.0.0').family() == 4"#
        ]
    );
    assert_eq!(
        failing("cidr('10.0.0.0/33').prefixLength() == 8"),
        [
            r#"spec: Invalid value: "object": network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range evaluating rule: cidr('10.0.0.0/33').prefixLength() == 8"#
        ]
    );
    assert_eq!(
        failing("semver('1.2').major() == 1"),
        [r#"spec: Invalid value: "object": No Major.Minor.Patch elements found evaluating rule: semver('1.2').major() == 1"#]
    );
}

#[test]
fn costly_rules_are_stopped() {
    // Each element visits the whole list: 3,000² steps, past the per-call limit.
    let items: Vec<i64> = (0..3000).collect();
    let errs = errors(json!([{"rule": "self.items.all(a, self.items.all(b, a + b >= 0))"}]), json!({"items": items}));
    assert_eq!(
        errs,
        [
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.items.all(a, self.items.all(b, a + b >= 0))"
        ]
    );
    // Copies count too: a list of copies of a list.
    let errs = errors(json!([{"rule": "self.items.map(a, self.items).size() > 0"}]), json!({"items": items}));
    assert_eq!(errs.len(), 1);
    // A cheap rule over the same list is fine.
    assert!(errors(json!([{"rule": "self.items.all(a, a >= 0)"}]), json!({"items": items})).is_empty());
}

#[test]
fn the_object_budget_is_shared_by_all_rules() {
    // Each evaluation stays under the per-call limit, but many of them exhaust the budget.
    let items: Vec<i64> = (0..300).collect();
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "lists": {"type": "array", "items": {"type": "array", "items": {"type": "integer"},
                "x-kubernetes-validations": [{"rule": "self.all(a, self.all(b, true))"}]}},
        }}}}),
        false,
    )
    .expect("schema");
    let lists: Vec<Value> = (0..40).map(|_| json!(items)).collect();
    let errs: Vec<String> = schema.validate(&json!({"spec": {"lists": lists}})).iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].ends_with("validation failed due to running out of cost budget, no further validation rules will be run"), "{errs:?}");
}

#[test]
fn old_self_needs_a_correlatable_value() {
    let error = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
        }}}}),
        false,
    )
    .expect_err("oldSelf in an atomic list");
    assert_eq!(
        error.0.to_string(),
        "openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within openAPIV3Schema.properties[spec].properties[list]"
    );
    assert!(compile_error(json!([{"rule": "true", "messageExpression": "1"}])).ends_with("messageExpression must evaluate to a string"));
}

#[test]
fn map_list_items_correlate_by_key() {
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.port >= oldSelf.port", "message": "port may not decrease"}]}},
        }}}}),
        false,
    )
    .expect("schema");
    let old = json!({"spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 90}]}});
    // Reordered, b lowered: the error is b's, found by its key.
    let new = json!({"spec": {"ports": [{"name": "b", "port": 85}, {"name": "a", "port": 80}, {"name": "c", "port": 1}]}});
    let errs: Vec<String> = schema.validate_update(&new, &old).iter().map(ToString::to_string).collect();
    assert_eq!(errs, ["spec.ports[0]: Invalid value: port may not decrease"]);
}

#[test]
fn every_library_declaration_is_accepted() {
    // The shared environment only logs a refused declaration; here it fails the test.
    let mut env = ::cel::Env::stdlib();
    let extensions = env.add_extension(::cel::extensions::strings).and_then(|()| env.add_extension(::cel::extensions::lists));
    assert!(extensions.is_ok(), "{extensions:?}");
    let declared = super::library::register(&mut env);
    assert!(declared.is_ok(), "{declared:?}");
}
