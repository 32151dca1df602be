//! Field management through the `scale` subresource (upstream's `managedfields.ScaleHandler`).
//! A write of `Scale` is managed as a write of an `autoscaling/v1` `Scale` object: the entries
//! of the object that own its replicas field are seen as owning the Scale's `.spec.replicas`
//! ([`to_scale`], upstream's `ToSubresource`), the field manager updates or applies on the
//! Scale, and the entries it leaves are mapped back onto the object ([`to_parent`], upstream's
//! `ToParent`): a manager that lost `.spec.replicas` loses the replicas field, one that holds
//! it on the Scale only is given the replicas field in the request's version. I/O-free.

use serde_json::Value;

use super::set::{PathElement, Set};
use super::{Applied, Context, Entry, apply_to_entries, decode, encode, update_entries};
use crate::status::ApiError;

/// The object behind a `Scale`: its group (whose versions all keep the desired replicas at
/// `replicas`), the version the request speaks, and the replicas field.
#[derive(Clone, Copy)]
pub struct Parent<'a> {
    pub group: &'a str,
    pub api_version: &'a str,
    pub replicas: &'a [String],
}

impl Parent<'_> {
    fn path(&self) -> Vec<PathElement> {
        self.replicas.iter().map(|f| PathElement::Field(f.clone())).collect()
    }

    /// Whether an entry's version is one of the object's (upstream's mappings name every
    /// version of the group; an entry of another version is skipped, and dropped on the way
    /// back).
    fn knows(&self, api_version: &str) -> bool {
        api_version.split_once('/').map_or("", |(group, _)| group) == self.group
    }
}

/// `Scale`'s `.spec.replicas`.
fn scale_replicas() -> Vec<PathElement> {
    vec![PathElement::Field("spec".into()), PathElement::Field("replicas".into())]
}

fn only(path: &[PathElement]) -> Set {
    let mut set = Set::new();
    set.insert(path);
    set
}

/// Upstream's `ToSubresource`: the entries that own the object's replicas, each owning only the
/// Scale's `.spec.replicas`. An entry keeps its identity (upstream keys it by the manager
/// identifier it had on the object, so an Update entry still names the object's version).
fn to_scale(parent: &Parent<'_>, entries: &[Entry]) -> Vec<Entry> {
    let path = parent.path();
    entries
        .iter()
        .filter(|e| parent.knows(&e.api_version) && e.set.has(&path))
        .map(|e| Entry { set: only(&scale_replicas()), ..e.clone() })
        .collect()
}

/// Upstream's `ToParent`: the object's entries after the Scale's became `scale`.
fn to_parent(parent: &Parent<'_>, entries: Vec<Entry>, mut scale: Vec<Entry>) -> Vec<Entry> {
    let path = parent.path();
    // A manager left with nothing is gone (structured-merge-diff drops empty entries).
    scale.retain(|e| !e.set.is_empty());
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len() + 1);
    for entry in &entries {
        if !parent.knows(&entry.api_version) {
            continue;
        }
        if !entry.set.has(&path) {
            out.push(entry.clone());
            continue;
        }
        match scale.iter().position(|s| s.same_entry(entry)) {
            // Still holds `.spec.replicas`: kept as it is.
            Some(i) => {
                scale.remove(i);
                out.push(entry.clone());
            }
            // Lost it: the replicas field is taken from the entry.
            None => {
                let set = entry.set.clone().difference(&only(&path));
                if !set.is_empty() {
                    out.push(Entry { set, ..entry.clone() });
                }
            }
        }
    }
    for entry in scale {
        if !entry.set.has(&scale_replicas()) {
            continue;
        }
        // Upstream takes the time the object's entries have for the same identifier: none for
        // a manager the object does not have yet (nor for an Update one, whose identifier names
        // the Scale's version).
        let time = entries.iter().find(|e| e.same_entry(&entry)).and_then(|e| e.time.clone());
        out.retain(|e| !e.same_entry(&entry));
        out.push(Entry { api_version: parent.api_version.to_owned(), set: only(&path), time, ..entry });
    }
    out
}

/// An Update through `scale`: the object's `managedFields` after `old` (the Scale the object
/// showed) became `new`. `parent_managed` are the object's.
pub fn update(cx: &Context<'_>, parent: &Parent<'_>, old: &Value, new: &Value, parent_managed: &Value) -> Option<Value> {
    let entries = decode(parent_managed).unwrap_or_default();
    let scale = to_scale(parent, &entries);
    // No entry holds the replicas: the Scale's update is not tracked (upstream's
    // `skipNonApplied`); the object's entries are mapped back with none of the Scale's.
    if scale.is_empty() && super::is_stored(old) {
        return encode(to_parent(parent, entries, Vec::new()));
    }
    let scale = update_entries(cx, old, new, scale);
    encode(to_parent(parent, entries, scale))
}

/// An Apply through `scale`: `config` (a `Scale`) applied to `live` (the Scale the object
/// shows; `zero` the empty Scale); the merged Scale and the object's `managedFields`.
pub fn apply(
    cx: &Context<'_>,
    parent: &Parent<'_>,
    live: &Value,
    zero: &Value,
    config: &Value,
    parent_managed: &Value,
    force: bool,
) -> Result<Applied, ApiError> {
    let entries = decode(parent_managed).unwrap_or_default();
    let (object, scale) = apply_to_entries(cx, live, zero, config, to_scale(parent, &entries), force)?;
    Ok(Applied { object, managed_fields: encode(to_parent(parent, entries, scale)) })
}

#[cfg(test)]
mod tests {
    use super::super::{Writer, reset_set};
    use super::*;
    use serde_json::json;

    fn scale(replicas: i64) -> Value {
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d", "namespace": "ns", "uid": "u"},
            "spec": {"replicas": replicas}, "status": {"replicas": 0}})
    }

    /// Upstream's scalehandler cases: an applier of the object that owns `spec.replicas`
    /// conflicts with an apply of another replicas count to the Scale (named with its own
    /// version); forced, it loses the field, and the Scale's applier owns it in the object's
    /// version, with no time (upstream's ToParent takes the object's time for it, and there is
    /// none).
    #[test]
    fn scale_applies_conflict_then_take_the_replicas_field() {
        let replicas = vec!["spec".to_owned(), "replicas".to_owned()];
        let parent = Parent { group: "apps", api_version: "apps/v1", replicas: &replicas };
        let reset = reset_set(&[]);
        let cx = Context {
            ty: super::super::schemas::scale_type(),
            reset: &reset,
            writer: Writer { manager: "scaler", api_version: "autoscaling/v1", subresource: Some("scale") },
            now: "2026-01-01T00:00:00Z",
            convert: None,
        };
        let managed = json!([
            {"manager": "owner", "operation": "Apply", "apiVersion": "apps/v1", "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}},
            {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}}},
        ]);
        let config = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 5}});
        let zero = json!({});
        let err = apply(&cx, &parent, &scale(1), &zero, &config, &managed, false).err().unwrap();
        assert_eq!((err.code, err.message.as_str()), (409, "Apply failed with 1 conflict: conflict with \"owner\": .spec.replicas"));
        let applied = apply(&cx, &parent, &scale(1), &zero, &config, &managed, true).unwrap();
        assert_eq!(applied.object["spec"]["replicas"], 5);
        assert_eq!(
            applied.managed_fields,
            // No time sorts as the epoch.
            Some(json!([
                {"manager": "scaler", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"},
                {"manager": "owner", "operation": "Apply", "apiVersion": "apps/v1", "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:paused": {}}}},
                {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1", "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}}},
            ]))
        );
        // An Update through `scale` by another manager takes the field from the Scale's applier,
        // whose entry goes.
        let update_cx = Context { writer: Writer { manager: "hpa", ..cx.writer }, ..cx };
        let managed = applied.managed_fields.unwrap();
        let out = update(&update_cx, &parent, &scale(5), &scale(7), &managed).unwrap();
        let entries = out.as_array().unwrap();
        assert_eq!(entries.len(), 3, "{out}");
        assert!(entries.iter().all(|e| e["manager"] != "scaler"), "{out}");
        let hpa = entries.iter().find(|e| e["manager"] == "hpa").unwrap();
        assert_eq!(
            hpa,
            &json!({"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"})
        );
    }
}
