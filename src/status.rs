//! Every error the API returns, as the `metav1.Status` body kube-apiserver writes.
//!
//! [`ApiError`] is the one error type handlers return; its constructors mirror upstream's
//! `k8s.io/apimachinery/pkg/api/errors` (`NewNotFound`, `NewInvalid`, ...) with their exact
//! message wording, reasons, codes and details, so that clients (kubectl, client-go's
//! `errors.IsNotFound`, ...) read our errors as theirs. [`ApiError::to_status`] builds the
//! generated `Status` type and [`ApiError::into_response`] the HTTP response, in the format the
//! client asked for.
//!
//! [`FieldError`] is upstream's `field.Error` (`k8s.io/apimachinery/pkg/util/validation/field`):
//! validation produces a list of them and [`ApiError::invalid`] turns it into the 422 with
//! upstream's message (`Pod "x" is invalid: [a: Required value, b: Invalid value: "y"]`).
//!
//! I/O-free; the table of exact JSON bodies per constructor is in the tests.

use std::fmt;

use bytes::Bytes;
use kapi_api::apimachinery::pkg::apis::meta::v1::{ListMeta, Status, StatusCause, StatusDetails};
use kapi_apimachinery::codec::{self, Format};

use crate::request_info::RequestInfo;

/// Go's `%q` (`strconv.Quote`), as upstream's messages quote names and values.
pub(crate) use kapi_apimachinery::strconv::quote as go_quote;

/// The text upstream's generic store puts in every 409 for a stale `resourceVersion`
/// (`OptimisticLockErrorMsg` in `k8s.io/apiserver/pkg/registry/generic/registry/store.go`).
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str = "the object has been modified; please apply your changes to the latest version and try again";

/// etcd3 store: a list at a compacted revision.
pub const EXPIRED_LIST: &str = "The resourceVersion for the provided list is too old.";
/// etcd3 store: a watch from a compacted revision.
pub const EXPIRED_WATCH: &str = "The resourceVersion for the provided watch is too old.";
/// etcd3 store: a `continue` token whose revision was compacted, when no new token can be made.
pub const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. \
     You can start a new list without the continue parameter.";
/// etcd3 store: a `continue` token whose revision was compacted; the Status carries a new token.
pub const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. \
     You can start a new list without the continue parameter, or use the continue token in this response to \
     retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - \
     objects that were created, modified, or deleted between the time the first chunk was returned and now may \
     show up in the list.";

/// `metav1.StatusReason`: the machine-readable reason of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusReason {
    /// `""`: no reason given (upstream's `StatusReasonUnknown`).
    Unknown,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    ServerTimeout,
    StoreReadError,
    Timeout,
    TooManyRequests,
    BadRequest,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    InternalError,
    Expired,
    ServiceUnavailable,
}

impl StatusReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "NotFound",
            Self::AlreadyExists => "AlreadyExists",
            Self::Conflict => "Conflict",
            Self::Gone => "Gone",
            Self::Invalid => "Invalid",
            Self::ServerTimeout => "ServerTimeout",
            Self::StoreReadError => "StorageReadError",
            Self::Timeout => "Timeout",
            Self::TooManyRequests => "TooManyRequests",
            Self::BadRequest => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::NotAcceptable => "NotAcceptable",
            Self::RequestEntityTooLarge => "RequestEntityTooLarge",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
            Self::InternalError => "InternalError",
            Self::Expired => "Expired",
            Self::ServiceUnavailable => "ServiceUnavailable",
        }
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `schema.GroupResource`: a resource qualified by its group (`deployments.apps`, `pods`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl<'a> GroupResource<'a> {
    pub const fn new(group: &'a str, resource: &'a str) -> Self {
        Self { group, resource }
    }

    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }
}

impl fmt::Display for GroupResource<'_> {
    /// `resource` for the core group, `resource.group` otherwise, as upstream's `String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() { f.write_str(self.resource) } else { write!(f, "{}.{}", self.resource, self.group) }
    }
}

/// `schema.GroupKind`: a kind qualified by its group (`Deployment.apps`, `Pod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GroupKind<'a> {
    pub group: &'a str,
    pub kind: &'a str,
}

impl<'a> GroupKind<'a> {
    pub const fn new(group: &'a str, kind: &'a str) -> Self {
        Self { group, kind }
    }
}

impl fmt::Display for GroupKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() { f.write_str(self.kind) } else { write!(f, "{}.{}", self.kind, self.group) }
    }
}

/// An API error: everything a `metav1.Status` failure carries. Its `Display` is the message,
/// as upstream's `StatusError.Error()`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The HTTP status code (also `Status.code`).
    pub code: u16,
    pub reason: StatusReason,
    pub message: String,
    /// `Status.details`; upstream's constructors set it (possibly empty, written `{}`) or not.
    /// Boxed: errors travel in every `Result` of the request path and should stay small.
    pub details: Option<Box<StatusDetails>>,
    /// `Status.metadata.continue`: the fresh token of an inconsistent-continue 410.
    pub continue_token: Option<String>,
}

impl ApiError {
    /// A failure with no details; the building block of the constructors below.
    pub fn new(code: u16, reason: StatusReason, message: impl Into<String>) -> Self {
        Self { code, reason, message: message.into(), details: None, continue_token: None }
    }

    fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 404 `NotFound`: `pods "x" not found`, `deployments.apps "x" not found`.
    pub fn not_found(resource: GroupResource<'_>, name: &str) -> Self {
        Self::new(404, StatusReason::NotFound, format!("{resource} {} not found", go_quote(name)))
            .with_details(resource_details(resource, name))
    }

    /// 404 for a path no route serves, as upstream's not-found handler writes it:
    /// `the server could not find the requested resource` with empty details.
    pub fn path_not_found() -> Self {
        Self::new(404, StatusReason::NotFound, "the server could not find the requested resource").with_details(StatusDetails::default())
    }

    /// 409 `AlreadyExists`: `pods "x" already exists`.
    pub fn already_exists(resource: GroupResource<'_>, name: &str) -> Self {
        Self::new(409, StatusReason::AlreadyExists, format!("{resource} {} already exists", go_quote(name)))
            .with_details(resource_details(resource, name))
    }

    /// 409 `AlreadyExists` when `generateName` produced a taken name (`NewGenerateNameConflict`).
    pub fn generate_name_conflict(resource: GroupResource<'_>, name: &str, retry_after_seconds: i32) -> Self {
        let message =
            format!("{resource} {} already exists, the server was not able to generate a unique name for the object", go_quote(name));
        let mut details = resource_details(resource, name);
        details.retry_after_seconds = non_zero(retry_after_seconds);
        Self::new(409, StatusReason::AlreadyExists, message).with_details(details)
    }

    /// 409 `Conflict` for a stale `resourceVersion`: `Operation cannot be fulfilled on pods "x":
    /// the object has been modified; please apply your changes to the latest version and try
    /// again`.
    pub fn conflict(resource: GroupResource<'_>, name: &str) -> Self {
        Self::conflict_because(resource, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    /// 409 `Conflict` with another cause (upstream's `NewConflict(qualifiedResource, name, err)`).
    pub fn conflict_because(resource: GroupResource<'_>, name: &str, cause: impl fmt::Display) -> Self {
        let message = format!("Operation cannot be fulfilled on {resource} {}: {cause}", go_quote(name));
        Self::new(409, StatusReason::Conflict, message).with_details(resource_details(resource, name))
    }

    /// 409 `Conflict` of server-side apply, with one cause per conflicting field manager.
    pub fn apply_conflict(causes: Vec<StatusCause>, message: impl Into<String>) -> Self {
        Self::new(409, StatusReason::Conflict, message).with_details(StatusDetails { causes, ..Default::default() })
    }

    /// 422 `Invalid`: `Pod "x" is invalid: spec.containers: Required value`, or with several
    /// distinct errors `Pod "x" is invalid: [a: ..., b: ...]` (upstream's aggregate format:
    /// duplicates dropped, brackets only for more than one). Every error becomes a cause.
    pub fn invalid(kind: GroupKind<'_>, name: &str, errors: &[FieldError]) -> Self {
        let causes = errors
            .iter()
            .map(|e| StatusCause { reason: Some(e.error_type.reason().to_owned()), message: Some(e.body()), field: non_empty(&e.field) })
            .collect();
        let message = match aggregate(errors.iter().map(ToString::to_string)) {
            None => format!("{kind} {} is invalid", go_quote(name)),
            Some(agg) => format!("{kind} {} is invalid: {agg}", go_quote(name)),
        };
        let details =
            StatusDetails { name: non_empty(name), group: non_empty(kind.group), kind: non_empty(kind.kind), causes, ..Default::default() };
        Self::new(422, StatusReason::Invalid, message).with_details(details)
    }

    /// 422 as upstream's `NewGenericServerResponse(422, ...)` writes it for a JSON patch that
    /// does not apply or a strategic merge patch it finds unprocessable: the generic message,
    /// reason `Invalid`, empty details. Upstream passes `isUnexpectedResponse=false`, so the
    /// patch library's own text is not sent; it is logged instead.
    pub fn unprocessable_patch(server_message: &str) -> Self {
        tracing::debug!(error = server_message, "patch refused as unprocessable");
        Self::new(422, StatusReason::Invalid, "the server rejected our request due to an error in our request")
            .with_details(StatusDetails::default())
    }

    /// 400 `BadRequest` with the given message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, message)
    }

    /// 401 `Unauthorized` as the authentication filter writes it (message `Unauthorized`).
    pub fn unauthorized() -> Self {
        Self::unauthorized_because("Unauthorized")
    }

    /// 401 `Unauthorized` with a message (`NewUnauthorized`; empty means `not authorized`).
    pub fn unauthorized_because(reason: &str) -> Self {
        let message = if reason.is_empty() { "not authorized" } else { reason };
        Self::new(401, StatusReason::Unauthorized, message)
    }

    /// 403 `Forbidden` (`NewForbidden`): `pods "x" is forbidden: <cause>`, `pods is forbidden:
    /// <cause>` without a name, `forbidden: <cause>` without a resource.
    pub fn forbidden(resource: GroupResource<'_>, name: &str, cause: impl fmt::Display) -> Self {
        let message = if resource.is_empty() {
            format!("forbidden: {cause}")
        } else if name.is_empty() {
            format!("{resource} is forbidden: {cause}")
        } else {
            format!("{resource} {} is forbidden: {cause}", go_quote(name))
        };
        Self::new(403, StatusReason::Forbidden, message).with_details(resource_details(resource, name))
    }

    /// 403 as the authorization filter writes it for a denied request: `pods "x" is forbidden:
    /// User "bob" cannot get resource "pods" in API group "" in the namespace "default"`, plus
    /// `: <reason>` when the authorizer gave one.
    pub fn forbidden_request(info: &RequestInfo, user: &str, reason: &str) -> Self {
        let mut message = if !info.is_resource_request {
            format!("User {} cannot {} path {}", go_quote(user), info.verb, go_quote(&info.path))
        } else {
            let resource =
                if info.subresource.is_empty() { info.resource.clone() } else { format!("{}/{}", info.resource, info.subresource) };
            let scope = if info.namespace.is_empty() {
                "at the cluster scope".to_owned()
            } else {
                format!("in the namespace {}", go_quote(&info.namespace))
            };
            format!(
                "User {} cannot {} resource {} in API group {} {scope}",
                go_quote(user),
                info.verb,
                go_quote(&resource),
                go_quote(&info.api_group)
            )
        };
        if !reason.is_empty() {
            message = format!("{message}: {reason}");
        }
        Self::forbidden(GroupResource::new(&info.api_group, &info.resource), &info.name, message)
    }

    /// 405 `MethodNotAllowed`: `create is not supported on resources of kind "componentstatuses"`.
    pub fn method_not_supported(resource: GroupResource<'_>, action: &str) -> Self {
        let message = format!("{action} is not supported on resources of kind {}", go_quote(&resource.to_string()));
        Self::new(405, StatusReason::MethodNotAllowed, message).with_details(resource_details(resource, ""))
    }

    /// 406 `NotAcceptable`: `only the following media types are accepted: application/json, ...`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        let message = format!("only the following media types are accepted: {}", accepted.join(", "));
        Self::new(406, StatusReason::NotAcceptable, message)
    }

    /// 415 `UnsupportedMediaType`: `the body of the request was in an unknown format - accepted
    /// media types include: ...`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        let message = format!("the body of the request was in an unknown format - accepted media types include: {}", accepted.join(", "));
        Self::new(415, StatusReason::UnsupportedMediaType, message)
    }

    /// 410 `Gone` (upstream's deprecated `NewGone`; new code uses [`ApiError::resource_expired`]).
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Gone, message)
    }

    /// 410 `Expired` (`NewResourceExpired`): the requested resource version is no longer
    /// available, e.g. [`EXPIRED_LIST`], [`EXPIRED_WATCH`], [`CONTINUE_EXPIRED`]. client-go's
    /// reflector relists on it.
    pub fn resource_expired(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Expired, message)
    }

    /// 410 `Expired` of the watch cache: `too old resource version: 5 (10)`.
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::resource_expired(format!("too old resource version: {requested} ({oldest})"))
    }

    /// 410 `Expired` for a compacted `continue` token, carrying a fresh token in
    /// `metadata.continue` ([`INCONSISTENT_CONTINUE`]).
    pub fn inconsistent_continue(token: impl Into<String>) -> Self {
        let mut e = Self::resource_expired(INCONSISTENT_CONTINUE);
        e.continue_token = Some(token.into());
        e
    }

    /// 413 `RequestEntityTooLarge`: `Request entity too large: <message>`.
    pub fn request_entity_too_large(message: &str) -> Self {
        Self::new(413, StatusReason::RequestEntityTooLarge, format!("Request entity too large: {message}"))
    }

    /// 429 `TooManyRequests` with a `Retry-After` (`NewTooManyRequests`; details are written
    /// even when `retry_after_seconds` is 0, as upstream does).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        let details = StatusDetails { retry_after_seconds: non_zero(retry_after_seconds), ..Default::default() };
        Self::new(429, StatusReason::TooManyRequests, message).with_details(details)
    }

    /// 500 `InternalError`: `Internal error occurred: <err>`, the error also as the one cause.
    pub fn internal(err: impl fmt::Display) -> Self {
        let text = err.to_string();
        let details =
            StatusDetails { causes: vec![StatusCause { message: Some(text.clone()), ..Default::default() }], ..Default::default() };
        Self::new(500, StatusReason::InternalError, format!("Internal error occurred: {text}")).with_details(details)
    }

    /// 500 `ServerTimeout` (`NewServerTimeout`): `The get operation against pods could not be
    /// completed at this time, please try again.`
    pub fn server_timeout(resource: GroupResource<'_>, operation: &str, retry_after_seconds: i32) -> Self {
        let message = format!("The {operation} operation against {resource} could not be completed at this time, please try again.");
        let mut details = resource_details(resource, operation);
        details.retry_after_seconds = non_zero(retry_after_seconds);
        Self::new(500, StatusReason::ServerTimeout, message).with_details(details)
    }

    /// 503 `ServiceUnavailable` with the given message.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, StatusReason::ServiceUnavailable, message)
    }

    /// 504 `Timeout` (`NewTimeoutError`): `Timeout: <message>`. The request-timeout filter uses
    /// `request did not complete within requested timeout - context deadline exceeded`, 0.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        let details = StatusDetails { retry_after_seconds: non_zero(retry_after_seconds), ..Default::default() };
        Self::new(504, StatusReason::Timeout, format!("Timeout: {message}")).with_details(details)
    }

    /// `Retry-After` in seconds, when the details ask for one.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details.as_ref().and_then(|d| d.retry_after_seconds).filter(|s| *s > 0)
    }

    /// The `Status` body: kind `Status`, apiVersion `v1`, metadata `{}`, status `Failure`.
    pub fn to_status(&self) -> Status {
        Status {
            kind: Some("Status".to_owned()),
            api_version: Some("v1".to_owned()),
            metadata: Some(ListMeta { r#continue: self.continue_token.clone(), ..Default::default() }),
            status: Some("Failure".to_owned()),
            message: non_empty(&self.message),
            reason: non_empty(self.reason.as_str()),
            details: self.details.as_deref().cloned(),
            code: Some(i32::from(self.code)),
        }
    }

    /// The HTTP response: the `Status` in `format` (JSON unless the client negotiated YAML or
    /// protobuf), with `Content-Type`, `X-Content-Type-Options: nosniff` and, when the details
    /// carry one, `Retry-After`.
    pub fn into_response(&self, format: Format) -> http::Response<Bytes> {
        let status = self.to_status();
        let (format, body) = match codec::encode(format, &status) {
            Ok(body) => (format, body),
            // YAML or protobuf failed (cannot happen for a Status, but never fail the error
            // path): fall back to JSON.
            Err(_) => (Format::Json, serde_json::to_vec(&status).unwrap_or_default()),
        };
        let code = http::StatusCode::from_u16(self.code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = code;
        let headers = response.headers_mut();
        headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(format.content_type()));
        headers.insert(http::header::X_CONTENT_TYPE_OPTIONS, http::HeaderValue::from_static("nosniff"));
        if let Some(seconds) = self.retry_after_seconds() {
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}

/// `field.ErrorType`: the kind of a validation error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl FieldErrorType {
    /// The cause's `reason` (`FieldValueRequired`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human text (`Required value`, ...).
    pub fn description(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }
}

/// The offending value of a [`FieldError`], printed as Go's `%v`/`%q` would.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not shown (upstream's `omitValue`).
    Omitted,
    /// `null`.
    Null,
    /// Quoted, as Go's `%q`.
    String(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// Any other value, already formatted as it should appear.
    Raw(String),
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}
impl From<String> for BadValue {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}
impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}
impl From<i32> for BadValue {
    fn from(v: i32) -> Self {
        Self::Int(i64::from(v))
    }
}
impl From<f64> for BadValue {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}
impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

/// One validation error on one field (upstream's `field.Error`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub error_type: FieldErrorType,
    /// The JSON path, e.g. `spec.containers[0].name`.
    pub field: String,
    pub bad_value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn new(error_type: FieldErrorType, field: impl Into<String>, bad_value: BadValue, detail: impl Into<String>) -> Self {
        Self { error_type, field: field.into(), bad_value, detail: detail.into() }
    }

    /// `field.Required`: `Required value[: detail]`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, BadValue::String(String::new()), detail)
    }

    /// `field.Invalid`: `Invalid value: "x"[: detail]`.
    pub fn invalid(field: impl Into<String>, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Invalid, field, value.into(), detail)
    }

    /// `field.TypeInvalid`: `Invalid value: "x"[: detail]`, reason `FieldValueTypeInvalid`.
    pub fn type_invalid(field: impl Into<String>, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::TypeInvalid, field, value.into(), detail)
    }

    /// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(field: impl Into<String>, value: impl Into<BadValue>, valid: &[&str]) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorType::NotSupported, field, value.into(), detail)
    }

    /// `field.Forbidden`: `Forbidden[: detail]`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, BadValue::String(String::new()), detail)
    }

    /// `field.Duplicate`: `Duplicate value: "x"`.
    pub fn duplicate(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, value.into(), "")
    }

    /// `field.NotFound`: `Not found: "x"`.
    pub fn not_found(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::NotFound, field, value.into(), "")
    }

    /// `field.TooLong`: `Too long: may not be more than 63 bytes` (negative: `value is too long`).
    pub fn too_long(field: impl Into<String>, max_length: i64) -> Self {
        let detail = if max_length >= 0 {
            format!("may not be more than {max_length} {}", if max_length == 1 { "byte" } else { "bytes" })
        } else {
            "value is too long".to_owned()
        };
        Self::new(FieldErrorType::TooLong, field, BadValue::Omitted, detail)
    }

    /// `field.TooMany`: `Too many: 5: must have at most 3 items` (`actual` `None` omits it).
    pub fn too_many(field: impl Into<String>, actual: Option<i64>, max_quantity: i64) -> Self {
        let detail = if max_quantity >= 0 {
            format!("must have at most {max_quantity} {}", if max_quantity == 1 { "item" } else { "items" })
        } else {
            "has too many items".to_owned()
        };
        let value = actual.filter(|a| *a >= 0).map_or(BadValue::Omitted, BadValue::Int);
        Self::new(FieldErrorType::TooMany, field, value, detail)
    }

    /// `field.InternalError`: `Internal error: <err>`.
    pub fn internal(field: impl Into<String>, err: impl fmt::Display) -> Self {
        Self::new(FieldErrorType::Internal, field, BadValue::Null, err.to_string())
    }

    /// The text without the field (upstream's `ErrorBody()`), the cause's `message`.
    pub fn body(&self) -> String {
        use FieldErrorType as T;
        let mut s = match (self.error_type, &self.bad_value) {
            (T::Required | T::Forbidden | T::TooLong | T::Internal, _) | (_, BadValue::Omitted) => self.error_type.description().to_owned(),
            (t, v) => {
                let value = match v {
                    BadValue::Omitted => String::new(), // handled by the arm above
                    BadValue::Null => "null".to_owned(),
                    BadValue::String(s) => go_quote(s),
                    BadValue::Int(i) => i.to_string(),
                    BadValue::Float(f) => f.to_string(),
                    BadValue::Bool(b) => b.to_string(),
                    BadValue::Raw(r) => r.clone(),
                };
                format!("{}: {value}", t.description())
            }
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    /// `field: body`, as upstream's `Error()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Upstream's `ErrorList.ToAggregate().Error()`: duplicates dropped; one message bare, several
/// joined with `, ` in brackets; `None` for none.
pub fn aggregate(messages: impl Iterator<Item = String>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for m in messages {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

fn resource_details(resource: GroupResource<'_>, name: &str) -> StatusDetails {
    StatusDetails { name: non_empty(name), group: non_empty(resource.group), kind: non_empty(resource.resource), ..Default::default() }
}

/// Go's `omitempty` for strings.
fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

fn non_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> GroupResource<'static> {
        GroupResource::new("", "pods")
    }

    fn deployments() -> GroupResource<'static> {
        GroupResource::new("apps", "deployments")
    }

    fn status_json(e: &ApiError) -> serde_json::Value {
        serde_json::to_value(e.to_status()).unwrap()
    }

    /// Exact bodies, as kube-apiserver writes them (field order is checked separately).
    #[test]
    fn constructors_write_upstream_bodies() {
        let cases: Vec<(ApiError, serde_json::Value)> = vec![
            (
                ApiError::not_found(pods(), "x"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"pods \"x\" not found","reason":"NotFound",
                       "details":{"name":"x","kind":"pods"},"code":404}),
            ),
            (
                ApiError::not_found(deployments(), "x"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"deployments.apps \"x\" not found","reason":"NotFound",
                       "details":{"name":"x","group":"apps","kind":"deployments"},"code":404}),
            ),
            (
                ApiError::path_not_found(),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"the server could not find the requested resource","reason":"NotFound",
                       "details":{},"code":404}),
            ),
            (
                ApiError::already_exists(pods(), "x"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"pods \"x\" already exists","reason":"AlreadyExists",
                       "details":{"name":"x","kind":"pods"},"code":409}),
            ),
            (
                ApiError::generate_name_conflict(pods(), "x-abcde", 1),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"pods \"x-abcde\" already exists, the server was not able to generate a unique name for the object",
                       "reason":"AlreadyExists",
                       "details":{"name":"x-abcde","kind":"pods","retryAfterSeconds":1},"code":409}),
            ),
            (
                ApiError::conflict(pods(), "x"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Operation cannot be fulfilled on pods \"x\": the object has been modified; please apply your changes to the latest version and try again",
                       "reason":"Conflict","details":{"name":"x","kind":"pods"},"code":409}),
            ),
            (
                ApiError::conflict_because(
                    GroupResource::new("", "namespaces"),
                    "ns",
                    "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
                ),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Operation cannot be fulfilled on namespaces \"ns\": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
                       "reason":"Conflict","details":{"name":"ns","kind":"namespaces"},"code":409}),
            ),
            (
                ApiError::invalid(GroupKind::new("", "Pod"), "x", &[FieldError::required("spec.containers", "")]),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Pod \"x\" is invalid: spec.containers: Required value","reason":"Invalid",
                       "details":{"name":"x","kind":"Pod","causes":[
                           {"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}]},
                       "code":422}),
            ),
            (
                ApiError::invalid(
                    GroupKind::new("apps", "Deployment"),
                    "web",
                    &[
                        FieldError::invalid(
                            "metadata.name",
                            "Web",
                            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                        ),
                        FieldError::invalid("spec.replicas", -1i64, "must be greater than or equal to 0"),
                        FieldError::invalid("spec.replicas", -1i64, "must be greater than or equal to 0"),
                    ],
                ),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Deployment.apps \"web\" is invalid: [metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.replicas: Invalid value: -1: must be greater than or equal to 0]",
                       "reason":"Invalid",
                       "details":{"name":"web","group":"apps","kind":"Deployment","causes":[
                           {"reason":"FieldValueInvalid","message":"Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","field":"metadata.name"},
                           {"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"},
                           {"reason":"FieldValueInvalid","message":"Invalid value: -1: must be greater than or equal to 0","field":"spec.replicas"}]},
                       "code":422}),
            ),
            (
                ApiError::invalid(GroupKind::new("", "ConfigMap"), "c", &[]),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"ConfigMap \"c\" is invalid","reason":"Invalid",
                       "details":{"name":"c","kind":"ConfigMap"},"code":422}),
            ),
            (
                ApiError::bad_request("the server rejected our request for an unknown reason"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"the server rejected our request for an unknown reason","reason":"BadRequest","code":400}),
            ),
            (
                ApiError::unauthorized(),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Unauthorized","reason":"Unauthorized","code":401}),
            ),
            (
                ApiError::unauthorized_because(""),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"not authorized","reason":"Unauthorized","code":401}),
            ),
            (
                ApiError::forbidden(pods(), "x", "not allowed"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"pods \"x\" is forbidden: not allowed","reason":"Forbidden",
                       "details":{"name":"x","kind":"pods"},"code":403}),
            ),
            (
                ApiError::forbidden(GroupResource::default(), "", "no"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"forbidden: no","reason":"Forbidden","details":{},"code":403}),
            ),
            (
                ApiError::method_not_supported(GroupResource::new("", "componentstatuses"), "create"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"create is not supported on resources of kind \"componentstatuses\"",
                       "reason":"MethodNotAllowed","details":{"kind":"componentstatuses"},"code":405}),
            ),
            (
                ApiError::not_acceptable(&["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
                       "reason":"NotAcceptable","code":406}),
            ),
            (
                ApiError::gone("gone away"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"gone away","reason":"Gone","code":410}),
            ),
            (
                ApiError::resource_expired(EXPIRED_WATCH),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"The resourceVersion for the provided watch is too old.","reason":"Expired","code":410}),
            ),
            (
                ApiError::too_old_resource_version(5, 10),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"too old resource version: 5 (10)","reason":"Expired","code":410}),
            ),
            (
                ApiError::inconsistent_continue("tok"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{"continue":"tok"},"status":"Failure",
                       "message":INCONSISTENT_CONTINUE,"reason":"Expired","code":410}),
            ),
            (
                ApiError::request_entity_too_large("limit is 3145728"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge","code":413}),
            ),
            (
                ApiError::unsupported_media_type(&["application/json", "application/yaml"]),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
                       "reason":"UnsupportedMediaType","code":415}),
            ),
            (
                ApiError::too_many_requests("too many", 1),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"too many","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}),
            ),
            (
                ApiError::internal("etcd is down"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Internal error occurred: etcd is down","reason":"InternalError",
                       "details":{"causes":[{"message":"etcd is down"}]},"code":500}),
            ),
            (
                ApiError::server_timeout(pods(), "get", 2),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"The get operation against pods could not be completed at this time, please try again.",
                       "reason":"ServerTimeout","details":{"name":"get","kind":"pods","retryAfterSeconds":2},"code":500}),
            ),
            (
                ApiError::service_unavailable("the server is shutting down"),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"the server is shutting down","reason":"ServiceUnavailable","code":503}),
            ),
            (
                ApiError::timeout("request did not complete within requested timeout - context deadline exceeded", 0),
                json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                       "message":"Timeout: request did not complete within requested timeout - context deadline exceeded",
                       "reason":"Timeout","details":{},"code":504}),
            ),
        ];
        for (error, want) in cases {
            assert_eq!(status_json(&error), want, "{}", error.message);
            assert_eq!(error.to_string(), error.message);
        }
    }

    /// The body's keys come out in upstream's order (Go writes struct fields in order).
    #[test]
    fn json_field_order_is_upstreams() {
        let body = serde_json::to_string(&ApiError::not_found(deployments(), "x").to_status()).unwrap();
        assert_eq!(
            body,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"x\" not found","reason":"NotFound","details":{"name":"x","group":"apps","kind":"deployments"},"code":404}"#
        );
    }

    #[test]
    fn forbidden_request_messages() {
        let mut info = RequestInfo {
            is_resource_request: true,
            verb: "get".into(),
            api_prefix: "api".into(),
            api_version: "v1".into(),
            namespace: "default".into(),
            resource: "pods".into(),
            name: "x".into(),
            ..Default::default()
        };
        let e = ApiError::forbidden_request(&info, "bob", "");
        assert_eq!(e.message, r#"pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default""#);
        info.subresource = "log".into();
        info.namespace.clear();
        info.name.clear();
        info.verb = "list".into();
        let e = ApiError::forbidden_request(&info, "bob", "RBAC: denied");
        assert_eq!(
            e.message,
            r#"pods is forbidden: User "bob" cannot list resource "pods/log" in API group "" at the cluster scope: RBAC: denied"#
        );
        let info = RequestInfo { verb: "get".into(), path: "/metrics".into(), ..Default::default() };
        let e = ApiError::forbidden_request(&info, "system:anonymous", "");
        assert_eq!(e.message, r#"forbidden: User "system:anonymous" cannot get path "/metrics""#);
        assert_eq!(e.code, 403);
    }

    #[test]
    fn field_error_bodies() {
        let cases = [
            (FieldError::required("a", ""), "a: Required value"),
            (FieldError::required("a", "must be set"), "a: Required value: must be set"),
            (FieldError::forbidden("a", "disallowed"), "a: Forbidden: disallowed"),
            (FieldError::invalid("a", true, ""), "a: Invalid value: true"),
            (FieldError::invalid("a", 1.5, "x"), "a: Invalid value: 1.5: x"),
            (FieldError::invalid("a", BadValue::Null, "x"), "a: Invalid value: null: x"),
            (FieldError::invalid("a", "q\"uote\n", ""), "a: Invalid value: \"q\\\"uote\\n\""),
            (
                FieldError::not_supported("spec.restartPolicy", "Sometimes", &["Always", "Never", "OnFailure"]),
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\", \"OnFailure\"",
            ),
            (FieldError::duplicate("a[1]", "x"), "a[1]: Duplicate value: \"x\""),
            (FieldError::not_found("a", "x"), "a: Not found: \"x\""),
            (FieldError::too_long("metadata.name", 63), "metadata.name: Too long: may not be more than 63 bytes"),
            (FieldError::too_long("a", 1), "a: Too long: may not be more than 1 byte"),
            (FieldError::too_many("a", Some(5), 3), "a: Too many: 5: must have at most 3 items"),
            (FieldError::too_many("a", None, 1), "a: Too many: must have at most 1 item"),
            (FieldError::internal("a", "boom"), "a: Internal error: boom"),
            (FieldError::type_invalid("a", "x", "expected int"), "a: Invalid value: \"x\": expected int"),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
        assert_eq!(FieldError::type_invalid("a", "x", "").error_type.reason(), "FieldValueTypeInvalid");
        // A cause without a field omits it, as Go's omitempty does.
        let e = ApiError::invalid(GroupKind::new("", "Pod"), "x", &[FieldError::forbidden("", "no")]);
        assert_eq!(status_json(&e)["details"]["causes"], json!([{"reason":"FieldValueForbidden","message":"Forbidden: no"}]));
    }

    #[test]
    fn aggregate_formatting() {
        let one = |s: &str| vec![s.to_owned()];
        assert_eq!(aggregate(Vec::<String>::new().into_iter()), None);
        assert_eq!(aggregate(one("a").into_iter()), Some("a".into()));
        assert_eq!(aggregate(vec!["a".into(), "a".into()].into_iter()), Some("a".into()));
        assert_eq!(aggregate(vec!["a".into(), "b".into(), "a".into()].into_iter()), Some("[a, b]".into()));
    }

    #[test]
    fn response_json_with_headers() {
        let r = ApiError::too_many_requests("slow down", 3).into_response(Format::Json);
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(r.headers()["retry-after"], "3");
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        let body: serde_json::Value = serde_json::from_slice(r.body()).unwrap();
        assert_eq!(body["reason"], "TooManyRequests");

        let r = ApiError::not_found(pods(), "x").into_response(Format::Json);
        assert_eq!(r.status(), 404);
        assert!(!r.headers().contains_key("retry-after"));
    }

    #[test]
    fn response_yaml_and_protobuf() {
        let r = ApiError::not_found(pods(), "x").into_response(Format::Yaml);
        assert_eq!(r.headers()["content-type"], "application/yaml");
        let text = std::str::from_utf8(r.body()).unwrap();
        assert!(text.contains("reason: NotFound"), "{text}");
        assert!(text.contains("kind: Status"), "{text}");

        let r = ApiError::not_found(pods(), "x").into_response(Format::Protobuf);
        assert_eq!(r.headers()["content-type"], "application/vnd.kubernetes.protobuf");
        assert!(r.body().starts_with(codec::PROTOBUF_MAGIC));
        let back: Status = codec::decode(Format::Protobuf, r.body()).unwrap();
        // Protobuf writes Go's value fields (`metadata.selfLink`, `details.uid`, …) even when
        // empty, so they come back present; as upstream writes the object, it is the same.
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(ApiError::not_found(pods(), "x").to_status()).unwrap());
    }
}
