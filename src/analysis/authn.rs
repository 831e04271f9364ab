//! Istio's `authn.BlockedCIDRsAnalyzer`: RequestAuthentications exist, so istiod fetches the
//! JWKS URIs they name, but no istiod Deployment (label `app: istiod`) sets
//! `BLOCKED_CIDRS_IN_JWKS_URIS` to keep those fetches off internal networks (IST0175).

use super::Input;
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::kube::snapshot::{Object, WorkloadKind};

const BLOCKED_CIDRS: &str = "BLOCKED_CIDRS_IN_JWKS_URIS";

/// Istio's list of names: up to five, then `, and N more`.
fn names(list: &[String]) -> String {
    const SHOWN: usize = 5;
    if list.len() <= SHOWN {
        return list.join(", ");
    }
    format!(
        "{}, and {} more",
        list[..SHOWN].join(", "),
        list.len() - SHOWN
    )
}

/// `authn.BlockedCIDRsAnalyzer`.
pub fn blocked_cidrs(input: &Input, out: &mut Vec<Finding>) {
    let mut list: Vec<String> = input
        .snapshot
        .config
        .iter()
        .filter(|c| c.object.kind == "RequestAuthentication")
        .map(|c| match c.object.namespace() {
            Some(ns) => format!("{ns}/{}", c.object.name()),
            None => c.object.name().to_string(),
        })
        .collect();
    list.sort();
    if list.is_empty() {
        return;
    }
    for w in &input.snapshot.workloads {
        if w.object.kind != WorkloadKind::Deployment || w.object.label("app") != Some("istiod") {
            continue;
        }
        let configured = w
            .object
            .template
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .flat_map(|c| c.env.iter().flatten())
            .any(|e| e.name == BLOCKED_CIDRS && e.value.as_deref().is_some_and(|v| !v.is_empty()));
        if !configured {
            out.push(Finding::new(
                messages::IST0175::message(list.len(), names(&list)),
                Some(ResourceRef::of(w)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn more_than_five_names_are_counted() {
        let list: Vec<String> = (1..=7).map(|i| format!("ns/ra{i}")).collect();
        assert_eq!(
            names(&list),
            "ns/ra1, ns/ra2, ns/ra3, ns/ra4, ns/ra5, and 2 more"
        );
        assert_eq!(names(&list[..2]), "ns/ra1, ns/ra2");
    }
}
