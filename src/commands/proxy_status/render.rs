//! Renders `proxy-status`: istioctl's table (plus STATUS, and ENVOY with `--probe`), the
//! per-type table (`-v`), `-o wide`, JSON and YAML. Nothing is decided here.

use comfy_table::Cell;
use serde::Serialize;
use serde_json::Value;

use crate::commands::proxy_status::status::{
    EnvoyState, FailOn, IstiodSummary, PodSummary, Report, Row, RowState, Skew,
};
use crate::formats::duration::human_duration;
use crate::formats::text::one_line;
use crate::istio::syncz::{self, SyncState, TypeStatus};
use crate::output::style::Tone;

/// How the table looks.
#[derive(Clone, Copy, Debug)]
pub struct TableOptions {
    /// One column per xDS type (`-v`).
    pub verbose: bool,
    /// More columns, reasons in full (`-o wide`).
    pub wide: bool,
    /// Colors (green synced, yellow stale, red error / not connected).
    pub colored: bool,
    pub now: jiff::Timestamp,
}

/// Reasons longer than this are cut in the normal table (`-o wide` shows them whole).
const REASON_WIDTH: usize = 80;

fn state_color(state: RowState) -> Option<Tone> {
    match state {
        RowState::Synced => Some(Tone::Ok),
        RowState::Connected
        | RowState::Starting
        | RowState::NotSent
        | RowState::Stale
        | RowState::Unknown => Some(Tone::Warning),
        RowState::Error | RowState::NotConnected => Some(Tone::Error),
        RowState::NotRunning => Some(Tone::Dim),
    }
}

fn sync_color(state: SyncState) -> Tone {
    match state {
        SyncState::Synced => Tone::Ok,
        SyncState::NotSent | SyncState::Stale => Tone::Warning,
        SyncState::Error => Tone::Error,
    }
}

fn cell(text: impl Into<String>, tone: Option<Tone>, options: &TableOptions) -> Cell {
    crate::output::table::cell(text, tone, options.colored)
}

fn dash(value: Option<&str>) -> String {
    value.filter(|v| !v.is_empty()).unwrap_or("-").to_string()
}

/// `SYNCED (2m5s)`: the state and how long ago istiod last sent the type.
pub fn type_cell_text(status: &TypeStatus, now: jiff::Timestamp) -> String {
    match status.last_sent {
        Some(sent) => format!(
            "{} ({})",
            status.state.as_str(),
            human_duration(now.as_second() - sent.as_second())
        ),
        None => status.state.as_str().to_string(),
    }
}

/// istioctl's `5 (CDS,LDS,EDS,RDS,ECDS)`, or `0`.
fn subscribed(row: &Row) -> String {
    if !row.connected() {
        return "-".to_string();
    }
    if row.types.is_empty() {
        return "0".to_string();
    }
    let names: Vec<&str> = row.types.iter().map(TypeStatus::short).collect();
    format!("{} ({})", names.len(), names.join(","))
}

fn version_text(row: &Row) -> (String, Option<Tone>) {
    let version = dash(row.version.as_deref());
    match &row.skew {
        Some(skew) if skew.supported => (format!("{version} [skew]"), Some(Tone::Warning)),
        Some(_) => (format!("{version} [skew!]"), Some(Tone::Error)),
        None => (version, None),
    }
}

fn envoy_text(row: &Row) -> (String, Option<Tone>) {
    match &row.envoy {
        None => ("-".to_string(), None),
        Some(e) => match (&e.state, &e.error) {
            (Some(state), _) => {
                let color = if e.is_live() { Tone::Ok } else { Tone::Warning };
                (state.clone(), Some(color))
            }
            (None, Some(_)) => ("UNREACHABLE".to_string(), Some(Tone::Error)),
            (None, None) => ("-".to_string(), None),
        },
    }
}

/// The type URLs that get a column with `-v`: CDS, LDS, EDS, RDS, ECDS and any other type a
/// proxy subscribed to.
fn type_columns(report: &Report) -> Vec<String> {
    let mut urls: Vec<String> = syncz::MAIN_TYPES.iter().map(|s| s.to_string()).collect();
    for row in &report.rows {
        for t in &row.types {
            if !urls.iter().any(|u| syncz::short_type(u) == t.short()) {
                urls.push(t.type_url.clone());
            }
        }
    }
    urls.sort_by(|a, b| syncz::type_order(a, b));
    urls
}

/// The table, ending with a newline. Header only when there are no rows (as istioctl).
pub fn table(report: &Report, options: &TableOptions) -> String {
    let probe = report.rows.iter().any(|r| r.envoy.is_some());
    let any_reason = report.rows.iter().any(|r| r.reason.is_some());
    let type_urls = if options.verbose {
        type_columns(report)
    } else {
        Vec::new()
    };

    let mut header: Vec<String> = vec!["NAME".into(), "CLUSTER".into()];
    if options.verbose {
        header.extend(type_urls.iter().map(|u| syncz::short_type(u).to_string()));
    }
    header.push("ISTIOD".into());
    if options.wide {
        header.push("ISTIOD VERSION".into());
    }
    header.push("VERSION".into());
    if options.wide {
        header.push("TYPE".into());
        header.push("POD".into());
    }
    if !options.verbose {
        header.push("SUBSCRIBED TYPES".into());
    }
    header.push("STATUS".into());
    if probe {
        header.push("ENVOY".into());
    }
    if any_reason {
        header.push("REASON".into());
    }

    let mut table = crate::output::table::plain(options.colored);
    crate::output::table::header(&mut table, &header, options.colored);

    for row in &report.rows {
        let mut cells = vec![
            Cell::new(&row.name),
            Cell::new(dash(row.cluster.as_deref())),
        ];
        if options.verbose {
            for url in &type_urls {
                cells.push(
                    match row
                        .types
                        .iter()
                        .find(|t| t.short() == syncz::short_type(url))
                    {
                        Some(t) => cell(
                            type_cell_text(t, options.now),
                            Some(sync_color(t.state)),
                            options,
                        ),
                        None if row.connected() => Cell::new("IGNORED"),
                        None => Cell::new("-"),
                    },
                );
            }
        }
        cells.push(Cell::new(dash(row.istiod.as_deref())));
        if options.wide {
            cells.push(Cell::new(dash(row.istiod_version.as_deref())));
        }
        let (version, version_color) = version_text(row);
        cells.push(cell(version, version_color, options));
        if options.wide {
            cells.push(Cell::new(dash(row.proxy_type.as_deref())));
            cells.push(Cell::new(match &row.pod_status {
                Some(p) if p.proxy_restarts > 0 => {
                    format!("{} {} ({} restarts)", p.phase, p.ready, p.proxy_restarts)
                }
                Some(p) => format!("{} {}", p.phase, p.ready),
                None => "-".to_string(),
            }));
        }
        if !options.verbose {
            cells.push(Cell::new(subscribed(row)));
        }
        cells.push(cell(row.state.as_str(), state_color(row.state), options));
        if probe {
            let (text, color) = envoy_text(row);
            cells.push(cell(text, color, options));
        }
        if any_reason {
            let reason = row.reason.as_deref().unwrap_or("");
            cells.push(Cell::new(if options.wide {
                one_line(reason, usize::MAX)
            } else {
                one_line(reason, REASON_WIDTH)
            }));
        }
        table.add_row(cells);
    }
    crate::output::table::render(table, "", 3)
}

/// The full story of one proxy (`proxy-status POD`), after its table row.
pub fn details(row: &Row, options: &TableOptions) -> String {
    let mut out = String::new();
    let label = |out: &mut String, key: &str, value: &str| {
        out.push_str(&format!("{key:<10}{value}\n"));
    };
    out.push('\n');
    label(&mut out, "Proxy:", &row.name);
    if let (Some(pod), Some(ns)) = (&row.pod, &row.namespace) {
        let status = row
            .pod_status
            .as_ref()
            .map(|p| {
                let mut s = format!(" ({}, {} ready", p.phase, p.ready);
                if p.proxy_restarts > 0 {
                    s.push_str(&format!(
                        ", istio-proxy restarted {} times",
                        p.proxy_restarts
                    ));
                }
                if p.native_sidecar {
                    s.push_str(", native sidecar");
                }
                s.push(')');
                s
            })
            .unwrap_or_default();
        label(&mut out, "Pod:", &format!("{ns}/{pod}{status}"));
    }
    label(
        &mut out,
        "Istiod:",
        &match (&row.istiod, &row.istiod_version) {
            (Some(i), Some(v)) => format!("{i} ({v})"),
            (Some(i), None) => i.clone(),
            (None, _) => "none: unknown to every istiod asked".into(),
        },
    );
    let (version, _) = version_text(row);
    let source = match row.version_source {
        Some(crate::commands::proxy_status::status::VersionSource::Image) => {
            " (from the istio-proxy image)"
        }
        _ => "",
    };
    label(&mut out, "Version:", &format!("{version}{source}"));
    if let Some(skew) = &row.skew {
        let text = if skew.minors_behind > 0 {
            format!(
                "{} minor version{} behind istiod {}",
                skew.minors_behind,
                if skew.minors_behind == 1 { "" } else { "s" },
                skew.istiod
            )
        } else {
            format!("ahead of istiod {}", skew.istiod)
        };
        let support = if skew.supported {
            "supported"
        } else {
            "not supported by Istio"
        };
        label(&mut out, "Skew:", &format!("{text} ({support})"));
    }
    label(&mut out, "Status:", row.state.as_str());
    // A rejection is told in full under Types.
    if let Some(reason) = &row.reason
        && row.types.iter().all(|t| t.error.is_none())
    {
        label(&mut out, "Reason:", reason);
    }
    if let Some(envoy) = &row.envoy {
        let text = match (&envoy.state, &envoy.error) {
            (Some(s), _) => format!("{s} (via {})", envoy.via),
            (None, Some(e)) => format!("no answer (via {}): {e}", envoy.via),
            _ => "-".to_string(),
        };
        label(&mut out, "Envoy:", &text);
    }
    if !row.types.is_empty() {
        out.push_str("Types:\n");
        for t in &row.types {
            let sent = t
                .last_sent
                .map(|s| {
                    format!(
                        "  last sent {} ago",
                        human_duration(options.now.as_second() - s.as_second())
                    )
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<5} {:<9}{sent}\n",
                t.short(),
                t.state.as_str()
            ));
            if let Some(error) = &t.error {
                let mut lines = error.lines().filter(|l| !l.trim().is_empty());
                if let Some(first) = lines.next() {
                    out.push_str(&format!("        rejected: {first}\n"));
                }
                for line in lines {
                    out.push_str(&format!("                  {line}\n"));
                }
            }
        }
    }
    out
}

/// One xDS type of a connected row.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TypeJson<'a> {
    #[serde(rename = "type")]
    short: &'a str,
    type_url: &'a str,
    status: SyncState,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_sent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    age_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sent_nonce: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    acked_nonce: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

impl<'a> TypeJson<'a> {
    fn of(t: &'a TypeStatus, now: jiff::Timestamp) -> TypeJson<'a> {
        TypeJson {
            short: t.short(),
            type_url: &t.type_url,
            status: t.state,
            last_sent: t.last_sent.map(|sent| sent.to_string()),
            age_seconds: t.last_sent.map(|sent| now.as_second() - sent.as_second()),
            sent_nonce: t.sent_nonce.as_deref(),
            acked_nonce: t.acked_nonce.as_deref(),
            error: t.error.as_deref(),
        }
    }
}

/// One row as JSON; absent facts are left out.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowJson<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    istiod: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    istiod_version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proxy_type: Option<&'a str>,
    status: String,
    /// Connected rows only.
    #[serde(skip_serializing_if = "Option::is_none")]
    types: Option<Vec<TypeJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_skew: Option<&'a Skew>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod_status: Option<&'a PodSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    envoy: Option<&'a EnvoyState>,
}

impl<'a> RowJson<'a> {
    pub fn of(row: &'a Row, now: jiff::Timestamp) -> RowJson<'a> {
        RowJson {
            name: &row.name,
            namespace: row.namespace.as_deref(),
            pod: row.pod.as_deref(),
            cluster: row.cluster.as_deref(),
            istiod: row.istiod.as_deref(),
            istiod_version: row.istiod_version.as_deref(),
            version: row.version.as_deref(),
            version_source: row.version_source.map(|s| s.as_str()),
            proxy_type: row.proxy_type.as_deref(),
            status: row.state.json_name(),
            types: row
                .connected()
                .then(|| row.types.iter().map(|t| TypeJson::of(t, now)).collect()),
            reason: row.reason.as_deref(),
            version_skew: row.skew.as_ref(),
            pod_status: row.pod_status.as_ref(),
            envoy: row.envoy.as_ref(),
        }
    }
}

/// The document of `-o json` and `-o yaml`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportJson<'a> {
    istiods: &'a [IstiodSummary],
    #[serde(skip_serializing_if = "Option::is_none")]
    no_istiod: Option<&'a str>,
    pods_listed: bool,
    proxies: Vec<RowJson<'a>>,
    counts: Counts,
    fail_on: Vec<&'static str>,
    failing: Vec<&'a str>,
}

/// The number of rows per status, in the order of the statuses (an object in JSON).
struct Counts(Vec<(String, usize)>);

impl Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(state, n)| (state, n)))
    }
}

/// The whole report as one JSON value: istiods, proxies (the table's rows), counts and what
/// fails. The outputs are written without it ([`write_json`], [`write_yaml`]); the tests hold
/// them to it.
#[cfg(test)]
pub fn json_value(report: &Report, now: jiff::Timestamp, fail_on: &[FailOn]) -> Value {
    serde_json::to_value(report_json(report, now, fail_on)).unwrap_or_default()
}

/// `-o json`: the document of [`json_value`], written to `out` straight from the report, neither
/// a value tree nor the whole text in between (for 10,000 proxies the tree took about 100 MB,
/// the text 22 MB).
pub fn write_json(
    out: &mut dyn std::io::Write,
    report: &Report,
    now: jiff::Timestamp,
    fail_on: &[FailOn],
) -> std::io::Result<()> {
    crate::output::json::write_document(out, &report_json(report, now, fail_on))
}

/// `-o yaml`: the document of [`json_value`], written to `out` a row at a time (the value tree of
/// 10,000 proxies took about 100 MB): everything but the rows as one small value, each row
/// converted and written where it stands in the document, the same text as the whole.
pub fn write_yaml(
    out: &mut dyn std::io::Write,
    report: &Report,
    now: jiff::Timestamp,
    fail_on: &[FailOn],
) -> std::io::Result<()> {
    use crate::formats::yaml_write;
    let mut without_rows = report_json(report, now, fail_on);
    let rows = std::mem::take(&mut without_rows.proxies);
    let entries = match serde_json::to_value(without_rows).unwrap_or_default() {
        Value::Object(entries) => entries,
        other => return out.write_all(yaml_write::to_string(&other).as_bytes()),
    };
    for (key, value) in entries {
        if key == "proxies" && !rows.is_empty() {
            out.write_all(b"proxies:\n")?;
            for row in &rows {
                let item = Value::Array(vec![serde_json::to_value(row).unwrap_or_default()]);
                out.write_all(yaml_write::to_string(&item).as_bytes())?;
            }
        } else {
            let entry = Value::Object([(key, value)].into_iter().collect());
            out.write_all(yaml_write::to_string(&entry).as_bytes())?;
        }
    }
    Ok(())
}

fn report_json<'a>(
    report: &'a Report,
    now: jiff::Timestamp,
    fail_on: &'a [FailOn],
) -> ReportJson<'a> {
    ReportJson {
        istiods: &report.istiods,
        no_istiod: report.no_istiod.as_deref(),
        pods_listed: report.pods_listed,
        proxies: report.rows.iter().map(|r| RowJson::of(r, now)).collect(),
        counts: Counts(
            report
                .counts()
                .into_iter()
                .map(|(state, n)| (state.json_name(), n))
                .collect(),
        ),
        fail_on: fail_on.iter().map(|f| f.as_str()).collect(),
        failing: report.failing(fail_on).map(|r| r.name.as_str()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::proxy_status::status::{
        EnvoyState, Inputs, IstiodAnswer, PodFacts, build,
    };
    use crate::istio::syncz::parse;
    use k8s_openapi::api::core::v1::Pod;

    fn now() -> jiff::Timestamp {
        "2026-11-29T16:07:00Z".parse().unwrap()
    }

    fn report(fixture: &str) -> Report {
        let istiods = [IstiodAnswer {
            name: "istiod-testenv".into(),
            version: Some("1.31.0-dev-eed52ebb".into()),
            revision: None,
            via: "port-forward to istio-system/istiod-testenv:15014".into(),
            syncz: parse(fixture).map_err(|e| e.to_string()),
        }];
        let pods: Vec<Pod> = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/pods.json"
        )))
        .map(|list: serde_json::Value| serde_json::from_value(list["items"].clone()).unwrap())
        .unwrap();
        let pods: Vec<PodFacts> = pods.iter().map(|p| PodFacts::of(p, now())).collect();
        build(&Inputs {
            istiods: &istiods,
            pods: Some(&pods),
            namespace: None,
            no_istiod: None,
        })
    }

    fn options(verbose: bool, wide: bool) -> TableOptions {
        TableOptions {
            verbose,
            wide,
            colored: false,
            now: now(),
        }
    }

    #[test]
    fn default_table() {
        let r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/synced.json"
        )));
        insta::assert_snapshot!(table(&r, &options(false, false)));
    }

    #[test]
    fn verbose_table_with_stale_types() {
        let r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/stale.json"
        )));
        insta::assert_snapshot!(table(&r, &options(true, false)));
    }

    #[test]
    fn wide_table_with_errors_and_probe() {
        let mut r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/error.json"
        )));
        for row in &mut r.rows {
            if row.pod.as_deref() == Some("web-1") {
                crate::commands::proxy_status::status::attach_probe(
                    row,
                    EnvoyState {
                        state: Some("LIVE".into()),
                        error: None,
                        via: "port-forward to shop/web-1".into(),
                    },
                );
            }
        }
        insta::assert_snapshot!(table(&r, &options(false, true)));
    }

    #[test]
    fn colors_only_when_asked() {
        let r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/synced.json"
        )));
        let mut o = options(false, false);
        assert!(!table(&r, &o).contains('\u{1b}'));
        o.colored = true;
        let colored = table(&r, &o);
        assert!(
            colored.contains("\u{1b}[38;5;10mSYNCED")
                || colored.contains("\u{1b}[32mSYNCED")
                || colored.contains("SYNCED\u{1b}"),
            "{colored:?}"
        );
    }

    #[test]
    fn json_rows() {
        let r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/stale.json"
        )));
        let value = json_value(
            &r,
            now(),
            &[FailOn::Stale, FailOn::Error, FailOn::Disconnected],
        );
        insta::assert_json_snapshot!(value);
    }

    #[test]
    fn one_proxy_in_detail() {
        let r = report(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/syncz/error.json"
        )));
        let row = r.rows.iter().find(|r| r.name == "web-1.shop").unwrap();
        insta::assert_snapshot!(details(row, &options(true, false)));
    }

    #[test]
    fn no_proxies_prints_the_header() {
        let r = Report::default();
        assert_eq!(
            table(&r, &options(false, false)),
            "NAME   CLUSTER   ISTIOD   VERSION   SUBSCRIBED TYPES   STATUS\n"
        );
    }

    /// Every key a row, a type and an istiod can have in `-o json`, byte for byte: a connected
    /// row with every fact and a type pushed, rejected and acknowledged; an unconnected one with
    /// its pod status; an istiod that answered and one that did not.
    #[test]
    fn json_keys_are_pinned() {
        use crate::commands::proxy_status::status::{
            IstiodSummary, PodSummary, Skew, VersionSource,
        };
        let sent: jiff::Timestamp = "2026-11-29T15:49:10Z".parse().unwrap();
        let connected = Row {
            name: "web-1.shop".into(),
            namespace: Some("shop".into()),
            pod: Some("web-1".into()),
            cluster: Some("Kubernetes".into()),
            istiod: Some("istiod-1".into()),
            istiod_version: Some("1.24.1".into()),
            version: Some("1.22.0".into()),
            version_source: Some(VersionSource::Istiod),
            proxy_type: Some("sidecar".into()),
            state: RowState::Error,
            types: vec![
                TypeStatus {
                    type_url: "type.googleapis.com/envoy.config.cluster.v3.Cluster".into(),
                    state: SyncState::Error,
                    last_sent: Some(sent),
                    sent_nonce: Some("n2".into()),
                    acked_nonce: Some("n1".into()),
                    error: Some("rejected: bad \"cluster\"".into()),
                },
                TypeStatus {
                    type_url: "type.googleapis.com/envoy.config.listener.v3.Listener".into(),
                    state: SyncState::NotSent,
                    last_sent: None,
                    sent_nonce: None,
                    acked_nonce: None,
                    error: None,
                },
            ],
            reason: Some("CDS rejected".into()),
            skew: Some(Skew {
                proxy: "1.22.0".into(),
                istiod: "1.24.1".into(),
                minors_behind: 2,
                supported: false,
            }),
            pod_status: None,
            envoy: Some(EnvoyState {
                state: Some("LIVE".into()),
                error: None,
                via: "port-forward".into(),
            }),
        };
        let unconnected = Row {
            name: "api-0.shop".into(),
            namespace: Some("shop".into()),
            pod: Some("api-0".into()),
            cluster: None,
            istiod: None,
            istiod_version: None,
            version: Some("1.24.1".into()),
            version_source: Some(VersionSource::Image),
            proxy_type: None,
            state: RowState::NotConnected,
            types: vec![],
            reason: Some("CrashLoopBackOff".into()),
            skew: None,
            pod_status: Some(PodSummary {
                phase: "Running".into(),
                ready: "1/2".into(),
                proxy_restarts: 4,
                native_sidecar: false,
                proxy_running: false,
            }),
            envoy: Some(EnvoyState {
                state: None,
                error: Some("connection refused".into()),
                via: "10.0.0.7".into(),
            }),
        };
        let report = Report {
            istiods: vec![
                IstiodSummary {
                    name: "istiod-1".into(),
                    version: Some("1.24.1".into()),
                    revision: Some("default".into()),
                    via: "port-forward".into(),
                    proxies: 1,
                    error: None,
                },
                IstiodSummary {
                    name: "istiod-2".into(),
                    version: None,
                    revision: None,
                    via: "10.0.0.2:15014".into(),
                    proxies: 0,
                    error: Some("timed out".into()),
                },
            ],
            rows: vec![unconnected, connected],
            pods_listed: true,
            no_istiod: Some("none answered".into()),
        };
        let fail_on = [FailOn::Error, FailOn::Disconnected];
        let value = json_value(&report, now(), &fail_on);
        // `-o json` and `-o yaml` are written without the value; the text is the same.
        type Writer =
            fn(&mut dyn std::io::Write, &Report, jiff::Timestamp, &[FailOn]) -> std::io::Result<()>;
        let written = |write: Writer, report: &Report| {
            let mut out = Vec::new();
            write(&mut out, report, now(), &fail_on).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            written(write_json, &report),
            crate::output::json::document(&value)
        );
        assert_eq!(
            written(write_yaml, &report),
            crate::formats::yaml_write::to_string(&value)
        );
        let no_rows = Report {
            istiods: report.istiods.clone(),
            ..Report::default()
        };
        assert_eq!(
            written(write_yaml, &no_rows),
            crate::formats::yaml_write::to_string(&json_value(&no_rows, now(), &fail_on))
        );
        insta::assert_snapshot!(
            "json_keys",
            crate::output::json::document(&value) + &crate::formats::yaml_write::to_string(&value)
        );
    }
}
