//! How a custom resource changes version (apiextensions-apiserver's `conversion` package): a
//! definition's `spec.conversion` is `None`, which only rewrites `apiVersion`, or `Webhook`,
//! which posts a `ConversionReview` to the definition's webhook over HTTPS (verified with its
//! `caBundle`) and checks the answer as upstream's webhook converter does: the request's uid
//! echoed, `Success`, one object per object sent, in the desired version and of the same kind,
//! with the same name, namespace and uid; the converted object keeps the original's metadata
//! but for labels and annotations.
//!
//! Conversion runs where a stored object is read in another version and where a written one
//! is encoded in the storage version, which are synchronous steps of the read and write paths;
//! a webhook call there blocks its thread as upstream's blocks its goroutine, telling tokio
//! first (`block_in_place`) so the runtime's other tasks move to other threads.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};

use crate::registry::objects::Kind;
use crate::selectors::{dns1035_label_errors, dns1123_subdomain_errors};
use crate::status::{BadValue, FieldError, FieldErrorType};

/// How long a webhook may take to answer (upstream's webhook client timeout).
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest `ConversionReview` answer read (a bound on what a webhook can make kapi hold).
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The `ConversionReview` versions kapi speaks, in no particular order: the definition's
/// `conversionReviewVersions` order picks.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A definition's conversion.
#[derive(Clone)]
pub enum Conversion {
    /// `strategy: None`: objects differ only in `apiVersion`.
    None,
    Webhook(Arc<Webhook>),
    /// A webhook whose client cannot be made (a CA bundle that does not parse): every
    /// conversion fails with this message, as upstream's converter factory fails.
    Broken(String),
}

/// A conversion webhook: where it is, how its certificate is checked, which review it speaks.
pub struct Webhook {
    /// `https://host:port/path`, as errors name it.
    url: String,
    host: String,
    port: u16,
    path: String,
    server_name: ServerName<'static>,
    tls: Arc<rustls::ClientConfig>,
    review_version: &'static str,
}

impl Conversion {
    /// The conversion of a definition (`apiextensions.k8s.io/v1` JSON).
    pub fn of(definition: &Value) -> Conversion {
        let conversion = &definition["spec"]["conversion"];
        if conversion["strategy"] != "Webhook" {
            return Conversion::None;
        }
        match Webhook::new(&conversion["webhook"]) {
            Ok(webhook) => Conversion::Webhook(Arc::new(webhook)),
            Err(e) => Conversion::Broken(e),
        }
    }

    /// `object` (of `object`'s kind) in version `to` of its group.
    pub fn convert(&self, object: Value, to: &Kind) -> Result<Value, String> {
        let desired = to.api_version();
        if object["apiVersion"] == desired.as_str() {
            return Ok(object);
        }
        match self {
            Conversion::None => Ok(with_api_version(object, &desired)),
            Conversion::Webhook(webhook) => webhook.convert(object, &desired),
            Conversion::Broken(e) => Err(e.clone()),
        }
    }
}

fn with_api_version(mut object: Value, api_version: &str) -> Value {
    if let Some(fields) = object.as_object_mut() {
        fields.insert("apiVersion".into(), Value::String(api_version.to_owned()));
    }
    object
}

/// Go's `GroupVersionKind.String()` of an object: `group/version, Kind=Kind`.
fn gvk_of(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group_version = if api_version.contains('/') { api_version.to_owned() } else { format!("/{api_version}") };
    format!("{group_version}, Kind={}", object["kind"].as_str().unwrap_or_default())
}

impl Webhook {
    /// The webhook of `spec.conversion.webhook` (its `clientConfig` and
    /// `conversionReviewVersions`), validated when the definition was written.
    fn new(webhook: &Value) -> Result<Webhook, String> {
        let config = &webhook["clientConfig"];
        let review_version = webhook["conversionReviewVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|v| REVIEW_VERSIONS.into_iter().find(|known| v == known))
            .ok_or("no supported conversion review versions")?;
        let (url, host, port, path) = match (config["url"].as_str(), config["service"].as_object()) {
            (Some(url), _) => {
                let uri: http::Uri = url.parse().map_err(|e| format!("invalid webhook url {url:?}: {e}"))?;
                let host = uri.host().ok_or_else(|| format!("invalid webhook url {url:?}: no host"))?;
                let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
                let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
                (url.to_owned(), host, uri.port_u16().unwrap_or(443), path)
            }
            // Upstream's default resolver: the service's DNS name in the cluster.
            (None, Some(service)) => {
                let text = |field: &str| service.get(field).and_then(Value::as_str).unwrap_or_default();
                let host = format!("{}.{}.svc", text("name"), text("namespace"));
                let port = service.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(443);
                let path = match text("path") {
                    "" => "/".to_owned(),
                    path => path.to_owned(),
                };
                (format!("https://{host}:{port}{path}"), host, port, path)
            }
            (None, None) => return Err("the conversion webhook has neither url nor service".into()),
        };
        let server_name = ServerName::try_from(host.clone()).map_err(|e| format!("invalid webhook host {host:?}: {e}"))?;
        let tls = client_config(config["caBundle"].as_str())?;
        Ok(Webhook { url, host, port, path, server_name, tls, review_version })
    }

    /// One object converted to `desired` (`group/version`) by the webhook.
    fn convert(&self, object: Value, desired: &str) -> Result<Value, String> {
        let gvk = gvk_of(&object);
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{}", self.review_version),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [&object]},
        });
        let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
        let answer = block_on(self.post(body)).map_err(|e| format!("conversion webhook for {gvk} failed: Post {:?}: {e}", self.url))?;
        let converted = self.converted_objects(&uid, &answer).map_err(|e| format!("conversion webhook for {gvk} failed: {e}"))?;
        let [converted] =
            <[Value; 1]>::try_from(converted).map_err(|_| format!("conversion webhook for {gvk} failed, no objects returned"))?;
        let received = converted["apiVersion"].as_str().unwrap_or_default();
        if received != desired {
            return Err(format!(
                "conversion webhook for {gvk} returned invalid object at index 0: invalid groupVersion (expected {desired}, received {received})"
            ));
        }
        if converted["kind"] != object["kind"] {
            return Err(format!(
                "conversion webhook for {gvk} returned invalid object at index 0: invalid kind (expected {}, received {})",
                object["kind"].as_str().unwrap_or_default(),
                converted["kind"].as_str().unwrap_or_default()
            ));
        }
        same_identity(&object, &converted).map_err(|e| format!("conversion webhook for {gvk} returned invalid object: {e}"))?;
        restore_metadata(&object, converted).map_err(|e| format!("conversion webhook for {gvk} returned invalid metadata: {e}"))
    }

    /// The objects of a webhook's answer to the review `uid`, checked as upstream checks it.
    fn converted_objects(&self, uid: &str, answer: &[u8]) -> Result<Vec<Value>, String> {
        let review: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
        if self.review_version == "v1" {
            let (api_version, kind) = (review["apiVersion"].as_str().unwrap_or_default(), review["kind"].as_str().unwrap_or_default());
            if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
                return Err(format!(
                    "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                    gvk_of(&review)
                ));
            }
        }
        let response = review.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
        // v1beta1 answers were never checked for their uid; upstream keeps it so.
        let answered = response["uid"].as_str().unwrap_or_default();
        if self.review_version == "v1" && answered != uid {
            return Err(format!("expected response.uid={uid:?}, got {answered:?}"));
        }
        let status = response["result"]["status"].as_str().unwrap_or_default();
        if status != "Success" {
            return Err(match response["result"]["message"].as_str().filter(|m| !m.is_empty()) {
                Some(message) => message.to_owned(),
                None => format!("response.result.status was '{status}', not 'Success'"),
            });
        }
        Ok(response["convertedObjects"].as_array().cloned().unwrap_or_default())
    }

    /// The review posted, its answer's body read (2xx only), all within the webhook timeout.
    async fn post(&self, body: Vec<u8>) -> Result<Bytes, String> {
        use http_body_util::BodyExt;
        let call = async {
            let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port)).await.map_err(|e| e.to_string())?;
            let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
                .connect(self.server_name.clone(), tcp)
                .await
                .map_err(|e| format!("tls: {e}"))?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
            tokio::spawn(connection);
            let authority = if self.port == 443 { self.host.clone() } else { format!("{}:{}", self.host, self.port) };
            let request = http::Request::post(self.path.as_str())
                .header(http::header::HOST, authority)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json")
                .body(http_body_util::Full::new(Bytes::from(body)))
                .map_err(|e| e.to_string())?;
            let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            let answer = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            if !status.is_success() {
                let text = String::from_utf8_lossy(&answer[..answer.len().min(1024)]).into_owned();
                return Err(format!("the server responded with the status code {} ({text})", status.as_u16()));
            }
            Ok(answer)
        };
        tokio::time::timeout(WEBHOOK_TIMEOUT, call).await.map_err(|_| "context deadline exceeded".to_owned())?
    }
}

/// Upstream's `validateConvertedObject`: kind, name, namespace and uid unchanged.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let text = |object: &Value, field: &str| object["metadata"][field].as_str().unwrap_or_default().to_owned();
    let kind = |object: &Value| object["kind"].as_str().unwrap_or_default().to_owned();
    if kind(original) != kind(converted) {
        return Err(format!("must have the same kind: {} != {}", kind(original), kind(converted)));
    }
    for (field, name) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (before, after) = (text(original, field), text(converted, field));
        if before != after {
            return Err(format!("must have the same {name}: {before} != {after}"));
        }
    }
    Ok(())
}

/// Upstream's `restoreObjectMeta`: the converted object takes the original's metadata, but for
/// the labels and annotations the webhook answered (string maps).
fn restore_metadata(original: &Value, mut converted: Value) -> Result<Value, String> {
    let answered = match converted.get("metadata") {
        Some(Value::Object(meta)) => meta.clone(),
        Some(other) => return Err(format!("invalid metadata of type {} in converted object", json_type(other))),
        None => return Err("missing metadata in converted object".into()),
    };
    let mut metadata = original["metadata"].as_object().cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
            }
            Some(Value::Object(map)) => {
                if let Some((key, value)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!("metadata.{field}[{key}] must be a string, but is {} in converted object", json_type(value)));
                }
                metadata.insert(field.into(), Value::Object(map.clone()));
            }
            Some(other) => return Err(format!("invalid metadata.{field} of type {} in converted object", json_type(other))),
        }
    }
    converted["metadata"] = Value::Object(metadata);
    Ok(converted)
}

/// The Go type a JSON value decodes to, as upstream's messages name it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The TLS client a webhook is called with: its `caBundle` (base64 of PEM in the JSON) as the
/// only roots, or the system's roots without one, as upstream's client.
fn client_config(ca_bundle: Option<&str>) -> Result<Arc<rustls::ClientConfig>, String> {
    let pem = match ca_bundle.filter(|b| !b.is_empty()) {
        Some(bundle) => base64::engine::general_purpose::STANDARD.decode(bundle).map_err(|e| format!("caBundle: {e}"))?,
        None => std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default(),
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots.add(cert).map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    if ca_bundle.is_some_and(|b| !b.is_empty()) && roots.is_empty() {
        return Err("unable to load root certificates: unable to parse bytes as PEM block".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Runs `future` to completion from synchronous code: on the server's multi-threaded runtime
/// after telling it this thread blocks; elsewhere (a single-threaded runtime, none at all) on
/// a thread of its own.
fn block_on<F: std::future::Future + Send>(future: F) -> F::Output
where
    F::Output: Send,
{
    if let Ok(handle) = tokio::runtime::Handle::try_current()
        && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
    {
        return tokio::task::block_in_place(|| handle.block_on(future));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime").block_on(future))
            .join()
            .expect("the conversion thread does not panic")
    })
}

/// `validateCustomResourceConversion` of `spec.conversion` (v1 JSON; the paths are the
/// internal type's, as upstream reports them: `spec.conversion.webhookClientConfig`).
pub fn validate(conversion: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !conversion.is_object() {
        return errs;
    }
    let path = "spec.conversion";
    let strategy = conversion["strategy"].as_str().unwrap_or_default();
    match strategy {
        "" => errs.push(FieldError::required(format!("{path}.strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(format!("{path}.strategy"), other, &["None", "Webhook"])),
    }
    let client_config = &conversion["webhook"]["clientConfig"];
    let review_versions = &conversion["webhook"]["conversionReviewVersions"];
    if strategy != "Webhook" {
        if client_config.is_object() {
            errs.push(FieldError::forbidden(
                format!("{path}.webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review_versions.as_array().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                format!("{path}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return errs;
    }
    let config_path = format!("{path}.webhookClientConfig");
    if !client_config.is_object() {
        errs.push(FieldError::required(&config_path, "required when strategy is set to Webhook"));
    } else {
        match (client_config["url"].as_str(), client_config["service"].as_object()) {
            (Some(url), None) => errs.extend(validate_url(&format!("{config_path}.url"), url)),
            (None, Some(_)) => errs.extend(validate_service(&format!("{config_path}.service"), &client_config["service"])),
            _ => errs.push(FieldError::required(&config_path, "exactly one of url or service is required")),
        }
        if let Some(bundle) = client_config["caBundle"].as_str().filter(|b| !b.is_empty())
            && let Err(e) = client_config_for(bundle)
        {
            errs.push(FieldError::invalid(format!("{config_path}.caBundle"), bundle, e));
        }
    }
    errs.extend(validate_review_versions(&format!("{path}.conversionReviewVersions"), review_versions));
    errs
}

fn client_config_for(bundle: &str) -> Result<(), String> {
    client_config(Some(bundle)).map(drop)
}

/// `webhook.ValidateWebhookURL` with https required.
fn validate_url(path: &str, url: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let Some((scheme, rest)) = url.split_once("://") else {
        let scheme = url.split_once(':').map_or("", |(s, _)| s);
        errs.push(FieldError::invalid(path, scheme, format!("'https' is the only allowed URL scheme{FORM}")));
        errs.push(FieldError::invalid(path, "", format!("host must be specified{FORM}")));
        return errs;
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(path, scheme, format!("'https' is the only allowed URL scheme{FORM}")));
    }
    let (rest, fragment) = rest.split_once('#').map_or((rest, None), |(r, f)| (r, Some(f)));
    let (rest, query) = rest.split_once('?').map_or((rest, None), |(r, q)| (r, Some(q)));
    let authority = rest.split('/').next().unwrap_or_default();
    let (user, host) = authority.rsplit_once('@').map_or((None, authority), |(u, h)| (Some(u), h));
    if host.is_empty() {
        errs.push(FieldError::invalid(path, host, format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(path, user, "user information is not permitted in the URL"));
    }
    if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
        errs.push(FieldError::invalid(path, fragment, "fragments are not permitted in the URL"));
    }
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        errs.push(FieldError::invalid(path, query, "query parameters are not permitted in the URL"));
    }
    errs
}

/// `webhook.ValidateWebhookService`.
fn validate_service(path: &str, service: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |field: &str| service[field].as_str().unwrap_or_default();
    if text("name").is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    if text("namespace").is_empty() {
        errs.push(FieldError::required(format!("{path}.namespace"), ""));
    }
    if let Some(port) = service["port"].as_i64()
        && !(1..=65535).contains(&port)
    {
        errs.push(FieldError::invalid(format!("{path}.port"), port, "port is not valid: must be between 1 and 65535, inclusive"));
    }
    let url_path = text("path");
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    let path_field = format!("{path}.path");
    if url_path == "//" {
        errs.push(FieldError::invalid(&path_field, url_path, "segment[0] may not be empty"));
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&path_field, url_path, "must start with a '/'"));
    }
    let steps = url_path.strip_prefix('/').unwrap_or(url_path);
    let steps = steps.strip_suffix('/').unwrap_or(steps);
    for (i, step) in steps.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(&path_field, url_path, format!("segment[{i}] may not be empty")));
            continue;
        }
        for failure in dns1123_subdomain_errors(step) {
            errs.push(FieldError::invalid(&path_field, url_path, format!("segment[{i}]: {failure}")));
        }
    }
    errs
}

/// `validateConversionReviewVersions` (a recognized version required, as for new definitions).
fn validate_review_versions(path: &str, versions: &Value) -> Vec<FieldError> {
    let versions: Vec<&str> = versions.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if versions.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, version) in versions.iter().enumerate() {
        if !seen.insert(*version) {
            errs.push(FieldError::invalid(format!("{path}[{i}]"), *version, "duplicate version"));
            continue;
        }
        for failure in dns1035_label_errors(version) {
            errs.push(FieldError::invalid(format!("{path}[{i}]"), *version, failure));
        }
    }
    if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        let listed = format!("[]string{{{}}}", versions.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", "));
        errs.push(FieldError::new(FieldErrorType::Invalid, path, BadValue::Raw(listed), "must include at least one of v1, v1beta1"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object() -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "labels": {"x": "1"}},
            "spec": {"cron": "* * * * *"},
        })
    }

    #[test]
    fn none_rewrites_the_api_version_only() {
        let to = Kind { group: "stable.example.com".into(), version: "v2".into(), kind: "CronTab".into() };
        let converted = Conversion::None.convert(object(), &to).unwrap();
        assert_eq!(converted["apiVersion"], "stable.example.com/v2");
        assert_eq!(converted["spec"], object()["spec"]);
    }

    #[test]
    fn converted_objects_keep_the_originals_metadata_but_labels_and_annotations() {
        let mut converted = object();
        converted["apiVersion"] = json!("stable.example.com/v2");
        converted["metadata"] = json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "9", "labels": {"y": "2"}});
        let restored = restore_metadata(&object(), converted).unwrap();
        assert_eq!(
            restored["metadata"],
            json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "labels": {"y": "2"}})
        );
        let mut renamed = object();
        renamed["metadata"]["name"] = json!("b");
        assert_eq!(same_identity(&object(), &renamed).unwrap_err(), "must have the same name: a != b");
        let mut bad = object();
        bad["metadata"]["annotations"] = json!({"k": 1});
        assert_eq!(
            restore_metadata(&object(), bad).unwrap_err(),
            "metadata.annotations[k] must be a string, but is int64 in converted object"
        );
    }

    #[test]
    fn answers_are_checked_as_upstream_checks_them() {
        let webhook = Webhook::new(&json!({
            "conversionReviewVersions": ["v2", "v1"],
            "clientConfig": {"url": "https://127.0.0.1:1/convert"},
        }))
        .unwrap();
        assert_eq!(webhook.review_version, "v1");
        let answer = |review: Value| webhook.converted_objects("u", review.to_string().as_bytes());
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(answer(ok.clone()).unwrap(), vec![json!({"a": 1})]);
        let mut other_uid = ok.clone();
        other_uid["response"]["uid"] = json!("v");
        assert_eq!(answer(other_uid).unwrap_err(), r#"expected response.uid="u", got "v""#);
        let mut failed = ok.clone();
        failed["response"]["result"] = json!({"status": "Failure", "message": "cannot convert"});
        assert_eq!(answer(failed).unwrap_err(), "cannot convert");
        let mut wrong_kind = ok;
        wrong_kind["kind"] = json!("Other");
        assert_eq!(
            answer(wrong_kind).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=Other"
        );
    }

    #[test]
    fn an_unreachable_webhook_fails_the_conversion_with_upstreams_wording() {
        // Port 1 on loopback refuses connections.
        let conversion = Conversion::of(&json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://127.0.0.1:1/convert"}}}}}));
        let to = Kind { group: "stable.example.com".into(), version: "v2".into(), kind: "CronTab".into() };
        let err = conversion.convert(object(), &to).unwrap_err();
        assert!(
            err.starts_with(r#"conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "https://127.0.0.1:1/convert": "#),
            "{err}"
        );
    }

    #[test]
    fn definitions_conversions_are_validated_with_upstreams_messages() {
        let messages = |conversion: Value| validate(&conversion).iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert!(messages(json!({"strategy": "None"})).is_empty());
        assert_eq!(
            messages(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}})),
            ["spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"]
        );
        assert_eq!(
            messages(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v3"],
                "clientConfig": {"url": "http://h/convert?x=1"}}})),
            [
                r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                r#"spec.conversion.webhookClientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL"#,
                r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v3"}: must include at least one of v1, v1beta1"#,
            ]
        );
        assert_eq!(
            messages(json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://h"}}})),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
        assert_eq!(
            messages(json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "s", "namespace": "ns", "path": "/a//b"}}}})),
            [r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty"#]
        );
    }
}
