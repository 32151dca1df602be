//! `certificates.k8s.io` (upstream `pkg/apis/certificates/<version>`). v1 (CertificateSigningRequest)
//! and v1alpha1 (ClusterTrustBundle only, since PodCertificateRequest moved on) have no defaults;
//! v1beta1, when `--runtime-config` turns it on, defaults PodCertificateRequests through the
//! declarative `+default` on their spec (its CertificateSigningRequest functions are for a kind
//! v1.36 no longer serves in v1beta1).

use kapi_api::api::certificates::v1beta1;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_v1beta1_pod_certificate_request_spec);
}

/// A pod's certificate may be issued for up to a day unless the request says otherwise.
pub fn set_defaults_v1beta1_pod_certificate_request_spec(s: &mut v1beta1::PodCertificateRequestSpec) {
    s.max_expiration_seconds.get_or_insert(86_400);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn pod_certificate_requests_last_a_day() {
        let spec = json!({"signerName": "example.com/s", "podName": "p", "podUID": "u", "serviceAccountName": "sa",
            "serviceAccountUID": "su", "nodeName": "n", "nodeUID": "nu", "pkixPublicKey": "AA==", "proofOfPossession": "AA==", "stubPKCS10Request": ""});
        let mut expected = spec.clone();
        expected["maxExpirationSeconds"] = json!(86_400);
        assert_defaults::<v1beta1::PodCertificateRequest>(json!({"spec": spec}), json!({"spec": expected}));
        let mut shorter = spec;
        shorter["maxExpirationSeconds"] = json!(3600);
        assert_defaults::<v1beta1::PodCertificateRequest>(json!({"spec": shorter}), json!({"spec": shorter}));
    }
}
