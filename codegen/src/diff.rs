//! `kapi-codegen diff <old> <new>`: a human-readable API changelog between two spec versions,
//! computed from the joined models (served group-versions, kinds and their fields).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::model::{Card, Elem, Model, TypeDef};

/// The changes between two models, as data (tests look at this; the CLI prints it).
#[derive(Debug, Default)]
pub struct ApiDiff {
    pub old_version: String,
    pub new_version: String,
    pub group_versions_added: Vec<String>,
    pub group_versions_removed: Vec<String>,
    /// `group/version Kind` strings.
    pub kinds_added: Vec<String>,
    pub kinds_removed: Vec<String>,
    /// Per kind present in both: field changes (`+ spec.foo: string`, `- x`, `~ y: a -> b`).
    pub field_changes: BTreeMap<String, Vec<String>>,
}

fn served_gvs(m: &Model) -> BTreeSet<String> {
    m.group_versions
        .iter()
        .filter(|g| g.served)
        .map(|g| if g.group.is_empty() { g.version.clone() } else { format!("{}/{}", g.group, g.version) })
        .collect()
}

/// Served kinds (those with a resource), keyed `apiVersion Kind`, with their type.
fn served_kinds(m: &Model) -> BTreeMap<String, &TypeDef> {
    let mut out = BTreeMap::new();
    for r in &m.resources {
        let Some(k) = m.kinds.iter().find(|k| k.gvk == r.kind) else { continue };
        let Some(t) = m.packages.get(&k.package).and_then(|p| p.types.get(&k.type_name)) else { continue };
        out.insert(format!("{} {}", k.gvk.api_version(), k.gvk.kind), t);
    }
    out
}

fn type_name(card: Card, elem: &Elem) -> String {
    let e = match elem {
        Elem::String => "string".to_owned(),
        Elem::Bytes => "bytes".to_owned(),
        Elem::Int32 => "int32".to_owned(),
        Elem::Int64 => "int64".to_owned(),
        Elem::Bool => "boolean".to_owned(),
        Elem::Double => "number".to_owned(),
        Elem::Named(_, n) => n.clone(),
        Elem::Special(s) => format!("{s:?}"),
    };
    match card {
        Card::Single => e,
        Card::Repeated => format!("[]{e}"),
        Card::Map => format!("map[string]{e}"),
    }
}

/// Flattens a type's fields into `path: type` lines, following nested types (each type once per
/// path, so recursive types stop).
fn flatten(m: &Model, t: &TypeDef, prefix: &str, seen: &mut Vec<String>, out: &mut BTreeMap<String, String>) {
    let key = format!("{}.{}", t.package, t.name);
    if seen.contains(&key) || seen.len() > 12 {
        return;
    }
    seen.push(key);
    for f in &t.fields {
        let path = if prefix.is_empty() { f.json_name.clone() } else { format!("{prefix}.{}", f.json_name) };
        out.insert(path.clone(), type_name(f.card, &f.elem));
        if let Elem::Named(p, n) = &f.elem
            && let Some(inner) = m.packages.get(p).and_then(|p| p.types.get(n))
        {
            // Shared metadata types would repeat the same lines for every kind.
            if !p.starts_with("k8s.io.apimachinery.") {
                flatten(m, inner, &path, seen, out);
            }
        }
    }
    seen.pop();
}

pub fn diff(old: &Model, new: &Model) -> ApiDiff {
    let (og, ng) = (served_gvs(old), served_gvs(new));
    let (ok, nk) = (served_kinds(old), served_kinds(new));
    let mut d = ApiDiff {
        old_version: old.spec_version.clone(),
        new_version: new.spec_version.clone(),
        group_versions_added: ng.difference(&og).cloned().collect(),
        group_versions_removed: og.difference(&ng).cloned().collect(),
        kinds_added: nk.keys().filter(|k| !ok.contains_key(*k)).cloned().collect(),
        kinds_removed: ok.keys().filter(|k| !nk.contains_key(*k)).cloned().collect(),
        field_changes: BTreeMap::new(),
    };
    for (kind, ot) in &ok {
        let Some(nt) = nk.get(kind) else { continue };
        let (mut of, mut nf) = (BTreeMap::new(), BTreeMap::new());
        flatten(old, ot, "", &mut Vec::new(), &mut of);
        flatten(new, nt, "", &mut Vec::new(), &mut nf);
        let mut changes = Vec::new();
        for (path, ty) in &nf {
            match of.get(path) {
                None => changes.push(format!("+ {path}: {ty}")),
                Some(old_ty) if old_ty != ty => changes.push(format!("~ {path}: {old_ty} -> {ty}")),
                _ => {}
            }
        }
        for (path, ty) in &of {
            if !nf.contains_key(path) {
                changes.push(format!("- {path}: {ty}"));
            }
        }
        if !changes.is_empty() {
            // By path, then removals before additions.
            let path = |c: &String| c[2..].split(": ").next().unwrap_or_default().to_owned();
            changes.sort_by_key(|c| (path(c), !c.starts_with('-')));
            d.field_changes.insert(kind.clone(), changes);
        }
    }
    d
}

impl ApiDiff {
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Kubernetes API changes from v{} to v{}\n", self.old_version, self.new_version);
        let mut section = |title: &str, items: &[String]| {
            let _ = writeln!(s, "## {title} ({})", items.len());
            for i in items {
                let _ = writeln!(s, "- {i}");
            }
            let _ = writeln!(s);
        };
        section("Group versions added", &self.group_versions_added);
        section("Group versions removed", &self.group_versions_removed);
        section("Kinds added", &self.kinds_added);
        section("Kinds removed", &self.kinds_removed);
        let _ = writeln!(s, "## Field changes in kinds served by both ({})", self.field_changes.len());
        for (kind, changes) in &self.field_changes {
            let _ = writeln!(s, "\n### {kind}");
            for c in changes {
                let _ = writeln!(s, "{c}");
            }
        }
        s
    }
}
