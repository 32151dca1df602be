//! The `node.k8s.io` group's strategies.

pub mod runtimeclasses;
