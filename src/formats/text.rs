//! Text helpers, pure: lists of names as a sentence, one line cut to a width.

/// How many names a message lists before "and N more".
const MAX_NAMES: usize = 8;

/// "a", "a and b", "a, b and c", "a, b, … and 12 more".
pub fn join_names(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(MAX_NAMES).map(String::as_str).collect();
    match shown.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) if names.len() == shown.len() => {
            format!("{} and {last}", rest.join(", "))
        }
        Some(_) => format!(
            "{} and {} more",
            shown.join(", "),
            names.len() - shown.len()
        ),
    }
}

/// "namespace a", "namespaces a, b and c".
pub fn name_list(noun: &str, names: &[String]) -> String {
    let noun = if names.len() == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    };
    format!("{noun} {}", join_names(names))
}

/// The text on one line: every run of whitespace (newlines too) one space, none at the ends.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `keep` characters of the text and `…` when it is longer; the text itself otherwise.
/// The one truncation every message and column uses.
pub fn truncate(text: &str, keep: usize) -> String {
    match text.char_indices().nth(keep) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// The text on one line ([`collapse`]), at most `max` characters wide: cut with `…` when longer.
pub fn one_line(text: &str, max: usize) -> String {
    let line = collapse(text);
    if line.chars().count() > max {
        truncate(&line, max.saturating_sub(1))
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_characters_not_bytes() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc…");
        assert_eq!(truncate("ééé", 2), "éé…");
        assert_eq!(one_line("a\n  b   c", 4), "a b…");
        assert_eq!(one_line("a\n  b", 4), "a b");
    }
}
