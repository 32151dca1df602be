//! PodDisruptionBudgets (`pkg/registry/policy/poddisruptionbudget/strategy.go`).

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `podDisruptionBudgetStrategy`.
pub struct PodDisruptionBudgetStrategy;

impl Strategy for PodDisruptionBudgetStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::POD_DISRUPTION_BUDGETS)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::policy::pod_disruption_budget(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::policy::pod_disruption_budget_update(old.typed_ref()?, new.typed_ref()?))
    }
}
