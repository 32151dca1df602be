//! Upstream's bootstrap RBAC policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`) and
//! the `rbac/bootstrap-roles` post-start hook that reconciles it (`pkg/registry/rbac/rest`,
//! `reconciliation`): at every start each ClusterRole, Role and binding of the policy is
//! created when missing; one that exists and does not carry
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` gets the policy's labels,
//! annotations, the rules (broken down) it does not cover yet, its aggregation selectors, and
//! a binding the subjects it misses. All writes go through the `Store`.
//!
//! The policy itself is data, `bootstrap_policy.txt`, in a notation this module reads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kapi_api::api::rbac::v1 as rbac_v1;
use kapi_api::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use kapi_apimachinery::dynamic::{Hub, downcast_hub};
use serde_json::Value;

use crate::rbac::PolicyRule;
use crate::registry::keys;
use crate::registry::objects::{self, Kind};
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::{KeyValue, ListOptions, Storage};

/// The annotation that lets an administrator stop the reconciliation of a bootstrap object.
pub const AUTO_UPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
const GROUP: &str = "rbac.authorization.k8s.io";

const POLICY: &str = include_str!("bootstrap_policy.txt");

/// One object of the policy, or one stored in the policy's resources: a typed
/// `rbac.authorization.k8s.io/v1` object (the group's only version, so also its hub).
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyObject {
    ClusterRole(rbac_v1::ClusterRole),
    Role(rbac_v1::Role),
    ClusterRoleBinding(rbac_v1::ClusterRoleBinding),
    RoleBinding(rbac_v1::RoleBinding),
}

impl PolicyObject {
    /// The resource the object is stored under.
    pub fn resource(&self) -> &'static str {
        match self {
            PolicyObject::ClusterRole(_) => "clusterroles",
            PolicyObject::Role(_) => "roles",
            PolicyObject::ClusterRoleBinding(_) => "clusterrolebindings",
            PolicyObject::RoleBinding(_) => "rolebindings",
        }
    }

    /// Its kind in `rbac.authorization.k8s.io/v1`.
    pub fn kind(&self) -> Kind {
        let kind = match self {
            PolicyObject::ClusterRole(_) => "ClusterRole",
            PolicyObject::Role(_) => "Role",
            PolicyObject::ClusterRoleBinding(_) => "ClusterRoleBinding",
            PolicyObject::RoleBinding(_) => "RoleBinding",
        };
        Kind { group: GROUP.into(), version: "v1".into(), kind: kind.into() }
    }

    pub fn metadata(&self) -> &ObjectMeta {
        static NONE: std::sync::LazyLock<ObjectMeta> = std::sync::LazyLock::new(ObjectMeta::default);
        let meta = match self {
            PolicyObject::ClusterRole(o) => &o.metadata,
            PolicyObject::Role(o) => &o.metadata,
            PolicyObject::ClusterRoleBinding(o) => &o.metadata,
            PolicyObject::RoleBinding(o) => &o.metadata,
        };
        meta.as_ref().unwrap_or(&NONE)
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        let meta = match self {
            PolicyObject::ClusterRole(o) => &mut o.metadata,
            PolicyObject::Role(o) => &mut o.metadata,
            PolicyObject::ClusterRoleBinding(o) => &mut o.metadata,
            PolicyObject::RoleBinding(o) => &mut o.metadata,
        };
        meta.get_or_insert_default()
    }

    pub fn name(&self) -> &str {
        self.metadata().name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<&str> {
        self.metadata().namespace.as_deref()
    }

    /// The object of kind `kind` (a name of [`PolicyObject::kind`]) from its hub value.
    fn from_hub(kind: &str, hub: Hub) -> Option<PolicyObject> {
        match kind {
            "ClusterRole" => downcast_hub(hub).ok().map(PolicyObject::ClusterRole),
            "Role" => downcast_hub(hub).ok().map(PolicyObject::Role),
            "ClusterRoleBinding" => downcast_hub(hub).ok().map(PolicyObject::ClusterRoleBinding),
            "RoleBinding" => downcast_hub(hub).ok().map(PolicyObject::RoleBinding),
            _ => None,
        }
    }

    fn as_walk(&mut self) -> &mut dyn kapi_apimachinery::Walk {
        match self {
            PolicyObject::ClusterRole(o) => o,
            PolicyObject::Role(o) => o,
            PolicyObject::ClusterRoleBinding(o) => o,
            PolicyObject::RoleBinding(o) => o,
        }
    }

    fn into_hub(self) -> Hub {
        match self {
            PolicyObject::ClusterRole(o) => Box::new(o),
            PolicyObject::Role(o) => Box::new(o),
            PolicyObject::ClusterRoleBinding(o) => Box::new(o),
            PolicyObject::RoleBinding(o) => Box::new(o),
        }
    }

    /// A stored object of the policy's resources, decoded straight into its type.
    pub fn decode_stored(bytes: &[u8]) -> Result<PolicyObject, String> {
        let (kind, hub) = objects::decode_stored_hub(bytes).map_err(|e| e.to_string())?;
        PolicyObject::from_hub(&kind.kind, hub).ok_or_else(|| format!("{} {} is not an RBAC object", kind.api_version(), kind.kind))
    }

    /// The object as the `Store` takes it (`apiVersion` and `kind` set).
    pub fn to_external(&self) -> Result<Value, ApiError> {
        objects::external_from_hub(&self.kind(), self.clone().into_hub()).map_err(ApiError::internal)
    }

    /// [`PolicyObject::to_external`] as the generated object a create stores as it is.
    pub fn to_external_object(&self) -> Result<crate::registry::object::Object, ApiError> {
        crate::registry::object::Object::from_hub(&self.kind(), self.clone().into_hub()).map_err(ApiError::internal)
    }

    /// The object the `Store` hands an update, typed.
    pub fn from_external(kind: &Kind, external: Value) -> Result<PolicyObject, ApiError> {
        let hub = objects::hub_from_external(kind, external).map_err(ApiError::internal)?;
        PolicyObject::from_hub(&kind.kind, hub).ok_or_else(|| ApiError::internal(format!("{} is not an RBAC kind", kind.kind)))
    }
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(|s| if s == "\"\"" { String::new() } else { s.to_owned() }).collect()
}

/// The metadata every policy object starts with.
fn policy_meta(namespace: Option<&str>, name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: BTreeMap::from([(BOOTSTRAPPING_LABEL.to_owned(), "rbac-defaults".to_owned())]),
        annotations: BTreeMap::from([(AUTO_UPDATE_ANNOTATION.to_owned(), "true".to_owned())]),
        ..Default::default()
    })
}

fn role_ref(kind: &str, name: &str) -> rbac_v1::RoleRef {
    rbac_v1::RoleRef { api_group: Some(GROUP.to_owned()), kind: kind.to_owned(), name: name.to_owned() }
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
        if !line.starts_with(' ') {
            let object = match words[0] {
                "clusterrole" => {
                    let mut role = rbac_v1::ClusterRole { metadata: policy_meta(None, words[1]), ..Default::default() };
                    for extra in &words[2..] {
                        if let Some(label) = extra.strip_prefix('+') {
                            role.metadata.get_or_insert_default().labels.insert(format!("{GROUP}/{label}"), "true".into());
                        } else if let Some(target) = extra.strip_prefix("aggregates=") {
                            let selector = LabelSelector {
                                match_labels: BTreeMap::from([(format!("{GROUP}/aggregate-to-{target}"), "true".to_owned())]),
                                ..Default::default()
                            };
                            role.aggregation_rule = Some(rbac_v1::AggregationRule { cluster_role_selectors: vec![selector] });
                        }
                    }
                    PolicyObject::ClusterRole(role)
                }
                "role" => PolicyObject::Role(rbac_v1::Role { metadata: policy_meta(Some(words[1]), words[2]), ..Default::default() }),
                "clusterrolebinding" => PolicyObject::ClusterRoleBinding(rbac_v1::ClusterRoleBinding {
                    metadata: policy_meta(None, words[1]),
                    role_ref: role_ref("ClusterRole", words[2]),
                    ..Default::default()
                }),
                "rolebinding" => PolicyObject::RoleBinding(rbac_v1::RoleBinding {
                    metadata: policy_meta(Some(words[1]), words[2]),
                    role_ref: role_ref("Role", words[3]),
                    ..Default::default()
                }),
                other => panic!("bootstrap_policy.txt: unknown entry {other:?}"),
            };
            out.push(object);
            continue;
        }
        let Some(current) = out.last_mut() else { panic!("bootstrap_policy.txt: a rule before any object") };
        match words[0] {
            "User" | "Group" => push_subject(
                current,
                rbac_v1::Subject { api_group: Some(GROUP.into()), kind: words[0].into(), name: words[1].into(), namespace: None },
            ),
            "ServiceAccount" => {
                let (namespace, name) = words[1].split_once('/').expect("ServiceAccount namespace/name");
                let subject = rbac_v1::Subject {
                    kind: "ServiceAccount".into(),
                    name: name.into(),
                    namespace: Some(namespace.into()),
                    api_group: None,
                };
                push_subject(current, subject);
            }
            "url" => {
                let rule = PolicyRule { verbs: list(words[1]), non_resource_urls: list(words[2]), ..Default::default() };
                push_rule(current, rule);
            }
            _ => {
                let rule = PolicyRule {
                    verbs: list(words[0]),
                    api_groups: list(words[1]),
                    resources: list(words[2]),
                    resource_names: words.get(3).map(|w| list(w)).unwrap_or_default(),
                    ..Default::default()
                };
                push_rule(current, rule);
            }
        }
    }
    out
}

fn push_subject(object: &mut PolicyObject, subject: rbac_v1::Subject) {
    match object {
        PolicyObject::ClusterRoleBinding(binding) => binding.subjects.push(subject),
        PolicyObject::RoleBinding(binding) => binding.subjects.push(subject),
        _ => panic!("bootstrap_policy.txt: a subject under a role"),
    }
}

fn push_rule(object: &mut PolicyObject, rule: PolicyRule) {
    match object {
        PolicyObject::ClusterRole(role) => role.rules.push(rule.into()),
        PolicyObject::Role(role) => role.rules.push(rule.into()),
        _ => panic!("bootstrap_policy.txt: a rule under a binding"),
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
        let key = keys::key(GROUP, wanted.resource(), wanted.namespace(), Some(wanted.name()));
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
    let (kind, resource, name) = (wanted.kind(), wanted.resource(), wanted.name());
    let store = Store::new(storage, config, GROUP, resource, kind.clone());
    let options = || WriteOptions { manager: Some("kube-apiserver"), ..Default::default() };
    let Some(existing) = existing else {
        // Defaulted as a decoded request body is.
        let mut object = wanted.clone();
        crate::registry::defaults::apply_defaults(object.as_walk());
        let incoming = Incoming::from_external(GROUP, resource, &kind, object.to_external_object()?)?;
        return match store.create(options(), wanted.namespace(), incoming).await {
            Err(e) if e.code != 409 => Err(e),
            _ => Ok(()),
        };
    };
    // Compared typed, decoded straight from the stored bytes: a restart finds every object
    // reconciled already, and writes nothing.
    let existing = PolicyObject::decode_stored(&existing.value).map_err(ApiError::internal)?;
    if reconcile(&existing, wanted).is_none() {
        return Ok(());
    }
    let mut write = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(GROUP, resource), name))?;
        let stored = PolicyObject::from_external(&current.kind, current.external()?.clone())?;
        let object = match reconcile(&stored, wanted) {
            Some(reconciled) => reconciled.to_external()?,
            None => current.external()?.clone(),
        };
        let incoming = Incoming::from_external(GROUP, resource, &current.kind, object)?;
        Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
    };
    match store.update(options(), wanted.namespace(), name, &mut write).await {
        Err(e) if e.code != 409 && e.code != 404 => return Err(e),
        _ => {}
    }
    Ok(())
}

/// The existing object with what the policy adds (`computeReconciledRole`,
/// `computeReconciledRoleBinding` without removing anything), or `None` when nothing changes
/// or the object opted out with the auto-update annotation.
pub fn reconcile(existing: &PolicyObject, wanted: &PolicyObject) -> Option<PolicyObject> {
    let have = existing.metadata();
    if have.annotations.get(AUTO_UPDATE_ANNOTATION).is_some_and(|v| v == "false") {
        return None;
    }
    let mut out = existing.clone();
    // The existing labels and annotations win; the policy only adds keys.
    let adds = wanted.metadata();
    let meta = out.metadata_mut();
    for (into, from) in [(&mut meta.labels, &adds.labels), (&mut meta.annotations, &adds.annotations)] {
        for (key, value) in from {
            into.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    match (&mut out, wanted) {
        // A binding: the subjects it misses are added. (A changed roleRef is upstream's
        // delete-and-recreate; a bootstrap binding's roleRef is immutable, so it is left.)
        (PolicyObject::ClusterRoleBinding(have), PolicyObject::ClusterRoleBinding(want)) => {
            add_subjects(&mut have.subjects, &want.subjects)
        }
        (PolicyObject::RoleBinding(have), PolicyObject::RoleBinding(want)) => add_subjects(&mut have.subjects, &want.subjects),
        // An aggregated role: its rules are the aggregation controller's; the selectors it
        // misses are added.
        (PolicyObject::ClusterRole(have), PolicyObject::ClusterRole(want)) if want.aggregation_rule.is_some() => {
            let selectors = &mut have.aggregation_rule.get_or_insert_default().cluster_role_selectors;
            for selector in want.aggregation_rule.iter().flat_map(|rule| &rule.cluster_role_selectors) {
                if !selectors.contains(selector) {
                    selectors.push(selector.clone());
                }
            }
        }
        (PolicyObject::ClusterRole(have), PolicyObject::ClusterRole(want)) => add_rules(&mut have.rules, &want.rules),
        (PolicyObject::Role(have), PolicyObject::Role(want)) => add_rules(&mut have.rules, &want.rules),
        _ => return None,
    }
    (out != *existing).then_some(out)
}

fn add_subjects(have: &mut Vec<rbac_v1::Subject>, wanted: &[rbac_v1::Subject]) {
    for subject in wanted {
        let same = |s: &rbac_v1::Subject| s.kind == subject.kind && s.name == subject.name && s.namespace == subject.namespace;
        if !have.iter().any(same) {
            have.push(subject.clone());
        }
    }
}

/// The wanted rules the existing ones do not cover yet, added.
fn add_rules(have: &mut Vec<rbac_v1::PolicyRule>, wanted: &[rbac_v1::PolicyRule]) {
    let missing = crate::rbac::uncovered(&PolicyRule::of_rules(have), &PolicyRule::of_rules(wanted));
    have.extend(missing.into_iter().map(rbac_v1::PolicyRule::from));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_reads() {
        let policy = policy();
        let find = |resource: &str, name: &str| {
            policy.iter().find(|o| o.resource() == resource && o.name() == name).map(|o| o.to_external().unwrap())
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
            policy.iter().find(|o| o.resource() == resource && o.name() == name).map(|o| o.to_external().unwrap())
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
            .filter(|o| o.resource() == "clusterroles")
            .filter_map(|o| o.name().strip_prefix("system:controller:").map(str::to_owned))
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

    /// A typed object of `kind` from its JSON, and reconciling typed objects given as JSON.
    fn typed(kind: &str, value: Value) -> PolicyObject {
        PolicyObject::from_external(&Kind { group: GROUP.into(), version: "v1".into(), kind: kind.into() }, value).unwrap()
    }

    fn reconciled(kind: &str, existing: &Value, wanted: &Value) -> Option<Value> {
        reconcile(&typed(kind, existing.clone()), &typed(kind, wanted.clone())).map(|out| out.to_external().unwrap())
    }

    #[test]
    fn reconciling_adds_and_respects_the_opt_out() {
        let wanted = json!({"metadata": {"name": "r", "labels": {"a": "1"}, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]});
        let existing = json!({"metadata": {"name": "r", "labels": {"a": "2"}}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let out = reconciled("ClusterRole", &existing, &wanted).unwrap();
        assert_eq!(out["metadata"]["labels"]["a"], "2");
        assert_eq!(out["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true");
        assert_eq!(out["rules"].as_array().unwrap().len(), 2);
        assert!(reconciled("ClusterRole", &out, &wanted).is_none());
        let opted_out = json!({"metadata": {"name": "r", "annotations": {AUTO_UPDATE_ANNOTATION: "false"}}, "rules": []});
        assert!(reconciled("ClusterRole", &opted_out, &wanted).is_none());
        assert!(reconcile(&typed("Role", existing), &typed("ClusterRole", wanted)).is_none(), "kinds differ");
    }

    #[test]
    fn reconciling_adds_missing_subjects_and_selectors_only() {
        let meta = json!({"name": "b", "labels": {"a": "1"}});
        let subject = |name: &str| json!({"kind": "Group", "name": name});
        let role_ref = json!({"kind": "ClusterRole", "name": "r"});
        let wanted = json!({"metadata": meta, "roleRef": role_ref, "subjects": [subject("x"), subject("y")]});
        let existing = json!({"metadata": meta, "roleRef": role_ref, "subjects": [subject("y"), subject("z")]});
        let out = reconciled("ClusterRoleBinding", &existing, &wanted).unwrap();
        assert_eq!(out["subjects"], json!([subject("y"), subject("z"), subject("x")]));
        assert!(reconciled("ClusterRoleBinding", &out, &wanted).is_none(), "kept subjects and labels need nothing");
        // Labels missing altogether are added.
        let unlabelled = json!({"metadata": {"name": "b"}, "roleRef": role_ref, "subjects": out["subjects"]});
        assert_eq!(reconciled("ClusterRoleBinding", &unlabelled, &wanted).unwrap()["metadata"]["labels"], json!({"a": "1"}));

        let selector = |label: &str| json!({"matchLabels": {label: "true"}});
        let wanted = json!({"metadata": meta, "aggregationRule": {"clusterRoleSelectors": [selector("p"), selector("q")]}});
        let existing =
            json!({"metadata": meta, "aggregationRule": {"clusterRoleSelectors": [selector("q")]}, "rules": [{"verbs": ["get"]}]});
        let out = reconciled("ClusterRole", &existing, &wanted).unwrap();
        assert_eq!(out["aggregationRule"]["clusterRoleSelectors"], json!([selector("q"), selector("p")]));
        assert_eq!(out["rules"], existing["rules"], "an aggregated role's rules are the aggregation's");
        assert!(reconciled("ClusterRole", &out, &wanted).is_none());
    }

    /// A stored policy object decodes straight into its type, and back to the same JSON.
    #[test]
    fn stored_policy_objects_decode_typed() {
        for wanted in policy().into_iter().take(3).chain(policy().into_iter().rev().take(3)) {
            let external = wanted.to_external().unwrap();
            let stored = objects::encode_stored(&wanted.kind(), &external).unwrap();
            assert_eq!(PolicyObject::decode_stored(&stored).unwrap().to_external().unwrap(), external);
        }
        let configmap = Kind::core_v1("ConfigMap");
        let stored = objects::encode_stored(&configmap, &json!({"metadata": {"name": "c"}})).unwrap();
        assert!(PolicyObject::decode_stored(&stored).is_err());
    }
}
