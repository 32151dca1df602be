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

use kapi_api::api::core::v1::{Pod, PodSpec};
use serde_json::{Value, json};

use crate::registry::objects::{self, Kind};
use crate::registry::store::{Store, WriteOptions};
use crate::status::{GroupKind, GroupResource};

use crate::registry::OwnRest;
use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, SubresourceStrategy};
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `podStrategy`, with the pod store's `ReturnDeletedObject` and its REST's
/// subresources.
pub struct PodStrategy;

impl Strategy for PodStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::PODS)
    }

    fn admitted_by(&self) -> &'static [crate::registry::admission::KindPlugin] {
        use crate::registry::admission::KindPlugin::{DefaultTolerationSeconds, LimitRangerPods, Priority, ServiceAccount};
        &[LimitRangerPods, ServiceAccount, Priority, DefaultTolerationSeconds]
    }

    fn kubelet(&self) -> Option<&'static dyn crate::registry::kubelet::KubeletRules> {
        Some(&PodStrategy)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn sets_status_on_create(&self) -> bool {
        true
    }

    /// A new pod is `Pending`, with its QoS class, and nothing else in its status.
    fn prepare_for_create(&self, object: &mut Object, _user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        use crate::registry::defaults::core::{PodResources, pod_qos_class};
        let pod = object.typed_mut::<kapi_api::api::core::v1::Pod>()?;
        let qos_class = pod_qos_class(&PodResources::of_spec(pod.spec.as_ref()));
        pod.status = Some(kapi_api::api::core::v1::PodStatus {
            phase: Some("Pending".to_owned()),
            qos_class: Some(qos_class.to_owned()),
            ..Default::default()
        });
        Ok(())
    }

    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::pod(object.typed_ref()?))
    }

    /// A pod's name becomes its hostname: a name that is no DNS label is allowed but warned of.
    fn warnings_on_create(&self, object: &Object) -> Result<Vec<String>, ApiError> {
        let (name, _) = object.names()?;
        let errors = crate::selectors::dns1123_label_errors(name.as_deref().unwrap_or_default());
        if errors.is_empty() {
            return Ok(Vec::new());
        }
        // Go's `%v` of a `[]string`: the messages in brackets, space-separated.
        Ok(vec![format!(
            "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [{}]",
            errors.join(" ")
        )])
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::pod_update(old.typed_ref()?, new.typed_ref()?))
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
fn update_generation(new: &mut Object, old: &Object) -> Result<(), ApiError> {
    if !new.spec_equals(old)? {
        let generation = old.generation()?.unwrap_or(0);
        new.set_meta(&[crate::registry::object::MetaChange::Generation(Some(generation + 1))]);
    }
    Ok(())
}

/// `pods/ephemeralcontainers` (upstream's `podEphemeralContainersStrategy`): only
/// `spec.ephemeralContainers` is taken from the request.
struct EphemeralContainers;

impl SubresourceStrategy for EphemeralContainers {
    fn merge(&self, stored: &Object, proposed: &Object) -> Result<Object, ApiError> {
        let containers = proposed.typed_ref::<Pod>()?.spec.as_ref().map(|spec| spec.ephemeral_containers.clone());
        let mut new = stored.clone_object();
        new.typed_mut::<Pod>()?.spec.get_or_insert_default().ephemeral_containers = containers.unwrap_or_default();
        update_generation(&mut new, stored)?;
        Ok(new)
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let mut errs = validation::validate_object_meta(&PodStrategy, new.value()?);
        errs.extend(validation::core::pod_ephemeral_containers_update(old.value()?, new.value()?, new.typed_ref()?));
        Ok(errs)
    }
}

/// `pods/resize` (upstream's `podResizeStrategy`): only the containers' `resources` and
/// `resizePolicy` are taken from the request.
struct Resize;

impl SubresourceStrategy for Resize {
    fn merge(&self, stored: &Object, proposed: &Object) -> Result<Object, ApiError> {
        let mut new = stored.clone_object();
        keep_resize_changes(new.typed_mut()?, proposed.typed_ref()?);
        update_generation(&mut new, stored)?;
        Ok(new)
    }

    /// `ValidatePodResize`: the pod as any pod, then only CPU and memory of its containers
    /// changed, within the resize rules.
    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let (old_json, new_json) = (old.value()?, new.value()?);
        if let Some(refusal) = validation::core::pod_resize_refusal(old_json, new_json) {
            return Ok(vec![refusal]);
        }
        let mut errs = validation::validate_object_meta(&PodStrategy, new_json);
        errs.extend(validation::core::pod(new.typed_ref()?));
        errs.extend(validation::core::pod_resize(old_json, new_json));
        Ok(errs)
    }
}

/// The pod a `pods/resize` write stores (upstream's `dropNonResizeUpdates`): `pod` is the
/// stored one, and from `proposed` only each container's `resources` and `resizePolicy` are
/// kept. A request that adds, removes, reorders or renames containers keeps its containers as
/// they are, so that validation refuses it.
fn keep_resize_changes(pod: &mut Pod, proposed: &Pod) {
    let no_spec = PodSpec::default();
    let proposed = proposed.spec.as_ref().unwrap_or(&no_spec);
    let spec = pod.spec.get_or_insert_with(Default::default);
    for (old, new) in [(&mut spec.containers, &proposed.containers), (&mut spec.init_containers, &proposed.init_containers)] {
        let same_containers = old.len() == new.len() && old.iter().zip(new).all(|(o, n)| o.name == n.name);
        if !same_containers {
            old.clone_from(new);
            continue;
        }
        for (old, new) in old.iter_mut().zip(new) {
            old.resources.clone_from(&new.resources);
            old.resize_policy.clone_from(&new.resize_policy);
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

    let pods = Store::new(request.storage, request.config, "", "pods", Kind::core_v1("Pod"));
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
        let pod = json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"podIP": "10.0.0.9"}});
        let pod = crate::registry::strategy::prepared_for_create(&PodStrategy, "Pod", pod);
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
        let pod = |value: Value| Object::from_value(value).of_kind(objects::dyn_kind(&Kind::core_v1("Pod")).unwrap());
        let stored = pod(stored);
        let merged = Resize.merge(&stored, &pod(proposed)).unwrap().into_value().unwrap();
        assert_eq!(merged["spec"]["containers"][0], json!({"name": "c", "image": "a", "resources": {"requests": {"cpu": "2"}}}));
        assert_eq!(merged["metadata"], json!({"generation": 2}), "labels are not resized; the spec change bumps the generation");
        // A renamed container is kept as sent, for validation to refuse.
        let renamed = json!({"spec": {"containers": [{"name": "d", "image": "a"}]}});
        assert_eq!(Resize.merge(&stored, &pod(renamed)).unwrap().into_value().unwrap()["spec"]["containers"][0]["name"], "d");
    }

    #[test]
    fn connects_answer_as_upstream_without_a_kubelet() {
        let unscheduled = json!({"spec": {}});
        assert_eq!(PodStrategy.connect_error("pods", "exec", "p", &unscheduled).code, 400);
        assert_eq!(PodStrategy.connect_error("pods", "proxy", "p", &unscheduled).code, 503);
        assert_eq!(PodStrategy.connect_error("pods", "exec", "p", &json!({"spec": {"nodeName": "n"}})).code, 500);
    }
}

mod kubelet {
    //! What a kubelet may do with pods (upstream's Node authorizer's `authorizePod` and graph
    //! population, NodeRestriction's `admitPod`, `admitPodStatus` and `admitPodEviction`): read and
    //! list the pods bound to it, create mirror pods of itself referring to no other object, update
    //! its pods' status and delete or evict its pods. A bound pod makes its node reach the secrets,
    //! config maps, claims and service account it uses.

    use serde_json::Value;

    use super::PodStrategy;
    use crate::rbac::Attributes;
    use crate::rbac::node::{self, Decision, Graph, Key, Relations, Vertex};
    use crate::registry::admission::Operation;
    use crate::registry::kubelet::{KubeletRules, NodeWrite, Refusal, Wanted, forbid, str_at};
    use crate::selectors::FieldSelector;

    /// Pods the kubelet mirrors from static manifests (`api.MirrorPodAnnotationKey`).
    const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

    /// The volume sources that name a Secret by `secretRef` (`VisitPodSecretNames`).
    const SECRET_REF_SOURCES: [&str; 7] = ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"];

    impl KubeletRules for PodStrategy {
        /// `authorizePod`: pods bound to the node, or listed by `spec.nodeName=<node>`.
        fn authorize(&self, graph: &Graph, node: &str, a: &Attributes<'_>) -> Option<Decision> {
            Some(match (a.subresource, a.verb) {
                ("", "get") => node::get(graph, node, Vertex::Pod, a),
                ("", "list" | "watch") => {
                    let scoped =
                        FieldSelector::parse(a.field_selector).ok().is_some_and(|s| s.requires_exact_match("spec.nodeName") == Some(node));
                    if scoped {
                        Decision::Allow
                    } else if !a.name.is_empty() {
                        node::related(graph, node, Vertex::Pod, a)
                    } else {
                        node::no_opinion("can only list/watch pods with spec.nodeName field selector")
                    }
                }
                ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => Decision::Allow,
                _ => node::no_opinion(""),
            })
        }

        fn relates_objects(&self) -> bool {
            true
        }

        /// Upstream's `AddPod`: the pod → its node; unless it is a mirror pod (which must grant
        /// nothing), its service account, the secrets `VisitPodSecretNames` and the config maps
        /// `VisitPodConfigmapNames` visit, its claims (an ephemeral volume's is `<pod>-<volume>`)
        /// and its resource claims → the pod.
        fn relations(&self, namespace: &str, name: &str, pod: &Value) -> Option<Relations> {
            let spec = &pod["spec"];
            let node = spec["nodeName"].as_str().filter(|n| !n.is_empty())?;
            let this: Key = (Vertex::Pod, namespace.to_owned(), name.to_owned());
            let mut relations = Relations::default();
            relations.add(this.clone(), node::node_key(node));
            if pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_some() {
                return Some(relations);
            }
            let mut add = |vertex: Vertex, name: &Value| {
                if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
                    relations.add((vertex, namespace.to_owned(), name.to_owned()), this.clone());
                }
            };
            add(Vertex::ServiceAccount, &spec["serviceAccountName"]);
            for secret in items(spec, "imagePullSecrets") {
                add(Vertex::Secret, &secret["name"]);
            }
            for container in containers(spec) {
                for from in items(container, "envFrom") {
                    add(Vertex::Secret, &from["secretRef"]["name"]);
                    add(Vertex::ConfigMap, &from["configMapRef"]["name"]);
                }
                for env in items(container, "env") {
                    add(Vertex::Secret, &env["valueFrom"]["secretKeyRef"]["name"]);
                    add(Vertex::ConfigMap, &env["valueFrom"]["configMapKeyRef"]["name"]);
                }
            }
            for volume in items(spec, "volumes") {
                add(Vertex::Secret, &volume["secret"]["secretName"]);
                add(Vertex::Secret, &volume["azureFile"]["secretName"]);
                for source in SECRET_REF_SOURCES {
                    add(Vertex::Secret, &volume[source]["secretRef"]["name"]);
                }
                add(Vertex::Secret, &volume["csi"]["nodePublishSecretRef"]["name"]);
                add(Vertex::ConfigMap, &volume["configMap"]["name"]);
                for source in projected_sources(volume) {
                    add(Vertex::Secret, &source["secret"]["name"]);
                    add(Vertex::ConfigMap, &source["configMap"]["name"]);
                }
                add(Vertex::PersistentVolumeClaim, &volume["persistentVolumeClaim"]["claimName"]);
                if volume["ephemeral"].is_object()
                    && let Some(volume_name) = volume["name"].as_str()
                {
                    add(Vertex::PersistentVolumeClaim, &Value::String(format!("{name}-{volume_name}")));
                }
            }
            // `resourceclaim.Name`: a claim named in the spec, or the one made from a template as
            // the status records it.
            for claim in items(spec, "resourceClaims") {
                if claim["resourceClaimName"].is_string() {
                    add(Vertex::ResourceClaim, &claim["resourceClaimName"]);
                } else if let Some(made) = items(&pod["status"], "resourceClaimStatuses").find(|s| s["name"] == claim["name"]) {
                    add(Vertex::ResourceClaim, &made["resourceClaimName"]);
                }
            }
            Some(relations)
        }

        /// A delete and an eviction read the pod, a mirror pod's create reads the Node (its uid).
        fn needs(&self, node: &str, write: &NodeWrite<'_>) -> Option<Wanted> {
            let t = &write.target;
            let pod = |name: &str| Wanted { group: "", resource: "pods", namespace: Some(t.namespace.to_owned()), name: name.to_owned() };
            match (t.subresource, write.operation) {
                (None, Operation::Delete) => Some(pod(t.name)),
                (None, Operation::Create) => Some(Wanted { group: "", resource: "nodes", namespace: None, name: node.to_owned() }),
                (Some("eviction"), Operation::Create) => {
                    let name = if t.name.is_empty() { str_at(write.object, "/metadata/name") } else { t.name };
                    (!name.is_empty()).then(|| pod(name))
                }
                _ => None,
            }
        }

        fn admit(&self, node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
            match write.target.subresource {
                None => admit_pod(node, write),
                Some("status") => admit_pod_status(node, write),
                Some("eviction") => {
                    if write.operation != Operation::Create {
                        return forbid(format!("unexpected operation {}", write.operation_name()));
                    }
                    if write.target.name.is_empty() && str_at(write.object, "/metadata/name").is_empty() {
                        return forbid("could not determine pod from request data".into());
                    }
                    if str_at(Some(write.stored()?), "/spec/nodeName") != node {
                        return forbid(format!("node {node} can only evict pods with spec.nodeName set to itself"));
                    }
                    Ok(())
                }
                Some(other) => forbid(format!("unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed")),
            }
        }
    }

    /// `admitPod`: a node creates mirror pods and deletes pods bound to it, nothing else.
    fn admit_pod(node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        match write.operation {
            Operation::Create => admit_pod_create(node, write.object.unwrap_or(&Value::Null), write),
            Operation::Delete => {
                if str_at(Some(write.stored()?), "/spec/nodeName") != node {
                    return forbid(format!("node {node:?} can only delete pods with spec.nodeName set to itself"));
                }
                Ok(())
            }
            _ => forbid(format!("unexpected operation {:?}, node {node:?} can only create and delete mirror pods", write.operation_name())),
        }
    }

    /// `admitPodCreate`: a mirror pod bound to the node, controlled by its Node (read as
    /// `write`'s stored object), referring to no other object.
    fn admit_pod_create(node: &str, pod: &Value, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if pod.pointer("/metadata/annotations").and_then(|a| a.get(MIRROR_POD_ANNOTATION)).is_none() {
            return forbid(format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"));
        }
        if str_at(Some(pod), "/spec/nodeName") != node {
            return forbid(format!("node {node:?} can only create pods with spec.nodeName set to itself"));
        }
        let owners = pod.pointer("/metadata/ownerReferences").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        match owners {
            [] => return forbid(format!("node {node:?} can only create pods with an owner reference set to itself")),
            [owner] => {
                let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or_default();
                if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
                    return forbid(format!("node {node:?} can only create pods with an owner reference set to itself"));
                }
                if owner.get("controller") != Some(&Value::Bool(true)) {
                    return forbid(format!("node {node:?} can only create pods with a controller owner reference set to itself"));
                }
                if owner.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                    return forbid(format!("node {node:?} must not set blockOwnerDeletion on an owner reference"));
                }
                let uid = str_at(Some(write.stored()?), "/metadata/uid");
                if field("uid") != uid {
                    return forbid(format!("node {node} UID mismatch: expected {} got {uid}", field("uid")));
                }
            }
            _ => return forbid(format!("node {node:?} can only create pods with a single owner reference set to itself")),
        }
        let spec = pod.get("spec").unwrap_or(&Value::Null);
        let account = |f: &str| spec.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
        if account("serviceAccountName") || account("serviceAccount") {
            return forbid(format!("node {node:?} can not create pods that reference a service account"));
        }
        if references_secrets(spec) {
            return forbid(format!("node {node:?} can not create pods that reference secrets"));
        }
        if references_configmaps(spec) {
            return forbid(format!("node {node:?} can not create pods that reference configmaps"));
        }
        let volumes = spec.get("volumes").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        if volumes.iter().any(|v| projected_sources(v).any(|s| present(s, "clusterTrustBundle"))) {
            return forbid(format!("node {node:?} can not create pods that reference clustertrustbundles"));
        }
        if volumes.iter().any(|v| present(v, "persistentVolumeClaim")) {
            return forbid(format!("node {node:?} can not create pods that reference persistentvolumeclaims"));
        }
        Ok(())
    }

    fn present(value: &Value, field: &str) -> bool {
        value.get(field).is_some_and(|v| !v.is_null())
    }

    fn items<'v>(value: &'v Value, field: &str) -> impl Iterator<Item = &'v Value> {
        value.get(field).and_then(Value::as_array).into_iter().flatten()
    }

    /// Every container of the pod: init, regular and ephemeral (`podutil.AllContainers`).
    fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
        ["initContainers", "containers", "ephemeralContainers"].into_iter().flat_map(move |f| items(spec, f))
    }

    fn projected_sources(volume: &Value) -> impl Iterator<Item = &Value> {
        volume.get("projected").into_iter().flat_map(|p| items(p, "sources"))
    }

    /// `podutil.VisitPodSecretNames` finds any name.
    fn references_secrets(spec: &Value) -> bool {
        if items(spec, "imagePullSecrets").next().is_some() {
            return true;
        }
        let in_containers = containers(spec).any(|c| {
            items(c, "envFrom").any(|e| present(e, "secretRef"))
                || items(c, "env").any(|e| e.get("valueFrom").is_some_and(|f| present(f, "secretKeyRef")))
        });
        // The volume sources that name a Secret (a `secretRef`, a `secretName`, CSI's
        // `nodePublishSecretRef`).
        in_containers
            || items(spec, "volumes").any(|v| {
                present(v, "secret")
                    || present(v, "azureFile")
                    || SECRET_REF_SOURCES.iter().any(|s| v.get(*s).is_some_and(|s| present(s, "secretRef")))
                    || v.get("csi").is_some_and(|c| present(c, "nodePublishSecretRef"))
                    || projected_sources(v).any(|s| present(s, "secret"))
            })
    }

    /// `podutil.VisitPodConfigmapNames` finds any name.
    fn references_configmaps(spec: &Value) -> bool {
        containers(spec).any(|c| {
            items(c, "envFrom").any(|e| present(e, "configMapRef"))
                || items(c, "env").any(|e| e.get("valueFrom").is_some_and(|f| present(f, "configMapKeyRef")))
        }) || items(spec, "volumes").any(|v| present(v, "configMap") || projected_sources(v).any(|s| present(s, "configMap")))
    }

    /// `admitPodStatus`: the status of pods bound to the node, without relabelling them.
    fn admit_pod_status(node: &str, write: &NodeWrite<'_>) -> Result<(), Refusal> {
        if write.operation != Operation::Update {
            return forbid(format!("unexpected operation {:?}", write.operation_name()));
        }
        if str_at(write.old, "/spec/nodeName") != node {
            return forbid(format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself"));
        }
        let labels =
            |v: Option<&Value>| v.and_then(|v| v.pointer("/metadata/labels")).and_then(Value::as_object).cloned().unwrap_or_default();
        if labels(write.old) != labels(write.object) {
            return forbid(format!("node {node:?} cannot update labels through pod status"));
        }
        let claims = |v: Option<&Value>| -> Vec<(String, Option<String>)> {
            v.and_then(|v| v.pointer("/status/resourceClaimStatuses"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|s| (str_at(Some(s), "/name").to_owned(), s.get("resourceClaimName").and_then(Value::as_str).map(str::to_owned)))
                .collect()
        };
        if claims(write.old) != claims(write.object) {
            return forbid(format!("node {node:?} cannot update resource claim statues"));
        }
        Ok(())
    }

    #[cfg(test)]
    mod kubelet_tests {
        use serde_json::{Value, json};

        use crate::rbac::node::{Decision, Graph};
        use crate::rbac::{Attributes, PolicyRule};
        use crate::registry::admission::Operation;
        use crate::registry::kubelet::Refusal;
        use crate::registry::kubelet::testing::*;
        use crate::request_info::UserInfo;

        fn mirror_pod() -> Value {
            json!({
                "metadata": {"name": "m", "namespace": "default",
                    "annotations": {"kubernetes.io/config.mirror": "x"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1", "controller": true}]},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            })
        }

        fn create_pod(pod: &Value) -> Result<(), Refusal> {
            let request = write(Operation::Create, target("", "pods", None, "default", "m"), Some(pod), None);
            assert_eq!(needs("n1", request).unwrap().resource, "nodes");
            admit("n1", request, Some(&json!({"metadata": {"name": "n1", "uid": "u1"}})))
        }

        #[test]
        fn nodes_create_only_their_own_mirror_pods_referring_to_nothing() {
            create_pod(&mirror_pod()).unwrap();
            let cases: &[(&str, Value, &str)] = &[
                (
                    "/metadata/annotations",
                    json!({}),
                    r#"pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#,
                ),
                ("/spec/nodeName", json!("n2"), r#"node "n1" can only create pods with spec.nodeName set to itself"#),
                ("/metadata/ownerReferences", json!([]), r#"node "n1" can only create pods with an owner reference set to itself"#),
                (
                    "/metadata/ownerReferences/0/controller",
                    json!(false),
                    r#"node "n1" can only create pods with a controller owner reference set to itself"#,
                ),
                (
                    "/metadata/ownerReferences/0/blockOwnerDeletion",
                    json!(true),
                    r#"node "n1" must not set blockOwnerDeletion on an owner reference"#,
                ),
                ("/metadata/ownerReferences/0/uid", json!("u2"), "node n1 UID mismatch: expected u2 got u1"),
                (
                    "/metadata/ownerReferences/0/name",
                    json!("n2"),
                    r#"node "n1" can only create pods with an owner reference set to itself"#,
                ),
                ("/spec/serviceAccountName", json!("default"), r#"node "n1" can not create pods that reference a service account"#),
                ("/spec/imagePullSecrets", json!([{"name": "p"}]), r#"node "n1" can not create pods that reference secrets"#),
                (
                    "/spec/containers/0/env",
                    json!([{"name": "e", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]),
                    r#"node "n1" can not create pods that reference secrets"#,
                ),
                (
                    "/spec/volumes",
                    json!([{"name": "v", "secret": {"secretName": "s"}}]),
                    r#"node "n1" can not create pods that reference secrets"#,
                ),
                (
                    "/spec/containers/0/envFrom",
                    json!([{"configMapRef": {"name": "c"}}]),
                    r#"node "n1" can not create pods that reference configmaps"#,
                ),
                (
                    "/spec/volumes",
                    json!([{"name": "v", "projected": {"sources": [{"configMap": {"name": "c"}}]}}]),
                    r#"node "n1" can not create pods that reference configmaps"#,
                ),
                (
                    "/spec/volumes",
                    json!([{"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "c", "path": "p"}}]}}]),
                    r#"node "n1" can not create pods that reference clustertrustbundles"#,
                ),
                (
                    "/spec/volumes",
                    json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
                    r#"node "n1" can not create pods that reference persistentvolumeclaims"#,
                ),
            ];
            for (pointer, value, message) in cases {
                let mut pod = mirror_pod();
                let (parent, field) = pointer.rsplit_once('/').unwrap();
                pod.pointer_mut(parent).unwrap()[field] = value.clone();
                assert_eq!(forbidden(create_pod(&pod)), *message, "{pointer}");
            }
            let mut two = mirror_pod();
            let owner = two["metadata"]["ownerReferences"][0].clone();
            two["metadata"]["ownerReferences"].as_array_mut().unwrap().push(owner);
            assert_eq!(forbidden(create_pod(&two)), r#"node "n1" can only create pods with a single owner reference set to itself"#);
            // The Node must exist to check its uid.
            let pod = mirror_pod();
            let request = write(Operation::Create, target("", "pods", None, "default", "m"), Some(&pod), None);
            assert!(matches!(admit("n1", request, None), Err(Refusal::NotFound(w)) if w.name == "n1"));
        }

        #[test]
        fn nodes_touch_only_pods_bound_to_them() {
            let mine = json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"nodeName": "n1"}});
            let other = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n2"}});
            let delete = write(Operation::Delete, target("", "pods", None, "default", "p"), None, None);
            admit("n1", delete, Some(&mine)).unwrap();
            assert_eq!(forbidden(admit("n1", delete, Some(&other))), r#"node "n1" can only delete pods with spec.nodeName set to itself"#);
            assert!(matches!(admit("n1", delete, None), Err(Refusal::NotFound(_))));

            let update = write(Operation::Update, target("", "pods", None, "default", "p"), Some(&mine), Some(&mine));
            assert_eq!(
                forbidden(admit("n1", update, None)),
                r#"unexpected operation "UPDATE", node "n1" can only create and delete mirror pods"#
            );

            let status = |old: &'static Value, new: &'static Value| {
                write(Operation::Update, target("", "pods", Some("status"), "default", "p"), Some(new), Some(old))
            };
            let mine: &'static Value = Box::leak(Box::new(mine));
            let other: &'static Value = Box::leak(Box::new(other));
            admit("n1", status(mine, mine), None).unwrap();
            assert_eq!(
                forbidden(admit("n1", status(other, other), None)),
                r#"node "n1" can only update pod status for pods with spec.nodeName set to itself"#
            );
            let relabelled: &'static Value = Box::leak(Box::new(json!({"metadata": {"labels": {"a": "c"}}, "spec": {"nodeName": "n1"}})));
            assert_eq!(forbidden(admit("n1", status(mine, relabelled), None)), r#"node "n1" cannot update labels through pod status"#);

            let eviction = json!({"metadata": {"name": "p"}});
            let evict = write(Operation::Create, target("", "pods", Some("eviction"), "default", "p"), Some(&eviction), None);
            admit("n1", evict, Some(mine)).unwrap();
            assert_eq!(forbidden(admit("n1", evict, Some(other))), "node n1 can only evict pods with spec.nodeName set to itself");

            let bind = write(Operation::Create, target("", "pods", Some("binding"), "default", "p"), None, None);
            assert_eq!(
                forbidden(admit("n1", bind, None)),
                r#"unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#
            );
        }

        /// Records a pod as its strategy relates it.
        fn set_pod(graph: &mut Graph, namespace: &str, name: &str, pod: Option<&Value>) {
            relate(graph, "", "pods", namespace, name, pod);
        }

        #[test]
        fn a_node_reaches_what_its_pods_use() {
            let mut graph = Graph::default();
            let pod = json!({"spec": {"nodeName": "n1", "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}}],
                                "envFrom": [{"configMapRef": {"name": "env-cm"}}]}],
                "volumes": [{"name": "v", "secret": {"secretName": "vol-secret"}},
                            {"name": "p", "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]}},
                            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                            {"name": "e", "ephemeral": {"volumeClaimTemplate": {}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}, {"name": "tpl", "resourceClaimTemplateName": "t"}]},
                "status": {"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "p1-tpl-x"}]}});
            set_pod(&mut graph, "ns", "p1", Some(&pod));
            set_pod(&mut graph, "ns", "unbound", Some(&json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}})));
            let n1 = node_user("n1");
            let n2 = node_user("n2");
            let rules = [PolicyRule {
                verbs: vec!["get".into()],
                api_groups: vec!["".into()],
                resources: vec!["services".into()],
                ..Default::default()
            }];
            let decide = |u: &UserInfo, verb: &str, resource: &str, sub: &str, name: &str| {
                authorize(&graph, &rules, &attrs(u, verb, "ns", resource, sub, name)) == Decision::Allow
            };
            for secret in ["pull", "env-secret", "vol-secret"] {
                assert!(decide(&n1, "get", "secrets", "", secret), "{secret}");
                assert!(decide(&n1, "watch", "secrets", "", secret), "{secret}");
                assert!(!decide(&n2, "get", "secrets", "", secret), "{secret}");
            }
            assert!(!decide(&n1, "get", "secrets", "", "other"));
            assert!(!decide(&n1, "update", "secrets", "", "vol-secret"));
            assert!(!decide(&n1, "list", "secrets", "", ""));
            assert!(decide(&n1, "get", "configmaps", "", "env-cm") && decide(&n1, "get", "configmaps", "", "proj-cm"));
            assert!(decide(&n1, "get", "persistentvolumeclaims", "", "data") && decide(&n1, "get", "persistentvolumeclaims", "", "p1-e"));
            assert!(decide(&n1, "create", "serviceaccounts", "token", "sa"));
            assert!(!decide(&n1, "create", "serviceaccounts", "token", "default"));
            assert!(decide(&n1, "get", "pods", "", "p1") && !decide(&n2, "get", "pods", "", "p1"));
            assert!(!decide(&n1, "get", "pods", "", "unbound"));
            assert!(decide(&n1, "get", "services", "", "x"), "the node rules decide the rest");
            // Resource claims, by name and made from a template as the status names them.
            for name in ["shared-gpu", "p1-tpl-x"] {
                let request = |u| Attributes { api_group: "resource.k8s.io", ..attrs(u, "get", "ns", "resourceclaims", "", name) };
                assert_eq!(authorize(&graph, &rules, &request(&n1)), Decision::Allow, "{name}");
                assert_ne!(authorize(&graph, &rules, &request(&n2)), Decision::Allow, "{name}");
            }
            let allowed = |graph: &Graph, u: &UserInfo, resource: &str, name: &str| {
                authorize(graph, &rules, &attrs(u, "get", "ns", resource, "", name)) == Decision::Allow
            };
            // A mirror pod grants its node nothing but itself.
            let mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}},
                "spec": {"nodeName": "n2", "volumes": [{"name": "v", "secret": {"secretName": "vol-secret"}}]}});
            set_pod(&mut graph, "ns", "m", Some(&mirror));
            assert!(allowed(&graph, &n2, "pods", "m") && !allowed(&graph, &n2, "secrets", "vol-secret"));
            set_pod(&mut graph, "ns", "m", None);

            let reason = authorize(&graph, &rules, &attrs(&n2, "get", "ns", "secrets", "", "vol-secret"));
            assert_eq!(reason, unrelated("n2"));
            let scoped = Attributes { field_selector: "spec.nodeName=n1", ..attrs(&n1, "list", "", "pods", "", "") };
            assert_eq!(authorize(&graph, &rules, &scoped), Decision::Allow);
            let other = Attributes { field_selector: "spec.nodeName=n2", ..attrs(&n1, "list", "", "pods", "", "") };
            assert_eq!(
                authorize(&graph, &rules, &other),
                Decision::NoOpinion("can only list/watch pods with spec.nodeName field selector".into())
            );
            // The pod gone, so is every path it made.
            set_pod(&mut graph, "ns", "p1", None);
            assert_ne!(authorize(&graph, &rules, &attrs(&n1, "get", "ns", "secrets", "", "pull")), Decision::Allow);
            assert!(graph.is_empty());
        }
    }
}
