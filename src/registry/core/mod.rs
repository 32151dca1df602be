//! The core group's strategies (`pkg/registry/core/<resource>`), one file per resource with
//! quirks.

pub mod componentstatuses;
pub mod configmaps;
pub mod endpoints;
pub mod events;
pub mod limitranges;
pub mod namespaces;
pub mod nodes;
pub mod persistentvolumeclaims;
pub mod persistentvolumes;
pub mod pods;
pub mod podtemplates;
pub mod replicationcontrollers;
pub mod secrets;
pub mod serviceaccounts;
pub mod services;
