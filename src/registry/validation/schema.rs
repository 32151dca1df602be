//! The generic required-field check, driven by the generated field facts (`FieldInfo`): a
//! field the specs mark required that is missing, `null`, an empty string or an empty list or
//! map is `Required value` at its JSON path (`spec.template.spec.containers[0].name`),
//! through nested objects, lists and maps.
//!
//! Required numbers and booleans are not checked: the typed decoding writes them as `0` or
//! `false` when absent, and upstream's hand-written rules (in the group modules) say what their
//! zero means. `status` is not checked: the main resource ignores it, and upstream's status
//! validation is narrower than the specs' required flags (a waiting container's status has an
//! empty `imageID`, for one).

use kapi_apimachinery::scheme::{FieldInfo, FieldShape};
use serde_json::Value;

use crate::group_index::same_name;
use crate::status::FieldError;

/// The required-field errors of `object`, a `group`/`resource` object.
pub fn required_errors(group: &str, resource: &str, object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(fields) = fields_of(group, resource, object) else { return errs };
    let Some(obj) = object.as_object() else { return errs };
    let mut path = String::with_capacity(64);
    for f in fields.iter().filter(|f| f.json_name != "status" && can_fail(f)) {
        path.clear();
        path.push_str(f.json_name);
        check_field(f, obj.get(f.json_name), &mut path, &mut errs);
    }
    errs
}

/// The field facts of the object's kind: by its `apiVersion`/`kind`, else by the resource's
/// kind in the scheme.
fn fields_of(group: &str, resource: &str, object: &Value) -> Option<&'static [FieldInfo]> {
    let fields = |g: &str, v: &str, k: &str| kapi_api::scheme::dyn_kind(g, v, k).map(|kind| kind.fields());
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if same_name(g, group)
        && let Some(fields) = fields(g, v, kind)
    {
        return Some(fields);
    }
    let info = kapi_api::scheme::RESOURCES.iter().find(|r| same_name(r.group, group) && r.resource == resource)?;
    fields(info.kind.group, info.kind.version, info.kind.kind)
}

/// Checks the fields of the object at `value`. `path` is its JSON path, extended in place as
/// the walk descends and cut back after: a path string is only copied for an error, which keeps
/// this check (run on every write) from allocating per field.
fn check_fields(fields: &'static [FieldInfo], value: &Value, path: &mut String, errs: &mut Vec<FieldError>) {
    let Some(obj) = value.as_object() else { return };
    for f in fields.iter().filter(|f| can_fail(f)) {
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(f.json_name);
        check_field(f, obj.get(f.json_name), path, errs);
        path.truncate(len);
    }
}

/// Whether the check can report anything at `f`: it is required, or holds a generated type
/// whose fields may be. Only such fields are looked up (most of a type's are optional scalars).
fn can_fail(f: &FieldInfo) -> bool {
    f.required || f.elem.is_some()
}

fn check_field(f: &FieldInfo, value: Option<&Value>, path: &mut String, errs: &mut Vec<FieldError>) {
    use std::fmt::Write;
    let missing = match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty() && f.shape == FieldShape::Scalar,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty() && f.shape == FieldShape::Map,
        Some(_) => false,
    };
    if missing {
        if f.required && !empty_allowed(path, value) {
            errs.push(FieldError::required(path.clone(), ""));
        }
        return;
    }
    let (Some(value), Some(elem)) = (value, f.elem) else { return };
    let len = path.len();
    match f.shape {
        FieldShape::Object => check_fields(elem(), value, path, errs),
        FieldShape::List => {
            for (i, item) in value.as_array().map_or(&[][..], Vec::as_slice).iter().enumerate() {
                let _ = write!(path, "[{i}]");
                check_fields(elem(), item, path, errs);
                path.truncate(len);
            }
        }
        FieldShape::Map => {
            for (k, item) in value.as_object().into_iter().flatten() {
                let _ = write!(path, "[{k}]");
                check_fields(elem(), item, path, errs);
                path.truncate(len);
            }
        }
        FieldShape::Scalar => {}
    }
}

/// Required strings upstream accepts empty: an HTTP header's or a sysctl's value.
fn empty_allowed(path: &str, value: Option<&Value>) -> bool {
    value.is_some_and(|v| v.as_str() == Some(""))
        && path
            .strip_suffix(".value")
            .and_then(|p| p.rsplit_once('['))
            .is_some_and(|(list, _)| list.ends_with("httpHeaders") || list.ends_with("sysctls"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_are_reported_at_their_paths() {
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "", "image": "x", "ports": [{"containerPort": 80}]}]},
        });
        let errs = required_errors("", "pods", &pod);
        assert_eq!(errs, vec![FieldError::required("spec.containers[0].name", "")]);
        let deploy = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {}}}});
        let errs: Vec<String> = required_errors("apps", "deployments", &deploy).iter().map(ToString::to_string).collect();
        assert_eq!(errs, ["spec.selector: Required value", "spec.template.spec.containers: Required value"]);
    }

    #[test]
    fn status_and_zero_numbers_are_not_checked() {
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 0}]}]},
            "status": {"conditions": [{"type": ""}]},
        });
        assert!(required_errors("", "pods", &pod).is_empty());
    }
}
