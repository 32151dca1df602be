//! CustomResourceDefinitions (`apiextensions-apiserver/pkg/registry/customresourcedefinition`).

use serde_json::{Value, json};

use super::customresources::CLEANUP_FINALIZER;
use super::schema::structural::structural_errors;
use super::schema::{Schema, SchemaError};
use crate::registry::DeletionFlow;
use crate::registry::strategy::Strategy;
use crate::selectors::{dns1035_label_errors, dns1123_subdomain_errors};
use crate::status::{BadValue, FieldError, FieldErrorType};

/// Upstream's `strategy` of the apiextensions server: the generation follows the spec; a delete
/// first marks the definition `Terminating` with the cleanup finalizer, so that its objects are
/// deleted before it (upstream's `REST.Delete`; `controllers::customresourcedefinitions`
/// deletes them and removes the finalizer).
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn deletion_flow(&self, object: &Value) -> DeletionFlow {
        let _ = object;
        DeletionFlow::MarkFirst
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        let mut errs = validate_definition(object);
        errs.extend(schema_errors(object, None, true, true));
        errs
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = validate_definition(new);
        errs.extend(schema_errors(new, Some(old), must_be_structural(old), requires_pruned_defaults(old)));
        if old["spec"]["group"] != new["spec"]["group"] {
            let group = new["spec"]["group"].as_str().unwrap_or_default();
            errs.push(FieldError::invalid("spec.group", group, "field is immutable"));
        }
        errs
    }

    fn mark_deleting(&self, object: &mut Value) {
        let finalizers = object["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            let mut finalizers = finalizers;
            finalizers.push(json!(CLEANUP_FINALIZER));
            object["metadata"]["finalizers"] = Value::Array(finalizers);
        }
        set_condition(
            object,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; instance deletion will begin soon",
        );
    }
}

/// Upstream's `ValidateCustomResourceDefinition`, the parts kapi checks so far: the name, group,
/// scope, names, versions (unique DNS-1035 names, a schema each, exactly one storage version),
/// printer columns and stored versions, with upstream's paths and wording. The schemas'
/// structural rules and CEL are not checked here yet.
fn validate_definition(definition: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &definition["spec"];
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    let (group, plural) = (text(&spec["group"]), text(&spec["names"]["plural"]));
    let name = text(&definition["metadata"]["name"]);
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid("metadata.name", name.as_str(), r#"must be spec.names.plural+"."+spec.group"#));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if let errors @ [_, ..] = dns1123_subdomain_errors(&group).as_slice() {
        errs.push(FieldError::invalid("spec.group", group.as_str(), errors.join(",")));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid("spec.group", group.as_str(), "should be a domain with at least one dot"));
    }
    match spec["scope"].as_str().unwrap_or_default() {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported("spec.scope", other, &["Cluster", "Namespaced"])),
    }
    let versions = spec["versions"].as_array().map_or(&[][..], Vec::as_slice);
    let mut seen = std::collections::BTreeSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let version_name = text(&version["name"]);
        unique &= seen.insert(version_name.clone());
        if let errors @ [_, ..] = dns1035_label_errors(&version_name).as_slice() {
            errs.push(FieldError::invalid(format!("spec.versions[{i}].name"), version_name.as_str(), errors.join(",")));
        }
        if !version["schema"]["openAPIV3Schema"].is_object() {
            errs.push(FieldError::required(format!("spec.versions[{i}].schema.openAPIV3Schema"), ""));
        }
        let columns = version["additionalPrinterColumns"].as_array().map_or(&[][..], Vec::as_slice);
        for (j, column) in columns.iter().enumerate() {
            errs.extend(validate_column(column, &format!("spec.versions[{i}].additionalPrinterColumns[{j}]")));
        }
    }
    // Upstream prints the whole list as Go would; kapi leaves the value out.
    if !unique {
        errs.push(FieldError::new(FieldErrorType::Invalid, "spec.versions", BadValue::Omitted, "must contain unique version names"));
    }
    if versions.iter().filter(|v| v["storage"] == true).count() != 1 {
        errs.push(FieldError::new(
            FieldErrorType::Invalid,
            "spec.versions",
            BadValue::Omitted,
            "must have exactly one version marked as storage version",
        ));
    }
    let names = &spec["names"];
    for field in ["plural", "singular", "kind", "listKind"] {
        if text(&names[field]).is_empty() {
            errs.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    errs.extend(validate_names(names));
    errs.extend(super::conversion::validate(&spec["conversion"]));
    if spec["conversion"]["strategy"] == "Webhook" && spec["preserveUnknownFields"] == true {
        errs.push(FieldError::invalid("spec.conversion.strategy", "Webhook", "must be None if spec.preserveUnknownFields is true"));
    }
    errs
}

/// `ValidateCustomResourceDefinitionNames`.
fn validate_names(names: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |field: &str| names[field].as_str().unwrap_or_default().to_owned();
    for field in ["plural", "singular"] {
        let value = text(field);
        if let errors @ [_, ..] = dns1035_label_errors(&value).as_slice()
            && !value.is_empty()
        {
            errs.push(FieldError::invalid(format!("spec.names.{field}"), value.as_str(), errors.join(",")));
        }
    }
    for field in ["kind", "listKind"] {
        let value = text(field);
        if let errors @ [_, ..] = dns1035_label_errors(&value.to_lowercase()).as_slice()
            && !value.is_empty()
        {
            let detail = format!("may have mixed case, but should otherwise match: {}", errors.join(","));
            errs.push(FieldError::invalid(format!("spec.names.{field}"), value.as_str(), detail));
        }
    }
    for field in ["shortNames", "categories"] {
        for (i, value) in names[field].as_array().into_iter().flatten().enumerate() {
            let value = value.as_str().unwrap_or_default();
            if let errors @ [_, ..] = dns1035_label_errors(value).as_slice() {
                errs.push(FieldError::invalid(format!("spec.names.{field}[{i}]"), value, errors.join(",")));
            }
        }
    }
    let (kind, list_kind) = (text("kind"), text("listKind"));
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid("spec.names.listKind", list_kind.as_str(), "kind and listKind may not be the same"));
    }
    errs
}

/// `ValidateCustomResourceColumnDefinition` (the JSONPath's own checks aside).
fn validate_column(column: &Value, path: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errs = Vec::new();
    let text = |field: &str| column[field].as_str().unwrap_or_default();
    if text("name").is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    match text("type") {
        "" => errs.push(FieldError::required(format!("{path}.type"), format!("must be one of {TYPES}"))),
        t if !TYPES.split(',').any(|known| known == t) => {
            errs.push(FieldError::invalid(format!("{path}.type"), t, format!("must be one of {TYPES}")))
        }
        _ => {}
    }
    let format = text("format");
    if !format.is_empty() && !FORMATS.split(',').any(|known| known == format) {
        errs.push(FieldError::invalid(format!("{path}.format"), format, format!("must be one of {FORMATS}")));
    }
    if text("jsonPath").is_empty() {
        errs.push(FieldError::required(format!("{path}.JSONPath"), ""));
    }
    errs
}

/// What is wrong with the versions' schemas: their structural-schema violations
/// (`schema::structural`, upstream's `ValidateStructural`) while the definition must be
/// structural ([`must_be_structural`]), else what kapi could not serve (`schema::Schema::parse`,
/// which upstream's structural-schema reading also refuses and reports only when nothing else
/// is wrong; its CEL rules are compiled there), and then, for a structural one, its defaults
/// (`Schema::default_errors`, upstream's `ValidateDefaults`; `require_pruned_defaults` unless
/// the stored definition already had a default with unknown fields), and then the CEL rules'
/// estimated costs (`Schema::cost_errors`; on update, not each rule's own for a version whose
/// schema `old` already had). Each schema is checked where upstream's internal form has it
/// ([`schemas`]).
fn schema_errors(definition: &Value, old: Option<&Value>, structural: bool, require_pruned_defaults: bool) -> Vec<FieldError> {
    let preserve_unknown_fields = definition["spec"]["preserveUnknownFields"] == true;
    let versions = definition["spec"]["versions"].as_array().map_or(&[][..], Vec::as_slice);
    let mut errs = Vec::new();
    for (at, version, schema) in schemas(versions) {
        let unchanged = old.is_some_and(|old| {
            let old_versions = old["spec"]["versions"].as_array().map_or(&[][..], Vec::as_slice);
            old_versions.iter().any(|v| v["name"] == version["name"] && v.get("schema") == Some(schema))
        });
        let Some(schema) = schema.get("openAPIV3Schema") else { continue };
        let root = format!("{at}.openAPIV3Schema");
        if structural {
            let violations = structural_errors(schema, &root);
            if !violations.is_empty() {
                errs.extend(violations);
                continue;
            }
        }
        match Schema::parse(schema, preserve_unknown_fields) {
            Err(SchemaError(mut error)) => {
                error.field = format!("{at}.{}", error.field);
                // A path in the detail (`oldSelf cannot be used ... within <path>`) is the
                // definition's too.
                error.detail = error.detail.replace(" within openAPIV3Schema", &format!(" within {root}"));
                errs.push(error);
            }
            Ok(parsed) => {
                // Upstream compiles the rules only for a structural schema whose defaults are
                // valid.
                let defaults = if structural { parsed.default_errors(&root, require_pruned_defaults) } else { Vec::new() };
                if defaults.is_empty() && (structural || structural_errors(schema, &root).is_empty()) {
                    errs.extend(parsed.cost_errors(&root, !unchanged));
                }
                errs.extend(defaults);
            }
        }
    }
    errs
}

/// The schemas a definition's validation checks, each with the path upstream reports it at:
/// one at `spec.validation` when every version has the same (upstream's conversion to the
/// internal version moves it there, `Convert_v1_CustomResourceDefinitionSpec_To_...`), else
/// each version's at `spec.versions[i].schema`; with the version it is (the first one for
/// `spec.validation`).
fn schemas(versions: &[Value]) -> Vec<(String, &Value, &Value)> {
    if let Some(version) = versions.first()
        && let Some(first) = version.get("schema").filter(|s| !s.is_null())
        && versions.iter().all(|v| v.get("schema") == Some(first))
    {
        return vec![("spec.validation".to_owned(), version, first)];
    }
    versions.iter().enumerate().filter_map(|(i, v)| v.get("schema").map(|s| (format!("spec.versions[{i}].schema"), v, s))).collect()
}

/// Upstream's `requirePrunedDefaults`: off when the stored definition has a default that
/// pruning would change, so that it can still be updated.
fn requires_pruned_defaults(old: &Value) -> bool {
    let preserve_unknown_fields = old["spec"]["preserveUnknownFields"] == true;
    old["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|version| version.get("schema")?.get("openAPIV3Schema"))
        .all(|schema| Schema::parse(schema, preserve_unknown_fields).map_or(true, |s| !s.has_unpruned_defaults()))
}

/// Upstream's `requireStructuralSchema` on update: a definition must be structural unless the
/// stored one already was not (it may then be changed without being made structural).
fn must_be_structural(old: &Value) -> bool {
    old["spec"]["versions"].as_array().into_iter().flatten().enumerate().all(|(i, version)| {
        version
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_none_or(|schema| structural_errors(schema, &format!("spec.versions[{i}].schema.openAPIV3Schema")).is_empty())
    })
}

/// Sets one of `status.conditions` (upstream's `SetCRDCondition`): its transition time changes
/// only when its status does. Whether anything changed.
pub fn set_condition(definition: &mut Value, kind: &str, status: &str, reason: &str, message: &str) -> bool {
    let conditions = &mut definition["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else { return false };
    let wanted = |at: Value| json!({"type": kind, "status": status, "lastTransitionTime": at, "reason": reason, "message": message});
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            let at =
                if existing["status"] == status { existing["lastTransitionTime"].clone() } else { json!(crate::registry::objects::now()) };
            let new = wanted(at);
            let changed = *existing != new;
            *existing = new;
            changed
        }
        None => {
            conditions.push(wanted(json!(crate::registry::objects::now())));
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> Value {
        json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}],
            },
        })
    }

    fn messages(definition: &Value) -> Vec<String> {
        validate_definition(definition).iter().map(|e| format!("{}: {}", e.field, e.detail)).collect()
    }

    #[test]
    fn definitions_are_validated_as_upstream() {
        assert!(messages(&widgets()).is_empty(), "{:?}", messages(&widgets()));
        let mut wrong = widgets();
        wrong["metadata"]["name"] = json!("gadgets.example.com");
        wrong["spec"]["scope"] = json!("Galaxy");
        wrong["spec"]["names"]["kind"] = json!("Widget_");
        wrong["spec"]["versions"][0]["storage"] = json!(false);
        wrong["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "A", "type": "text", "jsonPath": ".a"}]);
        assert_eq!(
            messages(&wrong),
            [
                r#"metadata.name: must be spec.names.plural+"."+spec.group"#,
                "spec.scope: supported values: \"Cluster\", \"Namespaced\"",
                "spec.versions[0].additionalPrinterColumns[0].type: must be one of boolean,date,integer,number,string",
                "spec.versions: must have exactly one version marked as storage version",
                "spec.names.kind: may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        let mut dotless = widgets();
        dotless["spec"]["group"] = json!("example");
        dotless["metadata"]["name"] = json!("widgets.example");
        assert_eq!(messages(&dotless), ["spec.group: should be a domain with at least one dot"]);
    }

    #[test]
    fn a_delete_marks_with_the_cleanup_finalizer() {
        let mut crd = json!({"metadata": {"name": "widgets.example.com", "finalizers": ["other"]}});
        assert!(CustomResourceDefinitionStrategy.deletion_flow(&crd).marks_first());
        CustomResourceDefinitionStrategy.mark_deleting(&mut crd);
        CustomResourceDefinitionStrategy.mark_deleting(&mut crd);
        assert_eq!(crd["metadata"]["finalizers"], json!(["other", CLEANUP_FINALIZER]));
        assert_eq!(crd["status"]["conditions"][0]["type"], "Terminating");
        assert_eq!(crd["status"]["conditions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn schemas_that_cannot_be_served_are_refused() {
        let crd = |schema: Value| json!({"spec": {"versions": [{"name": "v1"}, {"name": "v2", "schema": {"openAPIV3Schema": schema}}]}});
        assert!(schema_errors(&crd(json!({"type": "object"})), None, true, true).is_empty());
        let messages = |errs: Vec<FieldError>| errs.iter().map(ToString::to_string).collect::<Vec<_>>();
        // A definition that may stay non-structural (its stored form was not) is still refused
        // what kapi cannot serve.
        let errs = schema_errors(&crd(json!({"type": "object", "properties": {"spec": {"type": 5}}})), None, false, true);
        assert_eq!(messages(errs), ["spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Invalid value: 5: must be a string"]);
        // A new one must be structural, and upstream's violations are what it is told.
        let errs = schema_errors(&crd(json!({"type": "object", "properties": {"spec": {"properties": {}}}})), None, true, true);
        assert_eq!(
            messages(errs),
            [
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
        assert!(!must_be_structural(&crd(json!({"properties": {}}))));
    }

    #[test]
    fn rule_costs_are_checked_at_write_and_not_again_for_an_unchanged_schema() {
        let crd = |max_items: i64| {
            let names = json!({"type": "array", "maxItems": max_items, "items": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^a'))"}]});
            json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {"names": names}}}}]}})
        };
        let messages = |errs: Vec<FieldError>| errs.iter().map(ToString::to_string).collect::<Vec<_>>();
        // 2 + 2,000,000 × 9: over the per-rule limit, under the total one.
        let expensive = crd(2_000_000);
        assert_eq!(
            messages(schema_errors(&expensive, None, true, true)),
            [
                "spec.validation.openAPIV3Schema.properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.8x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
            ]
        );
        // An update keeping the version's schema is not refused what was stored (upstream's
        // `suppressPerExpressionCost`); one changing it is.
        assert!(schema_errors(&expensive, Some(&expensive), true, true).is_empty());
        assert_eq!(schema_errors(&expensive, Some(&crd(10)), true, true).len(), 1);
        assert!(schema_errors(&crd(10), None, true, true).is_empty());
    }

    #[test]
    fn defaults_must_be_pruned_and_valid() {
        let crd = |properties: Value| {
            let schema =
                json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}}});
            json!({"spec": {"versions": [{"name": "v1", "schema": schema}, {"name": "v2", "schema": schema}]}})
        };
        let messages = |errs: Vec<FieldError>| errs.iter().map(ToString::to_string).collect::<Vec<_>>();
        let wrong = crd(json!({
            "a": {"type": "object", "properties": {"b": {"type": "string"}}, "default": {"b": "x", "c": 1}},
            "l": {"type": "array", "items": {"type": "string", "default": 5}},
            "n": {"type": "integer", "maximum": 5, "default": 7},
            "s": {"type": "string", "default": "abc", "x-kubernetes-validations": [{"rule": "self.startsWith('z')"}]},
            "ok": {"type": "string", "default": "zed", "x-kubernetes-validations": [{"rule": "self.startsWith('z')"}]},
            "t": {"type": "integer", "default": 1, "x-kubernetes-validations": [{"rule": "self > oldSelf", "message": "must grow"}]},
        }));
        assert_eq!(
            messages(schema_errors(&wrong, None, true, true)),
            [
                r#"spec.validation.openAPIV3Schema.properties[spec].properties[a].default: Invalid value: {"b":"x","c":1}: must not have unknown fields"#,
                r#"spec.validation.openAPIV3Schema.properties[spec].properties[l].items.default: Invalid value: "integer":  in body must be of type string: "integer""#,
                "spec.validation.openAPIV3Schema.properties[spec].properties[n].default: Invalid value: 7:  in body should be less than or equal to 5",
                r#"spec.validation.openAPIV3Schema.properties[spec].properties[s].default: Invalid value: "abc": failed rule: self.startsWith('z')"#,
                "spec.validation.openAPIV3Schema.properties[spec].properties[t].default: Invalid value: 1: must grow",
            ]
        );
        // A stored definition with such a default may keep it; non-structural ones are not
        // checked.
        let unpruned = crd(json!({"a": {"type": "object", "properties": {"b": {"type": "string"}}, "default": {"c": 1}}}));
        assert!(schema_errors(&unpruned, None, true, false).is_empty());
        assert!(!requires_pruned_defaults(&unpruned));
        assert!(requires_pruned_defaults(&crd(json!({"b": {"type": "string", "default": "x"}}))));
        assert!(schema_errors(&wrong, None, false, true).is_empty());
    }

    #[test]
    fn defaults_of_resources_metadata_must_make_valid_resources() {
        let template = json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string", "default": "a/b"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "default": {"a b": "x"}},
                "namespace": {"type": "string", "default": "ok"}}},
            "kind": {"type": "string", "default": "Fine"}}});
        let whole = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "default": {"kind": "K", "metadata": {"name": "x", "labels": "nope"}}});
        let good = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "default": {"apiVersion": "v1", "kind": "K", "metadata": {"name": "x"}}});
        let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"template": template, "whole": whole, "good": good}}}}});
        let crd = json!({"spec": {"versions": [{"name": "v1", "schema": schema}]}});
        let messages: Vec<String> = schema_errors(&crd, None, true, true).iter().map(ToString::to_string).collect();
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
        let label_key = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an \
            alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
            '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            messages,
            [
                // Inside an embedded resource's metadata: the object of kind `Validation` the
                // default would make is validated as a resource.
                format!(
                    r#"{at}[template].properties[metadata].properties[labels].default: Invalid value: {{"a b":"x"}}: must result in valid metadata: metadata.labels: Invalid value: "a b": {label_key}"#
                ),
                format!(
                    r#"{at}[template].properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: "a/b": may not contain '/'"#
                ),
                // An embedded resource's default: coerced first, and a coercion error is the
                // only one (its missing `apiVersion` is not reported).
                format!(
                    r#"{at}[whole].default.metadata: Invalid value: {{"labels":"nope","name":"x"}}: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string"#
                ),
            ]
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_their_status_holds() {
        let mut crd = json!({});
        assert!(set_condition(&mut crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"));
        crd["status"]["conditions"][0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        assert!(!set_condition(&mut crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"));
        assert_eq!(crd["status"]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert!(set_condition(&mut crd, "Established", "False", "NotAccepted", "not all names are accepted"));
        assert_ne!(crd["status"]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }
}
