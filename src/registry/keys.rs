//! Where objects live in storage: upstream's layout, `/registry/<prefix>/<namespace>/<name>`.

use crate::status::ApiError;

/// Upstream's storage prefix.
pub const PREFIX: &str = "/registry";

/// Where a resource's objects live under `/registry` (upstream's storage factory): the plural
/// name, except the prefixes compiled into kube-apiserver (the strategy's `storage_prefix`)
/// and the groups whose servers key by group (apiextensions-apiserver, kube-aggregator).
/// Resources served by two groups (core and `events.k8s.io` Events) share a prefix.
pub fn storage_prefix(group: &str, resource: &str) -> std::borrow::Cow<'static, str> {
    strategy_prefix(super::strategy(group, resource), group, resource)
}

/// [`storage_prefix`] of a resource whose strategy is `strategy`.
pub fn strategy_prefix<'s>(strategy: &'s dyn super::strategy::Strategy, group: &str, resource: &str) -> std::borrow::Cow<'s, str> {
    use std::borrow::Cow;
    match strategy.storage_prefix() {
        Some(prefix) => Cow::Borrowed(prefix),
        None if super::stored_as_json(group) => Cow::Owned(format!("{group}/{resource}")),
        None => Cow::Owned(resource.to_owned()),
    }
}

/// The storage key of one object, or the prefix of a collection, with the resource's storage
/// prefix ([`storage_prefix`]: usually the plural name).
pub fn key(group: &str, resource: &str, namespace: Option<&str>, name: Option<&str>) -> String {
    key_under(&storage_prefix(group, resource), namespace, name)
}

/// [`key`] under a storage prefix.
pub fn key_under(prefix: &str, namespace: Option<&str>, name: Option<&str>) -> String {
    // Sized once: a key is built for every request that names an object.
    let mut k = String::with_capacity(PREFIX.len() + prefix.len() + 3 + namespace.map_or(0, str::len) + name.map_or(0, str::len));
    k.push_str(PREFIX);
    k.push('/');
    k.push_str(prefix);
    k.push('/');
    if let Some(ns) = namespace {
        k.push_str(ns);
        k.push('/');
    }
    if let Some(n) = name {
        k.push_str(n);
    }
    k
}

/// The storage key of one named object, refusing a name that is not one path segment, as
/// upstream's `NamespaceKeyFunc`/`NoNamespaceKeyFunc` do (400 `Name parameter invalid`): a
/// name with a `/` would otherwise address another namespace's keys or a collection. Every key
/// built from a client's name goes through here.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> Result<String, ApiError> {
    object_key_under(&storage_prefix(group, resource), namespace, name)
}

/// [`object_key`] under a storage prefix.
pub fn object_key_under(prefix: &str, namespace: Option<&str>, name: &str) -> Result<String, ApiError> {
    if name.is_empty() {
        return Err(ApiError::bad_request("Name parameter required."));
    }
    let errors = crate::request_info::path_segment_name_errors(name);
    if !errors.is_empty() {
        return Err(ApiError::bad_request(format!("Name parameter invalid: {}: {}", crate::status::go_quote(name), errors.join(";"))));
    }
    Ok(key_under(prefix, namespace, Some(name)))
}
