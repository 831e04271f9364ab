//! `schema.ValidationAnalyzer.DestinationRule`: Istio's `ValidateDestinationRule` (host, traffic
//! policies, subsets, `exportTo`, workload selector), errors as IST0106 and warnings as IST0133.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::istio::config::zero;

use super::Input;
use super::schema_common::{
    Validation, each, export_to, is_dns1123_label, metadata, validate_labels,
    validate_wildcard_domain,
};
use super::schema_traffic_policy::{TrafficPolicy, traffic_policy};
use crate::findings::Finding;
use crate::kube::snapshot::{ConfigObject, Located};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DestinationRuleSpec {
    host: String,
    traffic_policy: Option<TrafficPolicy>,
    #[serde(deserialize_with = "zero::list")]
    subsets: Vec<Subset>,
    #[serde(deserialize_with = "zero::list")]
    export_to: Vec<String>,
    workload_selector: Option<Selector>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Subset {
    name: String,
    #[serde(deserialize_with = "zero::map")]
    labels: BTreeMap<String, String>,
    traffic_policy: Option<TrafficPolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Selector {
    #[serde(deserialize_with = "zero::map")]
    match_labels: BTreeMap<String, String>,
}

/// `schema.ValidationAnalyzer.DestinationRule`.
pub fn destination_rules(input: &Input, out: &mut Vec<Finding>) {
    each(input, "DestinationRule", out, validate);
}

/// True when Istio's validation refuses the rule (an IST0106 of its own): such a rule never
/// reaches istiod.
pub fn rejected(resource: &Located<ConfigObject>) -> bool {
    let spec = &resource.object.spec;
    let rule = if spec.is_null() {
        DestinationRuleSpec::default()
    } else {
        match DestinationRuleSpec::deserialize(spec) {
            Ok(rule) => rule,
            Err(_) => return false,
        }
    };
    let mut v = Validation::default();
    metadata(resource, &mut v);
    if v.errors.is_empty() {
        validate(resource, &rule, &mut v);
    }
    !v.errors.is_empty()
}

/// `validateSubsetName`.
pub fn subset_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("subset name cannot be empty".into());
    }
    (!is_dns1123_label(name)).then(|| format!("subset name is invalid: {name}"))
}

fn validate(resource: &Located<ConfigObject>, rule: &DestinationRuleSpec, v: &mut Validation) {
    let namespace = resource.object.metadata.namespace.as_deref().unwrap_or("");
    v.check(validate_wildcard_domain(&rule.host));
    traffic_policy(namespace, rule.traffic_policy.as_ref(), v);
    let mut names: Vec<&str> = Vec::new();
    for subset in &rule.subsets {
        if names.contains(&subset.name.as_str()) {
            v.error(format!("duplicate subset names: {}", subset.name));
        } else {
            names.push(&subset.name);
        }
        v.check(subset_name(&subset.name));
        validate_labels(&subset.labels, &mut v.errors);
        // A subset's warnings are dropped (Istio appends its policy's errors only).
        let mut inner = Validation::default();
        traffic_policy(namespace, subset.traffic_policy.as_ref(), &mut inner);
        v.extend(inner.errors);
    }
    export_to(
        namespace,
        &rule.export_to,
        false,
        rule.workload_selector.is_some(),
        &mut v.errors,
    );
    if let Some(selector) = &rule.workload_selector {
        for (k, value) in &selector.match_labels {
            let pair = format!("{k}={value}");
            if k.is_empty() {
                v.error(format!("empty key is not supported in selector: {pair:?}"));
            }
            if k.contains('*') || value.contains('*') {
                v.error(format!("wildcard is not supported in selector: {pair:?}"));
            }
        }
        if selector.match_labels.is_empty() {
            v.warn("workload selector specified without labels");
        }
    }
}
