//! How a command reaches a cluster: kubectl's connection flags as plain values, the kubeconfig
//! merged as kubectl merges `$KUBECONFIG`, the one namespace default ([`scope_namespace`]), and
//! the connected [`Cluster`].

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::{Error, Result};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected cluster.
#[derive(Clone)]
pub struct Cluster {
    /// Every request but upgrades: over HTTP/2 where the server speaks it, all on one
    /// connection (`multiplexed`).
    pub client: Client,
    /// The HTTP/1.1 client the port-forwards (WebSocket upgrades) need.
    pub upgrades: Client,
    /// The kubeconfig context (or "in-cluster").
    pub name: String,
    pub server: String,
    /// The context's namespace (or "default").
    pub default_namespace: String,
    pub timeout: Duration,
    /// The command's overall deadline (`--timeout`), which every request also stops at.
    pub deadline: Option<std::time::Instant>,
    /// `--timeout` as given, for messages.
    pub overall: Duration,
    /// How many objects a list asks for per request (`--chunk-size`; 0: all at once).
    pub chunk_size: u32,
}

impl Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish()
    }
}

/// How to reach the cluster(s): kubectl's connection flags as plain values.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    pub kubeconfig: Option<PathBuf>,
    /// Every `--context` (analyze and version read several clusters; the others take one).
    pub context: Vec<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    /// `-n`, when given.
    pub namespace: Option<String>,
    pub as_user: Option<String>,
    pub as_group: Vec<String>,
    /// Zero means the default.
    pub request_timeout: Duration,
    /// `--chunk-size`: objects per list request, 0 for one request per list.
    pub chunk_size: u32,
    /// The whole command's deadline (`--timeout`); zero: none.
    pub timeout: Duration,
    /// When the whole command must be done (`--timeout` after its start); `None` without one.
    pub deadline: Option<std::time::Instant>,
}

/// The kubeconfig files kubectl would read: `--kubeconfig` alone; else every non-empty entry
/// of $KUBECONFIG (`:`-separated); else ~/.kube/config.
pub fn kubeconfig_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    match std::env::var_os("KUBECONFIG") {
        Some(value) if !value.is_empty() => std::env::split_paths(&value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        // $HOME only: no passwd look-up, which a static binary cannot do without glibc's NSS.
        _ => std::env::var_os("HOME")
            .map(|home| vec![PathBuf::from(home).join(".kube").join("config")])
            .unwrap_or_default(),
    }
}

/// Loads the kubeconfig as kubectl does: a `--kubeconfig` that cannot be read is an error; of
/// $KUBECONFIG's files the missing ones are skipped and the rest merged in order (the first file
/// to set a value or a map key wins). `Ok(None)`: no file exists.
pub fn load_kubeconfig(explicit: Option<&Path>) -> Result<Option<Kubeconfig>> {
    let paths = kubeconfig_paths(explicit);
    let mut merged: Option<Kubeconfig> = None;
    for path in &paths {
        if explicit.is_none() && !path.exists() {
            tracing::debug!(path = %path.display(), "kubeconfig file does not exist, skipped");
            continue;
        }
        let config = Kubeconfig::read_from(path).map_err(|source| Error::KubeconfigFile {
            doing: "read",
            path: path.to_path_buf(),
            source,
        })?;
        merged = Some(match merged {
            None => config,
            Some(m) => m.merge(config).map_err(|source| Error::KubeconfigFile {
                doing: "merge",
                path: path.to_path_buf(),
                source,
            })?,
        });
    }
    Ok(merged)
}

/// The context names of the kubeconfig (for completion); empty when it cannot be read.
pub fn kubeconfig_contexts(explicit: Option<&Path>) -> Vec<String> {
    match load_kubeconfig(explicit) {
        Ok(Some(k)) => k.contexts.into_iter().map(|c| c.name).collect(),
        _ => Vec::new(),
    }
}

/// Builds a client from the kubeconfig (or the in-cluster service account) and kubectl's flags.
pub async fn connect(global: &Connection, context: Option<&str>) -> Result<Cluster> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        cluster: global.cluster.clone(),
        user: global.user.clone(),
    };
    let loaded = load_kubeconfig(global.kubeconfig.as_deref())?;
    let config = match loaded {
        Some(kubeconfig) => {
            let names: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| kubeconfig_error(&e.to_string(), context, &names))?
        }
        None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() && context.is_none() => {
            Config::incluster().map_err(|e| {
                Error::Kubeconfig(format!(
                    "no kubeconfig file exists and the in-cluster configuration failed: {e}"
                ))
            })?
        }
        None => {
            let paths: Vec<String> = kubeconfig_paths(None)
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            return Err(Error::Kubeconfig(format!(
                "no kubeconfig: none of {} exists. Set KUBECONFIG or pass --kubeconfig",
                if paths.is_empty() {
                    "$KUBECONFIG, ~/.kube/config".to_string()
                } else {
                    paths.join(", ")
                }
            )));
        }
    };
    let mut config = config;
    let server_display = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string();
    let server_host = config.cluster_url.host().map(str::to_string);
    if let Some(host) = server_host
        && host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_err()
    {
        // Resolved here (/etc/hosts, then DNS from /etc/resolv.conf), not by getaddrinfo: the
        // static release binary has no glibc NSS. TLS still verifies the host name.
        let ip = crate::source::dns::resolve(&host)
            .await
            .map_err(|message| Error::Unreachable {
                server: config
                    .cluster_url
                    .to_string()
                    .trim_end_matches('/')
                    .to_string(),
                message,
            })?;
        if config.tls_server_name.is_none() {
            config.tls_server_name = Some(host.clone());
        }
        config.cluster_url = crate::source::dns::with_host(&config.cluster_url, ip);
    }
    let timeout = if global.request_timeout.is_zero() {
        DEFAULT_TIMEOUT
    } else {
        global.request_timeout
    };
    // kube's own timeouts are a backstop a second later: each request is bounded by
    // `Cluster::request`, whose message names the flag.
    let backstop = timeout + Duration::from_secs(1);
    config.connect_timeout = Some(backstop);
    config.read_timeout = Some(backstop);
    config.write_timeout = Some(backstop);
    // The read timeout counts from the last request written, not from the last byte read: an
    // HTTP/2 connection idle in the pool for a while is not timed out by the next answer.
    config.reset_reader_on_write = true;
    // Throttling and unavailability are retried here, a few times and within the deadlines, so
    // the message can say so (kube's own policy retries 15 times, with waits up to 1000s).
    config.default_retry = false;
    // Lets audit logs (and our read-only test) tell mesh-doctor's requests apart.
    if let Ok(agent) =
        http::HeaderValue::from_str(&format!("mesh-doctor/{}", env!("CARGO_PKG_VERSION")))
    {
        config.headers.push((http::header::USER_AGENT, agent));
    }
    if let Some(user) = &global.as_user {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !global.as_group.is_empty() {
        config.auth_info.impersonate_groups = Some(global.as_group.clone());
    }
    let server = server_display;
    let default_namespace = config.default_namespace.clone();
    let name = context
        .map(str::to_string)
        .or_else(|| current_context(global))
        .unwrap_or_else(|| "in-cluster".to_string());
    let (client, upgrades) =
        super::retry_after::build_clients(config).map_err(|e| Error::Unreachable {
            server: server.clone(),
            message: e.to_string(),
        })?;
    Ok(Cluster {
        client,
        upgrades,
        name,
        server,
        default_namespace,
        timeout,
        deadline: global.deadline,
        overall: global.timeout,
        chunk_size: global.chunk_size,
    })
}

/// The namespace a command works in when it is not `-A`: `-n`, else the namespace of the kubeconfig
/// context (of `cluster` when connected, which also covers the in-cluster service account's
/// namespace; else read from the kubeconfig file), else `default`. Every command and every use
/// inside a command (the live scope, the namespace given to file objects without one, the
/// namespace filter, the "no issues" line) calls this one function.
pub fn scope_namespace(global: &Connection, cluster: Option<&Cluster>) -> String {
    if let Some(namespace) = global.namespace.as_deref().filter(|n| !n.is_empty()) {
        return namespace.to_string();
    }
    if let Some(cluster) = cluster {
        return cluster.default_namespace.clone();
    }
    context_namespace(global).unwrap_or_else(|| "default".to_string())
}

/// The namespace of the kubeconfig context (`--context`, else the current one), without connecting.
fn context_namespace(global: &Connection) -> Option<String> {
    let kubeconfig = load_kubeconfig(global.kubeconfig.as_deref())
        .ok()
        .flatten()?;
    let name = global
        .context
        .first()
        .cloned()
        .or_else(|| kubeconfig.current_context.clone())?;
    kubeconfig
        .contexts
        .into_iter()
        .find(|c| c.name == name)?
        .context?
        .namespace
        .filter(|n| !n.is_empty())
}

fn current_context(global: &Connection) -> Option<String> {
    load_kubeconfig(global.kubeconfig.as_deref())
        .ok()
        .flatten()?
        .current_context
}

/// A kubeconfig that does not give a usable configuration: what is wrong, and what to do about
/// it that fits every command (the contexts that exist, the flags that choose them).
fn kubeconfig_error(message: &str, context: Option<&str>, names: &[String]) -> Error {
    let listed = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    match context {
        Some(wanted) if !names.iter().any(|n| n == wanted) => Error::ContextNotFound {
            wanted: wanted.to_string(),
            contexts: names.to_vec(),
        },
        _ if names.is_empty() => Error::Kubeconfig(format!(
            "no usable kubeconfig: {message}; it has no context: pass --kubeconfig or set KUBECONFIG"
        )),
        _ => Error::Kubeconfig(format!(
            "no usable kubeconfig: {message}; choose a context with --context NAME (its contexts: {listed}), or pass --kubeconfig"
        )),
    }
}
