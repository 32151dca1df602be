//! CustomResourceDefinitions (`apiextensions-apiserver/pkg/registry/customresourcedefinition`).

use serde_json::{Value, json};

use super::customresources::CLEANUP_FINALIZER;
use super::schema::{Schema, SchemaError};
use crate::registry::DeletionFlow;
use crate::registry::strategy::Strategy;
use crate::status::FieldError;

/// Upstream's `strategy` of the apiextensions server: the generation follows the spec; a delete
/// first marks the definition `Terminating` with the cleanup finalizer, so that its objects are
/// deleted before it (upstream's `REST.Delete`; `controllers::customresourcedefinitions`
/// deletes them and removes the finalizer).
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, object: &Value) -> Vec<FieldError> {
        schema_errors(object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = old;
        schema_errors(new)
    }

    fn deletion_flow(&self, object: &Value) -> DeletionFlow {
        let _ = object;
        DeletionFlow::MarkFirst
    }

    fn mark_deleting(&self, object: &mut Value) {
        let finalizers = object["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            let mut finalizers = finalizers;
            finalizers.push(json!(CLEANUP_FINALIZER));
            object["metadata"]["finalizers"] = Value::Array(finalizers);
        }
        set_condition(
            object,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; instance deletion will begin soon",
        );
    }
}

/// The versions' schemas kapi could not serve (`schema.Schema::parse`): refused here, as
/// upstream's definition validation refuses what its structural-schema reading cannot take,
/// rather than accepted and then never served. This is not upstream's full validation of
/// definitions (its own messages, CEL rules, structural-ness), only what serving needs.
fn schema_errors(definition: &Value) -> Vec<FieldError> {
    let preserve_unknown_fields = definition["spec"]["preserveUnknownFields"] == true;
    let versions = definition["spec"]["versions"].as_array().map_or(&[][..], Vec::as_slice);
    versions
        .iter()
        .enumerate()
        .filter_map(|(i, version)| {
            let schema = version.get("schema")?.get("openAPIV3Schema")?;
            let SchemaError(mut error) = Schema::parse(schema, preserve_unknown_fields).err()?;
            error.field = format!("spec.versions[{i}].schema.{}", error.field);
            Some(error)
        })
        .collect()
}

/// Sets one of `status.conditions` (upstream's `SetCRDCondition`): its transition time changes
/// only when its status does. Whether anything changed.
pub fn set_condition(definition: &mut Value, kind: &str, status: &str, reason: &str, message: &str) -> bool {
    let conditions = &mut definition["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else { return false };
    let wanted = |at: Value| json!({"type": kind, "status": status, "lastTransitionTime": at, "reason": reason, "message": message});
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            let at =
                if existing["status"] == status { existing["lastTransitionTime"].clone() } else { json!(crate::registry::objects::now()) };
            let new = wanted(at);
            let changed = *existing != new;
            *existing = new;
            changed
        }
        None => {
            conditions.push(wanted(json!(crate::registry::objects::now())));
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delete_marks_with_the_cleanup_finalizer() {
        let mut crd = json!({"metadata": {"name": "widgets.example.com", "finalizers": ["other"]}});
        assert!(CustomResourceDefinitionStrategy.deletion_flow(&crd).marks_first());
        CustomResourceDefinitionStrategy.mark_deleting(&mut crd);
        CustomResourceDefinitionStrategy.mark_deleting(&mut crd);
        assert_eq!(crd["metadata"]["finalizers"], json!(["other", CLEANUP_FINALIZER]));
        assert_eq!(crd["status"]["conditions"][0]["type"], "Terminating");
        assert_eq!(crd["status"]["conditions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn schemas_that_cannot_be_served_are_refused() {
        let crd = |schema: Value| json!({"spec": {"versions": [{"name": "v1"}, {"name": "v2", "schema": {"openAPIV3Schema": schema}}]}});
        assert!(CustomResourceDefinitionStrategy.validate(&crd(json!({"type": "object"}))).is_empty());
        let errs = CustomResourceDefinitionStrategy.validate(&crd(json!({"type": "object", "properties": {"spec": {"type": 5}}})));
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Invalid value: 5: must be a string"]
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_their_status_holds() {
        let mut crd = json!({});
        assert!(set_condition(&mut crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"));
        crd["status"]["conditions"][0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        assert!(!set_condition(&mut crd, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"));
        assert_eq!(crd["status"]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert!(set_condition(&mut crd, "Established", "False", "NotAccepted", "not all names are accepted"));
        assert_ne!(crd["status"]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }
}
