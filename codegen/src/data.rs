//! The reviewed data file `codegen/data/scheme.toml`: facts upstream keeps outside the specs
//! (short names, categories, discovery priorities, kinds registered but not in the OpenAPI
//! document). See the file's own comments for where each section comes from.

use anyhow::{Context, Result};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeData {
    #[serde(default)]
    pub resource: Vec<ResourceFacts>,
    #[serde(default)]
    pub group_version: Vec<GroupVersionPriority>,
    #[serde(default)]
    pub proto_package: Vec<ProtoPackage>,
    #[serde(default)]
    pub extra_kind: Vec<ExtraKind>,
    #[serde(default)]
    pub default_enabled: Vec<GroupVersionRef>,
    #[serde(default)]
    pub hub_alias: Vec<HubAlias>,
    #[serde(default)]
    pub conversion_override: Vec<ConversionOverride>,
    #[serde(default)]
    pub storage_version: Vec<StorageVersion>,
}

/// A resource stored in another version than the preferred one (upstream's
/// `NewStorageFactoryConfig` overrides and its rule that the storage version already exists in
/// the previous release, so a rollback can read what was written).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageVersion {
    pub group: String,
    pub kind: String,
    pub version: String,
}

/// A group whose types convert to another group's hub (their resources cohabit: one storage).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HubAlias {
    pub group: String,
    pub hub_group: String,
    /// The cohabiting kind, stored as `hub_group/storage_version`.
    pub kind: Option<String>,
    pub storage_version: String,
}

/// A type whose whole conversion in one direction (`to_hub` or `from_hub`) is hand-written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversionOverride {
    pub package: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub direction: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceFacts {
    pub group: String,
    pub resource: String,
    #[serde(default)]
    pub short_names: Vec<String>,
    #[serde(default)]
    pub categories: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupVersionPriority {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtoPackage {
    pub package: String,
    pub group: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupVersionRef {
    pub group: String,
    pub version: String,
}

/// The data file, compiled in so the generator has no path to find at build time.
pub const SCHEME_TOML: &str = include_str!("../data/scheme.toml");

pub fn load() -> Result<SchemeData> {
    toml::from_str(SCHEME_TOML).context("parsing codegen/data/scheme.toml")
}
