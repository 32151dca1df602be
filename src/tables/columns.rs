//! Columns defined at run time by JSONPath (a CustomResourceDefinition version's
//! `additionalPrinterColumns`), printed as apiextensions-apiserver's `tableconvertor` prints
//! them: the name first, then each column's first JSONPath result, typed by the column.

use serde_json::Value;
use serde_json_path::JsonPath;

use super::{Ctx, D_OBJECT_META_CREATION_TIMESTAMP, NAME, TableColumnDefinition, definitions, parse_time};

/// The printer columns of one custom resource version.
pub struct CustomColumns {
    columns: Vec<CustomColumn>,
}

struct CustomColumn {
    definition: TableColumnDefinition,
    /// `None` for a path that does not parse: its cells are empty.
    path: Option<JsonPath>,
}

impl CustomColumns {
    /// The columns of `additionalPrinterColumns` (`name`, `type`, `format`, `description`,
    /// `priority`, `jsonPath`); none given, upstream's one `Age` column.
    pub fn new(columns: &[Value]) -> CustomColumns {
        let text = |column: &Value, field: &str| column[field].as_str().unwrap_or_default().to_owned();
        let mut parsed: Vec<CustomColumn> = columns
            .iter()
            .map(|column| CustomColumn {
                definition: TableColumnDefinition {
                    name: text(column, "name"),
                    type_: text(column, "type"),
                    format: text(column, "format"),
                    description: text(column, "description"),
                    priority: column["priority"].as_i64().and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
                },
                path: json_path(column["jsonPath"].as_str().unwrap_or_default()),
            })
            .collect();
        if parsed.is_empty() {
            parsed.push(CustomColumn {
                definition: TableColumnDefinition {
                    name: "Age".into(),
                    type_: "date".into(),
                    format: String::new(),
                    description: D_OBJECT_META_CREATION_TIMESTAMP.text().into_owned(),
                    priority: 0,
                },
                path: json_path(".metadata.creationTimestamp"),
            });
        }
        CustomColumns { columns: parsed }
    }

    /// Every column definition, the name's first.
    pub(super) fn definitions(&self) -> Vec<TableColumnDefinition> {
        let mut all = definitions(&[NAME]);
        all.extend(self.columns.iter().map(|c| c.definition.clone()));
        all
    }

    pub(super) fn row(&self, object: &Value, ctx: &Ctx) -> Vec<Value> {
        let mut cells = vec![object["metadata"]["name"].clone()];
        for column in &self.columns {
            let first = column.path.as_ref().and_then(|path| path.query(object).first());
            cells.push(first.map_or(Value::Null, |value| cell(&column.definition.type_, value, ctx)));
        }
        cells
    }
}

/// A Kubernetes JSONPath (`.spec.replicas`, `.status.conditions[?(@.type=="Ready")].status`,
/// relative to the object) as an RFC 9535 query.
fn json_path(path: &str) -> Option<JsonPath> {
    let path = path.trim();
    let absolute = if path.starts_with('.') || path.starts_with('[') { format!("${path}") } else { format!("$.{path}") };
    JsonPath::parse(&absolute).ok()
}

/// A cell of `value` for a column of `type_` (upstream's `cellForJSONValue`, and jsonpath's
/// text form for strings: objects and lists as JSON).
fn cell(type_: &str, value: &Value, ctx: &Ctx) -> Value {
    match (type_, value) {
        ("string", Value::String(_)) => value.clone(),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e18).map_or(Value::Null, |f| Value::from(f as i64)),
        },
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => value.clone(),
        ("date", Value::String(_)) => parse_time(Some(value)).map_or(Value::Null, |time| Value::String(ctx.since_time(time))),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    #[test]
    fn cells_follow_the_column_types() {
        let columns = CustomColumns::new(&[
            json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type == \"Ready\")].status"}),
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}),
            json!({"name": "Paused", "type": "boolean", "jsonPath": ".status.paused"}),
            json!({"name": "Selector", "type": "string", "jsonPath": ".spec.selector"}),
            json!({"name": "Since", "type": "date", "jsonPath": ".status.since"}),
            json!({"name": "Broken", "type": "string", "jsonPath": ".spec[["}),
        ]);
        let object = json!({
            "metadata": {"name": "w"},
            "spec": {"replicas": 3.0, "selector": {"app": "x"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "since": "2026-01-01T00:00:00Z"},
        });
        let ctx = Ctx { now: Utc.with_ymd_and_hms(2026, 1, 1, 0, 5, 0).unwrap() };
        assert_eq!(
            columns.row(&object, &ctx),
            [json!("w"), json!("True"), json!(3), Value::Null, json!("{\"app\":\"x\"}"), json!("5m"), Value::Null]
        );
        let definitions = columns.definitions();
        assert_eq!((definitions[0].name.as_str(), definitions[0].format.as_str()), ("Name", "name"));
        assert_eq!((definitions[2].name.as_str(), definitions[2].priority), ("Replicas", 1));
    }

    #[test]
    fn without_columns_the_age_is_shown() {
        let columns = CustomColumns::new(&[]);
        let names: Vec<String> = columns.definitions().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["Name", "Age"]);
        let ctx = Ctx { now: Utc.with_ymd_and_hms(2026, 1, 1, 2, 0, 0).unwrap() };
        let row = columns.row(&json!({"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"}}), &ctx);
        assert_eq!(row, [json!("w"), json!("120m")]);
    }
}
