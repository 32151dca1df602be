//! The networking.k8s.io group (`pkg/apis/networking/validation`): ingresses (rules, paths and
//! their types, backends) and network policies (selectors, policy types, ports).

use kapi_api::api::discovery::v1 as discovery;
use kapi_api::apimachinery::pkg::apis::meta::v1 as metav1;
use kapi_api::hub::networking as hub;
use kapi_apimachinery::IntOrString;

use super::{FieldPath, child, dns_subdomain, index, json_value, one_of_str, port_name_errors, port_num_errors, typed_label_selector};
use crate::status::FieldError;

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];

pub fn ingress(ing: &hub::Ingress) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = ing.spec.as_ref();
    let rules = spec.map_or(&[][..], |s| s.rules.as_slice());
    let default_backend = spec.and_then(|s| s.default_backend.as_ref());
    if rules.is_empty() && default_backend.is_none() {
        // The rules, none, are printed as the JSON writes none: `null`.
        errs.push(FieldError::invalid("spec", json_value(&()), "either `defaultBackend` or `rules` must be specified"));
    }
    if default_backend.is_some() {
        backend(default_backend, "spec.defaultBackend", &mut errs);
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = index("spec.rules", i);
        if let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(FieldError::invalid(child(&p, "host"), host, "must be a DNS name, not an IP address"));
            } else {
                dns_subdomain(host.strip_prefix("*.").unwrap_or(host), &child(&p, "host"), &mut errs);
            }
        }
        let Some(http) = &rule.http else { continue };
        let http_path = child(&p, "http");
        if http.paths.is_empty() {
            errs.push(FieldError::required(child(&http_path, "paths"), ""));
        }
        for (j, path) in http.paths.iter().enumerate() {
            let pp = index(&child(&http_path, "paths"), j);
            let value = path.path.as_deref().unwrap_or_default();
            match path.path_type.as_deref().unwrap_or_default() {
                "" => errs.push(FieldError::required(child(&pp, "pathType"), "pathType must be specified")),
                path_type @ ("Exact" | "Prefix" | "ImplementationSpecific") => {
                    let specific = path_type == "ImplementationSpecific";
                    if !(value.starts_with('/') || specific && value.is_empty()) {
                        errs.push(FieldError::invalid(child(&pp, "path"), value, "must be an absolute path"));
                    }
                }
                other => errs.push(FieldError::not_supported(child(&pp, "pathType"), other, PATH_TYPES)),
            }
            backend(path.backend.as_ref(), &child(&pp, "backend"), &mut errs);
        }
    }
    if let Some(class) = spec.and_then(|s| s.ingress_class_name.as_deref()) {
        dns_subdomain(class, "spec.ingressClassName", &mut errs);
    }
    errs
}

/// `validateIngressBackend`: a service (name and one port) or a resource, not both.
fn backend(b: Option<&hub::IngressBackend>, path: &str, errs: &mut Vec<FieldError>) {
    let (service, resource) = (b.and_then(|b| b.service.as_ref()), b.and_then(|b| b.resource.as_ref()));
    match (service, resource) {
        (Some(_), Some(_)) => errs.push(FieldError::invalid(path, "", "cannot set both resource and service backends")),
        (None, None) => errs.push(FieldError::invalid(path, "", "resource or service backend is required")),
        (Some(service), None) => {
            let sp = child(path, "service");
            let name = service.name.as_str();
            if name.is_empty() {
                errs.push(FieldError::required(child(&sp, "name"), ""));
            } else {
                for m in crate::selectors::dns1035_label_errors(name) {
                    errs.push(FieldError::invalid(child(&sp, "name"), name, m));
                }
            }
            let port = service.port.as_ref();
            let pp = child(&sp, "port");
            let port_name = port.and_then(|p| p.name.as_deref()).unwrap_or_default();
            let number = port.and_then(|p| p.number).map_or(0, i64::from);
            match (port_name.is_empty(), number == 0) {
                (false, false) => errs.push(FieldError::invalid(&pp, json_value(&port), "cannot set both port name & port number")),
                (true, true) => errs.push(FieldError::required(&pp, "port name or number is required")),
                (false, true) => {
                    for m in port_name_errors(port_name) {
                        errs.push(FieldError::invalid(child(&pp, "name"), port_name, m));
                    }
                }
                (true, false) => {
                    for m in port_num_errors(number) {
                        errs.push(FieldError::invalid(child(&pp, "number"), number, m));
                    }
                }
            }
        }
        (None, Some(_)) => {}
    }
}

pub fn network_policy(np: &hub::NetworkPolicy) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = &np.spec else { return errs };
    optional_label_selector(spec.pod_selector.as_ref(), "spec.podSelector", &mut errs);
    for (i, policy_type) in spec.policy_types.iter().enumerate() {
        one_of_str(Some(policy_type), &index("spec.policyTypes", i), &["Ingress", "Egress"], &mut errs);
    }
    if spec.policy_types.len() > 2 {
        errs.push(FieldError::invalid("spec.policyTypes", json_value(&spec.policy_types), "may not specify more than two policyTypes"));
    }
    for (i, rule) in spec.ingress.iter().enumerate() {
        policy_rule(&index("spec.ingress", i), &rule.ports, "from", &rule.from, &mut errs);
    }
    for (i, rule) in spec.egress.iter().enumerate() {
        policy_rule(&index("spec.egress", i), &rule.ports, "to", &rule.to, &mut errs);
    }
    errs
}

/// An ingress or egress rule of a network policy at `p`: its ports and its peers (`from` or
/// `to`).
fn policy_rule(p: &str, ports: &[hub::NetworkPolicyPort], peers_name: &str, peers: &[hub::NetworkPolicyPeer], errs: &mut Vec<FieldError>) {
    for (j, port) in ports.iter().enumerate() {
        let pp = index(&child(p, "ports"), j);
        one_of_str(port.protocol.as_deref(), &child(&pp, "protocol"), &["SCTP", "TCP", "UDP"], errs);
        match &port.port {
            Some(IntOrString::Int(n)) => {
                for m in port_num_errors(i64::from(*n)) {
                    errs.push(FieldError::invalid(child(&pp, "port"), i64::from(*n), m));
                }
            }
            Some(IntOrString::String(s)) => {
                for m in port_name_errors(s) {
                    errs.push(FieldError::invalid(child(&pp, "port"), s.as_str(), m));
                }
            }
            None => {}
        }
    }
    for (j, peer) in peers.iter().enumerate() {
        let pp = index(&child(p, peers_name), j);
        let set = [peer.pod_selector.is_some(), peer.namespace_selector.is_some(), peer.ip_block.is_some()].iter().filter(|s| **s).count();
        if set == 0 {
            errs.push(FieldError::required(&pp, "must specify a peer"));
        }
        if peer.ip_block.is_some() && set > 1 {
            errs.push(FieldError::forbidden(&pp, "may not specify both ipBlock and another peer"));
        }
        optional_label_selector(peer.pod_selector.as_ref(), &child(&pp, "podSelector"), errs);
        optional_label_selector(peer.namespace_selector.as_ref(), &child(&pp, "namespaceSelector"), errs);
    }
}

/// [`typed_label_selector`] of a selector that may be absent (which has nothing to report).
fn optional_label_selector(selector: Option<&metav1::LabelSelector>, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(selector) = selector {
        typed_label_selector(selector, &FieldPath::Root(path), errs);
    }
}

/// EndpointSlices (discovery.k8s.io, `ValidateEndpointSlice`): a known address type and valid
/// ports. The rules read the generated type (the discovery group has one version).
pub fn endpoint_slice(slice: &discovery::EndpointSlice) -> Vec<FieldError> {
    let mut errs = Vec::new();
    one_of_str(Some(&slice.address_type), "addressType", &["FQDN", "IPv4", "IPv6"], &mut errs);
    let ports = FieldPath::Root("ports");
    for (i, port) in slice.ports.iter().enumerate() {
        let p = ports.index(i);
        one_of_str(port.protocol.as_deref(), &p.child("protocol"), &["SCTP", "TCP", "UDP"], &mut errs);
        if let Some(n) = port.port.map(i64::from) {
            for m in port_num_errors(n) {
                errs.push(FieldError::invalid(p.child("port"), n, m));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::{test_messages as messages, test_typed as typed};

    #[test]
    fn ingresses() {
        let ing = json!({"spec": {"rules": [{"host": "example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}
        ]}}]}});
        assert_eq!(messages(&ingress(&typed(&ing))), Vec::<String>::new());
        assert_eq!(
            messages(&ingress(&typed(&json!({"spec": {}})))),
            ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
        let mut bad = ing.clone();
        bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = json!("Fuzzy");
        bad["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = json!({});
        assert_eq!(
            messages(&ingress(&typed(&bad))),
            [
                "spec.rules[0].http.paths[0].pathType: Unsupported value: \"Fuzzy\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"",
                "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required",
            ]
        );
        bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = json!("Exact");
        bad["spec"]["rules"][0]["http"]["paths"][0]["path"] = json!("relative");
        assert!(
            messages(&ingress(&typed(&bad)))
                .contains(&"spec.rules[0].http.paths[0].path: Invalid value: \"relative\": must be an absolute path".to_owned())
        );
    }

    #[test]
    fn endpoint_slices() {
        assert!(endpoint_slice(&typed(&json!({"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]}))).is_empty());
        assert_eq!(
            messages(&endpoint_slice(&typed(&json!({"addressType": "IPv5", "ports": [{"port": 0}]})))),
            [
                "addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"",
                "ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"
            ]
        );
        assert_eq!(
            messages(&endpoint_slice(&typed(&json!({"addressType": "FQDN", "ports": [{"port": 80}, {"protocol": "HTTP"}]})))),
            ["ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""]
        );
    }

    #[test]
    fn network_policies() {
        let np = json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {"matchLabels": {"a": "b"}}}], "ports": [{"port": 80}]}]}});
        assert!(network_policy(&typed(&np)).is_empty());
        let bad = json!({"spec": {"policyTypes": ["Sideways"], "ingress": [{"from": [{}]}]}});
        assert_eq!(
            messages(&network_policy(&typed(&bad))),
            [
                "spec.policyTypes[0]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
                "spec.ingress[0].from[0]: Required value: must specify a peer",
            ]
        );
    }
}
