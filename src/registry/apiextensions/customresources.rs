//! Custom resources: the resources CustomResourceDefinitions define, served by the generic
//! `Store` with a strategy made from their definition (apiextensions-apiserver's
//! `customresource` registry), and the names a definition may take (its naming controller).
//!
//! A definition is served once its names are accepted and it is `Established`
//! (`controllers::customresourcedefinitions` decides and records that, and replaces the
//! [`CustomResources`] the server routes by). Objects are unstructured JSON
//! ([`crate::registry::objects::Unstructured`]), stored as JSON at upstream's keys
//! (`/registry/<group>/<plural>/[<namespace>/]<name>`) in the definition's storage version.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};

use serde_json::Value;

use kapi_api::apimachinery::pkg::apis::meta::v1::{APIResource, Verbs};

use super::conversion::Conversion;
use super::schema::{Schema, SchemaError};
use crate::discovery::{RuntimeGroup, RuntimeVersion};
use crate::openapi_v2::Served as Served2;
use crate::registry::ScaleFacts;
use crate::registry::object::Object;
use crate::registry::objects::Kind;
use crate::registry::store::{Store, StoreConfig};
use crate::registry::strategy::{Converter, FieldSet, Strategy};
use crate::selectors::SelectorError;
use crate::status::{ApiError, FieldError};
use crate::tables::CustomColumns;

/// The finalizer a definition gets when it is deleted: its objects are deleted first.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The names of a custom resource (`spec.names`, and once accepted `status.acceptedNames`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

impl Names {
    /// `spec.names` (or `status.acceptedNames`), with upstream's defaults for a missing
    /// singular (the kind in lower case) and list kind (`<kind>List`).
    pub fn of(names: &Value) -> Names {
        let text = |field: &str| names[field].as_str().unwrap_or_default().to_owned();
        let list = |field: &str| -> Vec<String> {
            names[field].as_array().map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
        };
        let kind = text("kind");
        let singular = Some(text("singular")).filter(|s| !s.is_empty()).unwrap_or_else(|| kind.to_lowercase());
        let list_kind = Some(text("listKind")).filter(|s| !s.is_empty()).unwrap_or_else(|| format!("{kind}List"));
        Names { plural: text("plural"), singular, kind, list_kind, short_names: list("shortNames"), categories: list("categories") }
    }

    /// As `status.acceptedNames` writes them (empty lists left out).
    pub fn to_json(&self) -> Value {
        let mut names = serde_json::json!({
            "plural": self.plural,
            "singular": self.singular,
            "kind": self.kind,
            "listKind": self.list_kind,
        });
        if !self.short_names.is_empty() {
            names["shortNames"] = serde_json::json!(self.short_names);
        }
        if !self.categories.is_empty() {
            names["categories"] = serde_json::json!(self.categories);
        }
        names
    }
}

/// The names already taken in one group, by the definitions accepted before.
#[derive(Default)]
pub struct TakenNames {
    resources: BTreeSet<String>,
    kinds: BTreeSet<String>,
}

/// Why a definition's names were not accepted: the `NamesAccepted` condition's reason and
/// message (upstream's naming controller).
#[derive(Debug, PartialEq, Eq)]
pub struct NameConflict {
    pub reason: &'static str,
    pub message: String,
}

impl TakenNames {
    /// Accepts `requested` unless another definition of the group took one of its names
    /// (plural, singular and short names share one space, kinds and list kinds another); the
    /// names are then taken.
    pub fn accept(&mut self, requested: &Names) -> Result<(), NameConflict> {
        let in_use = |reason, name: &str| NameConflict { reason, message: format!("{:?} is already in use", name) };
        if self.resources.contains(&requested.plural) {
            return Err(in_use("PluralConflict", &requested.plural));
        }
        if self.resources.contains(&requested.singular) {
            return Err(in_use("SingularConflict", &requested.singular));
        }
        if let Some(short) = requested.short_names.iter().find(|s| self.resources.contains(*s)) {
            return Err(in_use("ShortNamesConflict", short));
        }
        if self.kinds.contains(&requested.kind) {
            return Err(in_use("KindConflict", &requested.kind));
        }
        if self.kinds.contains(&requested.list_kind) {
            return Err(in_use("ListKindConflict", &requested.list_kind));
        }
        self.resources.extend([requested.plural.clone(), requested.singular.clone()]);
        self.resources.extend(requested.short_names.iter().cloned());
        self.kinds.extend([requested.kind.clone(), requested.list_kind.clone()]);
        Ok(())
    }
}

/// One served version of a custom resource.
pub struct ServedVersion {
    /// The names routes are made of, interned (see [`intern`]).
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
    /// The version's `schema.openAPIV3Schema` (`null` without one), as published in OpenAPI.
    pub schema: Value,
    pub strategy: CustomResourceStrategy,
}

/// A custom resource served now: an established definition.
pub struct CustomResource {
    pub group: String,
    pub names: Names,
    pub namespaced: bool,
    /// The served versions, highest priority first (upstream's kube-aware version order).
    pub versions: Vec<ServedVersion>,
    /// The definition is being deleted: its objects may be read and deleted, not created.
    pub terminating: bool,
}

impl CustomResource {
    /// The resource an established definition (`apiextensions.k8s.io/v1` JSON) serves: its
    /// accepted names, scope, and served versions; `None` when it serves none.
    pub fn from_definition(definition: &Value) -> Option<CustomResource> {
        let spec = &definition["spec"];
        let group = spec["group"].as_str()?.to_owned();
        let names = Names::of(&definition["status"]["acceptedNames"]);
        if names.plural.is_empty() || names.kind.is_empty() {
            return None;
        }
        let storage_version = spec["versions"].as_array()?.iter().find(|v| v["storage"] == true)?["name"].as_str()?.to_owned();
        let prefix = format!("{group}/{}", names.plural);
        let schemas = VersionSchemas::shared(definition);
        let conversion = Conversion::of(definition);
        let mut versions: Vec<ServedVersion> = spec["versions"]
            .as_array()?
            .iter()
            .filter(|v| v["served"] == true)
            .filter_map(|v| {
                Some(ServedVersion {
                    group: intern(&group),
                    version: intern(v["name"].as_str()?),
                    plural: intern(&names.plural),
                    kind: intern(&names.kind),
                    schema: v["schema"]["openAPIV3Schema"].clone(),
                    strategy: CustomResourceStrategy::new(
                        prefix.clone(),
                        storage_version.clone(),
                        v,
                        spec["scope"] != "Cluster",
                        schemas.clone(),
                        conversion.clone(),
                    )?,
                })
            })
            .collect();
        if versions.is_empty() {
            return None;
        }
        versions.sort_by(|a, b| compare_kube_versions(a.version, b.version));
        let namespaced = spec["scope"] != "Cluster";
        let terminating = definition["metadata"]["deletionTimestamp"].is_string();
        Some(CustomResource { group, names, namespaced, versions, terminating })
    }

    pub fn version(&self, version: &str) -> Option<&ServedVersion> {
        self.versions.iter().find(|v| v.version == version)
    }

    /// The store of the objects as their highest-priority served version shows them (what
    /// in-process controllers read and delete them through).
    pub fn store<'a>(&'a self, storage: &'a dyn crate::storage::Storage, config: &'a StoreConfig) -> Option<Store<'a>> {
        let version = self.versions.first()?;
        let kind = Kind { group: self.group.clone(), version: version.version.to_owned(), kind: self.names.kind.clone() };
        Some(Store::new(storage, config, &self.group, &self.names.plural, kind).with_strategy(&version.strategy))
    }

    /// The discovery entries of one served version: the resource, and its status subresource
    /// when on (upstream's `crdHandler` discovery: every verb, the storage version's hash).
    fn api_resources(&self, version: &ServedVersion) -> Vec<APIResource> {
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        let storage_version = version.strategy.storage_version().unwrap_or(version.version);
        let mut entries = vec![APIResource {
            name: self.names.plural.clone(),
            singular_name: self.names.singular.clone(),
            namespaced: self.namespaced,
            group: None,
            version: None,
            kind: self.names.kind.clone(),
            verbs: Verbs { items: strings(&["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]) },
            short_names: self.names.short_names.clone(),
            categories: self.names.categories.clone(),
            storage_version_hash: Some(crate::discovery::storage_version_hash(&self.group, storage_version, &self.names.kind)),
        }];
        let subresource = |name: &str, group: Option<&str>, version: Option<&str>, kind: &str| APIResource {
            name: format!("{}/{name}", self.names.plural),
            singular_name: String::new(),
            namespaced: self.namespaced,
            group: group.map(str::to_owned),
            version: version.map(str::to_owned),
            kind: kind.to_owned(),
            verbs: Verbs { items: strings(&["get", "patch", "update"]) },
            short_names: Vec::new(),
            categories: Vec::new(),
            storage_version_hash: None,
        };
        if version.strategy.scale.is_some() {
            entries.push(subresource("scale", Some("autoscaling"), Some("v1"), "Scale"));
        }
        if version.strategy.status {
            entries.push(subresource("status", None, None, &self.names.kind));
        }
        entries
    }
}

/// The custom resources served now, by group and plural. The definitions' controller replaces
/// the whole map at each change; requests take a snapshot.
#[derive(Default)]
pub struct CustomResources {
    served: RwLock<Arc<Served>>,
    /// What discovery and `/openapi/v3` show of them, made once per change rather than at
    /// each request (clients ask at every command).
    documents: RwLock<Arc<Documents>>,
}

/// The served resources as discovery and OpenAPI show them.
#[derive(Default)]
pub struct Documents {
    pub discovery: Vec<RuntimeGroup>,
    pub openapi: Vec<super::openapi::Document>,
    /// `/openapi/v2` with these resources merged in, JSON then protobuf, each made on its
    /// first request (most clients read only v3).
    openapi_v2: OnceLock<Served2>,
    openapi_v2_protobuf: OnceLock<Served2>,
}

impl Documents {
    /// `/openapi/v2` as JSON: `built_in` when no custom resource is served, else `built_in`
    /// with their schemas and paths.
    pub fn openapi_v2<'a>(&'a self, built_in: &'a Served2) -> &'a Served2 {
        if self.openapi.is_empty() {
            return built_in;
        }
        self.openapi_v2.get_or_init(|| {
            let documents = self.openapi.iter().filter_map(|d| serde_json::from_slice(&d.body).ok());
            crate::openapi_v2::merged(built_in, documents)
        })
    }

    /// `/openapi/v2` in protobuf: [`Self::openapi_v2`]'s document, or `built_in` when that is
    /// the built-in one.
    pub fn openapi_v2_protobuf<'a>(&'a self, json: &Served2, built_in: &'a Served2) -> &'a Served2 {
        if self.openapi.is_empty() {
            return built_in;
        }
        self.openapi_v2_protobuf.get_or_init(|| crate::openapi_v2::protobuf_of(json))
    }
}

/// The served custom resources by group and plural.
pub type Served = BTreeMap<(String, String), Arc<CustomResource>>;

impl CustomResources {
    /// The resource `plural` of `group`, if a definition serves it.
    pub fn get(&self, group: &str, plural: &str) -> Option<Arc<CustomResource>> {
        self.snapshot().get(&(group.to_owned(), plural.to_owned())).cloned()
    }

    /// Every served custom resource, by group and plural.
    pub fn snapshot(&self) -> Arc<Served> {
        self.served.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The served groups as discovery lists them, and their OpenAPI documents.
    pub fn documents(&self) -> Arc<Documents> {
        self.documents.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The served groups as discovery lists them, by name.
    fn discovery(served: &Served) -> Vec<RuntimeGroup> {
        let mut groups: BTreeMap<&str, BTreeMap<&str, Vec<APIResource>>> = BTreeMap::new();
        for resource in served.values() {
            for version in &resource.versions {
                groups.entry(&resource.group).or_default().entry(version.version).or_default().extend(resource.api_resources(version));
            }
        }
        groups
            .into_iter()
            .map(|(group, versions)| {
                let mut versions: Vec<RuntimeVersion> = versions
                    .into_iter()
                    .map(|(version, mut resources)| {
                        resources.sort_by(|a, b| a.name.cmp(&b.name));
                        RuntimeVersion { version: version.to_owned(), resources }
                    })
                    .collect();
                versions.sort_by(|a, b| compare_kube_versions(&a.version, &b.version));
                RuntimeGroup { name: group.to_owned(), versions }
            })
            .collect()
    }

    pub fn replace(&self, served: Vec<CustomResource>) {
        let map: Served = served.into_iter().map(|r| ((r.group.clone(), r.names.plural.clone()), Arc::new(r))).collect();
        let documents = Documents {
            discovery: Self::discovery(&map),
            openapi: super::openapi::v3_documents(&map),
            openapi_v2: OnceLock::new(),
            openapi_v2_protobuf: OnceLock::new(),
        };
        *self.served.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(map);
        *self.documents.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(documents);
    }
}

/// The schemas of a definition's versions, each read once when the definition is served
/// (shared by the versions' strategies: a stored object is read by its own version's schema).
/// A schema that cannot be read is kept as its error: the version's writes are refused with it,
/// as upstream's handler refuses to serve such a version ("the server could not properly serve
/// the CR schema").
struct VersionSchemas {
    by_version: BTreeMap<String, Result<Schema, SchemaError>>,
    /// The schemas as written, which field management reads list and map types from.
    raw: BTreeMap<String, Arc<Value>>,
}

impl VersionSchemas {
    /// [`VersionSchemas::of`], read once per definition and generation: the definitions'
    /// controller makes every served resource anew at each change of any definition, and the
    /// largest schemas take milliseconds to read. A definition's schemas change only with its
    /// spec, which bumps its generation.
    fn shared(definition: &Value) -> Arc<VersionSchemas> {
        static READ: Mutex<BTreeMap<(String, i64), Weak<VersionSchemas>>> = Mutex::new(BTreeMap::new());
        let uid = definition["metadata"]["uid"].as_str().filter(|uid| !uid.is_empty());
        let Some(key) = uid.zip(definition["metadata"]["generation"].as_i64()).map(|(uid, generation)| (uid.to_owned(), generation)) else {
            return Arc::new(VersionSchemas::of(definition));
        };
        let mut read = READ.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(schemas) = read.get(&key).and_then(Weak::upgrade) {
            return schemas;
        }
        let schemas = Arc::new(VersionSchemas::of(definition));
        // Entries of definitions no longer served go with the next one read.
        read.retain(|_, schemas| schemas.strong_count() > 0);
        read.insert(key, Arc::downgrade(&schemas));
        schemas
    }

    /// Every version's `schema.openAPIV3Schema` (versions without one have none).
    fn of(definition: &Value) -> VersionSchemas {
        let preserve_unknown_fields = definition["spec"]["preserveUnknownFields"] == true;
        let name = definition["metadata"]["name"].as_str().unwrap_or_default();
        let by_version = definition["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let version = v["name"].as_str()?;
                let schema = Schema::parse(v["schema"].get("openAPIV3Schema")?, preserve_unknown_fields);
                if let Err(e) = &schema {
                    tracing::warn!(definition = name, version, error = %e, "custom resource schema cannot be served; writes are refused");
                }
                Some((version.to_owned(), schema))
            })
            .collect();
        let raw = definition["spec"]["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v["name"].as_str()?.to_owned(), Arc::new(v["schema"].get("openAPIV3Schema")?.clone()))))
            .collect();
        VersionSchemas { by_version, raw }
    }

    /// The schema of `version`: `Ok(None)` when it has none.
    fn get(&self, version: &str) -> Result<Option<&Schema>, &SchemaError> {
        self.by_version.get(version).map(Result::as_ref).transpose()
    }
}

/// The strategy of a custom resource (upstream's `customResourceStrategy`): objects keyed
/// under `<group>/<plural>`, stored in the definition's storage version, `generation` bumped
/// by any change but metadata (and status, when the status subresource is on), pruned,
/// defaulted and validated by the version's schema.
pub struct CustomResourceStrategy {
    prefix: String,
    storage_version: String,
    status: bool,
    scale: Option<ScaleFacts>,
    columns: Arc<CustomColumns>,
    namespaced: bool,
    /// The version's `selectableFields`, as field selector labels (`spec.color`).
    selectable: Arc<[String]>,
    /// The version this strategy serves.
    version: String,
    schemas: Arc<VersionSchemas>,
    /// [`Strategy::converter`], made once.
    converter: Converter,
}

impl CustomResourceStrategy {
    fn new(
        prefix: String,
        storage_version: String,
        version: &Value,
        namespaced: bool,
        schemas: Arc<VersionSchemas>,
        conversion: Conversion,
    ) -> Option<CustomResourceStrategy> {
        let served = version["name"].as_str()?.to_owned();
        // Upstream's storage codec prunes and defaults an object by the schema of the version
        // it is in, converts it (the definition's conversion), and prunes the result by the
        // schema of the version it is converted to.
        let converter: Converter = {
            let schemas = schemas.clone();
            Arc::new(move |from: &Kind, mut object: Value, to: &str| {
                if let Ok(Some(schema)) = schemas.get(&from.version) {
                    schema.normalize(&mut object);
                }
                if from.version == to {
                    return Ok(object);
                }
                let to_kind = Kind { version: to.to_owned(), ..from.clone() };
                let mut object = conversion.convert(object, &to_kind)?;
                if let Ok(Some(schema)) = schemas.get(to) {
                    schema.prune(&mut object);
                }
                Ok(object)
            })
        };
        Some(CustomResourceStrategy {
            prefix,
            storage_version,
            status: version["subresources"]["status"].is_object(),
            scale: ScaleFacts::custom(&version["subresources"]["scale"]),
            columns: Arc::new(CustomColumns::new(version["additionalPrinterColumns"].as_array().map_or(&[], Vec::as_slice))),
            namespaced,
            selectable: version["selectableFields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["jsonPath"].as_str()?.strip_prefix('.').map(str::to_owned))
                .collect(),
            version: served,
            schemas,
            converter,
        })
    }

    /// The served version's schema, or the error every validation answers while it cannot be
    /// read.
    fn schema(&self) -> Result<Option<&Schema>, Vec<FieldError>> {
        self.schemas
            .get(&self.version)
            .map_err(|e| vec![FieldError::internal("<nil>", format!("the server could not properly serve the CR schema: {e}"))])
    }

    /// Pruning and defaulting by the served version's schema (none when it has none or cannot
    /// be read, in which case validation refuses the write). Answers the unknown fields.
    fn coerce(&self, object: &mut Value) -> Vec<String> {
        match self.schema() {
            Ok(Some(schema)) => schema.normalize(object),
            _ => Vec::new(),
        }
    }
}

impl Strategy for CustomResourceStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn field_schema(&self) -> Option<Arc<Value>> {
        self.schemas.raw.get(&self.version).cloned()
    }

    fn version_field_schema(&self, version: &str) -> Option<&Value> {
        self.schemas.raw.get(version).map(|schema| &**schema)
    }

    fn storage_prefix(&self) -> Option<&str> {
        Some(&self.prefix)
    }

    fn storage_version(&self) -> Option<&str> {
        Some(&self.storage_version)
    }

    fn status_subresource(&self) -> Option<bool> {
        Some(self.status)
    }

    /// apiextensions-apiserver's field label conversion: the name, the namespace of a
    /// namespaced resource, and the version's selectable fields.
    fn convert_field_label(&self, _: (&str, &str, &str), label: &str, value: &str) -> Result<(String, String), SelectorError> {
        let known =
            label == "metadata.name" || (self.namespaced && label == "metadata.namespace") || self.selectable.iter().any(|f| f == label);
        match known {
            true => Ok((label.to_owned(), value.to_owned())),
            false => Err(SelectorError::UnsupportedField(format!("field label not supported: {label}"))),
        }
    }

    /// The name, the namespace, and each selectable field's value as text (a string as it is,
    /// a number or boolean formatted; absent when the object has none).
    fn field_set(&self, _: &str, _: &str) -> FieldSet {
        let (selectable, namespaced) = (self.selectable.clone(), self.namespaced);
        Arc::new(move |object: &Value| {
            let mut fields = BTreeMap::new();
            let meta = &object["metadata"];
            fields.insert("metadata.name".to_owned(), meta["name"].as_str().unwrap_or_default().to_owned());
            if namespaced {
                fields.insert("metadata.namespace".to_owned(), meta["namespace"].as_str().unwrap_or_default().to_owned());
            }
            for label in selectable.iter() {
                let value = label.split('.').fold(object, |value, field| &value[field]);
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(_) | Value::Bool(_) => value.to_string(),
                    _ => continue,
                };
                fields.insert(label.clone(), text);
            }
            fields
        })
    }

    fn scale(&self) -> Option<ScaleFacts> {
        self.scale.clone()
    }

    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Custom(self.columns.clone())
    }

    /// Upstream prunes and defaults when it decodes (`decode_unstructured`); this makes every
    /// other writer's object (a patch's, a controller's) the same.
    fn normalize(&self, object: &mut Object) -> Result<(), ApiError> {
        self.coerce(object.value_mut()?);
        Ok(())
    }

    fn decode_unstructured(&self, object: &mut Value) -> Vec<String> {
        self.coerce(object)
    }

    fn converter(&self) -> Option<Converter> {
        Some(self.converter.clone())
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        match self.schema() {
            Ok(Some(schema)) => schema.validate(object),
            Ok(None) => Vec::new(),
            Err(errs) => errs,
        }
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        match self.schema() {
            Ok(Some(schema)) => schema.validate_update(new, old),
            Ok(None) => Vec::new(),
            Err(errs) => errs,
        }
    }

    /// The status subresource's write: the merged object pruned and defaulted like any other
    /// (a request's body already was; an in-process writer's was not).
    fn prepare_status_update(&self, new: &mut Object, old: &Object) -> Result<(), ApiError> {
        let _ = old;
        self.coerce(new.value_mut()?);
        Ok(())
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(match self.schema() {
            Ok(Some(schema)) => schema.validate_status_update(new.value()?, old.value()?),
            Ok(None) => Vec::new(),
            Err(errs) => errs,
        })
    }

    fn generation_changed(&self, old: &Object, new: &Object) -> Result<bool, ApiError> {
        let (old, new) = (old.value()?, new.value()?);
        let counted = |object: &Value| -> BTreeMap<String, Value> {
            object
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(field, _)| {
                    let metadata = matches!(field.as_str(), "metadata" | "apiVersion" | "kind");
                    let own_status = self.status && *field == "status";
                    !metadata && !own_status
                })
                .map(|(field, value)| (field.clone(), value.clone()))
                .collect()
        };
        Ok(counted(old) != counted(new))
    }
}

/// Upstream's `CompareKubeAwareVersionStrings` as an ordering, highest priority first: GA
/// before beta before alpha, higher numbers first within each; versions of another form
/// after them all, in lexical order.
pub fn compare_kube_versions(a: &str, b: &str) -> std::cmp::Ordering {
    /// (major, stability rank: GA 3, beta 2, alpha 1, minor), for `v<major>[(alpha|beta)<minor>]`.
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok().filter(|m| *m > 0)?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 3, 0));
        }
        let (rank, minor) = tail.strip_prefix("beta").map(|m| (2, m)).or_else(|| tail.strip_prefix("alpha").map(|m| (1, m)))?;
        let minor: u64 = minor.parse().ok().filter(|m| *m > 0)?;
        Some((major, rank, minor))
    }
    match (parse(a), parse(b)) {
        (Some((ma, ra, na)), Some((mb, rb, nb))) => rb.cmp(&ra).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The one `'static` copy of a name a route is made of. The routes of the generated scheme
/// are `'static`, and a custom resource's are made to match; names are kept once each, so the
/// memory this holds grows with the distinct names definitions ever used, not with requests.
pub fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn definition(versions: Value) -> Value {
        json!({
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions},
            "status": {"acceptedNames": {"plural": "widgets", "kind": "Widget"}},
        })
    }

    #[test]
    fn names_default_as_upstream() {
        let names = Names::of(&json!({"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]}));
        assert_eq!((names.singular.as_str(), names.list_kind.as_str()), ("widget", "WidgetList"));
        assert_eq!(
            names.to_json(),
            json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]})
        );
    }

    #[test]
    fn names_taken_in_a_group_conflict() {
        let widgets = || Names::of(&json!({"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]}));
        let conflict = |names: Value| {
            let mut taken = TakenNames::default();
            taken.accept(&widgets()).unwrap();
            taken.accept(&Names::of(&names)).unwrap_err()
        };
        assert_eq!(conflict(json!({"plural": "widgets", "kind": "Other"})).reason, "PluralConflict");
        assert_eq!(conflict(json!({"plural": "others", "singular": "wd", "kind": "Other"})).reason, "SingularConflict");
        assert_eq!(conflict(json!({"plural": "others", "kind": "Other", "shortNames": ["wd"]})).message, "\"wd\" is already in use");
        assert_eq!(conflict(json!({"plural": "others", "singular": "other", "kind": "Widget"})).reason, "KindConflict");
        let mut taken = TakenNames::default();
        taken.accept(&widgets()).unwrap();
        assert!(taken.accept(&Names::of(&json!({"plural": "gadgets", "kind": "Gadget"}))).is_ok());
    }

    #[test]
    fn served_versions_in_priority_order() {
        let resource = CustomResource::from_definition(&definition(json!([
            {"name": "v1alpha1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
            {"name": "v2beta1", "served": true, "storage": false},
            {"name": "v0", "served": false, "storage": false},
        ])))
        .unwrap();
        let versions: Vec<&str> = resource.versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, ["v1", "v2beta1", "v1alpha1"]);
        assert!(resource.namespaced);
        let v1 = resource.version("v1").unwrap();
        assert_eq!((v1.strategy.storage_prefix(), v1.strategy.storage_version()), (Some("example.com/widgets"), Some("v1")));
        assert_eq!(v1.strategy.status_subresource(), Some(true));
        assert_eq!(resource.version("v1alpha1").unwrap().strategy.status_subresource(), Some(false));
    }

    #[test]
    fn generation_counts_all_but_metadata_and_a_subresource_status() {
        let resource = CustomResource::from_definition(&definition(json!([
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
            {"name": "v2", "served": true, "storage": false},
        ])))
        .unwrap();
        let old = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"size": 1}, "status": {"ready": false}});
        let relabelled = json!({"metadata": {"labels": {"a": "2"}}, "spec": {"size": 1}, "status": {"ready": false}});
        let with_status = json!({"metadata": {}, "spec": {"size": 1}, "status": {"ready": true}});
        let resized = json!({"metadata": {}, "spec": {"size": 2}, "status": {"ready": false}});
        let (v1, v2) = (&resource.version("v1").unwrap().strategy, &resource.version("v2").unwrap().strategy);
        let (old, relabelled, with_status, resized) = (old.into(), relabelled.into(), with_status.into(), resized.into());
        assert!(!v1.generation_changed(&old, &relabelled).unwrap());
        assert!(!v1.generation_changed(&old, &with_status).unwrap(), "status has its own subresource");
        assert!(v2.generation_changed(&old, &with_status).unwrap(), "without the subresource status is content");
        assert!(v1.generation_changed(&old, &resized).unwrap());
    }

    /// A definition whose v1 has a schema and a status subresource, and whose v2 (stored) has
    /// a different default.
    fn with_schemas() -> Value {
        let schema = |default: &str| {
            json!({"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "maximum": 10},
                    "color": {"type": "string", "default": default},
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            }}})
        };
        let mut definition = definition(json!([
            {"name": "v1", "served": true, "storage": false, "subresources": {"status": {}}, "schema": schema("red")},
            {"name": "v2", "served": true, "storage": true, "schema": schema("blue")},
        ]));
        definition["metadata"] = json!({"name": "widgets.example.com", "uid": "u-1", "generation": 1});
        definition
    }

    #[test]
    fn the_strategy_applies_the_versions_schema() {
        let resource = CustomResource::from_definition(&with_schemas()).unwrap();
        let v1 = &resource.version("v1").unwrap().strategy;
        let mut object =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": 3, "shape": "round"}});
        assert_eq!(v1.decode_unstructured(&mut object), ["spec.shape"]);
        assert_eq!(object["spec"], json!({"size": 3, "color": "red"}));
        let invalid = json!({"metadata": {"name": "a"}, "spec": {"size": 11}});
        let errs: Vec<String> = v1.validate(&invalid).iter().map(ToString::to_string).collect();
        assert_eq!(errs, ["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"]);
        // An update leaves what did not change alone; the status is its subresource's.
        assert!(v1.validate_update(&invalid, &invalid).is_empty());
        let ready = json!({"metadata": {"name": "a"}, "spec": {"size": 11}, "status": {"ready": true}});
        let status_update = |old: &Value, new: &Value| {
            let errs = v1.validate_status_update(&old.clone().into(), &new.clone().into()).unwrap();
            errs.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        assert!(status_update(&invalid, &ready).is_empty(), "the spec is not the status subresource's");
        let wrong_status = json!({"metadata": {}, "spec": {}, "status": {"ready": "yes"}});
        assert_eq!(
            status_update(&invalid, &wrong_status),
            [r#"status.ready: Invalid value: "string": ready in body must be of type boolean: "string""#]
        );
        // A stored object is defaulted by the schema of the version it was stored in.
        let converter = v1.converter().unwrap();
        let stored_kind = Kind { group: "example.com".into(), version: "v2".into(), kind: "Widget".into() };
        let stored = json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"size": 1}});
        let read = converter(&stored_kind, stored, "v1").unwrap();
        assert_eq!(read["spec"]["color"], "blue");
        assert_eq!(read["apiVersion"], "example.com/v1");
    }

    #[test]
    fn schemas_are_read_once_per_generation() {
        let definition = with_schemas();
        let first = CustomResource::from_definition(&definition).unwrap();
        let again = CustomResource::from_definition(&definition).unwrap();
        let schemas = |r: &CustomResource| r.version("v1").unwrap().strategy.schemas.clone();
        assert!(Arc::ptr_eq(&schemas(&first), &schemas(&again)));
        let mut changed = definition.clone();
        changed["metadata"]["generation"] = json!(2);
        assert!(!Arc::ptr_eq(&schemas(&first), &schemas(&CustomResource::from_definition(&changed).unwrap())));
    }

    #[test]
    fn a_schema_that_cannot_be_read_refuses_writes() {
        let resource = CustomResource::from_definition(&definition(json!([
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "maxProperties": "many"}}},
        ])))
        .unwrap();
        let errs = resource.version("v1").unwrap().strategy.validate(&json!({"metadata": {"name": "a"}}));
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                r#"<nil>: Internal error: the server could not properly serve the CR schema: openAPIV3Schema.maxProperties: Invalid value: "many": must be an integer"#
            ]
        );
    }

    #[test]
    fn kube_version_order() {
        let mut versions = vec!["foo1", "v1alpha1", "v10", "v2", "v11beta2", "v1", "v10beta3", "v12alpha1", "v11alpha2", "foo10"];
        versions.sort_by(|a, b| compare_kube_versions(a, b));
        assert_eq!(versions, ["v10", "v2", "v1", "v11beta2", "v10beta3", "v12alpha1", "v11alpha2", "v1alpha1", "foo1", "foo10"]);
    }

    #[test]
    fn names_are_interned_once() {
        assert!(std::ptr::eq(intern("widgets-intern-test"), intern(&String::from("widgets-intern-test"))));
    }
}
