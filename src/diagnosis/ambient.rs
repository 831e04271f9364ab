//! The verdicts of a pod that asks for ambient mode: captured (the CNI agent redirected it and
//! a ready ztunnel runs on its node), not captured and why (MD0111), opted out, or also given
//! a sidecar (MD0112). What cannot be read is "unknown", never "captured".

use super::*;
use crate::istio::ambient::{
    self, CNI_SELECTOR, REDIRECTION_ANNOTATION, Request, ZTUNNEL_SELECTOR,
};
use crate::kube::lifecycle;

/// A node agent (ztunnel or the CNI agent) as found on the pod's node.
enum Agent<'p> {
    Ready(&'p Pod),
    /// On the node, not ready: the pod and a description of its state.
    NotReady(&'p Pod, String),
    /// None on the node: where the others run (`None`: none in the cluster).
    Absent(Vec<String>),
    Unknown(String),
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn agent<'p>(lookup: &'p Lookup<Vec<Pod>>, node: &str) -> Agent<'p> {
    let pods = match lookup {
        Lookup::Found(p) => p,
        Lookup::Missing => return Agent::Absent(Vec::new()),
        Lookup::Unknown(reason) => return Agent::Unknown(reason.clone()),
    };
    let live = |p: &&Pod| !lifecycle::is_ending(p);
    let on_node: Vec<&Pod> = pods
        .iter()
        .filter(live)
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        .collect();
    if let Some(ready) = on_node.iter().find(|p| pod_ready(p)) {
        return Agent::Ready(ready);
    }
    if let Some(p) = on_node.first() {
        let states: Vec<String> = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{} {}{}, {} restart(s)",
                    c.name,
                    container_state(c),
                    if c.ready { ", ready" } else { ", not ready" },
                    c.restart_count
                )
            })
            .collect();
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Unknown");
        let detail = if states.is_empty() {
            format!("phase {phase}, no container status")
        } else {
            format!("phase {phase}, {}", states.join("; "))
        };
        return Agent::NotReady(p, detail);
    }
    Agent::Absent(
        pods.iter()
            .filter(live)
            .map(|p| {
                format!(
                    "{}/{} on {}",
                    p.namespace().unwrap_or("default"),
                    p.name(),
                    p.spec
                        .as_ref()
                        .and_then(|s| s.node_name.as_deref())
                        .unwrap_or("no node")
                )
            })
            .collect(),
    )
}

fn pod_name(p: &Pod) -> String {
    format!("{}/{}", p.namespace().unwrap_or("default"), p.name())
}

impl<'a> Builder<'a> {
    /// What the labels say about ambient for this pod.
    pub(super) fn ambient_request(&self) -> Request {
        let ns_labels = self
            .ctx
            .namespace
            .found()
            .and_then(|n| n.metadata.labels.as_ref());
        ambient::request(ns_labels, self.pod.metadata.labels.as_ref())
    }

    /// A pod without sidecar whose namespace opts it out of ambient.
    pub(super) fn ambient_opted_out(&mut self) {
        self.evidence.push(evidence(
            "pod labels",
            format!(
                "{} (the namespace asks for ambient)",
                "istio.io/dataplane-mode=none"
            ),
        ));
        self.set_verdict(
            VerdictKind::NotMeshed,
            "not meshed: the pod opts out of ambient",
            format!(
                "Namespace {} uses ambient mode, but the pod opts out with the label istio.io/dataplane-mode=none and has no sidecar: its traffic is not meshed (no mTLS, no identity, no policy).",
                self.namespace
            ),
        );
    }

    /// A pod without sidecar that asks for ambient: is it captured?
    pub(super) fn ambient(&mut self, asked_by: &str) {
        let full = self.full_name();
        self.evidence
            .push(evidence("ambient", format!("asked for by the {asked_by}")));
        let spec = self.pod.spec.as_ref();
        if spec.and_then(|s| s.host_network).unwrap_or(false) {
            self.not_captured(
                asked_by,
                vec!["the pod uses hostNetwork, and ambient never captures host-network pods (it shares the node's network namespace, where nothing can be redirected for it alone)".to_string()],
            );
            return;
        }
        let Some(node) = spec.and_then(|s| s.node_name.clone()) else {
            self.set_verdict(
                VerdictKind::Starting,
                "starting: not scheduled yet",
                "The pod is not scheduled to a node yet; ztunnel on that node captures it once it runs there.".to_string(),
            );
            return;
        };
        let ztunnel = agent(&self.ctx.ztunnel_pods, &node);
        let cni = agent(&self.ctx.cni_pods, &node);
        let redirection = ambient::redirection(self.pod).map(str::to_string);
        let mut reasons = Vec::new();
        let mut unknown = Vec::new();

        match &ztunnel {
            Agent::Ready(p) => self.checks.push(check(
                "a ready ztunnel runs on the pod's node",
                CheckStatus::Pass,
                format!("{} on {node} is ready", pod_name(p)),
            )),
            Agent::NotReady(p, detail) => {
                let text = format!("ztunnel {} on {node} is not ready ({detail})", pod_name(p));
                self.checks.push(check(
                    "a ready ztunnel runs on the pod's node",
                    CheckStatus::Fail,
                    &text,
                ));
                reasons.push(text);
                self.next_steps.push(step(
                    "See why ztunnel on the node is not ready",
                    Some(format!(
                        "kubectl -n {} describe pod {}",
                        p.namespace().unwrap_or("default"),
                        p.name()
                    )),
                ));
            }
            Agent::Absent(elsewhere) => {
                let text = if elsewhere.is_empty() {
                    format!(
                        "no ztunnel pod ({ZTUNNEL_SELECTOR}) runs in the cluster: ambient mode is not installed (istioctl install --set profile=ambient)"
                    )
                } else {
                    format!(
                        "no ztunnel pod ({ZTUNNEL_SELECTOR}) runs on node {node} (ztunnel runs as {})",
                        elsewhere.join(", ")
                    )
                };
                self.checks.push(check(
                    "a ready ztunnel runs on the pod's node",
                    CheckStatus::Fail,
                    &text,
                ));
                reasons.push(text);
                self.next_steps.push(step(
                    "Find ztunnel (a DaemonSet, usually in istio-system) and why it has no ready pod on this node",
                    Some(format!("kubectl get pods -A -l {ZTUNNEL_SELECTOR} -o wide")),
                ));
            }
            Agent::Unknown(reason) => {
                self.checks.push(check(
                    "a ready ztunnel runs on the pod's node",
                    CheckStatus::Unknown,
                    format!("ztunnel's pods could not be read: {reason}"),
                ));
                unknown.push(format!("ztunnel's pods could not be read ({reason})"));
            }
        }
        let cni_pod = match &cni {
            Agent::Ready(p) => {
                self.checks.push(check(
                    "Istio's CNI node agent runs on the pod's node",
                    CheckStatus::Pass,
                    format!("{} on {node} is ready", pod_name(p)),
                ));
                Some(*p)
            }
            Agent::NotReady(p, detail) => {
                let text = format!(
                    "Istio's CNI node agent {} on {node} is not ready ({detail})",
                    pod_name(p)
                );
                self.checks.push(check(
                    "Istio's CNI node agent runs on the pod's node",
                    CheckStatus::Fail,
                    &text,
                ));
                reasons.push(text);
                Some(*p)
            }
            Agent::Absent(_) => {
                let text = format!(
                    "no pod of Istio's CNI node agent ({CNI_SELECTOR}) runs on node {node}: nothing redirects the pod's traffic to ztunnel"
                );
                self.checks.push(check(
                    "Istio's CNI node agent runs on the pod's node",
                    CheckStatus::Fail,
                    &text,
                ));
                reasons.push(text);
                None
            }
            Agent::Unknown(reason) => {
                self.checks.push(check(
                    "Istio's CNI node agent runs on the pod's node",
                    CheckStatus::Unknown,
                    format!("the CNI agent's pods could not be read: {reason}"),
                ));
                unknown.push(format!("the CNI agent's pods could not be read ({reason})"));
                None
            }
        };
        let running = self.pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        let young = self.ctx.now.is_some_and(|now| {
            sidecar::pod_age_seconds(self.pod, now)
                .is_some_and(|a| a < sidecar::DEFAULT_STARTUP_GRACE_SECONDS)
        });
        let mut starting = false;
        match redirection.as_deref() {
            None if !running && young => {
                starting = true;
                self.checks.push(check(
                    "the CNI agent redirected the pod's traffic",
                    CheckStatus::Skipped,
                    format!(
                        "the pod is not running yet and was created under {}s ago: the CNI agent sets {REDIRECTION_ANNOTATION} while it starts",
                        sidecar::DEFAULT_STARTUP_GRACE_SECONDS
                    ),
                ));
            }
            Some("enabled") => self.checks.push(check(
                "the CNI agent redirected the pod's traffic",
                CheckStatus::Pass,
                format!("annotation {REDIRECTION_ANNOTATION}: enabled"),
            )),
            other => {
                let text = match other {
                    Some(v) => format!(
                        "the pod's annotation {REDIRECTION_ANNOTATION} is \"{v}\": the CNI agent did not redirect its traffic"
                    ),
                    None if running => format!(
                        "the pod runs but has no {REDIRECTION_ANNOTATION} annotation: the CNI agent never redirected its traffic (it sets the annotation once redirection is in place)"
                    ),
                    None => format!(
                        "the pod has no {REDIRECTION_ANNOTATION} annotation yet (it is not running)"
                    ),
                };
                self.checks.push(check(
                    "the CNI agent redirected the pod's traffic",
                    CheckStatus::Fail,
                    &text,
                ));
                reasons.push(text);
                if let Some(p) = cni_pod {
                    self.next_steps.push(step(
                        format!("Read the CNI agent's log on node {node}: it says why it did not redirect the pod"),
                        Some(format!(
                            "kubectl -n {} logs {} | grep {}",
                            p.namespace().unwrap_or("default"),
                            p.name(),
                            self.name
                        )),
                    ));
                }
            }
        }
        if reasons.is_empty() && !unknown.is_empty() {
            self.set_verdict(
                VerdictKind::Unknown,
                "unknown: whether ambient captures the pod cannot be told",
                format!(
                    "The {asked_by} asks for ambient mode, but whether the pod is captured is unknown, because {}.",
                    unknown.join(" and ")
                ),
            );
            return;
        }
        if !reasons.is_empty() {
            self.not_captured(asked_by, reasons);
            return;
        }
        if starting {
            self.set_verdict(
                VerdictKind::Starting,
                "starting",
                format!(
                    "The {asked_by} asks for ambient mode; the pod is not running yet and is within its startup grace of {}s, so its redirection is not in place yet: it is starting, not broken. Run this again once it runs.",
                    sidecar::DEFAULT_STARTUP_GRACE_SECONDS
                ),
            );
            return;
        }
        let ztunnel_name = match &ztunnel {
            Agent::Ready(p) => pod_name(p),
            _ => String::new(),
        };
        self.ambient_waypoints_and_policies();
        self.sidecar_asked_when_captured();
        self.set_verdict(
            VerdictKind::AmbientCaptured,
            "captured by ambient",
            format!(
                "The {asked_by} asks for ambient mode, Istio's CNI agent redirected the pod's traffic ({REDIRECTION_ANNOTATION}: enabled) and ztunnel {ztunnel_name} on {node} is ready: ztunnel carries the pod's traffic. The waypoints it uses and the AuthorizationPolicies that select it are checked below; its certificate (what ztunnel holds for it) is not checked here."
            ),
        );
        let ztunnel_short = ztunnel_name.replacen('/', ".", 1);
        let ztunnel_short = ztunnel_short
            .split_once('.')
            .map(|(ns, name)| format!("{name}.{ns}"))
            .unwrap_or_default();
        self.next_steps.push(step(
            format!("See ztunnel's view of {full} (its identity and protocol)"),
            Some(format!(
                "istioctl ztunnel-config workload {ztunnel_short} --workload-namespace {}",
                self.namespace
            )),
        ));
    }

    /// MD0116: the captured pod asks for a sidecar itself (its own label or annotation), which
    /// its replacement may get. Not judged when its namespace could not be read (its labels
    /// decide whether the pod's own request is the one that counts).
    fn sidecar_asked_when_captured(&mut self) {
        let namespace_labels = match &self.ctx.namespace {
            Lookup::Found(n) => n.metadata.labels.as_ref(),
            Lookup::Missing => None,
            Lookup::Unknown(_) => return,
        };
        let Some(asked_by) = ambient::captured_pod_sidecar_ask(self.pod, namespace_labels) else {
            return;
        };
        let facts = PodFacts {
            namespace: &self.namespace,
            namespace_labels,
            labels: self.pod.metadata.labels.as_ref(),
            annotations: self.pod.metadata.annotations.as_ref(),
            host_network: false,
        };
        let consequence = match &self.ctx.webhooks {
            Lookup::Found(webhooks) => {
                ambient::sidecar_ask_consequence(&asked_by, &injection::decide(&facts, webhooks))
            }
            Lookup::Missing => {
                ambient::sidecar_ask_consequence(&asked_by, &injection::decide(&facts, &[]))
            }
            Lookup::Unknown(reason) => format!(
                "whether a re-created pod gets one is unknown, because the injection webhook configurations could not be read ({reason})"
            ),
        };
        self.evidence.push(evidence(
            "sidecar request",
            format!("the {asked_by}, on a pod ambient captured without a sidecar"),
        ));
        self.findings.push(Finding::new(
            MD0116::message(self.full_name(), asked_by, consequence),
            Some(self.pod_ref()),
        ));
    }

    fn not_captured(&mut self, asked_by: &str, reasons: Vec<String>) {
        self.set_verdict(
            VerdictKind::AmbientNotCaptured,
            "not captured by ambient",
            format!(
                "The {asked_by} asks for ambient mode, but nothing carries the pod's traffic: {}. Without ztunnel it has no mTLS, no mesh identity and no policy.",
                reasons.join("; ")
            ),
        );
        self.findings.push(Finding::new(
            MD0111::message(self.full_name(), reasons.join("; ")),
            Some(self.pod_ref()),
        ));
    }

    /// A pod with a sidecar that also asks for ambient: ztunnel does not capture it.
    pub(super) fn ambient_with_sidecar(&mut self, asked_by: &str) {
        self.evidence.push(evidence(
            "ambient",
            format!("asked for by the {asked_by}, but the pod has an istio-proxy sidecar"),
        ));
        self.findings.push(Finding::new(
            MD0112::message(self.full_name(), asked_by),
            Some(self.pod_ref()),
        ));
        let healthy = self
            .verdict
            .as_ref()
            .is_none_or(|v| v.kind == VerdictKind::Healthy);
        if healthy {
            self.verdict = Some(Verdict {
                kind: VerdictKind::AmbientWithSidecar,
                title: "sidecar and ambient both asked for".to_string(),
                summary: format!(
                    "The {asked_by} asks for ambient mode, but the pod also has an istio-proxy sidecar: Istio's CNI agent does not capture pods with a sidecar, so ztunnel does not carry its traffic; its sidecar does, and it works. Choose one: remove the injection label or annotation, or the ambient label."
                ),
            });
        }
        self.next_steps.push(step(
            "See which label or annotation asked for the sidecar",
            self.kubectl(&format!("get pod {} --show-labels", self.name)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{from_json, good_context, namespace};
    use super::*;
    use serde_json::json;

    fn ambient_ns() -> Lookup<Namespace> {
        Lookup::Found(namespace(
            "amb",
            json!({"istio.io/dataplane-mode": "ambient"}),
        ))
    }

    /// A running pod without sidecar in namespace amb on node n1.
    fn app(annotations: serde_json::Value, host_network: bool) -> Pod {
        from_json(json!({
            "metadata": {"name": "app", "namespace": "amb", "annotations": annotations,
                "creationTimestamp": "2026-11-29T14:00:00Z"},
            "spec": {"nodeName": "n1", "hostNetwork": host_network,
                "containers": [{"name": "app", "image": "app"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "app", "image": "app", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {"startedAt": "2026-11-29T14:00:01Z"}}}]}
        }))
    }

    fn agent_pod(name: &str, node: &str, ready: bool) -> Pod {
        from_json(json!({
            "metadata": {"name": name, "namespace": "istio-system"},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
                "containerStatuses": [{"name": "c", "image": "x", "imageID": "", "ready": ready,
                    "restartCount": if ready { 0 } else { 4 },
                    "state": if ready { json!({"running": {}}) } else {
                        json!({"waiting": {"reason": "CrashLoopBackOff"}}) }}]}
        }))
    }

    fn context(ztunnel: Lookup<Vec<Pod>>, cni: Lookup<Vec<Pod>>) -> PodContext {
        PodContext {
            namespace: ambient_ns(),
            ztunnel_pods: ztunnel,
            cni_pods: cni,
            ..good_context()
        }
    }

    fn status(d: &Diagnosis, name: &str) -> CheckStatus {
        d.checks.iter().find(|c| c.name == name).unwrap().status
    }

    #[test]
    fn captured_when_redirected_and_ztunnel_is_ready_on_the_node() {
        let ctx = context(
            Lookup::Found(vec![agent_pod("ztunnel-a", "n1", true)]),
            Lookup::Found(vec![agent_pod("istio-cni-node-a", "n1", true)]),
        );
        let d = diagnose(
            &app(json!({"ambient.istio.io/redirection": "enabled"}), false),
            &ctx,
            None,
        );
        assert_eq!(d.verdict.kind, VerdictKind::AmbientCaptured, "{d:#?}");
        assert!(d.findings.is_empty());
        assert!(!d.incomplete());
        assert!(
            d.next_steps[0]
                .command
                .as_deref()
                .unwrap()
                .starts_with("istioctl ztunnel-config workload ztunnel-a.istio-system")
        );
    }

    #[test]
    fn a_captured_pod_that_asks_for_a_sidecar_itself_is_md0116() {
        let ctx = context(
            Lookup::Found(vec![agent_pod("ztunnel-a", "n1", true)]),
            Lookup::Found(vec![agent_pod("istio-cni-node-a", "n1", true)]),
        );
        let mut pod = app(json!({"ambient.istio.io/redirection": "enabled"}), false);
        pod.metadata.labels = Some(
            [("sidecar.istio.io/inject".to_string(), "true".to_string())]
                .into_iter()
                .collect(),
        );
        let d = diagnose(&pod, &ctx, None);
        // It works now: ztunnel carries it. The context's injector selects namespaces only, so
        // a replacement gets no sidecar either.
        assert_eq!(d.verdict.kind, VerdictKind::AmbientCaptured, "{d:#?}");
        let codes: Vec<&str> = d.findings.iter().map(|f| f.code()).collect();
        assert_eq!(codes, ["MD0116"], "{d:#?}");
        assert!(
            d.findings[0].message.starts_with(
                "Pod amb/app is captured by ambient (ambient.istio.io/redirection: enabled, no sidecar: ztunnel carries its traffic), but its pod label sidecar.istio.io/inject=true asks for a sidecar: a re-created pod would not get one either"
            ),
            "{}",
            d.findings[0].message
        );

        // No injection webhook configuration at all: a default installation's selectors, whose
        // object selector takes the label: the replacement leaves ambient.
        let ctx = PodContext {
            webhooks: Lookup::Found(vec![]),
            ..ctx
        };
        let d = diagnose(&pod, &ctx, None);
        assert!(
            d.findings[0].message.contains(
                "asks for a sidecar: a pod created now gets one from the injection webhook (a default installation's selectors assumed"
            ),
            "{}",
            d.findings[0].message
        );

        // The webhooks could not be read: what a replacement gets is unknown, and said so.
        let ctx = PodContext {
            webhooks: Lookup::Unknown("forbidden".into()),
            ..ctx
        };
        let d = diagnose(&pod, &ctx, None);
        assert!(
            d.findings[0]
                .message
                .contains("whether a re-created pod gets one is unknown, because the injection webhook configurations could not be read (forbidden)"),
            "{}",
            d.findings[0].message
        );
    }

    #[test]
    fn ztunnel_crash_looping_on_the_node_or_running_elsewhere_is_not_captured() {
        let ctx = context(
            Lookup::Found(vec![
                agent_pod("ztunnel-a", "n1", false),
                agent_pod("ztunnel-b", "n2", true),
            ]),
            Lookup::Found(vec![agent_pod("istio-cni-node-a", "n1", true)]),
        );
        let pod = app(json!({"ambient.istio.io/redirection": "enabled"}), false);
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientNotCaptured);
        assert_eq!(d.findings[0].code(), "MD0111");
        assert!(d.fails(Level::Warning));
        assert!(
            d.findings[0].message.contains(
                "ztunnel istio-system/ztunnel-a on n1 is not ready (phase Running, c Waiting: CrashLoopBackOff, not ready, 4 restart(s))"
            ),
            "{}",
            d.findings[0].message
        );
        let ctx = context(
            Lookup::Found(vec![agent_pod("ztunnel-b", "n2", true)]),
            Lookup::Found(vec![agent_pod("istio-cni-node-a", "n1", true)]),
        );
        let d = diagnose(&pod, &ctx, None);
        assert!(
            d.verdict.summary.contains(
                "no ztunnel pod (app=ztunnel) runs on node n1 (ztunnel runs as istio-system/ztunnel-b on n2)"
            ),
            "{}",
            d.verdict.summary
        );
    }

    #[test]
    fn unreadable_ztunnel_pods_are_unknown_never_captured() {
        let denied = || Lookup::Unknown("forbidden: pods is forbidden at the cluster scope".into());
        let pod = app(json!({"ambient.istio.io/redirection": "enabled"}), false);
        let d = diagnose(&pod, &context(denied(), denied()), None);
        assert_eq!(d.verdict.kind, VerdictKind::Unknown, "{d:#?}");
        assert!(
            d.verdict.summary.contains(
                "whether the pod is captured is unknown, because ztunnel's pods could not be read"
            ),
            "{}",
            d.verdict.summary
        );
        assert!(d.findings.is_empty());
        // Incomplete: exit 69, and what was not read is said.
        assert!(d.incomplete());
        assert!(
            d.not_read
                .iter()
                .any(|n| n.what == "ztunnel pods (app=ztunnel)")
        );
        assert_eq!(
            status(&d, "a ready ztunnel runs on the pod's node"),
            CheckStatus::Unknown
        );
    }

    #[test]
    fn host_network_and_opted_out_pods() {
        let ctx = context(Lookup::Found(vec![]), Lookup::Found(vec![]));
        let d = diagnose(&app(json!({}), true), &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientNotCaptured);
        assert!(
            d.verdict.summary.contains("the pod uses hostNetwork"),
            "{}",
            d.verdict.summary
        );
        let mut pod = app(json!({}), false);
        pod.metadata.labels =
            Some([("istio.io/dataplane-mode".to_string(), "none".to_string())].into());
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::NotMeshed);
        assert_eq!(d.verdict.title, "not meshed: the pod opts out of ambient");
        // A pod that is not ambient never lists ztunnel as not read.
        let plain = PodContext {
            ztunnel_pods: Lookup::Unknown("forbidden".into()),
            ..good_context()
        };
        let d = diagnose(&app(json!({}), false), &plain, None);
        assert!(!d.not_read.iter().any(|n| n.what.contains("ztunnel")));
    }
}

#[cfg(test)]
mod starting_tests {
    use super::super::tests::{from_json, good_context, namespace};
    use super::*;
    use serde_json::json;

    #[test]
    fn a_young_ambient_pod_not_running_yet_is_starting() {
        // Created 3 s before the time of judgement, ContainerCreating, no annotation yet.
        let pod: Pod = from_json(json!({
            "metadata": {"name": "app", "namespace": "amb", "creationTimestamp": "2026-11-29T15:00:21Z"},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "app"}]},
            "status": {"phase": "Pending", "containerStatuses": [{"name": "app", "image": "app",
                "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}}]}
        }));
        let ready = |name: &str| -> Pod {
            from_json(json!({
                "metadata": {"name": name, "namespace": "istio-system"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            }))
        };
        let ctx = PodContext {
            namespace: Lookup::Found(namespace(
                "amb",
                json!({"istio.io/dataplane-mode": "ambient"}),
            )),
            ztunnel_pods: Lookup::Found(vec![ready("ztunnel-a")]),
            cni_pods: Lookup::Found(vec![ready("istio-cni-node-a")]),
            ..good_context()
        };
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::Starting, "{d:#?}");
        assert!(d.findings.is_empty());
    }
}
