//! What went wrong with a request to the API server, in one line a person can read: the HTTP
//! status and the server's message, a cut-off or malformed answer, a throttled request.

/// Why a list failed.
#[derive(Debug)]
pub enum ListError {
    /// RBAC said no (403), or the resource does not exist on this server (404).
    Denied(String),
    /// The server could not be reached or did not answer in time.
    Unreachable(String),
    /// The server answered, but not with the list: an HTTP error status (500, 429 after the
    /// retries), a malformed or cut-off body, a pagination that never ends. The message says which.
    Failed(String),
    /// The command's overall deadline (`--timeout`) passed while reading.
    Deadline(String),
}

impl ListError {
    pub fn reason(&self) -> &str {
        match self {
            ListError::Denied(r)
            | ListError::Unreachable(r)
            | ListError::Failed(r)
            | ListError::Deadline(r) => r,
        }
    }
}

/// Sorts a kube error into "denied" (the rest can go on), "unreachable" or "failed" (stop),
/// with a one-line message that says what happened.
pub fn classify(error: &kube::Error) -> ListError {
    match error {
        kube::Error::Api(status) if matches!(status.code, 401 | 403 | 404) => {
            ListError::Denied(if status.message.is_empty() {
                format!("HTTP {}", status.code)
            } else {
                one_line(&status.message)
            })
        }
        kube::Error::Api(status) => ListError::Failed(describe_status(status)),
        kube::Error::SerdeError(e) => ListError::Failed(describe_json_error(e)),
        other => {
            let text = flatten(other);
            if is_cut_off(&text) {
                ListError::Failed(format!(
                    "the server's answer was cut off ({})",
                    one_line(&text)
                ))
            } else {
                ListError::Unreachable(one_line(&text))
            }
        }
    }
}

/// "HTTP 500 (InternalError): etcd is down": the status code, the reason and the server's message.
fn describe_status(status: &kube::core::Status) -> String {
    let reason = if status.reason.is_empty() || status.reason == "Failed to parse error data" {
        String::new()
    } else {
        format!(" ({})", status.reason)
    };
    let lead = if status.code == 429 {
        "throttled by the API server (HTTP 429 Too Many Requests)".to_string()
    } else {
        let name = http::StatusCode::from_u16(status.code)
            .ok()
            .and_then(|c| c.canonical_reason())
            .unwrap_or("");
        format!(
            "the API server answered HTTP {} {name}{reason}",
            status.code
        )
    };
    let message = one_line(&status.message);
    if message.is_empty() {
        lead
    } else {
        format!("{lead}: {}", shorten(&message))
    }
}

fn describe_json_error(e: &serde_json::Error) -> String {
    if e.is_eof() {
        format!("the server's answer was cut off (its JSON ends early: {e})")
    } else {
        format!("the server's answer is not the JSON expected: {e}")
    }
}

/// hyper's and h2's words for a body that ended before its announced length.
fn is_cut_off(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("end of file before message length")
        || text.contains("incomplete message")
        || text.contains("unexpected eof")
        || text.contains("connection closed before message completed")
}

/// Whitespace runs (newlines too) as single spaces: an error is one line.
fn one_line(text: &str) -> String {
    crate::formats::text::collapse(text)
}

/// At most 200 characters of a server-provided text.
pub(super) fn shorten(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// An error with its sources, e.g. "error trying to connect: tcp connect error: Connection refused".
pub fn flatten(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}
