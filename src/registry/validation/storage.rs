//! The storage.k8s.io group (`pkg/apis/storage/validation`): storage classes need a
//! provisioner, take known reclaim policies and binding modes, and keep what they were created
//! with.

use serde_json::Value;

use super::{immutable, one_of, str_of};
use crate::status::FieldError;

pub fn storage_class(sc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let provisioner = str_of(&sc["provisioner"]);
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for m in crate::selectors::label_key_errors(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid("provisioner", provisioner, m));
        }
    }
    one_of(&sc["reclaimPolicy"], "reclaimPolicy", &["Delete", "Retain"], &mut errs);
    one_of(&sc["volumeBindingMode"], "volumeBindingMode", &["Immediate", "WaitForFirstConsumer"], &mut errs);
    errs
}

pub fn storage_class_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = storage_class(new);
    let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(serde_json::Map::is_empty);
    if old["parameters"] != new["parameters"] && !(empty(&old["parameters"]) && empty(&new["parameters"])) {
        errs.push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
    }
    if old["provisioner"] != new["provisioner"] {
        errs.push(FieldError::forbidden("provisioner", "updates to provisioner are forbidden."));
    }
    immutable(&new["reclaimPolicy"], &old["reclaimPolicy"], "reclaimPolicy", &mut errs);
    immutable(&new["volumeBindingMode"], &old["volumeBindingMode"], "volumeBindingMode", &mut errs);
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn storage_classes() {
        let sc = json!({"provisioner": "example.com/disk", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"});
        assert!(storage_class(&sc).is_empty());
        let errs: Vec<String> = storage_class(&json!({"reclaimPolicy": "Recycle"})).iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            ["provisioner: Required value", "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\""]
        );
        let mut changed = sc.clone();
        changed["parameters"] = json!({"type": "ssd"});
        assert_eq!(storage_class_update(&sc, &changed)[0].to_string(), "parameters: Forbidden: updates to parameters are forbidden.");
    }
}
