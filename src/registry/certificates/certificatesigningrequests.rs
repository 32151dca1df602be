//! Certificate signing requests' strategy (`pkg/registry/certificates/certificates`): a request
//! records who made it, its status and its `approval` subresource have their own rules, and the
//! server fills in the conditions' timestamps.

use kapi_api::hub::certificates::CertificateSigningRequest;
use serde_json::Value;

use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, SubresourceStrategy, copy_field};
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `csrStrategy`, `csrStatusStrategy` and `csrApprovalStrategy`.
pub struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::groups::CERTIFICATE_SIGNING_REQUESTS)
    }

    fn prepare_for_create(&self, object: &mut Object, user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        record_requester(object.value_mut()?, user);
        Ok(())
    }

    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::certificates::certificate_signing_request(object.hub_ref::<CertificateSigningRequest>()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::certificates::certificate_signing_request_update(
            old.hub_ref::<CertificateSigningRequest>()?,
            new.hub_ref::<CertificateSigningRequest>()?,
        ))
    }

    fn prepare_status_update(&self, new: &mut Object, old: &Object) -> Result<(), ApiError> {
        populate_condition_timestamps(new.value_mut()?, old.value()?);
        Ok(())
    }

    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::certificates::status_update(
            old.hub_ref::<CertificateSigningRequest>()?,
            new.hub_ref::<CertificateSigningRequest>()?,
        ))
    }

    fn subresource(&self, name: &str) -> Option<&'static dyn SubresourceStrategy> {
        (name == "approval").then_some(&Approval)
    }
}

/// `certificatesigningrequests/approval`: only the status's conditions (Approved, Denied).
struct Approval;

impl SubresourceStrategy for Approval {
    fn merge(&self, stored: &Object, proposed: &Object) -> Result<Object, ApiError> {
        let stored = stored.value()?;
        let mut new = stored.clone();
        copy_field(&mut new["status"], &proposed.value()?["status"], "conditions");
        populate_condition_timestamps(&mut new, stored);
        Ok(Object::from_value(new))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let mut errs = validation::object_meta_errors(&CertificateSigningRequestStrategy, new)?;
        errs.extend(validation::certificates::approval_update(
            old.hub_ref::<CertificateSigningRequest>()?,
            new.hub_ref::<CertificateSigningRequest>()?,
        ));
        Ok(errs)
    }
}

/// A request records who made it, whatever the body said: the user's name and groups (a
/// client certificate's user has no UID or extra attributes, so those are cleared).
fn record_requester(csr: &mut Value, user: Option<&crate::request_info::UserInfo>) {
    let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for field in ["username", "uid", "groups", "extra"] {
        spec.remove(field);
    }
    if let Some(user) = user {
        spec.insert("username".into(), Value::String(user.name.clone()));
        if !user.groups.is_empty() {
            spec.insert("groups".into(), user.groups.iter().cloned().map(Value::String).collect());
        }
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets the current time;
/// one without `lastTransitionTime` keeps the stored condition's of the same type and status, or
/// gets the current time.
fn populate_condition_timestamps(csr: &mut Value, old: &Value) {
    let now = crate::registry::objects::now();
    let old_conditions = old["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let Some(conditions) = csr["status"]["conditions"].as_array_mut() else { return };
    for condition in conditions {
        let is_set = |c: &Value, field: &str| c[field].as_str().is_some_and(|t| !t.is_empty());
        if !is_set(condition, "lastUpdateTime") {
            condition["lastUpdateTime"] = Value::String(now.clone());
        }
        if !is_set(condition, "lastTransitionTime") {
            let kept = old_conditions
                .iter()
                .find(|o| o["type"] == condition["type"] && o["status"] == condition["status"] && is_set(o, "lastTransitionTime"))
                .map(|o| o["lastTransitionTime"].clone());
            condition["lastTransitionTime"] = kept.unwrap_or_else(|| Value::String(now.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_record_their_requester_over_the_body() {
        let mut csr = json!({"spec": {"username": "someone-else", "uid": "u", "extra": {"a": ["b"]}}}).into();
        let user = crate::request_info::UserInfo { name: "alice".into(), groups: vec!["team".into()], ..Default::default() };
        CertificateSigningRequestStrategy.prepare_for_create(&mut csr, Some(&user)).unwrap();
        let csr = csr.into_value().unwrap();
        assert_eq!(csr["spec"], json!({"username": "alice", "groups": ["team"]}));
    }

    #[test]
    fn approval_writes_only_conditions() {
        let stored = json!({"spec": {"usages": ["client auth"]}, "status": {"certificate": "Y2VydA=="}});
        let proposed =
            json!({"spec": {"usages": []}, "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": ""}});
        let merged = Approval.merge(&stored.clone().into(), &proposed.into()).unwrap().into_value().unwrap();
        assert_eq!(merged["spec"], stored["spec"]);
        assert_eq!(merged["status"]["certificate"], "Y2VydA==");
        let condition = &merged["status"]["conditions"][0];
        assert_eq!(condition["type"], "Approved");
        assert!(condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string(), "{condition}");
    }
}
