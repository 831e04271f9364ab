//! `kubectl mesh-doctor proxy-status`: which proxies are in sync with istiod, and which sidecars
//! are connected to no istiod at all.
//!
//! Asks every running istiod pod for its sync status (`GET /debug/syncz` on the monitoring port
//! 15014, through a port-forward, as `kubectl port-forward` does), lists the pods once, merges
//! both in the pure [`crate::commands::proxy_status::status`], optionally probes each Envoy's `/server_info`, renders.

pub mod render;
pub mod status;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

use crate::error::{Error, Result};
use crate::exit;
use crate::istio::injection::REVISION_LABEL;
use crate::istio::syncz::{self, Syncz};
use crate::kube::snapshot::Object;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::probe::admin::AdminClient;
use crate::probe::transport::{Direct, HttpResponse, Limits, PortForward, ProbeError, Transport};
use crate::request::Global;
use crate::source::live::{self, Cluster, ListError};
use render::TableOptions;
use status::{EnvoyState, FailOn, Inputs, IstiodAnswer, Report};

/// istiod's monitoring port: metrics, `/version` and the HTTP debug endpoints.
pub const ISTIOD_MONITORING_PORT: u16 = 15014;
/// The largest syncz answer read (10,000 proxies are about 15 MB).
const MAX_SYNCZ_BYTES: usize = 512 * 1024 * 1024;

/// How `proxy-status` shows its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// istioctl's columns plus STATUS (and ENVOY with --probe, REASON when there is one)
    #[default]
    Text,
    /// The table with istiod's version, the proxy type, the pod status and whole reasons
    Wide,
    /// Every row, istiod and type as JSON
    Json,
    /// The same as YAML
    Yaml,
}

/// What `proxy-status` is asked to do, decided from its flags (by the CLI): the flags that
/// exclude each other are checked there.
#[derive(Clone, Debug)]
pub struct Request {
    /// One proxy: POD, POD.NAMESPACE or pod/POD.
    pub proxy: Option<String>,
    pub output: Format,
    /// One column per xDS type instead of SUBSCRIBED TYPES (--types).
    pub types: bool,
    /// Every namespace, even with -n.
    pub all_namespaces: bool,
    /// What makes the command exit 79.
    pub fail_on: Vec<FailOn>,
    /// Ask each running proxy's Envoy for its state.
    pub probe: bool,
    /// With probe: the pod IPs rather than port-forwards.
    pub direct: bool,
    /// With probe: how many proxies are asked at the same time (1 to 256).
    pub concurrency: u16,
    pub probe_timeout: Duration,
    /// Time allowed for each istiod, to connect and to answer.
    pub istiod_timeout: Duration,
    /// The namespace istiod runs in.
    pub istio_namespace: String,
    /// The label selector of istiod's pods.
    pub istiod_selector: String,
    /// Only the istiod pods of this revision.
    pub revision: Option<String>,
    /// istiods asked at these addresses instead of found in the cluster (never with
    /// `syncz_files`).
    pub istiod_urls: Vec<String>,
    /// The names shown for the `istiod_urls` or `syncz_files`, in order (at most one each).
    pub istiod_names: Vec<String>,
    /// Saved istiod answers read instead of asking any istiod (`-` for stdin).
    pub syncz_files: Vec<PathBuf>,
    /// With `syncz_files`: the pods, as `kubectl get pods -A -o json` prints them.
    pub pods_file: Option<PathBuf>,
}

/// Where the rows come from.
struct Gathered {
    istiods: Vec<IstiodAnswer>,
    pods: Option<Vec<Pod>>,
    no_istiod: Option<String>,
    cluster: Option<Cluster>,
}

pub async fn run(global: &Global, args: Request) -> Result<u8> {
    let offline = !args.syncz_files.is_empty();
    let now = jiff::Timestamp::now();

    let mut gathered = if offline {
        Gathered {
            istiods: read_syncz_files(&args)?,
            pods: match &args.pods_file {
                Some(path) => Some(read_pods_file(path)?),
                None => None,
            },
            no_istiod: None,
            cluster: None,
        }
    } else {
        let cluster = live::connect(global, global.context.first().map(String::as_str)).await?;
        let namespace = scope(&args, global, Some(&cluster));
        gather_live(&args, cluster, namespace.as_deref()).await?
    };
    let namespace = scope(&args, global, gathered.cluster.as_ref());

    for istiod in &gathered.istiods {
        if let Err(e) = &istiod.syncz {
            eprintln!("warning: istiod {} ({}): {e}", istiod.name, istiod.via);
        }
    }
    if !gathered.istiods.is_empty() && gathered.istiods.iter().all(|i| i.syncz.is_err()) {
        let names: Vec<&str> = gathered.istiods.iter().map(|i| i.name.as_str()).collect();
        let hint = if args.istiod_urls.is_empty() {
            "; or ask one you reach yourself with --istiod-url (e.g. after kubectl port-forward)"
        } else {
            ""
        };
        return Err(Error::Cluster(format!(
            "no istiod could be asked for its sync status ({}){hint}",
            names.join(", ")
        )));
    }

    let mut report = status::build(&Inputs {
        istiods: &gathered.istiods,
        pods: gathered.pods.as_deref(),
        namespace: namespace.as_deref(),
        no_istiod: gathered.no_istiod.clone(),
        now,
    });
    if let Some(wanted) = &args.proxy
        && !status::retain_proxy(&mut report, wanted, namespace.as_deref())
    {
        return Err(Error::Data(format!(
            "no proxy and no sidecar pod named {wanted}{}",
            namespace
                .as_deref()
                .map(|ns| format!(" in namespace {ns}"))
                .unwrap_or_default()
        )));
    }

    if args.probe {
        let cluster = match gathered.cluster.take() {
            Some(c) => c,
            None => live::connect(global, global.context.first().map(String::as_str)).await?,
        };
        probe_rows(&args, &cluster, gathered.pods.as_deref(), &mut report).await;
    }

    let colored = global.color.enabled(Stream::Stdout);
    let verbose = args.types || args.proxy.is_some();
    let text = match args.output {
        Format::Json => {
            crate::output::json::document(&render::json_value(&report, now, &args.fail_on))
        }
        Format::Yaml => {
            crate::formats::yaml_write::to_string(&render::json_value(&report, now, &args.fail_on))
        }
        Format::Text | Format::Wide => {
            let options = TableOptions {
                verbose,
                wide: args.output == Format::Wide,
                colored,
                now,
            };
            let mut text = render::table(&report, &options);
            if args.proxy.is_some() {
                for row in &report.rows {
                    text.push_str(&render::details(row, &options));
                }
            }
            text
        }
    };
    write::stdout(&text).map_err(Error::Output)?;

    let failing: Vec<&status::Row> = report.failing(&args.fail_on).collect();
    if failing.is_empty() {
        return Ok(exit::OK);
    }
    let styles = Styles::new(global.color.enabled(Stream::Stderr));
    let mut by_state: std::collections::BTreeMap<&str, usize> = Default::default();
    for row in &failing {
        *by_state.entry(row.state.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = by_state
        .iter()
        .rev()
        .map(|(state, n)| format!("{n} {state}"))
        .collect();
    let fail_on: Vec<&str> = args.fail_on.iter().map(|f| f.as_str()).collect();
    eprintln!(
        "{} {}/{} proxies match --fail-on {}: {}",
        styles.paint(styles.error, "fail:"),
        failing.len(),
        report.rows.len(),
        fail_on.join(","),
        parts.join(", ")
    );
    Ok(exit::FINDINGS)
}

/// The namespace filter: `-n` (unless -A), or for `proxy-status NAME` the namespace in
/// `NAME.NAMESPACE`, else the context's namespace.
fn scope(args: &Request, global: &Global, cluster: Option<&Cluster>) -> Option<String> {
    if args.all_namespaces {
        return None;
    }
    if let Some(ns) = &global.namespace {
        return Some(ns.clone());
    }
    let wanted = args.proxy.as_deref()?;
    let wanted = wanted
        .strip_prefix("pod/")
        .or_else(|| wanted.strip_prefix("pods/"))
        .unwrap_or(wanted);
    match wanted.rsplit_once('.') {
        Some((_, ns)) if !ns.is_empty() => Some(ns.to_string()),
        _ => cluster.map(|c| crate::source::live::scope_namespace(global, Some(c))),
    }
}

fn read_text(path: &Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
            Error::ReadInput {
                path: path.to_path_buf(),
                source,
            }
        })?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|source| Error::ReadInput {
        path: path.to_path_buf(),
        source,
    })
}

/// A file as messages name it: `-` is `<stdin>`, as in every command.
fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

fn read_syncz_files(args: &Request) -> Result<Vec<IstiodAnswer>> {
    let mut out = Vec::new();
    for (i, path) in args.syncz_files.iter().enumerate() {
        let text = read_text(path)?;
        let syncz = syncz::parse(&text).map_err(|e| Error::Parse {
            location: shown(path),
            message: e.to_string(),
        })?;
        let identity = syncz.control_plane.clone();
        let name = args
            .istiod_names
            .get(i)
            .cloned()
            .or_else(|| identity.as_ref().map(|c| c.id.clone()))
            .unwrap_or_else(|| match path.file_stem() {
                Some(stem) if path != Path::new("-") => stem.to_string_lossy().into_owned(),
                _ => "<stdin>".to_string(),
            });
        out.push(IstiodAnswer {
            name,
            version: identity.and_then(|c| c.version),
            revision: None,
            via: format!("file {}", shown(path)),
            syncz: Ok(syncz),
        });
    }
    Ok(out)
}

fn read_pods_file(path: &Path) -> Result<Vec<Pod>> {
    let text = read_text(path)?;
    let parse_error = |message: String| Error::Parse {
        location: shown(path),
        message,
    };
    #[derive(serde::Deserialize)]
    struct List {
        items: Vec<Pod>,
    }
    // Straight into typed pods, no intermediate JSON tree (10,000 pods are ~25 MB of JSON). A
    // list has `items`; without it, the text may be one pod.
    match serde_json::from_str::<List>(&text) {
        Ok(list) => Ok(list.items),
        Err(e) if e.to_string().starts_with("missing field `items`") => {
            let pod: Pod =
                serde_json::from_str(&text).map_err(|e| parse_error(format!("not a pod: {e}")))?;
            Ok(vec![pod])
        }
        Err(e) => Err(parse_error(format!("not a list of pods: {e}"))),
    }
}

fn limits(timeout: Duration) -> Limits {
    Limits {
        connect_timeout: timeout,
        request_timeout: timeout,
        max_body: MAX_SYNCZ_BYTES,
    }
}

fn syncz_path(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!(
            "/debug/syncz?namespace={}",
            crate::probe::admin::url_encode(ns)
        ),
        None => "/debug/syncz".to_string(),
    }
}

/// Turns istiod's HTTP answer into a syncz, or a message that says what to check.
fn syncz_answer(
    response: std::result::Result<HttpResponse, ProbeError>,
) -> std::result::Result<Syncz, String> {
    let response = response.map_err(|e| e.to_string())?;
    match response.status {
        200 => syncz::parse(&response.text()).map_err(|e| e.to_string()),
        404 => Err(format!(
            "HTTP 404 for /debug/syncz: istiod's debug endpoints are off (ENABLE_DEBUG_ON_HTTP=false?), or this is not istiod's monitoring port: {}",
            response.snippet()
        )),
        401 | 403 => Err(format!(
            "HTTP {} for /debug/syncz: istiod allows its debug endpoints from localhost (a port-forward) or with a token",
            response.status
        )),
        status => Err(format!(
            "HTTP {status} for /debug/syncz: {}",
            response.snippet()
        )),
    }
}

fn version_answer(response: std::result::Result<HttpResponse, ProbeError>) -> Option<String> {
    let response = response.ok()?;
    (response.status == 200)
        .then(|| syncz::parse_version_answer(&response.text()))
        .flatten()
}

/// Asks one istiod over a transport: syncz and /version at the same time.
async fn ask<T: Transport>(
    transport: &T,
    port: u16,
    prefix: &str,
    namespace: Option<&str>,
) -> (std::result::Result<Syncz, String>, Option<String>) {
    let syncz_path = format!("{prefix}{}", syncz_path(namespace));
    let version_path = format!("{prefix}/version");
    let (syncz, version) = tokio::join!(
        transport.get(port, &syncz_path),
        transport.get(port, &version_path)
    );
    (syncz_answer(syncz), version_answer(version))
}

async fn gather_live(
    args: &Request,
    cluster: Cluster,
    namespace: Option<&str>,
) -> Result<Gathered> {
    let pods = cluster.list::<Pod>(namespace);
    let istiods = async {
        if args.istiod_urls.is_empty() {
            istiods_in_cluster(args, &cluster, namespace).await
        } else {
            let answers = futures::future::join_all(
                args.istiod_urls
                    .iter()
                    .enumerate()
                    .map(|(i, url)| istiod_at_url(args, i, url, namespace)),
            )
            .await;
            answers
                .into_iter()
                .collect::<Result<Vec<_>>>()
                .map(|a| (a, None))
        }
    };
    let (pods, istiods) = tokio::join!(pods, istiods);
    let (istiods, no_istiod) = istiods?;
    let pods = match pods {
        Ok(pods) => Some(pods),
        Err(ListError::Denied(reason)) => {
            eprintln!(
                "warning: cannot list pods{}: {reason}; only connected proxies are shown",
                namespace.map(|ns| format!(" in {ns}")).unwrap_or_default()
            );
            None
        }
        Err(ListError::Unreachable(reason)) => return Err(cluster.unreachable(reason)),
        Err(other) => return Err(cluster.error(other, "list", "pods", namespace)),
    };
    Ok(Gathered {
        istiods,
        pods,
        no_istiod,
        cluster: Some(cluster),
    })
}

/// `http://host:port[/prefix]` -> (host, port, prefix).
fn parse_url(url: &str) -> Result<(String, u16, String)> {
    let bad = |why: &str| Error::InvalidValue {
        what: "--istiod-url",
        value: url.to_string(),
        why: why.to_string(),
    };
    let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => return Err(bad(&format!("{other} is not supported, use http://"))),
        None => return Err(bad("give it as http://HOST:PORT")),
    }
    let host = uri.host().ok_or_else(|| bad("no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let prefix = uri.path().trim_end_matches('/').to_string();
    Ok((host, port, prefix))
}

async fn istiod_at_url(
    args: &Request,
    index: usize,
    url: &str,
    namespace: Option<&str>,
) -> Result<IstiodAnswer> {
    let (host, port, prefix) = parse_url(url)?;
    let fallback_name = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let ip: std::result::Result<IpAddr, String> = match host.parse::<IpAddr>() {
        Ok(ip) => Ok(ip),
        Err(_) => match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(mut addrs) => addrs
                .next()
                .map(|a| a.ip())
                .ok_or_else(|| format!("{host} has no address")),
            Err(e) => Err(format!("cannot resolve {host}: {e}")),
        },
    };
    let (syncz, version) = match ip {
        Ok(ip) => {
            let transport = Direct::new(ip, limits(args.istiod_timeout));
            ask(&transport, port, &prefix, namespace).await
        }
        Err(e) => (Err(e), None),
    };
    let identity = syncz.as_ref().ok().and_then(|s| s.control_plane.clone());
    Ok(IstiodAnswer {
        name: args
            .istiod_names
            .get(index)
            .cloned()
            .or_else(|| identity.as_ref().map(|c| c.id.clone()))
            .unwrap_or(fallback_name),
        version: version.or_else(|| identity.and_then(|c| c.version)),
        revision: None,
        via: url.to_string(),
        syncz,
    })
}

/// Finds istiod's pods by label and asks each running one through a port-forward.
async fn istiods_in_cluster(
    args: &Request,
    cluster: &Cluster,
    namespace: Option<&str>,
) -> Result<(Vec<IstiodAnswer>, Option<String>)> {
    let mut selector = args.istiod_selector.clone();
    if let Some(rev) = &args.revision {
        selector.push_str(&format!(",istio.io/rev={rev}"));
    }
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), &args.istio_namespace);
    let params = ListParams::default().labels(&selector);
    let listed = cluster.list_selected(api, &params).await;
    let pods = match listed {
        Ok(items) => items,
        Err(e) => {
            return Err(match e {
                ListError::Denied(reason) => Error::AccessDenied(Box::new(crate::error::Denied {
                    verb: "list",
                    resource: format!("istiod's pods ({selector})"),
                    namespace: Some(args.istio_namespace.clone()),
                    cluster: cluster.name.clone(),
                    reason,
                    hint: Some("use --istiod-url to ask an istiod you can reach"),
                })),
                ListError::Unreachable(reason) => cluster.unreachable(reason),
                other => cluster.error(other, "list", "istiod's pods", Some(&args.istio_namespace)),
            });
        }
    };
    let (running, other): (Vec<Pod>, Vec<Pod>) = pods.into_iter().partition(|p| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    });
    for pod in &other {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Unknown");
        tracing::info!(pod = pod.name(), phase, "istiod pod not running, not asked");
    }
    if running.is_empty() && other.is_empty() {
        // Nothing there at all: a wrong --istio-namespace or selector, not proxies in trouble.
        return Err(Error::Cluster(format!(
            "no istiod found: no pod matches {selector} in namespace {} on {}; give the namespace istiod runs in with --istio-namespace (-i), its pods' labels with --istiod-selector, or ask one with --istiod-url",
            args.istio_namespace, cluster.name
        )));
    }
    if running.is_empty() {
        let mut why = format!(
            "no running istiod pod ({selector} in {})",
            args.istio_namespace
        );
        if !other.is_empty() {
            let names: Vec<String> = other
                .iter()
                .map(|p| {
                    format!(
                        "{} is {}",
                        p.name(),
                        p.status
                            .as_ref()
                            .and_then(|s| s.phase.as_deref())
                            .unwrap_or("Unknown")
                    )
                })
                .collect();
            why.push_str(&format!(": {}", names.join(", ")));
        }
        eprintln!("warning: {why}");
        return Ok((Vec::new(), Some(why)));
    }
    let answers = futures::future::join_all(running.iter().map(|pod| async move {
        let name = pod.name().to_string();
        let transport = PortForward::new(
            cluster.client.clone(),
            &args.istio_namespace,
            &name,
            limits(args.istiod_timeout),
        );
        tracing::info!(istiod = %name, "asking for /debug/syncz through a port-forward");
        let (syncz, version) = ask(&transport, ISTIOD_MONITORING_PORT, "", namespace).await;
        let identity_version = syncz
            .as_ref()
            .ok()
            .and_then(|s| s.control_plane.as_ref())
            .and_then(|c| c.version.clone());
        let image_version = pod.spec.as_ref().and_then(|s| {
            s.containers
                .iter()
                .find(|c| c.name == "discovery")
                .or_else(|| s.containers.first())
                .and_then(|c| c.image.as_deref())
                .and_then(status::image_tag_version)
        });
        IstiodAnswer {
            version: version.or(identity_version).or(image_version),
            revision: pod.label(REVISION_LABEL).map(str::to_string),
            via: format!(
                "port-forward to {}/{name}:{ISTIOD_MONITORING_PORT}",
                args.istio_namespace
            ),
            name,
            syncz,
        }
    }))
    .await;
    Ok((answers, None))
}

/// Asks each running proxy's Envoy for `/server_info`, `--concurrency` at a time.
async fn probe_rows(args: &Request, cluster: &Cluster, pods: Option<&[Pod]>, report: &mut Report) {
    let limits = Limits {
        connect_timeout: args.probe_timeout,
        request_timeout: args.probe_timeout,
        max_body: 1024 * 1024,
    };
    let ip_of = |ns: &str, name: &str| -> Option<IpAddr> {
        pods?
            .iter()
            .find(|p| p.name() == name && p.namespace() == Some(ns))?
            .status
            .as_ref()?
            .pod_ip
            .as_deref()?
            .parse()
            .ok()
    };
    let targets: Vec<(usize, String, String, Option<IpAddr>)> = report
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let (ns, pod) = status::probe_target(row)?;
            Some((i, ns.to_string(), pod.to_string(), ip_of(ns, pod)))
        })
        .collect();
    let direct = args.direct;
    let results = crate::probe::bounded(
        targets,
        usize::from(args.concurrency),
        |(i, ns, pod, ip)| {
            let client = cluster.client.clone();
            async move {
                let state = if direct {
                    match ip {
                        Some(ip) => envoy_state(AdminClient::new(Direct::new(ip, limits))).await,
                        None => EnvoyState {
                            state: None,
                            error: Some("the pod has no IP address".to_string()),
                            via: "direct".to_string(),
                        },
                    }
                } else {
                    envoy_state(AdminClient::new(PortForward::new(
                        client, &ns, &pod, limits,
                    )))
                    .await
                };
                (i, state)
            }
        },
    )
    .await;
    for (i, state) in results {
        if let Some(row) = report.rows.get_mut(i) {
            status::attach_probe(row, state);
        }
    }
}

async fn envoy_state<T: Transport>(client: AdminClient<T>) -> EnvoyState {
    let via = client.transport().describe();
    match client.server_info().await {
        Ok(info) => EnvoyState {
            state: Some(info.state.as_str().to_string()),
            error: None,
            via,
        },
        Err(e) => EnvoyState {
            state: None,
            error: Some(e.to_string()),
            via,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("http://127.0.0.1:18080").unwrap(),
            ("127.0.0.1".to_string(), 18080, String::new())
        );
        assert_eq!(
            parse_url("http://istiod.istio-system:15014/").unwrap(),
            ("istiod.istio-system".to_string(), 15014, String::new())
        );
        assert!(parse_url("https://x:1").is_err());
        assert!(parse_url("127.0.0.1:15014").is_err());
    }

    #[test]
    fn answers() {
        assert!(syncz_answer(Ok(HttpResponse::new(200, "[]"))).is_ok());
        let e = syncz_answer(Ok(HttpResponse::new(404, "404 page not found"))).unwrap_err();
        assert!(e.contains("ENABLE_DEBUG_ON_HTTP"), "{e}");
        assert_eq!(
            version_answer(Ok(HttpResponse::new(200, "1.24.2-abc-Clean"))).as_deref(),
            Some("1.24.2")
        );
        assert_eq!(version_answer(Ok(HttpResponse::new(404, "x"))), None);
        assert_eq!(syncz_path(Some("a b")), "/debug/syncz?namespace=a%20b");
    }
}
