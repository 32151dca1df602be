//! A conversion webhook a test serves itself: HTTPS on a free loopback port with a
//! self-signed certificate for `localhost` (its PEM, base64, is the definition's `caBundle`),
//! answering each `ConversionReview` with what the test's function makes of its objects.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

/// How a test converts one object to a `group/version` (`Err`: the webhook answers Failure
/// with the message).
pub type Convert = dyn Fn(&Value, &str) -> Result<Value, String> + Send + Sync;

pub struct ConversionWebhook {
    /// `https://localhost:<port>/convert`.
    pub url: String,
    /// The certificate's PEM, base64: the `caBundle` that trusts it.
    pub ca_bundle: String,
    reviews: Arc<AtomicUsize>,
}

impl ConversionWebhook {
    pub fn start(convert: impl Fn(&Value, &str) -> Result<Value, String> + Send + Sync + 'static) -> ConversionWebhook {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert_pem = certified.cert.pem();
        let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap();
        let key = PrivateKeyDer::from_pem_slice(certified.signing_key.serialize_pem().as_bytes()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let reviews = Arc::new(AtomicUsize::new(0));
        let convert: Arc<Convert> = Arc::new(convert);
        let counted = reviews.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (config, convert, counted) = (config.clone(), convert.clone(), counted.clone());
                std::thread::spawn(move || {
                    if serve(tcp, config, &*convert).is_ok() {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        ConversionWebhook {
            url: format!("https://localhost:{port}/convert"),
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(cert_pem),
            reviews,
        }
    }

    /// How many reviews the webhook has answered.
    pub fn reviews(&self) -> usize {
        self.reviews.load(Ordering::SeqCst)
    }

    /// The definition's `spec.conversion` that sends reviews here.
    pub fn conversion(&self) -> Value {
        json!({
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": self.url, "caBundle": self.ca_bundle}},
        })
    }
}

/// One connection: one request read (headers, then `Content-Length` bytes), answered, closed.
fn serve(tcp: TcpStream, config: Arc<rustls::ServerConfig>, convert: &Convert) -> std::io::Result<()> {
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    let body_start = loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        request.extend_from_slice(&buf[..n]);
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&request[..body_start]).to_lowercase();
    let length: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    while request.len() < body_start + length {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        request.extend_from_slice(&buf[..n]);
    }
    let review: Value = serde_json::from_slice(&request[body_start..body_start + length]).map_err(std::io::Error::other)?;
    let answer = answer(&review, convert);
    let body = serde_json::to_vec(&answer).unwrap();
    write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())?;
    stream.write_all(&body)?;
    stream.flush()?;
    stream.conn.send_close_notify();
    let _ = stream.flush();
    Ok(())
}

/// The `ConversionReview` answering `review`.
fn answer(review: &Value, convert: &Convert) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let converted: Result<Vec<Value>, String> =
        request["objects"].as_array().into_iter().flatten().map(|object| convert(object, desired)).collect();
    let response = match converted {
        Ok(objects) => json!({"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects}),
        Err(message) => json!({"uid": request["uid"], "result": {"status": "Failure", "message": message}}),
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}
