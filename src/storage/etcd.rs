//! The etcd backend (`--etcd-servers`): [`Storage`] over etcd's KV and watch APIs through the
//! `etcd-client` crate, with kube-apiserver's on-disk contract so that either server can read
//! what the other wrote:
//!
//! - keys: the generic store's `/registry/<resource>/<namespace>/<name>`, with `/registry`
//!   replaced by `--etcd-prefix` (upstream's default is `/registry` too);
//! - revisions: etcd's own (`resourceVersion` = mod revision, list revision = header revision);
//! - writes: transactions guarded on create or mod revision (upstream's `GuaranteedUpdate`);
//! - compaction: coordinated through etcd's `compact_rev_key` exactly as upstream's compactor
//!   does, so that any number of kapi and kube-apiserver replicas compact once per interval.
//!
//! etcd 3.4 before 3.4.31 (Debian's 3.4.23) cannot answer watch progress requests reliably;
//! [`EtcdStore::supports_progress_requests`] tells from the server's version, as upstream checks
//! before relying on them.

use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType, GetOptions, TxnOp, TxnOpResponse, WatchOptions};

use super::{
    Event, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, StorageFuture, WatchSource, WatchStream, check_key,
};

/// The key upstream's compactor keeps the last compacted revision in (outside any prefix).
const COMPACT_REV_KEY: &str = "compact_rev_key";

/// The prefix the generic store writes keys under; replaced by the configured one.
const STORE_PREFIX: &str = "/registry";

/// How to reach etcd: kube-apiserver's `--etcd-*` flags.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// `--etcd-servers`: client URLs, e.g. `http://127.0.0.1:2379`.
    pub servers: Vec<String>,
    /// `--etcd-prefix` (default `/registry`).
    pub prefix: String,
    /// `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`: TLS to etcd.
    pub ca_file: Option<std::path::PathBuf>,
    pub cert_file: Option<std::path::PathBuf>,
    pub key_file: Option<std::path::PathBuf>,
    /// How long one etcd request may take before the API request fails (upstream's default
    /// request timeout to etcd is shorter than the 60 s API timeout; a dead etcd must give a
    /// prompt 503/504, not a hung client).
    pub request_timeout: Duration,
}

impl EtcdConfig {
    pub fn new(servers: Vec<String>) -> Self {
        EtcdConfig {
            servers,
            prefix: STORE_PREFIX.to_owned(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// [`Storage`] on an etcd cluster.
pub struct EtcdStore {
    client: Client,
    /// What `/registry` becomes in etcd keys (no trailing slash).
    prefix: String,
    request_timeout: Duration,
    version: String,
    /// The lease writes with a TTL share while it lasts long enough (upstream's `leaseManager`:
    /// one lease per minute instead of one per Event).
    lease: tokio::sync::Mutex<Option<SharedLease>>,
}

/// A granted lease and when it expires.
struct SharedLease {
    id: i64,
    expires: tokio::time::Instant,
}

/// How much longer than asked a shared lease may keep a key: 5 % of the TTL, at most 60 s,
/// whole seconds (upstream's `leaseReuseDurationPercent` and `--lease-reuse-duration-seconds`).
fn lease_reuse(ttl: Duration) -> Duration {
    Duration::from_secs((ttl.as_secs() / 20).min(60))
}

/// The channel to etcd, with h2's guards against a misbehaving server loosened: etcd is
/// trusted, and each guard, once tripped, closes kapi's one etcd connection with
/// `GOAWAY(ENHANCE_YOUR_CALM)`, failing every call and watch on it. Go's gRPC client, upstream's,
/// has neither guard. Both trip when calls end before etcd's answer is in, as when an API
/// client goes away mid-request (`tests/etcd.rs` reproduces both):
///
/// - h2 remembers the last 50 streams it reset for a second; etcd's frames for an older one are
///   answered with a reset of their own, and 1,024 of those in the connection's lifetime trip
///   the first guard. kapi lifts that limit.
/// - Small DATA frames (under 256 bytes) for a remembered reset stream are charged to a
///   connection-wide budget that nothing refunds except larger frames; the budget is half the
///   connection's flow-control window, which neither hyper nor tonic lets kapi set otherwise.
///   kapi widens the window to [`CONNECTION_WINDOW`]. What etcd may send unread is still bounded
///   by each stream's window (2 MiB), and kapi reads every stream at once (see
///   [`WATCH_BUFFER_BYTES`]).
struct TrustedPeer;

/// A member of the etcd cluster added to or removed from the channel.
type EndpointChange = tonic::transport::channel::Change<tonic::transport::Uri, tonic::transport::Endpoint>;

/// The connection-wide flow-control window to etcd (hyper's default is 5 MiB).
const CONNECTION_WINDOW: u32 = 256 << 20;

impl etcd_client::BalancedChannelBuilder for TrustedPeer {
    type Error = tonic::transport::Error;

    fn balanced_channel(
        self,
        buffer_size: usize,
    ) -> Result<(etcd_client::Channel, tokio::sync::mpsc::Sender<EndpointChange>), Self::Error> {
        let (channel, endpoints) = tonic::transport::Channel::balance_channel(buffer_size);
        // etcd-client builds each member's endpoint (TLS, timeouts, keep-alive) and hands it
        // over here; the limits are set on the way.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<EndpointChange>(buffer_size);
        tokio::spawn(async move {
            while let Some(change) = rx.recv().await {
                let change = match change {
                    EndpointChange::Insert(uri, endpoint) => EndpointChange::Insert(
                        uri,
                        endpoint.http2_max_local_error_reset_streams(None).initial_connection_window_size(CONNECTION_WINDOW),
                    ),
                    remove => remove,
                };
                if endpoints.send(change).await.is_err() {
                    return;
                }
            }
        });
        Ok((etcd_client::Channel::Tonic(channel), tx))
    }
}

impl EtcdStore {
    /// Connects to the cluster and reads its version.
    pub async fn connect(config: &EtcdConfig) -> Result<Self, StorageError> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(config.request_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        if config.ca_file.is_some() || config.cert_file.is_some() {
            options = options.with_tls(tls_options(config)?);
        }
        let client = Client::connect_with_balanced_channel(&config.servers, Some(options), TrustedPeer)
            .await
            .map_err(|e| unavailable("connecting to etcd", e))?;
        let mut store = EtcdStore {
            client,
            prefix: config.prefix.trim_end_matches('/').to_owned(),
            request_timeout: config.request_timeout,
            version: String::new(),
            lease: tokio::sync::Mutex::new(None),
        };
        store.version = store.client.maintenance_client().status().await.map_err(|e| unavailable("etcd status", e))?.version().to_owned();
        Ok(store)
    }

    /// The etcd server version (`3.4.23`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether the server answers watch progress requests correctly: etcd ≥ 3.4.31 on the 3.4
    /// line, ≥ 3.5.13 on 3.5, anything newer (upstream's `RequestWatchProgress` check).
    pub fn supports_progress_requests(&self) -> bool {
        let mut parts = self.version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor, patch) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        match (major, minor) {
            (3, 4) => patch >= 31,
            (3, 5) => patch >= 13,
            (3, m) => m > 5,
            (m, _) => m > 3,
        }
    }

    /// The etcd key of a store key.
    fn etcd_key(&self, key: &str) -> String {
        match key.strip_prefix(STORE_PREFIX) {
            Some(rest) => format!("{}{rest}", self.prefix),
            None => key.to_owned(),
        }
    }

    fn key_value(&self, kv: &etcd_client::KeyValue) -> Result<KeyValue, StorageError> {
        key_value(&self.prefix, kv)
    }

    /// A KV client that accepts responses of any size: a list of a large collection (10k pods
    /// are several MiB) exceeds gRPC's 4 MiB default, and upstream's etcd client lifts the
    /// limit too.
    fn kv(&self) -> etcd_client::KvClient {
        self.client.kv_client().max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    /// One etcd request, retried while etcd cannot be reached (a member down: the client's
    /// balancer may still route to it until it notices) for at most [`RETRY_BUDGET`], each
    /// attempt bounded by the request timeout.
    async fn call<T, Fut>(&self, what: &'static str, attempt: impl FnMut() -> Fut) -> Result<T, StorageError>
    where
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        self.call_retried(what, attempt).await.map(|(value, _)| value)
    }

    /// [`EtcdStore::call`], telling also whether an earlier attempt failed: a write that timed
    /// out or lost its connection may have been applied all the same. Every write is a
    /// transaction guarded on revisions, so the retry of one that was applied fails its guard
    /// rather than applying twice; the caller then tells its own write from another's by the
    /// value found ([`EtcdStore::outcome_of_retry`]).
    async fn call_retried<T, Fut>(&self, what: &'static str, mut attempt: impl FnMut() -> Fut) -> Result<(T, bool), StorageError>
    where
        Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let start = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(25);
        let mut retried = false;
        loop {
            let error = match tokio::time::timeout(self.request_timeout, attempt()).await {
                Ok(Ok(value)) => return Ok((value, retried)),
                Ok(Err(e)) => classify(what, e),
                Err(_) => StorageError::Unavailable { context: format!("{what}: etcd request timed out"), source: "timeout".into() },
            };
            if !matches!(error, StorageError::Unavailable { .. }) || start.elapsed() + pause > RETRY_BUDGET {
                return Err(error);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(400));
            retried = true;
        }
    }

    /// A lease that keeps a key for at least `ttl` (upstream's `leaseManager.GetLease`): the
    /// previous one while it still outlives `ttl` and does not outlive it by more than the
    /// reuse window, else a new one granted for `ttl` plus that window.
    async fn lease_for(&self, ttl: Duration) -> Result<i64, StorageError> {
        let mut shared = self.lease.lock().await;
        let now = tokio::time::Instant::now();
        let reuse = lease_reuse(ttl);
        if let Some(lease) = shared.as_ref()
            && now + ttl < lease.expires
            && now + ttl + reuse > lease.expires
        {
            return Ok(lease.id);
        }
        let seconds = (ttl + reuse).as_secs().max(1) as i64;
        let granted = self
            .call("lease grant", || {
                let mut leases = self.client.lease_client();
                async move { leases.grant(seconds, None).await }
            })
            .await?;
        *shared = Some(SharedLease { id: granted.id(), expires: now + Duration::from_secs(seconds as u64) });
        Ok(granted.id())
    }

    async fn create_leased(&self, key: &str, value: Bytes, lease: Option<i64>) -> Result<KeyValue, StorageError> {
        check_key(key)?;
        let k = self.etcd_key(key);
        let put = lease.map(|id| etcd_client::PutOptions::new().with_lease(id));
        let txn = etcd_client::Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), put)])
            .or_else([TxnOp::get(k, None)]);
        let (resp, retried) = self.txn("create", txn).await.map_err(|e| too_large(e, key, &value))?;
        if !resp.succeeded() {
            return match self.outcome_of_retry(&resp, retried, &value)? {
                Some(ours) => Ok(ours),
                None => Err(StorageError::AlreadyExists { key: key.to_owned() }),
            };
        }
        let revision = header_revision(resp.header());
        Ok(KeyValue { key: key.to_owned(), value, create_revision: revision, mod_revision: revision })
    }

    /// The key-value a failed guard found (the transaction's `or_else` read), when it is this
    /// call's own write: an earlier attempt that seemed to fail was applied (`retried`) and
    /// the key holds exactly the bytes written. An object's bytes carry its uid, timestamps
    /// and managed fields, so another writer's equal bytes mean an equal object anyway.
    /// Without this, a create would answer AlreadyExists for its own object, and an update
    /// would see a conflict and apply its change a second time.
    fn outcome_of_retry(&self, resp: &etcd_client::TxnResponse, retried: bool, value: &[u8]) -> Result<Option<KeyValue>, StorageError> {
        if !retried {
            return Ok(None);
        }
        match resp.op_responses().first() {
            Some(TxnOpResponse::Get(get)) => match get.kvs().first() {
                Some(kv) if kv.value() == value => Ok(Some(self.key_value(kv)?)),
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    async fn update_leased(&self, key: &str, value: Bytes, expected: Revision, lease: Option<i64>) -> Result<KeyValue, StorageError> {
        check_key(key)?;
        let k = self.etcd_key(key);
        let mut put = etcd_client::PutOptions::new().with_prev_key();
        if let Some(id) = lease {
            put = put.with_lease(id);
        }
        let txn = etcd_client::Txn::new()
            .when([Compare::mod_revision(k.clone(), CompareOp::Equal, expected)])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), Some(put))])
            .or_else([TxnOp::get(k, None)]);
        let (resp, retried) = self.txn("update", txn).await.map_err(|e| too_large(e, key, &value))?;
        let revision = header_revision(resp.header());
        if !resp.succeeded()
            && let Some(ours) = self.outcome_of_retry(&resp, retried, &value)?
        {
            return Ok(ours);
        }
        if resp.succeeded() {
            let create_revision = match resp.op_responses().first() {
                Some(TxnOpResponse::Put(put)) => put.prev_key().map_or(revision, |p| p.create_revision()),
                _ => revision,
            };
            return Ok(KeyValue { key: key.to_owned(), value, create_revision, mod_revision: revision });
        }
        match resp.op_responses().first() {
            Some(TxnOpResponse::Get(get)) if !get.kvs().is_empty() => {
                let current = self.key_value(&get.kvs()[0])?;
                Err(StorageError::Conflict { key: key.to_owned(), expected, current })
            }
            _ => Err(StorageError::NotFound { key: key.to_owned() }),
        }
    }

    /// The deletion of `key` as it was at revision `expected`, found from history when a
    /// guarded delete was retried and found the key gone: an earlier attempt was applied (or
    /// another delete of the same version was, which is as good). The key at `expected` is
    /// what was deleted, and the first revision up to `now` without it (a binary search of a
    /// few reads) is the deletion's. `None` when history says otherwise or is compacted away.
    async fn deleted_since(&self, key: &str, expected: Revision, now: Revision) -> Option<(KeyValue, Revision)> {
        let k = self.etcd_key(key).into_bytes();
        let at = |revision: Revision| self.range("delete", k.clone(), Some(GetOptions::new().with_revision(revision)));
        let prev = at(expected).await.ok()?.kvs().first().map(|kv| self.key_value(kv))?.ok()?;
        if prev.mod_revision != expected {
            return None;
        }
        // The key exists at `low` and not at `high`.
        let (mut low, mut high) = (expected, now);
        if !at(high).await.ok()?.kvs().is_empty() {
            return None;
        }
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            match at(middle).await.ok()?.kvs().first() {
                Some(kv) if kv.mod_revision() == expected => low = middle,
                Some(_) => return None,
                None => high = middle,
            }
        }
        Some((prev, high))
    }

    /// A watch of `prefix` from `from_revision` ([`Storage::watch`]) whose consumer may fall
    /// [`WATCH_BUFFER_BYTES`] behind, then is waited for up to `patience` (forever if `None`)
    /// before the watch ends with [`StorageError::WatchOverflow`].
    async fn watch_with(&self, prefix: &str, from_revision: Revision, patience: Option<Duration>) -> Result<WatchStream, StorageError> {
        if from_revision < 0 {
            return Err(StorageError::InvalidRevision { revision: from_revision, reason: "negative watch revision" });
        }
        let current = self.current_revision().await?;
        if from_revision > current {
            return Err(StorageError::FutureRevision { requested: from_revision, current });
        }
        let compacted = self.compacted_revision().await?;
        if from_revision > 0 && from_revision < compacted {
            return Err(StorageError::Compacted { requested: from_revision, compacted });
        }
        let start = if from_revision > 0 { from_revision + 1 } else { current + 1 };
        let etcd_prefix = self.etcd_key(prefix);
        let options = WatchOptions::new()
            .with_range(prefix_end(etcd_prefix.as_bytes()))
            .with_start_revision(start)
            .with_prev_key()
            .with_progress_notify();
        let key = if etcd_prefix.is_empty() { vec![0] } else { etcd_prefix.into_bytes() };
        let stream = self
            .call("watch", || {
                let mut client = self.client.watch_client().max_decoding_message_size(MAX_RESPONSE_BYTES);
                let (key, options) = (key.clone(), options.clone());
                async move { client.watch(key, Some(options)).await }
            })
            .await?;
        Ok(EtcdWatch::start(stream, self.prefix.clone(), from_revision, patience))
    }

    /// A transaction, and whether it was retried ([`EtcdStore::call_retried`]).
    async fn txn(&self, what: &'static str, txn: etcd_client::Txn) -> Result<(etcd_client::TxnResponse, bool), StorageError> {
        self.call_retried(what, || {
            let mut kv = self.kv();
            let txn = txn.clone();
            async move { kv.txn(txn).await }
        })
        .await
    }

    async fn range(&self, what: &'static str, key: Vec<u8>, options: Option<GetOptions>) -> Result<etcd_client::GetResponse, StorageError> {
        self.call(what, || {
            let mut kv = self.kv();
            let (key, options) = (key.clone(), options.clone());
            async move { kv.get(key, options).await }
        })
        .await
    }
}

/// The largest etcd response kapi reads (upstream sets the client's receive limit to the
/// maximum too; etcd bounds requests itself).
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// How long a request keeps retrying an unreachable etcd before it fails with 503.
const RETRY_BUDGET: Duration = Duration::from_secs(3);

fn tls_options(config: &EtcdConfig) -> Result<etcd_client::TlsOptions, StorageError> {
    let read = |path: &std::path::Path| std::fs::read(path).map_err(|e| internal_owned(format!("reading {}", path.display()), e));
    let mut tls = etcd_client::TlsOptions::new();
    if let Some(ca) = &config.ca_file {
        tls = tls.ca_certificate(etcd_client::Certificate::from_pem(read(ca)?));
    }
    if let (Some(cert), Some(key)) = (&config.cert_file, &config.key_file) {
        tls = tls.identity(etcd_client::Identity::from_pem(read(cert)?, read(key)?));
    }
    Ok(tls)
}

fn unavailable(context: &str, e: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::Unavailable { context: context.to_owned(), source: Box::new(e) }
}

fn internal(context: &str, e: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::Internal { context: context.to_owned(), source: Box::new(e) }
}

fn internal_owned(context: String, e: impl std::error::Error + Send + Sync + 'static) -> StorageError {
    StorageError::Internal { context, source: Box::new(e) }
}

/// etcd's errors as the store's: unreachable or timed out is `Unavailable` (503), compaction
/// and future revisions are what the REST layer turns into 410 and 504-like answers.
fn classify(what: &'static str, e: etcd_client::Error) -> StorageError {
    let message = e.to_string();
    if message.contains("required revision has been compacted") {
        return StorageError::Compacted { requested: 0, compacted: 0 };
    }
    if is_request_too_large(&e) {
        // The caller knows the key and size (`too_large`); never retried.
        return StorageError::RequestTooLarge { key: String::new(), size: 0 };
    }
    match &e {
        etcd_client::Error::GRpcStatus(status)
            if !matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled | tonic::Code::Unknown
            ) =>
        {
            internal(what, e)
        }
        etcd_client::Error::InvalidArgs(_) | etcd_client::Error::Utf8Error(_) => internal(what, e),
        _ => unavailable(what, e),
    }
}

/// Whether etcd refused a request for its size: `etcdserver: request is too large`
/// (`InvalidArgument`, over `--max-request-bytes`) or, for a request beyond etcd's gRPC receive
/// limit (`--max-request-bytes` + 512 KiB), gRPC's `ResourceExhausted` "received message larger
/// than max" (or the client's own "encoded message length too large"). Other `ResourceExhausted`
/// answers (a full database: `mvcc: database space exceeded`) are not about the request.
fn is_request_too_large(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => match status.code() {
            tonic::Code::InvalidArgument => status.message().contains("request is too large"),
            tonic::Code::ResourceExhausted => {
                let message = status.message();
                message.contains("received message larger than max") || message.contains("encoded message length too large")
            }
            _ => false,
        },
        _ => false,
    }
}

/// [`classify`]'s [`StorageError::RequestTooLarge`] with the write's key and size filled in.
fn too_large(error: StorageError, key: &str, value: &[u8]) -> StorageError {
    match error {
        StorageError::RequestTooLarge { .. } => StorageError::RequestTooLarge { key: key.to_owned(), size: key.len() + value.len() },
        other => other,
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header.map_or(0, |h| h.revision())
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

impl Storage for EtcdStore {
    fn get<'a>(&'a self, key: &'a str) -> StorageFuture<'a, Option<KeyValue>> {
        Box::pin(async move {
            check_key(key)?;
            let resp = self.range("get", self.etcd_key(key).into_bytes(), None).await?;
            resp.kvs().first().map(|kv| self.key_value(kv)).transpose()
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> StorageFuture<'a, ListResult> {
        Box::pin(async move {
            if let Some(r) = options.revision
                && r < 1
            {
                return Err(StorageError::InvalidRevision { revision: r, reason: "revisions start at 1" });
            }
            let etcd_prefix = self.etcd_key(prefix);
            let start = match &options.start_after {
                Some(after) => {
                    let mut k = self.etcd_key(after).into_bytes();
                    k.push(0);
                    k
                }
                None => etcd_prefix.clone().into_bytes(),
            };
            // etcd has no empty key: the empty prefix starts at "\0".
            let start = if start.is_empty() { vec![0] } else { start };
            let mut get = GetOptions::new().with_range(prefix_end(etcd_prefix.as_bytes()));
            if let Some(limit) = options.limit.filter(|l| *l > 0) {
                get = get.with_limit(limit as i64);
            }
            if let Some(revision) = options.revision {
                get = get.with_revision(revision);
            }
            let resp = match self.range("list", start, Some(get)).await {
                Err(StorageError::Compacted { .. }) => {
                    let compacted = self.compacted_revision().await.unwrap_or(0);
                    return Err(StorageError::Compacted { requested: options.revision.unwrap_or(0), compacted });
                }
                Err(StorageError::Internal { context, source }) if source.to_string().contains("future revision") => {
                    let current = self.current_revision().await.unwrap_or(0);
                    let _ = context;
                    return Err(StorageError::FutureRevision { requested: options.revision.unwrap_or(0), current });
                }
                other => other?,
            };
            let kvs = resp.kvs().iter().map(|kv| self.key_value(kv)).collect::<Result<Vec<_>, _>>()?;
            let more = resp.more();
            let remaining = more.then(|| resp.count() - kvs.len() as i64);
            let revision = options.revision.unwrap_or_else(|| header_revision(resp.header()));
            Ok(ListResult { kvs, revision, more, remaining })
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> StorageFuture<'a, KeyValue> {
        Box::pin(self.create_leased(key, value, None))
    }

    fn create_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, ttl: Duration) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let lease = self.lease_for(ttl).await?;
            self.create_leased(key, value, Some(lease)).await
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Bytes, expected: Revision) -> StorageFuture<'a, KeyValue> {
        Box::pin(self.update_leased(key, value, expected, None))
    }

    fn update_with_ttl<'a>(&'a self, key: &'a str, value: Bytes, expected: Revision, ttl: Duration) -> StorageFuture<'a, KeyValue> {
        Box::pin(async move {
            let lease = self.lease_for(ttl).await?;
            self.update_leased(key, value, expected, Some(lease)).await
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> StorageFuture<'a, (KeyValue, Revision)> {
        Box::pin(async move {
            check_key(key)?;
            let k = self.etcd_key(key);
            // Without an expected revision, the key only has to exist.
            let guard = match expected {
                Some(rev) => Compare::mod_revision(k.clone(), CompareOp::Equal, rev),
                None => Compare::create_revision(k.clone(), CompareOp::Greater, 0),
            };
            let txn = etcd_client::Txn::new()
                .when([guard])
                .and_then([TxnOp::delete(k.clone(), Some(DeleteOptions::new().with_prev_key()))])
                .or_else([TxnOp::get(k, None)]);
            let (resp, retried) = self.txn("delete", txn).await?;
            let revision = header_revision(resp.header());
            let first = resp.op_responses().into_iter().next();
            match (resp.succeeded(), first) {
                (true, Some(TxnOpResponse::Delete(del))) => match del.prev_kvs().first() {
                    Some(prev) => Ok((self.key_value(prev)?, revision)),
                    None => Err(StorageError::NotFound { key: key.to_owned() }),
                },
                (false, Some(TxnOpResponse::Get(get))) if !get.kvs().is_empty() => {
                    let current = self.key_value(&get.kvs()[0])?;
                    Err(StorageError::Conflict { key: key.to_owned(), expected: expected.unwrap_or(0), current })
                }
                // Gone: after a retry, maybe by this delete's earlier attempt.
                _ => {
                    let ours = match expected.filter(|_| retried) {
                        Some(expected) => self.deleted_since(key, expected, revision).await,
                        None => None,
                    };
                    ours.ok_or_else(|| StorageError::NotFound { key: key.to_owned() })
                }
            }
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        Box::pin(self.watch_with(prefix, from_revision, Some(WATCH_STALL)))
    }

    fn watch_patiently<'a>(&'a self, prefix: &'a str, from_revision: Revision) -> StorageFuture<'a, WatchStream> {
        Box::pin(self.watch_with(prefix, from_revision, None))
    }

    fn current_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move {
            let resp = self.range("current revision", COMPACT_REV_KEY.into(), Some(GetOptions::new().with_count_only())).await?;
            Ok(header_revision(resp.header()))
        })
    }

    /// Upstream's compactor (`storage/etcd3/compact.go`): a transaction bumps `compact_rev_key`
    /// only if nobody else did since this server last looked, and only the winner compacts.
    fn compact(&self, revision: Revision) -> StorageFuture<'_, ()> {
        Box::pin(async move {
            let compacted = self.compacted_revision().await?;
            if revision <= compacted {
                return Err(StorageError::Compacted { requested: revision, compacted });
            }
            let current = self.range("compact", COMPACT_REV_KEY.into(), None).await?;
            let now = header_revision(current.header());
            if revision > now {
                return Err(StorageError::FutureRevision { requested: revision, current: now });
            }
            let version = current.kvs().first().map_or(0, |kv| kv.version());
            let txn = etcd_client::Txn::new().when([Compare::version(COMPACT_REV_KEY, CompareOp::Equal, version)]).and_then([TxnOp::put(
                COMPACT_REV_KEY,
                revision.to_string(),
                None,
            )]);
            let (resp, _) = self.txn("compact", txn).await?;
            if !resp.succeeded() {
                // Another server compacted meanwhile.
                return Ok(());
            }
            let compaction = self.call("compact", || {
                let mut kv = self.kv();
                async move { kv.compact(revision, Some(etcd_client::CompactionOptions::new().with_physical())).await }
            });
            match compaction.await {
                Ok(_) | Err(StorageError::Compacted { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    fn compacted_revision(&self) -> StorageFuture<'_, Revision> {
        Box::pin(async move {
            let resp = self.range("compacted revision", COMPACT_REV_KEY.into(), None).await?;
            Ok(resp.kvs().first().and_then(|kv| std::str::from_utf8(kv.value()).ok()?.parse().ok()).unwrap_or(0))
        })
    }
}

/// How many bytes of events a watch read from etcd holds for its consumer (each event counts
/// its keys and values plus [`EVENT_OVERHEAD`]) before it stops reading etcd's stream; twice an
/// h2 stream's window.
///
/// etcd's stream is read at once rather than when the consumer asks, so that what waits for a
/// slow consumer waits here: small frames h2 holds for a stream nobody reads are charged,
/// connection-wide, to h2's budget for small DATA frames (see [`TrustedPeer`]), and frames
/// held in h2 use up the connection's window, which every call and watch shares. A consumer
/// still this far behind after [`WATCH_STALL`] loses its watch (the client watches again), as
/// a watcher that falls behind the watch cache does; the watch cache's own feed is waited for
/// ([`Storage::watch_patiently`]).
const WATCH_BUFFER_BYTES: usize = 4 << 20;

/// How long a watch waits for a consumer [`WATCH_BUFFER_BYTES`] behind before it ends.
const WATCH_STALL: Duration = Duration::from_secs(2);

/// What one buffered event counts beyond its keys and values.
const EVENT_OVERHEAD: usize = 128;

/// One etcd watch as a [`WatchSource`]: a task reads etcd's stream into a queue of about
/// [`WATCH_BUFFER_BYTES`] of events not yet taken.
struct EtcdWatch {
    events: tokio::sync::mpsc::UnboundedReceiver<Result<Event, StorageError>>,
    backlog: std::sync::Arc<Backlog>,
}

/// What an [`EtcdWatch`] holds for its consumer.
#[derive(Default)]
struct Backlog {
    /// Bytes, counted as [`buffered_size`].
    bytes: std::sync::atomic::AtomicUsize,
    events: std::sync::atomic::AtomicUsize,
    /// Told when the consumer takes the backlog below [`WATCH_BUFFER_BYTES`].
    drained: tokio::sync::Notify,
}

impl EtcdWatch {
    fn start(stream: etcd_client::WatchStream, prefix: String, from_revision: Revision, patience: Option<Duration>) -> WatchStream {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let backlog = std::sync::Arc::new(Backlog::default());
        tokio::spawn(read_watch(stream, prefix, from_revision, patience, tx, backlog.clone()));
        WatchStream::new(EtcdWatch { events, backlog })
    }
}

/// What an event counts against [`WATCH_BUFFER_BYTES`].
fn buffered_size(event: &Event) -> usize {
    let kv_size = |kv: &KeyValue| kv.key.len() + kv.value.len();
    EVENT_OVERHEAD
        + match event {
            Event::Put { kv, prev } => kv_size(kv) + prev.as_ref().map_or(0, kv_size),
            Event::Delete { prev, .. } => kv_size(prev),
            Event::Progress { .. } => 0,
        }
}

/// Reads etcd's watch stream into `tx` until the stream fails or ends, the consumer goes away
/// (dropping the stream cancels the etcd watch), or the consumer is more than
/// [`WATCH_BUFFER_BYTES`] behind for longer than `patience`. While it is that far behind,
/// nothing more is read: etcd's next frames wait in h2 (at most the stream's window), and etcd
/// stops sending on the stream.
async fn read_watch(
    mut stream: etcd_client::WatchStream,
    prefix: String,
    from_revision: Revision,
    patience: Option<Duration>,
    tx: tokio::sync::mpsc::UnboundedSender<Result<Event, StorageError>>,
    backlog: std::sync::Arc<Backlog>,
) {
    use std::sync::atomic::Ordering;
    loop {
        while backlog.bytes.load(Ordering::Acquire) > WATCH_BUFFER_BYTES {
            let drained = backlog.drained.notified();
            if backlog.bytes.load(Ordering::Acquire) <= WATCH_BUFFER_BYTES {
                break;
            }
            // Waited for while the consumer is there: one that goes away meanwhile ends the
            // watch, even an unhurried one.
            let out_of_patience = async {
                match patience {
                    Some(patience) => tokio::time::sleep(patience).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = drained => {}
                () = tx.closed() => return,
                () = out_of_patience => {
                    let behind = backlog.events.load(Ordering::Relaxed);
                    let _ = tx.send(Err(StorageError::WatchOverflow { capacity: behind }));
                    return;
                }
            }
        }
        let response = tokio::select! {
            () = tx.closed() => return,
            response = stream.message() => response,
        };
        let events = match watch_events(&prefix, from_revision, response) {
            Ok(events) => events,
            Err(error) => {
                let _ = tx.send(Err(error));
                return;
            }
        };
        for event in events {
            backlog.bytes.fetch_add(buffered_size(&event), Ordering::AcqRel);
            backlog.events.fetch_add(1, Ordering::Relaxed);
            if tx.send(Ok(event)).is_err() {
                return;
            }
        }
    }
}

/// The store's events of one etcd watch response; an error ends the watch.
fn watch_events(
    prefix: &str,
    from_revision: Revision,
    response: Result<Option<etcd_client::WatchResponse>, etcd_client::Error>,
) -> Result<Vec<Event>, StorageError> {
    let resp = match response {
        Ok(Some(resp)) => resp,
        Ok(None) => return Err(unavailable_msg("etcd closed the watch")),
        Err(e) => return Err(classify("watch", e)),
    };
    if resp.compact_revision() > 0 {
        return Err(StorageError::Compacted { requested: from_revision, compacted: resp.compact_revision() });
    }
    if resp.canceled() {
        return Err(unavailable_msg(&format!("etcd canceled the watch: {}", resp.cancel_reason())));
    }
    // A response without events after the watch was created is a progress notification:
    // everything up to its header revision has been sent. (The creation response carries the
    // current revision before any replay, so it says nothing about progress.)
    if resp.events().is_empty() {
        let progress = resp.header().filter(|_| !resp.created()).map(|h| Event::Progress { revision: h.revision() });
        return Ok(progress.into_iter().collect());
    }
    let mut events = Vec::with_capacity(resp.events().len());
    for event in resp.events() {
        let Some(kv) = event.kv() else { continue };
        let prev = event.prev_kv().map(|p| key_value(prefix, p)).transpose()?;
        events.push(match event.event_type() {
            EventType::Put => Event::Put { kv: key_value(prefix, kv)?, prev },
            EventType::Delete => {
                // Without the previous value (compacted away) the deletion still names its key.
                let prev = prev.unwrap_or(KeyValue {
                    key: store_key(prefix, kv.key())?,
                    value: Bytes::new(),
                    create_revision: 0,
                    mod_revision: kv.mod_revision(),
                });
                Event::Delete { prev, revision: kv.mod_revision() }
            }
        });
    }
    Ok(events)
}

/// The store key of an etcd key: `prefix` (the configured `--etcd-prefix`) back to `/registry`.
fn store_key(prefix: &str, key: &[u8]) -> Result<String, StorageError> {
    let key = std::str::from_utf8(key).map_err(|e| internal("etcd key is not UTF-8", e))?;
    Ok(match key.strip_prefix(prefix) {
        Some(rest) => format!("{STORE_PREFIX}{rest}"),
        None => key.to_owned(),
    })
}

/// An etcd key-value as the store's.
fn key_value(prefix: &str, kv: &etcd_client::KeyValue) -> Result<KeyValue, StorageError> {
    Ok(KeyValue {
        key: store_key(prefix, kv.key())?,
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

impl WatchSource for EtcdWatch {
    /// Cancel-safe: `recv` is, and nothing else awaits.
    fn next_event(&mut self) -> StorageFuture<'_, Option<Event>> {
        Box::pin(async move {
            match self.events.recv().await {
                Some(Ok(event)) => {
                    let size = buffered_size(&event);
                    let before = self.backlog.bytes.fetch_sub(size, std::sync::atomic::Ordering::AcqRel);
                    self.backlog.events.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    if before > WATCH_BUFFER_BYTES && before - size <= WATCH_BUFFER_BYTES {
                        self.backlog.drained.notify_one();
                    }
                    Ok(Some(event))
                }
                Some(Err(error)) => Err(error),
                // The reader only stops after sending why.
                None => Err(unavailable_msg("etcd closed the watch")),
            }
        })
    }
}

fn unavailable_msg(message: &str) -> StorageError {
    StorageError::Unavailable { context: message.to_owned(), source: message.to_owned().into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grpc(code: tonic::Code, message: &str) -> etcd_client::Error {
        etcd_client::Error::GRpcStatus(tonic::Status::new(code, message))
    }

    #[test]
    fn etcds_size_refusals_are_request_too_large_and_not_retried() {
        let refusals = [
            grpc(tonic::Code::InvalidArgument, "etcdserver: request is too large"),
            grpc(tonic::Code::ResourceExhausted, "grpc: received message larger than max (3145800 vs. 2097152)"),
            grpc(
                tonic::Code::ResourceExhausted,
                "Error, encoded message length too large: found 3145800 bytes, the limit is: 2097152 bytes",
            ),
        ];
        for refusal in refusals {
            let error = too_large(classify("create", refusal), "/registry/a", &[0; 10]);
            assert!(matches!(&error, StorageError::RequestTooLarge { key, size: 21 } if key == "/registry/a"), "{error:?}");
        }
        // A full database is not about the request.
        let full = classify("create", grpc(tonic::Code::ResourceExhausted, "etcdserver: mvcc: database space exceeded"));
        assert!(matches!(full, StorageError::Internal { .. }), "{full:?}");
        assert!(matches!(
            classify("get", grpc(tonic::Code::InvalidArgument, "etcdserver: key is not provided")),
            StorageError::Internal { .. }
        ));
    }
}
