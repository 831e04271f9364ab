//! A small YAML emitter for our own output (`-o yaml`): block style, sorted as given, strings
//! quoted only when a YAML reader would otherwise misread them.

use serde_json::Value;

/// Renders a JSON value as a YAML document (ending with a newline).
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    emit(value, 0, &mut out, false);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn emit(value: &Value, indent: usize, out: &mut String, inline_start: bool) {
    let pad = " ".repeat(indent);
    match value {
        Value::Array(items) if !items.is_empty() => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 || !inline_start {
                    out.push_str(&pad);
                }
                out.push_str("- ");
                match item {
                    Value::Object(m) if !m.is_empty() => emit(item, indent + 2, out, true),
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        emit(item, indent + 2, out, false);
                    }
                    _ => {
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        Value::Object(map) if !map.is_empty() => {
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 || !inline_start {
                    out.push_str(&pad);
                }
                out.push_str(&string(key));
                out.push(':');
                match item {
                    Value::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        emit(item, indent + 2, out, false);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        emit(item, indent, out, false);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

fn string(s: &str) -> String {
    if needs_quotes(s) {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
    } else {
        s.to_string()
    }
}

fn needs_quotes(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return true;
    }
    let lowered = s.to_ascii_lowercase();
    if matches!(
        lowered.as_str(),
        "null" | "~" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    ) {
        return true;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || first.is_ascii_digit()
        || first == '.'
        || first == '+'
    {
        return true;
    }
    s.contains(": ") || s.contains(" #") || s.ends_with(':') || s.chars().any(|c| c.is_control())
}

/// The YAML form of a JSON document a command renders (`-o yaml` next to `-o json`).
pub fn from_json_text(text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => to_string(&value),
        Err(_) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn emits_block_yaml() {
        let v = json!([{"code": "IST0103", "message": "The pod a/b is missing: x", "count": 3, "list": ["a", "1"]}]);
        assert_eq!(
            to_string(&v),
            "- code: IST0103\n  message: \"The pod a/b is missing: x\"\n  count: 3\n  list:\n  - a\n  - \"1\"\n"
        );
        assert_eq!(to_string(&json!([])), "[]\n");
    }
}
