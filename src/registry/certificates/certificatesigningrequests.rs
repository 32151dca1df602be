//! Certificate signing requests' strategy (`pkg/registry/certificates/certificates`): a request
//! records who made it, its status and its `approval` subresource have their own rules, and the
//! server fills in the conditions' timestamps.

use kapi_api::hub::certificates::CertificateSigningRequest;

use crate::registry::object::Object;
use crate::registry::strategy::{Strategy, SubresourceStrategy};
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `csrStrategy`, `csrStatusStrategy` and `csrApprovalStrategy`.
pub struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::groups::CERTIFICATE_SIGNING_REQUESTS)
    }

    fn prepare_for_create(&self, object: &mut Object, user: Option<&crate::request_info::UserInfo>) -> Result<(), ApiError> {
        record_requester(object.hub_mut::<CertificateSigningRequest>()?, user);
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
        populate_condition_timestamps(new.hub_mut::<CertificateSigningRequest>()?, old.hub_ref::<CertificateSigningRequest>()?);
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
        let conditions = proposed.hub_ref::<CertificateSigningRequest>()?.status.as_ref().map(|status| status.conditions.clone());
        let mut new = stored.clone_object();
        let csr = new.hub_mut::<CertificateSigningRequest>()?;
        csr.status.get_or_insert_default().conditions = conditions.unwrap_or_default();
        populate_condition_timestamps(csr, stored.hub_ref::<CertificateSigningRequest>()?);
        Ok(new)
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
fn record_requester(csr: &mut CertificateSigningRequest, user: Option<&crate::request_info::UserInfo>) {
    let Some(spec) = csr.spec.as_mut() else { return };
    spec.username = user.map(|user| user.name.clone());
    spec.groups = user.map(|user| user.groups.clone()).unwrap_or_default();
    spec.uid = None;
    spec.extra.clear();
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets the current time;
/// one without `lastTransitionTime` keeps the stored condition's of the same type and status, or
/// gets the current time.
fn populate_condition_timestamps(csr: &mut CertificateSigningRequest, old: &CertificateSigningRequest) {
    let now = kapi_apimachinery::Time::from_chrono(chrono::Utc::now()).truncate_to_seconds();
    let old_conditions = old.status.as_ref().map_or(&[][..], |status| &status.conditions);
    let Some(status) = csr.status.as_mut() else { return };
    let is_set = |time: &Option<kapi_apimachinery::Time>| time.as_ref().is_some_and(|time| !time.is_zero());
    for condition in &mut status.conditions {
        if !is_set(&condition.last_update_time) {
            condition.last_update_time = Some(now);
        }
        if !is_set(&condition.last_transition_time) {
            let kept = old_conditions
                .iter()
                .find(|o| o.r#type == condition.r#type && o.status == condition.status && is_set(&o.last_transition_time))
                .and_then(|o| o.last_transition_time);
            condition.last_transition_time = Some(kept.unwrap_or(now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_record_their_requester_over_the_body() {
        // As the store carries it: the hub value of the request's object.
        let kind = crate::registry::objects::Kind {
            group: "certificates.k8s.io".into(),
            version: "v1".into(),
            kind: "CertificateSigningRequest".into(),
        };
        let body = json!({"spec": {"username": "someone-else", "uid": "u", "extra": {"a": ["b"]}}});
        let external = Object::decode(&kind, kapi_apimachinery::codec::Format::Json, body.to_string().as_bytes()).unwrap();
        let mut csr = Object::hub(external.into_hub(crate::registry::objects::dyn_kind(&kind).unwrap()).unwrap());
        let user = crate::request_info::UserInfo { name: "alice".into(), groups: vec!["team".into()], ..Default::default() };
        CertificateSigningRequestStrategy.prepare_for_create(&mut csr, Some(&user)).unwrap();
        assert!(csr.is_hub());
        let spec = &csr.value().unwrap()["spec"];
        assert_eq!((&spec["username"], &spec["groups"]), (&json!("alice"), &json!(["team"])));
        assert!(spec.get("uid").is_none() && spec.get("extra").is_none(), "{spec}");
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
