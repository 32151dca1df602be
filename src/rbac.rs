//! RBAC evaluation, I/O-free: upstream's `plugin/pkg/auth/authorizer/rbac` (rule matching,
//! subjects, the rules a user holds in a namespace) over a [`Policy`] — the Roles,
//! ClusterRoles and bindings as the authorizer's cache holds them —, the union with
//! `system:masters`, and rule coverage for the escalation checks. A refusal's wording is
//! `status::ApiError::forbidden_request`'s.
//!
//! The cache that keeps a [`Policy`] current lives in the registry
//! (`registry::rbac::authorizer`); the chain, the access reviews and the escalation checks of
//! the RBAC strategies all ask this module.

pub mod node;

use std::collections::HashMap;
use std::sync::Arc;

use kapi_api::api::rbac::v1 as rbac_v1;
use kapi_api::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::request_info::{RequestInfo, UserInfo};

impl From<&rbac_v1::PolicyRule> for PolicyRule {
    fn from(rule: &rbac_v1::PolicyRule) -> PolicyRule {
        PolicyRule {
            verbs: rule.verbs.clone(),
            api_groups: rule.api_groups.clone(),
            resources: rule.resources.clone(),
            resource_names: rule.resource_names.clone(),
            non_resource_urls: rule.non_resource_urls.clone(),
        }
    }
}

impl From<PolicyRule> for rbac_v1::PolicyRule {
    fn from(rule: PolicyRule) -> rbac_v1::PolicyRule {
        rbac_v1::PolicyRule {
            verbs: rule.verbs,
            api_groups: rule.api_groups,
            resources: rule.resources,
            resource_names: rule.resource_names,
            non_resource_urls: rule.non_resource_urls,
        }
    }
}

/// The group whose members may do everything (`user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";
/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The prefix of service accounts' user names (`system:serviceaccount:<ns>:<name>`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// One rule of a Role or ClusterRole (`rbac.PolicyRule`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// The rules of a typed Role or ClusterRole.
    pub fn of_rules(rules: &[rbac_v1::PolicyRule]) -> Vec<PolicyRule> {
        rules.iter().map(PolicyRule::from).collect()
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    /// `ResourceMatches`: `*`, the resource with its subresource, or `*/<subresource>`.
    fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == "*"
                || r == combined
                || (!subresource.is_empty() && r.len() == subresource.len() + 2 && r.starts_with("*/") && r.ends_with(subresource))
        })
    }

    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// `NonResourceURLMatches`: `*`, the path, or a prefix ending in `*`.
    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix)))
    }

    /// `RuleAllows`: whether this rule allows the request.
    pub fn allows(&self, a: &Attributes<'_>) -> bool {
        self.allows_combined(a, &combined_resource(a))
    }

    /// [`PolicyRule::allows`] with the request's `resource/subresource` made once.
    fn allows_combined(&self, a: &Attributes<'_>, combined: &str) -> bool {
        if a.is_resource_request {
            self.verb_matches(a.verb)
                && self.group_matches(a.api_group)
                && self.resource_matches(combined, a.subresource)
                && self.name_matches(a.name)
        } else {
            self.verb_matches(a.verb) && self.url_matches(a.path)
        }
    }
}

/// `resource` or `resource/subresource`.
fn combined_resource(a: &Attributes<'_>) -> String {
    if a.subresource.is_empty() { a.resource.to_owned() } else { format!("{}/{}", a.resource, a.subresource) }
}

/// What an authorizer decides on (upstream's `authorizer.Attributes`).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    pub is_resource_request: bool,
    pub namespace: &'a str,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    /// The path of a non-resource request.
    pub path: &'a str,
    /// The raw `fieldSelector` of a list or watch (upstream's `GetFieldSelector`).
    pub field_selector: &'a str,
}

impl<'a> Attributes<'a> {
    /// The attributes of a request (upstream's `GetAuthorizerAttributes`).
    pub fn of_request(user: &'a UserInfo, info: &'a RequestInfo) -> Attributes<'a> {
        Attributes {
            user,
            verb: &info.verb,
            is_resource_request: info.is_resource_request,
            namespace: &info.namespace,
            api_group: &info.api_group,
            api_version: &info.api_version,
            resource: &info.resource,
            subresource: &info.subresource,
            name: &info.name,
            path: &info.path,
            field_selector: &info.field_selector,
        }
    }
}

/// A binding's subject (`rbac.Subject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl Subject {
    /// `appliesToUser`.
    pub fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                // Without a namespace, a RoleBinding's own.
                let namespace = if self.namespace.is_empty() { binding_namespace } else { &self.namespace };
                !namespace.is_empty() && user.name == service_account_username(namespace, &self.name)
            }
            _ => false,
        }
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// A RoleBinding or ClusterRoleBinding as the authorizer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub name: String,
    /// Empty for a ClusterRoleBinding.
    pub namespace: String,
    /// `Role` or `ClusterRole`.
    pub role_kind: String,
    pub role_name: String,
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// A typed RoleBinding's or ClusterRoleBinding's parts as the authorizer needs them.
    pub fn of(metadata: Option<&ObjectMeta>, role_ref: &rbac_v1::RoleRef, subjects: &[rbac_v1::Subject]) -> Binding {
        let meta = |field: fn(&ObjectMeta) -> &Option<String>| metadata.and_then(|m| field(m).clone()).unwrap_or_default();
        Binding {
            name: meta(|m| &m.name),
            namespace: meta(|m| &m.namespace),
            role_kind: role_ref.kind.clone(),
            role_name: role_ref.name.clone(),
            subjects: subjects
                .iter()
                .map(|s| Subject { kind: s.kind.clone(), name: s.name.clone(), namespace: s.namespace.clone().unwrap_or_default() })
                .collect(),
        }
    }

    /// The first subject that names `user`.
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects.iter().find(|s| s.applies_to(user, &self.namespace))
    }

    /// Upstream's binding describers: `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`,
    /// `RoleBinding "b/ns" of Role "r" to ServiceAccount "sa/ns"`.
    fn describe(&self, subject: &Subject) -> String {
        let who = match subject.kind.as_str() {
            "ServiceAccount" => {
                let namespace = if subject.namespace.is_empty() { &self.namespace } else { &subject.namespace };
                format!("{} {:?}", subject.kind, format!("{}/{namespace}", subject.name))
            }
            _ => format!("{} {:?}", subject.kind, subject.name),
        };
        match self.namespace.as_str() {
            "" => format!("ClusterRoleBinding {:?} of {} {:?} to {who}", self.name, self.role_kind, self.role_name),
            ns => format!("RoleBinding {:?} of {} {:?} to {who}", format!("{}/{ns}", self.name), self.role_kind, self.role_name),
        }
    }
}

/// Every Role, ClusterRole and binding, as one snapshot.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    /// By namespace, then name.
    pub roles: HashMap<String, HashMap<String, Arc<Vec<PolicyRule>>>>,
    pub cluster_role_bindings: Vec<Binding>,
    /// By namespace.
    pub role_bindings: HashMap<String, Vec<Binding>>,
}

/// Why a binding's rules could not be read (upstream's visitor errors).
fn missing_role(kind: &str, namespace: &str, name: &str) -> String {
    match kind {
        "Role" => format!("role.rbac.authorization.k8s.io {name:?} not found"),
        _ => {
            let _ = namespace;
            format!("clusterrole.rbac.authorization.k8s.io {name:?} not found")
        }
    }
}

impl Policy {
    fn binding_rules(&self, binding: &Binding) -> Result<&Arc<Vec<PolicyRule>>, String> {
        let found = match binding.role_kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&binding.role_name),
            "Role" => self.roles.get(&binding.namespace).and_then(|roles| roles.get(&binding.role_name)),
            _ => None,
        };
        found.ok_or_else(|| missing_role(&binding.role_kind, &binding.namespace, &binding.role_name))
    }

    /// `VisitRulesFor`: calls `visit` with the rules `user` holds in `namespace` (cluster-wide
    /// ones first) until it returns false; errors are bindings whose role is missing.
    pub fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(&Binding, &Subject, &PolicyRule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let namespaced = if namespace.is_empty() { None } else { self.role_bindings.get(namespace) };
        for binding in self.cluster_role_bindings.iter().chain(namespaced.into_iter().flatten()) {
            let Some(subject) = binding.subject_for(user) else { continue };
            match self.binding_rules(binding) {
                Ok(rules) => {
                    for rule in rules.iter() {
                        if !visit(binding, subject, rule) {
                            return errors;
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// The RBAC authorizer's decision: allowed with upstream's reason (`RBAC: allowed by
    /// ClusterRoleBinding ...`), or denied with upstream's reason (`RBAC: ...` naming missing
    /// roles, empty when none).
    pub fn authorize(&self, a: &Attributes<'_>) -> Result<String, String> {
        let mut allowed_by = None;
        let combined = combined_resource(a);
        let errors = self.visit_rules(a.user, a.namespace, &mut |binding, subject, rule| {
            if rule.allows_combined(a, &combined) {
                allowed_by = Some(binding.describe(subject));
            }
            allowed_by.is_none()
        });
        if let Some(by) = allowed_by {
            return Ok(format!("RBAC: allowed by {by}"));
        }
        Err(match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        })
    }

    /// Every rule `user` holds in `namespace` and whether some binding's role was missing
    /// (`RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit_rules(user, namespace, &mut |_, _, rule| {
            rules.push(rule.clone());
            true
        });
        (rules, errors)
    }
}

/// Which authorizer the server runs (`--authorization-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Rbac,
    AlwaysAllow,
    AlwaysDeny,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Mode, String> {
        match text {
            "RBAC" => Ok(Mode::Rbac),
            "AlwaysAllow" => Ok(Mode::AlwaysAllow),
            "AlwaysDeny" => Ok(Mode::AlwaysDeny),
            other => Err(format!("authorization mode {other:?} is not supported (RBAC, AlwaysAllow, AlwaysDeny)")),
        }
    }
}

/// Upstream's union authorizer as kube-apiserver builds it: members of `system:masters`
/// first, then the mode's authorizer. Both answers carry the reason (possibly empty).
pub fn decide(mode: Mode, policy: &Policy, a: &Attributes<'_>) -> Result<String, String> {
    if a.user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
        return Ok(String::new());
    }
    match mode {
        Mode::AlwaysAllow => Ok(String::new()),
        Mode::AlwaysDeny => Err("Everything is forbidden.".into()),
        Mode::Rbac => policy.authorize(a),
    }
}

/// Whether `owned` rules cover every permission of `requested` (upstream's `Covers`, used by
/// escalation checks): each requested rule broken into single-verb, single-group,
/// single-resource (and single-name or single-URL) pieces, every piece allowed by some owned
/// rule. Returns the pieces not covered.
pub fn uncovered(owned: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing = Vec::new();
    for rule in requested {
        for piece in breakdown(rule) {
            if !owned.iter().any(|o| rule_covers(o, &piece)) {
                missing.push(piece);
            }
        }
    }
    missing
}

/// `BreakdownRule`: one rule per verb × group × resource (× name), or per verb × URL.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        ..Default::default()
                    });
                }
                for name in &rule.resource_names {
                    out.push(PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        resource_names: vec![name.clone()],
                        ..Default::default()
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule { verbs: vec![verb.clone()], non_resource_urls: vec![url.clone()], ..Default::default() });
        }
    }
    out
}

fn has_all(owner: &[String], wanted: &[String]) -> bool {
    owner.iter().any(|o| o == "*") || wanted.iter().all(|w| owner.contains(w))
}

/// `ruleCovers`: whether `owner` allows everything the single `piece` allows.
fn rule_covers(owner: &PolicyRule, piece: &PolicyRule) -> bool {
    let verbs = has_all(&owner.verbs, &piece.verbs);
    let groups = has_all(&owner.api_groups, &piece.api_groups);
    let resources = piece.resources.iter().all(|r| {
        owner.resources.iter().any(|o| {
            o == "*" || o == r || (o.ends_with("/*") && r.starts_with(&o[..o.len() - 1])) || (o.starts_with("*/") && r.ends_with(&o[1..]))
        })
    });
    let names = owner.resource_names.is_empty() || has_all(&owner.resource_names, &piece.resource_names);
    let urls = piece.non_resource_urls.iter().all(|u| {
        owner.non_resource_urls.iter().any(|o| o == "*" || o == u || o.strip_suffix('*').is_some_and(|prefix| u.starts_with(prefix)))
    });
    verbs && groups && resources && names && urls
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| kapi_apimachinery::strconv::quote(i)).collect();
    format!("[{}]", quoted.join(" "))
}

/// `CompactRules`: single-group, single-resource rules without names or URLs that differ only
/// in verbs become one rule.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = |r: &PolicyRule| {
            r.api_groups.len() == 1 && r.resources.len() == 1 && r.resource_names.is_empty() && r.non_resource_urls.is_empty()
        };
        if simple(&rule)
            && let Some(existing) = out.iter_mut().find(|o| simple(o) && o.api_groups == rule.api_groups && o.resources == rule.resources)
        {
            for verb in rule.verbs {
                if !existing.verbs.contains(&verb) {
                    existing.verbs.push(verb);
                }
            }
            continue;
        }
        out.push(rule);
    }
    out
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (name, list) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !list.is_empty() {
            parts.push(format!("{name}:{}", quote_list(list)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// `ConfirmNoEscalation`: `user`'s rules in `namespace` must cover `requested`; the refusal is
/// upstream's message listing what is missing.
pub fn confirm_no_escalation(policy: &Policy, user: &UserInfo, namespace: &str, requested: &[PolicyRule]) -> Result<(), String> {
    let (owned, errors) = policy.rules_for(user, namespace);
    let missing = uncovered(&owned, requested);
    if missing.is_empty() {
        return Ok(());
    }
    let mut described: Vec<String> = compact(missing).iter().map(compact_string).collect();
    described.sort();
    described.dedup();
    let mut message = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        kapi_apimachinery::strconv::quote(&user.name),
        quote_list(&user.groups),
        described.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(", ")));
    }
    Err(message)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo { name: name.into(), groups: groups.iter().map(|g| (*g).to_owned()).collect(), ..Default::default() }
    }

    pub(crate) fn attrs<'a>(
        u: &'a UserInfo,
        verb: &'a str,
        ns: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: u,
            verb,
            is_resource_request: true,
            namespace: ns,
            api_group: group,
            api_version: "v1",
            resource,
            subresource: sub,
            name,
            path: "",
            field_selector: "",
        }
    }

    fn url<'a>(u: &'a UserInfo, verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes { is_resource_request: false, path, ..attrs(u, verb, "", "", "", "", "") }
    }

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from(&serde_json::from_value::<rbac_v1::PolicyRule>(v).unwrap())
    }

    #[test]
    fn rules_match_as_upstreams() {
        let u = user("u", &[]);
        let cases: &[(Value, Attributes<'_>, bool)] = &[
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), attrs(&u, "get", "ns", "", "pods", "", "p"), true),
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), attrs(&u, "list", "ns", "", "pods", "", ""), false),
            (
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                attrs(&u, "delete", "", "apps", "deployments", "", "d"),
                true,
            ),
            (json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}), attrs(&u, "get", "ns", "", "pods", "", ""), false),
            // subresources: the combined name, `*/sub`, and not the parent alone
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}), attrs(&u, "get", "ns", "", "pods", "log", "p"), true),
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}), attrs(&u, "get", "ns", "", "pods", "log", "p"), false),
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}), attrs(&u, "get", "ns", "", "pods", "log", "p"), true),
            (json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}), attrs(&u, "get", "ns", "", "pods", "", "p"), false),
            // resourceNames
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                attrs(&u, "get", "ns", "", "secrets", "", "a"),
                true,
            ),
            (
                json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                attrs(&u, "get", "ns", "", "secrets", "", "b"),
                false,
            ),
            (
                json!({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]}),
                attrs(&u, "list", "ns", "", "secrets", "", ""),
                false,
            ),
            // non-resource URLs
            (json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}), url(&u, "get", "/healthz"), true),
            (json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}), url(&u, "get", "/healthz/etcd"), false),
            (json!({"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}), url(&u, "get", "/healthz/etcd"), true),
            (json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}), url(&u, "get", "/apis"), false),
            (json!({"verbs": ["get"], "nonResourceURLs": ["*"]}), url(&u, "post", "/x"), false),
            (json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"]}), url(&u, "get", "/x"), false),
        ];
        for (r, a, want) in cases {
            assert_eq!(rule(r.clone()).allows(a), *want, "{r} {a:?}");
        }
    }

    /// A RoleBinding or ClusterRoleBinding from its JSON, as the authorizer's cache holds it.
    fn binding(v: Value) -> Binding {
        let binding: rbac_v1::RoleBinding = serde_json::from_value(v).unwrap();
        Binding::of(binding.metadata.as_ref(), &binding.role_ref, &binding.subjects)
    }

    fn policy() -> Policy {
        let mut p = Policy::default();
        p.cluster_roles
            .insert("view".into(), Arc::new(vec![rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}))]));
        p.cluster_roles.insert("urls".into(), Arc::new(vec![rule(json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}))]));
        p.roles
            .entry("ns".into())
            .or_default()
            .insert("cm".into(), Arc::new(vec![rule(json!({"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}))]));
        p.cluster_role_bindings.push(binding(json!({
            "metadata": {"name": "g"}, "roleRef": {"kind": "ClusterRole", "name": "urls"},
            "subjects": [{"kind": "Group", "name": "ops"}]})));
        p.role_bindings.entry("ns".into()).or_default().extend([
            binding(json!({"metadata": {"name": "a", "namespace": "ns"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "bot", "namespace": "ns"}]})),
            binding(json!({"metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "cm"},
                "subjects": [{"kind": "User", "name": "alice"}]})),
            binding(json!({"metadata": {"name": "c", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "gone"},
                "subjects": [{"kind": "User", "name": "bob"}]})),
        ]);
        p
    }

    #[test]
    fn bindings_grant_in_their_scope() {
        let p = policy();
        let alice = user("alice", &[ALL_AUTHENTICATED]);
        let bot = user("system:serviceaccount:ns:bot", &[]);
        let ops = user("carol", &["ops"]);
        assert!(p.authorize(&attrs(&alice, "list", "ns", "", "pods", "", "")).is_ok());
        assert!(p.authorize(&attrs(&alice, "create", "ns", "", "configmaps", "", "")).is_ok());
        assert!(p.authorize(&attrs(&alice, "list", "other", "", "pods", "", "")).is_err());
        assert!(p.authorize(&attrs(&alice, "list", "", "", "pods", "", "")).is_err());
        assert!(p.authorize(&attrs(&bot, "get", "ns", "", "pods", "", "x")).is_ok());
        assert!(p.authorize(&url(&ops, "get", "/metrics")).is_ok());
        assert!(p.authorize(&url(&alice, "get", "/metrics")).is_err());
        assert_eq!(
            p.authorize(&attrs(&user("bob", &[]), "get", "ns", "", "pods", "", "")).unwrap_err(),
            "RBAC: role.rbac.authorization.k8s.io \"gone\" not found"
        );
        assert_eq!(
            p.authorize(&attrs(&bot, "get", "ns", "", "pods", "", "x")).unwrap(),
            "RBAC: allowed by RoleBinding \"a/ns\" of ClusterRole \"view\" to ServiceAccount \"bot/ns\""
        );
        let (rules, errors) = p.rules_for(&alice, "ns");
        assert_eq!(rules.len(), 2);
        assert!(errors.is_empty());
    }

    #[test]
    fn masters_and_modes() {
        let p = Policy::default();
        let admin = user("kubernetes-admin", &[SYSTEM_MASTERS]);
        let x = user("x", &[]);
        assert!(decide(Mode::Rbac, &p, &attrs(&admin, "delete", "", "", "nodes", "", "")).is_ok());
        assert!(decide(Mode::Rbac, &p, &attrs(&x, "delete", "", "", "nodes", "", "")).is_err());
        assert!(decide(Mode::AlwaysAllow, &p, &attrs(&x, "delete", "", "", "nodes", "", "")).is_ok());
        assert_eq!(decide(Mode::AlwaysDeny, &p, &attrs(&x, "get", "", "", "nodes", "", "")).unwrap_err(), "Everything is forbidden.");
    }

    #[test]
    fn escalation_messages_are_upstreams() {
        let mut p = policy();
        p.cluster_roles.insert("view".into(), Arc::new(vec![rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}))]));
        let alice = user("alice", &["dev", ALL_AUTHENTICATED]);
        let wanted = [rule(json!({"verbs": ["get", "delete", "list"], "apiGroups": [""], "resources": ["pods", "secrets"]}))];
        assert_eq!(
            confirm_no_escalation(&p, &alice, "ns", &wanted).unwrap_err(),
            "user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"list\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\" \"list\"]}"
        );
        assert!(
            confirm_no_escalation(&p, &alice, "ns", &[rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}))]).is_ok()
        );
    }

    #[test]
    fn coverage_breaks_rules_down() {
        let owned = vec![
            rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/*"]})),
            rule(json!({"verbs": ["get"], "nonResourceURLs": ["/api/*"]})),
        ];
        assert!(uncovered(&owned, &[rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}))]).is_empty());
        assert!(uncovered(&owned, &[rule(json!({"verbs": ["get"], "nonResourceURLs": ["/api/v1"]}))]).is_empty());
        assert_eq!(uncovered(&owned, &[rule(json!({"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods"]}))]).len(), 1);
        assert_eq!(uncovered(&owned, &[rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}))]).len(), 1);
        let all = vec![rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}))];
        assert!(
            uncovered(&all, &[rule(json!({"verbs": ["get"], "apiGroups": ["x"], "resources": ["y"], "resourceNames": ["z"]}))]).is_empty()
        );
    }
}
