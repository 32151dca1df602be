//! The `scale` subresource's view of an object (upstream's `scaleFromDeployment` and friends,
//! and apiextensions-apiserver's `scaleFromCustomResource`): where a resource keeps its desired
//! replicas, its observed replicas and its label selector, and the `autoscaling/v1` `Scale`
//! made of them.

use serde_json::{Value, json};

use crate::status::ApiError;

/// Where a resource with a `scale` subresource keeps what `Scale` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleFacts {
    /// The desired replicas (`spec.replicas`; a custom resource's `specReplicasPath`).
    pub spec_replicas: Vec<String>,
    /// The observed replicas (`status.replicas`; `statusReplicasPath`).
    pub status_replicas: Vec<String>,
    pub selector: ScaleSelector,
    /// The desired replicas when the object has none (the built-ins' defaulted 1; a custom
    /// resource's 0).
    pub default_replicas: i64,
}

/// Where the label selector is and in which form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScaleSelector {
    /// A `metav1.LabelSelector` (the apps workloads' `spec.selector`).
    LabelSelector(Vec<String>),
    /// A plain label map (a replication controller's `spec.selector`).
    Map(Vec<String>),
    /// A selector already in its text form (a custom resource's `labelSelectorPath`).
    Text(Vec<String>),
    /// None: `Scale` has no selector.
    None,
}

impl ScaleFacts {
    /// The apps workloads' and replication controllers' places: `spec.replicas`,
    /// `status.replicas`, `spec.selector` (a label map when `selector_is_map`).
    pub fn workload(selector_is_map: bool) -> ScaleFacts {
        let path = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let selector = path(&["spec", "selector"]);
        ScaleFacts {
            spec_replicas: path(&["spec", "replicas"]),
            status_replicas: path(&["status", "replicas"]),
            selector: if selector_is_map { ScaleSelector::Map(selector) } else { ScaleSelector::LabelSelector(selector) },
            default_replicas: 1,
        }
    }

    /// A custom resource's `subresources.scale` (`.spec.replicas`-style paths); `None` when a
    /// required path is not a plain field path.
    pub fn custom(scale: &Value) -> Option<ScaleFacts> {
        let path = |field: &str| -> Option<Vec<String>> {
            let text = scale[field].as_str()?.strip_prefix('.')?;
            let parts: Vec<String> = text.split('.').map(str::to_owned).collect();
            parts.iter().all(|p| !p.is_empty() && !p.contains(['[', ']'])).then_some(parts)
        };
        Some(ScaleFacts {
            spec_replicas: path("specReplicasPath")?,
            status_replicas: path("statusReplicasPath")?,
            selector: path("labelSelectorPath").map_or(ScaleSelector::None, ScaleSelector::Text),
            default_replicas: 0,
        })
    }

    /// The `autoscaling/v1` `Scale` of an object.
    pub fn view(&self, object: &Value) -> Result<Value, ApiError> {
        let selector = match &self.selector {
            ScaleSelector::LabelSelector(path) => Some(
                crate::selectors::LabelSelector::from_json(at(object, path))
                    .map(|s| s.to_string())
                    .map_err(|e| ApiError::internal(format!("invalid selector on the object: {e}")))?,
            ),
            ScaleSelector::Map(path) => {
                let labels: std::collections::BTreeMap<String, String> =
                    serde_json::from_value(at(object, path).clone()).unwrap_or_default();
                Some(crate::selectors::LabelSelector::from_set(&labels).to_string())
            }
            ScaleSelector::Text(path) => at(object, path).as_str().map(str::to_owned),
            ScaleSelector::None => None,
        };
        let meta = &object["metadata"];
        let mut scale = json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
                "creationTimestamp": meta["creationTimestamp"],
            },
            "spec": { "replicas": at(object, &self.spec_replicas).as_i64().unwrap_or(self.default_replicas) },
            "status": { "replicas": at(object, &self.status_replicas).as_i64().unwrap_or(0) },
        });
        if let Some(selector) = selector {
            scale["status"]["selector"] = json!(selector);
        }
        Ok(scale)
    }

    /// Sets the desired replicas on the object (what a write of `Scale` changes).
    pub fn set_replicas(&self, object: &mut Value, replicas: i64) {
        let mut place = object;
        for field in &self.spec_replicas {
            if !place.is_object() {
                *place = json!({});
            }
            place = &mut place[field.as_str()];
        }
        *place = json!(replicas);
    }
}

fn at<'a>(object: &'a Value, path: &[String]) -> &'a Value {
    path.iter().fold(object, |value, field| &value[field.as_str()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_and_custom_resources_have_their_scale() {
        let deployment = json!({"metadata": {"name": "d"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}}}, "status": {"replicas": 2}});
        let scale = ScaleFacts::workload(false).view(&deployment).unwrap();
        assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["selector"].as_str()), (Some(3), Some("app=x")));
        let rc = json!({"metadata": {"name": "r"}, "spec": {"selector": {"app": "y"}}});
        let scale = ScaleFacts::workload(true).view(&rc).unwrap();
        assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["selector"].as_str()), (Some(1), Some("app=y")));

        let facts = ScaleFacts::custom(
            &json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size", "labelSelectorPath": ".status.selector"}),
        )
        .unwrap();
        let mut widget = json!({"metadata": {"name": "w"}, "status": {"size": 1, "selector": "app=w"}});
        let scale = facts.view(&widget).unwrap();
        assert_eq!((scale["spec"]["replicas"].as_i64(), scale["status"]["replicas"].as_i64()), (Some(0), Some(1)));
        assert_eq!(scale["status"]["selector"], "app=w");
        facts.set_replicas(&mut widget, 5);
        assert_eq!(widget["spec"]["size"], 5);
        assert!(ScaleFacts::custom(&json!({"specReplicasPath": ".spec.items[0]", "statusReplicasPath": ".status.n"})).is_none());
        let without_selector = ScaleFacts::custom(&json!({"specReplicasPath": ".spec.n", "statusReplicasPath": ".status.n"})).unwrap();
        assert!(without_selector.view(&widget).unwrap()["status"].get("selector").is_none());
    }
}
