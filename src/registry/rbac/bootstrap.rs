//! Upstream's bootstrap RBAC policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`) and
//! the `rbac/bootstrap-roles` post-start hook that reconciles it (`pkg/registry/rbac/rest`,
//! `reconciliation`): at every start each ClusterRole, Role and binding of the policy is
//! created when missing; one that exists and does not carry
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` gets the policy's labels,
//! annotations, the rules (broken down) it does not cover yet, its aggregation selectors, and
//! a binding the subjects it misses. All writes go through the `Store`.
//!
//! The policy itself is data, `bootstrap_policy.txt`, in a notation this module reads.

use std::collections::HashMap;
use std::sync::Arc;

use kapi_apimachinery::codec::Format;
use serde_json::{Map, Value, json};

use crate::rbac::PolicyRule;
use crate::registry::keys;
use crate::registry::objects::{self, Kind};
use crate::registry::store::watched::stored_object;
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::{KeyValue, ListOptions, Storage};

/// The annotation that lets an administrator stop the reconciliation of a bootstrap object.
pub const AUTO_UPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
const GROUP: &str = "rbac.authorization.k8s.io";

const POLICY: &str = include_str!("bootstrap_policy.txt");

/// One object of the policy: its resource and its `rbac.authorization.k8s.io/v1` form.
#[derive(Debug, Clone)]
pub struct PolicyObject {
    pub resource: &'static str,
    pub kind: &'static str,
    pub object: Value,
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(|s| if s == "\"\"" { String::new() } else { s.to_owned() }).collect()
}

/// The bootstrap policy's objects, ClusterRoles first, then Roles, then bindings (the order
/// upstream's hook writes them in).
pub fn policy() -> Vec<PolicyObject> {
    let mut out: Vec<PolicyObject> = Vec::new();
    for line in POLICY.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let labels = json!({ BOOTSTRAPPING_LABEL: "rbac-defaults" });
        let annotations = json!({ AUTO_UPDATE_ANNOTATION: "true" });
        if !line.starts_with(' ') {
            let (resource, kind, object) = match words[0] {
                "clusterrole" => {
                    let mut object = json!({ "metadata": { "name": words[1], "labels": labels, "annotations": annotations }, "rules": [] });
                    for extra in &words[2..] {
                        if let Some(label) = extra.strip_prefix('+') {
                            object["metadata"]["labels"][format!("{GROUP}/{label}")] = json!("true");
                        } else if let Some(target) = extra.strip_prefix("aggregates=") {
                            object["aggregationRule"] = json!({ "clusterRoleSelectors": [{ "matchLabels": { format!("{GROUP}/aggregate-to-{target}"): "true" } }] });
                        }
                    }
                    ("clusterroles", "ClusterRole", object)
                }
                "role" => (
                    "roles",
                    "Role",
                    json!({ "metadata": { "namespace": words[1], "name": words[2], "labels": labels, "annotations": annotations }, "rules": [] }),
                ),
                "clusterrolebinding" => (
                    "clusterrolebindings",
                    "ClusterRoleBinding",
                    json!({ "metadata": { "name": words[1], "labels": labels, "annotations": annotations },
                            "roleRef": { "apiGroup": GROUP, "kind": "ClusterRole", "name": words[2] } }),
                ),
                "rolebinding" => (
                    "rolebindings",
                    "RoleBinding",
                    json!({ "metadata": { "namespace": words[1], "name": words[2], "labels": labels, "annotations": annotations },
                            "roleRef": { "apiGroup": GROUP, "kind": "Role", "name": words[3] } }),
                ),
                other => panic!("bootstrap_policy.txt: unknown entry {other:?}"),
            };
            let mut object = object;
            object["apiVersion"] = json!(format!("{GROUP}/v1"));
            object["kind"] = json!(kind);
            out.push(PolicyObject { resource, kind, object });
            continue;
        }
        let Some(current) = out.last_mut() else { panic!("bootstrap_policy.txt: a rule before any object") };
        match words[0] {
            "User" | "Group" => push_subject(&mut current.object, json!({ "apiGroup": GROUP, "kind": words[0], "name": words[1] })),
            "ServiceAccount" => {
                let (namespace, name) = words[1].split_once('/').expect("ServiceAccount namespace/name");
                push_subject(&mut current.object, json!({ "kind": "ServiceAccount", "name": name, "namespace": namespace }));
            }
            "url" => {
                let rule = PolicyRule { verbs: list(words[1]), non_resource_urls: list(words[2]), ..Default::default() };
                push_rule(&mut current.object, rule);
            }
            _ => {
                let rule = PolicyRule {
                    verbs: list(words[0]),
                    api_groups: list(words[1]),
                    resources: list(words[2]),
                    resource_names: words.get(3).map(|w| list(w)).unwrap_or_default(),
                    ..Default::default()
                };
                push_rule(&mut current.object, rule);
            }
        }
    }
    out
}

fn push_subject(object: &mut Value, subject: Value) {
    match object["subjects"].as_array_mut() {
        Some(subjects) => subjects.push(subject),
        None => object["subjects"] = json!([subject]),
    }
}

fn push_rule(object: &mut Value, rule: PolicyRule) {
    if let Some(rules) = object["rules"].as_array_mut() {
        rules.push(rule.to_json());
    }
}

/// How many policy objects are reconciled at once.
const BOOTSTRAP_CONCURRENCY: usize = 16;

/// Creates or reconciles every object of the policy (upstream's `rbac/bootstrap-roles` hook).
/// Runs after the system namespaces exist.
pub async fn ensure(storage: Arc<dyn Storage>, config: Arc<StoreConfig>) -> Result<(), ApiError> {
    // What exists, read with one list per resource rather than a read per object (on a restart
    // every object exists and is only compared).
    let mut stored: HashMap<String, KeyValue> = HashMap::new();
    for resource in ["clusterroles", "roles", "clusterrolebindings", "rolebindings"] {
        let listed = storage.list(&keys::key(GROUP, resource, None, None), ListOptions::default()).await?;
        stored.extend(listed.kvs.into_iter().map(|kv| (kv.key.clone(), kv)));
    }
    // Several at a time: the objects are independent, and concurrent writes share commits
    // (the embedded store's group commit), where one after another a fresh start paid an
    // fsync per object. Bounded, because all ~190 at once left the allocator holding their
    // peak.
    let in_flight = Arc::new(tokio::sync::Semaphore::new(BOOTSTRAP_CONCURRENCY));
    let mut tasks = tokio::task::JoinSet::new();
    for wanted in policy() {
        let meta = &wanted.object["metadata"];
        let key = keys::key(GROUP, wanted.resource, meta["namespace"].as_str(), meta["name"].as_str());
        let existing = stored.remove(&key);
        let (storage, config, in_flight) = (storage.clone(), config.clone(), in_flight.clone());
        tasks.spawn(async move {
            let _turn = in_flight.acquire_owned().await.map_err(ApiError::internal)?;
            ensure_one(storage.as_ref(), &config, &wanted, existing).await
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| ApiError::internal(format!("reconciling the bootstrap policy: {e}")))??;
    }
    Ok(())
}

/// One policy object created (`existing`: what the store had), or reconciled with what the
/// policy adds.
async fn ensure_one(
    storage: &dyn Storage,
    config: &StoreConfig,
    wanted: &PolicyObject,
    existing: Option<KeyValue>,
) -> Result<(), ApiError> {
    let kind = Kind { group: GROUP.into(), version: "v1".into(), kind: wanted.kind.into() };
    let meta = &wanted.object["metadata"];
    let (name, namespace) = (meta["name"].as_str().unwrap_or_default(), meta["namespace"].as_str());
    let store = Store::new(storage, config, GROUP, wanted.resource, kind.clone());
    let Some(existing) = existing else {
        let body = serde_json::to_vec(&wanted.object).map_err(ApiError::internal)?;
        let defaulted = objects::decode_defaulted(&kind, Format::Json, &body).map_err(ApiError::internal)?;
        let incoming = Incoming::from_external(GROUP, wanted.resource, &kind, defaulted)?;
        return match store.create(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, namespace, incoming).await {
            Err(e) if e.code != 409 => Err(e),
            _ => Ok(()),
        };
    };
    // The stored object as decoded once for every reader (the role aggregation and the
    // authorizer read the same ones next); rbac's fields are the same in every version.
    let existing = stored_object(&existing).map_err(ApiError::internal)?;
    if reconcile(existing.object(), &wanted.object).is_none() {
        return Ok(());
    }
    let mut write = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, wanted.resource), name))?;
        let object = reconcile(&current.external, &wanted.object).unwrap_or_else(|| current.external.clone());
        let incoming = Incoming::from_external(GROUP, wanted.resource, &current.kind, object)?;
        Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
    };
    match store.update(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, namespace, name, &mut write).await {
        Err(e) if e.code != 409 && e.code != 404 => return Err(e),
        _ => {}
    }
    Ok(())
}

/// The existing object with what the policy adds (`computeReconciledRole`,
/// `computeReconciledRoleBinding` without removing anything), or `None` when nothing changes
/// or the object opted out with the auto-update annotation.
pub fn reconcile(existing: &Value, wanted: &Value) -> Option<Value> {
    if existing["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] == json!("false") {
        return None;
    }
    // Each field the policy changes, with its new value: the object is copied only when there
    // is one (a restart finds every object already reconciled).
    let mut metadata: Vec<(&str, Value)> = Vec::new();
    for field in ["labels", "annotations"] {
        let have = existing["metadata"][field].as_object();
        let adds = wanted["metadata"][field].as_object();
        // The existing entries win; the policy only adds keys.
        if have.is_some_and(|have| adds.into_iter().flatten().all(|(key, _)| have.contains_key(key))) {
            continue;
        }
        let mut merged: Map<String, Value> = adds.cloned().unwrap_or_default();
        merged.extend(have.cloned().unwrap_or_default());
        metadata.push((field, Value::Object(merged)));
    }
    let mut fields: Vec<(&str, Value)> = Vec::new();
    if wanted.get("roleRef").is_some() {
        // A binding: the subjects it misses are added. (A changed roleRef is upstream's
        // delete-and-recreate; a bootstrap binding's roleRef is immutable, so it is left.)
        let have = existing["subjects"].as_array();
        let same = |a: &Value, b: &Value| a["kind"] == b["kind"] && a["name"] == b["name"] && a["namespace"] == b["namespace"];
        let mut subjects = have.cloned().unwrap_or_default();
        for subject in wanted["subjects"].as_array().into_iter().flatten() {
            if !subjects.iter().any(|s| same(s, subject)) {
                subjects.push(subject.clone());
            }
        }
        if subjects.len() > have.map_or(0, Vec::len) {
            fields.push(("subjects", Value::Array(subjects)));
        }
    } else if let Some(selectors) = wanted["aggregationRule"]["clusterRoleSelectors"].as_array() {
        // An aggregated role: its rules are the aggregation controller's; the selectors it
        // misses are added.
        let mut have = existing["aggregationRule"]["clusterRoleSelectors"].as_array().cloned().unwrap_or_default();
        for selector in selectors {
            if !have.contains(selector) {
                have.push(selector.clone());
            }
        }
        let rule = json!({ "clusterRoleSelectors": have });
        if existing["aggregationRule"] != rule {
            fields.push(("aggregationRule", rule));
        }
    } else {
        let owned = PolicyRule::of_role(existing);
        let missing = crate::rbac::uncovered(&owned, &PolicyRule::of_role(wanted));
        if !missing.is_empty() {
            let mut rules = existing["rules"].as_array().cloned().unwrap_or_default();
            rules.extend(missing.iter().map(PolicyRule::to_json));
            fields.push(("rules", Value::Array(rules)));
        }
    }
    if metadata.is_empty() && fields.is_empty() {
        return None;
    }
    let mut out = existing.clone();
    for (field, value) in metadata {
        out["metadata"][field] = value;
    }
    for (field, value) in fields {
        out[field] = value;
    }
    (out != *existing).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_reads() {
        let policy = policy();
        let find = |resource: &str, name: &str| {
            policy.iter().find(|o| o.resource == resource && o.object["metadata"]["name"] == name).map(|o| o.object.clone())
        };
        let admin = find("clusterroles", "cluster-admin").unwrap();
        assert_eq!(
            admin["rules"],
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, {"verbs": ["*"], "nonResourceURLs": ["*"]}])
        );
        let edit = find("clusterroles", "edit").unwrap();
        assert_eq!(edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"], "true");
        assert_eq!(
            edit["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
            "true"
        );
        let sa = find("rolebindings", "system:controller:token-cleaner").unwrap();
        assert_eq!(sa["metadata"]["namespace"], "kube-system");
        assert_eq!(sa["subjects"], json!([{"kind": "ServiceAccount", "name": "token-cleaner", "namespace": "kube-system"}]));
        let view = find("clusterroles", "system:aggregate-to-view").unwrap();
        assert_eq!(view["rules"][0]["apiGroups"], json!([""]));
        let public = find("clusterrolebindings", "system:public-info-viewer").unwrap();
        assert_eq!(public["subjects"].as_array().unwrap().len(), 2);
        let signer = find("clusterroles", "system:certificates.k8s.io:legacy-unknown-approver").unwrap();
        assert_eq!(signer["rules"][0]["resourceNames"], json!(["kubernetes.io/legacy-unknown"]));
        let node = find("clusterrolebindings", "system:node").unwrap();
        assert!(node["subjects"].is_null());
    }

    /// Upstream's `testdata/controller-roles.yaml` and `controller-role-bindings.yaml`: every
    /// controller role by name, each bound to its controller's ServiceAccount, and a few roles'
    /// rules exactly as the testdata lists them.
    #[test]
    fn controller_roles_match_upstream() {
        let policy = policy();
        let find = |resource: &str, name: &str| {
            policy.iter().find(|o| o.resource == resource && o.object["metadata"]["name"] == name).map(|o| o.object.clone())
        };
        let controllers = [
            "attachdetach-controller",
            "certificate-controller",
            "clusterrole-aggregation-controller",
            "cronjob-controller",
            "daemon-set-controller",
            "deployment-controller",
            "device-taint-eviction-controller",
            "disruption-controller",
            "endpoint-controller",
            "endpointslice-controller",
            "endpointslicemirroring-controller",
            "ephemeral-volume-controller",
            "expand-controller",
            "generic-garbage-collector",
            "horizontal-pod-autoscaler",
            "job-controller",
            "legacy-service-account-token-cleaner",
            "namespace-controller",
            "node-controller",
            "persistent-volume-binder",
            "pod-garbage-collector",
            "pv-protection-controller",
            "pvc-protection-controller",
            "replicaset-controller",
            "replication-controller",
            "resource-claim-controller",
            "resourcequota-controller",
            "root-ca-cert-publisher",
            "route-controller",
            "selinux-warning-controller",
            "service-account-controller",
            "service-cidrs-controller",
            "service-controller",
            "statefulset-controller",
            "ttl-after-finished-controller",
            "ttl-controller",
            "validatingadmissionpolicy-status-controller",
            "volumeattributesclass-protection-controller",
        ];
        let roles: Vec<String> = policy
            .iter()
            .filter(|o| o.resource == "clusterroles")
            .filter_map(|o| o.object["metadata"]["name"].as_str()?.strip_prefix("system:controller:").map(str::to_owned))
            .collect();
        assert_eq!(roles, controllers);
        for name in controllers {
            let full = format!("system:controller:{name}");
            let role = find("clusterroles", &full).unwrap();
            assert_eq!(role["metadata"]["labels"], json!({"kubernetes.io/bootstrapping": "rbac-defaults"}), "{name}");
            assert_eq!(role["metadata"]["annotations"], json!({AUTO_UPDATE_ANNOTATION: "true"}), "{name}");
            let binding = find("clusterrolebindings", &full).unwrap_or_else(|| panic!("no binding for {name}"));
            assert_eq!(binding["roleRef"], json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": full}));
            assert_eq!(binding["subjects"], json!([{"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}]));
        }
        let events = json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]});
        let rule =
            |groups: &[&str], resources: &[&str], verbs: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": verbs});
        let rules = |name: &str| find("clusterroles", &format!("system:controller:{name}")).unwrap()["rules"].clone();
        assert_eq!(
            rules("certificate-controller"),
            json!([
                rule(&["certificates.k8s.io"], &["certificatesigningrequests"], &["delete", "get", "list", "watch"]),
                rule(&["certificates.k8s.io"], &["certificatesigningrequests/approval", "certificatesigningrequests/status"], &["update"]),
                {"apiGroups": ["certificates.k8s.io"], "resourceNames": ["kubernetes.io/kube-apiserver-client-kubelet"], "resources": ["signers"], "verbs": ["approve"]},
                {"apiGroups": ["certificates.k8s.io"], "resourceNames": ["kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"], "resources": ["signers"], "verbs": ["sign"]},
                rule(&["authorization.k8s.io"], &["subjectaccessreviews"], &["create"]),
                events,
            ])
        );
        assert_eq!(
            rules("namespace-controller"),
            json!([
                rule(&[""], &["namespaces"], &["delete", "get", "list", "watch"]),
                rule(&[""], &["namespaces/finalize", "namespaces/status"], &["update"]),
                rule(&["*"], &["*"], &["delete", "deletecollection", "get", "list", "watch"]),
            ])
        );
        assert_eq!(
            rules("horizontal-pod-autoscaler"),
            json!([
                rule(&["autoscaling"], &["horizontalpodautoscalers"], &["get", "list", "watch"]),
                rule(&["autoscaling"], &["horizontalpodautoscalers/status"], &["update"]),
                rule(&["*"], &["*/scale"], &["get", "update"]),
                rule(&[""], &["pods"], &["list", "watch"]),
                rule(&["metrics.k8s.io"], &["pods"], &["list", "watch"]),
                rule(&["custom.metrics.k8s.io"], &["*"], &["get", "list", "watch"]),
                rule(&["external.metrics.k8s.io"], &["*"], &["get", "list", "watch"]),
                events,
            ])
        );
        assert_eq!(
            rules("legacy-service-account-token-cleaner"),
            json!([
                {"apiGroups": [""], "resourceNames": ["kube-apiserver-legacy-service-account-token-tracking"], "resources": ["configmaps"], "verbs": ["get"]},
                rule(&[""], &["secrets"], &["delete", "patch"]),
            ])
        );
        assert_eq!(
            rules("persistent-volume-binder"),
            json!([
                rule(&[""], &["persistentvolumes"], &["create", "delete", "get", "list", "update", "watch"]),
                rule(&[""], &["persistentvolumes/status"], &["update"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "update", "watch"]),
                rule(&[""], &["persistentvolumeclaims/status"], &["update"]),
                rule(&[""], &["pods"], &["create", "delete", "get", "list", "watch"]),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list", "watch"]),
                rule(&[""], &["nodes"], &["list", "watch"]),
                events,
                rule(&[""], &["events"], &["watch"]),
            ])
        );
    }

    #[test]
    fn reconciling_adds_and_respects_the_opt_out() {
        let wanted = json!({"metadata": {"name": "r", "labels": {"a": "1"}, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]});
        let existing = json!({"metadata": {"name": "r", "labels": {"a": "2"}}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let out = reconcile(&existing, &wanted).unwrap();
        assert_eq!(out["metadata"]["labels"]["a"], "2");
        assert_eq!(out["rules"].as_array().unwrap().len(), 2);
        assert!(reconcile(&out, &wanted).is_none());
        let opted_out = json!({"metadata": {"name": "r", "annotations": {AUTO_UPDATE_ANNOTATION: "false"}}, "rules": []});
        assert!(reconcile(&opted_out, &wanted).is_none());
    }

    #[test]
    fn reconciling_adds_missing_subjects_and_selectors_only() {
        let meta = json!({"name": "b", "labels": {"a": "1"}});
        let subject = |name: &str| json!({"kind": "Group", "name": name});
        let wanted = json!({"metadata": meta, "roleRef": {"name": "r"}, "subjects": [subject("x"), subject("y")]});
        let existing = json!({"metadata": meta, "roleRef": {"name": "r"}, "subjects": [subject("y"), subject("z")]});
        let out = reconcile(&existing, &wanted).unwrap();
        assert_eq!(out["subjects"], json!([subject("y"), subject("z"), subject("x")]));
        assert!(reconcile(&out, &wanted).is_none(), "kept subjects and labels need nothing");
        // Labels missing altogether are added.
        let unlabelled = json!({"metadata": {"name": "b"}, "roleRef": {"name": "r"}, "subjects": out["subjects"]});
        assert_eq!(reconcile(&unlabelled, &wanted).unwrap()["metadata"]["labels"], json!({"a": "1"}));

        let selector = |label: &str| json!({"matchLabels": {label: "true"}});
        let wanted = json!({"metadata": meta, "aggregationRule": {"clusterRoleSelectors": [selector("p"), selector("q")]}});
        let existing =
            json!({"metadata": meta, "aggregationRule": {"clusterRoleSelectors": [selector("q")]}, "rules": [{"verbs": ["get"]}]});
        let out = reconcile(&existing, &wanted).unwrap();
        assert_eq!(out["aggregationRule"]["clusterRoleSelectors"], json!([selector("q"), selector("p")]));
        assert_eq!(out["rules"], existing["rules"], "an aggregated role's rules are the aggregation's");
        assert!(reconcile(&out, &wanted).is_none());
    }
}
