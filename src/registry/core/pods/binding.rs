//! `pods/<name>/binding` and the legacy `bindings` collection (upstream's `BindingREST` and
//! `LegacyBindingREST`, `pkg/registry/core/pod/storage/storage.go`): a create of a Binding,
//! never stored, that assigns the pod it names to a node.
//!
//! The Binding is admitted as the create it is (the request's resource and subresource: `pods`
//! and `binding`, or `bindings`), then the pod is changed through the store's guaranteed
//! update with none of the pod strategy's update rules, as upstream writes it straight to its
//! storage: a binding sets what a pod update may not (`spec.nodeName`).

use serde_json::{Value, json};

use crate::registry::objects::{self, Kind};
use crate::registry::store::{Store, WriteOptions};
use crate::status::{ApiError, FieldError, GroupKind, GroupResource};

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
            super::check_name("Binding", url_name, &binding)?;
            url_name.to_owned()
        }
        None => binding["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
    };
    let mut errs = validate_binding(&binding);
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

/// `ValidatePodBinding`: the target is a node, by name.
fn validate_binding(binding: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = &binding["target"];
    if let Some(kind) = target["kind"].as_str().filter(|k| !k.is_empty() && *k != "Node") {
        errs.push(FieldError::not_supported("target.kind", kind, &["Node", "<empty>"]));
    }
    if target["name"].as_str().is_none_or(str::is_empty) {
        errs.push(FieldError::required("target.name", ""));
    }
    errs
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
        assert!(validate_binding(&binding).is_empty());
        assign(&mut pod, &binding, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(pod["metadata"]["annotations"]["a"], "b");
        assert_eq!(pod["status"]["conditions"][0]["type"], "PodScheduled");
        let again = assign(&mut pod, &binding, "2026-01-01T00:00:00Z").unwrap_err();
        assert_eq!(again.code, 409);
        assert!(again.message.contains("is already assigned to node \"n1\""), "{}", again.message);
        assert_eq!(validate_binding(&json!({"target": {"kind": "Pod"}})).len(), 2);
    }
}
