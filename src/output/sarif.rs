//! SARIF 2.1.0 for code-scanning tools: one run, one rule per code present, one result per
//! finding, and what was skipped or not analysed as notifications of the invocation.

use serde_json::{Map, Value, json};

use crate::findings::Finding;
use crate::findings::messages::Level;
use crate::output::findings::Coverage;
use crate::output::json::pretty_json;

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::findings::ResourceRef;
    use crate::findings::baseline::Entry;
    use crate::findings::messages::{IST0101, IST0103, IST0118, MessageType};
    use crate::findings::report::Skipped;
    use crate::output::findings::BaselineView;

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
