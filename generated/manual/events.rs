//! Hand-written conversions of `events.k8s.io` (upstream's `pkg/apis/events/v1/conversion.go`):
//! its `Event` cohabits with core's and converts to core's `Event` (this group's hub), with the
//! renamed fields mapped as upstream maps them.

use crate::api::core::v1 as hub;
use crate::api::events::v1;

pub fn convert_events_v1_Event_regarding_to_hub(value: Option<hub::ObjectReference>, out: &mut hub::Event) {
    out.involved_object = value.unwrap_or_default();
}

pub fn convert_events_v1_Event_note_to_hub(value: Option<String>, out: &mut hub::Event) {
    out.message = value;
}

pub fn convert_events_v1_Event_deprecatedSource_to_hub(value: Option<hub::EventSource>, out: &mut hub::Event) {
    out.source = value;
}

pub fn convert_events_v1_Event_deprecatedFirstTimestamp_to_hub(value: Option<::kapi_apimachinery::Time>, out: &mut hub::Event) {
    out.first_timestamp = value;
}

pub fn convert_events_v1_Event_deprecatedLastTimestamp_to_hub(value: Option<::kapi_apimachinery::Time>, out: &mut hub::Event) {
    out.last_timestamp = value;
}

pub fn convert_events_v1_Event_deprecatedCount_to_hub(value: Option<i32>, out: &mut hub::Event) {
    out.count = value;
}

/// `reportingController` is core's `reportingComponent`.
pub fn convert_events_v1_Event_reportingController_to_hub(value: Option<String>, out: &mut hub::Event) {
    out.reporting_component = value;
}

pub fn convert_events_hub_Event_involvedObject_to_v1(value: hub::ObjectReference, out: &mut v1::Event) {
    out.regarding = (value != hub::ObjectReference::default()).then_some(value);
}

pub fn convert_events_hub_Event_message_to_v1(value: Option<String>, out: &mut v1::Event) {
    out.note = value;
}

pub fn convert_events_hub_Event_source_to_v1(value: Option<hub::EventSource>, out: &mut v1::Event) {
    out.deprecated_source = value;
}

pub fn convert_events_hub_Event_firstTimestamp_to_v1(value: Option<::kapi_apimachinery::Time>, out: &mut v1::Event) {
    out.deprecated_first_timestamp = value;
}

pub fn convert_events_hub_Event_lastTimestamp_to_v1(value: Option<::kapi_apimachinery::Time>, out: &mut v1::Event) {
    out.deprecated_last_timestamp = value;
}

pub fn convert_events_hub_Event_count_to_v1(value: Option<i32>, out: &mut v1::Event) {
    out.deprecated_count = value;
}

pub fn convert_events_hub_Event_reportingComponent_to_v1(value: Option<String>, out: &mut v1::Event) {
    out.reporting_controller = value;
}
