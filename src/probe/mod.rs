//! Probe: the runtime facts of one sidecar, read from Envoy's admin API, the Istio health port
//! and the istio-proxy container's logs.
//!
//! Every item is fetched on its own and its failure is recorded next to it (timeout, refused,
//! denied...), never fatal: a proxy that does not answer is itself evidence.

pub mod admin;
pub mod tls;
pub mod transport;

pub use crate::envoy::facts::{AdminProbe, ErrorInfo, LogScan, ProbeResult, Probed, ProxyLogs};

use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::LogParams;

use crate::envoy::logs::LogSource;
use crate::istio::sidecar::{self, PROXY_CONTAINER};
use crate::kube::snapshot::Object;
use crate::probe::admin::{AdminClient, BootstrapInfo, FetchError};
use crate::probe::transport::{Direct, Limits, PortForward, ProbeError, Transport};
use crate::source::cluster::Cluster;

impl From<ProbeError> for ErrorInfo {
    fn from(e: ProbeError) -> Self {
        ErrorInfo {
            kind: e.kind().to_string(),
            message: e.to_string(),
        }
    }
}

impl From<FetchError> for ErrorInfo {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::Probe(p) => p.into(),
            FetchError::Parse(p) => ErrorInfo {
                kind: "parse".to_string(),
                message: p.to_string(),
            },
        }
    }
}

/// Reads every admin item over a transport. `/server_info` goes first, together with 15021;
/// when the admin port cannot be reached at all, the other admin items are skipped rather than
/// each waiting for its own timeout.
pub async fn probe_admin<T: Transport>(client: &AdminClient<T>) -> AdminProbe {
    let (server_info, health) = tokio::join!(client.server_info(), client.health());
    let server_info = Probed::from_result(server_info);
    let health = Probed::from_result(health);
    let via = client.transport().describe();
    if let Probed::Error(e) = &server_info
        && e.is_unreachable()
    {
        let reason = format!("the admin port did not answer /server_info ({})", e.kind);
        let mut probe = AdminProbe::skipped(&reason);
        probe.via = via;
        probe.server_info = server_info;
        probe.health = health;
        return probe;
    }
    let (ready, stats, bootstrap, clusters, certs) = tokio::join!(
        client.ready(),
        client.stats(),
        client.bootstrap(),
        client.clusters(),
        client.certs(),
    );
    let bootstrap = Probed::from_result(bootstrap);
    let ads_cluster = bootstrap
        .ok()
        .and_then(|b: &BootstrapInfo| b.ads_cluster.clone())
        .unwrap_or_else(|| admin::ISTIO_XDS_CLUSTER.to_string());
    AdminProbe {
        via,
        server_info,
        ready: Probed::from_result(ready),
        health,
        stats: Probed::from_result(stats),
        bootstrap,
        xds_cluster: Probed::from_result(
            clusters.map(|all| all.into_iter().find(|c| c.name == ads_cluster)),
        ),
        certs: Probed::from_result(certs),
    }
}

/// How to probe.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    pub limits: Limits,
    /// Connect to the pod IP instead of port-forwarding through the API server.
    pub direct: bool,
    /// Log lines fetched per log (the tail).
    pub log_tail_lines: i64,
    /// Bytes fetched per log at most.
    pub log_limit_bytes: i64,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            limits: Limits::default(),
            direct: false,
            log_tail_lines: 1000,
            log_limit_bytes: 1024 * 1024,
        }
    }
}

impl ProbeOptions {
    /// Every request (and each log fetch) bounded by `timeout`.
    pub fn with_timeout(timeout: Duration) -> Self {
        let mut options = ProbeOptions::default();
        options.limits.connect_timeout = timeout;
        options.limits.request_timeout = timeout;
        options
    }
}

/// Fetches one log of the istio-proxy container and scans it.
pub async fn fetch_log(
    api: &Api<Pod>,
    pod: &str,
    container: &str,
    source: LogSource,
    options: &ProbeOptions,
) -> Probed<LogScan> {
    let params = LogParams {
        container: Some(container.to_string()),
        previous: source == LogSource::Previous,
        tail_lines: Some(options.log_tail_lines),
        limit_bytes: Some(options.log_limit_bytes),
        ..LogParams::default()
    };
    let timeout = options.limits.connect_timeout + options.limits.request_timeout;
    match tokio::time::timeout(timeout, api.logs(pod, &params)).await {
        Err(_) => Probed::Error(
            ProbeError::Timeout {
                what: "logs",
                after: timeout,
            }
            .into(),
        ),
        Ok(Ok(text)) => Probed::Ok(LogScan::of(&text, source)),
        Ok(Err(kube::Error::Api(status))) if matches!(status.code, 401 | 403) => {
            Probed::Error(ProbeError::Denied(status.message).into())
        }
        // 400 "previous terminated container ... not found", or "container ... is waiting to start".
        Ok(Err(kube::Error::Api(status))) if status.code == 400 => Probed::Skipped(status.message),
        Ok(Err(e)) => {
            Probed::Error(ProbeError::Connect(crate::source::cluster::flatten(&e)).into())
        }
    }
}

/// What the pod's istio-proxy container is doing, for deciding what to probe.
fn proxy_running(pod: &Pod) -> Result<(), String> {
    let Some(status) = sidecar::proxy_status(pod) else {
        return Err("istio-proxy has no status yet".to_string());
    };
    let state = status.state.as_ref();
    if state.and_then(|s| s.running.as_ref()).is_some() {
        return Ok(());
    }
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        return Err(format!(
            "istio-proxy is not running ({})",
            waiting.reason.as_deref().unwrap_or("waiting")
        ));
    }
    if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
        return Err(format!(
            "istio-proxy is not running (terminated, exit code {})",
            terminated.exit_code
        ));
    }
    Err("istio-proxy is not running".to_string())
}

/// True when the container has run before (a previous log may exist).
fn has_previous(pod: &Pod) -> bool {
    sidecar::proxy_status(pod).is_some_and(|s| {
        s.restart_count > 0
            || s.last_state
                .as_ref()
                .and_then(|l| l.terminated.as_ref())
                .is_some()
    })
}

/// Probes one pod's sidecar: admin and health ports (when istio-proxy runs) and both logs,
/// concurrently.
pub async fn probe_pod(cluster: &Cluster, pod: &Pod, options: &ProbeOptions) -> ProbeResult {
    let namespace = pod.namespace().unwrap_or("default").to_string();
    let name = pod.name().to_string();
    let has_proxy = pod
        .spec
        .as_ref()
        .and_then(sidecar::proxy_container)
        .is_some();
    if !has_proxy {
        let reason = "the pod has no istio-proxy container";
        return ProbeResult {
            admin: AdminProbe::skipped(reason),
            logs: ProxyLogs {
                current: Probed::Skipped(reason.to_string()),
                previous: Probed::Skipped(reason.to_string()),
            },
        };
    }
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), &namespace);
    let admin = async {
        if let Err(reason) = proxy_running(pod) {
            return AdminProbe::skipped(&reason);
        }
        if options.direct {
            let ip = pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .and_then(|ip| ip.parse::<IpAddr>().ok());
            match ip {
                Some(ip) => probe_admin(&AdminClient::new(Direct::new(ip, options.limits))).await,
                None => AdminProbe::skipped("the pod has no IP address yet"),
            }
        } else {
            let transport =
                PortForward::new(cluster.upgrades.clone(), &namespace, &name, options.limits);
            probe_admin(&AdminClient::new(transport)).await
        }
    };
    let current = fetch_log(&api, &name, PROXY_CONTAINER, LogSource::Current, options);
    let previous = async {
        if has_previous(pod) {
            fetch_log(&api, &name, PROXY_CONTAINER, LogSource::Previous, options).await
        } else {
            Probed::Skipped("istio-proxy has not restarted".to_string())
        }
    };
    let (admin, current, previous) = tokio::join!(admin, current, previous);
    ProbeResult {
        admin,
        logs: ProxyLogs { current, previous },
    }
}

/// Runs `work` on every item, at most `concurrency` at a time; results keep the items' order.
pub async fn bounded<I, F, Fut>(items: I, concurrency: usize, work: F) -> Vec<Fut::Output>
where
    I: IntoIterator,
    F: FnMut(I::Item) -> Fut,
    Fut: Future,
{
    futures::stream::iter(items)
        .map(work)
        .buffered(concurrency.max(1))
        .collect()
        .await
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::probe::admin::ServerState;
    use crate::probe::transport::HttpResponse;
    use std::collections::BTreeMap;

    /// A transport that answers from captured files: (port, path prefix) -> response or error.
    pub struct Captured {
        pub answers: BTreeMap<(u16, &'static str), Result<HttpResponse, ProbeError>>,
    }

    impl Transport for Captured {
        async fn get(&self, port: u16, path: &str) -> Result<HttpResponse, ProbeError> {
            self.answers
                .iter()
                .find(|((p, prefix), _)| *p == port && path.starts_with(prefix))
                .map(|(_, answer)| answer.clone())
                .unwrap_or_else(|| Err(ProbeError::Refused(format!("{port}{path}"))))
        }

        fn describe(&self) -> String {
            "captures".to_string()
        }
    }

    fn ok(body: &str) -> Result<HttpResponse, ProbeError> {
        Ok(HttpResponse::new(200, body))
    }

    /// The admin answers of capture A (Envoy waiting for an unreachable istiod).
    pub fn waiting_for_istiod() -> Captured {
        let mut answers = BTreeMap::new();
        answers.insert(
            (15000, "/server_info"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_server_info.json"
            ))),
        );
        answers.insert(
            (15000, "/ready"),
            Ok(HttpResponse::new(
                503,
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/A_ready.txt"
                )),
            )),
        );
        answers.insert(
            (15000, "/stats"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_stats_diagnosis_filter.json"
            ))),
        );
        answers.insert(
            (15000, "/config_dump"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_config_dump_bootstrap_mask.json"
            ))),
        );
        answers.insert(
            (15000, "/clusters"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_clusters.json"
            ))),
        );
        answers.insert(
            (15000, "/certs"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_certs.json"
            ))),
        );
        // 15021 refused connections in capture A (Envoy's listeners do not accept before LIVE).
        answers.insert(
            (15021, "/healthz/ready"),
            Err(ProbeError::Refused("127.0.0.1:15021".into())),
        );
        Captured { answers }
    }

    /// The admin answers of capture C (a LIVE Envoy).
    pub fn live() -> Captured {
        let mut answers = BTreeMap::new();
        answers.insert(
            (15000, "/server_info"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_server_info.json"
            ))),
        );
        answers.insert(
            (15000, "/ready"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_ready.txt"
            ))),
        );
        answers.insert(
            (15000, "/stats"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_stats.json"
            ))),
        );
        answers.insert(
            (15000, "/config_dump"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_config_dump_mask_node_id_cluster_metadata.json"
            ))
            .trim_end()
            .trim_end_matches("[200]")),
        );
        answers.insert(
            (15000, "/clusters"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_clusters.json"
            ))),
        );
        answers.insert(
            (15000, "/certs"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/certs_valid_and_expired.json"
            ))),
        );
        answers.insert(
            (15021, "/healthz/ready"),
            ok(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_17021__healthz_ready.txt"
            ))),
        );
        Captured { answers }
    }

    #[tokio::test]
    async fn probes_a_proxy_waiting_for_istiod() {
        let probe = probe_admin(&AdminClient::new(waiting_for_istiod())).await;
        assert_eq!(
            probe.server_info.ok().unwrap().state,
            ServerState::PreInitializing
        );
        assert_eq!(probe.ready.ok().unwrap().status, 503);
        assert!(probe.health.error().unwrap().is("refused"));
        assert_eq!(probe.stats.ok().unwrap().connected_state, Some(0));
        let bootstrap = probe.bootstrap.ok().unwrap();
        assert_eq!(bootstrap.ads_cluster.as_deref(), Some("xds-grpc"));
        let xds = probe.xds_cluster.ok().unwrap().as_ref().unwrap();
        assert_eq!(xds.connect_failures(), 7);
        assert!(probe.certs.ok().unwrap().is_empty());
    }

    #[tokio::test]
    async fn probes_a_live_proxy() {
        let probe = probe_admin(&AdminClient::new(live())).await;
        assert_eq!(probe.server_info.ok().unwrap().state, ServerState::Live);
        assert!(probe.ready.ok().unwrap().is_ready());
        assert!(probe.health.ok().unwrap().is_ready());
        assert_eq!(probe.stats.ok().unwrap().connected_state, None);
        assert_eq!(probe.certs.ok().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn an_unreachable_admin_port_skips_the_rest() {
        let transport = Captured {
            answers: BTreeMap::from([(
                (15000, "/"),
                Err(ProbeError::Timeout {
                    what: "request",
                    after: Duration::from_secs(5),
                }),
            )]),
        };
        let probe = probe_admin(&AdminClient::new(transport)).await;
        assert!(probe.server_info.error().unwrap().is("timeout"));
        assert!(matches!(probe.stats, Probed::Skipped(_)));
        assert!(matches!(probe.certs, Probed::Skipped(_)));
        assert!(probe.health.error().unwrap().is("refused"));
    }

    #[tokio::test]
    async fn a_bad_body_is_a_parse_error_not_a_crash() {
        let transport = Captured {
            answers: BTreeMap::from([
                ((15000, "/server_info"), ok("<html>not envoy</html>")),
                (
                    (15000, "/stats"),
                    Ok(HttpResponse::new(404, "no such path")),
                ),
            ]),
        };
        let probe = probe_admin(&AdminClient::new(transport)).await;
        assert!(probe.server_info.error().unwrap().is("parse"));
        assert!(probe.stats.error().unwrap().is("http-status"));
    }

    #[tokio::test]
    async fn bounded_concurrency_keeps_order() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let results = bounded(0..20u64, 3, |i| {
            let running = running.clone();
            let most = most.clone();
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20 - i)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                i * 2
            }
        })
        .await;
        assert_eq!(results, (0..20).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn log_scan_keeps_the_last_lines() {
        let scan = LogScan::of(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/B_stderr.txt"
            )),
            LogSource::Previous,
        );
        assert_eq!(scan.matches.len(), 1);
        assert!(scan.last_lines.len() <= 5);
        assert!(scan.lines > 100);
    }
}
