//! Services: ClusterIP allocation from `--service-cluster-ip-range` (with the IP family fields),
//! and NodePort allocation from `--service-node-port-range`, with upstream's 422s for taken or
//! out-of-range values. (A Service's defaults are `defaults::core::set_defaults_service`.)
//!
//! Allocations are not kept on the side: they are read from the stored Services whenever one is
//! needed, so they are rebuilt after a restart by construction and never drift from the data.
//! What is handed out but not stored yet (a create between its allocation and its write) is
//! held in [`InFlight`], so that concurrent creates never get the same address or port.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kapi_api::api::core::v1::{Service, ServicePort, ServiceSpec};
use kapi_apimachinery::go;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::registry::Rejection;
use crate::registry::object::Object;
use crate::registry::strategy::{HookContext, HookFuture, Strategy};
use crate::registry::validation;
use crate::status::{ApiError, FieldError};

/// Upstream's `svcStrategy`, with the service REST's allocation and `ReturnDeletedObject`.
pub struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn table(&self) -> crate::tables::Columns {
        crate::tables::Columns::Printer(&crate::tables::SERVICES)
    }

    fn name_rule(&self) -> validation::NameRule {
        validation::NameRule::Dns1035Label
    }

    fn storage_prefix(&self) -> Option<&'static str> {
        Some("services/specs")
    }

    /// A PUT to a missing Service creates it (`svcStrategy`), allocating as a POST does.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// The rules read the generated type.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::service(object.typed_ref()?))
    }

    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(validation::core::service_update(old.typed_ref()?, new.typed_ref()?))
    }

    /// The cluster IP and node ports, from the ranges and the stored Services.
    fn begin_create<'a>(&'a self, context: &'a HookContext<'a>, object: &'a mut Object) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            let service = object.typed_mut().map_err(Rejection::object_form)?;
            admit(context.store, &context.config.network, service).await
        })
    }

    /// Upstream's `beginUpdate`: what the client left out of what was allocated is kept, and
    /// what the new type needs and does not have yet is allocated (a ClusterIP Service that
    /// becomes a NodePort gets its node ports).
    fn begin_update<'a>(
        &'a self,
        context: &'a HookContext<'a>,
        new: &'a mut Object,
        old: &'a Object,
    ) -> HookFuture<'a, Result<(), Rejection>> {
        Box::pin(async move {
            let old = old.typed_ref().map_err(Rejection::object_form)?;
            let new = new.typed_mut().map_err(Rejection::object_form)?;
            admit_update(context.store, &context.config.network, new, old).await
        })
    }

    fn prepare_for_update(&self, new: &mut Object, old: &Object) -> Result<(), ApiError> {
        drop_type_dependent_fields(new.typed_mut()?, old.typed_ref()?);
        Ok(())
    }

    /// Upstream's `afterDelete`: the Service's allocations released, and the Endpoints of the
    /// same name go with it (rather than waiting for the endpoints controller), through the
    /// Endpoints' own store.
    fn after_delete<'a>(&'a self, context: &'a HookContext<'a>, object: &'a Value) -> HookFuture<'a, ()> {
        Box::pin(async move {
            // Its addresses and ports are free again at once, as upstream releases them.
            match Service::deserialize(object) {
                Ok(service) => context.config.network.release(&Allocated::from_services([&service])).await,
                Err(e) => tracing::warn!(error = %e, "reading a deleted Service's allocations"),
            }
            let meta = &object["metadata"];
            let (namespace, name) = (meta["namespace"].as_str(), meta["name"].as_str().unwrap_or_default());
            let kind = crate::registry::objects::Kind::core_v1("Endpoints");
            let endpoints = crate::registry::store::Store::new(context.store, context.config, "", "endpoints", kind);
            let deleted = match endpoints.object_key(namespace, name) {
                Ok(key) => endpoints.delete_at(Default::default(), &key, name, &json!({})).await.map(drop),
                Err(e) => Err(e),
            };
            match deleted {
                Err(e) if e.code != 404 => tracing::warn!(error = %e, ?namespace, name, "deleting a deleted Service's Endpoints"),
                _ => {}
            }
        })
    }

    fn connect_error(&self, _resource: &str, _subresource: &str, name: &str, _object: &Value) -> ApiError {
        ApiError::service_unavailable(format!("no endpoints available for service \"{name}\""))
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// `--service-cluster-ip-range` and `--service-node-port-range`.
#[derive(Debug, Clone)]
pub struct ServiceNetwork {
    pub cluster_ip_base: Ipv4Addr,
    pub cluster_ip_prefix: u8,
    pub node_ports: (u16, u16),
    /// This server's allocations not yet stored, shared by its clones.
    in_flight: Arc<tokio::sync::Mutex<InFlight>>,
}

impl Default for ServiceNetwork {
    fn default() -> Self {
        Self {
            cluster_ip_base: Ipv4Addr::new(10, 0, 0, 0),
            cluster_ip_prefix: 24,
            node_ports: (30000, 32767),
            in_flight: Default::default(),
        }
    }
}

/// How long an allocation is held for a create that has not stored its Service: longer than a
/// create can take (a request's deadline is a minute). A create that failed frees its address
/// only then; one that succeeded is seen stored before.
const IN_FLIGHT_FOR: Duration = Duration::from_secs(90);

/// Cluster IPs and node ports handed to creates whose Services may not be stored yet, with when.
/// The stored Services are read and the next free values chosen under one lock, with these
/// counted as taken: two creates at once would otherwise both read the same stored Services and
/// both choose the first free address. (Upstream makes each allocation a stored object of its
/// own, an `IPAddress` or its range's bitmap, written before the Service; between kapi
/// replicas on one etcd the race remains.)
#[derive(Debug, Default)]
struct InFlight {
    ips: BTreeMap<Ipv4Addr, Instant>,
    node_ports: BTreeMap<u16, Instant>,
}

impl InFlight {
    /// Forgets what is stored now (`stored`: every stored Service's allocations) or was handed
    /// out too long ago.
    fn forget(&mut self, stored: &Allocated, now: Instant) {
        let live = |at: &Instant| now.duration_since(*at) < IN_FLIGHT_FOR;
        self.ips.retain(|ip, at| live(at) && !stored.ips.contains(ip));
        self.node_ports.retain(|port, at| live(at) && !stored.node_ports.contains(port));
    }

    /// Adds what is held to `taken`.
    fn add_to(&self, taken: &mut Allocated) {
        taken.ips.extend(self.ips.keys());
        taken.node_ports.extend(self.node_ports.keys());
    }

    fn hold(&mut self, allocated: Allocated, now: Instant) {
        self.ips.extend(allocated.ips.into_iter().map(|ip| (ip, now)));
        self.node_ports.extend(allocated.node_ports.into_iter().map(|port| (port, now)));
    }
}

impl ServiceNetwork {
    /// Parses `10.0.0.0/24` and `30000-32767`.
    pub fn parse(cidr: &str, node_ports: &str) -> Result<Self, String> {
        let (ip, prefix) = cidr.split_once('/').ok_or_else(|| format!("invalid CIDR {cidr:?}"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| format!("invalid CIDR {cidr:?} (only IPv4 ranges are supported)"))?;
        let prefix: u8 = prefix.parse().ok().filter(|p| (8..=30).contains(p)).ok_or_else(|| format!("invalid CIDR prefix in {cidr:?}"))?;
        let (lo, hi) = node_ports.split_once('-').ok_or_else(|| format!("invalid port range {node_ports:?}"))?;
        let lo: u16 = lo.trim().parse().map_err(|_| format!("invalid port range {node_ports:?}"))?;
        let hi: u16 = hi.trim().parse().map_err(|_| format!("invalid port range {node_ports:?}"))?;
        if lo > hi {
            return Err(format!("invalid port range {node_ports:?}"));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(Self {
            cluster_ip_base: Ipv4Addr::from(u32::from(ip) & mask),
            cluster_ip_prefix: prefix,
            node_ports: (lo, hi),
            in_flight: Default::default(),
        })
    }

    fn range(&self) -> (u32, u32) {
        let base = u32::from(self.cluster_ip_base);
        let size = 1u32 << (32 - self.cluster_ip_prefix);
        // The network and broadcast addresses are never handed out.
        (base + 1, base + size - 2)
    }

    /// Frees what a deleted Service held: an allocation still held for its create (a Service
    /// deleted before another create saw it stored) would otherwise stay taken until it ages out.
    pub async fn release(&self, allocated: &Allocated) {
        let mut in_flight = self.in_flight.lock().await;
        in_flight.ips.retain(|ip, _| !allocated.ips.contains(ip));
        in_flight.node_ports.retain(|port, _| !allocated.node_ports.contains(port));
    }

    /// The address of the `kubernetes` Service: the first of the range.
    pub fn kubernetes_service_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.range().0)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        let (lo, hi) = self.range();
        (lo..=hi).contains(&u32::from(ip))
    }
}

/// What stored Services hold: cluster IPs and node ports in use.
#[derive(Debug, Default)]
pub struct Allocated {
    pub ips: BTreeSet<Ipv4Addr>,
    pub node_ports: BTreeSet<u16>,
}

impl Allocated {
    pub fn from_services<'a>(services: impl IntoIterator<Item = &'a Service>) -> Self {
        let mut out = Self::default();
        for svc in services {
            let spec = spec(svc);
            for ip in spec.cluster_ips.iter().chain(&spec.cluster_ip) {
                if let Ok(ip) = ip.parse() {
                    out.ips.insert(ip);
                }
            }
            out.node_ports.extend(ports(svc).filter_map(node_port));
            // From the same range as node ports.
            if let Some(p) = health_check_node_port(svc).and_then(|p| u16::try_from(p).ok()) {
                out.node_ports.insert(p);
            }
        }
        out
    }
}

/// Gives a new Service its cluster IP and node ports, or says why it cannot have the ones it
/// asks for.
pub fn allocate(svc: &mut Service, net: &ServiceNetwork, taken: &Allocated) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    let spec = svc.spec.get_or_insert_with(Default::default);
    let external_name = spec.r#type.as_deref() == Some("ExternalName");
    if !external_name {
        let family_errors = init_ip_family_fields(spec);
        if !family_errors.is_empty() {
            return Err(family_errors);
        }
    }
    let headless = spec.cluster_ip.as_deref() == Some("None");
    if !external_name && !headless {
        let ip = match spec.cluster_ip.as_deref().filter(|s| !s.is_empty()) {
            Some(text) => match text.parse::<Ipv4Addr>() {
                Err(_) => {
                    errs.push(FieldError::invalid(
                        "spec.clusterIPs[0]",
                        text,
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    ));
                    None
                }
                Ok(ip) if !net.contains(ip) => {
                    let range = format!("{}/{}", net.cluster_ip_base, net.cluster_ip_prefix);
                    errs.push(FieldError::invalid(
                        "spec.clusterIPs",
                        crate::status::BadValue::Raw(format!("[]string{{\"{ip}\"}}")),
                        format!("failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"),
                    ));
                    None
                }
                Ok(ip) if taken.ips.contains(&ip) => {
                    errs.push(FieldError::invalid(
                        "spec.clusterIPs",
                        crate::status::BadValue::Raw(format!("[]string{{\"{ip}\"}}")),
                        format!("failed to allocate IP {ip}: provided IP is already allocated"),
                    ));
                    None
                }
                Ok(ip) => Some(ip),
            },
            None => {
                let (lo, hi) = net.range();
                // Upstream hands out dynamic addresses from the upper part of the range first and
                // keeps the first address for the `kubernetes` Service; any free one will do here.
                let free = (lo + 1..=hi).map(Ipv4Addr::from).find(|ip| !taken.ips.contains(ip));
                if free.is_none() {
                    errs.push(FieldError::internal("spec.clusterIPs", "failed to allocate a serviceIP: range is full"));
                }
                free
            }
        };
        if let Some(ip) = ip {
            spec.cluster_ip = Some(ip.to_string());
            spec.cluster_ips = vec![ip.to_string()];
        }
    } else if headless {
        spec.cluster_ips = vec!["None".to_owned()];
    }

    if matches!(spec.r#type.as_deref(), Some("NodePort" | "LoadBalancer")) {
        // `shouldAllocateNodePorts`: a LoadBalancer may ask for none; requested ones still count.
        let allocate_new = !(spec.r#type.as_deref() == Some("LoadBalancer") && spec.allocate_load_balancer_node_ports == Some(false));
        let mut used = taken.node_ports.clone();
        let (lo, hi) = net.node_ports;
        // Ports with the same number (TCP and UDP 53) share one node port, as upstream's
        // `initNodePorts`: the first one requested for that number, else one allocated.
        let mut by_port: BTreeMap<i32, i32> = BTreeMap::new();
        let requested = |port: &ServicePort| port.node_port.filter(|p| *p > 0);
        let requested_for = |ports: &[ServicePort], number: i32| ports.iter().filter(|p| p.port == number).find_map(requested);
        let ports = &mut spec.ports;
        for i in 0..ports.len() {
            let number = ports[i].port;
            let own = requested(&ports[i]);
            if own.is_none() && !allocate_new {
                continue;
            }
            let check = match (by_port.get(&number).copied(), own) {
                (Some(shared), None) => {
                    ports[i].node_port = Some(shared);
                    continue;
                }
                (Some(shared), Some(p)) if p == shared => continue,
                (Some(_), Some(p)) => Some(p),
                (None, _) => requested_for(ports, number),
            };
            let field = format!("spec.ports[{i}].nodePort");
            match check {
                Some(p) => match u16::try_from(p) {
                    Ok(p) if !(lo..=hi).contains(&p) => errs.push(FieldError::invalid(
                        field,
                        i64::from(p),
                        format!("provided port is not in the valid range. The range of valid ports is {lo}-{hi}"),
                    )),
                    Ok(p) if !used.insert(p) => errs.push(FieldError::invalid(field, i64::from(p), "provided port is already allocated")),
                    Ok(p) => {
                        ports[i].node_port = Some(i32::from(p));
                        by_port.entry(number).or_insert(i32::from(p));
                    }
                    Err(_) => errs.push(FieldError::invalid(field, i64::from(p), "must be between 1 and 65535, inclusive")),
                },
                None => match (lo..=hi).find(|p| !used.contains(p)) {
                    Some(p) => {
                        used.insert(p);
                        ports[i].node_port = Some(i32::from(p));
                        by_port.insert(number, i32::from(p));
                    }
                    None => errs.push(FieldError::internal(field, "failed to allocate a nodePort: range is full")),
                },
            }
        }
    }
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

/// Upstream's `initIPFamilyFields` for a Service that is not ExternalName, on this server's
/// single-stack IPv4 service network: `ipFamilyPolicy` defaults to SingleStack (RequireDualStack
/// for a headless Service without a selector), `ipFamilies` to IPv4 (both families for such a
/// headless Service when its policy allows); a dual-stack demand or an IPv6 family or address
/// is refused, as upstream refuses them on a cluster not configured for it.
fn init_ip_family_fields(spec: &mut ServiceSpec) -> Vec<FieldError> {
    use crate::status::BadValue;
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let selectorless = spec.selector.is_empty();
    if go::string(&spec.ip_family_policy).is_empty() {
        spec.ip_family_policy = Some(if headless && selectorless { "RequireDualStack" } else { "SingleStack" }.to_owned());
    }
    let policy = go::string(&spec.ip_family_policy).to_owned();
    let mut families = spec.ip_families.clone();
    let cluster_ips = &spec.cluster_ips;
    let mut errs = Vec::new();
    if policy == "SingleStack" {
        for (count, what) in [(cluster_ips.len(), "cluster IPs"), (families.len(), "IP families")] {
            if count == 2 {
                errs.push(FieldError::invalid(
                    "spec.ipFamilyPolicy",
                    policy.as_str(),
                    format!("must be 'RequireDualStack' or 'PreferDualStack' when multiple {what} are specified"),
                ));
            }
        }
    }
    // Families follow the addresses asked for.
    for (i, ip) in cluster_ips.iter().enumerate() {
        if ip == "None" {
            break;
        }
        if i >= families.len() {
            match ip.parse::<std::net::Ipv6Addr>() {
                Ok(_) => {
                    let list = cluster_ips.iter().map(|ip| format!("{ip:?}")).collect::<Vec<_>>().join(", ");
                    errs.push(FieldError::invalid(
                        format!("spec.clusterIPs[{i}]"),
                        BadValue::Raw(format!("[]string{{{list}}}")),
                        "IPv6 is not configured on this cluster",
                    ));
                }
                Err(_) => families.push("IPv4".to_owned()),
            }
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    if headless && selectorless {
        if families.is_empty() {
            families.push("IPv4".to_owned());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" { "IPv6" } else { "IPv4" };
            families.push(other.to_owned());
        }
        spec.ip_families = families;
        return errs;
    }
    if policy == "RequireDualStack" {
        errs.push(FieldError::invalid("spec.ipFamilyPolicy", policy.as_str(), "this cluster is not configured for dual-stack services"));
    }
    for (i, family) in families.iter().enumerate().filter(|(_, family)| *family != "IPv4") {
        errs.push(FieldError::invalid(format!("spec.ipFamilies[{i}]"), family.as_str(), "not configured on this cluster"));
    }
    if errs.is_empty() {
        if families.is_empty() {
            families.push("IPv4".to_owned());
        }
        spec.ip_families = families;
    }
    errs
}

/// Allocates a new Service's cluster IP and node ports against every stored Service. (Its
/// defaults, `SetDefaults_Service`, were applied when the body was decoded:
/// `defaults::core::set_defaults_service`.)
async fn admit(store: &dyn crate::storage::Storage, net: &ServiceNetwork, svc: &mut Service) -> Result<(), Rejection> {
    // Held from the read of the stored Services to the allocation's record (see `InFlight`).
    let mut in_flight = net.in_flight.lock().await;
    let services = stored_services(store).await?;
    let now = Instant::now();
    let mut taken = Allocated::from_services(&services);
    in_flight.forget(&taken, now);
    in_flight.add_to(&mut taken);
    allocate(svc, net, &taken)?;
    allocate_health_check_node_port(svc, net, &taken)?;
    in_flight.hold(Allocated::from_services([&*svc]), now);
    Ok(())
}

/// Every stored Service.
async fn stored_services(store: &dyn crate::storage::Storage) -> Result<Vec<Service>, Vec<FieldError>> {
    let stored = store
        .list(&crate::registry::keys::key("", "services", None, None), crate::storage::ListOptions::default())
        .await
        .map_err(|e| vec![FieldError::internal("spec.clusterIPs", e)])?;
    stored
        .kvs
        .iter()
        .map(|kv| crate::registry::objects::decode_stored_as(&kv.value).map_err(|e| vec![FieldError::internal("spec.clusterIPs", e)]))
        .collect()
}

/// The update's side of [`admit`] (upstream's `beginUpdate`): the allocated values the client
/// left out are taken from `old` (`patchAllocatedValues`), `clusterIP` and `clusterIPs` are
/// kept in step (`normalizeClusterIPs`), and when the new type needs what `old` did not hold
/// (an address for a former ExternalName, node ports for a new NodePort or LoadBalancer) it is
/// allocated against every other stored Service.
async fn admit_update(
    store: &dyn crate::storage::Storage,
    net: &ServiceNetwork,
    new: &mut Service,
    old: &Service,
) -> Result<(), Rejection> {
    patch_allocated_values(new, old);
    normalize_cluster_ips(new, old);
    let had = Allocated::from_services([old]);
    let wants_address = needs_cluster_ip(new) && !needs_cluster_ip(old);
    let wants_ports = needs_node_port(new) && ports(new).any(|port| node_port(port).is_none_or(|p| !had.node_ports.contains(&p)));
    let wants_health_check_port =
        needs_health_check_node_port(new) && health_check_node_port(new).is_none_or(|p| health_check_node_port(old) != Some(p));
    if !wants_address && !wants_ports && !wants_health_check_port {
        return Ok(());
    }
    let mut in_flight = net.in_flight.lock().await;
    let services = stored_services(store).await?;
    let now = Instant::now();
    in_flight.forget(&Allocated::from_services(&services), now);
    // Its own stored allocations are not taken from it.
    let identity = |svc: &Service| svc.metadata.as_ref().map(|meta| (meta.namespace.clone(), meta.name.clone()));
    let own = identity(old);
    let mut taken = Allocated::from_services(services.iter().filter(|svc| identity(svc) != own));
    in_flight.add_to(&mut taken);
    allocate(new, net, &taken)?;
    allocate_health_check_node_port(new, net, &taken)?;
    let mut allocated = Allocated::from_services([&*new]);
    allocated.ips.retain(|ip| !had.ips.contains(ip));
    allocated.node_ports.retain(|port| !had.node_ports.contains(port));
    in_flight.hold(allocated, now);
    Ok(())
}

/// Upstream's `allocHealthCheckNodePort`: a LoadBalancer with the `Local` external traffic
/// policy gets a health check node port from the node port range, free of `taken` and of its
/// own node ports. Failing is upstream's 500.
fn allocate_health_check_node_port(svc: &mut Service, net: &ServiceNetwork, taken: &Allocated) -> Result<(), Rejection> {
    if !needs_health_check_node_port(svc) {
        return Ok(());
    }
    let mut used = taken.node_ports.clone();
    used.extend(ports(svc).filter_map(node_port));
    let (lo, hi) = net.node_ports;
    match health_check_node_port(svc) {
        Some(requested) => {
            let reason = match u16::try_from(requested) {
                Ok(p) if !(lo..=hi).contains(&p) => {
                    format!("provided port is not in the valid range. The range of valid ports is {lo}-{hi}")
                }
                Ok(p) if used.contains(&p) => "provided port is already allocated".to_owned(),
                Ok(_) => return Ok(()),
                // Validation refuses it; nothing to allocate.
                Err(_) => return Ok(()),
            };
            Err(Rejection::Internal(format!("failed to allocate requested HealthCheck NodePort {requested}: {reason}")))
        }
        None => match (lo..=hi).find(|p| !used.contains(p)) {
            Some(p) => {
                svc.spec.get_or_insert_with(Default::default).health_check_node_port = Some(i32::from(p));
                Ok(())
            }
            None => Err(Rejection::Internal("failed to allocate a HealthCheck NodePort 0: range is full".to_owned())),
        },
    }
}

/// A Service's spec; Go's zero value when it has none.
fn spec(svc: &Service) -> &ServiceSpec {
    static NONE: std::sync::LazyLock<ServiceSpec> = std::sync::LazyLock::new(ServiceSpec::default);
    svc.spec.as_ref().unwrap_or(&NONE)
}

fn service_type(svc: &Service) -> &str {
    go::string(&spec(svc).r#type)
}

fn needs_cluster_ip(svc: &Service) -> bool {
    service_type(svc) != "ExternalName"
}

fn needs_node_port(svc: &Service) -> bool {
    matches!(service_type(svc), "NodePort" | "LoadBalancer")
}

fn needs_health_check_node_port(svc: &Service) -> bool {
    service_type(svc) == "LoadBalancer" && go::string(&spec(svc).external_traffic_policy) == "Local"
}

/// `ExternallyAccessible`: a LoadBalancer, a NodePort, or a ClusterIP Service with external IPs.
fn externally_accessible(svc: &Service) -> bool {
    needs_node_port(svc) || (service_type(svc) == "ClusterIP" && !spec(svc).external_ips.is_empty())
}

fn ports(svc: &Service) -> impl Iterator<Item = &ServicePort> {
    spec(svc).ports.iter()
}

/// A port's node port; `None` when unset (Go's 0).
fn node_port(port: &ServicePort) -> Option<u16> {
    port.node_port.filter(|p| *p != 0).and_then(|p| u16::try_from(p).ok())
}

/// The health check node port; `None` when unset (Go's 0).
fn health_check_node_port(svc: &Service) -> Option<i32> {
    spec(svc).health_check_node_port.filter(|p| *p != 0)
}

/// Upstream's `patchAllocatedValues`: a client that sends back what it created (without the
/// cluster IP, node ports or health check port the server allocated) keeps them.
fn patch_allocated_values(new: &mut Service, old: &Service) {
    let (keep_address, keep_node_ports, keep_health_check_port) = (
        needs_cluster_ip(old) && needs_cluster_ip(new),
        needs_node_port(old) && needs_node_port(new),
        needs_health_check_node_port(old) && needs_health_check_node_port(new) && health_check_node_port(new).is_none(),
    );
    // Node ports both keep cannot be given to another port; the rest go back by port name.
    let kept: BTreeSet<u16> = ports(old).filter_map(node_port).filter(|p| ports(new).filter_map(node_port).any(|q| q == *p)).collect();
    let (old, new) = (spec(old), new.spec.get_or_insert_with(Default::default));
    if keep_address {
        if go::string(&new.cluster_ip).is_empty() && !go::string(&old.cluster_ip).is_empty() {
            new.cluster_ip.clone_from(&old.cluster_ip);
        }
        if new.cluster_ips.is_empty() && !old.cluster_ips.is_empty() {
            new.cluster_ips.clone_from(&old.cluster_ips);
        }
    }
    if keep_node_ports {
        let by_name: BTreeMap<&str, u16> = old.ports.iter().filter_map(|port| Some((go::string(&port.name), node_port(port)?))).collect();
        for port in &mut new.ports {
            if node_port(port).is_none()
                && let Some(&previous) = by_name.get(go::string(&port.name))
                && !kept.contains(&previous)
            {
                port.node_port = Some(i32::from(previous));
            }
        }
    }
    if keep_health_check_port {
        new.health_check_node_port = old.health_check_node_port;
    }
}

/// Upstream's `normalizeClusterIPs` on an update: `clusterIPs` follows a client that only knows
/// `clusterIP` (leaves it out, clears it, or changes it).
fn normalize_cluster_ips(new: &mut Service, old: &Service) {
    let (old, new) = (spec(old), new.spec.get_or_insert_with(Default::default));
    let (old_ip, new_ip) = (go::string(&old.cluster_ip), go::string(&new.cluster_ip));
    if !old.cluster_ips.is_empty() && new.cluster_ips.is_empty() && new_ip == old_ip {
        new.cluster_ips.clone_from(&old.cluster_ips);
    }
    if new_ip != old_ip && new.cluster_ips == old.cluster_ips {
        new.cluster_ips = if new_ip.is_empty() { Vec::new() } else { vec![new_ip.to_owned()] };
    }
}

/// Upstream's `dropTypeDependentFields`: when a Service changes type, what only the old type
/// used and the client did not change itself is cleared (the allocated address, node ports and
/// health check port, the load balancer's fields, the external traffic policy), so that a
/// `kubectl patch` of the type alone is valid.
fn drop_type_dependent_fields(new: &mut Service, old: &Service) {
    let (drop_address, drop_node_ports, drop_health_check_port, drop_load_balancer, drop_traffic_policy) = (
        needs_cluster_ip(old) && !needs_cluster_ip(new),
        // The node ports go when the client added none of its own.
        needs_node_port(old)
            && !needs_node_port(new)
            && ports(new).filter_map(node_port).all(|p| ports(old).filter_map(node_port).any(|q| q == p)),
        needs_health_check_node_port(old)
            && !needs_health_check_node_port(new)
            && health_check_node_port(new) == health_check_node_port(old),
        service_type(old) == "LoadBalancer" && service_type(new) != "LoadBalancer",
        externally_accessible(old) && !externally_accessible(new),
    );
    if service_type(new) != "LoadBalancer"
        && let Some(status) = &mut new.status
    {
        status.load_balancer = Some(Default::default());
    }
    let (old, new) = (spec(old), new.spec.get_or_insert_with(Default::default));
    if drop_address {
        if go::string(&new.cluster_ip) == go::string(&old.cluster_ip) && new.cluster_ips == old.cluster_ips {
            new.cluster_ip = None;
            new.cluster_ips.clear();
        }
        if new.ip_families == old.ip_families {
            new.ip_families.clear();
        }
        if go::string(&new.ip_family_policy) == go::string(&old.ip_family_policy) {
            new.ip_family_policy = None;
        }
    }
    if drop_node_ports {
        for port in &mut new.ports {
            port.node_port = None;
        }
    }
    if drop_health_check_port {
        new.health_check_node_port = None;
    }
    if drop_load_balancer {
        if new.allocate_load_balancer_node_ports.is_some() && new.allocate_load_balancer_node_ports == old.allocate_load_balancer_node_ports
        {
            new.allocate_load_balancer_node_ports = None;
        }
        if go::string(&new.load_balancer_class) == go::string(&old.load_balancer_class) {
            new.load_balancer_class = None;
        }
    }
    if drop_traffic_policy && go::string(&new.external_traffic_policy) == go::string(&old.external_traffic_policy) {
        new.external_traffic_policy = None;
    }
}

/// The `kubernetes` Service in `default`: the API server's own address for in-cluster clients.
pub fn kubernetes_service(net: &ServiceNetwork, secure_port: u16) -> Value {
    let ip = net.kubernetes_service_ip().to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": { "component": "apiserver", "provider": "kubernetes" },
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": ip,
            "clusterIPs": [ip],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "sessionAffinity": "None",
            "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": secure_port }],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Service written as JSON.
    fn service(value: Value) -> Service {
        Service::deserialize(value).unwrap()
    }

    /// A Service as its JSON form writes it.
    fn json_of(svc: &Service) -> Value {
        serde_json::to_value(svc).unwrap()
    }

    #[test]
    fn allocates_addresses_and_ports_and_rejects_taken_ones() {
        let net = ServiceNetwork::default();
        assert_eq!(net.kubernetes_service_ip(), Ipv4Addr::new(10, 0, 0, 1));
        let k8s = service(kubernetes_service(&net, 6443));
        let taken = Allocated::from_services([&k8s]);
        let mut svc = service(json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": 80}]}}));
        allocate(&mut svc, &net, &taken).unwrap();
        let written = json_of(&svc);
        assert_eq!(written["spec"]["clusterIP"], "10.0.0.2");
        assert_eq!(written["spec"]["ports"][0]["nodePort"], 30000);
        assert_eq!(written["spec"]["ports"][0]["targetPort"], 80);
        let taken = Allocated::from_services([&k8s, &svc]);
        let mut dup = service(json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.2", "ports": [{"port": 80, "nodePort": 30000}]}}));
        let errs = allocate(&mut dup, &net, &taken).unwrap_err();
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(text[0].contains("provided IP is already allocated"), "{text:?}");
        assert!(text[1].contains("provided port is already allocated"), "{text:?}");
        let mut outside = service(json!({"spec": {"clusterIP": "192.168.0.1"}}));
        assert!(allocate(&mut outside, &net, &taken).is_err());
        let mut headless = service(json!({"spec": {"clusterIP": "None"}}));
        allocate(&mut headless, &net, &taken).unwrap();
        assert_eq!(json_of(&headless)["spec"]["clusterIPs"], json!(["None"]));
    }

    #[test]
    fn allocations_in_flight_are_taken_until_stored_or_stale() {
        let mut in_flight = InFlight::default();
        let now = Instant::now();
        let ip = |last: u8| Ipv4Addr::new(10, 0, 0, last);
        in_flight.hold(Allocated { ips: [ip(2), ip(3)].into(), node_ports: [30000].into() }, now);
        // Not stored yet: taken.
        let mut taken = Allocated { ips: [ip(1)].into(), ..Default::default() };
        in_flight.forget(&taken, now);
        in_flight.add_to(&mut taken);
        assert_eq!(taken.ips, [ip(1), ip(2), ip(3)].into());
        assert_eq!(taken.node_ports, [30000].into());
        // Stored now: forgotten.
        in_flight.forget(&Allocated { ips: [ip(2)].into(), ..Default::default() }, now);
        assert_eq!(in_flight.ips.keys().copied().collect::<Vec<_>>(), [ip(3)]);
        // A create that never stored its Service frees what it held in time.
        in_flight.forget(&Allocated::default(), now + IN_FLIGHT_FOR);
        assert!(in_flight.ips.is_empty() && in_flight.node_ports.is_empty());
    }

    /// A Service deleted before any other create saw it stored frees what its create held.
    #[tokio::test]
    async fn a_deleted_services_allocations_are_released() {
        let net = ServiceNetwork::default();
        let held = Allocated { ips: [Ipv4Addr::new(10, 0, 0, 50)].into(), node_ports: [30001].into() };
        net.in_flight.lock().await.hold(Allocated { ips: held.ips.clone(), node_ports: held.node_ports.clone() }, Instant::now());
        net.release(&held).await;
        let in_flight = net.in_flight.lock().await;
        assert!(in_flight.ips.is_empty() && in_flight.node_ports.is_empty());
    }

    /// A client that sends back its Service without what was allocated keeps it; a type change
    /// drops what only the old type used, unless the client changed it too.
    #[test]
    fn updates_keep_allocations_and_drop_what_the_old_type_used() {
        let node_port_json = json!({"metadata": {"name": "a"}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "http", "port": 80, "nodePort": 30001}, {"name": "https", "port": 443, "nodePort": 30002}]}});
        let node_port = service(node_port_json.clone());
        // `old` changed by `change` as JSON, then by `step` against `old`, written as JSON.
        let changed = |change: &dyn Fn(&mut Value), step: fn(&mut Service, &Service)| {
            let mut new = node_port_json.clone();
            change(&mut new);
            let mut new = service(new);
            step(&mut new, &node_port);
            json_of(&new)
        };
        let mut resent = service(json!({"metadata": {"name": "a"}, "spec": {"type": "NodePort", "externalTrafficPolicy": "Cluster",
            "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80, "nodePort": 30002}]}}));
        patch_allocated_values(&mut resent, &node_port);
        normalize_cluster_ips(&mut resent, &node_port);
        let resent = json_of(&resent);
        assert_eq!(resent["spec"]["clusterIP"], "10.0.0.5");
        assert_eq!(resent["spec"]["clusterIPs"], json!(["10.0.0.5"]));
        // 30002 is kept by the other port, so "https" does not get it back.
        assert_eq!(resent["spec"]["ports"][0].get("nodePort"), None);

        let cluster_ip = changed(&|svc| svc["spec"]["type"] = json!("ClusterIP"), drop_type_dependent_fields);
        let node_ports: Vec<_> = cluster_ip["spec"]["ports"].as_array().unwrap().iter().map(|port| port.get("nodePort")).collect();
        assert_eq!(node_ports, [None, None]);
        assert_eq!(cluster_ip["spec"].get("externalTrafficPolicy"), None);
        assert_eq!(cluster_ip["spec"]["clusterIP"], "10.0.0.5", "a ClusterIP keeps its address");
        // A node port the client chose itself is left for validation.
        let own = changed(
            &|svc| {
                svc["spec"]["type"] = json!("ClusterIP");
                svc["spec"]["ports"][0]["nodePort"] = json!(30009);
            },
            drop_type_dependent_fields,
        );
        assert_eq!(own["spec"]["ports"][0]["nodePort"], 30009);

        let external = changed(
            &|svc| {
                svc["spec"]["type"] = json!("ExternalName");
                svc["spec"]["externalName"] = json!("example.com");
            },
            drop_type_dependent_fields,
        );
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "externalTrafficPolicy"] {
            assert_eq!(external["spec"].get(field), None, "{field}");
        }

        // A client that changes only `clusterIP` (or clears it) has `clusterIPs` follow.
        let cleared = changed(&|svc| svc["spec"]["clusterIP"] = json!(""), normalize_cluster_ips);
        assert_eq!(cleared["spec"].get("clusterIPs"), None);
        let moved = changed(&|svc| svc["spec"]["clusterIP"] = json!("10.0.0.9"), normalize_cluster_ips);
        assert_eq!(moved["spec"]["clusterIPs"], json!(["10.0.0.9"]));
    }

    #[test]
    fn local_load_balancers_get_a_health_check_node_port() {
        let net = ServiceNetwork::default();
        let taken = Allocated { node_ports: [30000].into(), ..Default::default() };
        let mut lb = service(
            json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [{"port": 80, "nodePort": 30001}]}}),
        );
        allocate_health_check_node_port(&mut lb, &net, &taken).unwrap();
        assert_eq!(json_of(&lb)["spec"]["healthCheckNodePort"], 30002, "free of the taken ones and its own");
        assert_eq!(Allocated::from_services([&lb]).node_ports, [30001, 30002].into());
        let mut cluster = service(json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Cluster"}}));
        allocate_health_check_node_port(&mut cluster, &net, &taken).unwrap();
        assert_eq!(json_of(&cluster)["spec"].get("healthCheckNodePort"), None);
        let mut clash = service(json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "healthCheckNodePort": 30000}}));
        let Err(Rejection::Internal(message)) = allocate_health_check_node_port(&mut clash, &net, &taken) else { panic!() };
        assert_eq!(message, "failed to allocate requested HealthCheck NodePort 30000: provided port is already allocated");
    }

    /// Upstream's answers on a single-stack IPv4 cluster.
    #[test]
    fn ip_families_are_upstreams_on_a_single_stack_cluster() {
        let families = |spec: Value| {
            let mut spec = ServiceSpec::deserialize(spec).unwrap();
            let errs = init_ip_family_fields(&mut spec);
            let spec = serde_json::to_value(&spec).unwrap();
            ((spec["ipFamilyPolicy"].clone(), spec["ipFamilies"].clone()), errs.iter().map(ToString::to_string).collect::<Vec<_>>())
        };
        let (spec, errs) = families(json!({"ipFamilyPolicy": "PreferDualStack"}));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(spec, (json!("PreferDualStack"), json!(["IPv4"])));
        let (spec, _) = families(json!({}));
        assert_eq!(spec, (json!("SingleStack"), json!(["IPv4"])));
        let (_, errs) = families(json!({"ipFamilyPolicy": "RequireDualStack"}));
        assert_eq!(
            errs,
            ["spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"]
        );
        let (_, errs) = families(json!({"ipFamilies": ["IPv6"]}));
        assert_eq!(errs, ["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"]);
        // Headless without a selector asks for both families, which a single-stack cluster allows.
        let (spec, errs) = families(json!({"clusterIP": "None"}));
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(spec, (json!("RequireDualStack"), json!(["IPv4", "IPv6"])));
        let (spec, _) = families(json!({"clusterIP": "None", "selector": {"app": "x"}}));
        assert_eq!(spec, (json!("SingleStack"), json!(["IPv4"])));
    }

    #[test]
    fn node_ports_are_shared_by_port_number_and_optional_for_load_balancers() {
        let net = ServiceNetwork::default();
        let mut dns = service(json!({"spec": {"type": "NodePort", "ports": [
            {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}, {"port": 80}]}}));
        allocate(&mut dns, &net, &Allocated::default()).unwrap();
        let node_ports: Vec<Option<i32>> = dns.spec.unwrap().ports.iter().map(|p| p.node_port).collect();
        assert_eq!(node_ports, [Some(30000), Some(30000), Some(30001)]);
        let mut lb = service(
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}, {"port": 81, "nodePort": 30005}]}}),
        );
        allocate(&mut lb, &net, &Allocated::default()).unwrap();
        let lb = json_of(&lb);
        assert_eq!(lb["spec"]["ports"][0].get("nodePort"), None);
        assert_eq!(lb["spec"]["ports"][1]["nodePort"], 30005, "a requested one is kept");
    }

    #[test]
    fn parses_flags() {
        let net = ServiceNetwork::parse("10.96.0.10/12", "30000-30005").unwrap();
        assert_eq!(net.cluster_ip_base, Ipv4Addr::new(10, 96, 0, 0));
        assert!(ServiceNetwork::parse("nope", "1-2").is_err());
        assert!(ServiceNetwork::parse("10.0.0.0/24", "5-1").is_err());
    }

    #[test]
    fn names_are_dns_1035_labels() {
        let invalid = |name: &str| !validation::validate_object_meta(&ServiceStrategy, &json!({"metadata": {"name": name}})).is_empty();
        assert!(invalid("1abc"));
        assert!(!invalid("abc-1"));
    }
}
