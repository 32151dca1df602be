//! The `apiextensions.k8s.io` group's strategies.

pub mod conversion;
pub mod customresourcedefinitions;
pub mod customresources;
pub mod openapi;
pub mod schema;
