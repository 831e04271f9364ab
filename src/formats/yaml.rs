//! A YAML (and JSON) document reader that remembers where every value came from.
//!
//! Documents become `serde_json::Value`s, so they deserialize straight into k8s-openapi types,
//! and a parallel [`LineTree`] keeps the line of every node, so a finding can point at
//! `file:line` (the document start, or the line of one field such as `spec.ports[1].port`).
//! Scalars follow the YAML 1.2 core schema, as Kubernetes' own decoder does for the values that matter.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

pub use super::yaml_tree::LineTree;
use super::yaml_tree::{Children, key_text, resolve_plain};

/// One document of a stream.
#[derive(Debug)]
pub struct Document {
    pub value: Value,
    pub lines: LineTree,
    /// The document's first line as istioctl counts it: the first line after the `---` that is
    /// not blank (comment lines count).
    pub start_line: u32,
}

/// How deeply collections may nest (block or flow style, aliases included): as deep as
/// serde_json's limit for JSON. Real manifests nest a few dozen levels; a deeper document is
/// rejected before it can exhaust a stack when its trees are cloned or dropped.
pub const MAX_DEPTH: usize = 128;

/// How many nodes aliases may add to one stream, in all (a "billion laughs" document expands
/// 9 aliases of 9 aliases... into billions of nodes from a few hundred bytes).
pub const MAX_ALIAS_NODES: usize = 100_000;

/// A syntax error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Parses every document of a YAML stream. Empty documents are dropped.
pub fn parse_stream(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let mut documents = Vec::new();
    parse_stream_each(text, |doc| documents.push(doc))?;
    Ok(documents)
}

/// Parses a YAML stream one document at a time: `each` gets every non-empty document as soon as
/// it ends, so a large file is never held as a whole tree (memory follows one document, not the
/// file). A syntax error stops the stream; the documents before it were already given.
///
/// Documents of the usual manifest shape are read by [`super::yaml_subset`]; from the first
/// that is not, saphyr-parser reads the rest of the stream.
pub fn parse_stream_each(text: &str, mut each: impl FnMut(Document)) -> Result<(), SyntaxError> {
    let layout = Layout::new(text);
    let mut give = |value: Value, lines: LineTree| {
        if !value.is_null() {
            let start_line = layout.document_start(lines.line);
            each(Document {
                value,
                lines,
                start_line,
            });
        }
    };
    for chunk in super::yaml_subset::documents(text) {
        match chunk.read() {
            Ok(Some((value, lines))) => give(value, lines),
            Ok(None) => {}
            Err(super::yaml_subset::Unsupported) => {
                return parse_events(&text[chunk.start..], chunk.lines_before, &mut give);
            }
        }
    }
    Ok(())
}

/// Parses a stream with saphyr-parser alone (what [`parse_stream`] must agree with).
#[cfg(test)]
pub(super) fn parse_stream_full(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let layout = Layout::new(text);
    let mut documents = Vec::new();
    parse_events(text, 0, &mut |value: Value, lines: LineTree| {
        if !value.is_null() {
            let start_line = layout.document_start(lines.line);
            documents.push(Document {
                value,
                lines,
                start_line,
            });
        }
    })?;
    Ok(documents)
}

/// Reads a stream with saphyr-parser; `lines_before`: the lines of the whole stream before
/// `text`, added to every line.
fn parse_events(
    text: &str,
    lines_before: u32,
    give: &mut impl FnMut(Value, LineTree),
) -> Result<(), SyntaxError> {
    let mut builder = Builder {
        lines_before,
        ..Builder::default()
    };
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| SyntaxError {
            line: line_u32(e.marker().line()).saturating_add(lines_before),
            column: line_u32(e.marker().col() + 1),
            message: e.info().to_string(),
        })?;
        builder.push(event, span)?;
        for (value, lines) in builder.documents.drain(..) {
            give(value, lines);
        }
    }
    Ok(())
}

/// Parses a JSON document (a `.json` file). Lines are only known for the document itself.
pub fn parse_json(text: &str) -> Result<Vec<Document>, SyntaxError> {
    let value = match serde_json::from_str::<StrictValue>(text) {
        Ok(StrictValue(value)) => value,
        Err(e) => {
            // A duplicate key: the YAML reader (JSON is flow YAML) names both of its lines.
            if e.to_string().starts_with(DUPLICATE_KEY) {
                parse_stream(text)?;
            }
            return Err(SyntaxError {
                line: line_u32(e.line()),
                column: line_u32(e.column()),
                message: e.to_string(),
            });
        }
    };
    Ok(vec![Document {
        value,
        lines: LineTree {
            line: 1,
            children: Children::None,
        },
        start_line: 1,
    }])
}

const DUPLICATE_KEY: &str = "duplicate key";

/// A JSON value read as Kubernetes' strict decoder reads it: a key given twice in one object
/// is an error (serde_json would keep the last one silently).
struct StrictValue(Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE_KEY} {key:?}")));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
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
        /// The line of each key in `lines`, to name both places of a duplicate.
        key_lines: Vec<u32>,
        line: u32,
        pending_key: Option<(String, u32)>,
        anchor: usize,
        size: Size,
    },
    Seq {
        items: Vec<Value>,
        lines: Vec<LineTree>,
        line: u32,
        anchor: usize,
        size: Size,
    },
}

/// How many nodes a subtree has and how deep it nests (a scalar: 1 node, height 0).
#[derive(Clone, Copy, Debug, Default)]
struct Size {
    nodes: usize,
    height: usize,
}

impl Size {
    fn add_child(&mut self, child: Size) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.height = self.height.max(child.height + 1);
    }
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Value, LineTree, Size)>,
    documents: Vec<(Value, LineTree)>,
    current: Option<(Value, LineTree)>,
    /// Nodes added by aliases so far (see [`MAX_ALIAS_NODES`]).
    alias_nodes: usize,
    /// The lines of the stream before the text read (see [`parse_events`]).
    lines_before: u32,
}

impl Builder {
    fn push(&mut self, event: Event<'_>, span: Span) -> Result<(), SyntaxError> {
        let line = line_u32(span.start.line()).saturating_add(self.lines_before);
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
                let size = Size {
                    nodes: 1,
                    height: 0,
                };
                self.finish(value, tree, anchor, line, size)?;
            }
            Event::Alias(id) => {
                let column = line_u32(span.start.col() + 1);
                let Some((_, _, size)) = self.anchors.get(&id) else {
                    return Err(SyntaxError {
                        line,
                        column,
                        message: "alias to an unknown anchor".to_string(),
                    });
                };
                let size = *size;
                self.alias_nodes = self.alias_nodes.saturating_add(size.nodes);
                if self.alias_nodes > MAX_ALIAS_NODES {
                    return Err(SyntaxError {
                        line,
                        column,
                        message: format!(
                            "aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb, \"billion laughs\"?); not read"
                        ),
                    });
                }
                if self.stack.len() + size.height >= MAX_DEPTH {
                    return Err(too_deep(line, column));
                }
                let (value, tree, _) = self.anchors[&id].clone();
                self.finish(value, tree, 0, line, size)?;
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if self.stack.len() >= MAX_DEPTH => {
                return Err(too_deep(line, line_u32(span.start.col() + 1)));
            }
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                items: Vec::new(),
                lines: Vec::new(),
                line,
                anchor,
                size: Size::default(),
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                map: Map::new(),
                lines: Vec::new(),
                key_lines: Vec::new(),
                line,
                pending_key: None,
                anchor,
                size: Size::default(),
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, tree, anchor, size) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        lines,
                        line,
                        anchor,
                        size,
                    }) => (
                        Value::Array(items),
                        LineTree {
                            line,
                            children: Children::Seq(lines.into_boxed_slice()),
                        },
                        anchor,
                        size,
                    ),
                    Some(Frame::Map {
                        map,
                        lines,
                        line,
                        anchor,
                        size,
                        ..
                    }) => (
                        Value::Object(map),
                        LineTree {
                            line,
                            children: Children::Map(
                                lines
                                    .into_iter()
                                    .map(|(k, t)| (k.into_boxed_str(), t))
                                    .collect(),
                            ),
                        },
                        anchor,
                        size,
                    ),
                    None => return Ok(()),
                };
                let start = tree.line;
                let size = Size {
                    nodes: size.nodes.saturating_add(1),
                    height: size.height,
                };
                self.finish(value, tree, anchor, start, size)?;
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
        size: Size,
    ) -> Result<(), SyntaxError> {
        if anchor != 0 {
            self.anchors
                .insert(anchor, (value.clone(), tree.clone(), size));
        }
        match self.stack.last_mut() {
            None => self.current = Some((value, tree)),
            Some(Frame::Seq {
                items,
                lines,
                size: parent,
                ..
            }) => {
                parent.add_child(size);
                items.push(value);
                lines.push(tree);
            }
            Some(Frame::Map {
                map,
                lines,
                key_lines,
                pending_key,
                size: parent,
                ..
            }) => match pending_key.take() {
                None => {
                    let Some(key) = key_text(value) else {
                        return Err(SyntaxError {
                            line,
                            column: 1,
                            message: "a mapping key must be a scalar".to_string(),
                        });
                    };
                    parent.add_child(size);
                    *pending_key = Some((key, line));
                }
                Some((key, key_line)) => {
                    parent.add_child(size);
                    if key == "<<" {
                        // Merge key: copy the entries of the referenced mapping that are not set.
                        if let Value::Object(merged) = value {
                            for (k, v) in merged {
                                map.entry(k).or_insert(v);
                            }
                        }
                    } else {
                        // Strict, as kubectl's decoder: a second value for a key is an error,
                        // never a silent override (a merged `<<` entry may be overridden).
                        if map.contains_key(&key)
                            && let Some(at) = lines.iter().position(|(k, _)| *k == key)
                        {
                            return Err(SyntaxError {
                                line: key_line,
                                column: 1,
                                message: format!(
                                    "duplicate key {key:?}: first at line {}, again at line {key_line}",
                                    key_lines[at]
                                ),
                            });
                        }
                        lines.push((key.clone(), tree));
                        key_lines.push(key_line);
                        map.insert(key, value);
                    }
                }
            },
        }
        Ok(())
    }
}

fn too_deep(line: u32, column: u32) -> SyntaxError {
    SyntaxError {
        line,
        column,
        message: format!("the document nests deeper than {MAX_DEPTH} levels; not read"),
    }
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

    // Regression (issue 11, item 1): 40,000 nested block sequences overflowed the stack when
    // the trees were dropped; block nesting is capped as flow and JSON nesting are.
    #[test]
    fn deep_block_nesting_is_an_error_not_a_crash() {
        let text = format!("{}x\n", "- ".repeat(40_000));
        let err = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse_stream(&text).unwrap_err())
            .unwrap()
            .join()
            .unwrap();
        assert!(err.message.contains("deeper than 128 levels"), "{err:?}");
        assert_eq!(err.line, 1);
        let mut deep = String::new();
        for i in 0..200 {
            deep.push_str(&format!("{}a:\n", "  ".repeat(i)));
        }
        let err = parse_stream(&deep).unwrap_err();
        assert!(err.message.contains("deeper than"), "{err:?}");
        assert_eq!(err.line, 129);
        // 100 levels are fine.
        let ok = format!("{}x\n", "- ".repeat(100));
        assert_eq!(parse_stream(&ok).unwrap().len(), 1);
    }

    // Regression (issue 11, item 3): a 382-byte "billion laughs" grew past 8 GiB.
    #[test]
    fn alias_bombs_are_capped() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for w in names.windows(2) {
            let star = format!("*{}", w[0]);
            let list = [star.as_str(); 9].join(", ");
            text.push_str(&format!("{}: &{} [{list}]\n", w[1], w[1]));
        }
        let err = parse_stream(&text).unwrap_err();
        assert!(
            err.message
                .contains("aliases expand to more than 100000 nodes"),
            "{err:?}"
        );
        // A few aliases of a small anchor are fine.
        let docs = parse_stream("a: &a {x: 1}\nb: [*a, *a, *a]\n").unwrap();
        assert_eq!(docs[0].value["b"][2]["x"], 1);
    }

    #[test]
    fn aliases_cannot_nest_past_the_depth_limit() {
        // Each anchor wraps the previous one: linear text, nesting that grows with every line.
        let mut text = String::from("a0: &a0 [x]\n");
        for i in 1..200 {
            text.push_str(&format!("a{i}: &a{i} [*a{}]\n", i - 1));
        }
        let err = parse_stream(&text).unwrap_err();
        assert!(err.message.contains("deeper than"), "{err:?}");
    }

    // Regression (issue 11, item 12): a second `ports:` silently replaced the first, and a
    // finding then cited a line of the first block.
    #[test]
    fn duplicate_keys_name_both_lines() {
        let text = "apiVersion: v1\nkind: Service\nspec:\n  ports:\n  - port: 80\n  selector: {app: a}\n  ports:\n  - port: 81\n";
        let err = parse_stream(text).unwrap_err();
        assert_eq!(err.line, 7);
        assert_eq!(
            err.message,
            "duplicate key \"ports\": first at line 4, again at line 7"
        );
        let err = parse_stream("a: {b: 1, b: 2}\n").unwrap_err();
        assert!(err.message.starts_with("duplicate key \"b\""), "{err:?}");
        // A merged key may be overridden, as YAML's merge keys allow.
        let docs = parse_stream("base: &b {x: 1, y: 1}\nother:\n  <<: *b\n  x: 2\n").unwrap();
        assert_eq!(docs[0].value["other"]["x"], 2);
        assert_eq!(docs[0].value["other"]["y"], 1);
    }

    // Regression (issue 11, item 12, .json manifests): serde_json kept the last key silently.
    #[test]
    fn duplicate_json_keys_name_both_lines() {
        let text = "{\"kind\": \"Service\",\n \"spec\": {\"ports\": [{\"port\": 80}],\n  \"ports\": [{\"port\": 81}]}}\n";
        let err = parse_json(text).unwrap_err();
        assert_eq!(
            err.message,
            "duplicate key \"ports\": first at line 2, again at line 3"
        );
        assert_eq!(err.line, 3);
        let docs = parse_json("{\"a\": [1, 2.5, null, true, {\"b\": \"c\"}]}").unwrap();
        assert_eq!(docs[0].value["a"][4]["b"], "c");
        assert_eq!(docs[0].value["a"][1], 2.5);
    }
}

#[cfg(test)]
mod subset_tests {
    use super::super::yaml_subset::documents;
    use super::{parse_stream, parse_stream_full};

    /// What a stream reads to, as text: every document's value, lines and start, or the error.
    fn read(text: &str, full: bool) -> String {
        let result = if full {
            parse_stream_full(text)
        } else {
            parse_stream(text)
        };
        format!("{result:?}")
    }

    /// The documents of `text` that this reader takes (the rest is the full reader's).
    fn taken(text: &str) -> usize {
        documents(text)
            .iter()
            .take_while(|c| c.read().is_ok())
            .count()
    }

    fn agrees(text: &str) {
        assert_eq!(read(text, false), read(text, true), "on {text:?}");
    }

    #[test]
    fn manifests_read_here_as_the_full_reader_reads_them() {
        let shapes = [
            "a: 1\nb: two\nc:\n  d: [x, 'y', \"z\"]\n  e: {}\n  f: []\n",
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p # the name\n  labels:\n    app: x\nspec:\n  containers:\n  - name: c\n    image: i:1\n    ports:\n    - containerPort: 80\n      name: http\n    -   containerPort: 81\n---\n# only a comment\n---\nkind: Service\n",
            "list:\n- a\n-\n- - nested\nnext: 1\n",
            "k:\n  - 1\n  - 0x1f\n  - 1.5e3\n  - -2\n  - ~\n  - null\n  - True\n  - ''\n  - '' \n",
            "\"quoted key\": 'it''s'\n'80': \"tab\\there \\u00e9 \\x41 \\\\ \\\" \\/\"\n81: eighty\ntrue: yes\n",
            "a: b: c\n",
            "a: 1\na: 2\n",
            "a: |\n  text\n",
            "a: plain\n  continued\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a:\n\tb: 1\n",
            "- a\n - b\n",
            "a:\n  b: 1\n c: 2\n",
            "a: 'unclosed\n  still'\n",
            "a: [1, 2\n  , 3]\n",
            "a: {b: 1, c: [x, y], 'd': \"e\"}\n",
            "a: {b: 1, b: 2}\n",
            "a: [1,]\n",
            "a: \"x\"#c\n",
            "a: x#y\n",
            "a: x #y\n",
            "...\n",
            "a: 1\n...\nb: 2\n",
            "%YAML 1.2\n---\na: 1\n",
            "--- a\n",
            "--- # c\na: 1\n",
            "----\n",
            "a: 1\r\nb: 2\r\n",
            "  a: 1\nb: 2\n",
            "[1, 2]\n",
            "plain\n",
            "a:\n  plain on its line\n",
            "a:\n- 1\n- 2\nb:\n  - x: 1\n    y: 2\n  - z\n",
            "<<: {a: 1}\n",
            "key : value\n",
            "a: 'x' 'y'\n",
            "a: :x\n",
            "a: -\n",
            "a: -x\n",
            "- key: v\n  other: w\n   deeper: z\n",
            "a:\n  # c\n  b: 1\n# c\nd: 2\n",
            "é: 1\n",
            "",
            "\n\n",
            "a: 1\n---\n---\nb: 2\n",
        ];
        for text in shapes {
            agrees(text);
        }
        // The usual shapes are this reader's (not all left to the full one).
        assert_eq!(taken(shapes[0]), 1);
        assert_eq!(taken(shapes[1]), 4);
        assert_eq!(taken(shapes[4]), 1);
        assert_eq!(taken(shapes[16]), 1);
        assert_eq!(taken("a: 1\n...\n"), 0);
    }

    /// Every YAML file of the fixtures, and each with small changes (characters inserted,
    /// deleted and lines moved by a seeded generator): the same values, lines and errors.
    #[test]
    fn fixtures_and_their_mutations_read_as_the_full_reader_reads_them() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() > 100, "fixtures not found");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let inserted = [
            ":", " ", "-", "#", "'", "\"", "[", "]", "{", "}", ",", "\n", "&", "*", "|", "\t",
            "- ", ": ", "  ", "\\", "---\n", "x",
        ];
        let (mut read_here, mut mutations) = (0, 0);
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            agrees(&text);
            read_here += taken(&text);
            for _ in 0..40 {
                let mut changed = text.clone();
                for _ in 0..1 + next(3) {
                    if changed.is_empty() {
                        break;
                    }
                    let mut at = next(changed.len());
                    while !changed.is_char_boundary(at) {
                        at -= 1;
                    }
                    match next(3) {
                        0 => changed.insert_str(at, inserted[next(inserted.len())]),
                        1 => {
                            let mut end = at + 1;
                            while end < changed.len() && !changed.is_char_boundary(end) {
                                end += 1;
                            }
                            changed.replace_range(at..end.min(changed.len()), "");
                        }
                        _ => {
                            // A line's indent changed by one space.
                            let start = changed[..at].rfind('\n').map_or(0, |i| i + 1);
                            if next(2) == 0 {
                                changed.insert(start, ' ');
                            } else if changed[start..].starts_with(' ') {
                                changed.remove(start);
                            }
                        }
                    }
                }
                agrees(&changed);
                mutations += 1;
            }
        }
        assert!(read_here > 200, "only {read_here} documents read here");
        assert!(mutations > 4000);
    }
}
