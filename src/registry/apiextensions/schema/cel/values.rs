//! A JSON value as CEL sees it through its schema (upstream's `UnstructuredToVal`): objects
//! with properties as maps of their (escaped) property names, maps as maps, `integer` as int,
//! `number` as double, int-or-string as whichever it holds, `date-time` strings as timestamps,
//! `byte` strings as bytes; anything the schema does not describe as plain JSON would be.

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::Value as CelValue;
use ::cel::objects::{Key, Map};
use base64::Engine as _;
use serde_json::Value;

use super::super::{Additional, Node};

/// CEL's reserved words: a property named so is `__<name>__` in a rule.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Upstream's `Escape`: how a property name is spelled as a CEL field, `None` when it cannot
/// be (such a property is not visible to rules).
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/')) {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// `value` as a CEL value, shaped by `schema`. `resource_root`: the root of a resource or an
/// embedded resource, whose `apiVersion`, `kind` and `metadata.name`/`generateName` are
/// visible whatever the schema says (upstream's `WithTypeAndObjectMeta`).
pub fn to_cel(value: &Value, schema: Option<&Node>, resource_root: bool) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            let double = schema.is_some_and(|s| s.types.as_slice() == ["number"]);
            match n.as_i64() {
                Some(i) if !double => CelValue::Int(i),
                _ => match n.as_u64() {
                    Some(u) if !double && n.as_i64().is_none() => CelValue::UInt(u),
                    _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
            }
        }
        Value::String(s) => string(s, schema),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            CelValue::List(Arc::new(items.iter().map(|item| to_cel(item, item_schema, false)).collect()))
        }
        Value::Object(fields) => {
            let mut map = HashMap::with_capacity(fields.len());
            match schema {
                Some(node) if !node.properties.is_empty() || resource_root => {
                    for (name, field) in fields {
                        let child = node.properties.get(name);
                        let value = match (name.as_str(), child) {
                            ("metadata", None) if resource_root => metadata(field),
                            ("apiVersion" | "kind", None) if resource_root => to_cel(field, None, false),
                            (_, Some(child)) => to_cel(field, Some(child), child.embedded_resource),
                            // Unknown fields (preserved) are not part of the object's type.
                            (_, None) => continue,
                        };
                        if let Some(escaped) = escape(name) {
                            map.insert(Key::String(Arc::new(escaped)), value);
                        }
                    }
                }
                Some(Node { additional_properties: Some(Additional::Schema(extra)), .. }) => {
                    for (name, field) in fields {
                        map.insert(Key::String(Arc::new(name.clone())), to_cel(field, Some(extra), extra.embedded_resource));
                    }
                }
                _ => {
                    for (name, field) in fields {
                        map.insert(Key::String(Arc::new(name.clone())), to_cel(field, None, false));
                    }
                }
            }
            CelValue::Map(Map { map: Arc::new(map) })
        }
    }
}

/// `metadata` of a resource as rules see it: `name` and `generateName` only.
fn metadata(value: &Value) -> CelValue {
    let mut map = HashMap::new();
    for field in ["name", "generateName"] {
        if let Some(Value::String(s)) = value.get(field) {
            map.insert(Key::String(Arc::new(field.to_owned())), CelValue::String(Arc::new(s.clone())));
        }
    }
    CelValue::Map(Map { map: Arc::new(map) })
}

fn string(s: &str, schema: Option<&Node>) -> CelValue {
    match schema.map(|n| n.format.as_str()) {
        Some("date-time" | "datetime") => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                return CelValue::Timestamp(t);
            }
        }
        Some("byte") => {
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s) {
                return CelValue::Bytes(Arc::new(bytes));
            }
        }
        _ => {}
    }
    CelValue::String(Arc::new(s.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn property_names_are_escaped_as_upstream() {
        for (name, escaped) in [
            ("foo", Some("foo")),
            ("if", Some("__if__")),
            ("foo-bar", Some("foo__dash__bar")),
            ("foo.bar", Some("foo__dot__bar")),
            ("a/b", Some("a__slash__b")),
            ("a__b", Some("a__underscores__b")),
            ("1a", None),
            ("a b", None),
        ] {
            assert_eq!(escape(name).as_deref(), escaped, "{name}");
        }
    }
}
