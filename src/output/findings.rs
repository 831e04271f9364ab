//! Renders findings: istioctl's log lines, JSON and YAML with istioctl's field names, and SARIF.
//! Renderers never decide anything: what to show was decided before.

use serde_json::{Map, Value, json};

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
    fn values(&self) -> Vec<Value> {
        use crate::findings::messages::{MD0001, MD0002, Message};
        let message = |m: Message, origin: &str| -> Map<String, Value> {
            let mut v = Map::new();
            let code = m.message_type();
            v.insert("code".into(), code.code.into());
            v.insert("documentationUrl".into(), code.documentation_url().into());
            v.insert("level".into(), code.level.as_str().into());
            v.insert("message".into(), m.into_text().into());
            v.insert("origin".into(), origin.into());
            v
        };
        let mut out: Vec<Value> = self
            .skipped
            .iter()
            .map(|s| {
                let mut v = message(
                    MD0001::message(s.check.as_str(), s.reason.as_str()),
                    &s.check,
                );
                v.insert("check".into(), s.check.clone().into());
                Value::Object(v)
            })
            .collect();
        out.extend(self.not_analysed.iter().map(|(kind, n)| {
            let mut v = message(MD0002::message(*n, kind.as_str()), kind);
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
        Format::Sarif => sarif(findings, coverage),
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

fn sarif_level(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Info => "note",
    }
}

/// SARIF 2.1.0: one run, one rule per code present, one result per finding with the file and
/// line when the resource came from a file, and the resource name as a logical location.
pub fn sarif(findings: &[&Finding], coverage: &Coverage) -> String {
    use crate::findings::messages::{MessageType, lookup};
    let unchanged: Vec<&Finding> = coverage
        .baseline
        .map(|b| b.unchanged.iter().collect())
        .unwrap_or_default();
    let absent = coverage.baseline.map(|b| b.absent).unwrap_or_default();
    let mut rules: Vec<&MessageType> = findings
        .iter()
        .chain(&unchanged)
        .map(|f| f.message_type)
        .chain(absent.iter().filter_map(|e| lookup(&e.code)))
        .collect();
    rules.sort_by_key(|m| m.code);
    rules.dedup_by_key(|m| m.code);
    let rule_index = |code: &str| rules.iter().position(|m| m.code == code).unwrap_or(0);
    let rules_json: Vec<Value> = rules
        .iter()
        .map(|m| {
            json!({
                "id": m.code,
                "name": m.name,
                "shortDescription": {"text": m.description},
                "helpUri": m.documentation_url(),
                "defaultConfiguration": {"level": sarif_level(m.level)},
            })
        })
        .collect();
    let result_of = |f: &Finding, state: Option<&str>| -> Value {
        let mut result = json!({
            "ruleId": f.code(),
            "ruleIndex": rule_index(f.code()),
            "level": sarif_level(f.level()),
            "message": {"text": f.message},
        });
        if let Some(state) = state {
            result["baselineState"] = state.into();
        }
        if let Some(r) = &f.resource {
            let mut location = Map::new();
            if let Some(file) = &r.file {
                let mut physical =
                    json!({"artifactLocation": {"uri": file.trim_start_matches("./")}});
                if let Some(line) = r.line {
                    physical["region"] = json!({"startLine": line});
                }
                location.insert("physicalLocation".into(), physical);
            }
            location.insert(
                "logicalLocations".into(),
                json!([{"name": r.name, "fullyQualifiedName": r.friendly_name(), "kind": "resource"}]),
            );
            result["locations"] = json!([Value::Object(location)]);
        }
        result
    };
    let with_baseline = coverage.baseline.is_some();
    let mut results: Vec<Value> = findings
        .iter()
        .map(|f| result_of(f, with_baseline.then_some("new")))
        .collect();
    results.extend(unchanged.iter().map(|f| result_of(f, Some("unchanged"))));
    results.extend(absent.iter().map(|e| {
        let mut result = json!({
            "ruleId": e.code,
            "ruleIndex": rule_index(&e.code),
            "level": lookup(&e.code).map_or("warning", |m| sarif_level(m.level)),
            "message": {"text": e.message},
            "baselineState": "absent",
        });
        if let Some(origin) = &e.origin {
            result["locations"] =
                json!([{"logicalLocations": [{"fullyQualifiedName": origin, "kind": "resource"}]}]);
        }
        result
    }));
    // What was skipped or not analysed: tool execution notifications of the invocation, which
    // is not successful when anything was skipped.
    let notifications: Vec<Value> = coverage
        .values()
        .into_iter()
        .map(|v| {
            json!({
                "level": "warning",
                "descriptor": {"id": if v["code"] == "MD0001" { "skipped" } else { "not-analysed" }},
                "message": {"text": v["message"]},
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mesh-doctor",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/mesh-doctor/mesh-doctor",
                "rules": rules_json,
            }},
            "invocations": [{
                "executionSuccessful": coverage.skipped.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    });
    let mut text = pretty_json(&doc);
    text.push('\n');
    text
}
