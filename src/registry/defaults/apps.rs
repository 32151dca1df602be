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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}})
    }

    fn defaulted_template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "nginx", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler"}})
    }

    /// What `kubectl create deployment web --image=nginx` shows on a v1.36 cluster.
    #[test]
    fn deployment() {
        assert_defaults::<apps::Deployment>(
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}),
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": defaulted_template(),
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}}),
        );
        // A Recreate strategy gets no rolling update parameters.
        assert_defaults::<apps::Deployment>(
            json!({"spec": {"strategy": {"type": "Recreate"}, "replicas": 3, "selector": {}, "template": {}}}),
            json!({"spec": {"strategy": {"type": "Recreate"}, "replicas": 3, "selector": {}, "template": {},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}}),
        );
    }

    #[test]
    fn stateful_set() {
        assert_defaults::<apps::StatefulSet>(
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "web", "template": template(),
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
            json!({"spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
                "template": defaulted_template(),
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}],
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}}),
        );
    }

    #[test]
    fn daemon_set_and_replica_set() {
        assert_defaults::<apps::DaemonSet>(
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}),
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": defaulted_template(),
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10}}),
        );
        assert_defaults::<apps::ReplicaSet>(json!({"spec": {"selector": {}}}), json!({"spec": {"replicas": 1, "selector": {}}}));
    }
}
