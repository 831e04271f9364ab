//! The one JSON writer: every command's `-o json` is indented the same way (two spaces, as
//! istioctl and kubectl do) and ends with a newline.

use serde::Serialize;

/// A document as `-o json` prints it: indented with two spaces, no trailing newline.
pub fn pretty_json(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
}

/// [`pretty_json`] with the newline that ends the output.
pub fn document(value: &impl Serialize) -> String {
    let mut text = pretty_json(value);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spaces_and_a_newline() {
        let value = serde_json::json!({"a": [1]});
        assert_eq!(document(&value), "{\n  \"a\": [\n    1\n  ]\n}\n");
    }
}
