//! The `admissionregistration.k8s.io` group's strategies.

use crate::registry::strategy::Strategy;
use crate::tables::{self, Columns, Printer};

/// Validating and mutating admission policies (`pkg/registry/admissionregistration/
/// validatingadmissionpolicy`, `mutatingadmissionpolicy`): the generation follows the spec;
/// each prints with its own printer.
pub struct AdmissionPolicyStrategy(&'static Printer);

pub static VALIDATING_ADMISSION_POLICIES: AdmissionPolicyStrategy = AdmissionPolicyStrategy(&tables::groups::VALIDATING_ADMISSION_POLICIES);
pub static MUTATING_ADMISSION_POLICIES: AdmissionPolicyStrategy = AdmissionPolicyStrategy(&tables::groups::MUTATING_ADMISSION_POLICIES);

impl Strategy for AdmissionPolicyStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn table(&self) -> Columns {
        Columns::Printer(self.0)
    }
}
