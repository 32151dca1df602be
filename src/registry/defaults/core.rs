//! `core/v1` (upstream `pkg/apis/core/v1/defaults.go` and the `+default` values of
//! `k8s.io/api/core/v1/types.go`), and the create-time facts of the pod and job strategies that
//! read like defaults.

use kapi_api::api::core::v1 as core;
use kapi_apimachinery::{IntOrString, Quantity};

use super::{Registry, default_int, default_str};

pub fn register(r: &mut Registry) {
    r.add(set_defaults_replication_controller);
    r.add(set_defaults_volume);
    r.add(set_defaults_container);
    r.add(set_defaults_ephemeral_container);
    r.add(set_defaults_container_port);
    r.add(set_defaults_service);
    r.add(set_defaults_pod);
    r.add(set_defaults_pod_spec);
    r.add(set_defaults_probe);
    r.add(set_defaults_secret_volume_source);
    r.add(set_defaults_config_map_volume_source);
    r.add(set_defaults_downward_api_volume_source);
    r.add(set_defaults_projected_volume_source);
    r.add(set_defaults_service_account_token_projection);
    r.add(set_defaults_secret);
    r.add(set_defaults_persistent_volume);
    r.add(set_defaults_persistent_volume_claim);
    r.add(set_defaults_persistent_volume_claim_spec);
    r.add(set_defaults_endpoints);
    r.add(set_defaults_http_get_action);
    r.add(set_defaults_namespace);
    r.add(set_defaults_node);
    r.add(set_defaults_object_field_selector);
    r.add(set_defaults_limit_range_item);
    r.add(set_defaults_host_path_volume_source);
    r.add(set_defaults_iscsi_volume_source);
    r.add(set_defaults_iscsi_persistent_volume_source);
    r.add(set_defaults_rbd_volume_source);
    r.add(set_defaults_rbd_persistent_volume_source);
    r.add(set_defaults_azure_disk_volume_source);
    r.add(set_defaults_scale_io_volume_source);
    r.add(set_defaults_scale_io_persistent_volume_source);
}

/// An RC without a selector selects its template's labels, and an RC without labels takes them
/// too; `replicas` is 1 (a declarative default upstream).
pub fn set_defaults_replication_controller(rc: &mut core::ReplicationController) {
    let spec = rc.spec.get_or_insert_default();
    let labels = spec.template.as_ref().and_then(|t| t.metadata.as_ref()).map(|m| m.labels.clone()).filter(|l| !l.is_empty());
    if let Some(labels) = labels {
        if spec.selector.is_empty() {
            spec.selector = labels.clone();
        }
        let meta = rc.metadata.get_or_insert_default();
        if meta.labels.is_empty() {
            meta.labels = labels;
        }
    }
    spec.replicas.get_or_insert(1);
}

/// A volume without any source is an `emptyDir`. An image volume's pull policy follows the
/// container rule (`ImageVolume`, on by default).
pub fn set_defaults_volume(v: &mut core::Volume) {
    // Volume is `name` plus the embedded VolumeSource, whose fields are all pointers: it has no
    // source when everything but the name is unset.
    let sourceless = core::Volume { name: v.name.clone(), ..Default::default() };
    if *v == sourceless {
        v.empty_dir = Some(core::EmptyDirVolumeSource::default());
    }
    if let Some(image) = &mut v.image
        && image.pull_policy.as_deref().is_none_or(str::is_empty)
    {
        image.pull_policy = Some(pull_policy_for(image.reference.as_deref().unwrap_or_default()).to_owned());
    }
}

/// `Always` for an image tagged (or defaulting to) `latest`, `IfNotPresent` otherwise
/// (upstream parses the reference with `parsers.ParseImageName`: no tag and no digest means
/// `latest`; an unparsable reference has no tag).
pub fn pull_policy_for(image: &str) -> &'static str {
    if image_tag(image).as_deref() == Some("latest") { "Always" } else { "IfNotPresent" }
}

fn image_tag(image: &str) -> Option<String> {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    if name.is_empty() {
        return None;
    }
    // The tag follows the last ':' of the last path component (a ':' before it is a registry
    // port).
    let last = name.rsplit('/').next().unwrap_or(name);
    let (repo, tag) = match last.split_once(':') {
        Some((repo, tag)) => (repo, Some(tag)),
        None => (last, None),
    };
    // Repository names are lower case; anything else does not parse.
    if repo.is_empty() || repo.chars().any(|c| c.is_ascii_uppercase()) || tag == Some("") {
        return None;
    }
    match (tag, digest) {
        (Some(tag), _) => Some(tag.to_owned()),
        (None, None) => Some("latest".to_owned()),
        (None, Some(_)) => None,
    }
}

/// Pull policy from the image tag, the termination message at `/dev/termination-log` read from
/// the file.
pub fn set_defaults_container(c: &mut core::Container) {
    if c.image_pull_policy.as_deref().is_none_or(str::is_empty) {
        c.image_pull_policy = Some(pull_policy_for(c.image.as_deref().unwrap_or_default()).to_owned());
    }
    default_str(&mut c.termination_message_path, "/dev/termination-log");
    default_str(&mut c.termination_message_policy, "File");
    // Not a default but Go's encoding: `resources` is a value struct, always written, so
    // upstream shows `resources: {}` for a container without any.
    c.resources.get_or_insert_default();
}

/// Upstream converts the ephemeral container to a Container and applies the same defaults.
pub fn set_defaults_ephemeral_container(c: &mut core::EphemeralContainer) {
    if c.image_pull_policy.as_deref().is_none_or(str::is_empty) {
        c.image_pull_policy = Some(pull_policy_for(c.image.as_deref().unwrap_or_default()).to_owned());
    }
    default_str(&mut c.termination_message_path, "/dev/termination-log");
    default_str(&mut c.termination_message_policy, "File");
    c.resources.get_or_insert_default();
}

/// Declarative upstream (`+default="TCP"`).
pub fn set_defaults_container_port(p: &mut core::ContainerPort) {
    default_str(&mut p.protocol, "TCP");
}

/// `SetDefaults_Service`: ClusterIP, no session affinity (ClientIP affinity times out after
/// three hours), TCP ports whose target is the port, `Cluster` traffic policies, node ports for
/// load balancers. Cluster IPs and IP families are the allocator's (`registry::core::services`).
pub fn set_defaults_service(svc: &mut core::Service) {
    let spec = svc.spec.get_or_insert_default();
    default_str(&mut spec.session_affinity, "None");
    match spec.session_affinity.as_deref() {
        Some("None") => spec.session_affinity_config = None,
        Some("ClientIP") => {
            let timeout = spec.session_affinity_config.as_ref().and_then(|c| c.client_ip.as_ref()).and_then(|c| c.timeout_seconds);
            if timeout.is_none() {
                spec.session_affinity_config =
                    Some(core::SessionAffinityConfig { client_ip: Some(core::ClientIPConfig { timeout_seconds: Some(10800) }) });
            }
        }
        _ => {}
    }
    default_str(&mut spec.r#type, "ClusterIP");
    for port in &mut spec.ports {
        default_str(&mut port.protocol, "TCP");
        let unset = matches!(&port.target_port, None | Some(IntOrString::Int(0)))
            || matches!(&port.target_port, Some(IntOrString::String(s)) if s.is_empty());
        if unset {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }
    let ty = spec.r#type.clone().unwrap_or_default();
    // `service.ExternallyAccessible`: load balancers, node ports, and cluster IPs with external IPs.
    let externally_accessible = ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && !spec.external_ips.is_empty());
    if externally_accessible {
        default_str(&mut spec.external_traffic_policy, "Cluster");
    }
    if spec.internal_traffic_policy.is_none() && matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        spec.internal_traffic_policy = Some("Cluster".into());
    }
    if ty == "LoadBalancer" {
        spec.allocate_load_balancer_node_ports.get_or_insert(true);
        let ingress = svc.status.iter_mut().flat_map(|s| s.load_balancer.iter_mut()).flat_map(|lb| lb.ingress.iter_mut());
        for ing in ingress {
            if ing.ip.as_deref().is_some_and(|ip| !ip.is_empty()) && ing.ip_mode.is_none() {
                ing.ip_mode = Some("VIP".into());
            }
        }
    }
}

/// `SetDefaults_Pod` (only on Pods, not on pod templates): requests default to limits, service
/// links are on, and host-network pods expose their container ports on the host.
pub fn set_defaults_pod(pod: &mut core::Pod) {
    let spec = pod.spec.get_or_insert_default();
    for c in spec.containers.iter_mut().chain(spec.init_containers.iter_mut()) {
        if let Some(res) = &mut c.resources
            && !res.limits.is_empty()
        {
            for (name, limit) in &res.limits {
                res.requests.entry(name.clone()).or_insert_with(|| limit.clone());
            }
        }
    }
    spec.enable_service_links.get_or_insert(true);
    if spec.host_network == Some(true) {
        for c in spec.containers.iter_mut().chain(spec.init_containers.iter_mut()) {
            for p in &mut c.ports {
                if p.host_port.is_none_or(|h| h == 0) {
                    p.host_port = Some(p.container_port);
                }
            }
        }
    }
}

/// `SetDefaults_PodSpec` (every pod spec, templates included).
pub fn set_defaults_pod_spec(spec: &mut core::PodSpec) {
    default_str(&mut spec.dns_policy, "ClusterFirst");
    default_str(&mut spec.restart_policy, "Always");
    spec.security_context.get_or_insert_default();
    spec.termination_grace_period_seconds.get_or_insert(30);
    default_str(&mut spec.scheduler_name, "default-scheduler");
    service_account_alias(spec);
}

/// Not a default but upstream's conversion through the internal version, which every request
/// takes: the deprecated `serviceAccount` is an alias of `serviceAccountName` (which wins when
/// both are set), and the external form always carries both.
fn service_account_alias(spec: &mut core::PodSpec) {
    if spec.service_account_name.as_deref().is_none_or(str::is_empty) {
        spec.service_account_name = spec.service_account.clone().filter(|s| !s.is_empty());
    }
    spec.service_account = spec.service_account_name.clone();
}

/// Probes time out after 1s, run every 10s, succeed after 1 success and fail after 3 failures
/// (non-pointer Go integers: 0 is unset).
pub fn set_defaults_probe(p: &mut core::Probe) {
    default_int(&mut p.timeout_seconds, 1);
    default_int(&mut p.period_seconds, 10);
    default_int(&mut p.success_threshold, 1);
    default_int(&mut p.failure_threshold, 3);
}

/// Mode 0644 (420) for files of secret, config map, downward API and projected volumes.
pub fn set_defaults_secret_volume_source(s: &mut core::SecretVolumeSource) {
    s.default_mode.get_or_insert(0o644);
}

pub fn set_defaults_config_map_volume_source(s: &mut core::ConfigMapVolumeSource) {
    s.default_mode.get_or_insert(0o644);
}

pub fn set_defaults_downward_api_volume_source(s: &mut core::DownwardAPIVolumeSource) {
    s.default_mode.get_or_insert(0o644);
}

pub fn set_defaults_projected_volume_source(s: &mut core::ProjectedVolumeSource) {
    s.default_mode.get_or_insert(0o644);
}

/// Projected service account tokens live one hour.
pub fn set_defaults_service_account_token_projection(t: &mut core::ServiceAccountTokenProjection) {
    t.expiration_seconds.get_or_insert(3600);
}

pub fn set_defaults_secret(s: &mut core::Secret) {
    default_str(&mut s.r#type, "Opaque");
}

/// A new volume is `Pending`, retained when released, and a filesystem.
pub fn set_defaults_persistent_volume(pv: &mut core::PersistentVolume) {
    default_str(&mut pv.status.get_or_insert_default().phase, "Pending");
    let spec = pv.spec.get_or_insert_default();
    default_str(&mut spec.persistent_volume_reclaim_policy, "Retain");
    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
}

pub fn set_defaults_persistent_volume_claim(pvc: &mut core::PersistentVolumeClaim) {
    default_str(&mut pvc.status.get_or_insert_default().phase, "Pending");
}

pub fn set_defaults_persistent_volume_claim_spec(spec: &mut core::PersistentVolumeClaimSpec) {
    spec.volume_mode.get_or_insert_with(|| "Filesystem".into());
}

pub fn set_defaults_endpoints(ep: &mut core::Endpoints) {
    for port in ep.subsets.iter_mut().flat_map(|s| s.ports.iter_mut()) {
        default_str(&mut port.protocol, "TCP");
    }
}

pub fn set_defaults_http_get_action(a: &mut core::HTTPGetAction) {
    default_str(&mut a.path, "/");
    default_str(&mut a.scheme, "HTTP");
}

/// Every named namespace carries `kubernetes.io/metadata.name: <name>` (a generated name gets
/// it at create, see `registry::prepare_for_create`), and its status is `Active`.
pub fn set_defaults_namespace(ns: &mut core::Namespace) {
    let meta = ns.metadata.get_or_insert_default();
    if let Some(name) = meta.name.clone().filter(|n| !n.is_empty()) {
        meta.labels.insert("kubernetes.io/metadata.name".into(), name);
    }
    default_str(&mut ns.status.get_or_insert_default().phase, "Active");
}

/// A node that reports capacity but no allocatable resources can allocate all of it.
pub fn set_defaults_node(node: &mut core::Node) {
    if let Some(status) = &mut node.status
        && status.allocatable.is_empty()
        && !status.capacity.is_empty()
    {
        status.allocatable = status.capacity.clone();
    }
}

pub fn set_defaults_object_field_selector(s: &mut core::ObjectFieldSelector) {
    default_str(&mut s.api_version, "v1");
}

/// For container limits: the default limit is the max, the default request the default limit,
/// or else the min.
pub fn set_defaults_limit_range_item(item: &mut core::LimitRangeItem) {
    if item.r#type != "Container" {
        return;
    }
    for (name, max) in &item.max {
        item.default.entry(name.clone()).or_insert_with(|| max.clone());
    }
    for (name, limit) in &item.default {
        item.default_request.entry(name.clone()).or_insert_with(|| limit.clone());
    }
    for (name, min) in &item.min {
        item.default_request.entry(name.clone()).or_insert_with(|| min.clone());
    }
}

/// `type: ""` (HostPathUnset): no check before mounting.
pub fn set_defaults_host_path_volume_source(h: &mut core::HostPathVolumeSource) {
    h.r#type.get_or_insert_with(String::new);
}

// The in-tree volume plugins' declarative defaults (`+default` in types.go).

pub fn set_defaults_iscsi_volume_source(v: &mut core::ISCSIVolumeSource) {
    default_str(&mut v.iscsi_interface, "default");
}

pub fn set_defaults_iscsi_persistent_volume_source(v: &mut core::ISCSIPersistentVolumeSource) {
    default_str(&mut v.iscsi_interface, "default");
}

pub fn set_defaults_rbd_volume_source(v: &mut core::RBDVolumeSource) {
    default_str(&mut v.pool, "rbd");
    default_str(&mut v.user, "admin");
    default_str(&mut v.keyring, "/etc/ceph/keyring");
}

pub fn set_defaults_rbd_persistent_volume_source(v: &mut core::RBDPersistentVolumeSource) {
    default_str(&mut v.pool, "rbd");
    default_str(&mut v.user, "admin");
    default_str(&mut v.keyring, "/etc/ceph/keyring");
}

pub fn set_defaults_azure_disk_volume_source(v: &mut core::AzureDiskVolumeSource) {
    v.caching_mode.get_or_insert_with(|| "ReadWrite".into());
    v.fs_type.get_or_insert_with(|| "ext4".into());
    v.read_only.get_or_insert(false);
    v.kind.get_or_insert_with(|| "Shared".into());
}

pub fn set_defaults_scale_io_volume_source(v: &mut core::ScaleIOVolumeSource) {
    default_str(&mut v.storage_mode, "ThinProvisioned");
    default_str(&mut v.fs_type, "xfs");
}

pub fn set_defaults_scale_io_persistent_volume_source(v: &mut core::ScaleIOPersistentVolumeSource) {
    default_str(&mut v.storage_mode, "ThinProvisioned");
    default_str(&mut v.fs_type, "xfs");
}

/// What a pod's QoS class depends on ([`pod_qos_class`]): the pod's and its containers'
/// resources, read from a JSON pod spec without copying or decoding the rest of it.
#[derive(Debug, Default, serde::Deserialize)]
pub struct PodResources {
    resources: Option<core::ResourceRequirements>,
    containers: Option<Vec<ContainerResources>>,
    #[serde(rename = "initContainers")]
    init_containers: Option<Vec<ContainerResources>>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ContainerResources {
    resources: Option<core::ResourceRequirements>,
}

impl PodResources {
    /// The resources of `spec`, a pod spec's JSON (none when it is not one).
    pub fn of(spec: &serde_json::Value) -> PodResources {
        serde::Deserialize::deserialize(spec).unwrap_or_default()
    }

    /// The resources of a pod's spec.
    pub fn of_spec(spec: Option<&core::PodSpec>) -> PodResources {
        let Some(spec) = spec else { return PodResources::default() };
        let of = |containers: &[core::Container]| {
            Some(containers.iter().map(|c| ContainerResources { resources: c.resources.clone() }).collect())
        };
        PodResources { resources: spec.resources.clone(), containers: of(&spec.containers), init_containers: of(&spec.init_containers) }
    }
}

/// The pod strategy's `status.qosClass` at create (`qos.GetPodQOS`): `BestEffort` without any
/// CPU or memory requests or limits, `Guaranteed` when every container limits both and the
/// requests equal the limits, `Burstable` otherwise. Pod-level resources, when set, decide.
pub fn pod_qos_class(spec: &PodResources) -> &'static str {
    use std::collections::BTreeMap;
    const QOS: [&str; 2] = ["cpu", "memory"];
    let positive = |q: &Quantity| q.milli_value() > 0;
    let mut requests: BTreeMap<&str, i64> = BTreeMap::new();
    let mut limits: BTreeMap<&str, i64> = BTreeMap::new();
    let mut guaranteed = true;
    let pod_level = spec
        .resources
        .as_ref()
        .filter(|r| QOS.iter().any(|n| r.requests.get(*n).is_some_and(positive) || r.limits.get(*n).is_some_and(positive)));
    let (containers, init_containers) =
        (spec.containers.as_deref().unwrap_or_default(), spec.init_containers.as_deref().unwrap_or_default());
    let all: Vec<&core::ResourceRequirements> = match pod_level {
        Some(r) => vec![r],
        None => containers.iter().chain(init_containers).filter_map(|c| c.resources.as_ref()).collect(),
    };
    let containers = if pod_level.is_some() { 1 } else { containers.len() + init_containers.len() };
    if all.len() < containers {
        guaranteed = false;
    }
    for r in all {
        for name in QOS {
            if let Some(q) = r.requests.get(name).filter(|q| positive(q)) {
                *requests.entry(name).or_default() += q.milli_value();
            }
            match r.limits.get(name).filter(|q| positive(q)) {
                Some(q) => *limits.entry(name).or_default() += q.milli_value(),
                None => guaranteed = false,
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests == limits {
        return "Guaranteed";
    }
    "Burstable"
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn image_tags_decide_the_pull_policy() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("localhost:5000/nginx", "Always"),
            ("localhost:5000/nginx:v1", "IfNotPresent"),
            ("nginx@sha256:0123", "IfNotPresent"),
            ("nginx:latest@sha256:0123", "Always"),
            ("", "IfNotPresent"),
            ("Nginx", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy_for(image), policy, "{image}");
        }
    }

    /// What `kubectl run web --image=nginx` shows on a v1.36 cluster (before admission plugins
    /// add the service account, its token volume and tolerations).
    #[test]
    fn pod() {
        assert_defaults::<core::Pod>(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                   "spec": {"containers": [{"name": "web", "image": "nginx",
                       "ports": [{"containerPort": 80}],
                       "resources": {"limits": {"cpu": "1"}},
                       "livenessProbe": {"httpGet": {"port": 80}},
                       "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
                     "volumes": [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}},
                                 {"name": "c", "configMap": {"name": "c"}}, {"name": "d", "hostPath": {"path": "/d"}},
                                 {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                   "spec": {"containers": [{"name": "web", "image": "nginx", "imagePullPolicy": "Always",
                       "ports": [{"containerPort": 80, "protocol": "TCP"}],
                       "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}},
                       "livenessProbe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
                           "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                       "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                       "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                     "volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
                                 {"name": "c", "configMap": {"name": "c", "defaultMode": 420}},
                                 {"name": "d", "hostPath": {"path": "/d", "type": ""}},
                                 {"name": "e", "projected": {"defaultMode": 420,
                                     "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                     "securityContext": {}, "schedulerName": "default-scheduler", "enableServiceLinks": true}}),
        );
    }

    /// Templates get `SetDefaults_PodSpec` but not `SetDefaults_Pod` (no `enableServiceLinks`).
    #[test]
    fn pod_template_and_replication_controller() {
        assert_defaults::<core::ReplicationController>(
            json!({"metadata": {"name": "rc"}, "spec": {"template": {"metadata": {"labels": {"app": "a"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}),
            json!({"metadata": {"name": "rc", "labels": {"app": "a"}}, "spec": {"replicas": 1, "selector": {"app": "a"},
                   "template": {"metadata": {"labels": {"app": "a"}},
                   "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": {},
                       "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                     "securityContext": {}, "schedulerName": "default-scheduler"}}}}),
        );
    }

    #[test]
    fn service_account_alias() {
        let defaulted = |spec: serde_json::Value| {
            let mut spec: core::PodSpec = serde_json::from_value(spec).unwrap();
            set_defaults_pod_spec(&mut spec);
            (spec.service_account_name, spec.service_account)
        };
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(defaulted(json!({"serviceAccountName": "a"})), (some("a"), some("a")));
        assert_eq!(defaulted(json!({"serviceAccount": "b"})), (some("b"), some("b")));
        assert_eq!(defaulted(json!({"serviceAccountName": "a", "serviceAccount": "b"})), (some("a"), some("a")));
        assert_eq!(defaulted(json!({})), (None, None));
    }

    #[test]
    fn service() {
        assert_defaults::<core::Service>(
            json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
            json!({"metadata": {"name": "s"}, "spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                   "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
        );
        assert_defaults::<core::Service>(
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 443, "targetPort": 0}]}}),
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                   "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                   "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": true,
                   "ports": [{"port": 443, "protocol": "TCP", "targetPort": 443}]}}),
        );
        assert_defaults::<core::Service>(
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
            json!({"spec": {"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"}}),
        );
    }

    #[test]
    fn secrets_volumes_claims_namespaces() {
        assert_defaults::<core::Secret>(json!({"metadata": {"name": "s"}}), json!({"metadata": {"name": "s"}, "type": "Opaque"}));
        assert_defaults::<core::PersistentVolumeClaim>(
            json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}}),
            json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
                   "status": {"phase": "Pending"}}),
        );
        assert_defaults::<core::PersistentVolume>(
            json!({"metadata": {"name": "v"}, "spec": {"hostPath": {"path": "/v"}}}),
            json!({"metadata": {"name": "v"}, "spec": {"hostPath": {"path": "/v", "type": ""},
                   "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}),
        );
        assert_defaults::<core::Namespace>(
            json!({"metadata": {"name": "team"}}),
            json!({"metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team"}}, "status": {"phase": "Active"}}),
        );
        assert_defaults::<core::Endpoints>(
            json!({"subsets": [{"ports": [{"port": 80}]}]}),
            json!({"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}),
        );
        assert_defaults::<core::LimitRange>(
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]}}),
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"},
                   "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "1Mi"}}]}}),
        );
        // Kinds without defaults come back as they went in.
        assert_defaults::<core::ConfigMap>(json!({"data": {"a": "b"}}), json!({"data": {"a": "b"}}));
    }

    #[test]
    fn qos_classes() {
        let spec = |resources: serde_json::Value| PodResources::of(&json!({"containers": [{"name": "c", "resources": resources}]}));
        assert_eq!(pod_qos_class(&spec(json!({}))), "BestEffort");
        assert_eq!(pod_qos_class(&spec(json!({"requests": {"cpu": "100m"}}))), "Burstable");
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(pod_qos_class(&spec(json!({"limits": both, "requests": both}))), "Guaranteed");
        assert_eq!(pod_qos_class(&spec(json!({"limits": both, "requests": {"cpu": "500m", "memory": "1Gi"}}))), "Burstable");
        let pod_level = json!({"resources": {"limits": both, "requests": both}, "containers": [{"name": "c"}], "initContainers": null});
        assert_eq!(pod_qos_class(&PodResources::of(&pod_level)), "Guaranteed", "pod-level resources decide");
        assert_eq!(pod_qos_class(&PodResources::of(&json!("not a spec"))), "BestEffort");
    }
}
