//! The generic registry store (upstream's `k8s.io/apiserver/pkg/registry/generic/registry.Store`):
//! every write of every resource — create, update (one guaranteed update for PUT, PATCH and the
//! subresources), delete — with the resource's strategy, the admission chain and dry run in one
//! place, over the storage interface. It knows no HTTP: the handlers decode requests into its
//! calls and encode what it returns, and the in-process controllers call it as they are.

use bytes::Bytes;
use kapi_apimachinery::codec::CodecError;
use serde_json::{Value, json};

use super::admission::{self, Attributes, Operation, Target};
use super::fieldmanager::ManagedFields;
use super::object::{Form, MetaChange, Object};
use super::objects::{self, Kind, TypedObject};
use super::strategy::{HookContext, Strategy, SubresourceWrite};
use super::{DeletionFlow, keys};
use crate::group_index::same_name;
use crate::request_info::UserInfo;
use crate::status::{ApiError, FieldError, GroupKind, GroupResource};
use crate::storage::{KeyValue, Revision, Storage, StorageError};

mod encoded;
mod read;
pub mod watched;
pub use read::{Filter, JsonListItems, ListedMeta, ObjectWatch, WatchEvent, selection};
pub use watched::WatchedObject;

/// How often a write is tried again when the object changed under it and the request set no
/// resourceVersion precondition (upstream's `GuaranteedUpdate` retries until it applies).
const ATTEMPTS: usize = 5;

/// What the store serves besides the objects: the server's settings the strategies read.
#[derive(Clone, Default)]
pub struct StoreConfig {
    /// `--service-cluster-ip-range` and `--service-node-port-range`, for Service allocation.
    pub network: super::core::services::ServiceNetwork,
    /// `--event-ttl`: how long Events live after their last write.
    pub event_ttl: std::time::Duration,
    /// The authorizer (`--authorization-mode`), which the access reviews and RBAC's escalation
    /// checks ask.
    pub authorizer: std::sync::Arc<super::rbac::authorizer::Authorizer>,
    /// The token authenticators, which `TokenReview` and the TokenRequest subresource use.
    pub authentication: std::sync::Arc<super::authentication::Authentication>,
    /// The admission plugins (`--enable-admission-plugins`, `--disable-admission-plugins`).
    pub admission: admission::Chain,
}

/// Who writes and how: the user (for what strategies record of them and for admission) and
/// whether the write is a dry run (everything but the write, upstream's `dryRun=All`).
#[derive(Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    pub user: Option<&'a UserInfo>,
    pub dry_run: bool,
    /// The field manager the write is recorded for (`fieldManager`, or the client's user agent;
    /// `unknown` when not given, as upstream).
    pub manager: Option<&'a str>,
    /// A write that creates the object when nothing is stored, whatever the resource allows
    /// (server-side apply: upstream's patcher forces `createNewObject`).
    pub create_missing: bool,
}

/// One resource (or subresource) of one API version, over a storage: upstream's per-resource
/// `Store`, made for a request or a controller's write.
pub struct Store<'a> {
    pub storage: &'a dyn Storage,
    pub config: &'a StoreConfig,
    pub group: &'a str,
    pub resource: &'a str,
    /// The subresource written (`status`, `scale`, `resize`, ...), if any.
    pub subresource: Option<&'a str>,
    /// The kind in the version the caller speaks (the URL's): what objects are read as.
    pub kind: Kind,
    pub strategy: &'a dyn Strategy,
}

/// An object a request proposes, as the server works on it: the internal object (the external
/// one decoded, defaulted and converted, upstream's decode → default → convert to internal)
/// and the required-field errors found on the external one before conversion.
pub struct Incoming {
    pub object: Object,
    pub required: Vec<FieldError>,
}

impl Incoming {
    /// An object the server writes itself (start-up objects, controllers' creates), given as
    /// the external JSON object a client would send: decoded and defaulted as such a body is.
    pub fn from_object(group: &str, resource: &str, kind: &Kind, object: &Value) -> Result<Incoming, ApiError> {
        let external = Object::defaulted(kind, object).map_err(ApiError::internal)?;
        Incoming::from_external(group, resource, kind, external)
    }

    /// A request's object, decoded and defaulted in `kind`'s version, made internal. A typed
    /// object stays typed when it is its own internal object and stored as it is
    /// ([`objects::stores_as_decoded`]).
    pub fn from_external(group: &str, resource: &str, kind: &Kind, external: impl Into<Object>) -> Result<Incoming, ApiError> {
        let external = external.into();
        let required = super::validation::required_errors(group, resource, external.value()?);
        if objects::stores_as_decoded(kind) {
            return Ok(Incoming { object: external, required });
        }
        // A kind served in several versions: its internal object is its hub value.
        if let Some(dyn_kind) = objects::dyn_kind(kind).filter(|typed| !typed.internal_is_external()) {
            return Ok(Incoming { object: Object::hub(external.into_hub(dyn_kind)?), required });
        }
        let object = objects::to_internal(kind, external.into_value()?)
            .map_err(|e| ApiError::bad_request(format!("the object could not be converted from {}: {e}", kind.api_version())))?;
        Ok(Incoming { object: Object::from_value(object), required })
    }

    /// A copy, for a request that proposes the same object on each attempt.
    pub fn clone_incoming(&self) -> Incoming {
        Incoming { object: self.object.clone_object(), required: self.required.clone() }
    }
}

/// The stored object an update starts from, in the caller's version and as the internal object.
pub struct Current<'k> {
    pub kv: &'k KeyValue,
    /// Its kind in the caller's version.
    pub kind: Kind,
    /// The internal object, as JSON and, when it is stored as decoded, as the generated
    /// object it was read as (what validation's typed rules read the old object as).
    internal: Object,
    /// The object as the caller sees it, when that is not `internal` (another version).
    converted: Option<Value>,
}

impl Current<'_> {
    /// The object as the caller sees it.
    pub fn external(&self) -> Result<&Value, ApiError> {
        match &self.converted {
            Some(converted) => Ok(converted),
            None => self.internal.value(),
        }
    }

    /// The internal object as JSON.
    pub fn internal(&self) -> Result<&Value, ApiError> {
        self.internal.value()
    }

    /// A copy of the internal object in its most typed form: what a server-side writer
    /// changes into its proposed object ([`Proposed::edited`]).
    pub fn internal_object(&self) -> Object {
        self.internal.clone_object()
    }
}

/// What an update proposes given the current object (upstream's `rest.UpdatedObjectInfo`):
/// the new object, the resourceVersion it must replace when the request names one, and the
/// uid the stored object must have when the request's object carries one (a PUT's, upstream's
/// `Preconditions()`: a body read before its object was deleted and made again does not
/// replace the new one).
pub struct Proposed {
    pub incoming: Incoming,
    pub precondition: Option<String>,
    pub uid: Option<String>,
    /// The object's `managedFields` when the update made them itself (an apply; `Null` for
    /// none); `None` to record the write as an `Update` of its manager.
    pub managed_fields: Option<Value>,
}

impl Proposed {
    /// A server-side writer's new internal object, made from the current one: no
    /// preconditions, and the write recorded as an `Update` of its manager.
    pub fn edited(object: impl Into<Object>) -> Proposed {
        let incoming = Incoming { object: object.into(), required: Vec::new() };
        Proposed { incoming, precondition: None, uid: None, managed_fields: None }
    }
}

/// How an update makes its proposed object from the current one: a PUT's body, a patch
/// applied to the current object, a `Scale` written back into its object. It is given `None`
/// when nothing is stored and the resource creates on update
/// ([`Strategy::allow_create_on_update`]; upstream hands its `UpdatedObjectInfo` a zero
/// object then): a PUT proposes its body, which is created; a write that changes a stored
/// object answers NotFound, as upstream's patch does.
pub type UpdateFn<'f> = dyn FnMut(Option<&Current<'_>>) -> Result<Proposed, ApiError> + Send + 'f;

/// What a delete did.
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Kind, Value),
    /// The object is marked for deletion and waits for finalizers; this is its new state.
    Pending(Kind, Value),
}

/// What a write stored: the key-value and the typed object that was encoded (in the storage
/// version), so an answer in that version needs no decoding.
pub struct Written {
    pub kv: KeyValue,
    pub object: Box<dyn TypedObject>,
    /// The strategy's warnings about the object, for the client.
    pub warnings: Vec<String>,
    /// Whether the write created the object (a POST, or a PUT to a name nothing was stored
    /// under): upstream answers 201 then, 200 for a replaced object.
    pub created: bool,
}

/// A new object ready to be written: where, under which name, its stored bytes, and what a
/// [`Written`] reports of it.
struct NewObject {
    key: String,
    name: String,
    stored: Bytes,
    object: Box<dyn TypedObject>,
    warnings: Vec<String>,
}

impl<'a> Store<'a> {
    /// The store of a resource (and subresource), reading objects as `kind`.
    pub fn new(storage: &'a dyn Storage, config: &'a StoreConfig, group: &'a str, resource: &'a str, kind: Kind) -> Self {
        Store { storage, config, group, resource, subresource: None, kind, strategy: super::strategy(group, resource) }
    }

    /// The store of a resource whose strategy is made at run time (a custom resource's).
    pub fn with_strategy(self, strategy: &'a dyn Strategy) -> Self {
        Store { strategy, ..self }
    }

    pub fn with_subresource(self, subresource: Option<&'a str>) -> Self {
        Store { subresource, ..self }
    }

    pub fn group_resource(&self) -> GroupResource<'a> {
        GroupResource::new(self.group, self.resource)
    }

    /// What the strategy's hooks are given besides the object.
    fn hook_context(&self) -> HookContext<'_> {
        HookContext { store: self.storage, config: self.config }
    }

    /// Where the object named `name` lives (a client's name checked to be one path segment).
    pub fn object_key(&self, namespace: Option<&str>, name: &str) -> Result<String, ApiError> {
        keys::object_key_under(&keys::strategy_prefix(self.strategy, self.group, self.resource), namespace, name)
    }

    /// The storage prefix of the collection (in `namespace`, if given).
    pub fn collection_key(&self, namespace: Option<&str>) -> String {
        keys::key_under(&keys::strategy_prefix(self.strategy, self.group, self.resource), namespace, None)
    }

    fn has_status_subresource(&self) -> bool {
        super::strategy::has_status_subresource(self.strategy, self.group, self.resource)
    }

    /// An object of `kind` (the internal object of a scheme's kind) encoded for storage, in
    /// the storage version ([`stored_kind`]): converted by [`Strategy::converter`] when
    /// the scheme does not know the kind, through the hub otherwise.
    fn encode(
        &self,
        kind: &Kind,
        object: Object,
        managed_fields: Option<&ManagedFields>,
    ) -> Result<(Vec<u8>, Box<dyn TypedObject>), ApiError> {
        let stored = stored_kind(self.strategy, kind);
        let object = match object.into_form() {
            // Typed from its decoding on, which only a kind stored as decoded stays
            // (`Incoming::from_external`).
            Form::Typed(typed) if stored == *kind && objects::stores_as_decoded(kind) => {
                return objects::encode_typed_with(&stored, typed, managed_fields).map_err(ApiError::internal);
            }
            Form::Typed(typed) => typed.to_value().map_err(|e| ApiError::internal(format!("writing an object as JSON: {e}")))?,
            // The hub value of a kind served in several versions.
            Form::Hub(hub) => return objects::encode_hub_with(&stored, hub, managed_fields).map_err(ApiError::internal),
            Form::Json(value) => value,
        };
        let object = match self.strategy.converter() {
            Some(convert) if !objects::is_registered(kind) && stored != *kind => {
                convert(kind, object, &stored.version).map_err(ApiError::internal)?
            }
            _ => object,
        };
        objects::encode_internal_with(&stored, object, managed_fields).map_err(ApiError::internal)
    }

    fn storage_error(&self, e: StorageError, name: &str) -> ApiError {
        match e {
            StorageError::NotFound { .. } => ApiError::not_found(self.group_resource(), name),
            StorageError::AlreadyExists { .. } => ApiError::already_exists(self.group_resource(), name),
            StorageError::Conflict { .. } => ApiError::conflict(self.group_resource(), name),
            other => ApiError::from(other),
        }
    }

    fn target<'t>(&'t self, namespace: Option<&'t str>, name: &'t str) -> Target<'t> {
        Target {
            group: self.group,
            resource: self.resource,
            subresource: self.subresource,
            kind: &self.kind.kind,
            namespace: namespace.unwrap_or_default(),
            name,
        }
    }

    fn attributes<'t>(
        &'t self,
        options: WriteOptions<'t>,
        operation: Operation,
        target: Target<'t>,
        object: Option<&'t mut Object>,
        old: Option<&'t Object>,
    ) -> Attributes<'t> {
        Attributes {
            store: self.storage,
            operation,
            target,
            strategy: self.strategy,
            object,
            old,
            user: options.user,
            dry_run: options.dry_run,
        }
    }

    /// The stored object at `key`, or the resource's 404.
    pub async fn current(&self, key: &str, name: &str) -> Result<KeyValue, ApiError> {
        self.storage
            .get(key)
            .await
            .map_err(|e| self.storage_error(e, name))?
            .ok_or_else(|| ApiError::not_found(self.group_resource(), name))
    }

    /// A stored object as the caller sees it: in the caller's version (converted from the
    /// storage version, by the strategy's [`Strategy::converter`] when it has one), with
    /// `resourceVersion` from the store.
    pub fn read(&self, kv: &KeyValue) -> Result<(Kind, Value), ApiError> {
        read_for(self.strategy, kv, &self.kind)
    }

    /// `Create`: admission's mutating phase, identity and generation, the strategy's
    /// `PrepareForCreate`, validation, `BeginCreate`, admission's validating phase, then the
    /// write (none under dry run).
    pub async fn create(&self, options: WriteOptions<'_>, namespace: Option<&str>, incoming: Incoming) -> Result<Written, ApiError> {
        let new = self.new_object(options, namespace, None, incoming, None).await?;
        let kv = self.write_create(options, &new.key, new.stored).await.map_err(|e| self.storage_error(e, &new.name))?;
        Ok(Written { kv, object: new.object, warnings: new.warnings, created: true })
    }

    /// Everything a create does before its write: the object admitted, given its identity,
    /// prepared, validated and encoded. `url_name` is the name a PUT that creates was sent to
    /// (the object takes it; `generateName` plays no part); a POST names the object in its
    /// body.
    async fn new_object(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        url_name: Option<&str>,
        incoming: Incoming,
        managed_fields: Option<Value>,
    ) -> Result<NewObject, ApiError> {
        let Incoming { object, required } = incoming;
        let kind = &self.kind;
        let mut object = of_kind(kind, object);
        // Field management sees the request's object, before admission changes it (upstream's
        // create handler runs its field manager first).
        let managed_fields = match managed_fields {
            Some(managed) => WriteManagedFields::Json(managed),
            None => WriteManagedFields::Recorded(self.managed_fields_of_update(options, None, &object)?),
        };
        let registered = objects::is_registered(kind);
        managed_fields.set_in(&mut object, registered)?;
        // The object is in the namespace it is created in, from admission on (the handlers
        // have checked a body's own namespace against the request's).
        if let Some(ns) = namespace {
            object.set_meta(&[MetaChange::Namespace(Some(ns))]);
        }
        if let Some(name) = url_name {
            object.set_meta(&[MetaChange::Name(name)]);
        }
        let name_in_body = object.names()?.0.unwrap_or_default();
        let target = self.target(namespace, &name_in_body);
        self.config.admission.admit(&mut self.attributes(options, Operation::Create, target, Some(&mut object), None)).await?;
        let (body_name, generate_name) = object.names()?;
        let name = match (url_name, body_name) {
            (Some(name), _) => name.to_owned(),
            (None, Some(n)) if !n.is_empty() => n,
            (None, _) => match generate_name {
                Some(prefix) if !prefix.is_empty() => format!("{prefix}{}", objects::random_suffix()),
                _ => {
                    return Err(ApiError::invalid(
                        GroupKind::new(&kind.group, &kind.kind),
                        "",
                        &[FieldError::required("metadata.name", "name or generateName is required")],
                    ));
                }
            },
        };
        if let Some(ns) = namespace {
            object.set_meta(&[MetaChange::Namespace(Some(ns))]);
        }
        let uid = uuid::Uuid::new_v4().to_string();
        object.set_meta(&[
            MetaChange::Name(&name),
            MetaChange::Uid(&uid),
            MetaChange::CreationTimestamp(chrono::Utc::now()),
            MetaChange::Generation(self.strategy.tracks_generation().then_some(1)),
            MetaChange::NoResourceVersion,
        ]);
        self.strategy.normalize(&mut object)?;
        // Status is the server's to write: a new object of a resource with a status
        // subresource starts with its type's zero status, or with what its strategy's
        // `prepare_for_create` sets in its place. Set in the form the object is at hand in, so
        // a generated (or hub) object stays one.
        if self.has_status_subresource() && !self.strategy.sets_status_on_create() {
            let zero = object.zero_of_form(kind)?;
            object.set_status_from(&zero)?;
        }
        self.strategy.prepare_for_create(&mut object, options.user)?;
        self.validate(&name, None, &object, required)?;
        self.authorize_write(options, namespace, None, &object)?;
        let warnings = self.strategy.warnings_on_create(&object)?;
        let target = Target { name: &name, ..target };
        self.strategy.begin_create(&self.hook_context(), &mut object).await.map_err(|rejection| target.refuse(rejection))?;
        self.config.admission.validate(&self.attributes(options, Operation::Create, target, Some(&mut object), None)).await?;

        let (stored, object) = self.encode(kind, object, managed_fields.for_encoding(registered))?;
        let key = self.object_key(namespace, &name)?;
        Ok(NewObject { key, name, stored: stored.into(), object, warnings })
    }

    /// `Update` through `GuaranteedUpdate`: read the current object, let `update` propose the
    /// new one, run admission, the strategy (or the subresource's) and validation, and write it
    /// guarded on the revision read; when the object changed meanwhile and the request named no
    /// resourceVersion, start again from the new current object.
    ///
    /// With nothing stored the answer is NotFound, unless the resource creates on update
    /// ([`Self::creates_on_update`]): then what `update` proposes is created as a POST's body
    /// would be (admitted as a create, [`Written::created`]). A resourceVersion in the request
    /// plays no part then, as in upstream's store, which compares it only with a stored
    /// object's; a uid does, and fails as its precondition.
    pub async fn update(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        name: &str,
        update: &mut UpdateFn<'_>,
    ) -> Result<Written, ApiError> {
        let key = self.object_key(namespace, name)?;
        let target = self.target(namespace, name);
        let subresource_write = self.subresource.and_then(|sub| SubresourceWrite::with(self.strategy, self.group, self.resource, sub));
        for _ in 0..ATTEMPTS {
            let Some(kv) = self.storage.get(&key).await.map_err(|e| self.storage_error(e, name))? else {
                if !(self.creates_on_update() || options.create_missing && self.subresource.is_none()) {
                    return Err(ApiError::not_found(self.group_resource(), name));
                }
                let Proposed { incoming, uid, managed_fields, .. } = update(None)?;
                check_uid(self.group_resource(), &key, name, uid.as_deref(), "")?;
                let new = self.new_object(options, namespace, Some(name), incoming, managed_fields).await?;
                match self.write_create(options, &key, new.stored).await {
                    Ok(kv) => return Ok(Written { kv, object: new.object, warnings: new.warnings, created: true }),
                    // Created by another writer meanwhile: this request updates that object
                    // instead, as upstream's `GuaranteedUpdate` goes on from what it finds.
                    Err(StorageError::AlreadyExists { .. }) => continue,
                    Err(e) => return Err(self.storage_error(e, name)),
                }
            };
            let current = self.read_current(&kv)?;
            let Proposed { incoming: Incoming { object: proposed, required }, precondition, uid, managed_fields } = update(Some(&current))?;
            let mut proposed = of_kind(&current.kind, proposed);
            let stored_uid = current.internal.uid()?;
            check_uid(self.group_resource(), &key, name, uid.as_deref(), stored_uid.as_deref().unwrap_or_default())?;
            if let Some(rv) = precondition.as_deref().filter(|rv| !rv.is_empty())
                && rv != kv.mod_revision.to_string()
            {
                return Err(ApiError::conflict(self.group_resource(), name));
            }
            let managed_fields = match managed_fields {
                Some(managed) => WriteManagedFields::Json(managed),
                None => WriteManagedFields::Recorded(self.managed_fields_of_update(options, Some(&current), &proposed)?),
            };
            let registered = objects::is_registered(&current.kind);
            managed_fields.set_in(&mut proposed, registered)?;
            let old = &current.internal;
            self.config.admission.admit(&mut self.attributes(options, Operation::Update, target, Some(&mut proposed), Some(old))).await?;
            let mut warnings = Vec::new();
            let mut object = match subresource_write {
                Some(write) => {
                    let merged = of_kind(&current.kind, write.merge(old, &proposed)?);
                    let errs = write.validate_update(old, &merged)?;
                    if !errs.is_empty() {
                        return Err(ApiError::invalid(GroupKind::new(&current.kind.group, &current.kind.kind), name, &errs));
                    }
                    merged
                }
                None => {
                    self.strategy
                        .begin_update(&self.hook_context(), &mut proposed, old)
                        .await
                        .map_err(|rejection| target.refuse(rejection))?;
                    self.prepare_update(old, &mut proposed, name, namespace)?;
                    self.validate(name, Some(old), &proposed, required)?;
                    self.authorize_write(options, namespace, Some(old), &proposed)?;
                    warnings = self.strategy.warnings_on_update(&proposed, old)?;
                    proposed
                }
            };
            self.config.admission.validate(&self.attributes(options, Operation::Update, target, Some(&mut object), Some(old))).await?;
            object.set_meta(&[MetaChange::NoResourceVersion]);
            // A subresource's write keeps the stored metadata: its managed fields are set here.
            managed_fields.set_in(&mut object, registered)?;
            let finalized = object.deletion_completes()? && self.strategy.should_delete_during_update(&object)?;
            // What an update that deletes hands the strategy's `after_delete`.
            let deleted = match finalized && !options.dry_run {
                true => Some(object.value()?.clone()),
                false => None,
            };
            let (stored, object) = self.encode(&current.kind, object, managed_fields.for_encoding(registered))?;
            // An update that changes nothing is not written, as upstream's `GuaranteedUpdate`
            // answers it: the object keeps its resourceVersion and watchers see no event.
            if !finalized && stored == kv.value {
                return Ok(Written { kv, object, warnings, created: false });
            }
            match self.commit_update(options, &key, finalized, stored.into(), kv.mod_revision).await {
                Ok(kv) => {
                    if let Some(deleted) = &deleted {
                        self.strategy.after_delete(&self.hook_context(), deleted).await;
                    }
                    return Ok(Written { kv, object, warnings, created: false });
                }
                Err(StorageError::Conflict { .. }) if precondition.is_none() => continue,
                Err(e) => return Err(self.storage_error(e, name)),
            }
        }
        Err(ApiError::conflict(self.group_resource(), name))
    }

    /// The stored object an update starts from, decoded once: its kind as a read in the
    /// caller's version shows it, its external object when that is not the internal one
    /// ([`Current::external`]), and its internal object. A kind the scheme does not know (a
    /// custom resource's) has no internal version: the store works on the object in the
    /// caller's version, as a read shows it (with its definition's current defaults), which
    /// validation and `generation` compare the new one with.
    fn read_current<'k>(&self, kv: &'k KeyValue) -> Result<Current<'k>, ApiError> {
        let decoding = |e: CodecError| ApiError::internal(format!("decoding {}: {e}", kv.key));
        let objects::StoredObject { kind: stored, typed, value } = objects::decode_stored_typed(&kv.value).map_err(decoding)?;
        if !objects::is_registered(&stored) {
            let (kind, external) = self.read(kv)?;
            return Ok(Current { kv, kind, internal: Object::from_value(external), converted: None });
        }
        // Read in the version it is stored as, a kind that is its own hub is its internal object.
        if stored.group == self.kind.group && stored.version == self.kind.version && objects::stores_as_decoded(&stored) {
            let value = with_resource_version(kv, value);
            let internal = match (typed, objects::dyn_kind(&stored)) {
                (Some(mut typed), Some(dyn_kind)) => {
                    if kv.mod_revision > 0 {
                        typed.set_resource_version(&kv.mod_revision.to_string());
                    }
                    Object::typed(dyn_kind, typed, value)
                }
                _ => Object::from_value(value),
            };
            return Ok(Current { kv, kind: stored, internal, converted: None });
        }
        let internal = match typed {
            // A kind served in several versions: its internal object is its hub value.
            Some(typed) if objects::dyn_kind(&stored).is_some_and(|stored| !stored.internal_is_external()) => {
                let mut internal = Object::hub(typed.into_hub());
                if kv.mod_revision > 0 {
                    internal.set_meta(&[MetaChange::ResourceVersion(&kv.mod_revision.to_string())]);
                }
                internal
            }
            _ => Object::from_value(with_resource_version(kv, objects::to_internal(&stored, value.clone()).map_err(decoding)?)),
        };
        let (kind, external) = objects::convert_stored(&stored, value, &self.kind.group, &self.kind.version)
            .map_err(|e| ApiError::internal(format!("converting {}: {e}", kv.key)))?;
        // A kind that is its own hub, stored in another version: its internal object is of the
        // caller's kind, which typed rules read it as.
        let internal = match objects::dyn_kind(&kind).filter(|typed| typed.internal_is_external()) {
            Some(typed) => internal.of_kind(typed),
            None => internal,
        };
        Ok(Current { kv, kind, internal, converted: Some(with_resource_version(kv, external)) })
    }

    /// The fields the endpoint leaves to another one (upstream's `GetResetFields`): the
    /// status of a resource with a status subresource, the spec through `status`.
    pub fn reset_fields(&self) -> super::fieldmanager::set::Set {
        use super::fieldmanager::reset_set;
        match self.subresource {
            None if self.has_status_subresource() => reset_set(&[&["status"]]),
            Some("status") => reset_set(&[&["spec"]]),
            _ => reset_set(&[]),
        }
    }

    /// The schema the strategy gives field management ([`Strategy::field_schema`]), which
    /// [`Store::field_type`] reads.
    pub fn field_schema(&self) -> Option<std::sync::Arc<Value>> {
        self.strategy.field_schema()
    }

    /// The schema field management reads the objects with: the strategy's (`schema`, from
    /// [`Store::field_schema`]), else the kind's generated fields (an unknown kind's objects are
    /// deduced from their JSON).
    pub fn field_type<'s>(&self, schema: &'s Option<std::sync::Arc<Value>>) -> super::fieldmanager::typed::Type<'s> {
        use super::fieldmanager::schemas;
        match schema {
            Some(schema) => schemas::resource_type(schema),
            None => schemas::kind_type(&self.kind),
        }
    }

    /// How field management sees an object of the kind in another version
    /// (`fieldmanager::Converter`, upstream's `versionConverter`): a built-in kind converted
    /// through its hub, with that version's generated fields; a custom resource by its
    /// definition's conversion (`strategy: None` changes only `apiVersion`; a webhook is called,
    /// as upstream's converter does), with that version's schema. Nothing for another group, or
    /// a version the kind does not have.
    pub fn version_converter<'s>(&'s self) -> impl Fn(&Value, &str, &str) -> Option<(Value, super::fieldmanager::typed::Type<'s>)> + 's {
        move |object, from, to| {
            let kind_at = |api_version: &str| {
                let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                Kind { group: group.to_owned(), version: version.to_owned(), kind: self.kind.kind.clone() }
            };
            let (from, to) = (kind_at(from), kind_at(to));
            if !same_name(&from.group, &self.kind.group) || !same_name(&to.group, &self.kind.group) {
                return None;
            }
            if objects::is_registered(&self.kind) {
                if !objects::is_registered(&from) || !objects::is_registered(&to) {
                    return None;
                }
                let converted = objects::convert(object, &from, &to).ok()?;
                return Some((converted, super::fieldmanager::schemas::kind_type(&to)));
            }
            let schema = self.strategy.version_field_schema(&to.version)?;
            let convert = self.strategy.converter()?;
            let mut object = object.clone();
            // The zero object of a create has no apiVersion; the conversion reads it.
            if let Some(fields) = object.as_object_mut() {
                fields.entry("apiVersion").or_insert_with(|| Value::String(from.api_version()));
            }
            let converted = convert(&from, object, &to.version).ok()?;
            Some((converted, super::fieldmanager::schemas::resource_type(schema)))
        }
    }

    /// The `managedFields` after a write that is recorded as an `Update` of its manager:
    /// `proposed` (internal) replacing `current` (nothing on a create: the kind's zero object).
    fn managed_fields_of_update(
        &self,
        options: WriteOptions<'_>,
        current: Option<&Current<'_>>,
        proposed: &Object,
    ) -> Result<Option<ManagedFields>, ApiError> {
        use super::fieldmanager::{Context, Writer, update};
        let kind = &self.kind;
        let new = proposed.external_value(kind)?;
        let zero;
        let (live, live_managed) = match current {
            Some(current) => (current.external()?, &current.internal()?["metadata"]["managedFields"]),
            None => {
                zero = objects::zero_object(kind);
                (&*zero, &Value::Null)
            }
        };
        let api_version = kind.api_version();
        let now = objects::now();
        let reset = self.reset_fields();
        let schema = self.field_schema();
        let converter = self.version_converter();
        // The context's borrows (the schema, `now`) live shorter than the store the converter reads.
        let converter = |object: &Value, from: &str, to: &str| converter(object, from, to);
        let cx = Context {
            ty: self.field_type(&schema),
            reset: &reset,
            writer: Writer {
                manager: options.manager.filter(|m| !m.is_empty()).unwrap_or("unknown"),
                api_version: &api_version,
                subresource: self.subresource,
            },
            now: &now,
            convert: Some(&converter),
        };
        Ok(update(&cx, live, &new, live_managed, &new["metadata"]["managedFields"]))
    }

    /// The strategy's checks of the requesting user ([`Strategy::authorize_write`]).
    fn authorize_write(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        old: Option<&Object>,
        new: &Object,
    ) -> Result<(), ApiError> {
        let Some(user) = options.user else { return Ok(()) };
        let context = super::strategy::WriteContext {
            user,
            authorizer: &self.config.authorizer,
            group: self.group,
            resource: self.resource,
            namespace,
        };
        self.strategy.authorize_write(&context, old, new)
    }

    /// Whether an update of a name nothing is stored under creates the object: the resource's
    /// strategy allows it, and the write is to the object itself. A subresource never creates
    /// (upstream's status strategies inherit their resource's `AllowCreateOnUpdate`, so a
    /// Service's status PUT could create one there; kapi keeps to the object's own endpoint).
    pub fn creates_on_update(&self) -> bool {
        self.subresource.is_none() && self.strategy.allow_create_on_update()
    }

    /// Upstream's `Storage.GuaranteedUpdate` with none of the store around it: read the object
    /// at `key` (internal, as the store works on it), let `change` change it, and write it
    /// guarded on the revision read, starting again from the new object when it changed
    /// meanwhile, unless `precondition` names the resourceVersion the caller expects (then a
    /// different one is a Conflict). No admission, strategy or validation: for what a
    /// resource's own REST code writes on its account (a pod's binding), as upstream's calls
    /// its storage directly.
    pub async fn guaranteed_update(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        name: &str,
        precondition: Option<&str>,
        change: &mut (dyn FnMut(&mut Value) -> Result<(), ApiError> + Send),
    ) -> Result<KeyValue, ApiError> {
        let key = self.object_key(namespace, name)?;
        let precondition = precondition.filter(|rv| !rv.is_empty());
        for _ in 0..ATTEMPTS {
            let kv = self.current(&key, name).await?;
            if precondition.is_some_and(|rv| rv != kv.mod_revision.to_string()) {
                return Err(ApiError::conflict(self.group_resource(), name));
            }
            let (stored_as, mut object) = read_internal(&kv)?;
            change(&mut object)?;
            if let Some(meta) = object["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
            // A scheme's kind is read as its internal object; any other as stored.
            let kind = if objects::is_registered(&stored_as) { &self.kind } else { &stored_as };
            let (stored, _) = self.encode(kind, Object::from_value(object), None)?;
            match self.write_update(options, &key, stored.into(), kv.mod_revision).await {
                Ok(kv) => return Ok(kv),
                Err(StorageError::Conflict { .. }) if precondition.is_none() => continue,
                Err(e) => return Err(self.storage_error(e, name)),
            }
        }
        Err(ApiError::conflict(self.group_resource(), name))
    }

    /// Admission of a create that a resource's own REST code answers (a pod's binding or
    /// eviction): the object is not stored, but upstream's create handler admits it all the
    /// same, the mutating phase before the REST code sees it ...
    pub async fn admit_create(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        let target = self.target(namespace, name);
        let mut admitted = Object::from_value(std::mem::take(object));
        let result = self.config.admission.admit(&mut self.attributes(options, Operation::Create, target, Some(&mut admitted), None)).await;
        *object = admitted.into_value()?;
        result
    }

    /// ... and the validating phase once that code has checked it (upstream's
    /// `createValidation`).
    pub async fn validate_create_admission(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        let target = self.target(namespace, name);
        let mut admitted = Object::from_value(std::mem::take(object));
        let result = self.config.admission.validate(&self.attributes(options, Operation::Create, target, Some(&mut admitted), None)).await;
        *object = admitted.into_value()?;
        result
    }

    /// What an update may not change and what it maintains: identity and creation time are the
    /// stored object's, the status is the status subresource's, `generation` follows spec
    /// changes. (`resourceVersion` is cleared for every update, subresources' too, before it
    /// is encoded.)
    fn prepare_update(&self, old: &Object, object: &mut Object, name: &str, namespace: Option<&str>) -> Result<(), ApiError> {
        self.strategy.normalize(object)?;
        // Each is set only where the proposed object differs, in the most typed form both
        // objects have: one that carries them already (a PUT of what was read, a patch) keeps
        // its forms.
        object.keep_identity_of(old, name, namespace)?;
        // The main resource ignores status changes when status has its own endpoint.
        if self.subresource.is_none() && self.has_status_subresource() {
            object.set_status_from(old)?;
        }
        self.strategy.prepare_for_update(object, old)?;
        if self.strategy.tracks_generation() {
            let generation = old.generation()?.unwrap_or(1);
            let changed = self.strategy.generation_changed(old, object)?;
            object.set_meta(&[MetaChange::Generation(Some(if changed { generation + 1 } else { generation }))]);
        }
        Ok(())
    }

    /// Upstream's object validation for the resource as a 422 `Invalid`: create rules, or update
    /// rules (immutability included) when `old` is the stored object being replaced; both are
    /// internal objects. `required` are the required-field errors of the request's object.
    fn validate(&self, name: &str, old: Option<&Object>, object: &Object, required: Vec<FieldError>) -> Result<(), ApiError> {
        use super::validation::{validate_create, validate_update};
        let errs = match old {
            None => validate_create(self.strategy, object, required)?,
            Some(old) => validate_update(self.strategy, old, object, required)?,
        };
        if errs.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(GroupKind::new(&self.kind.group, &self.kind.kind), name, &errs))
    }

    /// `Delete`: admission, `DeleteOptions` preconditions, then the object is deleted, or marked
    /// when finalizers (its own, or a system's such as a namespace's `kubernetes`) or a grace
    /// period have to run first.
    ///
    /// The garbage collector is not part of kapi yet, so `propagationPolicy` is accepted but adds
    /// no `orphan` or `foregroundDeletion` finalizer: nothing would ever remove them.
    pub async fn delete(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        name: &str,
        delete_options: &Value,
    ) -> Result<Deleted, ApiError> {
        let target = self.target(namespace, name);
        self.config.admission.admit(&mut self.attributes(options, Operation::Delete, target, None, None)).await?;
        let key = self.object_key(namespace, name)?;
        self.delete_at(options, &key, name, delete_options).await
    }

    /// The delete of the object at `key` (a listed one, for delete-collection).
    pub async fn delete_at(&self, options: WriteOptions<'_>, key: &str, name: &str, delete_options: &Value) -> Result<Deleted, ApiError> {
        let gr = self.group_resource();
        for _ in 0..ATTEMPTS {
            let current = self.current(key, name).await?;
            let (kind, old) = self.read(&current)?;
            check_preconditions(gr, &old, current.mod_revision, &delete_options["preconditions"], name)?;
            let deleting = old["metadata"]["deletionTimestamp"].is_string();
            let has_finalizers = old["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
            let flow = self.strategy.deletion_flow(&old);
            if let (DeletionFlow::AwaitSystem { in_progress }, true) = (&flow, deleting) {
                return Err(ApiError::conflict_because(gr, name, in_progress));
            }
            // Graceful deletion (pods): the object stays, marked, for its grace period; a later
            // delete may only shorten it, and a zero period deletes at once.
            let requested = requested_grace_period(delete_options);
            let grace = self.strategy.grace_period(&old, requested);
            // A negative period stored by someone else counts as 1, as upstream's `BeforeDelete`.
            let pending_grace = old["metadata"]["deletionGracePeriodSeconds"].as_i64().map_or(0, |s| if s < 0 { 1 } else { s });
            let now = chrono::Utc::now();
            let mark = if deleting {
                // Only a period the client gives may shorten a pending graceful deletion.
                match grace.and(requested) {
                    Some(g) if g < pending_grace => Some(shortened_grace(&old["metadata"]["deletionTimestamp"], pending_grace, g, now)),
                    _ if has_finalizers || pending_grace > 0 => return Ok(Deleted::Pending(kind, old)),
                    _ => None,
                }
            } else if has_finalizers || flow.marks_first() || grace.is_some_and(|g| g > 0) {
                let period = grace.unwrap_or(0);
                Some((period, shifted(now, period)))
            } else {
                None
            };
            if let Some((period, at)) = mark
                && (period > 0 || has_finalizers || flow.marks_first())
            {
                let mut marked = old.clone();
                marked["metadata"]["deletionTimestamp"] = json!(objects::timestamp(at));
                marked["metadata"]["deletionGracePeriodSeconds"] = json!(period);
                self.strategy.mark_deleting(&mut marked);
                if let Some(meta) = marked["metadata"].as_object_mut() {
                    meta.remove("resourceVersion");
                }
                let stored = objects::encode_stored(&kind, &marked).map_err(ApiError::internal)?;
                match self.write_update(options, key, stored.into(), current.mod_revision).await {
                    Ok(kv) => {
                        let (kind, value) = self.read(&kv)?;
                        return Ok(Deleted::Pending(kind, value));
                    }
                    Err(StorageError::Conflict { .. }) => continue,
                    Err(e) => return Err(self.storage_error(e, name)),
                }
            }
            match self.write_delete(options, key, Some(current.mod_revision)).await {
                Ok((prev, _)) => {
                    if !options.dry_run {
                        self.strategy.after_delete(&self.hook_context(), &old).await;
                    }
                    let (kind, value) = self.read(&prev)?;
                    return Ok(Deleted::Gone(kind, value));
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(self.storage_error(e, name)),
            }
        }
        Err(ApiError::conflict(gr, name))
    }

    /// How long the resource's objects live after their last write, if they expire.
    fn ttl(&self) -> Option<std::time::Duration> {
        self.strategy.storage_ttl(self.config.event_ttl)
    }

    /// `Storage::create`, or under dry run the same checks without the write.
    async fn write_create(&self, options: WriteOptions<'_>, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        if !options.dry_run {
            return match self.ttl() {
                Some(ttl) => self.storage.create_with_ttl(key, value, ttl).await,
                None => self.storage.create(key, value).await,
            };
        }
        if self.storage.get(key).await?.is_some() {
            return Err(StorageError::AlreadyExists { key: key.to_owned() });
        }
        Ok(KeyValue { key: key.to_owned(), value, create_revision: 0, mod_revision: 0 })
    }

    /// `DeleteCollection`: every object the selectors select is deleted as by
    /// [`Store::delete_at`]. Answers what each delete left (the last state, or the state
    /// marked for deletion), without TypeMeta as list items, and the revision listed at.
    pub async fn delete_collection(
        &self,
        options: WriteOptions<'_>,
        namespace: Option<&str>,
        list_options: &crate::list_options::ListOptions,
        delete_options: &Value,
    ) -> Result<(Vec<Value>, Revision), ApiError> {
        let filter = self.filter(list_options);
        let prefix = self.collection_key(namespace);
        let listed = self.storage.list(&prefix, Default::default()).await.map_err(|e| self.storage_error(e, ""))?;
        let mut deleted = Vec::new();
        for kv in &listed.kvs {
            let (_, object) = self.read(kv)?;
            if !filter(&object) {
                continue;
            }
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            let mut item = match self.delete_at(options, &kv.key, name, delete_options).await {
                Ok(Deleted::Gone(_, object) | Deleted::Pending(_, object)) => object,
                // Deleted meanwhile by someone else: nothing left to do for it.
                Err(e) if e.code == 404 => continue,
                Err(e) => return Err(e),
            };
            if let Some(fields) = item.as_object_mut() {
                fields.remove("kind");
                fields.remove("apiVersion");
            }
            deleted.push(item);
        }
        Ok((deleted, listed.revision))
    }

    /// `Storage::update`, or under dry run the same checks without the write.
    pub async fn write_update(
        &self,
        options: WriteOptions<'_>,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        if !options.dry_run {
            return match self.ttl() {
                Some(ttl) => self.storage.update_with_ttl(key, value, expected, ttl).await,
                None => self.storage.update(key, value, expected).await,
            };
        }
        let current = self.storage.get(key).await?.ok_or_else(|| StorageError::NotFound { key: key.to_owned() })?;
        if current.mod_revision != expected {
            return Err(StorageError::Conflict { key: key.to_owned(), expected, current });
        }
        Ok(KeyValue { value, ..current })
    }

    /// Stores an updated object; when it is being deleted and its last finalizer is gone
    /// (`finalized`, [`Object::deletion_completes`]), the deletion completes instead
    /// (upstream's generic store does the same after an update).
    async fn commit_update(
        &self,
        options: WriteOptions<'_>,
        key: &str,
        finalized: bool,
        stored: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        if !finalized {
            return self.write_update(options, key, stored, expected).await;
        }
        let (prev, revision) = self.write_delete(options, key, Some(expected)).await?;
        Ok(KeyValue { key: key.to_owned(), value: stored, create_revision: prev.create_revision, mod_revision: revision })
    }

    /// `Storage::delete` (guarded on `expected` when given), or under dry run the object that
    /// would be deleted.
    async fn write_delete(
        &self,
        options: WriteOptions<'_>,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        if !options.dry_run {
            return self.storage.delete(key, expected).await;
        }
        let current = self.storage.get(key).await?.ok_or_else(|| StorageError::NotFound { key: key.to_owned() })?;
        if let Some(expected) = expected
            && current.mod_revision != expected
        {
            return Err(StorageError::Conflict { key: key.to_owned(), expected, current });
        }
        let revision = current.mod_revision;
        Ok((current, revision))
    }
}

/// The `managedFields` a write stores: JSON a handler made (an apply's or a scale's; `Null` for
/// none), or what field management recorded of the write as an `Update`.
enum WriteManagedFields {
    Json(Value),
    Recorded(Option<ManagedFields>),
}

impl WriteManagedFields {
    /// Puts them in the object the write works on. Recorded entries stay out of a built-in
    /// kind's object (`registered`): its typed object takes them when it is encoded
    /// ([`Self::for_encoding`]), each `fieldsV1` written once in set order; nothing between
    /// reads them. A custom resource's object is JSON to the end and holds them as JSON.
    fn set_in(&self, object: &mut Object, registered: bool) -> Result<(), ApiError> {
        match self {
            WriteManagedFields::Json(managed) => set_managed_fields(object.value_mut()?, managed.clone()),
            WriteManagedFields::Recorded(Some(managed)) if !registered => set_managed_fields(object.value_mut()?, managed.to_value()),
            WriteManagedFields::Recorded(_) => object.set_meta(&[MetaChange::NoManagedFields]),
        }
        Ok(())
    }

    /// The recorded entries a built-in kind's object is encoded with ([`Self::set_in`]).
    fn for_encoding(&self, registered: bool) -> Option<&ManagedFields> {
        match self {
            WriteManagedFields::Recorded(Some(managed)) if registered => Some(managed),
            _ => None,
        }
    }
}

/// The object a write works on, known as its generated type when its kind is stored as
/// decoded, so that a step written for the type can take it so ([`Object::typed_mut`]).
fn of_kind(kind: &Kind, object: Object) -> Object {
    match objects::dyn_kind(kind) {
        Some(dyn_kind) if objects::stores_as_decoded(kind) => object.of_kind(dyn_kind),
        _ => object,
    }
}

/// Sets (or, for `Null`, removes) `metadata.managedFields`.
fn set_managed_fields(object: &mut Value, managed_fields: Value) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if managed_fields.is_null() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), managed_fields);
    }
}

/// A stored object in the version `group`/`version` (converted from the storage version; as
/// stored when `None`), with `resourceVersion` from the store.
pub fn read_as(kv: &KeyValue, version: Option<(&str, &str)>) -> Result<(Kind, Value), ApiError> {
    let (kind, value) = objects::decode_stored(&kv.value).map_err(|e| ApiError::internal(format!("decoding {}: {e}", kv.key)))?;
    let (kind, value) = match version {
        Some((group, version)) => {
            objects::convert_stored(&kind, value, group, version).map_err(|e| ApiError::internal(format!("converting {}: {e}", kv.key)))?
        }
        None => (kind, value),
    };
    Ok((kind, with_resource_version(kv, value)))
}

/// A stored object as `kind` (its version), converted as `strategy` converts, with
/// `resourceVersion` from the store: what a read through the strategy's store gives.
pub fn read_for(strategy: &dyn Strategy, kv: &KeyValue, kind: &Kind) -> Result<(Kind, Value), ApiError> {
    let Some(convert) = strategy.converter() else {
        return read_as(kv, Some((&kind.group, &kind.version)));
    };
    let (stored, value) = objects::decode_stored(&kv.value).map_err(|e| ApiError::internal(format!("decoding {}: {e}", kv.key)))?;
    if objects::is_registered(&stored) {
        return read_as(kv, Some((&kind.group, &kind.version)));
    }
    let value = convert(&stored, value, &kind.version).map_err(ApiError::internal)?;
    let read = Kind { version: kind.version.clone(), ..stored };
    Ok((read, with_resource_version(kv, value)))
}

/// `value` with the store's `resourceVersion`; a dry-run create was never written and has none.
fn with_resource_version(kv: &KeyValue, mut value: Value) -> Value {
    if kv.mod_revision > 0 {
        value["metadata"]["resourceVersion"] = Value::String(kv.mod_revision.to_string());
    }
    value
}

/// The kind an object of `kind` is stored as: the scheme's storage version
/// ([`objects::storage_kind`]), or the strategy's when the scheme does not know the kind.
pub fn stored_kind(strategy: &dyn Strategy, kind: &Kind) -> Kind {
    match strategy.storage_version() {
        Some(version) if !objects::is_registered(kind) => Kind { version: version.to_owned(), ..kind.clone() },
        _ => objects::storage_kind(kind),
    }
}

/// A stored object as the server works on it when it writes: its internal object
/// ([`objects::to_internal`]), with `resourceVersion` from the store, and its stored kind.
pub fn read_internal(kv: &KeyValue) -> Result<(Kind, Value), ApiError> {
    let (kind, mut value) =
        objects::decode_stored_internal(&kv.value).map_err(|e| ApiError::internal(format!("decoding {}: {e}", kv.key)))?;
    if kv.mod_revision > 0 {
        value["metadata"]["resourceVersion"] = Value::String(kv.mod_revision.to_string());
    }
    Ok((kind, value))
}

/// The grace period a delete asks for: upstream's `BeforeDelete` treats a negative one as 1
/// second ("Negative values will be treated as the value `1s` on the delete path"), and so
/// does kapi; it never reaches time arithmetic negative.
fn requested_grace_period(options: &Value) -> Option<i64> {
    options["gracePeriodSeconds"].as_i64().map(|s| if s < 0 { 1 } else { s })
}

/// The latest instant a `metav1.Time` can hold on the wire: RFC 3339 has four-digit years,
/// and Go clients cannot parse a later one.
fn max_timestamp() -> chrono::DateTime<chrono::Utc> {
    chrono::NaiveDate::from_ymd_opt(9999, 12, 31)
        .and_then(|d| d.and_hms_opt(23, 59, 59))
        .map_or(chrono::DateTime::<chrono::Utc>::MAX_UTC, |t| t.and_utc())
}

/// `at` moved by `seconds`, saturating at [`max_timestamp`] and the Unix epoch instead of
/// overflowing. Upstream computes `now + time.Second * time.Duration(grace)`, which wraps for
/// grace periods beyond ~292 years; kapi's deletion timestamp stays the latest it can write.
fn shifted(at: chrono::DateTime<chrono::Utc>, seconds: i64) -> chrono::DateTime<chrono::Utc> {
    let shifted = chrono::TimeDelta::try_seconds(seconds).and_then(|d| at.checked_add_signed(d));
    let earliest = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    match shifted {
        Some(t) => t.clamp(earliest, max_timestamp()),
        None if seconds < 0 => earliest,
        None => max_timestamp(),
    }
}

/// A shortened grace period of an object already being deleted, as upstream's `BeforeDelete`:
/// the deletion timestamp moves back by the old period and forward by the new one, but not
/// into the past; a graceful (non-zero) period whose time has already run out becomes 1.
/// Returns the period and the new deletion timestamp. An unreadable timestamp counts as
/// marked now.
fn shortened_grace(
    deletion_timestamp: &Value,
    old_period: i64,
    new_period: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> (i64, chrono::DateTime<chrono::Utc>) {
    let marked = deletion_timestamp
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or_else(|| shifted(now, old_period), |t| t.with_timezone(&chrono::Utc));
    // Both periods are non-negative here, so the difference cannot overflow.
    let at = shifted(marked, new_period.saturating_sub(old_period));
    if at < now { (if new_period == 0 { 0 } else { 1 }, now) } else { (new_period, at) }
}

/// A uid precondition (a PUT body's `metadata.uid`) against the stored object's uid (empty
/// when nothing is stored): upstream's storage refuses the write as an invalid object, which
/// its store answers as a Conflict with the storage error's text.
fn check_uid(gr: GroupResource<'_>, key: &str, name: &str, wanted: Option<&str>, stored: &str) -> Result<(), ApiError> {
    match wanted.filter(|uid| !uid.is_empty()) {
        Some(uid) if uid != stored => Err(ApiError::conflict_because(
            gr,
            name,
            format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}"
            ),
        )),
        _ => Ok(()),
    }
}

/// `DeleteOptions.preconditions`: the object must still be the one the client means.
fn check_preconditions(
    gr: GroupResource<'_>,
    old: &Value,
    mod_revision: Revision,
    precondition: &Value,
    name: &str,
) -> Result<(), ApiError> {
    let uid = old["metadata"]["uid"].as_str().unwrap_or_default();
    if let Some(wanted) = precondition["uid"].as_str()
        && wanted != uid
    {
        return Err(ApiError::conflict_because(
            gr,
            name,
            format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {uid}"),
        ));
    }
    if let Some(rv) = precondition["resourceVersion"].as_str()
        && rv != mod_revision.to_string()
    {
        return Err(ApiError::conflict_because(
            gr,
            name,
            format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {mod_revision}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::embedded::EmbeddedStore;

    fn at(text: &str) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc)
    }

    #[test]
    fn negative_grace_periods_count_as_one_second() {
        for (seconds, want) in [(json!(-1), Some(1)), (json!(i64::MIN), Some(1)), (json!(0), Some(0)), (json!(i64::MAX), Some(i64::MAX))] {
            assert_eq!(requested_grace_period(&json!({ "gracePeriodSeconds": seconds })), want, "{seconds}");
        }
        assert_eq!(requested_grace_period(&json!({})), None);
    }

    #[test]
    fn deletion_timestamps_saturate() {
        let now = at("2026-01-02T03:04:05Z");
        assert_eq!(shifted(now, 0), now);
        assert_eq!(shifted(now, 30), at("2026-01-02T03:04:35Z"));
        // Go's Duration would wrap past ~292 years; the timestamp stays the latest RFC 3339 can
        // write (chrono itself would panic on `now + i64::MAX seconds`).
        for seconds in [i64::MAX, i64::MAX / 1000, 8_000 * 366 * 86_400] {
            assert_eq!(objects::timestamp(shifted(now, seconds)), "9999-12-31T23:59:59Z", "{seconds}");
        }
        // The largest period Go's Duration holds, and one past it (where Go wraps): exact.
        assert_eq!(shifted(now, 9_223_372_036), at("2318-04-14T02:51:21Z"));
        assert_eq!(shifted(now, 9_223_372_037), at("2318-04-14T02:51:22Z"));
        for seconds in [i64::MIN, -1 - i64::MAX / 1000, -100 * 366 * 86_400] {
            assert_eq!(shifted(now, seconds), chrono::DateTime::<chrono::Utc>::UNIX_EPOCH, "{seconds}");
        }
    }

    #[test]
    fn shortened_grace_periods_move_the_timestamp_back_as_upstream() {
        let now = at("2026-01-02T03:04:05Z");
        // Marked 10s ago with 30s: 20s remain; shortening to 5s ends 5s after the mark.
        let marked = json!("2026-01-02T03:04:25Z");
        assert_eq!(shortened_grace(&marked, 30, 15, now), (15, at("2026-01-02T03:04:10Z")));
        // Already past: now, and a graceful period becomes 1.
        assert_eq!(shortened_grace(&marked, 30, 5, now), (1, now));
        assert_eq!(shortened_grace(&marked, 30, 0, now), (0, now));
        // The largest periods never overflow.
        let far = json!("9999-12-31T23:59:59Z");
        assert_eq!(shortened_grace(&far, i64::MAX, 0, now), (0, now));
        assert_eq!(shortened_grace(&far, i64::MAX, 7, now), (1, now));
        assert_eq!(shortened_grace(&far, i64::MAX, i64::MAX - 1, now), (i64::MAX - 1, at("9999-12-31T23:59:58Z")));
        assert_eq!(shortened_grace(&json!("not a time"), 30, 10, now), (10, at("2026-01-02T03:04:15Z")));
    }

    /// Deletes a scheduled, running pod (deleted gracefully) with each of the given options in
    /// turn, through the real store, and returns its metadata after each.
    async fn delete_pod_with(options: &[Value]) -> Vec<Result<Value, ApiError>> {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
        let config = StoreConfig { network: Default::default(), event_ttl: std::time::Duration::ZERO, ..Default::default() };
        let kind = Kind::core_v1("Pod");
        let pods = Store::new(&store, &config, "", "pods", kind.clone());
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        });
        let k = keys::key("", "pods", Some("ns"), Some("p"));
        store.create(&k, objects::encode_stored(&kind, &pod).unwrap().into()).await.unwrap();
        let mut out = Vec::new();
        for o in options {
            let result = pods.delete(WriteOptions::default(), Some("ns"), "p", o).await.map(|d| match d {
                Deleted::Gone(_, v) => json!({"gone": v["metadata"]}),
                Deleted::Pending(_, v) => v["metadata"].clone(),
            });
            out.push(result);
        }
        out
    }

    #[tokio::test]
    async fn huge_and_negative_grace_periods_never_panic() {
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": i64::MAX}), json!({"gracePeriodSeconds": 10})]).await;
        let first = got[0].as_ref().unwrap();
        assert_eq!(
            (first["deletionGracePeriodSeconds"].as_i64(), first["deletionTimestamp"].as_str()),
            (Some(i64::MAX), Some("9999-12-31T23:59:59Z"))
        );
        // Shortened: the old end minus i64::MAX seconds is long past, so now, with 1s left.
        let second = got[1].as_ref().unwrap();
        assert_eq!(second["deletionGracePeriodSeconds"], 1, "{second}");

        // Negative periods are 1 second (upstream's `BeforeDelete`), then 0 deletes.
        for negative in [-1, i64::MIN] {
            let got = delete_pod_with(&[json!({"gracePeriodSeconds": negative}), json!({"gracePeriodSeconds": 0})]).await;
            let first = got[0].as_ref().unwrap();
            assert_eq!(first["deletionGracePeriodSeconds"], 1, "{negative}: {first}");
            assert!(got[1].as_ref().unwrap()["gone"].is_object(), "{negative}: {:?}", got[1]);
        }
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": 0})]).await;
        assert!(got[0].as_ref().unwrap()["gone"].is_object());
        // Pending with the largest period: a longer one changes nothing.
        let got = delete_pod_with(&[json!({"gracePeriodSeconds": i64::MAX - 1}), json!({"gracePeriodSeconds": i64::MAX}), json!({})]).await;
        for r in &got {
            assert_eq!(r.as_ref().unwrap()["deletionGracePeriodSeconds"].as_i64(), Some(i64::MAX - 1));
        }
    }

    fn config() -> StoreConfig {
        StoreConfig { network: Default::default(), event_ttl: std::time::Duration::ZERO, ..Default::default() }
    }

    /// An embedded store in a temporary directory (kept while the first value lives), with
    /// the namespace `ns` created in it.
    async fn store_with_namespace(config: &StoreConfig) -> (tempfile::TempDir, EmbeddedStore) {
        let dir = tempfile::tempdir().unwrap();
        let storage = EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
        let namespaces = Store::new(&storage, config, "", "namespaces", Kind::core_v1("Namespace"));
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
        namespaces.create(WriteOptions::default(), None, incoming("namespaces", &Kind::core_v1("Namespace"), ns)).await.unwrap();
        (dir, storage)
    }

    fn incoming(resource: &str, kind: &Kind, object: Value) -> Incoming {
        let bytes = serde_json::to_vec(&object).unwrap();
        let external = objects::decode_defaulted(kind, kapi_apimachinery::codec::Format::Json, &bytes).unwrap();
        Incoming::from_external(kind.group.as_str(), resource, kind, external).unwrap()
    }

    /// Proposes `change` applied to the current object, with an optional precondition.
    fn changed(
        change: impl Fn(&mut Value) + Send,
        precondition: Option<&str>,
    ) -> impl FnMut(Option<&Current<'_>>) -> Result<Proposed, ApiError> + Send {
        let precondition = precondition.map(str::to_owned);
        move |current: Option<&Current<'_>>| {
            let mut object = current.expect("the object is stored").internal()?.clone();
            change(&mut object);
            Ok(Proposed {
                incoming: Incoming { object: object.into(), required: Vec::new() },
                precondition: precondition.clone(),
                uid: None,
                managed_fields: None,
            })
        }
    }

    #[tokio::test]
    async fn creates_set_identity_and_dry_runs_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let storage = EmbeddedStore::open(dir.path().join("store.redb")).unwrap();
        let config = config();
        let namespaces = Store::new(&storage, &config, "", "namespaces", Kind::core_v1("Namespace"));
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
        let dry = WriteOptions { dry_run: true, ..Default::default() };
        namespaces.create(dry, None, incoming("namespaces", &Kind::core_v1("Namespace"), ns.clone())).await.unwrap();
        assert!(storage.get(&keys::key("", "namespaces", None, Some("ns"))).await.unwrap().is_none(), "a dry run stores nothing");
        let written = namespaces
            .create(WriteOptions::default(), None, incoming("namespaces", &Kind::core_v1("Namespace"), ns.clone()))
            .await
            .unwrap();
        let (_, stored) = namespaces.read(&written.kv).unwrap();
        assert!(stored["metadata"]["uid"].is_string() && stored["metadata"]["creationTimestamp"].is_string(), "{stored}");
        assert_eq!(stored["spec"]["finalizers"], json!(["kubernetes"]), "the namespace strategy's PrepareForCreate: {stored}");
        let again = namespaces.create(WriteOptions::default(), None, incoming("namespaces", &Kind::core_v1("Namespace"), ns)).await;
        assert_eq!(again.err().map(|e| e.code), Some(409));

        // Admission: nothing is created in a namespace that does not exist.
        let config_maps = Store::new(&storage, &config, "", "configmaps", Kind::core_v1("ConfigMap"));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let refused = config_maps
            .create(WriteOptions::default(), Some("missing"), incoming("configmaps", &Kind::core_v1("ConfigMap"), cm.clone()))
            .await;
        assert_eq!(refused.err().map(|e| e.code), Some(404));
        config_maps.create(WriteOptions::default(), Some("ns"), incoming("configmaps", &Kind::core_v1("ConfigMap"), cm)).await.unwrap();

        // A stale precondition is a conflict; none retries on the current object.
        let stale =
            config_maps.update(WriteOptions::default(), Some("ns"), "c", &mut changed(|o| o["data"] = json!({"a": "1"}), Some("1"))).await;
        assert_eq!(stale.err().map(|e| e.code), Some(409));
        let updated = config_maps
            .update(WriteOptions::default(), Some("ns"), "c", &mut changed(|o| o["data"] = json!({"a": "1"}), None))
            .await
            .unwrap();
        assert_eq!(config_maps.read(&updated.kv).unwrap().1["data"], json!({"a": "1"}));
    }

    /// An update of a missing object creates it where the strategy allows (a Service), as a
    /// create with the URL's name; elsewhere (a ConfigMap), through a subresource, or when the
    /// update needs a stored object, it is NotFound and nothing is written.
    #[tokio::test]
    async fn updates_create_only_where_the_strategy_allows() {
        let config = config();
        let (_dir, storage) = store_with_namespace(&config).await;
        let body = |resource: &str, kind: &str, object: Value| {
            let incoming = incoming(resource, &Kind::core_v1(kind), object);
            move |_: Option<&Current<'_>>| {
                Ok(Proposed { incoming: incoming.clone_incoming(), precondition: None, uid: None, managed_fields: None })
            }
        };

        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let config_maps = Store::new(&storage, &config, "", "configmaps", Kind::core_v1("ConfigMap"));
        let missing = config_maps.update(WriteOptions::default(), Some("ns"), "c", &mut body("configmaps", "ConfigMap", cm)).await;
        assert_eq!(missing.err().map(|e| (e.code, e.message)), Some((404, r#"configmaps "c" not found"#.to_owned())));

        // The body names no object: it takes the name it was sent to.
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {}, "spec": {"ports": [{"port": 80}]}});
        let services = Store::new(&storage, &config, "", "services", Kind::core_v1("Service"));
        let status = Store::new(&storage, &config, "", "services", Kind::core_v1("Service")).with_subresource(Some("status"));
        let refused = status.update(WriteOptions::default(), Some("ns"), "s", &mut body("services", "Service", svc.clone())).await;
        assert_eq!(refused.err().map(|e| e.code), Some(404), "a status write never creates");
        let mut needs_stored = changed(|o| o["metadata"]["labels"] = json!({"a": "b"}), None);
        let mut needs_stored = |current: Option<&Current<'_>>| match current {
            Some(_) => needs_stored(current),
            None => Err(ApiError::not_found(GroupResource::new("", "services"), "s")),
        };
        let refused = services.update(WriteOptions::default(), Some("ns"), "s", &mut needs_stored).await;
        assert_eq!(refused.err().map(|e| e.code), Some(404), "a patch never creates");
        let key = keys::key("", "services", Some("ns"), Some("s"));
        assert!(storage.get(&key).await.unwrap().is_none());

        let dry = WriteOptions { dry_run: true, ..Default::default() };
        let written = services.update(dry, Some("ns"), "s", &mut body("services", "Service", svc.clone())).await.unwrap();
        assert!(written.created && storage.get(&key).await.unwrap().is_none(), "a dry run stores nothing");
        let written =
            services.update(WriteOptions::default(), Some("ns"), "s", &mut body("services", "Service", svc.clone())).await.unwrap();
        assert!(written.created);
        let (_, created) = services.read(&written.kv).unwrap();
        assert_eq!((created["metadata"]["name"].as_str(), created["metadata"]["namespace"].as_str()), (Some("s"), Some("ns")));
        assert!(created["metadata"]["uid"].is_string() && created["metadata"]["creationTimestamp"].is_string(), "{created}");
        assert!(created["spec"]["clusterIP"].as_str().is_some_and(|ip| !ip.is_empty()), "allocated as a create: {created}");
        // Stored now, the same body replaces it.
        let replaced = services.update(WriteOptions::default(), Some("ns"), "s", &mut body("services", "Service", svc)).await.unwrap();
        assert!(!replaced.created);
        assert_eq!(services.read(&replaced.kv).unwrap().1["metadata"]["uid"], created["metadata"]["uid"]);
    }

    /// An update keeps the stored identity and (with a status subresource) status, and counts
    /// a generation for a spec change only: a body that writes zero values out, or leaves out
    /// what the server set, changes neither. A status write takes only the status.
    #[tokio::test]
    async fn updates_keep_identity_and_status_and_count_spec_changes() {
        let config = config();
        let (_dir, storage) = store_with_namespace(&config).await;
        let kind = Kind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() };
        let deployment = |replicas: i64, extra: Value| {
            let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
                "replicas": replicas, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
            json_patch::merge(&mut object, &extra);
            incoming("deployments", &kind, object)
        };
        let deployments = Store::new(&storage, &config, "apps", "deployments", kind.clone());
        let created = deployments.create(WriteOptions::default(), Some("ns"), deployment(2, json!({}))).await.unwrap();
        let (_, created) = deployments.read(&created.kv).unwrap();
        async fn put(store: &Store<'_>, incoming: Incoming) -> Result<Value, ApiError> {
            let mut incoming = Some(incoming);
            let mut body = move |_: Option<&Current<'_>>| {
                let incoming = incoming.take().expect("proposed once");
                Ok(Proposed { incoming, precondition: None, uid: None, managed_fields: None })
            };
            let written = store.update(WriteOptions::default(), Some("ns"), "d", &mut body).await?;
            Ok(store.read(&written.kv)?.1)
        }

        let zeros = json!({"spec": {"paused": false, "minReadySeconds": 0, "template": {"spec": {"hostNetwork": false}}},
            "status": {"replicas": 5}});
        let same = put(&deployments, deployment(2, zeros)).await.unwrap();
        for field in ["uid", "creationTimestamp", "generation"] {
            assert_eq!(same["metadata"][field], created["metadata"][field], "{field}: {same}");
        }
        assert_eq!(same["status"], created["status"], "the main resource leaves the status");
        let scaled = put(&deployments, deployment(3, json!({}))).await.unwrap();
        assert_eq!(scaled["metadata"]["generation"], json!(2));

        let status = Store::new(&storage, &config, "apps", "deployments", kind.clone()).with_subresource(Some("status"));
        let written = put(&status, deployment(7, json!({"status": {"replicas": 3}}))).await.unwrap();
        assert_eq!((&written["spec"]["replicas"], &written["status"]["replicas"]), (&json!(3), &json!(3)));
        assert_eq!(written["metadata"]["generation"], json!(2), "{written}");
    }

    /// A namespace being deleted stays while `spec.finalizers` has any (upstream's
    /// `ShouldDeleteNamespaceDuringUpdate`), even when an update leaves `metadata.finalizers`
    /// empty; `finalize` taking the last one completes the deletion.
    #[tokio::test]
    async fn terminating_namespaces_stay_until_finalized() {
        let config = config();
        let (_dir, storage) = store_with_namespace(&config).await;
        let namespaces = Store::new(&storage, &config, "", "namespaces", Kind::core_v1("Namespace"));
        let marked = namespaces.delete(WriteOptions::default(), None, "ns", &json!({})).await.unwrap();
        assert!(matches!(marked, Deleted::Pending(..)));
        let label = |o: &mut Value| o["metadata"]["labels"]["x"] = json!("y");
        namespaces.update(WriteOptions::default(), None, "ns", &mut changed(label, None)).await.unwrap();
        let key = keys::key("", "namespaces", None, Some("ns"));
        assert!(storage.get(&key).await.unwrap().is_some(), "an update does not skip the namespace's finalizer");
        let finalize = Store::new(&storage, &config, "", "namespaces", Kind::core_v1("Namespace")).with_subresource(Some("finalize"));
        finalize.update(WriteOptions::default(), None, "ns", &mut changed(|o| o["spec"]["finalizers"] = json!([]), None)).await.unwrap();
        assert!(storage.get(&key).await.unwrap().is_none(), "finalized: deleted");
    }
}
