//! Type checking of a rule against its node's schema, as cel-go's checker does with the
//! declarations apiserver's `SchemaDeclType` builds (`k8s.io/apiserver/pkg/cel/common`).
//!
//! - [`Decl`] is upstream's `DeclType` of a schema node: its CEL type, and the two sizes the
//!   cost estimator reads (`MaxElements`, `MinSerializedSize`).
//! - [`check`] types every expression of a parsed program (`self` and `oldSelf` typed from
//!   the node's `Decl`) and resolves each call's overloads from CEL's standard declarations,
//!   reporting cel-go's errors (`undefined field`, `found no matching overload`, ...).
//!
//! The checker is conservative: the operators and standard functions are declared as
//! cel-go declares them, the extension and Kubernetes functions only by their result type
//! (arguments unchecked), and anything else is [`Ty::Unknown`], compatible with everything
//! and never reported; so a rule cel-go accepts is never refused.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use ::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::super::Node;
use super::values::escape;

/// apiserver's `MaxRequestSizeBytes`: the bound of what a request can hold.
pub const MAX_REQUEST_SIZE: i64 = 3 * 1024 * 1024;

/// Upstream's `DeclType` of a schema node.
#[derive(Debug)]
pub struct Decl {
    pub kind: DeclKind,
    /// `MaxElements`: the most characters, bytes, items or properties a value may have.
    pub max_elements: u64,
    /// `MinSerializedSize`: the fewest bytes a value takes in JSON.
    pub min_size: i64,
}

#[derive(Debug)]
pub enum DeclKind {
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Arc<Decl>),
    /// Keys are strings.
    Map(Arc<Decl>),
    /// Fields by their escaped names.
    Object(BTreeMap<String, Arc<Decl>>),
}

impl Decl {
    fn new(kind: DeclKind, max_elements: i64, min_size: i64) -> Arc<Decl> {
        Arc::new(Decl { kind, max_elements: u64::try_from(max_elements.max(0)).unwrap_or(0), min_size })
    }

    /// A field, a list's items or a map's values: the steps of a cost estimator's path.
    pub fn step(&self, name: &str) -> Option<&Arc<Decl>> {
        match (&self.kind, name) {
            (DeclKind::List(elem) | DeclKind::Map(elem), "@items" | "@values") => Some(elem),
            (DeclKind::Object(fields), _) => fields.get(name),
            _ => None,
        }
    }
}

/// An unbounded string's length: a request of only that string, `""` aside.
const MAX_STRING: i64 = MAX_REQUEST_SIZE - 2;

/// Upstream's `SchemaDeclType`: the declaration of `node`, none when CEL does not see it
/// (no type, or items or values that are not seen). `resource_root` at the root of a
/// resource or an embedded one (`apiVersion`, `kind`, `metadata.name` and
/// `metadata.generateName` are always there).
pub fn decl(node: &Node, resource_root: bool) -> Option<Arc<Decl>> {
    if node.types == ["integer", "string"] {
        let max = node.max_length.map_or(MAX_STRING, |m| m.max(0).saturating_mul(4));
        return Some(Decl::new(DeclKind::Dyn, max, 1));
    }
    match node.types.as_slice() {
        ["array"] => {
            let items = node.items.as_deref()?;
            let item = decl(items, items.embedded_resource)?;
            let max = node.max_items.map_or((MAX_STRING) / (item.min_size + 1), |m| m.max(0));
            Some(Decl::new(DeclKind::List(item), max, 2))
        }
        ["object"] => {
            if let Some(extra) = node.additional_schema() {
                let value = decl(extra, extra.embedded_resource)?;
                let max = node.max_properties.map_or((MAX_STRING) / (value.min_size + 6), |m| m.max(0));
                return Some(Decl::new(DeclKind::Map(value), max, 2));
            }
            let mut properties: Vec<(&str, Option<Arc<Decl>>, bool)> =
                node.properties.iter().map(|(name, p)| (name.as_str(), decl(p, p.embedded_resource), p.default.is_some())).collect();
            if resource_root && !has_type_and_object_meta(node) {
                let string = || Some(Decl::new(DeclKind::String, MAX_STRING, 2));
                let meta = BTreeMap::from([
                    ("name".to_owned(), Decl::new(DeclKind::String, MAX_STRING, 2)),
                    ("generateName".to_owned(), Decl::new(DeclKind::String, MAX_STRING, 2)),
                ]);
                properties.retain(|(name, _, _)| !matches!(*name, "kind" | "apiVersion" | "metadata"));
                properties.push(("kind", string(), false));
                properties.push(("apiVersion", string(), false));
                properties.push(("metadata", Some(Decl::new(DeclKind::Object(meta), 0, 2)), false));
            }
            let mut fields = BTreeMap::new();
            let mut min_size = 2;
            for (name, field, has_default) in properties {
                let Some(field) = field else { continue };
                if node.required.iter().any(|r| r == name) && !has_default {
                    min_size += name.len() as i64 + field.min_size + 4;
                }
                if let Some(escaped) = escape(name) {
                    fields.insert(escaped, field);
                }
            }
            Some(Decl::new(DeclKind::Object(fields), 0, min_size))
        }
        ["string"] => Some(match node.format.as_str() {
            "byte" => Decl::new(DeclKind::Bytes, node.max_length.map_or(MAX_STRING, |m| m.max(0)), 2),
            "duration" => Decl::new(DeclKind::Duration, 32, 3),
            "date" => Decl::new(DeclKind::Timestamp, 12, 12),
            "date-time" => Decl::new(DeclKind::Timestamp, 32, 21),
            _ => {
                let max = match node.max_length {
                    Some(m) => m.max(0).saturating_mul(4),
                    None if !node.enumeration.is_empty() => {
                        node.enumeration.iter().filter_map(Value::as_str).map(|s| s.len() as i64).max().unwrap_or(0)
                    }
                    None => MAX_STRING,
                };
                Decl::new(DeclKind::String, max, 2)
            }
        }),
        ["boolean"] => Some(Decl::new(DeclKind::Bool, 0, 4)),
        ["number"] => Some(Decl::new(DeclKind::Double, 0, 1)),
        ["integer"] => Some(Decl::new(DeclKind::Int, 0, 1)),
        _ => None,
    }
}

/// Upstream's `WithTypeAndObjectMeta` leaves a schema alone that already declares these.
fn has_type_and_object_meta(node: &Node) -> bool {
    let is = |n: Option<&Node>, t: &str| n.is_some_and(|n| n.types.contains(&t));
    let meta = node.properties.get("metadata");
    is(node.properties.get("kind"), "string")
        && is(node.properties.get("apiVersion"), "string")
        && is(meta, "object")
        && is(meta.and_then(|m| m.properties.get("name")), "string")
        && is(meta.and_then(|m| m.properties.get("generateName")), "string")
}

/// An object declaration, equal to another only if it is the same one.
#[derive(Debug, Clone)]
pub struct Object(pub Arc<Decl>);

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A CEL type as the checker sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// What this checker does not know (an undeclared function's result, an empty list's
    /// elements): compatible with everything, never an error.
    Unknown,
    Dyn,
    Error,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Object(Object),
    /// A type value (`int`, `type(x)`).
    Type,
    /// A Kubernetes or extension type (`kubernetes.Quantity`, `net.IP`, ...).
    Opaque(&'static str),
    Optional(Box<Ty>),
    /// A type parameter of an overload (`A`, `B`).
    Param(usize),
}

impl Ty {
    /// The type of a value of `decl`.
    pub fn of(decl: &Arc<Decl>) -> Ty {
        match &decl.kind {
            DeclKind::Dyn => Ty::Dyn,
            DeclKind::Bool => Ty::Bool,
            DeclKind::Int => Ty::Int,
            DeclKind::Double => Ty::Double,
            DeclKind::String => Ty::String,
            DeclKind::Bytes => Ty::Bytes,
            DeclKind::Duration => Ty::Duration,
            DeclKind::Timestamp => Ty::Timestamp,
            DeclKind::List(elem) => Ty::List(Box::new(Ty::of(elem))),
            DeclKind::Map(value) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(value))),
            DeclKind::Object(_) => Ty::Object(Object(Arc::clone(decl))),
        }
    }

    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    fn optional(t: Ty) -> Ty {
        Ty::Optional(Box::new(t))
    }

    /// As cel-go's `FormatCELType` writes it.
    pub fn display(&self) -> String {
        match self {
            Ty::Unknown | Ty::Dyn | Ty::Param(_) => "dyn".to_owned(),
            Ty::Error => "*error*".to_owned(),
            Ty::Null => "null_type".to_owned(),
            Ty::Bool => "bool".to_owned(),
            Ty::Int => "int".to_owned(),
            Ty::Uint => "uint".to_owned(),
            Ty::Double => "double".to_owned(),
            Ty::String => "string".to_owned(),
            Ty::Bytes => "bytes".to_owned(),
            Ty::Duration => "google.protobuf.Duration".to_owned(),
            Ty::Timestamp => "google.protobuf.Timestamp".to_owned(),
            Ty::List(e) => format!("list({})", e.display()),
            Ty::Map(k, v) => format!("map({}, {})", k.display(), v.display()),
            Ty::Object(_) => "object".to_owned(),
            Ty::Type => "type".to_owned(),
            Ty::Opaque(name) => (*name).to_owned(),
            Ty::Optional(t) => format!("optional_type({})", t.display()),
        }
    }
}

/// Whether a value of `actual` may be passed where `formal` is declared, binding the type
/// parameters (`binds`). Looser than cel-go where that is safe: `null` and any two objects
/// are compatible.
fn unify(actual: &Ty, formal: &Ty, binds: &mut [Option<Ty>; 2]) -> bool {
    match (actual, formal) {
        (_, Ty::Param(i)) => match &binds[*i] {
            None | Some(Ty::Unknown) => {
                binds[*i] = Some(actual.clone());
                true
            }
            Some(bound) => {
                let bound = bound.clone();
                let fits = unify(actual, &bound, binds);
                if fits && matches!(bound, Ty::Error) {
                    binds[*i] = Some(actual.clone());
                }
                fits
            }
        },
        (Ty::Unknown | Ty::Dyn | Ty::Error, _) => {
            bind_all(formal, actual, binds);
            true
        }
        (_, Ty::Unknown | Ty::Dyn | Ty::Error) | (Ty::Null, _) | (Ty::Object(_), Ty::Object(_)) => true,
        (Ty::List(a), Ty::List(f)) | (Ty::Optional(a), Ty::Optional(f)) => unify(a, f, binds),
        (Ty::Map(ak, av), Ty::Map(fk, fv)) => unify(ak, fk, binds) && unify(av, fv, binds),
        (a, f) => a == f,
    }
}

/// Binds the unbound parameters in `formal` to `to`.
fn bind_all(formal: &Ty, to: &Ty, binds: &mut [Option<Ty>; 2]) {
    match formal {
        Ty::Param(i) if binds[*i].is_none() => binds[*i] = Some(to.clone()),
        Ty::List(e) | Ty::Optional(e) => bind_all(e, to, binds),
        Ty::Map(k, v) => {
            bind_all(k, to, binds);
            bind_all(v, to, binds);
        }
        _ => {}
    }
}

fn substitute(t: &Ty, binds: &[Option<Ty>; 2]) -> Ty {
    match t {
        Ty::Param(i) => binds[*i].clone().unwrap_or(Ty::Unknown),
        Ty::List(e) => Ty::list(substitute(e, binds)),
        Ty::Optional(e) => Ty::optional(substitute(e, binds)),
        Ty::Map(k, v) => Ty::map(substitute(k, binds), substitute(v, binds)),
        other => other.clone(),
    }
}

/// cel-go's `joinTypes` for list and map literals: the common type, else `dyn`.
fn join(a: Ty, b: Ty) -> Ty {
    match (a, b) {
        (a, b) if a == b => a,
        (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
        (Ty::Object(_), Ty::Object(_)) => Ty::Unknown,
        (Ty::List(a), Ty::List(b)) => Ty::list(join(*a, *b)),
        (Ty::Map(ak, av), Ty::Map(bk, bv)) => Ty::map(join(*ak, *bk), join(*av, *bv)),
        _ => Ty::Dyn,
    }
}

/// One declared overload.
struct Overload {
    id: &'static str,
    member: bool,
    args: Vec<Ty>,
    result: Ty,
}

/// CEL's standard declarations (cel-go `common/stdlib/standard.go`) of the functions this
/// checker resolves exactly, by function name.
static STANDARD: LazyLock<HashMap<&'static str, Vec<Overload>>> = LazyLock::new(|| {
    use Ty::{Bool, Bytes, Double, Duration, Int, String, Timestamp, Uint};
    let a = || Ty::Param(0);
    let b = || Ty::Param(1);
    let mut table: HashMap<&'static str, Vec<Overload>> = HashMap::new();
    let mut add = |name: &'static str, id: &'static str, member: bool, args: Vec<Ty>, result: Ty| {
        table.entry(name).or_default().push(Overload { id, member, args, result });
    };
    add("_?_:_", "conditional", false, vec![Bool, a(), a()], a());
    add("!_", "logical_not", false, vec![Bool], Bool);
    add("@not_strictly_false", "not_strictly_false", false, vec![Bool], Bool);
    add("_==_", "equals", false, vec![a(), a()], Bool);
    add("_!=_", "not_equals", false, vec![a(), a()], Bool);
    for (id, x, y, r) in [
        ("add_bytes", Bytes, Bytes, Bytes),
        ("add_double", Double, Double, Double),
        ("add_duration_duration", Duration, Duration, Duration),
        ("add_duration_timestamp", Duration, Timestamp, Timestamp),
        ("add_timestamp_duration", Timestamp, Duration, Timestamp),
        ("add_int64", Int, Int, Int),
        ("add_list", Ty::list(a()), Ty::list(a()), Ty::list(a())),
        ("add_string", String, String, String),
        ("add_uint64", Uint, Uint, Uint),
    ] {
        add("_+_", id, false, vec![x, y], r);
    }
    for (id, x, y, r) in [
        ("subtract_double", Double, Double, Double),
        ("subtract_duration_duration", Duration, Duration, Duration),
        ("subtract_int64", Int, Int, Int),
        ("subtract_timestamp_duration", Timestamp, Duration, Timestamp),
        ("subtract_timestamp_timestamp", Timestamp, Timestamp, Duration),
        ("subtract_uint64", Uint, Uint, Uint),
    ] {
        add("_-_", id, false, vec![x, y], r);
    }
    for (name, prefix) in [("_*_", "multiply"), ("_/_", "divide")] {
        for (suffix, t) in [("double", Double), ("int64", Int), ("uint64", Uint)] {
            add(name, leak(format!("{prefix}_{suffix}")), false, vec![t.clone(), t.clone()], t);
        }
    }
    add("_%_", "modulo_int64", false, vec![Int, Int], Int);
    add("_%_", "modulo_uint64", false, vec![Uint, Uint], Uint);
    add("-_", "negate_double", false, vec![Double], Double);
    add("-_", "negate_int64", false, vec![Int], Int);
    for (name, prefix) in [("_<_", "less"), ("_<=_", "less_equals"), ("_>_", "greater"), ("_>=_", "greater_equals")] {
        for (suffix, x, y) in [
            ("bool", Bool, Bool),
            ("int64", Int, Int),
            ("int64_double", Int, Double),
            ("int64_uint64", Int, Uint),
            ("uint64", Uint, Uint),
            ("uint64_double", Uint, Double),
            ("uint64_int64", Uint, Int),
            ("double", Double, Double),
            ("double_int64", Double, Int),
            ("double_uint64", Double, Uint),
            ("string", String, String),
            ("bytes", Bytes, Bytes),
            ("timestamp", Timestamp, Timestamp),
            ("duration", Duration, Duration),
        ] {
            add(name, leak(format!("{prefix}_{suffix}")), false, vec![x, y], Bool);
        }
    }
    add("_[_]", "index_list", false, vec![Ty::list(a()), Int], a());
    add("_[_]", "index_map", false, vec![Ty::map(a(), b()), a()], b());
    // The optional types library (on in Kubernetes' environments).
    add("_[_]", "optional_list_index_int", false, vec![Ty::optional(Ty::list(a())), Int], Ty::optional(a()));
    add("_[_]", "optional_map_index_value", false, vec![Ty::optional(Ty::map(a(), b())), a()], Ty::optional(b()));
    add("@in", "in_list", false, vec![a(), Ty::list(a())], Bool);
    add("@in", "in_map", false, vec![a(), Ty::map(a(), b())], Bool);
    for (suffix, t) in [("bytes", Bytes), ("list", Ty::list(a())), ("map", Ty::map(a(), b())), ("string", String)] {
        add("size", leak(format!("size_{suffix}")), false, vec![t.clone()], Int);
        add("size", leak(format!("size_{suffix}_inst")), true, vec![t], Int);
    }
    add("contains", "contains_string", true, vec![String, String], Bool);
    add("endsWith", "ends_with_string", true, vec![String, String], Bool);
    add("startsWith", "starts_with_string", true, vec![String, String], Bool);
    add("matches", "matches", false, vec![String, String], Bool);
    add("matches", "matches_string", true, vec![String, String], Bool);
    for t in [Int, Uint, Double, String, Duration, Timestamp] {
        let id = leak(format!("{}_to_int64", t.display().rsplit('.').next().unwrap_or_default().to_lowercase()));
        add("int", id, false, vec![t], Int);
    }
    for t in [Uint, Int, Double, String] {
        add("uint", leak(format!("{}_to_uint64", t.display())), false, vec![t], Uint);
    }
    for t in [Double, Int, Uint, String] {
        add("double", leak(format!("{}_to_double", t.display())), false, vec![t], Double);
    }
    for t in [String, Bool, Bytes, Double, Duration, Int, Timestamp, Uint] {
        let id = leak(format!("{}_to_string", t.display().rsplit('.').next().unwrap_or_default().to_lowercase()));
        add("string", id, false, vec![t], String);
    }
    // Kubernetes' IP, CIDR, semver and quantity values convert too: not checked.
    add("string", "kubernetes_to_string", false, vec![Ty::Unknown], String);
    add("bytes", "bytes_to_bytes", false, vec![Bytes], Bytes);
    add("bytes", "string_to_bytes", false, vec![String], Bytes);
    add("bool", "bool_to_bool", false, vec![Bool], Bool);
    add("bool", "string_to_bool", false, vec![String], Bool);
    add("duration", "duration_to_duration", false, vec![Duration], Duration);
    add("duration", "int64_to_duration", false, vec![Int], Duration);
    add("duration", "string_to_duration", false, vec![String], Duration);
    add("timestamp", "timestamp_to_timestamp", false, vec![Timestamp], Timestamp);
    add("timestamp", "int64_to_timestamp", false, vec![Int], Timestamp);
    add("timestamp", "string_to_timestamp", false, vec![String], Timestamp);
    add("dyn", "to_dyn", false, vec![a()], Ty::Dyn);
    // The optional types library's members.
    add("hasValue", "optional_has_value", true, vec![Ty::optional(a())], Bool);
    add("value", "optional_value", true, vec![Ty::optional(a())], a());
    add("orValue", "optional_or_value", true, vec![Ty::optional(a()), a()], a());
    add("type", "type", false, vec![a()], Ty::Type);
    table
});

/// An overload id built at start-up, kept for the program's life (the table is static).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The result of the extension and Kubernetes functions this checker knows only by their
/// result (their arguments are not checked): `target` is the receiver's type.
fn known_result(name: &str, target: Option<&Ty>) -> Option<Ty> {
    let same_as_target = || target.cloned().unwrap_or(Ty::Unknown);
    let element = || match target {
        Some(Ty::List(e)) => (**e).clone(),
        _ => Ty::Unknown,
    };
    Some(match name {
        // Strings and lists extensions, Kubernetes' lists and regex libraries.
        "charAt" | "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim" | "join" | "format" | "find" => Ty::String,
        "indexOf" | "lastIndexOf" => Ty::Int,
        "split" | "findAll" => Ty::list(Ty::String),
        "reverse" | "distinct" | "slice" | "sort" => same_as_target(),
        "isSorted" => Ty::Bool,
        "sum" | "min" | "max" if target.is_some() => element(),
        // Timestamps and durations.
        "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek" | "getDayOfYear" | "getHours" | "getMinutes"
        | "getSeconds" | "getMilliseconds" => Ty::Int,
        // Kubernetes' quantity, URL, IP and CIDR, semver and format libraries.
        "isQuantity"
        | "isURL"
        | "isIP"
        | "isCIDR"
        | "isSemver"
        | "isLessThan"
        | "isGreaterThan"
        | "isInteger"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "containsIP"
        | "containsCIDR" => Ty::Bool,
        "quantity" => Ty::Opaque("kubernetes.Quantity"),
        "add" | "sub" if target.is_some() => Ty::Opaque("kubernetes.Quantity"),
        "compareTo" | "sign" | "asInteger" | "major" | "minor" | "patch" | "family" | "prefixLength" => Ty::Int,
        "asApproximateFloat" => Ty::Double,
        "url" => Ty::Opaque("kubernetes.URL"),
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => Ty::String,
        "getQuery" => Ty::map(Ty::String, Ty::list(Ty::String)),
        "ip" => Ty::Opaque("net.IP"),
        "cidr" | "masked" => Ty::Opaque("net.CIDR"),
        "semver" => Ty::Opaque("kubernetes.Semver"),
        "validate" => Ty::optional(Ty::list(Ty::String)),
        _ => return None,
    })
}

/// The namespaced functions' results (`sets.contains(a, b)`, `ip.isCanonical(s)`).
fn namespaced_result(namespace: &str, name: &str) -> Ty {
    match (namespace, name) {
        ("sets", "contains" | "equivalent" | "intersects") | ("ip", "isCanonical") => Ty::Bool,
        ("format", "named") => Ty::optional(Ty::Opaque("kubernetes.NamedFormat")),
        ("strings", "quote") | ("base64", "encode") => Ty::String,
        ("base64", "decode") => Ty::Bytes,
        _ => Ty::Unknown,
    }
}

/// Names an expression may use as a namespace of functions.
const NAMESPACES: [&str; 8] = ["optional", "strings", "sets", "math", "base64", "lists", "format", "ip"];

/// Type names usable as values.
const TYPE_NAMES: [&str; 12] =
    ["int", "uint", "double", "string", "bool", "bytes", "list", "map", "null_type", "type", "dyn", "optional_type"];

/// The outcome of checking one program.
#[derive(Debug, Default)]
pub struct Checked {
    /// Every expression's type, by id.
    pub types: HashMap<u64, Ty>,
    /// The matching overloads of every call of a function declared exactly, by id (cel-go's
    /// overload ids).
    pub overloads: HashMap<u64, Vec<&'static str>>,
    /// cel-go's errors, each at an expression's id.
    pub errors: Vec<(u64, String)>,
}

impl Checked {
    pub fn type_of(&self, id: u64) -> &Ty {
        self.types.get(&id).unwrap_or(&Ty::Unknown)
    }
}

/// Types `expr` with `vars` declared (`self`, `oldSelf`).
pub fn check(expr: &IdedExpr, vars: &[(&str, Ty)]) -> Checked {
    let mut checker = Checker { scopes: vars.iter().map(|(n, t)| ((*n).to_owned(), t.clone())).collect(), out: Checked::default() };
    checker.check(expr);
    checker.out
}

struct Checker {
    /// Variables in scope, innermost last.
    scopes: Vec<(String, Ty)>,
    out: Checked,
}

impl Checker {
    fn var(&self, name: &str) -> Option<&Ty> {
        self.scopes.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    fn error(&mut self, id: u64, message: String) {
        self.out.errors.push((id, message));
    }

    fn check(&mut self, e: &IdedExpr) -> Ty {
        let t = match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => match self.var(name) {
                Some(t) => t.clone(),
                None if TYPE_NAMES.contains(&name.as_str()) => Ty::Type,
                None => Ty::Unknown,
            },
            Expr::Select(select) => {
                let operand = self.check(&select.operand);
                let field = self.select(e.id, operand, &select.field);
                if select.test { Ty::Bool } else { field }
            }
            Expr::Call(call) => {
                let namespace = call.target.as_deref().and_then(|t| match &t.expr {
                    Expr::Ident(ns) if NAMESPACES.contains(&ns.as_str()) && self.var(ns).is_none() => Some(ns.as_str()),
                    _ => None,
                });
                if let Some(namespace) = namespace {
                    for a in &call.args {
                        self.check(a);
                    }
                    namespaced_result(namespace, &call.func_name)
                } else {
                    let target = call.target.as_deref().map(|t| self.check(t));
                    let args: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
                    self.call(e, &call.func_name, target, args)
                }
            }
            Expr::Comprehension(c) => {
                let range = self.check(&c.iter_range);
                let (first, second) = match &range {
                    Ty::List(elem) => (if c.iter_var2.is_some() { Ty::Int } else { (**elem).clone() }, (**elem).clone()),
                    Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
                    Ty::Unknown => (Ty::Unknown, Ty::Unknown),
                    Ty::Dyn | Ty::Error => (Ty::Dyn, Ty::Dyn),
                    other => {
                        self.error(
                            c.iter_range.id,
                            format!(
                                "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                                other.display()
                            ),
                        );
                        (Ty::Dyn, Ty::Dyn)
                    }
                };
                let accu = self.check(&c.accu_init);
                let depth = self.scopes.len();
                self.scopes.push((c.accu_var.clone(), accu.clone()));
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                self.check(&c.loop_cond);
                let step = self.check(&c.loop_step);
                self.scopes.truncate(depth);
                // The accumulator is what the step makes of it (`[]` becomes a list of the
                // mapped values).
                let accu = if matches!(accu, Ty::List(ref e) if **e == Ty::Unknown) && matches!(step, Ty::List(_)) { step } else { accu };
                self.scopes.push((c.accu_var.clone(), accu));
                let result = self.check(&c.result);
                self.scopes.truncate(depth);
                result
            }
            Expr::List(list) => {
                let mut elem: Option<Ty> = None;
                for (i, item) in list.elements.iter().enumerate() {
                    let mut t = self.check(item);
                    if list.optional_indices.contains(&i) {
                        t = match t {
                            Ty::Optional(inner) => *inner,
                            _ => Ty::Unknown,
                        };
                    }
                    elem = Some(match elem {
                        None => t,
                        Some(prev) => join(prev, t),
                    });
                }
                Ty::list(elem.unwrap_or(Ty::Unknown))
            }
            Expr::Map(map) => {
                let (mut key, mut value): (Option<Ty>, Option<Ty>) = (None, None);
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            let k = self.check(&m.key);
                            let mut v = self.check(&m.value);
                            if m.optional {
                                v = Ty::Unknown;
                            }
                            key = Some(key.map_or(k.clone(), |p| join(p, k)));
                            value = Some(value.map_or(v.clone(), |p| join(p, v)));
                        }
                        EntryExpr::StructField(f) => {
                            self.check(&f.value);
                        }
                    }
                }
                Ty::map(key.unwrap_or(Ty::Unknown), value.unwrap_or(Ty::Unknown))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            self.check(&m.key);
                            self.check(&m.value);
                        }
                        EntryExpr::StructField(f) => {
                            self.check(&f.value);
                        }
                    }
                }
                Ty::Unknown
            }
            Expr::Unspecified => Ty::Unknown,
        };
        self.out.types.insert(e.id, t.clone());
        t
    }

    /// cel-go's `checkSelectField`.
    fn select(&mut self, id: u64, operand: Ty, field: &str) -> Ty {
        let (target, optional) = match operand {
            Ty::Optional(inner) => (*inner, true),
            other => (other, false),
        };
        let result = match &target {
            Ty::Map(_, value) => (**value).clone(),
            Ty::Object(Object(decl)) => match &decl.kind {
                // A reserved word names its escaped field too (`self.namespace`).
                DeclKind::Object(fields) => match fields.get(field).or_else(|| fields.get(&format!("__{field}__"))) {
                    Some(f) => Ty::of(f),
                    None => {
                        self.error(id, format!("undefined field '{field}'"));
                        Ty::Error
                    }
                },
                _ => Ty::Unknown,
            },
            Ty::Unknown => Ty::Unknown,
            Ty::Dyn | Ty::Error | Ty::Param(_) => Ty::Dyn,
            other => {
                self.error(id, format!("type '{}' does not support field selection", other.display()));
                Ty::Dyn
            }
        };
        if optional { Ty::optional(result) } else { result }
    }

    fn call(&mut self, e: &IdedExpr, name: &str, target: Option<Ty>, args: Vec<Ty>) -> Ty {
        if matches!(name, "_&&_" | "_||_") {
            let Expr::Call(call) = &e.expr else { return Ty::Bool };
            let mut failed = false;
            for (arg, t) in call.args.iter().zip(&args) {
                if !unify(t, &Ty::Bool, &mut [None, None]) {
                    self.error(arg.id, format!("expected type 'bool' but found '{}'", t.display()));
                    failed = true;
                }
            }
            self.out.overloads.insert(e.id, vec![if name == "_&&_" { "logical_and" } else { "logical_or" }]);
            return if failed { Ty::Error } else { Ty::Bool };
        }
        if name == "_?._" {
            // `a.?b`: cel-go's `checkOptSelect`, a field selection whose result is optional.
            if let Expr::Call(call) = &e.expr
                && let [_, IdedExpr { expr: Expr::Literal(LiteralValue::String(field)), .. }] = call.args.as_slice()
                && let Some(operand) = args.first()
            {
                return match self.select(e.id, operand.clone(), field.inner()) {
                    optional @ Ty::Optional(_) => optional,
                    other => Ty::optional(other),
                };
            }
            return Ty::Unknown;
        }
        let member = target.is_some();
        if let Some(overloads) = STANDARD.get(name).filter(|o| o.iter().any(|o| o.member == member)) {
            let all: Vec<Ty> = target.iter().cloned().chain(args).collect();
            let mut result: Option<Ty> = None;
            let mut ids = Vec::new();
            for o in overloads.iter().filter(|o| o.member == member && o.args.len() == all.len()) {
                let mut binds = [None, None];
                if all.iter().zip(&o.args).all(|(a, f)| unify(a, f, &mut binds)) {
                    ids.push(o.id);
                    let r = substitute(&o.result, &binds);
                    result = Some(match result {
                        None => r,
                        Some(prev) if prev == r => prev,
                        Some(Ty::Unknown) => Ty::Unknown,
                        Some(_) if r == Ty::Unknown => Ty::Unknown,
                        Some(_) => Ty::Dyn,
                    });
                }
            }
            self.out.overloads.insert(e.id, ids);
            return match result {
                Some(t) => t,
                None => {
                    let shown: Vec<String> = all.iter().map(Ty::display).collect();
                    let signature =
                        if member { format!("{}.({})", shown[0], shown[1..].join(", ")) } else { format!("({})", shown.join(", ")) };
                    self.error(e.id, format!("found no matching overload for '{name}' applied to '{signature}'"));
                    Ty::Error
                }
            };
        }
        known_result(name, target.as_ref()).unwrap_or(Ty::Unknown)
    }
}
