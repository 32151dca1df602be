//! Objects walked with their schema, as structured-merge-diff's `typed` package walks them:
//! the field set of an object (`ToFieldSet`), the comparison of two objects (`Compare`), the
//! merge of an applied configuration into an object (`Merge`) and the removal of a set's
//! items (`RemoveItems`). The schema is the generated field facts for built-in kinds and a
//! custom resource's OpenAPI schema; both answer what upstream's `schemaconv` derives from
//! the OpenAPI extensions. I/O-free.

use std::collections::{HashMap, HashSet};

use kapi_apimachinery::TypeInfo;
use kapi_apimachinery::scheme::{FieldInfo, FieldShape};
use serde_json::{Map, Value};

use super::set::{PathElement, Set};

/// The type of a value.
#[derive(Clone, Copy)]
pub enum Type<'s> {
    /// Unknown (embedded JSON, unknown fields): objects are granular maps of unknown values,
    /// lists are atomic (upstream's `__untyped_deduced_`).
    Deduced,
    /// A scalar, or anything upstream treats as one leaf.
    Leaf,
    /// A generated struct, by its declared fields.
    Struct(&'static [FieldInfo]),
    /// The value of one generated field.
    Field(&'static FieldInfo),
    /// An item of a generated list field, or an entry of a generated map field.
    Item(&'static FieldInfo),
    /// A node of a custom resource's OpenAPI v3 schema (which has no references).
    Schema(&'s Value),
    /// The root of a custom resource (or an embedded resource): `apiVersion`, `kind`, and
    /// `metadata` as the generated ObjectMeta, the rest from the schema.
    Resource(&'s Value),
}

/// The key fields of a list map, as a schema or the generated facts name them.
#[derive(Clone, Copy)]
pub enum Keys<'s> {
    Schema(&'s [Value]),
    Generated(&'static [&'static str]),
}

impl<'s> Keys<'s> {
    pub fn names(self) -> impl Iterator<Item = &'s str> {
        let (schema, generated): (&[Value], &[&str]) = match self {
            Keys::Schema(names) => (names, &[]),
            Keys::Generated(names) => (&[], names),
        };
        schema.iter().filter_map(Value::as_str).chain(generated.iter().copied())
    }
}

/// How a list's items are identified.
#[derive(Clone, Copy)]
pub enum ListKind<'s> {
    /// By value (`x-kubernetes-list-type: set`, or a `merge` patch strategy without key).
    Set,
    /// By key fields (`map` with `x-kubernetes-list-map-keys`).
    Map(Keys<'s>),
    /// By the one patch merge key.
    MergeKey(&'s str),
}

/// What a value is, given its type.
pub enum Node<'s> {
    /// Atomic: owned, compared and replaced whole.
    Leaf,
    /// A granular map, its children typed by [`Type::child`].
    Map(Type<'s>),
    /// A granular list of items of the second type.
    List(ListKind<'s>, Type<'s>),
}

fn flag(node: &Value, name: &str) -> bool {
    node.get(name) == Some(&Value::Bool(true))
}

fn text<'s>(node: &'s Value, name: &str) -> Option<&'s str> {
    node.get(name).and_then(Value::as_str)
}

/// The generated fields of ObjectMeta, which every resource's `metadata` is.
fn object_meta() -> &'static [FieldInfo] {
    <kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta as TypeInfo>::fields()
}

impl<'s> Type<'s> {
    /// What a value of this type is. A value whose JSON shape does not fit the type is a leaf.
    pub fn node(self, value: &Value) -> Node<'s> {
        let is_map = matches!(value, Value::Object(_) | Value::Null);
        let is_list = matches!(value, Value::Array(_) | Value::Null);
        match self {
            Type::Leaf => Node::Leaf,
            Type::Deduced => match value {
                Value::Object(_) => Node::Map(self),
                _ => Node::Leaf,
            },
            Type::Struct(_) | Type::Resource(_) if is_map => Node::Map(self),
            Type::Struct(_) | Type::Resource(_) => Node::Leaf,
            Type::Field(field) => match field.shape {
                FieldShape::Scalar => Node::Leaf,
                FieldShape::Object => struct_node(field, value),
                FieldShape::Map if field.map_type == Some("atomic") || !value.is_object() => Node::Leaf,
                FieldShape::Map => Node::Map(self),
                FieldShape::List => match generated_list_kind(field) {
                    Some(kind) if is_list => Node::List(kind, Type::Item(field)),
                    _ => Node::Leaf,
                },
            },
            Type::Item(field) => struct_node(field, value),
            Type::Schema(schema) => {
                if flag(schema, "x-kubernetes-embedded-resource") {
                    return if is_map { Node::Map(Type::Resource(schema)) } else { Node::Leaf };
                }
                let is_object_schema = schema.get("properties").is_some()
                    || schema.get("additionalProperties").is_some_and(Value::is_object)
                    || text(schema, "type") == Some("object")
                    || flag(schema, "x-kubernetes-preserve-unknown-fields");
                if is_object_schema && value.is_object() || is_object_schema && value.is_null() && text(schema, "type") != Some("array") {
                    if text(schema, "x-kubernetes-map-type") == Some("atomic") {
                        return Node::Leaf;
                    }
                    if schema.get("properties").is_some() || schema.get("additionalProperties").is_some_and(Value::is_object) {
                        return Node::Map(self);
                    }
                    return Node::Map(Type::Deduced);
                }
                if is_list && let Some(items) = schema.get("items") {
                    return match schema_list_kind(schema) {
                        Some(kind) => Node::List(kind, Type::Schema(items)),
                        None => Node::Leaf,
                    };
                }
                Node::Leaf
            }
        }
    }

    /// The type of the child `key` of a map of this type, and whether it is a declared field
    /// (a struct's) rather than a map entry.
    pub fn child(self, key: &str) -> (Type<'s>, bool) {
        match self {
            Type::Resource(schema) => match key {
                "apiVersion" | "kind" => (Type::Leaf, true),
                "metadata" => (Type::Struct(object_meta()), true),
                _ => schema_child(schema, key),
            },
            Type::Struct(fields) => match fields.iter().find(|f| f.json_name == key) {
                Some(field) => (Type::Field(field), true),
                None => (Type::Deduced, false),
            },
            // A generated map field's entries.
            Type::Field(field) => (Type::Item(field), false),
            Type::Schema(schema) => schema_child(schema, key),
            Type::Item(_) | Type::Deduced | Type::Leaf => (Type::Deduced, false),
        }
    }
}

/// A value of a generated field (or an item of one) that holds a struct: granular unless the
/// struct is atomic (`map_type`, which the generated facts carry over from the struct's
/// definition); a field of embedded JSON (RawExtension) is deduced.
fn struct_node<'s>(field: &'static FieldInfo, value: &Value) -> Node<'s> {
    let is_map = matches!(value, Value::Object(_) | Value::Null);
    match field.elem {
        _ if !is_map => Node::Leaf,
        Some(_) if field.map_type == Some("atomic") && field.shape != FieldShape::Map => Node::Leaf,
        Some(fields) => Node::Map(Type::Struct(fields())),
        None if value.is_object() && field.shape != FieldShape::Scalar => Node::Map(Type::Deduced),
        None => Node::Leaf,
    }
}

/// Upstream's `schemaconv` list relationship: `x-kubernetes-list-type`, else a `merge` patch
/// strategy (keyed by the merge key, or a set), else atomic (`None`).
fn list_kind<'s>(
    list_type: Option<&str>,
    keys: Keys<'s>,
    patch_strategy: Option<&str>,
    merge_key: Option<&'s str>,
) -> Option<ListKind<'s>> {
    match list_type {
        Some("set") => Some(ListKind::Set),
        Some("map") => Some(ListKind::Map(keys)),
        Some(_) => None,
        None => match patch_strategy {
            Some("merge" | "merge,retainKeys") => match merge_key {
                Some(key) => Some(ListKind::MergeKey(key)),
                None => Some(ListKind::Set),
            },
            _ => None,
        },
    }
}

fn generated_list_kind(field: &'static FieldInfo) -> Option<ListKind<'static>> {
    list_kind(field.list_type, Keys::Generated(field.list_map_keys), field.patch_strategy, field.patch_merge_key)
}

fn schema_list_kind(schema: &Value) -> Option<ListKind<'_>> {
    let keys = schema.get("x-kubernetes-list-map-keys").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    list_kind(
        text(schema, "x-kubernetes-list-type"),
        Keys::Schema(keys),
        text(schema, "x-kubernetes-patch-strategy"),
        text(schema, "x-kubernetes-patch-merge-key"),
    )
}

fn schema_child<'s>(schema: &'s Value, key: &str) -> (Type<'s>, bool) {
    if let Some(prop) = schema.get("properties").and_then(|p| p.get(key)) {
        return (Type::Schema(prop), true);
    }
    match schema.get("additionalProperties") {
        Some(additional @ Value::Object(_)) => (Type::Schema(additional), false),
        _ => (Type::Deduced, false),
    }
}

/// The element identifying `item` in a list of `kind`; `None` for an item that cannot be
/// identified (a keyed item missing a key field with no default, a null or non-object item).
pub fn item_element(kind: ListKind<'_>, elem: Type<'_>, item: &Value) -> Option<PathElement> {
    let keyed = |names: &mut dyn Iterator<Item = &str>| -> Option<PathElement> {
        let object = item.as_object()?;
        let mut keys: Vec<(&str, Value)> = Vec::new();
        for name in names {
            match object.get(name) {
                Some(value) => keys.push((name, value.clone())),
                None => keys.push((name, key_default(elem, name)?)),
            }
        }
        Some(PathElement::key(keys.iter().map(|(k, v)| (*k, v)).collect()))
    };
    match kind {
        ListKind::Set => Some(PathElement::value(item)),
        ListKind::Map(names) => keyed(&mut names.names()),
        ListKind::MergeKey(name) => keyed(&mut std::iter::once(name)),
    }
}

/// A key field's default: the schema's `default`, or the generated field's declarative one.
fn key_default(elem: Type<'_>, name: &str) -> Option<Value> {
    match elem {
        Type::Schema(schema) => schema.get("properties").and_then(|p| p.get(name)).and_then(|p| p.get("default")).cloned(),
        Type::Item(field) => {
            let key = field.elem?().iter().find(|f| f.json_name == name)?;
            serde_json::from_str(key.default?).ok()
        }
        _ => None,
    }
}

/// What upstream's typed conversion refuses in an applied configuration (`ObjectToTyped`):
/// fields a schema does not declare (where it keeps no unknown fields), keyed list items
/// missing a key field with no default, and items of a keyed list or set given twice, each as
/// `<path>: <message>`.
pub fn check(value: &Value, ty: Type<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    check_walk(value, ty, &mut String::new(), &mut errors);
    errors
}

fn closed(ty: Type<'_>) -> bool {
    let schema = match ty {
        Type::Struct(_) => return true,
        Type::Schema(schema) => schema,
        _ => return false,
    };
    schema.get("properties").is_some()
        && !schema.get("additionalProperties").is_some_and(|a| a.is_object() || a == &Value::Bool(true))
        && !flag(schema, "x-kubernetes-preserve-unknown-fields")
}

fn check_walk(value: &Value, ty: Type<'_>, path: &mut String, errors: &mut Vec<String>) {
    match ty.node(value) {
        Node::Leaf => {}
        Node::Map(map) => {
            let Value::Object(fields) = value else { return };
            for (key, child) in fields {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                let (child_type, declared) = map.child(key);
                if !declared && closed(map) {
                    errors.push(format!("{path}: field not declared in schema"));
                } else {
                    check_walk(child, child_type, path, errors);
                }
                path.truncate(len);
            }
        }
        Node::List(kind, elem) => {
            let Value::Array(items) = value else { return };
            // An applied configuration names each item once (upstream validates it without
            // `AllowDuplicates`; live objects may have duplicates).
            let mut seen = HashSet::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item_element(kind, elem, item) {
                    Some(pe) => {
                        if !seen.insert(pe.clone()) {
                            errors.push(format!("{path}: duplicate entries for key {pe}"));
                        }
                        let len = path.len();
                        path.push_str(&pe.to_string());
                        check_walk(item, elem, path, errors);
                        path.truncate(len);
                    }
                    None => {
                        let missing = match kind {
                            ListKind::Map(names) => names.names().find(|n| item.get(*n).is_none()),
                            ListKind::MergeKey(name) => Some(name).filter(|n| item.get(*n).is_none()),
                            ListKind::Set => None,
                        };
                        let message = match (missing, item) {
                            (Some(name), Value::Object(_)) => {
                                format!(
                                    "associative list with keys has an element that omits key field {name:?} (and doesn't have default value)"
                                )
                            }
                            (_, Value::Null) => "associative list with keys may not have a null element".to_owned(),
                            _ => "associative list with keys may not have non-map elements".to_owned(),
                        };
                        errors.push(format!("{path}: element {i}: {message}"));
                    }
                }
            }
        }
    }
}

/// Upstream's `ToFieldSet`: every leaf, every list item and every map entry that is not a
/// declared field (and declared fields that are null or empty objects).
pub fn to_field_set(value: &Value, ty: Type<'_>) -> Set {
    let mut set = Set::new();
    let mut path = Vec::new();
    field_set_walk(value, ty, &mut path, &mut set);
    set
}

fn field_set_walk(value: &Value, ty: Type<'_>, path: &mut Vec<PathElement>, set: &mut Set) {
    match ty.node(value) {
        Node::Leaf => set.insert(path),
        Node::Map(map) => {
            let Value::Object(fields) = value else { return };
            for (key, child) in fields {
                let (child_type, declared) = map.child(key);
                path.push(PathElement::Field(key.clone()));
                field_set_walk(child, child_type, path, set);
                if child.is_null() || child.as_object().is_some_and(Map::is_empty) || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Node::List(kind, elem) => {
            let Value::Array(items) = value else { return };
            for item in items {
                let Some(pe) = item_element(kind, elem, item) else { continue };
                path.push(pe);
                field_set_walk(item, elem, path, set);
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// What changed between two objects (upstream's `Comparison`).
#[derive(Default, Debug)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

impl Comparison {
    /// All three without the paths `reset` has and everything under them.
    pub fn without(self, reset: &Set) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(reset),
            modified: self.modified.recursive_difference(reset),
            removed: self.removed.recursive_difference(reset),
        }
    }
}

/// Upstream's `Compare`: leaves added, modified or removed, and maps and list items added or
/// removed as a whole; of the objects without their `metadata.managedFields`, as upstream's
/// field manager compares them.
pub fn compare(lhs: &Value, rhs: &Value, ty: Type<'_>) -> Comparison {
    let mut out = Comparison::default();
    // Not checked for equality first, unlike the values below: that would compare the
    // managed fields, which are left out, and are most of an object's metadata.
    compare_walk(Some(lhs), Some(rhs), ty, &mut Vec::new(), &mut out);
    // A `metadata` added or removed whole brings its managed fields along.
    static MANAGED_FIELDS: std::sync::LazyLock<Set> = std::sync::LazyLock::new(|| {
        let mut set = Set::new();
        set.insert(&[PathElement::Field("metadata".into()), PathElement::Field("managedFields".into())]);
        set
    });
    out.without(&MANAGED_FIELDS)
}

/// Whether the entry `key` of the map at `path` is the object's `metadata.managedFields`,
/// which field management leaves out of its comparisons: upstream compares the objects with
/// their managed fields taken out, and no entry may hold them.
fn is_managed_fields(path: &[PathElement], key: &str) -> bool {
    key == "managedFields" && matches!(path, [PathElement::Field(metadata)] if metadata == "metadata")
}

/// Whether the entry `key` of the map at `path` is the object's `metadata`, which holds its
/// managed fields: compared field by field, so that they are not.
fn is_object_metadata(path: &[PathElement], key: &str) -> bool {
    path.is_empty() && key == "metadata"
}

fn is_empty_collection(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// [`compare`] of two values, either possibly missing. The caller checks values for equality
/// first where it can (equal values differ nowhere, and most of an update's object is
/// unchanged, which checking is much cheaper than walking it); equal values find nothing.
fn compare_walk(lhs: Option<&Value>, rhs: Option<&Value>, ty: Type<'_>, path: &mut Vec<PathElement>, out: &mut Comparison) {
    // A value on the right only is added whole: it and every value in it. Most of a create's
    // object is, and its paths are made from the leaves up instead of each from the root.
    if let (None, Some(added)) = (lhs, rhs) {
        out.added.insert(path);
        out.added.attach_at(path, paths_below(added, ty));
        return;
    }
    let shape = rhs.or(lhs).unwrap_or(&Value::Null);
    let node = ty.node(shape);
    // Empty (or null) on both sides is a leaf, which keeps the difference between them.
    let leaf = match node {
        Node::Leaf => true,
        Node::Map(_) | Node::List(..) => is_empty_collection(lhs) && is_empty_collection(rhs),
    };
    // Different shapes on each side (a list became a scalar): a leaf too.
    let same_shape = match (lhs, rhs) {
        (Some(l), Some(r)) => std::mem::discriminant(l) == std::mem::discriminant(r) || l.is_null() || r.is_null(),
        _ => true,
    };
    if leaf || !same_shape {
        match (lhs, rhs) {
            (None, Some(_)) => out.added.insert(path),
            (Some(_), None) => out.removed.insert(path),
            (Some(l), Some(r)) if l != r => out.modified.insert(path),
            _ => {}
        }
        return;
    }
    match node {
        Node::Leaf => {}
        Node::Map(map) => {
            let empty = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
            for (key, lv, rv) in entries_of_both(l, r) {
                if is_managed_fields(path, key) || lv == rv && !is_object_metadata(path, key) {
                    continue;
                }
                path.push(PathElement::Field(key.clone()));
                compare_walk(lv, rv, map.child(key).0, path, out);
                path.pop();
            }
        }
        Node::List(kind, elem) => {
            let l = index_items(kind, elem, lhs);
            let r = index_items(kind, elem, rhs);
            let r_by: HashMap<&PathElement, &Value> = r.iter().map(|(pe, v)| (pe, *v)).collect();
            let l_by: HashMap<&PathElement, &Value> = l.iter().map(|(pe, v)| (pe, *v)).collect();
            for (pe, lv) in &l {
                let rv = r_by.get(pe).copied();
                if rv == Some(*lv) {
                    continue;
                }
                path.push(pe.clone());
                compare_walk(Some(lv), rv, elem, path, out);
                path.pop();
            }
            for (pe, rv) in &r {
                if l_by.contains_key(pe) {
                    continue;
                }
                path.push(pe.clone());
                compare_walk(None, Some(rv), elem, path, out);
                path.pop();
            }
        }
    }
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
}

/// The entries of two JSON objects by key, each key once with its value on either side: the
/// two key orders merged (a JSON object's keys are sorted), with no look-up per key.
fn entries_of_both<'v>(
    l: &'v Map<String, Value>,
    r: &'v Map<String, Value>,
) -> impl Iterator<Item = (&'v String, Option<&'v Value>, Option<&'v Value>)> {
    let (mut l, mut r) = (l.iter().peekable(), r.iter().peekable());
    std::iter::from_fn(move || {
        let order = match (l.peek(), r.peek()) {
            (Some((lk, _)), Some((rk, _))) => lk.cmp(rk),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => return None,
        };
        Some(match order {
            std::cmp::Ordering::Less => l.next().map(|(key, lv)| (key, Some(lv), None))?,
            std::cmp::Ordering::Greater => r.next().map(|(key, rv)| (key, None, Some(rv)))?,
            std::cmp::Ordering::Equal => {
                let (key, lv) = l.next()?;
                (key, Some(lv), r.next().map(|(_, rv)| rv))
            }
        })
    })
}

/// The paths of every value inside `value` (of `ty`), relative to it: what [`compare_walk`]
/// finds added below a value the left side does not have.
fn paths_below(value: &Value, ty: Type<'_>) -> Set {
    let mut set = Set::new();
    if is_empty_collection(Some(value)) {
        return set;
    }
    let mut add = |pe: PathElement, below: Set| {
        set.attach_child(&pe, below);
        set.add_member(pe);
    };
    match ty.node(value) {
        Node::Leaf => {}
        Node::Map(map) => {
            let Value::Object(fields) = value else { return set };
            for (key, child) in fields {
                add(PathElement::Field(key.clone()), paths_below(child, map.child(key).0));
            }
        }
        Node::List(kind, elem) => {
            for (pe, item) in index_items(kind, elem, Some(value)) {
                add(pe, paths_below(item, elem));
            }
        }
    }
    set
}

/// The items of a list by their path elements, first occurrence of each.
fn index_items<'v>(kind: ListKind<'_>, elem: Type<'_>, list: Option<&'v Value>) -> Vec<(PathElement, &'v Value)> {
    let Some(Value::Array(items)) = list else { return Vec::new() };
    let mut out: Vec<(PathElement, &Value)> = Vec::with_capacity(items.len());
    let mut seen = HashSet::with_capacity(items.len());
    for item in items {
        if let Some(pe) = item_element(kind, elem, item)
            && seen.insert(pe.clone())
        {
            out.push((pe, item));
        }
    }
    out
}

/// Upstream's `Merge` with its keep-right-hand-side rule: `config` merged into `live`: leaves
/// and atomic values from `config`, maps key by key, granular lists item by item (in upstream's
/// order: the configuration's items in its order, the live object's others kept where they
/// were relative to them).
pub fn merge(live: &Value, config: &Value, ty: Type<'_>) -> Value {
    merge_walk(Some(live), Some(config), ty).unwrap_or(Value::Null)
}

fn merge_walk(lhs: Option<&Value>, rhs: Option<&Value>, ty: Type<'_>) -> Option<Value> {
    let (Some(l), Some(r)) = (lhs, rhs) else { return rhs.or(lhs).cloned() };
    let node = ty.node(r);
    let empty = is_empty_collection(lhs) && is_empty_collection(rhs);
    if matches!(node, Node::Leaf) || empty || std::mem::discriminant(l) != std::mem::discriminant(r) {
        return Some(r.clone());
    }
    match node {
        Node::Leaf => Some(r.clone()),
        Node::Map(map) => {
            let (Value::Object(lm), Value::Object(rm)) = (l, r) else { return Some(r.clone()) };
            let mut out = lm.clone();
            for (key, rv) in rm {
                let merged = merge_walk(lm.get(key), Some(rv), map.child(key).0).unwrap_or(Value::Null);
                out.insert(key.clone(), merged);
            }
            Some(Value::Object(out))
        }
        Node::List(kind, elem) => Some(Value::Array(merge_list(kind, elem, l, r))),
    }
}

fn merge_list(kind: ListKind<'_>, elem: Type<'_>, lhs: &Value, rhs: &Value) -> Vec<Value> {
    let l = index_items(kind, elem, Some(lhs));
    let r = index_items(kind, elem, Some(rhs));
    let r_by: HashMap<&PathElement, &Value> = r.iter().map(|(pe, v)| (pe, *v)).collect();
    let l_by: HashMap<&PathElement, &Value> = l.iter().map(|(pe, v)| (pe, *v)).collect();
    let in_r = |pe: &PathElement| r_by.get(pe).copied();
    let in_l = |pe: &PathElement| l_by.get(pe).copied();
    // The items both sides have, in the configuration's order.
    let mut shared = r.iter().filter(|(pe, _)| in_l(pe).is_some()).map(|(pe, _)| pe.clone()).collect::<std::collections::VecDeque<_>>();
    let mut next_shared = shared.pop_front();
    let mut merged = HashSet::new();
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let (mut li, mut ri) = (0, 0);
    while li < l.len() || ri < r.len() {
        if li < l.len() && ri < r.len() {
            let pe = &l[li].0;
            if *pe == r[ri].0 {
                merged.insert(pe.clone());
                out.extend(merge_walk(Some(l[li].1), Some(r[ri].1), elem));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if in_r(pe).is_some() && next_shared.as_ref().is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < l.len() {
            let pe = &l[li].0;
            if in_r(pe).is_none() {
                out.push(l[li].1.clone());
                li += 1;
                continue;
            } else if merged.contains(pe) {
                li += 1;
            }
        }
        if ri < r.len() {
            let pe = &r[ri].0;
            merged.insert(pe.clone());
            out.extend(merge_walk(in_l(pe), Some(r[ri].1), elem));
            ri += 1;
            if next_shared.as_ref() == Some(pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// Upstream's `EnsureNamedFieldsAreMembers`: the set with every declared field that has
/// children in it also a member.
pub fn with_named_fields(set: &Set, ty: Type<'_>, sample: &Value) -> Set {
    let mut out = Set::new();
    for pe in set.members() {
        out.add_member(pe.clone());
    }
    let node = ty.node(sample);
    // A list's items by element, indexed once for all the children.
    let items: HashMap<PathElement, &Value> = match node {
        Node::List(kind, elem) if set.children().next().is_some() => index_items(kind, elem, Some(sample)).into_iter().collect(),
        _ => HashMap::new(),
    };
    for (pe, child) in set.children() {
        let (child_type, declared, child_sample) = match (pe, &node) {
            (PathElement::Field(name), Node::Map(map)) => {
                let (t, declared) = map.child(name);
                (t, declared, sample.get(name).unwrap_or(&Value::Null))
            }
            (_, Node::List(_, elem)) => (*elem, false, items.get(pe).copied().unwrap_or(&Value::Null)),
            _ => (Type::Deduced, false, &Value::Null),
        };
        if declared {
            out.add_member(pe.clone());
        }
        *out.child_mut(pe.clone()) = with_named_fields(child, child_type, child_sample);
    }
    out
}

/// Upstream's `RemoveItems`: `value` without the fields and items `set` has as members (and
/// what is under them).
pub fn remove_items(value: &Value, set: &Set, ty: Type<'_>) -> Value {
    match (ty.node(value), value) {
        (Node::Map(map), Value::Object(fields)) => {
            let mut out = Map::new();
            for (key, child) in fields {
                let pe = PathElement::Field(key.clone());
                if set.is_member(&pe) {
                    continue;
                }
                let child = match set.child(&pe) {
                    Some(sub) => remove_items(child, sub, map.child(key).0),
                    None => child.clone(),
                };
                out.insert(key.clone(), child);
            }
            Value::Object(out)
        }
        (Node::List(kind, elem), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let pe = item_element(kind, elem, item);
                match &pe {
                    Some(pe) if set.is_member(pe) => continue,
                    Some(pe) => match set.child(pe) {
                        Some(sub) => out.push(remove_items(item, sub, elem)),
                        None => out.push(item.clone()),
                    },
                    None => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Type<'static> {
        super::super::schemas::kind_type(&crate::registry::objects::Kind {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        })
    }

    /// ToFieldSet: leaves, keyed list items (`k:`, a defaulted key field included), set items
    /// (`v:`), map entries; a declared struct field is not itself a member unless empty; atomic
    /// lists, maps (`nodeSelector`) and structs (LabelSelector) are one leaf.
    #[test]
    fn field_sets_follow_the_list_and_map_types() {
        let applied = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "a"}, "finalizers": ["x"]},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {"spec": {
                    "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}], "args": ["a", "b"]}],
                    "nodeSelector": {"k": "v"},
                }},
            },
        });
        let set = to_field_set(&applied, deployment());
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:apiVersion": {}, "f:kind": {},
                "f:metadata": {"f:name": {}, "f:labels": {"f:app": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {"f:spec": {
                        "f:containers": {"k:{\"name\":\"c\"}": {
                            ".": {}, "f:name": {}, "f:image": {}, "f:args": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
                        }},
                        // `x-kubernetes-map-type: atomic` on the field itself.
                        "f:nodeSelector": {},
                    }},
                },
            })
        );
    }

    /// Compare: a new map is added as a whole (`.`) with its leaves; a null list on the left
    /// is not (upstream's zero objects carry `null` for lists without omitempty).
    #[test]
    fn comparisons_mark_new_maps_and_items() {
        let old = json!({"metadata": {}, "spec": {"template": {"spec": {"containers": null}}}});
        let new =
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let c = compare(&old, &new, deployment());
        assert_eq!(
            c.added.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}}}}}},
            })
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
        let c = compare(&new, &json!({"metadata": {"labels": {"a": "c"}}}), deployment());
        assert_eq!(c.modified.to_fields_v1(), json!({"f:metadata": {"f:labels": {"f:a": {}}}}));
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:spec": {".": {}, "f:template": {".": {}, "f:spec": {".": {}, "f:containers": {
                ".": {}, "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}})
        );
    }

    #[test]
    fn both_objects_entries_come_once_each_in_key_order() {
        // The merge relies on a JSON object's keys being sorted (serde_json without
        // `preserve_order`).
        let l = json!({"b": 1, "a": 2, "d": 3});
        let r = json!({"c": 4, "b": 5, "e": 6, "a": 2});
        let (l, r) = (l.as_object().unwrap(), r.as_object().unwrap());
        assert!(l.keys().is_sorted() && r.keys().is_sorted());
        let merged: Vec<_> = entries_of_both(l, r).map(|(k, lv, rv)| (k.as_str(), lv.cloned(), rv.cloned())).collect();
        assert_eq!(
            merged,
            [
                ("a", Some(json!(2)), Some(json!(2))),
                ("b", Some(json!(1)), Some(json!(5))),
                ("c", None, Some(json!(4))),
                ("d", Some(json!(3)), None),
                ("e", None, Some(json!(6))),
            ]
        );
        assert_eq!(entries_of_both(&Map::new(), r).count(), 4);
    }

    /// A value the left side lacks is added with every value in it, itself included: empty
    /// maps and nulls as leaves, atomic lists and maps whole, a keyed list's items once each
    /// (the first of a repeated key) and not at all when they cannot be keyed.
    #[test]
    fn an_added_value_adds_every_path_in_it() {
        let new = json!({"spec": {
            "paused": null,
            "strategy": {},
            "template": {"spec": {
                "nodeSelector": {"k": "v"},
                "containers": [
                    {"name": "a", "image": "1", "args": ["x", "y"], "ports": [{"containerPort": 80}, {"containerPort": 81, "protocol": "UDP"}]},
                    {"name": "a", "image": "2"},
                    {"image": "no name"},
                    {"name": "b", "env": [{"name": "E", "value": "v"}]},
                ],
            }},
        }});
        let c = compare(&json!({}), &new, deployment());
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:spec": {
                ".": {}, "f:paused": {}, "f:strategy": {},
                "f:template": {".": {}, "f:spec": {
                    ".": {}, "f:nodeSelector": {},
                    "f:containers": {
                        ".": {},
                        "k:{\"name\":\"a\"}": {
                            ".": {}, "f:name": {}, "f:image": {}, "f:args": {},
                            "f:ports": {
                                ".": {},
                                "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}},
                                "k:{\"containerPort\":81,\"protocol\":\"UDP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}},
                            },
                        },
                        "k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:env": {".": {}, "k:{\"name\":\"E\"}": {".": {}, "f:name": {}, "f:value": {}}}},
                    },
                }},
            }})
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
        // The same value added below an existing one lands at its own path.
        let c =
            compare(&json!({"spec": {"replicas": 1}}), &json!({"spec": {"replicas": 1, "strategy": {"type": "Recreate"}}}), deployment());
        assert_eq!(c.added.to_fields_v1(), json!({"f:spec": {"f:strategy": {".": {}, "f:type": {}}}}));
    }

    /// The object's managed fields are no part of a comparison, whole or entry by entry, as
    /// upstream compares objects with them taken out; a template's metadata is compared as any.
    #[test]
    fn the_objects_managed_fields_are_left_out() {
        let entries = |manager: &str| json!([{"manager": manager, "fieldsV1": {"f:a": {}}}]);
        let old = json!({"metadata": {"name": "d", "managedFields": entries("a")}, "spec": {"template": {"metadata": {}}}});
        let new = json!({"metadata": {"name": "d", "managedFields": entries("b")}, "spec": {"template": {"metadata": {"managedFields": entries("b")}}}});
        let c = compare(&old, &new, deployment());
        assert_eq!(c.added.to_fields_v1(), json!({"f:spec": {"f:template": {"f:metadata": {"f:managedFields": {}}}}}));
        assert!(c.modified.is_empty() && c.removed.is_empty());
        let c = compare(&json!({}), &new, deployment());
        assert!(!c.added.has(&[PathElement::Field("metadata".into()), PathElement::Field("managedFields".into())]));
        assert!(c.added.has(&[PathElement::Field("metadata".into()), PathElement::Field("name".into())]));
    }

    /// An applied configuration may not name a keyed item or a set's value twice (upstream's
    /// `duplicate entries for key`, with the list's path).
    #[test]
    fn duplicate_items_are_refused() {
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["f", "f"]},
        "spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "i", "ports": [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]},
            {"name": "a", "image": "j"},
        ]}}}});
        assert_eq!(
            check(&config, deployment()),
            [
                ".metadata.finalizers: duplicate entries for key [=\"f\"]",
                ".spec.template.spec.containers[name=\"a\"].ports: duplicate entries for key [containerPort=80,protocol=\"TCP\"]",
                ".spec.template.spec.containers: duplicate entries for key [name=\"a\"]",
            ]
        );
    }

    /// Merge: list maps merge by key in the configuration's order; atomic values are replaced.
    #[test]
    fn merges_keep_the_configuration() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "1", "args": ["x"]}, {"name": "b", "image": "2"}]}}}});
        let config = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "3"}, {"name": "a", "args": ["y"]}]}}}});
        let merged = merge(&live, &config, deployment());
        assert_eq!(
            merged["spec"]["template"]["spec"]["containers"],
            json!([{"name": "c", "image": "3"}, {"name": "a", "image": "1", "args": ["y"]}, {"name": "b", "image": "2"}])
        );
        let mut remove = Set::new();
        remove.insert(&[PathElement::Field("spec".into()), PathElement::Field("template".into())]);
        assert_eq!(remove_items(&merged, &remove, deployment()), json!({"spec": {}}));
    }
}
