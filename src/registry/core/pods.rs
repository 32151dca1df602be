//! Pods (`pkg/registry/core/pod`): the strategy (a new pod is `Pending` with its QoS class,
//! deletes are graceful, the generation follows the spec), the `ephemeralcontainers` and
//! `resize` subresources, and what the pod REST storage does besides the generic store:
//! binding a pod to a node ([`bind`]: `pods/binding`, also the legacy `bindings` resource,
//! upstream's `BindingREST`), and evicting it under its PodDisruptionBudget ([`eviction`]:
//! `pods/eviction`).
//!
//! A Binding is a create, never stored, admitted as the create it is (the request's resource
//! and subresource: `pods` and `binding`, or `bindings`); the pod is then changed through the
//! store's guaranteed update with none of the pod strategy's update rules, as upstream writes
//! it straight to its storage: a binding sets what a pod update may not (`spec.nodeName`).

pub mod eviction;
mod kubelet;

use serde_json::{Value, json};

use crate::registry::objects::{self, Kind};
use crate::registry::store::{Store, WriteOptions};
use crate::status::{GroupKind, GroupResource};

use crate::registry::OwnRest;
use crate::registry::strategy::{Strategy, SubresourceStrategy, copy_field};
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `podStrategy`, with the pod store's `ReturnDeletedObject` and its REST's
/// subresources.
pub struct PodStrategy;

impl Strategy for PodStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PODS)
    }

    fn kubelet(&self) -> Option<&'static dyn crate::registry::kubelet::KubeletRules> {
        Some(&PodStrategy)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, object: &mut Value, _user: Option<&crate::request_info::UserInfo>) {
        object["status"]["phase"] = json!("Pending");
        let spec: kapi_api::api::core::v1::PodSpec = serde_json::from_value(object["spec"].clone()).unwrap_or_default();
        object["status"]["qosClass"] = json!(crate::registry::defaults::core::pod_qos_class(&spec));
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        validation::core::pod(object)
    }

    /// A pod's name becomes its hostname: a name that is no DNS label is allowed but warned of.
    fn warnings_on_create(&self, object: &Value) -> Vec<String> {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let errors = crate::selectors::dns1123_label_errors(name);
        if errors.is_empty() {
            return Vec::new();
        }
        // Go's `%v` of a `[]string`: the messages in brackets, space-separated.
        vec![format!(
            "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [{}]",
            errors.join(" ")
        )]
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        validation::core::pod_update(old, new)
    }

    fn subresource(&self, name: &str) -> Option<&'static dyn SubresourceStrategy> {
        match name {
            "ephemeralcontainers" => Some(&EphemeralContainers),
            "resize" => Some(&Resize),
            _ => None,
        }
    }

    fn own_rest(&self, subresource: Option<&str>) -> Option<OwnRest> {
        match subresource {
            Some("binding") => Some(OwnRest::PodBinding),
            Some("eviction") => Some(OwnRest::PodEviction),
            _ => None,
        }
    }

    fn reads_from_kubelet(&self, subresource: Option<&str>) -> bool {
        subresource == Some("log")
    }

    fn connect_error(&self, _resource: &str, subresource: &str, name: &str, object: &Value) -> ApiError {
        match (subresource, object["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())) {
            ("log" | "exec" | "attach" | "portforward", None) => ApiError::bad_request(format!("pod {name} does not have a host assigned")),
            (_, Some(node)) => ApiError::internal(format!("error dialing backend: no kubelet is reachable for node {node}")),
            (_, None) => ApiError::service_unavailable(format!("pod {name} does not have an IP address yet")),
        }
    }

    /// `CheckGracefulDelete`: a pod not scheduled or already finished goes at once; otherwise
    /// the request's `gracePeriodSeconds`, else the pod's `terminationGracePeriodSeconds`
    /// (default 30). The kubelet ends the grace period by deleting with 0; without one,
    /// `kubectl delete --force --grace-period=0` does.
    fn grace_period(&self, object: &Value, requested: Option<i64>) -> Option<i64> {
        let unscheduled = object["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
        let finished = matches!(object["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
        if unscheduled || finished {
            return Some(0);
        }
        Some(requested.unwrap_or_else(|| object["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(30)).max(0))
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// The legacy `bindings` collection: a create binds the pod its body names.
pub struct BindingStrategy;

impl Strategy for BindingStrategy {
    fn own_rest(&self, subresource: Option<&str>) -> Option<OwnRest> {
        subresource.is_none().then_some(OwnRest::PodBinding)
    }
}

/// `updatePodGeneration`: a subresource write that changed the spec bumps the generation.
fn update_generation(new: &mut Value, old: &Value) {
    if new["spec"] != old["spec"] {
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(generation + 1);
    }
}

/// `pods/ephemeralcontainers` (upstream's `podEphemeralContainersStrategy`): only
/// `spec.ephemeralContainers` is taken from the request.
struct EphemeralContainers;

impl SubresourceStrategy for EphemeralContainers {
    fn merge(&self, stored: &Value, proposed: &Value) -> Value {
        let mut new = stored.clone();
        copy_field(&mut new["spec"], &proposed["spec"], "ephemeralContainers");
        update_generation(&mut new, stored);
        new
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let mut errs = validation::validate_object_meta(&PodStrategy, new);
        errs.extend(validation::core::pod_ephemeral_containers_update(old, new));
        errs
    }
}

/// `pods/resize` (upstream's `podResizeStrategy`): only the containers' `resources` and
/// `resizePolicy` are taken from the request.
struct Resize;

impl SubresourceStrategy for Resize {
    fn merge(&self, stored: &Value, proposed: &Value) -> Value {
        let mut new = stored.clone();
        keep_resize_changes(&mut new, proposed);
        update_generation(&mut new, stored);
        new
    }

    /// `ValidatePodResize`: the pod as any pod, then only CPU and memory of its containers
    /// changed, within the resize rules.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        if let Some(refusal) = validation::core::pod_resize_refusal(old, new) {
            return vec![refusal];
        }
        let mut errs = validation::validate_object_meta(&PodStrategy, new);
        errs.extend(validation::core::pod(new));
        errs.extend(validation::core::pod_resize(old, new));
        errs
    }
}

/// The pod a `pods/resize` write stores (upstream's `dropNonResizeUpdates`): `pod` is the
/// stored one, and from `proposed` only each container's `resources` and `resizePolicy` are
/// kept. A request that adds, removes, reorders or renames containers keeps its containers as
/// they are, so that validation refuses it.
fn keep_resize_changes(pod: &mut Value, proposed: &Value) {
    for list in ["containers", "initContainers"] {
        let new = proposed["spec"].get(list).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let Some(old) = pod["spec"].get_mut(list).and_then(Value::as_array_mut) else {
            if !new.is_empty() {
                pod["spec"][list] = Value::Array(new.to_vec());
            }
            continue;
        };
        let same_containers = old.len() == new.len() && old.iter().zip(new).all(|(o, n)| o["name"] == n["name"]);
        if !same_containers {
            *old = new.to_vec();
            continue;
        }
        for (old, new) in old.iter_mut().zip(new) {
            copy_field(old, new, "resources");
            copy_field(old, new, "resizePolicy");
        }
    }
}

/// A body naming another object than the URL (`name in URL does not match name in <Kind>
/// object`), for binding and eviction.
fn check_name(kind: &str, url_name: &str, body: &Value) -> Result<(), ApiError> {
    match body["metadata"]["name"].as_str() {
        Some(n) if n == url_name => Ok(()),
        _ => Err(ApiError::bad_request(format!("name in URL does not match name in {kind} object"))),
    }
}

// ---------------------------------------------------------------------------------------------
// Binding

/// Binds the pod `binding` names (the URL's `url_name` for `pods/<name>/binding`, the body's
/// for the `bindings` collection) to the binding's node. `request` is the store of the
/// request's resource, whose admission sees the Binding.
pub async fn bind(
    request: &Store<'_>,
    options: WriteOptions<'_>,
    namespace: Option<&str>,
    url_name: Option<&str>,
    mut binding: Value,
) -> Result<(), ApiError> {
    let body_name = binding["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    // Upstream's create handler runs the mutating phase before the REST code sees the object.
    request.admit_create(options, namespace, url_name.unwrap_or(&body_name), &mut binding).await?;
    let name = match url_name {
        Some(url_name) => {
            check_name("Binding", url_name, &binding)?;
            url_name.to_owned()
        }
        None => binding["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
    };
    let mut errs = validation::core::pod_binding(&binding);
    if name.is_empty() {
        errs.insert(0, FieldError::required("metadata.name", "name or generateName is required"));
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid(GroupKind::new("", "Binding"), &name, &errs));
    }
    request.validate_create_admission(options, namespace, &name, &mut binding).await?;

    let pods =
        Store::new(request.storage, request.config, "", "pods", Kind { group: String::new(), version: "v1".into(), kind: "Pod".into() });
    // The binding's resourceVersion is a precondition on the pod; its uid is checked by `assign`.
    let precondition = binding["metadata"]["resourceVersion"].as_str().map(str::to_owned);
    let now = objects::now();
    let mut assigned = |pod: &mut Value| assign(pod, &binding, &now);
    pods.guaranteed_update(options, namespace, &name, precondition.as_deref(), &mut assigned).await?;
    Ok(())
}

/// Assigns `pod` to the binding's node (`setPodNodeAndMetadata`): `spec.nodeName`, the
/// binding's annotations, and a true `PodScheduled` condition. A pod already assigned or being
/// deleted is a 409 on `pods/binding`, and so is one whose uid is not the binding's.
fn assign(pod: &mut Value, binding: &Value, now: &str) -> Result<(), ApiError> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let gr = GroupResource::new("", "pods/binding");
    if pod["metadata"]["deletionTimestamp"].is_string() {
        return Err(ApiError::conflict_because(gr, &name, format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    if let Some(node) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Err(ApiError::conflict_because(gr, &name, format!("pod {name} is already assigned to node {node:?}")));
    }
    let uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
    if let Some(wanted) = binding["metadata"]["uid"].as_str().filter(|u| !u.is_empty())
        && wanted != uid
    {
        return Err(ApiError::conflict_because(
            GroupResource::new("", "pods"),
            &name,
            format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {uid}"),
        ));
    }
    pod["spec"]["nodeName"] = binding["target"]["name"].clone();
    if let Some(annotations) = binding["metadata"]["annotations"].as_object() {
        for (k, v) in annotations {
            pod["metadata"]["annotations"][k] = v.clone();
        }
    }
    let condition = json!({ "type": "PodScheduled", "status": "True", "lastTransitionTime": now });
    match pod["status"]["conditions"].as_array_mut() {
        Some(conditions) => match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(existing) if existing["status"] == "True" => {}
            Some(existing) => *existing = condition,
            None => conditions.push(condition),
        },
        None => pod["status"]["conditions"] = json!([condition]),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_assigns_once() {
        let mut pod = json!({"metadata": {"name": "p", "uid": "u"}, "spec": {}, "status": {"phase": "Pending"}});
        let binding = json!({"metadata": {"name": "p", "annotations": {"a": "b"}}, "target": {"kind": "Node", "name": "n1"}});
        assert!(validation::core::pod_binding(&binding).is_empty());
        assign(&mut pod, &binding, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(pod["metadata"]["annotations"]["a"], "b");
        assert_eq!(pod["status"]["conditions"][0]["type"], "PodScheduled");
        let again = assign(&mut pod, &binding, "2026-01-01T00:00:00Z").unwrap_err();
        assert_eq!(again.code, 409);
        assert!(again.message.contains("is already assigned to node \"n1\""), "{}", again.message);
    }

    #[test]
    fn new_pods_are_pending_with_their_qos_class() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        PodStrategy.prepare_for_create(&mut pod, None);
        assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "Burstable"}));
    }

    #[test]
    fn grace_periods_follow_check_graceful_delete() {
        let running = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 45}, "status": {"phase": "Running"}});
        assert_eq!(PodStrategy.grace_period(&running, None), Some(45));
        assert_eq!(PodStrategy.grace_period(&running, Some(5)), Some(5));
        let unscheduled = json!({"spec": {}, "status": {"phase": "Pending"}});
        assert_eq!(PodStrategy.grace_period(&unscheduled, Some(5)), Some(0));
        let finished = json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}});
        assert_eq!(PodStrategy.grace_period(&finished, None), Some(0));
    }

    #[test]
    fn resize_keeps_only_resources_and_resize_policy() {
        let stored = json!({"metadata": {"generation": 1},
            "spec": {"containers": [{"name": "c", "image": "a", "resources": {"requests": {"cpu": "1"}}}]}});
        let proposed = json!({"metadata": {"labels": {"x": "y"}},
            "spec": {"containers": [{"name": "c", "image": "b", "resources": {"requests": {"cpu": "2"}}}]}});
        let merged = Resize.merge(&stored, &proposed);
        assert_eq!(merged["spec"]["containers"][0], json!({"name": "c", "image": "a", "resources": {"requests": {"cpu": "2"}}}));
        assert_eq!(merged["metadata"], json!({"generation": 2}), "labels are not resized; the spec change bumps the generation");
        // A renamed container is kept as sent, for validation to refuse.
        let renamed = json!({"spec": {"containers": [{"name": "d", "image": "a"}]}});
        assert_eq!(Resize.merge(&stored, &renamed)["spec"]["containers"][0]["name"], "d");
    }

    #[test]
    fn connects_answer_as_upstream_without_a_kubelet() {
        let unscheduled = json!({"spec": {}});
        assert_eq!(PodStrategy.connect_error("pods", "exec", "p", &unscheduled).code, 400);
        assert_eq!(PodStrategy.connect_error("pods", "proxy", "p", &unscheduled).code, 503);
        assert_eq!(PodStrategy.connect_error("pods", "exec", "p", &json!({"spec": {"nodeName": "n"}})).code, 500);
    }
}
