//! The `admissionregistration.k8s.io` group's strategies.

use crate::registry::strategy::Strategy;

/// Validating and mutating admission policies (`pkg/registry/admissionregistration/
/// validatingadmissionpolicy`, `mutatingadmissionpolicy`): the generation follows the spec.
pub struct AdmissionPolicyStrategy;

impl Strategy for AdmissionPolicyStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }
}
