//! `/metrics`: Prometheus text with upstream's metric names and labels for requests
//! (`apiserver_request_total`, `apiserver_request_duration_seconds`), recorded by a step of the
//! request chain; the embedded store's commit counters when the server runs on it.

use std::sync::{Mutex, RwLock};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use kapi_apimachinery::scheme::{Route, RouteTarget};

use crate::request_info::RequestInfo;

/// The labels of `apiserver_request_duration_seconds`. Every value comes from a fixed set (the
/// route table, upstream's verbs and scopes), never from the request's path or method as sent,
/// so made-up URLs and methods cannot add series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: &'static str,
    pub dry_run: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    pub scope: &'static str,
    pub component: &'static str,
}

/// The labels of `apiserver_request_total`: [`RequestLabels`] and the answer's status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestCodeLabels {
    #[prometheus(flatten)]
    pub request: RequestLabels,
    pub code: u16,
}

/// Upstream's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] =
    [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];

pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestCodeLabels, Counter>,
    durations: Family<RequestLabels, Histogram>,
    /// The two series a request records into, by its labels' addresses and its code: the
    /// families' own look-ups hash and compare eight strings each, ~2,000 instructions a
    /// request. The labels are static strings, so there are as many keys as label sets the
    /// tables can make; equal labels at other addresses get a key of their own with the same
    /// series.
    series: RwLock<rustc_hash::FxHashMap<SeriesKey, (Histogram, Counter)>>,
}

/// [`RequestLabels`] by address and length, and the status code.
type SeriesKey = ([(usize, usize); 8], u16);

impl RequestLabels {
    fn addresses(&self) -> [(usize, usize); 8] {
        let RequestLabels { verb, dry_run, group, version, resource, subresource, scope, component } = self;
        [verb, dry_run, group, version, resource, subresource, scope, component].map(|label| (label.as_ptr() as usize, label.len()))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestCodeLabels, Counter>::default();
        let durations = Family::<RequestLabels, Histogram>::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
        let mut registry = Registry::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            durations.clone(),
        );
        Self { registry: Mutex::new(registry), requests, durations, series: RwLock::default() }
    }
}

impl Metrics {
    /// Records one answered request.
    pub fn observe(&self, labels: RequestLabels, code: u16, seconds: f64) {
        let key = (labels.addresses(), code);
        if let Some((duration, count)) = self.series.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&key) {
            duration.observe(seconds);
            count.inc();
            return;
        }
        let duration = self.durations.get_or_create(&labels).clone();
        let count = self.requests.get_or_create(&RequestCodeLabels { request: labels, code }).clone();
        duration.observe(seconds);
        count.inc();
        self.series.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(key, (duration, count));
    }

    /// Adds the embedded store's commit counters (`kapi_embedded_store_commits_total`,
    /// `kapi_embedded_store_writes_total`): writes ÷ commits is how many writes one fsync
    /// carried.
    pub fn register_embedded_store(&self, counters: crate::storage::CommitCounters) {
        let mut registry = self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        registry.register("kapi_embedded_store_commits", "Durable write transactions the embedded store committed", counters.commits);
        registry.register("kapi_embedded_store_writes", "Writes (revisions) those transactions recorded", counters.writes);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// The verbs upstream reports (`validRequestMethods`); any other is [`OTHER_VERB`].
const VALID_VERBS: &[&str] = &[
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];
/// Upstream's `OtherRequestMethod`.
const OTHER_VERB: &str = "other";
/// Subresources reported with the verb `CONNECT` (upstream's `validConnectRequests`).
const CONNECT_SUBRESOURCES: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];
/// Health endpoints upstream instruments with their path as the subresource (and no
/// component).
const HEALTH_PATHS: &[&str] = &["/healthz", "/livez", "/readyz"];
/// Upstream's `APIServerComponent`.
const COMPONENT: &str = "apiserver";

/// Upstream's label values (`MonitorRequest` as `InstrumentRouteFunc` calls it), all from bounded
/// sets: group, version, resource and subresource from the route of the generated table the
/// request matches (none when it matches no resource route), the scope from that route as
/// upstream's installer fixes it, the verb from upstream's fixed list (`cleanVerb`).
pub fn labels(info: &RequestInfo, route: Option<&'static Route>, method: &str, dry_run: bool) -> RequestLabels {
    let target = route.and_then(|route| route.target.as_ref());
    let scope = target.map_or("", route_scope);
    let method = method.to_ascii_uppercase();
    // `CanonicalVerb`: a GET (or HEAD) of a collection is a LIST.
    let canonical = match method.as_str() {
        "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST",
        "GET" | "HEAD" => "GET",
        other => other,
    };
    // `cleanVerb`/`CleanVerb`: watches (the legacy `/watch/` routes, `?watch=true`), connect
    // subresources, then the fixed list.
    let verb = if target.is_some_and(|t| matches!(t.action, "watch" | "watchlist"))
        || (info.verb == "watch" && matches!(canonical, "GET" | "LIST"))
    {
        "WATCH"
    } else if target.and_then(|t| t.subresource).is_some_and(|s| CONNECT_SUBRESOURCES.contains(&s)) {
        "CONNECT"
    } else {
        VALID_VERBS.iter().copied().find(|v| *v == canonical).unwrap_or(OTHER_VERB)
    };
    let dry_run = if dry_run { "All" } else { "" };
    match target {
        Some(t) => RequestLabels {
            verb,
            dry_run,
            group: t.group,
            version: t.version,
            resource: t.resource,
            subresource: t.subresource.unwrap_or(""),
            scope,
            component: COMPONENT,
        },
        None => {
            // Not a resource route: no resource labels. The health endpoints carry their path
            // as upstream's `healthz` instrumentation does.
            let health = HEALTH_PATHS.iter().copied().find(|p| *p == info.path);
            RequestLabels {
                verb,
                dry_run,
                group: "",
                version: "",
                resource: "",
                subresource: health.unwrap_or(""),
                scope: "",
                component: if health.is_some() { "" } else { COMPONENT },
            }
        }
    }
}

/// The scope upstream's installer gives a route's metrics: `resource` for a named object, a
/// create, or a `{path}` tail; otherwise `namespace` within one namespace and `cluster` across
/// all (or for cluster-scoped resources).
fn route_scope(target: &RouteTarget) -> &'static str {
    if target.named || target.has_subpath || target.action == "post" {
        "resource"
    } else if target.namespaced {
        "namespace"
    } else {
        "cluster"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observe(metrics: &Metrics, method: &str, path: &str, query: Option<&str>) {
        let info = crate::request_info::parse(method, path, query).unwrap_or_default();
        metrics.observe(labels(&info, crate::request_info::match_route(&info, method), method, false), 404, 0.001);
    }

    fn series(metrics: &Metrics) -> usize {
        metrics.render().lines().filter(|l| l.starts_with("apiserver_request_total{")).count()
    }

    fn labels_of(method: &str, path: &str, query: Option<&str>) -> RequestLabels {
        let info = crate::request_info::parse(method, path, query).unwrap();
        labels(&info, crate::request_info::match_route(&info, method), method, false)
    }

    #[test]
    fn renders_upstream_names() {
        let metrics = Metrics::default();
        let info = crate::request_info::parse("GET", "/api/v1/namespaces/default/pods", None).unwrap();
        metrics.observe(labels(&info, crate::request_info::match_route(&info, "GET"), "GET", false), 200, 0.01);
        let text = metrics.render();
        assert!(text.contains("apiserver_request_total{"), "{text}");
        assert!(text.contains(r#"verb="LIST""#) && text.contains(r#"scope="namespace""#) && text.contains(r#"code="200""#), "{text}");
        assert!(text.contains("apiserver_request_duration_seconds_bucket{"), "{text}");
    }

    /// The memo of series is keyed by the labels' addresses: equal labels at other addresses
    /// (here copies leaked for the test) count into the same series, and every answer counts.
    #[test]
    fn equal_labels_anywhere_count_into_one_series() {
        let metrics = Metrics::default();
        let original = labels_of("GET", "/api/v1/namespaces/default/pods/p", None);
        let copy = |label: &'static str| -> &'static str { Box::leak(label.to_owned().into_boxed_str()) };
        let copied = RequestLabels {
            verb: copy(original.verb),
            dry_run: copy(original.dry_run),
            group: copy(original.group),
            version: copy(original.version),
            resource: copy(original.resource),
            subresource: copy(original.subresource),
            scope: copy(original.scope),
            component: copy(original.component),
        };
        assert_ne!(original.addresses(), copied.addresses());
        for labels in [original.clone(), copied, original.clone()] {
            metrics.observe(labels, 200, 0.001);
        }
        metrics.observe(original, 404, 0.001);
        let text = metrics.render();
        let totals: Vec<&str> = text.lines().filter(|l| l.starts_with("apiserver_request_total{")).collect();
        assert_eq!(totals.len(), 2, "{text}");
        assert!(totals.iter().any(|l| l.contains(r#"code="200""#) && l.ends_with(" 3")), "{text}");
        assert!(totals.iter().any(|l| l.contains(r#"code="404""#) && l.ends_with(" 1")), "{text}");
        assert!(text.lines().any(|l| l.starts_with("apiserver_request_duration_seconds_count{") && l.ends_with(" 4")), "{text}");
    }

    #[test]
    fn renders_the_embedded_store_counters() {
        let metrics = Metrics::default();
        let counters = crate::storage::CommitCounters::default();
        metrics.register_embedded_store(counters.clone());
        counters.commits.inc();
        counters.writes.inc_by(3);
        let text = metrics.render();
        assert!(text.contains("kapi_embedded_store_commits_total 1\n"), "{text}");
        assert!(text.contains("kapi_embedded_store_writes_total 3\n"), "{text}");
    }

    #[test]
    fn labels_come_from_the_matched_route() {
        let l = labels_of("GET", "/apis/apps/v1/namespaces/ns-1/deployments/web-7f9", None);
        assert_eq!((l.verb, l.group, l.version, l.resource, l.subresource, l.scope), ("GET", "apps", "v1", "deployments", "", "resource"));
        let l = labels_of("GET", "/api/v1/pods", Some("watch=true"));
        assert_eq!((l.verb, l.resource, l.scope), ("WATCH", "pods", "cluster"));
        let l = labels_of("GET", "/api/v1/watch/namespaces/x/configmaps", None);
        assert_eq!((l.verb, l.resource, l.scope), ("WATCH", "configmaps", "namespace"));
        // Creates are `POST` with the resource scope, as upstream's installer sets them.
        let l = labels_of("POST", "/api/v1/namespaces/x/configmaps", None);
        assert_eq!((l.verb, l.resource, l.scope), ("POST", "configmaps", "resource"));
        let l = labels_of("PUT", "/apis/apps/v1/namespaces/x/deployments/d/status", None);
        assert_eq!((l.verb, l.resource, l.subresource, l.scope), ("PUT", "deployments", "status", "resource"));
        let l = labels_of("DELETE", "/api/v1/namespaces/x/configmaps", None);
        assert_eq!((l.verb, l.scope), ("DELETE", "namespace"));
        let l = labels_of("GET", "/api/v1/namespaces/x/pods/p/log", None);
        assert_eq!((l.verb, l.subresource), ("CONNECT", "log"));
        let l = labels_of("HEAD", "/api/v1/nodes", None);
        assert_eq!((l.verb, l.scope), ("LIST", "cluster"));
        // A method upstream does not know is `other` (and matches no route).
        let l = labels_of("BREW", "/api/v1/namespaces/x/configmaps/c", None);
        assert_eq!((l.verb, l.resource), ("other", ""));
        // No route: no resource labels at all.
        let l = labels_of("GET", "/api/v1/namespaces/x/madeups/y", None);
        assert_eq!((l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component), ("GET", "", "", "", "", "", "apiserver"));
        let l = labels_of("GET", "/healthz", None);
        assert_eq!((l.subresource, l.component), ("/healthz", ""));
    }

    #[test]
    fn made_up_requests_add_no_series() {
        let metrics = Metrics::default();
        // Every shape of path at least once, to count what a fixed set of labels gives.
        for (method, path) in [
            ("GET", "/x"),
            ("GET", "/api/v1/namespaces/a/madeup"),
            ("GET", "/apis/made.up/v1/things"),
            ("GET", "/api/v1/namespaces/a/configmaps/b"),
            ("FOO", "/x"),
        ] {
            observe(&metrics, method, path, None);
        }
        let before = series(&metrics);
        for i in 0..1000 {
            let paths = [
                format!("/made-up-{i}"),
                format!("/api/v1/namespaces/ns-{i}/madeup-{i}/obj-{i}/sub-{i}"),
                format!("/apis/group-{i}.example/v{i}/things-{i}"),
                format!("/api/v1/namespaces/ns-{i}/configmaps/name-{i}"),
                format!("/healthz/x-{i}"),
                format!("/api/v1/namespaces/ns-{i}/pods/p/madeup-{i}"),
            ];
            let methods = [format!("M{i}"), "GET".to_owned()];
            for path in &paths {
                for method in &methods {
                    observe(&metrics, method, path, Some(&format!("watch={i}&timeoutSeconds={i}")));
                }
            }
        }
        let after = series(&metrics);
        // At most the verbs a made-up request can be reported with (GET, WATCH, other) for
        // the route and no-route label sets.
        assert!(after <= before + 4, "{before} series before, {after} after");
    }
}
