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
    let rules = json!([{"rule": "false", "message": "fallback", "messageExpression": "self.tags['missing']"}]);
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

/// The detail of a compile error (after the rule shown as the bad value).
fn compile_detail(rules: Value) -> String {
    let error = compile_error(rules);
    error.split_once("}: ").map_or(error.clone(), |(_, detail)| detail.to_owned())
}

#[test]
fn rules_are_type_checked_against_the_schema() {
    let rule = |r: &str| json!([{"rule": r}]);
    assert_eq!(
        compile_detail(rule("self.foo == 1")),
        "compilation failed: ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"
    );
    assert_eq!(
        // At the macro's position, as cel-go's macro expansion places its presence test.
        compile_detail(rule("has(self.nope)")),
        "compilation failed: ERROR: <input>:1:4: undefined field 'nope'\n | has(self.nope)\n | ...^"
    );
    assert_eq!(
        compile_detail(rule("self.name + 1 == 'a1'")),
        "compilation failed: ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'a1'\n | ..........^"
    );
    assert_eq!(
        compile_detail(rule("self.replicas == 'three'")),
        "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | self.replicas == 'three'\n | ..............^"
    );
    assert_eq!(
        compile_detail(rule("self.name.startsWith(1)")),
        "compilation failed: ERROR: <input>:1:21: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.name.startsWith(1)\n | ....................^"
    );
    assert_eq!(
        compile_detail(rule("self.items.all(x, x)")),
        "compilation failed: ERROR: <input>:1:19: expected type 'bool' but found 'int'\n | self.items.all(x, x)\n | ..................^"
    );
    assert_eq!(
        compile_detail(rule("self.replicas.foo > 1")),
        "compilation failed: ERROR: <input>:1:14: type 'int' does not support field selection\n | self.replicas.foo > 1\n | .............^"
    );
    // Every error, in the order of their positions.
    assert_eq!(
        compile_detail(rule("self.a == 1 && self.b == 2")),
        "compilation failed: ERROR: <input>:1:5: undefined field 'a'\n | self.a == 1 && self.b == 2\n | ....^\nERROR: <input>:1:20: undefined field 'b'\n | self.a == 1 && self.b == 2\n | ...................^"
    );
    // The result must be a bool, the message a string: by their checked types.
    assert_eq!(compile_detail(rule("self.replicas")), "cel expression must evaluate to a bool");
    assert_eq!(compile_detail(rule("self.tags")), "cel expression must evaluate to a bool");
    assert_eq!(compile_detail(rule("self.items.map(x, x + 1)")), "cel expression must evaluate to a bool");
    assert_eq!(
        compile_detail(json!([{"rule": "self.replicas > 1", "messageExpression": "self.replicas"}])),
        "messageExpression must evaluate to a string"
    );
    assert_eq!(
        compile_detail(json!([{"rule": "self.replicas > 1", "messageExpression": "self.nope"}])),
        "messageExpression compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope\n | ....^"
    );
}

#[test]
fn rules_cel_go_accepts_still_compile() {
    for rule in [
        "self.tags.all(k, self.tags[k].startsWith('a'))",
        "self.items.map(x, x * 2).exists(y, y > 4)",
        "self.items.filter(x, x > 1).size() == 0 && size(self.items) == self.items.size()",
        "self.tags.exists_one(k, k == 'x') || 'a' in self.tags || self.tags.a == 'b'",
        "type(self.replicas) == int && type(self.name) == string",
        "self.name.matches('^a') && self.name.size() < 10 && matches(self.name, 'b')",
        "self.ratio > 1 && self.replicas > 1.0 && self.replicas < 2u",
        "self.name.lowerAscii() == 'a' && self.name.split(',').size() > 1 && self.name.indexOf('a') >= 0",
        "quantity('1').isLessThan(quantity('2')) && isQuantity(self.name)",
        "isURL(self.name) && url(self.name).getScheme() == 'https'",
        "self.items.sum() > 0 && self.items.isSorted() && self.items.max() < 10",
        "self.foo__dash__bar == 'x'",
        "dyn(self.replicas) == 'a'",
        "duration('1s') < duration('2s') && timestamp('2020-01-01T00:00:00Z') + duration('1h') > timestamp('2020-01-01T00:00:00Z')",
        "self.tags.size() > 0 ? self.tags['a'] == 'b' : true",
        "[1, 'a'].size() == 2 && {'a': 1}.a == 1",
        "self.items.all(i, i in [1, 2]) && !(self.replicas in self.items)",
        "oldSelf.replicas <= self.replicas",
        "string(self.replicas) == '1' && int(self.name) > 0 && double(self.replicas) > 0.5",
        "self.replicas % 2 == 0 && -self.replicas < 0 && self.ratio / 2.0 > 0.1",
        "has(self.name) && has(self.tags.a)",
        "self.items == [1, 2] && self.tags == {'a': 'b'} && self.items != []",
        "self.name.find('[0-9]+') != '' && self.name.findAll('a').size() > 0",
        "isIP(self.name) && ip(self.name).family() == 4 && cidr('10.0.0.0/8').containsIP(self.name)",
        "sets.contains(self.items, [1]) && self.name.format([1]) != ''",
        "self.items.exists(x, x == 2) || self.name == '' || self.unknown_function(1)",
    ] {
        let compiled = schema(json!([{"rule": rule}]));
        assert!(compiled.is_ok(), "{rule}: {}", compiled.err().map(|e| e.to_string()).unwrap_or_default());
    }
}

#[test]
fn rules_of_a_node_cel_does_not_see_are_refused() {
    let untyped = json!({"type": "object", "properties": {"x": {
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{"rule": "has(self.a)"}],
    }}});
    assert_eq!(
        Schema::parse(&untyped, false).expect_err("refused").0.to_string(),
        "openAPIV3Schema.properties[x].x-kubernetes-validations: Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations"
    );
    // Nor can a rule above it read it: the field is not declared.
    let above = json!({"type": "object", "x-kubernetes-validations": [{"rule": "has(self.x)"}], "properties": {"x": {"x-kubernetes-preserve-unknown-fields": true}}});
    assert!(Schema::parse(&above, false).expect_err("refused").0.to_string().contains("undefined field 'x'"));
}

#[test]
fn a_resource_root_sees_its_type_and_name_only() {
    let at_root = |rule: &str| {
        Schema::parse(
            &json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}], "properties": {"spec": {"type": "object"}}}),
            false,
        )
    };
    assert!(at_root("self.metadata.name.startsWith('a') && self.kind == 'K' && self.apiVersion != ''").is_ok());
    let error = at_root("self.metadata.namespace == 'a'").expect_err("undefined").0.to_string();
    assert!(
        error.ends_with(
            "compilation failed: ERROR: <input>:1:14: undefined field 'namespace'\n | self.metadata.namespace == 'a'\n | .............^"
        ),
        "{error}"
    );
}

/// A schema whose `spec.names` (a list of strings with `list` and `item` bounds) has `rules`.
fn names_schema(rules: Value, list: Value, item: Value) -> Schema {
    let mut items = json!({"type": "string"});
    items.as_object_mut().unwrap().extend(item.as_object().unwrap().clone());
    let mut names = json!({"type": "array", "items": items, "x-kubernetes-validations": rules});
    names.as_object_mut().unwrap().extend(list.as_object().unwrap().clone());
    Schema::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"names": names}}}}), false)
        .expect("schema")
}

fn cost_messages(schema: &Schema) -> Vec<String> {
    schema.cost_errors("spec.validation.openAPIV3Schema", true).iter().map(ToString::to_string).collect()
}

const TRY: &str =
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

#[test]
fn rule_costs_are_cel_gos_estimates() {
    let rule = json!([{"rule": "self.all(x, x.matches('^a'))"}]);
    let cost = |schema: &Schema| schema.root.properties["spec"].properties["names"].rules[0].cost.expect("checked").rule;
    // 1 (self) + 1 (@result) + N × (2 (the loop's condition) + 1 (@result) + 1 (x) + the match:
    // ⌈(4 × maxLength + 1) × 0.1⌉ × ⌈2 × 0.25⌉).
    let bounded = names_schema(rule.clone(), json!({"maxItems": 10}), json!({"maxLength": 10}));
    assert_eq!(cost(&bounded), 2 + 10 * (4 + 5));
    assert!(cost_messages(&bounded).is_empty());
    // Unbounded: the largest request's 1,048,575 strings of 3,145,726 characters.
    let unbounded = names_schema(rule.clone(), json!({}), json!({}));
    assert_eq!(cost(&unbounded), 2 + 1_048_575 * (4 + 314_573));
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule";
    assert_eq!(
        cost_messages(&unbounded),
        [
            format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {TRY}"),
            format!("{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"
            ),
        ]
    );
    // Just over: the factor as upstream prints it.
    let over = names_schema(rule.clone(), json!({"maxItems": 2_000_000}), json!({"maxLength": 10}));
    assert_eq!(cost_messages(&over), [format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of 1.8x {TRY}")]);
    let barely = names_schema(rule, json!({"maxItems": 1_200_000}), json!({"maxLength": 10}));
    assert_eq!(cost_messages(&barely), [format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of 1.080000x {TRY}")]);
}

#[test]
fn a_rule_below_an_unbounded_list_counts_each_time_the_node_can_appear() {
    // The first rule costs 3 (`self.size()` 2, `<` 1), the second 1 + ⌈3,145,727 × 0.1⌉;
    // an unbounded list holds up to 3 MiB / 3 strings.
    let schema = Schema::parse(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"names": {
            "type": "array",
            "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 5"}, {"rule": "self.matches('^a+$')"}]},
        }}}}}),
        false,
    )
    .expect("schema");
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations";
    let rules = &schema.root.properties["spec"].properties["names"].items.as_ref().unwrap().rules;
    assert_eq!((rules[0].cost.unwrap().rule, rules[1].cost.unwrap().rule), (3, 314_574));
    let contributed = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
    assert_eq!(
        cost_messages(&schema),
        [
            format!("{at}[1].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {TRY}"),
            // 314,574 × 1,048,576 first, then 3 × 1,048,576 (over 1% of the limit).
            format!("{at}[1].rule: {contributed}"),
            format!("{at}[0].rule: {contributed}"),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"
            ),
        ]
    );
}

#[test]
fn the_total_over_the_schema_is_bounded() {
    // Twelve rules of 9,000,002 each: none over the per-rule limit, 108,000,024 together.
    let rules: Vec<Value> = (0..12).map(|_| json!({"rule": "self.all(x, x.matches('^a'))"})).collect();
    let schema = names_schema(Value::Array(rules), json!({"maxItems": 1_000_000}), json!({"maxLength": 10}));
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations";
    let mut expected: Vec<String> = (0..4)
        .map(|i| {
            format!("{at}[{i}].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema")
        })
        .collect();
    expected.push(format!(
        "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.080000x {TRY}"
    ));
    assert_eq!(cost_messages(&schema), expected);
    // Unchanged by an update: only the total is checked.
    let single = names_schema(json!([{"rule": "self.all(x, x.matches('^a'))"}]), json!({"maxItems": 2_000_000}), json!({"maxLength": 10}));
    assert!(single.cost_errors("spec.validation.openAPIV3Schema", false).is_empty());
}

/// apiextensions-apiserver's `TestCostEstimation` (v1.36): each schema (generated with no
/// bound, then with `n` as its `maxItems`/`maxProperties`/`maxLength`) has one rule whose
/// estimated cost is upstream's figure exactly.
#[test]
fn costs_match_upstreams_estimates() {
    type Generator = Box<dyn Fn(Option<i64>) -> Value>;
    fn with(mut schema: Value, key: &str, n: Option<i64>) -> Value {
        if let Some(n) = n {
            schema[key] = json!(n);
        }
        schema
    }
    fn typed(t: &str) -> Value {
        match t {
            "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
            "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
            other => json!({"type": other}),
        }
    }
    fn ruled(mut schema: Value, rule: &str) -> Value {
        schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
        schema
    }
    fn object() -> Value {
        json!({"type": "object", "required": ["required"], "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}})
    }
    let array = move |t: &'static str, rule: &'static str| -> Generator {
        Box::new(move |n| ruled(with(json!({"type": "array", "items": typed(t)}), "maxItems", n), rule))
    };
    let array_of_arrays = move |t: &'static str, rule: &'static str| -> Generator {
        Box::new(move |n| ruled(with(json!({"type": "array", "items": {"type": "array", "items": {"type": t}}}), "maxItems", n), rule))
    };
    let object_array = move |rule: &'static str| -> Generator {
        Box::new(move |n| ruled(with(json!({"type": "array", "items": object()}), "maxItems", n), rule))
    };
    let map_array = move |t: &'static str, rule: &'static str| -> Generator {
        Box::new(move |n| {
            ruled(with(json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": t}}}), "maxItems", n), rule)
        })
    };
    let map_of = move |item: fn() -> Value, rule: &'static str| -> Generator {
        Box::new(move |n| ruled(with(json!({"type": "object", "additionalProperties": item()}), "maxProperties", n), rule))
    };
    let map = move |t: &'static str, rule: &'static str| -> Generator {
        Box::new(move |n| ruled(with(json!({"type": "object", "additionalProperties": typed(t)}), "maxProperties", n), rule))
    };
    let string = move |rule: &'static str| -> Generator { Box::new(move |n| ruled(with(json!({"type": "string"}), "maxLength", n), rule)) };
    let nested = move |all: bool, rule: &'static str| -> Generator {
        Box::new(move |n| {
            let inner = if all { with(object(), "maxProperties", n) } else { object() };
            let items = with(json!({"type": "object", "additionalProperties": inner}), "maxProperties", n);
            let outer = json!({"type": "array", "items": items});
            ruled(if all { with(outer, "maxItems", n) } else { outer }, rule)
        })
    };
    let strings = move |rule: &'static str| -> Generator {
        Box::new(move |n| {
            ruled(with(json!({"type": "array", "items": with(json!({"type": "string"}), "maxLength", n)}), "maxItems", n), rule)
        })
    };
    const EXCEEDS: u64 = 100_000_000;
    let cases: Vec<(&str, Generator, u64, i64, u64)> = vec![
        ("number array with all", array("number", "self.all(x, true)"), 4_718_591, 10, 32),
        ("string array with all", array("string", "self.all(x, true)"), 3_145_727, 20, 62),
        ("boolean array with all", array("boolean", "self.all(x, true)"), 1_887_437, 5, 17),
        ("array of number arrays with all", array_of_arrays("number", "self.all(x, true)"), 3_145_727, 100, 302),
        ("array of objects with all", object_array("self.all(x, true)"), 555_128, 50, 152),
        ("map of numbers with all", map("number", "self.all(x, true)"), 1_348_169, 10, 32),
        ("map of strings with all", map("string", "self.all(x, true)"), 1_179_647, 3, 11),
        ("map of booleans with all", map("boolean", "self.all(x, true)"), 943_718, 100, 302),
        ("string with contains", string("self.contains('test')"), 314_574, 10, 5),
        ("string with startsWith", string("self.startsWith('test')"), 2, 15, 2),
        ("string with endsWith", string("self.endsWith('test')"), 2, 30, 2),
        ("concat string", string(r#"size(self + "hello") > size("hello")"#), 314_578, 4, 7),
        ("index of array with numbers", array("number", "self[1] == 0.0"), 2, 5000, 2),
        ("index of array with strings", array("string", "self[1] == self[1]"), 314_577, 8, 314_577),
        ("O(n^2) loop with numbers", array("number", "self.all(x, self.all(y, true))"), EXCEEDS, 10, 352),
        ("O(n^3) loop with numbers", array("number", "self.all(x, self.all(y, self.all(z, true)))"), EXCEEDS, 10, 3552),
        ("regex matches simple", string(r#"self.matches("x")"#), 314_574, 50, 22),
        ("regex matches empty string", string(r#""".matches("(((((((((())))))))))[0-9]")"#), 7, 10, 7),
        ("regex matches empty regex", string(r#"self.matches("")"#), 1, 100, 1),
        (
            "map of strings with value length",
            Box::new(|n| {
                let values = with(json!({"type": "string"}), "maxLength", n);
                ruled(
                    with(json!({"type": "object", "additionalProperties": values}), "maxProperties", n),
                    "self.all(x, x.contains(self[x]))",
                )
            }),
            2_752_507,
            10,
            72,
        ),
        ("set array maxLength to zero", array("number", "self[3] == 0.0"), 2, 0, 2),
        ("set map maxLength to zero", map("number", r#"self["x"] == 0.0"#), 2, 0, 2),
        ("set string maxLength to zero", string(r#"self == "x""#), 2, 0, 1),
        (
            "set bytes maxLength to zero",
            Box::new(|n| ruled(with(json!({"type": "string", "format": "byte"}), "maxLength", n), r#"self == b"x""#)),
            2,
            0,
            1,
        ),
        (
            "set maxLength greater than estimated maxLength",
            array("number", "self.all(x, x == 0.0)"),
            6_291_454,
            3 * 1024 * 2048,
            25_165_826,
        ),
        (
            "nested types with root rule with all supporting maxLength",
            nested(true, r#"self.all(x, x["y"].required == "z")"#),
            7_340_027,
            10,
            72,
        ),
        (
            "nested types with root rule with one supporting maxLength",
            nested(false, r#"self.all(x, x["y"].required == "z")"#),
            7_340_027,
            10,
            7_340_027,
        ),
        ("int-or-string array with all", array("int-or-string", "self.all(x, true)"), 4_718_591, 10, 32),
        ("index of array with int-or-strings", array("int-or-string", "self[0] == 5"), 3, 10, 3),
        ("index of array with booleans", array("boolean", "self[0] == false"), 2, 25, 2),
        ("index of array of objects", object_array("self[0] == null"), 2, 422, 2),
        ("index of array of array of numbers", array_of_arrays("number", "self[0][0] == -1.0"), 3, 51, 3),
        ("array of number maps with all", map_array("number", "self.all(x, x.y == 25.2)"), 6_291_452, 12, 74),
        ("index of array of number maps", map_array("number", "self[0].x > 2.0"), 4, 3000, 4),
        ("duration array with all", array("duration", "self.all(x, true)"), 2_359_295, 5, 17),
        ("index of duration array", array("duration", "self[0].getHours() == 2"), 4, 525, 4),
        ("date array with all", array("date", "self.all(x, true)"), 725_936, 15, 47),
        ("index of date array", array("date", "self[2].getDayOfMonth() == 13"), 4, 42, 4),
        ("date-time array with all", array("date-time", "self.all(x, true)"), 428_963, 25, 77),
        ("index of date-time array", array("date-time", "self[2].getMinutes() == 45"), 4, 99, 4),
        ("map of int-or-strings with all", map("int-or-string", "self.all(x, true)"), 1_348_169, 15, 47),
        ("map of objects with all", map_of(object, "self.all(x, true)"), 428_963, 20, 62),
        (
            "map of number maps with all",
            map_of(|| json!({"type": "object", "additionalProperties": {"type": "number"}}), "self.all(x, true)"),
            1_179_647,
            10,
            32,
        ),
        (
            "map of number arrays with all",
            map_of(|| json!({"type": "array", "items": {"type": "number"}}), "self.all(x, true)"),
            1_179_647,
            25,
            77,
        ),
        ("map of durations with all", map("duration", "self.all(x, true)"), 1_048_577, 5, 17),
        ("map of dates with all", map("date", "self.all(x, true)"), 524_288, 10, 32),
        ("map of date-times with all", map("date-time", "self.all(x, true)"), 349_526, 25, 77),
        ("extended library regex find", string("self.find('[0-9]+') == ''"), 629_147, 10, 11),
        ("extended library join", strings("self.join(' ') == 'aa bb'"), 329_853_068_905, 10, 43),
        ("extended library isSorted", strings("self.isSorted() == true"), 329_854_432_052, 10, 52),
        (
            "extended library replace",
            Box::new(move |n| {
                let properties = json!({"str": with(json!({"type": "string"}), "maxLength", n), "before": {"type": "string", "maxLength": 2}, "after": {"type": "string", "maxLength": 4}});
                ruled(json!({"type": "object", "properties": properties}), "self.str.replace(self.before, self.after) == 'does not matter'")
            }),
            629_154,
            4,
            12,
        ),
        (
            "extended library split",
            Box::new(move |n| {
                let s = with(json!({"type": "string"}), "maxLength", n);
                ruled(json!({"type": "object", "properties": {"str": s.clone(), "separator": s}}), "self.str.split(self.separator) == []")
            }),
            629_160,
            10,
            22,
        ),
        ("extended library lowerAscii", string("self.lowerAscii() == 'lower!'"), 314_575, 10, 6),
        ("check cost of size call", map("integer", "oldSelf.size() == self.size()"), 5, 10, 5),
        ("check cost of timestamp comparison", map("date-time", r#"self["a"] == self["b"]"#), 8, 7, 8),
        ("check cost of duration comparison", map("duration", r#"self["c"] == self["d"]"#), 8, 42, 8),
        (
            "enums with maxLength equals to the longest possible value",
            Box::new(|n| {
                ruled(with(json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}), "maxLength", n), "self.contains('A')")
            }),
            2,
            1000,
            401,
        ),
        (
            "IntOrString type with quantity rule",
            Box::new(|n| ruled(with(json!({"x-kubernetes-int-or-string": true}), "maxLength", n), "isQuantity(self)")),
            314_574,
            20,
            9,
        ),
    ];
    let cost = |schema: Value| {
        let parsed = Schema::parse(&json!({"type": "object", "properties": {"x": schema}}), false).unwrap_or_else(|e| panic!("{e}"));
        parsed.root.properties["x"].rules[0].cost.expect("checked").rule
    };
    let mut wrong = Vec::new();
    for (name, generate, calculated, n, set) in &cases {
        let unbounded = cost(generate(None));
        if (*calculated == EXCEEDS && unbounded < EXCEEDS) || (*calculated != EXCEEDS && unbounded != *calculated) {
            wrong.push(format!("{name}: {unbounded}, upstream {calculated}"));
        }
        let bounded = cost(generate(Some(*n)));
        if bounded != *set {
            wrong.push(format!("{name} (bound {n}): {bounded}, upstream {set}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// apiextensions-apiserver's `TestCelCompilation` (v1.36): rules on a schema, each compiling
/// or refused with an error containing upstream's words.
#[test]
fn compilation_matches_upstreams_cases() {
    let integer = json!({"type": "integer"});
    let object = json!({"type": "object", "properties": {
        "i": {"type": "integer"}, "b": {"type": "boolean"}, "s": {"type": "string"},
        "a": {"type": "array", "items": {"type": "integer"}},
        "o": {"type": "object", "properties": {
            "i": {"type": "integer"}, "b": {"type": "boolean"}, "s": {"type": "string"},
            "a": {"type": "array", "items": {"type": "integer"}},
            "o": {"type": "object"},
        }},
    }});
    let strings = json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}});
    let escaping = json!({"type": "object", "properties": {"namespace": strings, "if": {"type": "integer"}, "self": {"type": "integer"}}});
    let optional = |rule: &str| json!({"rule": rule, "optionalOldSelf": true});
    let plain = |rule: &str| json!({"rule": rule});
    let cases: Vec<(Value, Value, Option<&str>)> = vec![
        (object.clone(), plain("self.?i.orValue(1) > 0 && oldSelf.?o.?s.orValue('') == ''"), None),
        (object.clone(), plain("self.?nope.hasValue()"), Some("undefined field 'nope'")),
        (object.clone(), plain("self.?s.orValue(1) > 0"), Some("orValue")),
        (integer.clone(), optional("self >= oldSelf.value()"), None),
        (integer.clone(), optional("self >= oldSelf.orValue(1)"), None),
        (integer.clone(), optional("oldSelf.hasValue() ? self >= oldSelf.value() : true"), None),
        (integer.clone(), optional("self >= oldSelf"), Some("optional")),
        (integer.clone(), optional("self >= oldSelf.orValue('')"), Some("orValue")),
        (object.clone(), optional("self.i >= oldSelf.i.value()"), None),
        (object.clone(), optional("self.s == oldSelf.s.value()"), None),
        (object.clone(), optional("self.o == oldSelf.o.value()"), None),
        (object.clone(), optional("self.o.o == oldSelf.o.o.value()"), None),
        (object.clone(), optional("self.o.i >= oldSelf.o.i.orValue(1)"), None),
        (object.clone(), optional("oldSelf.hasValue() ? self.o.i >= oldSelf.o.i.value() : true"), None),
        (object.clone(), optional("self.o.i >= oldSelf.o.i"), Some("optional")),
        (object.clone(), optional("self.o.i >= oldSelf.o.s.orValue(0)"), Some("orValue")),
        (json!({"type": "string", "format": "byte"}), plain("string(self).endsWith('s')"), None),
        (json!({"type": "boolean"}), plain("self == true"), None),
        (json!({"type": "number"}), plain("self > 1.0"), None),
        (json!({"type": "number"}), plain("size(self) == 10"), Some("compilation failed")),
        (integer.clone(), plain("size(self) == 10"), Some("compilation failed")),
        (json!({"type": "array", "items": strings}), plain("size(self[0][0]) == 10"), None),
        (json!({"type": "object", "additionalProperties": {"type": "boolean"}}), plain("size(self) > 0"), None),
        (escaping.clone(), plain("size(self.__namespace__[0]) == 10"), None),
        (escaping.clone(), plain("self.__if__ == 10"), None),
        (escaping.clone(), plain("self.self == 10"), None),
        (escaping.clone(), plain("size(self.namespace[0]) == 10"), None),
        (escaping.clone(), plain("self == 10"), Some("found no matching overload")),
        (json!({"type": "object"}), plain("42"), Some("must evaluate to a bool")),
        (json!({"type": "string"}), json!({"rule": "self.startsWith('s')", "messageExpression": "\"should start with 's'\""}), None),
        (integer, json!({"rule": "self == 5", "messageExpression": "42"}), Some("messageExpression must evaluate to a string")),
    ];
    for (schema, rule, expected) in cases {
        let mut node = schema;
        node["x-kubernetes-validations"] = json!([rule]);
        let outcome = Schema::parse(&json!({"type": "object", "properties": {"x": node}}), false);
        match (expected, outcome) {
            (None, Err(e)) => panic!("{rule}: {e}"),
            (Some(words), Ok(_)) => panic!("{rule}: compiles, upstream refuses it ({words})"),
            (Some(words), Err(e)) => assert!(e.to_string().contains(words), "{rule}: {e}"),
            (None, Ok(_)) => {}
        }
    }
}

/// cel-go's sets and lists extensions estimate their own calls: `sets.contains` m × n
/// comparisons and a call, `distinct` 2 × n² and a new list.
#[test]
fn extension_costs_are_their_own_estimates() {
    let cost = |rule: &str| {
        let list = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}, "x-kubernetes-validations": [{"rule": rule}]});
        let schema = Schema::parse(&json!({"type": "object", "properties": {"x": list}}), false).unwrap_or_else(|e| panic!("{e}"));
        schema.root.properties["x"].rules[0].cost.expect("checked").rule
    };
    // self 1, [1] 10; 10 × 1 comparisons and the call.
    assert_eq!(cost("sets.contains(self, [1])"), 1 + 10 + 10 + 1);
    // self 1; 2 × 10 × 10, the call and the list 11; size() 1; == 1.
    assert_eq!(cost("self.distinct().size() == 1"), 1 + 211 + 1 + 1);
}

/// apiextensions-apiserver's `TestValidateCustomResourceDefinitionValidation` cost cases
/// (v1.36): which rules are refused, and where.
#[test]
fn cost_refusals_match_upstreams_cases() {
    let nested = |items_max: Option<i64>, map_max: Option<i64>, key: Value| {
        let mut items =
            json!({"type": "object", "additionalProperties": {"type": "object", "required": ["key"], "properties": {"key": key}}});
        if let Some(max) = map_max {
            items["maxProperties"] = json!(max);
        }
        let mut value =
            json!({"type": "array", "items": items, "x-kubernetes-validations": [{"rule": "self.all(x, x.all(y, x[y].key == x[y].key))"}]});
        if let Some(max) = items_max {
            value["maxItems"] = json!(max);
        }
        json!({"type": "object", "properties": {"value": value}})
    };
    let errors = |schema: Value| {
        let schema = Schema::parse(&schema, false).unwrap_or_else(|e| panic!("{e}"));
        cost_messages(&schema)
    };
    let rule = "spec.validation.openAPIV3Schema.properties[value].x-kubernetes-validations[0].rule";
    let refused = |messages: Vec<String>| {
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].starts_with(&format!("{rule}: Forbidden: estimated rule cost exceeds budget by factor of ")), "{messages:?}");
        assert!(messages[1].starts_with(&format!("{rule}: Forbidden: contributed to estimated rule cost total")), "{messages:?}");
        assert!(messages[2].starts_with("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total"));
    };
    // "forbid double-nested rule with no limit set", "... with one limit set".
    refused(errors(nested(None, None, json!({"type": "string"}))));
    refused(errors(nested(None, None, json!({"type": "string", "maxLength": 10}))));
    // "allow double-nested rule with three limits set", "... one limit set on outermost array".
    assert_eq!(errors(nested(Some(10), Some(10), json!({"type": "string", "maxLength": 10}))), Vec::<String>::new());
    assert_eq!(errors(nested(Some(4), None, json!({"type": "number"}))), Vec::<String>::new());
    // "forbid validation rules where cost total exceeds total limit": 2,001 per item of a
    // list of 100,000, per value of a map of 1,000, and 4 for the integer.
    let contains = json!([{"rule": "self.contains('keyword')"}]);
    let schema = json!({"type": "object", "properties": {
        "list": {"type": "array", "maxItems": 100_000, "items": {"type": "string", "maxLength": 5000, "x-kubernetes-validations": contains}},
        "map": {"type": "object", "maxProperties": 1000, "additionalProperties": {"type": "string", "maxLength": 5000, "x-kubernetes-validations": contains}},
        "number": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 50 && self < 100"}]},
    }});
    let at = "spec.validation.openAPIV3Schema.properties";
    let contributed = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
    assert_eq!(
        errors(schema),
        [
            format!(
                "{at}[list].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 20.0x {TRY}"
            ),
            format!("{at}[list].items.x-kubernetes-validations[0].rule: {contributed}"),
            format!("{at}[map].additionalProperties.x-kubernetes-validations[0].rule: {contributed}"),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 2.0x {TRY}"
            ),
        ]
    );
    // A `messageExpression` is held to the per-expression limit (without the node's
    // cardinality) and counts in the total.
    let strings = |rule: Value, bounds: Value| {
        let mut f = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [rule]});
        f.as_object_mut().unwrap().extend(bounds.as_object().unwrap().clone());
        json!({"type": "object", "properties": {"f": f}})
    };
    let message = "spec.validation.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression";
    let eight =
        json!({"rule": "true", "messageExpression": "self[0] + self[1] + self[2] + self[3] + self[4] + self[5] + self[6] + self[7]"});
    let messages = errors(strings(eight, json!({})));
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].starts_with(&format!("{message}: Forbidden: estimated messageExpression cost exceeds budget by factor of 1.")),
        "{messages:?}"
    );
    let unbounded = json!({"rule": "true", "messageExpression": "string(self[0]) + string(self[1]) + string(self[2])"});
    assert_eq!(
        errors(strings(unbounded, json!({}))),
        [
            format!("{message}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {TRY}"),
            format!("{message}: {contributed}"),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {TRY}"
            ),
        ]
    );
    let lower = json!({"rule": "self.all(x, self.exists_one(y, x.lowerAscii() == y.lowerAscii()))"});
    assert_eq!(errors(strings(lower, json!({"maxItems": 5, "items": {"type": "string", "maxLength": 5}}))), Vec::<String>::new());
}
