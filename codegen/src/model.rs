//! The one typed model the templates see: both specs joined per definition.
//!
//! Types come from the protobuf messages (every message, so kinds upstream still registers but no
//! longer serves, e.g. `apps/v1beta1`, have types too) joined with the OpenAPI definition of the
//! same Go type, which adds JSON names, required fields, descriptions and `x-kubernetes-*` facts.
//! A field in one spec and not the other is an error naming the definition and field, unless a
//! fixup in [`crate::fixups`] says why it is expected.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use openapiv3::{OpenAPI, ReferenceOr, Schema, SchemaKind, Type};

use crate::data::SchemeData;
use crate::naming;
use crate::proto::{self, FieldKind, ProtoSet, Scalar};
use crate::{fixups, routes};

#[derive(Debug)]
pub struct Model {
    /// The Kubernetes version the specs are from, e.g. `1.36.0`.
    pub spec_version: String,
    /// Keyed by proto package (`k8s.io.api.apps.v1`).
    pub packages: BTreeMap<String, Package>,
    /// Every registered kind, sorted by group, version, kind.
    pub kinds: Vec<KindDef>,
    pub routes: Vec<routes::Route>,
    pub resources: Vec<routes::Resource>,
    pub group_versions: Vec<GroupVersion>,
    /// The OpenAPI documents the server publishes at `/openapi/v3/<prefix>/<group>/<version>`,
    /// derived from the specs (see [`crate::openapi::split_by_group_version`]).
    pub openapi_v3: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug)]
pub struct Package {
    pub proto: String,
    pub module: Vec<String>,
    pub types: BTreeMap<String, TypeDef>,
}

#[derive(Debug, Clone)]
pub struct TypeDef {
    pub name: String,
    pub package: String,
    /// The OpenAPI definition this type joins, if the document has one.
    pub definition: Option<String>,
    /// Whether the type has a protobuf message (and so a `prost::Message` impl).
    pub proto: bool,
    pub doc: String,
    pub fields: Vec<Field>,
    /// go-to-protobuf wraps a named slice type (`type ExtraValue []string`) in a message with one
    /// `repeated items` field; its JSON form is the bare array.
    pub transparent_list: bool,
    /// The definition's `x-kubernetes-map-type` (`+structType=atomic`): whether a value of this
    /// type is owned and replaced whole.
    pub map_type: Option<String>,
    /// Properties of the OpenAPI definition that embedded structs must account for (join only).
    pub leftover: BTreeMap<String, PropInfo>,
    /// Proto fields matched by no property: candidate embedded structs (join only).
    pub embedded_candidates: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub json_name: String,
    pub rust_name: String,
    pub doc: String,
    /// The protobuf field number; `None` for JSON-only fields (`apiVersion`/`kind`, carried in
    /// the protobuf envelope instead).
    pub tag: Option<u32>,
    pub card: Card,
    pub elem: Elem,
    pub required: bool,
    /// Boxed because the field's type contains this type again.
    pub boxed: bool,
    pub ext: FieldExt,
    /// For a Go embedded struct: its fields, which JSON inlines into this type while protobuf
    /// keeps them in a nested message under `tag`. Empty otherwise.
    pub inline: Vec<Field>,
    /// The Go field's value semantics (pointer or value, `omitempty`, `omitzero`), which decide
    /// what Go's encoders write for an absent or zero value. `None` for types with no Go source
    /// in the specs (JSON-only definitions such as `version.Info`).
    pub go: Option<GoInfo>,
    /// The Go field's declarative default (`+default=`), as JSON text.
    pub default: Option<String>,
}

/// What upstream's Go struct says about a field (see [`crate::gosrc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoInfo {
    pub kind: GoKind,
    /// `json:",omitempty"`: zero scalars, nil pointers and empty slices, maps and `[]byte` are
    /// left out of JSON (value structs never are).
    pub omitempty: bool,
    /// `json:",omitzero"` (Go 1.24): zero values, structs included, are left out of JSON.
    pub omitzero: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoKind {
    /// `*T`: nil is `null` in JSON (or omitted) and not written in protobuf.
    Pointer,
    /// A slice, map or `[]byte` (also through a named type such as `ResourceList`): nil is
    /// `null` in JSON (or omitted) and has no protobuf entries.
    Nilable,
    /// A scalar or struct value: always written in protobuf, as its zero value when absent, and in
    /// JSON too unless `omitempty` (scalars) or `omitzero` leaves the zero value out.
    Value,
}

impl Field {
    /// The fields this one stands for in the Rust struct and in JSON: itself, or for an
    /// embedded struct, its inlined fields (recursively).
    pub fn flattened(&self) -> Vec<&Field> {
        if self.inline.is_empty() { vec![self] } else { self.inline.iter().flat_map(Field::flattened).collect() }
    }
}

/// An OpenAPI property no proto field matched by name: it must belong to an embedded struct.
#[derive(Debug, Clone)]
pub struct PropInfo {
    pub required: bool,
    pub doc: Option<String>,
    pub ext: FieldExt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Card {
    Single,
    Repeated,
    Map,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Elem {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    /// A generated type: (proto package, name).
    Named(String, String),
    /// A hand-written type in `kapi_apimachinery`, by its Rust path there.
    Special(Special),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    RawExtension,
    FieldsV1,
    Json,
    OrBool,
    OrArray,
    OrStringArray,
}

/// `x-kubernetes-*` facts about a field, for patching and validation.
#[derive(Debug, Clone, Default)]
pub struct FieldExt {
    pub patch_strategy: Option<String>,
    pub patch_merge_key: Option<String>,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

#[derive(Debug, Clone)]
pub struct KindDef {
    pub gvk: Gvk,
    /// The implementing type: (proto package, name).
    pub package: String,
    pub type_name: String,
}

#[derive(Debug, Clone)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// Served by the OpenAPI document (as opposed to types kept only for decoding).
    pub served: bool,
    pub enabled_by_default: bool,
}

pub struct Inputs<'a> {
    pub spec_version: &'a str,
    /// Whether `data/scheme.toml` must match these specs exactly. It describes the pinned
    /// version; other versions (read by `kapi-codegen diff`) take what fits and skip the rest.
    pub strict_data: bool,
    pub openapi: &'a OpenAPI,
    pub protos: &'a ProtoSet,
    /// Upstream's Go packages by import path (`k8s.io/api/core/v1`).
    pub go: &'a BTreeMap<String, crate::gosrc::GoPackage>,
    pub data: &'a SchemeData,
}

pub fn build(inputs: &Inputs<'_>) -> Result<Model> {
    let schemas = schemas(inputs.openapi);
    let mut packages: BTreeMap<String, Package> = BTreeMap::new();
    let mut fixup_log = fixups::Log::default();

    let kinds = collect_kinds(inputs, &schemas)?;
    let kind_types: BTreeSet<(String, String)> = kinds.iter().map(|k| (k.package.clone(), k.type_name.clone())).collect();

    // Types from protobuf messages, joined with their OpenAPI definitions.
    for (full, msg) in &inputs.protos.messages {
        if fixups::special_for_message(full).is_some() || fixups::is_envelope_message(full) {
            continue;
        }
        let definition = definition_for_message(full);
        let schema = schemas.get(definition.as_str()).copied();
        let is_kind = kind_types.contains(&(msg.package.clone(), msg.name.clone()));
        let sibling = if schema.is_none() { sibling_schema(full, &schemas) } else { None };
        let join = Join { protos: inputs.protos, sibling };
        let mut ty = join_type(full, msg, schema.map(|s| (definition.as_str(), s)), is_kind, &join, &mut fixup_log)
            .with_context(|| format!("joining {full} with {definition}"))?;
        join_go(&mut ty, is_kind, inputs.go, &mut fixup_log).with_context(|| format!("joining {full} with its Go struct"))?;
        insert_type(&mut packages, ty);
    }

    // Definitions that have no protobuf message at all (e.g. version.Info).
    for (definition, schema) in &schemas {
        let (pkg, name) = naming::definition_package(definition);
        let full = format!("{pkg}.{name}");
        if inputs.protos.messages.contains_key(&full) || fixups::special_for_message(&full).is_some() {
            continue;
        }
        fixups::json_only_definition(definition, &mut fixup_log)?;
        let ty = json_only_type(definition, schema).with_context(|| format!("reading {definition}"))?;
        insert_type(&mut packages, ty);
    }

    expand_embedded(&mut packages)?;
    mark_transparent_lists(&mut packages);
    mark_boxed(&mut packages);
    fixup_log.check_all_applied()?;

    let routes = routes::collect(inputs.openapi)?;
    let kind_set: BTreeSet<Gvk> = kinds.iter().map(|k| k.gvk.clone()).collect();
    let resources = routes::resources(&routes, inputs.data, &kind_set, inputs.strict_data)?;
    let group_versions = group_versions(inputs, &kinds)?;

    Ok(Model {
        spec_version: inputs.spec_version.to_owned(),
        packages,
        kinds,
        routes,
        resources,
        group_versions,
        openapi_v3: crate::openapi::split_by_group_version(inputs.openapi, inputs.spec_version)?,
    })
}

fn insert_type(packages: &mut BTreeMap<String, Package>, ty: TypeDef) {
    packages
        .entry(ty.package.clone())
        .or_insert_with(|| Package { proto: ty.package.clone(), module: naming::module_path(&ty.package), types: BTreeMap::new() })
        .types
        .insert(ty.name.clone(), ty);
}

fn schemas(openapi: &OpenAPI) -> BTreeMap<&str, &Schema> {
    openapi
        .components
        .iter()
        .flat_map(|c| c.schemas.iter())
        .filter_map(|(name, s)| match s {
            ReferenceOr::Item(schema) => Some((name.as_str(), schema)),
            ReferenceOr::Reference { .. } => None,
        })
        .collect()
}

/// `k8s.io.api.apps.v1.Deployment` → `io.k8s.api.apps.v1.Deployment` (and the dashed names of
/// the two staging repositories).
pub fn definition_for_message(full: &str) -> String {
    let rest = full.strip_prefix("k8s.io.").unwrap_or(full);
    let rest = rest.replace("apiextensions_apiserver.", "apiextensions-apiserver.").replace("kube_aggregator.", "kube-aggregator.");
    format!("io.k8s.{rest}")
}

/// Resolves a proto message reference to a field element.
fn elem_of(scalar: &Scalar) -> Elem {
    match scalar {
        Scalar::String => Elem::String,
        Scalar::Bytes => Elem::Bytes,
        Scalar::Int32 => Elem::Int32,
        Scalar::Int64 => Elem::Int64,
        Scalar::Bool => Elem::Bool,
        Scalar::Double => Elem::Double,
        Scalar::Message(m) => match fixups::special_for_message(m) {
            Some(special) => Elem::Special(special),
            None => {
                let (pkg, name) = m.rsplit_once('.').expect("qualified message name");
                Elem::Named(pkg.to_owned(), name.to_owned())
            }
        },
    }
}

/// The OpenAPI definition of the same Go type in another version of the same group
/// (`admissionregistration/v1beta1.Validation` → `v1.Validation`), or failing that in another
/// group it moved to (`extensions/v1beta1.IngressRule` → `networking/v1.IngressRule`), for
/// messages the document does not describe: versions upstream no longer serves still share
/// names and embedding with the served one. GA versions first, then the highest.
fn sibling_schema<'a>(full: &str, schemas: &BTreeMap<&str, &'a Schema>) -> Option<&'a Schema> {
    let (pkg, name) = full.rsplit_once('.')?;
    let (group_pkg, _version) = pkg.rsplit_once('.')?;
    let same_group = definition_for_message(group_pkg);
    let mut candidates: Vec<(bool, &str, &'a Schema)> = schemas
        .iter()
        .filter_map(|(d, s)| {
            let (def_pkg, n) = d.rsplit_once('.')?;
            let (def_group, version) = def_pkg.rsplit_once('.')?;
            (n == name && def_pkg.starts_with("io.k8s.api.")).then_some((def_group != same_group, version, *s))
        })
        .collect();
    candidates.sort_by_key(|(other_group, v, _)| (*other_group, v.contains("alpha"), v.contains("beta"), std::cmp::Reverse(v.to_string())));
    candidates.first().map(|(_, _, s)| *s)
}

/// What a join may consult besides the message and its own definition.
struct Join<'a> {
    protos: &'a ProtoSet,
    sibling: Option<&'a Schema>,
}

impl Join<'_> {
    /// For a message without a definition: the sibling's property name for a proto field, fixing
    /// case as for joined messages.
    fn sibling_name(&self, name: &str, log: &mut fixups::Log) -> Option<String> {
        let props = object_properties(self.sibling?);
        if props.contains_key(name) {
            return Some(name.to_owned());
        }
        fixups::json_name_case(name, props.keys().copied(), log)
    }

    /// For a message without a definition: whether a message-typed field is a Go embedded
    /// struct, i.e. the sibling has no such property but has every field of the embedded type.
    fn sibling_embeds(&self, field: &proto::Field) -> bool {
        let (Some(sibling), FieldKind::Single(Scalar::Message(m))) = (self.sibling, &field.kind) else {
            return false;
        };
        let props = object_properties(sibling);
        if props.contains_key(field.name.as_str()) || fixups::special_for_message(m).is_some() {
            return false;
        }
        let Some(inner) = self.protos.messages.get(m) else { return false };
        !inner.fields.is_empty()
            && inner.fields.iter().all(|f| props.keys().any(|p| p.eq_ignore_ascii_case(&f.name)) || self.sibling_embeds_nested(f))
    }

    fn sibling_embeds_nested(&self, f: &proto::Field) -> bool {
        matches!(&f.kind, FieldKind::Single(Scalar::Message(_))) && self.sibling_embeds(f)
    }
}

fn join_type(
    full: &str,
    msg: &proto::Message,
    schema: Option<(&str, &Schema)>,
    is_kind: bool,
    join: &Join<'_>,
    log: &mut fixups::Log,
) -> Result<TypeDef> {
    let props = schema.map(|(_, s)| object_properties(s)).unwrap_or_default();
    let required: BTreeSet<&str> = schema.map(|(_, s)| required_of(s)).unwrap_or_default();
    let mut used_props = BTreeSet::new();
    let mut fields = Vec::new();
    let mut embedded_candidates = Vec::new();

    for f in &msg.fields {
        let json_name = fixups::json_name(full, &f.name, log);
        let (card, scalar) = match &f.kind {
            FieldKind::Single(s) => (Card::Single, s),
            FieldKind::Repeated(s) => (Card::Repeated, s),
            FieldKind::Map(s) => (Card::Map, s),
        };
        let json_name = match (schema, props.contains_key(json_name.as_str())) {
            (_, true) => json_name,
            (Some(_), false) => fixups::json_name_case(&json_name, props.keys().copied(), log).unwrap_or(json_name),
            (None, false) => join.sibling_name(&json_name, log).unwrap_or(json_name),
        };
        let prop = props.get(json_name.as_str()).copied();
        let mut embedded = schema.is_none() && join.sibling_embeds(f);
        if schema.is_some() && prop.is_none() {
            // Go embeds a struct here: JSON inlines its fields, proto keeps a nested message.
            // Checked once every type is joined (expand_embedded).
            match (&f.kind, scalar_is_message(&f.kind)) {
                (FieldKind::Single(_), true) => embedded = true,
                _ => bail!("field {json_name} (proto {}) of {full} is not in the OpenAPI definition", f.name),
            }
        }
        if let Some(p) = prop {
            used_props.insert(json_name.clone());
            check_shape(full, &json_name, card, scalar, p)?;
        }
        let doc = prop.and_then(description_of).unwrap_or_else(|| f.doc.clone());
        fields.push(Field {
            rust_name: naming::field_name(&json_name),
            required: required.contains(json_name.as_str()),
            ext: prop.map(field_ext).unwrap_or_default(),
            json_name,
            doc,
            tag: Some(f.number),
            card,
            elem: elem_of(scalar),
            boxed: false,
            inline: Vec::new(),
            go: None,
            default: None,
        });
        if embedded {
            embedded_candidates.push(fields.last().expect("just pushed").json_name.clone());
        }
    }

    // OpenAPI properties without a proto field: only TypeMeta's, which upstream carries in the
    // protobuf envelope (runtime.Unknown) rather than in the message.
    let mut type_meta = Vec::new();
    let mut leftover = BTreeMap::new();
    for (name, prop) in &props {
        if used_props.contains(*name) {
            continue;
        }
        if fixups::is_type_meta_field(name) {
            type_meta.push((name.to_string(), description_of(prop).unwrap_or_default()));
            continue;
        }
        if embedded_candidates.is_empty() {
            bail!("property {name} of {} has no field in proto message {full}", schema.unwrap().0);
        }
        leftover.insert(name.to_string(), PropInfo { required: required.contains(name), doc: description_of(prop), ext: field_ext(prop) });
    }
    // Kinds always carry TypeMeta in JSON, also those the OpenAPI document does not describe.
    if is_kind {
        for name in ["kind", "apiVersion"] {
            if !type_meta.iter().any(|(n, _)| n == name) {
                type_meta.push((name.to_owned(), fixups::type_meta_doc(name).to_owned()));
            }
        }
    }
    // Go's TypeMeta comes first and in this order: kind, apiVersion.
    type_meta.sort_by_key(|(n, _)| if n == "kind" { 0 } else { 1 });
    let mut all: Vec<Field> = type_meta
        .into_iter()
        .map(|(json_name, doc)| Field {
            rust_name: naming::field_name(&json_name),
            json_name,
            doc,
            tag: None,
            card: Card::Single,
            elem: Elem::String,
            required: false,
            boxed: false,
            ext: FieldExt::default(),
            inline: Vec::new(),
            go: None,
            default: None,
        })
        .collect();
    all.extend(fields);
    check_unique_names(full, &all)?;

    let doc = schema.and_then(|(_, s)| s.schema_data.description.clone()).unwrap_or_else(|| msg.doc.clone());
    Ok(TypeDef {
        name: msg.name.clone(),
        package: msg.package.clone(),
        definition: schema.map(|(d, _)| d.to_owned()),
        proto: true,
        doc,
        fields: all,
        transparent_list: false,
        map_type: schema.and_then(|(_, s)| definition_map_type(s)),
        leftover,
        embedded_candidates,
    })
}

/// Adds the Go struct's facts to every field of a joined type: proto fields match Go fields by
/// their `protobuf` tag number (go-to-protobuf derives the message from the struct), and the JSON
/// name must be the `json` tag's; `apiVersion`/`kind` come from the embedded `metav1.TypeMeta`.
/// A field that one side has and the other lacks is an error naming both.
fn join_go(ty: &mut TypeDef, is_kind: bool, go: &BTreeMap<String, crate::gosrc::GoPackage>, log: &mut fixups::Log) -> Result<()> {
    let full = format!("{}.{}", ty.package, ty.name);
    let import = crate::gosrc::import_path(&ty.package);
    let Some((import, st)) = go_struct(go, &import, &ty.name)? else {
        // go-to-protobuf's wrapper of a named slice type (`type ExtraValue []string`).
        let named = go.get(&import).and_then(|p| p.named.get(&ty.name));
        if let (Some(named), [items]) = (named, ty.fields.as_mut_slice())
            && named.starts_with("[]")
            && items.card == Card::Repeated
        {
            items.go = Some(GoInfo { kind: GoKind::Nilable, omitempty: false, omitzero: false });
            return Ok(());
        }
        bail!("{full}: no Go struct {} in {import}", ty.name);
    };
    let named_kind = |f: &crate::gosrc::GoField| -> GoKind {
        let ty_expr = f.ty.as_str();
        if ty_expr.starts_with('*') {
            return GoKind::Pointer;
        }
        if ty_expr.starts_with("[]") || ty_expr.starts_with("map[") {
            return GoKind::Nilable;
        }
        // A named slice or map type (`ResourceList`, `corev1.ResourceList`).
        let (pkg, name) = match (&f.type_import, ty_expr.split_once('.')) {
            (Some(p), Some((_, n))) => (p.as_str(), n),
            _ => (import.as_str(), ty_expr),
        };
        match go.get(pkg).and_then(|p| p.named.get(name)) {
            Some(t) if t.starts_with("[]") || t.starts_with("map[") => GoKind::Nilable,
            _ => GoKind::Value,
        }
    };
    let mut used = BTreeSet::new();
    let mut type_meta = None;
    for f in &st.fields {
        let json = f.json.clone().unwrap_or_default();
        if f.proto_number.is_none() {
            if f.embedded && f.name == "TypeMeta" && json.inline {
                type_meta = Some(f);
                continue;
            }
            if json.skip {
                continue;
            }
            bail!("{full}: Go field {} has no protobuf tag, so no proto field", f.name);
        }
    }
    for field in ty.fields.iter_mut() {
        let Some(tag) = field.tag else {
            // apiVersion/kind: metav1.TypeMeta's fields.
            let Some(tm) = type_meta else {
                if fixups::watch_event_type_meta(&full, log) {
                    continue;
                }
                bail!("{full}: JSON field {} (TypeMeta) but the Go struct does not embed metav1.TypeMeta", field.json_name);
            };
            let (_, meta) = go_struct(go, &go_import_of(go, &import, &tm.ty), "TypeMeta")?.context("metav1.TypeMeta not found")?;
            let Some(gf) = meta.fields.iter().find(|g| g.json.as_ref().is_some_and(|j| j.name == field.json_name)) else {
                bail!("{full}: TypeMeta has no Go field for {}", field.json_name);
            };
            field.go = Some(go_info(gf, named_kind(gf)));
            continue;
        };
        let Some(gf) = st.fields.iter().find(|g| g.proto_number == Some(tag)) else {
            bail!("{full}: proto field {} (number {tag}) has no Go field with that protobuf tag", field.json_name);
        };
        used.insert(gf.name.clone());
        let json = gf.json.clone().unwrap_or_default();
        let embedded_inline = gf.embedded && (json.inline || json.name.is_empty());
        if !embedded_inline && json.name != field.json_name {
            bail!("{full}: Go field {} has JSON name {:?}, the specs say {:?}", gf.name, json.name, field.json_name);
        }
        let kind = named_kind(gf);
        let expected_nilable =
            matches!(field.card, Card::Repeated | Card::Map) || (field.card == Card::Single && field.elem == Elem::Bytes);
        // A named slice type (`type Verbs []string`) is a single wrapper message in proto.
        let named_slice = kind == GoKind::Nilable && field.card == Card::Single && matches!(field.elem, Elem::Named(..));
        if expected_nilable != (kind == GoKind::Nilable) && kind != GoKind::Pointer && !named_slice {
            bail!("{full}: Go field {} has type {}, the proto field is {:?} of {:?}", gf.name, gf.ty, field.card, field.elem);
        }
        field.go = Some(go_info(gf, kind));
        field.default.clone_from(&gf.default);
    }
    for f in &st.fields {
        if f.proto_number.is_some() && !used.contains(&f.name) {
            bail!("{full}: Go field {} (protobuf tag {:?}) has no proto field", f.name, f.proto_number);
        }
    }
    if type_meta.is_some()
        && !ty.fields.iter().any(|f| f.tag.is_none())
        && !fixups::type_meta_without_definition(ty.definition.is_some(), is_kind, log)
    {
        bail!("{full}: the Go struct embeds metav1.TypeMeta but the type has no apiVersion/kind");
    }
    Ok(())
}

fn go_info(f: &crate::gosrc::GoField, kind: GoKind) -> GoInfo {
    let json = f.json.clone().unwrap_or_default();
    GoInfo { kind, omitempty: json.omitempty, omitzero: json.omitzero }
}

/// The import path a (possibly qualified) type expression of package `import` refers to.
fn go_import_of(go: &BTreeMap<String, crate::gosrc::GoPackage>, import: &str, ty_expr: &str) -> String {
    let base = ty_expr.trim_start_matches('*');
    match base.split_once('.') {
        // Upstream's API packages import metav1 under that name or as `v1`.
        Some(_) if go.contains_key("k8s.io/apimachinery/pkg/apis/meta/v1") => "k8s.io/apimachinery/pkg/apis/meta/v1".to_owned(),
        _ => import.to_owned(),
    }
}

/// The Go struct `name` of package `import` and the package that declares it, following a type alias (`type Table = v1.Table`).
fn go_struct<'a>(
    go: &'a BTreeMap<String, crate::gosrc::GoPackage>,
    import: &str,
    name: &str,
) -> Result<Option<(String, &'a crate::gosrc::GoStruct)>> {
    let Some(pkg) = go.get(import) else { bail!("no Go sources for package {import} (run api-specs/fill)") };
    if let Some(st) = pkg.structs.get(name) {
        return Ok(Some((import.to_owned(), st)));
    }
    if let Some((path, target)) = pkg.aliases.get(name) {
        return go_struct(go, path, target);
    }
    // `type A B` of the same package: B's fields.
    if let Some(target) = pkg.named.get(name)
        && target.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && target != name
    {
        return go_struct(go, import, target);
    }
    Ok(None)
}

fn scalar_is_message(kind: &FieldKind) -> bool {
    matches!(kind, FieldKind::Single(Scalar::Message(m)) if fixups::special_for_message(m).is_none())
}

/// Replaces each embedded-struct field by its inlined fields (recursively), taking their
/// required flags, docs and `x-kubernetes-*` facts from the outer definition, and checks that the
/// inlined JSON names are exactly the properties no proto field matched.
fn expand_embedded(packages: &mut BTreeMap<String, Package>) -> Result<()> {
    let snapshot: BTreeMap<(String, String), TypeDef> =
        packages.values().flat_map(|p| p.types.values()).map(|t| ((t.package.clone(), t.name.clone()), t.clone())).collect();
    fn inline_of(snapshot: &BTreeMap<(String, String), TypeDef>, pkg: &str, name: &str) -> Result<Vec<Field>> {
        let Some(inner) = snapshot.get(&(pkg.to_owned(), name.to_owned())) else {
            bail!("embedded type {pkg}.{name} not found");
        };
        let mut out = Vec::new();
        for f in &inner.fields {
            let mut f = f.clone();
            if inner.embedded_candidates.contains(&f.json_name) {
                let Elem::Named(p, n) = &f.elem else { bail!("embedded field {} is not a message", f.json_name) };
                f.inline = inline_of(snapshot, p, n)?;
            }
            out.push(f);
        }
        Ok(out)
    }
    for p in packages.values_mut() {
        for t in p.types.values_mut() {
            if t.embedded_candidates.is_empty() {
                continue;
            }
            let full = format!("{}.{}", t.package, t.name);
            for f in &mut t.fields {
                if !t.embedded_candidates.contains(&f.json_name) {
                    continue;
                }
                let Elem::Named(pk, n) = &f.elem else { unreachable!("candidates are messages") };
                f.inline = inline_of(&snapshot, pk, n).with_context(|| format!("expanding {full}"))?;
                f.required = true;
                f.rust_name = naming::field_name(&f.json_name);
            }
            if t.definition.is_none() {
                // No definition to check against (a version upstream no longer serves).
                t.embedded_candidates.clear();
                continue;
            }
            // Every inlined field must be a property of the outer definition, and vice versa.
            let mut left = std::mem::take(&mut t.leftover);
            for f in &mut t.fields {
                if f.inline.is_empty() {
                    continue;
                }
                fn visit(fields: &mut [Field], left: &mut BTreeMap<String, PropInfo>, full: &str) -> Result<()> {
                    for f in fields {
                        if !f.inline.is_empty() {
                            visit(&mut f.inline, left, full)?;
                            continue;
                        }
                        let Some(info) = left.remove(&f.json_name) else {
                            bail!("{full}: embedded field {} is not a property of the OpenAPI definition", f.json_name);
                        };
                        f.required = info.required;
                        if let Some(doc) = info.doc {
                            f.doc = doc;
                        }
                        f.ext = info.ext;
                    }
                    Ok(())
                }
                visit(&mut f.inline, &mut left, &full)?;
            }
            if !left.is_empty() {
                bail!("{full}: OpenAPI properties {:?} match no proto field", left.keys().collect::<Vec<_>>());
            }
            t.embedded_candidates.clear();
            let names: Vec<Field> = t.fields.iter().flat_map(|f| f.flattened()).cloned().collect();
            check_unique_names(&full, &names)?;
        }
    }
    Ok(())
}

fn check_unique_names(full: &str, fields: &[Field]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for f in fields {
        if !seen.insert(&f.rust_name) {
            bail!("{full}: two fields map to the Rust name {}", f.rust_name);
        }
    }
    Ok(())
}

/// The JSON shape the OpenAPI property has, compared with the proto field's.
fn check_shape(full: &str, json: &str, card: Card, scalar: &Scalar, prop: &ReferenceOr<Box<Schema>>) -> Result<()> {
    let shape = schema_shape(prop);
    let proto_shape = match card {
        Card::Single => Shape::Single,
        Card::Repeated => Shape::Array,
        Card::Map => Shape::Map,
    };
    if shape == proto_shape {
        return Ok(());
    }
    // A go-to-protobuf list wrapper is a single message in proto and an array in JSON; checked
    // when the wrapper is marked (mark_transparent_lists).
    if shape == Shape::Array && card == Card::Single && matches!(scalar, Scalar::Message(_)) {
        return Ok(());
    }
    // Special types choose their own JSON form (e.g. JSONSchemaPropsOrArray is an object or an
    // array); their properties are described with `$ref` anyway.
    if let Scalar::Message(m) = scalar
        && fixups::special_for_message(m).is_some()
    {
        return Ok(());
    }
    bail!("field {json} of {full}: OpenAPI says {shape:?}, proto says {card:?}")
}

#[derive(Debug, PartialEq)]
enum Shape {
    Single,
    Array,
    Map,
}

fn schema_shape(prop: &ReferenceOr<Box<Schema>>) -> Shape {
    match prop {
        ReferenceOr::Reference { .. } => Shape::Single,
        ReferenceOr::Item(s) => match &s.schema_kind {
            SchemaKind::Type(Type::Array(_)) => Shape::Array,
            SchemaKind::Type(Type::Object(o)) if o.additional_properties.is_some() => Shape::Map,
            _ => Shape::Single,
        },
    }
}

fn object_properties(schema: &Schema) -> BTreeMap<&str, &ReferenceOr<Box<Schema>>> {
    match &schema.schema_kind {
        SchemaKind::Type(Type::Object(o)) => o.properties.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        _ => BTreeMap::new(),
    }
}

fn required_of(schema: &Schema) -> BTreeSet<&str> {
    match &schema.schema_kind {
        SchemaKind::Type(Type::Object(o)) => o.required.iter().map(String::as_str).collect(),
        _ => BTreeSet::new(),
    }
}

fn description_of(prop: &ReferenceOr<Box<Schema>>) -> Option<String> {
    match prop {
        ReferenceOr::Item(s) => s.schema_data.description.clone(),
        ReferenceOr::Reference { .. } => None,
    }
}

fn field_ext(prop: &ReferenceOr<Box<Schema>>) -> FieldExt {
    let ReferenceOr::Item(s) = prop else { return FieldExt::default() };
    let ext = &s.schema_data.extensions;
    let string = |k: &str| ext.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    FieldExt {
        patch_strategy: string("x-kubernetes-patch-strategy"),
        patch_merge_key: string("x-kubernetes-patch-merge-key"),
        list_type: string("x-kubernetes-list-type"),
        list_map_keys: ext
            .get("x-kubernetes-list-map-keys")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
        map_type: string("x-kubernetes-map-type"),
    }
}

fn definition_map_type(schema: &Schema) -> Option<String> {
    schema.schema_data.extensions.get("x-kubernetes-map-type").and_then(|v| v.as_str()).map(str::to_owned)
}

/// A definition with no protobuf message: fields from the schema alone, JSON only.
fn json_only_type(definition: &str, schema: &Schema) -> Result<TypeDef> {
    let (package, name) = naming::definition_package(definition);
    let required = required_of(schema);
    let mut fields = Vec::new();
    for (json_name, prop) in object_properties(schema) {
        let (card, elem) = json_elem(prop).with_context(|| format!("property {json_name}"))?;
        fields.push(Field {
            rust_name: naming::field_name(json_name),
            json_name: json_name.to_owned(),
            doc: description_of(prop).unwrap_or_default(),
            tag: None,
            card,
            elem,
            required: required.contains(json_name),
            boxed: false,
            ext: field_ext(prop),
            inline: Vec::new(),
            go: None,
            default: None,
        });
    }
    Ok(TypeDef {
        name,
        package,
        definition: Some(definition.to_owned()),
        proto: false,
        doc: schema.schema_data.description.clone().unwrap_or_default(),
        fields,
        transparent_list: false,
        map_type: definition_map_type(schema),
        leftover: BTreeMap::new(),
        embedded_candidates: Vec::new(),
    })
}

fn json_elem(prop: &ReferenceOr<Box<Schema>>) -> Result<(Card, Elem)> {
    let s = match prop {
        ReferenceOr::Item(s) => s,
        ReferenceOr::Reference { reference } => bail!("unsupported reference {reference} in a JSON-only type"),
    };
    Ok(match &s.schema_kind {
        SchemaKind::Type(Type::String(_)) => (Card::Single, Elem::String),
        SchemaKind::Type(Type::Boolean(_)) => (Card::Single, Elem::Bool),
        SchemaKind::Type(Type::Integer(_)) => (Card::Single, Elem::Int64),
        other => bail!("unsupported schema {other:?} in a JSON-only type"),
    })
}

/// Marks list-wrapper messages: a single `repeated items = 1` field, used where the OpenAPI
/// document has an array.
fn mark_transparent_lists(packages: &mut BTreeMap<String, Package>) {
    let wrappers: Vec<(String, String)> = packages
        .values()
        .flat_map(|p| p.types.values())
        .filter(|t| {
            t.definition.is_none()
                && t.fields.len() == 1
                && t.fields[0].json_name == "items"
                && t.fields[0].card == Card::Repeated
                && t.fields[0].tag == Some(1)
        })
        .map(|t| (t.package.clone(), t.name.clone()))
        .collect();
    for (pkg, name) in wrappers {
        if let Some(t) = packages.get_mut(&pkg).and_then(|p| p.types.get_mut(&name)) {
            t.transparent_list = true;
        }
    }
}

/// A type by (proto package, name).
type TypeKey = (String, String);

/// Boxes every single (non-list, non-map) field whose type reaches back to the containing type,
/// so that recursive types have a finite size.
fn mark_boxed(packages: &mut BTreeMap<String, Package>) {
    let direct: BTreeMap<(String, String), Vec<(String, String)>> = packages
        .values()
        .flat_map(|p| p.types.values())
        .map(|t| {
            let targets = t
                .fields
                .iter()
                .flat_map(|f| f.flattened())
                .filter(|f| f.card == Card::Single)
                .filter_map(|f| match &f.elem {
                    Elem::Named(p, n) => Some((p.clone(), n.clone())),
                    _ => None,
                })
                .collect();
            ((t.package.clone(), t.name.clone()), targets)
        })
        .collect();
    let reaches = |from: &(String, String), to: &(String, String)| -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            if &n == to {
                return true;
            }
            if seen.insert(n.clone()) {
                stack.extend(direct.get(&n).into_iter().flatten().cloned());
            }
        }
        false
    };
    for p in packages.values_mut() {
        for t in p.types.values_mut() {
            let me = (t.package.clone(), t.name.clone());
            type Reaches<'a> = dyn Fn(&TypeKey, &TypeKey) -> bool + 'a;
            fn mark(fields: &mut [Field], me: &TypeKey, reaches: &Reaches<'_>) {
                for f in fields {
                    if !f.inline.is_empty() {
                        mark(&mut f.inline, me, reaches);
                    } else if let (Card::Single, Elem::Named(pk, n)) = (f.card, &f.elem) {
                        f.boxed = reaches(&(pk.clone(), n.clone()), me);
                    }
                }
            }
            mark(&mut t.fields, &me, &reaches);
        }
    }
}

/// Kinds: the OpenAPI document's `x-kubernetes-group-version-kind`, plus the kinds upstream
/// registers that the document does not declare (data file).
fn collect_kinds(inputs: &Inputs<'_>, schemas: &BTreeMap<&str, &Schema>) -> Result<Vec<KindDef>> {
    let mut kinds: BTreeMap<Gvk, KindDef> = BTreeMap::new();
    for (definition, schema) in schemas {
        let Some(gvks) = schema.schema_data.extensions.get("x-kubernetes-group-version-kind") else {
            continue;
        };
        let (package, type_name) = naming::definition_package(definition);
        for g in gvks.as_array().into_iter().flatten() {
            let field = |k: &str| g.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let gvk = Gvk { group: field("group"), version: field("version"), kind: field("kind") };
            kinds.insert(gvk.clone(), KindDef { gvk, package: package.clone(), type_name: type_name.clone() });
        }
    }
    for extra in &inputs.data.extra_kind {
        let gvk = Gvk { group: extra.group.clone(), version: extra.version.clone(), kind: extra.kind.clone() };
        let Some((package, type_name)) = extra.message.rsplit_once('.') else {
            bail!("scheme.toml: extra_kind {gvk:?}: message must be a full proto name");
        };
        if !inputs.protos.messages.contains_key(&extra.message) {
            if !inputs.strict_data {
                continue;
            }
            bail!("scheme.toml: extra_kind {gvk:?}: no proto message {}", extra.message);
        }
        if let Some(existing) = kinds.get(&gvk) {
            if !inputs.strict_data {
                continue;
            }
            bail!(
                "scheme.toml: extra_kind {gvk:?} is already declared by the OpenAPI document ({}.{}); remove it",
                existing.package,
                existing.type_name
            );
        }
        kinds.insert(gvk.clone(), KindDef { gvk, package: package.to_owned(), type_name: type_name.to_owned() });
    }
    Ok(kinds.into_values().collect())
}

fn group_versions(inputs: &Inputs<'_>, kinds: &[KindDef]) -> Result<Vec<GroupVersion>> {
    let served: BTreeSet<(String, String)> = inputs.openapi.paths.paths.keys().filter_map(|p| routes::group_version_of_path(p)).collect();
    let mut all: BTreeSet<(String, String)> = served.clone();
    all.extend(kinds.iter().map(|k| (k.gvk.group.clone(), k.gvk.version.clone())));
    let mut out = Vec::new();
    for (group, version) in all {
        let prio = inputs.data.group_version.iter().find(|p| p.group == group && p.version == version);
        let is_served = served.contains(&(group.clone(), version.clone()));
        if is_served && prio.is_none() && inputs.strict_data {
            bail!("scheme.toml: served group-version {group}/{version} has no [[group_version]] priority");
        }
        let ga = !version.contains("alpha") && !version.contains("beta");
        let enabled_by_default = is_served && (ga || inputs.data.default_enabled.iter().any(|d| d.group == group && d.version == version));
        out.push(GroupVersion {
            group_priority: prio.map_or(0, |p| p.group_priority),
            version_priority: prio.map_or(0, |p| p.version_priority),
            group,
            version,
            served: is_served,
            enabled_by_default,
        });
    }
    Ok(out)
}
