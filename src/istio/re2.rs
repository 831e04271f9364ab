//! Istio's regex check (`validateStringRegexp`): Istio compiles every regex of a route with Go's
//! `regexp` (RE2 syntax) and refuses the config with Go's parse error. Here the regex is parsed
//! with the `regex-syntax` crate (Rust's RE2-like syntax) and the error is said in Go's words.
//!
//! Where the two differ: Rust's classes nest (`[a[b]]`) and have set operators (`&&`, `--`,
//! `~~`), which Go reads as literal characters; an unclosed class is said only when Go's own
//! reading finds no closing `]` either, and class-operator errors are not said. Go's limit of
//! 1000 on a repeat count and its refusal of a repeated repetition (`a**`) are not checked.

use regex_syntax::ast::ErrorKind;

/// Go's `regexp.Compile` error for a regex (`error parsing regexp: missing closing ): `(a``),
/// or `None` when Go would compile it (or when the two syntaxes differ on it, see above).
pub fn go_compile_error(re: &str) -> Option<String> {
    let err = regex_syntax::ast::parse::Parser::new().parse(re).err()?;
    let span = err.span();
    // A span may be empty (at the operator): then the one character there.
    let fragment = |start: usize, end: usize| {
        let end = if end > start {
            end
        } else {
            start + re[start..].chars().next().map_or(0, char::len_utf8)
        };
        re.get(start..end).unwrap_or(re).to_string()
    };
    let (code, expr) = match err.kind() {
        ErrorKind::GroupUnclosed => ("missing closing )", re.to_string()),
        ErrorKind::GroupUnopened => ("unexpected )", re.to_string()),
        ErrorKind::ClassUnclosed => {
            if go_class_closes(re, span.start.offset) {
                return None;
            }
            ("missing closing ]", fragment(span.start.offset, re.len()))
        }
        ErrorKind::RepetitionMissing => (
            "missing argument to repetition operator",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::EscapeUnrecognized => (
            "invalid escape sequence",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::EscapeUnexpectedEof => {
            ("trailing backslash at end of expression", String::new())
        }
        ErrorKind::ClassRangeInvalid => (
            "invalid character class range",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::RepetitionCountInvalid => (
            "invalid repeat count",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::GroupNameInvalid
        | ErrorKind::GroupNameEmpty
        | ErrorKind::GroupNameUnexpectedEof => (
            "invalid named capture",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::FlagUnrecognized
        | ErrorKind::FlagUnexpectedEof
        | ErrorKind::FlagDanglingNegation => (
            "invalid or unsupported Perl syntax",
            fragment(span.start.offset, span.end.offset),
        ),
        ErrorKind::UnsupportedLookAround => (
            "invalid or unsupported Perl syntax",
            fragment(span.start.offset, (span.start.offset + 3).min(re.len())),
        ),
        // Rust-only syntax (class set operators, nesting) or a rule of Rust's alone.
        _ => return None,
    };
    Some(format!("error parsing regexp: {code}: `{expr}`"))
}

/// True when Go's parser, reading a class from the `[` at `at`, finds its closing `]`: an
/// optional `^`, a `]` first is literal, escapes skip a character, `[:name:]` is one item.
fn go_class_closes(re: &str, at: usize) -> bool {
    let bytes = re.as_bytes();
    let mut i = at + 1;
    if bytes.get(i) == Some(&b'^') {
        i += 1;
    }
    if bytes.get(i) == Some(&b']') {
        i += 1;
    }
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'[' if bytes.get(i + 1) == Some(&b':') => match re[i + 2..].find(":]") {
                Some(end) => i += end + 4,
                None => i += 1,
            },
            b']' => return true,
            _ => i += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_words_for_the_common_mistakes() {
        assert_eq!(
            go_compile_error("(abc").as_deref(),
            Some("error parsing regexp: missing closing ): `(abc`")
        );
        assert_eq!(
            go_compile_error("*[").as_deref(),
            Some("error parsing regexp: missing argument to repetition operator: `*`")
        );
        assert_eq!(
            go_compile_error("a[b").as_deref(),
            Some("error parsing regexp: missing closing ]: `[b`")
        );
        assert_eq!(
            go_compile_error("a\\qb").as_deref(),
            Some("error parsing regexp: invalid escape sequence: `\\q`")
        );
        assert_eq!(go_compile_error("^/api/v[0-9]+(/.*)?$"), None);
        // Go reads `[a[b]` as one class of `a`, `[` and `b`; Rust would call it unclosed.
        assert_eq!(go_compile_error("[a[b]"), None);
    }
}
