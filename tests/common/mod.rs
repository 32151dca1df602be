//! A started `kapi serve` on a free loopback port and a minimal HTTPS client authenticating
//! with the admin certificate, for tests that need control over every byte of a request.

#![allow(dead_code)] // each test binary uses a different part

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

pub mod etcd;
pub mod webhook;

pub struct Server {
    pub child: Child,
    pub port: u16,
    tls: Arc<rustls::ClientConfig>,
    /// The server's log (its stderr), which a failed wait shows.
    log: PathBuf,
    /// Where the CA the client trusts is (`ca.crt`).
    pki: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(dir: &Path) -> Server {
    start_with(dir, &[])
}

/// `kapi serve` with more flags (e.g. `--etcd-servers`).
pub fn start_with(dir: &Path, args: &[&str]) -> Server {
    let server = spawn(dir, args);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.join("admin.kubeconfig").exists() {
        assert!(Instant::now() < deadline, "kapi did not write its kubeconfig");
        std::thread::sleep(Duration::from_millis(20));
    }
    connect(server, &dir.join("pki"))
}

/// A replica serving with another server's certificates (`--tls-cert-file`,
/// `--tls-private-key-file`, `--client-ca-file` from `pki`): the same CA and admin credentials
/// reach both.
pub fn start_replica(dir: &Path, pki: &Path, args: &[&str]) -> Server {
    let (cert, key, ca) = (pki.join("apiserver.crt"), pki.join("apiserver.key"), pki.join("ca.crt"));
    let mut all: Vec<&str> = vec![
        "--tls-cert-file",
        cert.to_str().unwrap(),
        "--tls-private-key-file",
        key.to_str().unwrap(),
        "--client-ca-file",
        ca.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    connect(spawn(dir, &all), pki)
}

/// Starts `kapi serve` and waits for the port it picked.
#[expect(
    clippy::zombie_processes,
    reason = "the child is returned inside a tuple, which the lint does not follow; Server's drop waits for it"
)]
fn spawn(dir: &Path, args: &[&str]) -> (Child, u16, PathBuf) {
    let _ = std::fs::remove_file(dir.join("port"));
    let log = std::fs::File::create(log_path(dir)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(port) = std::fs::read_to_string(dir.join("port")).ok().and_then(|p| p.trim().parse().ok()) {
            return (child, port, log_path(dir));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kapi did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where a started server's stderr goes: beside its data directory, so that the server's own
/// checks of the directory see only its files.
fn log_path(dir: &Path) -> PathBuf {
    dir.with_extension("kapi.log")
}

/// A client for a started server, with the admin credentials and CA in `pki`.
fn connect((child, port, log): (Child, u16, PathBuf), pki: &Path) -> Server {
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
    Server { child, port, tls: Arc::new(tls), log, pki: pki.to_path_buf() }
}

/// A client of a started server with another identity than the admin's: a client certificate
/// and key (PEM), or none (then a bearer token in the headers, or anonymous).
pub struct Client {
    port: u16,
    tls: Arc<rustls::ClientConfig>,
}

impl Server {
    pub fn client(&self, cert_and_key: Option<(&[u8], &[u8])>) -> Client {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_file(self.pki.join("ca.crt")).unwrap()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let tls = match cert_and_key {
            Some((cert, key)) => {
                let certs = vec![CertificateDer::from_pem_slice(cert).unwrap()];
                builder.with_client_auth_cert(certs, PrivateKeyDer::from_pem_slice(key).unwrap()).unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        Client { port: self.port, tls: Arc::new(tls) }
    }
}

impl Client {
    /// One HTTP/1.1 request; the status code and body.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
        let (code, _, body) = request_over(self.port, &self.tls, method, path, headers, body);
        (code, body)
    }
}

/// One HTTP/1.1 request; returns the status code and the body, or code 0 when the server could
/// not be reached or went away.
pub fn request(server: &Server, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let (code, bytes) = request_with(server, method, path, &[("Content-Type", content_type), ("Accept", "application/json")], body);
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

/// One HTTP/1.1 request with the given headers; returns the status code and the raw body.
pub fn request_with(server: &Server, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    let (code, _, body) = request_full(server, method, path, headers, body);
    (code, body)
}

/// [`request_with`], with the response's header lines as well (names in lower case).
pub fn request_full(
    server: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    request_over(server.port, &server.tls, method, path, headers, body)
}

fn request_over(
    port: u16,
    tls: &Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(tls.clone(), name).unwrap();
    let Ok(mut tcp) = TcpStream::connect(("127.0.0.1", port)) else { return (0, Vec::new(), Vec::new()) };
    let mut stream = rustls::Stream::new(&mut conn, &mut tcp);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    if stream.write_all(head.as_bytes()).is_err() {
        return (0, Vec::new(), Vec::new());
    }
    // The server may answer (413) before reading a large body; a reset then is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") else { return (0, Vec::new(), Vec::new()) };
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut body = response[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (code, headers, body)
}

/// The value of a response header.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// The payload of a chunked body.
fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..line_end]).trim(), 16).unwrap_or(0);
        if size == 0 || data.len() < line_end + 2 + size {
            break;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[(line_end + 4 + size).min(data.len())..];
    }
    out
}

impl Server {
    /// Waits until `/readyz` answers 200.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while request(self, "GET", "/readyz", "text/plain", b"").0 != 200 {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!("not ready; the server's last log lines:\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TLS connection to the server with the admin certificate, handshake done, for tests that
/// hold connections open or write requests byte by byte.
pub fn tls_stream(server: &Server) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    tls_stream_within(server, Duration::from_secs(20))
}

/// [`tls_stream`], failing when the server does not answer a read within `timeout`.
pub fn tls_stream_within(server: &Server, timeout: Duration) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(server.tls.clone(), name).unwrap();
    let mut tcp = TcpStream::connect(("127.0.0.1", server.port))?;
    tcp.set_read_timeout(Some(timeout))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    Ok(rustls::StreamOwned::new(conn, tcp))
}

impl Server {
    /// The server's resident memory in KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// How many file descriptors the server has open.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map(|d| d.count()).unwrap_or(0)
    }
}

/// The pinned OpenAPI v2 document's `definitions` (`api-specs/<VERSION>/openapi/swagger.json`),
/// read once.
pub fn swagger_definitions() -> &'static serde_json::Map<String, serde_json::Value> {
    static DEFS: std::sync::OnceLock<serde_json::Map<String, serde_json::Value>> = std::sync::OnceLock::new();
    DEFS.get_or_init(|| {
        let root = env!("CARGO_MANIFEST_DIR");
        let version = std::fs::read_to_string(format!("{root}/api-specs/VERSION")).unwrap();
        let path = format!("{root}/api-specs/v{}/openapi/swagger.json", version.trim());
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        doc["definitions"].as_object().unwrap().clone()
    })
}
