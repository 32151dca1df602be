//! The `coordination.k8s.io` group's strategies.

pub mod leasecandidates;
pub mod leases;
