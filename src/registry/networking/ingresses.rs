//! Ingresses (`pkg/registry/networking/ingress/strategy.go`); stored under `ingress`.

use kapi_api::hub::networking as hub;

use crate::registry::object::Object;
use crate::registry::strategy::Strategy;
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `ingressStrategy`.
pub struct IngressStrategy;

impl Strategy for IngressStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::INGRESSES)
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("ingress")
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The rules read the internal object as its hub type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::networking::ingress(object.hub_ref::<hub::Ingress>()?))
    }

    /// An update is checked as a create: nothing of the old object is read.
    fn validate_update_object(&self, _old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        self.validate_object(new)
    }
}
