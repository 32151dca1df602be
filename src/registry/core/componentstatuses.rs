//! `componentstatuses` (upstream's `pkg/registry/core/componentstatus`): not stored, but made
//! at each request by probing the control plane's health endpoints — the scheduler's and the
//! controller manager's `/healthz` on their secure loopback ports, and each etcd server
//! (`etcd-<i>`, in `--etcd-servers` order; none on the embedded store). A component that does
//! not answer is listed with `Healthy: False` and the prober's message, as upstream's HTTP
//! prober reports a failed request.

/// `componentstatuses` are answered by their own REST code, probing at each request.
pub struct ComponentStatusStrategy;

impl crate::registry::strategy::Strategy for ComponentStatusStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::COMPONENT_STATUSES)
    }

    fn own_rest(&self, subresource: Option<&str>) -> Option<crate::registry::OwnRest> {
        subresource.is_none().then_some(crate::registry::OwnRest::ComponentStatuses)
    }
}

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one probe may take (upstream's `probeTimeout`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of a probe's answer is read (upstream's prober reads at most 10 KiB).
const MAX_PROBE_BODY: usize = 10 * 1024;

/// One component upstream's `GetServersToValidate` lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub name: String,
    /// The URL probed (`https://127.0.0.1:10259/healthz`).
    pub url: String,
    /// etcd answers `/health` with JSON whose `health` must be `"true"`; its message is `ok`.
    pub etcd: bool,
}

/// The components probed, sorted by name: the scheduler and the controller manager on their
/// default secure ports, and one `etcd-<i>` per etcd server.
pub fn components(etcd_servers: &[String]) -> Vec<Component> {
    let mut all = vec![
        Component { name: "scheduler".into(), url: "https://127.0.0.1:10259/healthz".into(), etcd: false },
        Component { name: "controller-manager".into(), url: "https://127.0.0.1:10257/healthz".into(), etcd: false },
    ];
    for (i, server) in etcd_servers.iter().enumerate() {
        all.push(Component { name: format!("etcd-{i}"), url: format!("{}/health", server.trim_end_matches('/')), etcd: true });
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// The `ComponentStatus` of the component called `name`, probed now; `None` for no such
/// component.
pub async fn get(etcd_servers: &[String], name: &str) -> Option<Value> {
    let component = components(etcd_servers).into_iter().find(|c| c.name == name)?;
    Some(status(&component).await)
}

/// Every component's `ComponentStatus`, probed concurrently, sorted by name, as list items
/// (without `kind`/`apiVersion`, as upstream's typed lists write them).
pub async fn list(etcd_servers: &[String]) -> Vec<Value> {
    let mut probes = tokio::task::JoinSet::new();
    for (i, component) in components(etcd_servers).into_iter().enumerate() {
        probes.spawn(async move { (i, status(&component).await) });
    }
    let mut items = Vec::new();
    while let Some(done) = probes.join_next().await {
        // A probe task only fails by panicking; its component is left out rather than the list.
        if let Ok(item) = done {
            items.push(item);
        }
    }
    items.sort_by_key(|(i, _)| *i);
    items
        .into_iter()
        .map(|(_, mut item)| {
            if let Some(object) = item.as_object_mut() {
                object.remove("kind");
                object.remove("apiVersion");
            }
            item
        })
        .collect()
}

/// The `ComponentStatus` (v1, as JSON) of one component, probed now.
pub async fn status(component: &Component) -> Value {
    let (healthy, message, error) = match tokio::time::timeout(PROBE_TIMEOUT, probe(&component.url)).await {
        Err(_) => (
            false,
            format!("Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)", component.url),
            String::new(),
        ),
        Ok(Err(e)) => (false, format!("Get {:?}: {e}", component.url), String::new()),
        Ok(Ok((code, _))) if !(200..400).contains(&code) => (false, format!("HTTP probe failed with statuscode: {code}"), String::new()),
        Ok(Ok((_, body))) if component.etcd => {
            let health: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match health["health"].as_str() {
                Some("true") => (true, "ok".to_owned(), String::new()),
                _ => (false, String::new(), format!("unhealthy etcd: {}", String::from_utf8_lossy(&body))),
            }
        }
        Ok(Ok((_, body))) => (true, String::from_utf8_lossy(&body).into_owned(), String::new()),
    };
    let mut condition = json!({ "type": "Healthy", "status": if healthy { "True" } else { "False" } });
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": { "name": component.name },
        "conditions": [condition],
    })
}

/// Why a probe failed, worded as Go's `net/http` client says it.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("dial tcp {0}: connect: connection refused")]
    Refused(String),
    #[error("dial tcp {0}: {1}")]
    Dial(String, std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("unsupported protocol scheme {0:?}")]
    Scheme(String),
    #[error("malformed HTTP response")]
    Malformed,
}

/// A GET of `url` (http, or https without verifying the certificate, as upstream probes its
/// own components): the status code and at most [`MAX_PROBE_BODY`] bytes of the body.
async fn probe(url: &str) -> Result<(u16, Vec<u8>), ProbeError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| ProbeError::Scheme(String::new()))?;
    let (host_port, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let tcp = tokio::net::TcpStream::connect(host_port).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => ProbeError::Refused(host_port.to_owned()),
        _ => ProbeError::Dial(host_port.to_owned(), e),
    })?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host_port}\r\nUser-Agent: kube-probe/1.36\r\nConnection: close\r\n\r\n");
    match scheme {
        "http" => exchange(tcp, request).await,
        "https" => {
            let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h).trim_matches(['[', ']']);
            let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                .map_err(|e| ProbeError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
            let tls = tokio_rustls::TlsConnector::from(insecure_client_config()).connect(name, tcp).await?;
            exchange(tls, request).await
        }
        other => Err(ProbeError::Scheme(other.to_owned())),
    }
}

async fn exchange<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    request: String,
) -> Result<(u16, Vec<u8>), ProbeError> {
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 || response.len() > MAX_PROBE_BODY + 8192 {
            break;
        }
        response.extend_from_slice(&buf[..n]);
    }
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").ok_or(ProbeError::Malformed)?;
    let head = String::from_utf8_lossy(&response[..split]);
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or(ProbeError::Malformed)?;
    let mut body = response[split + 4..].to_vec();
    body.truncate(MAX_PROBE_BODY);
    Ok((code, body))
}

/// A TLS client that accepts any certificate: upstream probes the scheduler's and controller
/// manager's self-signed serving certificates with `InsecureSkipVerify`.
fn insecure_client_config() -> Arc<rustls::ClientConfig> {
    #[derive(Debug)]
    struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);
    impl rustls::client::danger::ServerCertVerifier for AcceptAny {
        fn verify_server_cert(
            &self,
            _: &rustls::pki_types::CertificateDer<'_>,
            _: &[rustls::pki_types::CertificateDer<'_>],
            _: &rustls::pki_types::ServerName<'_>,
            _: &[u8],
            _: rustls::pki_types::UnixTime,
        ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
        }
        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &rustls::pki_types::CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map(|builder| builder.dangerous().with_custom_certificate_verifier(Arc::new(AcceptAny(provider))).with_no_client_auth());
    match config {
        Ok(config) => Arc::new(config),
        // ring supports the default versions; keep a valid (verifying) config otherwise.
        Err(_) => Arc::new(rustls::ClientConfig::builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_upstreams() {
        let names: Vec<String> =
            components(&["http://127.0.0.1:2379".into(), "http://127.0.0.1:2380/".into()]).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["controller-manager", "etcd-0", "etcd-1", "scheduler"]);
        assert_eq!(components(&[])[1].url, "https://127.0.0.1:10259/healthz");
        assert_eq!(components(&["http://e:2379/".into()])[1].url, "http://e:2379/health");
    }

    #[tokio::test]
    async fn a_component_that_does_not_answer_is_unhealthy_with_gos_message() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let component = Component { name: "scheduler".into(), url: format!("https://127.0.0.1:{port}/healthz"), etcd: false };
        let status = status(&component).await;
        assert_eq!(
            status["conditions"],
            json!([{
                "type": "Healthy",
                "status": "False",
                "message": format!("Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"),
            }])
        );
    }

    #[tokio::test]
    async fn a_healthy_etcd_says_ok() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).await;
            let body = r#"{"health":"true","reason":""}"#;
            let _ = conn.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
        });
        let component = Component { name: "etcd-0".into(), url: format!("http://127.0.0.1:{port}/health"), etcd: true };
        assert_eq!(status(&component).await["conditions"], json!([{"type": "Healthy", "status": "True", "message": "ok"}]));
    }
}
