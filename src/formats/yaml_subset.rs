//! The shape nearly every Kubernetes manifest has, read in one pass over its lines: block
//! mappings and sequences (compact `- key: value` items and sequences at their key's indent
//! included) whose scalars each fit on their line (plain, `'single'` or `"double"` quoted), and
//! flow collections that close on the line they open (`[]`, `{}`, `["a", b]`).
//!
//! Anything else is not this reader's to judge: block scalars (`|`, `>`), scalars over several
//! lines, anchors, aliases, tags, merge keys, directives, tabs, `\r`, non-ASCII text, duplicate
//! keys, and whatever is not YAML at all. For those it answers [`Unsupported`] and the full
//! reader ([`super::yaml`], saphyr-parser) reads the document, and the rest of the file, with its
//! errors. What this reader accepts, it reads to the same values and the same lines as the full
//! reader (tested against it, on every fixture and on mutated ones).

use serde_json::{Map, Value};

use super::yaml_tree::{Children, LineTree, key_text, resolve_plain};

/// The document is not of the shape read here: the full reader reads it.
#[derive(Debug, PartialEq, Eq)]
pub struct Unsupported;

type Read<T> = Result<T, Unsupported>;

/// How deeply this reader nests before it leaves a document to the full reader (which says
/// where [`super::yaml::MAX_DEPTH`] is passed).
const MAX_DEPTH: usize = 100;

/// The longest key read here: YAML's limit for an implicit key is 1,024 characters.
const MAX_KEY: usize = 1000;

/// One document of a stream, as its lines say: where it starts and its text.
pub struct Chunk<'t> {
    /// The byte at which the document starts in the stream (its `---` line, if it has one).
    pub start: usize,
    /// The number of lines before it.
    pub lines_before: u32,
    text: &'t str,
    /// It starts with a `---` line.
    explicit: bool,
    /// It has what only the full reader reads (`...`, a `%` directive, content after `---`):
    /// the full reader reads it and the rest of the stream.
    unsupported: bool,
}

/// The documents of a stream, split at its `---` lines; the last may be [`Chunk::unsupported`].
pub fn documents(text: &str) -> Vec<Chunk<'_>> {
    let mut chunks = Vec::new();
    let mut chunk = Chunk {
        start: 0,
        lines_before: 0,
        text: "",
        explicit: false,
        unsupported: false,
    };
    let mut offset = 0;
    for (line, raw) in text.split_inclusive('\n').enumerate() {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let marker = |m: &str| {
            body.strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
        };
        if marker("---") {
            chunk.text = &text[chunk.start..offset];
            let next = Chunk {
                start: offset,
                lines_before: u32::try_from(line).unwrap_or(u32::MAX),
                text: "",
                explicit: true,
                unsupported: !body[3..].bytes().all(|b| b == b' '),
            };
            chunks.push(std::mem::replace(&mut chunk, next));
            if chunk.unsupported {
                break;
            }
        } else if marker("...") || body.starts_with('%') {
            chunk.unsupported = true;
            break;
        }
        offset += raw.len();
    }
    chunk.text = &text[chunk.start..];
    chunks.push(chunk);
    chunks
}

impl Chunk<'_> {
    /// The document's root and its lines; `None` for a document without content.
    pub fn read(&self) -> Read<Option<(Value, LineTree)>> {
        if self.unsupported {
            return Err(Unsupported);
        }
        let mut number = self.lines_before;
        let mut body = self.text;
        if self.explicit {
            // The `---` line itself (only spaces follow it here).
            number += 1;
            body = body.split_once('\n').map_or("", |(_, rest)| rest);
        }
        let mut lines = Vec::new();
        for raw in body.split('\n') {
            number += 1;
            if !raw.bytes().all(|b| (b' '..=b'~').contains(&b)) {
                // Tabs, `\r`, other control characters, non-ASCII text.
                return Err(Unsupported);
            }
            let text = raw.trim_start_matches(' ');
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            lines.push(Line {
                number,
                indent: raw.len() - text.len(),
                text,
            });
        }
        if lines.is_empty() {
            return Ok(None);
        }
        let mut reader = Reader {
            lines,
            at: 0,
            depth: 0,
        };
        let root = reader.block_node(-1)?;
        if reader.at != reader.lines.len() {
            return Err(Unsupported);
        }
        Ok(Some(root))
    }
}

/// A line with content: its number (1-based), its indent and its text after the indent.
#[derive(Clone, Copy, Debug)]
struct Line<'t> {
    number: u32,
    indent: usize,
    text: &'t str,
}

struct Reader<'t> {
    lines: Vec<Line<'t>>,
    at: usize,
    depth: usize,
}

/// `-` alone or followed by a space: a block sequence entry.
fn is_entry(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// Nothing, or a comment, after a node (spaces before it already skipped).
fn is_end(rest: &str) -> bool {
    rest.is_empty() || rest.starts_with('#')
}

/// The text after the spaces that follow an indicator or a node.
fn after_spaces(text: &str) -> &str {
    text.trim_start_matches(' ')
}

impl<'t> Reader<'t> {
    fn line(&self) -> Option<Line<'t>> {
        self.lines.get(self.at).copied()
    }

    fn deeper(&mut self) -> Read<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        Ok(())
    }

    /// The node that starts at the current line, indented more than `parent`.
    fn block_node(&mut self, parent: isize) -> Read<(Value, LineTree)> {
        let line = self.line().ok_or(Unsupported)?;
        if line.indent as isize <= parent {
            return Err(Unsupported);
        }
        if is_entry(line.text) {
            return self.sequence(line.indent);
        }
        if key_end(line.text)?.is_some() {
            return self.mapping(line.indent);
        }
        // A scalar (or flow collection) alone on its line.
        let node = inline(line.text, line.number, self.depth)?;
        self.at += 1;
        self.no_continuation(parent)?;
        Ok(node)
    }

    /// After a node that ends its line: the next line must not be indented under `parent`
    /// (that would continue a scalar over lines, or be an error: the full reader's).
    fn no_continuation(&self, parent: isize) -> Read<()> {
        match self.line() {
            Some(next) if next.indent as isize > parent => Err(Unsupported),
            _ => Ok(()),
        }
    }

    /// A block mapping whose keys are at `indent`, from the current line.
    fn mapping(&mut self, indent: usize) -> Read<(Value, LineTree)> {
        self.deeper()?;
        let start = self.lines[self.at].number;
        let mut entries = Entries::default();
        while let Some(line) = self.line() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || is_entry(line.text) {
                return Err(Unsupported);
            }
            let (key, rest) = key(line.text)?;
            let rest = after_spaces(rest);
            let (value, tree) = if is_end(rest) {
                self.at += 1;
                match self.line() {
                    Some(next) if next.indent > indent => self.block_node(indent as isize)?,
                    Some(next) if next.indent == indent && is_entry(next.text) => {
                        self.sequence(indent)?
                    }
                    _ => (Value::Null, LineTree::leaf(line.number)),
                }
            } else {
                let node = inline(rest, line.number, self.depth)?;
                self.at += 1;
                self.no_continuation(indent as isize)?;
                node
            };
            entries.push(key, value, tree)?;
        }
        self.depth -= 1;
        entries.finish(start)
    }

    /// A block sequence whose `-` are at `indent`, from the current line.
    fn sequence(&mut self, indent: usize) -> Read<(Value, LineTree)> {
        self.deeper()?;
        let start = self.lines[self.at].number;
        let mut items = Vec::new();
        let mut trees = Vec::new();
        while let Some(line) = self.line() {
            if line.indent < indent || (line.indent == indent && !is_entry(line.text)) {
                break;
            }
            if line.indent > indent {
                return Err(Unsupported);
            }
            let content = after_spaces(&line.text[1..]);
            let (value, tree) = if is_end(content) {
                self.at += 1;
                match self.line() {
                    Some(next) if next.indent > indent => self.block_node(indent as isize)?,
                    _ => (Value::Null, LineTree::leaf(line.number)),
                }
            } else if is_entry(content) {
                // `- - x`: a sequence in a sequence on one line.
                return Err(Unsupported);
            } else if key_end(content)?.is_some() {
                // `- key: value`: a mapping whose keys are at the column of `key`.
                let column = line.indent + line.text.len() - content.len();
                self.lines[self.at] = Line {
                    number: line.number,
                    indent: column,
                    text: content,
                };
                self.mapping(column)?
            } else {
                let node = inline(content, line.number, self.depth)?;
                self.at += 1;
                self.no_continuation(indent as isize)?;
                node
            };
            items.push(value);
            trees.push(tree);
        }
        self.depth -= 1;
        Ok((
            Value::Array(items),
            LineTree {
                line: start,
                children: Children::Seq(trees.into_boxed_slice()),
            },
        ))
    }
}

/// A mapping's entries and their lines, kept in order until the mapping ends.
#[derive(Default)]
struct Entries {
    values: Vec<(String, Value)>,
    trees: Vec<(Box<str>, LineTree)>,
}

impl Entries {
    /// One more entry; a merge key (`<<`) is the full reader's.
    fn push(&mut self, key: String, value: Value, tree: LineTree) -> Read<()> {
        if key == "<<" {
            return Err(Unsupported);
        }
        self.trees.push((key.as_str().into(), tree));
        self.values.push((key, value));
        Ok(())
    }

    /// The mapping, its room made once for all its entries (a document's mappings are kept
    /// as long as the run, so no spare room); a duplicate key is the full reader's.
    fn finish(self, line: u32) -> Read<(Value, LineTree)> {
        let count = self.values.len();
        let map: Map<String, Value> = self.values.into_iter().collect();
        if map.len() != count {
            return Err(Unsupported);
        }
        Ok((
            Value::Object(map),
            LineTree {
                line,
                children: Children::Map(self.trees.into_boxed_slice()),
            },
        ))
    }
}

/// Where the key of `text` ends (at its `:`), when the line is `key: ...`; `None` for a line
/// that is a scalar.
fn key_end(text: &str) -> Read<Option<usize>> {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'\'') | Some(b'"') => {
            let (_, end) = quoted_end(text)?;
            return Ok((text[end..].starts_with(':')
                && (end + 1 == text.len() || bytes[end + 1] == b' '))
                .then_some(end));
        }
        Some(b'[' | b'{') => return Ok(None),
        Some(&first) if is_indicator(first) => return Err(Unsupported),
        _ => {}
    }
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b':' if i + 1 == bytes.len() || bytes[i + 1] == b' ' => return Ok(Some(i)),
            b'#' if bytes[i - 1] == b' ' => return Ok(None),
            _ => {}
        }
    }
    Ok(None)
}

/// A line's key, as the full reader makes it a mapping key, and the text after its `:`.
fn key(text: &str) -> Read<(String, &str)> {
    let end = key_end(text)?.ok_or(Unsupported)?;
    if end > MAX_KEY {
        return Err(Unsupported);
    }
    let key = match text.as_bytes()[0] {
        b'\'' | b'"' => quoted(&text[..end])?,
        _ => {
            let plain = &text[..end];
            if plain.ends_with(' ') {
                return Err(Unsupported);
            }
            key_text(resolve_plain(plain)).ok_or(Unsupported)?
        }
    };
    Ok((key, &text[end + 1..]))
}

/// The characters that cannot start a plain scalar here (`-` followed by a non-space can: a
/// negative number, a flag).
fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'?' | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    ) || b == b'-'
}

/// A node that ends its line (a comment may follow): a scalar or a flow collection.
fn inline(text: &str, line: u32, depth: usize) -> Read<(Value, LineTree)> {
    let first = text.as_bytes()[0];
    let (node, rest) = match first {
        b'\'' | b'"' => {
            let (_, end) = quoted_end(text)?;
            (
                (Value::String(quoted(&text[..end])?), LineTree::leaf(line)),
                &text[end..],
            )
        }
        b'[' | b'{' => {
            let mut flow = Flow {
                text,
                at: 0,
                line,
                depth,
            };
            let node = flow.node()?;
            (node, &text[flow.at..])
        }
        b'-' if text.len() > 1 && text.as_bytes()[1] != b' ' => {
            return plain_block(text, line);
        }
        b if is_indicator(b) => return Err(Unsupported),
        _ => return plain_block(text, line),
    };
    // After a quoted scalar or a flow collection: spaces, then nothing or a comment.
    let after = after_spaces(rest);
    if !is_end(after) || (after.starts_with('#') && after.len() == rest.len()) {
        return Err(Unsupported);
    }
    Ok(node)
}

/// A plain scalar in block context, to the end of its line or a comment.
fn plain_block(text: &str, line: u32) -> Read<(Value, LineTree)> {
    let bytes = text.as_bytes();
    let mut end = bytes.len();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            // `a: b: c`: a key in a value, an error (the full reader's).
            b':' if i + 1 == bytes.len() || bytes[i + 1] == b' ' => return Err(Unsupported),
            b'#' if i > 0 && bytes[i - 1] == b' ' => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let scalar = text[..end].trim_end_matches(' ');
    Ok((resolve_plain(scalar), LineTree::leaf(line)))
}

/// Where a quoted scalar that starts `text` ends: its closing quote's byte, and the byte after.
fn quoted_end(text: &str) -> Read<(usize, usize)> {
    let bytes = text.as_bytes();
    let quote = bytes[0];
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' if quote == b'\'' => {
                if bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                return Ok((i, i + 1));
            }
            b'"' if quote == b'"' => return Ok((i, i + 1)),
            b'\\' if quote == b'"' => i += 2,
            _ => i += 1,
        }
    }
    // Not closed on its line: a scalar over lines.
    Err(Unsupported)
}

/// The text of a quoted scalar (`text` is the scalar with its quotes).
fn quoted(text: &str) -> Read<String> {
    let inner = &text[1..text.len() - 1];
    if text.starts_with('\'') {
        return Ok(inner.replace("''", "'"));
    }
    if !inner.contains('\\') {
        return Ok(inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next().ok_or(Unsupported)? {
            '\\' => '\\',
            '"' => '"',
            '/' => '/',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            ' ' => ' ',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            _ => return Err(Unsupported),
        };
        out.push(escaped);
    }
    Ok(out)
}

fn hex(chars: &mut std::str::Chars<'_>, digits: usize) -> Read<char> {
    let mut code = 0u32;
    for _ in 0..digits {
        let digit = chars
            .next()
            .and_then(|c| c.to_digit(16))
            .ok_or(Unsupported)?;
        code = code * 16 + digit;
    }
    char::from_u32(code).ok_or(Unsupported)
}

/// A flow collection that closes on its line.
struct Flow<'t> {
    text: &'t str,
    at: usize,
    line: u32,
    depth: usize,
}

impl Flow<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    fn node(&mut self) -> Read<(Value, LineTree)> {
        match self.peek().ok_or(Unsupported)? {
            b'[' => self.sequence(),
            b'{' => self.mapping(),
            _ => self.scalar(),
        }
    }

    fn enter(&mut self) -> Read<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Unsupported);
        }
        self.at += 1;
        self.spaces();
        Ok(())
    }

    /// After an entry: `true` at the collection's closing character, `false` after a `,` that
    /// another entry follows (a trailing `,` is the full reader's).
    fn closes(&mut self, close: u8) -> Read<bool> {
        self.spaces();
        match self.peek().ok_or(Unsupported)? {
            b',' => {
                self.at += 1;
                self.spaces();
                if self.peek().is_none_or(|b| b == close) {
                    return Err(Unsupported);
                }
                Ok(false)
            }
            b if b == close => Ok(true),
            _ => Err(Unsupported),
        }
    }

    fn sequence(&mut self) -> Read<(Value, LineTree)> {
        self.enter()?;
        let mut items = Vec::new();
        let mut trees = Vec::new();
        if self.peek() != Some(b']') {
            loop {
                let (value, tree) = self.node()?;
                items.push(value);
                trees.push(tree);
                if self.closes(b']')? {
                    break;
                }
            }
        }
        self.at += 1;
        self.depth -= 1;
        Ok((
            Value::Array(items),
            LineTree {
                line: self.line,
                children: Children::Seq(trees.into_boxed_slice()),
            },
        ))
    }

    fn mapping(&mut self) -> Read<(Value, LineTree)> {
        self.enter()?;
        let mut entries = Entries::default();
        if self.peek() != Some(b'}') {
            loop {
                if matches!(self.peek(), Some(b'[' | b'{')) {
                    return Err(Unsupported);
                }
                let key = self.key()?;
                // `key: value`, the `:` right after the key and a space after it.
                if self.peek() != Some(b':') || self.text.as_bytes().get(self.at + 1) != Some(&b' ')
                {
                    return Err(Unsupported);
                }
                self.at += 1;
                self.spaces();
                let (value, tree) = self.node()?;
                entries.push(key, value, tree)?;
                if self.closes(b'}')? {
                    break;
                }
            }
        }
        self.at += 1;
        self.depth -= 1;
        entries.finish(self.line)
    }

    /// A flow mapping's key, up to its `:`.
    fn key(&mut self) -> Read<String> {
        let rest = &self.text[self.at..];
        let first = *rest.as_bytes().first().ok_or(Unsupported)?;
        if first == b'\'' || first == b'"' {
            let (_, end) = quoted_end(rest)?;
            self.at += end;
            return quoted(&rest[..end]);
        }
        if is_indicator(first) {
            return Err(Unsupported);
        }
        let bytes = rest.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b':' if bytes.get(i + 1) == Some(&b' ') => {
                    let plain = &rest[..i];
                    if plain.ends_with(' ') || i > MAX_KEY {
                        return Err(Unsupported);
                    }
                    self.at += i;
                    return key_text(resolve_plain(plain)).ok_or(Unsupported);
                }
                b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' => return Err(Unsupported),
                _ => {}
            }
        }
        Err(Unsupported)
    }

    /// A quoted scalar, or a plain one without `:` (flow context: it ends at `,`, `]`, `}`).
    fn scalar(&mut self) -> Read<(Value, LineTree)> {
        let rest = &self.text[self.at..];
        let first = *rest.as_bytes().first().ok_or(Unsupported)?;
        if first == b'\'' || first == b'"' {
            let (_, end) = quoted_end(rest)?;
            let value = Value::String(quoted(&rest[..end])?);
            self.at += end;
            return Ok((value, LineTree::leaf(self.line)));
        }
        if is_indicator(first) {
            return Err(Unsupported);
        }
        let bytes = rest.as_bytes();
        let mut end = bytes.len();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b',' | b']' | b'}' => {
                    end = i;
                    break;
                }
                b':' | b'[' | b'{' | b'#' => return Err(Unsupported),
                _ => {}
            }
        }
        let scalar = rest[..end].trim_end_matches(' ');
        self.at += end;
        Ok((resolve_plain(scalar), LineTree::leaf(self.line)))
    }
}
