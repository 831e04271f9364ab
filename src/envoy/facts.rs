//! What a probe found about one sidecar, pure: each item's value, why it failed, or why it was
//! not tried (a proxy that does not answer is itself evidence). `probe` fills these in.

use serde::Serialize;

use crate::envoy::admin::{
    BootstrapInfo, CertInfo, ClusterStatus, Readiness, ServerInfo, XdsStats,
};
use crate::envoy::logs::{self, LogMatch, LogSource};

/// Why an item has no value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    /// `timeout`, `refused`, `denied`, `connect`, `too-large`, `http-status`, `protocol`, `parse`.
    pub kind: String,
    pub message: String,
}

impl ErrorInfo {
    pub fn is(&self, kind: &str) -> bool {
        self.kind == kind
    }

    /// True when the port could not be reached at all (as opposed to a bad answer).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "timeout" | "refused" | "denied" | "connect" | "protocol"
        )
    }
}

/// One probed item: its value, why it failed, or why it was not tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Probed<T> {
    Ok(T),
    Error(ErrorInfo),
    Skipped(String),
}

impl<T> Probed<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            Probed::Ok(v) => Some(v),
            _ => None,
        }
    }

    pub fn error(&self) -> Option<&ErrorInfo> {
        match self {
            Probed::Error(e) => Some(e),
            _ => None,
        }
    }

    pub fn from_result<E: Into<ErrorInfo>>(result: Result<T, E>) -> Self {
        match result {
            Ok(v) => Probed::Ok(v),
            Err(e) => Probed::Error(e.into()),
        }
    }
}

impl<T> Default for Probed<T> {
    fn default() -> Self {
        Probed::Skipped("not probed".to_string())
    }
}

/// What the admin port and the health port said.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminProbe {
    /// How the ports were reached ("port-forward to shop/web-1", "direct to 10.0.0.5").
    pub via: String,
    pub server_info: Probed<ServerInfo>,
    pub ready: Probed<Readiness>,
    /// 15021 `/healthz/ready`.
    pub health: Probed<Readiness>,
    pub stats: Probed<XdsStats>,
    pub bootstrap: Probed<BootstrapInfo>,
    /// The ADS cluster (`xds-grpc`) of `/clusters`: connect failures to istiod.
    pub xds_cluster: Probed<Option<ClusterStatus>>,
    pub certs: Probed<Vec<CertInfo>>,
}

impl AdminProbe {
    /// Every item skipped for one reason.
    pub fn skipped(reason: &str) -> Self {
        fn s<T>(reason: &str) -> Probed<T> {
            Probed::Skipped(reason.to_string())
        }
        AdminProbe {
            via: String::new(),
            server_info: s(reason),
            ready: s(reason),
            health: s(reason),
            stats: s(reason),
            bootstrap: s(reason),
            xds_cluster: s(reason),
            certs: s(reason),
        }
    }
}

/// What a log said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogScan {
    /// Lines fetched (the tail of the log).
    pub lines: usize,
    pub matches: Vec<LogMatch>,
    /// The last few non-empty lines, for a crash no signature explains.
    pub last_lines: Vec<String>,
    /// The bootstrapOverride pilot-agent gave Envoy (`--config-yaml` of its `Envoy command:`
    /// line), as JSON, when the log has that line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_yaml: Option<String>,
}

impl LogScan {
    pub fn of(text: &str, source: LogSource) -> Self {
        let lines: Vec<&str> = text.lines().collect();
        let last_lines = lines
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(5)
            .map(|l| crate::formats::text::truncate(&crate::formats::text::collapse(l), 300))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        LogScan {
            lines: lines.len(),
            matches: logs::scan(text, source),
            last_lines,
            config_yaml: logs::config_yaml_overlay(text),
        }
    }
}

/// The istio-proxy container's logs: the running (or last) instance, and the one before it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyLogs {
    pub current: Probed<LogScan>,
    pub previous: Probed<LogScan>,
}

impl ProxyLogs {
    /// Every match, previous log first (where a crash is explained), then current.
    pub fn matches(&self) -> impl Iterator<Item = &LogMatch> {
        self.previous
            .ok()
            .into_iter()
            .chain(self.current.ok())
            .flat_map(|scan| scan.matches.iter())
    }
}

/// Everything probed about one pod's sidecar.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    pub admin: AdminProbe,
    pub logs: ProxyLogs,
}
