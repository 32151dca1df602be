//! NetworkPolicies (`pkg/registry/networking/networkpolicy/strategy.go`).

use kapi_api::hub::networking as hub;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `networkPolicyStrategy`.
pub struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::NETWORK_POLICIES)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the internal object as its hub type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::networking::network_policy(object.hub_ref::<hub::NetworkPolicy>()?))
    }

    /// An update is checked as a create: nothing of the old object is read.
    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        self.validate_object(new)
    }
}
