//! Bad input against a started `kapi serve`, over raw HTTPS so that every byte and header is
//! under the test's control: each gets the right 4xx `Status`, and the server keeps serving.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

struct Server {
    child: Child,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.join("port").exists() || !dir.join("admin.kubeconfig").exists() {
        assert!(Instant::now() < deadline, "kapi did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = std::fs::read_to_string(dir.join("port")).unwrap().trim().parse().unwrap();
    let pki = dir.join("pki");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(pki.join("ca.crt")).unwrap()).unwrap();
    let certs = vec![CertificateDer::from_pem_file(pki.join("admin.crt")).unwrap()];
    let key = PrivateKeyDer::from_pem_file(pki.join("admin.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .unwrap();
    Server { child, port, tls: Arc::new(tls) }
}

/// One HTTP/1.1 request; returns the status code and the body.
fn request(server: &Server, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(server.tls.clone(), name).unwrap();
    let mut tcp = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let mut stream = rustls::Stream::new(&mut conn, &mut tcp);
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) before reading a large body; a reset then is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (code, body)
}

#[test]
fn bad_requests_get_status_errors_and_the_server_survives() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while request(&server, "GET", "/readyz", "text/plain", b"").0 != 200 {
        assert!(Instant::now() < deadline, "not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024 + 1)
    );
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        ("malformed JSON", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"#.to_vec(), 400, "BadRequest"),
        ("malformed YAML", "application/yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: [\n".to_vec(), 400, "BadRequest"),
        ("malformed protobuf", "application/vnd.kubernetes.protobuf", b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x05\x0a\xff".to_vec(), 400, "BadRequest"),
        ("protobuf without magic", "application/vnd.kubernetes.protobuf", b"\x0a\x02v1".to_vec(), 400, "BadRequest"),
        ("wrong kind for the URL", "application/json", br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#.to_vec(), 400, "BadRequest"),
        ("wrong field type", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":[1]}"#.to_vec(), 400, "BadRequest"),
        ("invalid name", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#.to_vec(), 422, "Invalid"),
        ("no name", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(), 422, "Invalid"),
        ("unsupported media type", "text/html", b"<html/>".to_vec(), 415, "UnsupportedMediaType"),
        ("body over 3 MiB", "application/json", big.into_bytes(), 413, "RequestEntityTooLarge"),
    ];
    for (what, content_type, body, code, reason) in cases {
        let (got, text) = request(&server, "POST", configmaps, content_type, &body);
        assert_eq!(got, code, "{what}: {text}");
        let status: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: {e}: {text}"));
        assert_eq!(status["kind"], "Status", "{what}");
        assert_eq!(status["reason"], reason, "{what}: {text}");
        assert_eq!(status["code"], code, "{what}");
    }
    // Unknown paths and methods.
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/default/widgets", "", b"").0, 404);
    assert_eq!(request(&server, "GET", "/api/v1/namespaces/default/configmaps/nope", "", b"").0, 404);
    // Still serving after all of it.
    let (code, _) = request(
        &server,
        "POST",
        configmaps,
        "application/json",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fine"}}"#,
    );
    assert_eq!(code, 201);
    assert_eq!(request(&server, "GET", "/readyz", "text/plain", b"").0, 200);
}
