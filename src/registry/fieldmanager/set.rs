//! Field sets: structured-merge-diff's `fieldpath.Set` and its `FieldsV1` encoding.
//!
//! A set is a tree: at each node, the path elements that are members (the path ending there is
//! in the set) and the children (paths going on through that element). Path elements are a
//! field name (`f:<name>`), a list item's key fields (`k:{"name":"c"}`, fields sorted by name),
//! a set item's value (`v:<json>`) or an index (`i:<n>`, only in atomic lists upstream never
//! descends into). Encoded as `FieldsV1`, every element is an object key; a member with
//! children also carries `".": {}`. I/O-free.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

/// A key field's value or a set item, compared as structured-merge-diff's `value.Compare`
/// compares: numbers by value (an integer and a float too, so `80` and `80.0` are the same
/// key), then strings, booleans, lists, maps and null, in that order; lists and maps
/// lexically.
#[derive(Clone, Debug)]
pub struct Scalar(pub Value);

fn rank(value: &Value) -> u8 {
    match value {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    let int = |n: &serde_json::Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.as_f64().unwrap_or_default(), b.as_f64().unwrap_or_default());
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).map(|(p, q)| compare_values(p, q)).find(|o| o.is_ne()).unwrap_or_else(|| x.len().cmp(&y.len()))
        }
        // serde_json's maps iterate their keys sorted, as upstream compares maps.
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .zip(y)
            .map(|((k, p), (l, q))| k.cmp(l).then_with(|| compare_values(p, q)))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A number as upstream writes it: a float with no fraction as an integer (`80.0` is `80`).
fn canonical(value: &Value) -> Value {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e18 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), canonical(v))).collect()),
        _ => value.clone(),
    }
}

impl Scalar {
    fn new(value: &Value) -> Scalar {
        Scalar(canonical(value))
    }

    /// The value's JSON, as conflicts write it.
    pub fn json(&self) -> String {
        self.0.to_string()
    }
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        compare_values(&self.0, &other.0).is_eq()
    }
}

impl Eq for Scalar {}

impl PartialOrd for Scalar {
    fn partial_cmp(&self, other: &Scalar) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scalar {
    fn cmp(&self, other: &Scalar) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

/// Consistent with equality: numbers hash by their value as a float.
fn hash_value<H: Hasher>(value: &Value, state: &mut H) {
    rank(value).hash(state);
    match value {
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or_default();
            (if f == 0.0 { 0.0f64 } else { f }).to_bits().hash(state);
        }
        Value::String(s) => s.hash(state),
        Value::Bool(b) => b.hash(state),
        Value::Array(items) => items.iter().for_each(|v| hash_value(v, state)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            k.hash(state);
            hash_value(v, state);
        }),
        Value::Null => {}
    }
}

impl Hash for Scalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

/// One step of a path: a field, a keyed list item (its key fields sorted by name), a set item
/// or an index. Ordered as upstream's `PathElement.Compare`: fields, then keys, values and
/// indexes; keys field by field (name, then value), values by [`Scalar`]'s order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    Field(String),
    Key(Vec<(String, Scalar)>),
    Value(Scalar),
    Index(usize),
}

impl PathElement {
    /// The element of a list item keyed by `keys` (name and value, in any order).
    pub fn key(keys: Vec<(&str, &Value)>) -> PathElement {
        let mut fields: Vec<(String, Scalar)> = keys.into_iter().map(|(name, value)| (name.to_owned(), Scalar::new(value))).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    pub fn value(value: &Value) -> PathElement {
        PathElement::Value(Scalar::new(value))
    }

    /// The `FieldsV1` object key of this element.
    pub fn encode(&self) -> String {
        let mut text = Vec::new();
        self.write_encoded(&mut text);
        // Every piece written is UTF-8.
        String::from_utf8(text).unwrap_or_default()
    }

    /// [`PathElement::encode`] written at the end of `out`.
    fn write_encoded(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        // Writing JSON into a `Vec` cannot fail.
        match self {
            PathElement::Field(name) => {
                out.extend_from_slice(b"f:");
                out.extend_from_slice(name.as_bytes());
            }
            PathElement::Key(fields) => {
                out.extend_from_slice(b"k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *out, name.as_str());
                    out.push(b':');
                    let _ = serde_json::to_writer(&mut *out, &value.0);
                }
                out.push(b'}');
            }
            PathElement::Value(value) => {
                out.extend_from_slice(b"v:");
                let _ = serde_json::to_writer(&mut *out, &value.0);
            }
            PathElement::Index(i) => {
                let _ = write!(out, "i:{i}");
            }
        }
    }

    /// The element a `FieldsV1` object key names; `None` for one upstream does not know
    /// (skipped, as upstream drops them) or one that is not valid.
    pub fn decode(key: &str) -> Option<PathElement> {
        let (kind, rest) = key.split_at_checked(2)?;
        match kind {
            "f:" => Some(PathElement::Field(rest.to_owned())),
            "k:" => {
                let fields: Map<String, Value> = serde_json::from_str(rest).ok()?;
                Some(PathElement::key(fields.iter().map(|(k, v)| (k.as_str(), v)).collect()))
            }
            "v:" => serde_json::from_str::<Value>(rest).ok().map(|v| PathElement::value(&v)),
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

/// Upstream's `PathElement.String()`, as conflicts print paths: `.name`, `[k=v,k2=v2]`,
/// `[=value]`, `[3]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", v.json())).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", value.json()),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

pub type Path = Vec<PathElement>;

/// Writes a path as upstream's `Path.String()`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            // The element is cloned only for a new child: most paths go through ones already there.
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => self.children.entry(first.clone()).or_default().insert(rest),
            },
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    pub fn is_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The paths going on through `pe`, without it (upstream's `WithPrefix`).
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub fn add_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    pub fn child_mut(&mut self, pe: PathElement) -> &mut Set {
        self.children.entry(pe).or_default()
    }

    /// Adds the paths of `below` under `path` (nothing when it is empty).
    pub fn attach_at(&mut self, path: &[PathElement], below: Set) {
        match path {
            [] => self.union_with_owned(below),
            [first, rest @ ..] if !below.is_empty() => match self.children.get_mut(first) {
                Some(child) => child.attach_at(rest, below),
                None => self.children.entry(first.clone()).or_default().attach_at(rest, below),
            },
            [_, ..] => {}
        }
    }

    /// Adds the paths of `child` under `pe` (nothing when it is empty).
    pub fn attach_child(&mut self, pe: &PathElement, child: Set) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(pe) {
            Some(node) => node.union_with_owned(child),
            None => {
                self.children.insert(pe.clone(), child);
            }
        }
    }

    /// [`Set::union_with`] of a set given away: taken whole when this one is empty.
    fn union_with_owned(&mut self, other: Set) {
        if self.members.is_empty() && self.children.is_empty() {
            *self = other;
        } else {
            self.union_with(&other);
        }
    }

    // The operations below take the set by value and keep its nodes where they stay: a
    // create's field set goes through several of them, and copying every subtree each time
    // was most of what recording its `managedFields` cost.

    pub fn union(mut self, other: &Set) -> Set {
        self.union_with(other);
        self
    }

    pub fn union_with(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            self.children.entry(pe.clone()).or_default().union_with(child);
        }
    }

    pub fn difference(mut self, other: &Set) -> Set {
        self.members.retain(|pe| !other.members.contains(pe));
        self.children.retain(|pe, child| {
            if let Some(other) = other.children.get(pe) {
                *child = std::mem::take(child).difference(other);
            }
            !child.is_empty()
        });
        self
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let child = child.intersection(o);
                if !child.is_empty() {
                    children.insert(pe.clone(), child);
                }
            }
        }
        Set { members, children }
    }

    /// This set without every path `other` has, and without everything under them (upstream's
    /// `RecursiveDifference`).
    pub fn recursive_difference(mut self, other: &Set) -> Set {
        self.members.retain(|pe| !other.members.contains(pe));
        self.children.retain(|pe, child| {
            if other.members.contains(pe) {
                return false;
            }
            if let Some(other) = other.children.get(pe) {
                *child = std::mem::take(child).recursive_difference(other);
            }
            !child.is_empty()
        });
        self
    }

    /// Every member path, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        // Upstream's `Iterate` visits members before children at each level.
        for pe in &self.members {
            prefix.push(pe.clone());
            out.push(prefix.clone());
            prefix.pop();
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of the set as a value. A `Value`'s object keys are sorted bytewise,
    /// not in the set's order: what a custom resource's `managedFields` show (upstream keeps
    /// them in an unstructured map, which Go writes sorted), while a built-in kind's are the
    /// bytes of [`Set::to_fields_v1_bytes`].
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.contents(false))
    }

    /// The `FieldsV1` text of the set as upstream's `Set.ToJSON` writes it: at each level `.`
    /// first, then members and children merged in path element order (fields by name, then
    /// keyed items, set values, indexes; key values and set values compared typed, so
    /// `k:{"port":9}` comes before `k:{"port":10}`), which is not the bytewise order a
    /// `serde_json::Map` would give.
    pub fn to_fields_v1_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.push(b'{');
        self.write_contents(false, &mut out);
        out.push(b'}');
        out
    }

    /// Upstream's `emitContentsV1`, with [`Set::contents`]'s reading of empty children (a
    /// child with nothing in it is written only when it is also a member).
    fn write_contents(&self, include_self: bool, out: &mut Vec<u8>) {
        let mut first = true;
        // Where an element other than a plain field is encoded before it is quoted.
        let mut encoded = Vec::new();
        // An element's key (`None`: the set's own, `.`).
        let mut key = |out: &mut Vec<u8>, pe: Option<&PathElement>| {
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            match pe {
                None => out.extend_from_slice(b"\".\""),
                // A field name JSON writes as it is (most are): no string made for it.
                Some(PathElement::Field(name)) if !name.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') => {
                    out.extend_from_slice(b"\"f:");
                    out.extend_from_slice(name.as_bytes());
                    out.push(b'"');
                }
                // Writing a `str` into a `Vec` cannot fail, and every piece encoded is UTF-8.
                Some(pe) => {
                    encoded.clear();
                    pe.write_encoded(&mut encoded);
                    let _ = serde_json::to_writer(&mut *out, std::str::from_utf8(&encoded).unwrap_or_default());
                }
            }
            out.push(b':');
        };
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            key(out, None);
            out.extend_from_slice(b"{}");
        }
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().filter(|(pe, child)| !child.is_empty() || self.members.contains(*pe)).peekable();
        loop {
            let order = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(m), Some((c, _))) => (*m).cmp(c),
            };
            // A member alone is `{}`; a child holds its contents, with `.` when it is a member.
            let (pe, child) = match order {
                Ordering::Less => match members.next() {
                    Some(m) => (m, None),
                    None => break,
                },
                Ordering::Greater => match children.next() {
                    Some((c, child)) => (c, Some((child, false))),
                    None => break,
                },
                Ordering::Equal => {
                    members.next();
                    match children.next() {
                        Some((c, child)) => (c, Some((child, true))),
                        None => break,
                    }
                }
            };
            key(out, Some(pe));
            out.push(b'{');
            if let Some((child, is_member)) = child {
                child.write_contents(is_member, out);
            }
            out.push(b'}');
        }
    }

    fn contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for pe in &self.members {
            if !self.children.contains_key(pe) {
                out.insert(pe.encode(), Value::Object(Map::new()));
            }
        }
        for (pe, child) in &self.children {
            if child.is_empty() && !self.members.contains(pe) {
                continue;
            }
            out.insert(pe.encode(), Value::Object(child.contents(self.members.contains(pe))));
        }
        out
    }

    /// The set a `FieldsV1` JSON value encodes (upstream's `FieldsToSet`); `None` when it is
    /// not an object of objects.
    pub fn from_fields_v1(fields: &Value) -> Option<Set> {
        let (set, _) = read(fields.as_object()?)?;
        Some(set.unwrap_or_default())
    }
}

/// A `FieldsV1` value rewritten in upstream's order ([`Set::to_fields_v1_bytes`]); `None` when
/// it is not a set, which is then left as it is.
///
/// Every write re-orders the sets of its object's entries, and objects written alike (the pods
/// of one template, ConfigMaps of one shape) carry the same sets: each thread remembers the
/// last [`ORDERED_REMEMBERED`] distinct inputs (of at most [`ORDERED_REMEMBERED_BYTES`]) with
/// their answers, so a repeated set costs a comparison instead of a parse and a write.
pub fn ordered_fields_v1(fields: &[u8]) -> Option<Vec<u8>> {
    /// Inputs and their answers, the most recently used first.
    type Remembered = std::collections::VecDeque<(Vec<u8>, Option<Vec<u8>>)>;
    thread_local! {
        static REMEMBERED: std::cell::RefCell<Remembered> = const { std::cell::RefCell::new(Remembered::new()) };
    }
    let order = || -> Option<Vec<u8>> {
        let value: Value = serde_json::from_slice(fields).ok()?;
        Some(Set::from_fields_v1(&value)?.to_fields_v1_bytes())
    };
    if fields.len() > ORDERED_REMEMBERED_BYTES {
        return order();
    }
    REMEMBERED.with_borrow_mut(|remembered| {
        if let Some(i) = remembered.iter().position(|(input, _)| input.as_slice() == fields) {
            // Most recently used first.
            let hit = remembered.remove(i)?;
            let answer = hit.1.clone();
            remembered.push_front(hit);
            return answer;
        }
        let answer = order();
        remembered.truncate(ORDERED_REMEMBERED - 1);
        remembered.push_front((fields.to_vec(), answer.clone()));
        answer
    })
}

/// How many distinct `FieldsV1` inputs each thread remembers ([`ordered_fields_v1`]).
const ORDERED_REMEMBERED: usize = 16;

/// The largest `FieldsV1` input remembered: larger ones are ordered every time.
const ORDERED_REMEMBERED_BYTES: usize = 4 * 1024;

/// Reads one level of `FieldsV1`: the children set (if any) and whether the node is a member.
fn read(object: &Map<String, Value>) -> Option<(Option<Set>, bool)> {
    let mut children: Option<Set> = None;
    let mut is_member = false;
    for (key, value) in object {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::decode(key) else { continue };
        let (grandchildren, child_is_member) = read(value.as_object()?)?;
        if child_is_member {
            children.get_or_insert_with(Set::default).members.insert(pe.clone());
        }
        if let Some(grandchildren) = grandchildren {
            children.get_or_insert_with(Set::default).children.insert(pe, grandchildren);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Some((children, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_that_have_children() {
        let mut set = Set::new();
        set.insert(&[f("metadata"), f("labels")]);
        set.insert(&[f("metadata"), f("labels"), f("app")]);
        let item = PathElement::key(vec![("name", &json!("nginx"))]);
        set.insert(&[f("spec"), f("containers"), item.clone()]);
        set.insert(&[f("spec"), f("containers"), item.clone(), f("image")]);
        set.insert(&[f("spec"), f("finalizers"), PathElement::value(&json!("a"))]);
        let port = PathElement::key(vec![("protocol", &json!("TCP")), ("containerPort", &json!(80))]);
        set.insert(&[f("spec"), f("ports"), port]);
        let want = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}}},
                "f:finalizers": {"v:\"a\"": {}},
                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}},
            },
        });
        assert_eq!(set.to_fields_v1(), want);
        assert_eq!(Set::from_fields_v1(&want).unwrap(), set);
        assert_eq!(
            set.paths().iter().map(|p| path_string(p)).collect::<Vec<_>>(),
            [
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.containers[name=\"nginx\"]",
                ".spec.containers[name=\"nginx\"].image",
                ".spec.finalizers[=\"a\"]",
                ".spec.ports[containerPort=80,protocol=\"TCP\"]",
            ]
        );
    }

    /// Keys and set items compare as upstream's values: numbers by value (`9` before `10`,
    /// `80.0` the same as `80`, written `80`), numbers before strings.
    #[test]
    fn numeric_keys_order_and_compare_by_value() {
        let port = |n: Value| PathElement::key(vec![("containerPort", &n), ("protocol", &json!("TCP"))]);
        assert!(port(json!(9)) < port(json!(10)));
        assert_eq!(port(json!(80.0)), port(json!(80)));
        assert_eq!(port(json!(80.0)).encode(), "k:{\"containerPort\":80,\"protocol\":\"TCP\"}");
        assert!(port(json!(79.5)) < port(json!(80)) && port(json!(80)) < port(json!(80.5)));
        assert!(PathElement::value(&json!(10)) < PathElement::value(&json!("1")));
        let mut set = Set::new();
        for n in [10, 9, 100] {
            set.insert(&[f("ports"), port(json!(n))]);
        }
        assert_eq!(
            set.paths().iter().map(|p| path_string(p)).collect::<Vec<_>>(),
            [
                ".ports[containerPort=9,protocol=\"TCP\"]",
                ".ports[containerPort=10,protocol=\"TCP\"]",
                ".ports[containerPort=100,protocol=\"TCP\"]",
            ]
        );
        let hashed: std::collections::HashSet<PathElement> = [port(json!(80)), port(json!(80.0))].into_iter().collect();
        assert_eq!(hashed.len(), 1);
    }

    /// `FieldsV1` text in upstream's order (`Set.ToJSON`), not bytewise: numeric key values
    /// and set values by number (`9` < `9.5` < `10` < `100`); at one level fields, then keyed
    /// items, then set values (numbers, strings, booleans), then indexes (`PathElement.Compare`);
    /// keyed items field by field, a key that is a prefix of another first; `.` first of all.
    #[test]
    fn fields_v1_bytes_in_upstream_order() {
        let port = |n: i64| PathElement::key(vec![("containerPort", &json!(n)), ("protocol", &json!("TCP"))]);
        let mut set = Set::new();
        for n in [100, 10, 9] {
            set.insert(&[f("spec"), f("ports"), port(n)]);
        }
        set.insert(&[f("spec"), f("ports"), port(9), f("containerPort")]);
        let text = r#"{"f:spec":{"f:ports":{"#.to_owned()
            + r#""k:{\"containerPort\":9,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}},"#
            + r#""k:{\"containerPort\":10,\"protocol\":\"TCP\"}":{},"#
            + r#""k:{\"containerPort\":100,\"protocol\":\"TCP\"}":{}}}}"#;
        assert_eq!(String::from_utf8(set.to_fields_v1_bytes()).unwrap(), text);
        assert_eq!(Set::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap(), set);

        let mut mixed = Set::new();
        for pe in [
            PathElement::Index(10),
            PathElement::Index(9),
            PathElement::value(&json!(true)),
            PathElement::value(&json!("a")),
            PathElement::value(&json!(10)),
            PathElement::value(&json!(9.5)),
            PathElement::value(&json!(9)),
            PathElement::key(vec![("b", &json!(1))]),
            PathElement::key(vec![("a", &json!(5))]),
            PathElement::key(vec![("b", &json!(2)), ("a", &json!(1))]),
            PathElement::key(vec![("a", &json!(1))]),
            f("b"),
        ] {
            mixed.insert(&[pe]);
        }
        mixed.insert(&[f("a"), f("x")]);
        mixed.insert(&[f("a")]);
        let want = concat!(
            r#"{"f:a":{".":{},"f:x":{}},"f:b":{},"#,
            r#""k:{\"a\":1}":{},"k:{\"a\":1,\"b\":2}":{},"k:{\"a\":5}":{},"k:{\"b\":1}":{},"#,
            r#""v:9":{},"v:9.5":{},"v:10":{},"v:\"a\"":{},"v:true":{},"#,
            r#""i:9":{},"i:10":{}}"#
        );
        assert_eq!(String::from_utf8(mixed.to_fields_v1_bytes()).unwrap(), want);
        // Field names JSON escapes are escaped in the key, as the other elements' are.
        let mut odd = Set::new();
        odd.insert(&[f("say \"hi\""), f("back\\slash")]);
        odd.insert(&[f("tab\there")]);
        let text = String::from_utf8(odd.to_fields_v1_bytes()).unwrap();
        assert_eq!(text, r#"{"f:say \"hi\"":{"f:back\\slash":{}},"f:tab\there":{}}"#);
        assert_eq!(Set::from_fields_v1(&serde_json::from_str(&text).unwrap()).unwrap(), odd);
        // Bytes written in another order (a `serde_json::Map`'s) come back in upstream's.
        let sorted = serde_json::to_vec(&mixed.to_fields_v1()).unwrap();
        assert_ne!(sorted, want.as_bytes());
        assert_eq!(ordered_fields_v1(&sorted).unwrap(), want.as_bytes());
        assert_eq!(ordered_fields_v1(&sorted).unwrap(), want.as_bytes(), "remembered: the same answer");
        assert_eq!(ordered_fields_v1(b"{}").unwrap(), b"{}");
        assert!(ordered_fields_v1(b"[]").is_none());
        assert!(ordered_fields_v1(b"[]").is_none(), "remembered: still not a set");
        // Past the most remembered, the oldest input is forgotten and answered again alike.
        for i in 0..ORDERED_REMEMBERED + 1 {
            let input = format!(r#"{{"f:n{i}":{{}}}}"#);
            assert_eq!(ordered_fields_v1(input.as_bytes()).unwrap(), input.as_bytes());
        }
        assert_eq!(ordered_fields_v1(&sorted).unwrap(), want.as_bytes());
    }

    #[test]
    fn set_operations() {
        let mut a = Set::new();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        let mut b = Set::new();
        b.insert(&[f("spec"), f("replicas")]);
        assert_eq!(a.clone().difference(&b).paths(), vec![vec![f("spec"), f("paused")]]);
        assert_eq!(a.intersection(&b), b);
        let mut spec = Set::new();
        spec.insert(&[f("spec")]);
        assert!(a.recursive_difference(&spec).is_empty());
        assert!(Set::from_fields_v1(&json!({})).unwrap().is_empty());
        assert!(Set::from_fields_v1(&json!([])).is_none());
    }
}
