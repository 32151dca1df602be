//! Reading the OpenAPI document.
//!
//! Upstream publishes `swagger.json` as OpenAPI v2; the same facts are in its v3 documents. We
//! normalise a v2 document to v3 once, here, and everything downstream reads the `openapiv3`
//! model, so a v3 input works as well.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// Loads `swagger.json` (v2) or an OpenAPI v3 document into the `openapiv3` model.
pub fn load(path: &Path) -> Result<openapiv3::OpenAPI> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: Value = serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
    let v3 = if doc.get("swagger").is_some() { v2_to_v3(doc)? } else { doc };
    serde_json::from_value(v3).with_context(|| format!("reading {} as OpenAPI v3", path.display()))
}

/// Converts an OpenAPI v2 document to the v3 shape, keeping every `x-` extension.
///
/// Only the parts Kubernetes uses are converted: definitions, paths with path/query/body
/// parameters, `consumes`/`produces` and responses.
fn v2_to_v3(mut doc: Value) -> Result<Value> {
    let Some(obj) = doc.as_object_mut() else { bail!("OpenAPI document is not an object") };
    let definitions = obj.remove("definitions").unwrap_or_else(|| json!({}));
    let paths = obj.remove("paths").unwrap_or_else(|| json!({}));
    let info = obj.remove("info").unwrap_or_else(|| json!({"title": "", "version": ""}));
    // Shared parameters (`#/parameters/...`) are inlined where referenced.
    let shared_parameters = obj.remove("parameters").unwrap_or_else(|| json!({}));

    let mut schemas = Map::new();
    for (name, schema) in definitions.as_object().into_iter().flatten() {
        schemas.insert(name.clone(), convert_schema(schema.clone()));
    }

    let mut v3_paths = Map::new();
    for (path, item) in paths.as_object().into_iter().flatten() {
        v3_paths.insert(path.clone(), convert_path_item(item, &shared_parameters)?);
    }

    Ok(json!({
        "openapi": "3.0.0",
        "info": info,
        "paths": v3_paths,
        "components": { "schemas": schemas },
    }))
}

/// Rewrites `$ref`s to `#/components/schemas/` and, where a `$ref` has siblings (a
/// description, an extension), wraps it in `allOf` as upstream's own v3 documents do, because a
/// v3 reference object cannot carry siblings.
fn convert_schema(schema: Value) -> Value {
    match schema {
        Value::Object(mut map) => {
            if let Some(Value::String(target)) = map.remove("$ref") {
                let target = target.replace("#/definitions/", "#/components/schemas/");
                let reference = json!({ "$ref": target });
                if map.is_empty() {
                    return reference;
                }
                let mut rest: Map<String, Value> = map.into_iter().map(|(k, v)| (k, convert_schema(v))).collect();
                rest.insert("allOf".into(), json!([reference]));
                return Value::Object(rest);
            }
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| match (k.as_str(), v) {
                        // Maps from names to schemas: a property may be called `$ref`.
                        ("properties", Value::Object(props)) => {
                            (k, Value::Object(props.into_iter().map(|(n, s)| (n, convert_schema(s))).collect()))
                        }
                        (_, v) => (k, convert_schema(v)),
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(convert_schema).collect()),
        other => other,
    }
}

fn convert_path_item(item: &Value, shared_parameters: &Value) -> Result<Value> {
    let mut out = Map::new();
    let inline = |params: &Value| -> Result<Value> {
        let mut out = Vec::new();
        for p in params.as_array().into_iter().flatten() {
            match p.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let name = r.strip_prefix("#/parameters/").unwrap_or(r);
                    let Some(target) = shared_parameters.get(name) else { bail!("unknown parameter {r}") };
                    out.push(target.clone());
                }
                None => out.push(p.clone()),
            }
        }
        Ok(Value::Array(out))
    };
    let shared = inline(item.get("parameters").unwrap_or(&json!([])))?;
    let (shared_params, _) = convert_parameters(&shared);
    if !shared_params.is_empty() {
        out.insert("parameters".into(), Value::Array(shared_params));
    }
    for (key, value) in item.as_object().into_iter().flatten() {
        if key == "parameters" {
            continue;
        }
        if key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
            continue;
        }
        let mut op = value.clone();
        if let Some(params) = op.get("parameters") {
            op["parameters"] = inline(params)?;
        }
        out.insert(key.clone(), convert_operation(&op));
    }
    Ok(Value::Object(out))
}

/// Splits v2 parameters into v3 parameters and an optional request-body schema.
fn convert_parameters(params: &Value) -> (Vec<Value>, Option<(Value, Option<String>)>) {
    let mut out = Vec::new();
    let mut body = None;
    for p in params.as_array().into_iter().flatten() {
        let location = p.get("in").and_then(Value::as_str).unwrap_or_default();
        if location == "body" {
            let schema = convert_schema(p.get("schema").cloned().unwrap_or_else(|| json!({})));
            let description = p.get("description").and_then(Value::as_str).map(str::to_owned);
            body = Some((schema, description));
            continue;
        }
        let mut param = Map::new();
        let mut schema = Map::new();
        for (k, v) in p.as_object().into_iter().flatten() {
            match k.as_str() {
                "name" | "in" | "description" | "required" => {
                    param.insert(k.clone(), v.clone());
                }
                "uniqueItems" | "type" | "format" | "items" | "enum" | "default" => {
                    schema.insert(k.clone(), v.clone());
                }
                _ if k.starts_with("x-") => {
                    param.insert(k.clone(), v.clone());
                }
                _ => {}
            }
        }
        if location == "path" {
            param.insert("required".into(), Value::Bool(true));
        }
        param.insert("schema".into(), Value::Object(schema));
        out.push(Value::Object(param));
    }
    (out, body)
}

fn convert_operation(op: &Value) -> Value {
    let mut out = Map::new();
    let consumes: Vec<Value> = op.get("consumes").and_then(Value::as_array).cloned().unwrap_or_default();
    let produces: Vec<Value> = op.get("produces").and_then(Value::as_array).cloned().unwrap_or_default();
    for (k, v) in op.as_object().into_iter().flatten() {
        match k.as_str() {
            "parameters" => {
                let (params, body) = convert_parameters(v);
                if !params.is_empty() {
                    out.insert("parameters".into(), Value::Array(params));
                }
                if let Some((schema, description)) = body {
                    let mut content = Map::new();
                    let types = if consumes.is_empty() { vec![json!("*/*")] } else { consumes.clone() };
                    for t in types.iter().filter_map(Value::as_str) {
                        content.insert(t.to_owned(), json!({ "schema": schema }));
                    }
                    let mut body = json!({ "content": content, "required": true });
                    if let Some(d) = description {
                        body["description"] = Value::String(d);
                    }
                    out.insert("requestBody".into(), body);
                }
            }
            "responses" => {
                let mut responses = Map::new();
                for (code, resp) in v.as_object().into_iter().flatten() {
                    let mut r = Map::new();
                    let description = resp.get("description").cloned().unwrap_or_else(|| json!(""));
                    r.insert("description".into(), description);
                    if let Some(schema) = resp.get("schema") {
                        let schema = convert_schema(schema.clone());
                        let mut content = Map::new();
                        for t in produces.iter().filter_map(Value::as_str) {
                            content.insert(t.to_owned(), json!({ "schema": schema }));
                        }
                        r.insert("content".into(), Value::Object(content));
                    }
                    responses.insert(code.clone(), Value::Object(r));
                }
                out.insert("responses".into(), Value::Object(responses));
            }
            // v3 has no operation-level consumes/produces/schemes; the media types now live on
            // the request body and responses. Keep `consumes` as an extension: the route table
            // needs the accepted patch types even for operations without a body schema.
            "consumes" => {
                out.insert("x-consumes".into(), v.clone());
            }
            "produces" | "schemes" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if !out.contains_key("responses") {
        out.insert("responses".into(), json!({}));
    }
    Value::Object(out)
}

/// Upstream's OpenAPI v3 publication: one document per group-version (`api/v1`,
/// `apis/apps/v1`), holding that group-version's paths and every schema they reach.
pub fn split_by_group_version(doc: &openapiv3::OpenAPI, spec_version: &str) -> Result<std::collections::BTreeMap<String, Value>> {
    use std::collections::{BTreeMap, BTreeSet};
    let full = serde_json::to_value(doc).context("serialising the OpenAPI model")?;
    let schemas = full["components"]["schemas"].as_object().cloned().unwrap_or_default();
    let mut by_gv: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (path, item) in full["paths"].as_object().into_iter().flatten() {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let gv = match segs.as_slice() {
            ["api", v, ..] => format!("api/{v}"),
            ["apis", g, v, ..] => format!("apis/{g}/{v}"),
            _ => continue,
        };
        by_gv.entry(gv).or_default().insert(path.clone(), item.clone());
    }
    let mut out = BTreeMap::new();
    for (gv, paths) in by_gv {
        // Every schema reachable from the paths, following `$ref`s.
        let mut needed = BTreeSet::new();
        let mut stack: Vec<Value> = paths.values().cloned().collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(map) => {
                    if let Some(Value::String(r)) = map.get("$ref")
                        && let Some(name) = r.strip_prefix("#/components/schemas/")
                        && needed.insert(name.to_owned())
                        && let Some(schema) = schemas.get(name)
                    {
                        stack.push(schema.clone());
                    }
                    stack.extend(map.into_iter().map(|(_, v)| v));
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        let components: Map<String, Value> = needed.iter().filter_map(|n| schemas.get(n).map(|s| (n.clone(), s.clone()))).collect();
        out.insert(
            gv,
            json!({
                "openapi": "3.0.0",
                "info": { "title": "Kubernetes", "version": format!("v{spec_version}") },
                "paths": paths,
                "components": { "schemas": components },
            }),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_with_siblings_becomes_all_of() {
        let v = convert_schema(json!({"$ref": "#/definitions/X", "description": "d"}));
        assert_eq!(v, json!({"description": "d", "allOf": [{"$ref": "#/components/schemas/X"}]}));
        let v = convert_schema(json!({"$ref": "#/definitions/X"}));
        assert_eq!(v, json!({"$ref": "#/components/schemas/X"}));
    }

    #[test]
    fn body_parameter_becomes_request_body() {
        let op = json!({
            "consumes": ["application/json-patch+json"],
            "parameters": [
                {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/P"}},
                {"in": "query", "name": "dryRun", "type": "string", "uniqueItems": true}
            ],
            "responses": {"200": {"description": "OK", "schema": {"type": "string"}}},
            "produces": ["application/json"]
        });
        let v3 = convert_operation(&op);
        assert_eq!(v3["requestBody"]["content"]["application/json-patch+json"]["schema"]["$ref"], "#/components/schemas/P");
        assert_eq!(v3["parameters"][0]["schema"]["type"], "string");
        assert_eq!(v3["x-consumes"][0], "application/json-patch+json");
        assert_eq!(v3["responses"]["200"]["content"]["application/json"]["schema"]["type"], "string");
    }
}
