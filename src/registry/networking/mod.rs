//! The `networking.k8s.io` group's strategies.

pub mod ingresses;
pub mod networkpolicies;
