//! What the walk is made of: the hops with their status, the walk of each port and its
//! outcome (all serialised as `-o json`), and what the walk is given: the client, the target,
//! the request, and the scene every hop reads.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use serde::Serialize;

use crate::istio::config::host::to_fqdn;
use crate::istio::config::{Config, Labels, Typed};
use crate::istio::dataplane::Dataplane;
use crate::istio::routing::{self, HttpRequest};
use crate::kube::snapshot::{Located, Object, Snapshot};

/// How far a hop lets the request go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pass,
    /// Passes, with something the person should know (a partial fault, TLS to the app).
    Warn,
    /// Could not be checked: said, never guessed.
    Unknown,
    /// The request breaks here.
    Fail,
    /// An earlier hop failed.
    NotReached,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Unknown => "unknown",
            Status::Fail => "fail",
            Status::NotReached => "not reached",
        }
    }
}

/// One hop of the walk.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hop {
    /// `source`, `route`, `cluster`, `endpoints`, `transport`, `destination`, `network`.
    pub hop: &'static str,
    pub status: Status,
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// What the request gets when this hop fails (status, Envoy's response flag and body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symptom: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Hop {
    pub fn new(hop: &'static str, status: Status, summary: impl Into<String>) -> Hop {
        Hop {
            hop,
            status,
            summary: summary.into(),
            evidence: Vec::new(),
            symptom: None,
            fix: None,
        }
    }
    pub fn evidence(mut self, line: impl Into<String>) -> Hop {
        self.evidence.push(line.into());
        self
    }
    pub fn symptom(mut self, text: impl Into<String>) -> Hop {
        self.symptom = Some(text.into());
        self
    }
    pub fn fix(mut self, text: impl Into<String>) -> Hop {
        self.fix = Some(text.into());
        self
    }
}

/// One destination of the route, with the hops from the cluster on.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    /// `host:port` with `subset` when the route names one.
    pub destination: String,
    /// The route's weight for it (100 for a single destination).
    pub weight: i32,
    pub hops: Vec<Hop>,
    /// What the client's Envoy should hold (its cluster and TLS), for the live comparison.
    #[serde(skip)]
    pub expected: Option<(String, crate::envoy::upstream_tls::UpstreamTls)>,
    /// One server pod whose Envoy the live walk reads (the mTLS it accepts, its RBAC counters).
    #[serde(skip)]
    pub server: Option<ServerExpected>,
}

/// What the proxies should hold for a destination: the client's Envoy (its cluster and TLS), and
/// one server's (live, a pod with a sidecar: the mTLS its inbound listener accepts).
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub client: Option<(String, crate::envoy::upstream_tls::UpstreamTls)>,
    pub server: Option<ServerExpected>,
}

/// What one server pod's Envoy should hold for the request.
#[derive(Clone, Debug)]
pub struct ServerExpected {
    pub namespace: String,
    pub pod: String,
    /// The workload port the request arrives on.
    pub port: u32,
    pub mode: crate::istio::mtls::ServerMode,
}

/// The walk of one target port.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortWalk {
    pub port: u32,
    pub protocol: String,
    /// Source and route.
    pub hops: Vec<Hop>,
    pub branches: Vec<Branch>,
    pub outcome: Outcome,
}

/// What the request to one port comes to.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub status: Status,
    pub summary: String,
    /// The hop that decided it (the failing or unknown one), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop: Option<&'static str>,
}

/// The whole walk.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Walk {
    pub source: String,
    pub target: String,
    pub request: String,
    pub ports: Vec<PortWalk>,
    /// What could not be read, so the walk may miss something there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
}

impl Walk {
    /// The worst status of every port.
    pub fn status(&self) -> Status {
        let worst = self
            .ports
            .iter()
            .map(|p| p.outcome.status)
            .max()
            .unwrap_or(Status::Unknown);
        if worst == Status::Pass && !self.not_read.is_empty() {
            return Status::Unknown;
        }
        worst
    }
}

/// The client of the walk.
#[derive(Clone, Debug)]
pub struct ClientSide<'s> {
    /// `Pod shop/frontend-7f9c` or `Deployment shop/frontend`.
    pub what: String,
    pub namespace: &'s str,
    pub labels: &'s Labels,
    pub service_account: String,
    pub dataplane: Dataplane,
    pub ip: Option<IpAddr>,
    /// The istio-proxy container's readiness (`None` for a pod template).
    pub proxy_ready: Option<bool>,
    /// The pod's name, live (its Envoy is read).
    pub pod: Option<String>,
}

impl ClientSide<'_> {
    /// The client as a DestinationRule lookup sees it: its namespace and labels.
    pub fn rule_client(&self) -> crate::istio::destination_rules::Client<'_> {
        crate::istio::destination_rules::Client {
            namespace: self.namespace,
            labels: Some(self.labels),
        }
    }
}

/// What the request is sent to.
#[derive(Clone, Debug)]
pub enum Target {
    /// A Kubernetes Service.
    Service { namespace: String, name: String },
    /// Any other host (a ServiceEntry's, or one the mesh does not know).
    Host(String),
    /// A pod, by its IP (`pod/NAME[.NS]`).
    Pod { namespace: String, name: String },
}

impl Target {
    pub fn fqdn(&self) -> String {
        match self {
            Target::Service { namespace, name } => to_fqdn(namespace, name),
            Target::Host(h) => h.clone(),
            Target::Pod { namespace, name } => format!("pod/{name}.{namespace}"),
        }
    }
}

/// Everything the walk is given.
pub struct Question<'q> {
    pub client: ClientSide<'q>,
    pub target: Target,
    /// Only this port; `None`: every port of the target.
    pub port: Option<u32>,
    pub request: HttpRequest,
    /// True when the snapshot is a live cluster (EndpointSlices are the endpoints); false for
    /// files (the workloads in the files stand for them).
    pub live: bool,
}

/// The facts every hop may read.
pub struct Scene<'s, 'a> {
    pub snapshot: &'s Snapshot,
    pub config: &'s Config<'a>,
    pub root: &'s str,
    pub question: &'s Question<'s>,
}

/// The service the target names: its ports (number, name, protocol), and the Service or
/// ServiceEntry behind it.
pub enum Known<'s, 'a> {
    Service(&'s Located<Service>),
    Entry(&'s Typed<'a, crate::istio::config::ServiceEntry>),
    Unknown,
}

/// The Service with this namespace and name.
pub fn service<'s>(
    snapshot: &'s Snapshot,
    namespace: &str,
    name: &str,
) -> Option<&'s Located<Service>> {
    snapshot
        .all_services()
        .find(|s| s.object.name() == name && s.object.namespace() == Some(namespace))
}

/// The service behind a host: a Service by FQDN, else a ServiceEntry host visible from `from_ns`.
pub fn known<'s, 'a>(scene: &Scene<'s, 'a>, fqdn: &str, from_ns: &str) -> Known<'s, 'a> {
    if let Some((ns, name)) = crate::istio::config::host::split_fqdn(fqdn)
        && let Some(svc) = service(scene.snapshot, ns, name)
    {
        return Known::Service(svc);
    }
    let entry = scene.config.service_entries.iter().find(|se| {
        routing::exported_to(&se.spec.export_to, se.namespace(), from_ns)
            && se
                .spec
                .hosts
                .iter()
                .any(|h| crate::istio::config::host::matches(h, fqdn))
    });
    match entry {
        Some(e) => Known::Entry(e),
        None => Known::Unknown,
    }
}

pub fn not_reached(hop: &'static str) -> Hop {
    Hop::new(hop, Status::NotReached, "not reached")
}
