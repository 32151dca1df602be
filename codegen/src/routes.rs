//! The route table and the resources it implies, read from the OpenAPI document's `paths`.
//!
//! Each (path, method) becomes one [`Route`]: the group/version/resource it addresses, the
//! subresource, the action (`x-kubernetes-action`), scope, and the patch types it accepts. The
//! runtime dispatches on this table; no route is written by hand.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use openapiv3::{OpenAPI, ReferenceOr};

use crate::data::SchemeData;
use crate::model::Gvk;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    pub path: String,
    pub method: String,
    pub operation_id: String,
    /// `None` for non-resource paths (discovery documents, `/version`, `/logs`, OIDC).
    pub target: Option<Target>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub action: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: Option<String>,
    /// The path has `namespaces/{namespace}/`.
    pub namespaced: bool,
    /// The path names one object (`{name}`).
    pub named: bool,
    /// Under the legacy `/watch/` prefix.
    pub legacy_watch: bool,
    /// A trailing `{path}` (proxy subpaths).
    pub has_subpath: bool,
    /// The kind of the request/response body, as the document declares it.
    pub gvk: Gvk,
    pub patch_types: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: Gvk,
    /// The kind of list responses, when the scheme has one (`PodList`).
    pub list_kind: Option<String>,
    pub singular: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub subresources: Vec<Subresource>,
}

#[derive(Debug, Clone)]
pub struct Subresource {
    pub name: String,
    pub kind: Gvk,
    pub verbs: Vec<String>,
}

/// (group, version) of an API path, if it is under `/api/v1` or `/apis/<g>/<v>`.
pub fn group_version_of_path(path: &str) -> Option<(String, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", v, ..] => Some((String::new(), (*v).to_owned())),
        ["apis", g, v, ..] => Some(((*g).to_owned(), (*v).to_owned())),
        _ => None,
    }
}

pub fn collect(openapi: &OpenAPI) -> Result<Vec<Route>> {
    let mut routes = Vec::new();
    for (path, item) in &openapi.paths.paths {
        let ReferenceOr::Item(item) = item else { bail!("path {path}: references are not supported") };
        for (method, op) in item.iter() {
            let action = op.extensions.get("x-kubernetes-action").and_then(|v| v.as_str());
            let operation_id = op.operation_id.clone().unwrap_or_default();
            let target = match action {
                None => None,
                Some(action) => {
                    let gvk = op.extensions.get("x-kubernetes-group-version-kind");
                    let field = |k: &str| gvk.and_then(|g| g.get(k)).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
                    let gvk = Gvk { group: field("group"), version: field("version"), kind: field("kind") };
                    let patch_types = if action == "patch" {
                        op.extensions
                            .get("x-consumes")
                            .and_then(|v| v.as_array())
                            .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect())
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    Some(parse_target(path, action, gvk, patch_types)?)
                }
            };
            routes.push(Route { path: path.clone(), method: method.to_uppercase(), operation_id, target });
        }
    }
    routes.sort();
    Ok(routes)
}

fn parse_target(path: &str, action: &str, gvk: Gvk, patch_types: Vec<String>) -> Result<Target> {
    let Some((group, version)) = group_version_of_path(path) else {
        bail!("path {path} has an action but no group/version");
    };
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut rest: &[&str] = if group.is_empty() { &segs[2..] } else { &segs[3..] };
    let legacy_watch = rest.first() == Some(&"watch");
    if legacy_watch {
        rest = &rest[1..];
    }
    let namespaced = rest.len() > 2 && rest[0] == "namespaces" && rest[1] == "{namespace}";
    if namespaced {
        rest = &rest[2..];
    }
    let Some(resource) = rest.first() else { bail!("path {path}: no resource") };
    let named = rest.get(1) == Some(&"{name}");
    let subresource = rest.get(2).map(|s| (*s).to_owned());
    let has_subpath = rest.get(3) == Some(&"{path}");
    if rest.len() > 4 || (rest.len() == 4 && !has_subpath) || (rest.len() >= 2 && !named) {
        bail!("path {path}: unexpected shape");
    }
    Ok(Target {
        action: action.to_owned(),
        group,
        version,
        resource: (*resource).to_owned(),
        subresource,
        namespaced,
        named,
        legacy_watch,
        has_subpath,
        gvk,
        patch_types,
    })
}

/// The discovery verb of an action.
fn verb(action: &str) -> Option<&'static str> {
    Some(match action {
        "get" => "get",
        "list" => "list",
        "watch" | "watchlist" => "watch",
        "post" => "create",
        "put" => "update",
        "patch" => "patch",
        "delete" => "delete",
        "deletecollection" => "deletecollection",
        "connect" => return None,
        _ => return None,
    })
}

/// Upstream's order of verbs in discovery.
const VERB_ORDER: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

fn sorted_verbs(set: &BTreeSet<&'static str>) -> Vec<String> {
    VERB_ORDER.iter().filter(|v| set.contains(*v)).map(|v| (*v).to_owned()).collect()
}

pub fn resources(routes: &[Route], data: &SchemeData, kinds: &BTreeSet<Gvk>, strict_data: bool) -> Result<Vec<Resource>> {
    type Key = (String, String, String);
    let mut main: BTreeMap<Key, (Option<Gvk>, bool, BTreeSet<&'static str>)> = BTreeMap::new();
    let mut subs: BTreeMap<(Key, String), (Gvk, BTreeSet<&'static str>)> = BTreeMap::new();
    for r in routes {
        let Some(t) = &r.target else { continue };
        let key = (t.group.clone(), t.version.clone(), t.resource.clone());
        match &t.subresource {
            None => {
                let entry = main.entry(key).or_insert((None, false, BTreeSet::new()));
                if entry.0.is_none() {
                    entry.0 = Some(t.gvk.clone());
                }
                entry.1 |= t.namespaced;
                entry.2.extend(verb(&t.action));
            }
            Some(sub) => {
                let entry = subs.entry((key, sub.clone())).or_insert((t.gvk.clone(), BTreeSet::new()));
                entry.1.extend(verb(&t.action));
            }
        }
    }
    let mut out = Vec::new();
    for ((group, version, resource), (gvk, namespaced, verbs)) in main {
        let Some(kind) = gvk else { bail!("resource {group}/{version}/{resource} has no kind") };
        let facts = data.resource.iter().find(|f| f.group == group && f.resource == resource);
        let subresources = subs
            .iter()
            .filter(|(((g, v, r), _), _)| *g == group && *v == version && *r == resource)
            .map(|((_, name), (kind, verbs))| Subresource { name: name.clone(), kind: kind.clone(), verbs: sorted_verbs(verbs) })
            .collect();
        let list = Gvk { kind: format!("{}List", kind.kind), ..kind.clone() };
        out.push(Resource {
            list_kind: kinds.contains(&list).then(|| list.kind.clone()),
            singular: kind.kind.to_lowercase(),
            short_names: facts.map(|f| f.short_names.clone()).unwrap_or_default(),
            categories: facts.map(|f| f.categories.clone()).unwrap_or_default(),
            verbs: sorted_verbs(&verbs),
            group,
            version,
            resource,
            kind,
            namespaced,
            subresources,
        });
    }
    for f in &data.resource {
        if strict_data && !out.iter().any(|r| r.group == f.group && r.resource == f.resource) {
            bail!("scheme.toml: resource {}/{} is not served by the OpenAPI document", f.group, f.resource);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gvk() -> Gvk {
        Gvk { group: String::new(), version: "v1".into(), kind: "Pod".into() }
    }

    #[test]
    fn parses_paths() {
        // path, resource, subresource, (namespaced, named, legacy watch)
        type Case<'a> = (&'a str, &'a str, Option<&'a str>, bool, bool, bool);
        let cases: &[Case] = &[
            ("/api/v1/pods", "pods", None, false, false, false),
            ("/api/v1/namespaces/{namespace}/pods", "pods", None, true, false, false),
            ("/api/v1/namespaces/{namespace}/pods/{name}/status", "pods", Some("status"), true, true, false),
            ("/api/v1/namespaces/{name}", "namespaces", None, false, true, false),
            ("/api/v1/namespaces/{name}/finalize", "namespaces", Some("finalize"), false, true, false),
            ("/api/v1/watch/namespaces/{namespace}/pods/{name}", "pods", None, true, true, true),
            ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "deployments", Some("scale"), true, true, false),
            ("/api/v1/nodes/{name}/proxy/{path}", "nodes", Some("proxy"), false, true, false),
        ];
        for (path, resource, sub, ns, named, watch) in cases {
            let t = parse_target(path, "get", gvk(), vec![]).unwrap();
            assert_eq!(t.resource, *resource, "{path}");
            assert_eq!(t.subresource.as_deref(), *sub, "{path}");
            assert_eq!((t.namespaced, t.named, t.legacy_watch), (*ns, *named, *watch), "{path}");
        }
        assert!(parse_target("/api/v1/nodes/{name}/proxy/{path}", "get", gvk(), vec![]).unwrap().has_subpath);
    }
}
