//! The `scheduling.k8s.io` group's strategies.

pub mod priorityclasses;
