//! The certificates group (`pkg/apis/certificates/validation`): certificate signing requests'
//! conditions and what each endpoint may change of them. The rules read the internal object as
//! its hub type.

use kapi_api::hub::certificates as hub;

use super::FieldPath;
use crate::status::FieldError;

/// The key usages a request may ask for (`allValidUsages`), sorted as upstream lists them.
const VALID_USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const FAILED: &str = "Failed";

/// Which endpoint writes: each may change a different part of the status.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Main,
    Status,
    Approval,
}

pub fn certificate_signing_request(csr: &hub::CertificateSigningRequest) -> Vec<FieldError> {
    validate(csr, None)
}

pub fn certificate_signing_request_update(old: &hub::CertificateSigningRequest, new: &hub::CertificateSigningRequest) -> Vec<FieldError> {
    update(old, new, Endpoint::Main)
}

pub fn status_update(old: &hub::CertificateSigningRequest, new: &hub::CertificateSigningRequest) -> Vec<FieldError> {
    update(old, new, Endpoint::Status)
}

pub fn approval_update(old: &hub::CertificateSigningRequest, new: &hub::CertificateSigningRequest) -> Vec<FieldError> {
    update(old, new, Endpoint::Approval)
}

fn conditions(csr: &hub::CertificateSigningRequest) -> &[hub::CertificateSigningRequestCondition] {
    csr.status.as_ref().map_or(&[], |s| s.conditions.as_slice())
}

fn condition_type(c: &hub::CertificateSigningRequestCondition) -> &str {
    c.r#type.as_deref().unwrap_or_default()
}

fn of_type<'a>(csr: &'a hub::CertificateSigningRequest, kind: &str) -> Vec<&'a hub::CertificateSigningRequestCondition> {
    conditions(csr).iter().filter(|c| condition_type(c) == kind).collect()
}

fn usages(csr: &hub::CertificateSigningRequest) -> &[String] {
    csr.spec.as_ref().map_or(&[], |s| s.usages.as_slice())
}

/// The request's own rules; what an existing object already breaks is tolerated on update
/// (upstream's compatibility options).
fn validate(csr: &hub::CertificateSigningRequest, old: Option<&hub::CertificateSigningRequest>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let old_usages = old.map_or(&[][..], usages);
    let tolerate_unknown = old_usages.iter().any(|u| !VALID_USAGES.contains(&u.as_str()));
    let tolerate_duplicates = has_duplicates(old_usages.iter().map(String::as_str));
    let usages_path = FieldPath::Root("spec.usages");
    let mut seen = std::collections::HashSet::new();
    for (i, usage) in usages(csr).iter().enumerate() {
        let usage = usage.as_str();
        if !tolerate_unknown && !VALID_USAGES.contains(&usage) {
            errs.push(FieldError::not_supported(usages_path.index(i), usage, VALID_USAGES));
        }
        if !seen.insert(usage) && !tolerate_duplicates {
            errs.push(FieldError::duplicate(usages_path.index(i), usage));
        }
    }
    if let Some(seconds) = csr.spec.as_ref().and_then(|s| s.expiration_seconds).filter(|s| *s < 600) {
        errs.push(FieldError::invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 600 seconds (10 minutes)"));
    }
    condition_errors(csr, old, &mut errs);
    errs
}

fn has_duplicates<'a>(items: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

/// `validateConditions`: a type and a status each; Approved, Denied and Failed only ever
/// `True`; never both Approved and Denied; no type twice.
fn condition_errors(csr: &hub::CertificateSigningRequest, old: Option<&hub::CertificateSigningRequest>, errs: &mut Vec<FieldError>) {
    let old_conditions = old.map_or(&[][..], conditions);
    let tolerate_both = [APPROVED, DENIED].iter().all(|t| old_conditions.iter().any(|c| condition_type(c) == *t));
    let tolerate_duplicates = has_duplicates(old_conditions.iter().map(condition_type));
    let tolerate_empty_type = old_conditions.iter().any(|c| condition_type(c).is_empty());
    let (mut approved, mut denied) = (false, false);
    let conditions_path = FieldPath::Root("status.conditions");
    let mut seen = std::collections::HashSet::new();
    for (i, c) in conditions(csr).iter().enumerate() {
        let path = conditions_path.index(i);
        let kind = condition_type(c);
        if kind.is_empty() && !tolerate_empty_type {
            errs.push(FieldError::required(path.child("type"), ""));
        }
        let allowed: &[&str] = if [APPROVED, DENIED, FAILED].contains(&kind) { &["True"] } else { &["False", "True", "Unknown"] };
        match c.status.as_deref().unwrap_or_default() {
            "" => errs.push(FieldError::required(path.child("status"), "")),
            status if !allowed.contains(&status) => errs.push(FieldError::not_supported(path.child("status"), status, allowed)),
            _ => {}
        }
        if !tolerate_both {
            match kind {
                APPROVED => approved = true,
                DENIED => denied = true,
                _ => {}
            }
            if (kind == APPROVED && denied) || (kind == DENIED && approved) {
                errs.push(FieldError::invalid(path.child("type"), kind, "Approved and Denied conditions are mutually exclusive"));
            }
        }
        if !seen.insert(kind) && !tolerate_duplicates {
            errs.push(FieldError::duplicate(path.child("type"), kind));
        }
    }
}

/// `validateCertificateSigningRequestUpdate`: Approved, Denied and Failed conditions are never
/// removed; only the approval endpoint adds or changes Approved and Denied; only the status
/// endpoint sets the certificate, once.
fn update(old: &hub::CertificateSigningRequest, new: &hub::CertificateSigningRequest, endpoint: Endpoint) -> Vec<FieldError> {
    let mut errs = validate(new, Some(old));
    for kind in [APPROVED, DENIED, FAILED] {
        if of_type(new, kind).len() < of_type(old, kind).len() {
            errs.push(FieldError::forbidden("status.conditions", format!("updates may not remove a condition of type {kind:?}")));
        }
    }
    if endpoint != Endpoint::Approval {
        for kind in [APPROVED, DENIED] {
            let (was, is) = (of_type(old, kind), of_type(new, kind));
            if is.len() > was.len() {
                errs.push(FieldError::forbidden("status.conditions", format!("updates may not add a condition of type {kind:?}")));
            } else if is.len() == was.len() && is != was {
                errs.push(FieldError::forbidden("status.conditions", format!("updates may not modify a condition of type {kind:?}")));
            }
        }
    }
    // No certificate and an empty one are alike, as in Go's `[]byte`.
    let [old_certificate, new_certificate] =
        [old, new].map(|csr| csr.status.as_ref().and_then(|s| s.certificate.as_deref()).unwrap_or_default());
    if new_certificate != old_certificate {
        if endpoint != Endpoint::Status {
            errs.push(FieldError::forbidden("status.certificate", "updates may not set certificate content"));
        } else if !old_certificate.is_empty() {
            errs.push(FieldError::forbidden("status.certificate", "updates may not modify existing certificate content"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::registry::validation::{test_messages, test_typed as typed};

    fn csr(conditions: Value) -> hub::CertificateSigningRequest {
        typed(&json!({"spec": {"usages": ["client auth"]}, "status": {"conditions": conditions}}))
    }

    #[test]
    fn conditions_follow_upstreams_rules() {
        let both = csr(json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]));
        assert_eq!(
            test_messages(&certificate_signing_request(&both)),
            ["status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"]
        );
        let bad = csr(json!([{"type": "Approved", "status": "False"}, {"type": "", "status": ""}, {"type": "Approved", "status": "True"}]));
        assert_eq!(
            test_messages(&certificate_signing_request(&bad)),
            [
                "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Required value",
                "status.conditions[1].status: Required value",
                "status.conditions[2].type: Duplicate value: \"Approved\"",
            ]
        );
        let usages = typed(&json!({"spec": {"usages": ["client auth", "flying", "client auth"], "expirationSeconds": 60}}));
        assert_eq!(test_messages(&certificate_signing_request(&usages)).len(), 3);
    }

    #[test]
    fn each_endpoint_changes_its_own_part() {
        let pending = csr(json!([]));
        let approved = csr(json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]));
        assert!(approval_update(&pending, &approved).is_empty());
        assert_eq!(
            test_messages(&status_update(&pending, &approved)),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        assert_eq!(
            test_messages(&approval_update(&approved, &pending)),
            ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
        );
        let mut issued = approved.clone();
        issued.status.as_mut().unwrap().certificate = Some(b"cert".to_vec());
        assert!(status_update(&approved, &issued).is_empty());
        assert_eq!(
            test_messages(&approval_update(&approved, &issued)),
            ["status.certificate: Forbidden: updates may not set certificate content"]
        );
        let mut reissued = issued.clone();
        reissued.status.as_mut().unwrap().certificate = Some(b"other".to_vec());
        assert_eq!(
            test_messages(&status_update(&issued, &reissued)),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
    }
}
