//! The impersonation checks (upstream's `WithImpersonation`); the chain (`chain.rs`) runs them
//! after authentication and before authorization.

use crate::authn::Impersonation;
use crate::rbac::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, Attributes, SERVICE_ACCOUNT_PREFIX};
use crate::registry::rbac::authorizer::Authorizer;
use crate::request_info::{RequestInfo, UserInfo};
use crate::status::ApiError;

/// Upstream's impersonation checks: the user (a service account's name checks `serviceaccounts`
/// in its namespace, anyone else `users`), each group (`groups`), the uid
/// (`authentication.k8s.io` `uids`) and each extra value (`userextras/<key>`) with the
/// `impersonate` verb; the first refusal is a 403 naming it. The user then has the groups asked
/// for (a service account without any gets its own), plus `system:authenticated` (or
/// `system:unauthenticated` for `system:anonymous`).
pub fn impersonate(authorizer: &Authorizer, requester: &UserInfo, asked: &Impersonation) -> Result<UserInfo, ApiError> {
    let name = asked.user.clone().unwrap_or_default();
    let mut checks: Vec<RequestInfo> = Vec::new();
    let check = |group: &str, resource: &str, subresource: &str, namespace: &str, name: &str| RequestInfo {
        is_resource_request: true,
        verb: "impersonate".into(),
        api_group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    };
    let service_account = name.strip_prefix(SERVICE_ACCOUNT_PREFIX).and_then(|rest| rest.split_once(':'));
    match service_account {
        Some((namespace, account)) => checks.push(check("", "serviceaccounts", "", namespace, account)),
        None => checks.push(check("", "users", "", "", &name)),
    }
    for group in &asked.groups {
        checks.push(check("", "groups", "", "", group));
    }
    if let Some(uid) = &asked.uid {
        checks.push(check("authentication.k8s.io", "uids", "", "", uid));
    }
    for (key, values) in &asked.extra {
        for value in values {
            checks.push(check("authentication.k8s.io", "userextras", key, "", value));
        }
    }
    for info in &checks {
        if let Err(reason) = authorizer.authorize(&Attributes::of_request(requester, info)) {
            return Err(ApiError::forbidden_request(info, &requester.name, &reason));
        }
    }
    let mut groups = asked.groups.clone();
    if let (Some((namespace, _)), true) = (service_account, groups.is_empty()) {
        groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{namespace}")];
    }
    if name == ANONYMOUS {
        if !groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
            groups.push(ALL_UNAUTHENTICATED.into());
        }
    } else if !groups.iter().any(|g| g == ALL_AUTHENTICATED) {
        groups.push(ALL_AUTHENTICATED.into());
    }
    Ok(UserInfo { name, uid: asked.uid.clone().unwrap_or_default(), groups, extra: asked.extra.clone() })
}
