//! `batch/v1` (upstream `pkg/apis/batch/v1/defaults.go`), and the Job strategy's generated
//! selector. A CronJob's job template gets no Job defaults: upstream defaults the `Job` type,
//! not `JobSpec`.

use kapi_api::api::batch::v1 as batch;

use super::{Registry, default_str};

pub fn register(r: &mut Registry) {
    r.add(set_defaults_job);
    r.add(set_defaults_cron_job);
    r.add(set_defaults_pod_failure_policy_on_pod_conditions_pattern);
}

/// A non-parallel job by default (completions and parallelism 1 when both are unset), six
/// retries (unbounded per-index limits count instead when set), the template's labels on the
/// job, non-indexed, not suspended, pods replaced once terminated or failed (only once failed
/// with a pod failure policy), and a generated selector.
pub fn set_defaults_job(job: &mut batch::Job) {
    let spec = job.spec.get_or_insert_default();
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
        spec.parallelism = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(if spec.backoff_limit_per_index.is_some() { i32::MAX } else { 6 });
    }
    let labels = spec.template.metadata.as_ref().map(|m| m.labels.clone()).filter(|l| !l.is_empty());
    if let Some(labels) = labels {
        let meta = job.metadata.get_or_insert_default();
        if meta.labels.is_empty() {
            meta.labels = labels;
        }
    }
    spec.completion_mode.get_or_insert_with(|| "NonIndexed".into());
    spec.suspend.get_or_insert(false);
    if spec.pod_replacement_policy.is_none() {
        let policy = if spec.pod_failure_policy.is_some() { "Failed" } else { "TerminatingOrFailed" };
        spec.pod_replacement_policy = Some(policy.into());
    }
    spec.manual_selector.get_or_insert(false);
}

/// Concurrent runs allowed, not suspended, three successful and one failed job kept.
pub fn set_defaults_cron_job(cj: &mut batch::CronJob) {
    let spec = &mut cj.spec;
    default_str(&mut spec.concurrency_policy, "Allow");
    spec.suspend.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
}

pub fn set_defaults_pod_failure_policy_on_pod_conditions_pattern(p: &mut batch::PodFailurePolicyOnPodConditionsPattern) {
    default_str(&mut p.status, "True");
}

/// The Job strategy at create (`generateSelector`), unless `manualSelector` is true: the pod
/// template is labelled with the job's name and uid (legacy and `batch.kubernetes.io/` keys,
/// labels the user set are kept), and the selector matches the uid label. Upstream then
/// defaults the job's empty labels from the template again when it reads the object back, so a
/// job created without labels shows the generated ones; that is done here once, at create.
pub fn generate_job_selector(job: &mut batch::Job) {
    let batch::Job { metadata, spec, .. } = job;
    let spec = spec.get_or_insert_default();
    if spec.manual_selector == Some(true) {
        return;
    }
    let meta = metadata.get_or_insert_default();
    let (name, uid) = (meta.name.clone().unwrap_or_default(), meta.uid.clone().unwrap_or_default());
    let template_labels = &mut spec.template.metadata.get_or_insert_default().labels;
    for (key, value) in [
        ("job-name", &name),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("batch.kubernetes.io/controller-uid", &uid),
    ] {
        template_labels.entry(key.to_owned()).or_insert_with(|| value.clone());
    }
    let template_labels = template_labels.clone();
    spec.selector.get_or_insert_default().match_labels.entry("batch.kubernetes.io/controller-uid".to_owned()).or_insert(uid);
    if meta.labels.is_empty() {
        meta.labels = template_labels;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    /// What `kubectl create job pi --image=perl` shows on a v1.36 cluster.
    #[test]
    fn job_and_its_generated_selector() {
        let template = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}], "restartPolicy": "Never"}});
        let defaulted_template = json!({"spec": {
            "containers": [{"name": "pi", "image": "perl:5.34", "imagePullPolicy": "IfNotPresent", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler"}});
        let spec = json!({"parallelism": 1, "completions": 1, "backoffLimit": 6, "manualSelector": false,
            "template": defaulted_template, "completionMode": "NonIndexed", "suspend": false,
            "podReplacementPolicy": "TerminatingOrFailed"});
        assert_defaults::<batch::Job>(
            json!({"metadata": {"name": "pi"}, "spec": {"template": template}}),
            json!({"metadata": {"name": "pi"}, "spec": spec}),
        );

        let selected = |job: serde_json::Value| {
            let mut job: batch::Job = serde_json::from_value(job).unwrap();
            generate_job_selector(&mut job);
            serde_json::to_value(job).unwrap()
        };
        let job = selected(json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": spec}));
        let labels = json!({"batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "u-1", "job-name": "pi"});
        assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}));
        assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
        assert_eq!(job["metadata"]["labels"], labels);

        let manual = selected(json!({"metadata": {"name": "m", "uid": "u"}, "spec": {"manualSelector": true, "selector": {}}}));
        assert_eq!(manual["spec"]["selector"], json!({}));

        // Per-index backoff limits make the global one unbounded; a pod failure policy replaces
        // pods only once they failed.
        assert_defaults::<batch::Job>(
            json!({"spec": {"completions": 3, "backoffLimitPerIndex": 1, "completionMode": "Indexed",
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                "template": {}}}),
            json!({"spec": {"completions": 3, "parallelism": 1, "backoffLimit": 2147483647, "backoffLimitPerIndex": 1,
                "completionMode": "Indexed", "suspend": false, "manualSelector": false, "podReplacementPolicy": "Failed",
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
                "template": {}}}),
        );
    }

    /// A CronJob's job template gets pod template defaults but no Job defaults.
    #[test]
    fn cron_job() {
        assert_defaults::<batch::CronJob>(
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {}}}}}),
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {}}},
                "concurrencyPolicy": "Allow", "suspend": false, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}}),
        );
    }
}
