//! Metadata-only answers: objects as `meta.k8s.io` `PartialObjectMetadata` and lists as
//! `PartialObjectMetadataList` (`Accept: ...;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`,
//! what client-go's metadata client and metadata informers ask for), in any wire form.
//! Upstream's `asPartialObjectMetadata` / `asPartialObjectMetadataList` in
//! `endpoints/handlers/response.go`.

use kapi_apimachinery::codec::Format;
use serde_json::{Value, json};

use super::body::Body;
use crate::negotiation::{Conversion, cannot_convert, internal_type_name};
use crate::registry::objects::{self, Kind};
use crate::status::ApiError;
use crate::tables::TableVersion;

fn meta_kind(version: TableVersion, kind: &str) -> Kind {
    let version = match version {
        TableVersion::V1 => "v1",
        TableVersion::V1Beta1 => "v1beta1",
    };
    Kind { group: "meta.k8s.io".into(), version: version.into(), kind: kind.into() }
}

/// An object's metadata as a `PartialObjectMetadata` of the given `meta.k8s.io` version.
pub fn partial_object(object: &Value, version: TableVersion) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The answer to a get of `object` (of `kind`) under `convert` (not a Table).
pub fn object_response(convert: Conversion, format: Format, kind: &Kind, object: &Value) -> Result<http::Response<Body>, ApiError> {
    match convert {
        Conversion::PartialObjectMetadata(version) => {
            respond(convert, format, &meta_kind(version, "PartialObjectMetadata"), &partial_object(object, version))
        }
        _ => Err(cannot_convert(format!(
            "you requested {}, but the requested object is not a list ({})",
            convert.kind(),
            internal_type_name(&kind.group, &kind.kind)
        ))),
    }
}

/// The answer to a list of `items` (of `item_kind`) with `list_meta` under `convert` (not a
/// Table).
pub fn list_response(
    convert: Conversion,
    format: Format,
    item_kind: &Kind,
    items: &[Value],
    list_meta: &Value,
) -> Result<http::Response<Body>, ApiError> {
    match convert {
        Conversion::PartialObjectMetadataList(version) => {
            let items: Vec<Value> = items.iter().map(|item| partial_object(item, version)).collect();
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": version.api_version(),
                "metadata": list_meta,
                "items": items,
            });
            respond(convert, format, &meta_kind(version, "PartialObjectMetadataList"), &list)
        }
        _ => Err(cannot_convert(format!(
            "you requested {}, but the requested object is a list ({})",
            convert.kind(),
            internal_type_name(&item_kind.group, &format!("{}List", item_kind.kind))
        ))),
    }
}

fn respond(convert: Conversion, format: Format, kind: &Kind, value: &Value) -> Result<http::Response<Body>, ApiError> {
    let body = objects::encode(kind, format, value).map_err(ApiError::internal)?;
    let mut resp = http::Response::new(super::body::full(body));
    if let Ok(v) = http::HeaderValue::from_str(&convert.content_type(format)) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    Ok(resp)
}
