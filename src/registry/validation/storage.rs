//! The storage.k8s.io group (`pkg/apis/storage/validation`): storage classes need a
//! provisioner, take known reclaim policies and binding modes, and keep what they were created
//! with.

use kapi_api::hub::storage as hub;

use super::{FIELD_IMMUTABLE, one_of_str, optional_value};
use crate::status::FieldError;

pub fn storage_class(sc: &hub::StorageClass) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let provisioner = sc.provisioner.as_deref().unwrap_or_default();
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for m in crate::selectors::label_key_errors(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid("provisioner", provisioner, m));
        }
    }
    one_of_str(sc.reclaim_policy.as_deref(), "reclaimPolicy", &["Delete", "Retain"], &mut errs);
    one_of_str(sc.volume_binding_mode.as_deref(), "volumeBindingMode", &["Immediate", "WaitForFirstConsumer"], &mut errs);
    errs
}

pub fn storage_class_update(old: &hub::StorageClass, new: &hub::StorageClass) -> Vec<FieldError> {
    let mut errs = storage_class(new);
    if old.parameters != new.parameters {
        errs.push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
    }
    if old.provisioner != new.provisioner {
        errs.push(FieldError::forbidden("provisioner", "updates to provisioner are forbidden."));
    }
    for (path, new, old) in [
        ("reclaimPolicy", &new.reclaim_policy, &old.reclaim_policy),
        ("volumeBindingMode", &new.volume_binding_mode, &old.volume_binding_mode),
    ] {
        if new != old {
            errs.push(FieldError::invalid(path, optional_value(new.as_deref()), FIELD_IMMUTABLE));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sc(value: serde_json::Value) -> hub::StorageClass {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn storage_classes() {
        let class = json!({"provisioner": "example.com/disk", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"});
        assert!(storage_class(&sc(class.clone())).is_empty());
        let errs: Vec<String> = storage_class(&sc(json!({"reclaimPolicy": "Recycle"}))).iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            ["provisioner: Required value", "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\""]
        );
        let mut changed = class.clone();
        changed["parameters"] = json!({"type": "ssd"});
        assert_eq!(
            storage_class_update(&sc(class), &sc(changed))[0].to_string(),
            "parameters: Forbidden: updates to parameters are forbidden."
        );
    }
}
