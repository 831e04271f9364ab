//! Kubernetes label selectors, evaluated as the API server evaluates webhook selectors.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// True when `selector` matches `labels`. A missing selector matches everything, as does an
/// empty one. An operator Kubernetes does not know never matches.
pub fn matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_match = selector.match_expressions.iter().flatten().all(|req| {
        let value = labels.get(&req.key);
        let values = req.values.as_deref().unwrap_or(&[]);
        match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_match && expressions_match
}

/// True when every label of `selector` is in `labels` (a map selector, as Istio's
/// `workloadSelector` and Gateway `selector`). An empty selector matches everything.
pub fn labels_match(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Renders a selector the way kubectl prints one: `a=b,c in (x,y),!d`.
pub fn describe(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else {
        return "<everything>".to_string();
    };
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for req in selector.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or(&[]).join(",");
        parts.push(match req.operator.as_str() {
            "In" => format!("{} in ({values})", req.key),
            "NotIn" => format!("{} notin ({values})", req.key),
            "Exists" => req.key.clone(),
            "DoesNotExist" => format!("!{}", req.key),
            other => format!("{} {other} ({values})", req.key),
        });
    }
    if parts.is_empty() {
        "<everything>".to_string()
    } else {
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn expressions() {
        let selector = LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "istio-injection".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
                LabelSelectorRequirement {
                    key: "istio.io/rev".into(),
                    operator: "In".into(),
                    values: Some(vec!["canary".into()]),
                },
            ]),
        };
        assert!(matches(
            Some(&selector),
            &labels(&[("istio.io/rev", "canary")])
        ));
        assert!(!matches(
            Some(&selector),
            &labels(&[("istio.io/rev", "stable")])
        ));
        assert!(!matches(
            Some(&selector),
            &labels(&[("istio.io/rev", "canary"), ("istio-injection", "enabled")])
        ));
        assert!(matches(None, &labels(&[])));
        assert_eq!(
            describe(Some(&selector)),
            "!istio-injection,istio.io/rev in (canary)"
        );
    }
}
