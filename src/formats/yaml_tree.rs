//! What a YAML document reads to, whichever reader reads it: the line of every node
//! ([`LineTree`]), and the YAML 1.2 core schema's reading of a plain scalar and of a mapping key.

use serde_json::{Number, Value};

/// The line (1-based) of every node of one document, shaped like the document.
#[derive(Clone, Debug, Default)]
pub struct LineTree {
    pub line: u32,
    pub(super) children: Children,
}

#[derive(Clone, Debug, Default)]
pub(super) enum Children {
    #[default]
    None,
    // Boxed slices: exactly as long as the node has children (no spare capacity), since a file's
    // objects keep their trees for as long as the run lasts.
    Map(Box<[(Box<str>, LineTree)]>),
    Seq(Box<[LineTree]>),
}

impl LineTree {
    /// A node without children (a scalar) at a line.
    pub(super) fn leaf(line: u32) -> LineTree {
        LineTree {
            line,
            children: Children::None,
        }
    }

    /// The subtree under a key.
    pub fn key(&self, key: &str) -> Option<&LineTree> {
        match &self.children {
            Children::Map(entries) => entries.iter().find(|(k, _)| &**k == key).map(|(_, t)| t),
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

    /// The tree reduced to the nodes on `patterns` (each a path of keys, `*` for any key and
    /// `[]` for any item); the root's line is always kept. The kept nodes are moved, not copied.
    pub fn pruned(self, patterns: &[&[&str]]) -> LineTree {
        let tails: Vec<&[&str]> = patterns.to_vec();
        self.pruned_by(&tails)
    }

    fn pruned_by(self, patterns: &[&[&str]]) -> LineTree {
        let following = |segment: &dyn Fn(&str) -> bool| -> Vec<&[&str]> {
            patterns
                .iter()
                .filter_map(|p| p.split_first())
                .filter(|(first, _)| segment(first))
                .map(|(_, rest)| rest)
                .collect()
        };
        let children = match self.children {
            Children::None => Children::None,
            Children::Map(entries) => {
                let kept: Box<[(Box<str>, LineTree)]> = entries
                    .into_vec()
                    .into_iter()
                    .filter_map(|(key, child)| {
                        let tails = following(&|s| s == "*" || s == &*key);
                        (!tails.is_empty()).then(|| {
                            let child = child.pruned_by(&tails);
                            (key, child)
                        })
                    })
                    .collect();
                if kept.is_empty() {
                    Children::None
                } else {
                    Children::Map(kept)
                }
            }
            Children::Seq(items) => {
                let tails = following(&|s| s == "[]");
                if tails.is_empty() {
                    Children::None
                } else {
                    Children::Seq(
                        items
                            .into_vec()
                            .into_iter()
                            .map(|i| i.pruned_by(&tails))
                            .collect(),
                    )
                }
            }
        };
        LineTree {
            line: self.line,
            children,
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

/// A scalar as a mapping key (`80` is the key `"80"`, an empty key `""`); `None` for a
/// collection.
pub(super) fn key_text(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        Value::Null => Some(String::new()),
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// YAML 1.2 core schema resolution of a plain scalar.
pub(super) fn resolve_plain(text: &str) -> Value {
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
