//! `admissionregistration.k8s.io` (upstream `pkg/apis/admissionregistration/<version>/defaults.go`:
//! v1, and v1beta1 and v1alpha1 when `--runtime-config` turns them on).
//!
//! Each version has its own copy of the types with the same fields and upstream repeats the
//! same functions in each, so the bodies are written once as macros and registered for every
//! version's type that has them.

use kapi_api::api::admissionregistration::{v1, v1alpha1, v1beta1};
use kapi_api::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::Registry;

/// Webhooks fail closed, match equivalent requests, select every namespace and object, and
/// time out after 10s (`SetDefaults_ValidatingWebhook`).
macro_rules! webhook {
    ($w:expr) => {{
        let w = $w;
        w.failure_policy.get_or_insert_with(|| "Fail".into());
        w.match_policy.get_or_insert_with(|| "Equivalent".into());
        w.namespace_selector.get_or_insert_with(LabelSelector::default);
        w.object_selector.get_or_insert_with(LabelSelector::default);
        w.timeout_seconds.get_or_insert(10);
    }};
}

/// As validating webhooks, and mutating webhooks are not called again
/// (`SetDefaults_MutatingWebhook`).
macro_rules! mutating_webhook {
    ($w:expr) => {{
        let w = $w;
        webhook!(&mut *w);
        w.reinvocation_policy.get_or_insert_with(|| "Never".into());
    }};
}

/// Rules match every scope (`SetDefaults_Rule`, on the types embedding `Rule`).
macro_rules! every_scope {
    ($r:expr) => {{
        $r.scope.get_or_insert_with(|| "*".into());
    }};
}

/// Webhook services listen on 443 (`SetDefaults_ServiceReference`).
macro_rules! port_443 {
    ($s:expr) => {{
        $s.port.get_or_insert(443);
    }};
}

/// Policies fail closed (`SetDefaults_ValidatingAdmissionPolicySpec`,
/// `SetDefaults_MutatingAdmissionPolicySpec`).
macro_rules! fail_closed {
    ($s:expr) => {{
        $s.failure_policy.get_or_insert_with(|| "Fail".into());
    }};
}

/// Policies match equivalent requests and every namespace and object unless told otherwise
/// (`SetDefaults_MatchResources`).
macro_rules! match_everything {
    ($m:expr) => {{
        let m = $m;
        m.match_policy.get_or_insert_with(|| "Equivalent".into());
        m.namespace_selector.get_or_insert_with(LabelSelector::default);
        m.object_selector.get_or_insert_with(LabelSelector::default);
    }};
}

pub fn register(r: &mut Registry) {
    r.add(|x: &mut v1::ValidatingWebhook| webhook!(x));
    r.add(|x: &mut v1beta1::ValidatingWebhook| webhook!(x));
    r.add(|x: &mut v1::MutatingWebhook| mutating_webhook!(x));
    r.add(|x: &mut v1beta1::MutatingWebhook| mutating_webhook!(x));
    // v1beta1's webhooks use v1's `RuleWithOperations`.
    r.add(|x: &mut v1::RuleWithOperations| every_scope!(x));
    r.add(|x: &mut v1::NamedRuleWithOperations| every_scope!(x));
    r.add(|x: &mut v1beta1::NamedRuleWithOperations| every_scope!(x));
    r.add(|x: &mut v1alpha1::NamedRuleWithOperations| every_scope!(x));
    r.add(|x: &mut v1::ServiceReference| port_443!(x));
    r.add(|x: &mut v1beta1::ServiceReference| port_443!(x));
    r.add(|x: &mut v1::ValidatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1beta1::ValidatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1alpha1::ValidatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1::MutatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1beta1::MutatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1alpha1::MutatingAdmissionPolicySpec| fail_closed!(x));
    r.add(|x: &mut v1::MatchResources| match_everything!(x));
    r.add(|x: &mut v1beta1::MatchResources| match_everything!(x));
    r.add(|x: &mut v1alpha1::MatchResources| match_everything!(x));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn webhooks_and_policies() {
        assert_defaults::<v1::MutatingWebhookConfiguration>(
            json!({"webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "n", "name": "s"}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
            json!({"webhooks": [{"name": "w", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "n", "name": "s", "port": 443}},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "timeoutSeconds": 10, "reinvocationPolicy": "Never"}]}),
        );
        assert_defaults::<v1::ValidatingAdmissionPolicy>(
            json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}}}),
            json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {
                "resourceRules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "*"}],
                "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}}}),
        );
    }

    /// The beta and alpha copies of the types get the same defaults.
    #[test]
    fn beta_and_alpha_policies() {
        let input = json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}]}});
        let expected = json!({"spec": {"failurePolicy": "Fail", "matchConstraints": {
            "resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
            "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}]}});
        assert_defaults::<v1beta1::MutatingAdmissionPolicy>(input.clone(), expected.clone());
        assert_defaults::<v1alpha1::MutatingAdmissionPolicy>(input, expected);
    }
}
