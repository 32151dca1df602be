//! `networking.k8s.io/v1` (upstream `pkg/apis/networking/v1/defaults.go`).

use kapi_api::api::networking::v1 as networking;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_network_policy_port);
    r.add(set_defaults_network_policy);
    r.add(set_defaults_ingress_class);
}

pub fn set_defaults_network_policy_port(p: &mut networking::NetworkPolicyPort) {
    p.protocol.get_or_insert_with(|| "TCP".into());
}

/// A policy without `policyTypes` is an ingress policy, and an egress policy too when it has
/// egress rules.
pub fn set_defaults_network_policy(np: &mut networking::NetworkPolicy) {
    let spec = np.spec.get_or_insert_default();
    if spec.policy_types.is_empty() {
        spec.policy_types.push("Ingress".into());
        if !spec.egress.is_empty() {
            spec.policy_types.push("Egress".into());
        }
    }
}

/// Parameters are cluster-scoped unless said otherwise.
pub fn set_defaults_ingress_class(ic: &mut networking::IngressClass) {
    if let Some(params) = ic.spec.as_mut().and_then(|s| s.parameters.as_mut()) {
        params.scope.get_or_insert_with(|| "Cluster".into());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn network_policies_and_ingress_classes() {
        assert_defaults::<networking::NetworkPolicy>(
            json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}}),
            json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}], "policyTypes": ["Ingress"]}}),
        );
        assert_defaults::<networking::NetworkPolicy>(
            json!({"spec": {"podSelector": {}, "egress": [{}]}}),
            json!({"spec": {"podSelector": {}, "egress": [{}], "policyTypes": ["Ingress", "Egress"]}}),
        );
        assert_defaults::<networking::IngressClass>(
            json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n"}}}),
            json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n", "scope": "Cluster"}}}),
        );
    }
}
