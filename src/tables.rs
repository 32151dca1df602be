//! Server-side printing: the `meta.k8s.io` `Table` kube-apiserver answers `kubectl get` with.
//!
//! `kubectl get` asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,...`; the server
//! turns the object or list it would have sent into rows of cells under column definitions, and
//! attaches to each row the object itself, its metadata (`PartialObjectMetadata`) or nothing, as
//! the `includeObject` query parameter says. This module is that conversion, without I/O, over
//! objects as the API serves them (`serde_json::Value`); whether a request asks for a Table is
//! `crate::negotiation`'s:
//!
//! - [`IncludeObject`]: the `includeObject` parameter with upstream's validation message.
//! - [`to_table`] / [`build_table`]: the conversion, with the [`Columns`] the resource's
//!   strategy answers (`registry::strategy::Strategy::table`; this module never chooses by
//!   group or resource). Resources kube-apiserver prints with `pkg/printers/internalversion`
//!   have those columns and cells ([`Printer`]; the server always asks the printers for the
//!   wide form, so priority-1 columns are always there; kubectl hides them without `-o wide`);
//!   `apiservices` have kube-aggregator's; every other resource has
//!   `rest.DefaultTableConvertor` (Name, Created At).
//! - [`human_duration`]: `k8s.io/apimachinery/pkg/util/duration.HumanDuration`, the AGE format.
//!
//! The printers read upstream's internal types, which the served JSON converts into; each cell
//! function below reads the JSON fields its internal counterpart is converted from. Objects are
//! taken as stored: a field the API would have defaulted but that is missing prints as upstream
//! prints the zero value (`0`, `""`, `<unset>`).
//!
//! Column descriptions are upstream's `SwaggerDoc()` strings (the OpenAPI descriptions of the
//! same fields; for types v1.36 no longer serves, such as `rbac/v1beta1` and
//! `certificates/v1beta1`'s CSR, the proto comment formatted as `SwaggerDoc()` formats the Go
//! comment). A test compares the served ones with the pinned spec.
//!
//! The printers of the later API groups (autoscaling, certificates, storage's CSI types,
//! admission policies, flow control, dynamic resource allocation, ...) are in `groups`.

use std::borrow::Cow;
use std::collections::BTreeSet;

use chrono::{DateTime, TimeDelta, Utc};
use kapi_api::apimachinery::pkg::apis::meta::v1::ListMeta;
use kapi_apimachinery::{Quantity, Time, TypeInfo};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod columns;
pub mod groups;

pub use columns::CustomColumns;

// ---------------------------------------------------------------------------------------------
// Negotiation

/// The group version of the `Table` asked for (`meta.k8s.io/v1` is preferred by kubectl;
/// `v1beta1` is still accepted by upstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TableVersion {
    #[default]
    V1,
    V1Beta1,
}

impl TableVersion {
    /// The `apiVersion` of the `Table` and of the `PartialObjectMetadata` in its rows.
    pub fn api_version(self) -> &'static str {
        match self {
            TableVersion::V1 => "meta.k8s.io/v1",
            TableVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// How the `Table` is to be encoded: upstream converts to `Table` only for JSON and YAML (a
/// protobuf clause asking for a `Table` is skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TableMediaType {
    Json,
    Yaml,
}

impl TableMediaType {
    /// The `Content-Type` of the response.
    pub fn content_type(self) -> &'static str {
        match self {
            TableMediaType::Json => "application/json",
            TableMediaType::Yaml => "application/yaml",
        }
    }
}

/// A request for a `Table`: which version, in which encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableRequest {
    pub version: TableVersion,
    pub media_type: TableMediaType,
}

// ---------------------------------------------------------------------------------------------
// includeObject

/// What each row carries besides its cells (`TableOptions.includeObject`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IncludeObject {
    /// No object (`"object": null`).
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The parameter's value; empty means the default, `Metadata`.
    pub fn parse(value: &str) -> Result<IncludeObject, TableError> {
        match value {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(TableError::InvalidIncludeObject(other.to_string())),
        }
    }

    /// `includeObject` from a raw query string (with or without the leading `?`), read as
    /// `req.URL.Query()` reads it ([`crate::url::parse_query`]); the first value counts, as
    /// upstream's parameter codec takes it.
    pub fn from_query(query: &str) -> Result<IncludeObject, TableError> {
        let query = query.strip_prefix('?').unwrap_or(query);
        match crate::url::parse_query(query).get("includeObject").and_then(|v| v.first()) {
            Some(value) => IncludeObject::parse(value),
            None => Ok(IncludeObject::Metadata),
        }
    }

    /// The parameter's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            IncludeObject::None => "None",
            IncludeObject::Metadata => "Metadata",
            IncludeObject::Object => "Object",
        }
    }
}

/// Why a table could not be made; upstream answers each with `400 BadRequest` and this message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error(
        "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
        crate::status::go_quote(.0)
    )]
    InvalidIncludeObject(String),
}

// ---------------------------------------------------------------------------------------------
// The Table

/// `meta.k8s.io/v1` `Table` (kapi-api has no generated type for it: upstream gives it no
/// protobuf message, since cells are arbitrary JSON). Fields are in upstream's order; like Go's
/// encoder, `columnDefinitions` and `rows` are `null` when unset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub kind: String,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    #[serde(default)]
    pub metadata: ListMeta,
    #[serde(rename = "columnDefinitions", default)]
    pub column_definitions: Option<Vec<TableColumnDefinition>>,
    #[serde(default)]
    pub rows: Option<Vec<TableRow>>,
}

/// `TableColumnDefinition`: every field is always written, `format` and `description` even when
/// empty.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableColumnDefinition {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
}

/// `TableRow`. `object` is a `runtime.RawExtension`, a struct, which Go's `omitempty` never
/// omits: with `includeObject=None` it is written as `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    pub cells: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<TableRowCondition>,
    #[serde(default)]
    pub object: Value,
}

/// `TableRowCondition` (printers set `Completed` on finished pods).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRowCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// What the request asked of the table besides the objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    pub include_object: IncludeObject,
    /// `TableOptions.noHeaders`: upstream sets it on every watch event after the first, and the
    /// table then has no column definitions (`null`).
    pub no_headers: bool,
    pub version: TableVersion,
}

/// The `meta.k8s.io/v1` `Table` of `objects` printed with `columns` (the resource's strategy's
/// `registry::strategy::Strategy::table`; the items of a list, or the one object of a get), as
/// JSON.
///
/// `list_meta` is the list's `metadata` (its `resourceVersion`, `continue` and
/// `remainingItemCount` are copied); without it, a single object's `resourceVersion` is.
/// `now` is the instant ages are counted to.
pub fn to_table(columns: &Columns, objects: &[Value], list_meta: Option<&Value>, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let options = TableOptions { include_object: include, ..TableOptions::default() };
    to_table_with(columns, objects, list_meta, &options, now)
}

/// [`to_table`] with every option (version, `noHeaders`).
pub fn to_table_with(columns: &Columns, objects: &[Value], list_meta: Option<&Value>, options: &TableOptions, now: DateTime<Utc>) -> Value {
    let table = build_table(columns, objects, list_meta, options, now);
    // The table holds only strings, numbers and JSON values with string keys, which always
    // serialise; `Null` is unreachable.
    serde_json::to_value(table).unwrap_or(Value::Null)
}

/// How a resource's objects become table rows. Each resource's strategy says which
/// (`registry::strategy::Strategy::table`, in the resource's own strategy file); this module
/// never chooses by group or resource.
#[derive(Clone)]
pub enum Columns {
    /// A built-in printer (`pkg/printers/internalversion`).
    Printer(&'static Printer),
    /// kube-aggregator's `APIService` convertor.
    ApiService,
    /// `rest.DefaultTableConvertor`: Name, Created At.
    Default,
    /// A custom resource's `additionalPrinterColumns`.
    Custom(std::sync::Arc<CustomColumns>),
}

impl Columns {
    /// [`to_table_with`] with these columns.
    pub fn to_table(&self, objects: &[Value], list_meta: Option<&Value>, options: &TableOptions, now: DateTime<Utc>) -> Value {
        to_table_with(self, objects, list_meta, options, now)
    }
}

/// [`to_table_with`] as the typed [`Table`].
pub fn build_table(columns: &Columns, objects: &[Value], list_meta: Option<&Value>, options: &TableOptions, now: DateTime<Utc>) -> Table {
    let ctx = Ctx { now };
    let (columns, rows) = match columns {
        Columns::Printer(printer) => {
            // Printers ignore nothing: the list print functions make an empty slice, so an empty
            // list has `"rows": []`.
            let mut ordered = objects.iter().collect::<Vec<_>>();
            if let Some(order) = printer.order {
                ordered.sort_by(|a, b| order(a, b));
            }
            let rows = ordered
                .into_iter()
                .map(|object| {
                    let (cells, conditions) = (printer.row)(Obj(object), &ctx);
                    (cells, conditions, object)
                })
                .collect::<Vec<_>>();
            let columns = (!options.no_headers).then(|| definitions(printer.columns));
            (columns, Some(rows))
        }
        Columns::ApiService => {
            // kube-aggregator's convertor always sets its columns, whatever noHeaders says.
            let rows = objects.iter().map(|object| (apiservice_row(Obj(object), &ctx), Vec::new(), object));
            (Some(definitions(APISERVICE_COLUMNS)), Some(rows.collect()))
        }
        Columns::Default => {
            // The default convertor appends to a nil slice: an empty list has `"rows": null`.
            let rows = objects.iter().map(|object| (default_row(Obj(object)), Vec::new(), object)).collect::<Vec<_>>();
            let columns = (!options.no_headers).then(|| definitions(DEFAULT_COLUMNS));
            (columns, (!rows.is_empty()).then_some(rows))
        }
        Columns::Custom(custom) => {
            // The custom convertor makes an empty slice: an empty list has `"rows": []`.
            let rows = objects.iter().map(|object| (custom.row(object, &ctx), Vec::new(), object));
            ((!options.no_headers).then(|| custom.definitions()), Some(rows.collect()))
        }
    };
    let rows = rows.map(|rows| {
        rows.into_iter().map(|(cells, conditions, object)| TableRow { cells, conditions, object: row_object(object, options) }).collect()
    });
    Table {
        kind: "Table".to_string(),
        api_version: options.version.api_version().to_string(),
        metadata: table_meta(objects, list_meta),
        column_definitions: columns,
        rows,
    }
}

/// The column definitions a resource's table has (all of them, wide ones included).
pub fn column_definitions(columns: &Columns) -> Vec<TableColumnDefinition> {
    match columns {
        Columns::Printer(printer) => definitions(printer.columns),
        Columns::ApiService => definitions(APISERVICE_COLUMNS),
        Columns::Default => definitions(DEFAULT_COLUMNS),
        Columns::Custom(custom) => custom.definitions(),
    }
}

/// Whether a resource has columns of its own (`false`: upstream's default Name, Created At).
pub fn has_specific_columns(columns: &Columns) -> bool {
    !matches!(columns, Columns::Default)
}

fn table_meta(objects: &[Value], list_meta: Option<&Value>) -> ListMeta {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    match list_meta {
        Some(meta) => ListMeta {
            resource_version: text(meta.get("resourceVersion")),
            r#continue: text(meta.get("continue")),
            remaining_item_count: meta.get("remainingItemCount").and_then(Value::as_i64),
            ..ListMeta::default()
        },
        None => match objects {
            [object] => {
                ListMeta { resource_version: text(object.get("metadata").and_then(|m| m.get("resourceVersion"))), ..ListMeta::default() }
            }
            _ => ListMeta::default(),
        },
    }
}

/// `asTable`'s treatment of each row's object.
fn row_object(object: &Value, options: &TableOptions) -> Value {
    match options.include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => object.clone(),
        IncludeObject::Metadata => {
            let metadata = match object.get("metadata") {
                Some(Value::Object(meta)) => Value::Object(meta.clone()),
                _ => Value::Object(Map::new()),
            };
            let mut partial = Map::new();
            partial.insert("kind".to_string(), Value::from("PartialObjectMetadata"));
            partial.insert("apiVersion".to_string(), Value::from(options.version.api_version()));
            partial.insert("metadata".to_string(), metadata);
            Value::Object(partial)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Columns and the convertor of each resource

/// A column definition, as upstream's printers declare them.
struct Col {
    name: &'static str,
    type_: &'static str,
    format: &'static str,
    description: Doc,
    priority: i32,
}

/// A column's description: upstream's printers take the field's `SwaggerDoc()`, which is the
/// specs' description the generated field facts carry; synthetic columns have their own text.
#[derive(Clone, Copy)]
enum Doc {
    Text(&'static str),
    Field(fn() -> &'static [kapi_apimachinery::scheme::FieldInfo], &'static str),
    /// A field of a type no longer served (not in the specs): the generated facts carry its raw
    /// Go comment, which `SwaggerDoc()` formats.
    Proto(fn() -> &'static [kapi_apimachinery::scheme::FieldInfo], &'static str),
}

impl Doc {
    fn text(self) -> Cow<'static, str> {
        match self {
            Doc::Text(text) => Cow::Borrowed(text),
            Doc::Field(fields, name) => Cow::Borrowed(fields().iter().find(|f| f.json_name == name).map_or("", |f| f.description)),
            Doc::Proto(fields, name) => groups::proto_doc(fields, name),
        }
    }
}

const fn col(name: &'static str, type_: &'static str, description: Doc) -> Col {
    Col { name, type_, format: "", description, priority: 0 }
}

/// A priority-1 column: shown by kubectl only with `-o wide`.
const fn wide(name: &'static str, type_: &'static str, description: Doc) -> Col {
    Col { name, type_, format: "", description, priority: 1 }
}

fn definitions(columns: &[Col]) -> Vec<TableColumnDefinition> {
    columns
        .iter()
        .map(|c| TableColumnDefinition {
            name: c.name.to_string(),
            type_: c.type_.to_string(),
            format: c.format.to_string(),
            description: c.description.text().into_owned(),
            priority: c.priority,
        })
        .collect()
}

/// Cells of a row and its conditions.
type Row = (Vec<Value>, Vec<TableRowCondition>);

/// A built-in printer (upstream's `pkg/printers/internalversion`): its columns, how an object
/// becomes a row, and the order of a list's rows.
pub struct Printer {
    columns: &'static [Col],
    row: fn(Obj<'_>, &Ctx) -> Row,
    /// The order upstream's list printer puts the items in, when it sorts them.
    order: Option<fn(&Value, &Value) -> std::cmp::Ordering>,
}

const NAME: Col = Col { name: "Name", type_: "string", format: "name", description: D_OBJECT_META_NAME, priority: 0 };
const AGE: Col = col("Age", "string", D_OBJECT_META_CREATION_TIMESTAMP);
const CONTAINERS: Col = wide("Containers", "string", Doc::Text("Names of each container in the template."));
const IMAGES: Col = wide("Images", "string", Doc::Text("Images referenced by each container in the template."));

/// `rest.DefaultTableConvertor`.
const DEFAULT_COLUMNS: &[Col] = &[NAME, col("Created At", "date", D_OBJECT_META_CREATION_TIMESTAMP)];

/// kube-aggregator's `APIService` convertor.
const APISERVICE_COLUMNS: &[Col] = &[
    NAME,
    col("Service", "string", Doc::Text("The reference to the service that hosts this API endpoint.")),
    col("Available", "string", Doc::Text("Whether this service is available.")),
    AGE,
];

// ---------------------------------------------------------------------------------------------
// Reading objects

static NULL: Value = Value::Null;

/// A JSON object read the way Go reads a decoded struct: a missing or `null` field is the zero
/// value.
#[derive(Clone, Copy)]
struct Obj<'a>(&'a Value);

impl<'a> Obj<'a> {
    fn at(self, path: &[&str]) -> Option<&'a Value> {
        let mut value = self.0;
        for key in path {
            value = value.get(*key)?;
        }
        (!value.is_null()).then_some(value)
    }

    fn obj(self, path: &[&str]) -> Obj<'a> {
        Obj(self.at(path).unwrap_or(&NULL))
    }

    fn has(self, path: &[&str]) -> bool {
        self.at(path).is_some()
    }

    fn str(self, path: &[&str]) -> &'a str {
        self.at(path).and_then(Value::as_str).unwrap_or("")
    }

    fn opt_str(self, path: &[&str]) -> Option<&'a str> {
        self.at(path).and_then(Value::as_str)
    }

    fn int(self, path: &[&str]) -> i64 {
        match self.at(path) {
            Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).unwrap_or(0),
            _ => 0,
        }
    }

    fn bool(self, path: &[&str]) -> bool {
        self.at(path).and_then(Value::as_bool).unwrap_or(false)
    }

    fn opt_bool(self, path: &[&str]) -> Option<bool> {
        self.at(path).and_then(Value::as_bool)
    }

    fn list(self, path: &[&str]) -> &'a [Value] {
        self.at(path).and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    fn map(self, path: &[&str]) -> Option<&'a Map<String, Value>> {
        self.at(path).and_then(Value::as_object)
    }

    fn len(self, path: &[&str]) -> i64 {
        match self.at(path) {
            Some(Value::Object(map)) => map.len() as i64,
            Some(Value::Array(list)) => list.len() as i64,
            _ => 0,
        }
    }

    fn name(self) -> &'a str {
        self.str(&["metadata", "name"])
    }

    fn deleting(self) -> bool {
        self.has(&["metadata", "deletionTimestamp"])
    }

    fn annotation(self, key: &str) -> Option<&'a str> {
        self.map(&["metadata", "annotations"]).and_then(|a| a.get(key)).and_then(Value::as_str)
    }

    /// The first element of `path`'s list whose `type` is `kind`.
    fn condition(self, path: &[&str], kind: &str) -> Option<Obj<'a>> {
        self.list(path).iter().map(Obj).find(|c| c.str(&["type"]) == kind)
    }

    /// `status.conditions` has a `kind` condition, and the first one is `True`.
    fn condition_true(self, kind: &str) -> bool {
        self.condition(&["status", "conditions"], kind).is_some_and(|c| c.str(&["status"]) == "True")
    }
}

/// What every cell function may need besides the object.
struct Ctx {
    now: DateTime<Utc>,
}

impl Ctx {
    /// `translateTimestampSince`: the age of a timestamp, `<unknown>` when unset.
    fn since(&self, value: Option<&Value>) -> String {
        match parse_time(value) {
            Some(time) => self.since_time(time),
            None => "<unknown>".to_string(),
        }
    }

    fn since_time(&self, time: Time) -> String {
        let now = i128::from(self.now.timestamp()) * NANOS + i128::from(self.now.timestamp_subsec_nanos());
        let then = i128::from(time.unix_seconds()) * NANOS + i128::from(time.subsec_nanos());
        human_nanos(now - then)
    }

    fn age(&self, o: Obj<'_>) -> String {
        self.since(o.at(&["metadata", "creationTimestamp"]))
    }
}

const NANOS: i128 = 1_000_000_000;

/// A `metav1.Time` (or `MicroTime`) field; `None` when unset, unparsable or Go's zero time.
fn parse_time(value: Option<&Value>) -> Option<Time> {
    let text = value?.as_str()?;
    Time::parse_rfc3339(text).ok().filter(|t| !t.is_zero())
}

/// `duration.HumanDuration`: a succinct age with two or three significant figures, as kubectl
/// shows in AGE columns: `0s`..`119s`, `2m3s`..`9m59s`, `10m`..`179m`, `3h4m`..`7h59m`,
/// `8h`..`47h`, `2d3h`..`7d23h`, `8d`..`729d`, `2y10d`..`7y364d`, then `8y`. A duration less
/// than -1s (a clock running behind) is `<invalid>`; down to -1s it is `0s`.
pub fn human_duration(duration: TimeDelta) -> String {
    let nanos = i128::from(duration.num_seconds()) * NANOS + i128::from(duration.subsec_nanos());
    human_nanos(nanos)
}

fn human_nanos(nanos: i128) -> String {
    // Go's time.Duration saturates at about 292 years.
    let nanos = nanos.clamp(i128::from(i64::MIN), i128::from(i64::MAX));
    let seconds = nanos / NANOS;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / (60 * NANOS);
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / (3600 * NANOS);
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

// ---------------------------------------------------------------------------------------------
// Formatting helpers shared by the printers

fn s(text: impl Into<String>) -> Value {
    Value::String(text.into())
}

fn or_none(text: &str) -> String {
    if text.is_empty() { "<none>".to_string() } else { text.to_string() }
}

/// `printBoolPtr`.
fn bool_ptr(value: Option<bool>) -> String {
    match value {
        Some(true) => "True".to_string(),
        Some(false) => "False".to_string(),
        None => "<unset>".to_string(),
    }
}

/// `resource.Quantity.String()` of a quantity field (`0` when unset); a value that does not parse
/// is shown as written.
fn quantity(value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::Null) => return "0".to_string(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    Quantity::parse(&text).map_or(text, |q| q.to_string())
}

/// `intstr.IntOrString.String()`.
fn int_or_string(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(n) => n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string()),
        other => other.to_string(),
    }
}

/// `layoutContainerCells`: names and images, comma-joined.
fn containers(spec: Obj<'_>) -> (String, String) {
    let list = spec.list(&["containers"]);
    let names = list.iter().map(|c| Obj(c).str(&["name"])).collect::<Vec<_>>().join(",");
    let images = list.iter().map(|c| Obj(c).str(&["image"])).collect::<Vec<_>>().join(",");
    (names, images)
}

/// `labels.FormatLabels`: sorted `key=value`s, `<none>` when empty.
fn format_labels(map: Option<&Map<String, Value>>) -> String {
    let mut pairs = map.into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>();
    pairs.sort();
    if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") }
}

/// `metav1.LabelSelectorAsSelector(selector).String()`; `None` when the selector does not
/// convert (a bad operator, key or value). A missing selector (`labels.Nothing()`) and an empty
/// one (`labels.Everything()`) both print as `""`.
fn selector_string(selector: Option<&Value>) -> Option<String> {
    let Some(selector) = selector.filter(|v| !v.is_null()) else {
        return Some(String::new());
    };
    let selector = Obj(selector);
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector.map(&["matchLabels"]).into_iter().flatten() {
        let value = value.as_str().unwrap_or_default();
        if !valid_label_key(key) || !valid_label_value(value) {
            return None;
        }
        requirements.push((key.clone(), format!("{key}={value}")));
    }
    for expression in selector.list(&["matchExpressions"]) {
        let expression = Obj(expression);
        let key = expression.str(&["key"]);
        let mut values = expression.list(&["values"]).iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect::<Vec<_>>();
        if !valid_label_key(key) || !values.iter().all(|v| valid_label_value(v)) {
            return None;
        }
        let text = match expression.str(&["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return None;
                }
                values.sort();
                let word = if op == "In" { "in" } else { "notin" };
                format!("{key} {word} ({})", values.join(","))
            }
            "Exists" if values.is_empty() => key.to_string(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return None,
        };
        requirements.push((key.to_string(), text));
    }
    // `Selector.Add` sorts requirements by key (stably, at these sizes).
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Some(requirements.into_iter().map(|(_, text)| text).collect::<Vec<_>>().join(","))
}

/// `metav1.FormatLabelSelector`: `<error>` when it does not convert, `<none>` when empty.
fn format_label_selector(selector: Option<&Value>) -> String {
    match selector_string(selector) {
        None => "<error>".to_string(),
        Some(text) if text.is_empty() => "<none>".to_string(),
        Some(text) => text,
    }
}

/// A label name part: up to 63 alphanumerics, `-`, `_` and `.`, starting and ending with an
/// alphanumeric.
fn valid_label_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain (a label key's prefix).
fn valid_dns_subdomain(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
                && (bytes[bytes.len() - 1].is_ascii_lowercase() || bytes[bytes.len() - 1].is_ascii_digit())
                && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

fn valid_label_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => !prefix.is_empty() && valid_dns_subdomain(prefix) && valid_label_name(name),
        None => valid_label_name(key),
    }
}

fn valid_label_value(value: &str) -> bool {
    value.is_empty() || valid_label_name(value)
}

/// `helper.GetAccessModesAsString`: the modes present, in upstream's order, abbreviated.
fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .into_iter()
        .filter(|(mode, _)| has(mode))
        .map(|(_, short)| short)
        .collect::<Vec<_>>()
        .join(",")
}

/// The storage class of a volume or claim: the beta annotation when present, else the field.
fn storage_class(o: Obj<'_>) -> String {
    match o.annotation("volume.beta.kubernetes.io/storage-class") {
        Some(class) => class.to_string(),
        None => o.str(&["spec", "storageClassName"]).to_string(),
    }
}

/// `loadBalancerStatusStringer` with `wide` (the server always prints wide): the sorted, distinct
/// IPs or else host names.
fn load_balancer(status: Obj<'_>) -> String {
    let set = status
        .list(&["ingress"])
        .iter()
        .map(Obj)
        .filter_map(|i| {
            let ip = i.str(&["ip"]);
            let host = i.str(&["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect::<BTreeSet<_>>();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// `listWithMoreString`.
fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", count - max)
    } else if text.is_empty() {
        "<unset>".to_string()
    } else {
        text
    }
}

// ---------------------------------------------------------------------------------------------
// Printers (`pkg/printers/internalversion`), one per resource

fn default_row(o: Obj<'_>) -> Vec<Value> {
    // `m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)`: Go's zero time when unset.
    let created = parse_time(o.at(&["metadata", "creationTimestamp"]))
        .and_then(|t| t.to_rfc3339())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
    vec![s(o.name()), s(created)]
}

fn apiservice_row(o: Obj<'_>, ctx: &Ctx) -> Vec<Value> {
    let service = match o.at(&["spec", "service"]) {
        Some(svc) => format!("{}/{}", Obj(svc).str(&["namespace"]), Obj(svc).str(&["name"])),
        None => "Local".to_string(),
    };
    let available = match o.condition(&["status", "conditions"], "Available") {
        None => "Unknown".to_string(),
        Some(c) if c.str(&["status"]) == "True" || c.str(&["reason"]).is_empty() => c.str(&["status"]).to_string(),
        Some(c) => format!("{} ({})", c.str(&["status"]), c.str(&["reason"])),
    };
    vec![s(o.name()), s(service), s(available), s(ctx.age(o))]
}

// --- pods

pub static PODS: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", Doc::Text("The aggregate readiness state of this pod for accepting traffic.")),
        col("Status", "string", Doc::Text("The aggregate status of the containers in this pod.")),
        col(
            "Restarts",
            "string",
            Doc::Text(
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
        ),
        AGE,
        wide("IP", "string", D_POD_STATUS_POD_IP),
        wide("Node", "string", D_POD_SPEC_NODE_NAME),
        wide("Nominated Node", "string", D_POD_STATUS_NOMINATED_NODE_NAME),
        wide("Readiness Gates", "string", D_POD_SPEC_READINESS_GATES),
    ],
    row: pod_row,
    order: None,
};

fn later(current: Option<Time>, candidate: Option<Time>) -> Option<Time> {
    match (current, candidate) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// `printPod`: READY counts ready containers (and started sidecars) of all containers (and
/// sidecars); STATUS is the phase or reason, overridden by init container trouble
/// (`Init:...`), then by the last container with a waiting or terminated reason, then by
/// deletion; RESTARTS adds when the last restart was.
fn pod_row(pod: Obj<'_>, ctx: &Ctx) -> Row {
    let spec = pod.obj(&["spec"]);
    let status = pod.obj(&["status"]);
    let init_specs = spec.list(&["initContainers"]);
    // A sidecar: an init container with `restartPolicy: Always` (the last of a name counts, as
    // in upstream's map).
    let sidecar = |name: &str| {
        init_specs.iter().rev().map(Obj).find(|c| c.str(&["name"]) == name).is_some_and(|c| c.str(&["restartPolicy"]) == "Always")
    };
    let total = spec.list(&["containers"]).len() + init_specs.iter().filter(|c| Obj(c).str(&["restartPolicy"]) == "Always").count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<Time> = None;
    let mut last_sidecar_restart: Option<Time> = None;

    let phase = status.str(&["phase"]);
    let mut reason = match status.str(&["reason"]) {
        "" => phase.to_string(),
        given => given.to_string(),
    };
    let conditions = status.list(&["conditions"]);
    for condition in conditions.iter().map(Obj) {
        if condition.str(&["type"]) == "PodScheduled" && condition.str(&["reason"]) == "SchedulingGated" {
            reason = "SchedulingGated".to_string();
        }
    }

    let mut initializing = false;
    for (i, container) in status.list(&["initContainerStatuses"]).iter().map(Obj).enumerate() {
        let count = container.int(&["restartCount"]);
        let finished = container
            .has(&["lastState", "terminated"])
            .then(|| parse_time(container.at(&["lastState", "terminated", "finishedAt"])))
            .flatten();
        restarts += count;
        last_restart = later(last_restart, finished);
        let is_sidecar = sidecar(container.str(&["name"]));
        if is_sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = container.obj(&["state", "terminated"]);
        let waiting_reason = container.str(&["state", "waiting", "reason"]);
        if container.has(&["state", "terminated"]) && terminated.int(&["exitCode"]) == 0 {
            continue;
        }
        if is_sidecar && container.opt_bool(&["started"]) == Some(true) {
            if container.bool(&["ready"]) {
                ready += 1;
            }
            continue;
        }
        reason = if container.has(&["state", "terminated"]) {
            match terminated.str(&["reason"]) {
                "" if terminated.int(&["signal"]) != 0 => {
                    format!("Init:Signal:{}", terminated.int(&["signal"]))
                }
                "" => format!("Init:ExitCode:{}", terminated.int(&["exitCode"])),
                given => format!("Init:{given}"),
            }
        } else if container.has(&["state", "waiting"]) && !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    let initialized = conditions.iter().map(Obj).find(|c| c.str(&["type"]) == "Initialized").is_some_and(|c| c.str(&["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        let mut error_reason = String::new();
        for container in status.list(&["containerStatuses"]).iter().rev().map(Obj) {
            restarts += container.int(&["restartCount"]);
            if container.has(&["lastState", "terminated"]) {
                last_restart = later(last_restart, parse_time(container.at(&["lastState", "terminated", "finishedAt"])));
            }
            let waiting_reason = container.str(&["state", "waiting", "reason"]);
            let terminated = container.obj(&["state", "terminated"]);
            if container.has(&["state", "waiting"]) && !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if container.has(&["state", "terminated"]) {
                reason = match terminated.str(&["reason"]) {
                    "" if terminated.int(&["signal"]) != 0 => {
                        format!("Signal:{}", terminated.int(&["signal"]))
                    }
                    "" => format!("ExitCode:{}", terminated.int(&["exitCode"])),
                    given => given.to_string(),
                };
                if terminated.int(&["exitCode"]) != 0 {
                    error_reason = reason.clone();
                }
            } else if container.bool(&["ready"]) && container.has(&["state", "running"]) {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose last reason is "Completed" is still running while a container runs, and
        // has failed when another container ended in error.
        if reason == "Completed" {
            let pod_ready = conditions.iter().map(Obj).any(|c| c.str(&["type"]) == "Ready" && c.str(&["status"]) == "True");
            if has_running && pod_ready {
                reason = "Running".to_string();
            } else if !error_reason.is_empty() {
                reason = error_reason;
            } else if has_running {
                reason = "NotReady".to_string();
            }
        }
    }

    if pod.deleting() && status.str(&["reason"]) == "NodeLost" {
        reason = "Unknown".to_string();
    } else if pod.deleting() && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(at) if restarts != 0 => format!("{restarts} ({} ago)", ctx.since_time(at)),
        _ => restarts.to_string(),
    };

    // v1 → internal conversion: `podIP` wins over `podIPs[0]` when both are set.
    let pod_ip = match status.str(&["podIP"]) {
        "" => status.list(&["podIPs"]).first().map_or("", |ip| Obj(ip).str(&["ip"])),
        ip => ip,
    };
    let gates = spec.list(&["readinessGates"]);
    let readiness = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|gate| {
                let kind = Obj(gate).str(&["conditionType"]);
                conditions.iter().map(Obj).find(|c| c.str(&["type"]) == kind).is_some_and(|c| c.str(&["status"]) == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    let cells = vec![
        s(pod.name()),
        s(format!("{ready}/{total}")),
        s(reason),
        s(restarts_text),
        s(ctx.age(pod)),
        s(or_none(pod_ip)),
        s(or_none(spec.str(&["nodeName"]))),
        s(or_none(status.str(&["nominatedNodeName"]))),
        s(readiness),
    ];
    let conditions = match phase {
        "Succeeded" => vec![completed("Succeeded", "The pod has completed successfully.")],
        "Failed" => vec![completed("Failed", "The pod failed.")],
        _ => Vec::new(),
    };
    (cells, conditions)
}

fn completed(reason: &str, message: &str) -> TableRowCondition {
    TableRowCondition {
        type_: "Completed".to_string(),
        status: "True".to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

// --- workloads

pub static POD_TEMPLATES: Printer = Printer {
    columns: &[
        NAME,
        col("Containers", "string", Doc::Text("Names of each container in the template.")),
        col("Images", "string", Doc::Text("Images referenced by each container in the template.")),
        col("Pod Labels", "string", Doc::Text("The labels for the pod template.")),
    ],
    row: |o, _| {
        let (names, images) = containers(o.obj(&["template", "spec"]));
        (vec![s(o.name()), s(names), s(images), s(format_labels(o.map(&["template", "metadata", "labels"])))], Vec::new())
    },
    order: None,
};

pub static REPLICATION_CONTROLLERS: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", D_REPLICATION_CONTROLLER_SPEC_REPLICAS),
        col("Current", "integer", D_REPLICATION_CONTROLLER_STATUS_REPLICAS),
        col("Ready", "integer", D_REPLICATION_CONTROLLER_STATUS_READY_REPLICAS),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_REPLICATION_CONTROLLER_SPEC_SELECTOR),
    ],
    row: |o, ctx| {
        let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
        let cells = vec![
            s(o.name()),
            Value::from(o.int(&["spec", "replicas"])),
            Value::from(o.int(&["status", "replicas"])),
            Value::from(o.int(&["status", "readyReplicas"])),
            s(ctx.age(o)),
            s(names),
            s(images),
            s(format_labels(o.map(&["spec", "selector"]))),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static REPLICA_SETS: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", D_REPLICA_SET_SPEC_REPLICAS),
        col("Current", "integer", D_REPLICA_SET_STATUS_REPLICAS),
        col("Ready", "integer", D_REPLICA_SET_STATUS_READY_REPLICAS),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_REPLICA_SET_SPEC_SELECTOR),
    ],
    row: |o, ctx| {
        let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
        let cells = vec![
            s(o.name()),
            Value::from(o.int(&["spec", "replicas"])),
            Value::from(o.int(&["status", "replicas"])),
            Value::from(o.int(&["status", "readyReplicas"])),
            s(ctx.age(o)),
            s(names),
            s(images),
            s(format_label_selector(o.at(&["spec", "selector"]))),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static DEPLOYMENTS: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", Doc::Text("Number of the pod with ready state")),
        col("Up-to-date", "string", D_DEPLOYMENT_STATUS_UPDATED_REPLICAS),
        col("Available", "string", D_DEPLOYMENT_STATUS_AVAILABLE_REPLICAS),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DEPLOYMENT_SPEC_SELECTOR),
    ],
    row: |o, ctx| {
        let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
        let selector = selector_string(o.at(&["spec", "selector"])).unwrap_or_else(|| "<invalid>".to_string());
        let cells = vec![
            s(o.name()),
            s(format!("{}/{}", o.int(&["status", "readyReplicas"]), o.int(&["spec", "replicas"]))),
            Value::from(o.int(&["status", "updatedReplicas"])),
            Value::from(o.int(&["status", "availableReplicas"])),
            s(ctx.age(o)),
            s(names),
            s(images),
            s(selector),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static STATEFUL_SETS: Printer = Printer {
    columns: &[NAME, col("Ready", "string", Doc::Text("Number of the pod with ready state")), AGE, CONTAINERS, IMAGES],
    row: |o, ctx| {
        let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
        let ready = format!("{}/{}", o.int(&["status", "readyReplicas"]), o.int(&["spec", "replicas"]));
        (vec![s(o.name()), s(ready), s(ctx.age(o)), s(names), s(images)], Vec::new())
    },
    order: None,
};

pub static DAEMON_SETS: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", D_DAEMON_SET_STATUS_DESIRED_NUMBER_SCHEDULED),
        col("Current", "integer", D_DAEMON_SET_STATUS_CURRENT_NUMBER_SCHEDULED),
        col("Ready", "integer", D_DAEMON_SET_STATUS_NUMBER_READY),
        col("Up-to-date", "integer", D_DAEMON_SET_STATUS_UPDATED_NUMBER_SCHEDULED),
        col("Available", "integer", D_DAEMON_SET_STATUS_NUMBER_AVAILABLE),
        col("Node Selector", "string", D_POD_SPEC_NODE_SELECTOR),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DAEMON_SET_SPEC_SELECTOR),
    ],
    row: |o, ctx| {
        let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
        let cells = vec![
            s(o.name()),
            Value::from(o.int(&["status", "desiredNumberScheduled"])),
            Value::from(o.int(&["status", "currentNumberScheduled"])),
            Value::from(o.int(&["status", "numberReady"])),
            Value::from(o.int(&["status", "updatedNumberScheduled"])),
            Value::from(o.int(&["status", "numberAvailable"])),
            s(format_labels(o.map(&["spec", "template", "spec", "nodeSelector"]))),
            s(ctx.age(o)),
            s(names),
            s(images),
            s(format_label_selector(o.at(&["spec", "selector"]))),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static JOBS: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", Doc::Text("Status of the job.")),
        col("Completions", "string", D_JOB_STATUS_SUCCEEDED),
        col("Duration", "string", Doc::Text("Time required to complete the job.")),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_JOB_SPEC_SELECTOR),
    ],
    row: job_row,
    order: None,
};

fn job_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let succeeded = o.int(&["status", "succeeded"]);
    let completions = if o.has(&["spec", "completions"]) {
        format!("{succeeded}/{}", o.int(&["spec", "completions"]))
    } else if o.int(&["spec", "parallelism"]) > 1 {
        format!("{succeeded}/1 of {}", o.int(&["spec", "parallelism"]))
    } else {
        format!("{succeeded}/1")
    };
    let start = parse_time(o.at(&["status", "startTime"]));
    let duration = match (o.has(&["status", "startTime"]), o.has(&["status", "completionTime"])) {
        (false, _) => String::new(),
        (true, false) => ctx.since_time(start.unwrap_or_default()),
        (true, true) => {
            let end = parse_time(o.at(&["status", "completionTime"])).unwrap_or_default();
            let start = start.unwrap_or_default();
            let nanos = (i128::from(end.unix_seconds()) - i128::from(start.unix_seconds())) * NANOS + i128::from(end.subsec_nanos())
                - i128::from(start.subsec_nanos());
            human_nanos(nanos)
        }
    };
    let status = if o.condition_true("Complete") {
        "Complete"
    } else if o.condition_true("Failed") {
        "Failed"
    } else if o.deleting() {
        "Terminating"
    } else if o.condition_true("Suspended") {
        "Suspended"
    } else if o.condition_true("FailureTarget") {
        "FailureTarget"
    } else if o.condition_true("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (names, images) = containers(o.obj(&["spec", "template", "spec"]));
    let cells = vec![
        s(o.name()),
        s(status),
        s(completions),
        s(duration),
        s(ctx.age(o)),
        s(names),
        s(images),
        s(format_label_selector(o.at(&["spec", "selector"]))),
    ];
    (cells, Vec::new())
}

pub static CRON_JOBS: Printer = Printer {
    columns: &[
        NAME,
        col("Schedule", "string", D_CRON_JOB_SPEC_SCHEDULE),
        col("Timezone", "string", D_CRON_JOB_SPEC_TIME_ZONE),
        col("Suspend", "boolean", D_CRON_JOB_SPEC_SUSPEND),
        col("Active", "integer", D_CRON_JOB_STATUS_ACTIVE),
        col("Last Schedule", "string", D_CRON_JOB_STATUS_LAST_SCHEDULE_TIME),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_JOB_SPEC_SELECTOR),
    ],
    row: |o, ctx| {
        let last =
            if o.has(&["status", "lastScheduleTime"]) { ctx.since(o.at(&["status", "lastScheduleTime"])) } else { "<none>".to_string() };
        let job = o.obj(&["spec", "jobTemplate", "spec"]);
        let (names, images) = containers(job.obj(&["template", "spec"]));
        let cells = vec![
            s(o.name()),
            s(o.str(&["spec", "schedule"])),
            s(o.opt_str(&["spec", "timeZone"]).unwrap_or("<none>")),
            s(bool_ptr(o.opt_bool(&["spec", "suspend"]))),
            Value::from(o.list(&["status", "active"]).len()),
            s(last),
            s(ctx.age(o)),
            s(names),
            s(images),
            s(format_label_selector(job.at(&["selector"]))),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static CONTROLLER_REVISIONS: Printer = Printer {
    columns: &[
        NAME,
        col("Controller", "string", Doc::Text("Controller of the object")),
        col("Revision", "string", D_CONTROLLER_REVISION_REVISION),
        AGE,
    ],
    row: |o, ctx| {
        let owner = o.list(&["metadata", "ownerReferences"]).iter().map(Obj).find(|r| r.bool(&["controller"]));
        let controller = match owner {
            None => "<none>".to_string(),
            Some(owner) => {
                let api_version = owner.str(&["apiVersion"]);
                let group = api_version.split_once('/').map_or("", |(group, _)| group);
                let kind = owner.str(&["kind"]);
                let group_kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
                if group.is_empty() && kind.is_empty() {
                    owner.str(&["name"]).to_string()
                } else {
                    format!("{}/{}", group_kind.to_lowercase(), owner.str(&["name"]))
                }
            }
        };
        (vec![s(o.name()), s(controller), Value::from(o.int(&["revision"])), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

pub static POD_DISRUPTION_BUDGETS: Printer = Printer {
    columns: &[
        NAME,
        col("Min Available", "string", Doc::Text("The minimum number of pods that must be available.")),
        col("Max Unavailable", "string", Doc::Text("The maximum number of pods that may be unavailable.")),
        col("Allowed Disruptions", "integer", Doc::Text("Calculated number of pods that may be disrupted at this time.")),
        AGE,
    ],
    row: |o, ctx| {
        let bound = |field: &str| o.at(&["spec", field]).map_or_else(|| "N/A".to_string(), int_or_string);
        let cells = vec![
            s(o.name()),
            s(bound("minAvailable")),
            s(bound("maxUnavailable")),
            Value::from(o.int(&["status", "disruptionsAllowed"])),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

// --- services and networking

pub static SERVICES: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", D_SERVICE_SPEC_TYPE),
        col("Cluster-IP", "string", D_SERVICE_SPEC_CLUSTER_IP),
        col("External-IP", "string", D_SERVICE_SPEC_EXTERNAL_IPS),
        col("Port(s)", "string", D_SERVICE_SPEC_PORTS),
        AGE,
        wide("Selector", "string", D_SERVICE_SPEC_SELECTOR),
    ],
    row: service_row,
    order: None,
};

fn service_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let spec = o.obj(&["spec"]);
    // Defaulting fills `clusterIPs` from `clusterIP`.
    let cluster_ip = match spec.list(&["clusterIPs"]).first().and_then(Value::as_str) {
        Some(ip) => ip,
        None => spec.str(&["clusterIP"]),
    };
    let external_ips = spec.list(&["externalIPs"]).iter().filter_map(Value::as_str).collect::<Vec<_>>();
    let external_ip = match spec.str(&["type"]) {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let balancers = load_balancer(o.obj(&["status", "loadBalancer"]));
            if !external_ips.is_empty() {
                let mut all = balancers.split(',').filter(|ip| !ip.is_empty()).collect::<Vec<_>>();
                all.extend(external_ips.iter().copied());
                all.join(",")
            } else if !balancers.is_empty() {
                balancers
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => spec.str(&["externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports = spec
        .list(&["ports"])
        .iter()
        .map(Obj)
        .map(|p| {
            let (port, node_port, protocol) = (p.int(&["port"]), p.int(&["nodePort"]), p.str(&["protocol"]));
            if node_port > 0 { format!("{port}:{node_port}/{protocol}") } else { format!("{port}/{protocol}") }
        })
        .collect::<Vec<_>>()
        .join(",");
    let cells = vec![
        s(o.name()),
        s(spec.str(&["type"])),
        s(or_none(cluster_ip)),
        s(external_ip),
        s(or_none(&ports)),
        s(ctx.age(o)),
        s(format_labels(spec.map(&["selector"]))),
    ];
    (cells, Vec::new())
}

pub static ENDPOINTS: Printer = Printer {
    columns: &[NAME, col("Endpoints", "string", D_ENDPOINTS_SUBSETS), AGE],
    row: |o, ctx| (vec![s(o.name()), s(format_endpoints(o)), s(ctx.age(o))], Vec::new()),
    order: None,
};

/// `formatEndpoints` (all ports): the first three `ip:port`s (or bare IPs of portless subsets)
/// and how many more there are.
fn format_endpoints(o: Obj<'_>) -> String {
    const MAX: usize = 3;
    let subsets = o.list(&["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for subset in subsets.iter().map(Obj) {
        let addresses = subset.list(&["addresses"]);
        let ports = subset.list(&["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for address in addresses.iter().map(Obj) {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(address.str(&["ip"]).to_string());
            }
            continue;
        }
        for port in ports.iter().map(Obj) {
            count += addresses.len();
            for address in addresses.iter().map(Obj) {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(address.str(&["ip"]), port.int(&["port"])));
            }
        }
    }
    let text = list.join(",");
    if more { format!("{text} + {} more...", count - MAX) } else { text }
}

pub static ENDPOINT_SLICES: Printer = Printer {
    columns: &[
        NAME,
        col("AddressType", "string", D_ENDPOINT_SLICE_ADDRESS_TYPE),
        col("Ports", "string", D_ENDPOINT_SLICE_PORTS),
        col("Endpoints", "string", D_ENDPOINT_SLICE_ENDPOINTS),
        AGE,
    ],
    row: |o, ctx| {
        const MAX: usize = 3;
        let mut ports = Vec::new();
        let mut more = false;
        let mut count = 0;
        for port in o.list(&["ports"]).iter().map(Obj) {
            if ports.len() < MAX {
                ports.push(if port.has(&["port"]) {
                    port.int(&["port"]).to_string()
                } else {
                    port.opt_str(&["name"]).unwrap_or("*").to_string()
                });
            } else if ports.len() == MAX {
                more = true;
            }
            count += 1;
        }
        let ports = list_with_more(&ports, more, count, MAX);
        let mut endpoints = Vec::new();
        let (mut more, mut count) = (false, 0);
        for endpoint in o.list(&["endpoints"]).iter().map(Obj) {
            for address in endpoint.list(&["addresses"]) {
                if endpoints.len() < MAX {
                    endpoints.push(address.as_str().unwrap_or_default().to_string());
                } else if endpoints.len() == MAX {
                    more = true;
                }
                count += 1;
            }
        }
        let endpoints = list_with_more(&endpoints, more, count, MAX);
        (vec![s(o.name()), s(o.str(&["addressType"])), s(ports), s(endpoints), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

pub static INGRESSES: Printer = Printer {
    columns: &[
        NAME,
        col("Class", "string", Doc::Text("The name of the IngressClass resource that should be used for additional configuration")),
        col("Hosts", "string", Doc::Text("Hosts that incoming requests are matched against before the ingress rule")),
        col("Address", "string", Doc::Text("Address is a list containing ingress points for the load-balancer")),
        col("Ports", "string", Doc::Text("Ports of TLS configurations that open")),
        AGE,
    ],
    row: |o, ctx| {
        let rules = o.list(&["spec", "rules"]);
        let mut hosts: Vec<&str> = Vec::new();
        let mut more = false;
        for rule in rules.iter().map(Obj) {
            if hosts.len() == 3 {
                more = true;
            }
            if !more && !rule.str(&["host"]).is_empty() {
                hosts.push(rule.str(&["host"]));
            }
        }
        let hosts = match (hosts.is_empty(), more) {
            (true, _) => "*".to_string(),
            (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
            (false, false) => hosts.join(","),
        };
        let ports = if o.list(&["spec", "tls"]).is_empty() { "80" } else { "80, 443" };
        let cells = vec![
            s(o.name()),
            s(o.opt_str(&["spec", "ingressClassName"]).unwrap_or("<none>")),
            s(hosts),
            s(load_balancer(o.obj(&["status", "loadBalancer"]))),
            s(ports),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static INGRESS_CLASSES: Printer = Printer {
    columns: &[
        NAME,
        col("Controller", "string", Doc::Text("Controller that is responsible for handling this class")),
        col("Parameters", "string", Doc::Text("A reference to a resource with additional parameters")),
        AGE,
    ],
    row: |o, ctx| {
        let mut name = o.name().to_string();
        if o.annotation("ingressclass.kubernetes.io/is-default-class") == Some("true") {
            name.push_str(" (default)");
        }
        let parameters = match o.at(&["spec", "parameters"]).map(Obj) {
            None => "<none>".to_string(),
            Some(p) => {
                let mut text = p.str(&["kind"]).to_string();
                if let Some(group) = p.opt_str(&["apiGroup"]) {
                    text = format!("{text}.{group}");
                }
                format!("{text}/{}", p.str(&["name"]))
            }
        };
        (vec![s(name), s(o.str(&["spec", "controller"])), s(parameters), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

pub static NETWORK_POLICIES: Printer = Printer {
    columns: &[NAME, col("Pod-Selector", "string", D_NETWORK_POLICY_SPEC_POD_SELECTOR), AGE],
    row: |o, ctx| {
        // `podSelector` is a struct, never nil: missing is the empty selector.
        let empty = Value::Object(Map::new());
        let selector = o.at(&["spec", "podSelector"]).unwrap_or(&empty);
        (vec![s(o.name()), s(format_label_selector(Some(selector))), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

// --- cluster and configuration

pub static NODES: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", Doc::Text("The status of the node")),
        col("Roles", "string", Doc::Text("The roles of the node")),
        AGE,
        col("Version", "string", D_NODE_SYSTEM_INFO_KUBELET_VERSION),
        wide("Internal-IP", "string", D_NODE_STATUS_ADDRESSES),
        wide("External-IP", "string", D_NODE_STATUS_ADDRESSES),
        wide("OS-Image", "string", D_NODE_SYSTEM_INFO_OS_IMAGE),
        wide("Kernel-Version", "string", D_NODE_SYSTEM_INFO_KERNEL_VERSION),
        wide("Container-Runtime", "string", D_NODE_SYSTEM_INFO_CONTAINER_RUNTIME_VERSION),
    ],
    row: node_row,
    order: None,
};

fn node_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    // Conditions go through a map by type: the last Ready condition counts.
    let ready = o.list(&["status", "conditions"]).iter().map(Obj).rfind(|c| c.str(&["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if c.str(&["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if o.bool(&["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let mut roles = BTreeSet::new();
    for (key, value) in o.map(&["metadata", "labels"]).into_iter().flatten() {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_string());
            }
        } else if key == "kubernetes.io/role" {
            let value = value.as_str().unwrap_or_default();
            if !value.is_empty() {
                roles.insert(value.to_string());
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |kind: &str| {
        o.list(&["status", "addresses"])
            .iter()
            .map(Obj)
            .find(|a| a.str(&["type"]) == kind)
            .map_or_else(|| "<none>".to_string(), |a| a.str(&["address"]).to_string())
    };
    let info = o.obj(&["status", "nodeInfo"]);
    let unknown = |field: &str| match info.str(&[field]) {
        "" => "<unknown>".to_string(),
        text => text.to_string(),
    };
    // Since v1.35 the kernel column also names the architecture.
    let mut kernel = unknown("kernelVersion");
    if !info.str(&["architecture"]).is_empty() {
        kernel = format!("{kernel} ({})", info.str(&["architecture"]));
    }
    let cells = vec![
        s(o.name()),
        s(status.join(",")),
        s(or_none(&roles)),
        s(ctx.age(o)),
        s(info.str(&["kubeletVersion"])),
        s(address("InternalIP")),
        s(address("ExternalIP")),
        s(unknown("osImage")),
        s(kernel),
        s(unknown("containerRuntimeVersion")),
    ];
    (cells, Vec::new())
}

pub static NAMESPACES: Printer = Printer {
    columns: &[NAME, col("Status", "string", Doc::Text("The status of the namespace")), AGE],
    row: |o, ctx| (vec![s(o.name()), s(o.str(&["status", "phase"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

pub static CONFIG_MAPS: Printer = Printer {
    columns: &[NAME, col("Data", "string", D_CONFIG_MAP_DATA), AGE],
    row: |o, ctx| {
        let count = o.len(&["data"]) + o.len(&["binaryData"]);
        (vec![s(o.name()), Value::from(count), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

pub static SECRETS: Printer = Printer {
    columns: &[NAME, col("Type", "string", D_SECRET_TYPE), col("Data", "string", D_SECRET_DATA), AGE],
    row: |o, ctx| (vec![s(o.name()), s(o.str(&["type"])), Value::from(o.len(&["data"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

/// Since v1.35 without the SECRETS count (kubernetes#117160).
pub static SERVICE_ACCOUNTS: Printer =
    Printer { columns: &[NAME, AGE], row: |o, ctx| (vec![s(o.name()), s(ctx.age(o))], Vec::new()), order: None };

pub static COMPONENT_STATUSES: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", Doc::Text("Status of the component conditions")),
        col("Message", "string", Doc::Text("Message of the component conditions")),
        col("Error", "string", Doc::Text("Error of the component conditions")),
    ],
    row: |o, _| {
        let healthy = o.condition(&["conditions"], "Healthy");
        let status = match healthy {
            None => "Unknown",
            Some(c) if c.str(&["status"]) == "True" => "Healthy",
            Some(_) => "Unhealthy",
        };
        let field = |name: &str| healthy.map_or("", |c| c.str(&[name]));
        (vec![s(o.name()), s(status), s(field("message")), s(field("error"))], Vec::new())
    },
    order: None,
};

pub static RESOURCE_QUOTAS: Printer = Printer {
    columns: &[
        NAME,
        col("Request", "string", Doc::Text("Request represents a minimum amount of cpu/memory that a container may consume.")),
        col(
            "Limit",
            "string",
            Doc::Text("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
        ),
        AGE,
    ],
    row: |o, ctx| {
        let mut names = o.map(&["status", "hard"]).into_iter().flatten().map(|(k, _)| k.as_str()).collect::<Vec<_>>();
        names.sort_unstable();
        let (mut requests, mut limits) = (Vec::new(), Vec::new());
        for name in names {
            let entry = format!("{name}: {}/{}", quantity(o.at(&["status", "used", name])), quantity(o.at(&["status", "hard", name])));
            match name.split_once('.') {
                Some(("limits", _)) => limits.push(entry),
                _ => requests.push(entry),
            }
        }
        (vec![s(o.name()), s(requests.join(", ")), s(limits.join(", ")), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

// --- events

const EVENT_COLUMNS: &[Col] = &[
    col("Last Seen", "string", D_EVENT_LAST_TIMESTAMP),
    col("Type", "string", D_EVENT_TYPE),
    col("Reason", "string", D_EVENT_REASON),
    col("Object", "string", D_EVENT_INVOLVED_OBJECT),
    wide("Subobject", "string", D_OBJECT_REFERENCE_FIELD_PATH),
    wide("Source", "string", D_EVENT_SOURCE),
    col("Message", "string", D_EVENT_MESSAGE),
    wide("First Seen", "string", D_EVENT_FIRST_TIMESTAMP),
    wide("Count", "string", D_EVENT_COUNT),
    Col { priority: 1, ..NAME },
];

/// Core events.
pub static EVENTS: Printer = Printer { columns: EVENT_COLUMNS, row: event_row, order: None };

/// `events.k8s.io` events: upstream prints the core `Event` they are stored as.
pub static EVENTS_V1: Printer = Printer { columns: EVENT_COLUMNS, row: event_v1_row, order: None };

fn event_v1_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    event_row(Obj(&event_as_core(o.0)), ctx)
}

/// An `events.k8s.io/v1` event as the core `Event` it is stored as (the printer reads that).
fn event_as_core(event: &Value) -> Value {
    let Some(fields) = event.as_object() else {
        return event.clone();
    };
    let renames = [
        ("regarding", "involvedObject"),
        ("note", "message"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("reportingController", "reportingComponent"),
    ];
    let mut core = Map::new();
    for (key, value) in fields {
        let key = renames.iter().find(|(from, _)| from == key).map_or(key.as_str(), |(_, to)| to);
        core.insert(key.to_string(), value.clone());
    }
    Value::Object(core)
}

fn event_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let first = if parse_time(o.at(&["firstTimestamp"])).is_some() {
        ctx.since(o.at(&["firstTimestamp"]))
    } else {
        ctx.since(o.at(&["eventTime"]))
    };
    let mut last = if parse_time(o.at(&["lastTimestamp"])).is_some() { ctx.since(o.at(&["lastTimestamp"])) } else { first.clone() };
    let mut count = o.int(&["count"]);
    if o.has(&["series"]) {
        last = ctx.since(o.at(&["series", "lastObservedTime"]));
        count = o.int(&["series", "count"]);
    } else if count == 0 {
        // Singleton events of the new API have no count.
        count = 1;
    }
    let involved = o.obj(&["involvedObject"]);
    let kind = involved.str(&["kind"]).to_lowercase();
    let target = match involved.str(&["name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let first_non_empty = |a: &'_ str, b: &'_ str| {
        if a.is_empty() { b.to_string() } else { a.to_string() }
    };
    let component = first_non_empty(o.str(&["source", "component"]), o.str(&["reportingComponent"]));
    let instance = first_non_empty(o.str(&["source", "host"]), o.str(&["reportingInstance"]));
    let source = if instance.is_empty() { component } else { format!("{component}, {instance}") };
    let cells = vec![
        s(last),
        s(o.str(&["type"])),
        s(o.str(&["reason"])),
        s(target),
        s(involved.str(&["fieldPath"])),
        s(source),
        s(o.str(&["message"]).trim()),
        s(first),
        Value::from(count),
        s(o.name()),
    ];
    (cells, Vec::new())
}

// --- storage

pub static PERSISTENT_VOLUMES: Printer = Printer {
    columns: &[
        NAME,
        col("Capacity", "string", D_PERSISTENT_VOLUME_SPEC_CAPACITY),
        col("Access Modes", "string", D_PERSISTENT_VOLUME_SPEC_ACCESS_MODES),
        col("Reclaim Policy", "string", D_PERSISTENT_VOLUME_SPEC_PERSISTENT_VOLUME_RECLAIM_POLICY),
        col("Status", "string", D_PERSISTENT_VOLUME_STATUS_PHASE),
        col("Claim", "string", D_PERSISTENT_VOLUME_SPEC_CLAIM_REF),
        col("StorageClass", "string", Doc::Text("StorageClass of the pv")),
        col("VolumeAttributesClass", "string", Doc::Text("VolumeAttributesClass of the pv")),
        col("Reason", "string", D_PERSISTENT_VOLUME_STATUS_REASON),
        AGE,
        wide("VolumeMode", "string", D_PERSISTENT_VOLUME_SPEC_VOLUME_MODE),
    ],
    row: |o, ctx| {
        let claim = match o.at(&["spec", "claimRef"]).map(Obj) {
            Some(c) => format!("{}/{}", c.str(&["namespace"]), c.str(&["name"])),
            None => String::new(),
        };
        let phase = if o.deleting() { "Terminating" } else { o.str(&["status", "phase"]) };
        let cells = vec![
            s(o.name()),
            s(quantity(o.at(&["spec", "capacity", "storage"]))),
            s(access_modes(o.list(&["spec", "accessModes"]))),
            s(o.str(&["spec", "persistentVolumeReclaimPolicy"])),
            s(phase),
            s(claim),
            s(storage_class(o)),
            s(o.opt_str(&["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")),
            s(o.str(&["status", "reason"])),
            s(ctx.age(o)),
            s(o.opt_str(&["spec", "volumeMode"]).unwrap_or("<unset>")),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static PERSISTENT_VOLUME_CLAIMS: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", D_PERSISTENT_VOLUME_CLAIM_STATUS_PHASE),
        col("Volume", "string", D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_NAME),
        col("Capacity", "string", D_PERSISTENT_VOLUME_CLAIM_STATUS_CAPACITY),
        col("Access Modes", "string", D_PERSISTENT_VOLUME_CLAIM_STATUS_ACCESS_MODES),
        col("StorageClass", "string", Doc::Text("StorageClass of the pvc")),
        col("VolumeAttributesClass", "string", Doc::Text("VolumeAttributesClass of the pvc")),
        AGE,
        wide("VolumeMode", "string", D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_MODE),
    ],
    row: |o, ctx| {
        let phase = if o.deleting() { "Terminating" } else { o.str(&["status", "phase"]) };
        let volume = o.str(&["spec", "volumeName"]);
        // What the claim got, once it is bound to a volume.
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (quantity(o.at(&["status", "capacity", "storage"])), access_modes(o.list(&["status", "accessModes"])))
        };
        let cells = vec![
            s(o.name()),
            s(phase),
            s(volume),
            s(capacity),
            s(modes),
            s(storage_class(o)),
            s(o.opt_str(&["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")),
            s(ctx.age(o)),
            s(o.opt_str(&["spec", "volumeMode"]).unwrap_or("<unset>")),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static STORAGE_CLASSES: Printer = Printer {
    columns: &[
        NAME,
        col("Provisioner", "string", D_STORAGE_CLASS_PROVISIONER),
        col("ReclaimPolicy", "string", D_STORAGE_CLASS_RECLAIM_POLICY),
        col("VolumeBindingMode", "string", D_STORAGE_CLASS_VOLUME_BINDING_MODE),
        col("AllowVolumeExpansion", "string", D_STORAGE_CLASS_ALLOW_VOLUME_EXPANSION),
        AGE,
    ],
    row: |o, ctx| {
        let mut name = o.name().to_string();
        let default = ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];
        if default.iter().any(|key| o.annotation(key) == Some("true")) {
            name.push_str(" (default)");
        }
        let cells = vec![
            s(name),
            s(o.str(&["provisioner"])),
            s(o.opt_str(&["reclaimPolicy"]).unwrap_or("Delete")),
            s(o.opt_str(&["volumeBindingMode"]).unwrap_or("Immediate")),
            Value::from(o.bool(&["allowVolumeExpansion"])),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

// --- access control, coordination, scheduling, admission

fn role_binding_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let role = format!("{}/{}", o.str(&["roleRef", "kind"]), o.str(&["roleRef", "name"]));
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in o.list(&["subjects"]).iter().map(Obj) {
        match subject.str(&["kind"]) {
            "ServiceAccount" => accounts.push(format!("{}/{}", subject.str(&["namespace"]), subject.str(&["name"]))),
            "User" => users.push(subject.str(&["name"]).to_string()),
            "Group" => groups.push(subject.str(&["name"]).to_string()),
            _ => {}
        }
    }
    let cells = vec![s(o.name()), s(role), s(ctx.age(o)), s(users.join(", ")), s(groups.join(", ")), s(accounts.join(", "))];
    (cells, Vec::new())
}

pub static ROLE_BINDINGS: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", D_ROLE_BINDING_ROLE_REF),
        AGE,
        wide("Users", "string", Doc::Text("Users in the roleBinding")),
        wide("Groups", "string", Doc::Text("Groups in the roleBinding")),
        wide("ServiceAccounts", "string", Doc::Text("ServiceAccounts in the roleBinding")),
    ],
    row: role_binding_row,
    order: None,
};

pub static CLUSTER_ROLE_BINDINGS: Printer = Printer {
    columns: &[
        NAME,
        col("Role", "string", D_CLUSTER_ROLE_BINDING_ROLE_REF),
        AGE,
        wide("Users", "string", Doc::Text("Users in the clusterRoleBinding")),
        wide("Groups", "string", Doc::Text("Groups in the clusterRoleBinding")),
        wide("ServiceAccounts", "string", Doc::Text("ServiceAccounts in the clusterRoleBinding")),
    ],
    row: role_binding_row,
    order: None,
};

pub static LEASES: Printer = Printer {
    columns: &[NAME, col("Holder", "string", D_LEASE_SPEC_HOLDER_IDENTITY), AGE],
    row: |o, ctx| (vec![s(o.name()), s(o.str(&["spec", "holderIdentity"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

pub static PRIORITY_CLASSES: Printer = Printer {
    columns: &[
        NAME,
        col("Value", "integer", D_PRIORITY_CLASS_VALUE),
        col("Global-Default", "boolean", D_PRIORITY_CLASS_GLOBAL_DEFAULT),
        AGE,
        col("PreemptionPolicy", "string", D_PRIORITY_CLASS_PREEMPTION_POLICY),
    ],
    row: |o, ctx| {
        let cells = vec![
            s(o.name()),
            Value::from(o.int(&["value"])),
            Value::from(o.bool(&["globalDefault"])),
            s(ctx.age(o)),
            s(o.str(&["preemptionPolicy"])),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static RUNTIME_CLASSES: Printer = Printer {
    // Upstream describes Handler with ObjectMeta's (absent) "handler" doc: empty.
    columns: &[NAME, col("Handler", "string", Doc::Text("")), AGE],
    row: |o, ctx| (vec![s(o.name()), s(o.str(&["handler"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

fn webhooks_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    (vec![s(o.name()), Value::from(o.list(&["webhooks"]).len()), s(ctx.age(o))], Vec::new())
}

pub static MUTATING_WEBHOOKS: Printer = Printer {
    columns: &[
        NAME,
        col("Webhooks", "integer", Doc::Text("Webhooks indicates the number of webhooks registered in this configuration")),
        AGE,
    ],
    row: webhooks_row,
    order: None,
};

pub static VALIDATING_WEBHOOKS: Printer = Printer {
    columns: &[
        NAME,
        col("Webhooks", "integer", Doc::Text("Webhooks indicates the number of webhooks registered in this configuration")),
        AGE,
    ],
    row: webhooks_row,
    order: None,
};

// ---------------------------------------------------------------------------------------------
// Column descriptions: the fields whose SwaggerDoc() upstream's printers show

/// `meta/v1` `ObjectMeta.name`.
const D_OBJECT_META_NAME: Doc = Doc::Field(<kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta as TypeInfo>::fields, "name");
/// `meta/v1` `ObjectMeta.creationTimestamp`.
const D_OBJECT_META_CREATION_TIMESTAMP: Doc =
    Doc::Field(<kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta as TypeInfo>::fields, "creationTimestamp");
/// `core/v1` `PodStatus.podIP`.
const D_POD_STATUS_POD_IP: Doc = Doc::Field(<kapi_api::api::core::v1::PodStatus as TypeInfo>::fields, "podIP");
/// `core/v1` `PodSpec.nodeName`.
const D_POD_SPEC_NODE_NAME: Doc = Doc::Field(<kapi_api::api::core::v1::PodSpec as TypeInfo>::fields, "nodeName");
/// `core/v1` `PodStatus.nominatedNodeName`.
const D_POD_STATUS_NOMINATED_NODE_NAME: Doc = Doc::Field(<kapi_api::api::core::v1::PodStatus as TypeInfo>::fields, "nominatedNodeName");
/// `core/v1` `PodSpec.readinessGates`.
const D_POD_SPEC_READINESS_GATES: Doc = Doc::Field(<kapi_api::api::core::v1::PodSpec as TypeInfo>::fields, "readinessGates");
/// `core/v1` `ReplicationControllerSpec.replicas`.
const D_REPLICATION_CONTROLLER_SPEC_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::core::v1::ReplicationControllerSpec as TypeInfo>::fields, "replicas");
/// `core/v1` `ReplicationControllerStatus.replicas`.
const D_REPLICATION_CONTROLLER_STATUS_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::core::v1::ReplicationControllerStatus as TypeInfo>::fields, "replicas");
/// `core/v1` `ReplicationControllerStatus.readyReplicas`.
const D_REPLICATION_CONTROLLER_STATUS_READY_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::core::v1::ReplicationControllerStatus as TypeInfo>::fields, "readyReplicas");
/// `core/v1` `ReplicationControllerSpec.selector`.
const D_REPLICATION_CONTROLLER_SPEC_SELECTOR: Doc =
    Doc::Field(<kapi_api::api::core::v1::ReplicationControllerSpec as TypeInfo>::fields, "selector");
/// `apps/v1` `ReplicaSetSpec.replicas`.
const D_REPLICA_SET_SPEC_REPLICAS: Doc = Doc::Field(<kapi_api::api::apps::v1::ReplicaSetSpec as TypeInfo>::fields, "replicas");
/// `apps/v1` `ReplicaSetStatus.replicas`.
const D_REPLICA_SET_STATUS_REPLICAS: Doc = Doc::Field(<kapi_api::api::apps::v1::ReplicaSetStatus as TypeInfo>::fields, "replicas");
/// `apps/v1` `ReplicaSetStatus.readyReplicas`.
const D_REPLICA_SET_STATUS_READY_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::apps::v1::ReplicaSetStatus as TypeInfo>::fields, "readyReplicas");
/// `apps/v1` `ReplicaSetSpec.selector`.
const D_REPLICA_SET_SPEC_SELECTOR: Doc = Doc::Field(<kapi_api::api::apps::v1::ReplicaSetSpec as TypeInfo>::fields, "selector");
/// `apps/v1` `DaemonSetStatus.desiredNumberScheduled`.
const D_DAEMON_SET_STATUS_DESIRED_NUMBER_SCHEDULED: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DaemonSetStatus as TypeInfo>::fields, "desiredNumberScheduled");
/// `apps/v1` `DaemonSetStatus.currentNumberScheduled`.
const D_DAEMON_SET_STATUS_CURRENT_NUMBER_SCHEDULED: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DaemonSetStatus as TypeInfo>::fields, "currentNumberScheduled");
/// `apps/v1` `DaemonSetStatus.numberReady`.
const D_DAEMON_SET_STATUS_NUMBER_READY: Doc = Doc::Field(<kapi_api::api::apps::v1::DaemonSetStatus as TypeInfo>::fields, "numberReady");
/// `apps/v1` `DaemonSetStatus.updatedNumberScheduled`.
const D_DAEMON_SET_STATUS_UPDATED_NUMBER_SCHEDULED: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DaemonSetStatus as TypeInfo>::fields, "updatedNumberScheduled");
/// `apps/v1` `DaemonSetStatus.numberAvailable`.
const D_DAEMON_SET_STATUS_NUMBER_AVAILABLE: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DaemonSetStatus as TypeInfo>::fields, "numberAvailable");
/// `core/v1` `PodSpec.nodeSelector`.
const D_POD_SPEC_NODE_SELECTOR: Doc = Doc::Field(<kapi_api::api::core::v1::PodSpec as TypeInfo>::fields, "nodeSelector");
/// `apps/v1` `DaemonSetSpec.selector`.
const D_DAEMON_SET_SPEC_SELECTOR: Doc = Doc::Field(<kapi_api::api::apps::v1::DaemonSetSpec as TypeInfo>::fields, "selector");
/// `batch/v1` `JobStatus.succeeded`.
const D_JOB_STATUS_SUCCEEDED: Doc = Doc::Field(<kapi_api::api::batch::v1::JobStatus as TypeInfo>::fields, "succeeded");
/// `batch/v1` `JobSpec.selector`.
const D_JOB_SPEC_SELECTOR: Doc = Doc::Field(<kapi_api::api::batch::v1::JobSpec as TypeInfo>::fields, "selector");
/// `batch/v1` `CronJobSpec.schedule`.
const D_CRON_JOB_SPEC_SCHEDULE: Doc = Doc::Field(<kapi_api::api::batch::v1::CronJobSpec as TypeInfo>::fields, "schedule");
/// `batch/v1` `CronJobSpec.timeZone`.
const D_CRON_JOB_SPEC_TIME_ZONE: Doc = Doc::Field(<kapi_api::api::batch::v1::CronJobSpec as TypeInfo>::fields, "timeZone");
/// `batch/v1` `CronJobSpec.suspend`.
const D_CRON_JOB_SPEC_SUSPEND: Doc = Doc::Field(<kapi_api::api::batch::v1::CronJobSpec as TypeInfo>::fields, "suspend");
/// `batch/v1` `CronJobStatus.active`.
const D_CRON_JOB_STATUS_ACTIVE: Doc = Doc::Field(<kapi_api::api::batch::v1::CronJobStatus as TypeInfo>::fields, "active");
/// `batch/v1` `CronJobStatus.lastScheduleTime`.
const D_CRON_JOB_STATUS_LAST_SCHEDULE_TIME: Doc =
    Doc::Field(<kapi_api::api::batch::v1::CronJobStatus as TypeInfo>::fields, "lastScheduleTime");
/// `core/v1` `ServiceSpec.type`.
const D_SERVICE_SPEC_TYPE: Doc = Doc::Field(<kapi_api::api::core::v1::ServiceSpec as TypeInfo>::fields, "type");
/// `core/v1` `ServiceSpec.clusterIP`.
const D_SERVICE_SPEC_CLUSTER_IP: Doc = Doc::Field(<kapi_api::api::core::v1::ServiceSpec as TypeInfo>::fields, "clusterIP");
/// `core/v1` `ServiceSpec.externalIPs`.
const D_SERVICE_SPEC_EXTERNAL_IPS: Doc = Doc::Field(<kapi_api::api::core::v1::ServiceSpec as TypeInfo>::fields, "externalIPs");
/// `core/v1` `ServiceSpec.ports`.
const D_SERVICE_SPEC_PORTS: Doc = Doc::Field(<kapi_api::api::core::v1::ServiceSpec as TypeInfo>::fields, "ports");
/// `core/v1` `ServiceSpec.selector`.
const D_SERVICE_SPEC_SELECTOR: Doc = Doc::Field(<kapi_api::api::core::v1::ServiceSpec as TypeInfo>::fields, "selector");
/// `core/v1` `Endpoints.subsets`.
const D_ENDPOINTS_SUBSETS: Doc = Doc::Field(<kapi_api::api::core::v1::Endpoints as TypeInfo>::fields, "subsets");
/// `core/v1` `NodeSystemInfo.kubeletVersion`.
const D_NODE_SYSTEM_INFO_KUBELET_VERSION: Doc = Doc::Field(<kapi_api::api::core::v1::NodeSystemInfo as TypeInfo>::fields, "kubeletVersion");
/// `core/v1` `NodeStatus.addresses`.
const D_NODE_STATUS_ADDRESSES: Doc = Doc::Field(<kapi_api::api::core::v1::NodeStatus as TypeInfo>::fields, "addresses");
/// `core/v1` `NodeSystemInfo.osImage`.
const D_NODE_SYSTEM_INFO_OS_IMAGE: Doc = Doc::Field(<kapi_api::api::core::v1::NodeSystemInfo as TypeInfo>::fields, "osImage");
/// `core/v1` `NodeSystemInfo.kernelVersion`.
const D_NODE_SYSTEM_INFO_KERNEL_VERSION: Doc = Doc::Field(<kapi_api::api::core::v1::NodeSystemInfo as TypeInfo>::fields, "kernelVersion");
/// `core/v1` `NodeSystemInfo.containerRuntimeVersion`.
const D_NODE_SYSTEM_INFO_CONTAINER_RUNTIME_VERSION: Doc =
    Doc::Field(<kapi_api::api::core::v1::NodeSystemInfo as TypeInfo>::fields, "containerRuntimeVersion");
/// `core/v1` `Event.lastTimestamp`.
const D_EVENT_LAST_TIMESTAMP: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "lastTimestamp");
/// `core/v1` `Event.type`.
const D_EVENT_TYPE: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "type");
/// `core/v1` `Event.reason`.
const D_EVENT_REASON: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "reason");
/// `core/v1` `Event.involvedObject`.
const D_EVENT_INVOLVED_OBJECT: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "involvedObject");
/// `core/v1` `ObjectReference.fieldPath`.
const D_OBJECT_REFERENCE_FIELD_PATH: Doc = Doc::Field(<kapi_api::api::core::v1::ObjectReference as TypeInfo>::fields, "fieldPath");
/// `core/v1` `Event.source`.
const D_EVENT_SOURCE: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "source");
/// `core/v1` `Event.message`.
const D_EVENT_MESSAGE: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "message");
/// `core/v1` `Event.firstTimestamp`.
const D_EVENT_FIRST_TIMESTAMP: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "firstTimestamp");
/// `core/v1` `Event.count`.
const D_EVENT_COUNT: Doc = Doc::Field(<kapi_api::api::core::v1::Event as TypeInfo>::fields, "count");
/// `core/v1` `Secret.type`.
const D_SECRET_TYPE: Doc = Doc::Field(<kapi_api::api::core::v1::Secret as TypeInfo>::fields, "type");
/// `core/v1` `Secret.data`.
const D_SECRET_DATA: Doc = Doc::Field(<kapi_api::api::core::v1::Secret as TypeInfo>::fields, "data");
/// `core/v1` `PersistentVolumeSpec.capacity`.
const D_PERSISTENT_VOLUME_SPEC_CAPACITY: Doc = Doc::Field(<kapi_api::api::core::v1::PersistentVolumeSpec as TypeInfo>::fields, "capacity");
/// `core/v1` `PersistentVolumeSpec.accessModes`.
const D_PERSISTENT_VOLUME_SPEC_ACCESS_MODES: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeSpec as TypeInfo>::fields, "accessModes");
/// `core/v1` `PersistentVolumeSpec.persistentVolumeReclaimPolicy`.
const D_PERSISTENT_VOLUME_SPEC_PERSISTENT_VOLUME_RECLAIM_POLICY: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeSpec as TypeInfo>::fields, "persistentVolumeReclaimPolicy");
/// `core/v1` `PersistentVolumeStatus.phase`.
const D_PERSISTENT_VOLUME_STATUS_PHASE: Doc = Doc::Field(<kapi_api::api::core::v1::PersistentVolumeStatus as TypeInfo>::fields, "phase");
/// `core/v1` `PersistentVolumeSpec.claimRef`.
const D_PERSISTENT_VOLUME_SPEC_CLAIM_REF: Doc = Doc::Field(<kapi_api::api::core::v1::PersistentVolumeSpec as TypeInfo>::fields, "claimRef");
/// `core/v1` `PersistentVolumeStatus.reason`.
const D_PERSISTENT_VOLUME_STATUS_REASON: Doc = Doc::Field(<kapi_api::api::core::v1::PersistentVolumeStatus as TypeInfo>::fields, "reason");
/// `core/v1` `PersistentVolumeSpec.volumeMode`.
const D_PERSISTENT_VOLUME_SPEC_VOLUME_MODE: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeSpec as TypeInfo>::fields, "volumeMode");
/// `core/v1` `PersistentVolumeClaimStatus.phase`.
const D_PERSISTENT_VOLUME_CLAIM_STATUS_PHASE: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeClaimStatus as TypeInfo>::fields, "phase");
/// `core/v1` `PersistentVolumeClaimSpec.volumeName`.
const D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_NAME: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeClaimSpec as TypeInfo>::fields, "volumeName");
/// `core/v1` `PersistentVolumeClaimStatus.capacity`.
const D_PERSISTENT_VOLUME_CLAIM_STATUS_CAPACITY: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeClaimStatus as TypeInfo>::fields, "capacity");
/// `core/v1` `PersistentVolumeClaimStatus.accessModes`.
const D_PERSISTENT_VOLUME_CLAIM_STATUS_ACCESS_MODES: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeClaimStatus as TypeInfo>::fields, "accessModes");
/// `core/v1` `PersistentVolumeClaimSpec.volumeMode`.
const D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_MODE: Doc =
    Doc::Field(<kapi_api::api::core::v1::PersistentVolumeClaimSpec as TypeInfo>::fields, "volumeMode");
/// `apps/v1` `DeploymentStatus.updatedReplicas`.
const D_DEPLOYMENT_STATUS_UPDATED_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DeploymentStatus as TypeInfo>::fields, "updatedReplicas");
/// `apps/v1` `DeploymentStatus.availableReplicas`.
const D_DEPLOYMENT_STATUS_AVAILABLE_REPLICAS: Doc =
    Doc::Field(<kapi_api::api::apps::v1::DeploymentStatus as TypeInfo>::fields, "availableReplicas");
/// `apps/v1` `DeploymentSpec.selector`.
const D_DEPLOYMENT_SPEC_SELECTOR: Doc = Doc::Field(<kapi_api::api::apps::v1::DeploymentSpec as TypeInfo>::fields, "selector");
/// `core/v1` `ConfigMap.data`.
const D_CONFIG_MAP_DATA: Doc = Doc::Field(<kapi_api::api::core::v1::ConfigMap as TypeInfo>::fields, "data");
/// `rbac/v1beta1` `RoleBinding.roleRef` (no longer served: the Go comment as `SwaggerDoc()`).
const D_ROLE_BINDING_ROLE_REF: Doc = Doc::Proto(<kapi_api::api::rbac::v1beta1::RoleBinding as TypeInfo>::fields, "roleRef");
/// `rbac/v1beta1` `ClusterRoleBinding.roleRef` (no longer served: the Go comment as
/// `SwaggerDoc()`).
const D_CLUSTER_ROLE_BINDING_ROLE_REF: Doc = Doc::Proto(<kapi_api::api::rbac::v1beta1::ClusterRoleBinding as TypeInfo>::fields, "roleRef");
/// `coordination/v1` `LeaseSpec.holderIdentity`.
const D_LEASE_SPEC_HOLDER_IDENTITY: Doc = Doc::Field(<kapi_api::api::coordination::v1::LeaseSpec as TypeInfo>::fields, "holderIdentity");
/// `storage/v1` `StorageClass.provisioner`.
const D_STORAGE_CLASS_PROVISIONER: Doc = Doc::Field(<kapi_api::api::storage::v1::StorageClass as TypeInfo>::fields, "provisioner");
/// `storage/v1` `StorageClass.reclaimPolicy`.
const D_STORAGE_CLASS_RECLAIM_POLICY: Doc = Doc::Field(<kapi_api::api::storage::v1::StorageClass as TypeInfo>::fields, "reclaimPolicy");
/// `storage/v1` `StorageClass.volumeBindingMode`.
const D_STORAGE_CLASS_VOLUME_BINDING_MODE: Doc =
    Doc::Field(<kapi_api::api::storage::v1::StorageClass as TypeInfo>::fields, "volumeBindingMode");
/// `storage/v1` `StorageClass.allowVolumeExpansion`.
const D_STORAGE_CLASS_ALLOW_VOLUME_EXPANSION: Doc =
    Doc::Field(<kapi_api::api::storage::v1::StorageClass as TypeInfo>::fields, "allowVolumeExpansion");
/// `scheduling/v1` `PriorityClass.value`.
const D_PRIORITY_CLASS_VALUE: Doc = Doc::Field(<kapi_api::api::scheduling::v1::PriorityClass as TypeInfo>::fields, "value");
/// `scheduling/v1` `PriorityClass.globalDefault`.
const D_PRIORITY_CLASS_GLOBAL_DEFAULT: Doc =
    Doc::Field(<kapi_api::api::scheduling::v1::PriorityClass as TypeInfo>::fields, "globalDefault");
/// `scheduling/v1` `PriorityClass.preemptionPolicy`.
const D_PRIORITY_CLASS_PREEMPTION_POLICY: Doc =
    Doc::Field(<kapi_api::api::scheduling::v1::PriorityClass as TypeInfo>::fields, "preemptionPolicy");
/// `networking/v1` `NetworkPolicySpec.podSelector`.
const D_NETWORK_POLICY_SPEC_POD_SELECTOR: Doc =
    Doc::Field(<kapi_api::api::networking::v1::NetworkPolicySpec as TypeInfo>::fields, "podSelector");
/// `discovery/v1` `EndpointSlice.addressType`.
const D_ENDPOINT_SLICE_ADDRESS_TYPE: Doc = Doc::Field(<kapi_api::api::discovery::v1::EndpointSlice as TypeInfo>::fields, "addressType");
/// `discovery/v1` `EndpointSlice.ports`.
const D_ENDPOINT_SLICE_PORTS: Doc = Doc::Field(<kapi_api::api::discovery::v1::EndpointSlice as TypeInfo>::fields, "ports");
/// `discovery/v1` `EndpointSlice.endpoints`.
const D_ENDPOINT_SLICE_ENDPOINTS: Doc = Doc::Field(<kapi_api::api::discovery::v1::EndpointSlice as TypeInfo>::fields, "endpoints");
/// `apps/v1` `ControllerRevision.revision`.
const D_CONTROLLER_REVISION_REVISION: Doc = Doc::Field(<kapi_api::api::apps::v1::ControllerRevision as TypeInfo>::fields, "revision");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap()
    }

    /// The RFC 3339 time `secs` seconds before [`now`].
    fn ago(secs: i64) -> String {
        (now() - TimeDelta::seconds(secs)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    fn meta(name: &str, age_secs: i64) -> Value {
        json!({"name": name, "namespace": "default", "uid": "0b8d3c36-0000-4000-8000-000000000001",
               "resourceVersion": "42", "creationTimestamp": ago(age_secs)})
    }

    fn table(columns: &Columns, objects: &[Value]) -> Value {
        to_table(columns, objects, Some(&json!({"resourceVersion": "100"})), IncludeObject::Metadata, now())
    }

    /// Column names with their priority.
    fn columns(table: &Value) -> Vec<(String, i64)> {
        table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap().to_string(), c["priority"].as_i64().unwrap()))
            .collect()
    }

    fn named(list: &[(&str, i64)]) -> Vec<(String, i64)> {
        list.iter().map(|(n, p)| (n.to_string(), *p)).collect()
    }

    /// The cells of each row, checking that every row has a cell per column.
    fn rows(table: &Value) -> Vec<Vec<Value>> {
        let width = table["columnDefinitions"].as_array().unwrap().len();
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let cells = row["cells"].as_array().unwrap().clone();
                assert_eq!(cells.len(), width, "a cell per column: {row}");
                cells
            })
            .collect()
    }

    fn one_row(columns: &Columns, object: Value) -> Vec<Value> {
        rows(&table(columns, &[object])).remove(0)
    }

    // --- HumanDuration

    #[test]
    fn human_duration_follows_upstream() {
        let cases: &[(i64, &str)] = &[
            (-3, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (1, "1s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (123, "2m3s"),
            (599, "9m59s"),
            (600, "10m"),
            (10 * 60 + 59, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 4 * 60 + 59, "3h4m"),
            (7 * 3600 + 59 * 60, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (48 * 3600, "2d"),
            (2 * 86400 + 3 * 3600, "2d3h"),
            (7 * 86400 + 23 * 3600 + 59 * 60, "7d23h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (740 * 86400, "2y10d"),
            (8 * 365 * 86400 - 1, "7y364d"),
            (8 * 365 * 86400, "8y"),
            (100 * 365 * 86400, "100y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(TimeDelta::seconds(*secs)), *want, "{secs}s");
        }
        // Sub-second: -1.5s truncates to -1s, which is "now".
        assert_eq!(human_duration(TimeDelta::milliseconds(-1500)), "0s");
        assert_eq!(human_duration(TimeDelta::milliseconds(-2500)), "<invalid>");
        assert_eq!(human_duration(TimeDelta::milliseconds(119_999)), "119s");
    }

    // --- Negotiation and includeObject

    #[test]
    fn negotiation_finds_table_requests() {
        let json = Some(TableMediaType::Json);
        let cases: &[(&str, Option<(TableVersion, TableMediaType)>)] = &[
            (
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
                Some((TableVersion::V1, TableMediaType::Json)),
            ),
            ("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json", Some((TableVersion::V1Beta1, TableMediaType::Json))),
            (
                "application/json;as=Table;v=v2;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
                Some((TableVersion::V1, TableMediaType::Json)),
            ),
            ("application/yaml;as=Table;v=v1;g=meta.k8s.io", Some((TableVersion::V1, TableMediaType::Yaml))),
            ("*/*;as=Table;v=v1;g=meta.k8s.io", Some((TableVersion::V1, TableMediaType::Json))),
            ("application/json;as=Table;v=v1;g=meta.k8s.io;stream=watch", Some((TableVersion::V1, TableMediaType::Json))),
            ("application/json", None),
            ("", None),
            ("*/*", None),
            ("text/html", None),
            ("application/json;as=Table;v=v1", None),
            ("application/json;as=Table;v=v1;g=example.com", None),
            ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", None),
            ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", None),
            ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io", None),
            // q orders the clauses: the plain JSON clause wins.
            ("application/json;q=0.5;as=Table;v=v1;g=meta.k8s.io,application/json", None),
            ("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io", Some((TableVersion::V1, TableMediaType::Json))),
        ];
        for (accept, want) in cases {
            let got = crate::negotiation::negotiate(Some(accept)).and_then(|n| n.table()).map(|r| (r.version, r.media_type));
            assert_eq!(got, *want, "{accept}");
        }
        assert_eq!(json.map(TableMediaType::content_type), Some("application/json"));
    }

    #[test]
    fn include_object_parses_like_upstream() {
        assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse("Metadata"), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
        assert_eq!(IncludeObject::parse("None"), Ok(IncludeObject::None));
        assert_eq!(IncludeObject::from_query(""), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::from_query("?limit=500&includeObject=Object"), Ok(IncludeObject::Object));
        assert_eq!(IncludeObject::from_query("includeObject=None&includeObject=Object"), Ok(IncludeObject::None));
        assert_eq!(IncludeObject::from_query("watch=1&resourceVersion=5"), Ok(IncludeObject::Metadata));
        // Go's `URL.Query()` drops a pair with a malformed escape or a `;`.
        assert_eq!(IncludeObject::from_query("includeObject=%zz&includeObject=Object"), Ok(IncludeObject::Object));
        assert_eq!(IncludeObject::from_query("includeObject=None;x=y"), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::from_query("include%4Fbject=N%6Fne"), Ok(IncludeObject::None));
        let err = IncludeObject::from_query("includeObject=obj%22ect").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"Unable to convert to Table as requested: includeObject: Invalid value: "obj\"ect": must be 'Metadata', 'Object', 'None', or empty"#
        );
        assert_eq!(IncludeObject::Object.as_str(), "Object");
    }

    // --- The Table envelope

    #[test]
    fn envelope_carries_list_metadata_and_row_objects() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta("web", 60),
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}, "status": {"phase": "Pending"}});
        let list_meta = json!({"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3});
        let t = to_table(&Columns::Printer(&PODS), std::slice::from_ref(&pod), Some(&list_meta), IncludeObject::Metadata, now());
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3}));
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": pod["metadata"]})
        );
        assert!(t["rows"][0].get("conditions").is_none());

        // A get: the object's resourceVersion.
        let t = to_table(&Columns::Printer(&PODS), std::slice::from_ref(&pod), None, IncludeObject::Object, now());
        assert_eq!(t["metadata"], json!({"resourceVersion": "42"}));
        assert_eq!(t["rows"][0]["object"], pod);

        // None: the object is written as null, as Go writes an empty RawExtension.
        let t = to_table(&Columns::Printer(&PODS), std::slice::from_ref(&pod), None, IncludeObject::None, now());
        assert_eq!(t["rows"][0].as_object().unwrap().get("object"), Some(&Value::Null));

        // v1beta1 and noHeaders (watch events after the first).
        let options = TableOptions { include_object: IncludeObject::Metadata, no_headers: true, version: TableVersion::V1Beta1 };
        let t = to_table_with(&Columns::Printer(&PODS), &[pod], None, &options, now());
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t.as_object().unwrap().get("columnDefinitions"), Some(&Value::Null));

        // Empty lists: printers give [], the default convertor null.
        let t = to_table(&Columns::Printer(&PODS), &[], Some(&json!({"resourceVersion": "9"})), IncludeObject::Metadata, now());
        assert_eq!(t["rows"], json!([]));
        assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
        let t = to_table(&Columns::Default, &[], Some(&json!({})), IncludeObject::Metadata, now());
        assert_eq!(t.as_object().unwrap().get("rows"), Some(&Value::Null));
        assert_eq!(t["metadata"], json!({}));
    }

    #[test]
    fn table_json_is_a_table() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta("web", 60),
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}, "status": {"phase": "Succeeded"}});
        for include in [IncludeObject::None, IncludeObject::Metadata, IncludeObject::Object] {
            let value =
                to_table(&Columns::Printer(&PODS), std::slice::from_ref(&pod), Some(&json!({"resourceVersion": "1"})), include, now());
            let typed: Table = serde_json::from_value(value.clone()).expect("a Table");
            assert_eq!(serde_json::to_value(&typed).unwrap(), value);
            assert_eq!(typed.metadata.resource_version.as_deref(), Some("1"));
            let row = &typed.rows.as_ref().unwrap()[0];
            assert_eq!(row.conditions, vec![completed("Succeeded", "The pod has completed successfully.")]);
            if include == IncludeObject::Metadata {
                let partial: kapi_api::apimachinery::pkg::apis::meta::v1::PartialObjectMetadata =
                    serde_json::from_value(row.object.clone()).expect("PartialObjectMetadata");
                assert_eq!(partial.kind.as_deref(), Some("PartialObjectMetadata"));
                assert_eq!(partial.metadata.and_then(|m| m.name).as_deref(), Some("web"));
            }
        }
        let columns = serde_json::from_value::<Vec<TableColumnDefinition>>(
            to_table(&Columns::Printer(&DEPLOYMENTS), &[], None, IncludeObject::None, now())["columnDefinitions"].clone(),
        )
        .unwrap();
        assert_eq!(columns, column_definitions(&Columns::Printer(&DEPLOYMENTS)));
        assert_eq!(columns[0].format, "name");
    }

    #[test]
    fn default_convertor_is_name_and_created_at() {
        let role = json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": meta("reader", 90)});
        let undated = json!({"metadata": {"name": "undated"}});
        let t = table(&Columns::Default, &[role, undated]);
        assert_eq!(
            t["columnDefinitions"],
            json!([
                {"name": "Name", "type": "string", "format": "name", "description": D_OBJECT_META_NAME.text(), "priority": 0},
                {"name": "Created At", "type": "date", "format": "", "description": D_OBJECT_META_CREATION_TIMESTAMP.text(), "priority": 0},
            ])
        );
        assert_eq!(rows(&t), vec![vec![json!("reader"), json!(ago(90))], vec![json!("undated"), json!("0001-01-01T00:00:00Z")]]);
        assert!(!has_specific_columns(&Columns::Default));
        assert!(!has_specific_columns(&Columns::Default));
        assert!(has_specific_columns(&Columns::Printer(&PODS)));
    }

    #[test]
    fn apiservices_have_kube_aggregators_columns() {
        let local = json!({"metadata": meta("v1.apps", 300), "spec": {"group": "apps", "version": "v1"},
                           "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        let remote = json!({"metadata": meta("v1beta1.metrics.k8s.io", 30),
                            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        let t = table(&Columns::ApiService, &[local, remote]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Service", 0), ("Available", 0), ("Age", 0)]));
        assert_eq!(
            rows(&t),
            vec![
                vec![json!("v1.apps"), json!("Local"), json!("True"), json!("5m")],
                vec![json!("v1beta1.metrics.k8s.io"), json!("kube-system/metrics-server"), json!("False (MissingEndpoints)"), json!("30s")],
            ]
        );
    }

    // --- Pods

    fn pod(status: Value) -> Value {
        json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta("web-7d4b9c", 300),
               "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx:1.27"}]},
               "status": status})
    }

    #[test]
    fn pod_columns() {
        let t = table(&Columns::Printer(&PODS), &[pod(json!({"phase": "Pending"}))]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Ready", 0),
                ("Status", 0),
                ("Restarts", 0),
                ("Age", 0),
                ("IP", 1),
                ("Node", 1),
                ("Nominated Node", 1),
                ("Readiness Gates", 1),
            ])
        );
        let defs = &t["columnDefinitions"];
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[3]["type"], "string");
        assert_eq!(defs[5]["description"], D_POD_STATUS_POD_IP.text().as_ref());
    }

    #[test]
    fn pod_statuses() {
        let running = |name: &str, restarts: i64| {
            json!({"name": name, "ready": true, "restartCount": restarts, "started": true,
                   "state": {"running": {"startedAt": ago(200)}}})
        };
        let cases: Vec<(&str, Value, Value, [&str; 4])> = vec![
            ("unscheduled", json!({}), json!({"phase": "Pending"}), ["0/1", "Pending", "0", "<none>"]),
            (
                "creating",
                json!({}),
                json!({"phase": "Pending", "podIP": "10.244.0.5",
                       "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                                              "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
                ["0/1", "ContainerCreating", "0", "10.244.0.5"],
            ),
            (
                "running",
                json!({}),
                json!({"phase": "Running", "podIPs": [{"ip": "10.244.0.6"}, {"ip": "fd00::6"}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [running("app", 0)]}),
                ["1/1", "Running", "0", "10.244.0.6"],
            ),
            (
                "crashing",
                json!({}),
                json!({"phase": "Running", "podIP": "10.244.0.7",
                       "containerStatuses": [{"name": "app", "ready": false, "restartCount": 5,
                           "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
                           "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(30)}}}]}),
                ["0/1", "CrashLoopBackOff", "5 (30s ago)", "10.244.0.7"],
            ),
            (
                "completed",
                json!({}),
                json!({"phase": "Succeeded", "podIP": "10.244.0.8",
                       "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                           "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": ago(10)}}}]}),
                ["0/1", "Completed", "0", "10.244.0.8"],
            ),
            (
                "one of two failed",
                json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}),
                json!({"phase": "Failed",
                       "containerStatuses": [
                           {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                           {"name": "b", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}),
                ["0/2", "Error", "0", "<none>"],
            ),
            (
                "killed by a signal",
                json!({}),
                json!({"phase": "Failed", "containerStatuses": [{"name": "app", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}),
                ["0/1", "Signal:9", "0", "<none>"],
            ),
            (
                "one of two still running",
                json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}),
                json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                       "containerStatuses": [running("a", 0),
                           {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
                ["1/2", "NotReady", "0", "<none>"],
            ),
            (
                "waiting for an init container",
                json!({"initContainers": [{"name": "init", "image": "busybox"}]}),
                json!({"phase": "Pending",
                       "initContainerStatuses": [{"name": "init", "restartCount": 0, "state": {"running": {"startedAt": ago(5)}}}],
                       "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
                ["0/1", "Init:0/1", "0", "<none>"],
            ),
            (
                "init image failing",
                json!({"initContainers": [{"name": "init", "image": "busybox"}]}),
                json!({"phase": "Pending",
                       "initContainerStatuses": [{"name": "init", "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull"}}}]}),
                ["0/1", "Init:ErrImagePull", "0", "<none>"],
            ),
            (
                "init container failed",
                json!({"initContainers": [{"name": "init", "image": "busybox"}]}),
                json!({"phase": "Pending",
                       "initContainerStatuses": [{"name": "init", "restartCount": 2,
                           "state": {"terminated": {"exitCode": 3}},
                           "lastState": {"terminated": {"exitCode": 3, "finishedAt": ago(65)}}}]}),
                ["0/1", "Init:ExitCode:3", "2 (65s ago)", "<none>"],
            ),
            (
                "sidecar",
                json!({"initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
                       "containers": [{"name": "app", "image": "nginx"}]}),
                json!({"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
                       "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                           "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}}],
                       "containerStatuses": [running("app", 0)]}),
                ["2/2", "Running", "1 (10m ago)", "<none>"],
            ),
            (
                "gated",
                json!({}),
                json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
                ["0/1", "SchedulingGated", "0", "<none>"],
            ),
            (
                "evicted",
                json!({}),
                json!({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
                ["0/1", "Evicted", "0", "<none>"],
            ),
        ];
        for (what, spec, status, [ready, state, restarts, ip]) in cases {
            let mut object = pod(status);
            if let Some(spec) = spec.as_object() {
                for (k, v) in spec {
                    object["spec"][k] = v.clone();
                }
            }
            let cells = one_row(&Columns::Printer(&PODS), object);
            assert_eq!(cells[1], ready, "{what}: ready");
            assert_eq!(cells[2], state, "{what}: status");
            assert_eq!(cells[3], restarts, "{what}: restarts");
            assert_eq!(cells[4], "5m", "{what}: age");
            assert_eq!(cells[5], ip, "{what}: ip");
        }
    }

    #[test]
    fn pod_wide_cells_and_conditions() {
        let mut object = pod(json!({"phase": "Running", "podIP": "10.0.0.9", "nominatedNodeName": "node-2",
                                    "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/lb", "status": "True"}],
                                    "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}]}));
        object["spec"]["readinessGates"] = json!([{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]);
        assert_eq!(
            one_row(&Columns::Printer(&PODS), object.clone()),
            vec![
                json!("web-7d4b9c"),
                json!("1/1"),
                json!("Running"),
                json!("0"),
                json!("5m"),
                json!("10.0.0.9"),
                json!("node-1"),
                json!("node-2"),
                json!("1/2")
            ]
        );
        object["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(one_row(&Columns::Printer(&PODS), object.clone())[2], "Terminating");
        object["status"]["reason"] = json!("NodeLost");
        assert_eq!(one_row(&Columns::Printer(&PODS), object)[2], "Unknown");

        let failed = table(&Columns::Printer(&PODS), &[pod(json!({"phase": "Failed"}))]);
        assert_eq!(
            failed["rows"][0]["conditions"],
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}])
        );
    }

    // --- Workloads

    fn template(containers: &[(&str, &str)]) -> Value {
        let containers = containers.iter().map(|(n, i)| json!({"name": n, "image": i})).collect::<Vec<_>>();
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
    }

    #[test]
    fn deployments() {
        let deployment = json!({"metadata": meta("web", 3 * 3600 + 4 * 60),
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                                          {"key": "canary", "operator": "DoesNotExist"}]},
                     "template": template(&[("nginx", "nginx:1.27"), ("log", "fluent-bit:3")])},
            "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        let t = table(&Columns::Printer(&DEPLOYMENTS), &[deployment]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Ready", 0),
                ("Up-to-date", 0),
                ("Available", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ])
        );
        assert_eq!(t["columnDefinitions"][2]["description"], D_DEPLOYMENT_STATUS_UPDATED_REPLICAS.text().as_ref());
        assert_eq!(
            rows(&t)[0],
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("3h4m"),
                json!("nginx,log"),
                json!("nginx:1.27,fluent-bit:3"),
                json!("app=web,!canary,tier in (a,b)")
            ]
        );
        // New, without status; a bad selector.
        let fresh = json!({"metadata": meta("new", 5), "spec": {"replicas": 1,
            "selector": {"matchExpressions": [{"key": "app", "operator": "Foo"}]}, "template": template(&[("c", "i")])}});
        assert_eq!(
            one_row(&Columns::Printer(&DEPLOYMENTS), fresh),
            vec![json!("new"), json!("0/1"), json!(0), json!(0), json!("5s"), json!("c"), json!("i"), json!("<invalid>")]
        );
    }

    #[test]
    fn replica_sets_stateful_sets_daemon_sets() {
        let rs = json!({"metadata": meta("web-5d8f", 700),
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f"}},
                     "template": template(&[("nginx", "nginx")])},
            "status": {"replicas": 3, "readyReplicas": 3}});
        let t = table(&Columns::Printer(&REPLICA_SETS), &[rs]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Desired", 0),
                ("Current", 0),
                ("Ready", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ])
        );
        assert_eq!(
            rows(&t)[0],
            vec![
                json!("web-5d8f"),
                json!(3),
                json!(3),
                json!(3),
                json!("11m"),
                json!("nginx"),
                json!("nginx"),
                json!("app=web,pod-template-hash=5d8f")
            ]
        );
        assert_eq!(t["columnDefinitions"][1]["type"], "integer");

        let sts = json!({"metadata": meta("db", 86400 * 3),
            "spec": {"replicas": 3, "template": template(&[("postgres", "postgres:17")])}, "status": {"readyReplicas": 1}});
        let t = table(&Columns::Printer(&STATEFUL_SETS), &[sts]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Ready", 0), ("Age", 0), ("Containers", 1), ("Images", 1)]));
        assert_eq!(rows(&t)[0], vec![json!("db"), json!("1/3"), json!("3d"), json!("postgres"), json!("postgres:17")]);

        let mut ds_template = template(&[("agent", "agent:2")]);
        ds_template["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
        let ds = json!({"metadata": meta("agent", 50), "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": ds_template},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1,
                       "updatedNumberScheduled": 2, "numberAvailable": 1}});
        let t = table(&Columns::Printer(&DAEMON_SETS), &[ds]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Desired", 0),
                ("Current", 0),
                ("Ready", 0),
                ("Up-to-date", 0),
                ("Available", 0),
                ("Node Selector", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ])
        );
        assert_eq!(
            rows(&t)[0],
            vec![
                json!("agent"),
                json!(2),
                json!(2),
                json!(1),
                json!(2),
                json!(1),
                json!("kubernetes.io/os=linux"),
                json!("50s"),
                json!("agent"),
                json!("agent:2"),
                json!("app=agent")
            ]
        );
    }

    #[test]
    fn jobs_and_cron_jobs() {
        let done = json!({"metadata": meta("pi", 600),
            "spec": {"completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                     "template": template(&[("pi", "perl:5")])},
            "status": {"succeeded": 1, "startTime": ago(600), "completionTime": ago(600 - 75),
                       "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
        let running = json!({"metadata": meta("work", 200),
            "spec": {"parallelism": 3, "template": template(&[("w", "busybox")])},
            "status": {"active": 3, "startTime": ago(190)}});
        let suspended = json!({"metadata": meta("later", 20), "spec": {"suspend": true, "template": template(&[("w", "busybox")])},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        let t = table(&Columns::Printer(&JOBS), &[done, running, suspended]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Status", 0),
                ("Completions", 0),
                ("Duration", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ])
        );
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("pi"),
                    json!("Complete"),
                    json!("1/1"),
                    json!("75s"),
                    json!("10m"),
                    json!("pi"),
                    json!("perl:5"),
                    json!("batch.kubernetes.io/controller-uid=u1")
                ],
                vec![
                    json!("work"),
                    json!("Running"),
                    json!("0/1 of 3"),
                    json!("3m10s"),
                    json!("3m20s"),
                    json!("w"),
                    json!("busybox"),
                    json!("<none>")
                ],
                vec![
                    json!("later"),
                    json!("Suspended"),
                    json!("0/1"),
                    json!(""),
                    json!("20s"),
                    json!("w"),
                    json!("busybox"),
                    json!("<none>")
                ],
            ]
        );

        let cron = json!({"metadata": meta("backup", 86400 * 10),
            "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "suspend": false,
                     "jobTemplate": {"spec": {"template": template(&[("backup", "restic:0.17")])}}},
            "status": {"active": [{"name": "backup-29012345"}], "lastScheduleTime": ago(3600 * 9)}});
        let never = json!({"metadata": meta("report", 100), "spec": {"schedule": "@hourly",
            "jobTemplate": {"spec": {"template": template(&[("r", "report")])}}}});
        let t = table(&Columns::Printer(&CRON_JOBS), &[cron, never]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Schedule", 0),
                ("Timezone", 0),
                ("Suspend", 0),
                ("Active", 0),
                ("Last Schedule", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ])
        );
        assert_eq!(t["columnDefinitions"][3]["type"], "boolean");
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("backup"),
                    json!("0 3 * * *"),
                    json!("Europe/Berlin"),
                    json!("False"),
                    json!(1),
                    json!("9h"),
                    json!("10d"),
                    json!("backup"),
                    json!("restic:0.17"),
                    json!("<none>")
                ],
                vec![
                    json!("report"),
                    json!("@hourly"),
                    json!("<none>"),
                    json!("<unset>"),
                    json!(0),
                    json!("<none>"),
                    json!("100s"),
                    json!("r"),
                    json!("report"),
                    json!("<none>")
                ],
            ]
        );
    }

    // --- Services and networking

    #[test]
    fn services() {
        let svc = |name: &str, spec: Value, status: Value| json!({"metadata": meta(name, 3600 * 30), "spec": spec, "status": status});
        let objects = [
            svc(
                "kubernetes",
                json!({"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}),
                json!({}),
            ),
            svc(
                "web",
                json!({"type": "NodePort", "clusterIP": "10.96.4.2", "selector": {"tier": "front", "app": "web"},
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}),
                json!({}),
            ),
            svc("headless", json!({"type": "ClusterIP", "clusterIP": "None", "selector": {"app": "db"}}), json!({})),
            svc(
                "lb",
                json!({"type": "LoadBalancer", "clusterIPs": ["10.96.7.7"], "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}]}),
                json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a.example.com"}, {"ip": "203.0.113.2"}]}}),
            ),
            svc("lb-pending", json!({"type": "LoadBalancer", "clusterIP": "10.96.7.8", "externalIPs": []}), json!({})),
            svc(
                "lb-external",
                json!({"type": "LoadBalancer", "clusterIP": "10.96.7.9", "externalIPs": ["198.51.100.1"]}),
                json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.3"}]}}),
            ),
            svc("db", json!({"type": "ExternalName", "externalName": "db.example.com"}), json!({})),
        ];
        let t = table(&Columns::Printer(&SERVICES), &objects);
        assert_eq!(
            columns(&t),
            named(&[("Name", 0), ("Type", 0), ("Cluster-IP", 0), ("External-IP", 0), ("Port(s)", 0), ("Age", 0), ("Selector", 1)])
        );
        let expected = [
            ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP", "30h", "<none>"],
            ["web", "NodePort", "10.96.4.2", "<none>", "80:30080/TCP,53/UDP", "30h", "app=web,tier=front"],
            ["headless", "ClusterIP", "None", "<none>", "<none>", "30h", "app=db"],
            ["lb", "LoadBalancer", "10.96.7.7", "203.0.113.2,203.0.113.9,a.example.com", "80:31000/TCP", "30h", "<none>"],
            ["lb-pending", "LoadBalancer", "10.96.7.8", "<pending>", "<none>", "30h", "<none>"],
            ["lb-external", "LoadBalancer", "10.96.7.9", "203.0.113.3,198.51.100.1", "<none>", "30h", "<none>"],
            ["db", "ExternalName", "<none>", "db.example.com", "<none>", "30h", "<none>"],
        ];
        let expected = expected.iter().map(|row| row.iter().map(|c| json!(c)).collect::<Vec<_>>()).collect::<Vec<_>>();
        assert_eq!(rows(&t), expected);
    }

    #[test]
    fn endpoints_and_endpoint_slices() {
        let many = json!({"metadata": meta("web", 100), "subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]},
            {"addresses": [{"ip": "fd00::3"}], "ports": [{"port": 80}]}]});
        let few = json!({"metadata": meta("db", 100), "subsets": [{"addresses": [{"ip": "fd00::4"}], "ports": [{"port": 5432}]}]});
        let headless = json!({"metadata": meta("h", 100), "subsets": [{"addresses": [{"ip": "10.0.0.5"}, {"ip": "10.0.0.6"}]}]});
        let empty = json!({"metadata": meta("none", 100)});
        let t = table(&Columns::Printer(&ENDPOINTS), &[many, few, headless, empty]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Endpoints", 0), ("Age", 0)]));
        let cells = rows(&t).into_iter().map(|r| r[1].clone()).collect::<Vec<_>>();
        assert_eq!(
            cells,
            vec![
                json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:9090 + 2 more..."),
                json!("[fd00::4]:5432"),
                json!("10.0.0.5,10.0.0.6"),
                json!("<none>")
            ]
        );

        let slice = json!({"metadata": meta("web-abc", 100), "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80}, {"name": "named"}, {}, {"port": 8443}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
        let t = table(&Columns::Printer(&ENDPOINT_SLICES), &[slice]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("AddressType", 0), ("Ports", 0), ("Endpoints", 0), ("Age", 0)]));
        assert_eq!(
            rows(&t)[0],
            vec![json!("web-abc"), json!("IPv4"), json!("80,named,* + 1 more..."), json!("10.0.0.1,10.0.0.2"), json!("100s")]
        );
    }

    #[test]
    fn ingresses() {
        let ing = json!({"metadata": meta("web", 4000),
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                     "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {}, {"host": "c.example.com"}, {"host": "d.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}});
        let plain = json!({"metadata": meta("catch-all", 4000), "spec": {"defaultBackend": {}}});
        let t = table(&Columns::Printer(&INGRESSES), &[ing, plain]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Class", 0), ("Hosts", 0), ("Address", 0), ("Ports", 0), ("Age", 0)]));
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("web"),
                    json!("nginx"),
                    json!("a.example.com,b.example.com,c.example.com + 2 more..."),
                    json!("192.0.2.10"),
                    json!("80, 443"),
                    json!("66m")
                ],
                vec![json!("catch-all"), json!("<none>"), json!("*"), json!(""), json!("80"), json!("66m")],
            ]
        );
    }

    // --- Cluster and configuration

    #[test]
    fn nodes() {
        let node = json!({"metadata": {"name": "cp-1", "creationTimestamp": ago(86400 * 9),
                "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "master", "kubernetes.io/os": "linux"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "cp-1"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                    "kernelVersion": "6.8.0-51-generic", "architecture": "amd64",
                                    "containerRuntimeVersion": "containerd://2.1.0"}}});
        let bare = json!({"metadata": {"name": "new"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        let unknown = json!({"metadata": {"name": "blank"}});
        let t = table(&Columns::Printer(&NODES), &[node, bare, unknown]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Status", 0),
                ("Roles", 0),
                ("Age", 0),
                ("Version", 0),
                ("Internal-IP", 1),
                ("External-IP", 1),
                ("OS-Image", 1),
                ("Kernel-Version", 1),
                ("Container-Runtime", 1)
            ])
        );
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("cp-1"),
                    json!("Ready,SchedulingDisabled"),
                    json!("control-plane,master"),
                    json!("9d"),
                    json!("v1.36.0"),
                    json!("172.18.0.2"),
                    json!("<none>"),
                    json!("Debian GNU/Linux 12 (bookworm)"),
                    json!("6.8.0-51-generic (amd64)"),
                    json!("containerd://2.1.0")
                ],
                vec![
                    json!("new"),
                    json!("NotReady"),
                    json!("<none>"),
                    json!("<unknown>"),
                    json!(""),
                    json!("<none>"),
                    json!("<none>"),
                    json!("<unknown>"),
                    json!("<unknown>"),
                    json!("<unknown>")
                ],
                vec![
                    json!("blank"),
                    json!("Unknown"),
                    json!("<none>"),
                    json!("<unknown>"),
                    json!(""),
                    json!("<none>"),
                    json!("<none>"),
                    json!("<unknown>"),
                    json!("<unknown>"),
                    json!("<unknown>")
                ],
            ]
        );
    }

    #[test]
    fn namespaces_config_maps_secrets_service_accounts() {
        let t = table(
            &Columns::Printer(&NAMESPACES),
            &[
                json!({"metadata": meta("team-a", 86400 * 400), "status": {"phase": "Active"}}),
                json!({"metadata": meta("old", 86400 * 800), "status": {"phase": "Terminating"}}),
            ],
        );
        assert_eq!(columns(&t), named(&[("Name", 0), ("Status", 0), ("Age", 0)]));
        assert_eq!(
            rows(&t),
            vec![vec![json!("team-a"), json!("Active"), json!("400d")], vec![json!("old"), json!("Terminating"), json!("2y70d")]]
        );

        let t = table(
            &Columns::Printer(&CONFIG_MAPS),
            &[
                json!({"metadata": meta("kube-root-ca.crt", 60), "data": {"ca.crt": "..."}}),
                json!({"metadata": meta("mixed", 60), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
                json!({"metadata": meta("empty", 60)}),
            ],
        );
        assert_eq!(columns(&t), named(&[("Name", 0), ("Data", 0), ("Age", 0)]));
        assert_eq!(t["columnDefinitions"][1]["description"], D_CONFIG_MAP_DATA.text().as_ref());
        assert_eq!(
            rows(&t),
            vec![
                vec![json!("kube-root-ca.crt"), json!(1), json!("60s")],
                vec![json!("mixed"), json!(3), json!("60s")],
                vec![json!("empty"), json!(0), json!("60s")]
            ]
        );

        let t = table(
            &Columns::Printer(&SECRETS),
            &[json!({"metadata": meta("tls", 7200), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})],
        );
        assert_eq!(columns(&t), named(&[("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]));
        assert_eq!(rows(&t)[0], vec![json!("tls"), json!("kubernetes.io/tls"), json!(2), json!("120m")]);

        let t =
            table(&Columns::Printer(&SERVICE_ACCOUNTS), &[json!({"metadata": meta("default", 86400), "secrets": [{"name": "old-token"}]})]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Age", 0)]));
        assert_eq!(rows(&t)[0], vec![json!("default"), json!("24h")]);
    }

    #[test]
    fn events() {
        let core = json!({"metadata": meta("web.17f", 400), "type": "Warning", "reason": "BackOff",
            "message": "Back-off restarting failed container\n", "count": 12,
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "fieldPath": "spec.containers{app}"},
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(400), "lastTimestamp": ago(20)});
        let new_api = json!({"metadata": meta("web.18a", 90), "type": "Normal", "reason": "Scheduled",
            "message": "Successfully assigned default/web to node-1", "eventTime": "2026-03-01T11:58:30.123456Z",
            "involvedObject": {"kind": "Pod", "name": "web"}, "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-cp-1"});
        let series = json!({"metadata": meta("web.19b", 90), "type": "Normal", "reason": "Pulling", "message": "m",
            "eventTime": "2026-03-01T11:50:00.000000Z", "series": {"count": 4, "lastObservedTime": "2026-03-01T11:59:00.000000Z"},
            "involvedObject": {"kind": "Node"}});
        let t = table(&Columns::Printer(&EVENTS), &[core, new_api, series]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Last Seen", 0),
                ("Type", 0),
                ("Reason", 0),
                ("Object", 0),
                ("Subobject", 1),
                ("Source", 1),
                ("Message", 0),
                ("First Seen", 1),
                ("Count", 1),
                ("Name", 1)
            ])
        );
        assert_eq!(t["columnDefinitions"][9]["format"], "name");
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("20s"),
                    json!("Warning"),
                    json!("BackOff"),
                    json!("pod/web"),
                    json!("spec.containers{app}"),
                    json!("kubelet, node-1"),
                    json!("Back-off restarting failed container"),
                    json!("6m40s"),
                    json!(12),
                    json!("web.17f")
                ],
                vec![
                    json!("89s"),
                    json!("Normal"),
                    json!("Scheduled"),
                    json!("pod/web"),
                    json!(""),
                    json!("default-scheduler, default-scheduler-cp-1"),
                    json!("Successfully assigned default/web to node-1"),
                    json!("89s"),
                    json!(1),
                    json!("web.18a")
                ],
                vec![
                    json!("60s"),
                    json!("Normal"),
                    json!("Pulling"),
                    json!("node"),
                    json!(""),
                    json!(""),
                    json!("m"),
                    json!("10m"),
                    json!(4),
                    json!("web.19b")
                ],
            ]
        );

        // events.k8s.io/v1 names the same fields differently.
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("web.20c", 90),
            "type": "Normal", "reason": "Started", "note": "Started container app",
            "regarding": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reportingController": "kubelet", "reportingInstance": "node-1",
            "deprecatedFirstTimestamp": ago(90), "deprecatedLastTimestamp": ago(30), "deprecatedCount": 2});
        let t = table(&Columns::Printer(&EVENTS_V1), std::slice::from_ref(&v1));
        assert_eq!(
            rows(&t)[0],
            vec![
                json!("30s"),
                json!("Normal"),
                json!("Started"),
                json!("pod/web"),
                json!("spec.containers{app}"),
                json!("kubelet, node-1"),
                json!("Started container app"),
                json!("90s"),
                json!(2),
                json!("web.20c")
            ]
        );
        // The row's object is the object as served, not the converted one.
        let t = to_table(&Columns::Printer(&EVENTS_V1), std::slice::from_ref(&v1), None, IncludeObject::Object, now());
        assert_eq!(t["rows"][0]["object"], v1);
    }

    // --- Storage

    #[test]
    fn persistent_volumes_and_claims() {
        let pv = json!({"metadata": meta("pv-1", 3600), "spec": {"capacity": {"storage": "1024Mi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}});
        let released = json!({"metadata": {"name": "pv-2", "creationTimestamp": ago(60), "deletionTimestamp": ago(1),
                "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"capacity": {"storage": "5000M"}, "accessModes": ["ReadWriteOncePod"], "persistentVolumeReclaimPolicy": "Delete",
                     "volumeAttributesClassName": "gold"},
            "status": {"phase": "Released", "reason": "Bye"}});
        let t = table(&Columns::Printer(&PERSISTENT_VOLUMES), &[pv, released]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Capacity", 0),
                ("Access Modes", 0),
                ("Reclaim Policy", 0),
                ("Status", 0),
                ("Claim", 0),
                ("StorageClass", 0),
                ("VolumeAttributesClass", 0),
                ("Reason", 0),
                ("Age", 0),
                ("VolumeMode", 1)
            ])
        );
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("pv-1"),
                    json!("1Gi"),
                    json!("RWO,RWX"),
                    json!("Retain"),
                    json!("Bound"),
                    json!("default/data"),
                    json!("standard"),
                    json!("<unset>"),
                    json!(""),
                    json!("60m"),
                    json!("Filesystem")
                ],
                vec![
                    json!("pv-2"),
                    json!("5G"),
                    json!("RWOP"),
                    json!("Delete"),
                    json!("Terminating"),
                    json!(""),
                    json!("legacy"),
                    json!("gold"),
                    json!("Bye"),
                    json!("60s"),
                    json!("<unset>")
                ],
            ]
        );

        let bound = json!({"metadata": meta("data", 600), "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pv-1", "storageClassName": "standard",
                "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}});
        let pending = json!({"metadata": meta("wait", 600), "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard"}, "status": {"phase": "Pending"}});
        let t = table(&Columns::Printer(&PERSISTENT_VOLUME_CLAIMS), &[bound, pending]);
        assert_eq!(
            columns(&t),
            named(&[
                ("Name", 0),
                ("Status", 0),
                ("Volume", 0),
                ("Capacity", 0),
                ("Access Modes", 0),
                ("StorageClass", 0),
                ("VolumeAttributesClass", 0),
                ("Age", 0),
                ("VolumeMode", 1)
            ])
        );
        assert_eq!(
            rows(&t),
            vec![
                vec![
                    json!("data"),
                    json!("Bound"),
                    json!("pv-1"),
                    json!("2Gi"),
                    json!("RWO"),
                    json!("standard"),
                    json!("<unset>"),
                    json!("10m"),
                    json!("Filesystem")
                ],
                vec![
                    json!("wait"),
                    json!("Pending"),
                    json!(""),
                    json!(""),
                    json!(""),
                    json!("standard"),
                    json!("<unset>"),
                    json!("10m"),
                    json!("<unset>")
                ],
            ]
        );

        let sc = json!({"metadata": {"name": "standard", "creationTimestamp": ago(60),
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "rancher.io/local-path",
            "volumeBindingMode": "WaitForFirstConsumer"});
        let t = table(&Columns::Printer(&STORAGE_CLASSES), &[sc]);
        assert_eq!(
            rows(&t)[0],
            vec![
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(false),
                json!("60s")
            ]
        );
    }

    #[test]
    fn other_printers() {
        let rb = json!({"metadata": meta("edit", 60), "roleRef": {"kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                         {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}, {"kind": "User", "name": "bob"}]});
        let t = table(&Columns::Printer(&ROLE_BINDINGS), &[rb]);
        assert_eq!(columns(&t), named(&[("Name", 0), ("Role", 0), ("Age", 0), ("Users", 1), ("Groups", 1), ("ServiceAccounts", 1)]));
        assert_eq!(
            rows(&t)[0],
            vec![json!("edit"), json!("ClusterRole/edit"), json!("60s"), json!("alice, bob"), json!("devs"), json!("tools/ci")]
        );

        let pdb = json!({"metadata": meta("web", 60), "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}});
        let pdb2 = json!({"metadata": meta("db", 60), "spec": {"maxUnavailable": "25%"}});
        let t = table(&Columns::Printer(&POD_DISRUPTION_BUDGETS), &[pdb, pdb2]);
        assert_eq!(
            rows(&t),
            vec![
                vec![json!("web"), json!("2"), json!("N/A"), json!(1), json!("60s")],
                vec![json!("db"), json!("N/A"), json!("25%"), json!(0), json!("60s")]
            ]
        );

        let lease = json!({"metadata": meta("kube-scheduler", 60), "spec": {"holderIdentity": "cp-1_abc"}});
        assert_eq!(one_row(&Columns::Printer(&LEASES), lease), vec![json!("kube-scheduler"), json!("cp-1_abc"), json!("60s")]);

        let quota = json!({"metadata": meta("compute", 60), "status": {
            "hard": {"requests.cpu": "2", "limits.memory": "2Gi", "pods": "10", "limits.cpu": "4000m"},
            "used": {"requests.cpu": "500m", "limits.memory": "1024Mi", "pods": 3}}});
        assert_eq!(
            one_row(&Columns::Printer(&RESOURCE_QUOTAS), quota),
            vec![
                json!("compute"),
                json!("pods: 3/10, requests.cpu: 500m/2"),
                json!("limits.cpu: 0/4, limits.memory: 1Gi/2Gi"),
                json!("60s")
            ]
        );

        let cr = json!({"metadata": {"name": "web-6b7", "creationTimestamp": ago(60),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 3});
        assert_eq!(
            one_row(&Columns::Printer(&CONTROLLER_REVISIONS), cr),
            vec![json!("web-6b7"), json!("statefulset.apps/web"), json!(3), json!("60s")]
        );

        let class = json!({"metadata": {"name": "nginx", "creationTimestamp": ago(60),
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "k8s.io/ingress-nginx", "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            one_row(&Columns::Printer(&INGRESS_CLASSES), class),
            vec![json!("nginx (default)"), json!("k8s.io/ingress-nginx"), json!("IngressParameters.k8s.example.com/p"), json!("60s")]
        );

        let np = json!({"metadata": meta("deny", 60), "spec": {"podSelector": {}}});
        assert_eq!(one_row(&Columns::Printer(&NETWORK_POLICIES), np), vec![json!("deny"), json!("<none>"), json!("60s")]);

        let pc = json!({"metadata": meta("high", 60), "value": 1000, "globalDefault": false, "preemptionPolicy": "Never"});
        assert_eq!(
            one_row(&Columns::Printer(&PRIORITY_CLASSES), pc),
            vec![json!("high"), json!(1000), json!(false), json!("60s"), json!("Never")]
        );

        let hooks = json!({"metadata": meta("policy", 60), "webhooks": [{"name": "a"}, {"name": "b"}]});
        assert_eq!(one_row(&Columns::Printer(&VALIDATING_WEBHOOKS), hooks), vec![json!("policy"), json!(2), json!("60s")]);

        let cs = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(one_row(&Columns::Printer(&COMPONENT_STATUSES), cs), vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]);

        let rc = json!({"metadata": meta("rc", 60), "spec": {"replicas": 2, "selector": {"app": "x"}, "template": template(&[("c", "i")])},
            "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            one_row(&Columns::Printer(&REPLICATION_CONTROLLERS), rc),
            vec![json!("rc"), json!(2), json!(2), json!(1), json!("60s"), json!("c"), json!("i"), json!("app=x")]
        );

        let pt = json!({"metadata": meta("pt", 60), "template": template(&[("c", "i")])});
        assert_eq!(one_row(&Columns::Printer(&POD_TEMPLATES), pt), vec![json!("pt"), json!("c"), json!("i"), json!("app=web")]);

        let rt = json!({"metadata": meta("gvisor", 60), "handler": "runsc"});
        assert_eq!(one_row(&Columns::Printer(&RUNTIME_CLASSES), rt), vec![json!("gvisor"), json!("runsc"), json!("60s")]);
    }

    #[test]
    fn selectors_format_like_labels_selector() {
        let cases: &[(Value, &str)] = &[
            (json!(null), "<none>"),
            (json!({}), "<none>"),
            (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
            (json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}), "env notin (prod)"),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}), "gpu"),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["x"]}]}), "<error>"),
            (json!({"matchExpressions": [{"key": "env", "operator": "In"}]}), "<error>"),
            (json!({"matchLabels": {"bad key!": "x"}}), "<error>"),
            (json!({"matchLabels": {"example.com/app": "web"}}), "example.com/app=web"),
        ];
        for (selector, want) in cases {
            assert_eq!(format_label_selector(Some(selector)), *want, "{selector}");
        }
        assert_eq!(selector_string(None), Some(String::new()));
    }

    #[test]
    fn quantities_print_canonically() {
        assert_eq!(quantity(Some(&json!("1024Mi"))), "1Gi");
        assert_eq!(quantity(Some(&json!("1000m"))), "1");
        assert_eq!(quantity(Some(&json!(3))), "3");
        assert_eq!(quantity(None), "0");
        assert_eq!(quantity(Some(&json!("not a quantity"))), "not a quantity");
    }

    /// Served column descriptions are the spec's descriptions of the same fields (checked when
    /// the pinned spec is filled in).
    #[test]
    fn descriptions_match_the_pinned_spec() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("api-specs");
        let Ok(version) = std::fs::read_to_string(root.join("VERSION")) else {
            return;
        };
        let path = root.join(format!("v{}", version.trim())).join("openapi/swagger.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        }; // a clone without specs
        let spec: Value = serde_json::from_str(&text).unwrap();
        for (description, definition, field) in SERVED_DESCRIPTIONS {
            let want = &spec["definitions"][definition]["properties"][field]["description"];
            assert_eq!(want.as_str(), Some(description.text().as_ref()), "{definition}.{field}");
        }
    }

    const SERVED_DESCRIPTIONS: &[(Doc, &str, &str)] = &[
        (D_OBJECT_META_NAME, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name"),
        (D_OBJECT_META_CREATION_TIMESTAMP, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp"),
        (D_POD_STATUS_POD_IP, "io.k8s.api.core.v1.PodStatus", "podIP"),
        (D_POD_SPEC_NODE_NAME, "io.k8s.api.core.v1.PodSpec", "nodeName"),
        (D_POD_STATUS_NOMINATED_NODE_NAME, "io.k8s.api.core.v1.PodStatus", "nominatedNodeName"),
        (D_POD_SPEC_READINESS_GATES, "io.k8s.api.core.v1.PodSpec", "readinessGates"),
        (D_REPLICATION_CONTROLLER_SPEC_REPLICAS, "io.k8s.api.core.v1.ReplicationControllerSpec", "replicas"),
        (D_REPLICATION_CONTROLLER_STATUS_REPLICAS, "io.k8s.api.core.v1.ReplicationControllerStatus", "replicas"),
        (D_REPLICATION_CONTROLLER_STATUS_READY_REPLICAS, "io.k8s.api.core.v1.ReplicationControllerStatus", "readyReplicas"),
        (D_REPLICATION_CONTROLLER_SPEC_SELECTOR, "io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
        (D_POD_SPEC_NODE_SELECTOR, "io.k8s.api.core.v1.PodSpec", "nodeSelector"),
        (D_JOB_STATUS_SUCCEEDED, "io.k8s.api.batch.v1.JobStatus", "succeeded"),
        (D_JOB_SPEC_SELECTOR, "io.k8s.api.batch.v1.JobSpec", "selector"),
        (D_SERVICE_SPEC_TYPE, "io.k8s.api.core.v1.ServiceSpec", "type"),
        (D_SERVICE_SPEC_CLUSTER_IP, "io.k8s.api.core.v1.ServiceSpec", "clusterIP"),
        (D_SERVICE_SPEC_EXTERNAL_IPS, "io.k8s.api.core.v1.ServiceSpec", "externalIPs"),
        (D_SERVICE_SPEC_PORTS, "io.k8s.api.core.v1.ServiceSpec", "ports"),
        (D_SERVICE_SPEC_SELECTOR, "io.k8s.api.core.v1.ServiceSpec", "selector"),
        (D_ENDPOINTS_SUBSETS, "io.k8s.api.core.v1.Endpoints", "subsets"),
        (D_NODE_SYSTEM_INFO_KUBELET_VERSION, "io.k8s.api.core.v1.NodeSystemInfo", "kubeletVersion"),
        (D_NODE_STATUS_ADDRESSES, "io.k8s.api.core.v1.NodeStatus", "addresses"),
        (D_NODE_SYSTEM_INFO_OS_IMAGE, "io.k8s.api.core.v1.NodeSystemInfo", "osImage"),
        (D_NODE_SYSTEM_INFO_KERNEL_VERSION, "io.k8s.api.core.v1.NodeSystemInfo", "kernelVersion"),
        (D_NODE_SYSTEM_INFO_CONTAINER_RUNTIME_VERSION, "io.k8s.api.core.v1.NodeSystemInfo", "containerRuntimeVersion"),
        (D_EVENT_LAST_TIMESTAMP, "io.k8s.api.core.v1.Event", "lastTimestamp"),
        (D_EVENT_TYPE, "io.k8s.api.core.v1.Event", "type"),
        (D_EVENT_REASON, "io.k8s.api.core.v1.Event", "reason"),
        (D_EVENT_INVOLVED_OBJECT, "io.k8s.api.core.v1.Event", "involvedObject"),
        (D_OBJECT_REFERENCE_FIELD_PATH, "io.k8s.api.core.v1.ObjectReference", "fieldPath"),
        (D_EVENT_SOURCE, "io.k8s.api.core.v1.Event", "source"),
        (D_EVENT_MESSAGE, "io.k8s.api.core.v1.Event", "message"),
        (D_EVENT_FIRST_TIMESTAMP, "io.k8s.api.core.v1.Event", "firstTimestamp"),
        (D_EVENT_COUNT, "io.k8s.api.core.v1.Event", "count"),
        (D_SECRET_TYPE, "io.k8s.api.core.v1.Secret", "type"),
        (D_SECRET_DATA, "io.k8s.api.core.v1.Secret", "data"),
        (D_PERSISTENT_VOLUME_SPEC_CAPACITY, "io.k8s.api.core.v1.PersistentVolumeSpec", "capacity"),
        (D_PERSISTENT_VOLUME_SPEC_ACCESS_MODES, "io.k8s.api.core.v1.PersistentVolumeSpec", "accessModes"),
        (
            D_PERSISTENT_VOLUME_SPEC_PERSISTENT_VOLUME_RECLAIM_POLICY,
            "io.k8s.api.core.v1.PersistentVolumeSpec",
            "persistentVolumeReclaimPolicy",
        ),
        (D_PERSISTENT_VOLUME_STATUS_PHASE, "io.k8s.api.core.v1.PersistentVolumeStatus", "phase"),
        (D_PERSISTENT_VOLUME_SPEC_CLAIM_REF, "io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef"),
        (D_PERSISTENT_VOLUME_STATUS_REASON, "io.k8s.api.core.v1.PersistentVolumeStatus", "reason"),
        (D_PERSISTENT_VOLUME_SPEC_VOLUME_MODE, "io.k8s.api.core.v1.PersistentVolumeSpec", "volumeMode"),
        (D_PERSISTENT_VOLUME_CLAIM_STATUS_PHASE, "io.k8s.api.core.v1.PersistentVolumeClaimStatus", "phase"),
        (D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_NAME, "io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeName"),
        (D_PERSISTENT_VOLUME_CLAIM_STATUS_CAPACITY, "io.k8s.api.core.v1.PersistentVolumeClaimStatus", "capacity"),
        (D_PERSISTENT_VOLUME_CLAIM_STATUS_ACCESS_MODES, "io.k8s.api.core.v1.PersistentVolumeClaimStatus", "accessModes"),
        (D_PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_MODE, "io.k8s.api.core.v1.PersistentVolumeClaimSpec", "volumeMode"),
        (D_CONFIG_MAP_DATA, "io.k8s.api.core.v1.ConfigMap", "data"),
        (D_LEASE_SPEC_HOLDER_IDENTITY, "io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
        (D_STORAGE_CLASS_PROVISIONER, "io.k8s.api.storage.v1.StorageClass", "provisioner"),
        (D_STORAGE_CLASS_RECLAIM_POLICY, "io.k8s.api.storage.v1.StorageClass", "reclaimPolicy"),
        (D_STORAGE_CLASS_VOLUME_BINDING_MODE, "io.k8s.api.storage.v1.StorageClass", "volumeBindingMode"),
        (D_STORAGE_CLASS_ALLOW_VOLUME_EXPANSION, "io.k8s.api.storage.v1.StorageClass", "allowVolumeExpansion"),
        (D_PRIORITY_CLASS_VALUE, "io.k8s.api.scheduling.v1.PriorityClass", "value"),
        (D_PRIORITY_CLASS_GLOBAL_DEFAULT, "io.k8s.api.scheduling.v1.PriorityClass", "globalDefault"),
        (D_PRIORITY_CLASS_PREEMPTION_POLICY, "io.k8s.api.scheduling.v1.PriorityClass", "preemptionPolicy"),
        (D_REPLICA_SET_SPEC_REPLICAS, "io.k8s.api.apps.v1.ReplicaSetSpec", "replicas"),
        (D_REPLICA_SET_STATUS_REPLICAS, "io.k8s.api.apps.v1.ReplicaSetStatus", "replicas"),
        (D_REPLICA_SET_STATUS_READY_REPLICAS, "io.k8s.api.apps.v1.ReplicaSetStatus", "readyReplicas"),
        (D_REPLICA_SET_SPEC_SELECTOR, "io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
        (D_DAEMON_SET_STATUS_DESIRED_NUMBER_SCHEDULED, "io.k8s.api.apps.v1.DaemonSetStatus", "desiredNumberScheduled"),
        (D_DAEMON_SET_STATUS_CURRENT_NUMBER_SCHEDULED, "io.k8s.api.apps.v1.DaemonSetStatus", "currentNumberScheduled"),
        (D_DAEMON_SET_STATUS_NUMBER_READY, "io.k8s.api.apps.v1.DaemonSetStatus", "numberReady"),
        (D_DAEMON_SET_STATUS_UPDATED_NUMBER_SCHEDULED, "io.k8s.api.apps.v1.DaemonSetStatus", "updatedNumberScheduled"),
        (D_DAEMON_SET_STATUS_NUMBER_AVAILABLE, "io.k8s.api.apps.v1.DaemonSetStatus", "numberAvailable"),
        (D_DAEMON_SET_SPEC_SELECTOR, "io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
        (D_DEPLOYMENT_STATUS_UPDATED_REPLICAS, "io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"),
        (D_DEPLOYMENT_STATUS_AVAILABLE_REPLICAS, "io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"),
        (D_DEPLOYMENT_SPEC_SELECTOR, "io.k8s.api.apps.v1.DeploymentSpec", "selector"),
        (D_CONTROLLER_REVISION_REVISION, "io.k8s.api.apps.v1.ControllerRevision", "revision"),
        (D_CRON_JOB_SPEC_SCHEDULE, "io.k8s.api.batch.v1.CronJobSpec", "schedule"),
        (D_CRON_JOB_SPEC_TIME_ZONE, "io.k8s.api.batch.v1.CronJobSpec", "timeZone"),
        (D_CRON_JOB_SPEC_SUSPEND, "io.k8s.api.batch.v1.CronJobSpec", "suspend"),
        (D_CRON_JOB_STATUS_ACTIVE, "io.k8s.api.batch.v1.CronJobStatus", "active"),
        (D_CRON_JOB_STATUS_LAST_SCHEDULE_TIME, "io.k8s.api.batch.v1.CronJobStatus", "lastScheduleTime"),
        (D_NETWORK_POLICY_SPEC_POD_SELECTOR, "io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
        (D_ENDPOINT_SLICE_ADDRESS_TYPE, "io.k8s.api.discovery.v1.EndpointSlice", "addressType"),
        (D_ENDPOINT_SLICE_PORTS, "io.k8s.api.discovery.v1.EndpointSlice", "ports"),
        (D_ENDPOINT_SLICE_ENDPOINTS, "io.k8s.api.discovery.v1.EndpointSlice", "endpoints"),
    ];

    /// `SwaggerDoc()`'s formatting of a Go comment, checked on a field upstream's generated docs
    /// show: markers dropped, lines joined, indented lines kept, paragraphs kept.
    #[test]
    fn swagger_doc_formats_go_comments() {
        let comment = "Requested signer for the request. It is a qualified name in the form:\n`scope-hostname.io/name`.\nIf empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. Otherwise, it is assigned \"x\".\nDistribution of trust for signers happens out of band.\nYou can select on this field using `spec.signerName`.\n+optional";
        assert_eq!(
            groups::swagger_doc(comment),
            "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. Otherwise, it is assigned \"x\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`."
        );
        assert_eq!(groups::swagger_doc("First paragraph.\n\nSecond one.\n+listType=map"), "First paragraph.\n\nSecond one.");
        assert!(!D_ROLE_BINDING_ROLE_REF.text().contains('+'));
    }
}
