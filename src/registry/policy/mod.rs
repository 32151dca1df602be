//! The `policy` group's strategies.

pub mod poddisruptionbudgets;
