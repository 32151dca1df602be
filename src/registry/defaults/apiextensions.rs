//! `apiextensions.k8s.io/v1` (upstream `apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`).

use kapi_api::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_custom_resource_definition_spec);
    r.add(set_defaults_service_reference);
}

/// The singular name is the lower-case kind, the list kind `<Kind>List`, and versions are not
/// converted (`strategy: None`).
pub fn set_defaults_custom_resource_definition_spec(spec: &mut apiextensions::CustomResourceDefinitionSpec) {
    let names = &mut spec.names;
    if names.singular.as_deref().is_none_or(str::is_empty) {
        names.singular = Some(names.kind.to_lowercase());
    }
    if names.list_kind.as_deref().is_none_or(str::is_empty) && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    spec.conversion.get_or_insert_with(|| apiextensions::CustomResourceConversion { strategy: "None".into(), webhook: None });
}

/// Conversion webhooks listen on 443.
pub fn set_defaults_service_reference(s: &mut apiextensions::ServiceReference) {
    s.port.get_or_insert(443);
}

#[cfg(test)]
mod tests {
    #[test]
    fn custom_resource_definition() {
        let names = serde_json::json!({"plural": "widgets", "kind": "Widget"});
        crate::registry::defaults::testing::assert_defaults::<super::apiextensions::CustomResourceDefinition>(
            serde_json::json!({"spec": {"group": "example.com", "scope": "Namespaced", "names": names, "versions": []}}),
            serde_json::json!({"spec": {"group": "example.com", "scope": "Namespaced", "versions": [],
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "conversion": {"strategy": "None"}}}),
        );
    }
}
