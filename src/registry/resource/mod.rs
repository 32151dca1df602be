//! The `resource.k8s.io` group's strategies.

pub mod resourceclaims;
pub mod resourceslices;
