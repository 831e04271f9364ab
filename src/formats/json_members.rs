//! JSON text without the members of one name: the API server's list answers carry every
//! object's `metadata.managedFields` (a third of a Pod's JSON), which nothing here reads;
//! cutting them from the text before it is decoded saves their decoding and their memory.

/// `text` without the members named `name` of every object, at any depth (with the comma that
/// separated each from its neighbour), cut in the text's own buffer (no second copy of a large
/// answer); the text as it is when it has none. Text that is not well-formed JSON where the scan
/// goes is returned as it is, for the decoder to say what is wrong.
pub fn cut_members(text: String, name: &str) -> String {
    let Some(spans) = spans_to_cut(&text, name) else {
        return text;
    };
    let mut bytes = text.into_bytes();
    let mut kept = 0;
    let mut from = 0;
    for (start, end) in spans.into_iter().chain([(bytes.len(), bytes.len())]) {
        bytes.copy_within(from..start, kept);
        kept += start - from;
        from = end;
    }
    bytes.truncate(kept);
    // Whole members were cut at ASCII delimiters: the rest is the UTF-8 it was.
    String::from_utf8(bytes).expect("members cut at ASCII delimiters")
}

/// The members' spans, `None` when there are none (or the text is not JSON where the scan goes).
fn spans_to_cut(text: &str, name: &str) -> Option<Vec<(usize, usize)>> {
    let needle = format!("\"{name}\"");
    if !text.contains(needle.as_str()) {
        return None;
    }
    cut(text.as_bytes(), needle.as_bytes()).filter(|spans| !spans.is_empty())
}

/// The byte ranges to cut, ascending and disjoint; `None` when the text is not JSON.
fn cut(bytes: &[u8], needle: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut spans = Vec::new();
    // The last byte outside strings that is not whitespace, and where it is: a member name
    // is a string after `{` or `,` and before `:`.
    let mut last = 0u8;
    let mut last_at = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                let after = skip_space(bytes, end);
                if matches!(last, b'{' | b',')
                    && &bytes[i..end] == needle
                    && bytes.get(after) == Some(&b':')
                {
                    let value_start = skip_space(bytes, after + 1);
                    let value_end = value_end(bytes, value_start)?;
                    if last == b',' {
                        // `, "name": value`: from the comma before it.
                        spans.push((last_at, value_end));
                        i = value_end;
                    } else {
                        // `{"name": value, ...`: up to the comma after it, if any.
                        let next = skip_space(bytes, value_end);
                        let end = if bytes.get(next) == Some(&b',') {
                            next + 1
                        } else {
                            value_end
                        };
                        spans.push((i, end));
                        i = end;
                    }
                    continue;
                }
                last = b'"';
                last_at = i;
                i = end;
            }
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            other => {
                last = other;
                last_at = i;
                i += 1;
            }
        }
    }
    Some(spans)
}

/// The index after the string that starts at `start` (a `"`).
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// The index after the value that starts at `start`.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = start;
            while i < bytes.len()
                && !matches!(bytes[i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut_mf(text: &str) -> String {
        let out = cut_members(text.to_string(), "managedFields");
        // Whatever was cut, the rest is the same JSON without the member.
        let before: serde_json::Value = serde_json::from_str(text).unwrap();
        let after: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(after, strip(before), "{text}");
        out
    }

    fn strip(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => map
                .into_iter()
                .filter(|(k, _)| k != "managedFields")
                .map(|(k, v)| (k, strip(v)))
                .collect(),
            serde_json::Value::Array(items) => items.into_iter().map(strip).collect(),
            other => other,
        }
    }

    #[test]
    fn members_are_cut_wherever_they_are_in_their_object() {
        assert_eq!(
            cut_mf(r#"{"a":1,"managedFields":[{"x":{"f:a":{}}}],"b":2}"#),
            r#"{"a":1,"b":2}"#
        );
        assert_eq!(cut_mf(r#"{"managedFields":[],"b":2}"#), r#"{"b":2}"#);
        assert_eq!(cut_mf(r#"{"a":1,"managedFields":null}"#), r#"{"a":1}"#);
        assert_eq!(cut_mf(r#"{"managedFields":"x"}"#), r#"{}"#);
        assert_eq!(
            cut_mf(
                r#"{ "items": [ {"metadata": { "managedFields" : [ 1, 2 ] , "name": "a"}}, {"metadata":{"name":"b","managedFields":[{"s":"]}\"["}]}} ] }"#
            ),
            r#"{ "items": [ {"metadata": {  "name": "a"}}, {"metadata":{"name":"b"}} ] }"#
        );
    }

    #[test]
    fn the_name_as_a_value_or_inside_a_string_is_kept() {
        let text = r#"{"a":"managedFields","b":["managedFields"],"c":"x\"managedFields\":[1]"}"#;
        assert_eq!(cut_mf(text), text);
        cut_mf(r#"{"managedFieldsX":[1],"managedFields":[2]}"#);
    }

    #[test]
    fn text_that_is_not_json_is_given_back_whole() {
        for text in [
            r#"{"managedFields":[1,2"#,
            r#"{"managedFields":"#,
            r#"{"managedFields":"open"#,
        ] {
            assert_eq!(cut_members(text.to_string(), "managedFields"), text);
        }
    }
}
