//! `apiregistration.k8s.io/v1` (upstream `kube-aggregator/pkg/apis/apiregistration/v1/defaults.go`).

use kapi_api::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_service_reference);
}

/// Aggregated API services listen on 443.
pub fn set_defaults_service_reference(s: &mut apiregistration::ServiceReference) {
    s.port.get_or_insert(443);
}
