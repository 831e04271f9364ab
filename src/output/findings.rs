//! Renders findings: istioctl's log lines, JSON and YAML with istioctl's field names, JUnit XML,
//! and SARIF (`output::sarif`).
//! Renderers never decide anything: what to show was decided before.

use serde_json::{Map, Value};

use std::collections::BTreeMap;

use crate::findings::Finding;
use crate::findings::messages::Level;
use crate::findings::report::Skipped;
use crate::output::json::pretty_json;
use crate::output::style::Styles;

/// The output formats of `analyze`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// One line per finding: `Warning [IST0103] (Pod ns/name file:line) message`
    #[default]
    Text,
    /// The same lines, under istioctl's name for them
    Log,
    /// A JSON array with istioctl's field names
    Json,
    /// The same as YAML
    Yaml,
    /// SARIF 2.1.0, for code-scanning tools
    Sarif,
    /// JUnit XML, for CI systems that show test reports: one test case per finding, failed at
    /// or above the failure threshold
    Junit,
}

/// What the findings do not cover: reads and checks that were skipped, and documents of kinds
/// no analyzer reads. The structured formats carry it (the log format has it on stderr).
#[derive(Clone, Copy, Debug)]
pub struct Coverage<'a> {
    pub skipped: &'a [Skipped],
    /// kind -> number of documents.
    pub not_analysed: &'a BTreeMap<String, usize>,
    /// With `--baseline`: the findings the baseline knows (not among those rendered) and its
    /// entries that no longer occur. SARIF marks results `baselineState`.
    pub baseline: Option<BaselineView<'a>>,
}

/// A run compared with a baseline, for SARIF's `baselineState`.
#[derive(Clone, Copy, Debug)]
pub struct BaselineView<'a> {
    pub unchanged: &'a [Finding],
    pub absent: &'a [crate::findings::baseline::Entry],
}

impl Coverage<'_> {
    /// True when everything was read and analysed.
    pub fn is_complete(&self) -> bool {
        self.skipped.is_empty() && self.not_analysed.is_empty()
    }

    /// The messages appended to the JSON/YAML array after the findings, in istioctl's shape
    /// (`code`, `documentationUrl`, `level`, `message`, `origin`): MD0001 for a read or check
    /// that was skipped (origin: the check, also under `check`), MD0002 for documents of a kind
    /// no analyzer reads (origin: the kind, also under `kind`, with `documents`).
    pub(super) fn values(&self) -> Vec<Value> {
        use crate::findings::messages::{MD0001, MD0002, MessageType, format};
        let message = |m: &MessageType, text: String, origin: &str| -> Map<String, Value> {
            let mut v = Map::new();
            v.insert("code".into(), m.code.into());
            v.insert("documentationUrl".into(), m.documentation_url().into());
            v.insert("level".into(), m.level.as_str().into());
            v.insert("message".into(), text.into());
            v.insert("origin".into(), origin.into());
            v
        };
        let mut out: Vec<Value> = self
            .skipped
            .iter()
            .map(|s| {
                let text = format(
                    MD0001.template,
                    &[s.check.as_str().into(), s.reason.as_str().into()],
                );
                let mut v = message(MD0001, text, &s.check);
                v.insert("check".into(), s.check.clone().into());
                Value::Object(v)
            })
            .collect();
        out.extend(self.not_analysed.iter().map(|(kind, n)| {
            let text = format(MD0002.template, &[(*n).into(), kind.as_str().into()]);
            let mut v = message(MD0002, text, kind);
            v.insert("kind".into(), kind.clone().into());
            v.insert("documents".into(), (*n).into());
            Value::Object(v)
        }));
        out
    }
}

/// Renders findings in a format; the text ends with a newline.
pub fn render(
    findings: &[&Finding],
    format: Format,
    styles: &Styles,
    show_cluster: bool,
    coverage: &Coverage,
    failure_threshold: Level,
) -> String {
    match format {
        Format::Text | Format::Log => log(findings, styles, show_cluster),
        Format::Json => {
            let mut text = pretty_json(&to_value(findings, show_cluster, coverage));
            text.push('\n');
            text
        }
        Format::Yaml => {
            crate::formats::yaml_write::to_string(&to_value(findings, show_cluster, coverage))
        }
        Format::Sarif => super::sarif::render(findings, coverage),
        Format::Junit => junit(findings, coverage, failure_threshold),
    }
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// JUnit XML: one test suite, one test case per finding (`CODE Kind ns/name`, its class the
/// resource), a `<failure>` for a finding at or above the failure threshold; what was skipped or
/// not analysed is a `<skipped>` test case each. No finding at all is one passing test case, so
/// the report is never empty.
pub fn junit(findings: &[&Finding], coverage: &Coverage, failure_threshold: Level) -> String {
    let mut cases = Vec::new();
    let mut failures = 0;
    for f in findings {
        let origin = f.origin().unwrap_or_else(|| "cluster".to_string());
        let detail = match f.resource.as_ref().and_then(|r| r.reference()) {
            Some(reference) => format!(
                "{} [{}] ({origin} {reference}) {}",
                f.level(),
                f.code(),
                f.message
            ),
            None => format!("{} [{}] ({origin}) {}", f.level(), f.code(), f.message),
        };
        let mut case = format!(
            "    <testcase classname=\"{}\" name=\"{} {}\"",
            xml_escape(&origin),
            f.code(),
            xml_escape(&origin)
        );
        if f.level().reaches(failure_threshold) {
            failures += 1;
            case.push_str(&format!(
                ">\n      <failure type=\"{}\" message=\"{}\">{}\n{}</failure>\n    </testcase>\n",
                f.code(),
                xml_escape(&f.message),
                xml_escape(&detail),
                f.message_type.documentation_url()
            ));
        } else {
            case.push_str(&format!(
                ">\n      <system-out>{}</system-out>\n    </testcase>\n",
                xml_escape(&detail)
            ));
        }
        cases.push(case);
    }
    let mut skipped = 0;
    for v in coverage.values() {
        skipped += 1;
        let message = v["message"].as_str().unwrap_or_default();
        cases.push(format!(
            "    <testcase classname=\"mesh-doctor\" name=\"{} {}\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            v["code"].as_str().unwrap_or_default(),
            xml_escape(v["origin"].as_str().unwrap_or_default()),
            xml_escape(message)
        ));
    }
    if cases.is_empty() {
        cases.push("    <testcase classname=\"mesh-doctor\" name=\"analyze\"/>\n".to_string());
    }
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"mesh-doctor analyze\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n  <testsuite name=\"mesh-doctor analyze\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
        n = cases.len()
    ));
    for case in cases {
        out.push_str(&case);
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// istioctl's log lines. The level word is colored (errors bold red, warnings yellow).
pub fn log(findings: &[&Finding], styles: &Styles, show_cluster: bool) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&styles.paint(styles.level(f.level()), f.level().as_str()));
        out.push_str(&format!(" [{}]", f.code()));
        if let Some(r) = &f.resource {
            if show_cluster && let Some(cluster) = &r.cluster {
                out.push_str(&format!(" [{cluster}]"));
            }
            out.push_str(" (");
            out.push_str(&r.friendly_name());
            if let Some(reference) = r.reference() {
                out.push(' ');
                out.push_str(&reference);
            }
            out.push(')');
        }
        out.push(' ');
        out.push_str(&f.message);
        out.push('\n');
    }
    out
}

/// One finding as istioctl's JSON object (keys in alphabetical order).
pub fn finding_value(f: &Finding, show_cluster: bool) -> Value {
    let mut m = Map::new();
    if show_cluster && let Some(cluster) = f.cluster() {
        m.insert("cluster".into(), Value::String(cluster.to_string()));
    }
    m.insert("code".into(), f.code().into());
    m.insert(
        "documentationUrl".into(),
        f.message_type.documentation_url().into(),
    );
    m.insert("level".into(), f.level().as_str().into());
    m.insert("message".into(), f.message.clone().into());
    // As istioctl: every message has an origin, empty for one about no resource (MD0206).
    m.insert("origin".into(), f.origin().unwrap_or_default().into());
    if let Some(reference) = f.resource.as_ref().and_then(|r| r.reference()) {
        m.insert("reference".into(), reference.into());
    }
    Value::Object(m)
}

fn to_value(findings: &[&Finding], show_cluster: bool, coverage: &Coverage) -> Value {
    let mut items: Vec<Value> = findings
        .iter()
        .map(|f| finding_value(f, show_cluster))
        .collect();
    items.extend(coverage.values());
    Value::Array(items)
}
