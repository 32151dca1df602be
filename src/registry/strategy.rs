//! Per-resource behaviour (upstream's `pkg/registry/<group>/<resource>/strategy.go`): one trait,
//! [`Strategy`], whose defaults are the generic store's behaviour, and one implementation per
//! resource that differs, each in its group's folder (`registry/<group>/<resource>.rs`).
//! [`for_resource`] is the only place that maps a resource to its strategy; the generic code
//! asks the strategy and never names a resource.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use super::object::Object;
use super::validation::NameRule;
use super::{DeletionFlow, OwnRest, Rejection, ScaleFacts};
use crate::request_info::UserInfo;
use crate::status::{ApiError, FieldError};
use crate::tables::{self, Columns, Printer};

/// An object's fields for field selectors (see [`Strategy::field_set`]).
pub type FieldSet = std::sync::Arc<dyn Fn(&Value) -> std::collections::BTreeMap<String, String> + Send + Sync>;

/// [`Strategy::converter`]: given an object of the first kind, the object in the given
/// version of the same group, or why it cannot be had.
pub type Converter = std::sync::Arc<dyn Fn(&super::objects::Kind, Value, &str) -> Result<Value, String> + Send + Sync>;

/// A boxed future borrowing its inputs, as the hooks that read the store return.
pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who writes, for the checks a resource makes of the requesting user beyond authorization
/// ([`Strategy::authorize_write`]).
pub struct WriteContext<'a> {
    pub user: &'a UserInfo,
    pub authorizer: &'a super::rbac::authorizer::Authorizer,
    pub group: &'a str,
    pub resource: &'a str,
    /// The namespace written in (`None` for cluster-scoped objects).
    pub namespace: Option<&'a str>,
}

/// What a hook ([`Strategy::begin_create`], [`Strategy::begin_update`],
/// [`Strategy::after_delete`]) may read and write besides the object: the store and the
/// server's settings.
pub struct HookContext<'a> {
    pub store: &'a dyn crate::storage::Storage,
    pub config: &'a super::store::StoreConfig,
}

/// How a resource's objects are created, updated, validated, stored and deleted. Every method
/// has the generic store's answer as its default.
pub trait Strategy: Send + Sync {
    /// How object names are validated (`ValidateName`).
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Whether `metadata.generation` is maintained: 1 on create, bumped when the spec changes.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Where the objects live under `/registry` when it is not the plural name (upstream's
    /// `SpecialDefaultResourcePrefixes`; a custom resource's `<group>/<plural>`).
    fn storage_prefix(&self) -> Option<&str> {
        None
    }

    /// The version objects are stored in when the scheme does not say (a custom resource's
    /// storage version, from its definition).
    fn storage_version(&self) -> Option<&str> {
        None
    }

    /// Whether the resource has a `status` subresource when the scheme does not say (a custom
    /// resource's definition does).
    fn status_subresource(&self) -> Option<bool> {
        None
    }

    /// Upstream's field label conversion for the resource: the key a field selector's `label`
    /// is matched on, or the resource's 400 for a label it does not support.
    fn convert_field_label(
        &self,
        resource: (&str, &str, &str),
        label: &str,
        value: &str,
    ) -> Result<(String, String), crate::selectors::SelectorError> {
        let (group, version, resource) = resource;
        crate::selectors::convert_field_label(group, version, resource, label, value)
    }

    /// `GetAttrs`' field set: what field selectors match an object on, as a function a watch
    /// can keep.
    fn field_set(&self, group: &str, resource: &str) -> FieldSet {
        let (group, resource) = (group.to_owned(), resource.to_owned());
        std::sync::Arc::new(move |object| crate::selectors::selectable_fields(&group, &resource, object))
    }

    /// How the resource's objects become table rows (`TableConvertor`): its kind's printer,
    /// a custom resource's `additionalPrinterColumns`, or upstream's default Name, Created At.
    fn table(&self) -> Columns {
        Columns::Default
    }

    /// With [`Strategy::tracks_generation`]: whether an update changes what `generation`
    /// counts (the spec; a custom resource's everything but metadata and a subresource's
    /// status).
    fn generation_changed(&self, old: &Object, new: &Object) -> Result<bool, ApiError> {
        Ok(!new.spec_equals(old)?)
    }

    /// How long objects live after their last write (`TTLFunc`), given `--event-ttl`.
    fn storage_ttl(&self, event_ttl: Duration) -> Option<Duration> {
        let _ = event_ttl;
        None
    }

    /// What every write does to the object while converting it in, before any other step
    /// (a Secret's `stringData` folds into `data`; a custom resource's schema prunes and
    /// defaults it).
    fn normalize(&self, object: &mut Object) -> Result<(), ApiError> {
        let _ = object;
        Ok(())
    }

    /// What decoding a request body does beyond the typed decoder, for a kind the generated
    /// scheme does not have: a custom resource's schema prunes unknown fields and applies
    /// defaults there (upstream's `schemaCoercingDecoder`, then its defaulter), before
    /// admission sees the object. Answers the paths of the fields it dropped, which
    /// `fieldValidation` reports; a typed kind's are found by comparing with the body instead.
    fn decode_unstructured(&self, object: &mut Value) -> Vec<String> {
        let _ = object;
        Vec::new()
    }

    /// The OpenAPI v3 schema field management reads the objects with when the scheme has none
    /// (a custom resource's version's `openAPIV3Schema`).
    fn field_schema(&self) -> Option<std::sync::Arc<Value>> {
        None
    }

    /// The schema of another version of the kind, for field management's entries of that
    /// version ([`Strategy::field_schema`]'s, per version): a custom resource's versions'.
    fn version_field_schema(&self, version: &str) -> Option<&Value> {
        let _ = version;
        None
    }

    /// How objects of a kind the scheme does not know change version, as a function a watch
    /// can keep: a custom resource's definition converts them (its `spec.conversion`) and its
    /// versions' schemas prune and default them on the way (upstream's storage codec does), so
    /// that defaults added to a definition show on objects stored before. Used for reading a
    /// stored object in the caller's version and for writing one in the storage version.
    /// `None` for the scheme's kinds, which convert through their hub.
    fn converter(&self) -> Option<Converter> {
        None
    }

    /// Whether [`Strategy::prepare_for_create`] replaces the whole status of a new object, as
    /// upstream's strategies do (a pod's: `Pending` and its QoS class), so that the store
    /// need not clear it first.
    fn sets_status_on_create(&self) -> bool {
        false
    }

    /// `PrepareForCreate` beyond the generic part (status cleared, identity set): what the
    /// server fills in on a new object.
    fn prepare_for_create(&self, object: &mut Object, user: Option<&UserInfo>) -> Result<(), ApiError> {
        let _ = (object, user);
        Ok(())
    }

    /// `PrepareForUpdate` beyond the generic part (identity kept, status kept when it has its
    /// own endpoint, generation): what the server changes in `new`, the object replacing `old`,
    /// before it is validated.
    fn prepare_for_update(&self, new: &mut Object, old: &Object) -> Result<(), ApiError> {
        let _ = (new, old);
        Ok(())
    }

    /// `Validate`: the resource's rules for a new object, beyond metadata and required fields,
    /// read from its JSON form.
    fn validate(&self, object: &Value) -> Vec<FieldError> {
        let _ = object;
        Vec::new()
    }

    /// [`Strategy::validate`] of the object in whichever form it is at hand: what the store
    /// calls. A strategy whose rules read the generated type implements this instead, so that
    /// a typed object is validated without a JSON form being made for it.
    fn validate_object(&self, object: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(self.validate(object.value()?))
    }

    /// `AllowCreateOnUpdate`: whether a PUT to a name nothing is stored under creates the
    /// object (answered 201, as a POST's create with the name from the URL) rather than
    /// answering NotFound. A patch or a subresource write never creates (`Store::update`).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// `ValidateUpdate`: the rules for replacing `old` by `new`, including what may not change,
    /// read from `new`'s JSON form.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = (old, new);
        Vec::new()
    }

    /// [`Strategy::validate_update`] of `new` in whichever form it is at hand (as
    /// [`Strategy::validate_object`]).
    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(self.validate_update(old.value()?, new.value()?))
    }

    /// `WarningsOnCreate`: what the client is warned of about a valid new object (sent as
    /// `Warning` headers).
    fn warnings_on_create(&self, object: &Object) -> Result<Vec<String>, ApiError> {
        let _ = object;
        Ok(Vec::new())
    }

    /// `WarningsOnUpdate`.
    fn warnings_on_update(&self, new: &Object, old: &Object) -> Result<Vec<String>, ApiError> {
        let _ = (new, old);
        Ok(Vec::new())
    }

    /// The status strategy's `PrepareForUpdate` beyond taking the status from the request.
    fn prepare_status_update(&self, new: &mut Object, old: &Object) -> Result<(), ApiError> {
        let _ = (new, old);
        Ok(())
    }

    /// The status strategy's `ValidateUpdate`, of the stored object with the request's status
    /// (both internal objects; `new` is known as its generated type when the kind is stored as
    /// decoded).
    fn validate_status_update(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        let _ = (old, new);
        Ok(Vec::new())
    }

    /// Checks of the requesting user that authorization alone does not make (RBAC's escalation
    /// prevention): `old` is `None` on a create. Runs after validation, for a client's create
    /// or update of the object itself (the server's own writes carry no user and pass).
    fn authorize_write(&self, context: &WriteContext<'_>, old: Option<&Object>, new: &Object) -> Result<(), ApiError> {
        let _ = (context, old, new);
        Ok(())
    }

    /// `BeginCreate`: work on a new object that reads other objects (a Service's cluster IP
    /// and node ports). Runs once the object is valid.
    fn begin_create<'a>(&'a self, context: &'a HookContext<'a>, object: &'a mut Object) -> HookFuture<'a, Result<(), Rejection>> {
        let _ = (context, object);
        Box::pin(async { Ok(()) })
    }

    /// The store's `BeginUpdate` hook: what an update of the object itself (not a
    /// subresource's) takes from outside the object, before [`Strategy::prepare_for_update`]
    /// and validation see `new` (a Service's node ports when it becomes a NodePort).
    fn begin_update<'a>(
        &'a self,
        context: &'a HookContext<'a>,
        new: &'a mut Object,
        old: &'a Object,
    ) -> HookFuture<'a, Result<(), Rejection>> {
        let _ = (context, new, old);
        Box::pin(async { Ok(()) })
    }

    /// The store's `AfterDelete` hook: what goes with the object once it is gone (removed by a
    /// delete, or by the update that took its last finalizer; not when it is only marked for
    /// deletion, nor under dry run). Failures are logged, as upstream's.
    fn after_delete<'a>(&'a self, context: &'a HookContext<'a>, object: &'a Value) -> HookFuture<'a, ()> {
        let _ = (context, object);
        Box::pin(async {})
    }

    /// A subresource other than `status` and `scale` through which a write changes part of
    /// the object (`pods/resize`, `certificatesigningrequests/approval`).
    fn subresource(&self, name: &str) -> Option<&'static dyn SubresourceStrategy> {
        let _ = name;
        None
    }

    /// Where a `scale` subresource finds replicas and selector, if the resource has one.
    fn scale(&self) -> Option<ScaleFacts> {
        None
    }

    /// Requests answered by the resource's own REST code instead of the store.
    fn own_rest(&self, subresource: Option<&str>) -> Option<OwnRest> {
        let _ = subresource;
        None
    }

    /// Subresources read from a kubelet although their verb is `get` (`pods/log`): answered as
    /// `connect` requests are.
    fn reads_from_kubelet(&self, subresource: Option<&str>) -> bool {
        let _ = subresource;
        false
    }

    /// The answer to a `connect` request (exec, attach, port-forward, proxy): kapi runs no
    /// nodes, so it answers what upstream answers when none can be reached.
    fn connect_error(&self, resource: &str, subresource: &str, name: &str, object: &Value) -> ApiError {
        let _ = object;
        ApiError::service_unavailable(format!("{resource}/{subresource} of {name:?} has no backend to connect to"))
    }

    /// How a delete proceeds beyond the object's own finalizers.
    fn deletion_flow(&self, object: &Value) -> DeletionFlow {
        let _ = object;
        DeletionFlow::Generic
    }

    /// `CheckGracefulDelete`: the grace period of a delete, `None` when deletes are immediate.
    fn grace_period(&self, object: &Value, requested: Option<i64>) -> Option<i64> {
        let _ = (object, requested);
        None
    }

    /// What changes on an object marked for deletion besides `deletionTimestamp`.
    fn mark_deleting(&self, object: &mut Value) {
        let _ = object;
    }

    /// Whether an update that leaves an object being deleted without finalizers completes the
    /// deletion (upstream's `ShouldDeleteDuringUpdate`, which namespaces narrow).
    fn should_delete_during_update(&self, object: &Object) -> Result<bool, ApiError> {
        let _ = object;
        Ok(true)
    }

    /// The admission plugins that act on this resource's objects only
    /// ([`super::admission::KindPlugin`]): upstream's plugins each check for their kind.
    fn admitted_by(&self) -> &'static [super::admission::KindPlugin] {
        &[]
    }

    /// What a kubelet may do with this resource's objects beyond its RBAC role (the
    /// resource's part of the Node authorizer and of NodeRestriction); `None`: RBAC alone.
    fn kubelet(&self) -> Option<&'static dyn super::kubelet::KubeletRules> {
        None
    }

    /// Whether a delete answers with the deleted object (`ReturnDeletedObject`) rather than a
    /// `Status`.
    fn returns_deleted_object(&self) -> bool {
        false
    }
}

/// A subresource that writes part of its object (upstream's per-subresource strategies).
pub trait SubresourceStrategy: Send + Sync {
    /// The object to store: `stored` with this subresource's part taken from `proposed`, and
    /// what the strategy fills in (`PrepareForUpdate`).
    fn merge(&self, stored: &Object, proposed: &Object) -> Result<Object, ApiError>;

    /// `ValidateUpdate` of the subresource, read from the objects' JSON forms.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<FieldError> {
        let _ = (old, new);
        Vec::new()
    }

    /// [`SubresourceStrategy::validate_update`] of the objects in whichever form they are at
    /// hand: what the store calls. A subresource whose rules read the hub type implements this
    /// instead (as [`Strategy::validate_update_object`]).
    fn validate_update_object(&self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        Ok(self.validate_update(old.value()?, new.value()?))
    }
}

/// Makes `into[field]` what `from[field]` is: the same value, or absent when `from` has none.
/// How a strategy keeps one part of an object from one side (the stored object or the request).
pub fn copy_field(into: &mut Value, from: &Value, field: &str) {
    match from.get(field) {
        Some(part) => into[field] = part.clone(),
        None => {
            if let Some(object) = into.as_object_mut() {
                object.remove(field);
            }
        }
    }
}

/// The generic store's behaviour: every default of [`Strategy`].
pub struct Generic;

impl Strategy for Generic {}

/// A resource whose only behaviour beyond the generic store's is its printer.
pub struct Printed(pub &'static Printer);

impl Strategy for Printed {
    fn table(&self) -> Columns {
        Columns::Printer(self.0)
    }
}

/// The strategy of every resource that has quirks, by group and resource. A resource not
/// listed behaves as [`Generic`].
static STRATEGIES: &[(&str, &str, &dyn Strategy)] = &[
    ("", "pods", &super::core::pods::PodStrategy),
    ("", "podtemplates", &super::core::podtemplates::PodTemplateStrategy),
    ("", "replicationcontrollers", &super::core::replicationcontrollers::ReplicationControllerStrategy),
    ("", "services", &super::core::services::ServiceStrategy),
    ("", "configmaps", &super::core::configmaps::ConfigMapStrategy),
    ("", "secrets", &super::core::secrets::SecretStrategy),
    ("", "serviceaccounts", &super::core::serviceaccounts::ServiceAccountStrategy),
    ("", "persistentvolumes", &super::core::persistentvolumes::PersistentVolumeStrategy),
    ("", "persistentvolumeclaims", &super::core::persistentvolumeclaims::PersistentVolumeClaimStrategy),
    ("", "namespaces", &super::core::namespaces::NamespaceStrategy),
    ("", "nodes", &super::core::nodes::NodeStrategy),
    ("", "endpoints", &super::core::endpoints::EndpointsStrategy),
    ("", "events", &super::core::events::CORE_EVENTS),
    ("", "bindings", &super::core::pods::BindingStrategy),
    ("", "componentstatuses", &super::core::componentstatuses::ComponentStatusStrategy),
    ("", "limitranges", &super::core::limitranges::LimitRangeStrategy),
    ("events.k8s.io", "events", &super::core::events::EVENTS_V1),
    ("apps", "deployments", &super::apps::deployments::DeploymentStrategy),
    ("apps", "replicasets", &super::apps::replicasets::ReplicaSetStrategy),
    ("apps", "statefulsets", &super::apps::statefulsets::StatefulSetStrategy),
    ("apps", "daemonsets", &super::apps::daemonsets::DaemonSetStrategy),
    ("batch", "jobs", &super::batch::jobs::JobStrategy),
    ("batch", "cronjobs", &super::batch::cronjobs::CronJobStrategy),
    ("autoscaling", "horizontalpodautoscalers", &super::autoscaling::horizontalpodautoscalers::HorizontalPodAutoscalerStrategy),
    ("policy", "poddisruptionbudgets", &super::policy::poddisruptionbudgets::PodDisruptionBudgetStrategy),
    ("networking.k8s.io", "ingresses", &super::networking::ingresses::IngressStrategy),
    ("networking.k8s.io", "networkpolicies", &super::networking::networkpolicies::NetworkPolicyStrategy),
    ("discovery.k8s.io", "endpointslices", &super::discovery::endpointslices::EndpointSliceStrategy),
    ("scheduling.k8s.io", "priorityclasses", &super::scheduling::priorityclasses::PriorityClassStrategy),
    ("coordination.k8s.io", "leases", &super::coordination::leases::LeaseStrategy),
    ("coordination.k8s.io", "leasecandidates", &super::coordination::leasecandidates::LeaseCandidateStrategy),
    ("node.k8s.io", "runtimeclasses", &super::node::runtimeclasses::RuntimeClassStrategy),
    ("rbac.authorization.k8s.io", "roles", &super::rbac::roles::RoleStrategy::Role),
    ("rbac.authorization.k8s.io", "clusterroles", &super::rbac::roles::RoleStrategy::ClusterRole),
    ("rbac.authorization.k8s.io", "rolebindings", &super::rbac::rolebindings::RoleBindingStrategy::RoleBinding),
    ("rbac.authorization.k8s.io", "clusterrolebindings", &super::rbac::rolebindings::RoleBindingStrategy::ClusterRoleBinding),
    ("storage.k8s.io", "storageclasses", &super::storage::storageclasses::StorageClassStrategy),
    ("storage.k8s.io", "csinodes", &super::storage::csinodes::CsiNodeStrategy),
    ("resource.k8s.io", "resourceslices", &super::resource::resourceslices::ResourceSliceStrategy),
    ("resource.k8s.io", "resourceclaims", &super::resource::resourceclaims::ResourceClaimStrategy),
    ("storage.k8s.io", "volumeattachments", &super::storage::volumeattachments::VolumeAttachmentStrategy),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &super::certificates::certificatesigningrequests::CertificateSigningRequestStrategy,
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &super::apiextensions::customresourcedefinitions::CustomResourceDefinitionStrategy,
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies", &super::admissionregistration::VALIDATING_ADMISSION_POLICIES),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies", &super::admissionregistration::MUTATING_ADMISSION_POLICIES),
    ("flowcontrol.apiserver.k8s.io", "flowschemas", &super::flowcontrol::FLOW_SCHEMAS),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", &super::flowcontrol::PRIORITY_LEVEL_CONFIGURATIONS),
    ("authentication.k8s.io", "selfsubjectreviews", &super::reviews::ReviewStrategy(super::reviews::Review::SelfSubject)),
    ("authentication.k8s.io", "tokenreviews", &super::reviews::ReviewStrategy(super::reviews::Review::Token)),
    ("authorization.k8s.io", "selfsubjectaccessreviews", &super::reviews::ReviewStrategy(super::reviews::Review::SelfSubjectAccess)),
    ("authorization.k8s.io", "subjectaccessreviews", &super::reviews::ReviewStrategy(super::reviews::Review::SubjectAccess)),
    ("authorization.k8s.io", "localsubjectaccessreviews", &super::reviews::ReviewStrategy(super::reviews::Review::LocalSubjectAccess)),
    ("authorization.k8s.io", "selfsubjectrulesreviews", &super::reviews::ReviewStrategy(super::reviews::Review::SelfSubjectRules)),
    // Resources whose only behaviour of their own is their printer.
    ("", "resourcequotas", &Printed(&tables::RESOURCE_QUOTAS)),
    ("apps", "controllerrevisions", &Printed(&tables::CONTROLLER_REVISIONS)),
    ("networking.k8s.io", "ingressclasses", &Printed(&tables::INGRESS_CLASSES)),
    ("networking.k8s.io", "servicecidrs", &Printed(&tables::groups::SERVICE_CIDRS)),
    ("networking.k8s.io", "ipaddresses", &Printed(&tables::groups::IP_ADDRESSES)),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", &Printed(&tables::MUTATING_WEBHOOKS)),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", &Printed(&tables::VALIDATING_WEBHOOKS)),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings", &Printed(&tables::groups::VALIDATING_ADMISSION_POLICY_BINDINGS)),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings", &Printed(&tables::groups::MUTATING_ADMISSION_POLICY_BINDINGS)),
    ("certificates.k8s.io", "clustertrustbundles", &Printed(&tables::groups::CLUSTER_TRUST_BUNDLES)),
    ("certificates.k8s.io", "podcertificaterequests", &Printed(&tables::groups::POD_CERTIFICATE_REQUESTS)),
    ("storage.k8s.io", "volumeattributesclasses", &Printed(&tables::groups::VOLUME_ATTRIBUTES_CLASSES)),
    ("storage.k8s.io", "csidrivers", &Printed(&tables::groups::CSI_DRIVERS)),
    ("storage.k8s.io", "csistoragecapacities", &Printed(&tables::groups::CSI_STORAGE_CAPACITIES)),
    ("internal.apiserver.k8s.io", "storageversions", &Printed(&tables::groups::STORAGE_VERSIONS)),
    ("storagemigration.k8s.io", "storageversionmigrations", &Printed(&tables::groups::STORAGE_VERSION_MIGRATIONS)),
    ("resource.k8s.io", "deviceclasses", &Printed(&tables::groups::DEVICE_CLASSES)),
    ("resource.k8s.io", "resourceclaimtemplates", &Printed(&tables::groups::RESOURCE_CLAIM_TEMPLATES)),
    ("resource.k8s.io", "resourcepoolstatusrequests", &Printed(&tables::groups::RESOURCE_POOL_STATUS_REQUESTS)),
    ("resource.k8s.io", "devicetaintrules", &Printed(&tables::groups::DEVICE_TAINT_RULES)),
    ("scheduling.k8s.io", "workloads", &Printed(&tables::groups::WORKLOADS)),
    ("scheduling.k8s.io", "podgroups", &Printed(&tables::groups::POD_GROUPS)),
    ("apiregistration.k8s.io", "apiservices", &super::apiregistration::ApiServiceStrategy),
];

/// The strategy of a resource (looked up on every request: indexed once).
pub fn for_resource(group: &str, resource: &str) -> &'static dyn Strategy {
    static INDEX: std::sync::LazyLock<crate::group_index::GroupIndex<&'static dyn Strategy>> =
        std::sync::LazyLock::new(|| STRATEGIES.iter().copied().collect());
    INDEX.get(group, resource).copied().unwrap_or(&Generic)
}

/// The resources whose objects relate other objects to nodes, for the Node authorizer's graph
/// (see [`super::kubelet::KubeletRules::relates_objects`]).
pub fn node_graph_sources() -> impl Iterator<Item = (&'static str, &'static str, &'static dyn super::kubelet::KubeletRules)> {
    STRATEGIES.iter().filter_map(|(group, resource, strategy)| {
        strategy.kubelet().filter(|rules| rules.relates_objects()).map(|rules| (*group, *resource, rules))
    })
}

/// A write through a subresource that changes part of the object: `status` (generic, with the
/// resource's status rules) or one the resource's strategy names.
#[derive(Clone, Copy)]
pub enum SubresourceWrite<'s> {
    Status(&'s dyn Strategy),
    Part(&'static dyn SubresourceStrategy),
}

/// Whether the resource whose strategy is `strategy` has a `status` subresource: then its main
/// resource ignores status changes and its status subresource ignores everything else.
pub fn has_status_subresource(strategy: &dyn Strategy, group: &str, resource: &str) -> bool {
    strategy.status_subresource().unwrap_or_else(|| super::has_status_subresource(group, resource))
}

impl SubresourceWrite<'_> {
    /// The write `subresource` of the resource is, if it is one.
    pub fn of(group: &str, resource: &str, subresource: &str) -> Option<SubresourceWrite<'static>> {
        SubresourceWrite::with(for_resource(group, resource), group, resource, subresource)
    }

    /// [`SubresourceWrite::of`] for a resource whose strategy is `strategy`.
    pub fn with<'s>(strategy: &'s dyn Strategy, group: &str, resource: &str, subresource: &str) -> Option<SubresourceWrite<'s>> {
        if subresource == "status" && has_status_subresource(strategy, group, resource) {
            return Some(SubresourceWrite::Status(strategy));
        }
        strategy.subresource(subresource).map(SubresourceWrite::Part)
    }

    /// The object to store: the stored one with this subresource's part from the request.
    pub fn merge(self, stored: &Object, proposed: &Object) -> Result<Object, ApiError> {
        match self {
            SubresourceWrite::Status(strategy) => {
                let mut new = stored.clone_object();
                new.set_status_from(proposed)?;
                strategy.prepare_status_update(&mut new, stored)?;
                Ok(new)
            }
            SubresourceWrite::Part(part) => part.merge(stored, proposed),
        }
    }

    pub fn validate_update(self, old: &Object, new: &Object) -> Result<Vec<FieldError>, ApiError> {
        match self {
            SubresourceWrite::Status(strategy) => strategy.validate_status_update(old, new),
            SubresourceWrite::Part(part) => part.validate_update_object(old, new),
        }
    }
}

/// [`Strategy::prepare_for_create`] on an object of the core kind `kind` given as JSON, as the
/// store hands it over (known as its generated type): the object it leaves, as JSON.
#[cfg(test)]
pub(crate) fn prepared_for_create(strategy: &dyn Strategy, kind: &str, object: Value) -> Value {
    let kind = super::objects::Kind::core_v1(kind);
    let dyn_kind = super::objects::dyn_kind(&kind).expect("a kind of the scheme");
    let mut object = Object::from_value(object).of_kind(dyn_kind);
    strategy.prepare_for_create(&mut object, None).expect("prepared");
    object.into_value().expect("as JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each strategy names a resource the scheme serves, and no resource has two.
    #[test]
    fn every_strategy_is_for_one_served_resource() {
        let mut seen = std::collections::BTreeSet::new();
        for (group, resource, _) in STRATEGIES {
            assert!(
                kapi_api::scheme::RESOURCES.iter().any(|r| r.group == *group && r.resource == *resource),
                "strategy for {group}/{resource}, which the scheme does not serve"
            );
            assert!(seen.insert((group, resource)), "two strategies for {group}/{resource}");
        }
    }

    /// The resources the Node authorizer's graph follows: those whose objects relate others to
    /// nodes.
    #[test]
    fn the_node_graph_follows_the_resources_that_relate_objects() {
        let sources: Vec<_> = node_graph_sources().map(|(group, resource, _)| (group, resource)).collect();
        assert_eq!(
            sources,
            [("", "pods"), ("", "persistentvolumes"), ("resource.k8s.io", "resourceslices"), ("storage.k8s.io", "volumeattachments")]
        );
    }

    #[test]
    fn unlisted_resources_behave_generically() {
        let s = for_resource("storage.k8s.io", "csidrivers");
        assert!(!s.tracks_generation() && s.storage_prefix().is_none() && s.scale().is_none());
        assert!(matches!(for_resource("", "limitranges").table(), Columns::Default));
        assert!(for_resource("apps", "deployments").tracks_generation());
    }

    /// The resources whose PUT creates a missing object: those whose strategy's
    /// `AllowCreateOnUpdate` is true in kubernetes v1.36 (`pkg/registry/<group>/<resource>/
    /// strategy.go`; the events.k8s.io Events are served by the core Events' storage), and no
    /// other served resource.
    #[test]
    fn only_upstreams_resources_create_on_update() {
        let creating: std::collections::BTreeSet<(&str, &str)> = kapi_api::scheme::RESOURCES
            .iter()
            .filter(|r| !r.resource.contains('/') && for_resource(r.group, r.resource).allow_create_on_update())
            .map(|r| (r.group, r.resource))
            .collect();
        let upstream = [
            ("", "endpoints"),
            ("", "events"),
            ("", "limitranges"),
            ("", "services"),
            ("coordination.k8s.io", "leasecandidates"),
            ("coordination.k8s.io", "leases"),
            ("events.k8s.io", "events"),
            ("node.k8s.io", "runtimeclasses"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("rbac.authorization.k8s.io", "roles"),
        ];
        assert_eq!(creating, upstream.into_iter().collect());
    }

    /// Every resource upstream prints with a printer of its own still has it, from its
    /// strategy; the others get the default Name, Created At.
    #[test]
    fn each_resource_prints_with_its_own_printer() {
        let printer = |group, resource| match for_resource(group, resource).table() {
            Columns::Printer(printer) => Some(printer as *const Printer),
            _ => None,
        };
        let cases: [(&str, &str, &'static Printer); 9] = [
            ("", "pods", &tables::PODS),
            ("apps", "deployments", &tables::DEPLOYMENTS),
            ("", "events", &tables::EVENTS),
            ("events.k8s.io", "events", &tables::EVENTS_V1),
            ("rbac.authorization.k8s.io", "rolebindings", &tables::ROLE_BINDINGS),
            ("rbac.authorization.k8s.io", "clusterrolebindings", &tables::CLUSTER_ROLE_BINDINGS),
            ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", &tables::groups::PRIORITY_LEVEL_CONFIGURATIONS),
            ("admissionregistration.k8s.io", "mutatingadmissionpolicies", &tables::groups::MUTATING_ADMISSION_POLICIES),
            ("resource.k8s.io", "resourceclaims", &tables::groups::RESOURCE_CLAIMS),
        ];
        for (group, resource, want) in cases {
            assert_eq!(printer(group, resource), Some(want as *const Printer), "{group}/{resource}");
        }
        assert!(matches!(for_resource("apiregistration.k8s.io", "apiservices").table(), Columns::ApiService));
        for (group, resource) in [("", "limitranges"), ("rbac.authorization.k8s.io", "roles"), ("example.com", "widgets")] {
            assert!(matches!(for_resource(group, resource).table(), Columns::Default), "{group}/{resource}");
        }
        let printed: std::collections::BTreeSet<_> = kapi_api::scheme::RESOURCES
            .iter()
            .filter(|r| !r.resource.contains('/') && printer(r.group, r.resource).is_some())
            .map(|r| (r.group, r.resource))
            .collect();
        assert_eq!(printed.len(), 64, "resources with a printer of their own: {printed:?}");
    }
}
