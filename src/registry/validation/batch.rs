//! The batch group (`pkg/apis/batch/validation`): jobs (pods that finish, counts that are not
//! negative, a template that stays) and cron jobs (a schedule in cron syntax, a concurrency
//! policy, a time zone). The rules read the generated types.

use kapi_api::api::batch::v1 as batch;

use super::apps::{labels_value, template_labels};
use super::core::pod_template_spec;
use super::{
    FIELD_IMMUTABLE, FieldPath, json_value, label_map, non_negative_int, one_of_str, optional_value, selector_is_empty, selector_matches,
    selector_value, typed_label_selector,
};
use crate::status::FieldError;

/// `ValidateJobSpec` at `path` (`spec`, or `spec.jobTemplate.spec` in a cron job).
fn job_spec(spec: Option<&batch::JobSpec>, path: &str, errs: &mut Vec<FieldError>) {
    let at = FieldPath::Root(path);
    let counts = [
        ("parallelism", spec.and_then(|s| s.parallelism).map(i64::from)),
        ("completions", spec.and_then(|s| s.completions).map(i64::from)),
        ("activeDeadlineSeconds", spec.and_then(|s| s.active_deadline_seconds)),
        ("backoffLimit", spec.and_then(|s| s.backoff_limit).map(i64::from)),
        ("ttlSecondsAfterFinished", spec.and_then(|s| s.ttl_seconds_after_finished).map(i64::from)),
    ];
    for (field, count) in counts {
        non_negative_int(count, &at.child(field), errs);
    }
    let template = spec.map(|s| &s.template);
    let selector = spec.and_then(|s| s.selector.as_ref());
    // Without a selector upstream generates one from the job's uid; kapi has none to check.
    if let Some(selector) = selector.filter(|s| !selector_is_empty(Some(s))) {
        typed_label_selector(selector, &at.child("selector"), errs);
        let labels = template_labels(template);
        if !selector_matches(Some(selector), labels) {
            errs.push(FieldError::invalid(
                at.child("template.metadata.labels"),
                labels_value(labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(mode) = spec.and_then(|s| s.completion_mode.as_deref()).filter(|m| !m.is_empty() && !["NonIndexed", "Indexed"].contains(m))
    {
        errs.push(FieldError::not_supported(at.child("completionMode"), mode, &["NonIndexed", "Indexed"]));
    }
    pod_template_spec(template, &at.child("template").to_string(), errs);
    let restart = template.and_then(|t| t.spec.as_ref()).and_then(|s| s.restart_policy.as_deref());
    // Upstream answers `Required` for any other value, `Always` included.
    if !matches!(restart, Some("OnFailure" | "Never")) {
        errs.push(FieldError::required(at.child("template.spec.restartPolicy"), "valid values: \"OnFailure\", \"Never\""));
    }
}

pub fn job(job: &batch::Job) -> Vec<FieldError> {
    let mut errs = Vec::new();
    job_spec(job.spec.as_ref(), "spec", &mut errs);
    errs
}

pub fn job_update(old: &batch::Job, new: &batch::Job) -> Vec<FieldError> {
    let mut errs = job(new);
    let (o, n) = (old.spec.as_ref(), new.spec.as_ref());
    let (old_selector, new_selector) = (o.and_then(|s| s.selector.as_ref()), n.and_then(|s| s.selector.as_ref()));
    if old_selector != new_selector {
        errs.push(FieldError::invalid("spec.selector", selector_value(new_selector), FIELD_IMMUTABLE));
    }
    // Templates equal as generated types are equal as JSON; ones that differ are compared and
    // printed as their JSON, since the generated type tells apart values that Go's encoding
    // writes alike (such as an empty string and none). Go's job spec is a struct, not a
    // pointer: a job without one has the zero template.
    let no_template = kapi_api::api::core::v1::PodTemplateSpec::default();
    let (old_template, new_template) = (o.map_or(&no_template, |s| &s.template), n.map_or(&no_template, |s| &s.template));
    if old_template != new_template {
        let new_json = serde_json::to_value(new_template).unwrap_or_default();
        if serde_json::to_value(old_template).unwrap_or_default() != new_json {
            errs.push(FieldError::invalid("spec.template", json_value(&new_json), FIELD_IMMUTABLE));
        }
    }
    let (old_completions, new_completions) = (o.and_then(|s| s.completions), n.and_then(|s| s.completions));
    if old_completions != new_completions {
        errs.push(FieldError::invalid("spec.completions", optional_value(new_completions), FIELD_IMMUTABLE));
    }
    let (old_mode, new_mode) = (o.and_then(|s| s.completion_mode.as_deref()), n.and_then(|s| s.completion_mode.as_deref()));
    if old_mode != new_mode {
        errs.push(FieldError::invalid("spec.completionMode", optional_value(new_mode), FIELD_IMMUTABLE));
    }
    errs
}

/// The longest cron job name: the controller appends an 11-character suffix to job names.
const CRON_JOB_NAME_MAX: usize = 52;

pub fn cron_job(cj: &batch::CronJob) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(name) = cj.metadata.as_ref().and_then(|m| m.name.as_deref()).filter(|n| n.len() > CRON_JOB_NAME_MAX) {
        errs.push(FieldError::invalid("metadata.name", name, format!("must be no more than {CRON_JOB_NAME_MAX} characters")));
    }
    let spec = &cj.spec;
    let schedule = spec.schedule.as_str();
    if schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else if schedule.contains("TZ") {
        errs.push(FieldError::invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
    } else if let Err(e) = parse_schedule(schedule) {
        errs.push(FieldError::invalid("spec.schedule", schedule, e));
    }
    one_of_str(spec.concurrency_policy.as_deref(), "spec.concurrencyPolicy", &["Allow", "Forbid", "Replace"], &mut errs);
    let counts = [
        ("startingDeadlineSeconds", spec.starting_deadline_seconds),
        ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit.map(i64::from)),
        ("failedJobsHistoryLimit", spec.failed_jobs_history_limit.map(i64::from)),
    ];
    for (field, count) in counts {
        non_negative_int(count, &FieldPath::Root("spec").child(field), &mut errs);
    }
    if let Some(tz) = spec.time_zone.as_deref()
        && let Some(e) = time_zone_error(tz)
    {
        errs.push(FieldError::invalid("spec.timeZone", tz, e));
    }
    let job_template = &spec.job_template;
    if let Some(meta) = &job_template.metadata {
        label_map(&meta.labels, "spec.jobTemplate.metadata.labels", &mut errs);
    }
    job_spec(job_template.spec.as_ref(), "spec.jobTemplate.spec", &mut errs);
    errs
}

fn time_zone_error(tz: &str) -> Option<String> {
    if tz.is_empty() {
        return Some("timeZone must be nil or non-empty string".to_owned());
    }
    if tz.eq_ignore_ascii_case("local") {
        return Some("timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones".to_owned());
    }
    let well_formed = !tz.starts_with('/')
        && !tz.split('/').any(|part| part.is_empty() || part == "..")
        && tz.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'_' | b'-' | b'+'));
    let known = tz == "UTC" || {
        let db = std::path::Path::new("/usr/share/zoneinfo");
        // Without a zone database on the host only the form can be checked.
        !db.is_dir() || db.join(tz).is_file()
    };
    if well_formed && known { None } else { Some(format!("unknown time zone {tz}")) }
}

/// The standard five-field cron syntax upstream's parser (robfig/cron) accepts, with its
/// `@every`-less descriptors; the error is the parser's wording.
fn parse_schedule(schedule: &str) -> Result<(), String> {
    if let Some(descriptor) = schedule.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
            _ if descriptor.starts_with("every ") => Ok(()),
            _ => Err(format!("unrecognized descriptor: {schedule}")),
        };
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    const MONTHS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let bounds: [(u32, u32, &[&str]); 5] = [(0, 59, &[]), (0, 23, &[]), (1, 31, &[]), (1, 12, MONTHS), (0, 6, DAYS)];
    for (field, (min, max, names)) in fields.iter().zip(bounds) {
        for part in field.split(',') {
            parse_range(part, min, max, names)?;
        }
    }
    Ok(())
}

fn parse_range(expr: &str, min: u32, max: u32, names: &[&str]) -> Result<(), String> {
    let (range, step) = match expr.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (expr, None),
    };
    let value = |s: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Ok(i as u32 + min);
        }
        s.parse::<u32>().map_err(|_| format!("failed to parse int from {s}: strconv.Atoi: parsing {s:?}: invalid syntax"))
    };
    let (start, end) = if range == "*" || range == "?" {
        (min, max)
    } else if let Some((a, b)) = range.split_once('-') {
        (value(a)?, value(b)?)
    } else {
        let v = value(range)?;
        (v, if step.is_some() { max } else { v })
    };
    if let Some(step) = step {
        match step.parse::<u32>() {
            Ok(0) => return Err(format!("step of range should be a positive number: {expr}")),
            Ok(_) => {}
            Err(_) => return Err(format!("failed to parse int from {step}: strconv.Atoi: parsing {step:?}: invalid syntax")),
        }
    }
    if start < min {
        return Err(format!("beginning of range ({start}) below minimum ({min}): {expr}"));
    }
    if end > max {
        return Err(format!("end of range ({end}) above maximum ({max}): {expr}"));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::registry::validation::test_messages as messages;
    use crate::registry::validation::test_typed as typed;

    fn valid_job() -> Value {
        json!({"spec": {"backoffLimit": 6, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "busybox"}]}}}})
    }

    #[test]
    fn jobs() {
        assert!(job(&typed(&valid_job())).is_empty());
        let mut j = valid_job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        j["spec"]["parallelism"] = json!(-1);
        assert_eq!(
            messages(&job(&typed(&j))),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut j = valid_job();
        j["spec"]["template"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
        assert_eq!(
            messages(&job(&typed(&j))),
            ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );
        let mut changed = valid_job();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        let errs = messages(&job_update(&typed(&valid_job()), &typed(&changed)));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("spec.template: Invalid value: {") && errs[0].ends_with("}: field is immutable"));
        // Go's job spec is a struct: a job without one has the zero template, written as such.
        let no_spec: batch::Job = typed(&json!({}));
        let zero_template: batch::Job = typed(&json!({"spec": {"template": {"metadata": {}}}}));
        assert!(!messages(&job_update(&no_spec, &zero_template)).iter().any(|e| e.starts_with("spec.template:")));
        assert!(
            messages(&job_update(&typed(&valid_job()), &no_spec))
                .contains(&"spec.template: Invalid value: {\"metadata\":{},\"spec\":{\"containers\":null}}: field is immutable".to_owned())
        );
    }

    #[test]
    fn cron_jobs() {
        let cj = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * 1-5", "concurrencyPolicy": "Forbid", "timeZone": "Etc/UTC", "jobTemplate": valid_job()}});
        assert_eq!(messages(&cron_job(&typed(&cj))), Vec::<String>::new());
        for (schedule, want) in [
            ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
            ("61 * * * *", "end of range (61) above maximum (59): 61"),
            ("x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("0 0 * JAN-MAR sun", ""),
            ("@hourly", ""),
        ] {
            assert_eq!(parse_schedule(schedule).err().unwrap_or_default(), want, "{schedule}");
        }
        let mut bad = cj.clone();
        bad["spec"]["schedule"] = json!("");
        bad["spec"]["concurrencyPolicy"] = json!("Sometimes");
        bad["spec"]["timeZone"] = json!("Local");
        assert_eq!(
            messages(&cron_job(&typed(&bad))),
            [
                "spec.schedule: Required value",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ]
        );
    }
}
