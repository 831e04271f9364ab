//! Renders findings: istioctl's log lines, JSON and YAML with istioctl's field names, JUnit XML,
//! and SARIF (`output::sarif`); what they do not cover is `output::coverage`.
//! Renderers never decide anything: what to show was decided before.

use serde::Serialize;

use crate::findings::Finding;
use crate::findings::messages::Level;
use crate::output::coverage::{Coverage, CoverageMessage};
use crate::output::json::document_of_array;
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
        Format::Json => document_of_array(&items(findings, show_cluster, coverage)),
        Format::Yaml => crate::formats::yaml_write::to_string(
            &serde_json::to_value(items(findings, show_cluster, coverage)).unwrap_or_default(),
        ),
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
    for note in coverage.messages() {
        skipped += 1;
        cases.push(format!(
            "    <testcase classname=\"mesh-doctor\" name=\"{} {}\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            note.code,
            xml_escape(note.origin),
            xml_escape(&note.message)
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
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<&'a str>,
    pub code: &'static str,
    pub documentation_url: String,
    pub level: &'static str,
    pub message: &'a str,
    /// As istioctl: every message has an origin, empty for one about no resource (MD0206).
    pub origin: String,
    /// `file:line` for a resource read from a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl<'a> FindingJson<'a> {
    pub fn of(f: &'a Finding, show_cluster: bool) -> FindingJson<'a> {
        FindingJson {
            cluster: f.cluster().filter(|_| show_cluster).map(|c| &**c),
            code: f.code(),
            documentation_url: f.message_type.documentation_url(),
            level: f.level().as_str(),
            message: &f.message,
            origin: f.origin().unwrap_or_default(),
            reference: f.resource.as_ref().and_then(|r| r.reference()),
        }
    }
}

/// One item of the JSON and YAML arrays: a finding (with whether its cluster is shown), then
/// what the findings do not cover. A finding becomes its [`FindingJson`] as it is written, on
/// the thread that writes it.
enum Item<'a> {
    Finding(&'a Finding, bool),
    Coverage(CoverageMessage<'a>),
}

impl Serialize for Item<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Item::Finding(f, show_cluster) => {
                FindingJson::of(f, *show_cluster).serialize(serializer)
            }
            Item::Coverage(c) => c.serialize(serializer),
        }
    }
}

fn items<'a>(
    findings: &[&'a Finding],
    show_cluster: bool,
    coverage: &Coverage<'a>,
) -> Vec<Item<'a>> {
    let mut items: Vec<Item> = findings
        .iter()
        .map(|f| Item::Finding(f, show_cluster))
        .collect();
    items.extend(coverage.messages().into_iter().map(Item::Coverage));
    items
}
