//! The `apiregistration.k8s.io` group's strategies.

use crate::registry::strategy::Strategy;
use crate::tables::Columns;

/// APIServices (kube-aggregator's `pkg/registry/apiservice`): printed with the aggregator's
/// own table convertor.
pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    fn table(&self) -> Columns {
        Columns::ApiService
    }
}
