//! The objects the API server creates at start-up, as data: the system namespaces and the
//! `kubernetes` Service (upstream's `bootstrap-controller`), the system priority classes
//! (the `scheduling/bootstrap-system-priority-classes` post-start hook,
//! `pkg/apis/scheduling` `SystemPriorityClasses`) and API Priority and Fairness' mandatory and
//! suggested configuration (`k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap`, ensured by the
//! `priority-and-fairness-config-producer` hook), and [`ensure`], which creates whichever of
//! them is missing through the registry's `Store`, run at every start.

use std::sync::Arc;

use serde_json::{Value, json};

use super::core::services::ServiceNetwork;
use super::objects::{self, Kind};
use super::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::{ApiError, GroupResource};
use crate::storage::Storage;

/// Creates the objects every cluster starts with ([`objects`]) that do not exist yet, through
/// the registry's `Store` as a client's create (defaulted, admitted, validated), and writes back
/// the spec of those whose spec upstream restores ([`restores_spec`]) when the stored one
/// differs. Idempotent, so any number of servers on one store may run it: a create that loses
/// to another replica's, or an update that loses a race, is left to the winner.
///
/// The cluster-scoped objects first, the namespaces among them, then the namespaced ones (the
/// `kubernetes` Service), each group all at once: the objects are independent, and concurrent
/// writes share commits.
pub async fn ensure(storage: Arc<dyn Storage>, config: Arc<StoreConfig>, secure_port: u16) -> Result<(), ApiError> {
    let (cluster, namespaced): (Vec<_>, Vec<_>) =
        objects(&config.network, secure_port).into_iter().partition(|o| o.object["metadata"]["namespace"].is_null());
    for wave in [cluster, namespaced] {
        let mut tasks = tokio::task::JoinSet::new();
        for wanted in wave {
            let (storage, config) = (storage.clone(), config.clone());
            tasks.spawn(async move { ensure_one(storage.as_ref(), &config, &wanted).await });
        }
        while let Some(done) = tasks.join_next().await {
            done.map_err(|e| ApiError::internal(format!("creating the start-up objects: {e}")))??;
        }
    }
    Ok(())
}

/// The `kubernetes` Service created when missing, as at start-up (its bootstrap controller
/// recreates it when it is deleted).
pub async fn ensure_kubernetes_service(storage: &dyn Storage, config: &StoreConfig, secure_port: u16) -> Result<(), ApiError> {
    let wanted = core("Service", "services", super::core::services::kubernetes_service(&config.network, secure_port));
    ensure_one(storage, config, &wanted).await
}

/// One start-up object created when missing, or its spec restored (see [`ensure`]).
async fn ensure_one(storage: &dyn Storage, config: &StoreConfig, wanted: &BootstrapObject) -> Result<(), ApiError> {
    let kind = Kind { group: wanted.group.into(), version: wanted.version.into(), kind: wanted.kind.into() };
    let meta = &wanted.object["metadata"];
    let (name, namespace) = (meta["name"].as_str().unwrap_or_default(), meta["namespace"].as_str());
    let store = Store::new(storage, config, wanted.group, wanted.resource, kind.clone());
    let defaulted = || objects::defaulted(&kind, &wanted.object).map_err(ApiError::internal);
    let key = super::keys::key(wanted.group, wanted.resource, namespace, Some(name));
    let Some(current) = storage.get(&key).await? else {
        let incoming = Incoming::from_object(wanted.group, wanted.resource, &kind, &wanted.object)?;
        return match store.create(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, namespace, incoming).await {
            Err(e) if e.code != 409 && !stored_by_another(storage, &key).await => Err(e),
            _ => Ok(()),
        };
    };
    // What exists and is never restored is left as it is, undecoded (a restart finds them all).
    if !restorable(wanted) {
        return Ok(());
    }
    let (_, stored) = objects::decode_stored(&current.value).map_err(ApiError::internal)?;
    if !restores_spec(wanted, &stored) {
        return Ok(());
    }
    // Both sides as stored bytes read back, so only a real difference counts.
    let (_, mut spec) =
        objects::encode_stored(&kind, &defaulted()?).and_then(|bytes| objects::decode_stored(&bytes)).map_err(ApiError::internal)?;
    keep_on_restore(wanted.resource, &stored, &mut spec);
    if stored["spec"] == spec["spec"] {
        return Ok(());
    }
    let revision = current.mod_revision.to_string();
    let mut restore = |current: Option<&Current<'_>>| {
        // Deleted since it was read: nothing to restore (its next start creates it).
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new(wanted.group, wanted.resource), name))?;
        let mut object = current.external()?.clone();
        object["spec"] = spec["spec"].clone();
        object["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("true");
        let incoming = Incoming::from_external(wanted.group, wanted.resource, &current.kind, object)?;
        Ok(Proposed { incoming, precondition: Some(revision.clone()), uid: None, managed_fields: None })
    };
    match store.update(WriteOptions { manager: Some("kube-apiserver"), ..Default::default() }, namespace, name, &mut restore).await {
        Err(e) if e.code != 409 && e.code != 404 => Err(e),
        _ => Ok(()),
    }
}

/// Whether another replica stores the object at `key` within a few seconds of a create of it
/// failing here. A replica that started at the same time may have taken what the object needs
/// first (the `kubernetes` Service's cluster IP) and be about to write it; the create that lost
/// is then no error, as a create answered AlreadyExists is not.
async fn stored_by_another(storage: &dyn Storage, key: &str) -> bool {
    for _ in 0..50 {
        if matches!(storage.get(key).await, Ok(Some(_))) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// One object to create at start-up when it does not exist.
#[derive(Debug, Clone)]
pub struct BootstrapObject {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub resource: &'static str,
    /// The external object in `group/version`; `metadata.name` (and `namespace`) locate it.
    pub object: Value,
    /// A mandatory flow-control object: its spec is always restored (see [`restores_spec`]).
    pub mandatory: bool,
}

/// A priority class every cluster has.
#[derive(Debug, Clone, Copy)]
pub struct SystemPriorityClass {
    pub name: &'static str,
    pub value: i64,
    pub description: &'static str,
}

/// Upstream's `SystemCriticalPriority` (`2 * HighestUserDefinablePriority`).
const SYSTEM_CRITICAL_PRIORITY: i64 = 2_000_000_000;

/// The system priority classes (`scheduling.SystemPriorityClasses()`), also what the
/// `Priority` admission plugin knows when the store does not have them.
pub const SYSTEM_PRIORITY_CLASSES: &[SystemPriorityClass] = &[
    SystemPriorityClass {
        name: "system-node-critical",
        value: SYSTEM_CRITICAL_PRIORITY + 1000,
        description: "Used for system critical pods that must not be moved from their current node.",
    },
    SystemPriorityClass {
        name: "system-cluster-critical",
        value: SYSTEM_CRITICAL_PRIORITY,
        description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    },
];

/// The annotation marking a flow-control object the server keeps up to date
/// (`flowcontrol.AutoUpdateAnnotationKey`).
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// Every object to ensure at start-up, in creation order.
pub fn objects(network: &ServiceNetwork, secure_port: u16) -> Vec<BootstrapObject> {
    let mut out = Vec::new();
    for name in super::SYSTEM_NAMESPACES {
        out.push(core("Namespace", "namespaces", namespace(name)));
    }
    out.push(core("Service", "services", super::core::services::kubernetes_service(network, secure_port)));
    for pc in SYSTEM_PRIORITY_CLASSES {
        out.push(BootstrapObject {
            group: "scheduling.k8s.io",
            version: "v1",
            kind: "PriorityClass",
            resource: "priorityclasses",
            object: json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc.name},
                "value": pc.value,
                "description": pc.description,
            }),
            mandatory: false,
        });
    }
    for (mandatory, spec) in priority_levels() {
        out.push(flow_control("PriorityLevelConfiguration", "prioritylevelconfigurations", mandatory, spec));
    }
    for (mandatory, spec) in flow_schemas() {
        out.push(flow_control("FlowSchema", "flowschemas", mandatory, spec));
    }
    out
}

/// Whether the server writes its spec back over a stored copy of a start-up object that
/// differs (upstream's flow-control config ensurer): always for a mandatory object; for a
/// suggested one while its `apf.kubernetes.io/autoupdate-spec` annotation is true, or, without
/// the annotation, while nobody has changed it (`generation` 1). Other start-up objects are
/// only created.
pub fn restores_spec(wanted: &BootstrapObject, stored: &Value) -> bool {
    if !restorable(wanted) {
        return false;
    }
    if wanted.mandatory {
        return true;
    }
    match stored["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION].as_str() {
        // Go's `strconv.ParseBool` true forms; anything else (false, or unparseable) is no.
        Some(v) => matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"),
        None => stored["metadata"]["generation"].as_i64() == Some(1),
    }
}

/// Whether a stored copy of `wanted` may ever have its spec restored ([`restores_spec`]): only
/// flow-control objects do.
fn restorable(wanted: &BootstrapObject) -> bool {
    wanted.group == "flowcontrol.apiserver.k8s.io"
}

/// The part of a mandatory object's spec that users may change and the server keeps when it
/// restores the rest: the `exempt` section of the `exempt` priority level (its concurrency
/// shares and lendable percent).
pub fn keep_on_restore(resource: &str, current: &Value, wanted: &mut Value) {
    if resource == "prioritylevelconfigurations" && !wanted["spec"]["exempt"].is_null() && !current["spec"]["exempt"].is_null() {
        wanted["spec"]["exempt"] = current["spec"]["exempt"].clone();
    }
}

fn core(kind: &'static str, resource: &'static str, object: Value) -> BootstrapObject {
    BootstrapObject { group: "", version: "v1", kind, resource, object, mandatory: false }
}

fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

/// A flow-control object from `(name, spec)`, annotated for automatic update as upstream's
/// bootstrap objects all are.
fn flow_control(kind: &'static str, resource: &'static str, mandatory: bool, (name, spec): (&str, Value)) -> BootstrapObject {
    BootstrapObject {
        group: "flowcontrol.apiserver.k8s.io",
        version: "v1",
        kind,
        resource,
        object: json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
            "spec": spec,
        }),
        mandatory,
    }
}

// Well-known identities (`k8s.io/apiserver/pkg/authentication/user`, `.../serviceaccount`).
const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
const NODES_GROUP: &str = "system:nodes";
const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
const ALL_AUTHENTICATED: &str = "system:authenticated";
const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const KUBE_SCHEDULER: &str = "system:kube-scheduler";
/// `flowcontrol.VerbAll`, `APIGroupAll`, `ResourceAll`, `NamespaceEvery`, `NonResourceAll`,
/// `NameAll`.
const ALL: &str = "*";

/// (mandatory, (name, spec)) of every priority level, mandatory first.
fn priority_levels() -> Vec<(bool, (&'static str, Value))> {
    vec![
        (true, ("exempt", json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}))),
        (
            true,
            (
                "catch-all",
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}),
            ),
        ),
        (false, ("system", limited(30, 33, 64, 6, 50))),
        (false, ("node-high", limited(40, 25, 64, 6, 50))),
        (false, ("leader-election", limited(10, 0, 16, 4, 50))),
        (false, ("workload-high", limited(40, 50, 128, 6, 50))),
        (false, ("workload-low", limited(100, 90, 128, 6, 50))),
        (false, ("global-default", limited(20, 50, 128, 6, 50))),
    ]
}

/// A `Limited` priority level that queues: shares, lendable percent, queues, hand size, queue
/// length limit.
fn limited(shares: i32, lendable: i32, queues: i32, hand_size: i32, queue_length_limit: i32) -> Value {
    json!({
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": queue_length_limit},
            },
        },
    })
}

/// (mandatory, (name, spec)) of every flow schema, mandatory first.
fn flow_schemas() -> Vec<(bool, (&'static str, Value))> {
    let everything = |subjects: Vec<Value>| {
        json!({
            "subjects": subjects,
            "resourceRules": [resource_rule(&[ALL], &[ALL], &[ALL], &[ALL], true)],
            "nonResourceRules": [{"verbs": [ALL], "nonResourceURLs": [ALL]}],
        })
    };
    let leader_election_verbs: &[&str] = &["get", "create", "update"];
    let mut system_leader_election = users(&[KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER]);
    system_leader_election.extend(kube_system_service_accounts(&[ALL]));
    let mut endpoint_controller = users(&[KUBE_CONTROLLER_MANAGER]);
    endpoint_controller.extend(kube_system_service_accounts(&["endpoint-controller", "endpointslicemirroring-controller"]));
    vec![
        (true, ("exempt", schema("exempt", 1, None, everything(groups(&[SYSTEM_PRIVILEGED_GROUP]))))),
        (true, ("catch-all", schema("catch-all", 10000, Some("ByUser"), everything(groups(&[ALL_UNAUTHENTICATED, ALL_AUTHENTICATED]))))),
        (
            false,
            (
                "probes",
                schema(
                    "exempt",
                    2,
                    None,
                    json!({
                        "subjects": groups(&[ALL_UNAUTHENTICATED, ALL_AUTHENTICATED]),
                        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                    }),
                ),
            ),
        ),
        (
            false,
            (
                "system-leader-election",
                schema(
                    "leader-election",
                    100,
                    Some("ByUser"),
                    json!({
                        "subjects": system_leader_election,
                        "resourceRules": [resource_rule(leader_election_verbs, &["coordination.k8s.io"], &["leases"], &[ALL], false)],
                    }),
                ),
            ),
        ),
        (
            false,
            (
                "endpoint-controller",
                schema(
                    "workload-high",
                    150,
                    Some("ByUser"),
                    json!({
                        "subjects": endpoint_controller,
                        "resourceRules": [resource_rule(leader_election_verbs, &[""], &["endpoints"], &[ALL], false)],
                    }),
                ),
            ),
        ),
        (
            false,
            (
                "workload-leader-election",
                schema(
                    "leader-election",
                    200,
                    Some("ByUser"),
                    json!({
                        "subjects": kube_system_service_accounts(&[ALL]),
                        "resourceRules": [
                            resource_rule(leader_election_verbs, &[""], &["endpoints", "configmaps"], &[ALL], false),
                            resource_rule(leader_election_verbs, &["coordination.k8s.io"], &["leases"], &[ALL], false),
                        ],
                    }),
                ),
            ),
        ),
        (
            false,
            (
                "system-node-high",
                schema(
                    "node-high",
                    400,
                    Some("ByUser"),
                    json!({
                        "subjects": groups(&[NODES_GROUP]),
                        "resourceRules": [
                            resource_rule(&[ALL], &[""], &["nodes", "nodes/status"], &[ALL], true),
                            resource_rule(&[ALL], &["coordination.k8s.io"], &["leases"], &[ALL], false),
                        ],
                    }),
                ),
            ),
        ),
        (false, ("system-nodes", schema("system", 500, Some("ByUser"), everything(groups(&[NODES_GROUP]))))),
        (
            false,
            ("kube-controller-manager", schema("workload-high", 800, Some("ByNamespace"), everything(users(&[KUBE_CONTROLLER_MANAGER])))),
        ),
        (false, ("kube-scheduler", schema("workload-high", 800, Some("ByNamespace"), everything(users(&[KUBE_SCHEDULER]))))),
        (
            false,
            (
                "kube-system-service-accounts",
                schema("workload-high", 900, Some("ByNamespace"), everything(kube_system_service_accounts(&[ALL]))),
            ),
        ),
        (false, ("service-accounts", schema("workload-low", 9000, Some("ByUser"), everything(groups(&[ALL_SERVICE_ACCOUNTS]))))),
        (
            false,
            (
                "global-default",
                schema("global-default", 9900, Some("ByUser"), everything(groups(&[ALL_UNAUTHENTICATED, ALL_AUTHENTICATED]))),
            ),
        ),
    ]
}

/// A flow schema's spec: its priority level, precedence, distinguisher (none: every request of
/// the schema is one flow) and its one rule.
fn schema(priority_level: &str, matching_precedence: i32, distinguisher: Option<&str>, rule: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": priority_level},
        "matchingPrecedence": matching_precedence,
        "rules": [rule],
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    spec
}

fn resource_rule(verbs: &[&str], api_groups: &[&str], resources: &[&str], namespaces: &[&str], cluster_scope: bool) -> Value {
    json!({"verbs": verbs, "apiGroups": api_groups, "resources": resources, "namespaces": namespaces, "clusterScope": cluster_scope})
}

fn groups(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "Group", "group": {"name": n}})).collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "User", "user": {"name": n}})).collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": "kube-system"}})).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_schemas_name_existing_priority_levels_and_unique_names() {
        let objects = objects(&ServiceNetwork::default(), 6443);
        let names_of = |kind: &str| -> Vec<String> {
            objects.iter().filter(|o| o.kind == kind).map(|o| o.object["metadata"]["name"].as_str().unwrap().to_owned()).collect()
        };
        let levels = names_of("PriorityLevelConfiguration");
        let schemas = names_of("FlowSchema");
        assert_eq!(levels.len(), 8);
        assert_eq!(schemas.len(), 13);
        for o in objects.iter().filter(|o| o.kind == "FlowSchema") {
            let level = o.object["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap();
            assert!(levels.iter().any(|l| l == level), "{level}");
            assert_eq!(o.object["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION], "true");
        }
        let mut unique = schemas.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), schemas.len());
        let mandatory: Vec<_> =
            objects.iter().filter(|o| o.mandatory).map(|o| (o.kind, o.object["metadata"]["name"].as_str().unwrap())).collect();
        assert_eq!(
            mandatory,
            [
                ("PriorityLevelConfiguration", "exempt"),
                ("PriorityLevelConfiguration", "catch-all"),
                ("FlowSchema", "exempt"),
                ("FlowSchema", "catch-all")
            ]
        );
    }

    #[test]
    fn which_stored_copies_get_their_spec_back() {
        let objects = objects(&ServiceNetwork::default(), 6443);
        let find = |kind: &str, name: &str| objects.iter().find(|o| o.kind == kind && o.object["metadata"]["name"] == name).unwrap();
        let (catch_all, global) = (find("FlowSchema", "catch-all"), find("FlowSchema", "global-default"));
        let stored = |annotation: Option<&str>, generation: i64| {
            let mut o = json!({"metadata": {"generation": generation}});
            if let Some(a) = annotation {
                o["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!(a);
            }
            o
        };
        assert!(restores_spec(catch_all, &stored(Some("false"), 4)));
        assert!(restores_spec(global, &stored(Some("true"), 4)));
        assert!(!restores_spec(global, &stored(Some("false"), 1)));
        assert!(restores_spec(global, &stored(None, 1)));
        assert!(!restores_spec(global, &stored(None, 2)));
        assert!(!restores_spec(find("PriorityClass", "system-node-critical"), &stored(Some("true"), 1)));
    }

    #[test]
    fn restoring_keeps_the_exempt_levels_user_fields() {
        let current = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 7, "lendablePercent": 3}}});
        let mut wanted = json!({"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}});
        keep_on_restore("prioritylevelconfigurations", &current, &mut wanted);
        assert_eq!(wanted, current);
    }
}
