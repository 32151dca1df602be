//! The core group (`pkg/apis/core/validation`): pods and pod templates, replication
//! controllers, services, config maps, secrets, persistent volume claims.

use std::collections::BTreeSet;

use kapi_api::api::core::v1 as api;
use kapi_apimachinery::{IntOrString, Quantity};
use serde_json::Value;

use super::{
    FIELD_IMMUTABLE, FieldPath, IS_NEGATIVE, child, dns_label, dns_subdomain, index, items, json_value, key, label_map, non_negative_int,
    one_of_str, port_name_errors, port_num_errors, str_of,
};
use crate::status::{BadValue, FieldError};

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

// ---------------------------------------------------------------------------------------------
// Pods

pub fn pod(pod: &api::Pod) -> Vec<FieldError> {
    let mut errs = Vec::new();
    pod_spec(pod.spec.as_ref().unwrap_or(&api::PodSpec::default()), &FieldPath::Root("spec"), &mut errs);
    errs
}

/// The pod spec fields an update may change (upstream's `updatablePodSpecFields`).
const POD_UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

pub fn pod_update(old: &api::Pod, new: &api::Pod) -> Vec<FieldError> {
    let mut errs = pod(new);
    // Everything but the updatable fields must be as before: `new`'s spec with those fields
    // as `old` has them compares equal to `old`'s (as Go values, so as their JSON forms).
    let no_spec = api::PodSpec::default();
    let old_spec = old.spec.as_ref().unwrap_or(&no_spec);
    let mut masked = api::Pod { spec: Some(new.spec.clone().unwrap_or_default()), ..Default::default() };
    let spec = masked.spec.get_or_insert_with(Default::default);
    for (containers, before) in [(&mut spec.containers, &old_spec.containers), (&mut spec.init_containers, &old_spec.init_containers)] {
        for (i, container) in containers.iter_mut().enumerate() {
            container.image = before.get(i).and_then(|c| c.image.clone());
        }
    }
    spec.active_deadline_seconds = old_spec.active_deadline_seconds;
    spec.termination_grace_period_seconds = old_spec.termination_grace_period_seconds;
    if only_added(&old_spec.tolerations, &spec.tolerations) {
        spec.tolerations.clone_from(&old_spec.tolerations);
    }
    if !kapi_apimachinery::Object::spec_equals(&masked, old) {
        errs.push(FieldError::forbidden("spec", format!("pod updates may not change fields other than {POD_UPDATABLE}")));
    }
    errs
}

/// Whether `new` keeps every toleration of `old` (compared as their JSON forms, as Go's
/// `reflect.DeepEqual` of the values compares them).
fn only_added(old: &[api::Toleration], new: &[api::Toleration]) -> bool {
    if old == new {
        return true;
    }
    let as_json = |tolerations: &[api::Toleration]| -> Vec<Value> {
        tolerations.iter().map(|t| serde_json::to_value(t).unwrap_or_default()).collect()
    };
    let (old, new) = (as_json(old), as_json(new));
    old.iter().all(|t| new.contains(t))
}

/// The pods `ValidatePodResize` refuses whatever the change: with pod-level resources, static
/// (mirror) pods, Windows pods.
pub fn pod_resize_refusal(old: &Value, new: &Value) -> Option<FieldError> {
    let has_pod_resources = |pod: &Value| {
        let r = &pod["spec"]["resources"];
        ["requests", "limits"].iter().any(|part| r[*part].as_object().is_some_and(|m| !m.is_empty()))
    };
    if has_pod_resources(old) || has_pod_resources(new) {
        return Some(FieldError::forbidden("", "pods with pod-level resources cannot be resized"));
    }
    if old["metadata"]["annotations"].get("kubernetes.io/config.mirror").is_some() {
        return Some(FieldError::forbidden("", "static pods cannot be resized"));
    }
    if old["spec"]["os"]["name"] == "windows" {
        return Some(FieldError::forbidden("", "windows pods cannot be resized"));
    }
    None
}

/// The resize rules of `ValidatePodResize`: the QoS class stays, the node supports resizing,
/// requests and limits are not removed, memory limits only shrink with a restart, and nothing
/// but CPU and memory of regular and sidecar containers changes.
pub fn pod_resize(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    use crate::registry::defaults::core::{PodResources, pod_qos_class};
    let qos_of = |pod: &Value| pod_qos_class(&PodResources::of(&pod["spec"]));
    let old_qos = Some(str_of(&old["status"]["qosClass"])).filter(|q| !q.is_empty()).unwrap_or_else(|| qos_of(old));
    if old_qos != qos_of(new) {
        errs.push(FieldError::invalid("spec", str_of(&new["status"]["qosClass"]), "Pod QOS Class may not change as a result of resizing"));
    }
    // Until every node reports container resources, a running container without them is on a
    // node that cannot resize (`isPodResizeRequestSupported`).
    let running = items(&old["status"]["containerStatuses"]).iter().find(|c| c["state"]["running"].is_object());
    if running.is_some_and(|c| c["resources"].is_null()) {
        errs.push(FieldError::forbidden("spec", "Pod running on node without support for resize"));
    }
    let (old_spec, new_spec) = (&old["spec"], &new["spec"]);
    let same_shape = ["containers", "initContainers"].iter().all(|list| {
        let (o, n) = (items(&old_spec[*list]), items(&new_spec[*list]));
        o.len() == n.len() && o.iter().zip(n).all(|(o, n)| o["name"] == n["name"])
    });
    if !same_shape {
        errs.push(FieldError::forbidden("spec", CPU_MEMORY_ONLY));
        return errs;
    }
    let is_sidecar = |c: &Value| c["restartPolicy"] == "Always";
    for (list, path) in [("initContainers", "spec.initContainers"), ("containers", "spec.containers")] {
        for (i, (was, is)) in items(&old_spec[list]).iter().zip(items(&new_spec[list])).enumerate() {
            if list == "containers" || is_sidecar(was) {
                container_resize(&is["resources"], &was["resources"], &is["resizePolicy"], &child(&index(path, i), "resources"), &mut errs);
            }
        }
    }
    let mut other_changes = false;
    for (list, message) in
        [("containers", CPU_MEMORY_ONLY), ("initContainers", "only cpu and memory resources for sidecar containers are mutable")]
    {
        for (was, is) in items(&old_spec[list]).iter().zip(items(&new_spec[list])) {
            let resizable = list == "containers" || is_sidecar(was);
            let compared = if resizable { with_old_cpu_memory(is, was) } else { is.clone() };
            if !same_container(&compared, was) {
                let message = if resizable { message } else { "resources for non-sidecar init containers are immutable" };
                errs.push(FieldError::forbidden("spec", message));
                other_changes = true;
            }
        }
    }
    if !other_changes && errs.is_empty() {
        let mut rest = new_spec.clone();
        let mut old_rest = old_spec.clone();
        for spec in [&mut rest, &mut old_rest] {
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("containers");
                spec.remove("initContainers");
            }
        }
        if rest != old_rest {
            errs.push(FieldError::forbidden("spec", CPU_MEMORY_ONLY));
        }
    }
    errs
}

const CPU_MEMORY_ONLY: &str = "only cpu and memory resources are mutable";

/// `validateContainerResize`: requests and limits are not removed, and without a restart policy
/// for memory a memory limit is neither lowered nor added.
fn container_resize(new: &Value, old: &Value, policies: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let removed = |part: &str| old[part].as_object().is_some_and(|o| o.keys().any(|k| new[part].get(k).is_none()));
    if removed("requests") {
        errs.push(FieldError::forbidden(child(path, "requests"), "resource requests cannot be removed"));
    }
    if removed("limits") {
        errs.push(FieldError::forbidden(child(path, "limits"), "resource limits cannot be removed"));
    }
    let memory_policy = items(policies).iter().find(|p| p["resourceName"] == "memory").map_or("", |p| str_of(&p["restartPolicy"]));
    if matches!(memory_policy, "" | "NotRequired") {
        let limit = |r: &Value| r["limits"]["memory"].as_str().and_then(|q| Quantity::parse(q).ok());
        let path = key(&child(path, "limits"), "memory");
        match (limit(new), limit(old)) {
            (Some(is), Some(was)) if is < was => {
                errs.push(FieldError::forbidden(path, "memory limits cannot be decreased unless resizePolicy is RestartContainer"));
            }
            (Some(_), None) => {
                errs.push(FieldError::forbidden(path, "memory limits cannot be added unless resizePolicy is RestartContainer"))
            }
            _ => {}
        }
    }
}

/// `container` with the CPU and memory of `old`'s requests and limits (upstream's
/// `dropCPUMemoryResourcesFromContainer`): what is left to compare once a resize is taken out.
fn with_old_cpu_memory(container: &Value, old: &Value) -> Value {
    let mut out = container.clone();
    for part in ["requests", "limits"] {
        let Some(old_list) = old["resources"][part].as_object() else {
            if let Some(r) = out["resources"].as_object_mut() {
                r.remove(part);
            }
            continue;
        };
        let mut list = out["resources"][part].as_object().cloned().unwrap_or_default();
        for name in ["cpu", "memory"] {
            match old_list.get(name) {
                Some(q) => list.insert(name.to_owned(), q.clone()),
                None => list.remove(name),
            };
        }
        out["resources"][part] = Value::Object(list);
    }
    out
}

/// Go's equality of two containers as stored: empty lists and maps are as absent.
fn same_container(a: &Value, b: &Value) -> bool {
    fn normal(v: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter(|(_, v)| !matches!(v, Value::Null) && !matches!(v, Value::Array(a) if a.is_empty()))
                    .filter(|(_, v)| !matches!(v, Value::Object(m) if m.is_empty()))
                    .map(|(k, v)| (k.clone(), normal(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(normal).collect()),
            other => other.clone(),
        }
    }
    normal(a) == normal(b)
}

/// `ValidatePodEphemeralContainersUpdate`: ephemeral containers are only ever added, each a
/// container without ports, probes, lifecycle or resources, targeting a container the pod has.
pub fn pod_ephemeral_containers_update(old: &Value, new: &Value, typed: &api::Pod) -> Vec<FieldError> {
    const PATH: &str = "spec.ephemeralContainers";
    let mut errs = Vec::new();
    let no_spec = api::PodSpec::default();
    let typed_spec = typed.spec.as_ref().unwrap_or(&no_spec);
    let volumes: BTreeSet<&str> = typed_spec.volumes.iter().map(|v| v.name.as_str()).collect();
    let mut names: BTreeSet<&str> = typed_spec.init_containers.iter().chain(&typed_spec.containers).map(|c| c.name.as_str()).collect();
    let targets = names.clone();
    let path = FieldPath::Root(PATH);
    containers(typed_spec.ephemeral_containers.iter().map(ContainerFields::of_ephemeral), &path, &volumes, &mut names, &mut errs);
    let spec = &new["spec"];
    let is_set = |v: &Value| match v {
        Value::Null => false,
        Value::Object(o) => !o.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    };
    let new_containers = items(&spec["ephemeralContainers"]);
    for (i, c) in new_containers.iter().enumerate() {
        let p = index(PATH, i);
        for field in ["ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "resources", "resizePolicy", "restartPolicy"]
        {
            if is_set(&c[field]) {
                errs.push(FieldError::forbidden(child(&p, field), "cannot be set for an Ephemeral Container"));
            }
        }
        if let Some(target) = c["targetContainerName"].as_str().filter(|t| !t.is_empty())
            && !targets.contains(target)
        {
            errs.push(FieldError::not_found(child(&p, "targetContainerName"), target));
        }
    }
    for was in items(&old["spec"]["ephemeralContainers"]) {
        let name = str_of(&was["name"]);
        match new_containers.iter().find(|c| str_of(&c["name"]) == name) {
            None => errs.push(FieldError::forbidden(PATH, format!("existing ephemeral containers {name:?} may not be removed\n"))),
            Some(is) if is != was => {
                errs.push(FieldError::forbidden(PATH, format!("existing ephemeral containers {name:?} may not be changed\n")));
            }
            Some(_) => {}
        }
    }
    errs
}

/// `ValidatePodSpec` (the parts kapi checks) at `path`.
pub(super) fn pod_spec(spec: &api::PodSpec, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let volumes = volumes(&spec.volumes, &path.child("volumes"), errs);
    let mut names = BTreeSet::new();
    let init_containers = spec.init_containers.iter().map(ContainerFields::of_container);
    containers(init_containers, &path.child("initContainers"), &volumes, &mut names, errs);
    if spec.containers.is_empty() {
        errs.push(FieldError::required(path.child("containers"), ""));
    }
    containers(spec.containers.iter().map(ContainerFields::of_container), &path.child("containers"), &volumes, &mut names, errs);
    one_of_str(spec.restart_policy.as_deref(), &path.child("restartPolicy"), RESTART_POLICIES, errs);
    one_of_str(spec.dns_policy.as_deref(), &path.child("dnsPolicy"), DNS_POLICIES, errs);
    label_map(&spec.node_selector, &path.child("nodeSelector"), errs);
    tolerations(&spec.tolerations, &path.child("tolerations"), errs);
    if let Some(sa) = spec.service_account_name.as_deref().filter(|s| !s.is_empty()) {
        dns_subdomain(sa, &path.child("serviceAccountName"), errs);
    }
    non_negative_int(spec.termination_grace_period_seconds, &path.child("terminationGracePeriodSeconds"), errs);
    if let Some(n) = spec.active_deadline_seconds.filter(|n| *n <= 0) {
        errs.push(FieldError::invalid(path.child("activeDeadlineSeconds"), n, "must be between 1 and 2147483647, inclusive"));
    }
}

/// Volume names: DNS labels, unique. Returns the names.
fn volumes<'a>(volumes: &'a [api::Volume], path: &FieldPath<'_>, errs: &mut Vec<FieldError>) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for (i, vol) in volumes.iter().enumerate() {
        let item = path.index(i);
        let p = item.child("name");
        let before = errs.len();
        dns_label(&vol.name, &p, errs);
        if errs.len() == before && !names.insert(vol.name.as_str()) {
            errs.push(FieldError::duplicate(p, vol.name.as_str()));
        }
    }
    names
}

/// The fields a container and an ephemeral container share (upstream's
/// `EphemeralContainerCommon`) that validation reads.
struct ContainerFields<'a> {
    name: &'a str,
    image: Option<&'a str>,
    image_pull_policy: Option<&'a str>,
    ports: &'a [api::ContainerPort],
    env: &'a [api::EnvVar],
    volume_mounts: &'a [api::VolumeMount],
    probes: [(&'static str, Option<&'a api::Probe>); 3],
    resources: Option<&'a api::ResourceRequirements>,
    termination_message_policy: Option<&'a str>,
}

/// A [`ContainerFields`] of either type, whose fields have the same names.
macro_rules! container_fields {
    ($c:expr) => {
        ContainerFields {
            name: &$c.name,
            image: $c.image.as_deref(),
            image_pull_policy: $c.image_pull_policy.as_deref(),
            ports: &$c.ports,
            env: &$c.env,
            volume_mounts: &$c.volume_mounts,
            probes: [
                ("livenessProbe", $c.liveness_probe.as_ref()),
                ("readinessProbe", $c.readiness_probe.as_ref()),
                ("startupProbe", $c.startup_probe.as_ref()),
            ],
            resources: $c.resources.as_ref(),
            termination_message_policy: $c.termination_message_policy.as_deref(),
        }
    };
}

impl<'a> ContainerFields<'a> {
    fn of_container(c: &'a api::Container) -> Self {
        container_fields!(c)
    }

    fn of_ephemeral(c: &'a api::EphemeralContainer) -> Self {
        container_fields!(c)
    }
}

fn containers<'a>(
    list: impl Iterator<Item = ContainerFields<'a>>,
    path: &FieldPath<'_>,
    volumes: &BTreeSet<&str>,
    names: &mut BTreeSet<&'a str>,
    errs: &mut Vec<FieldError>,
) {
    for (i, c) in list.enumerate() {
        let p = path.index(i);
        let before = errs.len();
        dns_label(c.name, &p.child("name"), errs);
        if errs.len() == before && !names.insert(c.name) {
            errs.push(FieldError::duplicate(p.child("name"), c.name));
        }
        let image = c.image.unwrap_or_default();
        if image.is_empty() {
            errs.push(FieldError::required(p.child("image"), ""));
        } else if image.trim() != image {
            errs.push(FieldError::invalid(p.child("image"), image, "must not have leading or trailing whitespace"));
        }
        one_of_str(c.image_pull_policy, &p.child("imagePullPolicy"), PULL_POLICIES, errs);
        container_ports(c.ports, &p.child("ports"), errs);
        env(c.env, &p.child("env"), errs);
        volume_mounts(c.volume_mounts, &p.child("volumeMounts"), volumes, errs);
        for (field, probe) in c.probes {
            if let Some(probe) = probe {
                self::probe(probe, &p.child(field), errs);
            }
        }
        let liveness_probe = c.probes[0].1;
        if let Some(n) = liveness_probe.and_then(|probe| probe.success_threshold).filter(|n| *n != 1) {
            errs.push(FieldError::invalid(p.child("livenessProbe.successThreshold"), n, "must be 1"));
        }
        if let Some(resources) = c.resources {
            self::resources(resources, &p.child("resources"), errs);
        }
        one_of_str(c.termination_message_policy, &p.child("terminationMessagePolicy"), &["File", "FallbackToLogsOnError"], errs);
    }
}

/// `validateEnv`: names (printable ASCII but `=`) and one source for `valueFrom`.
fn env(vars: &[api::EnvVar], path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    for (i, var) in vars.iter().enumerate() {
        let p = path.index(i);
        let name = var.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if !name.bytes().all(|c| (0x20..0x7f).contains(&c) && c != b'=') {
            errs.push(FieldError::invalid(
                p.child("name"),
                name,
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        let Some(from) = &var.value_from else { continue };
        let sources = [
            from.field_ref.is_some(),
            from.resource_field_ref.is_some(),
            from.config_map_key_ref.is_some(),
            from.secret_key_ref.is_some(),
            from.file_key_ref.is_some(),
        ]
        .iter()
        .filter(|set| **set)
        .count();
        let fp = p.child("valueFrom");
        if sources == 0 {
            errs.push(FieldError::invalid(
                fp,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !var.value.as_deref().unwrap_or_default().is_empty() {
            errs.push(FieldError::invalid(fp, "", "may not be specified when `value` is not empty"));
        } else if sources > 1 {
            errs.push(FieldError::invalid(fp, "", "may not have more than one field specified at a time"));
        }
    }
}

/// `validateProbe`: one handler with a valid port, non-negative timings.
fn probe(probe: &api::Probe, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let handlers = [probe.exec.is_some(), probe.http_get.is_some(), probe.tcp_socket.is_some(), probe.grpc.is_some()]
        .iter()
        .filter(|set| **set)
        .count();
    if handlers == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    } else if handlers > 1 {
        errs.push(FieldError::forbidden(path, "may not specify more than 1 handler type"));
    }
    if let Some(http_get) = &probe.http_get {
        int_or_string_port(&http_get.port, &path.child("httpGet.port"), errs);
    }
    if let Some(tcp_socket) = &probe.tcp_socket {
        int_or_string_port(&tcp_socket.port, &path.child("tcpSocket.port"), errs);
    }
    if let Some(grpc) = &probe.grpc {
        port_number(grpc.port.into(), &path.child("grpc.port"), errs);
    }
    let scheme = probe.http_get.as_ref().and_then(|h| h.scheme.as_deref());
    if let Some(scheme) = scheme.filter(|s| !s.is_empty() && !["HTTP", "HTTPS"].contains(s)) {
        errs.push(FieldError::not_supported(path.child("httpGet.scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    let timings = [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ];
    for (field, value) in timings {
        non_negative_int(value.map(i64::from), &path.child(field), errs);
    }
    non_negative_int(probe.termination_grace_period_seconds, &path.child("terminationGracePeriodSeconds"), errs);
}

/// `ValidatePortNumOrName` of a typed port.
fn int_or_string_port(port: &IntOrString, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    match port {
        IntOrString::Int(n) => port_number((*n).into(), path, errs),
        IntOrString::String(s) => port_name(s, path, errs),
    }
}

/// `IsValidPortNum` as field errors on `path`.
fn port_number(n: i64, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    for m in port_num_errors(n) {
        errs.push(FieldError::invalid(path.to_string(), n, m));
    }
}

/// `IsValidPortName` as field errors on `path`.
fn port_name(name: &str, path: &(impl std::fmt::Display + ?Sized), errs: &mut Vec<FieldError>) {
    for m in port_name_errors(name) {
        errs.push(FieldError::invalid(path.to_string(), name, m));
    }
}

/// `validateTolerations`.
fn tolerations(list: &[api::Toleration], path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    for (i, t) in list.iter().enumerate() {
        let p = path.index(i);
        let key = t.key.as_deref().unwrap_or_default();
        if !key.is_empty() {
            for m in crate::selectors::label_key_errors(key) {
                errs.push(FieldError::invalid(p.child("key"), key, m));
            }
        }
        let operator = t.operator.as_deref().unwrap_or_default();
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                p.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = t.effect.as_deref().unwrap_or_default();
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(p.child("effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
        }
        let value = t.value.as_deref().unwrap_or_default();
        match operator {
            "" | "Equal" => {
                for m in crate::selectors::label_value_errors(value) {
                    errs.push(FieldError::invalid(p.child("value"), value, m));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(p.child("operator"), json_value(t), "value must be empty when `operator` is 'Exists'"));
                }
            }
            other => errs.push(FieldError::not_supported(p.child("operator"), other, &["Equal", "Exists"])),
        }
        one_of_str(t.effect.as_deref(), &p.child("effect"), &["NoSchedule", "PreferNoSchedule", "NoExecute"], errs);
    }
}

fn container_ports(ports: &[api::ContainerPort], path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            port_name(name, &p.child("name"), errs);
            if !names.insert(name) {
                errs.push(FieldError::duplicate(p.child("name"), name));
            }
        }
        match port.container_port {
            0 => errs.push(FieldError::required(p.child("containerPort"), "")),
            n => port_number(n.into(), &p.child("containerPort"), errs),
        }
        if let Some(n) = port.host_port.filter(|n| *n != 0) {
            port_number(n.into(), &p.child("hostPort"), errs);
        }
        one_of_str(port.protocol.as_deref(), &p.child("protocol"), PROTOCOLS, errs);
    }
}

fn volume_mounts(mounts: &[api::VolumeMount], path: &FieldPath<'_>, volumes: &BTreeSet<&str>, errs: &mut Vec<FieldError>) {
    let mut paths = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        let name = m.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if !volumes.contains(name) {
            errs.push(FieldError::not_found(p.child("name"), name));
        }
        let mount_path = m.mount_path.as_str();
        if mount_path.is_empty() {
            errs.push(FieldError::required(p.child("mountPath"), ""));
        } else if !paths.insert(mount_path) {
            errs.push(FieldError::invalid(p.child("mountPath"), mount_path, "must be unique"));
        }
    }
}

/// `ValidateResourceRequirements`: quantities non-negative, requests at most the limits.
fn resources(res: &api::ResourceRequirements, path: &FieldPath<'_>, errs: &mut Vec<FieldError>) {
    for (section, map) in [("limits", &res.limits), ("requests", &res.requests)] {
        for (name, q) in map {
            let section_path = path.child(section);
            let p = section_path.key(name);
            if q.signum() == std::cmp::Ordering::Less {
                errs.push(FieldError::invalid(p, q.to_string(), IS_NEGATIVE));
            }
            if section == "requests"
                && let Some(limit) = res.limits.get(name)
                && q > limit
            {
                errs.push(FieldError::invalid(p, q.to_string(), format!("must be less than or equal to {name} limit of {limit}")));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pod templates and replication controllers

/// `ValidatePodTemplateSpec` at `path` (labels and the pod spec). Upstream reports the labels
/// at `<path>.labels`, without `metadata`.
/// `template` is the typed form of the workload's template (none when it has none).
pub(super) fn pod_template_spec(template: Option<&api::PodTemplateSpec>, path: &str, errs: &mut Vec<FieldError>) {
    let empty = api::PodTemplateSpec::default();
    let template = template.unwrap_or(&empty);
    let path = FieldPath::Root(path);
    if let Some(meta) = &template.metadata {
        label_map(&meta.labels, &path.child("labels"), errs);
    }
    pod_spec(template.spec.as_ref().unwrap_or(&api::PodSpec::default()), &path.child("spec"), errs);
}

pub fn pod_template(t: &api::PodTemplate) -> Vec<FieldError> {
    let mut errs = Vec::new();
    pod_template_spec(t.template.as_ref(), "template", &mut errs);
    errs
}

pub fn replication_controller(rc: &api::ReplicationController) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = rc.spec.as_ref();
    non_negative_int(spec.and_then(|s| s.replicas).map(i64::from), "spec.replicas", &mut errs);
    non_negative_int(spec.and_then(|s| s.min_ready_seconds).map(i64::from), "spec.minReadySeconds", &mut errs);
    static NO_SELECTOR: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let selector = spec.map_or(&NO_SELECTOR, |s| &s.selector);
    if selector.is_empty() {
        errs.push(FieldError::required("spec.selector", ""));
    }
    label_map(selector, "spec.selector", &mut errs);
    let Some(template) = spec.and_then(|s| s.template.as_ref()) else {
        errs.push(FieldError::required("spec.template", ""));
        return errs;
    };
    let template_labels = super::apps::template_labels(Some(template));
    if !selector.is_empty() && !selector.iter().all(|(k, v)| template_labels.get(k) == Some(v)) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            super::apps::labels_value(template_labels),
            "selector does not match template labels",
        ));
    }
    pod_template_spec(Some(template), "spec.template", &mut errs);
    template_restart_always(Some(template), "spec.template", "ReplicationController", &mut errs);
    errs
}

/// A controller's pods always restart and have no deadline (`ValidatePodTemplateSpecForRC`
/// and the apps equivalents).
pub(super) fn template_restart_always(template: Option<&api::PodTemplateSpec>, path: &str, kind: &str, errs: &mut Vec<FieldError>) {
    let spec = template.and_then(|t| t.spec.as_ref());
    // An empty policy is Go's zero value, which is not written: none.
    if let Some(policy) = spec.and_then(|s| s.restart_policy.as_deref()).filter(|p| !p.is_empty() && *p != "Always") {
        errs.push(FieldError::not_supported(child(path, "spec.restartPolicy"), policy, &["Always"]));
    }
    if spec.is_some_and(|s| s.active_deadline_seconds.is_some()) {
        errs.push(FieldError::forbidden(
            child(path, "spec.activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Services

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

pub fn service(svc: &api::Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let no_spec;
    let spec = match &svc.spec {
        Some(spec) => spec,
        None => {
            no_spec = api::ServiceSpec::default();
            &no_spec
        }
    };
    let kind = spec.r#type.as_deref().filter(|t| !t.is_empty()).unwrap_or("ClusterIP");
    one_of_str(spec.r#type.as_deref(), "spec.type", SERVICE_TYPES, &mut errs);
    let headless = spec.cluster_ip.as_deref() == Some("None");
    let ports = &spec.ports;
    if kind == "ExternalName" {
        let name = spec.external_name.as_deref().unwrap_or_default();
        let trimmed = name.strip_suffix('.').unwrap_or(name);
        if trimmed.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            dns_subdomain(trimmed, "spec.externalName", &mut errs);
        }
        // `ValidateServiceClusterIPsRelatedFields` (a `clusterIP` alone counts: upstream has
        // copied it into `clusterIPs` before validating).
        if !spec.cluster_ip.as_deref().unwrap_or_default().is_empty() || !spec.cluster_ips.is_empty() {
            errs.push(FieldError::forbidden("spec.clusterIPs", "may not be set for ExternalName services"));
        }
        if !spec.ip_families.is_empty() {
            errs.push(FieldError::forbidden("spec.ipFamilies", "may not be set for ExternalName services"));
        }
        if !spec.ip_family_policy.as_deref().unwrap_or_default().is_empty() {
            errs.push(FieldError::forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"));
        }
    } else if ports.is_empty() && !headless {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let ports_path = FieldPath::Root("spec.ports");
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = ports_path.index(i);
        let name = port.name.as_deref().unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                errs.push(FieldError::required(p.child("name"), ""));
            }
        } else {
            dns_label(name, &p.child("name"), &mut errs);
            if !names.insert(name) {
                errs.push(FieldError::duplicate(p.child("name"), name));
            }
        }
        one_of_str(port.protocol.as_deref(), &p.child("protocol"), PROTOCOLS, &mut errs);
        port_number(port.port.into(), &p.child("port"), &mut errs);
        // Go's `TargetPort` is a value: absent, it is the integer 0 (defaulting sets it to the
        // port first).
        int_or_string_port(port.target_port.as_ref().unwrap_or(&IntOrString::Int(0)), &p.child("targetPort"), &mut errs);
        if let Some(node_port) = port.node_port.filter(|n| *n != 0) {
            if kind == "ClusterIP" {
                errs.push(FieldError::forbidden(p.child("nodePort"), "may not be used when `type` is 'ClusterIP'"));
            } else {
                port_number(node_port.into(), &p.child("nodePort"), &mut errs);
            }
        }
    }
    // Two ports with the same number and protocol; the value is upstream's `%#v` of the key it
    // compares.
    let mut numbers = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let (protocol, number) = (port.protocol.as_deref().unwrap_or_default(), port.port);
        if !numbers.insert((protocol, number)) {
            let key = format!(
                "core.ServicePort{{Name:\"\", Protocol:{protocol:?}, AppProtocol:(*string)(nil), Port:{number}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}"
            );
            errs.push(FieldError::duplicate(ports_path.index(i), BadValue::Raw(key)));
        }
    }
    one_of_str(spec.session_affinity.as_deref(), "spec.sessionAffinity", &["ClientIP", "None"], &mut errs);
    if let Some(policy) = spec.external_traffic_policy.as_deref().filter(|p| !p.is_empty()) {
        if matches!(kind, "ClusterIP" | "ExternalName") {
            errs.push(FieldError::invalid("spec.externalTrafficPolicy", policy, "may only be set for externally-accessible services"));
        } else {
            one_of_str(Some(policy), "spec.externalTrafficPolicy", &["Cluster", "Local"], &mut errs);
        }
    }
    one_of_str(spec.internal_traffic_policy.as_deref(), "spec.internalTrafficPolicy", &["Cluster", "Local"], &mut errs);
    one_of_str(spec.ip_family_policy.as_deref(), "spec.ipFamilyPolicy", &["SingleStack", "PreferDualStack", "RequireDualStack"], &mut errs);
    label_map(&spec.selector, "spec.selector", &mut errs);
    errs
}

pub fn service_update(_old: &api::Service, new: &api::Service) -> Vec<FieldError> {
    service(new)
}

// ---------------------------------------------------------------------------------------------
// Config maps and secrets

/// The most bytes a config map's or a secret's data may take (`MaxConfigMapSize`,
/// `MaxSecretSize`).
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// `IsConfigMapKey`.
pub(super) fn config_key_errors(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > crate::selectors::DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(crate::selectors::max_len_error(crate::selectors::DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if k.is_empty() || !k.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_')) {
        errs.push(crate::selectors::regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if k == "." {
        errs.push("must not be '.'".to_owned());
    } else if k == ".." {
        errs.push("must not be '..'".to_owned());
    } else if k.starts_with("..") {
        errs.push("must not start with '..'".to_owned());
    }
    errs
}

pub fn config_map(cm: &api::ConfigMap) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let data = FieldPath::Root("data");
    let mut total = 0;
    for (k, v) in &cm.data {
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(data.key(k), k.as_str(), m));
        }
        total += v.len();
    }
    let binary_data = FieldPath::Root("binaryData");
    for (k, bytes) in &cm.binary_data {
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(binary_data.key(k), k.as_str(), m));
        }
        if cm.data.contains_key(k) {
            errs.push(FieldError::invalid(binary_data.key(k), k.as_str(), "duplicate of key present in data"));
        }
        // The typed form holds the bytes the base64 text decodes to.
        total += bytes.len();
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("", MAX_DATA_SIZE as i64));
    }
    errs
}

/// The message for changing what `immutable: true` froze.
const IMMUTABLE_SET: &str = "field is immutable when `immutable` is set";

/// Whether the old object froze its data with `immutable: true`, which the new one must keep
/// (the caller then refuses any change to the data).
fn frozen(old_immutable: Option<bool>, new_immutable: Option<bool>, errs: &mut Vec<FieldError>) -> bool {
    if old_immutable != Some(true) {
        return false;
    }
    if new_immutable != Some(true) {
        errs.push(FieldError::forbidden("immutable", IMMUTABLE_SET));
    }
    true
}

pub fn config_map_update(old: &api::ConfigMap, new: &api::ConfigMap) -> Vec<FieldError> {
    let mut errs = config_map(new);
    if frozen(old.immutable, new.immutable, &mut errs) {
        if old.data != new.data {
            errs.push(FieldError::forbidden("data", IMMUTABLE_SET));
        }
        if old.binary_data != new.binary_data {
            errs.push(FieldError::forbidden("binaryData", IMMUTABLE_SET));
        }
    }
    errs
}

/// A secret's type; absent or empty is `Opaque`, as defaulting makes it.
fn secret_type(secret: &api::Secret) -> &str {
    secret.r#type.as_deref().filter(|t| !t.is_empty()).unwrap_or("Opaque")
}

pub fn secret(secret: &api::Secret) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let data = &secret.data;
    let data_path = FieldPath::Root("data");
    let mut total = 0;
    // The typed form holds the bytes the base64 text decodes to.
    for (k, bytes) in data {
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(data_path.key(k), k.as_str(), m));
        }
        total += bytes.len();
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("data", MAX_DATA_SIZE as i64));
    }
    let has = |k: &str| data.contains_key(k);
    match secret_type(secret) {
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            let annotations = secret.metadata.as_ref().map(|meta| &meta.annotations);
            if annotations.and_then(|a| a.get(annotation)).is_none_or(|name| name.is_empty()) {
                errs.push(FieldError::required(key("metadata.annotations", annotation), ""));
            }
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let k = if t == "kubernetes.io/dockercfg" { ".dockercfg" } else { ".dockerconfigjson" };
            match data.get(k) {
                None => errs.push(FieldError::required(data_path.key(k), "")),
                Some(bytes) => {
                    if let Err(e) = serde_json::from_slice::<serde_json::Map<String, Value>>(bytes) {
                        errs.push(FieldError::invalid(data_path.key(k), "<secret contents redacted>", e.to_string()));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required(data_path.key("username"), ""));
            errs.push(FieldError::required(data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            errs.push(FieldError::required(data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.push(FieldError::required(data_path.key(k), ""));
                }
            }
        }
        _ => {}
    }
    errs
}

pub fn secret_update(old: &api::Secret, new: &api::Secret) -> Vec<FieldError> {
    let mut errs = secret(new);
    let new_type = secret_type(new);
    if new_type != secret_type(old) {
        errs.push(FieldError::invalid("type", new_type, FIELD_IMMUTABLE));
    }
    if frozen(old.immutable, new.immutable, &mut errs) && old.data != new.data {
        errs.push(FieldError::forbidden("data", IMMUTABLE_SET));
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Persistent volume claims

const ACCESS_MODES: &[&str] = &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];

pub fn persistent_volume_claim(pvc: &api::PersistentVolumeClaim) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = pvc.spec.as_ref();
    let modes = spec.map_or(&[][..], |s| &s.access_modes);
    if modes.is_empty() {
        errs.push(FieldError::required("spec.accessModes", "at least 1 access mode is required"));
    }
    for mode in modes {
        if !ACCESS_MODES.contains(&mode.as_str()) {
            errs.push(FieldError::not_supported("spec.accessModes", mode.as_str(), ACCESS_MODES));
        }
    }
    match spec.and_then(|s| s.resources.as_ref()).and_then(|r| r.requests.get("storage")) {
        None => errs.push(FieldError::required("spec.resources[requests]", "")),
        Some(q) => {
            if q.signum() != std::cmp::Ordering::Greater {
                errs.push(FieldError::invalid("spec.resources[requests][storage]", q.to_string(), "must be greater than zero"));
            }
        }
    }
    one_of_str(spec.and_then(|s| s.volume_mode.as_deref()), "spec.volumeMode", &["Block", "Filesystem"], &mut errs);
    errs
}

pub fn persistent_volume_claim_update(old: &api::PersistentVolumeClaim, new: &api::PersistentVolumeClaim) -> Vec<FieldError> {
    let mut errs = persistent_volume_claim(new);
    let no_spec = api::PersistentVolumeClaimSpec::default();
    let (old_spec, new_spec) = (old.spec.as_ref().unwrap_or(&no_spec), new.spec.as_ref().unwrap_or(&no_spec));
    // Binding sets `volumeName` once.
    let binding = old_spec.volume_name.as_deref().unwrap_or_default().is_empty();
    if !same_claim_spec_but_updatable(old_spec, new_spec, !binding) {
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    errs
}

/// Whether two claim specs agree on all but what an update may change: the requests, the
/// volume attributes class, and (unless `compare_volume_name`) the volume name. Every field is
/// named, so that a field the type gains is compared too.
fn same_claim_spec_but_updatable(
    old: &api::PersistentVolumeClaimSpec,
    new: &api::PersistentVolumeClaimSpec,
    compare_volume_name: bool,
) -> bool {
    let api::PersistentVolumeClaimSpec {
        access_modes,
        selector,
        resources,
        volume_name,
        storage_class_name,
        volume_mode,
        data_source,
        data_source_ref,
        volume_attributes_class_name: _,
    } = old;
    // Go's `VolumeName` and `Resources` are values: absent is empty.
    fn limits(resources: &Option<api::VolumeResourceRequirements>) -> &std::collections::BTreeMap<String, Quantity> {
        static NONE: std::collections::BTreeMap<String, Quantity> = std::collections::BTreeMap::new();
        resources.as_ref().map_or(&NONE, |r| &r.limits)
    }
    *access_modes == new.access_modes
        && *selector == new.selector
        && limits(resources) == limits(&new.resources)
        && (!compare_volume_name || volume_name.as_deref().unwrap_or_default() == new.volume_name.as_deref().unwrap_or_default())
        && *storage_class_name == new.storage_class_name
        && *volume_mode == new.volume_mode
        && *data_source == new.data_source
        && *data_source_ref == new.data_source_ref
}

/// `ValidatePodBinding`: the target is a node, by name.
pub fn pod_binding(binding: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = &binding["target"];
    if let Some(kind) = target["kind"].as_str().filter(|k| !k.is_empty() && *k != "Node") {
        errs.push(FieldError::not_supported("target.kind", kind, &["Node", "<empty>"]));
    }
    if target["name"].as_str().is_none_or(str::is_empty) {
        errs.push(FieldError::required("target.name", ""));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::validation::test_typed as typed;
    use base64::Engine;

    #[test]
    fn a_binding_targets_a_node_by_name() {
        assert!(pod_binding(&json!({"target": {"kind": "Node", "name": "n1"}})).is_empty());
        let errs: Vec<String> = pod_binding(&json!({"target": {"kind": "Pod"}})).iter().map(ToString::to_string).collect();
        assert_eq!(errs, [r#"target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>""#, "target.name: Required value"]);
    }
    use crate::registry::validation::test_messages as messages;

    fn valid_pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                            "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        }})
    }

    #[test]
    fn a_valid_pod_passes() {
        assert_eq!(messages(&pod(&typed(&valid_pod()))), Vec::<String>::new());
    }

    #[test]
    fn pod_rules() {
        let cases: &[(&str, Value, &str)] = &[
            ("/spec/containers", json!([]), "spec.containers: Required value"),
            ("/spec/containers/0/image", json!(""), "spec.containers[0].image: Required value"),
            (
                "/spec/containers/0/name",
                json!("App"),
                "spec.containers[0].name: Invalid value: \"App\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ),
            (
                "/spec/containers/0/ports/0/containerPort",
                json!(70000),
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ),
            (
                "/spec/containers/0/ports/0/protocol",
                json!("HTTP"),
                "spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ),
            (
                "/spec/containers/0/imagePullPolicy",
                json!("Sometimes"),
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            ),
            (
                "/spec/restartPolicy",
                json!("Sometimes"),
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ),
            (
                "/spec/dnsPolicy",
                json!("X"),
                "spec.dnsPolicy: Unsupported value: \"X\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            ),
            ("/spec/containers/0/volumeMounts/0/name", json!("other"), "spec.containers[0].volumeMounts[0].name: Not found: \"other\""),
            (
                "/spec/containers/0/env",
                json!([{"name": "A=B", "value": "x"}]),
                "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
            ),
            (
                "/spec/containers/0/livenessProbe",
                json!({"httpGet": {"port": 0}}),
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                "/spec/containers/0/readinessProbe",
                json!({}),
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
            ),
            (
                "/spec/tolerations",
                json!([{"operator": "Equal", "value": "x"}]),
                "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ),
            (
                // A struct as a bad value is its JSON in the Go type's field order.
                "/spec/tolerations",
                json!([{"effect": "NoExecute", "key": "k", "operator": "Exists", "tolerationSeconds": 5, "value": "v"}]),
                "spec.tolerations[0].operator: Invalid value: {\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"v\",\"effect\":\"NoExecute\",\"tolerationSeconds\":5}: value must be empty when `operator` is 'Exists'",
            ),
            (
                "/spec/containers/0/resources/requests/cpu",
                json!("2"),
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            ),
        ];
        for (pointer, value, want) in cases {
            let mut p = valid_pod();
            let (parent, field) = pointer.rsplit_once('/').unwrap();
            p.pointer_mut(parent).unwrap()[field] = value.clone();
            assert_eq!(messages(&pod(&typed(&p))), vec![want.to_string()], "{pointer}");
        }
        let mut p = valid_pod();
        let first = p["spec"]["containers"][0].clone();
        p["spec"]["containers"].as_array_mut().unwrap().push(first);
        assert_eq!(messages(&pod(&typed(&p))), ["spec.containers[1].name: Duplicate value: \"app\""]);
        p["spec"]["volumes"].as_array_mut().unwrap().push(json!({"name": "data"}));
        assert!(messages(&pod(&typed(&p))).contains(&"spec.volumes[1].name: Duplicate value: \"data\"".to_owned()));
    }

    #[test]
    fn pod_updates_change_only_images() {
        let old = valid_pod();
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        new["spec"]["activeDeadlineSeconds"] = json!(30);
        assert_eq!(messages(&pod_update(&typed(&old), &typed(&new))), Vec::<String>::new());
        // The tolerations may only grow; the stored pod read back from protobuf writes out
        // its zero values.
        new["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}, {"key": "j", "operator": "Equal", "value": ""}]);
        let mut stored = old.clone();
        stored["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists", "value": "", "effect": ""}]);
        assert_eq!(messages(&pod_update(&typed(&stored), &typed(&new))), Vec::<String>::new());
        assert_eq!(messages(&pod_update(&typed(&new), &typed(&stored))).len(), 1, "a toleration removed");
        new["spec"]["restartPolicy"] = json!("Never");
        let errs = pod_update(&typed(&old), &typed(&new));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].to_string().starts_with("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`")
        );
    }

    #[test]
    fn replication_controllers() {
        let rc = json!({"spec": {"replicas": 1, "selector": {"app": "a"}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": valid_pod()["spec"]}}});
        assert!(replication_controller(&typed(&rc)).is_empty());
        let mut bad = rc.clone();
        bad["spec"]["selector"] = json!({"app": "b"});
        bad["spec"]["replicas"] = json!(-1);
        assert_eq!(
            messages(&replication_controller(&typed(&bad))),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"a\"}: selector does not match template labels",
            ]
        );
    }

    #[test]
    fn services() {
        let service = |svc: &Value| service(&typed(svc));
        let svc = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}], "sessionAffinity": "None"}});
        assert!(service(&svc).is_empty());
        assert_eq!(messages(&service(&json!({"spec": {}}))), ["spec.ports: Required value"]);
        assert!(service(&json!({"spec": {"clusterIP": "None"}})).is_empty());
        assert_eq!(
            messages(&service(
                &json!({"spec": {"type": "Magic", "ports": [{"port": 0, "name": "a", "targetPort": 1}, {"port": 80, "name": "a", "nodePort": 30000, "targetPort": 1}], "sessionAffinity": "Sticky"}})
            )),
            [
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[1].name: Duplicate value: \"a\"",
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
            ]
        );
        assert_eq!(
            messages(&service(
                &json!({"spec": {"ports": [{"port": 80, "targetPort": 80}, {"port": 81, "nodePort": 30001, "targetPort": 81}]}})
            )),
            [
                "spec.ports[0].name: Required value",
                "spec.ports[1].name: Required value",
                "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
            ]
        );
        assert_eq!(messages(&service(&json!({"spec": {"type": "ExternalName"}}))), ["spec.externalName: Required value"]);
        assert_eq!(
            messages(&service(&json!({"spec": {"type": "ExternalName", "externalName": "example.com", "clusterIP": "10.0.0.9",
                "ipFamilyPolicy": "SingleStack"}}))),
            [
                "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
                "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
            ]
        );
        assert_eq!(
            messages(&service(&json!({"spec": {"ports": [
                {"name": "a", "port": 80, "protocol": "TCP", "targetPort": 80}, {"name": "b", "port": 80, "protocol": "UDP", "targetPort": 80},
                {"name": "c", "port": 80, "protocol": "TCP", "targetPort": 80}]}}))),
            [
                "spec.ports[2]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}"
            ]
        );
        // Go's target port is a value: left out (defaulting sets it to the port), it is 0.
        assert_eq!(
            messages(&service(&json!({"spec": {"ports": [{"port": 80}]}}))),
            ["spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            messages(&service(&json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "Http", "nodePort": 70000}],
                "externalTrafficPolicy": "Nearby", "internalTrafficPolicy": "Far", "selector": {"app": "a b"}}}))),
            [
                "spec.ports[0].targetPort: Invalid value: \"Http\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.ports[0].nodePort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.externalTrafficPolicy: Unsupported value: \"Nearby\": supported values: \"Cluster\", \"Local\"",
                "spec.internalTrafficPolicy: Unsupported value: \"Far\": supported values: \"Cluster\", \"Local\"",
                "spec.selector: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]
        );
        assert_eq!(
            messages(&service_update(&typed(&svc), &typed(&json!({"spec": {"externalTrafficPolicy": "Local", "clusterIP": "None"}})))),
            ["spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services"]
        );
    }

    #[test]
    fn config_maps_and_secrets() {
        let config_map = |cm: &Value| config_map(&typed(cm));
        let secret = |s: &Value| secret(&typed(s));
        assert!(config_map(&json!({"data": {"a.b": "x", "C_D": "y"}})).is_empty());
        let errs = messages(&config_map(&json!({"data": {"a b": "x", "..x": "y"}, "binaryData": {"..x": "eA=="}})));
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs.iter().any(|e| e.starts_with("data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")));
        assert!(errs.contains(&"binaryData[..x]: Invalid value: \"..x\": duplicate of key present in data".to_owned()));
        let big = "x".repeat(MAX_DATA_SIZE + 1);
        assert_eq!(messages(&config_map(&json!({"data": {"a": big}}))), [": Too long: may not be more than 1048576 bytes"]);
        // Binary data counts as the bytes it decodes to.
        let half = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_DATA_SIZE / 2]);
        assert!(config_map(&json!({"data": {"a": "x".repeat(MAX_DATA_SIZE / 2)}, "binaryData": {"b": half}})).is_empty());
        assert_eq!(
            messages(&config_map(&json!({"data": {"a": "x".repeat(MAX_DATA_SIZE / 2 + 1)}, "binaryData": {"b": half}}))),
            [": Too long: may not be more than 1048576 bytes"]
        );

        let old = json!({"immutable": true, "data": {"a": "1"}});
        assert!(config_map_update(&typed(&old), &typed(&old)).is_empty());
        assert_eq!(
            messages(&config_map_update(&typed(&old), &typed(&json!({"data": {"a": "2"}})))),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set"
            ]
        );
        assert_eq!(
            messages(&config_map_update(
                &typed(&old),
                &typed(&json!({"immutable": true, "data": {"a": "1"}, "binaryData": {"b": "eA=="}}))
            )),
            ["binaryData: Forbidden: field is immutable when `immutable` is set"]
        );

        assert!(secret(&json!({"data": {"a": "eA=="}})).is_empty());
        assert_eq!(
            messages(&secret(&json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}))),
            ["data[tls.key]: Required value"]
        );
        assert_eq!(messages(&secret(&json!({"type": "kubernetes.io/dockerconfigjson"}))), ["data[.dockerconfigjson]: Required value"]);
        assert_eq!(
            messages(&secret(&json!({"type": "kubernetes.io/service-account-token"}))),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert_eq!(
            messages(&secret_update(
                &typed(&json!({"type": "Opaque"})),
                &typed(&json!({"type": "kubernetes.io/basic-auth", "data": {"username": "eA=="}}))
            )),
            ["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
        );
        // The JSON check reads the decoded bytes ("e30=" is `{}`, "W10=" is `[]`).
        assert!(secret(&json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "e30="}})).is_empty());
        assert_eq!(
            messages(&secret(&json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "W10="}}))),
            ["data[.dockercfg]: Invalid value: \"<secret contents redacted>\": invalid type: sequence, expected a map at line 1 column 0"]
        );
        assert_eq!(
            messages(&secret(&json!({"type": "kubernetes.io/basic-auth", "data": {"a b": "eA=="}}))),
            [
                "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                "data[username]: Required value",
                "data[password]: Required value",
            ]
        );
        assert_eq!(messages(&secret(&json!({"type": "kubernetes.io/ssh-auth"}))), ["data[ssh-privatekey]: Required value"]);
        assert_eq!(
            messages(&secret(&json!({"data": {"a": base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_DATA_SIZE + 1])}}))),
            ["data: Too long: may not be more than 1048576 bytes"]
        );
        let frozen = json!({"immutable": true, "data": {"a": "eA=="}});
        assert_eq!(
            messages(&secret_update(&typed(&frozen), &typed(&json!({"immutable": false, "data": {"a": "eQ=="}})))),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set"
            ]
        );
    }

    #[test]
    fn persistent_volume_claims() {
        let claim = |pvc: &Value| persistent_volume_claim(&typed(pvc));
        let update = |old: &Value, new: &Value| persistent_volume_claim_update(&typed(old), &typed(new));
        let pvc = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        assert!(claim(&pvc).is_empty());
        assert_eq!(
            messages(&claim(&json!({"spec": {"accessModes": ["ReadWriteSometimes"]}}))),
            [
                "spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.resources[requests]: Required value",
            ]
        );
        let mut grown = pvc.clone();
        grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(update(&pvc, &grown).is_empty());
        grown["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(update(&pvc, &grown).len(), 1);

        assert_eq!(
            messages(&claim(&json!({"spec": {"resources": {"requests": {"storage": "0"}}, "volumeMode": "Tape"}}))),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[requests][storage]: Invalid value: \"0\": must be greater than zero",
                "spec.volumeMode: Unsupported value: \"Tape\": supported values: \"Block\", \"Filesystem\"",
            ]
        );
        // Binding sets the volume name once; the attributes class may change.
        let mut bound = pvc.clone();
        bound["spec"]["volumeName"] = json!("pv-1");
        bound["spec"]["volumeAttributesClassName"] = json!("fast");
        assert!(update(&pvc, &bound).is_empty());
        let mut rebound = bound.clone();
        rebound["spec"]["volumeName"] = json!("pv-2");
        assert_eq!(
            messages(&update(&bound, &rebound)),
            ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
        );
        let mut limited = pvc.clone();
        limited["spec"]["resources"]["limits"] = json!({"storage": "5Gi"});
        assert_eq!(update(&pvc, &limited).len(), 1);
    }
}
