//! Where the two specs disagree, or where upstream's Go types do something the specs cannot say.
//!
//! Each quirk is a named function with the reason next to it. Quirks that match spec content
//! record themselves in a [`Log`]; after the join, [`Log::check_all_applied`] fails the build
//! if one of them no longer matches anything, so a workaround is removed as soon as upstream
//! fixes what it works around.

use std::collections::BTreeSet;

use anyhow::{Result, bail};

use crate::model::Special;

/// Fixups that must fire at least once for the current specs.
const EXPECTED: &[&str] =
    &["json_schema_props_names", "json_only_version_info", "proto_name_case", "type_meta_without_definition", "watch_event_type_meta"];

#[derive(Default)]
pub struct Log {
    applied: BTreeSet<&'static str>,
}

impl Log {
    fn applied(&mut self, name: &'static str) {
        debug_assert!(EXPECTED.contains(&name), "fixup {name} missing from EXPECTED");
        self.applied.insert(name);
    }

    pub fn check_all_applied(&self) -> Result<()> {
        let stale: Vec<_> = EXPECTED.iter().filter(|n| !self.applied.contains(*n)).collect();
        if !stale.is_empty() {
            bail!("spec fixups no longer apply (upstream changed; remove them from codegen/src/fixups.rs): {stale:?}");
        }
        Ok(())
    }
}

/// Messages whose Go types marshal themselves: their JSON form is not the message's shape
/// (`Time` is an RFC 3339 string, `Quantity` a canonical string, `IntOrString` a bare int or
/// string, `RawExtension`/`JSON`/`FieldsV1` embedded JSON, `JSONSchemaPropsOr*` either of two
/// forms). They are hand-written in `kapi_apimachinery` and not generated.
pub fn special_for_message(full: &str) -> Option<Special> {
    const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.";
    const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.";
    if let Some(name) = full.strip_prefix(META) {
        return match name {
            "Time" => Some(Special::Time),
            "MicroTime" => Some(Special::MicroTime),
            "Duration" => Some(Special::Duration),
            "FieldsV1" => Some(Special::FieldsV1),
            _ => None,
        };
    }
    if let Some(rest) = full.strip_prefix(APIEXT) {
        let name = rest.rsplit('.').next().unwrap_or_default();
        return match name {
            "JSON" => Some(Special::Json),
            "JSONSchemaPropsOrBool" => Some(Special::OrBool),
            "JSONSchemaPropsOrArray" => Some(Special::OrArray),
            "JSONSchemaPropsOrStringArray" => Some(Special::OrStringArray),
            _ => None,
        };
    }
    match full {
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Some(Special::Quantity),
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Some(Special::IntOrString),
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Some(Special::RawExtension),
        _ => None,
    }
}

/// Messages that only exist to implement the wire format, hand-written in
/// `kapi_apimachinery::codec` (the `k8s\0` envelope) or inside a special type (`Timestamp` is
/// how `Time` is written; `QuantityValue` is a flag-parsing helper with no API use).
pub fn is_envelope_message(full: &str) -> bool {
    matches!(
        full,
        "k8s.io.apimachinery.pkg.runtime.Unknown"
            | "k8s.io.apimachinery.pkg.runtime.TypeMeta"
            | "k8s.io.apimachinery.pkg.apis.meta.v1.Timestamp"
            | "k8s.io.apimachinery.pkg.api.resource.QuantityValue"
    )
}

/// The JSON name of a proto field. They agree everywhere except in apiextensions'
/// `JSONSchemaProps`, whose JSON names are JSON Schema keywords (`$ref`, `$schema`) and
/// Kubernetes extensions (`x-kubernetes-list-type`) that are not valid proto identifiers.
pub fn json_name(message: &str, proto_field: &str, log: &mut Log) -> String {
    let is_schema_props =
        message.starts_with("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.") && message.ends_with(".JSONSchemaProps");
    if is_schema_props {
        let renamed = match proto_field {
            "ref" => Some("$ref".to_owned()),
            "schema" => Some("$schema".to_owned()),
            f if f.starts_with("xKubernetes") => Some(format!("x-kubernetes{}", kebab(&f["xKubernetes".len()..]))),
            _ => None,
        };
        if let Some(name) = renamed {
            log.applied("json_schema_props_names");
            return name;
        }
    }
    proto_field.to_owned()
}

/// go-to-protobuf derives a proto field name from the Go field name, not the JSON tag, so a few
/// differ from their JSON name only in case (`Webhooks`/`webhooks`, `uID`/`uid`,
/// `aPIGroup`/`apiGroup`). Returns the property that matches ignoring case.
pub fn json_name_case<'a>(proto_name: &str, props: impl Iterator<Item = &'a str>, log: &mut Log) -> Option<String> {
    let found = props.into_iter().find(|p| p.eq_ignore_ascii_case(proto_name))?;
    log.applied("proto_name_case");
    Some(found.to_owned())
}

/// `PreserveUnknownFields` → `-preserve-unknown-fields`.
fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `apiVersion` and `kind` come from Go's embedded `TypeMeta`, which go-to-protobuf leaves out of
/// every message: on the wire they live in the `runtime.Unknown` envelope.
pub fn is_type_meta_field(json_name: &str) -> bool {
    matches!(json_name, "apiVersion" | "kind")
}

pub fn type_meta_doc(json_name: &str) -> &'static str {
    match json_name {
        "kind" => {
            "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
        }
        _ => {
            "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
        }
    }
}

/// Definitions allowed to have no proto message. `version.Info` (the `/version` body) is never
/// sent as protobuf upstream.
pub fn json_only_definition(definition: &str, log: &mut Log) -> Result<()> {
    match definition {
        "io.k8s.apimachinery.pkg.version.Info" => {
            log.applied("json_only_version_info");
            Ok(())
        }
        other => bail!("OpenAPI definition {other} has no proto message"),
    }
}

/// A Go struct embeds `metav1.TypeMeta`, but the specs give its type no `apiVersion`/`kind`:
/// go-to-protobuf leaves TypeMeta out of every message, so those JSON fields come from the
/// OpenAPI definition or the kind's registration, and a type with neither (`meta/v1`
/// `ApplyOptions` and `List`, never served as objects; in other versions, unserved kinds) has
/// no place to take them from. The type keeps no `apiVersion`/`kind`.
pub fn type_meta_without_definition(has_definition: bool, is_kind: bool, log: &mut Log) -> bool {
    if has_definition || is_kind {
        return false;
    }
    log.applied("type_meta_without_definition");
    true
}

/// `meta/v1` `WatchEvent` is registered as a kind in every group version (so the model gives it
/// `apiVersion`/`kind`), but its Go struct has no TypeMeta: upstream never writes them in a
/// watch event. Without a Go field to take the rule from, they are written only when set.
pub fn watch_event_type_meta(message: &str, log: &mut Log) -> bool {
    if message != "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent" {
        return false;
    }
    log.applied("watch_event_type_meta");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_props_names() {
        let mut log = Log::default();
        let m = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        assert_eq!(json_name(m, "ref", &mut log), "$ref");
        assert_eq!(json_name(m, "xKubernetesListMapKeys", &mut log), "x-kubernetes-list-map-keys");
        assert_eq!(json_name(m, "type", &mut log), "type");
        assert_eq!(json_name("k8s.io.api.core.v1.Pod", "ref", &mut log), "ref");
    }
}
