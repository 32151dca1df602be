//! The `apps` group's strategies.

pub mod daemonsets;
pub mod deployments;
pub mod replicasets;
pub mod statefulsets;
