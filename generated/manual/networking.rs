//! Hand-written conversions of `networking.k8s.io` (upstream's
//! `pkg/apis/networking/v1beta1/conversion.go`): v1beta1's `backend` with `serviceName` and
//! `servicePort` is v1's `defaultBackend` with `service: {name, port}`.

use crate::api::networking::{v1, v1beta1};
use crate::hub::networking as hub;
use ::kapi_apimachinery::IntOrString;

pub fn convert_networking_hub_IngressBackend_serviceName_to_v1(value: Option<String>, out: &mut v1::IngressBackend) {
    if let Some(name) = value {
        out.service.get_or_insert_default().name = name;
    }
}

pub fn convert_networking_hub_IngressBackend_servicePort_to_v1(value: Option<IntOrString>, out: &mut v1::IngressBackend) {
    let Some(port) = value else { return };
    let service = out.service.get_or_insert_default();
    let p = service.port.get_or_insert_default();
    match port {
        IntOrString::Int(n) => p.number = Some(n),
        IntOrString::String(s) => p.name = Some(s),
    }
}

pub fn convert_networking_hub_IngressSpec_backend_to_v1(value: Option<hub::IngressBackend>, out: &mut v1::IngressSpec) {
    if out.default_backend.is_none() {
        out.default_backend = value.map(v1::conversion::IngressBackend_from_hub);
    }
}

pub fn convert_networking_hub_IngressBackend_service_to_v1beta1(
    value: Option<hub::IngressServiceBackend>,
    out: &mut v1beta1::IngressBackend,
) {
    let Some(service) = value else { return };
    out.service_name = Some(service.name);
    out.service_port = service.port.and_then(|p| match (p.number, p.name) {
        (Some(n), _) if n != 0 => Some(IntOrString::Int(n)),
        (_, Some(name)) => Some(IntOrString::String(name)),
        (Some(n), None) => Some(IntOrString::Int(n)),
        (None, None) => None,
    });
}

pub fn convert_networking_hub_IngressSpec_defaultBackend_to_v1beta1(value: Option<hub::IngressBackend>, out: &mut v1beta1::IngressSpec) {
    if out.backend.is_none() {
        out.backend = value.map(v1beta1::conversion::IngressBackend_from_hub);
    }
}
