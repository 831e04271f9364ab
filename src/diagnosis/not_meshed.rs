//! The verdicts of a pod without sidecar: why it was not injected (namespace, opt-out, created
//! before the label, no webhook matches, an unserved revision, hostNetwork) and what to do.

use super::*;

impl<'a> Builder<'a> {
    pub(super) fn not_meshed(&mut self) {
        let labels = self
            .ctx
            .namespace
            .found()
            .and_then(|n| n.metadata.labels.as_ref());
        let spec = self.pod.spec.as_ref();
        let facts = PodFacts {
            namespace: &self.namespace,
            namespace_labels: labels,
            labels: self.pod.metadata.labels.as_ref(),
            annotations: self.pod.metadata.annotations.as_ref(),
            host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
        };
        let no_webhooks = Vec::new();
        let webhooks = match &self.ctx.webhooks {
            Lookup::Found(w) => w.as_slice(),
            Lookup::Missing => no_webhooks.as_slice(),
            Lookup::Unknown(reason) => {
                self.evidence.push(evidence(
                    "mutatingwebhookconfigurations",
                    format!(
                        "could not be listed ({reason}): the selectors of a default Istio installation are assumed"
                    ),
                ));
                no_webhooks.as_slice()
            }
        };
        self.evidence.push(evidence(
            "pod spec",
            "the pod has no istio-proxy container (nor a native sidecar of that name)",
        ));
        let decision = injection::decide(&facts, webhooks);
        let full = self.full_name();
        // Live, the webhooks decide: with none at all, injection cannot happen (the default
        // selectors are assumed only when the webhooks could not be read).
        let no_injector = matches!(&self.ctx.webhooks, Lookup::Found(w) if !w.iter().any(|c| {
            c.object
                .webhooks
                .iter()
                .flatten()
                .any(injection::is_injection_webhook)
        }));
        match decision {
            Decision::Injected { asked_by, .. } if no_injector => {
                self.evidence.push(evidence(
                    "mutatingwebhookconfigurations",
                    "none of the cluster's MutatingWebhookConfigurations is an Istio sidecar injector (*.sidecar-injector.istio.io)",
                ));
                self.set_verdict(
                    VerdictKind::InjectorMissing,
                    "not meshed: no injection webhook is installed",
                    format!(
                        "The {asked_by} asks for a sidecar, but the cluster has no Istio injection webhook at all: istiod (its sidecar injector) is not installed, or its MutatingWebhookConfiguration was deleted. No pod gets a sidecar until it is back; restarting the pod would not help."
                    ),
                );
                self.findings.push(Finding::new(
                    MD0103::message("Pod", full, asked_by),
                    Some(self.pod_ref()),
                ));
                self.next_steps.push(step(
                    "Is istiod installed and running?",
                    Some(format!(
                        "kubectl -n {ISTIO_NAMESPACE} get deploy,pods -l app=istiod"
                    )),
                ));
                self.next_steps.push(step(
                    "Install (or reinstall) Istio's control plane so its injection webhook exists again, then restart the pod's workload",
                    Some("kubectl get mutatingwebhookconfigurations".to_string()),
                ));
            }
            Decision::Injected {
                asked_by, webhook, ..
            } => {
                let by = webhook
                    .map(|w| format!(" through webhook {w}"))
                    .unwrap_or_default();
                self.evidence.push(evidence(
                    "injection",
                    format!("a pod created now would get a proxy: the {asked_by} asks for it{by}"),
                ));
                self.set_verdict(
                    VerdictKind::NotMeshed,
                    "not meshed: created before injection was enabled",
                    format!(
                        "The pod has no sidecar, but a pod created now would get one ({asked_by}). It was created before the namespace was labelled (or before the webhook matched it): restart it."
                    ),
                );
                self.findings
                    .push(Finding::new(IST0103::message(full), Some(self.pod_ref())));
                self.next_steps.push(self.restart_step());
            }
            Decision::NotInjected(skip) => {
                self.evidence.push(evidence("injection", skip.explain()));
                let (title, summary) = match &skip {
                    Skip::NotRequested => (
                        "not meshed: the namespace is not labelled",
                        format!(
                            "Nothing asks for a sidecar: namespace {} has no istio-injection=enabled or istio.io/rev label, and the pod does not ask for one.",
                            self.namespace
                        ),
                    ),
                    Skip::OptedOut { by } => (
                        "not meshed: the pod opts out",
                        format!("The pod opts out of injection with the {by}."),
                    ),
                    Skip::NoWebhookMatches { asked_by } => (
                        "not meshed: no injection webhook matches",
                        format!(
                            "The {asked_by} asks for injection, but no injection webhook's selectors match the pod, so it was created without a proxy."
                        ),
                    ),
                    Skip::HostNetwork => (
                        "not meshed: hostNetwork",
                        "The pod uses hostNetwork, and Istio never injects host-network pods."
                            .to_string(),
                    ),
                    Skip::SystemNamespace => (
                        "not meshed: system namespace",
                        format!(
                            "{} is a system namespace, which Istio never injects.",
                            self.namespace
                        ),
                    ),
                    Skip::NamespaceDisabled => (
                        "not meshed: injection disabled for the namespace",
                        format!("Namespace {} has istio-injection=disabled.", self.namespace),
                    ),
                    Skip::Ambient => (
                        "not meshed with a sidecar: ambient mode",
                        format!(
                            "Namespace {} uses ambient mode: its pods get no sidecar by design (ztunnel carries their traffic).",
                            self.namespace
                        ),
                    ),
                };
                self.set_verdict(VerdictKind::NotMeshed, title, summary);
                match skip {
                    Skip::NotRequested => {
                        self.findings.push(Finding::new(
                            IST0102::message(self.namespace.clone(), self.namespace.clone()),
                            Some(ResourceRef {
                                kind: "Namespace".to_string(),
                                namespace: None,
                                name: self.namespace.clone(),
                                file: None,
                                line: None,
                                cluster: None,
                            }),
                        ));
                        self.next_steps.push(step(
                            "To mesh the namespace, label it, then restart its workloads",
                            Some(format!(
                                "kubectl label namespace {} istio-injection=enabled",
                                self.namespace
                            )),
                        ));
                        self.next_steps.push(self.restart_step());
                    }
                    Skip::NoWebhookMatches { asked_by } => {
                        // A revision that no webhook serves is MD0204, as in `analyze`.
                        let unserved = labels.and_then(|l| {
                            revisions::pod_unserved_revision(
                                self.pod_ref(),
                                l,
                                self.pod.metadata.labels.as_ref(),
                                webhooks,
                            )
                        });
                        if let Some((finding, fix)) = unserved {
                            self.findings.push(finding);
                            self.next_steps.push(step(
                                "Point it at a revision that is installed, then restart the pod's workload",
                                Some(fix),
                            ));
                        } else {
                            self.findings.push(Finding::new(
                                MD0103::message("Pod", full, asked_by),
                                Some(self.pod_ref()),
                            ));
                        }
                        self.next_steps.push(step(
                            "Compare the injection webhooks' namespaceSelector and objectSelector with the labels of the namespace and the pod (a revision label istio.io/rev that no installed revision serves is the usual cause)",
                            Some(
                                "kubectl get mutatingwebhookconfigurations -l app=sidecar-injector -o yaml"
                                    .to_string(),
                            ),
                        ));
                        self.next_steps.push(step(
                            "List the installed revisions",
                            Some(
                                "kubectl get mutatingwebhookconfigurations -L istio.io/rev"
                                    .to_string(),
                            ),
                        ));
                    }
                    Skip::OptedOut { by } => {
                        self.next_steps.push(step(
                            format!(
                                "If the pod should be meshed, remove the {by} from its template and restart it"
                            ),
                            None,
                        ));
                    }
                    _ => {}
                }
            }
            Decision::Unknown => {
                let reason = match &self.ctx.namespace {
                    Lookup::Unknown(r) => r.clone(),
                    _ => "not found".to_string(),
                };
                self.evidence.push(evidence(
                    "namespace",
                    format!("namespace {} could not be read ({reason})", self.namespace),
                ));
                self.set_verdict(
                    VerdictKind::Unknown,
                    "unknown: the namespace could not be read",
                    format!(
                        "The pod has no sidecar; whether it should have one cannot be told without the labels of namespace {} ({reason}).",
                        self.namespace
                    ),
                );
            }
        }
    }

    /// How to recreate the pod: a rollout restart of its workload, or deleting it.
    pub(super) fn restart_step(&self) -> NextStep {
        let owner = self
            .pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.iter().find(|r| r.controller == Some(true)).or(o.first()));
        let workload = owner.and_then(|o| match o.kind.as_str() {
            "ReplicaSet" => {
                let hash = self.pod.label("pod-template-hash")?;
                let deployment = o.name.strip_suffix(&format!("-{hash}"))?;
                Some(format!("deployment/{deployment}"))
            }
            "StatefulSet" => Some(format!("statefulset/{}", o.name)),
            "DaemonSet" => Some(format!("daemonset/{}", o.name)),
            _ => None,
        });
        match workload {
            Some(w) => step(
                "Restart the workload so its pods are created again (and injected)",
                self.kubectl(&format!("rollout restart {w}")),
            ),
            None => step(
                "Recreate the pod so the webhook sees it (its controller, if any, creates a new one)",
                self.kubectl(&format!("delete pod {}", self.name)),
            ),
        }
    }

    // ------------------------------------------------------------------ meshed
}
