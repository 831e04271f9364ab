//! `kubectl mesh-doctor bootstrap explain POD`: where each part of a live pod's Envoy bootstrap
//! comes from, whether it is right, and (when the proxy answers) whether the running Envoy has
//! what the pod spec says it should.
//!
//! Reads the pod, the ConfigMaps its bootstrap depends on (istio-ca-root-cert in its namespace,
//! the bootstrapOverride ConfigMap it names, the mesh ConfigMap in istio-system), asks the
//! proxy's admin port for /config_dump (bootstrap section), then hands everything to the pure
//! [`explanation::explain_pod`] and renders.

use std::net::IpAddr;
use std::time::Duration;

use comfy_table::{Cell, Table};

use crate::output::style::Tone;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use serde_json::Value;

use crate::commands::bootstrap::explanation::{
    self, BOOTSTRAP_OVERRIDE_ANNOTATION, BOOTSTRAP_OVERRIDE_KEY, Explanation, Group, Ingredient,
    LiveBootstrap, Status, Surroundings,
};
use crate::commands::bootstrap::{inputs, overlay};
use crate::diagnosis::Lookup;
use crate::error::{Error, Result};
use crate::exit;
use crate::formats::text::one_line;
use crate::istio::constants::{ISTIO_NAMESPACE, ROOT_CERT_CONFIG_MAP};
use crate::istio::injection::REVISION_LABEL;
use crate::istio::sidecar;
use crate::output::format::DocumentFormat;
use crate::output::json::document;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::probe::admin::url_encode;
use crate::probe::transport::{Direct, Limits, PortForward, Transport};
use crate::request::Global;
use crate::source::cluster::{self, Cluster, ListError};
use crate::source::pod::get_pod;

/// Values longer than this are cut in the text output (`-o json` has them whole).
const VALUE_WIDTH: usize = 64;

/// `bootstrap explain POD`, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub struct Request {
    /// The pod's name (without `pod/`), in the namespace of `source::cluster::scope_namespace`.
    pub pod: String,
    pub output: DocumentFormat,
    /// Reach the admin port on the pod IP rather than through a port-forward.
    pub direct: bool,
    /// Ask the running Envoy for its /config_dump to compare.
    pub probe: bool,
    pub probe_timeout: Duration,
}

fn lookup<T>(result: std::result::Result<Option<T>, ListError>) -> Lookup<T> {
    match result {
        Ok(Some(v)) => Lookup::Found(v),
        Ok(None) => Lookup::Missing,
        Err(e) => Lookup::Unknown(e.reason().to_string()),
    }
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    let name = request.pod.clone();
    let cluster = cluster::connect(global, global.context.first().map(String::as_str)).await?;
    let namespace = cluster::scope_namespace(global, Some(&cluster));
    tracing::info!(cluster = %cluster.name, %namespace, pod = %name, "explaining the bootstrap");
    let pod = get_pod(&cluster, &namespace, &name).await?;
    let (around, mut notes) = surroundings(&cluster, &pod, &namespace).await;

    // The admin port the proxy really has (proxy.istio.io/config may move it).
    let inputs = inputs::explain(&pod, &around.mesh_config_maps)
        .map_err(|e| not_meshed(&namespace, &name, &e))?;
    let admin_port = inputs
        .get("admin port")
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(crate::probe::admin::ADMIN_PORT);
    let live = live_bootstrap(&cluster, &pod, admin_port, &request).await;

    let mut explanation = explanation::explain_pod(&pod, &around, live)
        .map_err(|e| not_meshed(&namespace, &name, &e))?;
    explanation.notes.append(&mut notes);

    let text = match request.output {
        DocumentFormat::Json => json_text(&explanation),
        DocumentFormat::Yaml => {
            crate::formats::yaml_write::from_json_text(&json_text(&explanation))
        }
        DocumentFormat::Text => text(&explanation, global.color.enabled(Stream::Stdout)),
    };
    write::stdout(&text).map_err(Error::Output)?;
    summary(
        &explanation,
        &Styles::new(global.color.enabled(Stream::Stderr)),
    );
    Ok(if explanation.failed() {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

fn not_meshed(namespace: &str, name: &str, e: &inputs::NotMeshed) -> Error {
    Error::Data(format!(
        "pod {namespace}/{name} has no Envoy bootstrap to explain: {e} (`kubectl mesh-doctor pod {name} -n {namespace}` tells why)"
    ))
}

/// Reads the ConfigMaps the bootstrap depends on, concurrently. What cannot be read becomes a
/// note (mesh ConfigMaps) or an `Unknown` check.
async fn surroundings(
    cluster: &Cluster,
    pod: &Pod,
    namespace: &str,
) -> (Surroundings, Vec<String>) {
    let c = cluster;
    let in_namespace = || Api::<ConfigMap>::namespaced(c.client.clone(), namespace);
    let in_istio = || Api::<ConfigMap>::namespaced(c.client.clone(), ISTIO_NAMESPACE);
    let revision = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .filter(|r| !r.is_empty() && *r != "default")
        .map(|r| format!("istio-{r}"));
    let override_name = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BOOTSTRAP_OVERRIDE_ANNOTATION))
        .cloned();
    let (mesh, mesh_revision, root_cert, custom) = tokio::join!(
        c.get_opt(in_istio(), "istio"),
        async {
            match &revision {
                Some(name) => Some(c.get_opt(in_istio(), name).await),
                None => None,
            }
        },
        c.get_opt(in_namespace(), ROOT_CERT_CONFIG_MAP),
        async {
            match &override_name {
                Some(name) if !name.is_empty() => Some(c.get_opt(in_namespace(), name).await),
                Some(_) => Some(Ok(None)),
                None => None,
            }
        },
    );
    let mut notes = Vec::new();
    let mut mesh_config_maps = Vec::new();
    for (name, result) in [("istio".to_string(), Some(mesh))]
        .into_iter()
        .chain(revision.clone().map(|r| (r, mesh_revision)))
    {
        match result {
            Some(Ok(Some(cm))) => mesh_config_maps.push(cm),
            Some(Ok(None)) | None => {}
            Some(Err(e)) => {
                let reason = e.reason();
                notes.push(format!(
                    "the mesh ConfigMap {ISTIO_NAMESPACE}/{name} could not be read ({reason}): its defaultConfig is not taken into account"
                ));
            }
        }
    }
    (
        Surroundings {
            mesh_config_maps,
            root_cert: lookup(root_cert),
            bootstrap_override: custom.map(lookup),
        },
        notes,
    )
}

/// Why the proxy is not asked: its container is not running.
fn not_running(pod: &Pod) -> Option<String> {
    let status = sidecar::proxy_status(pod)?;
    let state = status.state.as_ref()?;
    if state.running.is_some() {
        return None;
    }
    if let Some(waiting) = &state.waiting {
        return Some(format!(
            "istio-proxy is not running ({})",
            waiting.reason.as_deref().unwrap_or("waiting")
        ));
    }
    if let Some(terminated) = &state.terminated {
        return Some(format!(
            "istio-proxy is not running (terminated, exit code {})",
            terminated.exit_code
        ));
    }
    None
}

/// The bootstrap the running Envoy loaded, from its admin port.
async fn live_bootstrap(
    cluster: &Cluster,
    pod: &Pod,
    admin_port: u16,
    request: &Request,
) -> LiveBootstrap {
    if let Some(reason) = not_running(pod) {
        return Err(reason);
    }
    if !request.probe {
        return Err("not asked (--no-probe)".to_string());
    }
    let limits = Limits {
        connect_timeout: request.probe_timeout,
        request_timeout: request.probe_timeout,
        ..Limits::default()
    };
    let path = format!("/config_dump?mask={}", url_encode("bootstrap"));
    if request.direct {
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.as_deref())
            .and_then(|ip| ip.parse::<IpAddr>().ok())
            .ok_or_else(|| "the pod has no IP address yet".to_string())?;
        fetch(&Direct::new(ip, limits), admin_port, &path).await
    } else {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let transport = PortForward::new(cluster.upgrades.clone(), namespace, name, limits);
        fetch(&transport, admin_port, &path).await
    }
}

async fn fetch<T: Transport>(transport: &T, port: u16, path: &str) -> LiveBootstrap {
    let response = transport
        .get(port, path)
        .await
        .map_err(|e| format!("admin port {port}: {e}"))?;
    if response.status != 200 {
        let body = response.snippet();
        return Err(if body.trim().is_empty() {
            format!("/config_dump answered HTTP {}", response.status)
        } else {
            format!("/config_dump answered HTTP {}: {body}", response.status)
        });
    }
    let dump: Value = serde_json::from_slice(&response.body)
        .map_err(|e| format!("/config_dump is not JSON: {e}"))?;
    let bootstrap = overlay::bootstrap_of_config_dump(&dump)
        .cloned()
        .ok_or_else(|| "/config_dump has no bootstrap section".to_string())?;
    Ok((
        format!("/config_dump through {}", transport.describe()),
        bootstrap,
    ))
}

// ------------------------------------------------------------------ rendering

/// `bootstrap explain -o json`: the explanation, and whether it passed.
#[derive(serde::Serialize)]
struct ExplainJson<'a> {
    #[serde(flatten)]
    explanation: &'a Explanation,
    passed: bool,
}

pub(super) fn json_text(explanation: &Explanation) -> String {
    document(&ExplainJson {
        explanation,
        passed: !explanation.failed(),
    })
}

fn status_color(status: Status) -> Option<Tone> {
    match status {
        Status::Ok => Some(Tone::Ok),
        Status::Info => None,
        Status::Unknown | Status::Warning => Some(Tone::Warning),
        Status::Error => Some(Tone::Error),
    }
}

fn new_table(colored: bool, header: &[&str]) -> Table {
    let mut table = crate::output::table::plain(colored);
    crate::output::table::header(&mut table, header, colored);
    table
}

fn colored_cell(text: String, tone: Option<Tone>, colored: bool) -> Cell {
    crate::output::table::cell(text, tone, colored)
}

/// `ok: a type istiod knows`, `error: ConfigMap not found`, `-`.
fn check_text(ingredient: &Ingredient) -> String {
    match (ingredient.status, ingredient.check.is_empty()) {
        (Status::Info, true) => "-".to_string(),
        (Status::Info, false) => ingredient.check.clone(),
        (status, true) => status.as_str().to_string(),
        (status, false) => format!("{}: {}", status.as_str(), ingredient.check),
    }
}

/// The table of one group.
fn group_table(rows: &[&Ingredient], colored: bool) -> String {
    let mut table = new_table(colored, &["INGREDIENT", "VALUE", "SOURCE", "CHECK"]);
    for i in rows {
        let value = if i.value.is_empty() {
            "-".to_string()
        } else {
            one_line(&i.value, VALUE_WIDTH)
        };
        table.add_row(vec![
            Cell::new(&i.name),
            Cell::new(value),
            Cell::new(one_line(&i.source, 2 * VALUE_WIDTH)),
            colored_cell(check_text(i), status_color(i.status), colored),
        ]);
    }
    trim_lines(&table.to_string())
}

/// comfy-table pads every cell, the last one too: no trailing blanks in the output.
fn trim_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn text(e: &Explanation, colored: bool) -> String {
    let styles = Styles::new(colored);
    let heading = |text: &str| styles.paint(styles.heading, text);
    let mut out = String::new();
    let kind = if e.native_sidecar {
        "native sidecar (init container)"
    } else {
        "sidecar container"
    };
    out.push_str(&format!(
        "Pod {}/{}: istio-proxy is a {kind}, pod IP {}\n",
        e.namespace,
        e.pod,
        e.pod_ip.as_deref().unwrap_or("<none yet>")
    ));
    out.push_str(&format!("node.id {}\n", e.node_id));
    for group in [
        Group::NodeId,
        Group::Bootstrap,
        Group::Metadata,
        Group::Credentials,
        Group::CustomBootstrap,
    ] {
        let rows: Vec<&Ingredient> = e.ingredients.iter().filter(|i| i.group == group).collect();
        if rows.is_empty() {
            continue;
        }
        let title = if group == Group::NodeId {
            "node.id ingredients".to_string()
        } else {
            group.title().to_string()
        };
        out.push('\n');
        out.push_str(&heading(&title));
        out.push('\n');
        out.push_str(&group_table(&rows, colored));
    }

    let problems: Vec<&Ingredient> = e
        .ingredients
        .iter()
        .filter(|i| i.detail.is_some() && i.status >= Status::Unknown)
        .collect();
    if !problems.is_empty() {
        out.push('\n');
        out.push_str(&heading("Problems"));
        out.push('\n');
        for i in problems {
            let level = styles.paint(status_style(&styles, i.status), i.status.as_str());
            out.push_str(&format!(
                "  {level} {}: {}\n",
                i.name,
                i.detail.as_deref().unwrap_or_default()
            ));
        }
    }

    if !e.override_problems.is_empty() {
        let cm = e
            .ingredients
            .iter()
            .find(|i| i.group == Group::CustomBootstrap)
            .map(|i| i.value.clone())
            .unwrap_or_default();
        out.push('\n');
        out.push_str(&heading(&format!(
            "bootstrapOverride ({cm}) merged over pilot-agent's bootstrap"
        )));
        out.push('\n');
        for p in &e.override_problems {
            let level = styles.paint(status_style(&styles, p.status), p.status.as_str());
            let location = match (p.line, p.column) {
                (Some(line), Some(column)) => format!(" {BOOTSTRAP_OVERRIDE_KEY}:{line}:{column}"),
                (Some(line), None) => format!(" {BOOTSTRAP_OVERRIDE_KEY}:{line}"),
                _ => String::new(),
            };
            let path = if p.path.is_empty() {
                String::new()
            } else {
                format!(" {}", styles.paint(styles.code, &p.path))
            };
            out.push_str(&format!(
                "  {level} [{}]{location}{path}\n      {}\n",
                p.code, p.message
            ));
        }
    }

    out.push('\n');
    if e.live.available {
        out.push_str(&heading(&format!(
            "live bootstrap ({})",
            e.live.via.as_deref().unwrap_or("admin port")
        )));
        out.push('\n');
        let mut table = new_table(colored, &["FIELD", "EXPECTED", "LIVE", "RESULT"]);
        for f in &e.live.fields {
            let (result, color) = match f.matches {
                Some(true) => ("match", Some(Tone::Ok)),
                Some(false) => ("differs", Some(Tone::Warning)),
                None => ("not compared", None),
            };
            let shown = |v: &str| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    one_line(v, VALUE_WIDTH)
                }
            };
            table.add_row(vec![
                Cell::new(&f.field),
                Cell::new(shown(&f.expected)),
                Cell::new(shown(&f.live)),
                colored_cell(result.to_string(), color, colored),
            ]);
        }
        out.push_str(&trim_lines(&table.to_string()));
        let differing = e.live.mismatches();
        if differing == 0 {
            out.push_str("The running Envoy has the bootstrap the pod spec says it should.\n");
        } else {
            out.push_str(&format!(
                "{differing} field(s) of the running Envoy differ from what the pod spec gives: a bootstrapOverride, a custom bootstrap file, or a pod spec changed since the proxy started (restart the pod to apply it).\n"
            ));
        }
    } else {
        out.push_str(&format!(
            "live bootstrap: not available ({})\n",
            e.live.reason.as_deref().unwrap_or("unknown reason")
        ));
    }

    if !e.notes.is_empty() {
        out.push('\n');
        out.push_str(&heading("Notes"));
        out.push('\n');
        for note in &e.notes {
            out.push_str(&format!("  {note}\n"));
        }
    }
    out
}

fn status_style(styles: &Styles, status: Status) -> owo_colors::Style {
    match status {
        Status::Ok => styles.ok,
        Status::Info => styles.info,
        Status::Unknown | Status::Warning => styles.warning,
        Status::Error => styles.error,
    }
}

/// One line on stderr.
fn summary(e: &Explanation, styles: &Styles) {
    let errors = e.count(Status::Error);
    let warnings = e.count(Status::Warning);
    let unknown = e.count(Status::Unknown);
    let differing = e.live.mismatches();
    let who = format!("{}/{}", e.namespace, e.pod);
    if errors + warnings + unknown + differing == 0 {
        eprintln!(
            "{} the bootstrap inputs of {who} pass every check.",
            styles.paint(styles.ok, "\u{2714}")
        );
        return;
    }
    let mark = if errors > 0 {
        styles.paint(styles.error, "\u{2718}")
    } else {
        styles.paint(styles.warning, "!")
    };
    let mut parts = vec![
        format!("{errors} error(s)"),
        format!("{warnings} warning(s)"),
    ];
    if unknown > 0 {
        parts.push(format!("{unknown} not checked"));
    }
    if differing > 0 {
        parts.push(format!("{differing} live difference(s)"));
    }
    eprintln!("{mark} {who}: {}.", parts.join(", "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut() {
        assert_eq!(one_line("a\n  b", 10), "a b");
        assert_eq!(one_line("abcdefghijkl", 5), "abcd…");
    }
}
