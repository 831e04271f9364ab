//! `pod NAME`: one pod's verdict, with the evidence behind it, the causes checked and what to
//! do next. Pure: the pod, what the cluster said around it ([`PodContext`]) and what the probe
//! found ([`ProbeResult`]) in; a [`Diagnosis`] out. No I/O, no clock (the time is an input).

mod ambient;
mod container;
mod control_plane;
mod lifecycle;
mod live;
mod not_meshed;
mod proxy;
#[cfg(test)]
mod real_node_tests;
mod waypoint;

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde::Serialize;

use crate::envoy::admin::{CertRole, ServerState};
use crate::envoy::facts::{ProbeResult, Probed};
use crate::envoy::logs::{Family, LogMatch, Signature};
use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::{
    IST0102, IST0103, Level, MD0101, MD0102, MD0103, MD0104, MD0105, MD0106, MD0107, MD0108,
    MD0109, MD0110, MD0111, MD0112, MD0113, MD0116, MD0403, MD0404,
};
use crate::istio::constants::{ISTIO_NAMESPACE, ROOT_CERT_CONFIG_MAP, TOKEN_AUDIENCE, XDS_PORT};
use crate::istio::injection::{self, Decision, PodFacts, REVISION_LABEL, Skip};
use crate::istio::revisions;
use crate::istio::sidecar;
use crate::kube::selector;
use crate::kube::snapshot::{Located, Object};

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
    /// ztunnel's pods (label app=ztunnel, every namespace), for ambient pods.
    pub ztunnel_pods: Lookup<Vec<Pod>>,
    /// The pods of Istio's CNI node agent (label k8s-app=istio-cni-node, every namespace).
    pub cni_pods: Lookup<Vec<Pod>>,
    /// For an ambient pod: its waypoints and the policies ztunnel enforces for it.
    pub ambient: AmbientContext,
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
            ztunnel_pods: unknown(),
            cni_pods: unknown(),
            ambient: AmbientContext::default(),
            now: None,
        }
    }
}

/// What an ambient pod's waypoints and policies are judged from. Lists that could not be
/// read are `Unknown`.
#[derive(Debug)]
pub struct AmbientContext {
    /// The Services of the pod's namespace (those that select it may name a waypoint).
    pub services: Lookup<Vec<k8s_openapi::api::core::v1::Service>>,
    /// The Gateway API Gateways of every namespace, with their status (`Found(empty)` when the
    /// cluster does not serve the kind: no waypoint can exist).
    pub gateways: Lookup<Vec<crate::kube::snapshot::ConfigObject>>,
    /// The pods labelled `gateway.networking.k8s.io/gateway-name` (a Gateway's proxies).
    pub gateway_pods: Lookup<Vec<Pod>>,
    /// The AuthorizationPolicies of the pod's namespace and of the root namespace.
    pub authorization_policies: Lookup<Vec<crate::kube::snapshot::ConfigObject>>,
    /// The objects only a proxy applies ([`PROXY_ONLY_CONFIG`]), of every namespace.
    pub proxy_only_config: Lookup<Vec<crate::kube::snapshot::ConfigObject>>,
    /// The mesh's root namespace: its AuthorizationPolicies without selector apply mesh-wide.
    pub root_namespace: String,
}

/// The kinds besides AuthorizationPolicy that only a proxy applies: an ambient pod's are
/// judged by the waypoint check ([`AmbientContext::proxy_only_config`]).
pub const PROXY_ONLY_CONFIG: &[crate::kube::kind::Kind] = &[
    crate::kube::kind::Kind::RequestAuthentications,
    crate::kube::kind::Kind::Telemetries,
    crate::kube::kind::Kind::WasmPlugins,
    crate::kube::kind::Kind::VirtualServices,
    crate::kube::kind::Kind::HttpRoutes,
    crate::kube::kind::Kind::GrpcRoutes,
];

impl Default for AmbientContext {
    fn default() -> Self {
        fn unknown<T>() -> Lookup<T> {
            Lookup::Unknown("not read".to_string())
        }
        AmbientContext {
            services: unknown(),
            gateways: unknown(),
            gateway_pods: unknown(),
            authorization_policies: unknown(),
            proxy_only_config: unknown(),
            root_namespace: ISTIO_NAMESPACE.to_string(),
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
    /// The pod is being deleted.
    Terminating,
    /// The kubelet evicted the pod.
    Evicted,
    /// The pod has ended: phase `Succeeded` or `Failed`.
    Ended,
    /// The application exited and the kubelet is stopping the native sidecar.
    Completing,
    /// The application of a Job pod exited, a classic istio-proxy keeps the pod running.
    JobHeldBySidecar,
    /// Ambient: redirected by the CNI agent, a ready ztunnel on its node.
    AmbientCaptured,
    /// Ambient asked for, but nothing carries the pod's traffic.
    AmbientNotCaptured,
    /// Ambient asked for, and the pod has a sidecar too.
    AmbientWithSidecar,
    /// Captured by ambient, but a waypoint it uses carries no traffic.
    WaypointUnavailable,
    /// Captured by ambient, but an AuthorizationPolicy for it is not enforced as written.
    AmbientPolicyGap,
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

/// True for a pod without sidecar that asks for ambient mode and is not ending: its
/// diagnosis reads [`PodContext::ambient`] too.
pub fn is_ambient_pod(pod: &Pod, context: &PodContext) -> bool {
    let ns_labels = context
        .namespace
        .found()
        .and_then(|n| n.metadata.labels.as_ref());
    pod.spec
        .as_ref()
        .and_then(sidecar::proxy_container)
        .is_none()
        && matches!(
            crate::istio::ambient::request(ns_labels, pod.metadata.labels.as_ref()),
            crate::istio::ambient::Request::Asked(_)
        )
        && !crate::kube::lifecycle::is_ending(pod)
}

/// Builds the diagnosis.
pub fn diagnose(pod: &Pod, context: &PodContext, probe: Option<&ProbeResult>) -> Diagnosis {
    let mut d = Builder::new(pod, context, probe);
    let spec = pod.spec.as_ref();
    if d.ending() {
        return d.finish();
    }
    let ambient = d.ambient_request();
    match (spec.and_then(sidecar::proxy_container), &ambient) {
        (None, crate::istio::ambient::Request::Asked(by)) => d.ambient(by),
        (None, crate::istio::ambient::Request::OptedOut) => d.ambient_opted_out(),
        (None, _) => d.not_meshed(),
        (Some(_), crate::istio::ambient::Request::Asked(by)) => {
            d.meshed();
            d.ambient_with_sidecar(by);
        }
        (Some(_), _) => d.meshed(),
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

    fn finish(mut self) -> Diagnosis {
        let verdict = self.verdict.take().unwrap_or_else(|| Verdict {
            kind: VerdictKind::Healthy,
            title: "healthy".to_string(),
            summary: "Nothing wrong was found.".to_string(),
        });
        let ambient_pod = is_ambient_pod(self.pod, self.ctx);
        let not_read = not_read(self.ctx, &self.namespace, ambient_pod);
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
fn not_read(ctx: &PodContext, namespace: &str, ambient: bool) -> Vec<NotRead> {
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
    if ambient {
        add(
            "ztunnel pods (app=ztunnel)".to_string(),
            reason(&ctx.ztunnel_pods),
        );
        add(
            "istio-cni-node pods (k8s-app=istio-cni-node)".to_string(),
            reason(&ctx.cni_pods),
        );
        add(
            format!("services in {namespace}"),
            reason(&ctx.ambient.services),
        );
        add(
            "gateways.gateway.networking.k8s.io (waypoints)".to_string(),
            reason(&ctx.ambient.gateways),
        );
        add(
            "waypoint pods (gateway.networking.k8s.io/gateway-name)".to_string(),
            reason(&ctx.ambient.gateway_pods),
        );
        add(
            "authorizationpolicies.security.istio.io".to_string(),
            reason(&ctx.ambient.authorization_policies),
        );
    }
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::envoy::logs::LogSource;
    use crate::probe::admin::{
        parse_bootstrap, parse_certs, parse_clusters, parse_readiness, parse_server_info,
        parse_stats,
    };
    use crate::probe::transport::ProbeError;
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
            ztunnel_pods: Lookup::Found(Vec::new()),
            cni_pods: Lookup::Found(Vec::new()),
            ambient: AmbientContext {
                services: Lookup::Found(Vec::new()),
                gateways: Lookup::Found(Vec::new()),
                gateway_pods: Lookup::Found(Vec::new()),
                authorization_policies: Lookup::Found(Vec::new()),
                proxy_only_config: Lookup::Found(Vec::new()),
                root_namespace: ISTIO_NAMESPACE.to_string(),
            },
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
            ready: Probed::Ok(parse_readiness(503, &fixture("A_ready.txt"))),
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
            ready: Probed::Ok(parse_readiness(200, &fixture("C_ready.txt"))),
            health: Probed::Ok(parse_readiness(200, &fixture("C_17021__healthz_ready.txt"))),
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
        codes_of(d)
    }

    pub(crate) fn codes_of(d: &Diagnosis) -> Vec<&str> {
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
            crate::commands::pod::render::text(&d, None, &crate::output::style::Styles::new(false));
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
    fn waiting_proxy_read_while_it_retries_is_not_called_connected() {
        // Envoy sets control_plane.connected_state to 1 when it starts each new xDS stream, before
        // the connection is refused: a read in that moment sees 1 with the failures counted.
        let pod = pod("web-wait", Some(waiting_status()), true);
        let mut admin = admin_waiting(refused_15021());
        if let Probed::Ok(stats) = &mut admin.stats {
            stats.connected_state = Some(1);
        }
        let probe = ProbeResult {
            admin,
            logs: logs(Some("A_stderr.txt"), None),
        };
        let d = diagnose(&pod, &good_context(), Some(&probe));
        assert_eq!(d.verdict.kind, VerdictKind::WaitingForControlPlane);
        assert_eq!(
            d.findings[0].message,
            "The sidecar of pod shop/web-wait is running but has no configuration from istiod: state PRE_INITIALIZING, 15021 not ready (connection refused), not connected to istiod yet: 7 xDS stream(s) failed, a new one started (control_plane.connected_state 1)"
        );
        assert!(
            d.evidence.iter().any(|e| e.text
                == "control_plane.connected_state 1 (not connected to istiod yet: 7 xDS stream(s) failed, a new one started)"),
            "{:?}",
            d.evidence
        );
        assert!(
            !d.evidence
                .iter()
                .any(|e| e.text.contains("(connected to istiod")),
            "{:?}",
            d.evidence
        );
    }

    #[test]
    fn waiting_with_503_on_15021_and_nothing_wrong_around_it() {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let health = Probed::Ok(parse_readiness(503, ""));
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
        let cds = stats.cds.as_mut().unwrap();
        (cds.success, cds.failure, cds.rejected) = (1, 0, 2);
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
}
