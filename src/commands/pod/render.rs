//! Renders one pod's [`Diagnosis`]: sections for people (Pod, Sidecar, Verdict, Evidence,
//! Checked causes, Traffic, Next steps), or one JSON document. Nothing is decided here.

use serde_json::Value;

use super::PodReport;
use super::traffic::Traffic;
use crate::diagnosis::{CheckStatus, ContainerSummary, Diagnosis, VerdictKind};
use crate::envoy::admin::xds_source;
use crate::findings::messages::Level;
use crate::formats::duration::human_duration;
use crate::output::findings::FindingJson;
use crate::output::style::Styles;
use crate::probe::admin::CertRole;
use crate::probe::{LogScan, ProbeResult, Probed};

/// `pod -o json`: the diagnosis, then its level, its findings as `analyze` writes them, and the
/// raw probe results.
#[derive(serde::Serialize)]
struct PodJson<'a> {
    #[serde(flatten)]
    diagnosis: &'a Diagnosis,
    level: Option<&'static str>,
    findings: Vec<FindingJson<'a>>,
    probe: Value,
}

/// `pod -o json` with the traffic view: the document of [`json`] and `traffic` (its findings as
/// `analyze` writes them), or `trafficNotRead` with the reason.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportJson<'a> {
    #[serde(flatten)]
    pod: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    traffic: Option<TrafficJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    traffic_not_read: Option<&'a str>,
}

#[derive(serde::Serialize)]
struct TrafficJson<'a> {
    #[serde(flatten)]
    traffic: &'a Traffic,
    findings: Vec<FindingJson<'a>>,
}

/// The JSON document of `pod -o json`, traffic view included.
pub fn report_json(report: &PodReport) -> Value {
    let doc = ReportJson {
        pod: json(&report.diagnosis, report.probe.as_ref()),
        traffic: report.traffic.as_ref().ok().map(|t| TrafficJson {
            traffic: t,
            findings: t
                .findings
                .iter()
                .map(|f| FindingJson::of(f, false))
                .collect(),
        }),
        traffic_not_read: report.traffic.as_ref().err().map(String::as_str),
    };
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// [`report_json`] as text: pretty JSON ending with a newline.
pub fn report_json_text(report: &PodReport) -> String {
    let mut text = crate::output::json::pretty_json(&report_json(report));
    text.push('\n');
    text
}

/// The text of `pod NAME`, traffic view included.
pub fn report_text(report: &PodReport, styles: &Styles) -> String {
    render_text(
        &report.diagnosis,
        report.probe.as_ref(),
        Some(&report.traffic),
        styles,
    )
}

/// `probe` in `pod -o json` when the probe's result cannot be written as JSON.
#[derive(serde::Serialize)]
struct ProbeError {
    error: String,
}

/// The JSON document of `pod -o json`.
pub fn json(diagnosis: &Diagnosis, probe: Option<&ProbeResult>) -> Value {
    let probe = probe.map_or(Value::Null, |p| {
        serde_json::to_value(p).unwrap_or_else(|e| {
            let error = ProbeError {
                error: e.to_string(),
            };
            serde_json::to_value(error).unwrap_or_default()
        })
    });
    let doc = PodJson {
        diagnosis,
        level: diagnosis.level().map(Level::as_str),
        findings: diagnosis
            .findings
            .iter()
            .map(|f| FindingJson::of(f, false))
            .collect(),
        probe,
    };
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// `pod -o json` as text: pretty JSON ending with a newline.
pub fn json_text(diagnosis: &Diagnosis, probe: Option<&ProbeResult>) -> String {
    let mut text = crate::output::json::pretty_json(&json(diagnosis, probe));
    text.push('\n');
    text
}

struct Out<'a> {
    text: String,
    styles: &'a Styles,
}

impl Out<'_> {
    fn heading(&mut self, title: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text
            .push_str(&self.styles.paint(self.styles.heading, title));
        self.text.push('\n');
    }

    fn line(&mut self, text: &str) {
        self.text.push_str("  ");
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// `label   value`, labels padded to one column.
    fn field(&mut self, label: &str, value: &str) {
        self.line(&format!("{label:<18} {value}"));
    }
}

fn container_line(c: &ContainerSummary) -> String {
    let mut line = format!(
        "{}, {}, {} restart(s)",
        c.state,
        if c.ready { "ready" } else { "not ready" },
        c.restarts
    );
    if let Some(last) = &c.last_termination {
        line.push_str(&format!(", last terminated: {last}"));
    }
    line
}

fn probed_text<T>(item: &Probed<T>, ok: impl Fn(&T) -> String) -> String {
    match item {
        Probed::Ok(v) => ok(v),
        Probed::Error(e) => format!("no answer: {}", e.message),
        Probed::Skipped(reason) => format!("skipped: {reason}"),
    }
}

fn log_text(log: &Probed<LogScan>) -> String {
    probed_text(log, |scan| {
        let known = scan.matches.len();
        format!(
            "{} line(s) read, {}",
            scan.lines,
            match known {
                0 => "no known error".to_string(),
                1 => format!("1 known pattern ({})", scan.matches[0].signature.name()),
                n => format!(
                    "{n} known patterns ({})",
                    scan.matches
                        .iter()
                        .map(|m| m.signature.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        )
    })
}

fn sidecar_section(out: &mut Out<'_>, diagnosis: &Diagnosis, probe: Option<&ProbeResult>) {
    out.heading("Sidecar");
    if diagnosis.pod.proxy.is_none() {
        out.line("no istio-proxy container");
        return;
    }
    let Some(probe) = probe else {
        out.line("not probed (--no-probe)");
        return;
    };
    let admin = &probe.admin;
    if !admin.via.is_empty() {
        out.field("probed via", &admin.via);
    }
    if let Probed::Skipped(reason) = &admin.server_info {
        out.field("Envoy admin", &format!("skipped: {reason}"));
        out.field("log (current)", &log_text(&probe.logs.current));
        out.field("log (previous)", &log_text(&probe.logs.previous));
        return;
    }
    out.field(
        "Envoy state",
        &probed_text(&admin.server_info, |i| {
            let mut s = i.state.to_string();
            if let Some(up) = i.uptime_seconds {
                s.push_str(&format!(", up {}", human_duration(up as i64)));
            }
            if let Some(r) = i.release() {
                s.push_str(&format!(", Envoy {r}"));
            }
            s
        }),
    );
    out.field(
        "/ready",
        &probed_text(&admin.ready, |r| format!("{} {}", r.status, r.body)),
    );
    out.field(
        "15021 ready",
        &probed_text(&admin.health, |r| {
            format!(
                "{}{}",
                r.status,
                if r.is_ready() { " ready" } else { " not ready" }
            )
        }),
    );
    out.field(
        "xDS",
        &probed_text(&admin.stats, |s| {
            let mut parts = vec![xds_source(s, admin.bootstrap.ok())];
            for (name, c) in [("CDS", &s.cds), ("LDS", &s.lds)] {
                if let Some(c) = c {
                    parts.push(format!(
                        "{name} {} ok / {} failed / {} rejected",
                        c.success, c.failure, c.rejected
                    ));
                }
            }
            parts.join("; ")
        }),
    );
    if let Probed::Ok(b) = &admin.bootstrap {
        if let Some(id) = &b.node_id {
            out.field("node", id);
        }
        if let Some(version) = b.meta("ISTIO_VERSION") {
            out.field("Istio (bootstrap)", version);
        }
        if let Some(ads) = &b.ads_cluster {
            let target = b
                .static_cluster(ads)
                .map(|c| c.addresses.join(", "))
                .unwrap_or_else(|| "not a static cluster".to_string());
            out.field("ADS cluster", &format!("{ads} -> {target}"));
        }
    } else if let Probed::Error(e) = &admin.bootstrap {
        out.field("bootstrap", &format!("no answer: {}", e.message));
    }
    if let Probed::Ok(certs) = &admin.certs {
        let chain: Vec<String> = certs
            .iter()
            .filter(|c| c.role == CertRole::Chain)
            .map(|c| match c.expiration_time {
                Some(t) => format!("{} until {t}", c.source(admin.bootstrap.ok())),
                None => c.source(admin.bootstrap.ok()),
            })
            .collect();
        out.field(
            "certificates",
            &if chain.is_empty() {
                "no workload certificate".to_string()
            } else {
                chain.join("; ")
            },
        );
    }
    out.field("log (current)", &log_text(&probe.logs.current));
    out.field("log (previous)", &log_text(&probe.logs.previous));
}

/// The report for people. Colors come from `styles` (plain when colors are off).
pub fn text(diagnosis: &Diagnosis, probe: Option<&ProbeResult>, styles: &Styles) -> String {
    render_text(diagnosis, probe, None, styles)
}

fn render_text(
    diagnosis: &Diagnosis,
    probe: Option<&ProbeResult>,
    traffic: Option<&Result<Traffic, String>>,
    styles: &Styles,
) -> String {
    let mut out = Out {
        text: String::new(),
        styles,
    };
    let pod = &diagnosis.pod;

    out.heading("Pod");
    let mut where_ = format!("{}/{}  {}", pod.namespace, pod.name, pod.phase);
    if let Some(node) = &pod.node {
        where_.push_str(&format!("  node {node}"));
    }
    if let Some(ip) = &pod.pod_ip {
        where_.push_str(&format!("  IP {ip}"));
    }
    out.line(&where_);
    if let Some(proxy) = &pod.proxy {
        let label = if pod.native_sidecar {
            "istio-proxy (native)"
        } else {
            "istio-proxy"
        };
        out.field(label, &container_line(proxy));
        if let Some(image) = &pod.proxy_image {
            out.field("", image);
        }
    }
    for c in &pod.containers {
        out.field(&c.name, &container_line(c));
    }

    sidecar_section(&mut out, diagnosis, probe);

    out.heading("Verdict");
    let level = diagnosis.level();
    let (glyph, style) = match (diagnosis.verdict.kind, level) {
        (VerdictKind::Healthy | VerdictKind::AmbientCaptured, None) => ("\u{2714}", styles.ok),
        (_, Some(Level::Error)) => ("\u{2716}", styles.error),
        (_, Some(Level::Warning)) => ("!", styles.warning),
        _ => ("\u{2139}", styles.info),
    };
    out.line(&styles.paint(style, &format!("{glyph} {}", diagnosis.verdict.title)));
    out.line(&diagnosis.verdict.summary);
    for f in &diagnosis.findings {
        out.line(&format!(
            "{} {}",
            styles.paint(
                styles.level(f.level()),
                &format!("{} [{}]", f.level(), f.code())
            ),
            f.message
        ));
        out.line(&styles.paint(
            styles.dim,
            &format!("  see {}", f.message_type.documentation_url()),
        ));
    }
    if let Some(Ok(t)) = traffic
        && let Some(level) = t.findings.iter().map(|f| f.level()).min()
    {
        let glyph = match level {
            Level::Error => "\u{2716}",
            Level::Warning => "!",
            Level::Info => "\u{2139}",
        };
        out.line(&styles.paint(
            styles.level(level),
            &format!(
                "{glyph} traffic to the pod: {} finding(s) about the configuration that routes to it (see Traffic)",
                t.findings.len()
            ),
        ));
    }

    out.heading("Evidence");
    if diagnosis.evidence.is_empty() {
        out.line("none");
    }
    for e in &diagnosis.evidence {
        out.line(&format!(
            "{} {}",
            styles.paint(styles.code, &format!("{}:", e.source)),
            e.text
        ));
    }

    out.heading("Checked causes");
    if diagnosis.checks.is_empty() {
        out.line("none apply to this verdict");
    }
    for c in &diagnosis.checks {
        let (glyph, style) = match c.status {
            CheckStatus::Pass => ("\u{2714}", styles.ok),
            CheckStatus::Fail => ("\u{2716}", styles.error),
            CheckStatus::Unknown => ("?", styles.warning),
            CheckStatus::Skipped => ("-", styles.dim),
        };
        out.line(&format!("{} {}", styles.paint(style, glyph), c.name));
        out.line(&styles.paint(styles.dim, &format!("  {}", c.detail)));
    }

    match traffic {
        Some(Ok(t)) => traffic_section(&mut out, t),
        Some(Err(reason)) => {
            out.heading("Traffic");
            out.line(&format!(
                "{} not read: {reason}",
                styles.paint(styles.warning, "?")
            ));
        }
        None => {}
    }

    if !diagnosis.not_read.is_empty() {
        out.heading("Not read");
        for n in &diagnosis.not_read {
            out.line(&format!(
                "{} {}: {}",
                styles.paint(styles.warning, "?"),
                n.what,
                n.reason
            ));
        }
    }

    out.heading("Next steps");
    if diagnosis.next_steps.is_empty() {
        out.line("nothing to do");
    }
    for (i, s) in diagnosis.next_steps.iter().enumerate() {
        out.line(&format!("{}. {}", i + 1, s.text));
        if let Some(command) = &s.command {
            out.line(&format!("   {}", styles.paint(styles.code, command)));
        }
    }
    out.text
}

/// The traffic configuration that applies to the pod ([`Traffic`]).
fn traffic_section(out: &mut Out<'_>, t: &Traffic) {
    let styles = out.styles;
    out.heading("Traffic");
    if t.services.is_empty() {
        out.field(
            "Services",
            "none select the pod: nothing in the mesh routes to it by name",
        );
    }
    for svc in &t.services {
        out.field(&svc.service, &format!("host {}", svc.host));
        for p in &svc.ports {
            let name = if p.name.is_empty() {
                String::new()
            } else {
                format!("{} ", p.name)
            };
            let pod_port = p.pod_port.map_or(
                "a named targetPort no container declares".to_string(),
                |n| format!("pod port {n}"),
            );
            let by = p
                .accepts_by
                .as_deref()
                .unwrap_or("no PeerAuthentication: Istio's default");
            let accepts = if t.sidecar {
                format!("accepts {} ({by})", p.accepts)
            } else if t.ambient {
                format!("ztunnel accepts {} ({by})", p.accepts)
            } else {
                "no sidecar, not captured by ambient: accepts plaintext only".to_string()
            };
            out.field(
                &format!("  port {name}{}/{}", p.port, p.protocol),
                &format!("-> {pod_port}, {accepts}"),
            );
            out.field("", &format!("clients send {}", p.clients_send));
        }
        match &svc.destination_rule {
            Some(dr) => {
                let mut parts = Vec::new();
                if !dr.subsets_with_pod.is_empty() {
                    parts.push(format!(
                        "the pod is in subset(s) {}",
                        dr.subsets_with_pod.join(", ")
                    ));
                }
                if !dr.subsets_without_pod.is_empty() {
                    parts.push(format!("not in {}", dr.subsets_without_pod.join(", ")));
                }
                parts.push(match &dr.tls {
                    Some(mode) => format!("TLS {mode}"),
                    None => "no TLS mode (auto mTLS)".to_string(),
                });
                parts.extend(dr.port_tls.iter().cloned());
                out.field(
                    "  DestinationRule",
                    &format!(
                        "{} for {}: {}",
                        dr.rule.trim_start_matches("DestinationRule "),
                        dr.host,
                        parts.join("; ")
                    ),
                );
            }
            None => out.field("  DestinationRule", "none (auto mTLS, no subsets)"),
        }
        if svc.virtual_services.is_empty() {
            out.field(
                "  VirtualService",
                "none (every request to the host goes to its endpoints)",
            );
        }
        for vs in &svc.virtual_services {
            out.field(
                "  VirtualService",
                &format!(
                    "{} (gateways: {})",
                    vs.virtual_service.trim_start_matches("VirtualService "),
                    vs.gateways.join(", ")
                ),
            );
            for r in &vs.routes {
                out.field(
                    &format!("    {}", r.route),
                    &format!("{}: {}", r.matches, r.destinations.join(", ")),
                );
            }
        }
    }
    let pa = &t.peer_authentication;
    if t.sidecar || t.ambient {
        let mut text = if t.sidecar {
            format!("workload {}", pa.workload_mode)
        } else {
            format!(
                "enforced by ztunnel (the pod is captured by ambient): workload {}",
                pa.workload_mode
            )
        };
        for m in &pa.port_modes {
            text.push_str(&format!("; port {m}"));
        }
        text.push_str(&if pa.applied.is_empty() {
            "; no PeerAuthentication applies (Istio's default)".to_string()
        } else {
            format!("; applied: {}", pa.applied.join(", "))
        });
        out.field("PeerAuthentication", &text);
    } else {
        out.field(
            "PeerAuthentication",
            "not enforced: the pod has no sidecar and ambient does not capture it (no ambient.istio.io/redirection: enabled), so nothing terminates mTLS on its side",
        );
    }
    out.field(
        "Authorization",
        &if t.authorization_policies.is_empty() {
            "no AuthorizationPolicy selects the pod: every caller is allowed".to_string()
        } else if t.sidecar {
            t.authorization_policies.join(", ")
        } else if t.ambient {
            format!(
                "{} (enforced by ztunnel at L4: HTTP rules need a waypoint, see the ambient checks)",
                t.authorization_policies.join(", ")
            )
        } else {
            format!(
                "{} select the pod, and nothing enforces them (no sidecar, not captured by ambient)",
                t.authorization_policies.join(", ")
            )
        },
    );
    out.field(
        "Sidecar resource",
        t.sidecar_resource
            .as_deref()
            .unwrap_or("none: the pod's proxy sees every host of the mesh"),
    );
    out.field(
        "Gateways",
        &if t.gateways.is_empty() {
            "none route to the pod".to_string()
        } else {
            t.gateways.join("; ")
        },
    );
    if t.findings.is_empty() {
        out.field(
            "Findings",
            &format!(
                "none about these objects ({})",
                super::traffic::ANALYZERS.join(", ")
            ),
        );
    }
    for f in &t.findings {
        out.line(&format!(
            "{} {}",
            styles.paint(
                styles.level(f.level()),
                &format!("{} [{}]", f.level(), f.code())
            ),
            f.message
        ));
        out.line(&styles.paint(
            styles.dim,
            &format!("  see {}", f.message_type.documentation_url()),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::diagnose;
    use crate::diagnosis::tests::*;
    use crate::probe::{AdminProbe, ProxyLogs};
    use serde_json::json;

    /// The Traffic section of a pod without sidecar: ztunnel's enforcement when ambient
    /// captured it, nothing's when it did not.
    #[test]
    fn traffic_of_a_pod_without_sidecar_says_who_enforces() {
        use super::super::traffic::{PeerAuthenticationView, PortTraffic, ServiceTraffic};
        let view = |ambient: bool| Traffic {
            sidecar: false,
            ambient,
            services: vec![ServiceTraffic {
                service: "Service amb/web".into(),
                host: "web.amb.svc.cluster.local".into(),
                ports: vec![PortTraffic {
                    name: "http".into(),
                    port: 80,
                    protocol: "HTTP",
                    pod_port: Some(8080),
                    accepts: "STRICT",
                    accepts_by: Some("PeerAuthentication amb/default".into()),
                    clients_send: "auto mTLS".into(),
                }],
                destination_rule: None,
                virtual_services: vec![],
            }],
            peer_authentication: PeerAuthenticationView {
                workload_mode: "STRICT",
                port_modes: vec![],
                applied: vec!["PeerAuthentication amb/default".into()],
            },
            authorization_policies: vec!["ALLOW amb/from-ns (1 rule)".into()],
            ..Traffic::default()
        };
        let render = |t: &Traffic| {
            let styles = Styles::new(false);
            let mut out = Out {
                text: String::new(),
                styles: &styles,
            };
            traffic_section(&mut out, t);
            out.text
        };
        let captured = render(&view(true));
        for expected in [
            "-> pod port 8080, ztunnel accepts STRICT (PeerAuthentication amb/default)",
            "PeerAuthentication enforced by ztunnel (the pod is captured by ambient): workload STRICT; applied: PeerAuthentication amb/default",
            "ALLOW amb/from-ns (1 rule) (enforced by ztunnel at L4: HTTP rules need a waypoint, see the ambient checks)",
        ] {
            assert!(captured.contains(expected), "{expected}:\n{captured}");
        }
        assert!(!captured.contains("not enforced"), "{captured}");
        let outside = render(&view(false));
        for expected in [
            "-> pod port 8080, no sidecar, not captured by ambient: accepts plaintext only",
            "PeerAuthentication not enforced: the pod has no sidecar and ambient does not capture it",
            "select the pod, and nothing enforces them (no sidecar, not captured by ambient)",
        ] {
            assert!(outside.contains(expected), "{expected}:\n{outside}");
        }
    }

    fn crash() -> (Diagnosis, ProbeResult) {
        let pod = pod("web-crash", Some(crashloop_status()), true);
        let probe = ProbeResult {
            admin: AdminProbe::skipped("istio-proxy is not running (CrashLoopBackOff)"),
            logs: logs(None, Some("B_stderr.txt")),
        };
        (diagnose(&pod, &good_context(), Some(&probe)), probe)
    }

    fn waiting() -> (Diagnosis, ProbeResult) {
        let pod = pod("web-wait", Some(waiting_status()), true);
        let probe = ProbeResult {
            admin: admin_waiting(refused_15021()),
            logs: logs(Some("A_stderr.txt"), None),
        };
        let context = crate::diagnosis::PodContext {
            istio_endpoint_slices: crate::diagnosis::Lookup::Found(vec![istiod_slice(false)]),
            ..good_context()
        };
        (diagnose(&pod, &context, Some(&probe)), probe)
    }

    fn healthy() -> (Diagnosis, ProbeResult) {
        let pod = pod("web", Some(waiting_status_ready()), true);
        let probe = ProbeResult {
            admin: admin_live("A_certs.json"),
            logs: ProxyLogs::default(),
        };
        (diagnose(&pod, &good_context(), Some(&probe)), probe)
    }

    #[test]
    fn text_crash() {
        let (d, p) = crash();
        insta::assert_snapshot!(text(&d, Some(&p), &Styles::new(false)));
    }

    #[test]
    fn text_waiting() {
        let (d, p) = waiting();
        insta::assert_snapshot!(text(&d, Some(&p), &Styles::new(false)));
    }

    #[test]
    fn text_healthy() {
        let (d, p) = healthy();
        insta::assert_snapshot!(text(&d, Some(&p), &Styles::new(false)));
    }

    #[test]
    fn colors_only_when_asked() {
        let (d, p) = crash();
        assert!(!text(&d, Some(&p), &Styles::new(false)).contains('\u{1b}'));
        assert!(text(&d, Some(&p), &Styles::new(true)).contains('\u{1b}'));
    }

    /// `pod -o json`, byte for byte: a pod waiting for the control plane, a crash, a healthy
    /// pod without probe.
    #[test]
    fn json_text_is_pinned() {
        let (d, p) = waiting();
        insta::assert_snapshot!("json_waiting", json_text(&d, Some(&p)));
        let (d, p) = crash();
        insta::assert_snapshot!("json_crash", json_text(&d, Some(&p)));
        let (d, _) = healthy();
        insta::assert_snapshot!("json_healthy_not_probed", json_text(&d, None));
    }

    #[test]
    fn json_document() {
        let (d, p) = waiting();
        let v = json(&d, Some(&p));
        assert_eq!(v["verdict"]["kind"], "waiting-for-control-plane");
        assert_eq!(v["level"], "Error");
        assert_eq!(v["findings"][0]["code"], "MD0102");
        assert_eq!(v["findings"][0]["origin"], "Pod shop/web-wait");
        assert_eq!(
            v["probe"]["admin"]["serverInfo"]["ok"]["state"],
            "PRE_INITIALIZING"
        );
        assert_eq!(v["probe"]["admin"]["health"]["error"]["kind"], "refused");
        let endpoints = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "istiod has ready endpoints")
            .unwrap();
        assert_eq!(endpoints["status"], "fail");
        assert_eq!(v["notRead"], json!([]));
        let (d, p) = healthy();
        let v = json(&d, Some(&p));
        assert_eq!(v["level"], Value::Null);
        assert_eq!(v["findings"], json!([]));
    }
}
