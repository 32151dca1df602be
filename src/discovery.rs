//! Discovery documents, built from the generated scheme (`kapi_api::scheme`) and route table.
//!
//! Upstream serves two forms (`k8s.io/apiserver/pkg/endpoints/discovery`, kube-aggregator's
//! `/apis` handler):
//!
//! - the legacy documents: `/api` ([`api_versions`]), `/apis` ([`api_group_list`]),
//!   `/apis/<group>` ([`api_group`]), `/api/v1` and `/apis/<group>/<version>`
//!   ([`api_resource_list`]);
//! - aggregated discovery (`apidiscovery.k8s.io/v2`), one document for all of `/api`
//!   ([`aggregated_legacy`]) or `/apis` ([`aggregated_apis`]), chosen by the `Accept` header
//!   ([`negotiate_aggregated`]) and answered with [`aggregated_content_type`].
//!
//! Every function takes the enabled group-versions ([`EnabledGroupVersions`], by default those
//! upstream enables by default) so that `--runtime-config` can change them. The functions are
//! pure and return the generated types; the server encodes them.
//!
//! Facts that are not in the specs and how they are derived (see each function):
//! - a resource's verbs, short names, categories and subresources come from
//!   `kapi_api::scheme::RESOURCES`; the verbs of connect subresources (`pods/exec`), which the
//!   table leaves empty, from the methods of their routes, as upstream's installer maps them;
//! - `storageVersionHash` is upstream's (first 8 bytes of the SHA-256 of
//!   `<group>/<version>/<kind>`, base64) of the kind the resource is stored as: the generated
//!   `kapi_api::scheme::STORAGE_VERSIONS` (upstream's storage versions, cohabiting resources
//!   such as `events.k8s.io` `events` stored as core's).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use kapi_api::api::apidiscovery::v2::{
    APIGroupDiscovery, APIGroupDiscoveryList, APIResourceDiscovery, APISubresourceDiscovery, APIVersionDiscovery,
};
use kapi_api::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery, GroupVersionKind, ListMeta, ObjectMeta,
    ServerAddressByClientCIDR, Verbs,
};
use kapi_api::routes::ROUTES;
use kapi_api::scheme::{GROUP_VERSIONS, GROUPS, RESOURCES};
use kapi_apimachinery::codec::Format;
use kapi_apimachinery::scheme::ResourceInfo;

use crate::group_index::{GroupIndex, same_name};
use crate::negotiation;

/// The group of aggregated discovery.
pub const AGGREGATED_GROUP: &str = "apidiscovery.k8s.io";
/// The only version of aggregated discovery kube-apiserver v1.36 serves (v2beta1 is gone).
pub const AGGREGATED_VERSION: &str = "v2";
/// The kind of the aggregated document.
pub const AGGREGATED_KIND: &str = "APIGroupDiscoveryList";
/// The `Content-Type` of an aggregated JSON answer; client-go recognises the aggregated form
/// only by these `g`, `v`, `as` parameters (otherwise it reads the legacy form).
pub const AGGREGATED_JSON_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// `freshness` of every version we serve ourselves (aggregated API servers may be `Stale`).
pub const FRESHNESS_CURRENT: &str = "Current";

/// Which served group-versions are enabled. Upstream's default is the generated
/// `enabled_by_default`; `--runtime-config` switches group-versions on and off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnabledGroupVersions {
    /// Parallel to `GROUP_VERSIONS`.
    enabled: Vec<bool>,
}

impl Default for EnabledGroupVersions {
    fn default() -> Self {
        Self::defaults()
    }
}

impl EnabledGroupVersions {
    /// The group-versions kube-apiserver enables by default (GA and enabled-by-default beta).
    pub fn defaults() -> Self {
        Self { enabled: GROUP_VERSIONS.iter().map(|gv| gv.served && gv.enabled_by_default).collect() }
    }

    /// None enabled.
    pub fn none() -> Self {
        Self { enabled: vec![false; GROUP_VERSIONS.len()] }
    }

    /// Every served group-version (alpha and beta included).
    pub fn all() -> Self {
        Self { enabled: GROUP_VERSIONS.iter().map(|gv| gv.served).collect() }
    }

    /// kube-apiserver's `--runtime-config` over the default set: `api/all`, then `api/ga`,
    /// `api/beta`, `api/alpha` (by the version's maturity), then single group-versions
    /// (`apps/v1`, `v1` or `api/v1` for the core group), whatever their order in the flag; a
    /// key without `=value` means `true`. An unknown key or group-version is an error.
    pub fn from_runtime_config(entries: &[String]) -> Result<Self, String> {
        let mut enabled = Self::defaults();
        let mut parsed = Vec::new();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (key, value) = entry.split_once('=').unwrap_or((entry, "true"));
            let on = match value {
                "true" | "" => true,
                "false" => false,
                other => return Err(format!("invalid value {other:?} for {key}: must be true or false")),
            };
            parsed.push((key, on));
        }
        let maturity = |version: &str| {
            if version.contains("alpha") {
                "api/alpha"
            } else if version.contains("beta") {
                "api/beta"
            } else {
                "api/ga"
            }
        };
        for pass in 0..3 {
            for &(key, on) in &parsed {
                match (pass, key) {
                    (0, "api/all") => {
                        for (i, gv) in GROUP_VERSIONS.iter().enumerate() {
                            enabled.enabled[i] = gv.served && on;
                        }
                    }
                    (1, "api/ga" | "api/beta" | "api/alpha") => {
                        for (i, gv) in GROUP_VERSIONS.iter().enumerate() {
                            if gv.served && maturity(gv.version) == key {
                                enabled.enabled[i] = on;
                            }
                        }
                    }
                    (2, key) if !matches!(key, "api/all" | "api/ga" | "api/beta" | "api/alpha") => {
                        let key = key.strip_prefix("api/").unwrap_or(key);
                        let (group, version) = key.split_once('/').unwrap_or(("", key));
                        if !enabled.set(group, version, on) {
                            return Err(format!("unknown api group-version {key:?} (not served by this version of the API)"));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(enabled)
    }

    /// Whether an `/openapi/v3` document path (`api/v1`, `apis/apps/v1`) belongs to an enabled
    /// group-version; paths of no group-version (`version`, `.well-known/...`) always do.
    pub fn serves_openapi_path(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["api", version] => self.is_enabled("", version),
            ["apis", group, version] => self.is_enabled(group, version),
            _ => true,
        }
    }

    /// Asked for every resource request, so found through an index of `GROUP_VERSIONS` rather
    /// than a scan of it.
    pub fn is_enabled(&self, group: &str, version: &str) -> bool {
        static INDEX: std::sync::LazyLock<GroupIndex<usize>> =
            std::sync::LazyLock::new(|| GROUP_VERSIONS.iter().enumerate().map(|(i, gv)| (gv.group, gv.version, i)).collect());
        INDEX.get(group, version).is_some_and(|&i| self.enabled[i])
    }

    /// Enables or disables a group-version; `false` (and no change) if it is not served.
    pub fn set(&mut self, group: &str, version: &str, enabled: bool) -> bool {
        match GROUP_VERSIONS.iter().position(|gv| gv.group == group && gv.version == version && gv.served) {
            Some(i) => {
                self.enabled[i] = enabled;
                true
            }
            None => false,
        }
    }

    /// The enabled group-versions, sorted by group and version.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        GROUP_VERSIONS.iter().zip(&self.enabled).filter(|(_, on)| **on).map(|(gv, _)| (gv.group, gv.version))
    }

    /// The enabled versions of a group, highest priority (preferred) first.
    fn versions_of(&self, group: &str) -> Vec<&'static str> {
        GROUPS
            .iter()
            .find(|g| g.name == group)
            .map(|g| g.versions.iter().copied().filter(|v| self.is_enabled(group, v)).collect())
            .unwrap_or_default()
    }
}

/// `/api`: `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[...]}`. Like
/// upstream's, it has no `apiVersion`. `server_address` is `host:port` clients should use.
pub fn api_versions(server_address: &str) -> APIVersions {
    APIVersions {
        kind: Some("APIVersions".to_owned()),
        api_version: None,
        versions: vec!["v1".to_owned()],
        server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".to_owned(),
            server_address: server_address.to_owned(),
        }],
    }
}

fn group_version_string(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

fn discovery_group(name: &str, versions: &[&str]) -> Option<APIGroup> {
    let to_gv = |v: &str| GroupVersionForDiscovery { group_version: group_version_string(name, v), version: v.to_owned() };
    let preferred = versions.first()?;
    Some(APIGroup {
        kind: None,
        api_version: None,
        name: name.to_owned(),
        versions: versions.iter().map(|v| to_gv(v)).collect(),
        preferred_version: Some(to_gv(preferred)),
        server_address_by_client_cidrs: Vec::new(),
    })
}

/// A group served at run time (custom resources'), as discovery shows it: after the built-in
/// groups (upstream gives definitions' groups the lowest priority), versions by priority.
pub struct RuntimeGroup {
    pub name: String,
    pub versions: Vec<RuntimeVersion>,
}

pub struct RuntimeVersion {
    pub version: String,
    /// The resources and their `resource/subresource` entries, sorted by name.
    pub resources: Vec<APIResource>,
}

impl RuntimeGroup {
    fn versions(&self) -> Vec<&str> {
        self.versions.iter().map(|v| v.version.as_str()).collect()
    }

    fn resources(&self, version: &str) -> Option<&[APIResource]> {
        self.versions.iter().find(|v| v.version == version).map(|v| v.resources.as_slice())
    }
}

/// `/apis`: the named groups with an enabled version, in discovery order (priority, then name:
/// `apiregistration.k8s.io`, `apps`, `events.k8s.io`, ...), each with its enabled versions by
/// priority and the first as preferred. As kube-aggregator writes it: no
/// `serverAddressByClientCIDRs`.
pub fn api_group_list(enabled: &EnabledGroupVersions, runtime: &[RuntimeGroup]) -> APIGroupList {
    let groups = GROUPS
        .iter()
        .filter(|g| !g.name.is_empty())
        .filter_map(|g| discovery_group(g.name, &enabled.versions_of(g.name)))
        .chain(runtime.iter().filter_map(|g| discovery_group(&g.name, &g.versions())))
        .collect();
    APIGroupList { kind: Some("APIGroupList".to_owned()), api_version: Some("v1".to_owned()), groups }
}

/// `/apis/<group>`; `None` (a 404) for an unknown group or one with no enabled version.
pub fn api_group(enabled: &EnabledGroupVersions, runtime: &[RuntimeGroup], group: &str) -> Option<APIGroup> {
    if group.is_empty() {
        return None;
    }
    let versions = match runtime.iter().find(|g| g.name == group) {
        Some(served) => served.versions(),
        None => enabled.versions_of(group),
    };
    let mut g = discovery_group(group, &versions)?;
    g.kind = Some("APIGroup".to_owned());
    g.api_version = Some("v1".to_owned());
    Some(g)
}

/// The kube verbs of the connect routes of a (sub)resource: upstream's installer maps each
/// method its connecter accepts (`GET` get, `POST` create, `PUT` update, `PATCH` patch,
/// `DELETE` delete; `HEAD` and `OPTIONS` none).
fn connect_verbs(group: &str, version: &str, resource: &str, subresource: &str) -> Vec<&'static str> {
    type Key = (&'static str, &'static str, &'static str, &'static str);
    static VERBS: OnceLock<BTreeMap<Key, BTreeSet<&'static str>>> = OnceLock::new();
    let verbs = VERBS.get_or_init(|| {
        let mut map: BTreeMap<Key, BTreeSet<&'static str>> = BTreeMap::new();
        for route in ROUTES {
            let Some(t) = route.target.filter(|t| t.action == "connect") else { continue };
            let verb = match route.method {
                "GET" => "get",
                "POST" => "create",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => continue,
            };
            let key = (t.group, t.version, t.resource, t.subresource.unwrap_or_default());
            map.entry(key).or_default().insert(verb);
        }
        map
    });
    verbs.get(&(group, version, resource, subresource)).map(|set| set.iter().copied().collect()).unwrap_or_default()
}

/// The group-version-kind a resource is stored as, for its `storageVersionHash`; `None` for
/// resources without storage (create-only reviews, `bindings`, `componentstatuses`), recognised
/// as those that cannot be watched.
fn storage_kind(r: &ResourceInfo) -> Option<(&'static str, &'static str, &'static str)> {
    if !r.verbs.contains(&"watch") {
        return None;
    }
    kapi_api::scheme::STORAGE_VERSIONS
        .iter()
        .find(|(g, k, _)| *g == r.group && *k == r.kind.kind)
        .map(|(_, _, s)| (s.group, s.version, s.kind))
}

/// Upstream's `discovery.StorageVersionHash`: base64 of the first 8 bytes of the SHA-256 of
/// `group/version/kind` (empty kind, empty hash).
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    if kind.is_empty() {
        return String::new();
    }
    let digest = sha256(format!("{group}/{version}/{kind}").as_bytes());
    kapi_apimachinery::serde_bytes::encode(&digest[..8])
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The resources of one group-version as the legacy document lists them: each resource and each
/// `resource/subresource`, sorted by name (upstream installs storage paths in sorted order).
fn api_resources(group: &str, version: &str) -> Vec<APIResource> {
    let mut out = Vec::new();
    for r in RESOURCES.iter().filter(|r| same_name(r.group, group) && r.version == version) {
        out.push(APIResource {
            name: r.resource.to_owned(),
            singular_name: r.singular.to_owned(),
            namespaced: r.namespaced,
            group: None,
            version: None,
            kind: r.kind.kind.to_owned(),
            verbs: Verbs { items: strings(r.verbs) },
            short_names: strings(r.short_names),
            categories: strings(r.categories),
            storage_version_hash: storage_kind(r).map(|(g, v, k)| storage_version_hash(g, v, k)),
        });
        for sub in r.subresources {
            let mut verbs: BTreeSet<&str> = sub.verbs.iter().copied().collect();
            verbs.extend(connect_verbs(group, version, r.resource, sub.name));
            // Upstream names the kind's group and version when the subresource's storage says
            // they differ from the list's (`deployments/scale` is `autoscaling/v1` `Scale`).
            let foreign = sub.kind.group != group || sub.kind.version != version;
            out.push(APIResource {
                name: format!("{}/{}", r.resource, sub.name),
                singular_name: String::new(),
                namespaced: r.namespaced,
                group: foreign.then(|| sub.kind.group.to_owned()),
                version: foreign.then(|| sub.kind.version.to_owned()),
                kind: sub.kind.kind.to_owned(),
                verbs: Verbs { items: verbs.into_iter().map(str::to_owned).collect() },
                short_names: Vec::new(),
                categories: Vec::new(),
                storage_version_hash: None,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `/api/v1` (group `""`) and `/apis/<group>/<version>`; `None` (a 404) unless enabled. As
/// upstream's, the core document has no `apiVersion` and the others `v1`.
pub fn api_resource_list(enabled: &EnabledGroupVersions, runtime: &[RuntimeGroup], group: &str, version: &str) -> Option<APIResourceList> {
    let resources = match runtime.iter().find(|g| g.name == group) {
        Some(served) => served.resources(version)?.to_vec(),
        None if enabled.is_enabled(group, version) => api_resources(group, version),
        None => return None,
    };
    Some(APIResourceList {
        kind: Some("APIResourceList".to_owned()),
        api_version: (!group.is_empty()).then(|| "v1".to_owned()),
        group_version: group_version_string(group, version),
        resources,
    })
}

fn gvk(group: Option<&String>, version: Option<&String>, kind: &str) -> GroupVersionKind {
    // Upstream's GroupVersionKind has no omitempty: empty group and version are written.
    GroupVersionKind {
        group: Some(group.cloned().unwrap_or_default()),
        version: Some(version.cloned().unwrap_or_default()),
        kind: Some(kind.to_owned()),
    }
}

/// Upstream's `ConvertGroupVersionIntoToDiscovery`: the legacy list regrouped, subresources
/// under their resource. The response kind keeps the legacy entry's (mostly empty) group and
/// version, as upstream writes it.
fn version_discovery(version: &str, list: &[APIResource]) -> APIVersionDiscovery {
    let scope = |namespaced: bool| if namespaced { "Namespaced" } else { "Cluster" };
    let mut resources: Vec<APIResourceDiscovery> = list
        .iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| APIResourceDiscovery {
            resource: Some(r.name.clone()),
            response_kind: Some(gvk(r.group.as_ref(), r.version.as_ref(), &r.kind)),
            scope: Some(scope(r.namespaced).to_owned()),
            singular_resource: Some(r.singular_name.clone()),
            verbs: r.verbs.items.clone(),
            short_names: r.short_names.clone(),
            categories: r.categories.clone(),
            subresources: Vec::new(),
        })
        .collect();
    for r in list {
        let Some((parent, sub)) = r.name.split_once('/') else { continue };
        let Some(p) = resources.iter_mut().find(|p| p.resource.as_deref() == Some(parent)) else { continue };
        p.subresources.push(APISubresourceDiscovery {
            subresource: Some(sub.to_owned()),
            response_kind: Some(gvk(r.group.as_ref(), r.version.as_ref(), &r.kind)),
            accepted_types: Vec::new(),
            verbs: r.verbs.items.clone(),
        });
    }
    APIVersionDiscovery { version: Some(version.to_owned()), resources, freshness: Some(FRESHNESS_CURRENT.to_owned()) }
}

fn group_discovery(enabled: &EnabledGroupVersions, group: &str) -> Option<APIGroupDiscovery> {
    let versions: Vec<APIVersionDiscovery> =
        enabled.versions_of(group).into_iter().map(|v| version_discovery(v, &api_resources(group, v))).collect();
    if versions.is_empty() {
        return None;
    }
    Some(APIGroupDiscovery {
        kind: None,
        api_version: None,
        metadata: Some(ObjectMeta { name: (!group.is_empty()).then(|| group.to_owned()), ..Default::default() }),
        versions,
    })
}

fn discovery_list(items: Vec<APIGroupDiscovery>) -> APIGroupDiscoveryList {
    APIGroupDiscoveryList {
        kind: Some(AGGREGATED_KIND.to_owned()),
        api_version: Some(format!("{AGGREGATED_GROUP}/{AGGREGATED_VERSION}")),
        metadata: Some(ListMeta::default()),
        items,
    }
}

/// Aggregated discovery of `/api`: the core group alone (its metadata has no name).
pub fn aggregated_legacy(enabled: &EnabledGroupVersions) -> APIGroupDiscoveryList {
    discovery_list(group_discovery(enabled, "").into_iter().collect())
}

/// Aggregated discovery of `/apis`: every named group with an enabled version, in the order of
/// [`api_group_list`], versions by priority.
pub fn aggregated_apis(enabled: &EnabledGroupVersions, runtime: &[RuntimeGroup]) -> APIGroupDiscoveryList {
    let runtime_groups = runtime.iter().map(|g| APIGroupDiscovery {
        kind: None,
        api_version: None,
        metadata: Some(ObjectMeta { name: Some(g.name.clone()), ..Default::default() }),
        versions: g.versions.iter().map(|v| version_discovery(&v.version, &v.resources)).collect(),
    });
    discovery_list(
        GROUPS.iter().filter(|g| !g.name.is_empty()).filter_map(|g| group_discovery(enabled, g.name)).chain(runtime_groups).collect(),
    )
}

/// Whether the client asked for aggregated discovery, and in which format: upstream's
/// `NegotiateMediaTypeOptions` ([`negotiation::negotiate_media_type`]) with
/// `DiscoveryEndpointRestrictions`, which take only clauses converting to
/// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`, allow no `sv`, and a `stream` only as
/// `watch` (kubectl sends
/// `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...,application/json`).
/// `None`: serve the legacy document.
pub fn negotiate_aggregated(accept: Option<&str>) -> Option<Format> {
    let (format, ()) = negotiation::negotiate_media_type(accept?, |clause, format| {
        let aggregated = clause.param("g") == Some(AGGREGATED_GROUP)
            && clause.param("v") == Some(AGGREGATED_VERSION)
            && clause.param("as") == Some(AGGREGATED_KIND);
        (aggregated && negotiation::allows_stream_and_server_version(clause, format, None)).then_some(())
    })?;
    Some(format)
}

/// The `Content-Type` of an aggregated answer in `format`: the media type with the `g`, `v`,
/// `as` parameters client-go checks (JSON: [`AGGREGATED_JSON_CONTENT_TYPE`]).
pub fn aggregated_content_type(format: Format) -> String {
    format!("{};g={AGGREGATED_GROUP};v={AGGREGATED_VERSION};as={AGGREGATED_KIND}", format.content_type())
}

/// SHA-256 of `data`, for the storage version hash.
fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha256_vectors() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(hex(&sha256(&[b'a'; 1000])), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
    }

    /// Hashes as a v1.31 kube-apiserver reports them.
    #[test]
    fn storage_version_hashes() {
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("apps", "v1", "Deployment"), "8aSe+NMegvE=");
        assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
        assert_eq!(storage_version_hash("", "v1", ""), "");
    }

    fn resource<'a>(list: &'a APIResourceList, name: &str) -> &'a APIResource {
        list.resources.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name} missing"))
    }

    fn enabled() -> EnabledGroupVersions {
        EnabledGroupVersions::defaults()
    }

    #[test]
    fn core_v1_pods_entry() {
        let list = api_resource_list(&enabled(), &[], "", "v1").unwrap();
        assert_eq!(list.group_version, "v1");
        assert_eq!(list.api_version, None);
        let pods = serde_json::to_value(resource(&list, "pods")).unwrap();
        assert_eq!(
            pods,
            json!({"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod",
                   "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                   "shortNames":["po"],"categories":["all"],"storageVersionHash":"xPOwRZ+Yhw8="})
        );
    }

    /// Entries of `/api/v1` exactly as a v1.31 kube-apiserver writes them (subresources without
    /// singular name, connect verbs from the methods, foreign kinds with group and version, no
    /// hash without storage).
    #[test]
    fn core_v1_entries_match_a_real_server() {
        let list = api_resource_list(&enabled(), &[], "", "v1").unwrap();
        let cases = [
            json!({"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":["create"]}),
            json!({"name":"componentstatuses","singularName":"componentstatus","namespaced":false,"kind":"ComponentStatus","verbs":["get","list"],"shortNames":["cs"]}),
            json!({"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["create","delete","get","list","patch","update","watch"],"shortNames":["ns"],"storageVersionHash":"Q3oi5N2YM8M="}),
            json!({"name":"namespaces/finalize","singularName":"","namespaced":false,"kind":"Namespace","verbs":["update"]}),
            json!({"name":"nodes/proxy","singularName":"","namespaced":false,"kind":"NodeProxyOptions","verbs":["create","delete","get","patch","update"]}),
            json!({"name":"pods/attach","singularName":"","namespaced":true,"kind":"PodAttachOptions","verbs":["create","get"]}),
            json!({"name":"pods/binding","singularName":"","namespaced":true,"kind":"Binding","verbs":["create"]}),
            json!({"name":"pods/eviction","singularName":"","namespaced":true,"group":"policy","version":"v1","kind":"Eviction","verbs":["create"]}),
            json!({"name":"pods/exec","singularName":"","namespaced":true,"kind":"PodExecOptions","verbs":["create","get"]}),
            json!({"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]}),
            json!({"name":"pods/portforward","singularName":"","namespaced":true,"kind":"PodPortForwardOptions","verbs":["create","get"]}),
            json!({"name":"pods/proxy","singularName":"","namespaced":true,"kind":"PodProxyOptions","verbs":["create","delete","get","patch","update"]}),
            json!({"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]}),
            json!({"name":"replicationcontrollers/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}),
            json!({"name":"serviceaccounts/token","singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]}),
            json!({"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["svc"],"categories":["all"],"storageVersionHash":"0/CO1lhkEBI="}),
            json!({"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cm"],"storageVersionHash":"qFsyl6wFWjQ="}),
        ];
        for want in cases {
            let name = want["name"].as_str().unwrap();
            assert_eq!(serde_json::to_value(resource(&list, name)).unwrap(), want, "{name}");
        }
        // Every storage hash of a real /api/v1.
        let hashes = [
            ("configmaps", "qFsyl6wFWjQ="),
            ("endpoints", "fWeeMqaN/OA="),
            ("events", "r2yiGXH7wu8="),
            ("limitranges", "EBKMFVe6cwo="),
            ("namespaces", "Q3oi5N2YM8M="),
            ("nodes", "XwShjMxG9Fs="),
            ("persistentvolumeclaims", "QWTyNDq0dC4="),
            ("persistentvolumes", "HN/zwEC+JgM="),
            ("pods", "xPOwRZ+Yhw8="),
            ("podtemplates", "LIXB2x4IFpk="),
            ("replicationcontrollers", "Jond2If31h0="),
            ("resourcequotas", "8uhSgffRX6w="),
            ("secrets", "S6u1pOWzb84="),
            ("serviceaccounts", "pbx9ZvyFpBE="),
            ("services", "0/CO1lhkEBI="),
        ];
        for (name, hash) in hashes {
            assert_eq!(resource(&list, name).storage_version_hash.as_deref(), Some(hash), "{name}");
        }
        let hashed = list.resources.iter().filter(|r| r.storage_version_hash.is_some()).count();
        assert_eq!(hashed, hashes.len(), "bindings, componentstatuses and subresources have none");
        // Sorted by name, as upstream installs paths: `pods`, `pods/...`, `podtemplates`.
        let names: Vec<&str> = list.resources.iter().map(|r| r.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let pods = names.iter().position(|n| *n == "pods").unwrap();
        assert_eq!(names[pods + 1], "pods/attach");
    }

    #[test]
    fn group_lists_and_hashes() {
        let apps = api_resource_list(&enabled(), &[], "apps", "v1").unwrap();
        assert_eq!(apps.api_version.as_deref(), Some("v1"));
        assert_eq!(apps.group_version, "apps/v1");
        for (name, hash) in [
            ("controllerrevisions", "85nkx63pcBU="),
            ("daemonsets", "dd7pWHUlMKQ="),
            ("deployments", "8aSe+NMegvE="),
            ("replicasets", "P1RzHs8/mWQ="),
            ("statefulsets", "H+vl74LkKdo="),
        ] {
            assert_eq!(resource(&apps, name).storage_version_hash.as_deref(), Some(hash), "{name}");
        }
        assert_eq!(resource(&apps, "deployments").short_names, ["deploy"]);
        let scale = resource(&apps, "deployments/scale");
        assert_eq!((scale.group.as_deref(), scale.version.as_deref(), scale.kind.as_str()), (Some("autoscaling"), Some("v1"), "Scale"));
        assert_eq!(scale.verbs.items, ["get", "patch", "update"]);

        // Stored as the core group's events (cohabitation).
        let events = api_resource_list(&enabled(), &[], "events.k8s.io", "v1").unwrap();
        assert_eq!(resource(&events, "events").storage_version_hash.as_deref(), Some("r2yiGXH7wu8="));
        // Stored at the group's highest priority version (v2) also when listed under v1.
        let hpa = api_resource_list(&enabled(), &[], "autoscaling", "v1").unwrap();
        assert_eq!(resource(&hpa, "horizontalpodautoscalers").storage_version_hash.as_deref(), Some("qwQve8ut294="));
        // Reviews have no storage.
        let authn = api_resource_list(&enabled(), &[], "authentication.k8s.io", "v1").unwrap();
        assert_eq!(resource(&authn, "tokenreviews").storage_version_hash, None);

        assert!(api_resource_list(&enabled(), &[], "apps", "v1beta1").is_none());
        assert!(api_resource_list(&enabled(), &[], "nope", "v1").is_none());
    }

    #[test]
    fn api_root_documents() {
        assert_eq!(
            serde_json::to_value(api_versions("10.0.0.1:6443")).unwrap(),
            json!({"kind":"APIVersions","versions":["v1"],
                   "serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]})
        );

        let list = api_group_list(&enabled(), &[]);
        let json = serde_json::to_value(&list).unwrap();
        assert_eq!(json["kind"], "APIGroupList");
        assert_eq!(json["apiVersion"], "v1");
        let names: Vec<&str> = list.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(&names[..4], ["apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io"]);
        assert!(!names.contains(&""));
        assert!(!names.contains(&"internal.apiserver.k8s.io"), "alpha-only groups are off by default");
        assert_eq!(
            json["groups"][1],
            json!({"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],
                   "preferredVersion":{"groupVersion":"apps/v1","version":"v1"}})
        );
        let autoscaling = list.groups.iter().find(|g| g.name == "autoscaling").unwrap();
        let versions: Vec<&str> = autoscaling.versions.iter().map(|v| v.version.as_str()).collect();
        assert_eq!(versions, ["v2", "v1"]);
        // Beta versions are off by default.
        let storage = list.groups.iter().find(|g| g.name == "storage.k8s.io").unwrap();
        assert_eq!(storage.versions.len(), 1);

        assert_eq!(
            serde_json::to_value(api_group(&enabled(), &[], "apps").unwrap()).unwrap(),
            json!({"kind":"APIGroup","apiVersion":"v1","name":"apps",
                   "versions":[{"groupVersion":"apps/v1","version":"v1"}],
                   "preferredVersion":{"groupVersion":"apps/v1","version":"v1"}})
        );
        assert!(api_group(&enabled(), &[], "nope").is_none());
        assert!(api_group(&enabled(), &[], "").is_none());
        assert!(api_group(&enabled(), &[], "internal.apiserver.k8s.io").is_none());
    }

    #[test]
    fn runtime_config_changes_what_is_served() {
        let mut e = enabled();
        assert!(e.set("storage.k8s.io", "v1beta1", true));
        assert!(e.set("apps", "v1", false));
        assert!(!e.set("apps", "v1beta1", true), "not served");
        assert!(!e.set("nope", "v1", true));
        let list = api_group_list(&e, &[]);
        assert!(list.groups.iter().all(|g| g.name != "apps"));
        let storage = list.groups.iter().find(|g| g.name == "storage.k8s.io").unwrap();
        let versions: Vec<&str> = storage.versions.iter().map(|v| v.version.as_str()).collect();
        assert_eq!(versions, ["v1", "v1beta1"]);
        assert!(api_resource_list(&e, &[], "storage.k8s.io", "v1beta1").is_some());
        assert!(e.iter().any(|gv| gv == ("storage.k8s.io", "v1beta1")));
        assert!(aggregated_apis(&e, &[]).items.iter().all(|g| g.metadata.as_ref().unwrap().name.as_deref() != Some("apps")));
        assert!(api_group_list(&EnabledGroupVersions::none(), &[]).groups.is_empty());
        assert!(EnabledGroupVersions::all().is_enabled("internal.apiserver.k8s.io", "v1alpha1"));
        let rc = |entries: &[&str]| EnabledGroupVersions::from_runtime_config(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        let defaults = rc(&[]).unwrap();
        assert!(defaults.is_enabled("apps", "v1") && !defaults.is_enabled("resource.k8s.io", "v1alpha3"));
        let all = rc(&["api/all=true"]).unwrap();
        assert!(all.is_enabled("internal.apiserver.k8s.io", "v1alpha1") && all.is_enabled("apps", "v1"));
        // Specific entries win over api/all whatever their order.
        let some = rc(&["batch/v1=false", "api/all=true", "v1"]).unwrap();
        assert!(!some.is_enabled("batch", "v1") && some.is_enabled("", "v1"));
        let no_beta = rc(&["api/beta=false"]).unwrap();
        assert!(no_beta.is_enabled("apps", "v1"));
        assert!(rc(&["nope.example.com/v1=true"]).is_err());
        assert!(rc(&["apps/v1=maybe"]).is_err());
        assert!(!some.serves_openapi_path("apis/batch/v1") && some.serves_openapi_path("api/v1") && some.serves_openapi_path("version"));
    }

    #[test]
    fn aggregated_documents() {
        let apis = aggregated_apis(&enabled(), &[]);
        let json = serde_json::to_value(&apis).unwrap();
        assert_eq!(json["kind"], "APIGroupDiscoveryList");
        assert_eq!(json["apiVersion"], "apidiscovery.k8s.io/v2");
        assert_eq!(json["metadata"], json!({}));
        assert_eq!(json["items"][0]["metadata"], json!({"name":"apiregistration.k8s.io"}));
        let apps = json["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "apps").unwrap();
        assert_eq!(apps["versions"][0]["version"], "v1");
        assert_eq!(apps["versions"][0]["freshness"], "Current");
        let deployments = apps["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "deployments").unwrap();
        assert_eq!(
            deployments,
            &json!({"resource":"deployments","responseKind":{"group":"","version":"","kind":"Deployment"},
                    "scope":"Namespaced","singularResource":"deployment",
                    "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                    "shortNames":["deploy"],"categories":["all"],
                    "subresources":[
                        {"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]},
                        {"subresource":"status","responseKind":{"group":"","version":"","kind":"Deployment"},"verbs":["get","patch","update"]}]})
        );
        // Same order as /apis.
        let names: Vec<String> = apis.items.iter().map(|i| i.metadata.as_ref().unwrap().name.clone().unwrap()).collect();
        let legacy: Vec<String> = api_group_list(&enabled(), &[]).groups.into_iter().map(|g| g.name).collect();
        assert_eq!(names, legacy);

        let core = aggregated_legacy(&enabled());
        assert_eq!(core.items.len(), 1);
        let core = serde_json::to_value(&core.items[0]).unwrap();
        assert_eq!(core["metadata"], json!({}));
        let nodes = core["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "nodes").unwrap();
        assert_eq!(nodes["scope"], "Cluster");
        let pods = core["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap();
        let exec = pods["subresources"].as_array().unwrap().iter().find(|s| s["subresource"] == "exec").unwrap();
        assert_eq!(
            exec,
            &json!({"subresource":"exec","responseKind":{"group":"","version":"","kind":"PodExecOptions"},"verbs":["create","get"]})
        );
    }

    #[test]
    fn aggregated_negotiation() {
        let cases = [
            (None, None),
            (Some(""), None),
            (Some("application/json"), None),
            (Some("application/json, */*"), None),
            (
                Some(
                    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
                ),
                Some(Format::Json),
            ),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"), None),
            (
                Some(
                    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
                ),
                Some(Format::Protobuf),
            ),
            (
                Some(
                    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
                ),
                Some(Format::Json),
            ),
            (Some("application/yaml; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList"), Some(Format::Yaml)),
            (Some("*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"), Some(Format::Json)),
            (Some("text/html;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"), None),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscovery"), None),
            (Some("application/json;as=Table;v=v1;g=meta.k8s.io"), None),
            // As NegotiateMediaTypeOptions: media types compare as written, the last of a
            // repeated parameter counts, `sv` is allowed on no discovery clause, and YAML has no
            // stream serializer.
            (Some("Application/JSON;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"), None),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=Table;as=APIGroupDiscoveryList"), Some(Format::Json)),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;as=Table"), None),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;sv=v1"), None),
            (Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;stream=watch"), Some(Format::Json)),
            (Some("application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;stream=watch"), None),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate_aggregated(accept), want, "{accept:?}");
        }
        assert_eq!(aggregated_content_type(Format::Json), AGGREGATED_JSON_CONTENT_TYPE);
        assert_eq!(
            aggregated_content_type(Format::Protobuf),
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
    }

    /// Every resource of every enabled group-version has a kind and verbs, and every
    /// subresource a kind and verbs (connect ones included).
    #[test]
    fn every_entry_is_complete() {
        let e = enabled();
        for (group, version) in e.iter() {
            let list = api_resource_list(&e, &[], group, version).unwrap();
            assert!(!list.resources.is_empty(), "{group}/{version}");
            for r in &list.resources {
                assert!(!r.kind.is_empty(), "{group}/{version} {}", r.name);
                assert!(!r.verbs.items.is_empty(), "{group}/{version} {} has no verbs", r.name);
            }
        }
    }
}
