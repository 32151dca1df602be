//! Round-trip property tests of the generated hub conversions (issue 4, item 6).
//!
//! Every kind served in two or more versions — enumerated from the generated scheme
//! (`RESOURCES`, grouped by the storage kind of `STORAGE_VERSIONS`, so core `Event` and
//! `events.k8s.io` `Event` form one family) — gets random objects in each of its versions, generated
//! from the pinned OpenAPI document (`api-specs/<version>/openapi/swagger.json`: the schema of the
//! kind, followed through `$ref`s, with the scalar types the Rust types carry). Each object is
//! first decoded through its generated type (the canonical form the server stores), then:
//!
//! - external → hub → external must give it back unchanged;
//! - the internal object as JSON (the hub serialised, what validation and admission read) must
//!   convert back exactly as the hub itself does;
//! - A → hub → B → hub → A must give it back unchanged, except for the differences upstream's own
//!   conversions have (fields only one version has and no annotation preserves): [`LOSSY`] lists
//!   them with the reason; any other difference fails.
//!
//! Cases per (kind, version) default to [`CASES`] (`KAPI_ROUNDTRIP_CASES` overrides), which keeps
//! the whole file within a few seconds; the seed is fixed unless `KAPI_ROUNDTRIP_RANDOM` is set.

mod common;

use std::collections::BTreeMap;

use kapi::registry::objects::{Kind, convert_via_hub, decode, from_internal, to_internal};
use kapi_apimachinery::codec::Format;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Just, Strategy};
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};

const CASES: u32 = 64;
/// Objects nest at most this deep (then empty objects, empty lists).
const MAX_DEPTH: u32 = 9;

/// Differences upstream's conversions have too: `(group, kind, from version, via version,
/// path, why)`. A path ends at the field that differs; `[]` stands for any list index or map key;
/// a difference at the path or below it is allowed. `*` matches any version.
const LOSSY: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "",
        "Event",
        "v1",
        "v1",
        "series",
        "events.k8s.io/v1 requires `series.count` and `series.lastObservedTime` where core/v1 has them \
         optional (Go: non-pointer `omitempty`): an absent count comes back as 0 (upstream's JSON omits \
         the zero count again; kapi keeps `0`)",
    ),
    (
        "events.k8s.io",
        "Event",
        "v1",
        "*",
        "regarding",
        "core/v1's `involvedObject` is a Go struct (never nil): an absent `regarding` comes back `{}`, \
         which upstream writes too",
    ),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v2",
        "v1",
        "status.currentReplicas",
        "required in v1 (Go `int32`), omitempty in v2: absent comes back as 0",
    ),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v1",
        "hub",
        "spec.targetCPUUtilizationPercentage",
        "v1 → internal makes v1's implicit 80% CPU target explicit when there is no metric at all \
         (upstream's Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler)",
    ),
    ("autoscaling", "HorizontalPodAutoscaler", "v1", "v2", "spec.targetCPUUtilizationPercentage", "the same implicit 80% CPU target"),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v1",
        "*",
        "metadata.annotations.autoscaling.alpha.kubernetes.io/current-metrics",
        "v1's current CPU utilization becomes a current metric, which upstream always saves in the \
         current-metrics annotation (with the raw value)",
    ),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v2",
        "v1",
        "spec.metrics",
        "autoscaling/v1's annotation keeps the metrics in v1's (v2beta1) shapes, which cannot hold every \
         target (a Resource metric's `Value`, an Object metric without a value); the CPU utilization \
         target moves last; with no metric, the implicit 80% CPU target appears",
    ),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v2",
        "v1",
        "status.currentMetrics",
        "the current-metrics annotation is in v1's shapes (a Quantity that v1 requires comes back `0`, \
         a value v1 has no field for is dropped)",
    ),
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
        "v2",
        "v1",
        "spec.behavior",
        "an empty behavior (`{}`, both directions nil) is written to the annotation but not restored: \
         upstream only moves a non-empty behavior back from it",
    ),
    // resource.k8s.io/v1beta1 (upstream's pkg/apis/resource/v1beta1/conversion.go).
    (
        "resource.k8s.io",
        "ResourceClaim",
        "*",
        "v1beta1",
        "spec.devices.requests[].exactly",
        "v1beta1 → internal builds `exactly` only when one of v1beta1's flat request fields is set \
         (hasAnyMainRequestFieldsSet): an all-empty `exactly` is dropped",
    ),
    (
        "resource.k8s.io",
        "ResourceClaimTemplate",
        "*",
        "v1beta1",
        "spec.spec.devices.requests[].exactly",
        "the same (hasAnyMainRequestFieldsSet)",
    ),
    (
        "resource.k8s.io",
        "ResourceSlice",
        "v1beta1",
        "*",
        "spec.devices[].basic",
        "internal → v1beta1 always sets `basic` (Convert_resource_Device_To_v1beta1_Device): an \
         absent `basic` comes back `{}`",
    ),
    (
        "resource.k8s.io",
        "ResourceSlice",
        "*",
        "v1beta1",
        "spec.allNodes",
        "v1beta1's `AllNodes` is a Go `bool` with omitempty (a `*bool` in v1 and v1beta2): its JSON \
         never holds `false`, so `allNodes: false` comes back absent",
    ),
];

fn defs() -> &'static Map<String, Value> {
    common::swagger_definitions()
}

/// The definition of a kind (`x-kubernetes-group-version-kind`).
fn definition_of(kind: &Kind) -> Option<&'static str> {
    defs().iter().find_map(|(name, d)| {
        d["x-kubernetes-group-version-kind"]
            .as_array()?
            .iter()
            .any(|g| g["group"] == kind.group.as_str() && g["version"] == kind.version.as_str() && g["kind"] == kind.kind.as_str())
            .then_some(name.as_str())
    })
}

/// Kind families served in two or more versions, from the generated scheme.
fn families() -> Vec<Vec<Kind>> {
    let mut out: BTreeMap<(String, String), Vec<Kind>> = BTreeMap::new();
    for r in kapi_api::scheme::RESOURCES.iter().filter(|r| !r.resource.contains('/')) {
        let kind = Kind { group: r.kind.group.into(), version: r.kind.version.into(), kind: r.kind.kind.into() };
        let storage = kapi::registry::objects::storage_kind(&kind);
        let members = out.entry((storage.group, storage.kind)).or_default();
        if !members.contains(&kind) {
            members.push(kind);
        }
    }
    out.into_values().filter(|v| v.len() >= 2).collect()
}

fn pick(values: &[&'static str]) -> BoxedStrategy<Value> {
    let values: Vec<Value> = values.iter().map(|s| Value::String((*s).to_owned())).collect();
    proptest::sample::select(values).boxed()
}

/// Strings likely to hit the hand-written conversions' special cases (HPA's CPU metric, ...).
const STRINGS: &[&str] = &[
    "a",
    "b",
    "cpu",
    "memory",
    "Resource",
    "Pods",
    "Object",
    "External",
    "ContainerResource",
    "Utilization",
    "Value",
    "AverageValue",
    "Max",
    "Min",
    "True",
    "False",
    "x.example.com",
];
const KEYS: &[&str] = &["a", "b", "cpu", "k.example.com/x"];

fn strategy(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/definitions/");
        return match name {
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => pick(&["2024-01-01T00:00:00Z", "2025-06-30T12:34:56Z"]),
            "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => pick(&["2024-01-01T00:00:00.000000Z", "2025-06-30T12:34:56.123456Z"]),
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => pick(&["1", "500m", "2Gi", "1k"]),
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                prop_oneof![(0i64..100).prop_map(Value::from), pick(&["http", "50%"])].boxed()
            }
            "io.k8s.apimachinery.pkg.runtime.RawExtension" => Just(json!({"a": "b"})).boxed(),
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1" => Just(json!({"f:a": {}})).boxed(),
            _ => match defs().get(name) {
                Some(d) => strategy(d, depth),
                None => Just(json!({})).boxed(),
            },
        };
    }
    if let Some(values) = schema["enum"].as_array() {
        return proptest::sample::select(values.clone()).boxed();
    }
    match schema["type"].as_str() {
        Some("string") => match schema["format"].as_str() {
            Some("byte") => pick(&["YWJj", ""]),
            Some("date-time") => pick(&["2024-01-01T00:00:00Z"]),
            _ => pick(STRINGS),
        },
        Some("integer") => (-3i64..200).prop_map(Value::from).boxed(),
        Some("number") => proptest::sample::select(vec![0.0, 0.5, 1.25, 3.0]).prop_map(Value::from).boxed(),
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("array") => {
            if depth >= MAX_DEPTH {
                return Just(json!([])).boxed();
            }
            proptest::collection::vec(strategy(&schema["items"], depth + 1), 0..3).prop_map(Value::Array).boxed()
        }
        _ => object(schema, depth),
    }
}

fn object(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if depth >= MAX_DEPTH {
        return Just(json!({})).boxed();
    }
    if let Some(props) = schema["properties"].as_object() {
        // Deeper objects set fewer fields, so the trees stay small.
        let weight = if depth < 3 { 0.6 } else { 0.4 };
        let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = props
            .iter()
            .filter(|(name, _)| depth > 0 || !matches!(name.as_str(), "apiVersion" | "kind"))
            .map(|(name, p)| {
                let name = name.clone();
                proptest::option::weighted(weight, strategy(p, depth + 1).prop_map(move |v| (name.clone(), v))).boxed()
            })
            .collect();
        return fields.prop_map(|fs| Value::Object(fs.into_iter().flatten().collect())).boxed();
    }
    if schema["additionalProperties"].is_object() {
        let values = strategy(&schema["additionalProperties"], depth + 1);
        return proptest::collection::btree_map(pick(KEYS).prop_map(|k| k.as_str().unwrap_or_default().to_owned()), values, 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed();
    }
    Just(json!({})).boxed()
}

/// The paths at which two values differ (`spec.metrics[1].type`).
fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                diff(x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), &p, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                diff(x, y, &format!("{path}[{i}]"), out);
            }
        }
        // An absent object compares as an empty one for the fields below it (kapi's types make
        // Go's non-pointer structs optional), so the difference names the leaf.
        (Value::Null, Value::Object(y)) if !y.is_empty() => diff(&Value::Object(Map::new()), b, path, out),
        (Value::Object(x), Value::Null) if !x.is_empty() => diff(a, &Value::Object(Map::new()), path, out),
        _ if a == b => {}
        // ObjectMeta is a struct in Go: absent and empty are the same object.
        (Value::Null, Value::Object(m)) | (Value::Object(m), Value::Null) if path == "metadata" && m.is_empty() => {}
        _ => out.push(path.to_owned()),
    }
}

/// `spec.metrics[1].type` → `spec.metrics[].type`.
fn normalize(path: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in path.chars() {
        match c {
            '[' => {
                skip = true;
                out.push('[');
            }
            ']' => {
                skip = false;
                out.push(']');
            }
            _ if skip => {}
            _ => out.push(c),
        }
    }
    out
}

fn allowed(kind: &Kind, from: &str, via: &str, path: &str) -> bool {
    let path = normalize(path);
    LOSSY.iter().any(|(g, k, f, v, p, _)| {
        *g == kind.group
            && *k == kind.kind
            && (*f == "*" || *f == from)
            && (*v == "*" || *v == via)
            && (path == *p || path.starts_with(&format!("{p}.")) || path.starts_with(&format!("{p}[")))
    })
}

fn cases() -> u32 {
    std::env::var("KAPI_ROUNDTRIP_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(CASES)
}

fn check(kind: &Kind, family: &[Kind], raw: Value) -> Result<(), TestCaseError> {
    let mut raw = raw;
    raw["apiVersion"] = json!(kind_api_version(kind));
    raw["kind"] = json!(kind.kind);
    let v0 = decode(kind, Format::Json, raw.to_string().as_bytes())
        .map_err(|e| TestCaseError::fail(format!("{kind:?}: generated object does not decode: {e}\n{raw}")))?;
    let back = convert_via_hub(&v0, kind, kind).map_err(|e| TestCaseError::fail(format!("{kind:?} → hub: {e}")))?;
    let mut d = Vec::new();
    diff(&v0, &back, "", &mut d);
    let lossy = d.len();
    d.retain(|p| !allowed(kind, &kind.version, "hub", p));
    prop_assert!(d.is_empty(), "{} → hub → {}: differs at {d:?}\nin:  {v0}\nout: {back}", kind_api_version(kind), kind.version);
    // The internal object as JSON (what validation and admission read) holds the hub exactly.
    let internal = to_internal(kind, v0.clone()).map_err(|e| TestCaseError::fail(format!("{kind:?} → internal: {e}")))?;
    let from_json = from_internal(kind, &internal).map_err(|e| TestCaseError::fail(format!("internal → {kind:?}: {e}\n{internal}")))?;
    prop_assert_eq!(
        &from_json,
        &back,
        "{} → internal JSON → back differs from the trip through the hub\ninternal: {}",
        kind_api_version(kind),
        internal
    );
    if lossy > 0 {
        let again = convert_via_hub(&back, kind, kind).map_err(|e| TestCaseError::fail(format!("{kind:?} → hub: {e}")))?;
        prop_assert_eq!(&again, &back, "second trip through the hub changed the object");
    }
    for via in family.iter().filter(|k| *k != kind) {
        let other = convert_via_hub(&v0, kind, via).map_err(|e| TestCaseError::fail(format!("{kind:?} → {via:?}: {e}")))?;
        let back = convert_via_hub(&other, via, kind).map_err(|e| TestCaseError::fail(format!("{via:?} → {kind:?}: {e}")))?;
        let mut d = Vec::new();
        diff(&v0, &back, "", &mut d);
        let lossy = d.len();
        d.retain(|p| !allowed(kind, &kind.version, &via.version, p));
        if lossy > 0 && d.is_empty() {
            let other = convert_via_hub(&back, kind, via).map_err(|e| TestCaseError::fail(format!("{kind:?} → {via:?}: {e}")))?;
            let again = convert_via_hub(&other, via, kind).map_err(|e| TestCaseError::fail(format!("{via:?} → {kind:?}: {e}")))?;
            prop_assert_eq!(&again, &back, "a second trip through {} changed the object", kind_api_version(via));
        }
        prop_assert!(
            d.is_empty(),
            "{} → {} → {}: differs at {d:?}\nin:  {v0}\nvia: {other}\nout: {back}",
            kind_api_version(kind),
            kind_api_version(via),
            kind_api_version(kind)
        );
    }
    Ok(())
}

fn kind_api_version(k: &Kind) -> String {
    if k.group.is_empty() { k.version.clone() } else { format!("{}/{}", k.group, k.version) }
}

#[test]
fn every_multi_version_kind_round_trips() {
    let families = families();
    // The scheme must yield the families this test exists for (a guard against an empty loop).
    let names: Vec<String> = families.iter().map(|f| format!("{}/{}", f[0].group, f[0].kind)).collect();
    for expected in ["autoscaling/HorizontalPodAutoscaler", "/Event", "resource.k8s.io/ResourceClaim"] {
        assert!(names.iter().any(|n| n == expected), "{expected} not among {names:?}");
    }
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut objects = 0u32;
    for family in &families {
        for kind in family {
            let Some(def) = definition_of(kind) else {
                failures.push(format!("{kind:?}: no definition in the OpenAPI document"));
                continue;
            };
            let strategy = object(&defs()[def], 0);
            let config = Config { cases: cases(), failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
            // Deterministic by default (a failure reproduces); `KAPI_ROUNDTRIP_RANDOM=1` explores.
            let mut runner = if std::env::var_os("KAPI_ROUNDTRIP_RANDOM").is_some() {
                TestRunner::new(config)
            } else {
                TestRunner::new_with_rng(
                    config,
                    proptest::test_runner::TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
                )
            };
            let result = runner.run(&strategy, |raw| check(kind, family, raw));
            objects += cases();
            if let Err(e) = result {
                failures.push(format!("{kind:?}: {e}"));
            }
        }
    }
    eprintln!("round trip: {} families, {objects} objects in {:?}", families.len(), started.elapsed());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}
