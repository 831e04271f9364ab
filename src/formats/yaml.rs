//! A YAML (and JSON) document reader that remembers where every value came from.
//!
//! Documents become `serde_json::Value`s, so they deserialize straight into k8s-openapi types,
//! and a parallel [`LineTree`] keeps the line of every node, so a finding can point at
//! `file:line` (the document start, or the line of one field such as `spec.ports[1].port`).
//! Scalars follow the YAML 1.2 core schema, as Kubernetes' own decoder does for the values that matter.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

/// The line (1-based) of every node of one document, shaped like the document.
#[derive(Clone, Debug, Default)]
pub struct LineTree {
    pub line: u32,
    children: Children,
}

#[derive(Clone, Debug, Default)]
enum Children {
    #[default]
    None,
    Map(Vec<(String, LineTree)>),
    Seq(Vec<LineTree>),
}

impl LineTree {
    /// The subtree under a key.
    pub fn key(&self, key: &str) -> Option<&LineTree> {
        match &self.children {
            Children::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, t)| t),
            _ => None,
        }
    }

    /// The subtree at an index.
    pub fn index(&self, index: usize) -> Option<&LineTree> {
        match &self.children {
            Children::Seq(items) => items.get(index),
            _ => None,
        }
    }

    /// The line of a dotted path such as `spec.ports[1].port`.
    pub fn line_of(&self, path: &str) -> Option<u32> {
        let mut node = self;
        for part in path.split('.') {
            let (key, indexes) = match part.find('[') {
                Some(at) => (&part[..at], &part[at..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                node = node.key(key)?;
            }
            for index in indexes.split(['[', ']']).filter(|s| !s.is_empty()) {
                node = node.index(index.parse().ok()?)?;
            }
        }
        Some(node.line)
    }
}

/// One document of a stream.
#[derive(Debug)]
pub struct Document {
    pub value: Value,
    pub lines: LineTree,
    /// The document's first line as istioctl counts it: the first line after the `---` that is
    /// not blank (comment lines count).
    pub start_line: u32,
}

/// A syntax error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Parses every document of a YAML stream. Empty documents are dropped.
pub fn parse_stream(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let mut builder = Builder::default();
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| SyntaxError {
            line: line_u32(e.marker().line()),
            column: line_u32(e.marker().col() + 1),
            message: e.info().to_string(),
        })?;
        builder.push(event, span)?;
    }
    let layout = Layout::new(text);
    Ok(builder
        .documents
        .into_iter()
        .filter(|(value, _)| !value.is_null())
        .map(|(value, lines)| {
            let start_line = layout.document_start(lines.line);
            Document {
                value,
                lines,
                start_line,
            }
        })
        .collect())
}

/// Parses a JSON document (a `.json` file). Lines are only known for the document itself.
pub fn parse_json(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let value: Value = serde_json::from_str(text).map_err(|e| SyntaxError {
        line: line_u32(e.line()),
        column: line_u32(e.column()),
        message: e.to_string(),
    })?;
    Ok(vec![Document {
        value,
        lines: LineTree {
            line: 1,
            children: Children::None,
        },
        start_line: 1,
    }])
}

fn line_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Which lines are blank and which separate documents, computed once per file.
struct Layout {
    /// `blank[i]`: line i+1 is empty or whitespace.
    blank: Vec<bool>,
    /// Lines (1-based, ascending) that separate documents: `---`, possibly followed by a comment.
    separators: Vec<u32>,
}

impl Layout {
    fn new(text: &str) -> Self {
        let mut blank = Vec::new();
        let mut separators = Vec::new();
        for (i, l) in text.lines().enumerate() {
            blank.push(l.trim().is_empty());
            let separator = l
                .strip_prefix("---")
                .is_some_and(|rest| rest.trim().is_empty() || rest.trim_start().starts_with('#'));
            if separator {
                separators.push(line_u32(i + 1));
            }
        }
        Layout { blank, separators }
    }

    /// The first non-blank line after the last separator before the document's first node.
    fn document_start(&self, content_line: u32) -> u32 {
        let before = self.separators.partition_point(|&s| s < content_line);
        let after = if before == 0 {
            0
        } else {
            self.separators[before - 1]
        };
        (after as usize..self.blank.len())
            .find(|&i| !self.blank[i])
            .map_or(content_line, |i| line_u32(i + 1))
    }
}

enum Frame {
    Map {
        map: Map<String, Value>,
        lines: Vec<(String, LineTree)>,
        line: u32,
        pending_key: Option<String>,
        anchor: usize,
    },
    Seq {
        items: Vec<Value>,
        lines: Vec<LineTree>,
        line: u32,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Value, LineTree)>,
    documents: Vec<(Value, LineTree)>,
    current: Option<(Value, LineTree)>,
}

impl Builder {
    fn push(&mut self, event: Event<'_>, span: Span) -> Result<(), SyntaxError> {
        let line = line_u32(span.start.line());
        match event {
            Event::DocumentStart(_) => {
                self.current = None;
                self.anchors.clear();
            }
            Event::DocumentEnd => {
                let doc = self.current.take().unwrap_or_default();
                self.documents.push(doc);
            }
            Event::Scalar(text, style, anchor, tag) => {
                let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                let value = if style == ScalarStyle::Plain && !is_str_tag {
                    resolve_plain(&text)
                } else {
                    Value::String(text.into_owned())
                };
                let tree = LineTree {
                    line,
                    children: Children::None,
                };
                self.finish(value, tree, anchor, line)?;
            }
            Event::Alias(id) => {
                let (value, tree) = self.anchors.get(&id).cloned().ok_or(SyntaxError {
                    line,
                    column: line_u32(span.start.col() + 1),
                    message: "alias to an unknown anchor".to_string(),
                })?;
                self.finish(value, tree, 0, line)?;
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                lines: Vec::new(),
                line,
                anchor,
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                map: Map::new(),
                lines: Vec::new(),
                line,
                pending_key: None,
                anchor,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, tree, anchor) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        lines,
                        line,
                        anchor,
                    }) => (
                        Value::Array(items),
                        LineTree {
                            line,
                            children: Children::Seq(lines),
                        },
                        anchor,
                    ),
                    Some(Frame::Map {
                        map,
                        lines,
                        line,
                        anchor,
                        ..
                    }) => (
                        Value::Object(map),
                        LineTree {
                            line,
                            children: Children::Map(lines),
                        },
                        anchor,
                    ),
                    None => return Ok(()),
                };
                let start = tree.line;
                self.finish(value, tree, anchor, start)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
        }
        Ok(())
    }

    /// Places a completed node in its parent (or as the document root).
    fn finish(
        &mut self,
        value: Value,
        tree: LineTree,
        anchor: usize,
        line: u32,
    ) -> Result<(), SyntaxError> {
        if anchor != 0 {
            self.anchors.insert(anchor, (value.clone(), tree.clone()));
        }
        match self.stack.last_mut() {
            None => self.current = Some((value, tree)),
            Some(Frame::Seq { items, lines, .. }) => {
                items.push(value);
                lines.push(tree);
            }
            Some(Frame::Map {
                map,
                lines,
                pending_key,
                ..
            }) => match pending_key.take() {
                None => {
                    let key = match value {
                        Value::String(s) => s,
                        Value::Null => String::new(),
                        Value::Bool(_) | Value::Number(_) => value.to_string(),
                        Value::Array(_) | Value::Object(_) => {
                            return Err(SyntaxError {
                                line,
                                column: 1,
                                message: "a mapping key must be a scalar".to_string(),
                            });
                        }
                    };
                    *pending_key = Some(key);
                }
                Some(key) => {
                    if key == "<<" {
                        // Merge key: copy the entries of the referenced mapping that are not set.
                        if let Value::Object(merged) = value {
                            for (k, v) in merged {
                                map.entry(k).or_insert(v);
                            }
                        }
                    } else {
                        lines.push((key.clone(), tree));
                        map.insert(key, value);
                    }
                }
            },
        }
        Ok(())
    }
}

/// YAML 1.2 core schema resolution of a plain scalar.
fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.') {
        if let Some(n) = parse_int(text) {
            return Value::Number(n.into());
        }
        if let Some(f) = parse_float(text).and_then(Number::from_f64) {
            return Value::Number(f);
        }
    }
    Value::String(text.to_string())
}

fn parse_int(text: &str) -> Option<i64> {
    if let Some(hex) = text.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some(oct) = text.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_float(text: &str) -> Option<f64> {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let valid = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && body.bytes().any(|b| b.is_ascii_digit());
    if valid { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_values_and_lines() {
        let text = "# a comment\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - name: http\n    port: 80\n  - port: 8080\n---\n\n# second\nkind: Namespace\nmetadata: {name: shop, labels: {a: 'true'}}\n";
        let docs = parse_stream(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].start_line, 1);
        assert_eq!(docs[0].value["spec"]["ports"][1]["port"], 8080);
        assert_eq!(docs[0].lines.line_of("spec.ports[1].port"), Some(10));
        assert_eq!(docs[0].lines.line_of("metadata.name"), Some(5));
        assert_eq!(docs[1].start_line, 13);
        assert_eq!(docs[1].value["metadata"]["labels"]["a"], "true");
        assert_eq!(docs[1].lines.line_of("metadata.name"), Some(15));
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let docs =
            parse_stream("a: 010\nb: 1.5\nc: yes\nd: ~\ne: !!str 5\nf: \"7\"\ng: -3\n").unwrap();
        let v = &docs[0].value;
        assert_eq!(v["a"], 10);
        assert_eq!(v["b"], 1.5);
        assert_eq!(v["c"], "yes");
        assert!(v["d"].is_null());
        assert_eq!(v["e"], "5");
        assert_eq!(v["f"], "7");
        assert_eq!(v["g"], -3);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let err = parse_stream("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert!(err.line >= 2, "{err:?}");
    }

    #[test]
    fn anchors_and_merge_keys() {
        let docs = parse_stream("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\nref: *b\n").unwrap();
        assert_eq!(docs[0].value["other"]["x"], 1);
        assert_eq!(docs[0].value["ref"]["x"], 1);
    }
}
