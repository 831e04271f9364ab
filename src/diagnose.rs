//! `pod NAME`: one pod's verdict, with the evidence behind it, the causes checked and what to
//! do next. Pure: the pod, what the cluster said around it ([`PodContext`]) and what the probe
//! found ([`ProbeResult`]) in; a [`Diagnosis`] out. No I/O, no clock (the time is an input).

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use crate::analysis::control_plane;
use crate::analysis::finding::{Finding, ResourceRef};
use crate::analysis::messages::{
    IST0102, IST0103, Level, MD0101, MD0102, MD0103, MD0104, MD0105, MD0106, MD0107, MD0108, MD0109,
};
use crate::mesh::injection::{self, Decision, PodFacts, REVISION_LABEL, Skip};
use crate::mesh::{selector, sidecar};
use crate::probe::admin::{CertRole, ServerState};
use crate::probe::logs::{Family, LogMatch, Signature};
use crate::probe::{ProbeResult, Probed};
use crate::snapshot::{Located, Object};

/// The namespace istiod runs in.
pub const ISTIO_NAMESPACE: &str = "istio-system";
/// istiod's xDS and CA port.
pub const XDS_PORT: i32 = 15012;
/// The ConfigMap istiod writes into every namespace with the mesh's root certificate.
pub const ROOT_CERT_CONFIG_MAP: &str = "istio-ca-root-cert";
/// The audience istiod expects on the proxy's token (Istio's default `TOKEN_AUDIENCES`).
pub const TOKEN_AUDIENCE: &str = "istio-ca";
/// The labels of a default istiod pod, for NetworkPolicy peers that select pods.
const ISTIOD_POD_LABELS: &[(&str, &str)] = &[("app", "istiod"), ("istio", "pilot")];

/// What a lookup in the cluster gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<T> {
    Found(T),
    /// The object does not exist.
    Missing,
    /// It could not be read (RBAC, timeout): the reason.
    Unknown(String),
}

impl<T> Lookup<T> {
    pub fn found(&self) -> Option<&T> {
        match self {
            Lookup::Found(v) => Some(v),
            _ => None,
        }
    }
}

/// What the cluster said around the pod. Lists that could not be read are `Unknown`.
#[derive(Debug)]
pub struct PodContext {
    pub namespace: Lookup<Namespace>,
    pub webhooks: Lookup<Vec<Located<MutatingWebhookConfiguration>>>,
    /// EndpointSlices in istio-system (all of them; the diagnosis picks istiod's).
    pub istio_endpoint_slices: Lookup<Vec<EndpointSlice>>,
    /// The istio-system Namespace, for NetworkPolicy namespace selectors.
    pub istio_namespace: Lookup<Namespace>,
    /// NetworkPolicies in the pod's namespace.
    pub network_policies: Lookup<Vec<NetworkPolicy>>,
    /// ConfigMap istio-ca-root-cert in the pod's namespace.
    pub root_cert: Lookup<ConfigMap>,
    /// istiod's pods (label app=istiod in istio-system): is istiod running, and where.
    pub istiod_pods: Lookup<Vec<Pod>>,
    /// The `istio` ConfigMap of istio-system (the mesh config: the proxies' discovery address).
    pub mesh_config: Lookup<ConfigMap>,
    /// The time certificates and the age of a proxy are judged at.
    pub now: Option<jiff::Timestamp>,
}

impl Default for PodContext {
    fn default() -> Self {
        fn unknown<T>() -> Lookup<T> {
            Lookup::Unknown("not read".to_string())
        }
        PodContext {
            namespace: unknown(),
            webhooks: unknown(),
            istio_endpoint_slices: unknown(),
            istio_namespace: unknown(),
            network_policies: unknown(),
            root_cert: unknown(),
            istiod_pods: unknown(),
            mesh_config: unknown(),
            now: None,
        }
    }
}

/// The kind of verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    NotMeshed,
    BootstrapCrash,
    WaitingForControlPlane,
    ProxyNotStarted,
    ConfigRejected,
    CertificateProblem,
    ApplicationNotReady,
    ProxyUnreachable,
    /// Not ready yet, within its startup grace.
    Starting,
    /// istio-proxy exits with an error code and its log names no bootstrap error.
    ProxyCrash,
    /// istio-proxy is killed for memory (OOMKilled).
    OutOfMemory,
    /// The proxy image cannot be pulled.
    ImageNotPulled,
    /// The pod would be injected, but no injection webhook exists (istiod missing).
    InjectorMissing,
    /// What decides the verdict could not be read.
    Unknown,
    Healthy,
}

/// The one-line answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub kind: VerdictKind,
    /// "bootstrap crash", "waiting for istiod", "healthy"...
    pub title: String,
    /// One or two sentences: what is wrong (or right) and why.
    pub summary: String,
}

/// One fact that supports the verdict, and where it was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// `pod status`, `/server_info`, `15021 /healthz/ready`, `logs (previous) line 129`...
    pub source: String,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Checked: not the cause.
    Pass,
    /// Checked: this is (a) cause.
    Fail,
    /// Could not be checked (the reason is in the detail).
    Unknown,
    /// Does not apply to this pod.
    Skipped,
}

/// A probable cause, and whether it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    pub detail: String,
}

/// Something to do next: a sentence, and the command that does it when there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NextStep {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Something around the pod that could not be read, and why: the verdict may be incomplete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotRead {
    pub what: String,
    pub reason: String,
}

/// One container's state, for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSummary {
    pub name: String,
    pub ready: bool,
    pub restarts: i32,
    /// "Running", "Waiting: CrashLoopBackOff", "Terminated: Error (exit code 1)"...
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_termination: Option<String>,
}

/// The pod as the diagnosis saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSummary {
    pub name: String,
    pub namespace: String,
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// The istio-proxy container; `None` when the pod has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ContainerSummary>,
    /// True when istio-proxy is a native sidecar (an init container with restartPolicy Always).
    pub native_sidecar: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_image: Option<String>,
    /// The application containers.
    pub containers: Vec<ContainerSummary>,
}

/// The result for one pod.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    pub pod: PodSummary,
    pub verdict: Verdict,
    /// Findings with their codes (rendered by the caller; istioctl's JSON shape).
    #[serde(skip)]
    pub findings: Vec<Finding>,
    pub evidence: Vec<Evidence>,
    pub checks: Vec<Check>,
    pub next_steps: Vec<NextStep>,
    /// What could not be read (RBAC, errors, timeouts): when not empty the result is incomplete.
    pub not_read: Vec<NotRead>,
}

impl Diagnosis {
    /// True when something around the pod could not be read.
    pub fn incomplete(&self) -> bool {
        !self.not_read.is_empty()
    }

    /// The most severe finding level, `None` when there is no finding.
    pub fn level(&self) -> Option<Level> {
        self.findings.iter().map(Finding::level).min()
    }

    /// True when a finding reaches `threshold`.
    pub fn fails(&self, threshold: Level) -> bool {
        self.findings.iter().any(|f| f.level().reaches(threshold))
    }
}

/// Builds the diagnosis.
pub fn diagnose(pod: &Pod, context: &PodContext, probe: Option<&ProbeResult>) -> Diagnosis {
    let mut d = Builder::new(pod, context, probe);
    let spec = pod.spec.as_ref();
    match spec.and_then(sidecar::proxy_container) {
        None => d.not_meshed(),
        Some(_) => d.meshed(),
    }
    d.finish()
}

struct Builder<'a> {
    pod: &'a Pod,
    ctx: &'a PodContext,
    probe: Option<&'a ProbeResult>,
    name: String,
    namespace: String,
    verdict: Option<Verdict>,
    findings: Vec<Finding>,
    evidence: Vec<Evidence>,
    checks: Vec<Check>,
    next_steps: Vec<NextStep>,
}

fn evidence(source: impl Into<String>, text: impl Into<String>) -> Evidence {
    Evidence {
        source: source.into(),
        text: text.into(),
    }
}

fn step(text: impl Into<String>, command: Option<String>) -> NextStep {
    NextStep {
        text: text.into(),
        command,
    }
}

fn check(name: &str, status: CheckStatus, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_string(),
        status,
        detail: detail.into(),
    }
}

impl<'a> Builder<'a> {
    fn new(pod: &'a Pod, ctx: &'a PodContext, probe: Option<&'a ProbeResult>) -> Self {
        Builder {
            pod,
            ctx,
            probe,
            name: pod.name().to_string(),
            namespace: pod.namespace().unwrap_or("default").to_string(),
            verdict: None,
            findings: Vec::new(),
            evidence: Vec::new(),
            checks: Vec::new(),
            next_steps: Vec::new(),
        }
    }

    fn full_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    fn pod_ref(&self) -> ResourceRef {
        ResourceRef {
            kind: "Pod".to_string(),
            namespace: Some(self.namespace.clone()),
            name: self.name.clone(),
            file: None,
            line: None,
            cluster: None,
        }
    }

    fn set_verdict(&mut self, kind: VerdictKind, title: &str, summary: String) {
        if self.verdict.is_none() {
            self.verdict = Some(Verdict {
                kind,
                title: title.to_string(),
                summary,
            });
        }
    }

    fn kubectl(&self, rest: &str) -> Option<String> {
        Some(format!("kubectl -n {} {rest}", self.namespace))
    }

    // ------------------------------------------------------------------ not meshed

    fn not_meshed(&mut self) {
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
                    MD0103,
                    Some(self.pod_ref()),
                    &["Pod".into(), full.into(), asked_by.into()],
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
                    .push(Finding::new(IST0103, Some(self.pod_ref()), &[full.into()]));
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
                            IST0102,
                            Some(ResourceRef {
                                kind: "Namespace".to_string(),
                                namespace: None,
                                name: self.namespace.clone(),
                                file: None,
                                line: None,
                                cluster: None,
                            }),
                            &[self.namespace.clone().into(), self.namespace.clone().into()],
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
                            control_plane::pod_unserved_revision(
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
                                MD0103,
                                Some(self.pod_ref()),
                                &["Pod".into(), full.into(), asked_by.into()],
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
    fn restart_step(&self) -> NextStep {
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

    fn proxy_status(&self) -> Option<&'a ContainerStatus> {
        sidecar::proxy_status(self.pod)
    }

    /// Log matches of a family, one per signature: the previous log first (a crash-looping
    /// container's current log is usually the same run again).
    fn log_matches(&self, family: Family) -> Vec<&'a LogMatch> {
        let mut out: Vec<&'a LogMatch> = Vec::new();
        for m in self.probe.into_iter().flat_map(|p| p.logs.matches()) {
            if m.family == family && !out.iter().any(|o| o.signature == m.signature) {
                out.push(m);
            }
        }
        out
    }

    fn meshed(&mut self) {
        let status = self.proxy_status();
        let state = status.and_then(|s| s.state.as_ref());
        let waiting = state.and_then(|s| s.waiting.as_ref());
        let terminated = state.and_then(|s| s.terminated.as_ref());
        let running = state.and_then(|s| s.running.as_ref()).is_some();
        let ready = status.is_some_and(|s| s.ready);
        let last_terminated = status
            .and_then(|s| s.last_state.as_ref())
            .and_then(|l| l.terminated.as_ref());
        let restarts = status.map_or(0, |s| s.restart_count);
        let bootstrap_matches = self.log_matches(Family::Bootstrap);

        if let Some(status) = status {
            self.evidence.push(evidence(
                "pod status",
                format!(
                    "istio-proxy: {}{}, {} restart(s){}",
                    container_state(status),
                    if ready { ", ready" } else { ", not ready" },
                    restarts,
                    last_terminated
                        .map(|t| format!(
                            "; last exit code {} ({})",
                            t.exit_code,
                            t.reason.as_deref().unwrap_or("terminated")
                        ))
                        .unwrap_or_default()
                ),
            ));
        } else {
            self.evidence
                .push(evidence("pod status", "istio-proxy has no status yet"));
        }
        self.note_init_failures();

        let waiting_reason = waiting.and_then(|w| w.reason.as_deref());
        if matches!(
            waiting_reason,
            Some("ImagePullBackOff" | "ErrImagePull" | "InvalidImageName" | "ErrImageNeverPull")
        ) {
            self.image_not_pulled(
                waiting_reason.unwrap_or_default(),
                waiting.and_then(|w| w.message.as_deref()),
            );
            return;
        }
        let crash_looping = waiting_reason == Some("CrashLoopBackOff");
        let exited = terminated.is_some_and(|t| t.exit_code != 0);
        let crashed_before =
            !ready && !running && restarts > 0 && last_terminated.is_some_and(|t| t.exit_code != 0);
        if crash_looping || exited || crashed_before || (!ready && !bootstrap_matches.is_empty()) {
            let termination = last_terminated.or(terminated);
            if bootstrap_matches.is_empty()
                && let Some(t) = termination.filter(|t| t.reason.as_deref() == Some("OOMKilled"))
            {
                self.out_of_memory(t);
                return;
            }
            self.bootstrap_crash(bootstrap_matches, termination);
            return;
        }
        let starting = !ready
            && self
                .ctx
                .now
                .is_some_and(|now| sidecar::is_starting(self.pod, now));
        if starting {
            self.starting(running);
            return;
        }
        if !running {
            self.not_started(
                waiting.and_then(|w| w.reason.clone()),
                waiting.and_then(|w| w.message.clone()),
            );
            return;
        }
        self.running(ready);
    }

    /// A proxy that is not ready yet but within its startup grace: starting, not broken.
    fn starting(&mut self, running: bool) {
        let grace = sidecar::startup_grace_seconds(self.pod);
        let age = self.ctx.now.and_then(|now| {
            sidecar::proxy_running_seconds(self.pod, now)
                .or_else(|| sidecar::pod_age_seconds(self.pod, now))
        });
        let since = age
            .map(|a| format!(" {}s ago", a.max(0)))
            .unwrap_or_default();
        let what = if running {
            format!("istio-proxy started{since} and is not ready yet")
        } else {
            format!("the pod was created{since} and istio-proxy is not running yet")
        };
        self.sidecar_evidence();
        self.evidence.push(evidence(
            "startup grace",
            format!(
                "{grace}s ({}): a proxy is judged only once it has had this long to become ready",
                if self.pod.spec.as_ref().and_then(sidecar::proxy_container).and_then(|p| p.container.readiness_probe.as_ref()).is_some() {
                    "istio-proxy's readiness probe: initialDelaySeconds + periodSeconds x failureThreshold"
                } else {
                    "the default; istio-proxy has no readiness probe"
                }
            ),
        ));
        self.set_verdict(
            VerdictKind::Starting,
            "starting",
            format!(
                "{what}; that is within its startup grace of {grace}s, so it is starting, not broken. Run this again once the grace has passed if it is still not ready."
            ),
        );
        self.next_steps.push(step(
            "Watch it become ready (READY 2/2)",
            self.kubectl(&format!("get pod {} -w", self.name)),
        ));
    }

    /// The proxy image cannot be pulled: the image reference, not the mesh.
    fn image_not_pulled(&mut self, reason: &str, message: Option<&str>) {
        let image = self
            .pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .map(|p| p.image().to_string())
            .unwrap_or_default();
        let detail = match message.filter(|m| !m.is_empty()) {
            Some(m) => format!("its image {image} cannot be pulled ({reason}: {m})"),
            None => format!("its image {image} cannot be pulled ({reason})"),
        };
        self.set_verdict(
            VerdictKind::ImageNotPulled,
            "proxy image cannot be pulled",
            format!(
                "The sidecar never started: {detail}. The image reference, the registry or the pull credentials are wrong; the mesh itself is not involved."
            ),
        );
        self.findings.push(Finding::new(
            MD0108,
            Some(self.pod_ref()),
            &[self.full_name().into(), detail.into()],
        ));
        self.next_steps.push(step(
            "Check the proxy image reference (the injector's global.proxy.image / hub / tag, or the sidecar.istio.io/proxyImage annotation)",
            self.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.containers[?(@.name==\"istio-proxy\")].image}}'",
                self.name
            )),
        ));
        self.next_steps.push(step(
            "See the kubelet's pull error and the pull secrets in the pod's events",
            self.kubectl(&format!("describe pod {}", self.name)),
        ));
    }

    /// istio-proxy is killed for memory: its limit, not its bootstrap.
    fn out_of_memory(&mut self, t: &k8s_openapi::api::core::v1::ContainerStateTerminated) {
        let limit = self
            .pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .and_then(|p| p.container.resources.as_ref())
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"))
            .map(|q| q.0.clone());
        let detail = format!(
            "it is killed for using more memory than {} (OOMKilled, exit code {})",
            limit
                .as_deref()
                .map(|l| format!("its limit of {l}"))
                .unwrap_or_else(|| "the node allows (no memory limit)".to_string()),
            t.exit_code
        );
        self.set_verdict(
            VerdictKind::OutOfMemory,
            "proxy out of memory",
            format!(
                "istio-proxy keeps being killed: {detail}. Its bootstrap is not the problem; the proxy needs more memory than it is given, usually because it receives configuration for the whole mesh."
            ),
        );
        self.findings.push(Finding::new(
            MD0108,
            Some(self.pod_ref()),
            &[self.full_name().into(), detail.into()],
        ));
        self.next_steps.push(step(
            "Raise the proxy's memory limit (annotation sidecar.istio.io/proxyMemoryLimit on the pod template, or the injector's global.proxy.resources); its current resources:",
            self.kubectl(&format!(
                "get pod {} -o jsonpath='{{.spec.containers[?(@.name==\"istio-proxy\")].resources}}'",
                self.name
            )),
        ));
        self.next_steps.push(step(
            "Or send it less configuration: a Sidecar resource that limits the hosts its namespace imports",
            self.kubectl("get sidecars.networking.istio.io"),
        ));
    }

    /// istio-init / istio-validation failures explain a pod that never gets to the proxy.
    fn note_init_failures(&mut self) {
        let statuses = self
            .pod
            .status
            .as_ref()
            .and_then(|s| s.init_container_statuses.as_ref());
        for s in statuses.into_iter().flatten() {
            if !matches!(s.name.as_str(), "istio-init" | "istio-validation") {
                continue;
            }
            let failing = s.state.as_ref().is_some_and(|st| {
                st.waiting
                    .as_ref()
                    .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
                    || st.terminated.as_ref().is_some_and(|t| t.exit_code != 0)
            });
            if failing {
                self.evidence.push(evidence(
                    "pod status",
                    format!(
                        "init container {}: {} (traffic redirection could not be set up)",
                        s.name,
                        container_state(s)
                    ),
                ));
                self.next_steps.push(step(
                    format!("Read why {} failed", s.name),
                    self.kubectl(&format!("logs {} -c {}", self.name, s.name)),
                ));
            }
        }
    }

    fn bootstrap_crash(
        &mut self,
        matches: Vec<&'a LogMatch>,
        termination: Option<&k8s_openapi::api::core::v1::ContainerStateTerminated>,
    ) {
        let reason = if let Some(first) = matches.first() {
            format!("Envoy rejects its bootstrap: {}", first.excerpt)
        } else if let Some(t) = termination.filter(|t| t.reason.as_deref() == Some("OOMKilled")) {
            format!(
                "it is killed for using too much memory (OOMKilled, exit code {})",
                t.exit_code
            )
        } else if let Some(t) = termination {
            format!(
                "it exits with code {} and the logs show no known error",
                t.exit_code
            )
        } else {
            "it keeps exiting (CrashLoopBackOff) and the logs show no known error".to_string()
        };
        let summary = match matches.first() {
            Some(first) => format!(
                "Envoy exits at start because {}. It says: \"{}\".",
                first.signature.explain(),
                first.excerpt
            ),
            None => format!("The istio-proxy container cannot start: {reason}."),
        };
        match (matches.first(), termination) {
            (None, Some(t)) => {
                let title = format!(
                    "crash: istio-proxy exits with code {} ({})",
                    t.exit_code,
                    t.reason.as_deref().unwrap_or("terminated")
                );
                self.set_verdict(VerdictKind::ProxyCrash, &title, summary);
            }
            _ => self.set_verdict(VerdictKind::BootstrapCrash, "bootstrap crash", summary),
        }
        self.findings.push(Finding::new(
            MD0101,
            Some(self.pod_ref()),
            &[self.full_name().into(), reason.into()],
        ));
        for m in &matches {
            self.evidence.push(log_evidence(m));
        }
        if matches.is_empty() {
            self.logs_without_signature();
        }
        self.next_steps.push(step(
            "Read the log of the crashed istio-proxy",
            self.kubectl(&format!(
                "logs {} -c istio-proxy --previous --tail 50",
                self.name
            )),
        ));
        if let Some(cm) = self.pod.annotation("sidecar.istio.io/bootstrapOverride") {
            self.evidence.push(evidence(
                "pod annotations",
                format!("sidecar.istio.io/bootstrapOverride: the pod uses a custom bootstrap from ConfigMap {cm}"),
            ));
            self.next_steps.push(step(
                format!("The custom bootstrap is the first suspect: review ConfigMap {cm} (or remove the annotation)"),
                self.kubectl(&format!("get configmap {cm} -o yaml")),
            ));
        }
        let signatures: Vec<Signature> = matches.iter().map(|m| m.signature).collect();
        if signatures.contains(&Signature::UnknownGrpcCluster) {
            self.next_steps.push(step(
                "The bootstrap's ADS config names an xDS cluster (Istio's is xds-grpc) that no static cluster defines: fix the name in the custom bootstrap or injection template",
                None,
            ));
        }
        if signatures.iter().any(|s| {
            matches!(
                s,
                Signature::UnknownField | Signature::UnknownType | Signature::InvalidJson
            )
        }) {
            self.next_steps.push(step(
                "A bootstrap this Envoy cannot read usually comes from a custom template or a proxy image older than istiod: compare the proxy image with istiod's version",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} get deploy -l app=istiod -o jsonpath='{{.items[*].spec.template.spec.containers[0].image}}'"
                )),
            ));
        }
        if signatures.contains(&Signature::CannotBind) {
            self.next_steps.push(step(
                "Another container of the pod listens on a port the proxy needs (15000, 15001, 15006, 15020, 15021, 15090): move it",
                None,
            ));
        }
        self.next_steps.push(step(
            "See where each part of this pod's bootstrap comes from (node.id, metadata, token, root certificate, bootstrapOverride), checked",
            Some(format!(
                "kubectl mesh-doctor bootstrap explain {} -n {}",
                self.name, self.namespace
            )),
        ));
        let names_a_cluster = signatures.iter().any(|s| {
            matches!(
                s,
                Signature::UnknownGrpcCluster
                    | Signature::DuplicateCluster
                    | Signature::RouteToUnknownCluster
            )
        });
        // Never a `kubectl exec` step: the container is crash-looping, there is nothing to exec into.
        if let (true, Some(cm)) = (
            names_a_cluster,
            self.pod.annotation("sidecar.istio.io/bootstrapOverride"),
        ) {
            self.next_steps.push(step(
                "The log names a cluster: validate the custom bootstrap of the override ConfigMap",
                Some(format!(
                    "kubectl -n {} get configmap {cm} -o jsonpath='{{.data.custom_bootstrap\\.json}}' > custom_bootstrap.json && kubectl mesh-doctor bootstrap validate custom_bootstrap.json",
                    self.namespace
                )),
            ));
        } else {
            self.next_steps.push(step(
                "Check a bootstrap file before deploying it",
                Some("kubectl mesh-doctor bootstrap validate envoy-rev.json".to_string()),
            ));
        }
    }

    /// When no signature explains a crash: the last lines of the log, or why there is none.
    fn logs_without_signature(&mut self) {
        let Some(probe) = self.probe else {
            return;
        };
        let mut shown = false;
        for (label, log) in [
            ("logs (previous)", &probe.logs.previous),
            ("logs (current)", &probe.logs.current),
        ] {
            match log {
                Probed::Ok(scan) if !shown && !scan.last_lines.is_empty() => {
                    for line in &scan.last_lines {
                        self.evidence.push(evidence(label, line.clone()));
                    }
                    shown = true;
                }
                Probed::Error(e) => self
                    .evidence
                    .push(evidence(label, format!("could not be read: {}", e.message))),
                _ => {}
            }
        }
    }

    fn not_started(&mut self, reason: Option<String>, message: Option<String>) {
        let reason_text = reason
            .clone()
            .unwrap_or_else(|| "no status yet".to_string());
        let detail = match &message {
            Some(m) if !m.is_empty() => format!("istio-proxy is waiting ({reason_text}): {m}"),
            _ => format!("istio-proxy is waiting ({reason_text})"),
        };
        self.set_verdict(
            VerdictKind::ProxyNotStarted,
            "proxy not started",
            format!("The sidecar has not started: {detail}."),
        );
        self.findings.push(Finding::new(
            MD0107,
            Some(self.pod_ref()),
            &[self.full_name().into(), detail.clone().into()],
        ));
        self.check_root_cert();
        match reason.as_deref() {
            Some("ImagePullBackOff" | "ErrImagePull" | "InvalidImageName") => {
                self.next_steps.push(step(
                    "The proxy image cannot be pulled: check the image name, the registry and the pull secrets",
                    self.kubectl(&format!(
                        "get pod {} -o jsonpath='{{.spec.containers[?(@.name==\"istio-proxy\")].image}}'",
                        self.name
                    )),
                ));
            }
            _ => {
                self.next_steps.push(step(
                    "See the pod's events (volume mounts, image pulls, scheduling)",
                    self.kubectl(&format!("describe pod {}", self.name)),
                ));
            }
        }
    }

    fn running(&mut self, ready: bool) {
        let admin = self.probe.map(|p| &p.admin);
        if admin
            .and_then(|a| a.server_info.error())
            .is_some_and(|e| e.is("denied"))
        {
            self.next_steps.push(step(
                "To probe the proxy, mesh-doctor needs `get` and `create` on pods/portforward (see docs/rbac.yaml); or run it inside the cluster with --direct",
                None,
            ));
        }
        let server_info = admin.and_then(|a| a.server_info.ok());
        self.sidecar_evidence();
        match server_info.map(|s| &s.state) {
            Some(ServerState::PreInitializing | ServerState::Initializing) => {
                self.waiting_for_istiod()
            }
            Some(ServerState::Live) | Some(ServerState::Draining) => self.live(),
            Some(ServerState::Other(_)) | None => {
                let cp = self.log_matches(Family::ControlPlane);
                let health_down = admin.is_some_and(|a| match &a.health {
                    Probed::Ok(r) => !r.is_ready(),
                    Probed::Error(e) => e.is("refused"),
                    Probed::Skipped(_) => false,
                });
                if !ready && (!cp.is_empty() || health_down) && server_info.is_none() {
                    // The admin port did not answer, but the health port and the logs say the
                    // proxy has no configuration.
                    if !cp.is_empty() {
                        self.waiting_for_istiod();
                        return;
                    }
                }
                if ready {
                    self.set_verdict(
                        VerdictKind::Healthy,
                        "healthy",
                        "istio-proxy is ready; its admin port could not be probed, so only Kubernetes' readiness vouches for it.".to_string(),
                    );
                    self.checks.push(check(
                        "Envoy admin probe",
                        CheckStatus::Unknown,
                        self.admin_error()
                            .unwrap_or_else(|| "not probed".to_string()),
                    ));
                    self.live_extras(true);
                } else {
                    self.unreachable();
                }
            }
        }
    }

    fn admin_error(&self) -> Option<String> {
        let admin = &self.probe?.admin;
        match &admin.server_info {
            Probed::Error(e) => Some(e.message.clone()),
            Probed::Skipped(reason) => Some(reason.clone()),
            Probed::Ok(_) => None,
        }
    }

    fn unreachable(&mut self) {
        let (reason, detail) = match self.admin_error() {
            Some(reason) => {
                let detail = format!(
                    "istio-proxy runs but is not ready, and its admin port did not answer ({reason})"
                );
                (reason, detail)
            }
            None => (
                "probing was turned off (--no-probe)".to_string(),
                "istio-proxy runs but is not ready; probe it (without --no-probe) to see why"
                    .to_string(),
            ),
        };
        self.set_verdict(
            VerdictKind::ProxyUnreachable,
            "proxy unreachable",
            format!("{detail}."),
        );
        self.findings.push(Finding::new(
            MD0107,
            Some(self.pod_ref()),
            &[self.full_name().into(), reason.clone().into()],
        ));
        for m in self.log_matches(Family::ControlPlane) {
            self.evidence.push(log_evidence(m));
        }
        self.control_plane_checks();
        self.next_steps.push(step(
            "Read the proxy's log",
            self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
        ));
    }

    /// Evidence from the admin and health ports, whatever the state.
    fn sidecar_evidence(&mut self) {
        let Some(probe) = self.probe else {
            return;
        };
        let admin = &probe.admin;
        match &admin.server_info {
            Probed::Ok(info) => self.evidence.push(evidence(
                "/server_info",
                format!(
                    "state {}{}{}",
                    info.state,
                    info.uptime_seconds
                        .map(|s| format!(", up {}", human_seconds(s)))
                        .unwrap_or_default(),
                    info.release()
                        .map(|r| format!(", Envoy {r}"))
                        .unwrap_or_default()
                ),
            )),
            Probed::Error(e) => self.evidence.push(evidence(
                "/server_info",
                format!("no answer: {}", e.message),
            )),
            Probed::Skipped(_) => {}
        }
        if let Probed::Ok(r) = &admin.ready {
            self.evidence
                .push(evidence("/ready", format!("HTTP {} {}", r.status, r.body)));
        }
        match &admin.health {
            Probed::Ok(r) => self.evidence.push(evidence(
                "15021 /healthz/ready",
                format!(
                    "HTTP {}{}",
                    r.status,
                    if r.is_ready() { " (ready)" } else { " (not ready)" }
                ),
            )),
            Probed::Error(e) if e.is("refused") => self.evidence.push(evidence(
                "15021 /healthz/ready",
                "connection refused (not ready: Envoy accepts connections on its listeners only once it has its configuration)",
            )),
            Probed::Error(e) => self
                .evidence
                .push(evidence("15021 /healthz/ready", format!("no answer: {}", e.message))),
            Probed::Skipped(_) => {}
        }
        if let Probed::Ok(stats) = &admin.stats {
            if let Some(state) = stats.connected_state {
                self.evidence.push(evidence(
                    "stats",
                    format!(
                        "control_plane.connected_state {state} ({})",
                        if state == 1 {
                            "connected to istiod"
                        } else {
                            "no xDS stream to istiod"
                        }
                    ),
                ));
            }
            for (name, counters) in [("CDS", &stats.cds), ("LDS", &stats.lds)] {
                if let Some(c) = counters {
                    self.evidence.push(evidence(
                        "stats",
                        format!(
                            "{name}: {} attempt(s), {} accepted, {} failed, {} rejected",
                            c.attempt, c.success, c.failure, c.rejected
                        ),
                    ));
                }
            }
        }
        if let Probed::Ok(Some(cluster)) = &admin.xds_cluster {
            let addresses: Vec<&str> = cluster.hosts.iter().map(|h| h.address.as_str()).collect();
            let successes: u64 = cluster.hosts.iter().map(|h| h.rq_success).sum();
            let disconnected = admin
                .stats
                .ok()
                .is_some_and(|s| s.connected() == Some(false));
            if cluster.connect_failures() > 0 || (disconnected && cluster.active_connections() == 0)
            {
                self.evidence.push(evidence(
                    "/clusters",
                    format!(
                        "{} -> {}: {} connection failure(s), {} active connection(s), {} successful request(s)",
                        cluster.name,
                        if addresses.is_empty() { "no endpoint".to_string() } else { addresses.join(", ") },
                        cluster.connect_failures(),
                        cluster.active_connections(),
                        successes
                    ),
                ));
            }
        }
    }

    fn waiting_for_istiod(&mut self) {
        let admin = self.probe.map(|p| &p.admin);
        let state = admin
            .and_then(|a| a.server_info.ok())
            .map(|s| s.state.to_string());
        let mut parts = Vec::new();
        if let Some(state) = &state {
            parts.push(format!("state {state}"));
        }
        if let Some(a) = admin {
            match &a.health {
                Probed::Ok(r) if !r.is_ready() => {
                    parts.push(format!("15021 not ready ({})", r.status))
                }
                Probed::Error(e) if e.is("refused") => {
                    parts.push("15021 not ready (connection refused)".to_string())
                }
                _ => {}
            }
            if let Some(stats) = a.stats.ok() {
                match stats.connected_state {
                    Some(0) => parts.push(
                        "not connected to istiod (control_plane.connected_state 0)".to_string(),
                    ),
                    Some(_) => parts
                        .push("connected to istiod but no configuration applied yet".to_string()),
                    None => {}
                }
            }
        }
        let cp = self.log_matches(Family::ControlPlane);
        if parts.is_empty()
            && let Some(first) = cp.first()
        {
            parts.push(first.signature.explain().to_string());
        }
        let detail = parts.join(", ");
        self.set_verdict(
            VerdictKind::WaitingForControlPlane,
            "waiting for istiod",
            format!(
                "The proxy runs but never got its configuration from istiod ({detail}), so the pod never becomes ready."
            ),
        );
        self.findings.push(Finding::new(
            MD0102,
            Some(self.pod_ref()),
            &[self.full_name().into(), detail.into()],
        ));
        if let Some(uptime) = admin
            .and_then(|a| a.server_info.ok())
            .and_then(|s| s.uptime_seconds)
            && uptime < 10
        {
            self.evidence.push(evidence(
                "/server_info",
                format!("the proxy started {uptime}s ago: if it is just starting, run this again in a few seconds"),
            ));
        }
        for m in &cp {
            self.evidence.push(log_evidence(m));
        }
        self.control_plane_checks();
        self.next_steps.push(step(
            "Read the proxy's log (pilot-agent says why it cannot reach istiod)",
            self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
        ));
        // Steps follow the failed checks: istiod's own health only when it was not seen ready.
        let istiod_seen_ready = self
            .checks
            .iter()
            .any(|c| c.name == "istiod has ready endpoints" && c.status == CheckStatus::Pass);
        if !istiod_seen_ready {
            self.next_steps.push(step(
                "Is istiod running and ready?",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} get pods -l app=istiod -o wide"
                )),
            ));
        }
        self.next_steps.push(step(
            "istiod's view: which proxies it serves",
            Some(format!(
                "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod --tail 100"
            )),
        ));
    }

    // ------------------------------------------------------------------ checks

    /// The probable causes of a proxy that cannot get its configuration.
    fn control_plane_checks(&mut self) {
        self.check_discovery_address();
        self.check_istiod_endpoints();
        self.check_network_policies();
        self.check_root_cert();
        self.check_token_audience();
        for m in self.log_matches(Family::ControlPlane) {
            if matches!(
                m.signature,
                Signature::Certificate | Signature::Token | Signature::Authentication
            ) {
                self.checks.push(check(
                    "The proxy's credentials are accepted",
                    CheckStatus::Fail,
                    format!("{}: {}", m.signature.explain(), m.excerpt),
                ));
            }
        }
    }

    /// The revision the pod belongs to (`istio.io/rev` on the pod or its namespace).
    fn revision(&self) -> Option<String> {
        self.pod
            .label(REVISION_LABEL)
            .map(str::to_string)
            .or_else(|| {
                self.ctx
                    .namespace
                    .found()
                    .and_then(|n| n.label(REVISION_LABEL))
                    .map(str::to_string)
            })
            .filter(|r| !r.is_empty() && r != "default")
    }

    fn istiod_slices(&self) -> Option<(String, Vec<&'a EndpointSlice>)> {
        let slices = self.ctx.istio_endpoint_slices.found()?;
        let service_of =
            |s: &EndpointSlice| s.label("kubernetes.io/service-name").map(str::to_string);
        let mut names = Vec::new();
        if let Some(rev) = self.revision() {
            names.push(format!("istiod-{rev}"));
        }
        names.push("istiod".to_string());
        for name in names {
            let matching: Vec<&EndpointSlice> = slices
                .iter()
                .filter(|s| service_of(s).as_deref() == Some(name.as_str()))
                .collect();
            if !matching.is_empty() {
                return Some((name, matching));
            }
        }
        None
    }

    /// istiod endpoint IPs (ready or not), for NetworkPolicy ipBlocks.
    fn istiod_addresses(&self) -> Vec<IpAddr> {
        self.istiod_slices()
            .map(|(_, slices)| {
                slices
                    .iter()
                    .flat_map(|s| s.endpoints.iter())
                    .flat_map(|e| e.addresses.iter())
                    .filter_map(|a| a.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True when an injection webhook calling istiod (or istiod-<rev>) fails closed.
    fn istiod_webhook_fails_closed(&self) -> bool {
        let Some(configs) = self.ctx.webhooks.found() else {
            return false;
        };
        configs
            .iter()
            .flat_map(|c| c.object.webhooks.iter().flatten())
            .filter(|w| injection::is_injection_webhook(w))
            .filter(|w| w.failure_policy.as_deref().is_none_or(|p| p == "Fail"))
            .filter_map(|w| w.client_config.service.as_ref())
            .any(|s| s.namespace == ISTIO_NAMESPACE && s.name.starts_with("istiod"))
    }

    /// The names of istiod's pods that are Running and ready.
    fn ready_istiod_pods(&self) -> Vec<String> {
        self.ctx
            .istiod_pods
            .found()
            .into_iter()
            .flatten()
            .filter(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.status.as_ref().is_some_and(|s| {
                        s.phase.as_deref() == Some("Running")
                            && s.conditions
                                .iter()
                                .flatten()
                                .any(|c| c.type_ == "Ready" && c.status == "True")
                    })
            })
            .map(|p| p.name().to_string())
            .collect()
    }

    /// The discovery address the proxy should use: the pod's `proxy.istio.io/config`, else the
    /// mesh config's `defaultConfig`, else Istio's default for the revision.
    fn expected_discovery_address(&self) -> String {
        fn discovery(yaml: &str) -> Option<String> {
            let doc = crate::source::yaml::parse_stream(yaml)
                .ok()?
                .into_iter()
                .next()?;
            doc.value
                .get("discoveryAddress")?
                .as_str()
                .map(str::to_string)
        }
        if let Some(a) = self
            .pod
            .annotation("proxy.istio.io/config")
            .and_then(discovery)
        {
            return a;
        }
        let mesh = self
            .ctx
            .mesh_config
            .found()
            .and_then(|cm| cm.data.as_ref()?.get("mesh").cloned())
            .and_then(|mesh| {
                let doc = crate::source::yaml::parse_stream(&mesh)
                    .ok()?
                    .into_iter()
                    .next()?;
                doc.value
                    .pointer("/defaultConfig/discoveryAddress")?
                    .as_str()
                    .map(str::to_string)
            });
        mesh.unwrap_or_else(|| match self.revision() {
            Some(rev) => format!("istiod-{rev}.{ISTIO_NAMESPACE}.svc:{XDS_PORT}"),
            None => format!("istiod.{ISTIO_NAMESPACE}.svc:{XDS_PORT}"),
        })
    }

    /// Is the address the bootstrap's ADS cluster dials istiod's? A unix socket is pilot-agent's
    /// local xDS proxy (which dials the discovery address itself).
    fn check_discovery_address(&mut self) {
        const NAME: &str = "the proxy's discovery address is istiod's";
        let Some(bootstrap) = self.probe.and_then(|p| p.admin.bootstrap.ok()) else {
            return;
        };
        let Some(ads) = bootstrap.ads_cluster.as_deref() else {
            return;
        };
        let Some(cluster) = bootstrap.static_cluster(ads) else {
            return;
        };
        if cluster.addresses.is_empty() {
            return;
        }
        let expected = self.expected_discovery_address();
        if cluster.addresses.iter().any(|a| a.starts_with("unix:")) {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "ADS cluster {ads} goes through pilot-agent's local xDS proxy ({}); pilot-agent dials {expected}",
                    cluster.addresses.join(", ")
                ),
            ));
            return;
        }
        let split = |a: &str| -> (String, String) {
            match a.rsplit_once(':') {
                Some((h, p)) => (
                    h.trim_start_matches('[').trim_end_matches(']').to_string(),
                    p.to_string(),
                ),
                None => (a.to_string(), String::new()),
            }
        };
        let (_, expected_port) = split(&expected);
        let mut istiod_ips: Vec<IpAddr> = self.istiod_addresses();
        for p in self.ctx.istiod_pods.found().into_iter().flatten() {
            if let Some(ip) = p
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .and_then(|ip| ip.parse().ok())
            {
                istiod_ips.push(ip);
            }
        }
        let istiod_ports = [expected_port.clone(), "15010".into(), XDS_PORT.to_string()];
        let wrong: Vec<&String> = cluster
            .addresses
            .iter()
            // The port decides: a host can be a DNS alias, a Service IP or a pod IP of istiod,
            // but an address on none of istiod's xDS ports (15012, 15010, the configured one)
            // cannot be istiod. An IP that is istiod's pod IP is accepted on any istiod port.
            .filter(|a| {
                let (_, port) = split(a);
                !(a.as_str() == expected || istiod_ports.contains(&port))
            })
            .collect();
        if wrong.is_empty() {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "ADS cluster {ads} -> {} (istiod: {expected})",
                    cluster.addresses.join(", ")
                ),
            ));
            return;
        }
        let wrong_text = wrong
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let mut istiod = format!("istiod is {expected}");
        if !istiod_ips.is_empty() {
            let ips: Vec<String> = istiod_ips.iter().map(ToString::to_string).collect();
            istiod.push_str(&format!(", its pods {}", ips.join(", ")));
        }
        self.checks.push(check(
            NAME,
            CheckStatus::Fail,
            format!("ADS cluster {ads} -> {wrong_text}, but {istiod}"),
        ));
        self.findings.push(Finding::new(
            MD0109,
            Some(self.pod_ref()),
            &[
                self.full_name().into(),
                wrong_text.clone().into(),
                istiod.into(),
            ],
        ));
        self.next_steps.push(step(
            format!(
                "Point the proxy back at istiod ({expected}): {wrong_text} comes from its bootstrap (a sidecar.istio.io/bootstrapOverride ConfigMap, the proxy.istio.io/config annotation's discoveryAddress, or the mesh config's defaultConfig.discoveryAddress); see which"
            ),
            Some(format!(
                "kubectl mesh-doctor bootstrap explain {} -n {}",
                self.name, self.namespace
            )),
        ));
    }

    fn check_istiod_endpoints(&mut self) {
        const NAME: &str = "istiod has ready endpoints";
        let c = match (&self.ctx.istio_endpoint_slices, self.istiod_slices()) {
            (Lookup::Unknown(reason), _) => check(
                NAME,
                CheckStatus::Unknown,
                format!("EndpointSlices in {ISTIO_NAMESPACE} could not be listed: {reason}"),
            ),
            (_, None) if !self.ready_istiod_pods().is_empty() => check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "istiod pod(s) {} Running and ready (no EndpointSlice of Service istiod in {ISTIO_NAMESPACE} lists them)",
                    self.ready_istiod_pods().join(", ")
                ),
            ),
            (_, None) => check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "no EndpointSlice for Service istiod{} in {ISTIO_NAMESPACE} and no ready istiod pod: istiod is not installed there, or its Service is gone",
                    self.revision()
                        .map(|r| format!(" (or istiod-{r})"))
                        .unwrap_or_default()
                ),
            ),
            (_, Some((service, slices))) => {
                let endpoints: Vec<_> = slices.iter().flat_map(|s| s.endpoints.iter()).collect();
                let ready = endpoints
                    .iter()
                    .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
                    .count();
                if ready > 0 {
                    check(
                        NAME,
                        CheckStatus::Pass,
                        format!(
                            "Service {service} has {ready} ready endpoint(s) of {}",
                            endpoints.len()
                        ),
                    )
                } else {
                    check(
                        NAME,
                        CheckStatus::Fail,
                        format!(
                            "Service {service} has no ready endpoint ({} not ready): no istiod pod can answer",
                            endpoints.len()
                        ),
                    )
                }
            }
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                "Bring istiod back: see why its pods are not ready",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} describe pods -l app=istiod"
                )),
            ));
            if self.istiod_webhook_fails_closed() {
                self.next_steps.push(step(
                    "Until then no new pod can be created where its injection webhook applies (failurePolicy Fail, MD0202); list those namespaces",
                    Some("kubectl mesh-doctor analyze -A --analyzer webhook-endpoints".to_string()),
                ));
            }
        }
        self.checks.push(c);
    }

    fn check_network_policies(&mut self) {
        const NAME: &str = "no NetworkPolicy blocks egress to istiod (TCP 15012)";
        let policies = match &self.ctx.network_policies {
            Lookup::Unknown(reason) => {
                self.checks.push(check(
                    NAME,
                    CheckStatus::Unknown,
                    format!(
                        "NetworkPolicies in {} could not be listed: {reason}",
                        self.namespace
                    ),
                ));
                return;
            }
            Lookup::Missing => Vec::new(),
            Lookup::Found(p) => p.iter().collect::<Vec<_>>(),
        };
        let empty = BTreeMap::new();
        let pod_labels = self.pod.metadata.labels.as_ref().unwrap_or(&empty);
        let applying: Vec<&NetworkPolicy> = policies
            .into_iter()
            .filter(|p| {
                let Some(spec) = p.spec.as_ref() else {
                    return false;
                };
                let egress_type = match &spec.policy_types {
                    Some(types) => types.iter().any(|t| t == "Egress"),
                    None => spec.egress.is_some(),
                };
                egress_type && selector::matches(spec.pod_selector.as_ref(), pod_labels)
            })
            .collect();
        if applying.is_empty() {
            self.checks.push(check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "no NetworkPolicy in {} restricts this pod's egress",
                    self.namespace
                ),
            ));
            return;
        }
        let names: Vec<String> = applying.iter().map(|p| p.name().to_string()).collect();
        let istio_labels = match &self.ctx.istio_namespace {
            Lookup::Found(ns) => ns.metadata.labels.clone().unwrap_or_default(),
            _ => BTreeMap::new(),
        };
        let mut istio_labels = istio_labels;
        istio_labels
            .entry("kubernetes.io/metadata.name".to_string())
            .or_insert_with(|| ISTIO_NAMESPACE.to_string());
        let addresses = self.istiod_addresses();
        let target = Target {
            policy_namespace: &self.namespace,
            istio_labels: &istio_labels,
            istiod_addresses: &addresses,
        };
        let mut xds = Allow::No;
        let mut dns = Allow::No;
        let mut allowed_by = None;
        for policy in &applying {
            for rule in policy
                .spec
                .as_ref()
                .and_then(|s| s.egress.as_ref())
                .into_iter()
                .flatten()
            {
                let to_istiod = target.peers(rule.to.as_deref());
                let port = ports_allow(rule.ports.as_deref(), XDS_PORT, "TCP");
                let allow = to_istiod.and(port);
                if allow > xds {
                    xds = allow;
                    if allow == Allow::Yes {
                        allowed_by = Some(policy.name().to_string());
                    }
                }
                let dns_port = ports_allow(rule.ports.as_deref(), 53, "UDP").or(ports_allow(
                    rule.ports.as_deref(),
                    53,
                    "TCP",
                ));
                dns = dns.or(dns_port);
            }
        }
        let dns_note = if dns == Allow::No {
            "; DNS (port 53) is blocked too, so istiod's name cannot be resolved"
        } else {
            ""
        };
        let c = match xds {
            Allow::Yes => check(
                NAME,
                CheckStatus::Pass,
                format!(
                    "NetworkPolicy {} allows egress to istiod on 15012{dns_note}",
                    allowed_by.unwrap_or_default()
                ),
            ),
            Allow::Maybe => check(
                NAME,
                CheckStatus::Unknown,
                format!(
                    "NetworkPolicy {} restricts egress; its rules allow 15012 only through a named port or an IP block mesh-doctor cannot match to istiod{dns_note}",
                    names.join(", ")
                ),
            ),
            Allow::No => check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "NetworkPolicy {} selects this pod for egress and no rule allows TCP 15012 to istiod in {ISTIO_NAMESPACE}{dns_note}",
                    names.join(", ")
                ),
            ),
        };
        if c.status != CheckStatus::Pass {
            self.next_steps.push(step(
                format!(
                    "Allow egress from the pod to namespace {ISTIO_NAMESPACE} on TCP 15012 (and to DNS on 53) in the NetworkPolicy"
                ),
                self.kubectl(&format!("get networkpolicy {} -o yaml", names.join(" "))),
            ));
        }
        self.checks.push(c);
    }

    fn check_root_cert(&mut self) {
        let name = format!(
            "ConfigMap {ROOT_CERT_CONFIG_MAP} exists in {}",
            self.namespace
        );
        let c = match &self.ctx.root_cert {
            Lookup::Found(cm) => {
                let has_cert = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("root-cert.pem"))
                    .is_some_and(|v| !v.trim().is_empty());
                if has_cert {
                    check(&name, CheckStatus::Pass, "it holds root-cert.pem")
                } else {
                    check(
                        &name,
                        CheckStatus::Fail,
                        "it exists but has no root-cert.pem: the proxy cannot verify istiod",
                    )
                }
            }
            Lookup::Missing => check(
                &name,
                CheckStatus::Fail,
                "missing: istiod writes it into every namespace it watches; without it the proxy's istiod-ca-cert volume cannot be mounted and it cannot verify istiod",
            ),
            Lookup::Unknown(reason) => check(
                &name,
                CheckStatus::Unknown,
                format!("could not be read: {reason}"),
            ),
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                format!(
                    "Find out why istiod does not write {ROOT_CERT_CONFIG_MAP} into {} (discoverySelectors, or istiod not running)",
                    self.namespace
                ),
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod | grep -i {ROOT_CERT_CONFIG_MAP}"
                )),
            ));
        }
        self.checks.push(c);
    }

    fn check_token_audience(&mut self) {
        const NAME: &str = "the istio-token audience is istio-ca";
        let volume = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .and_then(|v| v.iter().find(|v| v.name == "istio-token"));
        let audiences: Vec<String> = volume
            .and_then(|v| v.projected.as_ref())
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|s| s.service_account_token.as_ref())
            .map(|t| t.audience.clone().unwrap_or_default())
            .collect();
        let c = if volume.is_none() {
            check(
                NAME,
                CheckStatus::Skipped,
                "the pod has no istio-token volume (it presents its default service-account token)",
            )
        } else if audiences.iter().any(|a| a == TOKEN_AUDIENCE) {
            check(
                NAME,
                CheckStatus::Pass,
                format!("audience {TOKEN_AUDIENCE}"),
            )
        } else {
            check(
                NAME,
                CheckStatus::Fail,
                format!(
                    "the token's audience is {:?}, istiod expects {TOKEN_AUDIENCE}: it rejects the proxy's certificate request",
                    audiences
                ),
            )
        };
        if c.status == CheckStatus::Fail {
            self.next_steps.push(step(
                "Fix the audience in the injection template (values.global.sds.token.aud) or istiod's TOKEN_AUDIENCES, then restart the pod",
                None,
            ));
        }
        self.checks.push(c);
    }

    // ------------------------------------------------------------------ live

    fn live(&mut self) {
        let admin = self.probe.map(|p| &p.admin);
        let draining = admin
            .and_then(|a| a.server_info.ok())
            .is_some_and(|s| s.state == ServerState::Draining);
        let any = self.live_extras(false);
        if !any {
            let connected = admin.and_then(|a| a.stats.ok()).and_then(|s| s.connected());
            let summary = match (draining, connected) {
                (true, _) => "The proxy is draining: the pod is shutting down.".to_string(),
                (false, Some(false)) => {
                    "The proxy is LIVE and serves its last configuration, but it is not connected to istiod right now: new configuration and certificates do not reach it.".to_string()
                }
                _ => "The proxy is LIVE, has its configuration and every container is ready."
                    .to_string(),
            };
            if connected == Some(false) {
                self.next_steps.push(step(
                    "Watch whether the proxy reconnects; if not, check istiod",
                    Some(format!(
                        "kubectl -n {ISTIO_NAMESPACE} get pods -l app=istiod"
                    )),
                ));
            }
            self.set_verdict(VerdictKind::Healthy, "healthy", summary);
        }
    }

    /// Config rejections, certificates and application readiness of a proxy that runs.
    /// Returns true when something was found.
    fn live_extras(&mut self, readiness_only: bool) -> bool {
        let mut found = false;
        let admin = self.probe.map(|p| &p.admin);
        if !readiness_only {
            if let Some(stats) = admin.and_then(|a| a.stats.ok())
                && stats.rejected() > 0
            {
                let cds = stats.cds.as_ref().map_or(0, |c| c.rejected);
                let lds = stats.lds.as_ref().map_or(0, |c| c.rejected);
                let what = format!("CDS rejected {cds} update(s), LDS rejected {lds}");
                self.set_verdict(
                    VerdictKind::ConfigRejected,
                    "configuration rejected by the proxy",
                    format!(
                        "The proxy refused configuration istiod sent ({what}); it keeps running on the last configuration it accepted, so recent changes do not apply."
                    ),
                );
                self.findings.push(Finding::new(
                    MD0104,
                    Some(self.pod_ref()),
                    &[self.full_name().into(), what.into()],
                ));
                self.next_steps.push(step(
                    "istiod logs why the proxy rejected the update (look for NACK)",
                    Some(format!(
                        "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod | grep -i -e nack -e {}",
                        self.name
                    )),
                ));
                self.next_steps.push(step(
                    "Check the mesh configuration that applies to the pod",
                    Some(format!("kubectl mesh-doctor analyze -n {}", self.namespace)),
                ));
                found = true;
            }
            if let (Some(certs), Some(now)) = (admin.and_then(|a| a.certs.ok()), self.ctx.now) {
                for cert in certs {
                    let Some(expires) = cert.expiration_time else {
                        continue;
                    };
                    let fraction = cert.remaining_fraction(now);
                    let what = if expires <= now {
                        Some(format!("expired at {expires}"))
                    } else if cert.role == CertRole::Chain && fraction.is_some_and(|f| f < 0.2) {
                        // Istio rotates at half the lifetime: under 20% left means rotation fails.
                        Some(format!(
                            "expires at {expires}, with {:.0}% of its lifetime left (Istio rotates at 50%)",
                            fraction.unwrap_or(0.0) * 100.0
                        ))
                    } else {
                        None
                    };
                    let Some(what) = what else { continue };
                    let label = match cert.role {
                        CertRole::Chain => "workload certificate",
                        CertRole::Ca => "CA certificate",
                    };
                    self.evidence.push(evidence(
                        "/certs",
                        format!(
                            "{label} {} ({}) {what}",
                            cert.path,
                            cert.subject_alt_names.join(", ")
                        ),
                    ));
                    self.set_verdict(
                        VerdictKind::CertificateProblem,
                        "certificate expired or expiring",
                        format!(
                            "The proxy's {label} {what}: mTLS to other workloads fails once it expires, which usually means the proxy cannot reach the CA on istiod."
                        ),
                    );
                    self.findings.push(Finding::new(
                        MD0105,
                        Some(self.pod_ref()),
                        &[self.full_name().into(), what.into()],
                    ));
                    found = true;
                }
                if found
                    && self
                        .verdict
                        .as_ref()
                        .is_some_and(|v| v.kind == VerdictKind::CertificateProblem)
                {
                    self.check_istiod_endpoints();
                    self.check_token_audience();
                }
            }
        }
        // Application containers not ready while the proxy is.
        let proxy_ready = self.proxy_status().is_some_and(|s| s.ready)
            || admin
                .and_then(|a| a.health.ok())
                .is_some_and(|r| r.is_ready());
        let unready: Vec<String> = self
            .pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|s| s.name != sidecar::PROXY_CONTAINER && !s.ready)
            .map(|s| s.name.clone())
            .collect();
        if proxy_ready && !unready.is_empty() {
            for name in &unready {
                if let Some(s) = self
                    .pod
                    .status
                    .as_ref()
                    .and_then(|st| st.container_statuses.as_ref())
                    .and_then(|c| c.iter().find(|c| &c.name == name))
                {
                    self.evidence.push(evidence(
                        "pod status",
                        format!("{}: {}, not ready", s.name, container_state(s)),
                    ));
                }
            }
            self.set_verdict(
                VerdictKind::ApplicationNotReady,
                "application not ready",
                format!(
                    "The proxy is LIVE; container(s) {} fail their own readiness: the problem is in the application, not the mesh.",
                    unready.join(", ")
                ),
            );
            self.findings.push(Finding::new(
                MD0106,
                Some(self.pod_ref()),
                &[self.full_name().into(), unready.clone().into()],
            ));
            self.next_steps.push(step(
                "See the failing readiness probe and the application's log",
                self.kubectl(&format!("describe pod {}", self.name)),
            ));
            self.next_steps.push(step(
                "The application's log",
                self.kubectl(&format!("logs {} -c {}", self.name, unready[0])),
            ));
            found = true;
        }
        found
    }

    fn finish(mut self) -> Diagnosis {
        let verdict = self.verdict.take().unwrap_or_else(|| Verdict {
            kind: VerdictKind::Healthy,
            title: "healthy".to_string(),
            summary: "Nothing wrong was found.".to_string(),
        });
        let not_read = not_read(self.ctx, &self.namespace);
        if !not_read.is_empty() {
            let what: Vec<&str> = not_read.iter().map(|n| n.what.as_str()).collect();
            self.next_steps.push(step(
                format!(
                    "This verdict is incomplete: {} could not be read (see \"Not read\"). Check what your identity may read (the read-only permissions are in docs/rbac.yaml)",
                    what.join(", ")
                ),
                Some(format!("kubectl auth can-i --list -n {}", self.namespace)),
            ));
        }
        Diagnosis {
            pod: summarize(self.pod),
            verdict,
            findings: self.findings,
            evidence: self.evidence,
            checks: self.checks,
            next_steps: dedup(self.next_steps),
            not_read,
        }
    }
}

/// The reads of the context that failed.
fn not_read(ctx: &PodContext, namespace: &str) -> Vec<NotRead> {
    let mut out = Vec::new();
    let mut add = |what: String, lookup: Option<&String>| {
        if let Some(reason) = lookup {
            out.push(NotRead {
                what,
                reason: reason.clone(),
            });
        }
    };
    fn reason<T>(l: &Lookup<T>) -> Option<&String> {
        match l {
            Lookup::Unknown(r) => Some(r),
            _ => None,
        }
    }
    add(format!("namespace {namespace}"), reason(&ctx.namespace));
    add(
        "mutatingwebhookconfigurations".to_string(),
        reason(&ctx.webhooks),
    );
    add(
        format!("endpointslices in {ISTIO_NAMESPACE}"),
        reason(&ctx.istio_endpoint_slices),
    );
    add(
        format!("namespace {ISTIO_NAMESPACE}"),
        reason(&ctx.istio_namespace),
    );
    add(
        format!("networkpolicies in {namespace}"),
        reason(&ctx.network_policies),
    );
    add(
        format!("configmap {namespace}/{ROOT_CERT_CONFIG_MAP}"),
        reason(&ctx.root_cert),
    );
    add(
        format!("istiod pods in {ISTIO_NAMESPACE}"),
        reason(&ctx.istiod_pods),
    );
    add(
        format!("configmap {ISTIO_NAMESPACE}/istio"),
        reason(&ctx.mesh_config),
    );
    out
}

fn dedup(steps: Vec<NextStep>) -> Vec<NextStep> {
    let mut out: Vec<NextStep> = Vec::new();
    for s in steps {
        if !out.iter().any(|o| o == &s) {
            out.push(s);
        }
    }
    out
}

fn log_evidence(m: &LogMatch) -> Evidence {
    evidence(
        format!(
            "logs ({}) line {}{}",
            m.source.as_str(),
            m.line_number,
            if m.count > 1 {
                format!(", {} times", m.count)
            } else {
                String::new()
            }
        ),
        m.line.clone(),
    )
}

fn human_seconds(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{}s", s / 60, s % 60),
        3600..86400 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{}h", s / 86400, (s % 86400) / 3600),
    }
}

/// "Running", "Waiting: CrashLoopBackOff", "Terminated: Error (exit code 1)".
pub fn container_state(status: &ContainerStatus) -> String {
    let Some(state) = status.state.as_ref() else {
        return "unknown".to_string();
    };
    if state.running.is_some() {
        return "Running".to_string();
    }
    if let Some(w) = &state.waiting {
        return format!("Waiting: {}", w.reason.as_deref().unwrap_or("unknown"));
    }
    if let Some(t) = &state.terminated {
        return format!(
            "Terminated: {} (exit code {})",
            t.reason.as_deref().unwrap_or("unknown"),
            t.exit_code
        );
    }
    "unknown".to_string()
}

fn summarize_container(status: &ContainerStatus) -> ContainerSummary {
    ContainerSummary {
        name: status.name.clone(),
        ready: status.ready,
        restarts: status.restart_count,
        state: container_state(status),
        last_termination: status
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .map(|t| {
                format!(
                    "{} (exit code {})",
                    t.reason.as_deref().unwrap_or("terminated"),
                    t.exit_code
                )
            }),
    }
}

fn summarize(pod: &Pod) -> PodSummary {
    let status = pod.status.as_ref();
    let spec = pod.spec.as_ref();
    let proxy = spec.and_then(sidecar::proxy_container);
    PodSummary {
        name: pod.name().to_string(),
        namespace: pod.namespace().unwrap_or("default").to_string(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".to_string()),
        node: spec.and_then(|s| s.node_name.clone()),
        pod_ip: status.and_then(|s| s.pod_ip.clone()),
        proxy: sidecar::proxy_status(pod)
            .map(summarize_container)
            .or_else(|| {
                proxy.map(|p| ContainerSummary {
                    name: p.container.name.clone(),
                    ready: false,
                    restarts: 0,
                    state: "no status yet".to_string(),
                    last_termination: None,
                })
            }),
        native_sidecar: proxy.is_some_and(|p| p.native),
        proxy_image: proxy
            .map(|p| p.image().to_string())
            .filter(|i| !i.is_empty()),
        containers: status
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.name != sidecar::PROXY_CONTAINER)
            .map(summarize_container)
            .collect(),
    }
}

// ---------------------------------------------------------------------- NetworkPolicy matching

/// Whether a rule lets traffic through: no, maybe (cannot tell), yes. Ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Allow {
    No,
    Maybe,
    Yes,
}

impl Allow {
    fn and(self, other: Allow) -> Allow {
        self.min(other)
    }
    fn or(self, other: Allow) -> Allow {
        self.max(other)
    }
}

struct Target<'a> {
    policy_namespace: &'a str,
    istio_labels: &'a BTreeMap<String, String>,
    istiod_addresses: &'a [IpAddr],
}

impl Target<'_> {
    /// Does a rule's `to` reach istiod?
    fn peers(&self, peers: Option<&[NetworkPolicyPeer]>) -> Allow {
        let Some(peers) = peers.filter(|p| !p.is_empty()) else {
            return Allow::Yes; // no `to`: every destination
        };
        peers
            .iter()
            .map(|p| self.peer(p))
            .max()
            .unwrap_or(Allow::No)
    }

    fn peer(&self, peer: &NetworkPolicyPeer) -> Allow {
        if let Some(block) = &peer.ip_block {
            if self.istiod_addresses.is_empty() {
                return Allow::Maybe;
            }
            let inside = |cidr: &str| {
                self.istiod_addresses
                    .iter()
                    .any(|a| cidr_contains(cidr, *a))
            };
            let excepted = block
                .except
                .iter()
                .flatten()
                .any(|e| self.istiod_addresses.iter().all(|a| cidr_contains(e, *a)));
            return if inside(&block.cidr) && !excepted {
                Allow::Yes
            } else {
                Allow::No
            };
        }
        let istiod_pod: BTreeMap<String, String> = ISTIOD_POD_LABELS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let namespace_ok = match &peer.namespace_selector {
            Some(sel) => selector::matches(Some(sel), self.istio_labels),
            None => self.policy_namespace == ISTIO_NAMESPACE,
        };
        let pod_ok = selector::matches(peer.pod_selector.as_ref(), &istiod_pod);
        if namespace_ok && pod_ok {
            Allow::Yes
        } else {
            Allow::No
        }
    }
}

/// Does a rule's `ports` allow `port`/`protocol`?
fn ports_allow(ports: Option<&[NetworkPolicyPort]>, port: i32, protocol: &str) -> Allow {
    let Some(ports) = ports.filter(|p| !p.is_empty()) else {
        return Allow::Yes; // no `ports`: every port
    };
    ports
        .iter()
        .map(|p| {
            if p.protocol.as_deref().unwrap_or("TCP") != protocol {
                return Allow::No;
            }
            match &p.port {
                None => Allow::Yes,
                Some(IntOrString::Int(n)) => {
                    let end = p.end_port.unwrap_or(*n);
                    if (*n..=end).contains(&port) {
                        Allow::Yes
                    } else {
                        Allow::No
                    }
                }
                // A named port resolves against istiod's container ports, which are not read.
                Some(IntOrString::String(_)) => Allow::Maybe,
            }
        })
        .max()
        .unwrap_or(Allow::No)
}

/// True when `address` is inside `cidr` (`10.0.0.0/8`, `fd00::/8`).
fn cidr_contains(cidr: &str, address: IpAddr) -> bool {
    let Some((network, bits)) = cidr.split_once('/') else {
        return network_eq(cidr, address);
    };
    let (Ok(network), Ok(bits)) = (network.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (network, address) {
        (IpAddr::V4(n), IpAddr::V4(a)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (u32::from(n) & mask) == (u32::from(a) & mask)
        }
        (IpAddr::V6(n), IpAddr::V6(a)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            (u128::from(n) & mask) == (u128::from(a) & mask)
        }
        _ => false,
    }
}

fn network_eq(text: &str, address: IpAddr) -> bool {
    text.parse::<IpAddr>().is_ok_and(|n| n == address)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::probe::admin::{
        parse_bootstrap, parse_certs, parse_clusters, parse_readiness, parse_server_info,
        parse_stats,
    };
    use crate::probe::logs::LogSource;
    use crate::probe::transport::{HttpResponse, ProbeError};
    use crate::probe::{AdminProbe, LogScan, ProxyLogs};
    use serde_json::json;

    const FIX: &str = "tests/fixtures/envoy";

    pub(crate) fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{}/{FIX}/{name}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// When the captures were taken (certificates are judged at this time).
    pub(crate) fn captured_at() -> jiff::Timestamp {
        "2026-11-29T15:00:24Z".parse().unwrap()
    }

    pub(crate) fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    pub(crate) fn running() -> serde_json::Value {
        json!({"running": {"startedAt": "2026-11-29T14:00:00Z"}})
    }

    /// A pod with an app container `web` and (unless `proxy_status` is None) istio-proxy.
    pub(crate) fn pod(name: &str, proxy_status: Option<serde_json::Value>, app_ready: bool) -> Pod {
        let mut containers = vec![json!({"name": "web", "image": "nginx"})];
        let mut statuses = vec![json!({
            "name": "web", "image": "nginx", "imageID": "", "ready": app_ready,
            "restartCount": 0, "state": running()
        })];
        let mut volumes = vec![];
        if let Some(status) = proxy_status {
            containers.push(json!({"name": "istio-proxy", "image": "istio/proxyv2:1.24.0"}));
            let mut status = status;
            status["name"] = json!("istio-proxy");
            status["image"] = json!("istio/proxyv2:1.24.0");
            status["imageID"] = json!("");
            statuses.push(status);
            volumes.push(json!({"name": "istio-token", "projected": {"sources": [
                {"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}
            ]}}));
        }
        from_json(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "namespace": "shop",
                "labels": {"app": "web", "pod-template-hash": "7d4b9"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9", "uid": "1", "controller": true}]
            },
            "spec": {"containers": containers, "volumes": volumes},
            "status": {"phase": "Running", "podIP": "10.244.0.5", "containerStatuses": statuses}
        }))
    }

    pub(crate) fn namespace(name: &str, labels: serde_json::Value) -> Namespace {
        from_json(json!({"metadata": {"name": name, "labels": labels}}))
    }

    pub(crate) fn istiod_slice(ready: bool) -> EndpointSlice {
        from_json(json!({
            "metadata": {"name": "istiod-abcde", "namespace": "istio-system",
                         "labels": {"kubernetes.io/service-name": "istiod"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.244.0.9"], "conditions": {"ready": ready}}],
            "ports": [{"name": "grpc-xds", "port": 15012, "protocol": "TCP"}]
        }))
    }

    pub(crate) fn root_cert() -> ConfigMap {
        from_json(json!({
            "metadata": {"name": "istio-ca-root-cert", "namespace": "shop"},
            "data": {"root-cert.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
        }))
    }

    pub(crate) fn deny_all_egress() -> NetworkPolicy {
        from_json(json!({
            "metadata": {"name": "deny-egress", "namespace": "shop"},
            "spec": {"podSelector": {}, "policyTypes": ["Egress"]}
        }))
    }

    /// A cluster where everything around the pod is fine.
    pub(crate) fn good_context() -> PodContext {
        PodContext {
            namespace: Lookup::Found(namespace("shop", json!({"istio-injection": "enabled"}))),
            webhooks: Lookup::Found(vec![Located::new(default_injector())]),
            istio_endpoint_slices: Lookup::Found(vec![istiod_slice(true)]),
            istio_namespace: Lookup::Found(namespace("istio-system", json!({}))),
            network_policies: Lookup::Found(Vec::new()),
            root_cert: Lookup::Found(root_cert()),
            istiod_pods: Lookup::Found(Vec::new()),
            mesh_config: Lookup::Missing,
            now: Some(captured_at()),
        }
    }

    /// The injection webhook of a default Istio installation (namespace istio-injection=enabled).
    pub(crate) fn default_injector() -> MutatingWebhookConfiguration {
        from_json(json!({
            "metadata": {"name": "istio-sidecar-injector"},
            "webhooks": [{
                "name": "namespace.sidecar-injector.istio.io",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system"}},
                "namespaceSelector": {"matchLabels": {"istio-injection": "enabled"}},
                "objectSelector": {"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}]}
            }]
        }))
    }

    /// Capture A: Envoy waiting for an istiod it cannot reach.
    pub(crate) fn admin_waiting(health: Probed<crate::probe::admin::Readiness>) -> AdminProbe {
        AdminProbe {
            via: "captures".into(),
            server_info: Probed::Ok(parse_server_info(&fixture("A_server_info.json")).unwrap()),
            ready: Probed::Ok(parse_readiness(&HttpResponse::new(
                503,
                &fixture("A_ready.txt"),
            ))),
            health,
            stats: Probed::Ok(parse_stats(&fixture("A_stats.json")).unwrap()),
            bootstrap: Probed::Ok(parse_bootstrap(&fixture("A_config_dump.json")).unwrap()),
            xds_cluster: Probed::Ok(
                parse_clusters(&fixture("A_clusters.json"))
                    .unwrap()
                    .into_iter()
                    .find(|c| c.name == "xds-grpc"),
            ),
            certs: Probed::Ok(parse_certs(&fixture("A_certs.json")).unwrap()),
        }
    }

    pub(crate) fn refused_15021() -> Probed<crate::probe::admin::Readiness> {
        Probed::Error(ProbeError::Refused("127.0.0.1:15021".into()).into())
    }

    /// Capture C: a LIVE Envoy.
    pub(crate) fn admin_live(certs: &str) -> AdminProbe {
        AdminProbe {
            via: "captures".into(),
            server_info: Probed::Ok(parse_server_info(&fixture("C_server_info.json")).unwrap()),
            ready: Probed::Ok(parse_readiness(&HttpResponse::new(
                200,
                &fixture("C_ready.txt"),
            ))),
            health: Probed::Ok(parse_readiness(&HttpResponse::new(
                200,
                &fixture("C_17021__healthz_ready.txt"),
            ))),
            stats: Probed::Ok(parse_stats(&fixture("C_stats.json")).unwrap()),
            bootstrap: Probed::Skipped("not needed".into()),
            xds_cluster: Probed::Ok(None),
            certs: Probed::Ok(parse_certs(&fixture(certs)).unwrap()),
        }
    }

    pub(crate) fn logs(current: Option<&str>, previous: Option<&str>) -> ProxyLogs {
        let scan = |name: Option<&str>, source| match name {
            Some(n) => Probed::Ok(LogScan::of(&fixture(n), source)),
            None => Probed::Skipped("not fetched".into()),
        };
        ProxyLogs {
            current: scan(current, LogSource::Current),
            previous: scan(previous, LogSource::Previous),
        }
    }

    pub(crate) fn crashloop_status() -> serde_json::Value {
        json!({
            "ready": false, "started": false, "restartCount": 7,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=istio-proxy pod=web-crash"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-29T14:00:00Z", "finishedAt": "2026-11-29T14:00:00Z"}}
        })
    }

    fn codes(d: &Diagnosis) -> Vec<&str> {
        d.findings.iter().map(Finding::code).collect()
    }

    fn check_status(d: &Diagnosis, prefix: &str) -> CheckStatus {
        d.checks
            .iter()
            .find(|c| c.name.starts_with(prefix))
            .unwrap_or_else(|| panic!("no check {prefix:?} in {:#?}", d.checks))
            .status
    }

    #[test]
    fn bootstrap_crash_quotes_the_envoy_line() {
        let pod = pod("web-crash", Some(crashloop_status()), true);
        let probe = ProbeResult {
            admin: AdminProbe::skipped("istio-proxy is not running (CrashLoopBackOff)"),
            logs: logs(None, Some("B_stderr.txt")),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::BootstrapCrash);
        assert_eq!(d.verdict.title, "bootstrap crash");
        assert!(
            d.verdict
                .summary
                .contains("Unknown gRPC client cluster 'xds-grpc'")
        );
        assert_eq!(codes(&d), ["MD0101"]);
        assert_eq!(
            d.findings[0].message,
            "The istio-proxy container of pod shop/web-crash cannot start: Envoy rejects its bootstrap: Unknown gRPC client cluster 'xds-grpc'"
        );
        let quoted = d
            .evidence
            .iter()
            .find(|e| e.source.starts_with("logs (previous) line 129"))
            .expect("the log line is evidence");
        assert!(quoted.text.contains("[critical][main]"));
        assert!(
            quoted
                .text
                .contains("Unknown gRPC client cluster 'xds-grpc'")
        );
        assert!(d.evidence[0].text.contains("Waiting: CrashLoopBackOff"));
        assert!(d.evidence[0].text.contains("7 restart(s)"));
        assert!(d.next_steps.iter().any(|s| s.command.as_deref()
            == Some("kubectl -n shop logs web-crash -c istio-proxy --previous --tail 50")));
        // Links to the bootstrap checks; never a `kubectl exec` into a crash-looping container.
        assert!(d.next_steps.iter().any(|s| s.command.as_deref()
            == Some("kubectl mesh-doctor bootstrap explain web-crash -n shop")));
        assert!(
            !d.next_steps
                .iter()
                .any(|s| s.command.as_deref().is_some_and(|c| c.contains(" exec "))),
            "{:?}",
            d.next_steps
        );
        assert!(d.fails(Level::Error));
        // Runtime checks of the control plane do not apply to a crash.
        assert!(d.checks.is_empty());
    }

    #[test]
    fn every_bootstrap_failure_is_a_crash_with_its_line() {
        for (file, quote) in [
            ("serve_D1_unknown_field_stderr.txt", "has unknown fields"),
            (
                "serve_D2_invalid_json_stderr.txt",
                "Unable to parse JSON as proto",
            ),
            (
                "serve_D5_duplicate_cluster_stderr.txt",
                "duplicate cluster 'prometheus_stats'",
            ),
            (
                "serve_D6_admin_port_in_use_stderr.txt",
                "cannot bind '127.0.0.1:15000'",
            ),
        ] {
            let pod = pod("web-crash", Some(crashloop_status()), true);
            let probe = ProbeResult {
                admin: AdminProbe::skipped("not running"),
                logs: logs(None, Some(file)),
            };
            let d = diagnose(&pod, &good_context(), Some(&probe));
            assert_eq!(d.verdict.kind, VerdictKind::BootstrapCrash, "{file}");
            assert!(
                d.findings[0].message.contains(quote),
                "{file}: {}",
                d.findings[0].message
            );
        }
    }

    #[test]
    fn a_crash_without_a_known_line_shows_the_last_lines() {
        let pod = pod("web-crash", Some(crashloop_status()), true);
        let probe = ProbeResult {
            admin: AdminProbe::skipped("not running"),
            logs: logs(None, Some("C_stderr.txt")),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::ProxyCrash);
        assert_eq!(
            d.verdict.title,
            "crash: istio-proxy exits with code 1 (Error)"
        );
        assert!(
            d.findings[0]
                .message
                .ends_with("it exits with code 1 and the logs show no known error"),
            "{}",
            d.findings[0].message
        );
        assert!(d.evidence.iter().any(|e| e.source == "logs (previous)"));
    }

    #[test]
    fn an_oom_killed_proxy() {
        let mut status = crashloop_status();
        status["lastState"]["terminated"]["reason"] = json!("OOMKilled");
        status["lastState"]["terminated"]["exitCode"] = json!(137);
        let mut p = pod("web", Some(status), true);
        let proxy = p
            .spec
            .as_mut()
            .unwrap()
            .containers
            .iter_mut()
            .find(|c| c.name == "istio-proxy")
            .unwrap();
        proxy.resources = Some(from_json(json!({"limits": {"memory": "128Mi"}})));
        let d = diagnose(&p, &good_context(), None);
        // Its own verdict and steps: the memory limit, not the bootstrap.
        assert_eq!(d.verdict.kind, VerdictKind::OutOfMemory);
        assert_eq!(d.verdict.title, "proxy out of memory");
        assert_eq!(codes(&d), ["MD0108"]);
        assert!(
            d.findings[0].message.contains(
                "cannot run: it is killed for using more memory than its limit of 128Mi (OOMKilled, exit code 137)"
            ),
            "{}",
            d.findings[0].message
        );
        assert!(
            d.next_steps[0]
                .text
                .starts_with("Raise the proxy's memory limit")
        );
        assert!(!d.next_steps.iter().any(|s| {
            s.text.contains("bootstrap")
                || s.command
                    .as_deref()
                    .is_some_and(|c| c.contains(" exec ") || c.contains("bootstrap"))
        }));
    }

    #[test]
    fn an_image_that_cannot_be_pulled() {
        for reason in ["ImagePullBackOff", "ErrImagePull"] {
            let status = json!({"ready": false, "restartCount": 0, "state": {"waiting": {
                "reason": reason, "message": "Back-off pulling image \"istio/proxyv2:9.9.9\""}}});
            let d = diagnose(&pod("web", Some(status), true), &good_context(), None);
            assert_eq!(d.verdict.kind, VerdictKind::ImageNotPulled, "{reason}");
            assert_eq!(codes(&d), ["MD0108"]);
            assert!(
                d.findings[0]
                    .message
                    .contains(&format!("cannot be pulled ({reason}"))
            );
            // Nothing about root certificates or probes: the image reference.
            assert!(d.checks.is_empty(), "{:?}", d.checks);
            assert!(
                d.next_steps[0]
                    .text
                    .starts_with("Check the proxy image reference")
            );
            assert!(!d.next_steps.iter().any(|s| s.text.contains("root")));
        }
    }

    #[test]
    fn a_young_proxy_is_starting_not_waiting_for_istiod() {
        // Running for 3 s, not ready, Envoy PRE_INITIALIZING: within the grace of its readiness
        // probe (0 + 15 x 4 = 60 s), so "starting", no MD0102, exit 0.
        let started = captured_at()
            .checked_sub(jiff::SignedDuration::from_secs(3))
            .unwrap();
        let status = json!({"ready": false, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": started.to_string()}}});
        let mut p = pod("web-wait", Some(status), false);
        let proxy = p
            .spec
            .as_mut()
            .unwrap()
            .containers
            .iter_mut()
            .find(|c| c.name == "istio-proxy")
            .unwrap();
        proxy.readiness_probe = Some(from_json(
            json!({"periodSeconds": 15, "failureThreshold": 4,
            "httpGet": {"path": "/healthz/ready", "port": 15021}}),
        ));
        assert_eq!(sidecar::startup_grace_seconds(&p), 60);
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: logs(None, None),
        };
        let d = diagnose(&p, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::Starting);
        assert_eq!(d.verdict.title, "starting");
        assert!(d.findings.is_empty(), "{:?}", d.findings);
        assert!(!d.fails(Level::Info));
        assert!(
            d.verdict.summary.contains("started 3s ago"),
            "{}",
            d.verdict.summary
        );
        // After the grace, the same proxy waits for istiod.
        let later = captured_at()
            .checked_sub(jiff::SignedDuration::from_secs(61))
            .unwrap();
        p.status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[1]
            .state
            .as_mut()
            .unwrap()
            .running
            .as_mut()
            .unwrap()
            .started_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(later));
        let d = diagnose(&p, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
    }

    #[test]
    fn no_injection_webhook_at_all_means_istiod_is_missing() {
        let context = PodContext {
            webhooks: Lookup::Found(Vec::new()),
            ..good_context()
        };
        let d = diagnose(&pod("web", None, true), &context, None);
        assert_eq!(d.verdict.kind, VerdictKind::InjectorMissing);
        assert_eq!(
            d.verdict.title,
            "not meshed: no injection webhook is installed"
        );
        assert!(
            d.verdict
                .summary
                .contains("istiod (its sidecar injector) is not installed")
        );
        assert_eq!(codes(&d), ["MD0103"]);
        assert!(!d.next_steps.iter().any(|s| {
            s.text.to_lowercase().contains("restart the workload")
                || s.command
                    .as_deref()
                    .is_some_and(|c| c.contains("rollout restart") || c.contains("delete pod"))
        }));
    }

    #[test]
    fn unread_surroundings_are_said_and_make_the_result_incomplete() {
        let context = PodContext {
            namespace: Lookup::Unknown("namespaces \"shop\" is forbidden".into()),
            ..good_context()
        };
        let d = diagnose(&pod("web", None, true), &context, None);
        assert_eq!(d.verdict.kind, VerdictKind::Unknown);
        assert!(d.incomplete());
        assert_eq!(d.not_read[0].what, "namespace shop");
        assert!(!d.next_steps.is_empty());
        let text =
            crate::render::diagnosis::text(&d, None, &crate::render::style::Styles::new(false));
        assert!(
            text.contains("Not read\n  ? namespace shop: namespaces \"shop\" is forbidden"),
            "{text}"
        );
        assert!(!text.contains("nothing to do"), "{text}");
    }

    #[test]
    fn a_discovery_address_that_is_not_istiod_is_a_finding() {
        let p = pod("web-wait", Some(waiting_status()), false);
        let mut admin = admin_waiting(refused_15021());
        if let Probed::Ok(b) = &mut admin.bootstrap {
            let ads = b.ads_cluster.clone().unwrap();
            b.static_clusters
                .iter_mut()
                .find(|c| c.name == ads)
                .unwrap()
                .addresses = vec!["127.0.0.1:1".into()];
        } else {
            panic!("capture A has a bootstrap");
        }
        let probe = ProbeResult {
            admin,
            logs: logs(None, None),
        };
        let d = diagnose(&p, &good_context(), Some(&probe));
        assert_eq!(codes(&d), ["MD0102", "MD0109"]);
        let check = d
            .checks
            .iter()
            .find(|c| c.name == "the proxy's discovery address is istiod's")
            .unwrap();
        assert_eq!(check.status, CheckStatus::Fail);
        assert!(check.detail.contains("127.0.0.1:1"), "{}", check.detail);
        // The first step fixes the address; istiod's endpoints passed, so no "bring istiod back".
        assert!(
            d.next_steps[0]
                .text
                .starts_with("Point the proxy back at istiod"),
            "{:?}",
            d.next_steps
        );
        assert!(
            !d.next_steps
                .iter()
                .any(|s| s.text.starts_with("Bring istiod back")
                    || s.text.starts_with("Is istiod running"))
        );
    }

    #[test]
    fn istiod_pods_running_without_endpointslices_are_not_down() {
        let istiod: Pod = from_json(json!({
            "metadata": {"name": "istiod-7f9", "namespace": "istio-system", "labels": {"app": "istiod"}},
            "spec": {"containers": [{"name": "discovery", "image": "istio/pilot:1.31.0"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.9", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        let context = PodContext {
            istio_endpoint_slices: Lookup::Found(Vec::new()),
            istiod_pods: Lookup::Found(vec![istiod]),
            ..good_context()
        };
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: logs(None, None),
        };
        let d = diagnose(
            &pod("web-wait", Some(waiting_status()), false),
            &context,
            Some(&probe),
        );
        let check = d
            .checks
            .iter()
            .find(|c| c.name == "istiod has ready endpoints")
            .unwrap();
        assert_eq!(check.status, CheckStatus::Pass, "{}", check.detail);
        assert!(
            !d.next_steps
                .iter()
                .any(|s| s.text.starts_with("Bring istiod back"))
        );
    }

    pub(crate) fn waiting_status() -> serde_json::Value {
        json!({"ready": false, "started": true, "restartCount": 0, "state": running()})
    }

    #[test]
    fn waiting_for_istiod_lists_the_causes_it_checked() {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: logs(Some("A_stderr.txt"), None),
        };
        let context = PodContext {
            webhooks: Lookup::Found(Vec::new()),
            istio_endpoint_slices: Lookup::Found(vec![istiod_slice(false)]),
            network_policies: Lookup::Found(vec![deny_all_egress()]),
            root_cert: Lookup::Missing,
            ..good_context()
        };
        let d = diagnose(&pod, &context, Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
        assert_eq!(d.verdict.title, "waiting for istiod");
        assert_eq!(codes(&d), ["MD0102"]);
        assert!(
            !d.next_steps.iter().any(|s| s.text.contains("MD0202")),
            "no injection webhook in this context"
        );
        // With an injection webhook that fails closed, new pods are blocked too: say so.
        let webhook: MutatingWebhookConfiguration = from_json(json!({
            "metadata": {"name": "istio-sidecar-injector"},
            "webhooks": [{
                "name": "namespace.sidecar-injector.istio.io",
                "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                "clientConfig": {"service": {"name": "istiod", "namespace": "istio-system"}}
            }]
        }));
        let with_webhook = PodContext {
            webhooks: Lookup::Found(vec![Located::new(webhook)]),
            istio_endpoint_slices: Lookup::Found(vec![istiod_slice(false)]),
            ..good_context()
        };
        let blocked = diagnose(&pod, &with_webhook, Some(&probe));
        assert!(
            blocked.next_steps.iter().any(|s| s.text.contains("MD0202")
                && s.command.as_deref()
                    == Some("kubectl mesh-doctor analyze -A --analyzer webhook-endpoints")),
            "{:?}",
            blocked.next_steps
        );
        assert_eq!(
            d.findings[0].message,
            "The sidecar of pod shop/web-wait is running but has no configuration from istiod: state PRE_INITIALIZING, 15021 not ready (connection refused), not connected to istiod (control_plane.connected_state 0)"
        );
        assert_eq!(
            check_status(&d, "istiod has ready endpoints"),
            CheckStatus::Fail
        );
        assert_eq!(check_status(&d, "no NetworkPolicy"), CheckStatus::Fail);
        assert_eq!(
            check_status(&d, "ConfigMap istio-ca-root-cert"),
            CheckStatus::Fail
        );
        assert_eq!(
            check_status(&d, "the istio-token audience"),
            CheckStatus::Pass
        );
        let netpol = d
            .checks
            .iter()
            .find(|c| c.name.starts_with("no NetworkPolicy"))
            .unwrap();
        assert!(netpol.detail.contains("deny-egress"), "{}", netpol.detail);
        assert!(netpol.detail.contains("DNS"), "{}", netpol.detail);
        let sources: Vec<&str> = d.evidence.iter().map(|e| e.source.as_str()).collect();
        for source in [
            "pod status",
            "/server_info",
            "/ready",
            "15021 /healthz/ready",
            "stats",
            "/clusters",
        ] {
            assert!(
                sources.contains(&source),
                "{source} missing from {sources:?}"
            );
        }
        assert!(
            d.evidence
                .iter()
                .any(|e| e.text == "control_plane.connected_state 0 (no xDS stream to istiod)")
        );
        assert!(
            d.evidence
                .iter()
                .any(|e| e.text.starts_with("xds-grpc -> 127.0.0.1:")
                    && e.text.contains("7 connection failure(s)"))
        );
        assert!(
            d.evidence
                .iter()
                .any(|e| e.source == "logs (current) line 136, 8 times"
                    && e.text.contains("gRPC config stream to xds-grpc closed"))
        );
        assert!(d.fails(Level::Error));
    }

    #[test]
    fn waiting_with_503_on_15021_and_nothing_wrong_around_it() {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let health = Probed::Ok(parse_readiness(&HttpResponse::new(503, "")));
        let probe = ProbeResult {
            admin: admin_waiting(health),
            logs: logs(Some("A_stderr.txt"), None),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
        assert!(d.findings[0].message.contains("15021 not ready (503)"));
        assert!(
            d.evidence
                .iter()
                .any(|e| e.source == "15021 /healthz/ready" && e.text == "HTTP 503 (not ready)")
        );
        for c in &d.checks {
            assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
        }
        // istiod's address, endpoints, NetworkPolicies, root certificate, token audience.
        assert_eq!(d.checks.len(), 5);
    }

    #[test]
    fn checks_that_cannot_be_read_say_so() {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: ProxyLogs::default(),
        };
        fn denied<T>() -> Lookup<T> {
            Lookup::Unknown("forbidden".to_string())
        }
        let context = PodContext {
            istio_endpoint_slices: denied(),
            network_policies: denied(),
            root_cert: denied(),
            ..good_context()
        };
        let d = diagnose(&pod, &context, Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
        assert_eq!(
            check_status(&d, "istiod has ready endpoints"),
            CheckStatus::Unknown
        );
        assert_eq!(check_status(&d, "no NetworkPolicy"), CheckStatus::Unknown);
        assert_eq!(check_status(&d, "ConfigMap"), CheckStatus::Unknown);
    }

    #[test]
    fn a_wrong_token_audience_fails_its_check() {
        let mut pod = pod("web-wait", Some(waiting_status()), true);
        let volumes = pod.spec.as_mut().unwrap().volumes.as_mut().unwrap();
        volumes[0] = from_json(json!({"name": "istio-token", "projected": {"sources": [
            {"serviceAccountToken": {"audience": "kubernetes.default.svc", "path": "istio-token"}}
        ]}}));
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(
            check_status(&d, "the istio-token audience"),
            CheckStatus::Fail
        );
    }

    #[test]
    fn network_policies_that_allow_istiod() {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: ProxyLogs::default(),
        };
        let allow_ns: NetworkPolicy = from_json(json!({
            "metadata": {"name": "allow-istiod", "namespace": "shop"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Egress"],
                     "egress": [
                        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}}}],
                         "ports": [{"port": 15012, "protocol": "TCP"}]},
                        {"ports": [{"port": 53, "protocol": "UDP"}]}
                     ]}
        }));
        let allow_ip: NetworkPolicy = from_json(json!({
            "metadata": {"name": "allow-ip", "namespace": "shop"},
            "spec": {"podSelector": {}, "policyTypes": ["Egress"],
                     "egress": [{"to": [{"ipBlock": {"cidr": "10.244.0.0/16"}}],
                                 "ports": [{"port": 15000, "endPort": 15100}]}]}
        }));
        let other_pods: NetworkPolicy = from_json(json!({
            "metadata": {"name": "db-only", "namespace": "shop"},
            "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Egress"]}
        }));
        for (policies, expected) in [
            (vec![deny_all_egress(), allow_ns], CheckStatus::Pass),
            (vec![deny_all_egress(), allow_ip], CheckStatus::Pass),
            (vec![other_pods], CheckStatus::Pass),
            (vec![deny_all_egress()], CheckStatus::Fail),
        ] {
            let context = PodContext {
                network_policies: Lookup::Found(policies),
                ..good_context()
            };
            let d = diagnose(&pod, &context, Some(&probe));
            assert_eq!(
                check_status(&d, "no NetworkPolicy"),
                expected,
                "{:#?}",
                d.checks
            );
        }
    }

    #[test]
    fn healthy_pod() {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let probe = ProbeResult {
            admin: admin_live("A_certs.json"),
            logs: logs(Some("C_stderr.txt"), None),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::Healthy, "{:#?}", d);
        assert_eq!(d.verdict.title, "healthy");
        assert!(d.findings.is_empty());
        assert!(!d.fails(Level::Info));
        assert!(d.evidence.iter().any(|e| e.text.starts_with("state LIVE")));
    }

    pub(crate) fn waiting_status_ready() -> serde_json::Value {
        json!({"ready": true, "started": true, "restartCount": 0, "state": running()})
    }

    #[test]
    fn an_expired_workload_certificate() {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let probe = ProbeResult {
            admin: admin_live("certs_valid_and_expired.json"),
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::CertificateProblem);
        assert_eq!(codes(&d), ["MD0105"]);
        assert_eq!(
            d.findings[0].message,
            "The workload certificate of pod shop/web expired at 2026-11-29T09:00:23Z."
        );
    }

    #[test]
    fn a_certificate_that_is_not_rotated() {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let probe = ProbeResult {
            admin: admin_live("certs_valid_and_expired.json"),
            logs: ProxyLogs::default(),
        };
        // The 24 h certificate at 21h of its life; the other one is long expired.
        let context = PodContext {
            now: Some("2026-11-30T12:00:00Z".parse().unwrap()),
            ..good_context()
        };
        let d = diagnose(&pod, &context, Some(&probe));
        assert_eq!(codes(&d), ["MD0105", "MD0105"]);
        assert!(
            d.findings[1]
                .message
                .contains("expires at 2026-11-30T15:00:23Z, with 12% of its lifetime left"),
            "{}",
            d.findings[1].message
        );
        // Earlier in its life the same certificate is fine.
        let context = PodContext {
            now: Some("2026-11-29T16:00:00Z".parse().unwrap()),
            ..good_context()
        };
        let d = diagnose(&pod, &context, Some(&probe));
        assert_eq!(codes(&d), ["MD0105"], "only the expired one");
    }

    #[test]
    fn rejected_configuration() {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let mut admin = admin_live("A_certs.json");
        // A LIVE proxy connected to istiod that refused two cluster updates.
        let mut stats = parse_stats(&fixture("A_stats_diagnosis_filter.json")).unwrap();
        stats.connected_state = Some(1);
        stats.cds.as_mut().unwrap().rejected = 2;
        admin.stats = Probed::Ok(stats);
        let probe = ProbeResult {
            admin,
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::ConfigRejected);
        assert_eq!(
            d.findings[0].message,
            "The proxy of pod shop/web rejected configuration from istiod (CDS rejected 2 update(s), LDS rejected 0)."
        );
        assert!(!d.fails(Level::Error));
        assert!(d.fails(Level::Warning));
    }

    #[test]
    fn application_not_ready_while_the_proxy_is_live() {
        let pod = pod("web", Some(waiting_status_ready()), false);
        let probe = ProbeResult {
            admin: admin_live("A_certs.json"),
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::ApplicationNotReady);
        assert_eq!(
            d.findings[0].message,
            "The proxy of pod shop/web is LIVE but container(s) [web] are not ready: the problem is in the application, not the mesh."
        );
        assert!(
            d.next_steps
                .iter()
                .any(|s| s.command.as_deref() == Some("kubectl -n shop logs web -c web"))
        );
    }

    #[test]
    fn unreachable_proxy() {
        let pod = pod("web", Some(waiting_status()), true);
        let timeout = ProbeError::Timeout {
            what: "request",
            after: std::time::Duration::from_secs(5),
        };
        let mut admin = AdminProbe::skipped("the admin port did not answer /server_info (timeout)");
        admin.server_info = Probed::Error(timeout.clone().into());
        admin.health = Probed::Error(timeout.into());
        let probe = ProbeResult {
            admin,
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::ProxyUnreachable);
        assert_eq!(codes(&d), ["MD0107"]);
        assert!(d.findings[0].message.contains("timed out after 5s"));
        // The causes of "no configuration" are still checked.
        assert_eq!(d.checks.len(), 4);
    }

    #[test]
    fn unreachable_admin_but_logs_say_no_config() {
        let pod = pod("web", Some(waiting_status()), true);
        let mut admin = AdminProbe::skipped("denied");
        admin.server_info =
            Probed::Error(ProbeError::Denied("pods/portforward is forbidden".into()).into());
        admin.health =
            Probed::Error(ProbeError::Denied("pods/portforward is forbidden".into()).into());
        let probe = ProbeResult {
            admin,
            logs: logs(Some("A_stderr.txt"), None),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
        assert!(
            d.findings[0]
                .message
                .contains("xDS stream to istiod closed"),
            "{}",
            d.findings[0].message
        );
    }

    #[test]
    fn a_ready_pod_that_cannot_be_probed_is_healthy_with_a_caveat() {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let mut admin = AdminProbe::skipped("denied");
        admin.server_info = Probed::Error(ProbeError::Denied("forbidden".into()).into());
        let probe = ProbeResult {
            admin,
            logs: ProxyLogs::default(),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::Healthy);
        assert!(d.findings.is_empty());
        assert_eq!(check_status(&d, "Envoy admin probe"), CheckStatus::Unknown);
    }

    #[test]
    fn proxy_not_started_because_the_root_cert_is_missing() {
        let mut p = pod(
            "web",
            Some(json!({"ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}})),
            true,
        );
        p.status.as_mut().unwrap().phase = Some("Pending".into());
        let context = PodContext {
            root_cert: Lookup::Missing,
            ..good_context()
        };
        let d = diagnose(&p, &context, None);
        assert_eq!(d.verdict.kind, VerdictKind::ProxyNotStarted);
        assert_eq!(codes(&d), ["MD0107"]);
        assert_eq!(
            check_status(&d, "ConfigMap istio-ca-root-cert"),
            CheckStatus::Fail
        );
    }

    #[test]
    fn not_meshed_namespace_not_labelled() {
        let context = PodContext {
            namespace: Lookup::Found(namespace("shop", json!({}))),
            ..good_context()
        };
        let d = diagnose(&pod("web", None, true), &context, None);
        assert_eq!(d.verdict.kind, VerdictKind::NotMeshed);
        assert_eq!(d.verdict.title, "not meshed: the namespace is not labelled");
        assert_eq!(codes(&d), ["IST0102"]);
        assert!(!d.fails(Level::Warning));
        assert!(d.next_steps.iter().any(|s| s.command.as_deref()
            == Some("kubectl label namespace shop istio-injection=enabled")));
    }

    #[test]
    fn not_meshed_created_before_the_label() {
        let d = diagnose(&pod("web", None, true), &good_context(), None);
        assert_eq!(
            d.verdict.title,
            "not meshed: created before injection was enabled"
        );
        assert_eq!(codes(&d), ["IST0103"]);
        assert!(d.fails(Level::Warning));
        assert!(d.next_steps.iter().any(
            |s| s.command.as_deref() == Some("kubectl -n shop rollout restart deployment/web")
        ));
    }

    #[test]
    fn not_meshed_opted_out_or_host_network() {
        let mut p = pod("web", None, true);
        p.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("sidecar.istio.io/inject".into(), "false".into());
        let d = diagnose(&p, &good_context(), None);
        assert_eq!(d.verdict.title, "not meshed: the pod opts out");
        assert!(d.findings.is_empty());

        let mut p = pod("web", None, true);
        p.spec.as_mut().unwrap().host_network = Some(true);
        let d = diagnose(&p, &good_context(), None);
        assert_eq!(d.verdict.title, "not meshed: hostNetwork");
    }

    #[test]
    fn not_meshed_no_webhook_matches() {
        let webhook: MutatingWebhookConfiguration = from_json(json!({
            "metadata": {"name": "istio-sidecar-injector-canary", "labels": {"istio.io/rev": "canary"}},
            "webhooks": [{
                "name": "rev.namespace.sidecar-injector.istio.io",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "clientConfig": {"service": {"name": "istiod-canary", "namespace": "istio-system"}},
                "namespaceSelector": {"matchExpressions": [{"key": "istio.io/rev", "operator": "In", "values": ["canary"]}]}
            }]
        }));
        let context = PodContext {
            namespace: Lookup::Found(namespace("shop", json!({"istio.io/rev": "stable"}))),
            webhooks: Lookup::Found(vec![Located::new(webhook)]),
            ..good_context()
        };
        let d = diagnose(&pod("web", None, true), &context, None);
        assert_eq!(d.verdict.title, "not meshed: no injection webhook matches");
        // Revision "stable" is served by no webhook: MD0204, as `analyze` says.
        assert_eq!(codes(&d), ["MD0204"]);
        assert!(
            d.next_steps.iter().any(|s| s.command.as_deref()
                == Some("kubectl label namespace shop istio.io/rev=canary --overwrite")),
            "{:?}",
            d.next_steps
        );
        // istio-injection=enabled with only a revisioned webhook: not a revision problem.
        let context = PodContext {
            namespace: Lookup::Found(namespace("shop", json!({"istio-injection": "enabled"}))),
            ..context
        };
        let d = diagnose(&pod("web", None, true), &context, None);
        assert_eq!(codes(&d), ["MD0103"]);
    }

    #[test]
    fn diagnosis_serializes() {
        let pod = pod("web-crash", Some(crashloop_status()), true);
        let probe = ProbeResult {
            admin: AdminProbe::skipped("not running"),
            logs: logs(None, Some("B_stderr.txt")),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["verdict"]["kind"], "bootstrap-crash");
        assert_eq!(v["pod"]["proxy"]["state"], "Waiting: CrashLoopBackOff");
        assert_eq!(v["pod"]["proxy"]["lastTermination"], "Error (exit code 1)");
        assert!(v["nextSteps"][0]["text"].is_string());
    }

    #[test]
    fn cidrs() {
        let a: IpAddr = "10.244.0.9".parse().unwrap();
        assert!(cidr_contains("10.244.0.0/16", a));
        assert!(cidr_contains("0.0.0.0/0", a));
        assert!(!cidr_contains("10.96.0.0/16", a));
        assert!(cidr_contains("10.244.0.9", a));
        assert!(!cidr_contains("fd00::/8", a));
    }
}
