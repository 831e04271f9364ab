//! Istio's `webhook.Analyzer` (IST0139): Istio injection webhooks that overlap (one pod would
//! be injected twice) and webhooks that call a Service that does not exist.
//!
//! As Istio: a MutatingWebhookConfiguration counts when it names a revision (`istio.io/rev` on
//! itself or in a webhook's selectors) or has a webhook whose name ends in `istio.io`. Every
//! combination of the namespace labels {none, `istio-injection=enabled|disabled`} and object
//! labels {none, `sidecar.istio.io/inject=true|false`}, each also with `istio.io/rev=<rev>` for
//! every revision found, must match at most one webhook.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::Finding;
use crate::findings::ResourceRef;
use crate::findings::messages;
use crate::kube::selector;
use crate::kube::snapshot::{Located, Object, Snapshot};

const REV: &str = "istio.io/rev";

type Labels = BTreeMap<String, String>;

fn set(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The revisions a configuration names: its own `istio.io/rev` label and its webhooks'
/// selectors (`matchLabels` and the values of `matchExpressions` on that key).
fn revisions(wh: &MutatingWebhookConfiguration) -> BTreeSet<String> {
    let mut revs = BTreeSet::new();
    if let Some(r) = wh.label(REV) {
        revs.insert(r.to_string());
    }
    for hook in wh.webhooks.iter().flatten() {
        for sel in [&hook.namespace_selector, &hook.object_selector]
            .into_iter()
            .flatten()
        {
            if let Some(r) = sel.match_labels.as_ref().and_then(|m| m.get(REV)) {
                revs.insert(r.clone());
            }
            for req in sel.match_expressions.iter().flatten() {
                if req.key == REV {
                    revs.extend(req.values.iter().flatten().cloned());
                }
            }
        }
    }
    revs
}

fn is_istio_webhook(wh: &MutatingWebhookConfiguration) -> bool {
    wh.webhooks
        .iter()
        .flatten()
        .any(|h| h.name.ends_with("istio.io"))
}

/// Kubernetes' selector semantics, where a selector the API server would reject (an `In` or
/// `NotIn` without values, an `Exists` with values, an unknown operator) matches nothing.
fn selector_matches(sel: Option<&LabelSelector>, labels: &Labels) -> bool {
    let valid = sel.is_none_or(|s| {
        s.match_expressions.iter().flatten().all(|req| {
            let empty = req.values.as_ref().is_none_or(Vec::is_empty);
            match req.operator.as_str() {
                "In" | "NotIn" => !empty,
                "Exists" | "DoesNotExist" => empty,
                _ => false,
            }
        })
    });
    valid && selector::matches(sel, labels)
}

fn with_revisions(bases: &[Labels], revs: &BTreeSet<String>) -> Vec<Labels> {
    let mut out = bases.to_vec();
    for rev in revs {
        for base in bases {
            let mut l = base.clone();
            l.insert(REV.to_string(), rev.clone());
            out.push(l);
        }
    }
    out
}

/// `webhook.Analyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    // "<configuration>/<webhook>" -> (configuration, webhook), in name order.
    let mut hooks: BTreeMap<String, (&Located<MutatingWebhookConfiguration>, &MutatingWebhook)> =
        BTreeMap::new();
    let mut revs = BTreeSet::new();
    for wh in &snapshot.webhooks {
        let found = revisions(&wh.object);
        if found.is_empty() && !is_istio_webhook(&wh.object) {
            continue;
        }
        for hook in wh.object.webhooks.iter().flatten() {
            hooks.insert(format!("{}/{}", wh.object.name(), hook.name), (wh, hook));
        }
        revs.extend(found);
    }
    let namespace_labels = with_revisions(
        &[
            set(&[]),
            set(&[("istio-injection", "enabled")]),
            set(&[("istio-injection", "disabled")]),
        ],
        &revs,
    );
    let object_labels = with_revisions(
        &[
            set(&[]),
            set(&[("sidecar.istio.io/inject", "true")]),
            set(&[("sidecar.istio.io/inject", "false")]),
        ],
        &revs,
    );
    for nl in &namespace_labels {
        for ol in &object_labels {
            let matches: BTreeSet<&String> = hooks
                .iter()
                .filter(|(_, (_, h))| {
                    selector_matches(h.namespace_selector.as_ref(), nl)
                        && selector_matches(h.object_selector.as_ref(), ol)
                })
                .map(|(name, _)| name)
                .collect();
            if matches.len() < 2 {
                continue;
            }
            for name in &matches {
                let others: Vec<&str> = matches
                    .iter()
                    .filter(|o| *o != name)
                    .map(|o| o.as_str())
                    .collect();
                let (wh, _) = hooks[*name];
                out.push(Finding::new(messages::IST0139::message(format!(
                        "Webhook overlaps with others: [{}]. This may cause injection to occur twice.",
                        others.join(" ")
                    )
                    ), Some(ResourceRef::of(wh))));
            }
        }
    }
    for (wh, hook) in hooks.values() {
        let Some(svc) = &hook.client_config.service else {
            continue; // a URL: not a Service of this cluster
        };
        let exists = snapshot.all_services().any(|s| {
            s.object.namespace().unwrap_or("") == svc.namespace && s.object.name() == svc.name
        });
        if !exists {
            let full = if svc.namespace.is_empty() {
                svc.name.clone()
            } else {
                format!("{}/{}", svc.namespace, svc.name)
            };
            out.push(Finding::new(
                messages::IST0139::message(format!(
                    "Injector refers to a control plane service that does not exist: {full}."
                )),
                Some(ResourceRef::of(*wh)),
            ));
        }
    }
}
