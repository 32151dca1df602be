//! Hand-written conversions of `resource.k8s.io` (upstream's
//! `pkg/apis/resource/v1beta1/conversion.go`): v1beta1 wraps a device's fields in `basic` and
//! keeps a request's fields flat, where v1 and v1beta2 flatten devices and put a request's
//! fields under `exactly`. The hub has both forms; each version reads whichever is set.

use crate::api::resource::{v1, v1beta1, v1beta2};
use crate::hub::resource as hub;

/// Hub flattened device field → v1beta1 `basic.<field>`.
macro_rules! to_basic {
    ($name:ident, $field:ident, $ty:ty) => {
        pub fn $name(value: $ty, out: &mut v1beta1::Device) {
            // Upstream's Convert_resource_Device_To_v1beta1_Device always sets `basic`.
            out.basic.get_or_insert_default();
            let b = v1beta1::conversion::BasicDevice_from_hub(hub::BasicDevice { $field: value, ..Default::default() });
            if !is_default(&b.$field) {
                out.basic.get_or_insert_default().$field = b.$field;
            }
        }
    };
}

to_basic!(convert_resource_hub_Device_attributes_to_v1beta1, attributes, ::std::collections::BTreeMap<String, hub::DeviceAttribute>);
to_basic!(convert_resource_hub_Device_capacity_to_v1beta1, capacity, ::std::collections::BTreeMap<String, hub::DeviceCapacity>);
to_basic!(convert_resource_hub_Device_consumesCounters_to_v1beta1, consumes_counters, Vec<hub::DeviceCounterConsumption>);
to_basic!(convert_resource_hub_Device_nodeName_to_v1beta1, node_name, Option<String>);
to_basic!(convert_resource_hub_Device_nodeSelector_to_v1beta1, node_selector, Option<crate::api::core::v1::NodeSelector>);
to_basic!(convert_resource_hub_Device_allNodes_to_v1beta1, all_nodes, Option<bool>);
to_basic!(convert_resource_hub_Device_taints_to_v1beta1, taints, Vec<hub::DeviceTaint>);
to_basic!(convert_resource_hub_Device_bindsToNode_to_v1beta1, binds_to_node, Option<bool>);
to_basic!(convert_resource_hub_Device_bindingConditions_to_v1beta1, binding_conditions, Vec<String>);
to_basic!(convert_resource_hub_Device_bindingFailureConditions_to_v1beta1, binding_failure_conditions, Vec<String>);
to_basic!(convert_resource_hub_Device_allowMultipleAllocations_to_v1beta1, allow_multiple_allocations, Option<bool>);
to_basic!(
    convert_resource_hub_Device_nodeAllocatableResourceMappings_to_v1beta1,
    node_allocatable_resource_mappings,
    ::std::collections::BTreeMap<String, hub::NodeAllocatableResourceMapping>
);

/// A hub device with `basic`'s fields flattened.
fn flat_device(b: hub::BasicDevice) -> hub::Device {
    hub::Device {
        attributes: b.attributes,
        capacity: b.capacity,
        consumes_counters: b.consumes_counters,
        node_name: b.node_name,
        node_selector: b.node_selector,
        all_nodes: b.all_nodes,
        taints: b.taints,
        binds_to_node: b.binds_to_node,
        binding_conditions: b.binding_conditions,
        binding_failure_conditions: b.binding_failure_conditions,
        allow_multiple_allocations: b.allow_multiple_allocations,
        node_allocatable_resource_mappings: b.node_allocatable_resource_mappings,
        ..Default::default()
    }
}

pub fn convert_resource_hub_Device_basic_to_v1(value: Option<hub::BasicDevice>, out: &mut v1::Device) {
    let Some(b) = value else { return };
    let name = std::mem::take(&mut out.name);
    *out = v1::Device { name, ..v1::conversion::Device_from_hub(flat_device(b)) };
}

pub fn convert_resource_hub_Device_basic_to_v1beta2(value: Option<hub::BasicDevice>, out: &mut v1beta2::Device) {
    let Some(b) = value else { return };
    let name = std::mem::take(&mut out.name);
    *out = v1beta2::Device { name, ..v1beta2::conversion::Device_from_hub(flat_device(b)) };
}

/// Hub flattened request field → `exactly.<field>` (v1, v1beta2).
macro_rules! to_exactly {
    ($name:ident, $ver:ident, $field:ident, $ty:ty, $wrap:expr) => {
        pub fn $name(value: $ty, out: &mut $ver::DeviceRequest) {
            let e = $ver::conversion::ExactDeviceRequest_from_hub(hub::ExactDeviceRequest { $field: $wrap(value), ..Default::default() });
            if !is_default(&e.$field) {
                out.exactly.get_or_insert_default().$field = e.$field;
            }
        }
    };
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

fn id<T>(v: T) -> T {
    v
}
fn or_default(v: Option<String>) -> String {
    v.unwrap_or_default()
}

to_exactly!(convert_resource_hub_DeviceRequest_deviceClassName_to_v1, v1, device_class_name, Option<String>, or_default);
to_exactly!(convert_resource_hub_DeviceRequest_selectors_to_v1, v1, selectors, Vec<hub::DeviceSelector>, id);
to_exactly!(convert_resource_hub_DeviceRequest_allocationMode_to_v1, v1, allocation_mode, Option<String>, id);
to_exactly!(convert_resource_hub_DeviceRequest_count_to_v1, v1, count, Option<i64>, id);
to_exactly!(convert_resource_hub_DeviceRequest_adminAccess_to_v1, v1, admin_access, Option<bool>, id);
to_exactly!(convert_resource_hub_DeviceRequest_tolerations_to_v1, v1, tolerations, Vec<hub::DeviceToleration>, id);
to_exactly!(convert_resource_hub_DeviceRequest_capacity_to_v1, v1, capacity, Option<hub::CapacityRequirements>, id);
to_exactly!(convert_resource_hub_DeviceRequest_deviceClassName_to_v1beta2, v1beta2, device_class_name, Option<String>, or_default);
to_exactly!(convert_resource_hub_DeviceRequest_selectors_to_v1beta2, v1beta2, selectors, Vec<hub::DeviceSelector>, id);
to_exactly!(convert_resource_hub_DeviceRequest_allocationMode_to_v1beta2, v1beta2, allocation_mode, Option<String>, id);
to_exactly!(convert_resource_hub_DeviceRequest_count_to_v1beta2, v1beta2, count, Option<i64>, id);
to_exactly!(convert_resource_hub_DeviceRequest_adminAccess_to_v1beta2, v1beta2, admin_access, Option<bool>, id);
to_exactly!(convert_resource_hub_DeviceRequest_tolerations_to_v1beta2, v1beta2, tolerations, Vec<hub::DeviceToleration>, id);
to_exactly!(convert_resource_hub_DeviceRequest_capacity_to_v1beta2, v1beta2, capacity, Option<hub::CapacityRequirements>, id);

/// Hub `exactly` → v1beta1's flat request fields.
pub fn convert_resource_hub_DeviceRequest_exactly_to_v1beta1(value: Option<hub::ExactDeviceRequest>, out: &mut v1beta1::DeviceRequest) {
    let Some(e) = value else { return };
    let flat = v1beta1::conversion::DeviceRequest_from_hub(hub::DeviceRequest {
        device_class_name: Some(e.device_class_name).filter(|s| !s.is_empty()),
        selectors: e.selectors,
        allocation_mode: e.allocation_mode,
        count: e.count,
        admin_access: e.admin_access,
        tolerations: e.tolerations,
        capacity: e.capacity,
        ..Default::default()
    });
    out.device_class_name = flat.device_class_name;
    out.selectors = flat.selectors;
    out.allocation_mode = flat.allocation_mode;
    out.count = flat.count;
    out.admin_access = flat.admin_access;
    out.tolerations = flat.tolerations;
    out.capacity = flat.capacity;
}
