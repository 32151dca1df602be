//! `/openapi/v2`: one Swagger 2.0 document made from the per-group-version OpenAPI v3 documents
//! the build generates (`kapi_api::openapi::V3_DOCUMENTS`), as kube-apiserver still serves it
//! for older clients. Built once, on first use.
//!
//! The conversion undoes what OpenAPI v3 changed: schemas move from `components/schemas` to
//! `definitions` (refs become `#/definitions/...`); a `$ref` with siblings, which v3 writes as
//! `allOf: [{$ref}]`, is a `$ref` beside its description again; v3-only keywords (`nullable`,
//! `oneOf`/`anyOf`, which upstream uses only for int-or-string) go; a parameter's `schema` is
//! folded into the parameter (`type`, `uniqueItems`...); a request body is the `body`
//! parameter; response media types become the operation's `produces` and the response keeps one
//! `schema`. `x-kubernetes-*` extensions stay where they are.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// The document's JSON and its ETag (upstream's: the SHA-512 of the bytes, upper-case hex).
pub struct Served {
    pub json: Vec<u8>,
    pub etag: String,
}

/// The `/openapi/v2` document, built on first use.
pub fn document() -> &'static Served {
    static DOC: OnceLock<Served> = OnceLock::new();
    DOC.get_or_init(|| {
        let docs = kapi_api::openapi::V3_DOCUMENTS.iter().filter_map(|(_, _, text)| serde_json::from_str::<Value>(text).ok());
        let json = serde_json::to_vec(&swagger(docs)).unwrap_or_default();
        let etag = etag(&json);
        Served { json, etag }
    })
}

/// Upper-case hex SHA-512, as kube-openapi's `computeETag`.
pub fn etag(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha512::digest(bytes).iter().map(|b| format!("{b:02X}")).collect()
}

/// Merges OpenAPI v3 documents into one Swagger 2.0 document.
pub fn swagger(documents: impl IntoIterator<Item = Value>) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    let mut info = json!({ "title": "Kubernetes", "version": format!("v{}", kapi_api::SPEC_VERSION) });
    for doc in documents {
        if let Some(i) = doc.get("info") {
            info = i.clone();
        }
        if let Some(schemas) = doc["components"]["schemas"].as_object() {
            for (name, schema) in schemas {
                definitions.entry(name.clone()).or_insert_with(|| schema_v2(schema));
            }
        }
        if let Some(doc_paths) = doc["paths"].as_object() {
            for (path, item) in doc_paths {
                paths.entry(path.clone()).or_insert_with(|| path_item(item));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": info,
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{ "BearerToken": [] }],
    })
}

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

fn path_item(item: &Value) -> Value {
    let mut out = Map::new();
    let Some(item) = item.as_object() else { return Value::Object(out) };
    for (key, value) in item {
        match key.as_str() {
            "parameters" => {
                out.insert(key.clone(), parameters(value));
            }
            method if METHODS.contains(&method) => {
                out.insert(key.clone(), operation(value));
            }
            "summary" | "description" | "servers" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

fn parameters(list: &Value) -> Value {
    Value::Array(list.as_array().map(|ps| ps.iter().map(parameter).collect()).unwrap_or_default())
}

/// A v3 parameter: its schema's keywords move into it.
fn parameter(p: &Value) -> Value {
    let mut out = Map::new();
    let Some(p) = p.as_object() else { return p.clone() };
    for (key, value) in p {
        match key.as_str() {
            "schema" => {
                if let Value::Object(schema) = schema_v2(value) {
                    for (k, v) in schema {
                        out.entry(k).or_insert(v);
                    }
                }
            }
            "style" | "explode" | "allowReserved" | "example" | "examples" | "content" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

fn operation(op: &Value) -> Value {
    let mut out = Map::new();
    let Some(op) = op.as_object() else { return op.clone() };
    let mut params: Vec<Value> = op.get("parameters").and_then(Value::as_array).map_or_else(Vec::new, |ps| ps.iter().map(parameter).collect());
    let mut consumes: Vec<Value> = op.get("x-consumes").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(body) = op.get("requestBody") {
        let content = body["content"].as_object();
        if consumes.is_empty() {
            consumes = content.map(|c| c.keys().map(|k| json!(k)).collect()).unwrap_or_default();
        }
        let schema = content.and_then(|c| c.values().next()).map(|m| schema_v2(&m["schema"])).unwrap_or(json!({}));
        let mut param = json!({ "in": "body", "name": "body", "schema": schema });
        if body["required"].as_bool() == Some(true) {
            param["required"] = json!(true);
        }
        // The body comes first, as upstream's documents list it.
        params.insert(0, param);
    }
    let mut produces: Vec<String> = Vec::new();
    let mut responses = Map::new();
    if let Some(rs) = op.get("responses").and_then(Value::as_object) {
        for (code, response) in rs {
            let mut r = Map::new();
            r.insert("description".into(), response.get("description").cloned().unwrap_or(json!("")));
            if let Some(content) = response["content"].as_object() {
                for media in content.keys() {
                    if !produces.contains(media) {
                        produces.push(media.clone());
                    }
                }
                let preferred = content.get("application/json").or_else(|| content.values().next());
                if let Some(schema) = preferred.and_then(|m| m.get("schema")) {
                    r.insert("schema".into(), schema_v2(schema));
                }
            }
            responses.insert(code.clone(), Value::Object(r));
        }
    }
    for (key, value) in op {
        match key.as_str() {
            "parameters" | "requestBody" | "responses" | "x-consumes" | "servers" | "callbacks" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !consumes.is_empty() {
        out.insert("consumes".into(), Value::Array(consumes));
    }
    if !produces.is_empty() {
        out.insert("produces".into(), json!(produces));
    }
    out.insert("schemes".into(), json!(["https"]));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// A v3 schema as a v2 schema.
pub fn schema_v2(schema: &Value) -> Value {
    match schema {
        Value::Object(obj) => {
            let mut out = Map::new();
            // `allOf: [{$ref}]` beside other keywords is v3's way to give a $ref siblings.
            if let Some(Value::Array(all)) = obj.get("allOf")
                && let [single] = all.as_slice()
                && let Some(r) = single.get("$ref").and_then(Value::as_str)
            {
                out.insert("$ref".into(), json!(definition_ref(r)));
                for (key, value) in obj {
                    match key.as_str() {
                        "allOf" | "nullable" => {}
                        // The empty default v3 adds to embedded structs.
                        "default" if value.as_object().is_some_and(Map::is_empty) => {}
                        _ => {
                            out.insert(key.clone(), schema_keyword(key, value));
                        }
                    }
                }
                return Value::Object(out);
            }
            for (key, value) in obj {
                match key.as_str() {
                    "nullable" | "oneOf" | "anyOf" | "not" | "writeOnly" | "deprecated" => {}
                    "$ref" => {
                        out.insert(key.clone(), json!(value.as_str().map(definition_ref).unwrap_or_default()));
                    }
                    _ => {
                        out.insert(key.clone(), schema_keyword(key, value));
                    }
                }
            }
            // int-or-string: v3 says oneOf [integer, string]; v2 says a string of that format.
            if (obj.contains_key("oneOf") || obj.contains_key("anyOf")) && !out.contains_key("type") && !out.contains_key("$ref") {
                out.insert("type".into(), json!("string"));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The value of one schema keyword: nested schemas are converted, data (`default`, `enum`,
/// `example`, extensions) is kept.
fn schema_keyword(key: &str, value: &Value) -> Value {
    match key {
        "items" | "additionalProperties" => match value {
            Value::Object(_) => schema_v2(value),
            other => other.clone(),
        },
        "properties" => match value.as_object() {
            Some(props) => Value::Object(props.iter().map(|(k, v)| (k.clone(), schema_v2(v))).collect()),
            None => value.clone(),
        },
        "allOf" => Value::Array(value.as_array().map(|a| a.iter().map(schema_v2).collect()).unwrap_or_default()),
        _ => value.clone(),
    }
}

fn definition_ref(r: &str) -> String {
    match r.strip_prefix("#/components/schemas/") {
        Some(name) => format!("#/definitions/{name}"),
        None => r.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_a_v3_document() {
        let v3 = json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.36.0"},
            "components": {"schemas": {
                "io.k8s.api.apps.v1.Deployment": {
                    "type": "object",
                    "properties": {
                        "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}, "description": "meta"},
                        "list": {"type": "array", "items": {"$ref": "#/components/schemas/X"}, "x-kubernetes-list-type": "atomic"},
                    },
                    "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}],
                },
                "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
            }},
            "paths": {"/apis/apps/v1/namespaces/{namespace}/deployments": {
                "parameters": [{"in": "path", "name": "namespace", "required": true, "schema": {"type": "string", "uniqueItems": true}, "style": "simple"}],
                "post": {
                    "operationId": "createAppsV1NamespacedDeployment",
                    "requestBody": {"content": {"*/*": {"schema": {"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}}}, "required": true},
                    "responses": {"201": {"description": "Created", "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}},
                        "application/yaml": {"schema": {"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}},
                    }}},
                    "x-kubernetes-action": "post",
                },
            }},
        });
        let v2 = swagger([v3]);
        assert_eq!(v2["swagger"], "2.0");
        let d = &v2["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["properties"]["metadata"],
            json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "meta"})
        );
        assert_eq!(d["properties"]["list"]["items"]["$ref"], "#/definitions/X");
        assert_eq!(d["properties"]["list"]["x-kubernetes-list-type"], "atomic");
        assert_eq!(d["x-kubernetes-group-version-kind"][0]["kind"], "Deployment");
        assert_eq!(
            v2["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"],
            json!({"type": "string", "format": "int-or-string"})
        );
        let path = &v2["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"];
        assert_eq!(path["parameters"][0], json!({"in": "path", "name": "namespace", "required": true, "type": "string", "uniqueItems": true}));
        let post = &path["post"];
        assert_eq!(post["parameters"][0], json!({"in": "body", "name": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}}));
        assert_eq!(post["consumes"], json!(["*/*"]));
        assert_eq!(post["produces"], json!(["application/json", "application/yaml"]));
        assert_eq!(post["responses"]["201"]["schema"]["$ref"], "#/definitions/io.k8s.api.apps.v1.Deployment");
        assert_eq!(post["x-kubernetes-action"], "post");
        assert!(!serde_json::to_string(&v2).unwrap().contains("#/components/"));
    }
}
