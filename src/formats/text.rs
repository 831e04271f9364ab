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

/// The text on one line (every run of whitespace one space), cut to `max` characters with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > max {
        let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        line
    }
}
