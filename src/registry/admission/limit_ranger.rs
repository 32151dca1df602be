//! `LimitRanger` (`plugin/pkg/admission/limitranger`): the LimitRanges of a namespace give its
//! new pods' containers their default requests and limits (mutating phase), and bound what new
//! pods and claims may ask for (validating phase): each `Container` item's min, max and
//! limit-to-request ratio per container, a `Pod` item's per pod (its containers summed, init
//! containers as the scheduler counts them), a `PersistentVolumeClaim` item's min and max
//! storage request. A refusal is upstream's 403 (`pods "web" is forbidden: maximum cpu usage per
//! Container is 1, but limit is 2`).
//!
//! As upstream, pod updates are not checked (their containers' resources cannot change but
//! through `resize`), nor is anything about an object being deleted. Not built: the checks of
//! the `resize` subresource.

use std::collections::BTreeMap;

use kapi_apimachinery::Quantity;
use serde_json::{Value, json};

use super::{Attributes, KindPlugin, Operation, Plugin};
use crate::registry::Rejection;
use crate::registry::strategy::HookFuture;
use crate::status::ApiError;

/// The plugin in the chain.
pub struct LimitRanger;

/// The annotation that records the defaults set (`limitRangerAnnotation`).
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// A resource list (`requests`, `limits`, a limit item's `min` ...) by resource name; values
/// that are not quantities are left to validation.
type Resources = BTreeMap<String, Quantity>;

/// What the plugin looks at (`SupportsAttributes`): new objects of the resources whose
/// strategies name its pod rules, new or updated ones of those naming its claim rules; not
/// subresources.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subject {
    Pod,
    Claim,
}

fn subject(attributes: &Attributes<'_>) -> Result<Option<Subject>, ApiError> {
    let target = &attributes.target;
    if target.subresource.is_some() {
        return Ok(None);
    }
    // An object being deleted is left alone.
    if let Some(old) = attributes.old
        && old.is_being_deleted()?
    {
        return Ok(None);
    }
    Ok(match attributes.operation {
        Operation::Create if super::acts_on(KindPlugin::LimitRangerPods, attributes.strategy) => Some(Subject::Pod),
        Operation::Create | Operation::Update if super::acts_on(KindPlugin::LimitRangerClaims, attributes.strategy) => Some(Subject::Claim),
        _ => None,
    })
}

impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }

    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            if subject(attributes)? != Some(Subject::Pod) {
                return Ok(());
            }
            let ranges = limit_ranges(attributes).await?;
            if let Some(pod) = attributes.object.as_deref_mut().filter(|_| !ranges.is_empty()) {
                let pod = pod.value_mut()?;
                for range in &ranges {
                    set_default_resources(range, pod);
                }
            }
            Ok(())
        })
    }

    fn validate<'a>(&'a self, attributes: &'a Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            let Some(subject) = subject(attributes)? else { return Ok(()) };
            let Some(object) = attributes.object.as_deref() else { return Ok(()) };
            // The object is read as JSON only when the namespace has ranges to check it against.
            for range in &limit_ranges(attributes).await? {
                let errors = match subject {
                    Subject::Pod => pod_errors(range, object.value()?),
                    Subject::Claim => claim_errors(range, object.value()?),
                };
                if let Some(message) = crate::status::aggregate(errors.into_iter()) {
                    return Err(attributes.target.refuse(Rejection::Forbidden(message)));
                }
            }
            Ok(())
        })
    }
}

/// The namespace's LimitRanges as cached (upstream's plugin reads them from an informer).
async fn limit_ranges(attributes: &Attributes<'_>) -> Result<Vec<Value>, ApiError> {
    let key = crate::registry::keys::key("", "limitranges", Some(attributes.target.namespace), None);
    let options = crate::storage::ListOptions { not_older_than: Some(0), ..Default::default() };
    let listed = attributes.store.list(&key, options).await.map_err(|e| ApiError::internal(format!("listing limit ranges: {e}")))?;
    Ok(listed
        .kvs
        .iter()
        .filter_map(|kv| crate::registry::store::watched::stored_object(kv).ok())
        .map(|range| range.object().clone())
        .collect())
}

/// The range's items of one type (`Container`, `Pod`, `PersistentVolumeClaim`).
fn items<'r>(range: &'r Value, kind: &'r str) -> impl Iterator<Item = &'r Value> + 'r {
    range["spec"]["limits"].as_array().into_iter().flatten().filter(move |item| item["type"] == kind)
}

fn resources(list: &Value) -> Resources {
    let Some(list) = list.as_object() else { return Resources::new() };
    list.iter().filter_map(|(name, q)| Some((name.clone(), q.as_str().and_then(|q| Quantity::parse(q).ok())?))).collect()
}

/// `PodMutateLimitFunc`: the range's container defaults (`defaultRequest`, `default`) for every
/// container and init container resource that has none, recorded in the pod's annotation.
fn set_default_resources(range: &Value, pod: &mut Value) {
    let (mut requests, mut limits) = (serde_json::Map::new(), serde_json::Map::new());
    for item in items(range, "Container") {
        requests.extend(item["defaultRequest"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
        limits.extend(item["default"].as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut notes = Vec::new();
    for (list, what) in [("containers", "container"), ("initContainers", "init container")] {
        let Some(containers) = pod["spec"][list].as_array_mut() else { continue };
        for container in containers {
            let name = container["name"].as_str().unwrap_or_default().to_owned();
            for (defaults, field, noun) in [(&requests, "requests", "request"), (&limits, "limits", "limit")] {
                let mut set: Vec<&str> = Vec::new();
                for (resource, value) in defaults {
                    if container["resources"][field].get(resource).is_none() {
                        container["resources"][field][resource] = value.clone();
                        set.push(resource);
                    }
                }
                if !set.is_empty() {
                    set.sort_unstable();
                    notes.push(format!("{} {noun} for {what} {name}", set.join(", ")));
                }
            }
        }
    }
    if !notes.is_empty() {
        pod["metadata"]["annotations"][ANNOTATION] = json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
    }
}

/// `PodValidateLimitFunc`: each container against the range's `Container` items, the pod's
/// totals against its `Pod` items.
fn pod_errors(range: &Value, pod: &Value) -> Vec<String> {
    let containers = |list: &str| pod["spec"][list].as_array().map_or(&[][..], Vec::as_slice);
    let (regular, init) = (containers("containers"), containers("initContainers"));
    let mut errors = Vec::new();
    for item in items(range, "Container") {
        for container in regular.iter().chain(init) {
            let requests = resources(&container["resources"]["requests"]);
            let limits = resources(&container["resources"]["limits"]);
            check_item(item, "Container", &requests, &limits, &mut errors);
        }
    }
    for item in items(range, "Pod") {
        let (requests, limits) = (pod_total(regular, init, "requests"), pod_total(regular, init, "limits"));
        check_item(item, "Pod", &requests, &limits, &mut errors);
    }
    errors
}

/// A pod's requests or limits as the scheduler counts them (`podRequests`, `podLimits`): its
/// containers and sidecars (init containers that restart always) summed, or, where more, the
/// most any one-off init container needs with the sidecars started before it.
fn pod_total(containers: &[Value], init: &[Value], field: &str) -> Resources {
    let mut total = Resources::new();
    for container in containers {
        add(&mut total, &resources(&container["resources"][field]));
    }
    let (mut sidecars, mut init_peak) = (Resources::new(), Resources::new());
    for container in init {
        let own = resources(&container["resources"][field]);
        let needs = if container["restartPolicy"] == "Always" {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut needs = own;
            add(&mut needs, &sidecars);
            needs
        };
        for (name, quantity) in needs {
            if init_peak.get(&name).is_none_or(|peak| quantity > *peak) {
                init_peak.insert(name, quantity);
            }
        }
    }
    for (name, quantity) in init_peak {
        if total.get(&name).is_none_or(|sum| quantity > *sum) {
            total.insert(name, quantity);
        }
    }
    total
}

fn add(total: &mut Resources, more: &Resources) {
    for (name, quantity) in more {
        let sum = match total.get(name) {
            Some(sum) => sum.checked_add(quantity).unwrap_or_else(|| sum.clone()),
            None => quantity.clone(),
        };
        total.insert(name.clone(), sum);
    }
}

/// One limit item's min, max and limit-to-request ratio against requests and limits.
fn check_item(item: &Value, limit_type: &str, requests: &Resources, limits: &Resources, errors: &mut Vec<String>) {
    for (name, enforced) in resources(&item["min"]) {
        errors.extend(min_error(limit_type, &name, &enforced, requests, limits));
    }
    for (name, enforced) in resources(&item["max"]) {
        errors.extend(max_error(limit_type, &name, &enforced, requests, limits));
    }
    for (name, enforced) in resources(&item["maxLimitRequestRatio"]) {
        errors.extend(ratio_error(limit_type, &name, &enforced, requests, limits));
    }
}

/// `PersistentVolumeClaimValidateLimitFunc`: the claim's storage requests against the range's
/// `PersistentVolumeClaim` items (claims have no defaults; their limits are not user input).
fn claim_errors(range: &Value, claim: &Value) -> Vec<String> {
    let requests = resources(&claim["spec"]["resources"]["requests"]);
    let mut errors = Vec::new();
    for item in items(range, "PersistentVolumeClaim") {
        for (name, enforced) in resources(&item["min"]) {
            errors.extend(min_error("PersistentVolumeClaim", &name, &enforced, &requests, &Resources::new()));
        }
        for (name, enforced) in resources(&item["max"]) {
            match requests.get(&name) {
                None => errors.push(format!("maximum {name} usage per PersistentVolumeClaim is {enforced}.  No request is specified")),
                Some(request) if request > &enforced => {
                    errors.push(format!("maximum {name} usage per PersistentVolumeClaim is {enforced}, but request is {request}"))
                }
                Some(_) => {}
            }
        }
    }
    errors
}

/// `minConstraint`.
fn min_error(limit_type: &str, name: &str, enforced: &Quantity, requests: &Resources, limits: &Resources) -> Option<String> {
    let Some(request) = requests.get(name) else {
        return Some(format!("minimum {name} usage per {limit_type} is {enforced}.  No request is specified"));
    };
    if enforced > request {
        return Some(format!("minimum {name} usage per {limit_type} is {enforced}, but request is {request}"));
    }
    match limits.get(name) {
        Some(limit) if enforced > limit => Some(format!("minimum {name} usage per {limit_type} is {enforced}, but limit is {limit}")),
        _ => None,
    }
}

/// `maxConstraint`.
fn max_error(limit_type: &str, name: &str, enforced: &Quantity, requests: &Resources, limits: &Resources) -> Option<String> {
    let Some(limit) = limits.get(name) else {
        return Some(format!("maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"));
    };
    if limit > enforced {
        return Some(format!("maximum {name} usage per {limit_type} is {enforced}, but limit is {limit}"));
    }
    match requests.get(name) {
        Some(request) if request > enforced => {
            Some(format!("maximum {name} usage per {limit_type} is {enforced}, but request is {request}"))
        }
        _ => None,
    }
}

/// `limitRequestRatioConstraint`: the ratio of thousandths (whole units where thousandths
/// would overflow, `requestLimitEnforcedValues`), shown as Go's `%f`.
fn ratio_error(limit_type: &str, name: &str, enforced: &Quantity, requests: &Resources, limits: &Resources) -> Option<String> {
    let request = requests.get(name).filter(|q| !q.is_zero());
    let Some(request) = request else {
        return Some(format!(
            "{name} max limit to request ratio per {limit_type} is {enforced}, but no request is specified or request is 0"
        ));
    };
    let Some(limit) = limits.get(name).filter(|q| !q.is_zero()) else {
        return Some(format!("{name} max limit to request ratio per {limit_type} is {enforced}, but no limit is specified or limit is 0"));
    };
    const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;
    let whole = [request.value(), limit.value(), enforced.value()];
    let [request_value, limit_value, enforced_value] = if whole.iter().all(|v| *v <= MAX_MILLI_VALUE) {
        [request.milli_value(), limit.milli_value(), enforced.milli_value()]
    } else {
        whole
    };
    let observed = limit_value as f64 / request_value as f64;
    let allowed = if enforced_value == enforced.value() { enforced_value as f64 } else { enforced_value as f64 / 1000.0 };
    (observed > allowed)
        .then(|| format!("{name} max limit to request ratio per {limit_type} is {enforced}, but provided ratio is {observed:.6}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range() -> Value {
        json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "250m"},
             "max": {"cpu": "1"}, "min": {"cpu": "100m"}, "maxLimitRequestRatio": {"cpu": "4"}},
            {"type": "Pod", "max": {"memory": "1Gi"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
        ]}})
    }

    #[test]
    fn containers_get_the_defaults_they_lack_and_the_pod_records_them() {
        let mut pod = json!({"metadata": {"name": "web"}, "spec": {
            "containers": [{"name": "app", "resources": {"limits": {"cpu": "800m"}}}],
            "initContainers": [{"name": "setup"}],
        }});
        set_default_resources(&range(), &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "800m", "memory": "256Mi"}, "requests": {"cpu": "250m"}})
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "250m"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container app; memory limit for container app; \
             cpu request for init container setup; cpu, memory limit for init container setup"
        );
        // A pod that lacks nothing is not annotated.
        let mut full = pod.clone();
        full["metadata"]["annotations"] = json!({});
        set_default_resources(&range(), &mut full);
        assert_eq!(full["metadata"]["annotations"], json!({}));
    }

    #[test]
    fn containers_and_pods_are_held_to_the_items_bounds() {
        let pod = |cpu_request: &str, cpu_limit: &str, memory: &str| {
            json!({"spec": {"containers": [
                {"name": "a", "resources": {"requests": {"cpu": cpu_request}, "limits": {"cpu": cpu_limit, "memory": memory}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "400m", "memory": memory}}},
            ]}})
        };
        assert!(pod_errors(&range(), &pod("250m", "500m", "256Mi")).is_empty());
        assert_eq!(
            pod_errors(&range(), &pod("50m", "2", "600Mi")),
            [
                "minimum cpu usage per Container is 100m, but request is 50m",
                "maximum cpu usage per Container is 1, but limit is 2",
                "cpu max limit to request ratio per Container is 4, but provided ratio is 40.000000",
                "maximum memory usage per Pod is 1Gi, but limit is 1200Mi",
            ]
        );
    }

    #[test]
    fn pod_totals_count_sidecars_and_the_largest_init_container() {
        let list = |cpu: &str| json!({"resources": {"limits": {"cpu": cpu}}});
        let mut sidecar = list("300m");
        sidecar["restartPolicy"] = json!("Always");
        let total = pod_total(&[list("1"), list("500m")], &[list("2"), sidecar, list("1")], "limits");
        // Containers 1.5 + sidecar 300m = 1.8; the first init container alone needs 2.
        assert_eq!(total["cpu"].to_string(), "2");
        let total = pod_total(&[list("2")], &[list("1")], "limits");
        assert_eq!(total["cpu"].to_string(), "2");
    }

    #[test]
    fn claims_are_held_to_their_storage_bounds() {
        let claim = |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
        assert!(claim_errors(&range(), &claim("5Gi")).is_empty());
        assert_eq!(
            claim_errors(&range(), &claim("500Mi")),
            ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"]
        );
        assert_eq!(
            claim_errors(&range(), &claim("20Gi")),
            ["maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"]
        );
    }

    #[test]
    fn ratios_compare_thousandths() {
        let requests: Resources = [("cpu".to_owned(), Quantity::parse("100m").unwrap())].into();
        let limits: Resources = [("cpu".to_owned(), Quantity::parse("300m").unwrap())].into();
        let enforced = Quantity::parse("2").unwrap();
        assert_eq!(
            ratio_error("Container", "cpu", &enforced, &requests, &limits).unwrap(),
            "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000"
        );
        assert!(ratio_error("Container", "cpu", &Quantity::parse("3").unwrap(), &requests, &limits).is_none());
        // An enforced ratio below one.
        let enforced = Quantity::parse("500m").unwrap();
        assert!(ratio_error("Container", "cpu", &enforced, &limits, &requests).is_none());
        assert_eq!(
            ratio_error("Container", "cpu", &enforced, &requests, &requests).unwrap(),
            "cpu max limit to request ratio per Container is 500m, but provided ratio is 1.000000"
        );
    }
}
