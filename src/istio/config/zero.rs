//! `null` in a spec as Istio reads it (the legacy `jsonpb` of its config reader): a `null` list
//! or map is an empty one, and a `null` element of a list, or value of a map, is the element's
//! zero value (an empty message, `""`, `0`), never a missing one. So `subsets: [null]` is one
//! subset without a name (`subset name cannot be empty`), never a refused document, and the
//! "may not be null" rules of Istio's webhook code are never reached from a manifest.
//!
//! Use with `#[serde(deserialize_with = "zero::list")]` on a `Vec` field and
//! `#[serde(deserialize_with = "zero::map")]` on a `BTreeMap` field of a `#[serde(default)]`
//! struct.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// A list whose `null` (or `null` elements) are zero values.
pub fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    let items: Option<Vec<Option<T>>> = Option::deserialize(d)?;
    Ok(items
        .unwrap_or_default()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect())
}

/// A map whose `null` (or `null` values) are zero values.
pub fn map<'de, D, K, T>(d: D) -> Result<BTreeMap<K, T>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de> + Ord,
    T: Deserialize<'de> + Default,
{
    let entries: Option<BTreeMap<K, Option<T>>> = Option::deserialize(d)?;
    Ok(entries
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Item {
        name: String,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Spec {
        #[serde(deserialize_with = "list")]
        items: Vec<Item>,
        #[serde(deserialize_with = "list")]
        hosts: Vec<String>,
        #[serde(deserialize_with = "map")]
        labels: BTreeMap<String, String>,
    }

    #[test]
    fn nulls_are_zero_values() {
        let spec: Spec = serde_json::from_value(json!({
            "items": [null, {"name": "a"}],
            "hosts": null,
            "labels": {"app": null},
        }))
        .unwrap();
        assert_eq!(
            spec,
            Spec {
                items: vec![Item::default(), Item { name: "a".into() }],
                hosts: vec![],
                labels: BTreeMap::from([("app".into(), String::new())]),
            }
        );
        let spec: Spec = serde_json::from_value(json!({})).unwrap();
        assert_eq!(spec, Spec::default());
    }
}
