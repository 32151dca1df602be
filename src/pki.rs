//! The cluster PKI: certificates, the admin kubeconfig, the TLS server configuration and the x509
//! authenticator.
//!
//! Without given files kapi keeps its own PKI under `<data-dir>/pki/` (as kubeadm keeps
//! `/etc/kubernetes/pki`): a CA (`ca.crt`, `ca.key`), the serving certificate it signs
//! (`apiserver.crt`, `apiserver.key`) and an admin client certificate (`admin.crt`, `admin.key`,
//! user `kubernetes-admin` in group `system:masters`, as kubeadm's). Keys are ECDSA P-256 in PKCS#8, written 0600 in
//! a 0700 directory (certificates 0644), as kubeadm and client-go's `keyutil` write keys; a start
//! that finds the directory or a key open to group or others warns and restricts it
//! ([`crate::private_files`]). The CA key stays beside the leaves, as in kubeadm's layout: the
//! directory is private either way, and data directories of earlier versions keep working. A
//! later start reuses the files byte for byte; it re-issues a leaf certificate from the existing CA
//! (keeping the leaf's key) only when the leaf lacks a requested name, no longer verifies against
//! the CA, or is within [`RENEW_BEFORE_DAYS`] of expiry. Missing halves of a pair and unreadable
//! files are errors naming the file; nothing is silently replaced.
//!
//! With kube-apiserver's flags (`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`)
//! [`Pki::from_files`] serves the given certificate and trusts the given client CAs instead.
//!
//! Client certificates are optional at the TLS layer ([`Pki::server_config`]) so requests
//! without one reach the server's other authenticators (bearer tokens, anonymous). A presented certificate is verified against the client CA during the
//! handshake; [`user_from_client_cert`] then maps it to a user as upstream's x509 authenticator
//! (`CommonNameUserConversion`) wrapped in its `AuthenticatedGroupAdder` does.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kapi_apimachinery::serde_bytes;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyIdMethod, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PublicKeyData, SanType, SerialNumber,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use serde::Serialize;
use x509_parser::asn1_rs::{FromDer, Tag};
use x509_parser::certificate::X509Certificate;
use x509_parser::error::X509Error;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// Directory under the data directory that holds kapi's own PKI.
pub const PKI_DIR: &str = "pki";
/// File name of the admin kubeconfig under the data directory.
pub const KUBECONFIG_FILE: &str = "admin.kubeconfig";
/// Subject common name of kapi's CA.
pub const CA_COMMON_NAME: &str = "kapi-ca";
/// Subject common name of the serving certificate.
pub const SERVING_COMMON_NAME: &str = "kapi-apiserver";
/// The admin client certificate's user (subject CN).
pub const ADMIN_USER: &str = "kubernetes-admin";
/// The admin client certificate's group (subject O): upstream's superuser group.
pub const ADMIN_GROUP: &str = "system:masters";
/// Cluster, context (and current-context) name in the admin kubeconfig.
pub const KUBECONFIG_CLUSTER: &str = "kapi";
/// Group upstream adds to every authenticated user (`user.AllAuthenticated`).
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// Group upstream gives unauthenticated requests (`user.AllUnauthenticated`).
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Upstream's anonymous user (`user.Anonymous`).
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// DNS names every serving certificate carries (kubeadm's defaults for the apiserver).
pub const DEFAULT_SERVING_DNS_NAMES: [&str; 5] =
    ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"];

/// Validity of the CA certificate (client-go's `NewSelfSignedCACert`: ten 365-day years).
pub const CA_VALIDITY_DAYS: u64 = 3650;
/// Validity of the serving and admin certificates (kubeadm's one year).
pub const LEAF_VALIDITY_DAYS: u64 = 365;
/// A leaf certificate this close to expiry is re-issued at start-up.
pub const RENEW_BEFORE_DAYS: u64 = 30;
/// Certificates start this far in the past, to tolerate clock skew (kubeadm's backdate).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// What can go wrong loading, creating or using the PKI. Every file-related variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{action} {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, source: io::Error },
    #[error(
        "{} is missing but {} exists: restore it, or remove both to have kapi issue a new pair",
        .missing.display(),
        .present.display()
    )]
    MissingPair { missing: PathBuf, present: PathBuf },
    #[error(
        "{} is missing but {} exists, and kapi cannot sign for a CA it does not have: restore the CA, or remove {} to start a new cluster PKI",
        .ca.display(),
        .dependent.display(),
        .dir.display()
    )]
    MissingCa { ca: PathBuf, dependent: PathBuf, dir: PathBuf },
    #[error("{}: not valid PEM: {source}", .path.display())]
    Pem { path: PathBuf, source: pem::Error },
    #[error("{}: not a valid X.509 certificate: {source}", .path.display())]
    Certificate { path: PathBuf, source: X509Error },
    #[error("{}: {reason}", .path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error("{}: unusable private key: {source}", .path.display())]
    PrivateKey { path: PathBuf, source: rustls::Error },
    #[error("{} does not belong to the private key {}: {source}", .cert.display(), .key.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf, source: rustls::Error },
    #[error("{}: kapi cannot sign with this key (it needs an unencrypted PKCS#8 ECDSA, RSA or Ed25519 key): {source}", .path.display())]
    SigningKey { path: PathBuf, source: rcgen::Error },
    #[error("{}: not valid for TLS: {source}", .path.display())]
    TrustAnchor { path: PathBuf, source: rustls::Error },
    #[error("generating the {what}: {source}")]
    Generate { what: &'static str, source: rcgen::Error },
    #[error("host {host:?} cannot be a subject alternative name: {reason}")]
    InvalidHost { host: String, reason: &'static str },
    #[error(
        "no admin client credentials for a kubeconfig: the PKI was loaded from the given --tls-cert-file/--client-ca-file, not created by kapi"
    )]
    NoAdminCredentials,
    #[error("serialising the kubeconfig: {0}")]
    Kubeconfig(#[source] serde_yaml_ng::Error),
    #[error("building a certificate verifier: {0}")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
    #[error("building the TLS server configuration: {0}")]
    Tls(#[source] rustls::Error),
    #[error("client certificate is not a valid X.509 certificate: {0}")]
    ClientCertificate(#[source] X509Error),
    #[error("client certificate has no subject common name, so it names no user")]
    NoCommonName,
}

type Result<T, E = PkiError> = std::result::Result<T, E>;

pub use crate::request_info::UserInfo;

/// The certificates and keys kapi serves with and trusts.
pub struct Pki {
    serving_chain: Vec<CertificateDer<'static>>,
    serving_key: PrivateKeyDer<'static>,
    /// Trust anchors for client certificates.
    client_cas: Vec<CertificateDer<'static>>,
    /// Present when kapi manages the PKI (`load_or_create`).
    managed: Option<Managed>,
    /// The cluster's root CA bundle (PEM) that pods are given to verify the server
    /// (`kube-root-ca.crt`): kapi's CA, or the `--client-ca-file` bundle.
    root_ca_pem: Vec<u8>,
}

/// The parts of a kapi-managed PKI a kubeconfig needs: file contents, byte for byte.
struct Managed {
    dir: PathBuf,
    ca_pem: Vec<u8>,
    admin_cert_pem: Vec<u8>,
    admin_key_pem: Vec<u8>,
}

impl fmt::Debug for Pki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Keys are left out on purpose.
        f.debug_struct("Pki")
            .field("serving_chain_len", &self.serving_chain.len())
            .field("client_cas_len", &self.client_cas.len())
            .field("managed_dir", &self.managed.as_ref().map(|m| &m.dir))
            .finish_non_exhaustive()
    }
}

/// File locations of a kapi-managed PKI.
#[derive(Debug, Clone)]
struct Paths {
    dir: PathBuf,
    ca: PairPaths,
    serving: PairPaths,
    admin: PairPaths,
}

#[derive(Debug, Clone)]
struct PairPaths {
    cert: PathBuf,
    key: PathBuf,
}

impl Paths {
    fn new(dir: PathBuf) -> Self {
        let pair = |name: &str| PairPaths { cert: dir.join(format!("{name}.crt")), key: dir.join(format!("{name}.key")) };
        Paths { ca: pair("ca"), serving: pair("apiserver"), admin: pair("admin"), dir }
    }
}

/// A certificate (chain) and its key as read from files. `chain` is never empty (`read_certs`
/// refuses a file without certificates), so `chain[0]` is the end-entity certificate.
struct LoadedPair {
    cert_pem: Vec<u8>,
    chain: Vec<CertificateDer<'static>>,
    key_pem: Vec<u8>,
    key: PrivateKeyDer<'static>,
}

impl Pki {
    /// Loads kapi's PKI from `<data_dir>/pki/`, creating what is missing (see the module docs).
    /// `hosts` are extra names (IP addresses or DNS names) the serving certificate must carry.
    /// A new PKI is durable when this returns.
    pub fn load_or_create(data_dir: &Path, hosts: &[String]) -> Result<Pki> {
        let (pki, staged) = Self::load_or_stage(data_dir, hosts)?;
        if let Some(staged) = staged {
            staged.make_durable()?;
        }
        Ok(pki)
    }

    /// [`Self::load_or_create`], except that a new PKI is left in its staging directory, not
    /// yet synced: it is in place once the returned [`StagedPki`] is made durable. The server
    /// syncs it beside its start-up work instead of waiting for a dozen fsyncs first.
    pub fn load_or_stage(data_dir: &Path, hosts: &[String]) -> Result<(Pki, Option<StagedPki>)> {
        let names = serving_names(hosts)?;
        let provider = provider();
        let in_place = Paths::new(data_dir.join(PKI_DIR));
        let (paths, staged) = match exists(&in_place.dir)? {
            true => (in_place.clone(), None),
            false => {
                let staged = stage_fresh(data_dir, &in_place, &names)?;
                (Paths::new(staged.staging.clone()), Some(staged))
            }
        };
        // A PKI written by an older kapi, or copied in, may be open to others: its keys are
        // kapi's own, so they are restricted (certificates are public and stay as they are).
        crate::private_files::restrict(&paths.dir, crate::private_files::PRIVATE_DIR_MODE, "the PKI directory");
        for key in [&paths.ca.key, &paths.serving.key, &paths.admin.key] {
            crate::private_files::restrict(key, crate::private_files::PRIVATE_FILE_MODE, "the private key");
        }

        let ca = match pair_present(&paths.ca)? {
            true => load_pair(&paths.ca, &provider)?,
            false => {
                for dependent in [&paths.serving.cert, &paths.serving.key, &paths.admin.cert, &paths.admin.key] {
                    if exists(dependent)? {
                        return Err(PkiError::MissingCa {
                            ca: paths.ca.cert.clone(),
                            dependent: dependent.clone(),
                            dir: paths.dir.clone(),
                        });
                    }
                }
                let (cert_pem, key_pem, _) = new_ca()?;
                write_pair(&paths.ca, &cert_pem, &key_pem)?;
                load_pair(&paths.ca, &provider)?
            }
        };
        check_ca(&paths.ca.cert, &ca.chain[0])?;
        let mut roots = RootCertStore::empty();
        roots.add(ca.chain[0].clone()).map_err(|source| PkiError::TrustAnchor { path: paths.ca.cert.clone(), source })?;
        let roots = Arc::new(roots);
        let mut issuer = None;

        let serving = load_leaf(&paths, Leaf::Serving, &names, &ca, &roots, &provider, &mut issuer)?;
        let admin = load_leaf(&paths, Leaf::Admin, &names, &ca, &roots, &provider, &mut issuer)?;

        let pki = Pki {
            serving_chain: serving.chain,
            serving_key: serving.key,
            client_cas: vec![ca.chain[0].clone()],
            root_ca_pem: ca.cert_pem.clone(),
            managed: Some(Managed { dir: in_place.dir, ca_pem: ca.cert_pem, admin_cert_pem: admin.cert_pem, admin_key_pem: admin.key_pem }),
        };
        Ok((pki, staged))
    }

    /// Serves the given certificate (chain) and key, and trusts the CA certificates in
    /// `client_ca_file` for client certificates: kube-apiserver's `--tls-cert-file`,
    /// `--tls-private-key-file` and `--client-ca-file`. Such a PKI has no admin credentials, so
    /// [`Pki::write_kubeconfig`] refuses it.
    pub fn from_files(tls_cert_file: &Path, tls_private_key_file: &Path, client_ca_file: &Path) -> Result<Pki> {
        let provider = provider();
        // The operator's file: reported when open to others, never changed.
        crate::private_files::report_loose(tls_private_key_file, crate::private_files::PRIVATE_FILE_MODE, "--tls-private-key-file");
        let serving = load_pair(&PairPaths { cert: tls_cert_file.to_path_buf(), key: tls_private_key_file.to_path_buf() }, &provider)?;
        let root_ca_pem = read(client_ca_file)?;
        let client_cas = read_certs(client_ca_file, &root_ca_pem)?;
        let mut roots = RootCertStore::empty();
        for ca in &client_cas {
            roots.add(ca.clone()).map_err(|source| PkiError::TrustAnchor { path: client_ca_file.to_path_buf(), source })?;
        }
        Ok(Pki { serving_chain: serving.chain, serving_key: serving.key, client_cas, managed: None, root_ca_pem })
    }

    /// Trusts the CA certificates in `client_ca_file` for client certificates instead of
    /// kapi's own CA (kube-apiserver's `--client-ca-file` beside a kapi-managed serving
    /// certificate); the admin kubeconfig's certificate then authenticates only if that bundle
    /// holds kapi's CA.
    pub fn trust_client_cas(&mut self, client_ca_file: &Path) -> Result<()> {
        let pem = read(client_ca_file)?;
        let cas = read_certs(client_ca_file, &pem)?;
        let mut roots = RootCertStore::empty();
        for ca in &cas {
            roots.add(ca.clone()).map_err(|source| PkiError::TrustAnchor { path: client_ca_file.to_path_buf(), source })?;
        }
        self.client_cas = cas;
        Ok(())
    }

    /// The root CA bundle (PEM) published to every namespace as `kube-root-ca.crt`.
    pub fn root_ca_pem(&self) -> String {
        String::from_utf8_lossy(&self.root_ca_pem).into_owned()
    }

    /// Whether kapi made (and so holds) the admin credentials; not when the serving certificate
    /// and client CA come from flags.
    pub fn has_admin_credentials(&self) -> bool {
        self.managed.is_some()
    }

    /// Writes `<data_dir>/admin.kubeconfig` (mode 0600) for the admin user against `server_url`
    /// and returns its path. Needs a kapi-managed PKI.
    pub fn write_kubeconfig(&self, data_dir: &Path, server_url: &str) -> Result<PathBuf> {
        let managed = self.managed.as_ref().ok_or(PkiError::NoAdminCredentials)?;
        let yaml = kubeconfig_yaml(server_url, &managed.ca_pem, &managed.admin_cert_pem, &managed.admin_key_pem)?;
        let path = data_dir.join(KUBECONFIG_FILE);
        // A restart on the same port finds the file it wrote: kept as it is.
        if !file_is(&path, yaml.as_bytes(), 0o600) {
            write_file(&path, yaml.as_bytes(), 0o600, Durability::Regenerated)?;
        }
        Ok(path)
    }

    /// The rustls configuration to serve with: TLS 1.3 and 1.2 (ring), ALPN `h2` then `http/1.1`,
    /// client certificates optional but, when presented, verified against the client CA.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>> {
        let provider = Arc::new(provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(PkiError::Tls)?;
        let builder = match self.client_authenticator()? {
            None => builder.with_no_client_auth(),
            Some(authenticator) => builder.with_client_cert_verifier(Arc::new(DeferredClientVerifier(authenticator.verifier))),
        };
        let mut config = builder.with_single_cert(self.serving_chain.clone(), self.serving_key.clone_key()).map_err(PkiError::Tls)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// What checks a connection's client certificate against the client CA after the
    /// handshake (upstream's x509 authenticator); `None` without client CAs.
    pub fn client_authenticator(&self) -> Result<Option<ClientCertAuthenticator>> {
        if self.client_cas.is_empty() {
            return Ok(None);
        }
        let mut roots = RootCertStore::empty();
        for ca in &self.client_cas {
            roots.add(ca.clone()).map_err(PkiError::Tls)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::new(provider()))
            .allow_unauthenticated()
            .build()
            .map_err(PkiError::Verifier)?;
        Ok(Some(ClientCertAuthenticator { verifier }))
    }

    /// PEM of kapi's CA (`ca.crt`), when kapi manages the PKI.
    pub fn ca_pem(&self) -> Option<&[u8]> {
        self.managed.as_ref().map(|m| m.ca_pem.as_slice())
    }

    /// The directory of a kapi-managed PKI.
    pub fn dir(&self) -> Option<&Path> {
        self.managed.as_ref().map(|m| m.dir.as_path())
    }

    /// The CA certificates client certificates are verified against.
    pub fn client_ca_certs(&self) -> &[CertificateDer<'static>] {
        &self.client_cas
    }

    /// The serving certificate, then any intermediates.
    pub fn serving_cert_chain(&self) -> &[CertificateDer<'static>] {
        &self.serving_chain
    }
}

/// Upstream's x509 authenticator: a presented client certificate chain verified against the
/// client CAs, then mapped to its user. The TLS handshake accepts any certificate whose key the
/// client holds ([`Pki::server_config`]), as Go's `RequestClientCert` does, so that a
/// certificate from another CA is a 401 rather than a failed handshake.
#[derive(Clone, Debug)]
pub struct ClientCertAuthenticator {
    verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
}

impl ClientCertAuthenticator {
    /// `Err` when the chain does not verify (a 401); `Ok(None)` for a certificate without a
    /// common name (the request goes on to the other authenticators).
    pub fn authenticate(&self, chain: &[CertificateDer<'_>]) -> Result<Option<UserInfo>> {
        let Some((end_entity, intermediates)) = chain.split_first() else { return Ok(None) };
        self.verifier.verify_client_cert(end_entity, intermediates, UnixTime::now()).map_err(PkiError::Tls)?;
        match user_from_client_cert(end_entity.as_ref()) {
            Ok(user) => Ok(Some(user)),
            Err(PkiError::NoCommonName) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The handshake's client-certificate check: the certificate's chain is left to
/// [`ClientCertAuthenticator`]; the handshake signature (the client holds the key) and the
/// CA names offered are the WebPKI verifier's.
#[derive(Debug)]
struct DeferredClientVerifier(Arc<dyn rustls::server::danger::ClientCertVerifier>);

impl rustls::server::danger::ClientCertVerifier for DeferredClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> std::result::Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The user a client certificate names, as upstream's x509 authenticator maps it: the subject's
/// common name is the user, every subject organization a group, and then upstream's
/// `AuthenticatedGroupAdder` appends `system:authenticated` (unless the user is
/// `system:anonymous` or the groups already hold `system:authenticated` or
/// `system:unauthenticated`). A certificate without a common name names no user (upstream then
/// falls through to the other authenticators, and finally to anonymous).
///
/// `der` must be a certificate already verified against the client CA (as
/// [`ClientCertAuthenticator::authenticate`] does); this function does not verify it.
pub fn user_from_client_cert(der: &[u8]) -> Result<UserInfo> {
    let cert = parse_cert(der).map_err(PkiError::ClientCertificate)?;
    let subject = cert.subject();
    // Go's pkix.Name keeps the last common name and every organization, in order, taking only
    // attributes whose values are strings.
    let name = subject.iter_common_name().filter_map(attribute_string).last().unwrap_or_default();
    if name.is_empty() {
        return Err(PkiError::NoCommonName);
    }
    let mut groups: Vec<String> = subject.iter_organization().filter_map(attribute_string).collect();
    let already = groups.iter().any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED);
    if name != ANONYMOUS_USER && !already {
        groups.push(ALL_AUTHENTICATED.to_string());
    }
    Ok(UserInfo { name, groups, ..Default::default() })
}

/// A string-typed X.509 attribute value, as Go's `parseASN1String` reads it.
fn attribute_string(attr: &AttributeTypeAndValue<'_>) -> Option<String> {
    let value = attr.attr_value();
    let data = value.data;
    match value.header.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::NumericString => std::str::from_utf8(data).ok().map(str::to_string),
        // Go reads T61String bytes as they are.
        Tag::T61String => Some(String::from_utf8_lossy(data).into_owned()),
        Tag::BmpString => {
            if data.len() % 2 != 0 {
                return None;
            }
            let units: Vec<u16> = data.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Loading and creating

/// ring is the only provider compiled in; an explicit provider keeps process-wide defaults out.
fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// The two kinds of leaf certificates kapi issues.
#[derive(Debug, Clone, Copy)]
enum Leaf {
    Serving,
    Admin,
}

impl Leaf {
    fn what(self) -> &'static str {
        match self {
            Leaf::Serving => "serving certificate",
            Leaf::Admin => "admin client certificate",
        }
    }

    fn paths(self, paths: &Paths) -> &PairPaths {
        match self {
            Leaf::Serving => &paths.serving,
            Leaf::Admin => &paths.admin,
        }
    }

    fn params(self, names: &[SanName]) -> Result<CertificateParams> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        match self {
            Leaf::Serving => {
                dn.push(DnType::CommonName, SERVING_COMMON_NAME);
                params.subject_alt_names = names.iter().map(SanName::to_san).collect::<Result<_>>()?;
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            }
            Leaf::Admin => {
                dn.push(DnType::OrganizationName, ADMIN_GROUP);
                dn.push(DnType::CommonName, ADMIN_USER);
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            }
        }
        params.distinguished_name = dn;
        // ECDSA keys sign; they never encipher, so no keyEncipherment.
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, LEAF_VALIDITY_DAYS);
        params.serial_number = Some(random_serial());
        Ok(params)
    }
}

/// A new PKI in its staging directory (`<data-dir>/.pki.tmp`), written but not yet synced.
/// Nothing is at `<data-dir>/pki` until [`StagedPki::make_durable`] has synced every file and
/// renamed the directory into place, so a crash before then leaves no half PKI behind: the next
/// start replaces the staging directory.
#[must_use = "a staged PKI is not in place until it is made durable"]
pub struct StagedPki {
    staging: PathBuf,
    in_place: PathBuf,
    data_dir: PathBuf,
}

impl StagedPki {
    /// Where files that belong with the new PKI are written meanwhile (the service-account key).
    pub fn dir(&self) -> &Path {
        &self.staging
    }

    /// Syncs every file of the staging directory and the directory, then renames it into place
    /// and syncs the rename.
    pub fn make_durable(self) -> Result<()> {
        let entries = fs::read_dir(&self.staging).map_err(io_err("listing", &self.staging))?;
        for entry in entries {
            let path = entry.map_err(io_err("listing", &self.staging))?.path();
            fs::File::open(&path).and_then(|file| file.sync_all()).map_err(io_err("syncing", &path))?;
        }
        sync_dir(&self.staging);
        fs::rename(&self.staging, &self.in_place).map_err(io_err("renaming the staged PKI to", &self.in_place))?;
        sync_dir(&self.data_dir);
        Ok(())
    }
}

/// First start: everything is written into a staging directory, unsynced (see [`StagedPki`]).
fn stage_fresh(data_dir: &Path, paths: &Paths, names: &[SanName]) -> Result<StagedPki> {
    create_dir(data_dir, true)?;
    let staging = data_dir.join(format!(".{PKI_DIR}.tmp"));
    if exists(&staging)? {
        fs::remove_dir_all(&staging).map_err(io_err("removing the stale", &staging))?;
    }
    create_dir(&staging, true)?;
    let staged = Paths::new(staging.clone());

    // Nothing in the directory is seen before the rename, so the files need no atomic
    // replacement of their own.
    let (ca_cert, ca_key, issuer) = new_ca()?;
    write_staged_pair(&staged.ca, &ca_cert, &ca_key)?;
    for leaf in [Leaf::Serving, Leaf::Admin] {
        let (cert, key) = new_leaf(leaf, names, &issuer)?;
        write_staged_pair(leaf.paths(&staged), &cert, &key)?;
    }
    Ok(StagedPki { staging, in_place: paths.dir.clone(), data_dir: data_dir.to_path_buf() })
}

/// A new self-signed CA: certificate PEM, key PEM, and the issuer to sign leaves with.
fn new_ca() -> Result<(Vec<u8>, Vec<u8>, Issuer<'static, KeyPair>)> {
    let generate = |source| PkiError::Generate { what: "CA", source };
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    set_validity(&mut params, CA_VALIDITY_DAYS);
    params.serial_number = Some(random_serial());
    let cert = params.self_signed(&key).map_err(generate)?;
    let key_pem = key.serialize_pem().into_bytes();
    Ok((cert.pem().into_bytes(), key_pem, Issuer::new(params, key)))
}

/// A new leaf key and certificate (PEMs) signed by `issuer`.
fn new_leaf(leaf: Leaf, names: &[SanName], issuer: &Issuer<'_, KeyPair>) -> Result<(Vec<u8>, Vec<u8>)> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|source| PkiError::Generate { what: leaf.what(), source })?;
    let cert = leaf.params(names)?.signed_by(&key, issuer).map_err(|source| PkiError::Generate { what: leaf.what(), source })?;
    Ok((cert.pem().into_bytes(), key.serialize_pem().into_bytes()))
}

/// Loads a leaf pair of a managed PKI, issuing it when both files are missing and re-issuing its
/// certificate (same key) when it lacks a name, fails to verify or nears expiry.
fn load_leaf(
    paths: &Paths,
    leaf: Leaf,
    names: &[SanName],
    ca: &LoadedPair,
    roots: &Arc<RootCertStore>,
    provider: &CryptoProvider,
    issuer: &mut Option<Issuer<'static, KeyPair>>,
) -> Result<LoadedPair> {
    let pair = leaf.paths(paths);
    if !pair_present(pair)? {
        let (cert, key) = new_leaf(leaf, names, ca_issuer(&paths.ca, ca, issuer)?)?;
        write_pair(pair, &cert, &key)?;
        tracing::info!(cert = %pair.cert.display(), "issued the {}", leaf.what());
    }
    let loaded = load_pair(pair, provider)?;
    let Some(reason) = leaf_problem(leaf, &pair.cert, &loaded.chain, names, roots, provider)? else {
        return Ok(loaded);
    };

    tracing::warn!(cert = %pair.cert.display(), "re-issuing the {} from the CA: it {reason}", leaf.what());
    let issuer = ca_issuer(&paths.ca, ca, issuer)?;
    let spki =
        parse_cert(&loaded.chain[0]).map_err(|source| PkiError::Certificate { path: pair.cert.clone(), source })?.public_key().raw.to_vec();
    let public_key = ExistingKey::from_spki(&spki).ok_or_else(|| PkiError::Invalid {
        path: pair.key.clone(),
        reason: "kapi cannot re-issue a certificate for this kind of key".to_string(),
    })?;
    let cert = leaf.params(names)?.signed_by(&public_key, issuer).map_err(|source| PkiError::Generate { what: leaf.what(), source })?;
    // The issuer name must be the CA's subject byte for byte, or no verifier builds the chain.
    let ca_cert = parse_cert(&ca.chain[0]).map_err(|source| PkiError::Certificate { path: paths.ca.cert.clone(), source })?;
    let issued = parse_cert(cert.der()).map_err(|source| PkiError::Certificate { path: pair.cert.clone(), source })?;
    if issued.issuer().as_raw() != ca_cert.subject().as_raw() {
        return Err(PkiError::Invalid {
            path: paths.ca.cert.clone(),
            reason: "kapi cannot reproduce this CA's subject name to sign with it".to_string(),
        });
    }
    write_file(&pair.cert, cert.pem().as_bytes(), 0o644, Durability::Synced)?;
    let reloaded = load_pair(pair, provider)?;
    if let Some(reason) = leaf_problem(leaf, &pair.cert, &reloaded.chain, names, roots, provider)? {
        return Err(PkiError::Invalid { path: pair.cert.clone(), reason: format!("the re-issued certificate {reason}") });
    }
    Ok(reloaded)
}

/// The public key of an existing certificate, to re-issue it for the same key.
struct ExistingKey {
    alg: &'static rcgen::SignatureAlgorithm,
    raw: Vec<u8>,
}

impl ExistingKey {
    /// The key whose SubjectPublicKeyInfo, as rcgen writes it, is `spki` byte for byte.
    fn from_spki(spki: &[u8]) -> Option<ExistingKey> {
        let (_, parsed) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki).ok()?;
        let raw = parsed.subject_public_key.data.to_vec();
        [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ECDSA_P384_SHA384, &rcgen::PKCS_ED25519, &rcgen::PKCS_RSA_SHA256]
            .into_iter()
            .map(|alg| ExistingKey { alg, raw: raw.clone() })
            .find(|key| key.subject_public_key_info() == spki)
    }
}

impl PublicKeyData for ExistingKey {
    fn der_bytes(&self) -> &[u8] {
        &self.raw
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.alg
    }
}

/// A kubeconfig for any user: a client certificate for `user` in `groups` signed by the
/// managed CA under `<data_dir>/pki` (`kapi kubeconfig --user alice --group dev`).
pub fn user_kubeconfig(data_dir: &Path, server_url: &str, user: &str, groups: &[String]) -> Result<String> {
    let paths = Paths::new(data_dir.join(PKI_DIR));
    let ca = load_pair(&paths.ca, &provider())?;
    let mut issuer = None;
    let issuer = ca_issuer(&paths.ca, &ca, &mut issuer)?;
    let what = "user client certificate";
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|source| PkiError::Generate { what, source })?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    for group in groups {
        dn.push(DnType::OrganizationName, group.as_str());
    }
    dn.push(DnType::CommonName, user);
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY_DAYS);
    params.serial_number = Some(random_serial());
    let cert = params.signed_by(&key, issuer).map_err(|source| PkiError::Generate { what, source })?;
    user_kubeconfig_yaml(server_url, user, &ca.cert_pem, cert.pem().as_bytes(), key.serialize_pem().as_bytes())
}

/// The service-account signing key (PKCS#8 ECDSA P-256 PEM) at `<data_dir>/pki/sa.key`,
/// generated (0600) on first use, as kubeadm keeps `sa.key`. With a new PKI still `staged`, a
/// new key joins it in its staging directory and is made durable with it.
pub fn service_account_key(data_dir: &Path, staged: Option<&StagedPki>) -> Result<Vec<u8>> {
    let generate = || {
        KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
            .map(|key| key.serialize_pem().into_bytes())
            .map_err(|source| PkiError::Generate { what: "service-account key", source })
    };
    if let Some(staged) = staged {
        let (path, key) = (staged.dir().join(SA_KEY_FILE), generate()?);
        write_new(&path, &key, 0o600, Durability::Staged)?;
        return Ok(key);
    }
    let dir = data_dir.join(PKI_DIR);
    let path = dir.join(SA_KEY_FILE);
    if !exists(&path)? {
        create_dir(&dir, true)?;
        write_file(&path, &generate()?, 0o600, Durability::Synced)?;
    }
    crate::private_files::restrict(&path, crate::private_files::PRIVATE_FILE_MODE, "the private key");
    read(&path)
}

/// The service-account signing key's file name in the PKI directory.
const SA_KEY_FILE: &str = "sa.key";

/// Why a leaf certificate must be re-issued, if it must.
fn leaf_problem(
    leaf: Leaf,
    path: &Path,
    chain: &[CertificateDer<'static>],
    names: &[SanName],
    roots: &Arc<RootCertStore>,
    provider: &CryptoProvider,
) -> Result<Option<String>> {
    let provider = Arc::new(provider.clone());
    let cert = parse_cert(&chain[0]).map_err(|source| PkiError::Certificate { path: path.to_path_buf(), source })?;
    let not_after = cert.validity().not_after.timestamp();
    let renew_at = unix_now().saturating_add(i64::try_from(RENEW_BEFORE_DAYS * DAY.as_secs()).unwrap_or(i64::MAX));
    if not_after < renew_at {
        return Ok(Some(format!("expires within {RENEW_BEFORE_DAYS} days (notAfter {})", cert.validity().not_after)));
    }
    let now = UnixTime::now();
    match leaf {
        Leaf::Serving => {
            let present = cert_sans(&cert);
            let missing: Vec<String> = names.iter().filter(|n| !present.contains(n)).map(ToString::to_string).collect();
            if !missing.is_empty() {
                return Ok(Some(format!("lacks the names {}", missing.join(", "))));
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(roots.clone(), provider).build().map_err(PkiError::Verifier)?;
            let localhost = ServerName::try_from(DEFAULT_SERVING_DNS_NAMES[0])
                .map_err(|_| PkiError::InvalidHost { host: DEFAULT_SERVING_DNS_NAMES[0].to_string(), reason: "not a DNS name" })?;
            if let Err(err) = verifier.verify_server_cert(&chain[0], &chain[1..], &localhost, &[], now) {
                return Ok(Some(format!("does not verify against the CA as a serving certificate: {err}")));
            }
        }
        Leaf::Admin => {
            let user = user_from_client_cert(&chain[0]).ok();
            if user.as_ref().is_none_or(|u| u.name != ADMIN_USER || !u.groups.iter().any(|g| g == ADMIN_GROUP)) {
                return Ok(Some(format!("does not name the user {ADMIN_USER} in {ADMIN_GROUP}")));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider).build().map_err(PkiError::Verifier)?;
            if let Err(err) = verifier.verify_client_cert(&chain[0], &chain[1..], now) {
                return Ok(Some(format!("does not verify against the CA as a client certificate: {err}")));
            }
        }
    }
    Ok(None)
}

/// The issuer for the managed CA, built once on first need.
fn ca_issuer<'a>(
    paths: &PairPaths,
    ca: &LoadedPair,
    issuer: &'a mut Option<Issuer<'static, KeyPair>>,
) -> Result<&'a Issuer<'static, KeyPair>> {
    if issuer.is_none() {
        let key_pem = std::str::from_utf8(&ca.key_pem)
            .map_err(|_| PkiError::Invalid { path: paths.key.clone(), reason: "not a PEM text file".to_string() })?;
        let key = KeyPair::from_pem(key_pem).map_err(|source| PkiError::SigningKey { path: paths.key.clone(), source })?;
        let cert = parse_cert(&ca.chain[0]).map_err(|source| PkiError::Certificate { path: paths.cert.clone(), source })?;
        let mut params = CertificateParams::default();
        params.distinguished_name = dn_from_x509(cert.subject()).ok_or_else(|| PkiError::Invalid {
            path: paths.cert.clone(),
            reason: "kapi cannot reproduce this CA's subject name to sign with it".to_string(),
        })?;
        // Leaves name the CA's own key identifier, whatever method produced it.
        params.key_identifier_method = match subject_key_id(&cert) {
            Some(id) => KeyIdMethod::PreSpecified(id),
            None => KeyIdMethod::Sha256,
        };
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        *issuer = Some(Issuer::new(params, key));
    }
    // Filled just above when it was empty.
    issuer.as_ref().ok_or_else(|| PkiError::Invalid { path: paths.key.clone(), reason: "no issuer".to_string() })
}

fn subject_key_id(cert: &X509Certificate<'_>) -> Option<Vec<u8>> {
    cert.iter_extensions().find_map(|ext| match ext.parsed_extension() {
        ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0.to_vec()),
        _ => None,
    })
}

/// The subject of an existing CA as rcgen writes it, when rcgen can write it (one attribute per
/// RDN, each type once, string values).
fn dn_from_x509(name: &X509Name<'_>) -> Option<DistinguishedName> {
    let mut dn = DistinguishedName::new();
    let mut count = 0;
    for rdn in name.iter() {
        let mut attrs = rdn.iter();
        let attr = attrs.next()?;
        if attrs.next().is_some() {
            return None;
        }
        let oid: Vec<u64> = attr.attr_type().iter()?.collect();
        let data = attr.attr_value().data;
        let text = || std::str::from_utf8(data).ok();
        let value = match attr.attr_value().header.tag() {
            Tag::Utf8String => DnValue::Utf8String(text()?.to_string()),
            Tag::PrintableString => DnValue::PrintableString(text()?.try_into().ok()?),
            Tag::Ia5String => DnValue::Ia5String(text()?.try_into().ok()?),
            Tag::T61String => DnValue::TeletexString(text()?.try_into().ok()?),
            _ => return None,
        };
        dn.push(DnType::from_oid(&oid), value);
        count += 1;
    }
    (dn.iter().count() == count).then_some(dn)
}

/// Refuses a CA certificate that is not a CA or has expired.
fn check_ca(path: &Path, der: &CertificateDer<'_>) -> Result<()> {
    let cert = parse_cert(der).map_err(|source| PkiError::Certificate { path: path.to_path_buf(), source })?;
    if !cert.is_ca() {
        return Err(PkiError::Invalid {
            path: path.to_path_buf(),
            reason: "not a CA certificate (basicConstraints CA is not true)".into(),
        });
    }
    if cert.validity().not_after.timestamp() <= unix_now() {
        return Err(PkiError::Invalid {
            path: path.to_path_buf(),
            reason: format!("the CA expired on {}; remove the PKI directory to start a new one", cert.validity().not_after),
        });
    }
    Ok(())
}

/// Both files of a pair exist (`true`), neither does (`false`), or an error naming the missing one.
fn pair_present(pair: &PairPaths) -> Result<bool> {
    match (exists(&pair.cert)?, exists(&pair.key)?) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (true, false) => Err(PkiError::MissingPair { missing: pair.key.clone(), present: pair.cert.clone() }),
        (false, true) => Err(PkiError::MissingPair { missing: pair.cert.clone(), present: pair.key.clone() }),
    }
}

/// Reads a certificate (chain) and key and checks that they belong together.
fn load_pair(pair: &PairPaths, provider: &CryptoProvider) -> Result<LoadedPair> {
    let cert_pem = read(&pair.cert)?;
    let chain = read_certs(&pair.cert, &cert_pem)?;
    let key_pem = read(&pair.key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|err| match err {
        pem::Error::NoItemsFound => PkiError::Invalid { path: pair.key.clone(), reason: "contains no PEM private key block".to_string() },
        source => PkiError::Pem { path: pair.key.clone(), source },
    })?;
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|source| PkiError::PrivateKey { path: pair.key.clone(), source })?;
    match CertifiedKey::new(chain.clone(), signing_key).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(source) => return Err(PkiError::KeyMismatch { cert: pair.cert.clone(), key: pair.key.clone(), source }),
    }
    Ok(LoadedPair { cert_pem, chain, key_pem, key })
}

/// Every certificate in a PEM file, each checked to parse as X.509.
fn read_certs(path: &Path, bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| PkiError::Pem { path: path.to_path_buf(), source })?;
    if certs.is_empty() {
        return Err(PkiError::Invalid { path: path.to_path_buf(), reason: "contains no PEM CERTIFICATE block".to_string() });
    }
    for cert in &certs {
        parse_cert(cert).map_err(|source| PkiError::Certificate { path: path.to_path_buf(), source })?;
    }
    Ok(certs)
}

fn parse_cert(der: &[u8]) -> Result<X509Certificate<'_>, X509Error> {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, cert)) => Ok(cert),
        Err(x509_parser::nom::Err::Error(err) | x509_parser::nom::Err::Failure(err)) => Err(err),
        Err(x509_parser::nom::Err::Incomplete(_)) => Err(X509Error::InvalidCertificate),
    }
}

fn set_validity(params: &mut CertificateParams, days: u64) {
    // rcgen takes `time::OffsetDateTime`; the epoch plus a std `Duration` builds one without
    // naming the `time` crate.
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + since_epoch.saturating_sub(BACKDATE);
    params.not_after = epoch + since_epoch + DAY * u32::try_from(days).unwrap_or(u32::MAX);
}

fn unix_now() -> i64 {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    i64::try_from(secs).unwrap_or(i64::MAX)
}

/// A random positive 128-bit serial number (RFC 5280: unique per CA; rcgen's default derives it
/// from the public key, which would repeat when a certificate is re-issued for the same key).
fn random_serial() -> SerialNumber {
    let mut bytes = [0u8; 16];
    if provider().secure_random.fill(&mut bytes).is_err() {
        // No randomness: fall back to the clock, still unique per issuance in practice.
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        bytes = nanos.to_be_bytes();
    }
    bytes[0] = (bytes[0] & 0x7f) | 0x40; // positive, full length
    SerialNumber::from_slice(&bytes)
}

// ---------------------------------------------------------------------------------------------
// Subject alternative names

/// A name the serving certificate must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SanName {
    /// Lower case: DNS names compare case-insensitively.
    Dns(String),
    Ip(IpAddr),
}

impl fmt::Display for SanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SanName::Dns(name) => write!(f, "DNS:{name}"),
            SanName::Ip(ip) => write!(f, "IP:{ip}"),
        }
    }
}

impl SanName {
    fn parse(host: &str) -> Result<SanName> {
        let invalid = |reason| PkiError::InvalidHost { host: host.to_string(), reason };
        let trimmed = host.trim();
        let unbracketed = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(trimmed);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(SanName::Ip(ip));
        }
        let name = trimmed.strip_suffix('.').unwrap_or(trimmed).to_ascii_lowercase();
        if name.is_empty() {
            return Err(invalid("empty"));
        }
        if name.len() > 253 {
            return Err(invalid("longer than 253 characters"));
        }
        for (i, label) in name.split('.').enumerate() {
            if label.is_empty() || label.len() > 63 {
                return Err(invalid("a DNS label is empty or longer than 63 characters"));
            }
            let wildcard = i == 0 && label == "*";
            if !wildcard && !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(invalid("neither an IP address nor a DNS name"));
            }
        }
        Ok(SanName::Dns(name))
    }

    fn to_san(&self) -> Result<SanType> {
        Ok(match self {
            SanName::Dns(name) => SanType::DnsName(
                name.as_str().try_into().map_err(|_| PkiError::InvalidHost { host: name.clone(), reason: "not an IA5 string" })?,
            ),
            SanName::Ip(ip) => SanType::IpAddress(*ip),
        })
    }
}

/// The serving certificate's names: the defaults, then `hosts`, without repeats.
fn serving_names(hosts: &[String]) -> Result<Vec<SanName>> {
    let mut names: Vec<SanName> = DEFAULT_SERVING_DNS_NAMES.iter().map(|n| SanName::Dns((*n).to_string())).collect();
    names.push(SanName::Ip(IpAddr::from([127, 0, 0, 1])));
    names.push(SanName::Ip(IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1])));
    for host in hosts {
        let name = SanName::parse(host)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

fn cert_sans(cert: &X509Certificate<'_>) -> Vec<SanName> {
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some(SanName::Dns(dns.to_ascii_lowercase())),
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes).ok().map(|b| SanName::Ip(IpAddr::from(b))),
                16 => <[u8; 16]>::try_from(*bytes).ok().map(|b| SanName::Ip(IpAddr::from(b))),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Kubeconfig

#[derive(Serialize)]
struct Kubeconfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    clusters: Vec<Named<'a, Cluster<'a>>>,
    contexts: Vec<Named<'a, Context<'a>>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    kind: &'a str,
    preferences: Preferences,
    users: Vec<Named<'a, User>>,
}

#[derive(Serialize)]
struct Named<'a, T> {
    name: &'a str,
    #[serde(flatten)]
    item: T,
}

#[derive(Serialize)]
struct Cluster<'a> {
    cluster: ClusterFields<'a>,
}

#[derive(Serialize)]
struct ClusterFields<'a> {
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
    server: &'a str,
}

#[derive(Serialize)]
struct Context<'a> {
    context: ContextFields<'a>,
}

#[derive(Serialize)]
struct ContextFields<'a> {
    cluster: &'a str,
    user: &'a str,
}

#[derive(Serialize)]
struct User {
    user: UserFields,
}

#[derive(Serialize)]
struct UserFields {
    #[serde(rename = "client-certificate-data")]
    client_certificate_data: String,
    #[serde(rename = "client-key-data")]
    client_key_data: String,
}

#[derive(Serialize)]
struct Preferences {}

/// The admin kubeconfig; its `*-data` fields are Go `[]byte`s, written as `encoding/json` writes
/// them (standard base64, padded).
fn kubeconfig_yaml(server_url: &str, ca_pem: &[u8], cert_pem: &[u8], key_pem: &[u8]) -> Result<String> {
    user_kubeconfig_yaml(server_url, ADMIN_USER, ca_pem, cert_pem, key_pem)
}

/// A kubeconfig for `user` with its client certificate and key.
fn user_kubeconfig_yaml(server_url: &str, user: &str, ca_pem: &[u8], cert_pem: &[u8], key_pem: &[u8]) -> Result<String> {
    let config = Kubeconfig {
        api_version: "v1",
        clusters: vec![Named {
            name: KUBECONFIG_CLUSTER,
            item: Cluster { cluster: ClusterFields { certificate_authority_data: serde_bytes::encode(ca_pem), server: server_url } },
        }],
        contexts: vec![Named { name: KUBECONFIG_CLUSTER, item: Context { context: ContextFields { cluster: KUBECONFIG_CLUSTER, user } } }],
        current_context: KUBECONFIG_CLUSTER,
        kind: "Config",
        preferences: Preferences {},
        users: vec![Named {
            name: user,
            item: User {
                user: UserFields { client_certificate_data: serde_bytes::encode(cert_pem), client_key_data: serde_bytes::encode(key_pem) },
            },
        }],
    };
    serde_yaml_ng::to_string(&config).map_err(PkiError::Kubeconfig)
}

// ---------------------------------------------------------------------------------------------
// Files

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> PkiError + 'a {
    move |source| PkiError::Io { action, path: path.to_path_buf(), source }
}

fn exists(path: &Path) -> Result<bool> {
    path.try_exists().map_err(io_err("checking", path))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(io_err("reading", path))
}

fn create_dir(path: &Path, private: bool) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    #[cfg(not(unix))]
    let _ = private;
    builder.create(path).map_err(io_err("creating the directory", path))
}

/// Writes a pair: key first, so a crash between the two leaves a missing certificate (an error
/// naming it), never a certificate without its key.
fn write_pair(pair: &PairPaths, cert_pem: &[u8], key_pem: &[u8]) -> Result<()> {
    write_file(&pair.key, key_pem, 0o600, Durability::Synced)?;
    write_file(&pair.cert, cert_pem, 0o644, Durability::Synced)
}

/// A pair in the staging directory of a fresh PKI (see [`StagedPki`]).
fn write_staged_pair(pair: &PairPaths, cert_pem: &[u8], key_pem: &[u8]) -> Result<()> {
    write_new(&pair.key, key_pem, 0o600, Durability::Staged)?;
    write_new(&pair.cert, cert_pem, 0o644, Durability::Staged)
}

/// Whether a file written must survive a crash, or is made again by every start.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Synced before it replaces the old file, and the rename synced: keys and certificates.
    Synced,
    /// Not synced: what a start writes again when it finds the file differs (the kubeconfig
    /// naming the port). A crash may lose it, or leave it empty, but never half old and half new.
    Regenerated,
    /// Synced later with the staging directory of a new PKI ([`StagedPki::make_durable`]).
    Staged,
}

/// Writes `path` atomically (temporary file in the same directory, then renamed) with the
/// given Unix permissions, synced as `durability` says.
fn write_file(path: &Path, contents: &[u8], mode: u32, durability: Durability) -> Result<()> {
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(PkiError::Io { action: "removing", path: tmp, source }),
    }
    write_new(&tmp, contents, mode, durability)?;
    fs::rename(&tmp, path).map_err(io_err("renaming a temporary file to", path))?;
    if durability == Durability::Synced
        && let Some(dir) = path.parent()
    {
        sync_dir(dir);
    }
    Ok(())
}

/// Whether `path` is a file (not a link) holding exactly `contents` with the given Unix
/// permissions.
fn file_is(path: &Path, contents: &[u8], mode: u32) -> bool {
    crate::private_files::mode_of(path) == Some((mode, false)) && fs::read(path).is_ok_and(|current| current == contents)
}

/// Creates `path` (which must not exist) with the given Unix permissions and writes it, synced
/// as `durability` says.
fn write_new(path: &Path, contents: &[u8], mode: u32, durability: Durability) -> Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(path).map_err(io_err("creating", path))?;
    #[cfg(unix)]
    {
        // The umask may have narrowed or (for 0644) not; make the mode exact.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(mode)).map_err(io_err("setting permissions of", path))?;
    }
    file.write_all(contents).map_err(io_err("writing", path))?;
    match durability {
        Durability::Synced => file.sync_all().map_err(io_err("syncing", path)),
        Durability::Regenerated | Durability::Staged => Ok(()),
    }
}

/// Best effort: makes a rename durable. Not every platform can open a directory to sync it.
fn sync_dir(dir: &Path) {
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    fn cert_with_subject(subject: &[(DnType, &str)]) -> Vec<u8> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for (ty, value) in subject {
            dn.push(ty.clone(), *value);
        }
        params.distinguished_name = dn;
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn errors_travel_across_threads_and_into_anyhow() {
        fn check<T: std::error::Error + Send + Sync + 'static>() {}
        check::<PkiError>();
    }

    #[test]
    fn hosts_become_ip_or_dns_names() {
        assert_eq!(SanName::parse("10.0.0.1").unwrap(), SanName::Ip("10.0.0.1".parse().unwrap()));
        assert_eq!(SanName::parse("[fd00::1]").unwrap(), SanName::Ip("fd00::1".parse().unwrap()));
        assert_eq!(SanName::parse("Example.COM.").unwrap(), SanName::Dns("example.com".into()));
        assert_eq!(SanName::parse("*.apps.example").unwrap(), SanName::Dns("*.apps.example".into()));
        for bad in ["", "a b", "example.com:6443", "a..b", "x.*.y"] {
            let err = SanName::parse(bad).unwrap_err();
            assert!(matches!(err, PkiError::InvalidHost { .. }), "{bad:?}: {err}");
        }
    }

    #[test]
    fn serving_names_start_with_defaults_and_skip_repeats() {
        let names = serving_names(&["LOCALHOST".into(), "::1".into(), "10.1.2.3".into()]).unwrap();
        let shown: Vec<String> = names.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "DNS:localhost",
                "DNS:kubernetes",
                "DNS:kubernetes.default",
                "DNS:kubernetes.default.svc",
                "DNS:kubernetes.default.svc.cluster.local",
                "IP:127.0.0.1",
                "IP:::1",
                "IP:10.1.2.3",
            ]
        );
    }

    #[test]
    fn user_is_common_name_and_groups_are_organizations_plus_authenticated() {
        let der = cert_with_subject(&[
            (DnType::OrganizationName, "devs"),
            (DnType::OrganizationalUnitName, "ignored"),
            (DnType::CommonName, "jane"),
        ]);
        let user = user_from_client_cert(&der).unwrap();
        assert_eq!(user, UserInfo { name: "jane".into(), groups: vec!["devs".into(), ALL_AUTHENTICATED.into()], ..Default::default() });
    }

    #[test]
    fn authenticated_group_is_added_as_upstreams_group_adder_does() {
        let anonymous = cert_with_subject(&[(DnType::CommonName, ANONYMOUS_USER)]);
        assert_eq!(user_from_client_cert(&anonymous).unwrap().groups, Vec::<String>::new());
        let already = cert_with_subject(&[(DnType::OrganizationName, ALL_UNAUTHENTICATED), (DnType::CommonName, "x")]);
        assert_eq!(user_from_client_cert(&already).unwrap().groups, vec![ALL_UNAUTHENTICATED.to_string()]);
    }

    #[test]
    fn certificate_without_common_name_names_no_user() {
        let der = cert_with_subject(&[(DnType::OrganizationName, "devs")]);
        assert!(matches!(user_from_client_cert(&der), Err(PkiError::NoCommonName)));
        assert!(matches!(user_from_client_cert(b"not der"), Err(PkiError::ClientCertificate(_))));
    }

    #[test]
    fn every_organization_is_a_group_in_order() {
        // rcgen writes each attribute type once; write an OU and patch its OID (2.5.4.11) into
        // O (2.5.4.10), as a certificate from another tool with two O attributes. The signature
        // no longer verifies, which this function does not check.
        let mut der =
            cert_with_subject(&[(DnType::OrganizationName, "a"), (DnType::OrganizationalUnitName, "b"), (DnType::CommonName, "u")]);
        let ou = [0x06, 0x03, 0x55, 0x04, 0x0b];
        let at = der.windows(ou.len()).rposition(|w| w == ou).expect("OU attribute"); // the subject follows the issuer
        der[at + 4] = 0x0a;
        let user = user_from_client_cert(&der).unwrap();
        assert_eq!(user.groups, ["a", "b", ALL_AUTHENTICATED]);
    }

    #[test]
    fn existing_ca_subject_is_reproduced_for_signing() {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CountryName, DnValue::PrintableString("DE".try_into().unwrap()));
        dn.push(DnType::OrganizationName, "Example");
        dn.push(DnType::CommonName, "example-ca");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let parsed = parse_cert(ca.der()).unwrap();
        let rebuilt = dn_from_x509(parsed.subject()).expect("reproducible");
        let mut leaf = CertificateParams::default();
        leaf.distinguished_name = rebuilt.clone();
        let again = leaf.self_signed(&key).unwrap();
        assert_eq!(parse_cert(again.der()).unwrap().subject().as_raw(), parsed.subject().as_raw());
    }

    #[test]
    fn missing_half_of_a_pair_is_an_error_naming_it() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        fs::remove_file(pki.join("admin.key")).unwrap();
        let err = Pki::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(matches!(err, PkiError::MissingPair { .. }), "{err}");
        assert!(err.to_string().contains("admin.key"), "{err}");
    }

    #[test]
    fn missing_ca_with_leaves_present_is_an_error() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        fs::remove_file(pki.join("ca.crt")).unwrap();
        fs::remove_file(pki.join("ca.key")).unwrap();
        let err = Pki::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(matches!(err, PkiError::MissingCa { .. }), "{err}");
        assert!(err.to_string().contains("ca.crt"), "{err}");
    }

    #[test]
    fn removed_leaf_pair_is_issued_again_from_the_same_ca() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        let ca_before = fs::read(pki.join("ca.crt")).unwrap();
        fs::remove_file(pki.join("apiserver.crt")).unwrap();
        fs::remove_file(pki.join("apiserver.key")).unwrap();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(fs::read(pki.join("ca.crt")).unwrap(), ca_before);
        assert!(pki.join("apiserver.crt").exists());
    }

    #[test]
    fn serving_cert_not_from_the_ca_is_reissued() {
        let dir = temp();
        let other = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        Pki::load_or_create(other.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        // A pair from another CA: consistent with its key but not signed by this CA.
        for file in ["apiserver.crt", "apiserver.key"] {
            fs::copy(other.path().join(PKI_DIR).join(file), pki.join(file)).unwrap();
        }
        let key_before = fs::read(pki.join("apiserver.key")).unwrap();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(fs::read(pki.join("apiserver.key")).unwrap(), key_before, "key kept");
        let cert = fs::read(pki.join("apiserver.crt")).unwrap();
        let der = CertificateDer::from_pem_slice(&cert).unwrap();
        let ca = CertificateDer::from_pem_slice(&fs::read(pki.join("ca.crt")).unwrap()).unwrap();
        assert_eq!(parse_cert(&der).unwrap().issuer().as_raw(), parse_cert(&ca).unwrap().subject().as_raw());
    }

    #[test]
    fn mismatched_key_is_an_error_naming_both_files() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        fs::copy(pki.join("admin.key"), pki.join("apiserver.key")).unwrap();
        let err = Pki::load_or_create(dir.path(), &[]).unwrap_err();
        assert!(matches!(err, PkiError::KeyMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("apiserver.crt") && text.contains("apiserver.key"), "{text}");
    }

    #[test]
    fn a_staged_pki_is_in_place_only_once_made_durable() {
        let dir = temp();
        let (pki, staged) = Pki::load_or_stage(dir.path(), &[]).unwrap();
        let staged = staged.expect("a new PKI is staged");
        let key = service_account_key(dir.path(), Some(&staged)).unwrap();
        // Until then a crash leaves only the staging directory, which the next start replaces.
        assert!(!dir.path().join(PKI_DIR).exists());
        staged.make_durable().unwrap();
        assert!(!dir.path().join(".pki.tmp").exists());
        let in_place = dir.path().join(PKI_DIR);
        assert_eq!(fs::read(in_place.join(SA_KEY_FILE)).unwrap(), key);
        assert_eq!(crate::private_files::mode_of(&in_place.join(SA_KEY_FILE)), Some((0o600, false)));
        // A later start reuses every file as it is.
        let (again, staged) = Pki::load_or_stage(dir.path(), &[]).unwrap();
        assert!(staged.is_none());
        assert_eq!(again.root_ca_pem(), pki.root_ca_pem());
        assert_eq!(service_account_key(dir.path(), None).unwrap(), key);
    }

    #[test]
    fn stale_staging_directory_is_replaced() {
        let dir = temp();
        fs::create_dir_all(dir.path().join(".pki.tmp")).unwrap();
        fs::write(dir.path().join(".pki.tmp/ca.crt"), "junk").unwrap();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        assert!(!dir.path().join(".pki.tmp").exists());
    }

    #[test]
    fn kubeconfig_refused_without_admin_credentials() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let pki = dir.path().join(PKI_DIR);
        let given = Pki::from_files(&pki.join("apiserver.crt"), &pki.join("apiserver.key"), &pki.join("ca.crt")).unwrap();
        assert!(matches!(given.write_kubeconfig(dir.path(), "https://127.0.0.1:6443"), Err(PkiError::NoAdminCredentials)));
        assert!(given.server_config().is_ok());
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_new_pki_is_private() {
        let dir = temp();
        let data = dir.path().join("new/kapi-data");
        let pki = Pki::load_or_create(&data, &[]).unwrap();
        let path = pki.write_kubeconfig(&data, "https://127.0.0.1:6443").unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join(PKI_DIR)), 0o700);
        for key in ["ca.key", "apiserver.key", "admin.key"] {
            assert_eq!(mode(&data.join(PKI_DIR).join(key)), 0o600, "{key}");
        }
        for cert in ["ca.crt", "apiserver.crt", "admin.crt"] {
            assert_eq!(mode(&data.join(PKI_DIR).join(cert)), 0o644, "{cert}");
        }
        assert_eq!(mode(&path), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn an_open_pki_of_an_earlier_start_is_restricted() {
        let dir = temp();
        let pki_dir = dir.path().join(PKI_DIR);
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let before: Vec<Vec<u8>> =
            ["ca.key", "apiserver.key", "admin.key", "ca.crt"].iter().map(|f| fs::read(pki_dir.join(f)).unwrap()).collect();
        chmod(&pki_dir, 0o755);
        for key in ["ca.key", "apiserver.key", "admin.key"] {
            chmod(&pki_dir.join(key), 0o644);
        }
        chmod(&pki_dir.join("ca.crt"), 0o664);
        let path = dir.path().join(KUBECONFIG_FILE);
        fs::write(&path, "old").unwrap();
        chmod(&path, 0o644);

        let pki = Pki::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(mode(&pki_dir), 0o700);
        for key in ["ca.key", "apiserver.key", "admin.key"] {
            assert_eq!(mode(&pki_dir.join(key)), 0o600, "{key}");
        }
        // Certificates are public: left as they are.
        assert_eq!(mode(&pki_dir.join("ca.crt")), 0o664);
        let after: Vec<Vec<u8>> =
            ["ca.key", "apiserver.key", "admin.key", "ca.crt"].iter().map(|f| fs::read(pki_dir.join(f)).unwrap()).collect();
        assert_eq!(before, after, "same files, byte for byte");
        // The kubeconfig is rewritten private.
        pki.write_kubeconfig(dir.path(), "https://127.0.0.1:6443").unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_key_given_by_flag_is_only_reported() {
        let dir = temp();
        Pki::load_or_create(dir.path(), &[]).unwrap();
        let given = temp();
        for file in ["apiserver.crt", "apiserver.key", "ca.crt"] {
            fs::copy(dir.path().join(PKI_DIR).join(file), given.path().join(file)).unwrap();
        }
        let key = given.path().join("apiserver.key");
        chmod(&key, 0o644);
        Pki::from_files(&given.path().join("apiserver.crt"), &key, &given.path().join("ca.crt")).unwrap();
        assert_eq!(mode(&key), 0o644);
    }
}
