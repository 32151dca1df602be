//! The `autoscaling` group's strategies.

pub mod horizontalpodautoscalers;
