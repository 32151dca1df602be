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

#[cfg(test)]
mod tests {
    #[test]
    fn api_service() {
        crate::registry::defaults::testing::assert_defaults::<super::apiregistration::APIService>(
            serde_json::json!({"spec": {"service": {"namespace": "n", "name": "s"}, "groupPriorityMinimum": 1, "versionPriority": 1}}),
            serde_json::json!({"spec": {"service": {"namespace": "n", "name": "s", "port": 443}, "groupPriorityMinimum": 1, "versionPriority": 1}}),
        );
    }
}
