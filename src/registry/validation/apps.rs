//! The apps group (`pkg/apis/apps/validation`): deployments, replica sets, stateful sets and
//! daemon sets — a selector that selects the template's pods, pods that always restart, and a
//! selector that never changes.

use kapi_api::api::core::v1 as api;
use serde_json::Value;

use super::core::{pod_template_spec, template_restart_always};
use super::{
    FIELD_IMMUTABLE, IS_NEGATIVE, bad_value, items, json_value, label_selector, non_negative, selector_is_empty, selector_matches,
    selector_value,
};
use crate::status::FieldError;

/// The selector, the template's labels against it, and the template (upstream's
/// `ValidatePodTemplateSpecForReplicaSet` and its siblings). `kind` names the controller in the
/// `activeDeadlineSeconds` message.
/// `typed_template` is the template's typed form.
fn selector_and_template(spec: &Value, typed_template: Option<&api::PodTemplateSpec>, kind: &str, errs: &mut Vec<FieldError>) {
    let selector = &spec["selector"];
    if selector_is_empty(selector) {
        errs.push(FieldError::required("spec.selector", ""));
    } else {
        label_selector(selector, "spec.selector", errs);
    }
    let template = &spec["template"];
    let labels = &template["metadata"]["labels"];
    if !selector_matches(selector, labels) {
        errs.push(FieldError::invalid("spec.template.metadata.labels", json_value(labels), "`selector` does not match template `labels`"));
    }
    pod_template_spec(typed_template, "spec.template", errs);
    template_restart_always(template, "spec.template", kind, errs);
}

/// `ValidateImmutableField` on `spec.selector`, printed as upstream prints a selector.
fn selector_immutable(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let (o, n) = (&old["spec"]["selector"], &new["spec"]["selector"]);
    let canonical = |s: &Value| if selector_is_empty(s) { Value::Null } else { s.clone() };
    if canonical(o) != canonical(n) {
        errs.push(FieldError::invalid("spec.selector", selector_value(n), FIELD_IMMUTABLE));
    }
}

/// `template` is the typed form of the workload's template, here and below.
pub fn deployment(d: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &d["spec"];
    non_negative(&spec["replicas"], "spec.replicas", &mut errs);
    selector_and_template(spec, template, "ReplicaSet", &mut errs);
    deployment_strategy(&spec["strategy"], &mut errs);
    for field in ["minReadySeconds", "revisionHistoryLimit"] {
        non_negative(&spec[field], &format!("spec.{field}"), &mut errs);
    }
    if let Some(deadline) = spec["progressDeadlineSeconds"].as_i64() {
        if deadline < 0 {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", deadline, IS_NEGATIVE));
        } else if deadline <= spec["minReadySeconds"].as_i64().unwrap_or(0) {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"));
        }
    }
    errs
}

fn deployment_strategy(strategy: &Value, errs: &mut Vec<FieldError>) {
    let rolling = &strategy["rollingUpdate"];
    match strategy["type"].as_str().unwrap_or_default() {
        "Recreate" => {
            if !rolling.is_null() {
                errs.push(FieldError::forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"));
            }
        }
        "RollingUpdate" | "" => {
            if rolling.is_null() {
                return;
            }
            let path = "spec.strategy.rollingUpdate";
            int_or_percent(&rolling["maxUnavailable"], &format!("{path}.maxUnavailable"), true, errs);
            int_or_percent(&rolling["maxSurge"], &format!("{path}.maxSurge"), false, errs);
            if is_zero(&rolling["maxUnavailable"]) && is_zero(&rolling["maxSurge"]) {
                errs.push(FieldError::invalid(
                    format!("{path}.maxUnavailable"),
                    bad_value(&rolling["maxUnavailable"]),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        other => errs.push(FieldError::not_supported("spec.strategy.type", other, &["Recreate", "RollingUpdate"])),
    }
}

/// An `IntOrString` that is `0` or `0%` (absent counts as zero only when explicitly zero).
fn is_zero(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.as_i64() == Some(0)) || v.as_str() == Some("0%")
}

/// `ValidatePositiveIntOrPercent` (and `IsNotMoreThan100Percent` when `at_most_100`).
pub(super) fn int_or_percent(v: &Value, path: &str, at_most_100: bool, errs: &mut Vec<FieldError>) {
    match v {
        Value::Number(n) => {
            if let Some(n) = n.as_i64().filter(|n| *n < 0) {
                errs.push(FieldError::invalid(path, n, IS_NEGATIVE));
            }
        }
        Value::String(s) => {
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
        _ => {}
    }
}

pub fn deployment_update(old: &Value, new: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = deployment(new, template);
    selector_immutable(old, new, &mut errs);
    errs
}

pub fn replica_set(rs: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &rs["spec"];
    non_negative(&spec["replicas"], "spec.replicas", &mut errs);
    non_negative(&spec["minReadySeconds"], "spec.minReadySeconds", &mut errs);
    selector_and_template(spec, template, "ReplicaSet", &mut errs);
    errs
}

pub fn replica_set_update(old: &Value, new: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = replica_set(new, template);
    selector_immutable(old, new, &mut errs);
    errs
}

const UPDATE_STRATEGIES: &[&str] = &["RollingUpdate", "OnDelete"];

pub fn daemon_set(ds: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &ds["spec"];
    selector_and_template(spec, template, "DaemonSet", &mut errs);
    let strategy = &spec["updateStrategy"];
    if let Some(t) = strategy["type"].as_str().filter(|t| !t.is_empty() && !UPDATE_STRATEGIES.contains(t)) {
        errs.push(FieldError::not_supported("spec.updateStrategy.type", t, UPDATE_STRATEGIES));
    }
    let rolling = &strategy["rollingUpdate"];
    if !rolling.is_null() {
        let path = "spec.updateStrategy.rollingUpdate";
        int_or_percent(&rolling["maxUnavailable"], &format!("{path}.maxUnavailable"), true, &mut errs);
        int_or_percent(&rolling["maxSurge"], &format!("{path}.maxSurge"), true, &mut errs);
        if is_zero(&rolling["maxUnavailable"]) && (rolling["maxSurge"].is_null() || is_zero(&rolling["maxSurge"])) {
            errs.push(FieldError::invalid(
                format!("{path}.maxUnavailable"),
                bad_value(&rolling["maxUnavailable"]),
                "may not be 0 when `maxSurge` is 0",
            ));
        }
    }
    non_negative(&spec["minReadySeconds"], "spec.minReadySeconds", &mut errs);
    non_negative(&spec["revisionHistoryLimit"], "spec.revisionHistoryLimit", &mut errs);
    errs
}

pub fn daemon_set_update(old: &Value, new: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = daemon_set(new, template);
    selector_immutable(old, new, &mut errs);
    errs
}

pub fn stateful_set(ss: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &ss["spec"];
    if let Some(policy) = spec["podManagementPolicy"].as_str().filter(|p| !p.is_empty() && !["OrderedReady", "Parallel"].contains(p)) {
        errs.push(FieldError::invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"));
    }
    if let Some(t) = spec["updateStrategy"]["type"].as_str().filter(|t| !t.is_empty() && !UPDATE_STRATEGIES.contains(t)) {
        errs.push(FieldError::not_supported("spec.updateStrategy.type", t, UPDATE_STRATEGIES));
    }
    non_negative(&spec["replicas"], "spec.replicas", &mut errs);
    non_negative(&spec["minReadySeconds"], "spec.minReadySeconds", &mut errs);
    non_negative(&spec["revisionHistoryLimit"], "spec.revisionHistoryLimit", &mut errs);
    selector_and_template(spec, template, "StatefulSet", &mut errs);
    for (i, claim) in items(&spec["volumeClaimTemplates"]).iter().enumerate() {
        let name = claim["metadata"]["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(format!("spec.volumeClaimTemplates[{i}].metadata.name"), ""));
        }
    }
    errs
}

/// What a stateful set update may change (upstream's `ValidateStatefulSetUpdate`).
const STATEFUL_SET_MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

pub fn stateful_set_update(old: &Value, new: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = stateful_set(new, template);
    let frozen = |spec: &Value| {
        let mut spec = spec.as_object().cloned().unwrap_or_default();
        spec.retain(|k, _| !STATEFUL_SET_MUTABLE.contains(&k.as_str()));
        spec
    };
    if frozen(&old["spec"]) != frozen(&new["spec"]) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

/// The status counts of a workload are never negative (`ValidateDeploymentStatus` and its
/// siblings: replicas, ready, available, updated, observed generation, collision count ...).
pub fn status(object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (field, value) in object["status"].as_object().into_iter().flatten() {
        non_negative(value, &format!("status.{field}"), &mut errs);
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::test_messages as messages;
    use crate::registry::validation::test_template as template;

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
        assert_eq!(messages(&deployment(&valid(), template(&valid(), "/spec/template").as_ref())), Vec::<String>::new());
        assert!(replica_set(&valid(), template(&valid(), "/spec/template").as_ref()).is_empty());
        assert!(daemon_set(&valid(), template(&valid(), "/spec/template").as_ref()).is_empty());
        assert!(stateful_set(&valid(), template(&valid(), "/spec/template").as_ref()).is_empty());
    }

    #[test]
    fn deployment_rules() {
        let mut d = valid();
        d["spec"]["selector"] = json!({});
        assert_eq!(
            messages(&deployment(&d, template(&d, "/spec/template").as_ref())),
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
            messages(&deployment(&d, template(&d, "/spec/template").as_ref())),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
            ]
        );
        d["spec"]["strategy"] = json!({"type": "Sideways"});
        assert!(messages(&deployment(&d, template(&d, "/spec/template").as_ref())).contains(
            &"spec.strategy.type: Unsupported value: \"Sideways\": supported values: \"Recreate\", \"RollingUpdate\"".to_owned()
        ));
    }

    #[test]
    fn selectors_are_immutable() {
        let old = valid();
        let mut new = valid();
        new["spec"]["selector"]["matchLabels"]["tier"] = json!("x");
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
        assert_eq!(
            messages(&deployment_update(&old, &new, template(&new, "/spec/template").as_ref())),
            ["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"x\"}}: field is immutable"]
        );
        new["spec"]["selector"]["matchExpressions"] = json!([{"key": "a", "operator": "Exists"}]);
        assert!(
            messages(&replica_set_update(&old, &new, template(&new, "/spec/template").as_ref()))
                .last()
                .unwrap()
                .contains(r#"{"matchLabels":{"app":"web","tier":"x"},"matchExpressions":[{"key":"a","operator":"Exists"}]}"#)
        );
        let mut scaled = valid();
        scaled["spec"]["replicas"] = json!(5);
        assert!(deployment_update(&old, &scaled, template(&scaled, "/spec/template").as_ref()).is_empty());
    }

    #[test]
    fn status_counts_are_not_negative() {
        let errs = status(&json!({"status": {"replicas": 1, "readyReplicas": -1, "conditions": [{"type": "Available"}]}}));
        assert_eq!(messages(&errs), ["status.readyReplicas: Invalid value: -1: must be greater than or equal to 0"]);
    }

    #[test]
    fn stateful_set_updates() {
        let old = valid();
        let mut new = valid();
        new["spec"]["replicas"] = json!(7);
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(stateful_set_update(&old, &new, template(&new, "/spec/template").as_ref()).is_empty());
        new["spec"]["serviceName"] = json!("other");
        assert_eq!(
            messages(&stateful_set_update(&old, &new, template(&new, "/spec/template").as_ref())),
            [
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );
    }
}
