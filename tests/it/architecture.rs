//! The shape of the crate, checked: dependencies point one way (down the layers of
//! docs/architecture.md), the command folders never use each other, nothing below the CLI names
//! clap, and no production file is over 800 code lines.
//!
//! The test reads every `crate::` and `super::` path of the non-test code in `src/` (and the
//! `mesh_doctor::` paths of `src/main.rs`), places each module in its unit and layer with
//! [`PLACES`], and prints the graph it checked (`cargo test --test it architecture:: -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path prefix -> (unit, layer rank). The longest matching prefix wins. Ranks: lower is
/// further down; a unit may use its own modules and any unit of a lower rank.
const PLACES: &[(&str, &str, u8)] = &[
    ("formats", "formats", 0),
    ("parallel", "parallel", 0),
    ("kube", "kube", 1),
    ("findings", "findings", 2),
    ("istio", "istio", 3),
    ("envoy", "envoy", 4),
    ("diagnosis", "diagnosis", 5),
    ("analysis", "analysis", 6),
    ("output", "output", 7),
    ("error", "errors", 8),
    ("exit", "errors", 8),
    ("source", "source", 9),
    ("probe", "probe", 10),
    ("request", "request", 11),
    ("commands", "commands", 12),
    ("commands::analyze", "commands::analyze", 12),
    ("commands::bootstrap", "commands::bootstrap", 12),
    ("commands::codes", "commands::codes", 12),
    ("commands::path", "commands::path", 12),
    ("commands::pod", "commands::pod", 12),
    ("commands::proxy_status", "commands::proxy_status", 12),
    ("commands::version", "commands::version", 12),
    ("cli", "cli", 13),
    ("main", "main", 14),
];

/// Edges that point up or sideways today: (from unit, to unit). The list only shrinks: a new
/// violation fails the test, and so does an entry that no longer occurs.
const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

/// Production files over the limit today (path, code lines at most). Only shrinks, like
/// [`KNOWN_VIOLATIONS`].
const KNOWN_LARGE: &[(&str, usize)] = &[];

const MAX_CODE_LINES: usize = 800;

struct SourceFile {
    path: PathBuf,
    module: String,
    /// The text without comments and without `#[cfg(test)]` items.
    code: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` -> `a::b`, `src/a/mod.rs` -> `a`, `src/main.rs` -> `main`, `src/lib.rs` -> ``.
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix("src").unwrap();
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

fn sources() -> Vec<SourceFile> {
    let mut paths = Vec::new();
    rust_files(Path::new("src"), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            SourceFile {
                module: module_of(&path),
                code: strip_tests(&strip_comments(&text)),
                path,
            }
        })
        .collect()
}

/// Removes `//` and `/* */` comments, keeping string literals (and the line structure).
fn strip_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                if chars[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else if c == '"' || (c == 'r' && matches!(next, Some('"') | Some('#'))) {
            let end = literal_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
        } else if c == '\'' {
            let end = char_literal_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index after the string literal starting at `start` (`"..."`, `r"..."`, `r#"..."#`).
fn literal_end(chars: &[char], start: usize) -> usize {
    let mut i = start;
    if chars[i] == 'r' {
        i += 1;
        let mut hashes = 0;
        while chars.get(i) == Some(&'#') {
            hashes += 1;
            i += 1;
        }
        if chars.get(i) != Some(&'"') {
            // An identifier starting with r (`r#type` or a plain name).
            return start + 1;
        }
        i += 1;
        while i < chars.len() {
            if chars[i] == '"' && (1..=hashes).all(|h| chars.get(i + h) == Some(&'#')) {
                return i + 1 + hashes;
            }
            i += 1;
        }
        return i;
    }
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index after a char literal at `start`, or `start + 1` for a lifetime.
fn char_literal_end(chars: &[char], start: usize) -> usize {
    if chars.get(start + 1) == Some(&'\\') {
        let mut i = start + 2;
        while i < chars.len() && chars[i] != '\'' {
            i += 1;
        }
        return i + 1;
    }
    if chars.get(start + 2) == Some(&'\'') {
        return start + 3;
    }
    start + 1
}

/// Removes every item marked `#[cfg(test)]` (a `mod tests { ... }`, a function, a `use`).
fn strip_tests(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i..].starts_with(&marker) {
            i += marker.len();
            // The item ends at its first `;` outside braces, or at its closing brace.
            let mut depth = 0usize;
            while i < chars.len() {
                match chars[i] {
                    '"' => {
                        i = literal_end(&chars, i);
                        continue;
                    }
                    'r' if matches!(chars.get(i + 1), Some('"') | Some('#')) => {
                        i = literal_end(&chars, i);
                        continue;
                    }
                    '\'' => {
                        i = char_literal_end(&chars, i);
                        continue;
                    }
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    ';' if depth == 0 => {
                        i += 1;
                        break;
                    }
                    '\n' => out.push('\n'),
                    _ => {}
                }
                i += 1;
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The module paths a file names: `crate::a::b::C` -> `a::b::C`; `super::x` resolved against
/// the file's module; `use crate::{a, b::c}` -> `a`, `b::c`.
fn paths_named(file: &SourceFile) -> Vec<String> {
    let code = &file.code;
    let root = if file.module == "main" {
        "mesh_doctor::"
    } else {
        "crate::"
    };
    let mut found = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let text: String = bytes.iter().collect();
    for (prefix, base) in [(root, String::new()), ("super::", parent(&file.module))] {
        let mut from = 0;
        while let Some(at) = text[from..].find(prefix) {
            let start = from + at;
            from = start + prefix.len();
            if start > 0 && is_ident(text[..start].chars().last().unwrap()) {
                continue;
            }
            let mut base = base.clone();
            let mut rest = &text[from..];
            // super::super::...
            while prefix == "super::" && rest.starts_with("super::") {
                base = parent(&base);
                rest = &rest["super::".len()..];
            }
            for path in expand(rest) {
                found.push(if base.is_empty() {
                    path
                } else {
                    format!("{base}::{path}")
                });
            }
        }
    }
    found
}

fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// The paths at the start of `rest` (after `crate::`): one path, or a `{...}` group.
fn expand(rest: &str) -> Vec<String> {
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 1;
        let mut end = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let mut items = Vec::new();
        let mut depth = 0;
        let mut item = String::new();
        for c in group[..end].chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(std::mem::take(&mut item));
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        items.push(item);
        return items
            .iter()
            .map(|i| i.trim())
            .filter(|i| !i.is_empty() && *i != "self")
            .flat_map(|i| {
                let head: String = i
                    .chars()
                    .take_while(|c| is_ident(*c) || *c == ':')
                    .collect();
                let head = head.trim_end_matches(':').to_string();
                let tail = &i[head.len()..];
                match tail.strip_prefix("::") {
                    Some(t) if t.starts_with('{') => expand(t)
                        .into_iter()
                        .map(|p| format!("{head}::{p}"))
                        .collect(),
                    _ => vec![head],
                }
            })
            .collect();
    }
    let path: String = rest
        .chars()
        .take_while(|c| is_ident(*c) || *c == ':')
        .collect();
    let path = path.trim_end_matches(':').to_string();
    if let Some((head, _)) = path.split_once("::{") {
        return expand(&rest[head.len() + 2..])
            .into_iter()
            .map(|p| format!("{head}::{p}"))
            .collect();
    }
    if path.is_empty() {
        Vec::new()
    } else {
        vec![path]
    }
}

/// The unit and rank of a module path (longest matching prefix of [`PLACES`]).
fn place(path: &str) -> Option<(&'static str, u8)> {
    PLACES
        .iter()
        .filter(|(prefix, _, _)| {
            path == *prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|(_, unit, rank)| (*unit, *rank))
}

/// The graph: unit -> (rank, units it uses, with one example file each).
type Graph = BTreeMap<&'static str, (u8, BTreeMap<&'static str, String>)>;

fn graph() -> (Graph, Vec<String>) {
    let mut graph = Graph::new();
    let mut unplaced = Vec::new();
    for file in sources() {
        if file.module.is_empty() {
            continue; // lib.rs: module declarations only
        }
        let Some((unit, rank)) = place(&file.module) else {
            unplaced.push(format!("{} (module {})", file.path.display(), file.module));
            continue;
        };
        let entry = graph.entry(unit).or_insert((rank, BTreeMap::new()));
        for path in paths_named(&file) {
            match place(&path) {
                Some((to, _)) if to == unit => {}
                Some((to, _)) => {
                    entry
                        .1
                        .entry(to)
                        .or_insert_with(|| file.path.display().to_string());
                }
                None => unplaced.push(format!("{path} (named in {})", file.path.display())),
            }
        }
    }
    (graph, unplaced)
}

fn rank_of(graph: &Graph, unit: &str) -> u8 {
    graph.get(unit).map(|(r, _)| *r).unwrap_or_else(|| {
        PLACES
            .iter()
            .find(|(_, u, _)| *u == unit)
            .map(|(_, _, r)| *r)
            .unwrap()
    })
}

#[test]
fn dependencies_point_down_and_commands_never_use_each_other() {
    let (graph, unplaced) = graph();
    assert!(
        unplaced.is_empty(),
        "modules without a place in PLACES (add them, with their layer):\n{}",
        unplaced.join("\n")
    );
    let mut by_rank: Vec<(&u8, &&str)> = graph.iter().map(|(u, (r, _))| (r, u)).collect();
    by_rank.sort();
    println!("layer graph checked (rank unit -> units it uses):");
    let mut violations = BTreeSet::new();
    for (rank, unit) in by_rank {
        let uses = &graph[*unit].1;
        let names: Vec<String> = uses
            .keys()
            .map(|to| format!("{to}({})", rank_of(&graph, to)))
            .collect();
        println!("  {rank:>2} {unit} -> {}", names.join(", "));
        for (to, example) in uses {
            let to_rank = rank_of(&graph, to);
            let sideways = to_rank == *rank;
            if to_rank > *rank || sideways {
                violations.insert((unit.to_string(), to.to_string(), example.clone()));
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN_VIOLATIONS
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<String> = violations
        .iter()
        .filter(|(a, b, _)| !known.contains(&(a.clone(), b.clone())))
        .map(|(a, b, example)| format!("{a} -> {b} (e.g. {example})"))
        .collect();
    let gone: Vec<String> = known
        .iter()
        .filter(|(a, b)| !violations.iter().any(|(x, y, _)| x == a && y == b))
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    println!("known violations left: {}", known.len() - gone.len());
    assert!(
        new.is_empty(),
        "dependencies that point up or sideways (docs/architecture.md):\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "these known violations are gone: remove them from KNOWN_VIOLATIONS:\n{}",
        gone.join("\n")
    );
}

/// The crate that parses the command line: only the CLI layer (and `main.rs`) may name it.
const PARSER: &str = "clap";

/// The rank of the CLI layer in [`PLACES`].
fn cli_rank() -> u8 {
    PLACES
        .iter()
        .find(|(prefix, _, _)| *prefix == "cli")
        .map(|(_, _, rank)| *rank)
        .unwrap()
}

/// `code` with the contents of its string literals blanked (a help text may say "clap").
fn strip_strings(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let starts_literal = c == '"' || (c == 'r' && matches!(next, Some('"') | Some('#')));
        if starts_literal && (i == 0 || !is_ident(chars[i - 1])) {
            let end = literal_end(&chars, i);
            if end > i + 1 {
                out.push_str("\"\"");
                out.extend(chars[i..end].iter().filter(|c| **c == '\n'));
                i = end;
                continue;
            }
        } else if c == '\'' {
            let end = char_literal_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The lines (1-based) where `code` names the crate `name` as a path or a `use` (`name::`,
/// `use name;`, `extern crate name`), outside comments, tests and string literals.
fn names_crate(code: &str, name: &str) -> Vec<usize> {
    let code = strip_strings(code);
    let mut lines = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(name) {
            let start = from + at;
            let end = start + name.len();
            from = end;
            let before = line[..start].chars().last();
            let after = line[end..].chars().next();
            if before.is_some_and(|c| is_ident(c) || c == ':') || after.is_some_and(is_ident) {
                continue;
            }
            lines.push(n + 1);
            break;
        }
    }
    lines
}

#[test]
fn nothing_below_the_cli_names_clap() {
    let cli = cli_rank();
    let mut below = Vec::new();
    let mut naming: BTreeMap<&'static str, usize> = BTreeMap::new();
    for file in sources() {
        if file.module.is_empty() {
            continue;
        }
        let Some((unit, rank)) = place(&file.module) else {
            continue; // the dependency test names unplaced modules
        };
        let lines = names_crate(&file.code, PARSER);
        if lines.is_empty() {
            continue;
        }
        *naming.entry(unit).or_default() += 1;
        if rank < cli {
            below.push(format!(
                "{} (unit {unit}, rank {rank}) names {PARSER} on line(s) {lines:?}",
                file.path.display()
            ));
        }
    }
    let summary: Vec<String> = naming
        .iter()
        .map(|(unit, files)| format!("{unit} ({files} files)"))
        .collect();
    println!("{PARSER} is named in: {}", summary.join(", "));
    assert!(
        below.is_empty(),
        "{PARSER} below the CLI layer (its definitions and value parsers belong in src/cli/; a \
         command takes a plain Request):\n{}",
        below.join("\n")
    );
}

#[test]
fn the_clap_check_reads_code_not_text() {
    let code = strip_tests(&strip_comments(
        "use clap::Args;\n\
         // clap in a comment\n\
         let s = \"clap::in a string\";\n\
         #[derive(Clone, clap::ValueEnum)]\n\
         let clapper = 1; let x = my_clap::y;\n\
         #[cfg(test)]\nmod tests { use clap::Parser; }\n",
    ));
    assert_eq!(names_crate(&code, "clap"), [1, 4]);
}

/// Non-blank lines that are not comments, outside `#[cfg(test)]` items.
fn code_lines(file: &SourceFile) -> usize {
    file.code.lines().filter(|l| !l.trim().is_empty()).count()
}

#[test]
fn no_production_file_is_over_800_code_lines() {
    let mut over = Vec::new();
    let mut sizes = Vec::new();
    for file in sources() {
        let lines = code_lines(&file);
        let path = file.path.display().to_string();
        sizes.push((lines, path.clone()));
        let allowed = KNOWN_LARGE
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, n)| *n)
            .unwrap_or(MAX_CODE_LINES);
        if lines > allowed {
            over.push(format!("{path}: {lines} code lines (at most {allowed})"));
        }
    }
    sizes.sort();
    for (lines, path) in sizes.iter().rev().take(8) {
        println!("{lines:>5} {path}");
    }
    for (path, _) in KNOWN_LARGE {
        let lines = sizes.iter().find(|(_, p)| p == path).map(|(n, _)| *n);
        assert!(
            lines.is_some_and(|n| n > MAX_CODE_LINES),
            "{path} is no longer over {MAX_CODE_LINES} code lines (or gone): remove it from KNOWN_LARGE"
        );
    }
    assert!(
        over.is_empty(),
        "files over the limit:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_checker_reads_paths_as_rust_does() {
    let file = SourceFile {
        path: PathBuf::from("src/commands/pod/render.rs"),
        module: "commands::pod::render".to_string(),
        code: strip_tests(&strip_comments(
            "use crate::{istio::constants, output::{style, table::Table}};\n\
             // use crate::cli::Nope;\n\
             let s = \"crate::in_a_string is still read\";\n\
             use super::model::Diagnosis;\n\
             fn f() { crate::kube::selector::matches(); }\n\
             #[cfg(test)]\nmod tests { use crate::cli::Hidden; fn g() { let c = '{'; } }\n\
             #[cfg(test)]\nuse crate::probe::Hidden;\n",
        )),
    };
    let paths = paths_named(&file);
    assert_eq!(
        paths,
        [
            "istio::constants",
            "output::style",
            "output::table::Table",
            "in_a_string",
            "kube::selector::matches",
            "commands::pod::model::Diagnosis",
        ]
    );
}

/// Circles between the files of one folder (sibling modules, not the folder's `mod.rs`) today.
/// Only shrinks, like [`KNOWN_VIOLATIONS`]: each entry is a circle's files, sorted, joined by " ".
const KNOWN_CIRCLES: &[&str] = &[];

/// Sibling-file edges: module -> sibling modules it names (a module of one folder, not its parent).
fn sibling_edges() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let modules: BTreeSet<String> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        if file.module.is_empty() || file.path.ends_with("mod.rs") {
            continue;
        }
        let folder = parent(&file.module);
        for path in paths_named(file) {
            // the longest module that the path starts with
            let mut target = path.as_str();
            while !modules.contains(target) {
                match target.rsplit_once("::") {
                    Some((head, _)) => target = head,
                    None => break,
                }
            }
            let is_sibling = modules.contains(target)
                && target != file.module
                && parent(target) == folder
                && !files
                    .iter()
                    .any(|f| f.module == target && f.path.ends_with("mod.rs"));
            if is_sibling {
                edges
                    .entry(file.module.clone())
                    .or_default()
                    .insert(target.to_string());
            }
        }
    }
    edges
}

/// The strongly connected parts of more than one module (Tarjan's algorithm), each sorted.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: BTreeSet<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                part.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.out.insert(part);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: BTreeSet::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_circle_between_the_files_of_one_folder() {
    let found: BTreeSet<String> = circles(&sibling_edges())
        .into_iter()
        .map(|c| c.join(" "))
        .collect();
    println!("circles between files of one folder: {found:?}");
    let known: BTreeSet<String> = KNOWN_CIRCLES.iter().map(|c| c.to_string()).collect();
    let new: Vec<&String> = found.difference(&known).collect();
    let gone: Vec<&String> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "files of one folder that use each other (move what both need into a file of its own):\n{new:#?}"
    );
    assert!(
        gone.is_empty(),
        "these circles are gone: remove them from KNOWN_CIRCLES:\n{gone:#?}"
    );
}

#[test]
fn the_circle_finder_finds_circles() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut edge = |a: &str, b: &str| {
        edges.entry(a.into()).or_default().insert(b.into());
    };
    edge("a", "b");
    edge("b", "c");
    edge("c", "a");
    edge("c", "d");
    edge("e", "f");
    let found = circles(&edges);
    assert_eq!(
        found,
        BTreeSet::from([vec!["a".to_string(), "b".into(), "c".into()]])
    );
}
