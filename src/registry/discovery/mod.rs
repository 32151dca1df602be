//! The `discovery.k8s.io` group's strategies.

pub mod endpointslices;
