//! The shapes of the generated scheme and route tables (`kapi_api::scheme`, `kapi_api::routes`),
//! and the traits generated kinds implement. The tables themselves are generated; these types
//! are hand-written so the runtime can name them without depending on 771 generated types.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A generated type that is a Kubernetes kind: it has protobuf and JSON forms and carries
/// `apiVersion`/`kind` (TypeMeta) in JSON and in the protobuf envelope.
pub trait Object:
    prost::Message + Default + Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The proto message this type implements, e.g. `k8s.io.api.apps.v1.Deployment`.
    const MESSAGE: &'static str;

    /// `(apiVersion, kind)` as set on this value.
    fn type_meta(&self) -> (Option<&str>, Option<&str>);
    fn set_type_meta(&mut self, api_version: &str, kind: &str);
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

/// A served resource with its discovery facts.
#[derive(Debug, Clone, Copy)]
pub struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    /// Plural resource name, e.g. `deployments`.
    pub resource: &'static str,
    pub singular: &'static str,
    pub kind: GroupVersionKind,
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
