//! The `batch` group's strategies.

pub mod cronjobs;
pub mod jobs;
