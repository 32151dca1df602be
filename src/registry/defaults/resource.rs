//! `resource.k8s.io` (upstream `pkg/apis/resource/<version>/defaults.go`, one file per served
//! version: v1, and v1beta1, v1beta2 and v1alpha3 when `--runtime-config` turns them on, plus
//! the declarative `+default`s of their types): dynamic resource allocation requests, device
//! taints and tolerations, allocatable resource mappings and pool status requests.
//!
//! Each version has its own copy of the types with the same fields and upstream repeats the
//! same functions for each, so the bodies are written once as macros and registered per
//! version's type.

use kapi_api::api::resource::{v1, v1alpha3, v1beta1, v1beta2};
use kapi_apimachinery::{Quantity, Time};

use super::Registry;

/// A request (or sub-request) asks for exactly one device unless told otherwise
/// (`SetDefaults_ExactDeviceRequest`, `SetDefaults_DeviceSubRequest`). `count` is a Go
/// non-pointer integer, so 0 is unset.
macro_rules! exactly_one_device {
    ($r:expr) => {{
        let r = $r;
        super::default_str(&mut r.allocation_mode, "ExactCount");
        if r.allocation_mode.as_deref() == Some("ExactCount") {
            super::default_int(&mut r.count, 1);
        }
    }};
}

/// A taint is added now, to the second (`SetDefaults_DeviceTaint`).
macro_rules! taint_added_now {
    ($t:expr) => {{
        $t.time_added.get_or_insert_with(|| Time::now().truncate_to_seconds());
    }};
}

/// A device toleration matches the taint's value unless it says `Exists` (a declarative
/// `+default` on a non-pointer string, so `""` is unset). `DeviceToleration` appears only in
/// requests, sub-requests and allocation results, where upstream's generated code defaults it.
macro_rules! tolerate_equal {
    ($t:expr) => {{
        super::default_str(&mut $t.operator, "Equal");
    }};
}

/// Each node-allocatable resource mapping multiplies by one unless told otherwise
/// (`SetDefaults_Device`, which sets it on the map values itself).
macro_rules! multiplier_of_one {
    ($d:expr) => {{
        for mapping in $d.node_allocatable_resource_mappings.values_mut() {
            mapping.allocation_multiplier.get_or_insert_with(|| Quantity::parse("1").expect("1 is a quantity"));
        }
    }};
}

/// v1beta1 requests hold the exact request's fields themselves; a request without a device
/// class has sub-requests instead and is left alone (v1beta1's `SetDefaults_DeviceRequest`).
pub fn set_defaults_v1beta1_device_request(r: &mut v1beta1::DeviceRequest) {
    if r.device_class_name.as_deref().is_none_or(str::is_empty) {
        return;
    }
    exactly_one_device!(r);
}

/// A pool status request reports at most 100 pools unless it asks for another limit
/// (`SetDefaults_ResourcePoolStatusRequestSpec`, v1alpha3 only).
pub fn set_defaults_v1alpha3_resource_pool_status_request_spec(s: &mut v1alpha3::ResourcePoolStatusRequestSpec) {
    s.limit.get_or_insert(100);
}

pub fn register(r: &mut Registry) {
    r.add(|x: &mut v1::ExactDeviceRequest| exactly_one_device!(x));
    r.add(|x: &mut v1beta2::ExactDeviceRequest| exactly_one_device!(x));
    r.add(set_defaults_v1beta1_device_request);
    r.add(|x: &mut v1::DeviceSubRequest| exactly_one_device!(x));
    r.add(|x: &mut v1beta2::DeviceSubRequest| exactly_one_device!(x));
    r.add(|x: &mut v1beta1::DeviceSubRequest| exactly_one_device!(x));
    r.add(|x: &mut v1::DeviceTaint| taint_added_now!(x));
    r.add(|x: &mut v1beta2::DeviceTaint| taint_added_now!(x));
    r.add(|x: &mut v1beta1::DeviceTaint| taint_added_now!(x));
    r.add(|x: &mut v1alpha3::DeviceTaint| taint_added_now!(x));
    r.add(|x: &mut v1::Device| multiplier_of_one!(x));
    r.add(|x: &mut v1beta2::Device| multiplier_of_one!(x));
    r.add(|x: &mut v1beta1::BasicDevice| multiplier_of_one!(x));
    r.add(|x: &mut v1::DeviceToleration| tolerate_equal!(x));
    r.add(|x: &mut v1beta2::DeviceToleration| tolerate_equal!(x));
    r.add(|x: &mut v1beta1::DeviceToleration| tolerate_equal!(x));
    r.add(set_defaults_v1alpha3_resource_pool_status_request_spec);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn claims_ask_for_one_device() {
        assert_defaults::<v1::ResourceClaim>(
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "big"}, {"name": "y", "deviceClassName": "small", "allocationMode": "All"}]}]}}}),
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}},
                {"name": "b", "firstAvailable": [
                    {"name": "x", "deviceClassName": "big", "allocationMode": "ExactCount", "count": 1},
                    {"name": "y", "deviceClassName": "small", "allocationMode": "All"}]}]}}}),
        );
        assert_defaults::<v1beta2::ResourceClaim>(
            json!({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "count": 2}}]}}}),
            json!({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}}]}}}),
        );
    }

    #[test]
    fn v1beta1_requests_are_defaulted_in_place() {
        assert_defaults::<v1beta1::ResourceClaim>(
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "deviceClassName": "gpu"},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "big"}]}]}}}),
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "big", "allocationMode": "ExactCount", "count": 1}]}]}}}),
        );
    }

    /// Tolerations in every place a claim holds them, in every version that has them.
    #[test]
    fn tolerations_match_equal_values() {
        let given = json!([{"key": "k", "value": "v"}, {"key": "x", "operator": "Exists"}, {"key": "e", "operator": ""}]);
        let defaulted =
            json!([{"key": "k", "operator": "Equal", "value": "v"}, {"key": "x", "operator": "Exists"}, {"key": "e", "operator": "Equal"}]);
        let claim = |t: &serde_json::Value| {
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "All", "tolerations": t}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "big", "allocationMode": "All", "tolerations": t}]}]}},
                "status": {"allocation": {"devices": {"results": [{"request": "a", "driver": "d", "pool": "p", "device": "g", "tolerations": t}]}}}})
        };
        assert_defaults::<v1::ResourceClaim>(claim(&given), claim(&defaulted));
        assert_defaults::<v1beta2::ResourceClaim>(claim(&given), claim(&defaulted));
        let v1beta1_claim = |t: &serde_json::Value| json!({"spec": {"devices": {"requests": [{"name": "a", "deviceClassName": "gpu", "allocationMode": "All", "tolerations": t}]}}});
        assert_defaults::<v1beta1::ResourceClaim>(v1beta1_claim(&given), v1beta1_claim(&defaulted));
    }

    #[test]
    fn pool_status_requests_report_a_hundred_pools() {
        assert_defaults::<v1alpha3::ResourcePoolStatusRequest>(
            json!({"spec": {"driver": "gpu.example.com"}}),
            json!({"metadata": {}, "spec": {"driver": "gpu.example.com", "limit": 100}}),
        );
        assert_defaults::<v1alpha3::ResourcePoolStatusRequest>(
            json!({"metadata": {}, "spec": {"driver": "gpu.example.com", "limit": 5}}),
            json!({"metadata": {}, "spec": {"driver": "gpu.example.com", "limit": 5}}),
        );
    }

    #[test]
    fn taints_get_their_time_and_mappings_multiply_by_one() {
        let mut rule: v1alpha3::DeviceTaintRule =
            serde_json::from_value(json!({"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}})).unwrap();
        crate::registry::defaults::apply_defaults(&mut rule);
        assert!(rule.spec.taint.time_added.is_some());
        let slice = json!({"spec": {"driver": "d", "pool": {"name": "p", "resourceSliceCount": 1}, "devices": [
            {"name": "dev", "nodeAllocatableResourceMappings": {"cpu": {}}}]}});
        let mut slice: v1::ResourceSlice = serde_json::from_value(slice).unwrap();
        crate::registry::defaults::apply_defaults(&mut slice);
        let got = serde_json::to_value(&slice).unwrap();
        assert_eq!(got["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["cpu"]["allocationMultiplier"], "1");
    }
}
