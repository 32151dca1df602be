//! The registry layer (upstream's `k8s.io/apiserver/pkg/registry` and `pkg/registry`): what a
//! resource's objects are and how they are written, below the HTTP handlers and above storage.
//!
//! - [`strategy`]: the [`Strategy`](strategy::Strategy) trait and the one table mapping a
//!   resource to its strategy; each resource with quirks has its file under its group's folder
//!   (`core/pods.rs`, `apps/deployments.rs`, ...), as upstream's `strategy.go` files.
//! - [`admission`]: the admission chain (mutating plugins, then validating plugins).
//! - [`validation`] and [`defaults`]: upstream's `pkg/apis/<group>/validation` and defaulters.
//! - [`objects`]: objects in and out of their wire and storage forms through the scheme.
//! - [`keys`]: where objects live in storage.

pub mod admission;
pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod authentication;
pub mod autoscaling;
pub mod batch;
/// The objects created at start-up (system namespaces, the `kubernetes` Service, system
/// priority classes, flow-control configuration), as data.
pub mod bootstrap;
pub mod certificates;
pub mod coordination;
pub mod core;
/// Upstream's `SetDefaults_*`, one module per API group (applied to request bodies on decoding).
pub mod defaults;
pub mod discovery;
pub mod fieldmanager;
pub mod flowcontrol;
pub mod keys;
pub mod kubelet;
pub mod networking;
pub mod node;
pub mod object;
pub mod objects;
pub mod policy;
pub mod rbac;
pub mod resource;
pub mod reviews;
pub mod scale;
pub mod scheduling;
pub mod storage;
pub mod store;
pub mod strategy;
pub mod validation;

pub use strategy::for_resource as strategy;

/// Groups whose objects upstream stores as JSON rather than protobuf (served by
/// apiextensions-apiserver and kube-aggregator, `specialDefaultMediaTypes`).
pub fn stored_as_json(group: &str) -> bool {
    matches!(group, "apiextensions.k8s.io" | "apiregistration.k8s.io")
}

/// Whether the resource has a `status` subresource: then its main resource ignores status
/// changes and its status subresource ignores everything else (upstream's status strategies).
pub fn has_status_subresource(group: &str, resource: &str) -> bool {
    static WITH_STATUS: std::sync::LazyLock<crate::group_index::GroupIndex<()>> = std::sync::LazyLock::new(|| {
        kapi_api::scheme::RESOURCES
            .iter()
            .filter(|r| r.subresources.iter().any(|s| s.name == "status"))
            .map(|r| (r.group, r.resource, ()))
            .collect()
    });
    WITH_STATUS.get(group, resource).is_some()
}

/// How a delete proceeds for an object beyond its own `metadata.finalizers`.
pub enum DeletionFlow {
    /// Deleted as soon as no finalizer is left (the generic store).
    Generic,
    /// Marked (`deletionTimestamp`, see `Strategy::mark_deleting`) and finished by a system component:
    /// a namespace with `spec.finalizers` waits for its contents to be removed
    /// (`crate::controllers::namespace`). Deleting it again meanwhile is a 409 with
    /// `in_progress`.
    AwaitSystem { in_progress: &'static str },
    /// Marked on the first delete, when [`Strategy::mark_deleting`](strategy::Strategy::mark_deleting)
    /// adds the finalizer of the system component that finishes it (a CustomResourceDefinition's
    /// objects are deleted first); later deletes find it pending, as any object with finalizers.
    MarkFirst,
}

impl DeletionFlow {
    /// Whether a first delete only marks the object, whatever its finalizers.
    pub fn marks_first(&self) -> bool {
        !matches!(self, DeletionFlow::Generic)
    }
}

pub use scale::{ScaleFacts, ScaleSelector};

/// Requests served by a resource's own REST code instead of the generic store (upstream's
/// `BindingREST`, `EvictionREST`, the review resources' REST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnRest {
    /// `pods/<name>/binding` and the legacy `bindings` collection: assign a pod to a node.
    PodBinding,
    /// `pods/<name>/eviction`: delete a pod if its disruption budget allows.
    PodEviction,
    /// The authentication and authorization reviews: answered, never stored.
    Review(reviews::Review),
    /// `componentstatuses`: the control plane's health, probed at each request
    /// (`componentstatuses.rs`).
    ComponentStatuses,
    /// `serviceaccounts/<name>/token`: a TokenRequest (`core/serviceaccounts/tokens.rs`).
    ServiceAccountToken,
}

/// Why a new object was refused by a create hook or an admission plugin, answered as upstream answers each.
#[derive(Debug)]
pub enum Rejection {
    /// Field errors found while allocating (a Service's cluster IP or node port): a 422
    /// `Invalid`, as upstream's registry reports them.
    Invalid(Vec<crate::status::FieldError>),
    /// An admission plugin's refusal (`admission.NewForbidden`): a 403,
    /// `pods "x" is forbidden: <message>`.
    Forbidden(String),
    /// The store failed or held something unreadable: a 500.
    Internal(String),
}

impl Rejection {
    /// A hook's failure to take the object in the form it works on
    /// ([`object::Object::typed_mut`], [`object::Object::value_mut`]): always the server's
    /// own, a 500.
    pub fn object_form(e: crate::status::ApiError) -> Rejection {
        Rejection::Internal(e.message)
    }
}

impl From<Vec<crate::status::FieldError>> for Rejection {
    fn from(errs: Vec<crate::status::FieldError>) -> Self {
        Rejection::Invalid(errs)
    }
}

/// The namespaces kube-apiserver creates at start-up (upstream's system namespaces controller).
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

#[cfg(test)]
mod tests {
    use super::*;

    /// The indexed look-ups answer as a scan of the generated tables, for every resource and kind.
    #[test]
    fn indexed_lookups_agree_with_the_generated_tables() {
        for r in kapi_api::scheme::RESOURCES {
            let scanned = kapi_api::scheme::RESOURCES
                .iter()
                .any(|s| s.group == r.group && s.resource == r.resource && s.subresources.iter().any(|sub| sub.name == "status"));
            assert_eq!(has_status_subresource(r.group, r.resource), scanned, "{}/{}", r.group, r.resource);
            let kind = objects::Kind { group: r.kind.group.into(), version: r.kind.version.into(), kind: r.kind.kind.into() };
            let stored = kapi_api::scheme::STORAGE_VERSIONS.iter().find(|(g, k, _)| *g == r.kind.group && *k == r.kind.kind);
            let expected = stored.map_or_else(
                || kind.clone(),
                |(_, _, s)| objects::Kind { group: s.group.into(), version: s.version.into(), kind: s.kind.into() },
            );
            assert_eq!(objects::storage_kind(&kind), expected);
        }
        assert!(!has_status_subresource("", "no-such-resource"));
    }
}
