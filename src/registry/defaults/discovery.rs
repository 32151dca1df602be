//! `discovery.k8s.io/v1` (upstream `pkg/apis/discovery/v1/defaults.go`).

use kapi_api::api::discovery::v1 as discovery;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_endpoint_port);
}

/// An EndpointSlice port is unnamed (`""`) and TCP unless said otherwise.
pub fn set_defaults_endpoint_port(p: &mut discovery::EndpointPort) {
    p.name.get_or_insert_with(String::new);
    p.protocol.get_or_insert_with(|| "TCP".into());
}

#[cfg(test)]
mod tests {
    #[test]
    fn endpoint_slice_ports() {
        crate::registry::defaults::testing::assert_defaults::<super::discovery::EndpointSlice>(
            serde_json::json!({"addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}]}),
            serde_json::json!({"addressType": "IPv4", "ports": [{"name": "", "protocol": "TCP", "port": 80}]}),
        );
    }
}
