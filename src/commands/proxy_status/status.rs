//! `proxy-status`, pure: merge what each istiod says (syncz) with the pod list into one row per
//! proxy, including the rows istioctl cannot show: pods that have a sidecar but are connected to
//! no istiod, with the likely reason read from the pod's status. No I/O, no clock (the caller
//! passes `now`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::formats::text::one_line;
use crate::istio::injection::REVISION_LABEL;
use crate::istio::sidecar::{self, PROXY_CONTAINER};
use crate::istio::syncz::{ProxySync, SyncState, Syncz, TypeStatus};
use crate::kube::snapshot::Object;

/// What one istiod answered (or why it did not).
#[derive(Clone, Debug)]
pub struct IstiodAnswer {
    /// The istiod pod name (or `--istiod-name`, or the URL).
    pub name: String,
    /// Its Istio version (`/version`, the xDS identity, or the image tag).
    pub version: Option<String>,
    /// Its revision (`istio.io/rev` label), when known.
    pub revision: Option<String>,
    /// How it was reached: "port-forward to istio-system/istiod-x:15014", a URL, a file.
    pub via: String,
    pub syncz: Result<Syncz, String>,
}

/// The state of one row, worst last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowState {
    /// The pod is finished or being deleted: no proxy is expected.
    NotRunning,
    Synced,
    /// Connected, but no xDS type subscribed yet.
    Connected,
    /// The pod is young and its proxy is still starting.
    Starting,
    NotSent,
    Stale,
    /// Not found in any answer, but an istiod could not be asked.
    Unknown,
    Error,
    NotConnected,
}

impl RowState {
    pub fn as_str(self) -> &'static str {
        match self {
            RowState::NotRunning => "NOT RUNNING",
            RowState::Synced => "SYNCED",
            RowState::Connected => "CONNECTED",
            RowState::Starting => "STARTING",
            RowState::NotSent => "NOT SENT",
            RowState::Stale => "STALE",
            RowState::Unknown => "UNKNOWN",
            RowState::Error => "ERROR",
            RowState::NotConnected => "NOT CONNECTED",
        }
    }

    /// The JSON name (`NOT_CONNECTED`).
    pub fn json_name(self) -> String {
        self.as_str().replace(' ', "_")
    }

    fn from_sync(state: Option<SyncState>) -> Self {
        match state {
            None => RowState::Connected,
            Some(SyncState::Synced) => RowState::Synced,
            Some(SyncState::NotSent) => RowState::NotSent,
            Some(SyncState::Stale) => RowState::Stale,
            Some(SyncState::Error) => RowState::Error,
        }
    }
}

/// Proxy version vs its istiod's version, when their minor versions differ.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skew {
    pub proxy: String,
    pub istiod: String,
    /// How many minor versions the proxy is behind istiod (negative: ahead).
    pub minors_behind: i64,
    /// Istio supports a data plane one minor version behind its control plane, never ahead.
    pub supported: bool,
}

/// `1.31.0-dev-eed52ebb` -> (1, 31).
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let version = version.strip_prefix('v').unwrap_or(version);
    let mut parts = version.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

pub fn skew(proxy: &str, istiod: &str) -> Option<Skew> {
    let (pm, pn) = major_minor(proxy)?;
    let (im, inn) = major_minor(istiod)?;
    if (pm, pn) == (im, inn) {
        return None;
    }
    let minors_behind = if pm == im {
        inn as i64 - pn as i64
    } else if pm < im {
        // Across a major version: never supported; say "behind" by a lot.
        100
    } else {
        -100
    };
    Some(Skew {
        proxy: proxy.to_string(),
        istiod: istiod.to_string(),
        minors_behind,
        supported: minors_behind == 1,
    })
}

/// The version an image tag names: `istio/proxyv2:1.30.3-distroless` -> `1.30.3`.
pub fn image_tag_version(image: &str) -> Option<String> {
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    let (_, tag) = last.split_once(':')?;
    let tag = tag
        .strip_suffix("-distroless")
        .or_else(|| tag.strip_suffix("-debug"))
        .unwrap_or(tag);
    (!tag.is_empty()).then(|| tag.to_string())
}

/// Where a row's proxy version came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionSource {
    /// The proxy's own `ISTIO_VERSION`, as istiod reports it.
    Istiod,
    /// The istio-proxy image tag (the proxy is not connected).
    Image,
}

impl VersionSource {
    pub fn as_str(self) -> &'static str {
        match self {
            VersionSource::Istiod => "istiod",
            VersionSource::Image => "image",
        }
    }
}

/// The pod behind a row, in `kubectl get pod` terms.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSummary {
    pub phase: String,
    /// `2/2`
    pub ready: String,
    pub proxy_restarts: i32,
    pub native_sidecar: bool,
    /// True when istio-proxy runs (a probe can reach it).
    pub proxy_running: bool,
}

/// What `--probe` read from the proxy's Envoy admin (`/server_info`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EnvoyState {
    /// LIVE, PRE_INITIALIZING, INITIALIZING, DRAINING.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why the admin port gave no state (refused, timeout, denied...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub via: String,
}

impl EnvoyState {
    pub fn is_live(&self) -> bool {
        self.state.as_deref() == Some("LIVE")
    }
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The proxy ID (`POD.NAMESPACE`).
    pub name: String,
    pub namespace: Option<String>,
    /// The pod's name when a pod matches.
    pub pod: Option<String>,
    pub cluster: Option<String>,
    pub istiod: Option<String>,
    pub istiod_version: Option<String>,
    pub version: Option<String>,
    pub version_source: Option<VersionSource>,
    pub proxy_type: Option<String>,
    pub state: RowState,
    /// Per xDS type (connected rows), in column order.
    pub types: Vec<TypeStatus>,
    /// Why: the pod status for unconnected rows, the rejection for ERROR rows.
    pub reason: Option<String>,
    pub skew: Option<Skew>,
    pub pod_status: Option<PodSummary>,
    pub envoy: Option<EnvoyState>,
}

impl Row {
    pub fn connected(&self) -> bool {
        self.istiod.is_some()
    }

    fn has_type(&self, state: SyncState) -> bool {
        self.types.iter().any(|t| t.state == state)
    }
}

/// What makes `proxy-status` exit 79.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailOn {
    /// A type pushed but not acknowledged
    Stale,
    /// A type the proxy rejected (NACK)
    Error,
    /// A type asked for but never sent
    NotSent,
    /// A sidecar pod connected to no istiod (NOT CONNECTED), or not found while an istiod could not be asked (UNKNOWN)
    Disconnected,
    /// A proxy version Istio does not support with its istiod (2+ minors behind, or ahead)
    Skew,
    /// With --probe: Envoy not LIVE, or its admin port not answering
    NotLive,
    /// Never fail
    None,
}

impl FailOn {
    pub const DEFAULT: &'static str = "stale,error,disconnected";

    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Stale => "stale",
            FailOn::Error => "error",
            FailOn::NotSent => "not-sent",
            FailOn::Disconnected => "disconnected",
            FailOn::Skew => "skew",
            FailOn::NotLive => "not-live",
            FailOn::None => "none",
        }
    }

    /// True when this row trips this condition.
    pub fn matches(self, row: &Row) -> bool {
        match self {
            FailOn::Stale => row.has_type(SyncState::Stale),
            FailOn::Error => row.has_type(SyncState::Error),
            FailOn::NotSent => row.has_type(SyncState::NotSent),
            FailOn::Disconnected => {
                matches!(row.state, RowState::NotConnected | RowState::Unknown)
            }
            FailOn::Skew => row.skew.as_ref().is_some_and(|s| !s.supported),
            FailOn::NotLive => row.envoy.as_ref().is_some_and(|e| !e.is_live()),
            FailOn::None => false,
        }
    }
}

/// The istiods, summarised for the report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IstiodSummary {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    pub via: String,
    pub proxies: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Everything `proxy-status` shows.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub istiods: Vec<IstiodSummary>,
    /// Sorted by name, then istiod.
    pub rows: Vec<Row>,
    /// False when the pods could not be listed (offline, or access denied): then there are no
    /// unconnected rows.
    pub pods_listed: bool,
    /// Why no istiod could be asked at all, if so.
    pub no_istiod: Option<String>,
}

impl Report {
    /// The rows that trip any of the conditions.
    pub fn failing<'a>(&'a self, fail_on: &'a [FailOn]) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows
            .iter()
            .filter(move |r| fail_on.iter().any(|f| f.matches(r)))
    }

    /// Rows per state, worst last.
    pub fn counts(&self) -> BTreeMap<RowState, usize> {
        let mut counts = BTreeMap::new();
        for row in &self.rows {
            *counts.entry(row.state).or_insert(0) += 1;
        }
        counts
    }
}

/// The inputs of [`build`].
pub struct Inputs<'a> {
    pub istiods: &'a [IstiodAnswer],
    /// `None` when the pods could not be listed.
    pub pods: Option<&'a [PodFacts]>,
    /// Only proxies of this namespace.
    pub namespace: Option<&'a str>,
    /// Why there is no istiod to ask (no running pod with the label), if so.
    pub no_istiod: Option<String>,
}

/// What [`build`] and `--probe` need of one pod, read from it once: the whole pod is not kept
/// (10,000 pods as k8s-openapi structs are ~100 MB; these, a tenth of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFacts {
    pub name: String,
    pub namespace: Option<String>,
    pub ip: Option<String>,
    /// `None` when the pod has no istio-proxy container.
    pub sidecar: Option<SidecarFacts>,
}

/// What the rows say of a pod with a sidecar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidecarFacts {
    /// The state and reason of its row when no istiod knows the proxy ([`unconnected`]).
    pub unconnected: (RowState, String),
    /// istio-proxy runs and is ready.
    pub proxy_up: bool,
    pub revision: Option<String>,
    /// The version of the istio-proxy image's tag.
    pub image_version: Option<String>,
    pub proxy_type: &'static str,
    pub summary: PodSummary,
}

impl PodFacts {
    /// The facts of one pod, judged at `now` (its age, how long its proxy has run).
    pub fn of(pod: &Pod, now: jiff::Timestamp) -> Self {
        let sidecar = pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .map(|proxy| SidecarFacts {
                unconnected: unconnected(pod, now),
                proxy_up: proxy_up(pod),
                revision: pod_revision(pod).map(str::to_string),
                image_version: image_tag_version(proxy.image()),
                proxy_type: pod_proxy_type(pod),
                summary: pod_summary(pod),
            });
        PodFacts {
            name: pod.name().to_string(),
            namespace: pod.namespace().map(str::to_string),
            ip: pod.status.as_ref().and_then(|s| s.pod_ip.clone()),
            sidecar,
        }
    }
}

/// Merges the istiods' answers with the pod list.
pub fn build(inputs: &Inputs<'_>) -> Report {
    let in_scope = |ns: Option<&str>| inputs.namespace.is_none_or(|want| ns == Some(want));
    let mut report = Report {
        pods_listed: inputs.pods.is_some(),
        no_istiod: inputs.no_istiod.clone(),
        ..Report::default()
    };

    // Pods with a sidecar, by (namespace, name).
    let mut pods: BTreeMap<(&str, &str), (&PodFacts, &SidecarFacts)> = BTreeMap::new();
    for pod in inputs.pods.into_iter().flatten() {
        let Some(sidecar) = pod.sidecar.as_ref() else {
            continue;
        };
        let namespace = pod.namespace.as_deref().unwrap_or("default");
        if in_scope(Some(namespace)) {
            pods.insert((namespace, pod.name.as_str()), (pod, sidecar));
        }
    }

    let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut failed_istiods = Vec::new();
    for istiod in inputs.istiods {
        let (proxies, error) = match &istiod.syncz {
            Ok(syncz) => (syncz.proxies.as_slice(), None),
            Err(e) => {
                failed_istiods.push(istiod.name.as_str());
                (&[][..], Some(e.clone()))
            }
        };
        let mut count = 0;
        for proxy in proxies {
            let namespace = proxy
                .namespace
                .as_deref()
                .or_else(|| proxy.pod_and_namespace().map(|(_, ns)| ns));
            if !in_scope(namespace) {
                continue;
            }
            count += 1;
            let pod = proxy
                .pod_and_namespace()
                .and_then(|(name, ns)| pods.get(&(ns, name)).copied());
            if let Some((name, ns)) = proxy.pod_and_namespace() {
                seen.insert((ns, name));
            }
            report
                .rows
                .push(connected_row(proxy, istiod, pod, inputs.pods.is_some()));
        }
        report.istiods.push(IstiodSummary {
            name: istiod.name.clone(),
            version: istiod.version.clone(),
            revision: istiod.revision.clone(),
            via: istiod.via.clone(),
            proxies: count,
            error,
        });
    }

    let newest_istiod = inputs
        .istiods
        .iter()
        .filter(|i| i.syncz.is_ok())
        .filter_map(|i| i.version.as_deref())
        .max_by_key(|v| major_minor(v));
    let revisions: BTreeSet<&str> = inputs
        .istiods
        .iter()
        .filter_map(|i| i.revision.as_deref())
        .collect();
    for (&(namespace, name), &(_, pod)) in &pods {
        if seen.contains(&(namespace, name)) {
            continue;
        }
        let (state, mut reason) = pod.unconnected.clone();
        let mut state = state;
        if matches!(state, RowState::NotConnected | RowState::Starting) {
            if let Some(why) = &inputs.no_istiod {
                state = RowState::NotConnected;
                reason = format!("{why}; {reason}");
            } else if state == RowState::NotConnected && !failed_istiods.is_empty() && pod.proxy_up
            {
                state = RowState::Unknown;
                reason = format!("{reason}; {} could not be asked", failed_istiods.join(", "));
            } else if let Some(rev) = pod.revision.as_deref()
                && !revisions.is_empty()
                && !revisions.contains(rev)
            {
                reason = format!(
                    "{reason}; it uses revision {rev:?}, and no istiod of that revision was asked"
                );
            }
        }
        let version = pod.image_version.clone();
        report.rows.push(Row {
            name: format!("{name}.{namespace}"),
            namespace: Some(namespace.to_string()),
            pod: Some(name.to_string()),
            cluster: None,
            istiod: None,
            istiod_version: None,
            skew: version
                .as_deref()
                .zip(newest_istiod)
                .and_then(|(p, i)| skew(p, i)),
            version_source: version.as_ref().map(|_| VersionSource::Image),
            version,
            proxy_type: Some(pod.proxy_type.to_string()),
            state,
            types: Vec::new(),
            reason: Some(reason),
            pod_status: Some(pod.summary.clone()),
            envoy: None,
        });
    }
    report
        .rows
        .sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.istiod.cmp(&b.istiod)));
    report
}

fn connected_row(
    proxy: &ProxySync,
    istiod: &IstiodAnswer,
    pod: Option<(&PodFacts, &SidecarFacts)>,
    pods_listed: bool,
) -> Row {
    let state = RowState::from_sync(proxy.worst());
    let reason = match state {
        RowState::Error => Some(
            proxy
                .types
                .iter()
                .filter(|t| t.state == SyncState::Error)
                .map(|t| {
                    // The first line of Envoy's message, cut: the whole text is in the types.
                    let first = t.error.as_deref().and_then(|e| e.lines().next());
                    format!(
                        "{} rejected: {}",
                        t.short(),
                        one_line(first.unwrap_or("no details"), 160)
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        RowState::Stale => {
            let stale: Vec<&str> = proxy
                .types
                .iter()
                .filter(|t| t.state == SyncState::Stale)
                .map(TypeStatus::short)
                .collect();
            Some(format!("{} pushed, not acknowledged yet", stale.join(",")))
        }
        RowState::NotSent => {
            let not_sent: Vec<&str> = proxy
                .types
                .iter()
                .filter(|t| t.state == SyncState::NotSent)
                .map(TypeStatus::short)
                .collect();
            Some(format!("{} asked for, not sent yet", not_sent.join(",")))
        }
        _ => None,
    };
    let reason = match (reason, pod, pods_listed, proxy.pod_and_namespace()) {
        (reason, None, true, Some((name, ns))) => {
            let note = format!("no pod {name} in {ns} (a VM, or a deleted pod)");
            Some(match reason {
                Some(r) => format!("{r}; {note}"),
                None => note,
            })
        }
        (reason, ..) => reason,
    };
    Row {
        name: proxy.id.clone(),
        namespace: proxy.namespace.clone(),
        pod: pod.map(|(p, _)| p.name.clone()),
        cluster: proxy.cluster_id.clone(),
        istiod: Some(istiod.name.clone()),
        istiod_version: istiod.version.clone(),
        version: proxy.istio_version.clone(),
        version_source: proxy.istio_version.as_ref().map(|_| VersionSource::Istiod),
        proxy_type: proxy.proxy_type.clone(),
        state,
        types: proxy.types.clone(),
        reason,
        skew: proxy
            .istio_version
            .as_deref()
            .zip(istiod.version.as_deref())
            .and_then(|(p, i)| skew(p, i)),
        pod_status: pod.map(|(_, s)| s.summary.clone()),
        envoy: None,
    }
}

/// The proxy type istiod would give the pod's proxy, from what made the pod: ztunnel's
/// DaemonSet (`app=ztunnel`), istiod's waypoint controller (`gateway.istio.io/managed:
/// istio.io-mesh-controller`), a gateway (`pilot-agent proxy router`), else a sidecar.
fn pod_proxy_type(pod: &Pod) -> &'static str {
    if pod.label("app") == Some("ztunnel") {
        return "ztunnel";
    }
    if pod.label("gateway.istio.io/managed") == Some("istio.io-mesh-controller") {
        return "waypoint";
    }
    let router = pod
        .spec
        .as_ref()
        .and_then(sidecar::proxy_container)
        .and_then(|c| c.container.args.as_ref())
        .is_some_and(|args| args.iter().any(|a| a == "router"));
    if router { "router" } else { "sidecar" }
}

fn pod_revision(pod: &Pod) -> Option<&str> {
    pod.label(REVISION_LABEL)
        .or_else(|| pod.annotation(REVISION_LABEL))
        .filter(|r| !r.is_empty())
}

/// True when istio-proxy runs and is ready: the pod looks fine from the API, so only istiod's
/// answer can tell whether it is connected.
fn proxy_up(pod: &Pod) -> bool {
    sidecar::proxy_status(pod).is_some_and(|s| {
        s.ready
            && s.state
                .as_ref()
                .and_then(|st| st.running.as_ref())
                .is_some()
    })
}

fn pod_summary(pod: &Pod) -> PodSummary {
    let status = pod.status.as_ref();
    let statuses = status.and_then(|s| s.container_statuses.as_ref());
    let total = pod.spec.as_ref().map_or(0, |s| {
        s.containers.len()
            + s.init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"))
                .count()
    });
    let native = pod
        .spec
        .as_ref()
        .and_then(sidecar::proxy_container)
        .is_some_and(|c| c.native);
    let ready = statuses.into_iter().flatten().filter(|s| s.ready).count()
        + status
            .and_then(|s| s.init_container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|s| s.ready && s.started == Some(true))
            .filter(|s| {
                pod.spec.as_ref().is_some_and(|spec| {
                    spec.init_containers
                        .iter()
                        .flatten()
                        .any(|c| c.name == s.name && c.restart_policy.as_deref() == Some("Always"))
                })
            })
            .count();
    let proxy = sidecar::proxy_status(pod);
    PodSummary {
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".to_string()),
        ready: format!("{ready}/{total}"),
        proxy_restarts: proxy.map_or(0, |s| s.restart_count),
        native_sidecar: native,
        proxy_running: proxy
            .and_then(|s| s.state.as_ref())
            .and_then(|s| s.running.as_ref())
            .is_some(),
    }
}

fn age_seconds(pod: &Pod, now: jiff::Timestamp) -> Option<i64> {
    let created = pod.metadata.creation_timestamp.as_ref()?.0;
    Some(now.as_second() - created.as_second())
}

/// kubectl's short duration (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`): `45s`,
fn container_problem(status: &ContainerStatus) -> Option<String> {
    let state = status.state.as_ref()?;
    if let Some(waiting) = &state.waiting {
        let reason = waiting.reason.as_deref().unwrap_or("waiting");
        let mut text = reason.to_string();
        let mut details = Vec::new();
        if status.restart_count > 0 {
            details.push(format!(
                "{} restart{}",
                status.restart_count,
                if status.restart_count == 1 { "" } else { "s" }
            ));
        }
        if let Some(last) = status
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
        {
            details.push(match &last.reason {
                Some(r) => format!("last exit code {} ({r})", last.exit_code),
                None => format!("last exit code {}", last.exit_code),
            });
        }
        if !matches!(
            reason,
            "CrashLoopBackOff" | "ContainerCreating" | "PodInitializing"
        ) && let Some(message) = waiting.message.as_deref().filter(|m| !m.is_empty())
        {
            details.push(one_line(message, 120));
        }
        if !details.is_empty() {
            text = format!("{text} ({})", details.join(", "));
        }
        return Some(text);
    }
    if let Some(terminated) = &state.terminated {
        return Some(match &terminated.reason {
            Some(r) => format!("terminated, exit code {} ({r})", terminated.exit_code),
            None => format!("terminated, exit code {}", terminated.exit_code),
        });
    }
    None
}

/// The state and likely reason of a pod whose sidecar no istiod reports.
pub fn unconnected(pod: &Pod, now: jiff::Timestamp) -> (RowState, String) {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Unknown");
    if pod.metadata.deletion_timestamp.is_some() {
        return (RowState::NotRunning, "pod is terminating".to_string());
    }
    if matches!(phase, "Succeeded" | "Failed") {
        let mut reason = format!("pod {phase}");
        if let Some(r) = status.and_then(|s| s.reason.as_deref()) {
            reason.push_str(&format!(" ({r})"));
        }
        return (RowState::NotRunning, reason);
    }
    let grace = sidecar::startup_grace_seconds(pod);
    let young = age_seconds(pod, now).is_some_and(|a| a < grace);
    let age = age_seconds(pod, now)
        .map(|a| format!(" for {}", crate::formats::duration::human_duration(a)))
        .unwrap_or_default();

    if phase == "Pending" {
        if let Some(unscheduled) = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        {
            let mut reason = format!(
                "pod Pending{age}: not scheduled ({})",
                unscheduled.reason.as_deref().unwrap_or("Unschedulable")
            );
            if let Some(m) = unscheduled.message.as_deref().filter(|m| !m.is_empty()) {
                reason.push_str(&format!(": {}", one_line(m, 120)));
            }
            return (RowState::NotConnected, reason);
        }
        // An init container that is not a native sidecar and has not finished blocks the pod.
        let native: BTreeSet<&str> = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"))
            .map(|c| c.name.as_str())
            .collect();
        for init in status
            .and_then(|s| s.init_container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|s| !native.contains(s.name.as_str()))
        {
            let done = init
                .state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_some_and(|t| t.exit_code == 0);
            if done {
                continue;
            }
            if let Some(problem) = container_problem(init) {
                let benign = problem.starts_with("PodInitializing")
                    || problem.starts_with("ContainerCreating");
                let state = if benign && young {
                    RowState::Starting
                } else {
                    RowState::NotConnected
                };
                return (
                    state,
                    format!("pod Pending{age}: init container {} {problem}", init.name),
                );
            }
        }
        let proxy = sidecar::proxy_status(pod).and_then(container_problem);
        return match proxy {
            Some(problem) => {
                let benign = problem.starts_with("ContainerCreating")
                    || problem.starts_with("PodInitializing");
                let state = if benign && young {
                    RowState::Starting
                } else {
                    RowState::NotConnected
                };
                (
                    state,
                    format!("pod Pending{age}: {PROXY_CONTAINER} {problem}"),
                )
            }
            None if young => (RowState::Starting, format!("pod Pending{age}")),
            None => (RowState::NotConnected, format!("pod Pending{age}")),
        };
    }

    let Some(proxy) = sidecar::proxy_status(pod) else {
        let state = if young {
            RowState::Starting
        } else {
            RowState::NotConnected
        };
        return (
            state,
            format!("pod {phase}: {PROXY_CONTAINER} has no status yet"),
        );
    };
    if let Some(problem) = container_problem(proxy) {
        return (
            RowState::NotConnected,
            format!("{PROXY_CONTAINER} {problem}"),
        );
    }
    let started = proxy
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.as_ref())
        .map(|t| now.as_second() - t.0.as_second());
    let proxy_young = started.is_some_and(|s| s < grace) && proxy.restart_count == 0;
    if !proxy.ready {
        // ztunnel is no Envoy: it is not ready until it has its workloads from istiod.
        let what = if pod_proxy_type(pod) == "ztunnel" {
            "ztunnel has no workload configuration from istiod"
        } else {
            "Envoy has no configuration from istiod"
        };
        let reason = format!(
            "{PROXY_CONTAINER} running{} but not ready: {what}",
            started
                .map(|s| format!(" for {}", crate::formats::duration::human_duration(s)))
                .unwrap_or_default()
        );
        let state = if proxy_young {
            RowState::Starting
        } else {
            RowState::NotConnected
        };
        return (state, reason);
    }
    (
        RowState::NotConnected,
        format!("{PROXY_CONTAINER} ready, but unknown to every istiod asked"),
    )
}

/// Adds what `--probe` read to a row, and sharpens the reason of an unconnected one.
pub fn attach_probe(row: &mut Row, envoy: EnvoyState) {
    if matches!(row.state, RowState::NotConnected | RowState::Unknown)
        && row.pod_status.as_ref().is_some_and(|p| p.proxy_running)
    {
        let detail = match (envoy.state.as_deref(), envoy.error.as_deref()) {
            (Some("PRE_INITIALIZING"), _) => {
                Some("Envoy PRE_INITIALIZING (never configured by istiod)".to_string())
            }
            (Some("INITIALIZING"), _) => {
                Some("Envoy INITIALIZING (waits for the rest of its configuration)".to_string())
            }
            (Some("LIVE"), _) => {
                Some("Envoy LIVE (configured by a control plane that was not asked)".to_string())
            }
            (Some(other), _) => Some(format!("Envoy {other}")),
            (None, Some(error)) => Some(format!("Envoy's admin port did not answer: {error}")),
            (None, None) => None,
        };
        // What Envoy says first: it is the sharper half, and the table cuts long reasons.
        if let Some(detail) = detail {
            row.reason = Some(match row.reason.take() {
                Some(r) => format!("{detail}; {r}"),
                None => detail,
            });
        }
    }
    row.envoy = Some(envoy);
}

/// True when `--probe` should ask this row's Envoy: a pod whose istio-proxy runs.
pub fn probe_target(row: &Row) -> Option<(&str, &str)> {
    let pod = row.pod.as_deref()?;
    let namespace = row.namespace.as_deref()?;
    // ztunnel has no Envoy admin port to probe.
    if row.proxy_type.as_deref() == Some("ztunnel") {
        return None;
    }
    row.pod_status
        .as_ref()
        .is_some_and(|p| p.proxy_running)
        .then_some((namespace, pod))
}

/// Keeps only the row(s) of one proxy: `NAME` (with the namespace given apart), `NAME.NAMESPACE`
/// or `pod/NAME`. Returns false when nothing matched.
pub fn retain_proxy(report: &mut Report, wanted: &str, namespace: Option<&str>) -> bool {
    let wanted = wanted
        .strip_prefix("pod/")
        .or_else(|| wanted.strip_prefix("pods/"))
        .unwrap_or(wanted);
    let matches = |row: &Row| {
        if row.name == wanted {
            return true;
        }
        let pod = row
            .pod
            .as_deref()
            .or_else(|| row.name.rsplit_once('.').map(|(p, _)| p));
        pod == Some(wanted) && namespace.is_none_or(|ns| row.namespace.as_deref() == Some(ns))
    };
    report.rows.retain(matches);
    !report.rows.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::istio::syncz;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        "2026-11-29T15:50:00Z".parse().unwrap()
    }

    /// `versionSkew` and `podStatus` of a row in `-o json`, key for key.
    #[test]
    fn skew_and_pod_status_as_json() {
        let skew = Skew {
            proxy: "1.22.0".into(),
            istiod: "1.24.1".into(),
            minors_behind: 2,
            supported: false,
        };
        assert_eq!(
            serde_json::to_string(&skew).unwrap(),
            r#"{"proxy":"1.22.0","istiod":"1.24.1","minorsBehind":2,"supported":false}"#
        );
        let pod = PodSummary {
            phase: "Running".into(),
            ready: "1/2".into(),
            proxy_restarts: 3,
            native_sidecar: true,
            proxy_running: false,
        };
        assert_eq!(
            serde_json::to_string(&pod).unwrap(),
            r#"{"phase":"Running","ready":"1/2","proxyRestarts":3,"nativeSidecar":true,"proxyRunning":false}"#
        );
    }

    fn answer(name: &str, text: &str) -> IstiodAnswer {
        IstiodAnswer {
            name: name.to_string(),
            version: Some("1.31.0-dev-eed52ebb".to_string()),
            revision: None,
            via: "test".to_string(),
            syncz: syncz::parse(text).map_err(|e| e.to_string()),
        }
    }

    /// A pod as the test cluster's API server returns it (kwok statuses), trimmed.
    fn pod(name: &str, ns: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-11-29T15:40:00Z", "labels": {"app": "web"}},
            "spec": {"nodeName": "kwok-node-0", "containers": [
                {"name": "app", "image": "nginx"},
                {"name": "istio-proxy", "image": "istio/proxyv2:1.31.0-dev-eed52ebb"}
            ]},
            "status": status
        }))
        .unwrap()
    }

    fn running_ready() -> serde_json::Value {
        json!({"phase": "Running", "podIP": "10.244.0.2", "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {"startedAt": "2026-11-29T15:40:01Z"}}},
            {"name": "istio-proxy", "ready": true, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {"startedAt": "2026-11-29T15:40:01Z"}}}
        ]})
    }

    /// What kwok's `crashloop` stage writes (testenv/stages), as read back from the API server.
    fn crashloop() -> serde_json::Value {
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
          "containerStatuses": [
            {"name": "app", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {"startedAt": "2026-11-29T15:40:01Z"}}},
            {"name": "istio-proxy", "ready": false, "restartCount": 7, "image": "x", "imageID": "",
             "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container=istio-proxy"}},
             "lastState": {"terminated": {"exitCode": 255, "reason": "Error"}}}
        ]})
    }

    /// [`Inputs`] with whole pods.
    struct In<'a> {
        istiods: &'a [IstiodAnswer],
        pods: Option<&'a [Pod]>,
        namespace: Option<&'a str>,
        no_istiod: Option<String>,
        now: jiff::Timestamp,
    }

    /// Builds the report from the pods' facts, and again from the same pods as `--pods-file`
    /// reads them (trimmed to what `proxy-status` looks at): both are the same, for every pod of
    /// these tests.
    fn build_both(inputs: &In<'_>) -> Report {
        let facts: Option<Vec<PodFacts>> = inputs
            .pods
            .map(|pods| pods.iter().map(|p| PodFacts::of(p, inputs.now)).collect());
        let report = build(&Inputs {
            istiods: inputs.istiods,
            pods: facts.as_deref(),
            namespace: inputs.namespace,
            no_istiod: inputs.no_istiod.clone(),
        });
        if let Some(pods) = inputs.pods {
            let text = serde_json::to_string(&json!({ "items": pods })).unwrap();
            let trimmed =
                crate::commands::proxy_status::pods_file::list(&text, inputs.now).unwrap();
            assert_eq!(Some(&trimmed), facts.as_ref());
            let again = build(&Inputs {
                istiods: inputs.istiods,
                pods: Some(&trimmed),
                namespace: inputs.namespace,
                no_istiod: inputs.no_istiod.clone(),
            });
            assert_eq!(again.rows, report.rows);
            assert_eq!(again.istiods, report.istiods);
        }
        report
    }

    fn build_with(istiods: &[IstiodAnswer], pods: &[Pod]) -> Report {
        build_both(&In {
            istiods,
            pods: Some(pods),
            namespace: None,
            no_istiod: None,
            now: now(),
        })
    }

    #[test]
    fn connected_proxies_and_an_unconnected_sidecar() {
        let istiods = [answer(
            "istiod-testenv",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/syncz/synced.json"
            )),
        )];
        let pods = [
            pod("web-1", "shop", running_ready()),
            pod("web-2", "shop", running_ready()),
            pod("web-3", "shop", crashloop()),
        ];
        let report = build_with(&istiods, &pods);
        let summary: Vec<(&str, RowState, Option<&str>)> = report
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.state, r.istiod.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("web-1.shop", RowState::Synced, Some("istiod-testenv")),
                ("web-2.shop", RowState::Synced, Some("istiod-testenv")),
                ("web-3.shop", RowState::NotConnected, None),
            ]
        );
        let web3 = &report.rows[2];
        assert_eq!(
            web3.reason.as_deref(),
            Some("istio-proxy CrashLoopBackOff (7 restarts, last exit code 255 (Error))")
        );
        assert_eq!(web3.version.as_deref(), Some("1.31.0-dev-eed52ebb"));
        assert_eq!(web3.version_source, Some(VersionSource::Image));
        assert_eq!(web3.pod_status.as_ref().unwrap().ready, "1/2");
        let web1 = &report.rows[0];
        assert_eq!(web1.pod.as_deref(), Some("web-1"));
        assert_eq!(web1.pod_status.as_ref().unwrap().ready, "2/2");
        assert_eq!(web1.skew, None);
        assert_eq!(report.istiods[0].proxies, 2);

        let default: Vec<FailOn> = vec![FailOn::Stale, FailOn::Error, FailOn::Disconnected];
        let failing: Vec<&str> = report.failing(&default).map(|r| r.name.as_str()).collect();
        assert_eq!(failing, ["web-3.shop"]);
        assert_eq!(report.failing(&[FailOn::None]).count(), 0);
    }

    #[test]
    fn stale_and_error_rows_say_which_types() {
        let istiods = [answer(
            "a",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/syncz/stale.json"
            )),
        )];
        let report = build_with(&istiods, &[]);
        let web2 = report.rows.iter().find(|r| r.name == "web-2.shop").unwrap();
        assert_eq!(web2.state, RowState::Stale);
        assert_eq!(
            web2.reason.as_deref(),
            Some(
                "CDS,LDS,RDS pushed, not acknowledged yet; no pod web-2 in shop (a VM, or a deleted pod)"
            )
        );
        assert!(FailOn::Stale.matches(web2));
        assert!(!FailOn::Error.matches(web2));

        let istiods = [answer(
            "a",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/syncz/error.json"
            )),
        )];
        let pods = [pod("web-1", "shop", running_ready())];
        let report = build_with(&istiods, &pods);
        let web1 = &report.rows[0];
        assert_eq!(web1.state, RowState::Error);
        let reason = web1.reason.as_deref().unwrap();
        assert!(
            reason.starts_with("CDS rejected: Error adding/updating cluster(s)"),
            "{reason}"
        );
        assert!(!reason.contains('\n') && reason.len() < 400, "{reason}");
        assert!(
            reason.contains("; LDS rejected: Error adding/updating listener(s)"),
            "{reason}"
        );
        assert!(FailOn::Error.matches(web1));
    }

    #[test]
    fn reasons_from_the_pod_status() {
        let pending = json!({"phase": "Pending", "containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {}}},
            {"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "x", "imageID": "",
             "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"istio/proxyv2:9.9\""}}}
        ]});
        let (state, reason) = unconnected(&pod("p", "ns", pending), now());
        assert_eq!(state, RowState::NotConnected);
        assert_eq!(
            reason,
            "pod Pending for 10m: istio-proxy ImagePullBackOff (Back-off pulling image \"istio/proxyv2:9.9\")"
        );

        let unscheduled = json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu."}
        ]});
        let (state, reason) = unconnected(&pod("p", "ns", unscheduled), now());
        assert_eq!(state, RowState::NotConnected);
        assert_eq!(
            reason,
            "pod Pending for 10m: not scheduled (Unschedulable): 0/3 nodes are available: 3 Insufficient cpu."
        );

        let not_ready = json!({"phase": "Running", "containerStatuses": [
            {"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {"startedAt": "2026-11-29T15:40:01Z"}}}
        ]});
        let (state, reason) = unconnected(&pod("p", "ns", not_ready), now());
        assert_eq!(state, RowState::NotConnected);
        assert_eq!(
            reason,
            "istio-proxy running for 9m59s but not ready: Envoy has no configuration from istiod"
        );

        let (state, reason) = unconnected(&pod("p", "ns", json!({"phase": "Succeeded"})), now());
        assert_eq!(
            (state, reason.as_str()),
            (RowState::NotRunning, "pod Succeeded")
        );

        // A young pod whose proxy is being created is STARTING, and does not fail the run.
        let mut young = pod(
            "p",
            "ns",
            json!({"phase": "Pending", "containerStatuses": [
                {"name": "istio-proxy", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}}
            ]}),
        );
        young.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-11-29T15:49:50Z".parse().unwrap(),
            ));
        let (state, reason) = unconnected(&young, now());
        assert_eq!(state, RowState::Starting);
        assert_eq!(reason, "pod Pending for 10s: istio-proxy ContainerCreating");

        // The grace is the readiness probe's, the rule every command uses: 0 + 2 x 2 = 4 s, so
        // the same 10 s old pod is past it and NOT CONNECTED.
        let mut quick = young.clone();
        if let Some(proxy) = quick
            .spec
            .as_mut()
            .and_then(|spec| spec.containers.iter_mut().find(|c| c.name == "istio-proxy"))
        {
            proxy.readiness_probe = Some(
                serde_json::from_value(json!({"periodSeconds": 2, "failureThreshold": 2})).unwrap(),
            );
        }
        assert_eq!(sidecar::startup_grace_seconds(&quick), 4);
        assert_eq!(unconnected(&quick, now()).0, RowState::NotConnected);

        let (state, reason) = unconnected(&pod("p", "ns", running_ready()), now());
        assert_eq!(state, RowState::NotConnected);
        assert_eq!(
            reason,
            "istio-proxy ready, but unknown to every istiod asked"
        );
    }

    #[test]
    fn an_istiod_that_could_not_be_asked_makes_ready_pods_unknown() {
        let mut failed = answer("istiod-b", "[]");
        failed.syncz = Err("timed out after 30s".to_string());
        let istiods = [answer("istiod-a", "[]"), failed];
        let pods = [
            pod("ok", "shop", running_ready()),
            pod("bad", "shop", crashloop()),
        ];
        let report = build_with(&istiods, &pods);
        let states: Vec<(&str, RowState)> = report
            .rows
            .iter()
            .map(|r| (r.name.as_str(), r.state))
            .collect();
        assert_eq!(
            states,
            [
                ("bad.shop", RowState::NotConnected),
                ("ok.shop", RowState::Unknown)
            ]
        );
        assert!(
            report.rows[1]
                .reason
                .as_deref()
                .unwrap()
                .ends_with("; istiod-b could not be asked")
        );
        assert_eq!(
            report.istiods[1].error.as_deref(),
            Some("timed out after 30s")
        );
        assert!(FailOn::Disconnected.matches(&report.rows[1]));
    }

    #[test]
    fn no_istiod_at_all() {
        let pods = [pod("web", "shop", running_ready())];
        let report = build_both(&In {
            istiods: &[],
            pods: Some(&pods),
            namespace: None,
            no_istiod: Some("no running istiod pod (label app=istiod in istio-system)".to_string()),
            now: now(),
        });
        assert_eq!(report.rows[0].state, RowState::NotConnected);
        assert!(report.rows[0].reason.as_deref().unwrap().starts_with(
            "no running istiod pod (label app=istiod in istio-system); istio-proxy ready"
        ));
    }

    #[test]
    fn namespace_filter_and_one_proxy() {
        let istiods = [answer(
            "i",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/syncz/synced.json"
            )),
        )];
        let pods = [
            pod("web-1", "shop", running_ready()),
            pod("x", "other", crashloop()),
        ];
        let report = build_both(&In {
            istiods: &istiods,
            pods: Some(&pods),
            namespace: Some("other"),
            no_istiod: None,
            now: now(),
        });
        let names: Vec<&str> = report.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["x.other"]);
        assert_eq!(report.istiods[0].proxies, 0);

        let mut report = build_with(&istiods, &pods);
        assert!(retain_proxy(&mut report, "web-1", Some("shop")));
        assert_eq!(report.rows.len(), 1);
        let mut report = build_with(&istiods, &pods);
        assert!(retain_proxy(&mut report, "web-2.shop", None));
        assert_eq!(report.rows[0].name, "web-2.shop");
        let mut report = build_with(&istiods, &pods);
        assert!(!retain_proxy(&mut report, "web-1", Some("other")));
    }

    #[test]
    fn version_skew() {
        assert_eq!(skew("1.31.0-dev-eed52ebb", "1.31.2"), None);
        let one = skew("1.30.3", "1.31.0").unwrap();
        assert_eq!((one.minors_behind, one.supported), (1, true));
        let two = skew("1.29.0", "1.31.0").unwrap();
        assert_eq!((two.minors_behind, two.supported), (2, false));
        let ahead = skew("1.32.0", "1.31.0").unwrap();
        assert_eq!((ahead.minors_behind, ahead.supported), (-1, false));
        assert_eq!(skew("unknown", "1.31.0"), None);
        assert_eq!(
            image_tag_version("istio/proxyv2:1.30.3-distroless").as_deref(),
            Some("1.30.3")
        );
        assert_eq!(image_tag_version("proxyv2@sha256:abc"), None);

        // A connected proxy older than its istiod carries the marker.
        let mut istiod = answer(
            "i",
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/syncz/synced.json"
            )),
        );
        istiod.version = Some("1.33.1".to_string());
        let report = build_with(&[istiod], &[]);
        let s = report.rows[0].skew.as_ref().unwrap();
        assert_eq!((s.minors_behind, s.supported), (2, false));
        assert!(FailOn::Skew.matches(&report.rows[0]));
    }

    #[test]
    fn probe_results_sharpen_the_reason() {
        let report = build_with(
            &[answer("i", "[]")],
            &[pod("lost", "shop", running_ready())],
        );
        let mut row = report.rows[0].clone();
        assert_eq!(probe_target(&row), Some(("shop", "lost")));
        attach_probe(
            &mut row,
            EnvoyState {
                state: Some("PRE_INITIALIZING".to_string()),
                error: None,
                via: "port-forward to shop/lost".to_string(),
            },
        );
        assert_eq!(
            row.reason.as_deref(),
            Some(
                "Envoy PRE_INITIALIZING (never configured by istiod); istio-proxy ready, but unknown to every istiod asked"
            )
        );
        assert!(FailOn::NotLive.matches(&row));
    }

    #[test]
    fn ztunnel_and_waypoint_rows() {
        // A ztunnel as istiod's syncz lists it (type ztunnel, subscribed to the workload and
        // authorization types; written from Istio's xDS type names: no ztunnel runs here), and
        // the pods of ztunnel's DaemonSet and of a waypoint's Deployment.
        let text = r#"[{"cluster_id":"Kubernetes","proxy":"ztunnel-a.istio-system","proxy_type":"ztunnel","istio_version":"1.31.0-dev-eed52ebb",
            "resources":{"type.googleapis.com/istio.workload.Address":{"sent":"n1","acked":"n1"},
                         "type.googleapis.com/istio.security.Authorization":{"sent":"n2","acked":"n2"}}}]"#;
        let mut ztunnel = pod("ztunnel-a", "istio-system", running_ready());
        ztunnel.metadata.labels = Some([("app".to_string(), "ztunnel".to_string())].into());
        let mut zt_b = pod("ztunnel-b", "istio-system", crashloop());
        zt_b.metadata.labels = ztunnel.metadata.labels.clone();
        let mut waypoint = pod("waypoint-1", "wp1", crashloop());
        waypoint.metadata.labels = Some(
            [(
                "gateway.istio.io/managed".to_string(),
                "istio.io-mesh-controller".to_string(),
            )]
            .into(),
        );
        let report = build_with(&[answer("istiod-a", text)], &[ztunnel, zt_b, waypoint]);
        let row = |n: &str| report.rows.iter().find(|r| r.name == n).unwrap();
        let z = row("ztunnel-a.istio-system");
        assert_eq!(z.proxy_type.as_deref(), Some("ztunnel"));
        assert_eq!(z.state, RowState::Synced);
        let types: Vec<&str> = z.types.iter().map(|t| t.short()).collect();
        assert_eq!(types, ["WADS", "WDS"]);
        assert_eq!(probe_target(z), None, "ztunnel has no Envoy admin to probe");
        let zb = row("ztunnel-b.istio-system");
        assert_eq!(zb.proxy_type.as_deref(), Some("ztunnel"));
        assert_eq!(zb.state, RowState::NotConnected);
        let w = row("waypoint-1.wp1");
        assert_eq!(w.proxy_type.as_deref(), Some("waypoint"));
        assert_eq!(w.state, RowState::NotConnected);
    }
}
