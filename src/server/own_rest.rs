//! Requests a resource serves with its own REST code rather than the generic store
//! (`registry::OwnRest`): pod binding and eviction, the reviews, component statuses. What they
//! do is the registry's (`registry::core::pods`, `registry::reviews`, ...); this module decodes
//! the requests and encodes the answers.

use serde_json::{Value, json};

use super::body::Body;
use super::rest::{self, ResourceCall, decode_body, respond, write_options};
use crate::registry::OwnRest;
use crate::registry::core::pods;
use crate::registry::objects::{self, Kind};
use crate::status::{ApiError, GroupResource};
use crate::storage::Storage;

pub async fn handle(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
    own: OwnRest,
) -> Result<http::Response<Body>, ApiError> {
    let t = call.target;
    match (own, t.action) {
        (OwnRest::PodBinding, "post") => bind(store, call, namespace).await,
        (OwnRest::PodEviction, "post") => evict(store, call, namespace).await,
        (OwnRest::Review(review), "post") => answer_review(store, call, namespace, review).await,
        (OwnRest::ServiceAccountToken, "post") => request_token(store, call, namespace).await,
        (OwnRest::ComponentStatuses, "get" | "list") => component_statuses(call).await,
        (_, action) => Err(ApiError::method_not_supported(GroupResource::new(t.group, t.resource), action)),
    }
}

/// The `Status` a create-like subresource answers with (upstream writes `code` 201 into it).
fn created_status(call: &ResourceCall<'_>) -> http::Response<Body> {
    let kind = Kind::core_v1("Status");
    let status = json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201 });
    respond(&kind, call.accept, 201, &status)
}

/// `POST` of a review: the request comes back with its status answered (201, as a create).
async fn answer_review(
    store: &dyn Storage,
    call: &ResourceCall<'_>,
    namespace: Option<&str>,
    review: crate::registry::reviews::Review,
) -> Result<http::Response<Body>, ApiError> {
    use crate::registry::reviews::{Refusal, answer};
    let (kind, mut object) = decode_body(call)?;
    if let Some(ns) = namespace {
        object["metadata"]["namespace"] = Value::String(ns.to_owned());
    }
    answer(review, &mut object, call.user, namespace, &objects::now(), store, call.config).await.map_err(|refusal| match refusal {
        Refusal::BadRequest(message) => ApiError::bad_request(message),
        Refusal::Invalid(errs) => ApiError::invalid(crate::status::GroupKind::new(&kind.group, &kind.kind), "", &errs),
    })?;
    Ok(respond(&kind, call.accept, 201, &object))
}

/// `POST serviceaccounts/<name>/token`: a TokenRequest for the account, answered with its
/// token (`registry::core::serviceaccounts::tokens`), once admitted.
async fn request_token(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let (kind, mut request) = decode_body(call)?;
    // Upstream's create handler admits the TokenRequest (NodeRestriction limits kubelets to
    // tokens bound to their pods) before the REST code sees it.
    let requests = rest::store(store, call);
    requests.admit_create(write_options(call), namespace, &call.info.name, &mut request).await?;
    requests.validate_create_admission(write_options(call), namespace, &call.info.name, &mut request).await?;
    let authority = call
        .config
        .authentication
        .service_accounts
        .clone()
        .ok_or_else(|| ApiError::method_not_supported(crate::status::GroupResource::new("", "serviceaccounts/token"), "create"))?;
    let (answered, warnings) = authority.request_token(store, namespace.unwrap_or_default(), &call.info.name, request).await?;
    for warning in warnings {
        rest::warn(warning);
    }
    Ok(respond(&kind, call.accept, 201, &answered))
}

/// `POST pods/<name>/binding` (or `bindings` with the pod named in the body): the registry
/// binds the pod (`registry::core::pods::binding`).
async fn bind(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let (_, binding) = decode_body(call)?;
    let url_name = call.target.subresource.is_some().then_some(call.info.name.as_str());
    pods::bind(&rest::store(store, call), write_options(call), namespace, url_name, binding).await?;
    Ok(created_status(call))
}

/// `POST pods/<name>/eviction`: the registry evicts the pod (`registry::core::pods::eviction`).
async fn evict(store: &dyn Storage, call: &ResourceCall<'_>, namespace: Option<&str>) -> Result<http::Response<Body>, ApiError> {
    let (_, eviction) = decode_body(call)?;
    pods::eviction::evict(&rest::store(store, call), write_options(call), namespace, &call.info.name, eviction).await?;
    Ok(created_status(call))
}

/// A resource made at each read rather than stored (`registry::OwnRest::ComponentStatuses`):
/// the registry makes the object or the items; this answers them in the route's kind and the
/// representation asked for.
async fn component_statuses(call: &ResourceCall<'_>) -> Result<http::Response<Body>, ApiError> {
    use crate::registry::core::componentstatuses;
    let kind = super::rest::kind_of(call.target);
    if call.target.action == "get" {
        let object = componentstatuses::get(call.etcd_servers, &call.info.name)
            .await
            .ok_or_else(|| ApiError::not_found(super::rest::group_resource(call.target), &call.info.name))?;
        if let Some(table) = call.table {
            return super::rest::table_response(call, table, std::slice::from_ref(&object), None);
        }
        if let Some(convert) = call.convert {
            return super::metadata::object_response(convert, call.accept, &kind, &object);
        }
        return Ok(respond(&kind, call.accept, 200, &object));
    }
    let filter =
        crate::registry::store::selection(call.strategy, call.target.group, call.target.resource, &super::rest::list_options(call)?);
    let items: Vec<Value> = componentstatuses::list(call.etcd_servers).await.into_iter().filter(|item| filter(item)).collect();
    let list_meta = json!({});
    if let Some(table) = call.table {
        return super::rest::table_response(call, table, &items, Some(&list_meta));
    }
    if let Some(convert) = call.convert {
        return super::metadata::list_response(convert, call.accept, &kind, &items, &list_meta);
    }
    let list_kind = Kind { kind: format!("{}List", kind.kind), ..kind };
    let list = json!({ "kind": list_kind.kind, "apiVersion": list_kind.api_version(), "metadata": list_meta, "items": items });
    Ok(respond(&list_kind, call.accept, 200, &list))
}
