//! Per-resource behaviour the generic REST code asks about: upstream's per-resource strategies
//! (`pkg/registry/<group>/<resource>/strategy.go`), kept as data and small functions, one place
//! per group, never as kind checks in the handlers.

/// Whether the resource's strategy maintains `metadata.generation` (set to 1 on create and
/// bumped when the spec changes). Upstream's strategies for these resources do; others (e.g.
/// ConfigMap, Namespace, Service) leave it unset.
pub fn tracks_generation(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        ("", "pods" | "replicationcontrollers")
            | ("apps", "deployments" | "replicasets" | "statefulsets" | "daemonsets")
            | ("batch", "jobs" | "cronjobs")
            | ("autoscaling", "horizontalpodautoscalers")
            | ("policy", "poddisruptionbudgets")
            | ("networking.k8s.io", "ingresses" | "networkpolicies")
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("admissionregistration.k8s.io", "validatingadmissionpolicies" | "mutatingadmissionpolicies")
            | ("flowcontrol.apiserver.k8s.io", "flowschemas" | "prioritylevelconfigurations")
    )
}

/// The namespaces kube-apiserver creates at start-up (upstream's system namespaces controller).
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

#[cfg(test)]
mod tests {
    #[test]
    fn generation_follows_upstream_strategies() {
        assert!(super::tracks_generation("apps", "deployments"));
        assert!(!super::tracks_generation("", "configmaps"));
        assert!(!super::tracks_generation("", "namespaces"));
    }
}
