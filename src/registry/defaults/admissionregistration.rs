//! `admissionregistration.k8s.io/v1` (upstream `pkg/apis/admissionregistration/v1/defaults.go`).

use kapi_api::api::admissionregistration::v1 as admission;
use kapi_api::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_validating_webhook);
    r.add(set_defaults_mutating_webhook);
    r.add(set_defaults_rule_with_operations);
    r.add(set_defaults_named_rule_with_operations);
    r.add(set_defaults_service_reference);
    r.add(set_defaults_validating_admission_policy_spec);
    r.add(set_defaults_mutating_admission_policy_spec);
    r.add(set_defaults_match_resources);
}

/// Webhooks fail closed, match equivalent requests, select every namespace and object, and
/// time out after 10s.
pub fn set_defaults_validating_webhook(w: &mut admission::ValidatingWebhook) {
    w.failure_policy.get_or_insert_with(|| "Fail".into());
    w.match_policy.get_or_insert_with(|| "Equivalent".into());
    w.namespace_selector.get_or_insert_with(LabelSelector::default);
    w.object_selector.get_or_insert_with(LabelSelector::default);
    w.timeout_seconds.get_or_insert(10);
}

/// As validating webhooks, and mutating webhooks are not called again.
pub fn set_defaults_mutating_webhook(w: &mut admission::MutatingWebhook) {
    w.failure_policy.get_or_insert_with(|| "Fail".into());
    w.match_policy.get_or_insert_with(|| "Equivalent".into());
    w.namespace_selector.get_or_insert_with(LabelSelector::default);
    w.object_selector.get_or_insert_with(LabelSelector::default);
    w.timeout_seconds.get_or_insert(10);
    w.reinvocation_policy.get_or_insert_with(|| "Never".into());
}

/// Rules match every scope (`SetDefaults_Rule`, on the types embedding `Rule`).
pub fn set_defaults_rule_with_operations(r: &mut admission::RuleWithOperations) {
    r.scope.get_or_insert_with(|| "*".into());
}

pub fn set_defaults_named_rule_with_operations(r: &mut admission::NamedRuleWithOperations) {
    r.scope.get_or_insert_with(|| "*".into());
}

/// Webhook services listen on 443.
pub fn set_defaults_service_reference(s: &mut admission::ServiceReference) {
    s.port.get_or_insert(443);
}

pub fn set_defaults_validating_admission_policy_spec(s: &mut admission::ValidatingAdmissionPolicySpec) {
    s.failure_policy.get_or_insert_with(|| "Fail".into());
}

pub fn set_defaults_mutating_admission_policy_spec(s: &mut admission::MutatingAdmissionPolicySpec) {
    s.failure_policy.get_or_insert_with(|| "Fail".into());
}

/// Policies match equivalent requests and every namespace and object unless told otherwise.
pub fn set_defaults_match_resources(m: &mut admission::MatchResources) {
    m.match_policy.get_or_insert_with(|| "Equivalent".into());
    m.namespace_selector.get_or_insert_with(LabelSelector::default);
    m.object_selector.get_or_insert_with(LabelSelector::default);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn webhooks_and_policies() {
        assert_defaults::<admission::MutatingWebhookConfiguration>(
            json!({"webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "n", "name": "s"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
            json!({"webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "n", "name": "s", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "timeoutSeconds": 10, "reinvocationPolicy": "Never"}]}),
        );
        assert_defaults::<admission::ValidatingAdmissionPolicy>(
            json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}}}),
            json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {
                "resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "*"}],
                "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}}}),
        );
    }
}
