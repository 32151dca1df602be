//! The batch group (`pkg/apis/batch/validation`): jobs (pods that finish, counts that are not
//! negative, a template that stays) and cron jobs (a schedule in cron syntax, a concurrency
//! policy, a time zone).

use kapi_api::api::core::v1 as api;
use serde_json::Value;

use super::core::pod_template_spec;
use super::{
    FIELD_IMMUTABLE, bad_value, child, json_value, label_selector, non_negative, selector_is_empty, selector_matches, selector_value,
};
use crate::status::FieldError;

/// `ValidateJobSpec` at `path` (`spec`, or `spec.jobTemplate.spec` in a cron job);
/// `typed_template` is the typed form of its template.
fn job_spec(spec: &Value, typed_template: Option<&api::PodTemplateSpec>, path: &str, errs: &mut Vec<FieldError>) {
    for field in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"] {
        non_negative(&spec[field], &child(path, field), errs);
    }
    let template = &spec["template"];
    let selector = &spec["selector"];
    // Without a selector upstream generates one from the job's uid; kapi has none to check.
    if !selector_is_empty(selector) {
        label_selector(selector, &child(path, "selector"), errs);
        if !selector_matches(selector, &template["metadata"]["labels"]) {
            errs.push(FieldError::invalid(
                child(path, "template.metadata.labels"),
                json_value(&template["metadata"]["labels"]),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(mode) = spec["completionMode"].as_str().filter(|m| !m.is_empty() && !["NonIndexed", "Indexed"].contains(m)) {
        errs.push(FieldError::not_supported(child(path, "completionMode"), mode, &["NonIndexed", "Indexed"]));
    }
    pod_template_spec(typed_template, &child(path, "template"), errs);
    let restart = &template["spec"]["restartPolicy"];
    let policy_path = child(path, "template.spec.restartPolicy");
    // Upstream answers `Required` for any other value, `Always` included.
    if !matches!(restart.as_str(), Some("OnFailure" | "Never")) {
        errs.push(FieldError::required(policy_path, "valid values: \"OnFailure\", \"Never\""));
    }
}

/// `template` is the typed form of the job's (or the cron job's jobs') template, here and
/// below.
pub fn job(job: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    job_spec(&job["spec"], template, "spec", &mut errs);
    errs
}

pub fn job_update(old: &Value, new: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = job(new, template);
    let (o, n) = (&old["spec"], &new["spec"]);
    if o["selector"] != n["selector"] {
        errs.push(FieldError::invalid("spec.selector", selector_value(&n["selector"]), FIELD_IMMUTABLE));
    }
    if o["template"] != n["template"] {
        errs.push(FieldError::invalid("spec.template", json_value(&n["template"]), FIELD_IMMUTABLE));
    }
    for field in ["completions", "completionMode"] {
        if o[field] != n[field] {
            errs.push(FieldError::invalid(format!("spec.{field}"), bad_value(&n[field]), FIELD_IMMUTABLE));
        }
    }
    errs
}

/// The longest cron job name: the controller appends an 11-character suffix to job names.
const CRON_JOB_NAME_MAX: usize = 52;

pub fn cron_job(cj: &Value, template: Option<&api::PodTemplateSpec>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(name) = cj["metadata"]["name"].as_str().filter(|n| n.len() > CRON_JOB_NAME_MAX) {
        errs.push(FieldError::invalid("metadata.name", name, format!("must be no more than {CRON_JOB_NAME_MAX} characters")));
    }
    let spec = &cj["spec"];
    let schedule = spec["schedule"].as_str().unwrap_or_default();
    if schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else if schedule.contains("TZ") {
        errs.push(FieldError::invalid("spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
    } else if let Err(e) = parse_schedule(schedule) {
        errs.push(FieldError::invalid("spec.schedule", schedule, e));
    }
    super::one_of(&spec["concurrencyPolicy"], "spec.concurrencyPolicy", &["Allow", "Forbid", "Replace"], &mut errs);
    for field in ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        non_negative(&spec[field], &format!("spec.{field}"), &mut errs);
    }
    if let Some(tz) = spec["timeZone"].as_str()
        && let Some(e) = time_zone_error(tz)
    {
        errs.push(FieldError::invalid("spec.timeZone", tz, e));
    }
    let job_template = &spec["jobTemplate"];
    super::labels(&job_template["metadata"]["labels"], "spec.jobTemplate.metadata.labels", &mut errs);
    job_spec(&job_template["spec"], template, "spec.jobTemplate.spec", &mut errs);
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
    use serde_json::json;

    use super::*;
    use crate::registry::validation::test_messages as messages;
    use crate::registry::validation::test_template as template;

    fn valid_job() -> Value {
        json!({"spec": {"backoffLimit": 6, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "busybox"}]}}}})
    }

    #[test]
    fn jobs() {
        assert!(job(&valid_job(), template(&valid_job(), "/spec/template").as_ref()).is_empty());
        let mut j = valid_job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        j["spec"]["parallelism"] = json!(-1);
        assert_eq!(
            messages(&job(&j, template(&j, "/spec/template").as_ref())),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut j = valid_job();
        j["spec"]["template"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
        assert_eq!(
            messages(&job(&j, template(&j, "/spec/template").as_ref())),
            ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );
        let mut changed = valid_job();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        let errs = messages(&job_update(&valid_job(), &changed, template(&changed, "/spec/template").as_ref()));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("spec.template: Invalid value: {") && errs[0].ends_with("}: field is immutable"));
    }

    #[test]
    fn cron_jobs() {
        let cj = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * 1-5", "concurrencyPolicy": "Forbid", "timeZone": "Etc/UTC", "jobTemplate": valid_job()}});
        assert_eq!(messages(&cron_job(&cj, template(&cj, "/spec/jobTemplate/spec/template").as_ref())), Vec::<String>::new());
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
            messages(&cron_job(&bad, template(&bad, "/spec/jobTemplate/spec/template").as_ref())),
            [
                "spec.schedule: Required value",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ]
        );
    }
}
