//! Printers of the API groups beyond the core workloads: autoscaling, certificates,
//! coordination's lease candidates, storage's CSI and attribute classes, admission policies,
//! flow control, storage versions and their migrations, dynamic resource allocation, service
//! CIDRs and IP addresses, and scheduling's workloads and pod groups (`AddHandlers` in
//! `pkg/printers/internalversion/printers.go` of v1.36, in its order).
//!
//! As in the parent module, each row function reads the served JSON fields that upstream's
//! internal type is converted from. The one exception is an `autoscaling/v1`
//! HorizontalPodAutoscaler, which is first converted to the internal (v2-shaped) object through
//! the generated conversion, since its metrics travel in annotations.

use std::borrow::Cow;
use std::cmp::Ordering;

use kapi_apimachinery::{Object, TypeInfo};
use serde_json::Value;

use super::{AGE, Col, Ctx, Doc, NAME, NANOS, Obj, Printer, Row, col, format_labels, human_nanos, list_with_more, quantity, s};

// ---------------------------------------------------------------------------------------------
// autoscaling

pub static HORIZONTAL_POD_AUTOSCALERS: Printer = Printer {
    columns: &[
        NAME,
        col("Reference", "string", D_HPA_SPEC_SCALE_TARGET_REF),
        col("Targets", "string", D_HPA_SPEC_METRICS),
        col("MinPods", "string", D_HPA_SPEC_MIN_REPLICAS),
        col("MaxPods", "string", D_HPA_SPEC_MAX_REPLICAS),
        col("Replicas", "string", D_HPA_STATUS_CURRENT_REPLICAS),
        AGE,
    ],
    row: |o, ctx| {
        let internal = hpa_internal(o);
        let hpa = internal.as_ref().map_or(o, Obj);
        let reference = format!("{}/{}", hpa.str(&["spec", "scaleTargetRef", "kind"]), hpa.str(&["spec", "scaleTargetRef", "name"]));
        let min_pods = match hpa.at(&["spec", "minReplicas"]) {
            Some(_) => hpa.int(&["spec", "minReplicas"]).to_string(),
            None => "<unset>".to_string(),
        };
        let cells = vec![
            s(hpa.name()),
            s(reference),
            s(format_hpa_metrics(hpa.list(&["spec", "metrics"]), hpa.list(&["status", "currentMetrics"]))),
            s(min_pods),
            Value::from(hpa.int(&["spec", "maxReplicas"])),
            Value::from(hpa.int(&["status", "currentReplicas"])),
            s(ctx.age(hpa)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

/// The annotations `autoscaling/v1` keeps the metrics it has no fields for in.
const V1_METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const V1_CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// An `autoscaling/v1` object as the internal object the printer reads (`None`: the object is
/// already v2-shaped, or does not decode). List items carry no `apiVersion`; v1's are told
/// apart by its own fields and round-trip annotations, never present on a v2 object.
fn hpa_internal(o: Obj<'_>) -> Option<Value> {
    let v1 = match o.str(&["apiVersion"]) {
        "autoscaling/v1" => true,
        "" => {
            !o.has(&["spec", "metrics"])
                && (o.has(&["spec", "targetCPUUtilizationPercentage"])
                    || o.has(&["status", "currentCPUUtilizationPercentage"])
                    || o.annotation(V1_METRICS).is_some()
                    || o.annotation(V1_CURRENT_METRICS).is_some())
        }
        _ => false,
    };
    if !v1 {
        return None;
    }
    let had_cpu_target = o.has(&["spec", "targetCPUUtilizationPercentage"]);
    let typed: kapi_api::api::autoscaling::v1::HorizontalPodAutoscaler = serde_json::from_value(o.0.clone()).ok()?;
    let mut internal = typed.into_hub().to_value().ok()?;
    if had_cpu_target {
        restore_cpu_position(&mut internal);
    }
    Some(internal)
}

/// v1 → internal appends v1's CPU target after the other metrics, while the object stored from
/// a v2 write may have had it anywhere; the printer pairs `spec.metrics[i]` with
/// `status.currentMetrics[i]`. The current metrics (all of them, in the stored order, in v1's
/// annotation) tell where the CPU utilization metric was: it goes back there.
fn restore_cpu_position(internal: &mut Value) {
    let is_cpu = |m: &Value, field: &str, value: &str| {
        let m = Obj(m);
        m.str(&["type"]) == "Resource" && m.str(&["resource", "name"]) == "cpu" && m.has(&["resource", field, value])
    };
    let positions = Obj(internal)
        .list(&["status", "currentMetrics"])
        .iter()
        .enumerate()
        .filter(|(_, m)| is_cpu(m, "current", "averageUtilization"))
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    let [position] = positions[..] else {
        return;
    };
    let Some(Value::Array(metrics)) = internal.pointer_mut("/spec/metrics") else {
        return;
    };
    let last = metrics.len().saturating_sub(1);
    if position < last && metrics.last().is_some_and(|m| is_cpu(m, "target", "averageUtilization")) {
        let cpu = metrics.remove(last);
        metrics.insert(position, cpu);
    }
}

/// `resource.Quantity.String()` of a `*Quantity` (`<nil>` when unset).
fn quantity_ptr(value: Option<&Value>) -> String {
    match value {
        None => "<nil>".to_string(),
        some => quantity(some),
    }
}

/// `formatHPAMetrics`: each metric's current/target, the first two, then how many more.
fn format_hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let status = |i: usize, source: &str| statuses.get(i).map(Obj).filter(|st| st.has(&[source])).map(|st| st.obj(&[source, "current"]));
    let mut list = Vec::new();
    for (i, spec) in specs.iter().map(Obj).enumerate() {
        let unknown = || "<unknown>".to_string();
        let text = match spec.str(&["type"]) {
            source_type @ ("External" | "Object") => {
                let source = if source_type == "External" { "external" } else { "object" };
                let target = spec.obj(&[source, "target"]);
                if target.has(&["averageValue"]) {
                    let current = status(i, source).and_then(|c| c.at(&["averageValue"])).map_or_else(unknown, |q| quantity(Some(q)));
                    format!("{current}/{} (avg)", quantity_ptr(target.at(&["averageValue"])))
                } else {
                    let current = status(i, source).map_or_else(unknown, |c| quantity_ptr(c.at(&["value"])));
                    format!("{current}/{}", quantity_ptr(target.at(&["value"])))
                }
            }
            "Pods" => {
                let current = status(i, "pods").map_or_else(unknown, |c| quantity_ptr(c.at(&["averageValue"])));
                format!("{current}/{}", quantity_ptr(spec.at(&["pods", "target", "averageValue"])))
            }
            source_type @ ("Resource" | "ContainerResource") => {
                let source = if source_type == "Resource" { "resource" } else { "containerResource" };
                let name = spec.str(&[source, "name"]);
                let target = spec.obj(&[source, "target"]);
                if target.has(&["averageValue"]) {
                    let current = status(i, source).map_or_else(unknown, |c| quantity_ptr(c.at(&["averageValue"])));
                    format!("{name}: {current}/{}", quantity_ptr(target.at(&["averageValue"])))
                } else {
                    let current = status(i, source)
                        .filter(|c| c.has(&["averageUtilization"]))
                        .map_or_else(unknown, |c| format!("{}%", c.int(&["averageUtilization"])));
                    let target = if target.has(&["averageUtilization"]) {
                        format!("{}%", target.int(&["averageUtilization"]))
                    } else {
                        "<auto>".to_string()
                    };
                    format!("{name}: {current}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(text);
    }
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        format!("{} + {} more...", list.join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

// ---------------------------------------------------------------------------------------------
// certificates

pub static CERTIFICATE_SIGNING_REQUESTS: Printer = Printer {
    columns: &[
        NAME,
        AGE,
        col("SignerName", "string", D_CSR_V1BETA1_SPEC_SIGNER_NAME),
        col("Requestor", "string", D_CSR_V1BETA1_SPEC_REQUEST),
        col("RequestedDuration", "string", D_CSR_V1BETA1_SPEC_EXPIRATION_SECONDS),
        col("Condition", "string", D_CSR_V1BETA1_STATUS_CONDITIONS),
    ],
    row: |o, ctx| {
        let signer = match o.str(&["spec", "signerName"]) {
            "" => "<none>",
            name => name,
        };
        let duration = match o.at(&["spec", "expirationSeconds"]) {
            Some(_) => human_nanos(i128::from(o.int(&["spec", "expirationSeconds"])) * NANOS),
            None => "<none>".to_string(),
        };
        let cells = vec![s(o.name()), s(ctx.age(o)), s(signer), s(o.str(&["spec", "username"])), s(duration), s(csr_condition(o))];
        (cells, Vec::new())
    },
    order: None,
};

/// `extractCSRStatus`: Denied over Approved over Pending, then whether it failed and whether a
/// certificate was issued.
fn csr_condition(o: Obj<'_>) -> String {
    let has = |kind: &str| o.condition(&["status", "conditions"], kind).is_some();
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !o.str(&["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// Upstream's columns have no Age.
pub static CLUSTER_TRUST_BUNDLES: Printer = Printer {
    columns: &[NAME, col("SignerName", "string", D_CTB_V1BETA1_SPEC_SIGNER_NAME)],
    row: |o, _| {
        let signer = match o.str(&["spec", "signerName"]) {
            "" => "<none>",
            name => name,
        };
        (vec![s(o.name()), s(signer)], Vec::new())
    },
    order: None,
};

/// No Age; the annotations column is a priority-0 column filled only in the wide form, which the
/// server always prints.
pub static POD_CERTIFICATE_REQUESTS: Printer = Printer {
    columns: &[
        NAME,
        col("PodName", "string", D_PCR_SPEC_POD_NAME),
        col("ServiceAccountName", "string", D_PCR_SPEC_SERVICE_ACCOUNT_NAME),
        col("NodeName", "string", D_PCR_SPEC_NODE_NAME),
        col("SignerName", "string", D_PCR_SPEC_SIGNER_NAME),
        col("State", "string", Doc::Text("Is the request Pending, Issued, Denied, or Failed?")),
        col("UnverifiedUserAnnotations", "string", D_PCR_SPEC_UNVERIFIED_USER_ANNOTATIONS),
    ],
    row: |o, _| {
        // The last of the mutually exclusive terminal conditions counts, whatever its status.
        let mut state = "Pending";
        for condition in o.list(&["status", "conditions"]).iter().map(Obj) {
            match condition.str(&["type"]) {
                "Issued" => state = "Issued",
                "Denied" => state = "Denied",
                "Failed" => state = "Failed",
                _ => {}
            }
        }
        let spec = o.obj(&["spec"]);
        let cells = vec![
            s(o.name()),
            s(spec.str(&["podName"])),
            s(spec.str(&["serviceAccountName"])),
            s(spec.str(&["nodeName"])),
            s(spec.str(&["signerName"])),
            s(state),
            s(format_labels(spec.map(&["unverifiedUserAnnotations"]))),
        ];
        (cells, Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// coordination

pub static LEASE_CANDIDATES: Printer = Printer {
    columns: &[
        NAME,
        col("LeaseName", "string", D_LEASE_CANDIDATE_SPEC_LEASE_NAME),
        // Upstream asks ObjectMeta for these docs, which has none: empty.
        col("BinaryVersion", "string", Doc::Text("")),
        col("EmulationVersion", "string", Doc::Text("")),
        AGE,
    ],
    row: |o, ctx| {
        let spec = o.obj(&["spec"]);
        let cells = vec![
            s(o.name()),
            s(spec.str(&["leaseName"])),
            s(spec.str(&["binaryVersion"])),
            s(spec.str(&["emulationVersion"])),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// storage

pub static VOLUME_ATTRIBUTES_CLASSES: Printer = Printer {
    columns: &[NAME, col("DriverName", "string", D_VAC_DRIVER_NAME), AGE],
    row: |o, ctx| (vec![s(o.name()), s(o.str(&["driverName"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

pub static VOLUME_ATTACHMENTS: Printer = Printer {
    columns: &[
        NAME,
        Col { format: "name", ..col("Attacher", "string", D_VA_SPEC_ATTACHER) },
        col("PV", "string", D_VA_SOURCE_PERSISTENT_VOLUME_NAME),
        col("Node", "string", D_VA_SPEC_NODE_NAME),
        col("Attached", "boolean", D_VA_STATUS_ATTACHED),
        AGE,
    ],
    row: |o, ctx| {
        let cells = vec![
            s(o.name()),
            s(o.str(&["spec", "attacher"])),
            s(o.str(&["spec", "source", "persistentVolumeName"])),
            s(o.str(&["spec", "nodeName"])),
            Value::from(o.bool(&["status", "attached"])),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

pub static CSI_NODES: Printer = Printer {
    columns: &[NAME, col("Drivers", "integer", Doc::Text("Drivers indicates the number of CSI drivers registered on the node")), AGE],
    row: |o, ctx| (vec![s(o.name()), Value::from(o.len(&["spec", "drivers"])), s(ctx.age(o))], Vec::new()),
    order: None,
};

pub static CSI_DRIVERS: Printer = Printer {
    columns: &[
        NAME,
        col("AttachRequired", "boolean", D_CSI_DRIVER_ATTACH_REQUIRED),
        col("PodInfoOnMount", "boolean", D_CSI_DRIVER_POD_INFO_ON_MOUNT),
        col("StorageCapacity", "boolean", D_CSI_DRIVER_STORAGE_CAPACITY),
        col("TokenRequests", "string", D_CSI_DRIVER_TOKEN_REQUESTS),
        col("RequiresRepublish", "boolean", D_CSI_DRIVER_REQUIRES_REPUBLISH),
        col("Modes", "string", D_CSI_DRIVER_VOLUME_LIFECYCLE_MODES),
        AGE,
    ],
    row: |o, ctx| {
        let spec = o.obj(&["spec"]);
        let token_requests = match spec.at(&["tokenRequests"]) {
            None => "<unset>".to_string(),
            Some(_) => spec.list(&["tokenRequests"]).iter().map(|t| Obj(t).str(&["audience"])).collect::<Vec<_>>().join(","),
        };
        let modes = spec.list(&["volumeLifecycleModes"]).iter().map(|m| m.as_str().unwrap_or_default()).collect::<Vec<_>>().join(",");
        let cells = vec![
            s(o.name()),
            Value::from(spec.opt_bool(&["attachRequired"]).unwrap_or(true)),
            Value::from(spec.bool(&["podInfoOnMount"])),
            Value::from(spec.bool(&["storageCapacity"])),
            s(token_requests),
            Value::from(spec.bool(&["requiresRepublish"])),
            s(if modes.is_empty() { "<none>".to_string() } else { modes }),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

/// Upstream's columns have no Age.
pub static CSI_STORAGE_CAPACITIES: Printer = Printer {
    columns: &[
        NAME,
        col("StorageClassName", "string", D_CSI_STORAGE_CAPACITY_STORAGE_CLASS_NAME),
        col("Capacity", "string", D_CSI_STORAGE_CAPACITY_CAPACITY),
    ],
    row: |o, _| {
        let capacity = match o.at(&["capacity"]) {
            None => "<unset>".to_string(),
            some => quantity(some),
        };
        (vec![s(o.name()), s(o.str(&["storageClassName"])), s(capacity)], Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// admission policies

const PARAM_KIND: Col = col("ParamKind", "string", Doc::Text("ParamKind specifies the kind of resources used to parameterize this policy"));

fn param_kind(o: Obj<'_>) -> String {
    match o.at(&["spec", "paramKind"]).map(Obj) {
        None => "<unset>".to_string(),
        Some(kind) => format!("{}/{}", kind.str(&["apiVersion"]), kind.str(&["kind"])),
    }
}

pub static VALIDATING_ADMISSION_POLICIES: Printer = Printer {
    columns: &[
        NAME,
        col("Validations", "integer", Doc::Text("Validations indicates the number of validation rules defined in this configuration")),
        PARAM_KIND,
        AGE,
    ],
    row: |o, ctx| {
        let cells = vec![s(o.name()), Value::from(o.len(&["spec", "validations"])), s(param_kind(o)), s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

pub static MUTATING_ADMISSION_POLICIES: Printer = Printer {
    columns: &[
        NAME,
        col("Mutations", "integer", Doc::Text("Mutation indicates the number of mutations rules defined in this configuration")),
        PARAM_KIND,
        AGE,
    ],
    row: |o, ctx| {
        let cells = vec![s(o.name()), Value::from(o.len(&["spec", "mutations"])), s(param_kind(o)), s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

const POLICY_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col("PolicyName", "string", Doc::Text("PolicyName indicates the policy definition which the policy binding binded to")),
    col("ParamRef", "string", Doc::Text("ParamRef indicates the param resource which sets the configuration param")),
    AGE,
];

/// The binding's parameter: `namespace/name` (`*/name` without a namespace), else the selector
/// as Go prints a `*metav1.LabelSelector` (its generated `String()`), else `<unset>`.
fn policy_binding_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let param = match o.at(&["spec", "paramRef"]).map(Obj) {
        None => "<unset>".to_string(),
        Some(reference) => match reference.str(&["name"]) {
            "" => match reference.at(&["selector"]) {
                Some(selector) => go_label_selector(Obj(selector)),
                None => "<unset>".to_string(),
            },
            name => match reference.str(&["namespace"]) {
                "" => format!("*/{name}"),
                namespace => format!("{namespace}/{name}"),
            },
        },
    };
    let cells = vec![s(o.name()), s(o.str(&["spec", "policyName"])), s(param), s(ctx.age(o))];
    (cells, Vec::new())
}

/// `(*metav1.LabelSelector).String()`, the protobuf-generated stringer:
/// `&LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[a b],},},}`.
fn go_label_selector(selector: Obj<'_>) -> String {
    let mut labels =
        selector.map(&["matchLabels"]).into_iter().flatten().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default())).collect::<Vec<_>>();
    labels.sort_unstable();
    let labels = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect::<String>();
    let expressions = selector
        .list(&["matchExpressions"])
        .iter()
        .map(Obj)
        .map(|e| {
            let values = e.list(&["values"]).iter().map(|v| v.as_str().unwrap_or_default()).collect::<Vec<_>>().join(" ");
            format!("LabelSelectorRequirement{{Key:{},Operator:{},Values:[{values}],}},", e.str(&["key"]), e.str(&["operator"]))
        })
        .collect::<String>();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}")
}

pub static VALIDATING_ADMISSION_POLICY_BINDINGS: Printer =
    Printer { columns: POLICY_BINDING_COLUMNS, row: policy_binding_row, order: None };

pub static MUTATING_ADMISSION_POLICY_BINDINGS: Printer = Printer { columns: POLICY_BINDING_COLUMNS, row: policy_binding_row, order: None };

// ---------------------------------------------------------------------------------------------
// flow control

pub static FLOW_SCHEMAS: Printer = Printer {
    columns: &[
        NAME,
        col("PriorityLevel", "string", D_PL_REFERENCE_NAME),
        col("MatchingPrecedence", "string", D_FLOW_SCHEMA_SPEC_MATCHING_PRECEDENCE),
        col("DistinguisherMethod", "string", D_FLOW_SCHEMA_SPEC_DISTINGUISHER_METHOD),
        AGE,
        col("MissingPL", "string", Doc::Text("references a broken or non-existent PriorityLevelConfiguration")),
    ],
    row: |o, ctx| {
        let distinguisher = match o.at(&["spec", "distinguisherMethod"]) {
            Some(method) => Obj(method).str(&["type"]).to_string(),
            None => "<none>".to_string(),
        };
        let missing = o.condition(&["status", "conditions"], "Dangling").map_or("?", |c| c.str(&["status"]));
        let cells = vec![
            s(o.name()),
            s(o.str(&["spec", "priorityLevelConfiguration", "name"])),
            Value::from(o.int(&["spec", "matchingPrecedence"])),
            s(distinguisher),
            s(ctx.age(o)),
            s(missing),
        ];
        (cells, Vec::new())
    },
    order: Some(flow_schema_order),
};

/// `FlowSchemaSequence`: lists print in matching order, lower precedence first, then by name.
fn flow_schema_order(a: &Value, b: &Value) -> Ordering {
    let (a, b) = (Obj(a), Obj(b));
    let precedence = |o: Obj<'_>| o.int(&["spec", "matchingPrecedence"]);
    precedence(a).cmp(&precedence(b)).then_with(|| a.name().cmp(b.name()))
}

pub static PRIORITY_LEVEL_CONFIGURATIONS: Printer = Printer {
    columns: &[
        NAME,
        col("Type", "string", D_PLC_SPEC_TYPE),
        col("NominalConcurrencyShares", "string", D_LIMITED_PLC_NOMINAL_CONCURRENCY_SHARES),
        col("Queues", "string", D_QUEUING_QUEUES),
        col("HandSize", "string", D_QUEUING_HAND_SIZE),
        col("QueueLengthLimit", "string", D_QUEUING_QUEUE_LENGTH_LIMIT),
        AGE,
    ],
    row: |o, ctx| {
        let none = || s("<none>");
        let (mut shares, mut queues, mut hand_size, mut length) = (none(), none(), none(), none());
        if let Some(limited) = o.at(&["spec", "limited"]).map(Obj) {
            shares = Value::from(limited.int(&["nominalConcurrencyShares"]));
            if let Some(queuing) = limited.at(&["limitResponse", "queuing"]).map(Obj) {
                queues = Value::from(queuing.int(&["queues"]));
                hand_size = Value::from(queuing.int(&["handSize"]));
                length = Value::from(queuing.int(&["queueLengthLimit"]));
            }
        }
        let cells = vec![s(o.name()), s(o.str(&["spec", "type"])), shares, queues, hand_size, length, s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// storage versions and migrations

pub static STORAGE_VERSIONS: Printer = Printer {
    columns: &[
        NAME,
        col("CommonEncodingVersion", "string", D_SV_STATUS_COMMON_ENCODING_VERSION),
        col("StorageVersions", "string", D_SV_STATUS_STORAGE_VERSIONS),
        AGE,
    ],
    row: |o, ctx| {
        const MAX: usize = 3;
        let versions = o.list(&["status", "storageVersions"]);
        let list = versions
            .iter()
            .take(MAX)
            .map(Obj)
            .map(|v| format!("{}={}", v.str(&["apiServerID"]), v.str(&["encodingVersion"])))
            .collect::<Vec<_>>();
        let cells = vec![
            s(o.name()),
            s(o.opt_str(&["status", "commonEncodingVersion"]).unwrap_or("<unset>")),
            s(list_with_more(&list, versions.len() > MAX, versions.len(), MAX)),
            s(ctx.age(o)),
        ];
        (cells, Vec::new())
    },
    order: None,
};

/// No Age, and upstream's Name column here has no `name` format.
pub static STORAGE_VERSION_MIGRATIONS: Printer = Printer {
    columns: &[
        Col { format: "", ..NAME },
        col("Resource", "string", Doc::Text("GroupResource to migrate")),
        col("Status", "string", Doc::Text("Status of the migration")),
    ],
    row: |o, _| {
        // The last true condition among Running, Failed and Succeeded.
        let mut status = "Unknown";
        for condition in o.list(&["status", "conditions"]).iter().map(Obj) {
            let kind = condition.str(&["type"]);
            if condition.str(&["status"]) == "True" && matches!(kind, "Running" | "Failed" | "Succeeded") {
                status = kind;
            }
        }
        let cells = vec![s(o.name()), s(group_resource(o.obj(&["spec", "resource"]))), s(status)];
        (cells, Vec::new())
    },
    order: None,
};

/// `schema.GroupResource.String()`: `resource.group`, or the resource alone in the core group.
fn group_resource(o: Obj<'_>) -> String {
    match o.str(&["group"]) {
        "" => o.str(&["resource"]).to_string(),
        group => format!("{}.{group}", o.str(&["resource"])),
    }
}

// ---------------------------------------------------------------------------------------------
// resource (dynamic resource allocation)

fn name_and_age(o: Obj<'_>, ctx: &Ctx) -> Row {
    (vec![s(o.name()), s(ctx.age(o))], Vec::new())
}

pub static DEVICE_CLASSES: Printer = Printer { columns: &[NAME, AGE], row: name_and_age, order: None };

pub static RESOURCE_CLAIM_TEMPLATES: Printer = Printer { columns: &[NAME, AGE], row: name_and_age, order: None };

pub static RESOURCE_CLAIMS: Printer = Printer {
    columns: &[NAME, col("State", "string", Doc::Text("A summary of the current state (allocated, pending, reserved, etc.).")), AGE],
    row: |o, ctx| {
        let mut states = Vec::new();
        if o.deleting() {
            states.push("deleted");
        }
        if o.has(&["status", "allocation"]) {
            states.push("allocated");
            if !o.list(&["status", "reservedFor"]).is_empty() {
                states.push("reserved");
            }
        } else if !o.deleting() {
            states.push("pending");
        }
        (vec![s(o.name()), s(states.join(",")), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

pub static RESOURCE_SLICES: Printer = Printer {
    columns: &[
        NAME,
        col("Node", "string", D_RESOURCE_SLICE_SPEC_NODE_NAME),
        col("Driver", "string", D_RESOURCE_SLICE_SPEC_DRIVER),
        col("Pool", "string", D_RESOURCE_POOL_NAME),
        AGE,
    ],
    row: |o, ctx| {
        let spec = o.obj(&["spec"]);
        let cells = vec![s(o.name()), s(spec.str(&["nodeName"])), s(spec.str(&["driver"])), s(spec.str(&["pool", "name"])), s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

/// No Age: Completed is when the observation finished.
pub static RESOURCE_POOL_STATUS_REQUESTS: Printer = Printer {
    columns: &[
        NAME,
        col("Driver", "string", Doc::Text("The driver to query pools for.")),
        col("Total", "string", Doc::Text("Total number of devices across all pools.")),
        col("Available", "string", Doc::Text("Number of available devices across all pools.")),
        col("Allocated", "string", Doc::Text("Number of allocated devices across all pools.")),
        col("Unavailable", "string", Doc::Text("Number of unavailable devices across all pools.")),
        col("Errors", "string", Doc::Text("Number of pools with validation errors.")),
        col("Pools", "integer", Doc::Text("Total number of matching pools.")),
        col("Status", "string", Doc::Text("Processing status.")),
        col("Completed", "string", Doc::Text("Time since the observation completed.")),
    ],
    row: resource_pool_status_request_row,
    order: None,
};

fn resource_pool_status_request_row(o: Obj<'_>, ctx: &Ctx) -> Row {
    let dash = || s("-");
    let mut status = "Pending".to_string();
    let mut pool_count = 0;
    let (mut total, mut available, mut allocated, mut unavailable, mut errors) = (dash(), dash(), dash(), dash(), dash());
    let mut completed = "<none>".to_string();
    if let Some(st) = o.at(&["status"]).map(Obj) {
        let mut failed = false;
        for condition in st.list(&["conditions"]).iter().map(Obj) {
            if condition.str(&["status"]) != "True" {
                continue;
            }
            match condition.str(&["type"]) {
                "Complete" => {
                    status = "Complete".to_string();
                    completed = ctx.since(condition.at(&["lastTransitionTime"]));
                    break;
                }
                "Failed" => {
                    status = "Failed".to_string();
                    failed = true;
                    break;
                }
                _ => {}
            }
        }
        pool_count = st.int(&["poolCount"]);
        let pools = st.list(&["pools"]);
        if status == "Complete" && pool_count > pools.len() as i64 {
            status = format!("Complete ({}/{pool_count} pools)", pools.len());
        }
        if !failed {
            let sum = |field: &str| pools.iter().map(|p| Obj(p).int(&[field])).sum::<i64>();
            total = Value::from(sum("totalDevices"));
            available = Value::from(sum("availableDevices"));
            allocated = Value::from(sum("allocatedDevices"));
            unavailable = Value::from(sum("unavailableDevices"));
            errors = Value::from(pools.iter().filter(|p| Obj(p).has(&["validationError"])).count());
        }
    }
    let cells = vec![
        s(o.name()),
        s(o.str(&["spec", "driver"])),
        total,
        available,
        allocated,
        unavailable,
        errors,
        Value::from(pool_count),
        s(status),
        s(completed),
    ];
    (cells, Vec::new())
}

pub static DEVICE_TAINT_RULES: Printer = Printer {
    columns: &[
        NAME,
        col("Key", "string", D_DEVICE_TAINT_KEY),
        col("Value", "string", D_DEVICE_TAINT_VALUE),
        col("Effect", "string", D_DEVICE_TAINT_EFFECT),
        col("TimeAdded", "string", D_DEVICE_TAINT_TIME_ADDED),
        AGE,
    ],
    row: |o, ctx| {
        let taint = o.obj(&["spec", "taint"]);
        let added = match taint.at(&["timeAdded"]) {
            Some(time) => ctx.since(Some(time)),
            None => String::new(),
        };
        let cells = vec![s(o.name()), s(taint.str(&["key"])), s(taint.str(&["value"])), s(taint.str(&["effect"])), s(added), s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// networking

pub static SERVICE_CIDRS: Printer = Printer {
    columns: &[NAME, col("CIDRs", "string", D_SERVICE_CIDR_SPEC_CIDRS), AGE],
    row: |o, ctx| {
        let cidrs = o.list(&["spec", "cidrs"]).iter().map(|c| c.as_str().unwrap_or_default()).collect::<Vec<_>>().join(",");
        (vec![s(o.name()), s(cidrs), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

/// Upstream declares two columns but appends the age as a third cell to every row; the rows are
/// served as upstream serves them.
pub static IP_ADDRESSES: Printer = Printer {
    columns: &[NAME, col("ParentRef", "string", D_IP_ADDRESS_SPEC_PARENT_REF)],
    row: |o, ctx| {
        let parent = match o.at(&["spec", "parentRef"]).map(Obj) {
            None => "<none>".to_string(),
            Some(reference) => {
                let mut text = group_resource(reference).to_lowercase();
                if let Some(namespace) = reference.opt_str(&["namespace"]).filter(|n| !n.is_empty()) {
                    text = format!("{text}/{namespace}");
                }
                format!("{text}/{}", reference.str(&["name"]))
            }
        };
        (vec![s(o.name()), s(parent), s(ctx.age(o))], Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// scheduling

pub static WORKLOADS: Printer = Printer { columns: &[NAME, AGE], row: name_and_age, order: None };

pub static POD_GROUPS: Printer = Printer {
    columns: &[
        NAME,
        col("Policy", "string", D_POD_GROUP_SPEC_SCHEDULING_POLICY),
        col("Workload", "string", Doc::Text("Name of the referenced Workload object")),
        col("Status", "string", Doc::Text("Status of the PodGroup")),
        AGE,
    ],
    row: |o, ctx| {
        let policy = if o.has(&["spec", "schedulingPolicy", "gang"]) { "Gang" } else { "Basic" };
        // Conditions go through a map by type: the last of a type counts.
        let condition = |kind: &str| o.list(&["status", "conditions"]).iter().map(Obj).rfind(|c| c.str(&["type"]) == kind);
        let mut status = "Pending";
        if let Some(scheduled) = condition("PodGroupScheduled") {
            status = if scheduled.str(&["status"]) == "True" { "Scheduled" } else { "Unschedulable" };
        }
        if let Some(disruption) = condition("DisruptionTarget") {
            status = disruption.str(&["reason"]);
        }
        let workload = match o.at(&["spec", "podGroupTemplateRef"]) {
            Some(reference) => Obj(reference).str(&["workload", "workloadName"]),
            None => "<none>",
        };
        let cells = vec![s(o.name()), s(policy), s(workload), s(status), s(ctx.age(o))];
        (cells, Vec::new())
    },
    order: None,
};

// ---------------------------------------------------------------------------------------------
// Column descriptions

/// A generated type's field list.
type Fields = fn() -> &'static [kapi_apimachinery::scheme::FieldInfo];

macro_rules! field_docs {
    ($($(#[$meta:meta])* $name:ident = $kind:ident($ty:ty, $field:literal);)*) => {
        $($(#[$meta])* pub(super) const $name: Doc = Doc::$kind(<$ty as TypeInfo>::fields, $field);)*
    };
}

field_docs! {
    D_HPA_SPEC_SCALE_TARGET_REF = Field(kapi_api::api::autoscaling::v2::HorizontalPodAutoscalerSpec, "scaleTargetRef");
    D_HPA_SPEC_METRICS = Field(kapi_api::api::autoscaling::v2::HorizontalPodAutoscalerSpec, "metrics");
    D_HPA_SPEC_MIN_REPLICAS = Field(kapi_api::api::autoscaling::v2::HorizontalPodAutoscalerSpec, "minReplicas");
    D_HPA_SPEC_MAX_REPLICAS = Field(kapi_api::api::autoscaling::v2::HorizontalPodAutoscalerSpec, "maxReplicas");
    D_HPA_STATUS_CURRENT_REPLICAS = Field(kapi_api::api::autoscaling::v2::HorizontalPodAutoscalerStatus, "currentReplicas");
    /// `certificates/v1beta1`'s CSR is no longer served: its Go comment, formatted as `SwaggerDoc()`.
    D_CSR_V1BETA1_SPEC_SIGNER_NAME = Proto(kapi_api::api::certificates::v1beta1::CertificateSigningRequestSpec, "signerName");
    D_CSR_V1BETA1_SPEC_REQUEST = Proto(kapi_api::api::certificates::v1beta1::CertificateSigningRequestSpec, "request");
    D_CSR_V1BETA1_SPEC_EXPIRATION_SECONDS = Proto(kapi_api::api::certificates::v1beta1::CertificateSigningRequestSpec, "expirationSeconds");
    D_CSR_V1BETA1_STATUS_CONDITIONS = Proto(kapi_api::api::certificates::v1beta1::CertificateSigningRequestStatus, "conditions");
    D_CTB_V1BETA1_SPEC_SIGNER_NAME = Field(kapi_api::api::certificates::v1beta1::ClusterTrustBundleSpec, "signerName");
    D_PCR_SPEC_POD_NAME = Field(kapi_api::api::certificates::v1beta1::PodCertificateRequestSpec, "podName");
    D_PCR_SPEC_SERVICE_ACCOUNT_NAME = Field(kapi_api::api::certificates::v1beta1::PodCertificateRequestSpec, "serviceAccountName");
    D_PCR_SPEC_NODE_NAME = Field(kapi_api::api::certificates::v1beta1::PodCertificateRequestSpec, "nodeName");
    D_PCR_SPEC_SIGNER_NAME = Field(kapi_api::api::certificates::v1beta1::PodCertificateRequestSpec, "signerName");
    D_PCR_SPEC_UNVERIFIED_USER_ANNOTATIONS = Field(kapi_api::api::certificates::v1beta1::PodCertificateRequestSpec, "unverifiedUserAnnotations");
    D_LEASE_CANDIDATE_SPEC_LEASE_NAME = Field(kapi_api::api::coordination::v1alpha2::LeaseCandidateSpec, "leaseName");
    D_VAC_DRIVER_NAME = Field(kapi_api::api::storage::v1::VolumeAttributesClass, "driverName");
    D_VA_SPEC_ATTACHER = Field(kapi_api::api::storage::v1::VolumeAttachmentSpec, "attacher");
    D_VA_SOURCE_PERSISTENT_VOLUME_NAME = Field(kapi_api::api::storage::v1::VolumeAttachmentSource, "persistentVolumeName");
    D_VA_SPEC_NODE_NAME = Field(kapi_api::api::storage::v1::VolumeAttachmentSpec, "nodeName");
    D_VA_STATUS_ATTACHED = Field(kapi_api::api::storage::v1::VolumeAttachmentStatus, "attached");
    D_CSI_DRIVER_ATTACH_REQUIRED = Field(kapi_api::api::storage::v1::CSIDriverSpec, "attachRequired");
    D_CSI_DRIVER_POD_INFO_ON_MOUNT = Field(kapi_api::api::storage::v1::CSIDriverSpec, "podInfoOnMount");
    D_CSI_DRIVER_STORAGE_CAPACITY = Field(kapi_api::api::storage::v1::CSIDriverSpec, "storageCapacity");
    D_CSI_DRIVER_TOKEN_REQUESTS = Field(kapi_api::api::storage::v1::CSIDriverSpec, "tokenRequests");
    D_CSI_DRIVER_REQUIRES_REPUBLISH = Field(kapi_api::api::storage::v1::CSIDriverSpec, "requiresRepublish");
    D_CSI_DRIVER_VOLUME_LIFECYCLE_MODES = Field(kapi_api::api::storage::v1::CSIDriverSpec, "volumeLifecycleModes");
    D_CSI_STORAGE_CAPACITY_STORAGE_CLASS_NAME = Field(kapi_api::api::storage::v1::CSIStorageCapacity, "storageClassName");
    D_CSI_STORAGE_CAPACITY_CAPACITY = Field(kapi_api::api::storage::v1::CSIStorageCapacity, "capacity");
    D_PL_REFERENCE_NAME = Field(kapi_api::api::flowcontrol::v1::PriorityLevelConfigurationReference, "name");
    D_FLOW_SCHEMA_SPEC_MATCHING_PRECEDENCE = Field(kapi_api::api::flowcontrol::v1::FlowSchemaSpec, "matchingPrecedence");
    D_FLOW_SCHEMA_SPEC_DISTINGUISHER_METHOD = Field(kapi_api::api::flowcontrol::v1::FlowSchemaSpec, "distinguisherMethod");
    D_PLC_SPEC_TYPE = Field(kapi_api::api::flowcontrol::v1::PriorityLevelConfigurationSpec, "type");
    D_LIMITED_PLC_NOMINAL_CONCURRENCY_SHARES = Field(kapi_api::api::flowcontrol::v1::LimitedPriorityLevelConfiguration, "nominalConcurrencyShares");
    D_QUEUING_QUEUES = Field(kapi_api::api::flowcontrol::v1::QueuingConfiguration, "queues");
    D_QUEUING_HAND_SIZE = Field(kapi_api::api::flowcontrol::v1::QueuingConfiguration, "handSize");
    D_QUEUING_QUEUE_LENGTH_LIMIT = Field(kapi_api::api::flowcontrol::v1::QueuingConfiguration, "queueLengthLimit");
    D_SV_STATUS_COMMON_ENCODING_VERSION = Field(kapi_api::api::apiserverinternal::v1alpha1::StorageVersionStatus, "commonEncodingVersion");
    D_SV_STATUS_STORAGE_VERSIONS = Field(kapi_api::api::apiserverinternal::v1alpha1::StorageVersionStatus, "storageVersions");
    D_RESOURCE_SLICE_SPEC_NODE_NAME = Field(kapi_api::api::resource::v1::ResourceSliceSpec, "nodeName");
    D_RESOURCE_SLICE_SPEC_DRIVER = Field(kapi_api::api::resource::v1::ResourceSliceSpec, "driver");
    D_RESOURCE_POOL_NAME = Field(kapi_api::api::resource::v1::ResourcePool, "name");
    D_DEVICE_TAINT_KEY = Field(kapi_api::api::resource::v1::DeviceTaint, "key");
    D_DEVICE_TAINT_VALUE = Field(kapi_api::api::resource::v1::DeviceTaint, "value");
    D_DEVICE_TAINT_EFFECT = Field(kapi_api::api::resource::v1::DeviceTaint, "effect");
    D_DEVICE_TAINT_TIME_ADDED = Field(kapi_api::api::resource::v1::DeviceTaint, "timeAdded");
    D_SERVICE_CIDR_SPEC_CIDRS = Field(kapi_api::api::networking::v1::ServiceCIDRSpec, "cidrs");
    D_IP_ADDRESS_SPEC_PARENT_REF = Field(kapi_api::api::networking::v1::IPAddressSpec, "parentRef");
    D_POD_GROUP_SPEC_SCHEDULING_POLICY = Field(kapi_api::api::scheduling::v1alpha2::PodGroupSpec, "schedulingPolicy");
}

/// `fmtRawDoc` of apimachinery's swagger doc generator: how `SwaggerDoc()` is made of a Go
/// comment (generator markers and TODO lines dropped, lines joined with spaces, indented lines
/// kept on lines of their own, blank lines kept as paragraph breaks).
pub(super) fn swagger_doc(comment: &str) -> String {
    let comment = comment.split("---").next().unwrap_or_default();
    let mut out = String::new();
    // A Go doc comment's text ends with a newline: the last line is an empty one.
    for line in comment.split('\n').chain(std::iter::once("")) {
        let line = line.trim_end_matches(' ');
        let leading = line.trim_start_matches(' ');
        if line.is_empty() {
            out.pop();
            out.push_str("\n\n");
        } else if leading.starts_with("TODO") || leading.starts_with('+') {
            continue;
        } else if line.starts_with([' ', '\t']) {
            out.pop();
            out.push('\n');
            out.push_str(line);
            out.push('\n');
        } else {
            out.push_str(line);
            out.push(' ');
        }
    }
    out.trim_end_matches('\n').replace("\\\"", "\"")
}

/// The description a `Doc::Proto` column shows.
pub(super) fn proto_doc(fields: Fields, name: &str) -> Cow<'static, str> {
    let raw = fields().iter().find(|f| f.json_name == name).map_or("", |f| f.description);
    Cow::Owned(swagger_doc(raw))
}
