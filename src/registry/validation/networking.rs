//! The networking.k8s.io group (`pkg/apis/networking/validation`): ingresses (rules, paths and
//! their types, backends) and network policies (selectors, policy types, ports).

use kapi_api::api::discovery::v1 as discovery;
use serde_json::Value;

use super::{
    FieldPath, child, dns_subdomain, index, items, json_value, label_selector, one_of, one_of_str, port_name_errors, port_num_errors,
    str_of,
};
use crate::status::FieldError;

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];

pub fn ingress(ing: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &ing["spec"];
    let rules = items(&spec["rules"]);
    if rules.is_empty() && spec["defaultBackend"].is_null() {
        errs.push(FieldError::invalid("spec", json_value(&spec["rules"]), "either `defaultBackend` or `rules` must be specified"));
    }
    if !spec["defaultBackend"].is_null() {
        backend(&spec["defaultBackend"], "spec.defaultBackend", &mut errs);
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = index("spec.rules", i);
        if let Some(host) = rule["host"].as_str().filter(|h| !h.is_empty()) {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(FieldError::invalid(child(&p, "host"), host, "must be a DNS name, not an IP address"));
            } else {
                dns_subdomain(host.strip_prefix("*.").unwrap_or(host), &child(&p, "host"), &mut errs);
            }
        }
        if rule["http"].is_null() {
            continue;
        }
        let http = child(&p, "http");
        let paths = items(&rule["http"]["paths"]);
        if paths.is_empty() {
            errs.push(FieldError::required(child(&http, "paths"), ""));
        }
        for (j, path) in paths.iter().enumerate() {
            let pp = index(&child(&http, "paths"), j);
            let value = str_of(&path["path"]);
            match path["pathType"].as_str().unwrap_or_default() {
                "" => errs.push(FieldError::required(child(&pp, "pathType"), "pathType must be specified")),
                "Exact" | "Prefix" | "ImplementationSpecific" => {
                    let specific = path["pathType"] == "ImplementationSpecific";
                    if !(value.starts_with('/') || specific && value.is_empty()) {
                        errs.push(FieldError::invalid(child(&pp, "path"), value, "must be an absolute path"));
                    }
                }
                other => errs.push(FieldError::not_supported(child(&pp, "pathType"), other, PATH_TYPES)),
            }
            backend(&path["backend"], &child(&pp, "backend"), &mut errs);
        }
    }
    if let Some(class) = spec["ingressClassName"].as_str() {
        dns_subdomain(class, "spec.ingressClassName", &mut errs);
    }
    errs
}

/// `validateIngressBackend`: a service (name and one port) or a resource, not both.
fn backend(b: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let (service, resource) = (&b["service"], &b["resource"]);
    match (service.is_null(), resource.is_null()) {
        (false, false) => errs.push(FieldError::invalid(path, "", "cannot set both resource and service backends")),
        (true, true) => errs.push(FieldError::invalid(path, "", "resource or service backend is required")),
        (false, true) => {
            let sp = child(path, "service");
            let name = str_of(&service["name"]);
            if name.is_empty() {
                errs.push(FieldError::required(child(&sp, "name"), ""));
            } else {
                for m in crate::selectors::dns1035_label_errors(name) {
                    errs.push(FieldError::invalid(child(&sp, "name"), name, m));
                }
            }
            let port = &service["port"];
            let pp = child(&sp, "port");
            let port_name = str_of(&port["name"]);
            let number = port["number"].as_i64().unwrap_or(0);
            match (port_name.is_empty(), number == 0) {
                (false, false) => errs.push(FieldError::invalid(&pp, json_value(port), "cannot set both port name & port number")),
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
        (true, false) => {}
    }
}

pub fn network_policy(np: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &np["spec"];
    label_selector(&spec["podSelector"], "spec.podSelector", &mut errs);
    let types = items(&spec["policyTypes"]);
    for (i, t) in types.iter().enumerate() {
        one_of(t, &index("spec.policyTypes", i), &["Ingress", "Egress"], &mut errs);
    }
    if types.len() > 2 {
        errs.push(FieldError::invalid("spec.policyTypes", json_value(&spec["policyTypes"]), "may not specify more than two policyTypes"));
    }
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in items(&spec[direction]).iter().enumerate() {
            let p = index(&format!("spec.{direction}"), i);
            for (j, port) in items(&rule["ports"]).iter().enumerate() {
                let pp = index(&child(&p, "ports"), j);
                one_of(&port["protocol"], &child(&pp, "protocol"), &["SCTP", "TCP", "UDP"], &mut errs);
                match &port["port"] {
                    Value::Number(n) => {
                        for m in port_num_errors(n.as_i64().unwrap_or(0)) {
                            errs.push(FieldError::invalid(child(&pp, "port"), n.as_i64().unwrap_or(0), m));
                        }
                    }
                    Value::String(s) => {
                        for m in port_name_errors(s) {
                            errs.push(FieldError::invalid(child(&pp, "port"), s.as_str(), m));
                        }
                    }
                    _ => {}
                }
            }
            for (j, peer) in items(&rule[peers]).iter().enumerate() {
                let pp = index(&child(&p, peers), j);
                let set = ["podSelector", "namespaceSelector", "ipBlock"].iter().filter(|k| !peer[**k].is_null()).count();
                if set == 0 {
                    errs.push(FieldError::required(&pp, "must specify a peer"));
                }
                if !peer["ipBlock"].is_null() && set > 1 {
                    errs.push(FieldError::forbidden(&pp, "may not specify both ipBlock and another peer"));
                }
                label_selector(&peer["podSelector"], &child(&pp, "podSelector"), &mut errs);
                label_selector(&peer["namespaceSelector"], &child(&pp, "namespaceSelector"), &mut errs);
            }
        }
    }
    errs
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
        assert_eq!(messages(&ingress(&ing)), Vec::<String>::new());
        assert_eq!(
            messages(&ingress(&json!({"spec": {}}))),
            ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
        let mut bad = ing.clone();
        bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = json!("Fuzzy");
        bad["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"] = json!({});
        assert_eq!(
            messages(&ingress(&bad)),
            [
                "spec.rules[0].http.paths[0].pathType: Unsupported value: \"Fuzzy\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"",
                "spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required",
            ]
        );
        bad["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = json!("Exact");
        bad["spec"]["rules"][0]["http"]["paths"][0]["path"] = json!("relative");
        assert!(
            messages(&ingress(&bad))
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
        assert!(network_policy(&np).is_empty());
        let bad = json!({"spec": {"policyTypes": ["Sideways"], "ingress": [{"from": [{}]}]}});
        assert_eq!(
            messages(&network_policy(&bad)),
            [
                "spec.policyTypes[0]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"",
                "spec.ingress[0].from[0]: Required value: must specify a peer",
            ]
        );
    }
}
