//! The `rbac.authorization.k8s.io` group's strategies.

pub mod authorizer;
pub mod bootstrap;
pub mod rolebindings;
pub mod roles;
