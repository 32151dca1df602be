//! `/metrics`: Prometheus text with upstream's metric names and labels for requests
//! (`apiserver_request_total`, `apiserver_request_duration_seconds`), recorded by a step of the
//! request chain.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::request_info::RequestInfo;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: String,
    pub dry_run: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: String,
    pub component: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestCodeLabels {
    pub verb: String,
    pub dry_run: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: String,
    pub component: String,
    pub code: String,
}

/// Upstream's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] =
    [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0];

pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestCodeLabels, Counter>,
    durations: Family<RequestLabels, Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestCodeLabels, Counter>::default();
        let durations =
            Family::<RequestLabels, Histogram>::new_with_constructor(|| Histogram::new(DURATION_BUCKETS));
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
        Self { registry: Mutex::new(registry), requests, durations }
    }
}

impl Metrics {
    /// Records one answered request.
    pub fn observe(&self, info: &RequestInfo, method: &str, dry_run: bool, code: u16, seconds: f64) {
        let labels = labels(info, method, dry_run);
        self.durations.get_or_create(&labels).observe(seconds);
        let RequestLabels { verb, dry_run, group, version, resource, subresource, scope, component } = labels;
        let with_code =
            RequestCodeLabels { verb, dry_run, group, version, resource, subresource, scope, component, code: code.to_string() };
        self.requests.get_or_create(&with_code).inc();
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

/// Upstream's label values: kube verbs in upper case (`LIST`, `WATCH`, ...), the request's scope.
fn labels(info: &RequestInfo, method: &str, dry_run: bool) -> RequestLabels {
    let verb = if info.is_resource_request { info.verb.to_uppercase() } else { method.to_uppercase() };
    let scope = if !info.is_resource_request {
        ""
    } else if !info.name.is_empty() && info.verb != "list" && info.verb != "watch" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else {
        "cluster"
    };
    RequestLabels {
        verb,
        dry_run: if dry_run { "All".into() } else { String::new() },
        group: info.api_group.clone(),
        version: info.api_version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        scope: scope.into(),
        component: "apiserver".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_upstream_names() {
        let metrics = Metrics::default();
        let info = crate::request_info::parse("GET", "/api/v1/namespaces/default/pods", None).unwrap();
        metrics.observe(&info, "GET", false, 200, 0.01);
        let text = metrics.render();
        assert!(text.contains("apiserver_request_total{"), "{text}");
        assert!(text.contains(r#"verb="LIST""#) && text.contains(r#"scope="namespace""#) && text.contains(r#"code="200""#), "{text}");
        assert!(text.contains("apiserver_request_duration_seconds_bucket{"), "{text}");
    }
}
