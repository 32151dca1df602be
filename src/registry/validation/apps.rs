//! The apps group (`pkg/apis/apps/validation`): deployments, replica sets, stateful sets and
//! daemon sets — a selector that selects the template's pods, pods that always restart, and a
//! selector that never changes. The rules read the generated types.

use std::collections::BTreeMap;

use kapi_api::api::apps::v1 as apps;
use kapi_api::api::core::v1 as api;
use kapi_api::apimachinery::pkg::apis::meta::v1 as metav1;
use kapi_apimachinery::IntOrString;

use super::core::{pod_template_spec, template_restart_always};
use super::{
    FIELD_IMMUTABLE, FieldPath, IS_NEGATIVE, json_value, non_negative_int, selector_is_empty, selector_matches, selector_value,
    typed_label_selector,
};
use crate::status::{BadValue, FieldError};

/// A template's labels (none when it has no metadata).
pub(super) fn template_labels(template: Option<&api::PodTemplateSpec>) -> &BTreeMap<String, String> {
    static NONE: BTreeMap<String, String> = BTreeMap::new();
    template.and_then(|t| t.metadata.as_ref()).map_or(&NONE, |meta| &meta.labels)
}

/// A label map as a bad value: JSON, `null` when empty (an empty map is not written).
pub(super) fn labels_value(labels: &BTreeMap<String, String>) -> BadValue {
    if labels.is_empty() { json_value(&()) } else { json_value(labels) }
}

/// The selector, the template's labels against it, and the template (upstream's
/// `ValidatePodTemplateSpecForReplicaSet` and its siblings). `kind` names the controller in the
/// `activeDeadlineSeconds` message.
fn selector_and_template(
    selector: Option<&metav1::LabelSelector>,
    template: Option<&api::PodTemplateSpec>,
    kind: &str,
    errs: &mut Vec<FieldError>,
) {
    match selector.filter(|s| !selector_is_empty(Some(s))) {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(selector) => typed_label_selector(selector, &FieldPath::Root("spec.selector"), errs),
    }
    let labels = template_labels(template);
    if !selector_matches(selector, labels) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels_value(labels),
            "`selector` does not match template `labels`",
        ));
    }
    pod_template_spec(template, "spec.template", errs);
    template_restart_always(template, "spec.template", kind, errs);
}

/// `ValidateImmutableField` on `spec.selector`, printed as upstream prints a selector. The
/// generated type holds Go's nil selector as an empty one (written as `null`), so an empty
/// selector counts as none.
fn selector_immutable(old: Option<&metav1::LabelSelector>, new: Option<&metav1::LabelSelector>, errs: &mut Vec<FieldError>) {
    fn canonical(s: Option<&metav1::LabelSelector>) -> Option<&metav1::LabelSelector> {
        s.filter(|s| !selector_is_empty(Some(s)))
    }
    if canonical(old) != canonical(new) {
        errs.push(FieldError::invalid("spec.selector", selector_value(canonical(new)), FIELD_IMMUTABLE));
    }
}

pub fn deployment(d: &apps::Deployment) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = d.spec.as_ref();
    non_negative_int(spec.and_then(|s| s.replicas).map(i64::from), "spec.replicas", &mut errs);
    selector_and_template(spec.map(|s| &s.selector), spec.map(|s| &s.template), "ReplicaSet", &mut errs);
    if let Some(strategy) = spec.and_then(|s| s.strategy.as_ref()) {
        deployment_strategy(strategy, &mut errs);
    }
    non_negative_int(spec.and_then(|s| s.min_ready_seconds).map(i64::from), "spec.minReadySeconds", &mut errs);
    non_negative_int(spec.and_then(|s| s.revision_history_limit).map(i64::from), "spec.revisionHistoryLimit", &mut errs);
    if let Some(deadline) = spec.and_then(|s| s.progress_deadline_seconds).map(i64::from) {
        if deadline < 0 {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", deadline, IS_NEGATIVE));
        } else if deadline <= spec.and_then(|s| s.min_ready_seconds).map_or(0, i64::from) {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"));
        }
    }
    errs
}

fn deployment_strategy(strategy: &apps::DeploymentStrategy, errs: &mut Vec<FieldError>) {
    let rolling = strategy.rolling_update.as_ref();
    match strategy.r#type.as_deref().unwrap_or_default() {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"));
            }
        }
        "RollingUpdate" | "" => {
            let Some(rolling) = rolling else { return };
            let path = "spec.strategy.rollingUpdate";
            let (max_unavailable, max_surge) = (rolling.max_unavailable.as_ref(), rolling.max_surge.as_ref());
            int_or_percent(max_unavailable, &format!("{path}.maxUnavailable"), true, errs);
            int_or_percent(max_surge, &format!("{path}.maxSurge"), false, errs);
            if is_zero(max_unavailable) && is_zero(max_surge) {
                errs.push(FieldError::invalid(
                    format!("{path}.maxUnavailable"),
                    int_or_string_value(max_unavailable),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        other => errs.push(FieldError::not_supported("spec.strategy.type", other, &["Recreate", "RollingUpdate"])),
    }
}

/// An `IntOrString` that is `0` or `0%` (absent is not zero).
fn is_zero(v: Option<&IntOrString>) -> bool {
    match v {
        Some(IntOrString::Int(n)) => *n == 0,
        Some(IntOrString::String(s)) => s == "0%",
        None => false,
    }
}

/// An `IntOrString` as a bad value: a number bare, a string quoted.
pub(super) fn int_or_string_value(v: Option<&IntOrString>) -> BadValue {
    match v {
        Some(IntOrString::Int(n)) => BadValue::Int(i64::from(*n)),
        Some(IntOrString::String(s)) => BadValue::String(s.clone()),
        None => BadValue::Null,
    }
}

/// `ValidatePositiveIntOrPercent` (and `IsNotMoreThan100Percent` when `at_most_100`).
pub(super) fn int_or_percent(v: Option<&IntOrString>, path: &str, at_most_100: bool, errs: &mut Vec<FieldError>) {
    match v {
        Some(IntOrString::Int(n)) if *n < 0 => errs.push(FieldError::invalid(path, i64::from(*n), IS_NEGATIVE)),
        Some(IntOrString::Int(_)) | None => {}
        Some(IntOrString::String(s)) => {
            let digits = s.strip_suffix('%').filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
            match digits {
                None => errs.push(FieldError::invalid(
                    path,
                    s.as_str(),
                    crate::selectors::regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                )),
                Some(d) if at_most_100 && d.parse::<u64>().map_or(true, |p| p > 100) => {
                    errs.push(FieldError::invalid(path, s.as_str(), "must not be greater than 100%"));
                }
                Some(_) => {}
            }
        }
    }
}

pub fn deployment_update(old: &apps::Deployment, new: &apps::Deployment) -> Vec<FieldError> {
    let mut errs = deployment(new);
    selector_immutable(old.spec.as_ref().map(|s| &s.selector), new.spec.as_ref().map(|s| &s.selector), &mut errs);
    errs
}

pub fn replica_set(rs: &apps::ReplicaSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = rs.spec.as_ref();
    non_negative_int(spec.and_then(|s| s.replicas).map(i64::from), "spec.replicas", &mut errs);
    non_negative_int(spec.and_then(|s| s.min_ready_seconds).map(i64::from), "spec.minReadySeconds", &mut errs);
    selector_and_template(spec.map(|s| &s.selector), spec.and_then(|s| s.template.as_ref()), "ReplicaSet", &mut errs);
    errs
}

pub fn replica_set_update(old: &apps::ReplicaSet, new: &apps::ReplicaSet) -> Vec<FieldError> {
    let mut errs = replica_set(new);
    selector_immutable(old.spec.as_ref().map(|s| &s.selector), new.spec.as_ref().map(|s| &s.selector), &mut errs);
    errs
}

const UPDATE_STRATEGIES: &[&str] = &["RollingUpdate", "OnDelete"];

/// An update strategy's `type`: one of [`UPDATE_STRATEGIES`] (absent or empty passes).
fn update_strategy_type(t: Option<&str>, errs: &mut Vec<FieldError>) {
    if let Some(t) = t.filter(|t| !t.is_empty() && !UPDATE_STRATEGIES.contains(t)) {
        errs.push(FieldError::not_supported("spec.updateStrategy.type", t, UPDATE_STRATEGIES));
    }
}

pub fn daemon_set(ds: &apps::DaemonSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = ds.spec.as_ref();
    selector_and_template(spec.map(|s| &s.selector), spec.map(|s| &s.template), "DaemonSet", &mut errs);
    let strategy = spec.and_then(|s| s.update_strategy.as_ref());
    update_strategy_type(strategy.and_then(|s| s.r#type.as_deref()), &mut errs);
    if let Some(rolling) = strategy.and_then(|s| s.rolling_update.as_ref()) {
        let path = "spec.updateStrategy.rollingUpdate";
        let (max_unavailable, max_surge) = (rolling.max_unavailable.as_ref(), rolling.max_surge.as_ref());
        int_or_percent(max_unavailable, &format!("{path}.maxUnavailable"), true, &mut errs);
        int_or_percent(max_surge, &format!("{path}.maxSurge"), true, &mut errs);
        if is_zero(max_unavailable) && (max_surge.is_none() || is_zero(max_surge)) {
            errs.push(FieldError::invalid(
                format!("{path}.maxUnavailable"),
                int_or_string_value(max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            ));
        }
    }
    non_negative_int(spec.and_then(|s| s.min_ready_seconds).map(i64::from), "spec.minReadySeconds", &mut errs);
    non_negative_int(spec.and_then(|s| s.revision_history_limit).map(i64::from), "spec.revisionHistoryLimit", &mut errs);
    errs
}

pub fn daemon_set_update(old: &apps::DaemonSet, new: &apps::DaemonSet) -> Vec<FieldError> {
    let mut errs = daemon_set(new);
    selector_immutable(old.spec.as_ref().map(|s| &s.selector), new.spec.as_ref().map(|s| &s.selector), &mut errs);
    errs
}

pub fn stateful_set(ss: &apps::StatefulSet) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = ss.spec.as_ref();
    if let Some(policy) =
        spec.and_then(|s| s.pod_management_policy.as_deref()).filter(|p| !p.is_empty() && !["OrderedReady", "Parallel"].contains(p))
    {
        errs.push(FieldError::invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"));
    }
    update_strategy_type(spec.and_then(|s| s.update_strategy.as_ref()).and_then(|s| s.r#type.as_deref()), &mut errs);
    non_negative_int(spec.and_then(|s| s.replicas).map(i64::from), "spec.replicas", &mut errs);
    non_negative_int(spec.and_then(|s| s.min_ready_seconds).map(i64::from), "spec.minReadySeconds", &mut errs);
    non_negative_int(spec.and_then(|s| s.revision_history_limit).map(i64::from), "spec.revisionHistoryLimit", &mut errs);
    selector_and_template(spec.map(|s| &s.selector), spec.map(|s| &s.template), "StatefulSet", &mut errs);
    let claims = spec.map_or(&[][..], |s| &s.volume_claim_templates);
    for (i, claim) in claims.iter().enumerate() {
        if claim.metadata.as_ref().and_then(|m| m.name.as_deref()).unwrap_or_default().is_empty() {
            errs.push(FieldError::required(format!("spec.volumeClaimTemplates[{i}].metadata.name"), ""));
        }
    }
    errs
}

/// What a stateful set update may not change (upstream's `ValidateStatefulSetUpdate` allows
/// `replicas`, `ordinals`, `template`, `updateStrategy`, `revisionHistoryLimit`,
/// `persistentVolumeClaimRetentionPolicy` and `minReadySeconds` to change: the rest is this).
/// The two strings are Go values: an absent one is `""`.
fn stateful_set_frozen(spec: &apps::StatefulSetSpec) -> (&metav1::LabelSelector, &[api::PersistentVolumeClaim], &str, &str) {
    use kapi_apimachinery::go;
    (&spec.selector, &spec.volume_claim_templates, go::string(&spec.service_name), go::string(&spec.pod_management_policy))
}

pub fn stateful_set_update(old: &apps::StatefulSet, new: &apps::StatefulSet) -> Vec<FieldError> {
    let mut errs = stateful_set(new);
    if old.spec.as_ref().map(stateful_set_frozen) != new.spec.as_ref().map(stateful_set_frozen) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

/// The status counts of a workload are never negative (`ValidateDeploymentStatus` and its
/// siblings: replicas, ready, available, updated, observed generation, collision count ...),
/// reported in the order of their JSON names.
fn status_counts(counts: &[(&str, Option<i64>)]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, count) in counts {
        non_negative_int(*count, &format_args!("status.{name}"), &mut errs);
    }
    errs
}

pub fn deployment_status(deployment: &apps::Deployment) -> Vec<FieldError> {
    let Some(s) = &deployment.status else { return Vec::new() };
    let count = |n: Option<i32>| n.map(i64::from);
    status_counts(&[
        ("availableReplicas", count(s.available_replicas)),
        ("collisionCount", count(s.collision_count)),
        ("observedGeneration", s.observed_generation),
        ("readyReplicas", count(s.ready_replicas)),
        ("replicas", count(s.replicas)),
        ("terminatingReplicas", count(s.terminating_replicas)),
        ("unavailableReplicas", count(s.unavailable_replicas)),
        ("updatedReplicas", count(s.updated_replicas)),
    ])
}

pub fn replica_set_status(replica_set: &apps::ReplicaSet) -> Vec<FieldError> {
    let Some(s) = &replica_set.status else { return Vec::new() };
    let count = |n: Option<i32>| n.map(i64::from);
    status_counts(&[
        ("availableReplicas", count(s.available_replicas)),
        ("fullyLabeledReplicas", count(s.fully_labeled_replicas)),
        ("observedGeneration", s.observed_generation),
        ("readyReplicas", count(s.ready_replicas)),
        ("replicas", Some(i64::from(s.replicas))),
        ("terminatingReplicas", count(s.terminating_replicas)),
    ])
}

pub fn daemon_set_status(daemon_set: &apps::DaemonSet) -> Vec<FieldError> {
    let Some(s) = &daemon_set.status else { return Vec::new() };
    let count = |n: Option<i32>| n.map(i64::from);
    status_counts(&[
        ("collisionCount", count(s.collision_count)),
        ("currentNumberScheduled", Some(i64::from(s.current_number_scheduled))),
        ("desiredNumberScheduled", Some(i64::from(s.desired_number_scheduled))),
        ("numberAvailable", count(s.number_available)),
        ("numberMisscheduled", Some(i64::from(s.number_misscheduled))),
        ("numberReady", Some(i64::from(s.number_ready))),
        ("numberUnavailable", count(s.number_unavailable)),
        ("observedGeneration", s.observed_generation),
        ("updatedNumberScheduled", count(s.updated_number_scheduled)),
    ])
}

pub fn stateful_set_status(stateful_set: &apps::StatefulSet) -> Vec<FieldError> {
    let Some(s) = &stateful_set.status else { return Vec::new() };
    let count = |n: Option<i32>| n.map(i64::from);
    status_counts(&[
        ("availableReplicas", count(s.available_replicas)),
        ("collisionCount", count(s.collision_count)),
        ("currentReplicas", count(s.current_replicas)),
        ("observedGeneration", s.observed_generation),
        ("readyReplicas", count(s.ready_replicas)),
        ("replicas", Some(i64::from(s.replicas))),
        ("updatedReplicas", count(s.updated_replicas)),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::registry::validation::test_messages as messages;
    use crate::registry::validation::test_typed as typed;

    fn valid() -> Value {
        json!({"spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}], "restartPolicy": "Always"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        }})
    }

    #[test]
    fn a_valid_deployment_passes() {
        assert_eq!(messages(&deployment(&typed(&valid()))), Vec::<String>::new());
        assert!(replica_set(&typed(&valid())).is_empty());
        assert!(daemon_set(&typed(&valid())).is_empty());
        assert!(stateful_set(&typed(&valid())).is_empty());
    }

    #[test]
    fn deployment_rules() {
        let mut d = valid();
        d["spec"]["selector"] = json!({});
        assert_eq!(
            messages(&deployment(&typed(&d))),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
            ]
        );
        let mut d = valid();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        d["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}});
        assert_eq!(
            messages(&deployment(&typed(&d))),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
            ]
        );
        d["spec"]["strategy"] = json!({"type": "Sideways"});
        assert!(messages(&deployment(&typed(&d))).contains(
            &"spec.strategy.type: Unsupported value: \"Sideways\": supported values: \"Recreate\", \"RollingUpdate\"".to_owned()
        ));
    }

    #[test]
    fn a_workload_without_a_spec_needs_a_selector_and_a_matching_template() {
        let errs = messages(&deployment(&typed(&json!({}))));
        assert_eq!(
            errs[..2],
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"
            ]
        );
        let mut rs = valid();
        rs["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        assert_eq!(
            messages(&replica_set(&typed(&rs))),
            ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"]
        );
    }

    #[test]
    fn selectors_are_immutable() {
        let old = valid();
        let mut new = valid();
        new["spec"]["selector"]["matchLabels"]["tier"] = json!("x");
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
        assert_eq!(
            messages(&deployment_update(&typed(&old), &typed(&new))),
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable"]
        );
        new["spec"]["selector"]["matchExpressions"] = json!([{"key": "a", "operator": "Exists"}]);
        assert!(
            messages(&replica_set_update(&typed(&old), &typed(&new)))
                .last()
                .unwrap()
                .contains(r#"{"matchLabels":{"app":"web","tier":"x"},"matchExpressions":[{"key":"a","operator":"Exists"}]}"#)
        );
        let mut scaled = valid();
        scaled["spec"]["replicas"] = json!(5);
        assert!(deployment_update(&typed(&old), &typed(&scaled)).is_empty());
    }

    #[test]
    fn daemon_set_rolling_updates() {
        let mut ds = valid();
        ds["spec"]["updateStrategy"] = json!({"type": "Sometimes", "rollingUpdate": {"maxUnavailable": "0%", "maxSurge": "150%"}});
        assert_eq!(
            messages(&daemon_set(&typed(&ds))),
            [
                "spec.updateStrategy.type: Unsupported value: \"Sometimes\": supported values: \"RollingUpdate\", \"OnDelete\"",
                "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"150%\": must not be greater than 100%",
            ]
        );
        ds["spec"]["updateStrategy"] = json!({"rollingUpdate": {"maxUnavailable": 0}});
        assert_eq!(
            messages(&daemon_set(&typed(&ds))),
            ["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
        );
    }

    #[test]
    fn status_counts_are_not_negative() {
        let d = json!({"status": {"replicas": 1, "readyReplicas": -1, "conditions": [{"type": "Available"}]}});
        assert_eq!(
            messages(&deployment_status(&typed(&d))),
            ["status.readyReplicas: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    /// Every count of each workload's status is checked, in the order of the status's JSON
    /// keys: a status with every number negative reports each number of its JSON.
    #[test]
    fn every_status_count_is_checked_in_json_order() {
        fn check<T: serde::de::DeserializeOwned + serde::Serialize>(status_of: &str, rule: fn(&T) -> Vec<FieldError>) {
            let fields = crate::registry::objects::dyn_kind(&crate::registry::objects::Kind {
                group: "apps".into(),
                version: "v1".into(),
                kind: status_of.into(),
            })
            .unwrap()
            .fields();
            let status_fields = (fields.iter().find(|f| f.json_name == "status").unwrap().elem.unwrap())();
            let status: serde_json::Map<String, Value> = status_fields.iter().map(|f| (f.json_name.to_owned(), json!(-1))).collect();
            let object: T = serde_json::from_value(json!({ "status": status })).unwrap_or_else(|_| {
                // Fields that are not numbers do not take -1: they are left out.
                let numbers: serde_json::Map<String, Value> = status_fields
                    .iter()
                    .filter(|f| serde_json::from_value::<T>(json!({"status": {f.json_name: -1}})).is_ok())
                    .map(|f| (f.json_name.to_owned(), json!(-1)))
                    .collect();
                serde_json::from_value(json!({ "status": numbers })).unwrap()
            });
            let written = serde_json::to_value(&object).unwrap();
            let expected: Vec<String> = written["status"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, v)| v.as_i64().is_some_and(|n| n < 0))
                .map(|(k, v)| format!("status.{k}: Invalid value: {v}: must be greater than or equal to 0"))
                .collect();
            assert!(expected.len() >= 6, "{status_of}: {expected:?}");
            assert_eq!(messages(&rule(&object)), expected, "{status_of}");
        }
        check("Deployment", deployment_status);
        check("ReplicaSet", replica_set_status);
        check("DaemonSet", daemon_set_status);
        check("StatefulSet", stateful_set_status);
    }

    #[test]
    fn stateful_set_updates() {
        let old = valid();
        let mut new = valid();
        new["spec"]["replicas"] = json!(7);
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(stateful_set_update(&typed(&old), &typed(&new)).is_empty());
        new["spec"]["serviceName"] = json!("other");
        assert_eq!(
            messages(&stateful_set_update(&typed(&old), &typed(&new))),
            [
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );
        let mut claimed = valid();
        claimed["spec"]["volumeClaimTemplates"] = json!([{"metadata": {}}]);
        assert_eq!(messages(&stateful_set(&typed(&claimed))), ["spec.volumeClaimTemplates[0].metadata.name: Required value"]);
    }
}
