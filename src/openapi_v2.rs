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
//!
//! The protobuf form ([`to_protobuf`]) is gnostic's `openapi.v2.Document`, encoded from the JSON
//! form by hand (no gnostic types here): what client-go's `OpenAPISchema()` and
//! `kubectl explain --output=plaintext-openapiv2` read.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// A form of the document (JSON or protobuf) and its ETag (upstream's: the SHA-512 of the bytes,
/// upper-case hex).
pub struct Served {
    pub bytes: bytes::Bytes,
    pub etag: String,
}

impl Served {
    fn of(bytes: Vec<u8>) -> Served {
        let etag = etag(&bytes);
        Served { bytes: bytes.into(), etag }
    }
}

/// The `/openapi/v2` document of the enabled group-versions, built on first use (a process
/// serves one set of group-versions, fixed at start by `--runtime-config`).
pub fn document(enabled: &crate::discovery::EnabledGroupVersions) -> &'static Served {
    static DOC: OnceLock<Served> = OnceLock::new();
    DOC.get_or_init(|| {
        let docs = kapi_api::openapi::V3_DOCUMENTS
            .iter()
            .filter(|(path, _, _)| enabled.serves_openapi_path(path))
            .filter_map(|(_, _, text)| serde_json::from_str::<Value>(text).ok());
        Served::of(serde_json::to_vec(&swagger(docs)).unwrap_or_default())
    })
}

/// `base` (a Swagger 2.0 document's JSON form) with the schemas and paths of more OpenAPI v3
/// documents merged in, converted as [`swagger`] converts: the custom resources' group-versions
/// beside the built-in ones, as upstream's aggregated `/openapi/v2` shows them. What `base`
/// has already wins.
pub fn merged(base: &Served, documents: impl IntoIterator<Item = Value>) -> Served {
    let mut merged: Value = serde_json::from_slice(&base.bytes).unwrap_or_else(|_| swagger([]));
    let more = swagger(documents);
    for section in ["paths", "definitions"] {
        if let (Some(into), Some(from)) = (merged[section].as_object_mut(), more[section].as_object()) {
            for (name, value) in from {
                into.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    Served::of(serde_json::to_vec(&merged).unwrap_or_default())
}

/// The protobuf form of a document's JSON form ([`to_protobuf`]).
pub fn protobuf_of(json: &Served) -> Served {
    let value: Value = serde_json::from_slice(&json.bytes).unwrap_or(Value::Null);
    Served::of(to_protobuf(&value))
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
    let mut params: Vec<Value> =
        op.get("parameters").and_then(Value::as_array).map_or_else(Vec::new, |ps| ps.iter().map(parameter).collect());
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

// ---------------------------------------------------------------------------------------------
// The protobuf form: gnostic's `openapi.v2.Document`

/// The media types of the protobuf form (kube-openapi serves both spellings).
pub const PROTOBUF_MEDIA_TYPES: [&str; 2] =
    ["com.github.proto-openapi.spec.v2@v1.0+protobuf", "com.github.proto-openapi.spec.v2.v1.0+protobuf"];

/// The `/openapi/v2` document as gnostic's `openapi.v2.Document` (what client-go's
/// `OpenAPISchema()` asks for, and `kubectl explain --output=plaintext-openapiv2` reads), built on
/// first use from [`document`].
pub fn document_protobuf(enabled: &crate::discovery::EnabledGroupVersions) -> &'static Served {
    static DOC: OnceLock<Served> = OnceLock::new();
    DOC.get_or_init(|| protobuf_of(document(enabled)))
}

/// Encodes a Swagger 2.0 document (JSON) as gnostic's `openapi.v2.Document` (`OpenAPIv2.proto`),
/// proto3: fields in number order, zero values left out, maps as ordered (name, value) pairs,
/// values of `default`/`enum`/`example`/extensions as `Any { yaml }`.
pub fn to_protobuf(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, text(doc, "swagger"));
    if let Some(info) = doc.get("info") {
        w.message(2, |w| {
            w.string(1, text(info, "title"));
            w.string(2, text(info, "version"));
            w.string(3, text(info, "description"));
            w.string(4, text(info, "termsOfService"));
            extensions(w, 7, info);
        });
    }
    w.string(3, text(doc, "host"));
    w.string(4, text(doc, "basePath"));
    w.strings(5, doc.get("schemes"));
    w.strings(6, doc.get("consumes"));
    w.strings(7, doc.get("produces"));
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        w.message(8, |w| {
            extensions(w, 1, &doc["paths"]);
            for (name, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
                w.message(2, |w| {
                    w.string(1, name);
                    w.message(2, |w| path_item_pb(w, item));
                });
            }
        });
    }
    if let Some(definitions) = doc.get("definitions").and_then(Value::as_object) {
        w.message(9, |w| named_schemas(w, 1, definitions));
    }
    for requirement in doc.get("security").and_then(Value::as_array).into_iter().flatten() {
        w.message(12, |w| security_requirement(w, requirement));
    }
    if let Some(definitions) = doc.get("securityDefinitions").and_then(Value::as_object) {
        w.message(13, |w| {
            for (name, def) in definitions {
                w.message(1, |w| {
                    w.string(1, name);
                    w.message(2, |w| {
                        let fields = |w: &mut Writer| {
                            w.string(1, text(def, "type"));
                            w.string(2, text(def, "name"));
                            w.string(3, text(def, "in"));
                            w.string(4, text(def, "description"));
                            extensions(w, 5, def);
                        };
                        match text(def, "type") {
                            "basic" => w.message(1, |w| {
                                w.string(1, text(def, "type"));
                                w.string(2, text(def, "description"));
                                extensions(w, 3, def);
                            }),
                            _ => w.message(2, fields),
                        }
                    });
                });
            }
        });
    }
    extensions(&mut w, 16, doc);
    w.0
}

fn security_requirement(w: &mut Writer, requirement: &Value) {
    for (name, scopes) in requirement.as_object().into_iter().flatten() {
        w.message(1, |w| {
            w.string(1, name);
            w.message(2, |w| w.strings(1, Some(scopes)));
        });
    }
}

fn path_item_pb(w: &mut Writer, item: &Value) {
    w.string(1, text(item, "$ref"));
    for (tag, method) in [(2, "get"), (3, "put"), (4, "post"), (5, "delete"), (6, "options"), (7, "head"), (8, "patch")] {
        if let Some(op) = item.get(method) {
            w.message(tag, |w| operation_pb(w, op));
        }
    }
    for p in item.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(9, |w| parameters_item(w, p));
    }
    extensions(w, 10, item);
}

fn operation_pb(w: &mut Writer, op: &Value) {
    w.strings(1, op.get("tags"));
    w.string(2, text(op, "summary"));
    w.string(3, text(op, "description"));
    external_docs(w, 4, op);
    w.string(5, text(op, "operationId"));
    w.strings(6, op.get("produces"));
    w.strings(7, op.get("consumes"));
    for p in op.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(8, |w| parameters_item(w, p));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, |w| {
            for (code, response) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
                w.message(1, |w| {
                    w.string(1, code);
                    w.message(2, |w| match response.get("$ref") {
                        Some(r) => w.message(2, |w| w.string(1, r.as_str().unwrap_or_default())),
                        None => w.message(1, |w| {
                            w.string(1, text(response, "description"));
                            if let Some(schema) = response.get("schema") {
                                w.message(2, |w| w.message(1, |w| schema_pb(w, schema)));
                            }
                            extensions(w, 5, response);
                        }),
                    });
                });
            }
            extensions(w, 2, &op["responses"]);
        });
    }
    w.strings(10, op.get("schemes"));
    w.bool(11, op["deprecated"].as_bool().unwrap_or(false));
    for requirement in op.get("security").and_then(Value::as_array).into_iter().flatten() {
        w.message(12, |w| security_requirement(w, requirement));
    }
    extensions(w, 13, op);
}

/// `ParametersItem`: a parameter or a reference to one.
fn parameters_item(w: &mut Writer, p: &Value) {
    if let Some(r) = p.get("$ref") {
        return w.message(2, |w| {
            w.string(1, r.as_str().unwrap_or_default());
            w.string(2, text(p, "description"));
        });
    }
    w.message(1, |w| {
        if text(p, "in") == "body" {
            return w.message(1, |w| {
                w.string(1, text(p, "description"));
                w.string(2, text(p, "name"));
                w.string(3, text(p, "in"));
                w.bool(4, p["required"].as_bool().unwrap_or(false));
                if let Some(schema) = p.get("schema") {
                    w.message(5, |w| schema_pb(w, schema));
                }
                extensions(w, 6, p);
            });
        }
        w.message(2, |w| {
            // Header, form data, query and path parameters differ only in `allowEmptyValue`.
            let (tag, allow_empty) = match text(p, "in") {
                "header" => (1, false),
                "formData" => (2, true),
                "query" => (3, true),
                _ => (4, false),
            };
            w.message(tag, |w| {
                w.bool(1, p["required"].as_bool().unwrap_or(false));
                w.string(2, text(p, "in"));
                w.string(3, text(p, "description"));
                w.string(4, text(p, "name"));
                let o = u32::from(allow_empty);
                if allow_empty {
                    w.bool(5, p["allowEmptyValue"].as_bool().unwrap_or(false));
                }
                primitive_fields(w, 5 + o, p);
            });
        });
    });
}

/// The fields parameters, headers and `PrimitivesItems` share, numbered from `first` (`type`)
/// to `first + 17` (the extensions).
fn primitive_fields(w: &mut Writer, first: u32, p: &Value) {
    w.string(first, text(p, "type"));
    w.string(first + 1, text(p, "format"));
    if let Some(items) = p.get("items") {
        w.message(first + 2, |w| primitive_fields(w, 1, items));
    }
    w.string(first + 3, text(p, "collectionFormat"));
    any_field(w, first + 4, p.get("default"));
    w.double(first + 5, p["maximum"].as_f64().unwrap_or(0.0));
    w.bool(first + 6, p["exclusiveMaximum"].as_bool().unwrap_or(false));
    w.double(first + 7, p["minimum"].as_f64().unwrap_or(0.0));
    w.bool(first + 8, p["exclusiveMinimum"].as_bool().unwrap_or(false));
    w.int64(first + 9, p["maxLength"].as_i64().unwrap_or(0));
    w.int64(first + 10, p["minLength"].as_i64().unwrap_or(0));
    w.string(first + 11, text(p, "pattern"));
    w.int64(first + 12, p["maxItems"].as_i64().unwrap_or(0));
    w.int64(first + 13, p["minItems"].as_i64().unwrap_or(0));
    w.bool(first + 14, p["uniqueItems"].as_bool().unwrap_or(false));
    for e in p.get("enum").and_then(Value::as_array).into_iter().flatten() {
        any_field(w, first + 15, Some(e));
    }
    w.double(first + 16, p["multipleOf"].as_f64().unwrap_or(0.0));
    extensions(w, first + 17, p);
}

fn named_schemas(w: &mut Writer, tag: u32, schemas: &Map<String, Value>) {
    for (name, schema) in schemas {
        w.message(tag, |w| {
            w.string(1, name);
            w.message(2, |w| schema_pb(w, schema));
        });
    }
}

/// gnostic's `Schema`.
fn schema_pb(w: &mut Writer, s: &Value) {
    w.string(1, text(s, "$ref"));
    w.string(2, text(s, "format"));
    w.string(3, text(s, "title"));
    w.string(4, text(s, "description"));
    any_field(w, 5, s.get("default"));
    w.double(6, s["multipleOf"].as_f64().unwrap_or(0.0));
    w.double(7, s["maximum"].as_f64().unwrap_or(0.0));
    w.bool(8, s["exclusiveMaximum"].as_bool().unwrap_or(false));
    w.double(9, s["minimum"].as_f64().unwrap_or(0.0));
    w.bool(10, s["exclusiveMinimum"].as_bool().unwrap_or(false));
    w.int64(11, s["maxLength"].as_i64().unwrap_or(0));
    w.int64(12, s["minLength"].as_i64().unwrap_or(0));
    w.string(13, text(s, "pattern"));
    w.int64(14, s["maxItems"].as_i64().unwrap_or(0));
    w.int64(15, s["minItems"].as_i64().unwrap_or(0));
    w.bool(16, s["uniqueItems"].as_bool().unwrap_or(false));
    w.int64(17, s["maxProperties"].as_i64().unwrap_or(0));
    w.int64(18, s["minProperties"].as_i64().unwrap_or(0));
    w.strings(19, s.get("required"));
    for e in s.get("enum").and_then(Value::as_array).into_iter().flatten() {
        any_field(w, 20, Some(e));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |w| w.bool_always(2, *b)),
        Some(schema @ Value::Object(_)) => w.message(21, |w| w.message(1, |w| schema_pb(w, schema))),
        _ => {}
    }
    match s.get("type") {
        Some(Value::String(t)) => w.message(22, |w| w.string_always(1, t)),
        Some(types @ Value::Array(_)) => w.message(22, |w| w.strings(1, Some(types))),
        _ => {}
    }
    match s.get("items") {
        Some(items @ Value::Object(_)) => w.message(23, |w| w.message(1, |w| schema_pb(w, items))),
        Some(Value::Array(items)) => w.message(23, |w| {
            for item in items {
                w.message(1, |w| schema_pb(w, item));
            }
        }),
        _ => {}
    }
    for sub in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        w.message(24, |w| schema_pb(w, sub));
    }
    if let Some(properties) = s.get("properties").and_then(Value::as_object) {
        w.message(25, |w| named_schemas(w, 1, properties));
    }
    w.string(26, text(s, "discriminator"));
    w.bool(27, s["readOnly"].as_bool().unwrap_or(false));
    external_docs(w, 29, s);
    any_field(w, 30, s.get("example"));
    extensions(w, 31, s);
}

fn external_docs(w: &mut Writer, tag: u32, holder: &Value) {
    if let Some(docs) = holder.get("externalDocs") {
        w.message(tag, |w| {
            w.string(1, text(docs, "description"));
            w.string(2, text(docs, "url"));
        });
    }
}

/// `repeated NamedAny vendor_extension`: every `x-` key, its value as YAML.
fn extensions(w: &mut Writer, tag: u32, holder: &Value) {
    for (name, value) in holder.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("x-")) {
        w.message(tag, |w| {
            w.string(1, name);
            w.message(2, |w| any(w, value));
        });
    }
}

fn any_field(w: &mut Writer, tag: u32, value: Option<&Value>) {
    if let Some(value) = value {
        w.message(tag, |w| any(w, value));
    }
}

/// gnostic's `Any`: the value as YAML text.
fn any(w: &mut Writer, value: &Value) {
    let yaml = serde_yaml_ng::to_string(value).unwrap_or_default();
    w.string(2, &yaml);
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A protobuf writer for proto3 fields (zero values are not written).
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn key(&mut self, tag: u32, wire_type: prost::encoding::WireType) {
        prost::encoding::encode_key(tag, wire_type, &mut self.0);
    }

    fn bytes_always(&mut self, tag: u32, bytes: &[u8]) {
        self.key(tag, prost::encoding::WireType::LengthDelimited);
        prost::encoding::encode_varint(bytes.len() as u64, &mut self.0);
        self.0.extend_from_slice(bytes);
    }

    fn string(&mut self, tag: u32, s: &str) {
        if !s.is_empty() {
            self.bytes_always(tag, s.as_bytes());
        }
    }

    fn string_always(&mut self, tag: u32, s: &str) {
        self.bytes_always(tag, s.as_bytes());
    }

    /// A repeated string field from a JSON array of strings.
    fn strings(&mut self, tag: u32, list: Option<&Value>) {
        for item in list.and_then(Value::as_array).into_iter().flatten() {
            self.string_always(tag, item.as_str().unwrap_or_default());
        }
    }

    fn bool(&mut self, tag: u32, b: bool) {
        if b {
            self.bool_always(tag, b);
        }
    }

    fn bool_always(&mut self, tag: u32, b: bool) {
        self.key(tag, prost::encoding::WireType::Varint);
        prost::encoding::encode_varint(u64::from(b), &mut self.0);
    }

    fn int64(&mut self, tag: u32, n: i64) {
        if n != 0 {
            self.key(tag, prost::encoding::WireType::Varint);
            prost::encoding::encode_varint(n as u64, &mut self.0);
        }
    }

    fn double(&mut self, tag: u32, f: f64) {
        if f != 0.0 {
            self.key(tag, prost::encoding::WireType::SixtyFourBit);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// A nested message (written even when empty: it is present).
    fn message(&mut self, tag: u32, fill: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        fill(&mut inner);
        self.bytes_always(tag, &inner.0);
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
        assert_eq!(
            path["parameters"][0],
            json!({"in": "path", "name": "namespace", "required": true, "type": "string", "uniqueItems": true})
        );
        let post = &path["post"];
        assert_eq!(
            post["parameters"][0],
            json!({"in": "body", "name": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}})
        );
        assert_eq!(post["consumes"], json!(["*/*"]));
        assert_eq!(post["produces"], json!(["application/json", "application/yaml"]));
        assert_eq!(post["responses"]["201"]["schema"]["$ref"], "#/definitions/io.k8s.api.apps.v1.Deployment");
        assert_eq!(post["x-kubernetes-action"], "post");
        assert!(!serde_json::to_string(&v2).unwrap().contains("#/components/"));
    }

    #[test]
    fn protobuf_form_is_gnostics_document() {
        let doc = json!({"swagger": "2.0", "definitions": {"A": {"type": "object", "x-k": "v"}}});
        let mut want = b"\x0a\x032.0".to_vec(); // swagger = 1
        want.extend_from_slice(b"\x4a\x20\x0a\x1e"); // definitions = 9 { additional_properties = 1
        want.extend_from_slice(b"\x0a\x01A\x12\x19"); // name = 1, value = 2: Schema {
        want.extend_from_slice(b"\xb2\x01\x08\x0a\x06object"); // type = 22 { value = 1 }
        want.extend_from_slice(b"\xfa\x01\x0b\x0a\x03x-k\x12\x04\x12\x02v\n"); // vendor_extension = 31
        assert_eq!(to_protobuf(&doc), want);
    }
}
