//! kapi: a Kubernetes API server whose API surface is generated from the upstream specs.
//!
//! The generated types, scheme and route table are in `kapi_api` (`generated/`); the wire
//! primitives and codecs in `kapi_apimachinery` (`apimachinery/`). This crate is the runtime and
//! the command line.

pub mod authn;
pub mod controllers;
pub mod convert;
pub mod discovery;
pub mod group_index;
pub mod list_options;
pub mod negotiation;
pub mod openapi_v2;
pub mod patch;
pub mod pki;
pub mod private_files;
pub mod rbac;
pub mod registry;
pub mod request_info;
pub mod selectors;
pub mod server;
pub mod status;
pub mod storage;
pub mod tables;
pub mod url;
