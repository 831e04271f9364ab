//! What `envoy --mode validate` printed: its reason for refusing a bootstrap, and the codes whose
//! checks claim to catch it.

use super::schema::{BOOTSTRAP, CHECKED_MESSAGE_TYPES, type_checked_field};
use crate::findings::messages::{self, MessageType};
use crate::formats::text::collapse;

/// The reason Envoy gave for refusing a bootstrap, from the stderr of `envoy --mode validate`:
/// the text after `error initializing configuration '<file>': ` on the critical line, without the
/// copy of the document Envoy appends, whitespace collapsed. Falls back to the last log line.
pub fn envoy_reason(stderr: &str) -> Option<String> {
    const MARKER: &str = "error initializing configuration '";
    let line = stderr
        .lines()
        .find(|l| l.contains(MARKER))
        .and_then(|l| {
            let rest = &l[l.find(MARKER)? + MARKER.len()..];
            Some(rest[rest.find("': ")? + 3..].to_string())
        })
        .or_else(|| {
            stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| {
                    // Drop the `[time][thread][level][logger] [file:line] ` prefix.
                    let mut text = l.trim();
                    while text.starts_with('[') {
                        match text.find(']') {
                            Some(end) => text = text[end + 1..].trim_start(),
                            None => break,
                        }
                    }
                    text.to_string()
                })
        })?;
    let mut reason = collapse(&line);
    // "Unable to parse JSON as proto (...): {<the document>" -> keep the part in parentheses.
    if reason.starts_with("Unable to parse JSON as proto (")
        && let Some(end) = reason.rfind("):")
    {
        reason.truncate(end + 1);
    }
    let reason = reason.replace("goo.gle/debugproto ", "");
    (!reason.is_empty()).then_some(reason)
}

/// The codes whose checks claim to catch what Envoy refused a bootstrap for, from its reason
/// (see [`envoy_reason`]). Empty when no check covers it (a bad `@type`, a wrong value type...).
pub fn codes_covering(reason: &str) -> Vec<&'static MessageType> {
    let r = collapse(reason);
    if r.contains("Unknown gRPC client cluster")
        || r.contains("must have a statically defined non-EDS cluster")
    {
        return vec![messages::MD0301];
    }
    if r.contains("duplicate cluster") {
        return vec![messages::MD0302];
    }
    if r.contains("route: unknown cluster")
        || r.contains("route: unknown weighted cluster")
        || r.contains("route: unknown shadow cluster")
    {
        return vec![messages::MD0303];
    }
    if r.contains("node 'id' and 'cluster' are required") {
        return vec![messages::MD0304, messages::MD0305];
    }
    if r.contains("has duplicate address") {
        return vec![messages::MD0311];
    }
    if let Some(at) = r.find("no such field") {
        // "... @ admin: message envoy.config.bootstrap.v3.Admin, near 42:19 ...: no such field"
        // names the message; a top-level field has no "@ path: message" part.
        let before = &r[..at];
        let message_type = match before.rfind("message ") {
            Some(m) if before[..m].contains(" @ ") => before[m + "message ".len()..]
                .split([',', ' '])
                .next()
                .unwrap_or(""),
            _ => BOOTSTRAP.name,
        };
        return if CHECKED_MESSAGE_TYPES.contains(&message_type) {
            vec![messages::MD0308]
        } else {
            Vec::new()
        };
    }
    if let Some(inner) = r.strip_prefix("Unable to parse JSON as proto (") {
        // Syntax, as opposed to a value of the wrong type: the lexer fails at the top level or
        // inside a message ("@ node: message envoy.config.core.v3.Node, near ..."), not inside a
        // scalar field ("@ node.id: string, near ...").
        if inner.contains("could not find @type") {
            return Vec::new();
        }
        let Some(at) = inner.find(" @ ") else {
            return vec![messages::MD0307];
        };
        let Some((path, rest)) = inner[at + 3..].trim_start().split_once(": ") else {
            return Vec::new();
        };
        // A value of the wrong type in a message MD0312 checks: a scalar where a message is
        // expected reads as "@ static_resources.clusters: message ..., expected '{'", a number
        // for a string as "@ node.id: string, ... expected '\"'".
        let mut codes = Vec::new();
        let in_message = rest.starts_with("message ");
        if in_message {
            codes.push(messages::MD0307);
        }
        if (!in_message || rest.contains("expected '{'")) && type_checked_field(path.trim()) {
            codes.push(messages::MD0312);
        }
        return codes;
    }
    Vec::new()
}
