//! What a request is about, parsed once from its method, path and query: upstream's
//! `RequestInfoFactory` (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), and the
//! route of the generated table it hits.
//!
//! [`RequestInfoFactory::parse`] gives the kube verb (`get`, `list`, `watch`, `create`,
//! `update`, `patch`, `delete`, `deletecollection`, or `proxy` for the deprecated
//! `/proxy/` prefix; connect subresources keep the method's verb, as upstream), API prefix,
//! group, version, namespace, resource, subresource and name; authorization, audit and the
//! router all read it. [`match_route`] finds the entry of `kapi_api::routes::ROUTES` a request
//! hits, matching the templates segment by segment, so the handler learns the action, kind and
//! scope from the generated table.
//!
//! I/O-free; the tables of cases (upstream's `requestinfo_test.go` and route matches) are in the
//! tests.

use std::sync::OnceLock;

use kapi_api::routes::ROUTES;
use kapi_apimachinery::scheme::Route;

use crate::group_index::Name;
use crate::status::ApiError;
use crate::{list_options, url};

/// A user as upstream's authenticators report it (`user.Info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// Errors of request parsing. Upstream answers either with a 500 (`failed to create
/// RequestInfo: ...`); an undecodable path is rejected by Go's HTTP server with a 400 before.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestInfoError {
    /// `/api/v1/watch` or `/api/v1/proxy` with nothing after the special verb.
    #[error("unable to determine kind and namespace from url, {0}")]
    NoKindOrNamespace(String),
    /// A `%` escape in the path that is not two hex digits, or one that decodes to invalid UTF-8.
    #[error("invalid URL escape in path {0:?}")]
    InvalidPath(String),
}

impl From<RequestInfoError> for ApiError {
    fn from(e: RequestInfoError) -> Self {
        match e {
            RequestInfoError::NoKindOrNamespace(_) => ApiError::internal(format!("failed to create RequestInfo: {e}")),
            RequestInfoError::InvalidPath(_) => ApiError::bad_request(e.to_string()),
        }
    }
}

/// Upstream's `RequestInfo`. Empty strings mean "not present", as upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// Whether the request is for an API resource or subresource.
    pub is_resource_request: bool,
    /// The (percent-decoded) URL path.
    pub path: String,
    /// The kube verb for resource requests; the lowercase HTTP method otherwise.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    /// The plural resource name (`pods`), not the kind.
    pub resource: String,
    pub subresource: String,
    /// The object name from the path, or from a `metadata.name=` field selector of a list or
    /// watch (as upstream, for authorization).
    pub name: String,
    /// The path parts from the resource on: `resource/name/subresource/...`.
    pub parts: Vec<String>,
    /// The raw `fieldSelector` of a list, watch or deletecollection.
    pub field_selector: String,
    /// The raw `labelSelector` of a list, watch or deletecollection.
    pub label_selector: String,
}

/// Special verbs that can open a resource path (`/api/v1/watch/...`, `/api/v1/proxy/...`).
const SPECIAL_VERBS: &[&str] = &["proxy", "watch"];
/// Special verbs whose paths have no subresource (everything after the name is a proxied path).
const SPECIAL_VERBS_NO_SUBRESOURCES: &[&str] = &["proxy"];
/// Subresources of a namespace: `namespaces/{name}/status` is the namespace's status, not a
/// resource called `status` in that namespace.
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];
/// Verbs whose field and label selectors are recorded for authorization.
const VERBS_WITH_SELECTORS: &[&str] = &["list", "watch", "deletecollection"];

/// Which path prefixes hold resources, and which of them carry no group (`/api`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfoFactory {
    /// Without slashes, e.g. `api`, `apis`.
    pub api_prefixes: Vec<String>,
    /// Prefixes followed directly by the version (`api`).
    pub groupless_api_prefixes: Vec<String>,
}

impl Default for RequestInfoFactory {
    /// kube-apiserver's: `api` (groupless) and `apis`.
    fn default() -> Self {
        Self { api_prefixes: vec!["api".to_owned(), "apis".to_owned()], groupless_api_prefixes: vec!["api".to_owned()] }
    }
}

impl RequestInfoFactory {
    /// Parses a request. `path` is as sent (percent-encoded, decoded here as Go's `URL.Path`
    /// is); `query` is the raw query string without `?`.
    pub fn parse(&self, method: &str, path: &str, query: Option<&str>) -> Result<RequestInfo, RequestInfoError> {
        self.parse_with(method, path, query, |_| ()).map(|(info, ())| info)
    }

    /// [`RequestInfoFactory::parse`], and `then` of the decoded path's segments (the ones
    /// [`match_route`] splits [`RequestInfo::path`] into), split once for both.
    fn parse_with<R>(
        &self,
        method: &str,
        path: &str,
        query: Option<&str>,
        then: impl FnOnce(&[&str]) -> R,
    ) -> Result<(RequestInfo, R), RequestInfoError> {
        let decoded = url::path_unescape(path).map_err(|_| RequestInfoError::InvalidPath(path.to_owned()))?;
        let info =
            RequestInfo { is_resource_request: false, path: decoded.to_string(), verb: method.to_ascii_lowercase(), ..Default::default() };
        with_segments(&decoded, |all| Ok((self.parse_segments(info, all, method, path, query)?, then(all))))
    }

    /// The rest of [`RequestInfoFactory::parse`], given the decoded path's segments.
    fn parse_segments(
        &self,
        mut info: RequestInfo,
        all: &[&str],
        method: &str,
        path: &str,
        query: Option<&str>,
    ) -> Result<RequestInfo, RequestInfoError> {
        // Every `parts[0]` below is in bounds: resource paths have at least one part after the
        // prefix, group, version and special verb (the length checks on the way say so). The
        // parts are slices of the decoded path, taken off the front as they are read; only the
        // fields kept are allocated.
        let mut parts = all;
        if parts.len() < 3 || !self.api_prefixes.iter().any(|p| p == parts[0]) {
            return Ok(info);
        }
        let api_prefix = parts[0];
        parts = &parts[1..];
        info.api_prefix = api_prefix.to_owned();

        if !self.groupless_api_prefixes.iter().any(|p| p == api_prefix) {
            // The prefix is consumed: this asks for group, version and resource.
            if parts.len() < 3 {
                return Ok(info);
            }
            info.api_group = parts[0].to_owned();
            parts = &parts[1..];
        }

        info.is_resource_request = true;
        info.api_version = parts[0].to_owned();
        parts = &parts[1..];

        if SPECIAL_VERBS.contains(&parts[0]) {
            if parts.len() < 2 {
                let url = match query {
                    Some(q) if !q.is_empty() => format!("{path}?{q}"),
                    _ => path.to_owned(),
                };
                return Err(RequestInfoError::NoKindOrNamespace(url));
            }
            info.verb = parts[0].to_owned();
            parts = &parts[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }

        // /namespaces/{namespace}/{resource}/...: make the parts relative to the resource,
        // unless what follows the namespace is one of its own subresources.
        if parts[0] == "namespaces" && parts.len() > 1 {
            info.namespace = parts[1].to_owned();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts = &parts[2..];
            }
        }

        // resource/name/subresource/anything/else
        if parts.len() >= 3 && !SPECIAL_VERBS_NO_SUBRESOURCES.contains(&info.verb.as_str()) {
            info.subresource = parts[2].to_owned();
        }
        if parts.len() >= 2 {
            info.name = parts[1].to_owned();
        }
        info.resource = parts[0].to_owned();
        info.parts = parts.iter().map(|part| (*part).to_owned()).collect();

        // Only a request without a name, or a watch, reads its query here.
        let values = if info.name.is_empty() || VERBS_WITH_SELECTORS.contains(&info.verb.as_str()) {
            url::parse_query(query.unwrap_or_default())
        } else {
            std::collections::BTreeMap::new()
        };
        let first = |key: &str| values.get(key).and_then(|v| v.first());

        // No name and a GET: a list, or a watch if asked. The name a `metadata.name=` field
        // selector pins is the request's name. If decoding the list options fails (a bad
        // selector, a `limit` or `timeoutSeconds` that is no int64), upstream resets them and
        // keeps only the raw `watch` flag.
        if info.name.is_empty() && info.verb == "get" {
            let (watch, name) = match list_options::decode_parameters(&values) {
                Ok(opts) => (opts.watch, opts.field_selector.requires_exact_match("metadata.name").map(str::to_owned)),
                Err(_) => (first("watch").is_some_and(|v| list_options::go_bool(v)), None),
            };
            info.verb = if watch { "watch" } else { "list" }.to_owned();
            if let Some(name) = name
                && is_valid_path_segment_name(&name)
            {
                info.name = name;
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        if VERBS_WITH_SELECTORS.contains(&info.verb.as_str()) {
            if let Some(v) = first("fieldSelector") {
                info.field_selector = v.clone();
            }
            if let Some(v) = first("labelSelector") {
                info.label_selector = v.clone();
            }
        }
        Ok(info)
    }

    /// [`RequestInfoFactory::parse`] of an `http` request's method and URI.
    pub fn parse_uri(&self, method: &http::Method, uri: &http::Uri) -> Result<RequestInfo, RequestInfoError> {
        self.parse(method.as_str(), uri.path(), uri.query())
    }
}

/// Parses with kube-apiserver's prefixes (`api`, `apis`).
pub fn parse(method: &str, path: &str, query: Option<&str>) -> Result<RequestInfo, RequestInfoError> {
    KUBE_APISERVER.parse(method, path, query)
}

/// [`parse`] and [`match_route`] of one request, its path split once: the chain's request-info
/// step, which every request passes.
pub fn parse_and_match(method: &str, path: &str, query: Option<&str>) -> Result<(RequestInfo, Option<&'static Route>), RequestInfoError> {
    KUBE_APISERVER.parse_with(method, path, query, |segments| route_of(segments, method))
}

static KUBE_APISERVER: std::sync::LazyLock<RequestInfoFactory> = std::sync::LazyLock::new(RequestInfoFactory::default);

/// Splits a path into its segments, ignoring leading and trailing slashes (upstream's
/// `splitPath`; inner empty segments are kept). Request info and route matching both split
/// with it, so they can never disagree about which segment is which.
fn path_segments(path: &str) -> impl Iterator<Item = &str> {
    let trimmed = path.trim_matches('/');
    // `[SLASH]`, not `'/'`: a one-`char` pattern finds each separator with a `memchr` call,
    // which costs more than it saves on segments this short (every request splits its path).
    trimmed.split([SLASH]).filter(move |_| !trimmed.is_empty())
}

const SLASH: char = '/';

/// Go's `cleanPath` (net/http's `ServeMux`): a leading slash added, `path.Clean`
/// ([`url::path_clean`]), and a trailing slash kept. A path that is already clean comes back
/// borrowed.
pub fn clean_path(path: &str) -> std::borrow::Cow<'_, str> {
    if is_clean(path) {
        return std::borrow::Cow::Borrowed(path);
    }
    let rooted = if path.starts_with('/') { std::borrow::Cow::Borrowed(path) } else { std::borrow::Cow::Owned(format!("/{path}")) };
    let mut clean = url::path_clean(&rooted);
    if rooted.ends_with('/') && clean != "/" {
        clean.push('/');
    }
    if clean == path { std::borrow::Cow::Borrowed(path) } else { std::borrow::Cow::Owned(clean) }
}

/// Whether [`clean_path`] leaves `path` as it is, without cleaning it (nearly every request's
/// path is clean): rooted, with no empty, `.` or `..` segment but a trailing slash's.
fn is_clean(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else { return false };
    let mut segments = rest.split([SLASH]).peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        if segment == "." || segment == ".." || (segment.is_empty() && !last) {
            return false;
        }
    }
    true
}

/// Where a request whose path is not clean is sent instead (`None` when it is clean), as Go's
/// `ServeMux` redirects it: the cleaned form of the *decoded* path, escaped again, with the
/// query kept. Cleaning the decoded path means an escaped `/`, `.` or `..` (`a%2F..%2Fb`) is
/// redirected too, so nothing after this step meets a path whose segments change meaning once
/// decoded. `Err` for a path with an invalid escape (400, as Go's server answers).
pub fn unclean_path_redirect(raw_path: &str, query: Option<&str>) -> Result<Option<String>, RequestInfoError> {
    let decoded = url::path_unescape(raw_path).map_err(|_| RequestInfoError::InvalidPath(raw_path.to_owned()))?;
    let clean = clean_path(&decoded);
    if clean == decoded {
        return Ok(None);
    }
    let mut location = url::escaped_path(&clean);
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        location.push('?');
        location.push_str(q);
    }
    Ok(Some(location))
}

/// Upstream's `path.IsValidPathSegmentName`: not `.`/`..`, no `/` or `%`.
fn is_valid_path_segment_name(name: &str) -> bool {
    path_segment_name_errors(name).is_empty()
}

/// Upstream's `path.IsValidPathSegmentName` with its messages: a name that becomes one segment
/// of a storage key or URL may not be `.` or `..` and may not contain `/` or `%`.
pub fn path_segment_name_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        vec![format!("may not be '{name}'")]
    } else {
        ["/", "%"].iter().filter(|bad| name.contains(*bad)).map(|bad| format!("may not contain '{bad}'")).collect()
    }
}

/// One segment of a route template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Segment {
    Literal(&'static str),
    /// `{name}`, `{namespace}`: exactly one segment.
    Param,
    /// `{path}` at the end: one or more segments.
    Rest,
}

type CompiledRoute = (Vec<Segment>, &'static Route);

/// Where a route of fixed length sits: its group-version (`None` outside any), its number of
/// segments and its method.
type Shape = (Option<(Name<'static>, &'static str)>, usize, &'static str);

/// The route templates, split into segments once and bucketed by [`Shape`]: a request is
/// matched against the few routes of its own group-version, length and method (a handful of
/// the ~1,100) and the routes ending in `{path}`.
struct CompiledRoutes {
    /// Routes without a `{path}` tail, by shape, sorted for binary search.
    fixed: Vec<(Shape, Bucket)>,
    /// Where each shape's bucket is in `fixed`.
    by_shape: rustc_hash::FxHashMap<Shape, usize>,
    /// Routes ending in `{path}` (a few dozen).
    tails: Vec<CompiledRoute>,
    /// Where the tails of each method are in `tails`: a request tries only its method's.
    tails_by_method: rustc_hash::FxHashMap<&'static str, Vec<usize>>,
}

/// The routes of one shape, in table order, and an index of them by their literal segments.
struct Bucket {
    routes: Vec<CompiledRoute>,
    /// The routes grouped by which of their segments are literal (a bucket has a few such
    /// patterns: a namespaced object, a watch of a namespaced collection, ...). Within a
    /// pattern, routes are found by a hash of their literals ([`literals_hash`]); a hit is
    /// still matched segment by segment.
    patterns: Vec<LiteralPattern>,
}

struct LiteralPattern {
    positions: Vec<usize>,
    /// Indices into [`Bucket::routes`] by the hash of the literals at `positions`.
    routes: rustc_hash::FxHashMap<u64, Vec<usize>>,
}

/// A hash of the segments at `positions` (all within `segments`): the same for a template's
/// literals and a path whose segments there are those literals.
fn literals_hash<'s>(segments: impl Iterator<Item = &'s str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    for segment in segments {
        segment.hash(&mut hasher);
    }
    hasher.finish()
}

impl Bucket {
    fn new(routes: Vec<CompiledRoute>) -> Bucket {
        let mut patterns: Vec<LiteralPattern> = Vec::new();
        for (index, (template, _)) in routes.iter().enumerate() {
            let positions: Vec<usize> = (0..template.len()).filter(|&i| matches!(template[i], Segment::Literal(_))).collect();
            let hash = literals_hash(positions.iter().map(|&i| match template[i] {
                Segment::Literal(literal) => literal,
                Segment::Param | Segment::Rest => "",
            }));
            let pattern = match patterns.iter().position(|p| p.positions == positions) {
                Some(at) => &mut patterns[at],
                None => {
                    patterns.push(LiteralPattern { positions, routes: Default::default() });
                    patterns.last_mut().expect("just pushed")
                }
            };
            pattern.routes.entry(hash).or_default().push(index);
        }
        Bucket { routes, patterns }
    }

    /// The bucket's routes that match `path` (of the bucket's length), with their scores and
    /// indices, in no particular order.
    fn matches<'b>(&'b self, path: &'b [&str]) -> impl Iterator<Item = ((usize, bool), usize, &'static Route)> + 'b {
        self.patterns.iter().flat_map(move |pattern| {
            let hash = literals_hash(pattern.positions.iter().map(|&i| path[i]));
            pattern.routes.get(&hash).into_iter().flatten().filter_map(move |&index| {
                let (template, route) = &self.routes[index];
                match_score(template, path).map(|score| (score, index, *route))
            })
        })
    }
}

/// The group and version a path or template starts with (`api/<v>`: group `""`;
/// `apis/<g>/<v>`), if its segments there are literal.
fn group_version_prefix<'a, S: Copy>(segments: &[S], literal: impl Fn(S) -> Option<&'a str>) -> Option<(&'a str, &'a str)> {
    match segments.first().copied().and_then(&literal)? {
        "api" => Some(("", literal(*segments.get(1)?)?)),
        "apis" => Some((literal(*segments.get(1)?)?, literal(*segments.get(2)?)?)),
        _ => None,
    }
}

/// Compiles the route table now rather than in the first request, which would wait for it: the
/// server has it done on another thread while it starts up.
pub fn compile_routes() {
    compiled_routes();
}

fn compiled_routes() -> &'static CompiledRoutes {
    static COMPILED: OnceLock<CompiledRoutes> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut fixed = std::collections::BTreeMap::<Shape, Vec<CompiledRoute>>::new();
        let mut tails = Vec::new();
        for route in ROUTES {
            let segments: Vec<Segment> = route
                .path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| match s {
                    "{path}" => Segment::Rest,
                    s if s.starts_with('{') && s.ends_with('}') => Segment::Param,
                    s => Segment::Literal(s),
                })
                .collect();
            if segments.contains(&Segment::Rest) {
                tails.push((segments, route));
                continue;
            }
            let group_version = group_version_prefix(&segments, |s| match s {
                Segment::Literal(l) => Some(l),
                _ => None,
            })
            .map(|(group, version)| (Name(group), version));
            fixed.entry((group_version, segments.len(), route.method)).or_default().push((segments, route));
        }
        let fixed: Vec<(Shape, Bucket)> = fixed.into_iter().map(|(shape, routes)| (shape, Bucket::new(routes))).collect();
        let by_shape = fixed.iter().enumerate().map(|(at, (shape, _))| (*shape, at)).collect();
        let mut tails_by_method = rustc_hash::FxHashMap::<_, Vec<usize>>::default();
        for (at, (_, route)) in tails.iter().enumerate() {
            tails_by_method.entry(route.method).or_default().push(at);
        }
        CompiledRoutes { fixed, by_shape, tails, tails_by_method }
    })
}

/// The compiled routes that may match `path` with `method` (any method when `None`): those of
/// its length in its group-version and outside any, and those ending in `{path}`.
fn candidate_routes<'m>(path: &[&str], method: Option<&'m str>) -> impl Iterator<Item = &'static CompiledRoute> + 'm {
    let compiled = compiled_routes();
    let len = path.len();
    // The buckets of one group-version and length, all methods: a contiguous run of `fixed`.
    let run = |group_version: Option<(Name<'_>, &str)>| {
        let start = compiled.fixed.partition_point(|((gv, l, _), _)| (*gv, *l) < (group_version, len));
        let end = compiled.fixed.partition_point(|((gv, l, _), _)| (*gv, *l) <= (group_version, len));
        &compiled.fixed[start..end]
    };
    let own = group_version_prefix(path, Some).map_or(&[][..], |(group, version)| run(Some((Name(group), version))));
    own.iter()
        .chain(run(None))
        .filter(move |((_, _, m), _)| method.is_none_or(|method| *m == method))
        .flat_map(|(_, bucket)| &bucket.routes)
        .chain(compiled.tails.iter().filter(move |(_, route)| method.is_none_or(|method| route.method == method)))
}

/// How well `template` matches `path`: `None` if not at all, else the number of literal
/// segments (more literals win, as in go-restful; a `{path}` tail loses to an exact match).
fn match_score(template: &[Segment], path: &[&str]) -> Option<(usize, bool)> {
    // A `{path}` tail takes one or more segments; every other template has the path's length.
    let fits = match template.last() {
        Some(Segment::Rest) => path.len() >= template.len(),
        _ => path.len() == template.len(),
    };
    if !fits {
        return None;
    }
    let mut literals = 0;
    for (i, seg) in template.iter().enumerate() {
        match seg {
            Segment::Rest => {
                return (path.len() > i).then_some((literals, false));
            }
            Segment::Literal(l) => {
                if path.get(i) != Some(l) {
                    return None;
                }
                literals += 1;
            }
            Segment::Param => {
                if path.get(i).is_none_or(|s| s.is_empty()) {
                    return None;
                }
            }
        }
    }
    (template.len() == path.len()).then_some((literals, true))
}

/// The route of the generated table a request hits: its path matched against the templates
/// segment by segment (`{name}`/`{namespace}` one segment, `{path}` the rest), a trailing slash
/// ignored, the method compared exactly except that `HEAD` falls back to the `GET` route. The
/// handler takes action, kind, scope and accepted patch types from [`Route::target`]; the
/// request's own verb (`watch` for `?watch=true` on a list route) is in [`RequestInfo::verb`].
/// Routes of every served group-version are matched; whether one is enabled is the caller's
/// check. `None` is a 404 (or, if another method matches, a 405).
pub fn match_route(info: &RequestInfo, method: &str) -> Option<&'static Route> {
    with_segments(&info.path, |path| route_of(path, method))
}

/// [`match_route`] of a path's segments.
fn route_of(path: &[&str], method: &str) -> Option<&'static Route> {
    find_route(path, method).or_else(|| if method == "HEAD" { find_route(path, "GET") } else { None })
}

/// Calls `f` with the segments of `path` ([`path_segments`]), gathered on the stack when they
/// are as few as every route's (matching runs for every request).
fn with_segments<R>(path: &str, f: impl FnOnce(&[&str]) -> R) -> R {
    const FEW: usize = 16;
    let mut few = [""; FEW];
    let mut segments = path_segments(path);
    for (len, slot) in few.iter_mut().enumerate() {
        match segments.next() {
            Some(segment) => *slot = segment,
            None => return f(&few[..len]),
        }
    }
    let all: Vec<&str> = few.into_iter().chain(segments).collect();
    f(&all)
}

/// The best match for `path` and `method`: most literal segments, and among equals the last in
/// the order the buckets are tried (own group-version, none, `{path}` tails) and the table's
/// order within one, as go-restful's sort leaves them.
fn find_route(path: &[&str], method: &str) -> Option<&'static Route> {
    let compiled = compiled_routes();
    let bucket = |group_version| compiled.by_shape.get(&(group_version, path.len(), method)).map(|&at| &compiled.fixed[at].1);
    let own = group_version_prefix(path, Some).and_then(|(group, version)| bucket(Some((Name(group), version))));
    let fixed = [own, bucket(None)]
        .into_iter()
        .enumerate()
        .filter_map(|(rank, bucket)| Some((rank, bucket?)))
        .flat_map(|(rank, bucket)| bucket.matches(path).map(move |(score, index, route)| ((score, rank, index), route)));
    let tails = compiled.tails_by_method.get(method).into_iter().flatten().filter_map(|&index| {
        let (template, route) = &compiled.tails[index];
        match_score(template, path).map(|score| ((score, 2, index), *route))
    });
    fixed.chain(tails).max_by_key(|(key, _)| *key).map(|(_, route)| route)
}

/// The generated route a request matched ([`match_route`] of its [`RequestInfo`] and method):
/// matched once by the chain's request-info step, for the handler and the metrics.
#[derive(Clone, Copy, Debug)]
pub struct MatchedRoute(pub Option<&'static Route>);

/// The methods some route accepts at this path, for a 405's `Allow` (empty: a 404).
pub fn allowed_methods(info: &RequestInfo) -> Vec<&'static str> {
    let path: Vec<&str> = path_segments(&info.path).collect();
    let mut methods: Vec<&'static str> = candidate_routes(&path, None)
        .filter(|(template, _)| match_score(template, &path).is_some())
        .map(|(_, route)| route.method)
        .collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index finds what trying every candidate in order finds, for paths made from every
    /// template with parameters that look like literals too.
    #[test]
    fn indexed_route_matching_agrees_with_trying_every_candidate() {
        let mut paths = std::collections::BTreeSet::new();
        for route in ROUTES {
            for fill in ["x", "namespaces", "status", "watch", "pods", ""] {
                let path: Vec<&str> = route
                    .path
                    .split('/')
                    .map(|segment| match segment {
                        "{path}" => "a/b",
                        s if s.starts_with('{') => fill,
                        s => s,
                    })
                    .collect();
                paths.insert(path.join("/"));
            }
        }
        let id = |route: Option<&'static Route>| route.map(|r| (r.path, r.method, r.operation_id));
        for path in &paths {
            let segments: Vec<&str> = path_segments(path).collect();
            for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
                let tried = candidate_routes(&segments, Some(method))
                    .filter_map(|(template, route)| match_score(template, &segments).map(|score| (score, *route)))
                    .max_by_key(|(score, _)| *score)
                    .map(|(_, route)| route);
                assert_eq!(id(find_route(&segments, method)), id(tried), "{method} {path}");
            }
        }
    }

    #[test]
    fn clean_path_is_gos() {
        // Cases from Go's path.Clean and net/http cleanPath tests.
        let cases = [
            ("", "/"),
            ("/", "/"),
            ("/api/v1/pods", "/api/v1/pods"),
            ("/api/v1/", "/api/v1/"),
            ("//api/v1", "/api/v1"),
            ("/api/v1//namespaces/x/configmaps", "/api/v1/namespaces/x/configmaps"),
            ("/api/v1/./namespaces", "/api/v1/namespaces"),
            ("/api/v1/namespaces/a/../b/pods", "/api/v1/namespaces/b/pods"),
            ("/../../api", "/api"),
            ("/api/..", "/"),
            ("/api/../", "/"),
            ("/a/b/.//", "/a/b/"),
            ("api/v1", "/api/v1"),
            ("/abc/def/../../..", "/"),
        ];
        for (input, want) in cases {
            assert_eq!(clean_path(input), want, "{input:?}");
            assert_eq!(is_clean(input), input == want, "{input:?}");
        }
        for path in ["/a/.", "/a/..", "/a//", "/.", "/..", "//", "/a/b.c/..d/", "/a/.b/"] {
            let mut slow = url::path_clean(path);
            if path.ends_with('/') && slow != "/" {
                slow.push('/');
            }
            assert_eq!(is_clean(path), slow == path, "{path:?}");
        }
        assert!(matches!(clean_path("/api/v1/pods"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn unclean_paths_are_redirected_to_their_clean_form() {
        let cases = [
            ("/api/v1/pods", None, None),
            ("/api/v1//namespaces/sa/configmaps", None, Some("/api/v1/namespaces/sa/configmaps")),
            ("/api/v1//namespaces/sa/configmaps", Some("dryRun=All"), Some("/api/v1/namespaces/sa/configmaps?dryRun=All")),
            // Escaped separators are cleaned after decoding, as Go's URL.Path is.
            ("/api/v1/namespaces/a%2F..%2Fb/pods", None, Some("/api/v1/namespaces/b/pods")),
            ("/api/v1/namespaces/%2E%2E/pods", None, Some("/api/v1/pods")),
            ("/api/v1/namespaces/x/pods/a%20b/..", None, Some("/api/v1/namespaces/x/pods")),
            // Characters Go escapes come back escaped.
            ("/api/v1/namespaces/x/pods/a%20b//", None, Some("/api/v1/namespaces/x/pods/a%20b/")),
        ];
        for (path, query, want) in cases {
            assert_eq!(unclean_path_redirect(path, query).unwrap().as_deref(), want, "{path:?}");
        }
        assert!(unclean_path_redirect("/api/v1/%zz", None).is_err());
    }

    /// Paths longer than the segments gathered on the stack parse and match as short ones.
    #[test]
    fn long_paths_parse_and_match() {
        let tail: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
        let path = format!("/api/v1/namespaces/x/pods/p/proxy/{}", tail.join("/"));
        let info = parse("GET", &path, None).unwrap();
        assert_eq!((info.namespace.as_str(), info.resource.as_str(), info.name.as_str()), ("x", "pods", "p"));
        assert_eq!(info.subresource, "proxy");
        assert_eq!(info.parts.len(), 3 + tail.len());
        assert_eq!(info.parts.last().map(String::as_str), Some("s19"));
        let route = match_route(&info, "GET").expect("the proxy route takes any tail");
        assert_eq!(route.path, "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}");
        let plain = parse("GET", &format!("/api/v1/namespaces/x/configmaps/{}", tail.join("/")), None).unwrap();
        assert!(match_route(&plain, "GET").is_none());
    }

    /// Parsing and matching at once answers as parsing, then matching the parsed path.
    #[test]
    fn parse_and_match_agrees_with_parse_then_match_route() {
        for (method, path, query) in [
            ("GET", "/api/v1/namespaces/default/pods/p", None),
            ("HEAD", "/apis/apps/v1/namespaces/x/deployments", Some("watch=true")),
            ("POST", "/api/v1/namespaces/x/pods/p/eviction", None),
            ("GET", "/api/v1/namespaces/x/pods/p/proxy/a/b", None),
            ("GET", "/api/v1/nodes/n%2Fx", None),
            ("GET", "/healthz", None),
            ("DELETE", "/api/v1//namespaces/x/configmaps", None),
        ] {
            let parsed = parse(method, path, query).unwrap();
            let route = match_route(&parsed, method);
            let (info, matched) = parse_and_match(method, path, query).unwrap();
            assert_eq!(info, parsed, "{method} {path}");
            assert_eq!(matched.map(|r| (r.path, r.method)), route.map(|r| (r.path, r.method)), "{method} {path}");
        }
        assert_eq!(parse_and_match("GET", "/api/v1/%zz", None).unwrap_err(), parse("GET", "/api/v1/%zz", None).unwrap_err());
    }

    #[test]
    fn request_info_and_routes_split_paths_alike() {
        // An empty segment is a segment for both (the chain redirects such paths first).
        let info = parse("DELETE", "/api/v1//namespaces/x/configmaps", None).unwrap();
        assert!(match_route(&info, "DELETE").is_none());
    }

    fn parts(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    fn split_url(url: &str) -> (&str, Option<&str>) {
        match url.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (url, None),
        }
    }

    /// Upstream's `TestGetAPIRequestInfo` success cases:
    /// (method, url, verb, prefix, group, version, namespace, resource, subresource, name, parts).
    #[test]
    #[allow(clippy::type_complexity)] // one flat row per upstream case reads best
    fn upstream_resource_cases() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, &str, &str, &str, &str, &str, &str, &str, &str, &[&str])] = &[
            ("GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
            ("GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", &["namespaces", "other"]),
            ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("PATCH", "/api/v1/namespaces/new-namespace", "patch", "api", "", "v1", "new-namespace", "namespaces", "", "new-namespace", &["namespaces", "new-namespace"]),
            // special verbs
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo", "subpath", "not", "a", "subresource"]),
            ("GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // subresources
            ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", &["pods", "foo", "status"]),
            ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", &["pods", "foo", "proxy", "subpath"]),
            ("PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", &["namespaces", "other", "finalize"]),
            ("PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", &["namespaces", "other", "status"]),
            // verbs
            ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            ("POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // deletecollection
            ("DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", &["nodes"]),
            ("DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
            ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            ("DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
            // groups and versions
            ("POST", "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
            ("POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions", "v1beta3", "other", "pods", "", "", &["pods"]),
            // and ours
            ("GET", "/apis/apps/v1/namespaces/default/deployments/web/scale", "get", "apis", "apps", "v1", "default", "deployments", "scale", "web", &["deployments", "web", "scale"]),
            ("POST", "/api/v1/namespaces/default/pods/p/exec", "create", "api", "", "v1", "default", "pods", "exec", "p", &["pods", "p", "exec"]),
            ("GET", "/api/v1/watch/namespaces/default/pods/p", "watch", "api", "", "v1", "default", "pods", "", "p", &["pods", "p"]),
            ("GET", "/api/v1/namespaces/a%2Fb/pods", "get", "api", "", "v1", "a", "b", "", "pods", &["b", "pods"]),
            ("OPTIONS", "/api/v1/nodes/n/proxy", "", "api", "", "v1", "", "nodes", "proxy", "n", &["nodes", "n", "proxy"]),
        ];
        for &(method, url, verb, prefix, group, version, namespace, resource, subresource, name, want_parts) in cases {
            let (path, query) = split_url(url);
            let info = parse(method, path, query).unwrap();
            assert!(info.is_resource_request, "{url}");
            let got = (
                info.verb.as_str(),
                info.api_prefix.as_str(),
                info.api_group.as_str(),
                info.api_version.as_str(),
                info.namespace.as_str(),
                info.resource.as_str(),
                info.subresource.as_str(),
                info.name.as_str(),
            );
            assert_eq!(got, (verb, prefix, group, version, namespace, resource, subresource, name), "{method} {url}");
            assert_eq!(info.parts, parts(want_parts), "{method} {url}");
        }
    }

    /// Upstream's error cases and `TestGetNonAPIRequestInfo`: non-resource requests keep the
    /// lowercase method as the verb.
    #[test]
    fn upstream_non_resource_cases() {
        let cases = [
            ("/api/version/resource", true),
            ("/apis/group/version/resource/name/subresource", true),
            ("/api/version/resource/name/subresource", true),
            ("/apis/batch/v1/job", true),
            ("/apis/batch/v1/job/foo", true),
            ("/apis/batch/v1/job/foo/scale", true),
            ("/not-api/version/resource", false),
            ("/apis/extensions/v1beta1", false),
            ("/apis/extensions/v1beta1/", false),
            ("/api/version", false),
            ("/api", false),
            ("/", false),
            ("", false),
            ("/api/version/", false),
            ("/apis/group/version/", false),
            ("/badprefix/version/resource", false),
            ("/apis/version/resource", false),
            ("/healthz", false),
            ("/version", false),
            ("/openapi/v2", false),
            ("/openapi/v3/apis/apps/v1", false),
        ];
        for (url, resource) in cases {
            let info = parse("GET", url, None).unwrap();
            assert_eq!(info.is_resource_request, resource, "{url}");
            if !resource {
                assert_eq!(info.verb, "get", "{url}");
                assert_eq!(info.path, url);
            }
        }
        let info = parse("POST", "/healthz", None).unwrap();
        assert_eq!(info.verb, "post");
    }

    /// Upstream's `TestFieldSelectorParsing`, plus escapes and failures that reset the options.
    #[test]
    fn field_selector_names() {
        let cases = [
            ("", "", "list"),
            ("fieldSelector=metadata.name=name1", "name1", "list"),
            ("fieldSelector=metadata.name%3Dname1", "name1", "list"),
            ("watch=true&fieldSelector=metadata.name=name1", "name1", "watch"),
            ("fieldSelector=foo=bar", "", "list"),
            ("fieldSelector=metadata.name=name1,foo", "", "list"),
            ("fieldSelector=metadata.name=name1,foo&watch=true", "", "watch"),
            ("fieldSelector=metadata.name=name1,foo&watch=false", "", "list"),
            ("fieldSelector=metadata.name==n,spec.nodeName=x", "n", "list"),
            ("fieldSelector=metadata.name!=n", "", "list"),
            ("fieldSelector=metadata.name=a/b", "", "list"),
            ("fieldSelector=metadata.name=..", "", "list"),
            ("fieldSelector=metadata.name=n&limit=abc", "", "list"),
            ("fieldSelector=metadata.name=n&limit=500", "n", "list"),
            ("fieldSelector=metadata.name=a\\,b", "a,b", "list"),
            // A label selector that does not parse resets the options too (its conversion is
            // part of decoding them).
            ("fieldSelector=metadata.name=n&labelSelector=%3D", "", "list"),
            ("fieldSelector=metadata.name=n&labelSelector=%3D&watch=1", "", "watch"),
            ("fieldSelector=metadata.name=n&timeoutSeconds=1.5", "", "list"),
            ("watch=", "", "watch"),
            ("watch=FALSE", "", "list"),
        ];
        for (query, name, verb) in cases {
            let info = parse("GET", "/apis/group/version/resource", Some(query)).unwrap();
            assert_eq!((info.name.as_str(), info.verb.as_str()), (name, verb), "{query}");
        }
    }

    #[test]
    fn selectors_are_recorded_for_collection_verbs() {
        let info = parse("GET", "/api/v1/pods", Some("labelSelector=app%3Dweb&fieldSelector=spec.nodeName=n1")).unwrap();
        assert_eq!(info.label_selector, "app=web");
        assert_eq!(info.field_selector, "spec.nodeName=n1");
        let info = parse("DELETE", "/api/v1/namespaces/d/pods", Some("labelSelector=a+b")).unwrap();
        assert_eq!((info.verb.as_str(), info.label_selector.as_str()), ("deletecollection", "a b"));
        let info = parse("GET", "/api/v1/namespaces/d/pods/p", Some("labelSelector=x")).unwrap();
        assert_eq!(info.label_selector, "");
    }

    #[test]
    fn errors() {
        let e = parse("GET", "/api/v1/watch", Some("a=b")).unwrap_err();
        assert_eq!(e.to_string(), "unable to determine kind and namespace from url, /api/v1/watch?a=b");
        let status = ApiError::from(e);
        assert_eq!(status.code, 500);
        assert_eq!(
            status.message,
            "Internal error occurred: failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch?a=b"
        );
        let e = parse("GET", "/api/v1/namespaces/%zz/pods", None).unwrap_err();
        assert!(matches!(e, RequestInfoError::InvalidPath(_)));
        assert_eq!(ApiError::from(e).code, 400);
    }

    fn route(method: &str, url: &str) -> Option<&'static Route> {
        let (path, query) = split_url(url);
        let info = parse(method, path, query).unwrap();
        match_route(&info, method)
    }

    /// (method, url, operation id of the matched route).
    #[test]
    fn routes_match_the_generated_table() {
        let cases = [
            ("GET", "/api/v1/pods", "listCoreV1PodForAllNamespaces"),
            ("GET", "/api/v1/pods?watch=true", "listCoreV1PodForAllNamespaces"),
            ("GET", "/api/v1/namespaces/default/pods", "listCoreV1NamespacedPod"),
            ("POST", "/api/v1/namespaces/default/pods", "createCoreV1NamespacedPod"),
            ("DELETE", "/api/v1/namespaces/default/pods", "deleteCoreV1CollectionNamespacedPod"),
            ("GET", "/api/v1/namespaces/default/pods/p", "readCoreV1NamespacedPod"),
            ("HEAD", "/api/v1/namespaces/default/pods/p", "readCoreV1NamespacedPod"),
            ("GET", "/api/v1/namespaces/default/pods/p/exec", "connectCoreV1GetNamespacedPodExec"),
            ("POST", "/api/v1/namespaces/default/pods/p/exec", "connectCoreV1PostNamespacedPodExec"),
            ("GET", "/api/v1/namespaces/default/pods/p/log", "readCoreV1NamespacedPodLog"),
            ("GET", "/api/v1/namespaces/default/pods/p/proxy", "connectCoreV1GetNamespacedPodProxy"),
            ("GET", "/api/v1/namespaces/default/pods/p/proxy/a/b", "connectCoreV1GetNamespacedPodProxyWithPath"),
            ("GET", "/apis/apps/v1/namespaces/default/deployments/web/scale", "readAppsV1NamespacedDeploymentScale"),
            ("PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", "patchAppsV1NamespacedDeploymentScale"),
            ("PUT", "/api/v1/namespaces/ns/finalize", "replaceCoreV1NamespaceFinalize"),
            ("GET", "/api/v1/namespaces/ns/status", "readCoreV1NamespaceStatus"),
            ("GET", "/api/v1/namespaces/ns", "readCoreV1Namespace"),
            ("GET", "/api/v1/nodes", "listCoreV1Node"),
            ("GET", "/api/v1/nodes/n1", "readCoreV1Node"),
            ("GET", "/api/v1/watch/namespaces/default/pods", "watchCoreV1NamespacedPodList"),
            ("GET", "/api/v1/watch/namespaces/default/pods/p", "watchCoreV1NamespacedPod"),
            ("GET", "/api/", "getCoreAPIVersions"),
            ("GET", "/api", "getCoreAPIVersions"),
            ("GET", "/api/v1", "getCoreV1APIResources"),
        ];
        for (method, url, op) in cases {
            let r = route(method, url).unwrap_or_else(|| panic!("no route for {method} {url}"));
            assert_eq!(r.operation_id, op, "{method} {url}");
        }
    }

    #[test]
    fn route_targets_carry_scope_and_kind() {
        let r = route("GET", "/api/v1/pods").unwrap().target.unwrap();
        assert_eq!((r.action, r.resource, r.namespaced, r.named), ("list", "pods", false, false));

        let r = route("POST", "/api/v1/namespaces/d/pods/p/exec").unwrap().target.unwrap();
        assert_eq!((r.action, r.subresource, r.kind.kind), ("connect", Some("exec"), "PodExecOptions"));

        let r = route("PUT", "/apis/apps/v1/namespaces/d/deployments/web/scale").unwrap().target.unwrap();
        assert_eq!((r.action, r.subresource, r.kind.group, r.kind.kind), ("put", Some("scale"), "autoscaling", "Scale"));

        let r = route("PUT", "/api/v1/namespaces/ns/finalize").unwrap().target.unwrap();
        assert_eq!((r.resource, r.subresource, r.namespaced, r.named), ("namespaces", Some("finalize"), false, true));

        let r = route("DELETE", "/api/v1/nodes/n1").unwrap().target.unwrap();
        assert_eq!((r.action, r.namespaced, r.kind.kind), ("delete", false, "Node"));

        let r = route("GET", "/api/v1/watch/namespaces/d/pods").unwrap().target.unwrap();
        assert_eq!((r.action, r.legacy_watch, r.namespaced), ("watchlist", true, true));

        let r = route("GET", "/api/v1/nodes/n/proxy/x").unwrap().target.unwrap();
        assert!(r.has_subpath);
    }

    #[test]
    fn unmatched_routes() {
        assert!(route("GET", "/api/v1/namespaces/default/widgets").is_none());
        assert!(route("POST", "/api/v1/componentstatuses").is_none());
        assert!(route("GET", "/api/v1/proxy/namespaces/d/pods/p").is_none());
        assert!(route("GET", "/api/v1/namespaces/default/pods/p/status/extra").is_none());
        let info = parse("POST", "/api/v1/componentstatuses", None).unwrap();
        assert_eq!(allowed_methods(&info), vec!["GET"]);
        let info = parse("GET", "/api/v1/namespaces/d/pods/p", None).unwrap();
        assert_eq!(allowed_methods(&info), vec!["DELETE", "GET", "PATCH", "PUT"]);
    }
}
