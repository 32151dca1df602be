//! The schemas of built-in kinds for field management: upstream's field manager reads the
//! OpenAPI models (list types, map keys, map types, patch strategies), and so does this one,
//! from the OpenAPI v3 documents the server serves (`kapi_api::openapi::V3_DOCUMENTS`). A
//! group-version's document is parsed the first time one of its kinds is written, and kept.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::typed::{Components, OBJECT_META, Type};

/// One parsed document: its component schemas, and which of them is which kind.
struct Document {
    components: Components,
    kinds: HashMap<String, String>,
}

fn document(path: &str) -> Option<&'static Document> {
    static DOCUMENTS: OnceLock<Mutex<HashMap<String, Option<&'static Document>>>> = OnceLock::new();
    let mut documents = DOCUMENTS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = documents.get(path) {
        return *found;
    }
    let parsed = kapi_api::openapi::V3_DOCUMENTS.iter().find(|(p, _, _)| *p == path).and_then(|(_, _, text)| parse(text));
    // Kept for the life of the server: at most one per served group-version.
    let parsed: Option<&'static Document> = parsed.map(|d| &*Box::leak(Box::new(d)));
    documents.insert(path.to_owned(), parsed);
    parsed
}

fn parse(text: &str) -> Option<Document> {
    let mut doc: Value = serde_json::from_str(text).ok()?;
    let Value::Object(components) = doc.get_mut("components")?.get_mut("schemas")?.take() else { return None };
    let mut kinds = HashMap::new();
    for (name, schema) in &components {
        for gvk in schema.get("x-kubernetes-group-version-kind").and_then(Value::as_array).into_iter().flatten() {
            let text = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            kinds.insert(format!("{}/{}/{}", text("group"), text("version"), text("kind")), name.clone());
        }
    }
    Some(Document { components, kinds })
}

fn path_of(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// The schema of a built-in kind in a version, or [`Type::Deduced`] when no document has it.
pub fn kind_type(group: &str, version: &str, kind: &str) -> Type<'static> {
    let Some(doc) = document(&path_of(group, version)) else { return Type::Deduced };
    match doc.kinds.get(&format!("{group}/{version}/{kind}")).and_then(|name| doc.components.get(name)) {
        Some(schema) => Type::Schema(schema, &doc.components),
        None => Type::Deduced,
    }
}

/// The type of a custom resource's objects with `schema` (its version's `openAPIV3Schema`):
/// `metadata` is ObjectMeta, as upstream's models make it.
pub fn resource_type(schema: &Value) -> Type<'_> {
    match document("api/v1") {
        Some(core) => match core.components.get(OBJECT_META) {
            Some(meta) => Type::Resource(schema, meta, &core.components),
            None => Type::Deduced,
        },
        None => Type::Deduced,
    }
}

/// The schema of `autoscaling/v1` `Scale`, which the documents of the groups that serve a
/// `scale` subresource carry (the core one among them), not autoscaling's own.
pub fn scale_type() -> Type<'static> {
    let Some(doc) = document("api/v1") else { return Type::Deduced };
    match doc.kinds.get("autoscaling/v1/Scale").and_then(|name| doc.components.get(name)) {
        Some(schema) => Type::Schema(schema, &doc.components),
        None => Type::Deduced,
    }
}
