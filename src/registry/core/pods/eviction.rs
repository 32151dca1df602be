//! `pods/<name>/eviction` (upstream's `EvictionREST`,
//! `pkg/registry/core/pod/storage/eviction.go`): a create of an Eviction, never stored, that
//! deletes the pod if it does not run or its one PodDisruptionBudget allows a disruption.
//!
//! The Eviction is admitted as the create it is (resource `pods`, subresource `eviction`). The
//! budget is charged through its `status` subresource with the store's update, the write
//! upstream makes as a client of itself (so admission and the status rules see it), and the
//! pod is deleted through the store's delete.

use kapi_api::api::policy::v1::PodDisruptionBudget;
use kapi_apimachinery::Time;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::registry::keys;
use crate::registry::objects::Kind;
use crate::registry::store::{Current, Proposed, Store, WriteOptions, read_internal};
use crate::status::{ApiError, GroupResource};

/// Evicts the pod `name` (the URL's; the Eviction must name it too), deleting it with the
/// Eviction's `deleteOptions`. `request` is the store of `pods/eviction`, whose admission sees
/// the Eviction.
pub async fn evict(
    request: &Store<'_>,
    options: WriteOptions<'_>,
    namespace: Option<&str>,
    name: &str,
    mut eviction: Value,
) -> Result<(), ApiError> {
    // Upstream's create handler runs the mutating phase before the REST code sees the object.
    request.admit_create(options, namespace, name, &mut eviction).await?;
    super::check_name("Eviction", name, &eviction)?;
    let mut delete_options = eviction.get("deleteOptions").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    request.validate_create_admission(options, namespace, name, &mut eviction).await?;
    // A dry run asked for in either place makes the eviction one.
    let dry_run = options.dry_run || delete_options["dryRun"].as_array().is_some_and(|v| v.iter().any(|d| d == "All"));
    let options = WriteOptions { dry_run, ..options };

    let pods = Store::new(request.storage, request.config, "", "pods", Kind::core_v1("Pod"));
    let key = keys::object_key("", "pods", namespace, name)?;
    let current = pods.current(&key, name).await?;
    let (_, pod) = read_internal(&current)?;
    if !ignores_budget(&pod)
        && let Some(budget) = budget_of(request, namespace, &pod).await?
    {
        charge(request, options, namespace, &budget, name).await?;
        // The budget was charged for this pod as read: delete exactly that pod.
        delete_options["preconditions"]["resourceVersion"] = json!(current.mod_revision.to_string());
    }
    // The store's delete without the delete's admission: upstream's eviction deletes with
    // `ValidateAllObjectFunc`, the create having been admitted.
    pods.delete_at(options, &key, name, &delete_options).await?;
    Ok(())
}

/// The one PodDisruptionBudget in the pod's namespace that selects it, if any; more than one
/// is upstream's 500.
async fn budget_of(request: &Store<'_>, namespace: Option<&str>, pod: &Value) -> Result<Option<Value>, ApiError> {
    let prefix = keys::key("policy", "poddisruptionbudgets", namespace, None);
    let listed = request.storage.list(&prefix, Default::default()).await.map_err(ApiError::from)?;
    let budgets: Vec<Value> = listed.kvs.iter().map(|kv| read_internal(kv).map(|(_, pdb)| pdb)).collect::<Result<_, _>>()?;
    match budgets_for(pod, &budgets)[..] {
        [] => Ok(None),
        [budget] => Ok(Some(budget.clone())),
        _ => Err(ApiError::internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")),
    }
}

/// Records the disruption of `pod_name` in `budget`, or refuses it (429, 403), through the
/// budget's `status` with the store's update: a conflict starts again from the budget as it
/// now is. Upstream writes it with its loopback client, as the API server rather than the
/// evicting user; under dry run it checks the budget and writes nothing.
async fn charge(
    request: &Store<'_>,
    options: WriteOptions<'_>,
    namespace: Option<&str>,
    budget: &Value,
    pod_name: &str,
) -> Result<(), ApiError> {
    // Kept to the second, as the time is written.
    let now = Time::from_unix(chrono::Utc::now().timestamp(), 0);
    if options.dry_run {
        let mut budget = PodDisruptionBudget::deserialize(budget).map_err(|e| ApiError::internal(format!("reading the budget: {e}")))?;
        return charge_budget(&mut budget, pod_name, &now);
    }
    let budget_name = budget["metadata"]["name"].as_str().unwrap_or_default();
    let kind = Kind { group: "policy".into(), version: "v1".into(), kind: "PodDisruptionBudget".into() };
    let statuses = Store::new(request.storage, request.config, "policy", "poddisruptionbudgets", kind).with_subresource(Some("status"));
    let mut charged = |current: Option<&Current<'_>>| {
        let current = current.ok_or_else(|| ApiError::not_found(GroupResource::new("policy", "poddisruptionbudgets"), budget_name))?;
        let mut object = current.internal_object();
        charge_budget(object.typed_mut()?, pod_name, &now)?;
        Ok(Proposed::edited(object))
    };
    statuses.update(WriteOptions::default(), namespace, budget_name, &mut charged).await?;
    Ok(())
}

/// Whether a pod may be evicted without asking its disruption budget (`canIgnorePDB`): it
/// does not run (pending, finished) or is already being deleted.
fn ignores_budget(pod: &Value) -> bool {
    matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed" | "Pending") | None)
        || pod["metadata"]["deletionTimestamp"].is_string()
}

/// The PodDisruptionBudgets (as stored, in the pod's namespace) whose selector matches the pod;
/// an empty or missing selector matches nothing (`policy/v1` semantics).
fn budgets_for<'a>(pod: &Value, budgets: &'a [Value]) -> Vec<&'a Value> {
    budgets
        .iter()
        .filter(|pdb| {
            let selector = &pdb["spec"]["selector"];
            if selector.is_null() || selector.as_object().is_some_and(|o| o.is_empty()) {
                return false;
            }
            crate::selectors::LabelSelector::from_json(selector)
                .is_ok_and(|s| !s.matches_nothing() && s.matches_json(&pod["metadata"]["labels"]))
        })
        .collect()
}

/// The most pods a budget records as disrupted but not yet seen gone (`MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// `checkAndDecrement`: whether the budget allows one more disruption; if so, `pdb` is updated
/// to record it (fewer disruptions allowed, the pod in `disruptedPods`).
fn charge_budget(pdb: &mut PodDisruptionBudget, pod_name: &str, now: &Time) -> Result<(), ApiError> {
    let pdb_name = pdb.metadata.as_ref().and_then(|meta| meta.name.clone()).unwrap_or_default();
    let generation = pdb.metadata.as_ref().and_then(|meta| meta.generation).unwrap_or(0);
    let status = pdb.status.get_or_insert_with(Default::default);
    if status.observed_generation.unwrap_or(0) < generation {
        return Err(budget_violation(format!("The disruption budget {pdb_name} is still being processed by the server.")));
    }
    let allowed = status.disruptions_allowed.unwrap_or(0);
    if allowed < 0 {
        return Err(ApiError::forbidden(GroupResource::new("", ""), "", "pdb disruptions allowed is negative"));
    }
    if status.disrupted_pods.len() > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            GroupResource::new("", ""),
            "",
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(budget_violation(format!(
            "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
            status.desired_healthy.unwrap_or(0),
            status.current_healthy.unwrap_or(0)
        )));
    }
    status.disruptions_allowed = Some(allowed - 1);
    status.disrupted_pods.insert(pod_name.to_owned(), *now);
    Ok(())
}

fn budget_violation(cause: String) -> ApiError {
    let mut err = ApiError::too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 0);
    if let Some(details) = err.details.as_mut() {
        details.causes.push(kapi_api::apimachinery::pkg::apis::meta::v1::StatusCause {
            reason: Some("DisruptionBudget".into()),
            message: Some(cause),
            field: None,
        });
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_gate_evictions() {
        let pod = json!({"metadata": {"name": "p", "labels": {"app": "x"}}, "status": {"phase": "Running"}});
        let budgets = vec![
            json!({"metadata": {"name": "b", "generation": 1}, "spec": {"selector": {"matchLabels": {"app": "x"}}},
                   "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "desiredHealthy": 1, "currentHealthy": 2}}),
            json!({"metadata": {"name": "other"}, "spec": {"selector": {"matchLabels": {"app": "y"}}}}),
            json!({"metadata": {"name": "empty"}, "spec": {"selector": {}}}),
        ];
        assert!(!ignores_budget(&pod));
        let matching = budgets_for(&pod, &budgets);
        assert_eq!(matching.len(), 1);
        let mut pdb = PodDisruptionBudget::deserialize(matching[0]).unwrap();
        let now = Time::now();
        charge_budget(&mut pdb, "p", &now).unwrap();
        let status = pdb.status.as_ref().unwrap();
        assert_eq!((status.disruptions_allowed, status.disrupted_pods.get("p")), (Some(0), Some(&now)));
        let err = charge_budget(&mut pdb, "q", &now).unwrap_err();
        assert_eq!(err.code, 429);
        assert_eq!(
            err.details.unwrap().causes[0].message.as_deref(),
            Some("The disruption budget b needs 1 healthy pods and has 2 currently")
        );
    }
}
