//! `resource.k8s.io/v1` (upstream `pkg/apis/resource/v1/defaults.go`): dynamic resource
//! allocation requests and device taints.

use kapi_api::api::resource::v1 as resource;
use kapi_apimachinery::Time;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_device_request);
    r.add(set_defaults_exact_device_request);
    r.add(set_defaults_device_taint);
}

/// Each alternative of `firstAvailable` asks for exactly one device unless told otherwise; the
/// last of several may ask for zero (count 0 stays), so the count is defaulted here, where the
/// position is known, rather than on the sub-request.
pub fn set_defaults_device_request(r: &mut resource::DeviceRequest) {
    let n = r.first_available.len();
    for (i, sub) in r.first_available.iter_mut().enumerate() {
        if sub.allocation_mode.as_deref().is_none_or(str::is_empty) {
            sub.allocation_mode = Some("ExactCount".into());
        }
        if (n == 1 || i < n - 1) && sub.allocation_mode.as_deref() == Some("ExactCount") && sub.count.is_none_or(|c| c == 0) {
            sub.count = Some(1);
        }
    }
}

/// Exactly one device unless told otherwise.
pub fn set_defaults_exact_device_request(r: &mut resource::ExactDeviceRequest) {
    if r.allocation_mode.as_deref().is_none_or(str::is_empty) {
        r.allocation_mode = Some("ExactCount".into());
    }
    if r.allocation_mode.as_deref() == Some("ExactCount") && r.count.is_none_or(|c| c == 0) {
        r.count = Some(1);
    }
}

/// A taint is added now (to the second).
pub fn set_defaults_device_taint(t: &mut resource::DeviceTaint) {
    t.time_added.get_or_insert_with(|| Time::now().truncate_to_seconds());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn claims_ask_for_one_device() {
        assert_defaults::<resource::ResourceClaim>(
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "big"}, {"name": "y", "deviceClassName": "small"}]}]}}}),
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}},
                {"name": "b", "firstAvailable": [
                    {"name": "x", "deviceClassName": "big", "allocationMode": "ExactCount", "count": 1},
                    {"name": "y", "deviceClassName": "small", "allocationMode": "ExactCount"}]}]}}}),
        );
    }
}
