//! The shapes of the generated scheme and route tables (`kapi_api::scheme`, `kapi_api::routes`),
//! and the traits generated kinds implement. The tables themselves are generated; these types
//! are hand-written so the runtime can name them without depending on 771 generated types.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// What the OpenAPI document says about each JSON field of a generated type: the facts generic
/// code needs to patch (strategic merge) and validate without knowing the type.
pub trait TypeInfo {
    /// The JSON fields, in declaration order (embedded structs' fields inlined, as in JSON).
    fn fields() -> &'static [FieldInfo];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldShape {
    /// A string, number, boolean or a special type with a scalar JSON form (Time, Quantity, ...).
    Scalar,
    /// A nested object (see [`FieldInfo::elem`]), or embedded JSON (`RawExtension`).
    Object,
    List,
    /// A JSON object with string keys.
    Map,
}

#[derive(Debug, Clone, Copy)]
pub struct FieldInfo {
    pub json_name: &'static str,
    /// The field's description from the specs (what `kubectl explain` and table column
    /// definitions show).
    pub description: &'static str,
    pub required: bool,
    pub shape: FieldShape,
    /// `x-kubernetes-patch-strategy` (e.g. `merge`, `retainKeys`, `merge,retainKeys`).
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`: `atomic` or `granular`; for a field holding a struct (or a list
    /// of them), the struct's own when the field sets none.
    pub map_type: Option<&'static str>,
    /// The declarative default of the Go field (`+default=`), as JSON text: what upstream's
    /// server-side models give a list map key an item leaves out (a port's `protocol`).
    pub default: Option<&'static str>,
    /// The fields of the (element) type, when it is a generated object type.
    pub elem: Option<fn() -> &'static [FieldInfo]>,
}

impl FieldInfo {
    /// A field with a name and a shape and nothing else: for hand-written field tables (tests'
    /// stand-ins for generated types).
    pub const fn new(json_name: &'static str, shape: FieldShape) -> FieldInfo {
        FieldInfo {
            json_name,
            description: "",
            required: false,
            shape,
            patch_strategy: None,
            patch_merge_key: None,
            list_type: None,
            list_map_keys: &[],
            map_type: None,
            default: None,
            elem: None,
        }
    }
}

/// A generated type that is a Kubernetes kind: it has protobuf and JSON forms and carries
/// `apiVersion`/`kind` (TypeMeta) in JSON and in the protobuf envelope. Its nested values can be
/// walked ([`crate::Walk`]), which is how defaulting reaches them.
pub trait Object:
    prost::Message
    + Default
    + Clone
    + Debug
    + PartialEq
    + Serialize
    + DeserializeOwned
    + crate::write::WriteJson
    + crate::read::FromValue
    + TypeInfo
    + crate::Walk
    + Send
    + Sync
    + 'static
{
    /// The proto message this type implements, e.g. `k8s.io.api.apps.v1.Deployment`.
    const MESSAGE: &'static str;

    /// `(apiVersion, kind)` as set on this value.
    fn type_meta(&self) -> (Option<&str>, Option<&str>);
    fn set_type_meta(&mut self, api_version: &str, kind: &str);

    /// Sets `metadata.resourceVersion` (a no-op for kinds without object or list metadata): the
    /// store's revision, which is never stored in the object itself.
    fn set_resource_version(&mut self, resource_version: &str);

    /// The object's `metadata`, for kinds whose metadata is an `ObjectMeta` and that have one:
    /// the generated type, which this crate cannot name, so callers downcast it. `None` for
    /// lists, for kinds without one, and when it is absent.
    fn object_meta(&self) -> Option<&dyn std::any::Any>;

    /// [`Object::object_meta`], to change (`None` when absent: nothing is added).
    fn object_meta_mut(&mut self) -> Option<&mut dyn std::any::Any>;

    /// A list kind's items, each as an object of its kind; `None` for every other kind.
    fn list_items_mut(&mut self) -> Option<Vec<&mut dyn crate::DynObject>>;

    /// Whether `other`'s `spec` is this object's, compared as Go values are, so as their JSON
    /// forms are (a value read from protobuf is put in its Go form first,
    /// [`crate::Walk::canonicalize`]): what `metadata.generation` counts. `true` for kinds
    /// without a spec (what the generator leaves them).
    fn spec_equals(&self, other: &Self) -> bool {
        let _ = other;
        true
    }

    /// Whether `other`'s `status` is this object's, compared as [`Object::spec_equals`]
    /// compares specs. `true` for kinds without a status.
    fn status_equals(&self, other: &Self) -> bool {
        let _ = other;
        true
    }

    /// Puts a copy of `other`'s `status` in place of this object's (nothing for kinds without
    /// one).
    fn copy_status_from(&mut self, other: &Self) {
        let _ = other;
    }

    /// Converts to the kind's hub (internal) type, boxed so the runtime can pick the target
    /// version at run time (the hub of a group served in one version is the type itself).
    fn into_hub(self) -> crate::Hub;

    /// Converts from a hub value; gives it back when it is not this kind's hub type.
    fn from_hub(hub: crate::Hub) -> Result<Self, crate::Hub>;

    /// Whether the kind is its own hub (its group is served in one version), so its internal
    /// object is its external JSON and converting between them is the identity.
    const INTERNAL_IS_EXTERNAL: bool;

    /// The object of this kind converted from an internal object as JSON (its hub
    /// serialised, [`crate::HubObject::to_value`]).
    fn from_internal(internal: serde_json::Value) -> Result<Self, serde_json::Error>;
}

/// Called with the Rust type of a kind found in the scheme at run time; lets generic code (the
/// codec, the REST handlers) work on any kind by monomorphisation instead of a 700-arm match.
pub trait KindVisitor {
    type Output;
    fn visit<T: Object>(self) -> Self::Output;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupVersionKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
}

impl GroupVersionKind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.to_owned() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// A kind and the proto message implementing it.
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    pub gvk: GroupVersionKind,
    pub message: &'static str,
}

/// A group with its versions in priority order; the first enabled one is preferred.
#[derive(Debug, Clone, Copy)]
pub struct GroupInfo {
    pub name: &'static str,
    /// Higher first in `/apis`.
    pub priority: i64,
    /// Served versions, highest priority first.
    pub versions: &'static [&'static str],
    /// The preferred version among those enabled by default.
    pub preferred_version: &'static str,
}

/// A served resource with its discovery facts.
#[derive(Debug, Clone, Copy)]
pub struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    /// Plural resource name, e.g. `deployments`.
    pub resource: &'static str,
    pub singular: &'static str,
    pub kind: GroupVersionKind,
    /// The kind of list responses (`PodList`).
    pub list_kind: Option<&'static str>,
    pub namespaced: bool,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub subresources: &'static [SubresourceInfo],
}

#[derive(Debug, Clone, Copy)]
pub struct SubresourceInfo {
    pub name: &'static str,
    pub kind: GroupVersionKind,
    pub verbs: &'static [&'static str],
}

#[derive(Debug, Clone, Copy)]
pub struct GroupVersionInfo {
    pub group: &'static str,
    pub version: &'static str,
    /// Higher first in `/apis`.
    pub group_priority: i64,
    /// Higher first within a group; the highest enabled version is the preferred one.
    pub version_priority: i64,
    /// Has routes in the OpenAPI document (otherwise its types exist only for decoding).
    pub served: bool,
    pub enabled_by_default: bool,
}

/// One (path, method) of the OpenAPI document.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub path: &'static str,
    pub method: &'static str,
    pub operation_id: &'static str,
    /// `None` for non-resource paths (discovery documents, `/version`, `/logs`, OIDC).
    pub target: Option<RouteTarget>,
}

#[derive(Debug, Clone, Copy)]
pub struct RouteTarget {
    /// `get`, `list`, `watch`, `watchlist`, `post`, `put`, `patch`, `delete`,
    /// `deletecollection` or `connect` (upstream's `x-kubernetes-action`).
    pub action: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: Option<&'static str>,
    pub namespaced: bool,
    pub named: bool,
    pub legacy_watch: bool,
    pub has_subpath: bool,
    pub kind: GroupVersionKind,
    pub patch_types: &'static [&'static str],
}
