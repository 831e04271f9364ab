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

/// [`document`] written to `out` as it is serialized, not held whole.
pub fn write_document(out: &mut dyn std::io::Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    out.write_all(b"\n")
}

/// [`document`] of an array, its items rendered on all cores: the same text, byte for byte, as
/// the array rendered whole. (`analyze -A -o json` on the benchmark cluster prints 4,000
/// findings, 2.7 MB: 8-10 ms on one core after the analysis.)
pub fn document_of_array<T: Serialize + Sync>(items: &[T]) -> String {
    if items.is_empty() {
        return document(&items);
    }
    let parts = crate::parallel::map(&crate::parallel::parts(items, ITEMS_PER_PART), |_, part| {
        let mut text = String::new();
        for (i, item) in part.iter().enumerate() {
            if i > 0 {
                text.push_str(",\n");
            }
            // An item's own lines, one level deeper: a newline in the text of a pretty JSON
            // value is always between two tokens (strings escape theirs).
            text.push_str("  ");
            text.push_str(&pretty_json(item).replace('\n', "\n  "));
        }
        text
    });
    let mut text = String::with_capacity(parts.iter().map(|p| p.len() + 2).sum::<usize>() + 4);
    text.push_str("[\n");
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            text.push_str(",\n");
        }
        text.push_str(part);
    }
    text.push_str("\n]\n");
    text
}

/// Below this many items per thread, [`document_of_array`] renders on fewer threads.
const ITEMS_PER_PART: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_rendered_in_parts_is_the_array_rendered_whole() {
        let item = |i: usize| {
            serde_json::json!({
                "code": format!("IST{i:04}"),
                "message": "two\nlines, \"quoted\" and {braces} [brackets]",
                "nested": {"list": [i, {"deeper": []}], "empty": {}},
            })
        };
        for n in [0, 1, 2, 499, 500, 501, 1000, 2345] {
            let items: Vec<serde_json::Value> = (0..n).map(item).collect();
            assert_eq!(document_of_array(&items), document(&items), "{n} items");
        }
    }

    #[test]
    fn two_spaces_and_a_newline() {
        let value = serde_json::json!({"a": [1]});
        assert_eq!(document(&value), "{\n  \"a\": [\n    1\n  ]\n}\n");
        let mut written = Vec::new();
        write_document(&mut written, &value).unwrap();
        assert_eq!(String::from_utf8(written).unwrap(), document(&value));
    }
}
