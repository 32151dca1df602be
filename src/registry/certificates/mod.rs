//! The `certificates.k8s.io` group's strategies.

pub mod certificatesigningrequests;
