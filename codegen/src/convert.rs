//! Internal (hub) types and the conversions between every external version and its hub: the plan
//! the `hub/`, `conversion.rs` and `manual.rs` templates render (upstream's internal packages and
//! `zz_generated.conversion.go`).
//!
//! **Hubs.** A group with types in two or more versioned packages gets one hub type per Go type
//! name found in any of them (`crate::hub::<group>::<Name>`), with the union of the JSON fields of
//! every version (first the preferred version's, then the others' by priority). Nested types are
//! matched across versions by their Go name within the group, as upstream's conversion-gen pairs
//! `v1.Foo` with the internal `Foo`; types of other packages (`ObjectMeta`, core's
//! `PodTemplateSpec` inside `apps`) are shared and used as they are. A group with one version has
//! no separate hub: its external types are their own hub. A group whose kinds cohabit with
//! another group's (`[[hub_alias]]` in `data/scheme.toml`: `events.k8s.io` → core) converts to
//! that group's hub.
//!
//! **Conversions.** For each external type with a hub counterpart, `N_to_hub` and `N_from_hub`
//! move every field whose JSON name and shape agree (recursively through nested generated types,
//! `Option`, `Box`, lists and maps; optional and required forms coerce). Every other field — a
//! different type, or no field of that JSON name on the other side — is handed to a named
//! hand-written function `convert_<group>_<version>_<Type>_<field>_to_hub` (or
//! `convert_<group>_hub_<Type>_<field>_to_<version>`) in `generated/manual/<group>.rs`, so a
//! missing one is a compile error naming the type and the field: no field is dropped silently.
//! A whole type's conversion can be taken over by a hand-written `convert_<group>_<version>_<Type>_to_hub`
//! (`[[conversion_override]]`), which usually calls the generated `auto_*` function first.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use crate::model::{Card, Elem, Field, Model, Special};
use crate::naming;

/// Pseudo package of a hub type: `hub.<group ident>`.
const HUB_PREFIX: &str = "hub.";

#[derive(Debug, Clone)]
pub struct HubField {
    pub json_name: String,
    pub rust_name: String,
    pub card: Card,
    pub elem: Elem,
    pub optional: bool,
    pub boxed: bool,
}

#[derive(Debug, Clone)]
pub struct HubType {
    pub name: String,
    pub fields: Vec<HubField>,
}

/// How a package's types reach their hub.
#[derive(Debug, Clone)]
struct HubRef {
    /// Ident of the hub group (`autoscaling`, `core`).
    ident: String,
    /// The proto package standing as the hub (a one-version group), or `None` for `crate::hub::<ident>`.
    identity: Option<String>,
}

#[derive(Debug)]
pub struct Plan {
    /// Hub types per hub group ident.
    pub hubs: BTreeMap<String, Vec<HubType>>,
    /// Per proto package with conversions: the rendered functions.
    pub conversions: BTreeMap<String, Vec<String>>,
    /// Per group ident: the hand-written functions expected (signature, what they convert).
    pub manual: BTreeMap<String, Vec<ManualFn>>,
    /// Per kind (package, type name): the Rust path of its hub type and whether it converts.
    pub kind_hubs: BTreeMap<(String, String), KindHub>,
    /// Every (group, kind) a resource serves, with the GVK it is stored as.
    pub storage: Vec<(String, String, crate::model::Gvk)>,
}

#[derive(Debug, Clone)]
pub struct KindHub {
    pub hub_path: String,
    /// `None`: the type is its own hub.
    pub conversion_module: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ManualFn {
    pub name: String,
    pub signature: String,
    pub doc: String,
}

/// The group's ident in function and module names: the package's directory above the version
/// (`autoscaling`, `core`, `apiextensions`).
fn ident_of(package: &str) -> String {
    let m = naming::module_path(package);
    m[m.len().saturating_sub(2)].clone()
}

fn version_of(package: &str) -> &str {
    package.rsplit('.').next().unwrap_or(package)
}

fn mod_path(package: &str) -> String {
    if let Some(ident) = package.strip_prefix(HUB_PREFIX) {
        format!("crate::hub::{ident}")
    } else {
        format!("crate::{}", naming::module_path(package).join("::"))
    }
}

/// The group of each versioned API package (`k8s.io.api.*`, apiextensions, kube-aggregator)
/// that the specs serve. Versions upstream still registers but no longer serves
/// (`autoscaling/v2beta2`, `apps/v1beta1`, ...) only decode, so they neither widen the hub nor
/// get conversions.
fn package_groups(model: &Model) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for k in &model.kinds {
        out.entry(k.package.clone()).or_default().insert(k.gvk.group.clone());
    }
    let data = crate::data::load().unwrap_or_default();
    for p in &data.proto_package {
        out.entry(p.package.clone()).or_default().insert(p.group.clone());
    }
    out.into_iter()
        .filter(|(p, groups)| {
            let version = version_of(p);
            groups.len() == 1
                && groups.iter().all(|g| model.group_versions.iter().any(|gv| &gv.group == g && gv.version == version && gv.served))
                && model.packages.contains_key(p)
                && (p.starts_with("k8s.io.api.")
                    || p.starts_with("k8s.io.apiextensions_apiserver.")
                    || p.starts_with("k8s.io.kube_aggregator."))
        })
        .map(|(p, g)| (p, g.into_iter().next().unwrap_or_default()))
        .collect()
}

pub fn plan(model: &Model) -> Result<Plan> {
    let data = crate::data::load()?;
    let pkg_group = package_groups(model);
    let mut group_pkgs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, g) in &pkg_group {
        group_pkgs.entry(g.clone()).or_default().push(p.clone());
    }
    // Versions in priority order: enabled by default first, then by priority, then by name.
    let prio = |group: &str, package: &str| {
        let v = version_of(package);
        model
            .group_versions
            .iter()
            .find(|g| g.group == group && g.version == v)
            .map_or((false, 0, v.to_owned()), |g| (g.enabled_by_default, g.version_priority, v.to_owned()))
    };
    for (g, pkgs) in group_pkgs.iter_mut() {
        pkgs.sort_by_key(|p| {
            let (on, pr, v) = prio(g, p);
            (std::cmp::Reverse(on), std::cmp::Reverse(pr), v)
        });
    }

    // Hub groups.
    let mut hub_of_group: BTreeMap<String, HubRef> = BTreeMap::new();
    for (g, pkgs) in &group_pkgs {
        let ident = ident_of(&pkgs[0]);
        let identity = (pkgs.len() == 1).then(|| pkgs[0].clone());
        hub_of_group.insert(g.clone(), HubRef { ident, identity });
    }
    for a in &data.hub_alias {
        let Some(target) = hub_of_group.get(&a.hub_group).cloned() else {
            bail!("scheme.toml: hub_alias {} → {:?}: no such group", a.group, a.hub_group);
        };
        if !hub_of_group.contains_key(&a.group) {
            bail!("scheme.toml: hub_alias: no group {}", a.group);
        }
        hub_of_group.insert(a.group.clone(), target);
    }

    // Per package, the types its kinds reach (hub fields and conversions are only needed there:
    // autoscaling/v1's `MetricSpec` family, kept for upstream's annotations, is not reached).
    let mut reach: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in pkg_group.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = model.kinds.iter().filter(|k| &k.package == p).map(|k| k.type_name.clone()).collect();
        while let Some(n) = stack.pop() {
            let Some(t) = model.packages[p].types.get(&n) else { continue };
            if !seen.insert(n) {
                continue;
            }
            for f in t.fields.iter().flat_map(Field::flattened) {
                if let Elem::Named(fp, fname) = &f.elem
                    && fp == p
                {
                    stack.push(fname.clone());
                }
            }
        }
        reach.insert(p.clone(), seen);
    }
    let reached = |p: &str, name: &str| reach.get(p).is_some_and(|r| r.contains(name));

    // Build the hub types of groups with several versions.
    let lookup = |pkg: &str, name: &str| model.packages.get(pkg).and_then(|p| p.types.get(name));
    let mut hubs: BTreeMap<String, Vec<HubType>> = BTreeMap::new();
    for (g, pkgs) in &group_pkgs {
        let hr = &hub_of_group[g];
        if hr.identity.is_some() || data.hub_alias.iter().any(|a| &a.group == g) {
            continue;
        }
        let members: BTreeSet<&String> = pkgs.iter().collect();
        let mut types: BTreeMap<String, Vec<HubField>> = BTreeMap::new();
        for p in pkgs {
            for t in model.packages[p].types.values().filter(|t| reached(p, &t.name)) {
                let fields = types.entry(t.name.clone()).or_default();
                for f in t.fields.iter().flat_map(Field::flattened) {
                    let elem = hub_elem(&f.elem, &members, &hr.ident);
                    let optional = f.card == Card::Single && !f.required;
                    match fields.iter_mut().find(|h| h.json_name == f.json_name) {
                        Some(h) => {
                            if h.card == f.card && h.elem == elem {
                                h.optional |= optional;
                                h.boxed |= f.boxed;
                            }
                        }
                        None => fields.push(HubField {
                            json_name: f.json_name.clone(),
                            rust_name: f.rust_name.clone(),
                            card: f.card,
                            elem,
                            optional,
                            boxed: f.boxed,
                        }),
                    }
                }
            }
        }
        hubs.insert(hr.ident.clone(), types.into_iter().map(|(name, fields)| HubType { name, fields }).collect());
    }

    let hub_type = |hr: &HubRef, name: &str| -> Option<(String, Vec<HubField>)> {
        match &hr.identity {
            Some(pkg) => lookup(pkg, name).map(|t| {
                let fields = t
                    .fields
                    .iter()
                    .flat_map(Field::flattened)
                    .map(|f| HubField {
                        json_name: f.json_name.clone(),
                        rust_name: f.rust_name.clone(),
                        card: f.card,
                        elem: f.elem.clone(),
                        optional: f.card == Card::Single && !f.required,
                        boxed: f.boxed,
                    })
                    .collect();
                (pkg.clone(), fields)
            }),
            None => hubs
                .get(&hr.ident)
                .and_then(|ts| ts.iter().find(|t| t.name == name))
                .map(|t| (format!("{HUB_PREFIX}{}", hr.ident), t.fields.clone())),
        }
    };

    let overrides: BTreeSet<(String, String, String)> =
        data.conversion_override.iter().map(|o| (o.package.clone(), o.type_name.clone(), o.direction.clone())).collect();
    let mut used_overrides = BTreeSet::new();

    let mut conversions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut manual: BTreeMap<String, Vec<ManualFn>> = BTreeMap::new();
    let mut kind_hubs = BTreeMap::new();
    for (g, pkgs) in &group_pkgs {
        let hr = &hub_of_group[g];
        let members: BTreeSet<&String> = pkgs.iter().collect();
        for p in pkgs {
            if hr.identity.as_deref() == Some(p.as_str()) {
                // Its own hub.
                for t in model.packages[p].types.values() {
                    kind_hubs.insert(
                        (p.clone(), t.name.clone()),
                        KindHub { hub_path: format!("{}::{}", mod_path(p), t.name), conversion_module: None },
                    );
                }
                continue;
            }
            let ident = ident_of(p);
            let version = version_of(p).to_owned();
            let mut fns = Vec::new();
            for t in model.packages[p].types.values().filter(|t| reached(p, &t.name)) {
                let Some((hub_pkg, hub_fields)) = hub_type(hr, &t.name) else { continue };
                let hub_path = format!("{}::{}", mod_path(&hub_pkg), t.name);
                kind_hubs.insert(
                    (p.clone(), t.name.clone()),
                    KindHub { hub_path: hub_path.clone(), conversion_module: Some(format!("{}::conversion", mod_path(p))) },
                );
                let ext_fields: Vec<&Field> = t.fields.iter().flat_map(Field::flattened).collect();
                let ctx = Ctx { members: &members, hr, hub_type: &hub_type };
                // to hub
                let mut body = Vec::new();
                for f in &ext_fields {
                    let target = hub_fields.iter().find(|h| h.json_name == f.json_name);
                    let expr = target.and_then(|h| {
                        let from =
                            Side { card: f.card, elem: f.elem.clone(), optional: f.card == Card::Single && !f.required, boxed: f.boxed };
                        let to = Side { card: h.card, elem: h.elem.clone(), optional: h.optional, boxed: h.boxed };
                        ctx.convert(&format!("in_.{}", f.rust_name), &from, &to, Dir::ToHub, p)
                    });
                    match (expr, target) {
                        (Some(e), Some(h)) => body.push(format!("out.{} = {e};", h.rust_name)),
                        _ => {
                            let name = format!("convert_{ident}_{version}_{}_{}_to_hub", t.name, f.json_name);
                            body.push(format!("crate::manual::{ident}::{name}(in_.{}, &mut out);", f.rust_name));
                            manual.entry(ident.clone()).or_default().push(ManualFn {
                                signature: format!(
                                    "pub fn {name}(value: {}, out: &mut {hub_path})",
                                    rust_type(&f.card, &f.elem, f.card == Card::Single && !f.required, f.boxed, p)
                                ),
                                doc: format!("`{p}.{}` field `{}` has no counterpart of the same shape in the hub.", t.name, f.json_name),
                                name,
                            });
                        }
                    }
                }
                let key = (p.clone(), t.name.clone(), "to_hub".to_owned());
                let over = overrides.contains(&key);
                if over {
                    used_overrides.insert(key);
                }
                fns.push(function(
                    &format!("{}_to_hub", t.name),
                    &format!("super::{}", t.name),
                    &hub_path,
                    &body,
                    over.then(|| format!("crate::manual::{ident}::convert_{ident}_{version}_{}_to_hub", t.name)),
                    &format!("`{p}.{}` → hub", t.name),
                ));
                if over {
                    manual.entry(ident.clone()).or_default().push(ManualFn {
                        name: format!("convert_{ident}_{version}_{}_to_hub", t.name),
                        signature: format!(
                            "pub fn convert_{ident}_{version}_{}_to_hub(in_: {}::{}) -> {hub_path}",
                            t.name,
                            mod_path(p),
                            t.name
                        ),
                        doc: format!("`{p}.{}` → hub: overrides the whole conversion (`[[conversion_override]]`).", t.name),
                    });
                }
                // from hub
                let mut body = Vec::new();
                for h in &hub_fields {
                    let target = ext_fields.iter().find(|f| f.json_name == h.json_name);
                    let expr = target.and_then(|f| {
                        let from = Side { card: h.card, elem: h.elem.clone(), optional: h.optional, boxed: h.boxed };
                        let to =
                            Side { card: f.card, elem: f.elem.clone(), optional: f.card == Card::Single && !f.required, boxed: f.boxed };
                        ctx.convert(&format!("in_.{}", h.rust_name), &from, &to, Dir::FromHub, p)
                    });
                    match (expr, target) {
                        (Some(e), Some(f)) => body.push(format!("out.{} = {e};", f.rust_name)),
                        _ => {
                            let name = format!("convert_{ident}_hub_{}_{}_to_{version}", t.name, h.json_name);
                            body.push(format!("crate::manual::{ident}::{name}(in_.{}, &mut out);", h.rust_name));
                            let param = if hub_pkg.starts_with(HUB_PREFIX) { HUB_PREFIX.to_owned() + &hr.ident } else { hub_pkg.clone() };
                            manual.entry(ident.clone()).or_default().push(ManualFn {
                                signature: format!(
                                    "pub fn {name}(value: {}, out: &mut {}::{})",
                                    rust_type(&h.card, &h.elem, h.optional, h.boxed, &param),
                                    mod_path(p),
                                    t.name
                                ),
                                doc: format!("Hub `{}` field `{}` has no counterpart of the same shape in `{p}`.", t.name, h.json_name),
                                name,
                            });
                        }
                    }
                }
                let key = (p.clone(), t.name.clone(), "from_hub".to_owned());
                let over = overrides.contains(&key);
                if over {
                    used_overrides.insert(key);
                    manual.entry(ident.clone()).or_default().push(ManualFn {
                        name: format!("convert_{ident}_hub_{}_to_{version}", t.name),
                        signature: format!(
                            "pub fn convert_{ident}_hub_{}_to_{version}(in_: {hub_path}) -> {}::{}",
                            t.name,
                            mod_path(p),
                            t.name
                        ),
                        doc: format!("Hub → `{p}.{}`: overrides the whole conversion (`[[conversion_override]]`).", t.name),
                    });
                }
                fns.push(function(
                    &format!("{}_from_hub", t.name),
                    &hub_path,
                    &format!("super::{}", t.name),
                    &body,
                    over.then(|| format!("crate::manual::{ident}::convert_{ident}_hub_{}_to_{version}", t.name)),
                    &format!("hub → `{p}.{}`", t.name),
                ));
            }
            conversions.insert(p.clone(), fns);
        }
    }
    for o in &overrides {
        if !used_overrides.contains(o) {
            bail!("scheme.toml: conversion_override {o:?} matches no generated conversion; remove it");
        }
    }

    // Storage versions.
    let mut storage = Vec::new();
    let served: BTreeSet<(String, String)> = model.resources.iter().map(|r| (r.kind.group.clone(), r.kind.kind.clone())).collect();
    for (group, kind) in served {
        let gvk = if let Some(o) = data.storage_version.iter().find(|o| o.group == group && o.kind == kind) {
            let Some(k) = model.kinds.iter().map(|k| &k.gvk).find(|k| k.group == group && k.kind == kind && k.version == o.version) else {
                bail!("scheme.toml: storage_version {group}/{kind} {}: no such kind", o.version);
            };
            Some(k)
        } else if let Some(a) = data.hub_alias.iter().find(|a| a.group == group && a.kind.as_deref() == Some(kind.as_str())) {
            model.kinds.iter().map(|k| &k.gvk).find(|k| k.group == a.hub_group && k.kind == kind && k.version == a.storage_version)
        } else {
            model
                .kinds
                .iter()
                .map(|k| &k.gvk)
                .filter(|k| k.group == group && k.kind == kind)
                .filter_map(|k| {
                    model.group_versions.iter().find(|g| g.group == k.group && g.version == k.version && g.served).map(|g| (k, g))
                })
                .max_by_key(|(k, g)| (g.enabled_by_default, g.version_priority, std::cmp::Reverse(k.version.clone())))
                .map(|(k, _)| k)
        };
        let Some(gvk) = gvk else { continue };
        storage.push((group, kind, gvk.clone()));
    }

    Ok(Plan { hubs, conversions, manual, kind_hubs, storage })
}

/// The hand-written functions `plan` needs that the modules in `sources` (group ident → the text
/// of `generated/manual/<ident>.rs`) do not define, one message each naming the module, the
/// function, and the type and field it converts. A name counts as defined when it occurs in the
/// module as a whole word (functions defined through a macro are named in its invocation); the
/// compiler has the last word, this check gives the message first.
pub fn missing_manual(manual: &BTreeMap<String, Vec<ManualFn>>, sources: &BTreeMap<String, String>) -> Vec<String> {
    let defines = |text: &str, name: &str| {
        text.match_indices(name).any(|(i, _)| {
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            !text[..i].ends_with(ident) && !text[i + name.len()..].starts_with(ident)
        })
    };
    let mut out = Vec::new();
    for (ident, fns) in manual {
        let text = sources.get(ident).map_or("", String::as_str);
        for f in fns {
            if !defines(text, &f.name) {
                out.push(format!("generated/manual/{ident}.rs does not define `{}`: {}\n    expected: {}", f.name, f.doc, f.signature));
            }
        }
    }
    out
}

/// [`missing_manual`] against the modules in `dir` (`generated/manual/`), as an error.
pub fn check_manual(plan: &Plan, dir: &std::path::Path) -> Result<()> {
    let mut sources = BTreeMap::new();
    for ident in plan.manual.keys() {
        if let Ok(text) = std::fs::read_to_string(dir.join(format!("{ident}.rs"))) {
            sources.insert(ident.clone(), text);
        }
    }
    let missing = missing_manual(&plan.manual, &sources);
    if !missing.is_empty() {
        bail!("{} hand-written conversion function(s) missing (a field would be dropped):\n{}", missing.len(), missing.join("\n"));
    }
    Ok(())
}

fn hub_elem(elem: &Elem, members: &BTreeSet<&String>, ident: &str) -> Elem {
    match elem {
        Elem::Named(p, n) if members.contains(p) => Elem::Named(format!("{HUB_PREFIX}{ident}"), n.clone()),
        other => other.clone(),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    ToHub,
    FromHub,
}

struct Side {
    card: Card,
    elem: Elem,
    optional: bool,
    boxed: bool,
}

type HubLookup<'a> = dyn Fn(&HubRef, &str) -> Option<(String, Vec<HubField>)> + 'a;

struct Ctx<'a> {
    members: &'a BTreeSet<&'a String>,
    hr: &'a HubRef,
    hub_type: &'a HubLookup<'a>,
}

impl Ctx<'_> {
    /// The conversion function of one element, or `None` for the identity; `Err` when the two
    /// elements do not correspond.
    fn elem_fn(&self, from: &Elem, to: &Elem, dir: Dir, pkg: &str) -> Result<Option<String>, ()> {
        let (ext, hub) = if dir == Dir::ToHub { (from, to) } else { (to, from) };
        match (ext, hub) {
            (Elem::Named(ep, en), _) if self.members.contains(ep) => {
                // A type of this group: converts to the hub type of the same name.
                let Some((hp, _)) = (self.hub_type)(self.hr, en) else { return Err(()) };
                if hub != &Elem::Named(hp, en.clone()) {
                    return Err(());
                }
                let f = if dir == Dir::ToHub { "to_hub" } else { "from_hub" };
                Ok(Some(format!("{}::conversion::{en}_{f}", mod_path(ep))))
            }
            (Elem::Special(s @ (Special::OrBool | Special::OrArray | Special::OrStringArray)), Elem::Special(t)) if s == t => {
                let (ep, hp) = (pkg.to_owned(), self.hub_schema_pkg());
                let conv = if dir == Dir::ToHub {
                    format!("{}::conversion::JSONSchemaProps_to_hub", mod_path(&ep))
                } else {
                    let _ = hp;
                    format!("{}::conversion::JSONSchemaProps_from_hub", mod_path(&ep))
                };
                Ok(Some(match s {
                    Special::OrBool => format!(
                        "(|v: ::kapi_apimachinery::JsonSchemaPropsOrBool<_>| ::kapi_apimachinery::JsonSchemaPropsOrBool {{ allows: v.allows, schema: v.schema.map(|s| Box::new({conv}(*s))) }})"
                    ),
                    Special::OrArray => format!(
                        "(|v: ::kapi_apimachinery::JsonSchemaPropsOrArray<_>| ::kapi_apimachinery::JsonSchemaPropsOrArray {{ schema: v.schema.map(|s| Box::new({conv}(*s))), json_schemas: v.json_schemas.into_iter().map({conv}).collect() }})"
                    ),
                    _ => format!(
                        "(|v: ::kapi_apimachinery::JsonSchemaPropsOrStringArray<_>| ::kapi_apimachinery::JsonSchemaPropsOrStringArray {{ schema: v.schema.map(|s| Box::new({conv}(*s))), property: v.property }})"
                    ),
                }))
            }
            _ if from == to => Ok(None),
            _ => Err(()),
        }
    }

    fn hub_schema_pkg(&self) -> String {
        match &self.hr.identity {
            Some(p) => p.clone(),
            None => format!("{HUB_PREFIX}{}", self.hr.ident),
        }
    }

    /// The expression converting `value` from one side's field to the other's, if they
    /// correspond (same card, corresponding elements).
    fn convert(&self, value: &str, from: &Side, to: &Side, dir: Dir, pkg: &str) -> Option<String> {
        if from.card != to.card {
            return None;
        }
        let f = self.elem_fn(&from.elem, &to.elem, dir, pkg).ok()?;
        let apply = |x: &str| match &f {
            Some(f) => format!("{f}({x})"),
            None => x.to_owned(),
        };
        Some(match from.card {
            Card::Repeated => match &f {
                Some(f) => format!("{value}.into_iter().map({f}).collect()"),
                None => value.to_owned(),
            },
            Card::Map => match &f {
                Some(f) => format!("{value}.into_iter().map(|(k, v)| (k, {f}(v))).collect()"),
                None => value.to_owned(),
            },
            Card::Single => {
                let unbox = if from.boxed { "*x" } else { "x" };
                let inner = apply(unbox);
                let inner = if to.boxed { format!("Box::new({inner})") } else { inner };
                let trivial = f.is_none() && from.boxed == to.boxed;
                match (from.optional, to.optional) {
                    (true, true) if trivial => value.to_owned(),
                    (true, true) => format!("{value}.map(|x| {inner})"),
                    (true, false) if trivial => format!("{value}.unwrap_or_default()"),
                    (true, false) => format!("{value}.map(|x| {inner}).unwrap_or_default()"),
                    (false, true) if trivial => format!("Some({value})"),
                    (false, true) => format!("Some({{ let x = {value}; {inner} }})"),
                    (false, false) if trivial => value.to_owned(),
                    (false, false) => format!("{{ let x = {value}; {inner} }}"),
                }
            }
        })
    }
}

fn function(name: &str, from: &str, to: &str, body: &[String], over: Option<String>, doc: &str) -> String {
    // Fields that match move first; the hand-written field functions run after them and may
    // read what they set (upstream's Convert_* runs after autoConvert_*).
    let (manual, auto): (Vec<&String>, Vec<&String>) = body.iter().partition(|l| l.starts_with("crate::manual::"));
    let body: Vec<&String> = auto.into_iter().chain(manual).collect();
    let mut s = String::new();
    if let Some(manual) = over {
        s.push_str(&format!("/// {doc}: hand-written (`{manual}`).\npub fn {name}(in_: {from}) -> {to} {{\n    {manual}(in_)\n}}\n\n"));
        s.push_str(&format!(
            "/// {doc}, field by field (what the hand-written conversion builds on).\npub fn auto_{name}(in_: {from}) -> {to} {{\n"
        ));
    } else {
        s.push_str(&format!("/// {doc}.\npub fn {name}(in_: {from}) -> {to} {{\n"));
    }
    s.push_str(&format!("    let mut out = {to}::default();\n"));
    for line in body {
        s.push_str(&format!("    {line}\n"));
    }
    s.push_str("    out\n}\n");
    s
}

/// The Rust type of a field in a generated struct of `pkg` (a proto package or `hub.<ident>`).
pub fn rust_type(card: &Card, elem: &Elem, optional: bool, boxed: bool, pkg: &str) -> String {
    let e = elem_rust(elem, pkg);
    let e = if boxed { format!("Box<{e}>") } else { e };
    match card {
        Card::Single if optional => format!("Option<{e}>"),
        Card::Single => e,
        Card::Repeated => format!("Vec<{e}>"),
        Card::Map => format!("::std::collections::BTreeMap<String, {e}>"),
    }
}

/// The Rust type of one element in a generated struct of `pkg` (a proto package or
/// `hub.<ident>`).
pub(crate) fn elem_rust(elem: &Elem, pkg: &str) -> String {
    match elem {
        Elem::String => "String".into(),
        Elem::Bytes => "Vec<u8>".into(),
        Elem::Int32 => "i32".into(),
        Elem::Int64 => "i64".into(),
        Elem::Bool => "bool".into(),
        Elem::Double => "f64".into(),
        Elem::Named(p, n) => format!("{}::{n}", mod_path(p)),
        Elem::Special(s) => {
            let schema = || format!("{}::JSONSchemaProps", mod_path(pkg));
            match s {
                Special::Time => "::kapi_apimachinery::Time".into(),
                Special::MicroTime => "::kapi_apimachinery::MicroTime".into(),
                Special::Duration => "::kapi_apimachinery::Duration".into(),
                Special::Quantity => "::kapi_apimachinery::Quantity".into(),
                Special::IntOrString => "::kapi_apimachinery::IntOrString".into(),
                Special::RawExtension => "::kapi_apimachinery::RawExtension".into(),
                Special::FieldsV1 => "::kapi_apimachinery::FieldsV1".into(),
                Special::Json => "::kapi_apimachinery::Json".into(),
                Special::OrBool => format!("::kapi_apimachinery::JsonSchemaPropsOrBool<{}>", schema()),
                Special::OrArray => format!("::kapi_apimachinery::JsonSchemaPropsOrArray<{}>", schema()),
                Special::OrStringArray => format!("::kapi_apimachinery::JsonSchemaPropsOrStringArray<{}>", schema()),
            }
        }
    }
}

/// The hub type's struct, rendered.
pub fn hub_struct(ident: &str, t: &HubType) -> String {
    let pkg = format!("{HUB_PREFIX}{ident}");
    let mut s = format!("/// Hub (internal) `{}` of the group: every field of every version.\n", t.name);
    // Written as JSON, the hub is the internal object validation, admission and strategies read.
    s.push_str("#[derive(Clone, Debug, Default, PartialEq)]\n");
    s.push_str(&format!("pub struct {} {{\n", t.name));
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    for f in &t.fields {
        s.push_str(&format!("    /// `{}`\n", f.json_name));
        let (write, read) = crate::emit::field_json(&f.json_name, &f.rust_name, f.card, &f.elem, f.optional, false, None);
        s.push_str(&format!("    pub {}: {},\n", f.rust_name, rust_type(&f.card, &f.elem, f.optional, f.boxed, &pkg)));
        writes.push(write);
        reads.push((f.json_name.as_str(), f.rust_name.as_str(), read));
    }
    s.push_str("}\n\n");
    let writes: Vec<_> = writes.iter().map(String::as_str).collect();
    s.push_str(&crate::emit::write_impls(&t.name, &writes));
    s.push_str("\n\n");
    s.push_str(&crate::emit::read_impls(&t.name, &reads));
    s.push('\n');
    s
}

/// The `HubObject` implementation of a hub struct that is a kind's hub: what the runtime
/// carries an object of a kind served in several versions as, between decoding and storage.
pub fn hub_object_impl(t: &HubType) -> String {
    let object_meta = t
        .fields
        .iter()
        .find(|f| f.json_name == "metadata" && f.card == Card::Single)
        .filter(|f| matches!(&f.elem, Elem::Named(_, n) if n == "ObjectMeta"))
        .map(|f| f.optional);
    let (object_meta, object_meta_mut) = match object_meta {
        None => ("None", "None"),
        Some(true) => {
            ("self.metadata.as_ref().map(|m| m as &dyn ::std::any::Any)", "self.metadata.as_mut().map(|m| m as &mut dyn ::std::any::Any)")
        }
        Some(false) => ("Some(&self.metadata)", "Some(&mut self.metadata)"),
    };
    let has = |json_name: &str| t.fields.iter().any(|f| f.json_name == json_name && f.card == Card::Single && f.optional);
    let (set_type_meta, type_meta_args) = if has("apiVersion") && has("kind") {
        ("self.api_version = Some(api_version.to_owned());\n        self.kind = Some(kind.to_owned());", "api_version: &str, kind: &str")
    } else {
        ("", "_api_version: &str, _kind: &str")
    };
    // A hub is in its Go form as made (converted from a canonical external object, or read
    // from JSON), so its parts compare as they are.
    let part = |json_name: &str| t.fields.iter().find(|f| f.json_name == json_name).map(|f| f.rust_name.clone());
    let (other_spec, spec_equals) = match part("spec") {
        Some(spec) => ("other".to_owned(), format!("self.{spec} == other.{spec}")),
        None => ("_".to_owned(), "true".to_owned()),
    };
    let (other_status, status_equals, copy_status) = match part("status") {
        Some(status) => {
            ("other".to_owned(), format!("self.{status} == other.{status}"), format!("self.{status}.clone_from(&other.{status})"))
        }
        None => ("_".to_owned(), "true".to_owned(), "()".to_owned()),
    };
    format!(
        "impl ::kapi_apimachinery::HubObject for {name} {{
    fn to_value(&self) -> Result<::serde_json::Value, ::serde_json::Error> {{
        ::kapi_apimachinery::write::to_value(self)
    }}

    fn set_type_meta(&mut self, {type_meta_args}) {{
        {set_type_meta}
    }}

    fn object_meta(&self) -> Option<&dyn ::std::any::Any> {{
        {object_meta}
    }}

    fn object_meta_mut(&mut self) -> Option<&mut dyn ::std::any::Any> {{
        {object_meta_mut}
    }}

    fn clone_hub(&self) -> ::kapi_apimachinery::Hub {{
        Box::new(self.clone())
    }}

    fn spec_equals(&self, other: &dyn ::kapi_apimachinery::HubObject) -> Option<bool> {{
        ::kapi_apimachinery::dynamic::hub_as::<Self>(other).map(|{other_spec}| {spec_equals})
    }}

    fn status_equals(&self, other: &dyn ::kapi_apimachinery::HubObject) -> Option<bool> {{
        ::kapi_apimachinery::dynamic::hub_as::<Self>(other).map(|{other_status}| {status_equals})
    }}

    fn copy_status_from(&mut self, other: &dyn ::kapi_apimachinery::HubObject) -> bool {{
        ::kapi_apimachinery::dynamic::hub_as::<Self>(other).map(|{other_status}| {copy_status}).is_some()
    }}
}}
",
        name = t.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_and_sources() -> (Plan, BTreeMap<String, String>) {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let spec = crate::SpecDir::in_repo(repo, &crate::pinned_version(repo).unwrap());
        let plan = plan(&crate::load_model(&spec).unwrap()).unwrap();
        let dir = repo.join("generated/manual");
        let sources = plan.manual.keys().map(|i| (i.clone(), std::fs::read_to_string(dir.join(format!("{i}.rs"))).unwrap())).collect();
        (plan, sources)
    }

    /// Every `crate::manual::…` call the generated conversions make is in the list
    /// `generated/src/manual.rs` documents and the check enforces, and the modules define them all.
    #[test]
    fn manual_list_names_every_called_function() {
        let (plan, sources) = plan_and_sources();
        let listed: BTreeSet<(String, String)> =
            plan.manual.iter().flat_map(|(i, fns)| fns.iter().map(move |f| (i.clone(), f.name.clone()))).collect();
        let mut called = 0;
        for body in plan.conversions.values().flatten() {
            for (i, _) in body.match_indices("crate::manual::") {
                let path: String = body[i + "crate::manual::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let (ident, name) = path.split_once("::").unwrap();
                assert!(listed.contains(&(ident.to_owned(), name.to_owned())), "{ident}::{name} is called but not listed");
                called += 1;
            }
        }
        assert!(called >= listed.len(), "{called} calls, {} listed", listed.len());
        assert_eq!(missing_manual(&plan.manual, &sources), Vec::<String>::new());
    }

    /// Removing a hand-written function fails the check with a message naming the kind (type)
    /// and the field.
    #[test]
    fn removing_a_manual_function_names_kind_and_field() {
        let (plan, mut sources) = plan_and_sources();
        let name = "convert_autoscaling_hub_HorizontalPodAutoscalerSpec_metrics_to_v1";
        let text = sources.get_mut("autoscaling").unwrap();
        assert!(text.contains(&format!("pub fn {name}(")));
        *text = text.replace(name, "removed_function");
        let missing = missing_manual(&plan.manual, &sources);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].contains(name), "{}", missing[0]);
        assert!(missing[0].contains("`HorizontalPodAutoscalerSpec` field `metrics`"), "{}", missing[0]);

        // A whole-type override names its type too.
        let (plan, mut sources) = plan_and_sources();
        let name = "convert_autoscaling_hub_HorizontalPodAutoscaler_to_v1";
        let text = sources.get_mut("autoscaling").unwrap();
        *text = text.replace(&format!("fn {name}("), "fn removed(");
        let missing = missing_manual(&plan.manual, &sources);
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].contains("k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler"), "{}", missing[0]);
    }
}
