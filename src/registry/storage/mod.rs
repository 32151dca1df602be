//! The `storage.k8s.io` group's strategies.

pub mod storageclasses;
