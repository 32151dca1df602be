//! Field sets: structured-merge-diff's `fieldpath.Set` and its `FieldsV1` encoding.
//!
//! A set is a tree: at each node, the path elements that are members (the path ending there is
//! in the set) and the children (paths going on through that element). Path elements are a
//! field name (`f:<name>`), a list item's key fields (`k:{"name":"c"}`, fields sorted by name),
//! a set item's value (`v:<json>`) or an index (`i:<n>`, only in atomic lists upstream never
//! descends into). Encoded as `FieldsV1`, every element is an object key; a member with
//! children also carries `".": {}`. I/O-free.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a path. Keys and values hold their JSON text (a key's fields sorted by name),
/// which is how they are compared, hashed and written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    Field(String),
    Key(String),
    Value(String),
    Index(usize),
}

impl PathElement {
    /// The element of a list item keyed by `keys` (name and value, in any order).
    pub fn key(mut keys: Vec<(&str, &Value)>) -> PathElement {
        keys.sort_by(|a, b| a.0.cmp(b.0));
        let mut text = String::from("{");
        for (i, (name, value)) in keys.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&Value::String((*name).to_owned()).to_string());
            text.push(':');
            text.push_str(&value.to_string());
        }
        text.push('}');
        PathElement::Key(text)
    }

    pub fn value(value: &Value) -> PathElement {
        PathElement::Value(value.to_string())
    }

    /// The `FieldsV1` object key of this element.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(text) => format!("k:{text}"),
            PathElement::Value(text) => format!("v:{text}"),
            PathElement::Index(i) => format!("i:{i}"),
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
            PathElement::Key(text) => {
                let fields: Map<String, Value> = serde_json::from_str(text).unwrap_or_default();
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(text) => write!(f, "[={text}]"),
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
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
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

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    pub fn union_with(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            self.children.entry(pe.clone()).or_default().union_with(child);
        }
    }

    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            let child = match other.children.get(pe) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !child.is_empty() {
                children.insert(pe.clone(), child);
            }
        }
        Set { members, children }
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
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.iter().filter(|pe| !other.members.contains(*pe)).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let child = match other.children.get(pe) {
                Some(o) => child.recursive_difference(o),
                None => child.clone(),
            };
            if !child.is_empty() {
                children.insert(pe.clone(), child);
            }
        }
        Set { members, children }
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

    /// The `FieldsV1` JSON of the set (upstream's `SetToFields`).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.contents(false))
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

    #[test]
    fn set_operations() {
        let mut a = Set::new();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        let mut b = Set::new();
        b.insert(&[f("spec"), f("replicas")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("spec"), f("paused")]]);
        assert_eq!(a.intersection(&b), b);
        let mut spec = Set::new();
        spec.insert(&[f("spec")]);
        assert!(a.recursive_difference(&spec).is_empty());
        assert!(Set::from_fields_v1(&json!({})).unwrap().is_empty());
        assert!(Set::from_fields_v1(&json!([])).is_none());
    }
}
