//! The `kubernetes` Service in `default`, its Endpoints and its EndpointSlice, as
//! kube-apiserver's bootstrap controller keeps them with its default lease reconciler
//! (`pkg/controlplane/reconcilers/lease.go`, `endpointsadapter.go`): each API server holds a
//! lease on the address it advertises (a bare Endpoints object under
//! `/registry/masterleases/<ip>`, expiring [`LEASE_TTL`] after its last refresh, refreshed every
//! [`INTERVAL`]), and writes the Endpoints from the leases it finds, so a server that stops
//! drops out once its lease expires. The EndpointSlice mirrors the Endpoints' first subset.
//!
//! The leases are written to storage directly, as upstream's are; the Endpoints and the
//! EndpointSlice go through the registry's `Store` as a client's writes would.

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_api::api::core::v1::{EndpointSubset, Endpoints, Service};
use kapi_api::api::discovery::v1::EndpointSlice;
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::warn;

use crate::registry::keys::key;
use crate::registry::objects::{self, Kind};
use crate::registry::store::{Current, Incoming, Proposed, Store, StoreConfig, WriteOptions};
use crate::status::ApiError;
use crate::storage::{ListOptions, Storage, StorageError};

/// Where the API servers' leases live (upstream's `masterleases` under `/registry`).
const LEASE_PREFIX: &str = "/registry/masterleases/";
/// How long a lease outlives its last refresh (`masterEndpointReconcileTTL`).
const LEASE_TTL: Duration = Duration::from_secs(15);
/// How often a server refreshes its lease and reconciles (`EndpointReconcilerInterval`).
const INTERVAL: Duration = Duration::from_secs(10);
/// The Service (and so the Endpoints and EndpointSlice) in `default`.
const SERVICE: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The field manager of the server's writes.
const MANAGER: &str = "kube-apiserver";

/// The address the server advertises, as kube-apiserver picks its `--advertise-address`
/// default: the bind address when it is a specific, non-loopback one, else the address the host
/// reaches its IPv4 default route's gateway from (the default route's interface, as Go's
/// `ChooseHostInterface`). `None` on a host without a default route. Go's falls back to the
/// IPv6 default route; kapi's service ranges are IPv4, and an IPv6 address would fail
/// [`check_address_family`] as upstream's start fails then.
pub fn default_advertise_address(bind: IpAddr) -> Option<IpAddr> {
    if !bind.is_unspecified() && !bind.is_loopback() {
        return Some(bind);
    }
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    let gateway = default_gateway(&routes)?;
    // Connecting a UDP socket sends nothing; it only asks the kernel for the route's source.
    let target = if gateway.is_unspecified() { Ipv4Addr::new(192, 0, 2, 1) } else { gateway };
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
    socket.connect((target, 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

/// Upstream's `validatePublicIPServiceClusterIPRangeIPFamilies`: the `kubernetes` Service takes
/// its cluster IP from the primary service range and its endpoints from the advertised address,
/// so both must be of one IP family, or clients could not reach the Service through them.
pub fn check_address_family(service_range: &str, service_ip: IpAddr, advertised: IpAddr) -> Result<(), String> {
    if service_ip.is_ipv4() == advertised.is_ipv4() {
        return Ok(());
    }
    Err(format!("service IP family {service_range:?} must match public address family {:?}", advertised.to_string()))
}

/// The gateway of the IPv4 default route in `/proc/net/route`'s text (destination and mask
/// zero; addresses are hex in the host's little-endian order).
fn default_gateway(routes: &str) -> Option<Ipv4Addr> {
    routes.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (destination, gateway, mask) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
        if *destination != "00000000" || *mask != "00000000" {
            return None;
        }
        let raw = u32::from_str_radix(gateway, 16).ok()?;
        Some(Ipv4Addr::from(raw.to_le_bytes()))
    })
}

/// Reconciles now and every [`INTERVAL`] until the process ends.
pub fn spawn(storage: Arc<dyn Storage>, config: Arc<StoreConfig>, ip: IpAddr, port: u16) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Err(e) = reconcile(storage.as_ref(), &config, ip, port).await {
                warn!(error = %e, %ip, "kubernetes endpoints: reconciling");
            }
            tokio::time::sleep(INTERVAL).await;
        }
    })
}

/// Upstream's `UpdateKubernetesService`: the Service made as the server serves it, then
/// `ReconcileEndpoints`: this server's lease refreshed, and the Endpoints and the EndpointSlice
/// written from every live lease.
pub async fn reconcile(storage: &dyn Storage, config: &StoreConfig, ip: IpAddr, port: u16) -> Result<(), ApiError> {
    reconcile_service(storage, config, port).await?;
    refresh_lease(storage, &ip.to_string()).await?;
    write_endpoints(storage, config, port).await
}

/// Upstream's `CreateOrUpdateMasterServiceIfNeeded`: the Service created when missing, and its
/// type and ports reset when they are not the server's (`checkServiceFormat`: a client's edit
/// of them is undone, and a server that serves on another port now points the Service there).
async fn reconcile_service(storage: &dyn Storage, config: &StoreConfig, port: u16) -> Result<(), ApiError> {
    let Some(kv) = storage.get(&key("", "services", Some(NAMESPACE), Some(SERVICE))).await? else {
        return crate::registry::bootstrap::ensure_kubernetes_service(storage, config, port).await;
    };
    let (_, stored) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
    let wanted = crate::registry::core::services::kubernetes_service(&config.network, port);
    let (wanted_type, wanted_ports) = (&wanted["spec"]["type"], &wanted["spec"]["ports"]);
    if stored["spec"]["type"] == *wanted_type && stored["spec"]["ports"] == *wanted_ports {
        return Ok(());
    }
    let services = Store::new(storage, config, "", "services", Kind::core_v1("Service"));
    let wanted = Service::deserialize(&wanted).map_err(ApiError::internal)?.spec.unwrap_or_default();
    edit(&services, |object: &mut Service| {
        let spec = object.spec.get_or_insert_with(Default::default);
        spec.r#type.clone_from(&wanted.r#type);
        spec.ports.clone_from(&wanted.ports);
    })
    .await
}

/// Upstream's `RemoveEndpoints`, as a server that stops runs it: its lease removed, and the
/// Endpoints written from the leases left (the last server leaves them as they are: they are
/// never emptied).
pub async fn remove(storage: &dyn Storage, config: &StoreConfig, ip: IpAddr, port: u16) -> Result<(), ApiError> {
    match storage.delete(&format!("{LEASE_PREFIX}{ip}"), None).await {
        Ok(_) | Err(StorageError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    if lease_addresses(storage).await?.is_empty() {
        return Ok(());
    }
    write_endpoints(storage, config, port).await
}

/// This server's lease written with a fresh deadline (a write that changes nothing would not
/// reach storage, so each refresh bumps `metadata.generation`, as upstream's does).
async fn refresh_lease(storage: &dyn Storage, ip: &str) -> Result<(), ApiError> {
    let lease_key = format!("{LEASE_PREFIX}{ip}");
    let lease = |generation: i64| {
        let lease = json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": ip, "generation": generation},
            "subsets": [{"addresses": [{"ip": ip}]}],
        });
        objects::encode_stored(&Kind::core_v1("Endpoints"), &lease).map(Bytes::from).map_err(ApiError::internal)
    };
    // A conflict is another writer of the same address (a restart racing its old self): read
    // again and write over it.
    for _ in 0..3 {
        let written = match storage.get(&lease_key).await? {
            None => storage.create_with_ttl(&lease_key, lease(1)?, LEASE_TTL).await,
            Some(kv) => {
                let (_, stored) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
                let generation = stored["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
                storage.update_with_ttl(&lease_key, lease(generation)?, kv.mod_revision, LEASE_TTL).await
            }
        };
        match written {
            Ok(_) => return Ok(()),
            Err(StorageError::Conflict { .. } | StorageError::AlreadyExists { .. } | StorageError::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::internal(format!("refreshing the lease of {ip}: it kept changing")))
}

/// The addresses of the live leases, sorted.
async fn lease_addresses(storage: &dyn Storage) -> Result<Vec<String>, ApiError> {
    let mut ips = Vec::new();
    for kv in storage.list(LEASE_PREFIX, ListOptions::default()).await?.kvs {
        let Ok((_, lease)) = objects::decode_stored(&kv.value) else { continue };
        if let Some(ip) = lease["subsets"][0]["addresses"][0]["ip"].as_str().filter(|ip| !ip.is_empty()) {
            ips.push(ip.to_owned());
        }
    }
    ips.sort();
    ips.dedup();
    Ok(ips)
}

/// The Endpoints' one subset: the servers' addresses and the `https` port.
fn subsets(ips: &[String], port: u16) -> Value {
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    json!([{"addresses": addresses, "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
}

/// Whether the stored Endpoints already say what `wanted` says (upstream's
/// `checkEndpointSubsetFormatWithLease`, addresses compared as a set, ports exactly, and the
/// mirroring opt-out label).
fn endpoints_current(stored: &Value, wanted_subsets: &Value) -> bool {
    let (Some([subset]), Some([wanted])) = (stored["subsets"].as_array().map(Vec::as_slice), wanted_subsets.as_array().map(Vec::as_slice))
    else {
        return false;
    };
    let ips = |subset: &Value| {
        let mut ips: Vec<String> = subset["addresses"].as_array().into_iter().flatten().map(|a| a["ip"].to_string()).collect();
        ips.sort();
        ips
    };
    let labelled = stored["metadata"]["labels"][SKIP_MIRROR_LABEL] == "true";
    labelled && ips(subset) == ips(wanted) && subset["ports"] == wanted["ports"]
}

/// The label that keeps the EndpointSlice mirroring controller off these Endpoints (the server
/// writes their slice itself).
const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The label naming an EndpointSlice's Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Upstream's `doReconcile`: the Endpoints made to list every live lease (never none: with no
/// lease listed, nothing is erased), then their EndpointSlice.
async fn write_endpoints(storage: &dyn Storage, config: &StoreConfig, port: u16) -> Result<(), ApiError> {
    let ips = lease_addresses(storage).await?;
    if ips.is_empty() {
        return Err(ApiError::internal("no master IPs were listed in storage, refusing to erase all endpoints for the kubernetes service"));
    }
    let wanted = subsets(&ips, port);
    let endpoints = Store::new(storage, config, "", "endpoints", Kind::core_v1("Endpoints"));
    let options = WriteOptions { manager: Some(MANAGER), ..Default::default() };
    match storage.get(&key("", "endpoints", Some(NAMESPACE), Some(SERVICE))).await? {
        None => {
            let object = json!({
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": {SKIP_MIRROR_LABEL: "true"}},
                "subsets": wanted,
            });
            create(&endpoints, options, object).await?;
        }
        Some(kv) => {
            let (_, stored) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
            if !endpoints_current(&stored, &wanted) {
                let subsets = Vec::<EndpointSubset>::deserialize(&wanted).map_err(ApiError::internal)?;
                edit(&endpoints, |object: &mut Endpoints| {
                    object.metadata.get_or_insert_with(Default::default).labels.insert(SKIP_MIRROR_LABEL.to_owned(), "true".to_owned());
                    object.subsets.clone_from(&subsets);
                })
                .await?;
            }
        }
    }
    write_slice(storage, config, &ips, port).await
}

/// Upstream's `endpointSliceFromEndpoints` of the Endpoints above: one ready endpoint per
/// address, the same port, IPv6 only when every address is.
fn slice_of(ips: &[String], port: u16) -> Value {
    let ipv6 = ips.iter().all(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok());
    let endpoints: Vec<Value> = ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}})).collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": {SERVICE_NAME_LABEL: SERVICE}},
        "addressType": if ipv6 { "IPv6" } else { "IPv4" },
        "endpoints": endpoints,
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    })
}

/// Upstream's `ensureEndpointSliceFromEndpoints`: created when missing, replaced when its
/// address type differs, updated when its endpoints, ports or labels do.
async fn write_slice(storage: &dyn Storage, config: &StoreConfig, ips: &[String], port: u16) -> Result<(), ApiError> {
    let kind = Kind { group: "discovery.k8s.io".into(), version: "v1".into(), kind: "EndpointSlice".into() };
    let slices = Store::new(storage, config, "discovery.k8s.io", "endpointslices", kind);
    let options = WriteOptions { manager: Some(MANAGER), ..Default::default() };
    let wanted = slice_of(ips, port);
    let Some(kv) = storage.get(&key("discovery.k8s.io", "endpointslices", Some(NAMESPACE), Some(SERVICE))).await? else {
        return create(&slices, options, wanted).await;
    };
    let (_, stored) = objects::decode_stored(&kv.value).map_err(ApiError::internal)?;
    if stored["addressType"] != wanted["addressType"] {
        // The address type cannot change: the slice is made anew.
        ignore_races(slices.delete(options, Some(NAMESPACE), SERVICE, &json!({})).await.map(drop))?;
        return create(&slices, options, wanted).await;
    }
    let same = |field: &str| stored[field] == wanted[field];
    if same("endpoints") && same("ports") && stored["metadata"]["labels"] == wanted["metadata"]["labels"] {
        return Ok(());
    }
    let wanted = EndpointSlice::deserialize(&wanted).map_err(ApiError::internal)?;
    edit(&slices, |object: &mut EndpointSlice| {
        object.metadata.get_or_insert_with(Default::default).labels =
            wanted.metadata.as_ref().map(|m| m.labels.clone()).unwrap_or_default();
        object.endpoints.clone_from(&wanted.endpoints);
        object.ports.clone_from(&wanted.ports);
    })
    .await
}

/// Creates `object` through `store` (defaulted as a body is); one created meanwhile by another
/// server is no error.
async fn create(store: &Store<'_>, options: WriteOptions<'_>, object: Value) -> Result<(), ApiError> {
    let incoming = Incoming::from_object(store.group, store.resource, &store.kind, &object)?;
    ignore_races(store.create(options, Some(NAMESPACE), incoming).await.map(drop))
}

/// The stored `kubernetes` object of `store`'s resource changed by `change` (on its generated
/// type `T`) and written back as the server's.
async fn edit<T: std::any::Any>(store: &Store<'_>, change: impl Fn(&mut T) + Send + Sync) -> Result<(), ApiError> {
    let mut edited = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(store.group_resource(), SERVICE))?;
        let mut object = current.internal_object();
        change(object.typed_mut()?);
        Ok(Proposed::edited(object))
    };
    let options = WriteOptions { manager: Some(MANAGER), ..Default::default() };
    ignore_races(store.update(options, Some(NAMESPACE), SERVICE, &mut edited).await.map(drop))
}

/// Another server's write that won a race (409) or a delete meanwhile (404): the next pass
/// sees what is there.
fn ignore_races(result: Result<(), ApiError>) -> Result<(), ApiError> {
    match result {
        Err(e) if e.code == 409 || e.code == 404 => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_routes_gateway_is_read_from_proc_net_route() {
        let routes = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                      eth0\t0011A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                      eth0\t00000000\t0111A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(default_gateway(routes), Some(Ipv4Addr::new(192, 168, 17, 1)));
        assert_eq!(default_gateway("Iface\tDestination\n"), None);
        // A specific, non-loopback bind address is advertised as it is.
        let bind: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(default_advertise_address(bind), Some(bind));
    }

    #[test]
    fn the_advertised_address_is_of_the_service_ranges_family() {
        let service_ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(check_address_family("10.0.0.0/24", service_ip, "192.0.2.7".parse().unwrap()), Ok(()));
        // Upstream's start-up error, word for word.
        assert_eq!(
            check_address_family("10.0.0.0/24", service_ip, "fd00::2".parse().unwrap()),
            Err(r#"service IP family "10.0.0.0/24" must match public address family "fd00::2""#.to_owned())
        );
    }

    #[test]
    fn endpoints_are_current_when_addresses_ports_and_label_agree() {
        let wanted = subsets(&["10.0.0.2".into(), "10.0.0.1".into()], 6443);
        let stored = |labels: Value, subsets: Value| json!({"metadata": {"labels": labels}, "subsets": subsets});
        let labelled = json!({SKIP_MIRROR_LABEL: "true"});
        assert!(endpoints_current(&stored(labelled.clone(), subsets(&["10.0.0.1".into(), "10.0.0.2".into()], 6443)), &wanted));
        assert!(!endpoints_current(&stored(json!({}), wanted.clone()), &wanted));
        assert!(!endpoints_current(&stored(labelled.clone(), subsets(&["10.0.0.1".into()], 6443)), &wanted));
        assert!(!endpoints_current(&stored(labelled.clone(), subsets(&["10.0.0.1".into(), "10.0.0.2".into()], 443)), &wanted));
        assert!(!endpoints_current(&stored(labelled, json!([])), &wanted));
    }

    #[test]
    fn the_slice_mirrors_the_addresses() {
        let slice = slice_of(&["10.0.0.1".into()], 6443);
        assert_eq!(slice["addressType"], "IPv4");
        assert_eq!(slice["endpoints"], json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]));
        assert_eq!(slice["ports"], json!([{"name": "https", "port": 6443, "protocol": "TCP"}]));
        assert_eq!(slice["metadata"]["labels"], json!({SERVICE_NAME_LABEL: "kubernetes"}));
        assert_eq!(slice_of(&["fd00::1".into()], 6443)["addressType"], "IPv6");
    }
}
