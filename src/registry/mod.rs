//! Per-resource behaviour the generic REST code asks about: upstream's per-resource strategies
//! (`pkg/registry/<group>/<resource>/strategy.go`), kept as data and small functions, one place
//! per group, never as kind checks in the handlers.

pub mod certificates;
pub mod componentstatuses;
pub mod pods;
pub mod reviews;
pub mod services;
pub mod validation;

/// Upstream's mutating admission plugins for new pods (tolerations, priority).
pub mod admission;
/// The objects created at start-up (system namespaces, the `kubernetes` Service, system
/// priority classes, flow-control configuration), as data.
pub mod bootstrap;
/// Upstream's `SetDefaults_*`, one module per API group (applied to request bodies on decoding).
pub mod defaults;

/// Whether the resource's strategy maintains `metadata.generation` (set to 1 on create and
/// bumped when the spec changes). Upstream's strategies for these resources do; others (e.g.
/// ConfigMap, Namespace, Service) leave it unset.
pub fn tracks_generation(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        ("", "pods" | "replicationcontrollers")
            | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
            | ("batch", "jobs" | "cronjobs")
            | ("autoscaling", "horizontalpodautoscalers")
            | ("policy", "poddisruptionbudgets")
            | ("networking.k8s.io", "ingresses" | "networkpolicies")
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("admissionregistration.k8s.io", "validatingadmissionpolicies" | "mutatingadmissionpolicies")
            | ("flowcontrol.apiserver.k8s.io", "flowschemas" | "prioritylevelconfigurations")
    )
}

/// Upstream's `PrepareForCreate` work beyond defaulting (which `defaults` did on decoding): a
/// new pod is `Pending` with its QoS class, a new namespace is `Active`, labelled with its
/// (possibly generated) name and carries the `kubernetes` finalizer, a job gets its generated
/// selector. Upstream also defaults objects again when it reads them back; the status phases it
/// then gives volumes and claims (whose status a create clears) are set here once.
pub fn prepare_for_create(group: &str, resource: &str, user: Option<&crate::pki::UserInfo>, object: &mut serde_json::Value) {
    // Status is the server's to write: a created object starts with none.
    if has_status_subresource(group, resource)
        && let Some(obj) = object.as_object_mut()
    {
        obj.remove("status");
    }
    match (group, resource) {
        ("", "pods") => {
            object["status"]["phase"] = serde_json::json!("Pending");
            let spec: kapi_api::api::core::v1::PodSpec = serde_json::from_value(object["spec"].clone()).unwrap_or_default();
            object["status"]["qosClass"] = serde_json::json!(defaults::core::pod_qos_class(&spec));
        }
        ("", "namespaces") => {
            if object["spec"]["finalizers"].as_array().is_none_or(Vec::is_empty) {
                object["spec"]["finalizers"] = serde_json::json!(["kubernetes"]);
            }
            object["status"]["phase"] = serde_json::json!("Active");
            let name = object["metadata"]["name"].clone();
            object["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        }
        ("", "persistentvolumes" | "persistentvolumeclaims") => {
            object["status"]["phase"] = serde_json::json!("Pending");
        }
        ("batch", "jobs") => defaults::batch::generate_job_selector(object),
        ("certificates.k8s.io", "certificatesigningrequests") => certificates::record_requester(object, user),
        _ => {}
    }
}

/// How a delete proceeds for an object beyond its own `metadata.finalizers`.
pub enum DeletionFlow {
    /// Deleted as soon as no finalizer is left (the generic store).
    Generic,
    /// Marked (`deletionTimestamp`, see [`mark_deleting`]) and finished by a system component:
    /// a namespace with `spec.finalizers` waits for its contents to be removed
    /// (`crate::controllers::namespace`). Deleting it again meanwhile is a 409 with
    /// `in_progress`.
    AwaitSystem { in_progress: &'static str },
}

/// Upstream's namespace `Delete` (`pkg/registry/core/namespace/storage`): a namespace whose
/// `spec.finalizers` are not empty is only marked.
pub fn deletion_flow(group: &str, resource: &str, object: &serde_json::Value) -> DeletionFlow {
    match (group, resource) {
        ("", "namespaces") if object["spec"]["finalizers"].as_array().is_some_and(|f| !f.is_empty()) => DeletionFlow::AwaitSystem {
            in_progress: "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
        },
        _ => DeletionFlow::Generic,
    }
}

/// The grace period of a delete for resources deleted gracefully (upstream's
/// `CheckGracefulDelete`), `None` for the others: a pod not scheduled or already finished goes
/// at once; otherwise the request's `gracePeriodSeconds`, else the pod's
/// `terminationGracePeriodSeconds` (default 30). The kubelet ends the grace period by deleting
/// with 0; without one, `kubectl delete --force --grace-period=0` does.
pub fn grace_period(group: &str, resource: &str, object: &serde_json::Value, requested: Option<i64>) -> Option<i64> {
    match (group, resource) {
        ("", "pods") => {
            let unscheduled = object["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
            let finished = matches!(object["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
            if unscheduled || finished {
                return Some(0);
            }
            Some(requested.unwrap_or_else(|| object["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(30)).max(0))
        }
        _ => None,
    }
}

/// What changes on an object when it is marked for deletion besides `deletionTimestamp`: a
/// namespace enters the `Terminating` phase.
pub fn mark_deleting(group: &str, resource: &str, object: &mut serde_json::Value) {
    if let ("", "namespaces") = (group, resource) {
        object["status"]["phase"] = serde_json::json!("Terminating");
    }
}

/// Why an object may never be deleted (upstream's NamespaceLifecycle admission keeps the
/// system namespaces).
pub fn undeletable(group: &str, resource: &str, name: &str) -> Option<&'static str> {
    match (group, resource, name) {
        ("", "namespaces", "default" | "kube-system" | "kube-public") => Some("this namespace may not be deleted"),
        _ => None,
    }
}

/// Whether a delete answers with the deleted object (`ReturnDeletedObject` in the resource's
/// upstream store) rather than a `Status` naming it.
pub fn returns_deleted_object(group: &str, resource: &str) -> bool {
    matches!((group, resource), ("", "pods" | "namespaces" | "services" | "serviceaccounts") | ("storage.k8s.io", "storageclasses"))
}

/// Why no new object may be created in a namespace (upstream's NamespaceLifecycle admission
/// plugin), given the namespace as stored.
pub fn namespace_refuses_content(namespace: &serde_json::Value) -> Option<String> {
    let terminating = namespace["metadata"]["deletionTimestamp"].is_string() || namespace["status"]["phase"] == "Terminating";
    let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
    terminating.then(|| format!("unable to create new content in namespace {name} because it is being terminated"))
}

/// What upstream does to every written object of a resource while converting it in (before
/// any strategy): a Secret's write-only `stringData` is folded into `data` (base64) and dropped.
pub fn normalize_on_write(group: &str, resource: &str, object: &mut serde_json::Value) {
    use base64::Engine;
    if let ("", "secrets") = (group, resource)
        && let Some(serde_json::Value::Object(strings)) = object.as_object_mut().and_then(|o| o.remove("stringData"))
    {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            object["data"][key] = serde_json::json!(base64::engine::general_purpose::STANDARD.encode(text));
        }
    }
}

/// How long a resource's objects are stored after their last write, if they expire
/// (upstream's `TTLFunc`: Events, core and `events.k8s.io`, get `--event-ttl`).
pub fn storage_ttl(group: &str, resource: &str, event_ttl: std::time::Duration) -> Option<std::time::Duration> {
    match (group, resource) {
        ("" | "events.k8s.io", "events") if !event_ttl.is_zero() => Some(event_ttl),
        _ => None,
    }
}

/// Where a resource's objects live under `/registry` (upstream's storage factory): the plural
/// name, except the prefixes compiled into kube-apiserver (`SpecialDefaultResourcePrefixes`)
/// and the groups whose servers key by group (apiextensions-apiserver, kube-aggregator).
/// Resources served by two groups (core and `events.k8s.io` Events) share a prefix.
pub fn storage_prefix(group: &str, resource: &str) -> std::borrow::Cow<'static, str> {
    use std::borrow::Cow;
    match (group, resource) {
        ("", "replicationcontrollers") => Cow::Borrowed("controllers"),
        ("", "endpoints") => Cow::Borrowed("services/endpoints"),
        ("", "nodes") => Cow::Borrowed("minions"),
        ("", "services") => Cow::Borrowed("services/specs"),
        ("networking.k8s.io" | "extensions", "ingresses") => Cow::Borrowed("ingress"),
        (group, resource) if stored_as_json(group) => Cow::Owned(format!("{group}/{resource}")),
        (_, resource) => Cow::Owned(resource.to_owned()),
    }
}

/// Groups whose objects upstream stores as JSON rather than protobuf (served by
/// apiextensions-apiserver and kube-aggregator, `specialDefaultMediaTypes`).
pub fn stored_as_json(group: &str) -> bool {
    matches!(group, "apiextensions.k8s.io" | "apiregistration.k8s.io")
}

/// Whether the resource has a `status` subresource: then its main resource ignores status
/// changes and its status subresource ignores everything else (upstream's status strategies).
pub fn has_status_subresource(group: &str, resource: &str) -> bool {
    kapi_api::scheme::RESOURCES
        .iter()
        .any(|r| r.group == group && r.resource == resource && r.subresources.iter().any(|s| s.name == "status"))
}

/// A subresource through which a write changes one part of the stored object (upstream's
/// per-subresource strategies): the part taken from the request, and the rules checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialWrite {
    /// `<resource>/status`: the status.
    Status,
    /// `certificatesigningrequests/approval`: the status's conditions (Approved, Denied).
    Approval,
    /// `pods/ephemeralcontainers`: `spec.ephemeralContainers`.
    EphemeralContainers,
    /// `pods/resize`: the containers' `resources` and `resizePolicy`.
    Resize,
}

/// The partial write a subresource is, if it is one.
pub fn partial_write(group: &str, resource: &str, subresource: &str) -> Option<PartialWrite> {
    match (group, resource, subresource) {
        ("certificates.k8s.io", "certificatesigningrequests", "approval") => Some(PartialWrite::Approval),
        ("", "pods", "ephemeralcontainers") => Some(PartialWrite::EphemeralContainers),
        ("", "pods", "resize") => Some(PartialWrite::Resize),
        (_, _, "status") if has_status_subresource(group, resource) => Some(PartialWrite::Status),
        _ => None,
    }
}

impl PartialWrite {
    /// The object to store: the stored one with this subresource's part from the request.
    pub fn merge(self, group: &str, resource: &str, old: &serde_json::Value, proposed: &serde_json::Value) -> serde_json::Value {
        let mut new = old.clone();
        let (field, from, into): (&str, &serde_json::Value, &mut serde_json::Value) = match self {
            PartialWrite::Status => ("status", proposed, &mut new),
            PartialWrite::Approval => ("conditions", &proposed["status"], &mut new["status"]),
            PartialWrite::EphemeralContainers => ("ephemeralContainers", &proposed["spec"], &mut new["spec"]),
            PartialWrite::Resize => {
                pods::keep_resize_changes(&mut new, proposed);
                prepare_partial_write(self, group, resource, &mut new, old);
                return new;
            }
        };
        match from.get(field) {
            Some(part) => into[field] = part.clone(),
            None => {
                if let Some(obj) = into.as_object_mut() {
                    obj.remove(field);
                }
            }
        }
        prepare_partial_write(self, group, resource, &mut new, old);
        new
    }

    pub fn validate(self, group: &str, resource: &str, old: &serde_json::Value, new: &serde_json::Value) -> Vec<crate::status::FieldError> {
        match self {
            PartialWrite::Status => validation::validate_status_update(group, resource, old, new),
            PartialWrite::Approval => validation::validate_approval_update(old, new),
            PartialWrite::EphemeralContainers => validation::validate_ephemeral_containers_update(old, new),
            PartialWrite::Resize => validation::validate_pod_resize(old, new),
        }
    }
}

/// What a resource's strategy fills in on an object a subresource write produced, from the
/// stored one (upstream's status, approval, ephemeral-containers and resize strategies'
/// `PrepareForUpdate`).
fn prepare_partial_write(write: PartialWrite, group: &str, resource: &str, new: &mut serde_json::Value, old: &serde_json::Value) {
    match (group, resource, write) {
        ("certificates.k8s.io", "certificatesigningrequests", _) => certificates::populate_condition_timestamps(new, old),
        // `updatePodGeneration`: the pod's spec changed through a subresource that writes it.
        ("", "pods", PartialWrite::EphemeralContainers | PartialWrite::Resize) if new["spec"] != old["spec"] => {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
            new["metadata"]["generation"] = serde_json::json!(generation + 1);
        }
        _ => {}
    }
}

/// Where a resource with a `scale` subresource keeps what `autoscaling/v1` `Scale` shows:
/// desired replicas, observed replicas, and the label selector (upstream's
/// `scaleFromDeployment` and friends).
pub struct ScaleFacts {
    /// The selector: a `metav1.LabelSelector` (`spec.selector`) or, for replication
    /// controllers, a plain label map.
    pub selector_is_map: bool,
}

pub fn scale_facts(group: &str, resource: &str) -> Option<ScaleFacts> {
    match (group, resource) {
        ("apps", "deployments" | "replicasets" | "statefulsets") => Some(ScaleFacts { selector_is_map: false }),
        ("", "replicationcontrollers") => Some(ScaleFacts { selector_is_map: true }),
        _ => None,
    }
}

/// Requests served by a resource's own REST code instead of the generic store (upstream's
/// `BindingREST`, `EvictionREST`, `FinalizeREST`, the review resources' REST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnRest {
    /// `pods/<name>/binding` and the legacy `bindings` collection: assign a pod to a node.
    PodBinding,
    /// `pods/<name>/eviction`: delete a pod if its disruption budget allows.
    PodEviction,
    /// `namespaces/<name>/finalize`: replace a namespace's `spec.finalizers` only.
    NamespaceFinalize,
    /// The authentication and authorization reviews: answered, never stored.
    Review(reviews::Review),
    /// `componentstatuses`: the control plane's health, probed at each request
    /// (`componentstatuses.rs`).
    ComponentStatuses,
}

pub fn own_rest(group: &str, resource: &str, subresource: Option<&str>) -> Option<OwnRest> {
    match (group, resource, subresource) {
        ("", "pods", Some("binding")) | ("", "bindings", None) => Some(OwnRest::PodBinding),
        ("", "pods", Some("eviction")) => Some(OwnRest::PodEviction),
        ("", "namespaces", Some("finalize")) => Some(OwnRest::NamespaceFinalize),
        ("", "componentstatuses", None) => Some(OwnRest::ComponentStatuses),
        (_, _, None) => reviews::review(group, resource).map(OwnRest::Review),
        _ => None,
    }
}

/// Subresources served from a kubelet although their action is `get` (`pods/log`); they get
/// the same answer as `connect` requests.
pub fn reads_from_kubelet(group: &str, resource: &str, subresource: Option<&str>) -> bool {
    matches!((group, resource, subresource), ("", "pods", Some("log")))
}

/// Why a new object was refused by [`admit_create`], answered as upstream answers each.
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

impl From<Vec<crate::status::FieldError>> for Rejection {
    fn from(errs: Vec<crate::status::FieldError>) -> Self {
        Rejection::Invalid(errs)
    }
}

/// What a resource does to a new object beyond defaults and validation, with the store at
/// hand (upstream's admission and `BeforeCreate` work that reads other objects): a Service gets
/// its cluster IP and node ports, a pod its service account, default tolerations and priority.
pub async fn admit_create(
    store: &dyn crate::storage::Storage,
    network: &services::ServiceNetwork,
    group: &str,
    resource: &str,
    object: &mut serde_json::Value,
) -> Result<(), Rejection> {
    match (group, resource) {
        ("", "services") => Ok(services::admit(store, network, object).await?),
        ("", "pods") => admission::admit_pod(store, object).await,
        _ => Ok(()),
    }
}

/// The answer to a `connect` request (exec, attach, port-forward, log, proxy). Those reach a
/// kubelet or an endpoint; kapi runs no nodes, so it answers what upstream answers when none
/// can be reached.
pub fn connect_error(resource: &str, subresource: &str, name: &str, object: &serde_json::Value) -> crate::status::ApiError {
    use crate::status::ApiError;
    let node = object["spec"]["nodeName"].as_str().filter(|n| !n.is_empty());
    match (resource, subresource, node) {
        ("pods", "log" | "exec" | "attach" | "portforward", None) => {
            ApiError::bad_request(format!("pod {name} does not have a host assigned"))
        }
        ("pods", _, Some(node)) => ApiError::internal(format!("error dialing backend: no kubelet is reachable for node {node}")),
        ("pods", "proxy", None) => ApiError::service_unavailable(format!("pod {name} does not have an IP address yet")),
        ("services", _, _) => ApiError::service_unavailable(format!("no endpoints available for service \"{name}\"")),
        ("nodes", _, _) => ApiError::service_unavailable(format!("no kubelet is reachable for node {name}")),
        _ => ApiError::service_unavailable(format!("{resource}/{subresource} of {name:?} has no backend to connect to")),
    }
}

/// The namespaces kube-apiserver creates at start-up (upstream's system namespaces controller).
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

#[cfg(test)]
mod tests {
    #[test]
    fn string_data_folds_into_data() {
        let mut secret = serde_json::json!({"data": {"a": "YQ=="}, "stringData": {"b": "b", "a": "z"}});
        super::normalize_on_write("", "secrets", &mut secret);
        assert_eq!(secret, serde_json::json!({"data": {"a": "eg==", "b": "Yg=="}}));
    }

    #[test]
    fn generation_follows_upstream_strategies() {
        assert!(super::tracks_generation("apps", "deployments"));
        assert!(!super::tracks_generation("", "configmaps"));
        assert!(!super::tracks_generation("", "namespaces"));
    }
}
