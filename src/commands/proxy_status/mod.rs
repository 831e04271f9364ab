//! `kubectl mesh-doctor proxy-status`: which proxies are in sync with istiod, and which sidecars
//! are connected to no istiod at all.
//!
//! Asks every running istiod pod for its sync status (`GET /debug/syncz` on the monitoring port
//! 15014, through a port-forward, as `kubectl port-forward` does), lists the pods once, merges
//! both in the pure [`crate::commands::proxy_status::status`], optionally probes each Envoy's `/server_info`, renders.

pub mod https;
mod pods_file;
pub mod render;
pub mod status;
pub mod url;

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
use crate::source::cluster::{self, Cluster, ListError};
use render::TableOptions;
use status::{EnvoyState, FailOn, Inputs, IstiodAnswer, PodFacts, Report};
use url::IstiodUrl;

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
    /// istiods asked at these addresses (http:// or https://) instead of found in the cluster
    /// (never with `syncz_files`).
    pub istiod_urls: Vec<IstiodUrl>,
    /// With an https istiod URL: trust only the CA certificates in this PEM file, instead of
    /// the system's trust store.
    pub istiod_ca: Option<PathBuf>,
    /// With an https istiod URL: the name to send (SNI) and to expect in istiod's certificate,
    /// instead of the URL's host.
    pub istiod_tls_server_name: Option<String>,
    /// INSECURE: with an https istiod URL, accept any certificate.
    pub istiod_insecure_skip_tls_verify: bool,
    /// The names shown for the `istiod_urls` or `syncz_files`, in order (at most one each).
    pub istiod_names: Vec<String>,
    /// Saved istiod answers read instead of asking any istiod (`-` for stdin).
    pub syncz_files: Vec<PathBuf>,
    /// With `syncz_files`: the pods, as `kubectl get pods -A -o json` prints them.
    pub pods_file: Option<PathBuf>,
    /// Exit 0 rather than 69 when the pods could not be listed (or an istiod could not be
    /// asked without them) and no row matches `fail_on`.
    pub allow_incomplete: bool,
}

/// Where the rows come from.
struct Gathered {
    istiods: Vec<IstiodAnswer>,
    pods: Option<Vec<PodFacts>>,
    no_istiod: Option<String>,
    cluster: Option<Cluster>,
    /// Live, the pods could not be listed (RBAC): the sidecars no istiod knows are not shown.
    pods_denied: bool,
}

pub async fn run(global: &Global, args: Request) -> Result<u8> {
    let offline = !args.syncz_files.is_empty();
    let tls = tls_options(&args)?;
    let now = jiff::Timestamp::now();

    let mut gathered = if offline {
        let istiods = read_syncz_files(&args)?;
        let pods = match &args.pods_file {
            Some(path) => Some(read_pods_file(path, now)?),
            None => None,
        };
        Gathered {
            istiods,
            pods,
            no_istiod: None,
            cluster: None,
            pods_denied: false,
        }
    } else {
        let cluster = cluster::connect(global, global.context.first().map(String::as_str)).await?;
        let namespace = scope(&args, global, Some(&cluster));
        gather_live(&args, &tls, cluster, namespace.as_deref(), now).await?
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
            None => cluster::connect(global, global.context.first().map(String::as_str)).await?,
        };
        probe_rows(&args, &cluster, gathered.pods.as_deref(), &mut report).await;
    }

    let colored = global.color.enabled(Stream::Stdout);
    let verbose = args.types || args.proxy.is_some();
    // The documents are written as they are serialized (22 MB of JSON for 10,000 proxies).
    match args.output {
        Format::Json => {
            write::stdout_with(|out| render::write_json(out, &report, now, &args.fail_on))
        }
        Format::Yaml => {
            write::stdout_with(|out| render::write_yaml(out, &report, now, &args.fail_on))
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
            write::stdout(&text)
        }
    }
    .map_err(Error::Output)?;

    let failing: Vec<&status::Row> = report.failing(&args.fail_on).collect();
    if failing.is_empty() {
        let missing = unseen(&gathered);
        if missing.is_empty() || args.allow_incomplete {
            return Ok(exit::OK);
        }
        // What was not read never turns the table green.
        let styles = Styles::new(global.color.enabled(Stream::Stderr));
        eprintln!(
            "{} the proxy status is incomplete: {}: exit {}. Give the permissions in docs/rbac.yaml, or --allow-incomplete to accept a partial result.",
            styles.paint(styles.error, "error:"),
            missing.join("; "),
            exit::UNAVAILABLE
        );
        return Ok(exit::UNAVAILABLE);
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

/// What the table cannot show, and why: the sidecars connected to no istiod when the pods could
/// not be listed, and the proxies of an istiod that could not be asked when no pod list names
/// them (with the pods, they are UNKNOWN rows).
fn unseen(gathered: &Gathered) -> Vec<String> {
    let mut missing = Vec::new();
    if gathered.pods_denied {
        missing.push(
            "the pods could not be listed, so a sidecar connected to no istiod (NOT CONNECTED) is not shown"
                .to_string(),
        );
    }
    let failed: Vec<&str> = gathered
        .istiods
        .iter()
        .filter(|i| i.syncz.is_err())
        .map(|i| i.name.as_str())
        .collect();
    if gathered.pods.is_none() && !failed.is_empty() {
        missing.push(format!(
            "{} could not be asked, and without the pod list its proxies are not shown",
            failed.join(", ")
        ));
    }
    missing
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
        _ => cluster.map(|c| crate::source::cluster::scope_namespace(global, Some(c))),
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

fn read_pods_file(path: &Path, now: jiff::Timestamp) -> Result<Vec<PodFacts>> {
    let text = read_text(path)?;
    let parse_error = |message: String| Error::Parse {
        location: shown(path),
        message,
    };
    // Straight into typed pods that keep only what the command reads, no intermediate JSON
    // tree (10,000 pods are ~25 MB of JSON). A list has `items`; without it, the text may be
    // one pod.
    match pods_file::list(&text, now) {
        Ok(items) => Ok(items),
        Err(e) if e.to_string().starts_with("missing field `items`") => {
            let pod = pods_file::one(&text).map_err(|e| parse_error(format!("not a pod: {e}")))?;
            Ok(vec![PodFacts::of(&pod, now)])
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
        // Go's net/http, when a TLS port is asked in plain HTTP (istiod's 15017).
        400 if response.text().contains("HTTP request to an HTTPS server") => Err(format!(
            "HTTP 400 for /debug/syncz: {}; this port speaks TLS (use https://), but istiod serves its debug endpoints over plain HTTP only (15014)",
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
    let (syncz, version, _) = ask_tls(transport, port, prefix, namespace).await;
    (syncz, version)
}

/// [`ask`], and the TLS failure of the syncz request, if that is what ended it.
async fn ask_tls<T: Transport>(
    transport: &T,
    port: u16,
    prefix: &str,
    namespace: Option<&str>,
) -> (
    std::result::Result<Syncz, String>,
    Option<String>,
    Option<crate::probe::tls::TlsFailure>,
) {
    let syncz_path = format!("{prefix}{}", syncz_path(namespace));
    let version_path = format!("{prefix}/version");
    let (syncz, version) = tokio::join!(
        transport.get(port, &syncz_path),
        transport.get(port, &version_path)
    );
    let tls = match &syncz {
        Err(ProbeError::Tls(failure)) => Some(failure.clone()),
        _ => None,
    };
    (syncz_answer(syncz), version_answer(version), tls)
}

async fn gather_live(
    args: &Request,
    tls: &https::TlsOptions,
    cluster: Cluster,
    namespace: Option<&str>,
    now: jiff::Timestamp,
) -> Result<Gathered> {
    let pods = cluster.list::<Pod>(namespace);
    let istiods = async {
        if args.istiod_urls.is_empty() {
            istiods_in_cluster(args, &cluster, namespace)
                .await
                .map(|(a, none)| (a, none, Vec::new()))
        } else {
            let answers = futures::future::join_all(
                args.istiod_urls
                    .iter()
                    .enumerate()
                    .map(|(i, url)| istiod_at_url(args, tls, i, url, namespace)),
            )
            .await;
            let (answers, failures): (Vec<_>, Vec<_>) = answers
                .into_iter()
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .unzip();
            Ok((answers, None, failures))
        }
    };
    let (pods, istiods) = tokio::join!(pods, istiods);
    let (istiods, no_istiod, mut tls_failures) = istiods?;
    if let [only] = tls_failures.as_mut_slice()
        && let Some(error) = only.take()
    {
        // The one istiod asked failed its TLS handshake: that line says it all (and comes
        // first: without istiod's answer there is nothing to show).
        return Err(error);
    }
    let mut pods_denied = false;
    let pods = match pods {
        Ok(pods) => Some(pods.iter().map(|p| PodFacts::of(p, now)).collect()),
        Err(ListError::Denied(reason)) => {
            pods_denied = true;
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
        pods_denied,
    })
}

/// The TLS flags, checked (and the CA bundle read) before anything is asked.
fn tls_options(args: &Request) -> Result<https::TlsOptions> {
    let tls = https::TlsOptions::read(
        args.istiod_ca.as_deref(),
        args.istiod_tls_server_name.as_deref(),
        args.istiod_insecure_skip_tls_verify,
    )?;
    if tls.skip_verify {
        eprintln!(
            "warning: --istiod-insecure-skip-tls-verify: istiod's certificate is not checked; anyone on the path can pose as istiod"
        );
    }
    Ok(tls)
}

/// Asks the istiod at one `--istiod-url` (with TLS for https); also gives the error that ends
/// the command if this istiod is the only one and its TLS handshake failed.
async fn istiod_at_url(
    args: &Request,
    tls: &https::TlsOptions,
    index: usize,
    istiod_url: &IstiodUrl,
    namespace: Option<&str>,
) -> Result<(IstiodAnswer, Option<Error>)> {
    let IstiodUrl {
        text: url,
        https,
        authority,
        host,
        port,
        prefix,
    } = istiod_url;
    let (url, host, https, port) = (url.as_str(), host.as_str(), *https, *port);
    let client = if https {
        Some(tls.client(url, host)?)
    } else {
        None
    };
    let fallback_name = url
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string();
    // Resolved as the API server's host is (no glibc NSS in the static release binary).
    let ip = crate::source::dns::resolve(host).await;
    let mut tls_error = None;
    let (syncz, version) = match ip {
        Ok(ip) => {
            let mut transport =
                Direct::new(ip, limits(args.istiod_timeout)).with_host(authority.clone());
            if let Some(client) = client {
                transport = transport.with_tls(client);
            }
            let (syncz, version, failure) = ask_tls(&transport, port, prefix, namespace).await;
            match failure {
                Some(failure) => {
                    let error = tls.error(url.to_string(), failure.clone());
                    let hint = tls
                        .hint(&failure)
                        .map(|h| format!("; {h}"))
                        .unwrap_or_default();
                    tls_error = Some(error);
                    (Err(format!("{failure}{hint}")), version)
                }
                None if https => (syncz.map_err(|e| https::not_found_hint(&e)), version),
                None => (syncz, version),
            }
        }
        Err(e) => (Err(e), None),
    };
    let identity = syncz.as_ref().ok().and_then(|s| s.control_plane.clone());
    let answer = IstiodAnswer {
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
    };
    Ok((answer, tls_error))
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
            cluster.upgrades.clone(),
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
async fn probe_rows(
    args: &Request,
    cluster: &Cluster,
    pods: Option<&[PodFacts]>,
    report: &mut Report,
) {
    let limits = Limits {
        connect_timeout: args.probe_timeout,
        request_timeout: args.probe_timeout,
        max_body: 1024 * 1024,
    };
    let ip_of = |ns: &str, name: &str| -> Option<IpAddr> {
        pods?
            .iter()
            .find(|p| p.name == name && p.namespace.as_deref() == Some(ns))?
            .ip
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
            let client = cluster.upgrades.clone();
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
        // What istiod's https port (15017) answers to plain HTTP, and to https /debug/syncz.
        let e = syncz_answer(Ok(HttpResponse::new(
            400,
            "Client sent an HTTP request to an HTTPS server.\n",
        )))
        .unwrap_err();
        assert!(e.ends_with("this port speaks TLS (use https://), but istiod serves its debug endpoints over plain HTTP only (15014)"), "{e}");
        let e = syncz_answer(Ok(HttpResponse::new(404, "404 page not found"))).unwrap_err();
        assert!(
            https::not_found_hint(&e).ends_with(
                "its debug endpoints are plain HTTP on 15014 (put TLS in front of that)"
            )
        );
    }
}
