//! Envoy bootstrap checks, pure: the mistakes that make `istio-proxy` crash at start (or make
//! istiod's listeners collide later), found in the file before it is deployed.
//!
//! [`parse`] reads a bootstrap (strict JSON, or YAML) and keeps the line of every node;
//! [`check`] runs every check over it and returns [`Problem`]s, each with the JSON path into the
//! document (`dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name`) and its line.
//! [`validate`] does both. No I/O: running a real `envoy --mode validate` is the command's job;
//! [`envoy_reason`] and [`codes_covering`] only read what it printed.
//!
//! What counts as an *Istio proxy bootstrap* (the node.id format checks apply only to those): it
//! has an ADS config, and an Istio marker — the ADS uses a cluster named `xds-grpc`, node.id
//! contains `~`, or node.metadata has `ISTIO_VERSION`. A static-only bootstrap, or one for another
//! control plane, is checked for what Envoy itself requires, not for Istio's conventions.

use std::fmt;

use serde_json::Value;

use crate::findings::messages::{self, MessageType};
use crate::formats::yaml::{self, LineTree};

/// The ADS cluster pilot-agent's template uses.
pub const ISTIO_XDS_CLUSTER: &str = "xds-grpc";

/// Proxy types istiod accepts as the first part of node.id.
pub const ISTIO_NODE_TYPES: &[&str] = &["sidecar", "router", "waypoint", "ztunnel"];

/// Ports the sidecar (or pilot-agent) uses in every meshed pod, and who uses them.
pub const RESERVED_PORTS: &[(u32, &str)] = &[
    (15000, "the sidecar's Envoy admin interface"),
    (
        15001,
        "the sidecar's outbound listener (virtualOutbound, pushed by istiod)",
    ),
    (
        15006,
        "the sidecar's inbound listener (virtualInbound, pushed by istiod)",
    ),
    (15020, "pilot-agent's status and merged-metrics server"),
    (15021, "the sidecar's health-check listener"),
    (15090, "the sidecar's Prometheus metrics listener"),
];

/// A path into the document: keys and indexes.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonPath(Vec<Segment>);

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// The document itself.
    pub fn root() -> Self {
        JsonPath::default()
    }

    pub fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.to_string()));
        next
    }

    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The line of the node at this path, or of its deepest ancestor in the document (a missing
    /// field points at the object that should hold it).
    pub fn line_in(&self, tree: &LineTree) -> u32 {
        let mut node = tree;
        for segment in &self.0 {
            let next = match segment {
                Segment::Key(k) => node.key(k),
                Segment::Index(i) => node.index(*i),
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node.line
    }
}

impl fmt::Display for JsonPath {
    /// `a.b[0].c`; a key that is not a plain word is written `["x.y"]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) if is_plain_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => {
                    let quoted = serde_json::to_string(k).map_err(|_| fmt::Error)?;
                    write!(f, "[{quoted}]")?;
                }
            }
        }
        Ok(())
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '@'))
}

/// One problem in a bootstrap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub message_type: &'static MessageType,
    /// Where in the document (the root for problems with the whole file).
    pub path: JsonPath,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, for syntax errors.
    pub column: Option<u32>,
    pub message: String,
}

impl Problem {
    pub fn code(&self) -> &'static str {
        self.message_type.code
    }
}

/// How the text is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    /// By the file name's extension (`.json`, `.yaml`, `.yml`, as Envoy decides), else by the
    /// content: a document that starts with `{` or `[` is JSON.
    pub fn detect(file_name: Option<&str>, text: &str) -> Format {
        let lower = file_name.map(str::to_ascii_lowercase).unwrap_or_default();
        if lower.ends_with(".json") {
            return Format::Json;
        }
        if lower.ends_with(".yaml") || lower.ends_with(".yml") {
            return Format::Yaml;
        }
        match text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .chars()
            .next()
        {
            Some('{' | '[') => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// A parsed bootstrap: the value and, when the reader could tell, the line of every node.
#[derive(Debug)]
pub struct Bootstrap {
    pub value: Value,
    pub lines: Option<LineTree>,
    pub format: Format,
}

/// Reads a bootstrap. JSON is read strictly (RFC 8259: no comments, no trailing commas, no
/// single quotes — Envoy's own reader is more lenient, other tools are not); YAML must hold one
/// document. A bootstrap must be a mapping.
pub fn parse(text: &str, format: Format) -> Result<Bootstrap, Box<Problem>> {
    parse_document(text, format).map_err(|mut problem| {
        if text.contains("{{") && text.contains("}}") {
            problem.message.push_str(
                " The file looks like a Go template (it has {{ }}), such as pilot-agent's envoy_bootstrap.json: validate the bootstrap rendered from it (envoy-rev.json in the istio-proxy container) instead.",
            );
        }
        problem
    })
}

fn parse_document(text: &str, format: Format) -> Result<Bootstrap, Box<Problem>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (value, lines) = match format {
        Format::Json => {
            let value: Value = serde_json::from_str(text).map_err(|e| {
                let full = e.to_string();
                let suffix = format!(" at line {} column {}", e.line(), e.column());
                let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
                syntax_problem(
                    u32::try_from(e.line()).unwrap_or(u32::MAX),
                    u32::try_from(e.column().max(1)).unwrap_or(u32::MAX),
                    &message,
                )
            })?;
            // JSON is YAML: the YAML reader gives the lines (it keeps every node's position).
            let lines = yaml::parse_stream(text)
                .ok()
                .filter(|docs| docs.len() == 1)
                .and_then(|docs| docs.into_iter().next())
                .map(|doc| doc.lines);
            (value, lines)
        }
        Format::Yaml => {
            let docs = yaml::parse_stream(text)
                .map_err(|e| syntax_problem(e.line, e.column, &e.message))?;
            let mut docs = docs.into_iter();
            let Some(first) = docs.next() else {
                return Err(syntax_problem(1, 1, "the document is empty"));
            };
            if let Some(second) = docs.next() {
                return Err(syntax_problem(
                    second.start_line,
                    1,
                    &format!(
                        "the file holds {} YAML documents; a bootstrap is a single document",
                        2 + docs.count()
                    ),
                ));
            }
            (first.value, Some(first.lines))
        }
    };
    if !value.is_object() {
        let kind = match value {
            Value::Array(_) => "a list",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "empty",
        };
        return Err(syntax_problem(
            lines.as_ref().map_or(1, |l| l.line),
            1,
            &format!(
                "the top level is {kind}; a bootstrap is a mapping (envoy.config.bootstrap.v3.Bootstrap)"
            ),
        ));
    }
    Ok(Bootstrap {
        value,
        lines,
        format,
    })
}

fn syntax_problem(line: u32, column: u32, message: &str) -> Box<Problem> {
    let message = messages::MD0307::message(line, column, message);
    Box::new(Problem {
        message_type: message.message_type(),
        path: JsonPath::root(),
        line: Some(line),
        column: Some(column),
        message: message.into_text(),
    })
}

/// Parses and checks: every problem, in document order.
pub fn validate(text: &str, format: Format) -> Vec<Problem> {
    match parse(text, format) {
        Ok(bootstrap) => check(&bootstrap),
        Err(problem) => vec![*problem],
    }
}

mod checks;
mod fields;
mod node_id;
mod reason;
mod schema;

pub use checks::{check, is_istio_proxy};
pub use node_id::NodeId;
pub use reason::{codes_covering, envoy_reason};
pub use schema::CHECKED_MESSAGE_TYPES;

#[cfg(test)]
mod tests;
