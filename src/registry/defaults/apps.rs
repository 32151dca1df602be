//! `apps/v1` (upstream `pkg/apis/apps/v1/defaults.go`). Pod templates get the `core/v1`
//! defaults through the walker.

use kapi_api::api::apps::v1 as apps;
use kapi_apimachinery::IntOrString;

use super::{Registry, default_str};

pub fn register(r: &mut Registry) {
    r.add(set_defaults_deployment);
    r.add(set_defaults_daemon_set);
    r.add(set_defaults_stateful_set);
    r.add(set_defaults_replica_set);
}

/// One replica, rolling updates of 25% unavailable / 25% surge, ten old ReplicaSets kept, and
/// ten minutes to make progress.
pub fn set_defaults_deployment(d: &mut apps::Deployment) {
    let spec = d.spec.get_or_insert_default();
    spec.replicas.get_or_insert(1);
    let strategy = spec.strategy.get_or_insert_default();
    default_str(&mut strategy.r#type, "RollingUpdate");
    if strategy.r#type.as_deref() == Some("RollingUpdate") {
        let ru = strategy.rolling_update.get_or_insert_default();
        ru.max_unavailable.get_or_insert_with(|| IntOrString::String("25%".into()));
        ru.max_surge.get_or_insert_with(|| IntOrString::String("25%".into()));
    }
    spec.revision_history_limit.get_or_insert(10);
    spec.progress_deadline_seconds.get_or_insert(600);
}

/// Rolling updates one node at a time without surge, ten old revisions kept.
pub fn set_defaults_daemon_set(ds: &mut apps::DaemonSet) {
    let spec = ds.spec.get_or_insert_default();
    let strategy = spec.update_strategy.get_or_insert_default();
    default_str(&mut strategy.r#type, "RollingUpdate");
    if strategy.r#type.as_deref() == Some("RollingUpdate") {
        let ru = strategy.rolling_update.get_or_insert_default();
        ru.max_unavailable.get_or_insert(IntOrString::Int(1));
        ru.max_surge.get_or_insert(IntOrString::Int(0));
    }
    spec.revision_history_limit.get_or_insert(10);
}

/// Ordered pod management, rolling updates from partition 0 with one pod unavailable at a time
/// (`MaxUnavailableStatefulSet`, beta and on in v1.36), claims retained when the set is deleted
/// or scaled down, one replica, ten old revisions kept. The claim templates get the claim
/// defaults (status `Pending`, `Filesystem`) through the walker, as upstream's generated
/// defaulter does.
pub fn set_defaults_stateful_set(ss: &mut apps::StatefulSet) {
    let spec = ss.spec.get_or_insert_default();
    default_str(&mut spec.pod_management_policy, "OrderedReady");
    let strategy = spec.update_strategy.get_or_insert_default();
    if strategy.r#type.as_deref().is_none_or(str::is_empty) {
        strategy.r#type = Some("RollingUpdate".into());
        strategy.rolling_update.get_or_insert_default();
    }
    if strategy.r#type.as_deref() == Some("RollingUpdate")
        && let Some(ru) = &mut strategy.rolling_update
    {
        ru.partition.get_or_insert(0);
        ru.max_unavailable.get_or_insert(IntOrString::Int(1));
    }
    let retention = spec.persistent_volume_claim_retention_policy.get_or_insert_default();
    default_str(&mut retention.when_deleted, "Retain");
    default_str(&mut retention.when_scaled, "Retain");
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
}

pub fn set_defaults_replica_set(rs: &mut apps::ReplicaSet) {
    rs.spec.get_or_insert_default().replicas.get_or_insert(1);
}
