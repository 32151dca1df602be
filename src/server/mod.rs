//! `kapi serve`: the secure server.
//!
//! Start-up: open the store, load or create the PKI and the admin kubeconfig, bind, and serve
//! each TLS connection with hyper. The client certificate of a connection (if any) is the
//! authenticated user of every request on it.
//!
//! Request order, as kube-apiserver's handler chain: request info → authentication →
//! authorization → dispatch (health, version, discovery, resources). See `handle`.

pub mod authentication;
pub mod body;
pub mod chain;
pub mod coalesced_writes;
pub mod connection;
pub mod delete;
pub mod health;
pub mod metadata;
pub mod metrics;
pub mod own_rest;
pub mod rest;
pub mod version;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kapi_apimachinery::codec::{self, CodecError, Format};
use tokio::net::TcpListener;
use tracing::{info, warn};

use kapi_apimachinery::scheme::RouteTarget;

use self::body::Body;
use crate::pki::Pki;
use crate::registry::apiextensions::customresources::{CustomResource, CustomResources};
use crate::registry::strategy::Strategy;
use crate::status::ApiError;
use crate::storage::Storage;
use crate::storage::embedded::EmbeddedStore;

/// Flags of `kapi serve`, named after kube-apiserver's where one exists.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: std::net::IpAddr,
    /// The address the `kubernetes` Service's Endpoints name for this server (default: the
    /// bind address unless it is unspecified or loopback, else the address of the host's
    /// default route; none is written on a host without one). Of the service range's IP
    /// family, or the server does not start, as upstream's.
    #[arg(long)]
    pub advertise_address: Option<std::net::IpAddr>,
    /// The port to serve HTTPS on (0 picks a free one; the chosen port is logged and written to
    /// `<data-dir>/port`).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// Where state lives: the store, the PKI and admin.kubeconfig.
    #[arg(long, default_value = "./kapi-data")]
    pub data_dir: PathBuf,
    /// Serving certificate (PEM); generated under the data dir when not given.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA bundle that client certificates are verified against (instead of kapi's own CA).
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// The range Service cluster IPs are allocated from (its first address is the `kubernetes`
    /// Service's).
    #[arg(long, default_value = "10.0.0.0/24")]
    pub service_cluster_ip_range: String,
    /// The range NodePorts are allocated from.
    #[arg(long, default_value = "30000-32767")]
    pub service_node_port_range: String,
    /// How often storage history is compacted (kube-apiserver's `--etcd-compaction-interval`);
    /// `0s` disables it.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: std::time::Duration,
    /// How long Events are kept after their last write (an etcd lease; on the embedded store a
    /// deadline stored with the write).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: std::time::Duration,
    /// Group-versions to serve besides or instead of the default set (GA and upstream's
    /// enabled betas): `api/all=true`, `api/beta=true`, `api/alpha=true`, `api/ga=false`,
    /// `<group>/<version>=true|false`, `v1=...` for the core group; comma-separated, `=true`
    /// implied.
    #[arg(long, value_delimiter = ',')]
    pub runtime_config: Vec<String>,
    /// etcd client URLs (comma-separated); without them kapi stores state in the embedded
    /// store under the data dir.
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// The prefix of every key kapi writes to etcd.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// CA bundle to verify etcd's serving certificate with.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd (PEM).
    #[arg(long, requires = "etcd_keyfile")]
    pub etcd_certfile: Option<PathBuf>,
    /// Client key for etcd (PEM).
    #[arg(long, requires = "etcd_certfile")]
    pub etcd_keyfile: Option<PathBuf>,
    /// Serve watches and `resourceVersion=0` / `NotOlderThan` reads from an in-memory watch cache
    /// per resource (kube-apiserver's `--watch-cache`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub watch_cache: bool,
    /// Per-resource watch cache settings, `resource[.group]#size` (comma-separated); size 0
    /// disables the cache for that resource, other sizes keep it (windows are sized
    /// dynamically, as upstream's).
    #[arg(long, value_delimiter = ',')]
    pub watch_cache_sizes: Vec<String>,
    /// How long a request that is not a watch may take, body upload included, before it is
    /// answered 504 (kube-apiserver's flag); a shorter `?timeout=` wins.
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Client connections open at once; more wait in the listen backlog until one closes.
    #[arg(long, default_value_t = connection::ConnectionLimits::default().max_connections)]
    pub max_connections: usize,
    /// How long a client may take for the TLS handshake and then for its first request's
    /// headers (Go's `ReadHeaderTimeout` as kube-apiserver sets it).
    #[arg(long, default_value = "32s", value_parser = parse_duration)]
    pub read_header_timeout: std::time::Duration,
    /// How long a connection may stay open with no request in flight (kube-apiserver's
    /// `IdleTimeout`).
    #[arg(long, default_value = "90s", value_parser = parse_duration)]
    pub idle_timeout: std::time::Duration,
    /// The most HTTP/2 streams a client may open on one connection (kube-apiserver's flag and
    /// default).
    #[arg(long, default_value_t = connection::ConnectionLimits::default().http2_max_streams)]
    pub http2_max_streams_per_connection: u32,
    /// Authorizers, comma-separated, asked in order after the `system:masters` group:
    /// `RBAC` (the default), `AlwaysAllow`, `AlwaysDeny`, and `Node` (kubelets' access to what
    /// their pods use, asked before the others).
    #[arg(long, default_value = "RBAC", value_delimiter = ',')]
    pub authorization_mode: Vec<String>,
    /// Admission plugins to turn on besides the default ones, comma-separated (they run in
    /// kube-apiserver's order whatever the order given): `NamespaceLifecycle`, `LimitRanger`,
    /// `ServiceAccount`, `NodeRestriction`, `Priority`, `DefaultTolerationSeconds`,
    /// `DefaultStorageClass`, all on by default.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// Admission plugins to turn off, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
    /// Requests without credentials are served as `system:anonymous` (group
    /// `system:unauthenticated`) rather than refused with a 401.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub anonymous_auth: bool,
    /// Static bearer tokens, upstream's CSV: `token,user,uid,"group1,group2"`.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// The `iss` of issued service-account tokens, also accepted when verifying them (repeat the
    /// flag to accept more; the first one issues).
    #[arg(long, default_values_t = vec!["https://kubernetes.default.svc.cluster.local".to_owned()])]
    pub service_account_issuer: Vec<String>,
    /// Public (or private) keys that verify service-account tokens, PEM; kapi's own key pair under
    /// `<data-dir>/pki` when none is given.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,
    /// The private key (PEM: PKCS#8 ECDSA P-256, signing ES256; or RSA, PKCS#1 or PKCS#8, signing
    /// RS256) that signs service-account tokens.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// The audiences the API accepts in tokens (default: the issuers).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// The longest validity a TokenRequest gets (0: no limit).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub service_account_max_token_expiration: std::time::Duration,
}

/// The serving certificates and the client CAs (`--tls-cert-file`, `--tls-private-key-file`,
/// `--client-ca-file`, or kapi's own PKI under `<data-dir>/pki`, made when missing), and the
/// authenticators. In-cluster clients reach the server at the `kubernetes` Service's address
/// (`service_ip`) too.
/// The certificates, keys and authenticators; a new PKI comes staged, to be made durable before
/// the server serves ([`Pki::load_or_stage`]).
fn load_credentials(
    args: &ServeArgs,
    service_ip: String,
) -> Result<(Pki, crate::registry::authentication::Authentication, Option<crate::pki::StagedPki>)> {
    let (pki, staged) = match (&args.tls_cert_file, &args.tls_private_key_file, &args.client_ca_file) {
        (Some(cert), Some(key), Some(ca)) => (Pki::from_files(cert, key, ca)?, None),
        (_, _, ca) => {
            let (mut pki, staged) = Pki::load_or_stage(&args.data_dir, &[args.bind_address.to_string(), service_ip])?;
            if let Some(ca) = ca {
                pki.trust_client_cas(ca)?;
            }
            (pki, staged)
        }
    };
    // After the PKI: both write under `<data-dir>/pki` (or its staging directory).
    let authentication = authentication_config(args, staged.as_ref())?;
    Ok((pki, authentication, staged))
}

/// The authenticators the flags configure: `--anonymous-auth`, `--token-auth-file` and the
/// service-account keys (kapi's own pair under `<data-dir>/pki` unless given).
fn authentication_config(
    args: &ServeArgs,
    staged: Option<&crate::pki::StagedPki>,
) -> Result<crate::registry::authentication::Authentication> {
    let static_tokens = match &args.token_auth_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading --token-auth-file {}", path.display()))?;
            crate::authn::StaticTokens::parse(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("--token-auth-file {}", path.display()))?
        }
        None => Default::default(),
    };
    let signing = match &args.service_account_signing_key_file {
        Some(path) => std::fs::read(path).with_context(|| format!("reading --service-account-signing-key-file {}", path.display()))?,
        None => {
            std::fs::create_dir_all(&args.data_dir)?;
            crate::pki::service_account_key(&args.data_dir, staged)?
        }
    };
    let mut verifying = Vec::new();
    for path in &args.service_account_key_file {
        verifying.push(std::fs::read(path).with_context(|| format!("reading --service-account-key-file {}", path.display()))?);
    }
    let authority = crate::registry::core::serviceaccounts::tokens::TokenAuthority::new(
        &signing,
        &verifying,
        args.service_account_issuer.clone(),
        args.api_audiences.clone(),
        i64::try_from(args.service_account_max_token_expiration.as_secs()).unwrap_or(i64::MAX),
    )
    .context("the service-account keys")?;
    Ok(crate::registry::authentication::Authentication {
        anonymous: args.anonymous_auth,
        static_tokens,
        service_accounts: Some(Arc::new(authority)),
    })
}

/// The store behind the watch cache (`--watch-cache`, `--watch-cache-sizes`).
fn with_watch_cache(store: Arc<dyn Storage>, args: &ServeArgs) -> Result<Arc<dyn Storage>> {
    use crate::storage::cache::{WatchCache, WatchCacheOptions, parse_watch_cache_sizes};
    let sizes = parse_watch_cache_sizes(&args.watch_cache_sizes).map_err(anyhow::Error::msg).context("--watch-cache-sizes")?;
    if !args.watch_cache {
        return Ok(store);
    }
    // A cache covers one `/registry/<first segment>/` prefix (services and endpoints share
    // `/registry/services/`, so disabling one disables both).
    let disabled = sizes
        .iter()
        .filter(|s| s.size == 0)
        .filter_map(|s| crate::storage::cache::resource_prefix(&rest::key(&s.group, &s.resource, None, None)).map(str::to_owned))
        .collect();
    info!(?disabled, "watch cache enabled");
    Ok(Arc::new(WatchCache::new(store, WatchCacheOptions { disabled, ..WatchCacheOptions::default() })))
}

/// `5m`, `30s`, `1h` (Go's duration syntax, as kube-apiserver's flags take).
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let d: kapi_apimachinery::Duration = text.parse().map_err(|e| format!("{e}"))?;
    d.to_std().ok_or_else(|| format!("{text}: must not be negative"))
}

/// What every request handler can reach.
pub struct ServerState {
    pub store: Arc<dyn Storage>,
    pub metrics: metrics::Metrics,
    /// Service ranges and `--event-ttl`, which the registry's stores read.
    pub store_config: Arc<crate::registry::store::StoreConfig>,
    pub checks: Vec<health::Check>,
    /// The group-versions served (upstream's default set; `--runtime-config` later).
    pub enabled: crate::discovery::EnabledGroupVersions,
    /// `--request-timeout`.
    pub request_timeout: std::time::Duration,
    /// `--etcd-servers`, for `componentstatuses`.
    pub etcd_servers: Vec<String>,
    /// The custom resources the established CustomResourceDefinitions serve.
    pub custom_resources: Arc<CustomResources>,
    /// Verifies connections' client certificates (`None` without client CAs).
    pub client_authenticator: Option<crate::pki::ClientCertAuthenticator>,
}

/// How long each start-up phase took, logged at debug level (`RUST_LOG=kapi::server=debug`).
struct StartupPhases {
    start: std::time::Instant,
    last: std::time::Instant,
}

impl StartupPhases {
    fn new() -> Self {
        let now = std::time::Instant::now();
        Self { start: now, last: now }
    }

    fn done(&mut self, phase: &'static str) {
        let now = std::time::Instant::now();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        tracing::debug!(phase, ms = ms(now - self.last), since_start_ms = ms(now - self.start), "start-up phase done");
        self.last = now;
    }
}

/// The largest request body accepted (upstream's limit for most requests is 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub async fn serve(args: ServeArgs) -> Result<()> {
    let mut phases = StartupPhases::new();
    // Beside the start-up work, on the other core.
    tokio::task::spawn_blocking(crate::request_info::compile_routes);
    let network = crate::registry::core::services::ServiceNetwork::parse(&args.service_cluster_ip_range, &args.service_node_port_range)
        .map_err(anyhow::Error::msg)
        .context("--service-cluster-ip-range / --service-node-port-range")?;
    // What the `kubernetes` Service's endpoints will name: checked before anything is started,
    // as upstream validates its flags.
    let advertised =
        args.advertise_address.or_else(|| crate::controllers::kubernetes_endpoints::default_advertise_address(args.bind_address));
    if let Some(ip) = advertised {
        crate::controllers::kubernetes_endpoints::check_address_family(
            &args.service_cluster_ip_range,
            network.kubernetes_service_ip().into(),
            ip,
        )
        .map_err(anyhow::Error::msg)
        .context("--advertise-address")?;
    }
    crate::private_files::prepare_data_dir(&args.data_dir, args.etcd_servers.is_empty())
        .with_context(|| format!("preparing the data directory {}", args.data_dir.display()))?;
    let enabled = crate::discovery::EnabledGroupVersions::from_runtime_config(&args.runtime_config)
        .map_err(anyhow::Error::msg)
        .context("--runtime-config")?;
    let admission = crate::registry::admission::Chain::new(&args.enable_admission_plugins, &args.disable_admission_plugins)
        .map_err(anyhow::Error::msg)
        .context("--enable-admission-plugins / --disable-admission-plugins")?;
    // The certificates (made on a fresh start) and keys are files apart from the store: read
    // or made on another thread while the store opens.
    let credentials = {
        let (args, service_ip) = (args.clone(), network.kubernetes_service_ip().to_string());
        tokio::task::spawn_blocking(move || load_credentials(&args, service_ip))
    };
    let mut checks = default_checks();
    let metrics = metrics::Metrics::default();
    // The embedded store fsyncs the start-up writes once, before the server serves.
    let mut startup_writes = None;
    let store: Arc<dyn Storage> = if args.etcd_servers.is_empty() {
        let store = EmbeddedStore::open_deferred(args.data_dir.join("store.redb"))
            .with_context(|| format!("opening the store in {}", args.data_dir.display()))?;
        metrics.register_embedded_store(store.commit_counters());
        startup_writes = Some(store.clone());
        Arc::new(store)
    } else {
        let config = crate::storage::etcd::EtcdConfig {
            prefix: args.etcd_prefix.clone(),
            ca_file: args.etcd_cafile.clone(),
            cert_file: args.etcd_certfile.clone(),
            key_file: args.etcd_keyfile.clone(),
            ..crate::storage::etcd::EtcdConfig::new(args.etcd_servers.clone())
        };
        let etcd = crate::storage::etcd::EtcdStore::connect(&config)
            .await
            .with_context(|| format!("connecting to etcd at {}", args.etcd_servers.join(",")))?;
        info!(version = etcd.version(), progress_requests = etcd.supports_progress_requests(), "etcd connected");
        let store: Arc<dyn Storage> = Arc::new(etcd);
        checks.push(health::storage_check("etcd", store.clone()));
        store
    };
    let store = with_watch_cache(store, &args)?;
    phases.done("store");
    let listener = TcpListener::bind(SocketAddr::new(args.bind_address, args.secure_port))
        .await
        .with_context(|| format!("binding {}:{}", args.bind_address, args.secure_port))?;
    let addr = listener.local_addr()?;
    let url = format!("https://{}", format_host_port(addr));
    phases.done("listen");

    // `Node` is asked first (kube-apiserver's usual `Node,RBAC`); with no other mode, what it
    // has no opinion on is denied.
    let node = args.authorization_mode.iter().any(|m| m == "Node");
    let mut mode = if node { crate::rbac::Mode::AlwaysDeny } else { crate::rbac::Mode::AlwaysAllow };
    for name in args.authorization_mode.iter().rev().filter(|m| m.as_str() != "Node") {
        mode = crate::rbac::Mode::parse(name).map_err(anyhow::Error::msg).context("--authorization-mode")?;
    }
    let authorizer = crate::registry::rbac::authorizer::Authorizer::new(mode);
    let authorizer = Arc::new(if node { authorizer.with_node_authorizer() } else { authorizer });
    phases.done("authz");
    // The start-up objects are written while the credentials are still being read or made:
    // the server's own writes need none of them, so they go through a configuration without
    // token authenticators (which only requests and token reviews use).
    let start_up_config = Arc::new(crate::registry::store::StoreConfig {
        network,
        event_ttl: args.event_ttl,
        authorizer: authorizer.clone(),
        authentication: Default::default(),
        admission,
    });
    crate::registry::bootstrap::ensure(store.clone(), start_up_config.clone(), addr.port())
        .await
        .context("creating the objects every cluster starts with")?;
    phases.done("bootstrap");
    // Upstream's `rbac/bootstrap-roles` post-start hook, then the aggregated roles filled in,
    // then the authorizer's cache loaded: all before the server takes requests.
    crate::registry::rbac::bootstrap::ensure(store.clone(), start_up_config.clone())
        .await
        .context("reconciling the bootstrap RBAC policy")?;
    phases.done("rbac");

    let (pki, authentication, staged_pki) = credentials.await.context("loading the certificates and keys")??;
    // A new PKI's files are synced into place on another thread while start-up goes on
    // (mostly waiting on the disk), and awaited with the store's start-up writes.
    let pki_durable = staged_pki.map(|staged| tokio::task::spawn_blocking(move || staged.make_durable()));
    let tls = tokio_rustls::TlsAcceptor::from(pki.server_config()?);
    // With certificates from flags (replicas sharing a CA) there are no admin credentials here.
    let kubeconfig = match pki.has_admin_credentials() {
        true => Some(pki.write_kubeconfig(&args.data_dir, &url)?),
        false => None,
    };
    phases.done("pki");
    let store_config = Arc::new(crate::registry::store::StoreConfig {
        authentication: Arc::new(authentication),
        ..crate::registry::store::StoreConfig::clone(&start_up_config)
    });
    // The system namespaces' accounts exist before the server reports ready: made while the
    // roles are aggregated and the authorizer loads, which do not read them.
    let mut accounts = tokio::task::JoinSet::new();
    for ns in crate::registry::SYSTEM_NAMESPACES {
        let (store, store_config, root_ca) = (store.clone(), store_config.clone(), pki.root_ca_pem());
        accounts.spawn(async move {
            if let Some(kv) = store.get(&rest::key("", "namespaces", None, Some(ns))).await?
                && let Ok((_, namespace)) = crate::registry::objects::decode_stored(&kv.value)
            {
                crate::controllers::service_accounts::ensure(store.as_ref(), &store_config, &namespace, &root_ca).await?;
            }
            anyhow::Ok(())
        });
    }
    let aggregation = crate::controllers::clusterrole_aggregation::Aggregation { config: store_config.clone() };
    aggregation.settle(store.as_ref()).await.context("aggregating cluster roles")?;
    phases.done("aggregation");
    authorizer.follow(store.clone()).await.context("loading the RBAC policy")?;
    phases.done("authorizer");
    let custom_resources = Arc::new(CustomResources::default());
    let finalizer = crate::controllers::namespace::NamespaceFinalizer { config: store_config.clone(), custom: custom_resources.clone() };
    crate::controllers::spawn(store.clone(), finalizer);
    // Definitions stored before this start are served before it reports ready.
    crate::controllers::customresourcedefinitions::reconcile(store.as_ref(), &store_config, &custom_resources)
        .await
        .context("serving the stored custom resource definitions")?;
    phases.done("crds");
    let definitions = crate::controllers::customresourcedefinitions::DefinitionController {
        config: store_config.clone(),
        served: custom_resources.clone(),
    };
    crate::controllers::spawn(store.clone(), definitions);
    while let Some(done) = accounts.join_next().await {
        done.context("ensuring the system namespaces' service accounts")??;
    }
    crate::controllers::service_accounts::spawn(store.clone(), store_config.clone(), pki.root_ca_pem());
    phases.done("serviceaccounts");
    if let Some(authority) = store_config.authentication.service_accounts.clone() {
        crate::controllers::service_account_tokens::spawn(store.clone(), store_config.clone(), authority, pki.root_ca_pem());
    }
    // Upstream's bootstrap controller's endpoints, after start-up as its post-start hook runs.
    match advertised {
        Some(ip) => {
            crate::controllers::kubernetes_endpoints::spawn(store.clone(), store_config.clone(), ip, addr.port());
        }
        None => warn!("no address to advertise (no --advertise-address and no default route): the kubernetes Endpoints are not written"),
    }
    if !args.etcd_compaction_interval.is_zero() {
        tokio::spawn(compact_periodically(store.clone(), args.etcd_compaction_interval));
    }
    let state = Arc::new(ServerState {
        store,
        metrics,
        store_config,
        checks,
        enabled,
        request_timeout: args.request_timeout,
        etcd_servers: args.etcd_servers.clone(),
        custom_resources,
        client_authenticator: pki.client_authenticator()?,
    });
    let limits = connection::ConnectionLimits {
        max_connections: args.max_connections.max(1),
        http2_max_streams: args.http2_max_streams_per_connection.max(1),
        tls_handshake_timeout: args.read_header_timeout,
        header_read_timeout: args.read_header_timeout,
        idle_timeout: args.idle_timeout,
    };
    // Every start-up write durable before the server says it serves.
    if let Some(store) = startup_writes {
        store.make_durable().await.context("syncing the start-up writes")?;
    }
    if let Some(pki_durable) = pki_durable {
        pki_durable.await.context("syncing the new PKI")?.context("syncing the new PKI")?;
    }
    // Last, so that whoever reads the port file finds the PKI and the kubeconfig in place.
    std::fs::write(args.data_dir.join("port"), addr.port().to_string())?;
    phases.done("sync");
    // Role aggregation's controller starts once the rest is done: `settle` has just made every
    // role current, and the controller's first pass (a list and a decode of every ClusterRole,
    // which also takes in any change since) would otherwise share the cores with the last of
    // start-up.
    crate::controllers::spawn(state.store.clone(), aggregation);
    match &kubeconfig {
        Some(kubeconfig) => {
            info!(%url, kubeconfig = %kubeconfig.display(), "serving");
            eprintln!("kapi serving on {url}; KUBECONFIG={}", kubeconfig.display());
        }
        None => {
            info!(%url, "serving");
            eprintln!("kapi serving on {url}");
        }
    }

    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut backoff = connection::AcceptBackoff::default();
    loop {
        // A connection slot first (Go's `netutil.LimitListener`): at the cap, clients wait in
        // the listen backlog rather than costing a file descriptor and a task each.
        let slot = tokio::select! {
            slot = connections.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return Ok(()),
            },
            () = &mut shutdown => return shut_down(&state, advertised, addr.port()).await,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => { backoff.succeeded(); conn }
                Err(e) => {
                    // Out of file descriptors and the like: back off as Go's server does
                    // instead of spinning on the error.
                    let delay = backoff.failed();
                    warn!(error = %e, ?delay, "accept failed; retrying");
                    tokio::time::sleep(delay).await;
                    continue;
                }
            },
            () = &mut shutdown => return shut_down(&state, advertised, addr.port()).await,
        };
        // As Go's net package does for every TCP connection: small TLS records (a handshake
        // flight, a short answer, a watch event) go out at once instead of waiting on Nagle's
        // algorithm for the peer's delayed ACK (~40 ms).
        if let Err(e) = tcp.set_nodelay(true) {
            warn!(%peer, error = %e, "could not disable Nagle's algorithm");
        }
        let tls = tls.clone();
        let state = state.clone();
        tokio::spawn(async move {
            serve_connection(state, tls, tcp, peer, limits).await;
            drop(slot);
        });
    }
}

/// One client connection: the TLS handshake under its deadline, then HTTP/1.1 or HTTP/2 until
/// the client closes it or it has been idle for the idle timeout (see `connection`).
async fn serve_connection(
    state: Arc<ServerState>,
    tls: tokio_rustls::TlsAcceptor,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    limits: connection::ConnectionLimits,
) {
    // TLS records reach the socket gathered until a flush (see `coalesced_writes`).
    let tcp = coalesced_writes::CoalescedWrites::new(tcp);
    let mut stream = match tokio::time::timeout(limits.tls_handshake_timeout, tls.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            warn!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            info!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let http2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    if http2 {
        stream.get_mut().0.gather_frames();
    }
    // Upstream's x509 authenticator: a certificate that does not verify against the client CA
    // makes every request on the connection a 401.
    let certs = stream.get_ref().1.peer_certificates().unwrap_or_default();
    let identity = match (&state.client_authenticator, certs.is_empty()) {
        (_, true) | (None, _) => chain::ClientIdentity::None,
        (Some(authenticator), false) => match authenticator.authenticate(certs) {
            Ok(Some(user)) => chain::ClientIdentity::User(Arc::new(user)),
            Ok(None) => chain::ClientIdentity::None,
            Err(e) => {
                info!(%peer, error = %e, "client certificate refused");
                chain::ClientIdentity::Refused
            }
        },
    };
    let activity = Arc::new(connection::ConnectionActivity::default());
    let service = hyper_util::service::TowerToHyperService::new(chain::service(state, identity, activity.clone()));
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        // hyper's header timer also runs while a keep-alive connection waits for its next
        // request, where Go waits the idle timeout instead; the first request's 32 s deadline
        // is the idle watch's below.
        .header_read_timeout(limits.idle_timeout.max(limits.header_read_timeout))
        // Go's `MaxHeaderBytes` (1 MiB) bounds what a request's head may buffer.
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_streams)
        // What a stream may hold encoded and unsent (hyper's default is 400 KiB): a watcher
        // that falls behind keeps its backlog as the watch cache's shared events, which end
        // it when they overflow, not as bytes of its own.
        .max_send_buf_size(HTTP2_STREAM_SEND_BUFFER)
        .max_header_list_size(MAX_HEADER_BYTES as u32);
    let conn = builder.serve_connection(TokioIo::new(coalesced_writes::GatheredFrames::new(stream, http2)), service);
    tokio::pin!(conn);
    let idle = activity.idle(limits.header_read_timeout, limits.idle_timeout);
    tokio::pin!(idle);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = &mut idle => {
            // Idle for the timeout (or no first request in time): close after what is in
            // flight, as Go's server closes idle keep-alive connections; a client that still
            // holds it open after a short grace is cut off.
            conn.as_mut().graceful_shutdown();
            match tokio::time::timeout(IDLE_CLOSE_GRACE, conn.as_mut()).await {
                Ok(result) => result,
                Err(_) if activity.in_flight() == 0 => Ok(()),
                Err(_) => conn.as_mut().await,
            }
        }
    };
    if let Err(e) = result {
        warn!(%peer, error = %e, "connection ended with an error");
    }
}

/// Go's `http.DefaultMaxHeaderBytes`, which kube-apiserver sets explicitly.
const MAX_HEADER_BYTES: usize = 1 << 20;

/// The most bytes an HTTP/2 stream holds encoded and unsent (see `serve_connection`).
const HTTP2_STREAM_SEND_BUFFER: usize = 64 * 1024;

/// How long an idle connection that was asked to close may take to do so.
const IDLE_CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Upstream's compactor: every interval, compact up to the revision seen at the previous tick,
/// so that history one interval deep stays available to watches and continue tokens.
async fn compact_periodically(store: Arc<dyn Storage>, interval: std::time::Duration) {
    let mut previous = None;
    let mut ticker = tokio::time::interval(interval);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        if let Some(revision) = previous {
            match store.compact(revision).await {
                Ok(()) => info!(revision, "compacted storage history"),
                Err(crate::storage::StorageError::Compacted { .. }) => {}
                Err(e) => warn!(error = %e, "compaction failed"),
            }
        }
        previous = store.current_revision().await.ok();
    }
}

fn format_host_port(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.to_string(),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

/// What a server does as it stops: its address taken out of the `kubernetes` Endpoints, as
/// upstream's bootstrap controller's `Stop` does (bounded, so that a store that does not answer
/// does not hold the exit).
async fn shut_down(state: &ServerState, advertised: Option<std::net::IpAddr>, port: u16) -> anyhow::Result<()> {
    info!("shutting down");
    if let Some(ip) = advertised {
        let removal = crate::controllers::kubernetes_endpoints::remove(state.store.as_ref(), &state.store_config, ip, port);
        match tokio::time::timeout(std::time::Duration::from_secs(2), removal).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!(error = %e, "removing this server from the kubernetes Endpoints"),
            Err(_) => warn!("removing this server from the kubernetes Endpoints: timed out"),
        }
    }
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return ctrl_c.await.unwrap_or(()),
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await.unwrap_or(());
}

fn default_checks() -> Vec<health::Check> {
    vec![health::Check::new("ping", || Ok(())), health::Check::new("log", || Ok(()))]
}

/// The handler at the end of the chain ([`chain::service`]): reads the body (at most 3 MiB)
/// and dispatches.
pub async fn handle(state: &ServerState, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return error_response(&ApiError::request_entity_too_large("the request body is larger than 3 MiB")),
    };
    dispatch(state, &parts, &path, &query, body).await
}

async fn dispatch(state: &ServerState, parts: &http::request::Parts, path: &str, query: &str, body: Bytes) -> Response<Body> {
    let trimmed = path.trim_start_matches('/');
    let (first, rest) = trimmed.split_once('/').map_or((trimmed, ""), |(a, b)| (a, b));
    let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match first {
        "healthz" | "livez" | "readyz" => match health::answer(first, rest, query, &state.checks) {
            Some(h) => text_response(h.code, h.body),
            None => error_response(&ApiError::path_not_found()),
        },
        "version" if rest.trim_end_matches('/').is_empty() => json_response(StatusCode::OK, &version::info()),
        // Service-account issuer discovery (upstream's `/.well-known/openid-configuration` and
        // `/openid/v1/jwks`, served when the issuer is kapi itself).
        ".well-known" if rest == "openid-configuration" => match &state.store_config.authentication.service_accounts {
            Some(authority) => issuer_document(json_response(StatusCode::OK, &authority.openid_configuration()), "application/json"),
            None => error_response(&ApiError::path_not_found()),
        },
        "openid" if rest == "v1/jwks" => match &state.store_config.authentication.service_accounts {
            Some(authority) => issuer_document(json_response(StatusCode::OK, &authority.jwks()), "application/jwk-set+json"),
            None => error_response(&ApiError::path_not_found()),
        },
        "openapi" if rest.trim_end_matches('/') == "v2" => openapi_v2(accept, parts, state),
        "openapi" => openapi(rest.trim_end_matches('/'), query, state),
        "metrics" if rest.is_empty() => {
            let mut resp = text_response(200, state.metrics.render());
            resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
            resp
        }
        "api" | "apis" => {
            if let Some(resp) = discovery_document(state, first, rest.trim_end_matches('/'), accept, parts) {
                return resp;
            }
            // Parsed by the chain's request-info step.
            let Some(info) = parts.extensions.get::<crate::request_info::RequestInfo>() else {
                return error_response(&ApiError::internal("request info missing"));
            };
            let Some(negotiated) = crate::negotiation::negotiate(accept) else {
                return error_response(&crate::negotiation::not_acceptable(info.verb == "watch"));
            };
            let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            // The generated routes first; a path they do not know may be a custom resource's.
            let custom: Arc<CustomResource>;
            let custom_target: RouteTarget;
            // Matched by the chain's request-info step.
            let route = parts.extensions.get::<crate::request_info::MatchedRoute>().and_then(|matched| matched.0?.target.as_ref());
            let (target, strategy): (&RouteTarget, &dyn Strategy) = match route {
                Some(target) if state.enabled.is_enabled(target.group, target.version) => {
                    (target, crate::registry::strategy(target.group, target.resource))
                }
                Some(_) => return error_response(&ApiError::path_not_found()),
                None => match custom_resource_route(state, info, parts.method.as_str(), negotiated.format, content_type) {
                    Ok((resource, target)) => {
                        custom = resource;
                        custom_target = target;
                        let Some(version) = custom.version(custom_target.version) else {
                            return error_response(&ApiError::path_not_found());
                        };
                        (&custom_target, &version.strategy)
                    }
                    Err(e) => return error_response(&e),
                },
            };
            let dry_run = match rest::parse_dry_run(query) {
                Ok(d) => d,
                Err(e) => return error_response(&e),
            };
            let user = parts.extensions.get::<chain::Authenticated>().and_then(|a| a.0.as_deref());
            let call = rest::ResourceCall {
                info,
                user,
                target,
                strategy,
                query,
                content_type,
                accept: negotiated.format,
                table: negotiated.table(),
                convert: negotiated.convert,
                dry_run,
                config: &state.store_config,
                etcd_servers: &state.etcd_servers,
                user_agent: parts.headers.get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default(),
                body,
            };
            rest::handle(&state.store, call).await
        }
        _ => error_response(&ApiError::path_not_found()),
    }
}

/// The route of a request for a custom resource (apiextensions-apiserver's `crdHandler`): the
/// served resource and the route the generated table would have for it. As upstream: not
/// found unless a definition serves the version; no protobuf (406 for answers, 415 for
/// bodies); no create while the definition is terminating.
fn custom_resource_route(
    state: &ServerState,
    info: &crate::request_info::RequestInfo,
    method: &str,
    accept: Format,
    content_type: Option<&str>,
) -> Result<(Arc<CustomResource>, RouteTarget), ApiError> {
    use kapi_apimachinery::scheme::GroupVersionKind;
    if !info.is_resource_request || info.api_prefix != "apis" {
        return Err(ApiError::path_not_found());
    }
    let resource = state.custom_resources.get(&info.api_group, &info.resource).ok_or_else(ApiError::path_not_found)?;
    let version = resource.version(&info.api_version).ok_or_else(ApiError::path_not_found)?;
    // From the path: a list's `metadata.name=` field selector also sets the request's name.
    let named = info.parts.len() > 1;
    let subresource = match info.subresource.as_str() {
        "" => None,
        "status" if version.strategy.status_subresource() == Some(true) && named => Some("status"),
        "scale" if version.strategy.scale().is_some() && named => Some("scale"),
        _ => return Err(ApiError::path_not_found()),
    };
    // A namespaced resource's object lives in a namespace; a cluster-scoped one's in none.
    if (named && resource.namespaced && info.namespace.is_empty()) || (!resource.namespaced && !info.namespace.is_empty()) {
        return Err(ApiError::path_not_found());
    }
    let action = match (method, named) {
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) => "list",
        ("POST", false) if subresource.is_none() => "post",
        ("PUT", true) => "put",
        ("PATCH", true) => "patch",
        ("DELETE", true) if subresource.is_none() => "delete",
        ("DELETE", false) => "deletecollection",
        _ => {
            let resource = crate::status::GroupResource::new(&info.api_group, &info.resource);
            return Err(ApiError::method_not_supported(resource, &method.to_ascii_lowercase()));
        }
    };
    if accept == Format::Protobuf {
        return Err(crate::negotiation::not_acceptable(info.verb == "watch"));
    }
    if content_type.and_then(Format::from_content_type) == Some(Format::Protobuf) {
        return Err(ApiError::unsupported_media_type(&[codec::JSON, codec::YAML]));
    }
    if action == "post" && resource.terminating {
        let mut error = ApiError::method_not_supported(crate::status::GroupResource::new(&info.api_group, &info.resource), "create");
        error.message = "create not allowed while custom resource definition is terminating".to_owned();
        return Err(error);
    }
    let target = RouteTarget {
        action,
        group: version.group,
        version: version.version,
        resource: version.plural,
        subresource,
        namespaced: resource.namespaced && !info.namespace.is_empty(),
        named,
        legacy_watch: false,
        has_subpath: false,
        kind: GroupVersionKind { group: version.group, version: version.version, kind: version.kind },
        patch_types: CUSTOM_RESOURCE_PATCH_TYPES,
    };
    Ok((resource, target))
}

/// What a custom resource may be patched with: not strategic merge, which needs Go types.
const CUSTOM_RESOURCE_PATCH_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml", "application/apply-patch+cbor"];

/// `/api`, `/apis`, `/api/v1`, `/apis/<group>`, `/apis/<group>/<version>`; `None` for other
/// paths under `/api(s)`.
fn discovery_document(
    state: &ServerState,
    prefix: &str,
    rest: &str,
    accept: Option<&str>,
    parts: &http::request::Parts,
) -> Option<Response<Body>> {
    use crate::discovery;
    // Resource requests, the common case, are deeper than any discovery document.
    if rest.bytes().filter(|&b| b == b'/').nth(1).is_some() {
        return None;
    }
    let segments: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split('/').collect() };
    let aggregated = discovery::negotiate_aggregated(accept);
    match (prefix, segments.as_slice()) {
        ("api", []) => Some(match aggregated {
            Some(format) => aggregated_response(format, &discovery::aggregated_legacy(&state.enabled)),
            None => {
                let host = parts.uri.authority().map_or_else(
                    || parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned(),
                    |a| a.to_string(),
                );
                json_response(StatusCode::OK, &discovery::api_versions(&host))
            }
        }),
        ("apis", []) => Some(match aggregated {
            Some(format) => {
                aggregated_response(format, &discovery::aggregated_apis(&state.enabled, &state.custom_resources.documents().discovery))
            }
            None => {
                json_response(StatusCode::OK, &discovery::api_group_list(&state.enabled, &state.custom_resources.documents().discovery))
            }
        }),
        ("api", [version]) => Some(resource_list(state, "", version)),
        ("apis", [group]) => Some(match discovery::api_group(&state.enabled, &state.custom_resources.documents().discovery, group) {
            Some(g) => json_response(StatusCode::OK, &g),
            None => error_response(&ApiError::path_not_found()),
        }),
        ("apis", [group, version]) => Some(resource_list(state, group, version)),
        _ => None,
    }
}

fn resource_list(state: &ServerState, group: &str, version: &str) -> Response<Body> {
    match crate::discovery::api_resource_list(&state.enabled, &state.custom_resources.documents().discovery, group, version) {
        Some(list) => json_response(StatusCode::OK, &list),
        None => error_response(&ApiError::path_not_found()),
    }
}

fn aggregated_response<T: serde::Serialize>(format: Format, value: &T) -> Response<Body> {
    let body = match format {
        Format::Yaml => serde_json::to_vec(value).map_err(CodecError::from).and_then(|j| codec::json_to_yaml(&j)),
        // The aggregated document is served as JSON for protobuf requests too until the
        // generated discovery types gain a registered kind for protobuf envelopes.
        Format::Json | Format::Protobuf => serde_json::to_vec(value).map_err(CodecError::from),
    };
    let format = if format == Format::Yaml { Format::Yaml } else { Format::Json };
    match body {
        Ok(body) => {
            let mut resp = Response::new(body::full(body));
            if let Ok(v) = header::HeaderValue::from_str(&crate::discovery::aggregated_content_type(format)) {
                resp.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            resp.headers_mut().insert(header::VARY, header::HeaderValue::from_static("Accept"));
            resp
        }
        Err(e) => error_response(&ApiError::internal(e)),
    }
}

/// `/openapi/v2`, as kube-openapi's handler serves it: the first `Accept` clause (by `q` and
/// specificity) naming JSON or one of the two protobuf media types (gnostic's
/// `openapi.v2.Document`) picks the form; none is an empty 406. The ETag is the form's SHA-512;
/// `If-None-Match` with it is a 304.
fn openapi_v2(accept: Option<&str>, parts: &http::request::Parts, state: &ServerState) -> Response<Body> {
    use crate::openapi_v2::{PROTOBUF_MEDIA_TYPES, document, document_protobuf};
    let enabled = &state.enabled;
    // The built-in document, or, while custom resources are served, the one with them in.
    let custom = state.custom_resources.documents();
    let accept = accept.filter(|a| !a.is_empty()).unwrap_or("*/*");
    let served = [("json", false), (PROTOBUF_MEDIA_TYPES[0], true), (PROTOBUF_MEDIA_TYPES[1], true)];
    let chosen = crate::negotiation::parse_accept(accept).iter().find_map(|clause| {
        served.iter().find(|(sub_kind, _)| {
            (clause.kind == "application" || clause.kind == "*") && (clause.sub_kind == *sub_kind || clause.sub_kind == "*")
        })
    });
    let mut resp = match chosen {
        Some((_, protobuf)) => {
            let json = custom.openapi_v2(document(enabled));
            let (doc, content_type) = if *protobuf {
                (custom.openapi_v2_protobuf(json, document_protobuf(enabled)), "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
            } else {
                (json, "application/json")
            };
            let etag = format!("\"{}\"", doc.etag);
            let matches =
                parts.headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|tag| {
                    let tag = tag.trim();
                    tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag
                });
            // A 304 has no Content-Type (Go's `writeNotModified`).
            let mut resp = if matches {
                let mut resp = Response::new(body::full(Bytes::new()));
                *resp.status_mut() = StatusCode::NOT_MODIFIED;
                resp
            } else {
                let mut resp = Response::new(body::full(doc.bytes.clone()));
                resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
                resp
            };
            if let Ok(v) = header::HeaderValue::from_str(&etag) {
                resp.headers_mut().insert(header::ETAG, v);
            }
            resp
        }
        None => {
            let mut resp = Response::new(body::full(Bytes::new()));
            *resp.status_mut() = StatusCode::NOT_ACCEPTABLE;
            resp
        }
    };
    resp.headers_mut().insert(header::VARY, header::HeaderValue::from_static("Accept"));
    resp
}

/// `/openapi/v3` (the index kubectl reads first) and `/openapi/v3/<group-version path>`.
fn openapi(rest: &str, query: &str, state: &ServerState) -> Response<Body> {
    use kapi_api::openapi::V3_DOCUMENTS;
    // The generated documents as they are compiled in; the custom resources' as they are now.
    let custom = state.custom_resources.documents();
    let built_in = V3_DOCUMENTS
        .iter()
        .filter(|(path, _, _)| state.enabled.serves_openapi_path(path))
        .map(|(path, hash, body)| (*path, *hash, Bytes::from_static(body.as_bytes())));
    let mut documents = built_in.chain(custom.openapi.iter().map(|d| (d.path.as_str(), d.hash.as_str(), d.body.clone())));
    match rest {
        "v3" => {
            let paths: serde_json::Map<String, serde_json::Value> = documents
                .map(|(path, hash, _)| {
                    (path.to_string(), serde_json::json!({ "serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}") }))
                })
                .collect();
            json_response(StatusCode::OK, &serde_json::json!({ "paths": paths }))
        }
        _ => {
            let Some(path) = rest.strip_prefix("v3/") else { return error_response(&ApiError::path_not_found()) };
            let Some((_, hash, doc)) = documents.find(|(p, _, _)| *p == path) else {
                return error_response(&ApiError::path_not_found());
            };
            let mut resp = Response::new(body::full(doc));
            resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            if let Ok(etag) = header::HeaderValue::from_str(&format!("\"{hash}\"")) {
                resp.headers_mut().insert(header::ETAG, etag);
            }
            // A request naming the current hash may be cached for good, as upstream answers.
            let cache = if query.contains(&format!("hash={hash}")) { "public, immutable" } else { "no-cache, private" };
            resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static(cache));
            resp
        }
    }
}

pub fn text_response(code: u16, body: String) -> Response<Body> {
    let mut resp = Response::new(body::full(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp.headers_mut().insert("x-content-type-options", header::HeaderValue::from_static("nosniff"));
    resp
}

/// A service-account issuer discovery document with upstream's headers (its content type and
/// `Cache-Control: public, max-age=3600`).
fn issuer_document(mut resp: Response<Body>, content_type: &'static str) -> Response<Body> {
    resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("public, max-age=3600"));
    resp
}

pub fn json_response<T: serde::Serialize>(code: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(body) => {
            let mut resp = Response::new(body::full(body));
            *resp.status_mut() = code;
            resp.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            resp
        }
        Err(e) => error_response(&ApiError::internal(e)),
    }
}

pub fn error_response(err: &ApiError) -> Response<Body> {
    let mut resp = err.into_response(Format::Json);
    let body = std::mem::take(resp.body_mut());
    let (parts, ()) = resp.map(|_| ()).into_parts();
    Response::from_parts(parts, body::full(body))
}
