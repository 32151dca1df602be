//! The review resources of `authentication.k8s.io` and `authorization.k8s.io`: nothing is
//! stored; a create answers the request with its status filled in (upstream's
//! `selfsubjectreview`, `tokenreview`, `*subjectaccessreview` and `selfsubjectrulesreview`
//! REST), from the server's authenticators and authorizer (`StoreConfig`).

use serde_json::{Value, json};

use crate::rbac::{Attributes, Mode, PolicyRule};
use crate::registry::store::StoreConfig;
use crate::request_info::{RequestInfo, UserInfo};
use crate::status::{BadValue, FieldError};
use crate::storage::Storage;

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

fn user_info_json(user: &UserInfo) -> Value {
    let mut info = json!({ "username": user.name });
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        info["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// The user an access review's spec names (`user`, `groups`, `uid`, `extra`).
fn spec_user(spec: &Value) -> UserInfo {
    let extra = spec["extra"].as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), strings(v))).collect()).unwrap_or_default();
    UserInfo {
        name: spec["user"].as_str().unwrap_or_default().to_owned(),
        uid: spec["uid"].as_str().unwrap_or_default().to_owned(),
        groups: strings(&spec["groups"]),
        extra,
    }
}

/// The request an access review asks about, as the chain's request info would have it.
fn spec_request(spec: &Value) -> RequestInfo {
    let r = &spec["resourceAttributes"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if r.is_object() {
        RequestInfo {
            is_resource_request: true,
            verb: text(&r["verb"]),
            namespace: text(&r["namespace"]),
            api_group: text(&r["group"]),
            api_version: text(&r["version"]),
            resource: text(&r["resource"]),
            subresource: text(&r["subresource"]),
            name: text(&r["name"]),
            ..Default::default()
        }
    } else {
        let n = &spec["nonResourceAttributes"];
        RequestInfo { is_resource_request: false, verb: text(&n["verb"]), path: text(&n["path"]), ..Default::default() }
    }
}

/// Fills in the review's answer for `user` (the caller); `namespace` is the URL's.
pub async fn answer(
    review: Review,
    object: &mut Value,
    user: Option<&UserInfo>,
    namespace: Option<&str>,
    now: &str,
    storage: &dyn Storage,
    config: &StoreConfig,
) -> Result<(), Refusal> {
    match review {
        Review::SelfSubject => {
            let user_info = user.map(user_info_json).unwrap_or_else(|| json!({}));
            object["metadata"] = json!({ "creationTimestamp": now });
            object["status"] = json!({ "userInfo": user_info });
        }
        Review::Token => {
            let token = object["spec"]["token"].as_str().unwrap_or_default().to_owned();
            if token.is_empty() {
                return Err(Refusal::BadRequest("token is required for TokenReview in authentication".into()));
            }
            let asked = strings(&object["spec"]["audiences"]);
            object["status"] = match token_review(&token, &asked, storage, config).await {
                Some((user, audiences)) => {
                    let mut status = json!({ "authenticated": true, "user": user_info_json(&user) });
                    if !audiences.is_empty() {
                        status["audiences"] = json!(audiences);
                    }
                    status
                }
                None => json!({ "user": {}, "error": "[invalid bearer token, token lookup failed]" }),
            };
        }
        Review::SelfSubjectAccess | Review::SubjectAccess | Review::LocalSubjectAccess => {
            let errs = access_review_errors(review, &object["spec"], namespace);
            if !errs.is_empty() {
                return Err(Refusal::Invalid(errs));
            }
            let subject = match review {
                Review::SelfSubjectAccess => user.cloned().unwrap_or_default(),
                _ => spec_user(&object["spec"]),
            };
            let info = spec_request(&object["spec"]);
            object["status"] = match config.authorizer.authorize(&Attributes::of_request(&subject, &info)) {
                Ok(reason) if reason.is_empty() => json!({ "allowed": true }),
                Ok(reason) => json!({ "allowed": true, "reason": reason }),
                Err(reason) if reason.is_empty() => json!({ "allowed": false }),
                Err(reason) => json!({ "allowed": false, "reason": reason }),
            };
        }
        Review::SelfSubjectRules => {
            let Some(ns) = object["spec"]["namespace"].as_str().filter(|ns| !ns.is_empty()).map(str::to_owned) else {
                return Err(Refusal::BadRequest("no namespace on request".into()));
            };
            let subject = user.cloned().unwrap_or_default();
            object["status"] = rules_review(config, &subject, &ns);
        }
    }
    Ok(())
}

/// What a TokenReview's token authenticates as, for `audiences` (the API's when empty).
async fn token_review(token: &str, audiences: &[String], storage: &dyn Storage, config: &StoreConfig) -> Option<(UserInfo, Vec<String>)> {
    if token.len() > crate::authn::MAX_TOKEN_BYTES {
        return None;
    }
    let authentication = &config.authentication;
    let (user, matched) = match authentication.static_tokens.authenticate(token) {
        Some(user) => (user.clone(), audiences.to_vec()),
        None => {
            let authority = authentication.service_accounts.as_ref()?;
            let wanted = if audiences.is_empty() { authority.api_audiences.clone() } else { audiences.to_vec() };
            authority.authenticate_for(storage, token, &wanted).await?
        }
    };
    Some((crate::authn::with_authenticated_group(user), matched))
}

/// SelfSubjectRulesReview's status: what `user` may do in `namespace` (`system:masters`
/// everything, then the mode's rules).
fn rules_review(config: &StoreConfig, user: &UserInfo, namespace: &str) -> Value {
    let everything = PolicyRule {
        verbs: vec!["*".into()],
        api_groups: vec!["*".into()],
        resources: vec!["*".into()],
        non_resource_urls: vec!["*".into()],
        ..Default::default()
    };
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    if user.groups.iter().any(|g| g == crate::rbac::SYSTEM_MASTERS) {
        rules.push(everything.clone());
    }
    match config.authorizer.mode() {
        Mode::AlwaysAllow => rules.push(everything),
        Mode::AlwaysDeny => {}
        Mode::Rbac => {
            let (found, missing) = config.authorizer.policy().rules_for(user, namespace);
            rules.extend(found);
            errors = missing;
        }
    }
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in &rules {
        if !rule.resources.is_empty() {
            let mut r = json!({ "verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources });
            if !rule.resource_names.is_empty() {
                r["resourceNames"] = json!(rule.resource_names);
            }
            resource_rules.push(r);
        }
        if !rule.non_resource_urls.is_empty() {
            non_resource_rules.push(json!({ "verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls }));
        }
    }
    let mut status = json!({ "resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": !errors.is_empty() });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
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
