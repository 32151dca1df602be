//! The cluster PKI as kapi and kubectl use it: files on disk, the admin kubeconfig, and real TLS
//! handshakes (rustls on both sides, and the real `kubectl` and `openssl` where installed).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use kapi::pki::{ClientCertAuthenticator, Pki, PkiError, UserInfo, user_from_client_cert};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use x509_parser::extensions::GeneralName;

const FILES: [&str; 6] = ["ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "admin.crt", "admin.key"];

fn pki_dir(data: &Path) -> PathBuf {
    data.join("pki")
}

fn snapshot(data: &Path) -> BTreeMap<&'static str, Vec<u8>> {
    FILES.iter().map(|f| (*f, fs::read(pki_dir(data).join(f)).unwrap())).collect()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn der(path: &Path) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(path).unwrap()
}

fn sans(path: &Path) -> Vec<String> {
    let der = der(path);
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let san = cert.subject_alternative_name().unwrap().expect("SAN extension");
    san.value
        .general_names
        .iter()
        .map(|n| match n {
            GeneralName::DNSName(d) => format!("DNS:{d}"),
            GeneralName::IPAddress(b) if b.len() == 4 => {
                format!("IP:{}", std::net::IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()))
            }
            GeneralName::IPAddress(b) => format!("IP:{}", std::net::IpAddr::from(<[u8; 16]>::try_from(*b).unwrap())),
            other => format!("{other:?}"),
        })
        .collect()
}

/// A kubeconfig `*-data` field: standard base64, padded (Go's `[]byte` in JSON and YAML).
fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).expect("standard base64")
}

/// Runs a command that may not be installed; `None` (with a note) when it is not.
fn run_optional(program: &str, args: &[&str], home: &Path) -> Option<std::process::Output> {
    match Command::new(program).args(args).env("HOME", home).env_remove("KUBECONFIG").output() {
        Ok(out) => Some(out),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            eprintln!("note: {program} is not installed; that part of the test is skipped");
            None
        }
        Err(err) => panic!("running {program}: {err}"),
    }
}

#[test]
fn first_start_creates_the_pki_and_later_starts_reuse_it_byte_for_byte() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    assert_eq!(pki.dir(), Some(pki_dir(data.path()).as_path()));
    let first = snapshot(data.path());
    for key in ["ca.key", "apiserver.key", "admin.key"] {
        assert_eq!(mode(&pki_dir(data.path()).join(key)), 0o600, "{key}");
        let text = String::from_utf8(first[key].clone()).unwrap();
        assert!(text.starts_with("-----BEGIN PRIVATE KEY-----"), "{key} is PKCS#8 PEM");
    }
    assert_eq!(mode(&pki_dir(data.path())), 0o700);
    assert_eq!(pki.ca_pem(), Some(first["ca.crt"].as_slice()));

    drop(pki);
    Pki::load_or_create(data.path(), &[]).unwrap();
    assert_eq!(snapshot(data.path()), first);
    // Only the six files: no temporary files or staging directories left behind.
    let mut names: Vec<String> =
        fs::read_dir(pki_dir(data.path())).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let mut want: Vec<String> = FILES.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(fs::read_dir(data.path()).unwrap().count(), 1, "only pki/ in the data dir");
}

#[test]
fn certificates_have_upstreams_shape() {
    let data = tempfile::tempdir().unwrap();
    Pki::load_or_create(data.path(), &["10.0.0.7".into(), "kapi.example".into(), "fd00::7".into()]).unwrap();
    let dir = pki_dir(data.path());

    let ca_der = der(&dir.join("ca.crt"));
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    assert!(ca.is_ca());
    assert_eq!(ca.subject().to_string(), "CN=kapi-ca");
    let ca_days = (ca.validity().not_after.timestamp() - ca.validity().not_before.timestamp()) / 86400;
    assert!((3650..=3651).contains(&ca_days), "CA valid {ca_days} days");
    assert_eq!(ca.public_key().algorithm.algorithm.to_id_string(), "1.2.840.10045.2.1", "ECDSA key");

    let serving_der = der(&dir.join("apiserver.crt"));
    let (_, serving) = x509_parser::parse_x509_certificate(&serving_der).unwrap();
    assert!(!serving.is_ca());
    assert_eq!(serving.issuer().as_raw(), ca.subject().as_raw());
    assert!(serving.extended_key_usage().unwrap().unwrap().value.server_auth);
    let days = (serving.validity().not_after.timestamp() - serving.validity().not_before.timestamp()) / 86400;
    assert!((365..=366).contains(&days), "serving cert valid {days} days");
    assert_eq!(
        sans(&dir.join("apiserver.crt")),
        [
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
            "IP:127.0.0.1",
            "IP:::1",
            "IP:10.0.0.7",
            "DNS:kapi.example",
            "IP:fd00::7",
        ]
    );

    let admin_der = der(&dir.join("admin.crt"));
    let (_, admin) = x509_parser::parse_x509_certificate(&admin_der).unwrap();
    assert_eq!(admin.issuer().as_raw(), ca.subject().as_raw());
    let eku = admin.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth);
    assert_eq!(
        user_from_client_cert(&admin_der).unwrap(),
        UserInfo {
            name: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        }
    );
}

#[test]
fn a_new_host_reissues_only_the_serving_certificate() {
    let data = tempfile::tempdir().unwrap();
    Pki::load_or_create(data.path(), &["10.0.0.1".into()]).unwrap();
    let before = snapshot(data.path());
    // A host the certificate already has: nothing changes.
    Pki::load_or_create(data.path(), &["10.0.0.1".into(), "LOCALHOST".into()]).unwrap();
    assert_eq!(snapshot(data.path()), before);

    Pki::load_or_create(data.path(), &["10.0.0.1".into(), "api.example.org".into()]).unwrap();
    let after = snapshot(data.path());
    for file in FILES {
        if file == "apiserver.crt" {
            assert_ne!(after[file], before[file], "{file} re-issued");
        } else {
            assert_eq!(after[file], before[file], "{file} kept");
        }
    }
    let names = sans(&pki_dir(data.path()).join("apiserver.crt"));
    assert!(names.contains(&"DNS:api.example.org".to_string()) && names.contains(&"IP:10.0.0.1".to_string()));
    assert_eq!(mode(&pki_dir(data.path()).join("apiserver.key")), 0o600);

    // And the re-issued certificate is stable from then on.
    Pki::load_or_create(data.path(), &["10.0.0.1".into(), "api.example.org".into()]).unwrap();
    assert_eq!(snapshot(data.path()), after);
}

#[test]
fn bad_hosts_are_refused() {
    let data = tempfile::tempdir().unwrap();
    let err = Pki::load_or_create(data.path(), &["not a host".into()]).unwrap_err();
    assert!(matches!(err, PkiError::InvalidHost { .. }), "{err}");
    assert!(!pki_dir(data.path()).exists(), "nothing written");
}

#[test]
fn corrupt_files_are_errors_naming_the_file() {
    let data = tempfile::tempdir().unwrap();
    Pki::load_or_create(data.path(), &[]).unwrap();
    let dir = pki_dir(data.path());
    let good = snapshot(data.path());
    let restore = || {
        for (file, bytes) in &good {
            fs::write(dir.join(file), bytes).unwrap();
        }
    };

    let cases: Vec<(&str, Vec<u8>)> = vec![
        // Cut in half: the PEM block never ends.
        ("ca.crt", good["ca.crt"][..good["ca.crt"].len() / 2].to_vec()),
        ("ca.key", b"garbage, not PEM\n".to_vec()),
        ("apiserver.crt", b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec()),
        ("apiserver.key", Vec::new()),
        ("admin.crt", b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_vec()),
        ("admin.key", good["ca.key"].clone()),
    ];
    for (file, bytes) in cases {
        fs::write(dir.join(file), bytes).unwrap();
        let err = Pki::load_or_create(data.path(), &[]).unwrap_err();
        assert!(err.to_string().contains(file), "{file}: {err}");
        restore();
    }
    // Untouched files load again.
    Pki::load_or_create(data.path(), &[]).unwrap();
    assert_eq!(snapshot(data.path()), good);
}

#[test]
fn kubeconfig_has_the_shape_kubectl_expects() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    let path = pki.write_kubeconfig(data.path(), "https://127.0.0.1:6443").unwrap();
    assert_eq!(path, data.path().join("admin.kubeconfig"));
    assert_eq!(mode(&path), 0o600);
    let files = snapshot(data.path());

    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(doc["apiVersion"].as_str(), Some("v1"));
    assert_eq!(doc["kind"].as_str(), Some("Config"));
    assert_eq!(doc["current-context"].as_str(), Some("kapi"));
    let cluster = &doc["clusters"][0];
    assert_eq!(cluster["name"].as_str(), Some("kapi"));
    assert_eq!(cluster["cluster"]["server"].as_str(), Some("https://127.0.0.1:6443"));
    assert_eq!(base64_decode(cluster["cluster"]["certificate-authority-data"].as_str().unwrap()), files["ca.crt"]);
    let user = &doc["users"][0];
    assert_eq!(user["name"].as_str(), Some("kubernetes-admin"));
    assert_eq!(base64_decode(user["user"]["client-certificate-data"].as_str().unwrap()), files["admin.crt"]);
    assert_eq!(base64_decode(user["user"]["client-key-data"].as_str().unwrap()), files["admin.key"]);
    let context = &doc["contexts"][0];
    assert_eq!(context["name"].as_str(), Some("kapi"));
    assert_eq!(context["context"]["cluster"].as_str(), Some("kapi"));
    assert_eq!(context["context"]["user"].as_str(), Some("kubernetes-admin"));

    // Rewriting (every start does) replaces the file and keeps it private.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    pki.write_kubeconfig(data.path(), "https://localhost:7443").unwrap();
    assert_eq!(mode(&path), 0o600);
    // The same file again (a restart on the same port) is left in place; a loosened mode is not.
    use std::os::unix::fs::MetadataExt;
    let inode = fs::metadata(&path).unwrap().ino();
    pki.write_kubeconfig(data.path(), "https://localhost:7443").unwrap();
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "an unchanged kubeconfig is not rewritten");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    pki.write_kubeconfig(data.path(), "https://localhost:7443").unwrap();
    assert_eq!(mode(&path), 0o600);

    // The real kubectl reads it offline.
    let Some(out) =
        run_optional("kubectl", &["config", "view", "--kubeconfig", path.to_str().unwrap(), "--raw", "-o", "json"], data.path())
    else {
        return;
    };
    assert!(out.status.success(), "kubectl config view: {}", String::from_utf8_lossy(&out.stderr));
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["current-context"], "kapi");
    assert_eq!(view["clusters"][0]["cluster"]["server"], "https://localhost:7443");
    assert_eq!(view["users"][0]["name"], "kubernetes-admin");
    assert_eq!(base64_decode(view["users"][0]["user"]["client-key-data"].as_str().unwrap()), files["admin.key"]);
    let Some(out) = run_optional("kubectl", &["config", "current-context", "--kubeconfig", path.to_str().unwrap()], data.path()) else {
        return;
    };
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "kapi");
}

#[test]
fn openssl_verifies_the_chain_and_purposes() {
    let data = tempfile::tempdir().unwrap();
    Pki::load_or_create(data.path(), &[]).unwrap();
    let dir = pki_dir(data.path());
    let ca = dir.join("ca.crt");
    for (cert, purpose) in [("apiserver.crt", "sslserver"), ("admin.crt", "sslclient")] {
        let Some(out) = run_optional(
            "openssl",
            &["verify", "-purpose", purpose, "-CAfile", ca.to_str().unwrap(), dir.join(cert).to_str().unwrap()],
            data.path(),
        ) else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.trim_end().ends_with(": OK"), "{cert}: {text}{}", String::from_utf8_lossy(&out.stderr));
    }
    // openssl reads the PKCS#8 keys too.
    let Some(out) = run_optional("openssl", &["pkey", "-in", dir.join("admin.key").to_str().unwrap(), "-noout"], data.path()) else {
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---------------------------------------------------------------------------------------------
// TLS

fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client trusting `ca_pem`, presenting `identity` (certificate PEM, key PEM) if given.
fn client(ca_pem: &[u8], identity: Option<(&[u8], &[u8])>, tls12_only: bool) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12_only { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let builder = ClientConfig::builder_with_provider(ring()).with_protocol_versions(versions).unwrap().with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(cert).map(Result::unwrap).collect(),
                PrivateKeyDer::from_pem_slice(key).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsConnector::from(Arc::new(config))
}

#[derive(Debug)]
struct Accepted {
    user: Option<UserInfo>,
    alpn: Option<Vec<u8>>,
    version: Option<rustls::ProtocolVersion>,
}

/// Accepts one TLS connection, extracts the client's user as the server will, and answers "ok".
async fn serve_one(
    config: Arc<ServerConfig>,
    authenticator: Option<ClientCertAuthenticator>,
) -> (SocketAddr, tokio::task::JoinHandle<Result<Accepted, String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = TlsAcceptor::from(config);
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut tls = acceptor.accept(tcp).await.map_err(|e| e.to_string())?;
        let conn = tls.get_ref().1;
        let user = match (conn.peer_certificates(), &authenticator) {
            (Some(certs), Some(authenticator)) => authenticator.authenticate(certs).map_err(|e| e.to_string())?,
            _ => None,
        };
        let accepted = Accepted { user, alpn: conn.alpn_protocol().map(<[u8]>::to_vec), version: conn.protocol_version() };
        tls.write_all(b"ok").await.map_err(|e| e.to_string())?;
        tls.shutdown().await.map_err(|e| e.to_string())?;
        Ok(accepted)
    });
    (addr, task)
}

/// Connects, reads the answer; `Err` when the handshake or the read fails.
async fn talk(connector: TlsConnector, addr: SocketAddr) -> Result<Vec<u8>, String> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await.map_err(|e| e.to_string())?;
    Ok(answer)
}

#[tokio::test]
async fn admin_certificate_authenticates_over_tls() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    let dir = pki_dir(data.path());
    let (ca, cert, key) =
        (fs::read(dir.join("ca.crt")).unwrap(), fs::read(dir.join("admin.crt")).unwrap(), fs::read(dir.join("admin.key")).unwrap());
    let config = pki.server_config().unwrap();
    assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);

    for tls12_only in [false, true] {
        let (addr, server) = serve_one(config.clone(), pki.client_authenticator().unwrap()).await;
        let answer = talk(client(&ca, Some((&cert, &key)), tls12_only), addr).await.unwrap();
        assert_eq!(answer, b"ok");
        let accepted = server.await.unwrap().unwrap();
        let user = accepted.user.expect("peer certificate");
        assert_eq!(user.name, "kubernetes-admin");
        assert!(user.groups.contains(&"system:masters".to_string()), "{user:?}");
        assert!(user.groups.contains(&"system:authenticated".to_string()), "{user:?}");
        assert_eq!(accepted.alpn.as_deref(), Some(&b"h2"[..]));
        let want = if tls12_only { rustls::ProtocolVersion::TLSv1_2 } else { rustls::ProtocolVersion::TLSv1_3 };
        assert_eq!(accepted.version, Some(want));
    }
}

#[tokio::test]
async fn client_without_certificate_still_connects() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    let ca = fs::read(pki_dir(data.path()).join("ca.crt")).unwrap();
    let (addr, server) = serve_one(pki.server_config().unwrap(), pki.client_authenticator().unwrap()).await;
    assert_eq!(talk(client(&ca, None, false), addr).await.unwrap(), b"ok");
    assert!(server.await.unwrap().unwrap().user.is_none(), "no peer certificate, no user");
}

#[tokio::test]
async fn client_certificate_from_another_ca_is_refused_after_the_handshake() {
    let data = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    Pki::load_or_create(other.path(), &[]).unwrap();
    let ca = fs::read(pki_dir(data.path()).join("ca.crt")).unwrap();
    let foreign_cert = fs::read(pki_dir(other.path()).join("admin.crt")).unwrap();
    let foreign_key = fs::read(pki_dir(other.path()).join("admin.key")).unwrap();

    for tls12_only in [false, true] {
        let (addr, server) = serve_one(pki.server_config().unwrap(), pki.client_authenticator().unwrap()).await;
        // As Go's `RequestClientCert`: the handshake completes, the x509 authenticator refuses
        // the certificate (the server answers 401; this stand-in closes without an answer).
        let client_result = talk(client(&ca, Some((&foreign_cert, &foreign_key)), tls12_only), addr).await;
        assert!(client_result.is_err(), "client got {client_result:?}");
        let err = server.await.unwrap().unwrap_err();
        assert!(err.contains("certificate"), "server error: {err}");
    }
}

#[tokio::test]
async fn server_certificate_is_not_trusted_by_clients_of_another_ca() {
    let data = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    Pki::load_or_create(other.path(), &[]).unwrap();
    let other_ca = fs::read(pki_dir(other.path()).join("ca.crt")).unwrap();
    let (addr, server) = serve_one(pki.server_config().unwrap(), pki.client_authenticator().unwrap()).await;
    assert!(talk(client(&other_ca, None, false), addr).await.is_err());
    assert!(server.await.unwrap().is_err());
}

#[tokio::test]
async fn given_files_serve_and_verify_like_kube_apiserver_flags() {
    let data = tempfile::tempdir().unwrap();
    Pki::load_or_create(data.path(), &[]).unwrap();
    let dir = pki_dir(data.path());
    let pki = Pki::from_files(&dir.join("apiserver.crt"), &dir.join("apiserver.key"), &dir.join("ca.crt")).unwrap();
    assert!(pki.dir().is_none() && pki.ca_pem().is_none());
    assert_eq!(pki.client_ca_certs().len(), 1);
    let ca = fs::read(dir.join("ca.crt")).unwrap();
    let (cert, key) = (fs::read(dir.join("admin.crt")).unwrap(), fs::read(dir.join("admin.key")).unwrap());
    let (addr, server) = serve_one(pki.server_config().unwrap(), pki.client_authenticator().unwrap()).await;
    assert_eq!(talk(client(&ca, Some((&cert, &key)), false), addr).await.unwrap(), b"ok");
    assert_eq!(server.await.unwrap().unwrap().user.unwrap().name, "kubernetes-admin");

    // Wrong or missing files are errors naming the file.
    let err = Pki::from_files(&dir.join("apiserver.crt"), &dir.join("admin.key"), &dir.join("ca.crt")).unwrap_err();
    assert!(matches!(err, PkiError::KeyMismatch { .. }), "{err}");
    let missing = dir.join("nope.crt");
    let err = Pki::from_files(&missing, &dir.join("apiserver.key"), &dir.join("ca.crt")).unwrap_err();
    assert!(err.to_string().contains("nope.crt"), "{err}");
    let err = Pki::from_files(&dir.join("apiserver.crt"), &dir.join("apiserver.key"), &dir.join("ca.key")).unwrap_err();
    assert!(err.to_string().contains("ca.key"), "{err}");
}

/// The real kubectl, configured only by the written kubeconfig, trusts the serving certificate and
/// authenticates with the admin certificate.
#[tokio::test]
async fn kubectl_talks_tls_with_the_admin_kubeconfig() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::load_or_create(data.path(), &[]).unwrap();
    // The stand-in server below speaks HTTP/1.1 only; the real server speaks both.
    let mut config = (*pki.server_config().unwrap()).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let authenticator = pki.client_authenticator().unwrap().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let kubeconfig = pki.write_kubeconfig(data.path(), &format!("https://{addr}")).unwrap();

    let (users_tx, mut users_rx) = tokio::sync::mpsc::unbounded_channel();
    let server = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            let users_tx = users_tx.clone();
            let authenticator = authenticator.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let user = tls.get_ref().1.peer_certificates().and_then(|c| authenticator.authenticate(c).ok().flatten());
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&request).lines().next().unwrap_or_default().to_string();
                let _ = users_tx.send((line, user));
                let body = "ok";
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });

    let home = data.path().to_path_buf();
    let kubeconfig_arg = kubeconfig.to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        run_optional("kubectl", &["--kubeconfig", &kubeconfig_arg, "--request-timeout", "20s", "get", "--raw", "/healthz"], &home)
    })
    .await
    .unwrap();
    server.abort();
    let Some(out) = out else { return };
    assert!(out.status.success(), "kubectl get --raw: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    // kubectl's version dispatcher may ask for /version first; every request carries the admin.
    let mut lines = Vec::new();
    while let Ok((line, user)) = users_rx.try_recv() {
        assert_eq!(
            user,
            Some(UserInfo {
                name: "kubernetes-admin".into(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
                ..Default::default()
            }),
            "{line}"
        );
        lines.push(line);
    }
    assert!(lines.iter().any(|l| l.starts_with("GET /healthz")), "{lines:?}");
}
