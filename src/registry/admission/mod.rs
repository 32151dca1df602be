//! The admission chain (upstream's `k8s.io/apiserver/pkg/admission`): plugins in kube-apiserver's
//! order, each with a mutating phase ([`Plugin::admit`], run on the decoded and defaulted object
//! before the strategy prepares and validates it) and a validating phase ([`Plugin::validate`],
//! run on the object about to be stored). Webhooks, policies and quota are future plugins; the
//! phases are async so a plugin may read the store or call out.

mod default_storage_class;
mod default_toleration_seconds;
mod limit_ranger;
mod namespace_lifecycle;
mod node_restriction;
mod on_create;
mod priority;
mod service_account;

pub use service_account::{ROOT_CA_CONFIGMAP, SERVICE_ACCOUNT_MOUNT_PATH};

use super::Rejection;
use super::object::Object;
use super::strategy::HookFuture;
use crate::status::{ApiError, GroupKind, GroupResource};

/// The admission plugins that act on objects of particular resources only (upstream's each
/// check the kind first). A resource's strategy names those that act on its objects
/// ([`super::strategy::Strategy::admitted_by`]), so no plugin names a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindPlugin {
    /// `ServiceAccount`, on new objects.
    ServiceAccount,
    /// `Priority`, on new objects.
    Priority,
    /// `DefaultTolerationSeconds`, on new objects.
    DefaultTolerationSeconds,
    /// `DefaultStorageClass`, on new objects.
    DefaultStorageClass,
    /// `LimitRanger`'s pod rules: defaults and bounds for new pods' containers.
    LimitRangerPods,
    /// `LimitRanger`'s claim rules: storage bounds for new and updated claims.
    LimitRangerClaims,
}

/// Whether `plugin` acts on objects of the resource whose strategy is `strategy`.
fn acts_on(plugin: KindPlugin, strategy: &dyn super::strategy::Strategy) -> bool {
    strategy.admitted_by().contains(&plugin)
}

/// What the request does (`admission.Operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

/// Which object a request is about: for plugins to decide whether they apply, and for their
/// errors.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl Target<'_> {
    /// A plugin's refusal as upstream answers it: 403 `Forbidden` naming the object, 422
    /// `Invalid` for field errors, 500 for a failure.
    pub fn refuse(&self, rejection: Rejection) -> ApiError {
        match rejection {
            Rejection::Invalid(errs) => ApiError::invalid(GroupKind::new(self.group, self.kind), self.name, &errs),
            Rejection::Forbidden(message) => ApiError::forbidden(GroupResource::new(self.group, self.resource), self.name, message),
            Rejection::Internal(message) => ApiError::internal(message),
        }
    }
}

/// What a plugin sees of a request (`admission.Attributes`).
pub struct Attributes<'a> {
    pub store: &'a dyn crate::storage::Storage,
    pub operation: Operation,
    pub target: Target<'a>,
    /// The target resource's strategy: what the plugins for particular kinds ask
    /// ([`super::strategy::Strategy::admitted_by`], `kubelet`).
    pub strategy: &'a dyn super::strategy::Strategy,
    /// The object to be written (create, update), which mutating plugins may change. A
    /// plugin takes it only when it acts on the object, in the form it is written for
    /// ([`Object::value`] and [`Object::value_mut`] for JSON, [`Object::typed_mut`] for the
    /// generated type): the object changes form only when a plugin asks for the other one.
    pub object: Option<&'a mut Object>,
    /// The stored object (update, delete).
    pub old: Option<&'a Object>,
    pub user: Option<&'a crate::request_info::UserInfo>,
    pub dry_run: bool,
}

/// An admission plugin (`admission.MutationInterface` and `admission.ValidationInterface`).
pub trait Plugin: Send + Sync {
    /// The name upstream's `--enable-admission-plugins` knows it by.
    fn name(&self) -> &'static str;

    /// The mutating phase.
    fn admit<'a>(&'a self, attributes: &'a mut Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        let _ = attributes;
        Box::pin(async { Ok(()) })
    }

    /// The validating phase.
    fn validate<'a>(&'a self, attributes: &'a Attributes<'_>) -> HookFuture<'a, Result<(), ApiError>> {
        let _ = attributes;
        Box::pin(async { Ok(()) })
    }
}

/// Every plugin kapi has, in kube-apiserver's order (`AllOrderedPlugins`), each with whether
/// it is on unless disabled. Upstream's defaults, but for `NodeRestriction`, which is on as in
/// kubeadm's clusters (upstream needs `--enable-admission-plugins=NodeRestriction`).
static PLUGINS: &[(&dyn Plugin, bool)] = &[
    (&namespace_lifecycle::NamespaceLifecycle, true),
    (&limit_ranger::LimitRanger, true),
    (&on_create::OnCreate(service_account::ServiceAccount), true),
    (&node_restriction::NodeRestriction, true),
    (&on_create::OnCreate(priority::Priority), true),
    (&on_create::OnCreate(default_toleration_seconds::DefaultTolerationSeconds), true),
    (&on_create::OnCreate(default_storage_class::DefaultStorageClass), true),
];

/// The enabled plugins, in order (`--enable-admission-plugins`, `--disable-admission-plugins`).
#[derive(Clone)]
pub struct Chain {
    plugins: Vec<&'static dyn Plugin>,
}

impl Default for Chain {
    /// The plugins on by default.
    fn default() -> Chain {
        Chain { plugins: PLUGINS.iter().filter(|(_, on)| *on).map(|(plugin, _)| *plugin).collect() }
    }
}

impl Chain {
    /// The default plugins with `enable` added and `disable` taken away, refused as upstream's
    /// `AdmissionOptions.Validate` refuses: an unknown name, or one both enabled and disabled.
    pub fn new(enable: &[String], disable: &[String]) -> Result<Chain, String> {
        let known = |flag: &str, names: &[String]| match names
            .iter()
            .find(|name| !PLUGINS.iter().any(|(plugin, _)| plugin.name() == name.as_str()))
        {
            Some(unknown) => Err(format!("{flag} plugin {unknown:?} is unknown")),
            None => Ok(()),
        };
        known("enable-admission-plugins", enable)?;
        known("disable-admission-plugins", disable)?;
        let overlap: Vec<&str> = enable.iter().filter(|name| disable.contains(name)).map(String::as_str).collect();
        if !overlap.is_empty() {
            return Err(format!("{overlap:?} in enable-admission-plugins and disable-admission-plugins overlapped"));
        }
        let enabled = |plugin: &dyn Plugin, on: bool| {
            let named = |names: &[String]| names.iter().any(|name| name == plugin.name());
            (on || named(enable)) && !named(disable)
        };
        Ok(Chain { plugins: PLUGINS.iter().filter(|(plugin, on)| enabled(*plugin, *on)).map(|(plugin, _)| *plugin).collect() })
    }

    /// The enabled plugins' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.plugins.iter().map(|plugin| plugin.name())
    }

    /// The mutating phase of every plugin, in order; the first refusal ends it.
    pub async fn admit(&self, attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            plugin.admit(attributes).await?;
        }
        Ok(())
    }

    /// The validating phase of every plugin, in order; the first refusal ends it.
    pub async fn validate(&self, attributes: &Attributes<'_>) -> Result<(), ApiError> {
        for plugin in &self.plugins {
            plugin.validate(attributes).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Chain;

    fn names(chain: &Chain) -> Vec<&'static str> {
        chain.names().collect()
    }

    /// The plugins for particular kinds act on the resources whose strategies name them.
    #[test]
    fn kind_plugins_act_on_the_resources_that_name_them() {
        use super::{KindPlugin, acts_on};
        let target = |resource| crate::registry::strategy::for_resource("", resource);
        assert!(acts_on(KindPlugin::ServiceAccount, target("pods")) && acts_on(KindPlugin::LimitRangerPods, target("pods")));
        assert!(acts_on(KindPlugin::DefaultStorageClass, target("persistentvolumeclaims")));
        assert!(!acts_on(KindPlugin::Priority, target("persistentvolumeclaims")) && !acts_on(KindPlugin::Priority, target("configmaps")));
    }

    #[test]
    fn plugins_are_in_upstream_order() {
        assert_eq!(
            names(&Chain::default()),
            [
                "NamespaceLifecycle",
                "LimitRanger",
                "ServiceAccount",
                "NodeRestriction",
                "Priority",
                "DefaultTolerationSeconds",
                "DefaultStorageClass"
            ]
        );
    }

    #[test]
    fn flags_enable_and_disable_plugins_as_upstreams() {
        let strings = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let chain = Chain::new(&strings(&["NodeRestriction"]), &strings(&["ServiceAccount", "Priority"])).unwrap();
        assert_eq!(
            names(&chain),
            ["NamespaceLifecycle", "LimitRanger", "NodeRestriction", "DefaultTolerationSeconds", "DefaultStorageClass"]
        );
        let chain = Chain::new(&[], &strings(&["NodeRestriction"])).unwrap();
        assert!(!names(&chain).contains(&"NodeRestriction"));
        assert_eq!(Chain::new(&strings(&["Nope"]), &[]).err().unwrap(), r#"enable-admission-plugins plugin "Nope" is unknown"#);
        assert_eq!(Chain::new(&[], &strings(&["Nope"])).err().unwrap(), r#"disable-admission-plugins plugin "Nope" is unknown"#);
        assert_eq!(
            Chain::new(&strings(&["Priority"]), &strings(&["Priority"])).err().unwrap(),
            r#"["Priority"] in enable-admission-plugins and disable-admission-plugins overlapped"#
        );
    }
}
