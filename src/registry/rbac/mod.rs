//! The `rbac.authorization.k8s.io` group's strategies.

pub mod rolebindings;
pub mod roles;
