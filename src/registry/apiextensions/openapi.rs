//! The OpenAPI v3 documents of the custom resources' group-versions, as apiextensions-apiserver
//! publishes them at `/openapi/v3/apis/<group>/<version>` (its `builder.BuildOpenAPIV3`): each
//! served kind's schema (its version's `openAPIV3Schema` with the standard `apiVersion`,
//! `kind` and `metadata`) and its list, tagged with `x-kubernetes-group-version-kind` — what
//! `kubectl explain` looks kinds up by — and the `meta.k8s.io` schemas they refer to.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::customresources::{CustomResource, Served, ServedVersion};

/// One document: its path under `/openapi/v3/`, its hash (as the generated documents', the
/// SHA-512 of the body in upper-case hex) and its body.
pub struct Document {
    pub path: String,
    pub hash: String,
    pub body: bytes::Bytes,
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const META_PREFIX: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

/// The documents of every group-version custom resources are served in, by path.
pub fn v3_documents(served: &Served) -> Vec<Document> {
    let mut by_group_version: BTreeMap<(String, &str), Vec<(&CustomResource, &ServedVersion)>> = BTreeMap::new();
    for resource in served.values() {
        for version in &resource.versions {
            by_group_version.entry((resource.group.clone(), version.version)).or_default().push((resource, version));
        }
    }
    by_group_version
        .into_iter()
        .map(|((group, version), kinds)| {
            let mut schemas = meta_schemas().clone();
            let mut paths = Map::new();
            for (resource, served) in kinds {
                let name = definition_name(&group, version, &resource.names.kind);
                let list = definition_name(&group, version, &resource.names.list_kind);
                schemas.insert(name.clone(), kind_schema(resource, served));
                schemas.insert(list.clone(), list_schema(resource, served, &name));
                add_paths(&mut paths, resource, served, &name, &list);
            }
            let document = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                "paths": paths,
                "components": {"schemas": schemas},
            });
            let body = document.to_string();
            let hash = sha512_hex(body.as_bytes());
            Document { path: format!("apis/{group}/{version}"), hash, body: body.into() }
        })
        .collect()
}

/// Upstream's schema name: the group's labels reversed, the version, the kind
/// (`com.example.v1.Widget`).
fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

/// The resource's collection and object paths with their operations, each naming the kind
/// (`x-kubernetes-group-version-kind`: how `kubectl explain` finds a resource's schema) and
/// the write options kapi accepts (`fieldValidation`, how kubectl tells that the server
/// validates fields).
fn add_paths(paths: &mut Map<String, Value>, resource: &CustomResource, served: &ServedVersion, kind: &str, list: &str) {
    let gvk = json!({"group": resource.group, "kind": resource.names.kind, "version": served.version});
    let namespace = if resource.namespaced { "namespaces/{namespace}/" } else { "" };
    let collection = format!("/apis/{}/{}/{namespace}{}", resource.group, served.version, resource.names.plural);
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let writes = json!([query("dryRun"), query("fieldManager"), query("fieldValidation")]);
    let answer = |schema: &str| json!({"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}}});
    let operation = |action: &str, schema: &str, parameters: &Value| json!({"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk, "parameters": parameters, "responses": answer(schema)});
    let none = json!([]);
    paths.insert(
        collection.clone(),
        json!({
            "get": operation("list", list, &none),
            "post": operation("post", kind, &writes),
            "delete": operation("deletecollection", "io.k8s.apimachinery.pkg.apis.meta.v1.Status", &none),
        }),
    );
    paths.insert(
        format!("{collection}/{{name}}"),
        json!({
            "get": operation("get", kind, &none),
            "put": operation("put", kind, &writes),
            "patch": operation("patch", kind, &writes),
            "delete": operation("delete", "io.k8s.apimachinery.pkg.apis.meta.v1.Status", &none),
        }),
    );
}

/// The kind's schema: the definition's, with the standard fields every object has.
fn kind_schema(resource: &CustomResource, served: &ServedVersion) -> Value {
    let mut schema = match &served.schema {
        Value::Object(_) => served.schema.clone(),
        _ => json!({"type": "object"}),
    };
    let standard = standard_fields();
    let properties = &mut schema["properties"];
    if !properties.is_object() {
        *properties = json!({});
    }
    properties["apiVersion"] = standard["apiVersion"].clone();
    properties["kind"] = standard["kind"].clone();
    properties["metadata"] = json!({
        "allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}],
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    });
    schema["type"] = json!("object");
    schema["x-kubernetes-group-version-kind"] = gvk(&resource.group, served.version, &resource.names.kind);
    schema
}

/// The list kind's schema.
fn list_schema(resource: &CustomResource, served: &ServedVersion, item: &str) -> Value {
    let standard = standard_fields();
    json!({
        "description": format!("{} is a list of {}", resource.names.list_kind, resource.names.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": standard["apiVersion"],
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", resource.names.plural),
                "type": "array",
                "items": {"$ref": format!("#/components/schemas/{item}")},
            },
            "kind": standard["kind"],
            "metadata": {
                "allOf": [{"$ref": format!("#/components/schemas/{LIST_META}")}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": gvk(&resource.group, served.version, &resource.names.list_kind),
    })
}

/// The `meta.k8s.io/v1` schemas, as the generated apiextensions document has them.
fn meta_schemas() -> &'static Map<String, Value> {
    static META: OnceLock<Map<String, Value>> = OnceLock::new();
    META.get_or_init(|| {
        generated_schemas().iter().filter(|(name, _)| name.starts_with(META_PREFIX)).map(|(n, s)| (n.clone(), s.clone())).collect()
    })
}

/// The `apiVersion` and `kind` fields with upstream's descriptions (a CRD's own).
fn standard_fields() -> &'static Value {
    static FIELDS: OnceLock<Value> = OnceLock::new();
    FIELDS.get_or_init(|| {
        generated_schemas()
            .get("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
            .map_or(Value::Null, |crd| crd["properties"].clone())
    })
}

fn generated_schemas() -> &'static Map<String, Value> {
    static SCHEMAS: OnceLock<Map<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let document = kapi_api::openapi::V3_DOCUMENTS.iter().find(|(path, _, _)| *path == "apis/apiextensions.k8s.io/v1");
        let parsed: Value = document.and_then(|(_, _, body)| serde_json::from_str(body).ok()).unwrap_or_default();
        parsed["components"]["schemas"].as_object().cloned().unwrap_or_default()
    })
}

fn sha512_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha512::digest(data).iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::apiextensions::customresources::CustomResources;

    #[test]
    fn kinds_are_found_by_their_group_version_kind() {
        let definition = json!({
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}, "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "description": "The widget's spec."}}}}},
            ]},
            "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}},
        });
        let served = CustomResources::default();
        served.replace(vec![CustomResource::from_definition(&definition).unwrap()]);
        let documents = &served.documents().openapi;
        assert_eq!(documents.len(), 1);
        assert_eq!(documents[0].path, "apis/example.com/v1");
        assert_eq!(documents[0].hash.len(), 128);
        let body: Value = serde_json::from_slice(&documents[0].body).unwrap();
        let schemas = &body["components"]["schemas"];
        let widget = &schemas["com.example.v1.Widget"];
        assert_eq!(widget["x-kubernetes-group-version-kind"], json!([{"group": "example.com", "kind": "Widget", "version": "v1"}]));
        assert_eq!(widget["properties"]["spec"]["description"], "The widget's spec.");
        assert!(widget["properties"]["apiVersion"]["description"].as_str().unwrap().starts_with("APIVersion defines"));
        assert_eq!(
            schemas["com.example.v1.WidgetList"]["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.v1.Widget"
        );
        assert!(schemas[OBJECT_META].is_object() && schemas[LIST_META].is_object());
        let get = &body["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["get"];
        assert_eq!(get["x-kubernetes-group-version-kind"]["kind"], "Widget");
    }
}
