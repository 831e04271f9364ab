//! The external commands a bash script runs, read from its text: enough of bash's grammar for the
//! scripts of this repository (quotes, `$(...)`, `$((...))`, here-documents, `case` patterns,
//! array assignments, comments), not a general shell parser.

use std::collections::BTreeSet;

/// Shell keywords and bash builtins: never external commands.
pub const BUILTINS: &[&str] = &[
    "!",
    "[",
    "[[",
    "]]",
    "{",
    "}",
    "alias",
    "bg",
    "break",
    "builtin",
    "caller",
    "case",
    "cd",
    "command",
    "compgen",
    "complete",
    "continue",
    "declare",
    "dirs",
    "disown",
    "do",
    "done",
    "echo",
    "elif",
    "else",
    "enable",
    "esac",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "fi",
    "for",
    "function",
    "getopts",
    "hash",
    "help",
    "history",
    "if",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "then",
    "time",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
    ".",
    ":",
];

/// Words that run the command after them (their own options skipped): `exec env -u X cmd`.
/// The number is how many plain arguments come before the command (`timeout 5 cmd`).
const WRAPPERS: &[(&str, usize)] = &[
    ("exec", 0),
    ("time", 0),
    ("command", 0),
    ("env", 0),
    ("setsid", 0),
    ("nohup", 0),
    ("nsenter", 0),
    ("timeout", 1),
    ("xargs", 0),
    ("if", 0),
    ("then", 0),
    ("elif", 0),
    ("else", 0),
    ("do", 0),
    ("while", 0),
    ("until", 0),
    ("!", 0),
    ("{", 0),
];

/// A command word and where it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    pub command: String,
    pub line: usize,
}

/// Names of the functions a script defines (`name() {` or `function name`).
pub fn functions(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim_start();
        let t = t.strip_prefix("function ").unwrap_or(t);
        if let Some(i) = t.find("()") {
            let name = &t[..i];
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                out.insert(name.to_string());
            }
        }
    }
    out
}

/// Token kinds the splitter yields: words (quotes removed, `$` kept) and command separators.
#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    /// `;`, `|`, `&`, `&&`, `||`, newline, `(`, `$(`, `` ` ``: a new command starts after it.
    Sep,
    /// `)` closing a subshell, a `$(`, or a `case` pattern.
    Close,
    /// `;;`, `;&`, `;;&` in a `case`.
    CaseEnd,
}

/// Splits a script into tokens. Here-document bodies, comments and the contents of single
/// quotes and arithmetic are dropped; command substitutions inside double quotes are kept as
/// commands of their own.
/// A token and its line.
type Tokens = Vec<(Tok, usize)>;
/// The text of a command substitution and its first line.
type Substitutions = Vec<(String, usize)>;

/// Command substitutions (`$(...)`, backquotes) come back apart, as their text and first line.
fn tokens(text: &str) -> (Tokens, Substitutions) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut word = String::new();
    let mut heredocs: Vec<String> = Vec::new();
    let mut substs: Vec<(String, usize)> = Vec::new();
    let mut in_dq = false;
    macro_rules! flush {
        () => {
            if !word.is_empty() {
                out.push((Tok::Word(std::mem::take(&mut word)), line));
            }
        };
    }
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if in_dq {
            match c {
                '\\' => {
                    i += 2;
                    continue;
                }
                '"' => in_dq = false,
                '$' if next == Some('(') && chars.get(i + 2) == Some(&'(') => {
                    i = skip_arith(&chars, i + 3, &mut line);
                    word.push('$');
                    continue;
                }
                '$' if next == Some('(') => {
                    i = substitution(&chars, i + 2, &mut line, &mut substs);
                    word.push('$');
                    continue;
                }
                '`' => {
                    i = backquoted(&chars, i + 1, &mut line, &mut substs);
                    word.push('$');
                    continue;
                }
                '\n' => {
                    line += 1;
                    word.push(c);
                }
                _ => word.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '\\' if next == Some('\n') => {
                line += 1;
                i += 2;
                continue;
            }
            '\\' => {
                if let Some(n) = next {
                    word.push(n);
                }
                i += 2;
                continue;
            }
            '\'' => {
                word.push('\'');
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            '"' => {
                in_dq = true;
                word.push('"');
            }
            '#' if word.is_empty() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '$' if next == Some('(') && chars.get(i + 2) == Some(&'(') => {
                i = skip_arith(&chars, i + 3, &mut line);
                word.push('$');
                continue;
            }
            '$' if next == Some('(') => {
                i = substitution(&chars, i + 2, &mut line, &mut substs);
                word.push('$');
                continue;
            }
            '`' => {
                i = backquoted(&chars, i + 1, &mut line, &mut substs);
                word.push('$');
                continue;
            }
            '$' if next == Some('{') => {
                // ${...}: a parameter expansion; its contents are not commands.
                word.push('$');
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            '(' if word.ends_with('=') => {
                // NAME=(a b) or NAME+=(c): an array literal, no command in it.
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        '\n' => line += 1,
                        _ => {}
                    }
                    i += 1;
                }
                word.push_str("()");
                i += 1;
                continue;
            }
            '(' if next == Some('(') && word.is_empty() => {
                i = skip_arith(&chars, i + 2, &mut line);
                continue;
            }
            '(' => {
                flush!();
                out.push((Tok::Sep, line));
            }
            ')' => {
                flush!();
                out.push((Tok::Close, line));
            }
            ';' if next == Some(';') => {
                flush!();
                out.push((Tok::CaseEnd, line));
                i += if chars.get(i + 2) == Some(&'&') { 3 } else { 2 };
                continue;
            }
            ';' if next == Some('&') => {
                flush!();
                out.push((Tok::CaseEnd, line));
                i += 2;
                continue;
            }
            ';' | '|' | '&' => {
                flush!();
                out.push((Tok::Sep, line));
            }
            '<' if next == Some('<') && chars.get(i + 2) == Some(&'<') => {
                // A here-string, `<<<"$(cmd)"`: a redirection whose word is read as usual.
                word.push('>');
                i += 3;
                continue;
            }
            '<' if next == Some('<') => {
                // A here-document: remember its delimiter; the body starts on the next line.
                flush!();
                let mut j = i + 2;
                if chars.get(j) == Some(&'-') {
                    j += 1;
                }
                while chars.get(j) == Some(&' ') {
                    j += 1;
                }
                let mut delim = String::new();
                while let Some(&d) = chars.get(j) {
                    if d.is_whitespace() || ";|&)<>".contains(d) {
                        break;
                    }
                    if d != '\'' && d != '"' {
                        delim.push(d);
                    }
                    j += 1;
                }
                heredocs.push(delim);
                i = j;
                continue;
            }
            '<' | '>' => {
                // A redirection (`>x`, `2>&1`, `>>log`, `<in`): one word with its target,
                // which command_uses skips; `>&` and `>>` are part of it.
                word.push('>');
                if matches!(next, Some('&' | '>')) {
                    i += 1;
                }
            }
            '\n' => {
                flush!();
                out.push((Tok::Sep, line));
                line += 1;
                i += 1;
                for delim in std::mem::take(&mut heredocs) {
                    // Skip the body, up to the line that is the delimiter alone.
                    loop {
                        let end = chars[i..]
                            .iter()
                            .position(|&c| c == '\n')
                            .map_or(chars.len(), |p| i + p);
                        let body_line: String = chars[i..end].iter().collect();
                        i = (end + 1).min(chars.len());
                        line += 1;
                        if body_line.trim() == delim || i >= chars.len() {
                            break;
                        }
                    }
                }
                continue;
            }
            ' ' | '\t' => flush!(),
            _ => word.push(c),
        }
        i += 1;
    }
    flush!();
    (out, substs)
}

/// Records the text of a `$(...)` whose contents start at `from`; returns the index past `)`.
fn substitution(
    chars: &[char],
    from: usize,
    line: &mut usize,
    substs: &mut Vec<(String, usize)>,
) -> usize {
    let start_line = *line;
    let mut depth = 1;
    let mut i = from;
    let mut in_sq = false;
    while i < chars.len() {
        match chars[i] {
            '\\' if !in_sq => i += 1,
            '\'' => in_sq = !in_sq,
            '(' if !in_sq => depth += 1,
            ')' if !in_sq => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            '\n' => *line += 1,
            _ => {}
        }
        i += 1;
    }
    substs.push((chars[from..i.min(chars.len())].iter().collect(), start_line));
    i + 1
}

/// Records the text of a backquoted command whose contents start at `from`.
fn backquoted(
    chars: &[char],
    from: usize,
    line: &mut usize,
    substs: &mut Vec<(String, usize)>,
) -> usize {
    let start_line = *line;
    let mut i = from;
    while i < chars.len() && chars[i] != '`' {
        if chars[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    substs.push((chars[from..i.min(chars.len())].iter().collect(), start_line));
    i + 1
}

/// Past the `))` that closes an arithmetic expression opened before `from`.
fn skip_arith(chars: &[char], from: usize, line: &mut usize) -> usize {
    let mut depth = 2;
    let mut i = from;
    while i < chars.len() && depth > 0 {
        match chars[i] {
            '(' => depth += 1,
            ')' => depth -= 1,
            '\n' => *line += 1,
            _ => {}
        }
        i += 1;
    }
    i
}

fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].trim_end_matches('+');
    let name = name.split('[').next().unwrap_or(name);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The command words of a script, with `wrappers` (the script's own functions that run their
/// arguments, with how many arguments come first: `start_bg PIDFILE LOGFILE cmd ...`).
pub fn command_uses(text: &str, wrappers: &[(&str, usize)]) -> Vec<Use> {
    let (toks, substs) = tokens(text);
    let mut uses = Vec::new();
    for (inner, line) in substs {
        uses.extend(command_uses(&inner, wrappers).into_iter().map(|u| Use {
            command: u.command,
            line: u.line + line - 1,
        }));
    }
    // `case WORD in`: after `in` and after each `;;`, the words up to `)` are a pattern.
    let mut case_depth = 0usize;
    let mut in_pattern = false;
    let mut at_start = true;
    let mut skip_args = 0usize;
    let mut after_wrapper = false;
    let mut pending_case_in = false;
    let mut skip_target = false;
    // inside `[[ ... ]]`, where `&&` and `||` join tests, not commands
    let mut in_test = false;
    for (tok, line) in &toks {
        match tok {
            Tok::Sep if in_test => {}
            Tok::Sep => {
                at_start = true;
                skip_args = 0;
                after_wrapper = false;
            }
            Tok::Close => {
                if in_pattern {
                    in_pattern = false;
                }
                at_start = true;
                skip_args = 0;
                after_wrapper = false;
            }
            Tok::CaseEnd => {
                in_pattern = case_depth > 0;
                at_start = true;
            }
            Tok::Word(w) if in_test => in_test = w != "]]",
            Tok::Word(w) => {
                if pending_case_in {
                    if w == "in" {
                        pending_case_in = false;
                        in_pattern = true;
                    }
                    continue;
                }
                if w == "esac" {
                    case_depth = case_depth.saturating_sub(1);
                    in_pattern = false;
                    at_start = false;
                    continue;
                }
                if in_pattern || !at_start {
                    continue;
                }
                if w == "[[" {
                    in_test = true;
                    continue;
                }
                if w == "case" {
                    case_depth += 1;
                    pending_case_in = true;
                    at_start = false;
                    continue;
                }
                if w == "for" || w == "select" {
                    // `for x in words; do`: the words are not commands.
                    at_start = false;
                    continue;
                }
                if is_assignment(w) {
                    // VAR=value cmd: the command follows.
                    continue;
                }
                if let Some(redirect) = w.find('>') {
                    // `>file`, `2>&1`: skip it; a bare `>` or `2>` takes the next word too.
                    if redirect + 1 == w.len() && w[..redirect].chars().all(|c| c.is_ascii_digit())
                    {
                        skip_target = true;
                    }
                    continue;
                }
                if skip_target {
                    skip_target = false;
                    continue;
                }
                if after_wrapper && w.starts_with('-') {
                    // a wrapper's option; `env -u NAME` and `nsenter --net PATH` take a value
                    if (w == "-u" || w == "--net") && !w.contains('=') {
                        skip_args += 1;
                    }
                    continue;
                }
                if skip_args > 0 {
                    skip_args -= 1;
                    continue;
                }
                if let Some(&(_, n)) = WRAPPERS.iter().find(|(name, _)| name == w) {
                    after_wrapper = true;
                    skip_args = n;
                    continue;
                }
                if let Some(&(_, n)) = wrappers.iter().find(|(name, _)| name == w) {
                    after_wrapper = true;
                    skip_args = n;
                    continue;
                }
                if BUILTINS.contains(&w.as_str()) {
                    at_start = false;
                    continue;
                }
                uses.push(Use {
                    command: w.clone(),
                    line: *line,
                });
                at_start = false;
                after_wrapper = false;
            }
        }
    }
    uses
}

/// Tests of the scanner itself, on small scripts, so that a change to it that misses commands
/// fails here rather than letting a missing package through.
pub fn self_test() {
    let names = |s: &str, w: &[(&str, usize)]| -> Vec<String> {
        command_uses(s, w).into_iter().map(|u| u.command).collect()
    };
    assert_eq!(
        names("a | b && c; d\n", &[]),
        ["a", "b", "c", "d"],
        "separators"
    );
    assert_eq!(
        names(r#"x="$(dirname "${BASH_SOURCE[0]}")"; y=$((1 + 2))"#, &[]),
        ["dirname"],
        "substitution inside double quotes, arithmetic"
    );
    assert_eq!(
        names("cat <<EOF\nnot a command\nEOF\nls\n", &[]),
        ["cat", "ls"],
        "here-document body"
    );
    assert_eq!(
        names("case $1 in\n  --a) foo ;;\n  b|c) bar; baz ;;\nesac\n", &[]),
        ["foo", "bar", "baz"],
        "case patterns"
    );
    assert_eq!(
        names(
            "pkgs=(one two)\npkgs+=(three)\nenv -u X A=1 timeout 5 curl x\n",
            &[]
        ),
        ["curl"],
        "arrays, assignments, wrappers"
    );
    assert_eq!(
        names(
            "awk '/x/{getline; print}' f 2>&1 >/dev/null # trailing; comment\n",
            &[]
        ),
        ["awk"],
        "single quotes and comments"
    );
    assert_eq!(
        names(
            "if ! command -v runc >/dev/null && [[ -x a || -d b ]]; then go build; fi\n",
            &[]
        ),
        ["runc", "go"],
        "command -v, if/then"
    );
    assert_eq!(
        names(
            "start_bg p l nsenter --net=/x ip link\n",
            &[("start_bg", 2)]
        ),
        ["ip"],
        "a script's own wrapper function"
    );
    assert_eq!(
        names(
            "cd \"$(dirname \"$0\")/..\"; echo \"x $(cat f); y\" >&2; v=`uname`\n",
            &[]
        ),
        ["dirname", "cat", "uname"],
        "substitutions inside words and strings, backquotes"
    );
    assert_eq!(
        names("> out cat f; grep -q x <<<\"$(ls)\"; tail\n", &[]),
        ["ls", "cat", "grep", "tail"],
        "a redirection before the command, a here-string"
    );
    assert_eq!(
        names("for f in a b; do rm \"$f\"; done\n", &[]),
        ["rm"],
        "for lists"
    );
}
