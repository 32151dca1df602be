//! The admission chain (upstream's `k8s.io/apiserver/pkg/admission`): plugins in kube-apiserver's
//! order, each with a mutating phase ([`Plugin::admit`], run on the decoded and defaulted object
//! before the strategy prepares and validates it) and a validating phase ([`Plugin::validate`],
//! run on the object about to be stored). Webhooks, policies and quota are future plugins; the
//! phases are async so a plugin may read the store or call out.

mod default_toleration_seconds;
mod namespace_lifecycle;
mod node_restriction;
mod pods;
mod priority;
mod service_account;

use serde_json::Value;

pub use service_account::{ROOT_CA_CONFIGMAP, SERVICE_ACCOUNT_MOUNT_PATH};

use super::Rejection;
use super::strategy::HookFuture;
use crate::status::{ApiError, GroupKind, GroupResource};

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
    /// The object to be written (create, update), which mutating plugins may change.
    pub object: Option<&'a mut Value>,
    /// The stored object (update, delete).
    pub old: Option<&'a Value>,
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

/// The enabled plugins, in kube-apiserver's order (`AllOrderedPlugins`).
static PLUGINS: &[&dyn Plugin] = &[
    &namespace_lifecycle::NamespaceLifecycle,
    &pods::OnPodCreate(service_account::ServiceAccount),
    &node_restriction::NodeRestriction,
    &pods::OnPodCreate(priority::Priority),
    &pods::OnPodCreate(default_toleration_seconds::DefaultTolerationSeconds),
];

/// The mutating phase of every plugin, in order; the first refusal ends it.
pub async fn admit(attributes: &mut Attributes<'_>) -> Result<(), ApiError> {
    for plugin in PLUGINS {
        plugin.admit(attributes).await?;
    }
    Ok(())
}

/// The validating phase of every plugin, in order; the first refusal ends it.
pub async fn validate(attributes: &Attributes<'_>) -> Result<(), ApiError> {
    for plugin in PLUGINS {
        plugin.validate(attributes).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn plugins_are_in_upstream_order() {
        let names: Vec<&str> = super::PLUGINS.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["NamespaceLifecycle", "ServiceAccount", "NodeRestriction", "Priority", "DefaultTolerationSeconds"]);
    }
}
