//! The `storage.k8s.io` group's strategies.

pub mod csinodes;
pub mod storageclasses;
pub mod volumeattachments;
