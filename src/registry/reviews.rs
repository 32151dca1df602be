//! The review resources of `authentication.k8s.io` and `authorization.k8s.io`: nothing is
//! stored; a create answers the request with its status filled in (upstream's
//! `selfsubjectreview`, `tokenreview`, `*subjectaccessreview` and `selfsubjectrulesreview`
//! REST). Authorization allows every request until RBAC exists (the chain's authorizer), so the
//! access reviews answer as upstream's `AlwaysAllow` authorizer does.

use serde_json::{Value, json};

use crate::request_info::UserInfo;
use crate::status::{BadValue, FieldError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `selfsubjectreviews`: who the caller is.
    SelfSubject,
    /// `tokenreviews`: whom a bearer token authenticates.
    Token,
    /// `selfsubjectaccessreviews`: whether the caller may do something.
    SelfSubjectAccess,
    /// `subjectaccessreviews`: whether a named user or group may.
    SubjectAccess,
    /// `localsubjectaccessreviews`: the same, within the URL's namespace.
    LocalSubjectAccess,
    /// `selfsubjectrulesreviews`: what the caller may do in a namespace.
    SelfSubjectRules,
}

/// The review resources' strategy: every create is answered by [`answer`], nothing stored.
pub struct ReviewStrategy(pub Review);

impl super::strategy::Strategy for ReviewStrategy {
    fn own_rest(&self, subresource: Option<&str>) -> Option<super::OwnRest> {
        subresource.is_none().then_some(super::OwnRest::Review(self.0))
    }
}

/// What a review request is refused with.
pub enum Refusal {
    /// 400 `BadRequest` with this message.
    BadRequest(String),
    /// 422 `Invalid` with these causes.
    Invalid(Vec<FieldError>),
}

/// Fills in the review's answer for `user` (the caller); `namespace` is the URL's.
pub fn answer(review: Review, object: &mut Value, user: Option<&UserInfo>, namespace: Option<&str>, now: &str) -> Result<(), Refusal> {
    match review {
        Review::SelfSubject => {
            let mut user_info = json!({});
            if let Some(user) = user {
                user_info["username"] = json!(user.name);
                if !user.groups.is_empty() {
                    user_info["groups"] = json!(user.groups);
                }
            }
            object["metadata"] = json!({ "creationTimestamp": now });
            object["status"] = json!({ "userInfo": user_info });
        }
        Review::Token => {
            if object["spec"]["token"].as_str().is_none_or(str::is_empty) {
                return Err(Refusal::BadRequest("token is required for TokenReview in authentication".into()));
            }
            // Clients authenticate with certificates only: no token names anyone.
            object["status"] = json!({ "user": {} });
        }
        Review::SelfSubjectAccess | Review::SubjectAccess | Review::LocalSubjectAccess => {
            let errs = access_review_errors(review, &object["spec"], namespace);
            if !errs.is_empty() {
                return Err(Refusal::Invalid(errs));
            }
            object["status"] = json!({ "allowed": true });
        }
        Review::SelfSubjectRules => {
            if object["spec"]["namespace"].as_str().is_none_or(str::is_empty) {
                return Err(Refusal::BadRequest("no namespace on request".into()));
            }
            object["status"] = json!({
                "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
                "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
                "incomplete": false,
            });
        }
    }
    Ok(())
}

/// `ValidateSubjectAccessReviewSpec` and its self and local variants.
fn access_review_errors(review: Review, spec: &Value, namespace: Option<&str>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (resource, non_resource) = (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
    let shown = |v: &Value| if v.is_null() { BadValue::Null } else { BadValue::Raw(struct_text(v)) };
    if !resource.is_null() && !non_resource.is_null() {
        errs.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            shown(non_resource),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if resource.is_null() && non_resource.is_null() {
        errs.push(FieldError::invalid(
            "spec.resourceAttributes",
            shown(non_resource),
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    match review {
        Review::SubjectAccess | Review::LocalSubjectAccess => {
            let named = |field: &str| match &spec[field] {
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                _ => false,
            };
            if !named("user") && !named("groups") {
                let user = spec["user"].as_str().unwrap_or_default();
                errs.push(FieldError::invalid("spec.user", user, "at least one of user or group must be specified"));
            }
        }
        _ => {}
    }
    if review == Review::LocalSubjectAccess {
        let asked = resource["namespace"].as_str().unwrap_or_default();
        if !resource.is_null() && asked != namespace.unwrap_or_default() {
            errs.push(FieldError::invalid("spec.resourceAttributes.namespace", asked, "must match metadata.namespace"));
        }
        if !non_resource.is_null() {
            errs.push(FieldError::invalid("spec.nonResourceAttributes", shown(non_resource), "disallowed on this kind of request"));
        }
    }
    errs
}

/// A struct pointer as Go's `%v` prints it in a field error: `&{...}` of its values.
fn struct_text(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            format!("&{{{}}}", o.values().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect::<Vec<_>>().join(" "))
        }
        other => other.to_string(),
    }
}
