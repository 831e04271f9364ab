//! SARIF 2.1.0 for code-scanning tools: one run, one rule per code present, one result per
//! finding, and what was skipped or not analysed as notifications of the invocation. The
//! document is made of the SARIF objects below (named as the standard names them), with only
//! the properties mesh-doctor fills, in the order they are written.

use serde::Serialize;

use crate::findings::Finding;
use crate::findings::baseline::Entry;
use crate::findings::messages::{Level, MessageType, lookup};
use crate::output::coverage::Coverage;
use crate::output::json::document;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://github.com/mesh-doctor/mesh-doctor";

/// `sarifLog`: the file.
#[derive(Serialize)]
struct SarifLog<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

/// `run`: one invocation of the tool and what it found.
#[derive(Serialize)]
struct Run<'a> {
    tool: Tool,
    invocations: [Invocation<'a>; 1],
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct Tool {
    driver: ToolComponent,
}

/// `toolComponent`: mesh-doctor, with the rules (codes) its results refer to.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolComponent {
    name: &'static str,
    version: &'static str,
    information_uri: &'static str,
    rules: Vec<ReportingDescriptor>,
}

/// `reportingDescriptor`: one code.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Message<'static>,
    help_uri: String,
    default_configuration: ReportingConfiguration,
}

#[derive(Serialize)]
struct ReportingConfiguration {
    level: &'static str,
}

/// `message` (and `multiformatMessageString`): plain text.
#[derive(Serialize)]
struct Message<'a> {
    text: &'a str,
}

/// `invocation`: not successful when a read or check was skipped.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation<'a> {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification<'a>>,
}

/// `notification`: one read or check skipped, or one kind of documents not analysed.
#[derive(Serialize)]
struct Notification<'a> {
    level: &'static str,
    descriptor: ReportingDescriptorReference,
    message: Message<'a>,
}

#[derive(Serialize)]
struct ReportingDescriptorReference {
    id: &'static str,
}

/// `result`: one finding, or with a baseline one of its entries that no longer occurs.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    rule_index: usize,
    level: &'static str,
    message: Message<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_state: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    locations: Option<[Location<'a>; 1]>,
}

/// `location`: the file and line when the resource came from a file, and the resource.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    physical_location: Option<PhysicalLocation<'a>>,
    logical_locations: [LogicalLocation<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation<'a> {
    artifact_location: ArtifactLocation<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
struct ArtifactLocation<'a> {
    uri: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
}

/// `logicalLocation`: the resource (`Kind ns/name`); a baseline entry has no separate name.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    fully_qualified_name: String,
    kind: &'static str,
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
pub fn render(findings: &[&Finding], coverage: &Coverage) -> String {
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
    let with_baseline = coverage.baseline.is_some();
    let mut results: Vec<SarifResult> = findings
        .iter()
        .map(|f| result_of(f, rule_index(f.code()), with_baseline.then_some("new")))
        .collect();
    results.extend(
        unchanged
            .iter()
            .map(|f| result_of(f, rule_index(f.code()), Some("unchanged"))),
    );
    results.extend(absent.iter().map(|e| absent_result(e, rule_index(&e.code))));
    let notes = coverage.messages();
    let log = SarifLog {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: ToolComponent {
                    name: "mesh-doctor",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: INFORMATION_URI,
                    rules: rules.iter().map(|m| rule(m)).collect(),
                },
            },
            // What was skipped or not analysed: tool execution notifications of the invocation,
            // which is not successful when anything was skipped.
            invocations: [Invocation {
                execution_successful: coverage.skipped.is_empty(),
                tool_execution_notifications: notes
                    .iter()
                    .map(|note| Notification {
                        level: "warning",
                        descriptor: ReportingDescriptorReference {
                            id: if note.check.is_some() {
                                "skipped"
                            } else {
                                "not-analysed"
                            },
                        },
                        message: Message {
                            text: &note.message,
                        },
                    })
                    .collect(),
            }],
            results,
        }],
    };
    document(&log)
}

fn rule(m: &'static MessageType) -> ReportingDescriptor {
    ReportingDescriptor {
        id: m.code,
        name: m.name,
        short_description: Message {
            text: m.description,
        },
        help_uri: m.documentation_url(),
        default_configuration: ReportingConfiguration {
            level: sarif_level(m.level),
        },
    }
}

fn result_of<'a>(
    f: &'a Finding,
    rule_index: usize,
    baseline_state: Option<&'static str>,
) -> SarifResult<'a> {
    SarifResult {
        rule_id: f.code(),
        rule_index,
        level: sarif_level(f.level()),
        message: Message { text: &f.message },
        baseline_state,
        locations: f.resource.as_ref().map(|r| {
            [Location {
                physical_location: r.file.as_deref().map(|file| PhysicalLocation {
                    artifact_location: ArtifactLocation {
                        uri: file.trim_start_matches("./"),
                    },
                    region: r.line.map(|start_line| Region { start_line }),
                }),
                logical_locations: [LogicalLocation {
                    name: Some(&r.name),
                    fully_qualified_name: r.friendly_name(),
                    kind: "resource",
                }],
            }]
        }),
    }
}

/// A baseline entry that no longer occurs: its code's level (a warning for a code this
/// release does not know) and its origin as the logical location.
fn absent_result(e: &Entry, rule_index: usize) -> SarifResult<'_> {
    SarifResult {
        rule_id: &e.code,
        rule_index,
        level: lookup(&e.code).map_or("warning", |m| sarif_level(m.level)),
        message: Message { text: &e.message },
        baseline_state: Some("absent"),
        locations: e.origin.as_ref().map(|origin| {
            [Location {
                physical_location: None,
                logical_locations: [LogicalLocation {
                    name: None,
                    fully_qualified_name: origin.clone(),
                    kind: "resource",
                }],
            }]
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::findings::ResourceRef;
    use crate::findings::baseline::Entry;
    use crate::findings::messages::{IST0101, IST0103, IST0118, MessageType};
    use crate::findings::report::Skipped;
    use crate::output::coverage::BaselineView;

    fn finding(
        m: &'static MessageType,
        name: &str,
        file: Option<&str>,
        line: Option<u32>,
    ) -> Finding {
        Finding {
            message_type: m,
            resource: Some(ResourceRef {
                kind: "Service".into(),
                namespace: Some("shop".into()),
                name: name.into(),
                file: file.map(Arc::from),
                line,
                cluster: None,
            }),
            message: format!("about {name} \"quoted\" <tag>"),
            cluster: None,
        }
    }

    /// Every shape SARIF takes: a resource from a file with a line (`./` dropped), from a
    /// JSON file without a line, from the cluster, a finding about no resource; with a baseline
    /// (new, unchanged, absent with and without origin, and a code the table does not know);
    /// skipped reads and documents not analysed.
    #[test]
    fn every_shape_is_pinned() {
        let findings = [
            finding(IST0101, "a", Some("./k8s/a.yaml"), Some(7)),
            finding(IST0118, "b", Some("b.json"), None),
            finding(IST0103, "c", None, None),
            Finding {
                message_type: IST0103,
                resource: None,
                message: "about the cluster".into(),
                cluster: None,
            },
        ];
        let shown: Vec<&Finding> = findings.iter().collect();
        let unchanged = [finding(IST0118, "d", Some("d.yaml"), Some(1))];
        let absent = [
            Entry {
                code: "IST0101".into(),
                origin: Some("Service shop/gone".into()),
                cluster: None,
                message: "went away".into(),
            },
            Entry {
                code: "XX9999".into(),
                origin: None,
                cluster: None,
                message: "an unknown code".into(),
            },
        ];
        let skipped = [Skipped {
            check: "list pods".into(),
            reason: "forbidden".into(),
        }];
        let not_analysed = BTreeMap::from([("UDPRoute".to_string(), 2)]);
        let coverage = Coverage {
            skipped: &skipped,
            not_analysed: &not_analysed,
            baseline: Some(BaselineView {
                unchanged: &unchanged,
                absent: &absent,
            }),
        };
        let text = render(&shown, &coverage).replace(env!("CARGO_PKG_VERSION"), "[version]");
        insta::assert_snapshot!("every_shape", text);
    }

    #[test]
    fn nothing_found_is_a_run_without_rules_or_results() {
        let coverage = Coverage {
            skipped: &[],
            not_analysed: &BTreeMap::new(),
            baseline: None,
        };
        let text = render(&[], &coverage).replace(env!("CARGO_PKG_VERSION"), "[version]");
        insta::assert_snapshot!("nothing_found", text);
    }

    #[test]
    fn without_a_baseline_results_have_no_state() {
        let findings = [finding(IST0103, "a", Some("a.yaml"), Some(3))];
        let shown: Vec<&Finding> = findings.iter().collect();
        let coverage = Coverage {
            skipped: &[],
            not_analysed: &BTreeMap::new(),
            baseline: None,
        };
        let text = render(&shown, &coverage).replace(env!("CARGO_PKG_VERSION"), "[version]");
        insta::assert_snapshot!("no_baseline", text);
    }
}
