//! Istio's checks of HTTP header names and values in VirtualServices (`validation.go`,
//! `header_value_validator.go`): names of matches, header operations and CORS lists, values
//! of header operations (control characters, and Envoy's `%VARIABLE%` syntax as Envoy's header
//! parser reads it), with Istio's texts.

/// The header name characters of RFC 7230 (`tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `jwt.ToRoutingClaim(key).Match`.
pub fn is_routing_claim(key: &str) -> bool {
    const PREFIX: &str = "@request.auth.claims";
    if !key.to_ascii_lowercase().starts_with(PREFIX) {
        return false;
    }
    let name = &key[PREFIX.len()..];
    (name.starts_with('.') && name.len() > 1)
        || (name.starts_with('[') && name.ends_with(']') && name.len() > 2)
}

const PSEUDO_HEADERS: &[&str] = &[":method", ":scheme", ":authority", ":path", ":status"];

/// `ValidateHTTPHeaderNameOrJwtClaimRoute`.
pub fn name_or_claim(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    if is_routing_claim(name) || PSEUDO_HEADERS.contains(&name) {
        return None;
    }
    (!is_token(name)).then(|| format!("header name {name} is not a valid header name"))
}

/// `ValidateCORSHTTPHeaderName`: a header name or `*`.
pub fn cors_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    (name != "*" && !is_token(name))
        .then(|| format!("header name {name} is not a valid header name"))
}

fn is_internal(name: &str) -> bool {
    name.starts_with(':') || name.eq_ignore_ascii_case("host")
}

/// `isAuthorityHeader`.
pub fn is_authority(name: &str) -> bool {
    name.eq_ignore_ascii_case(":authority") || name.eq_ignore_ascii_case("host")
}

/// `ValidateHTTPHeaderWithAuthorityOperationName` (a request header added or set).
pub fn with_authority_operation(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    (is_internal(name) && !is_authority(name))
        .then(|| format!("invalid header {name:?}: header cannot have \":\" prefix"))
}

/// `ValidateHTTPHeaderOperationName` (a request header removed, a response header changed).
pub fn operation(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("header name cannot be empty".into());
    }
    if name.eq_ignore_ascii_case("host") {
        return Some(format!("invalid header {name:?}: cannot set Host header"));
    }
    is_internal(name).then(|| format!("invalid header {name:?}: header cannot have \":\" prefix"))
}

/// `ValidateHTTPHeaderValue`: no control character but the tab, and Envoy's variable syntax.
pub fn value(value: &str) -> Option<String> {
    if value
        .chars()
        .any(|c| matches!(c, '\u{0}'..='\u{8}' | '\u{a}'..='\u{1f}' | '\u{7f}'))
    {
        return Some(format!("header value configuration {value} is invalid"));
    }
    variables(value).map(|e| format!("header value configuration: {e}"))
}

/// Where Envoy's header parser is in a value (`header_value_validator.go`).
#[derive(Clone, Copy, PartialEq)]
enum State {
    Literal,
    VariableName,
    ExpectArray,
    ExpectString,
    String,
    ExpectArrayDelimiterOrEnd,
    ExpectArgsEnd,
    ExpectVariableEnd,
}

/// `validateHeaderValue`: `%VAR%`, `%VAR(arg)%` and `%VAR(["a", "b"])%`, `%%` for a `%`.
fn variables(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut state = State::Literal;
    let mut pos = 0;
    while pos < bytes.len() {
        let ch = bytes[pos];
        let has_next = pos + 1 < bytes.len();
        match state {
            State::Literal if ch == b'%' => {
                if !has_next {
                    return Some("invalid header configuration. Un-escaped %".into());
                }
                if bytes[pos + 1] == b'%' {
                    pos += 1;
                } else {
                    state = State::VariableName;
                }
            }
            State::Literal => {}
            State::VariableName => {
                if ch == b'%' {
                    state = State::Literal;
                } else if ch == b'(' {
                    state = State::ExpectArray;
                }
            }
            State::ExpectArray => {
                if ch == b'[' {
                    state = State::ExpectString;
                } else if ch != b' ' {
                    state = State::String;
                }
            }
            State::ExpectArrayDelimiterOrEnd => {
                if ch == b',' {
                    state = State::ExpectString;
                } else if ch == b']' {
                    state = State::ExpectArgsEnd;
                } else if ch != b' ' {
                    return Some(
                        "invalid header configuration. Expecting ',', ']', or whitespace".into(),
                    );
                }
            }
            State::ExpectString => {
                if ch == b'"' {
                    state = State::String;
                } else if ch != b' ' {
                    return Some("invalid header configuration. Expecting '\"'".into());
                }
            }
            State::String => {
                if ch == b'\\' {
                    if !has_next {
                        return Some(
                            "invalid header configuration. Un-terminated backslash in JSON string"
                                .into(),
                        );
                    }
                    pos += 1;
                } else if ch == b')' {
                    state = State::ExpectVariableEnd;
                } else if ch == b'"' {
                    state = State::ExpectArrayDelimiterOrEnd;
                }
            }
            State::ExpectArgsEnd => {
                if ch == b')' {
                    state = State::ExpectVariableEnd;
                } else if ch != b' ' {
                    return Some("invalid header configuration. Expecting ')' or whitespace after '{}', but found '{}'".into());
                }
            }
            State::ExpectVariableEnd => {
                if ch == b'%' {
                    state = State::Literal;
                } else if ch != b' ' {
                    return Some(
                        "invalid header configuration. Expecting '%' or whitespace after".into(),
                    );
                }
            }
        }
        pos += 1;
    }
    (state != State::Literal).then(|| {
        format!("invalid header configuration. Un-terminated variable expression '{value}'")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_envoys_parser_reads_them() {
        for ok in [
            "",
            "foo",
            "%HOSTNAME%",
            "100%%",
            "prefix %HOSTNAME% suffix",
            "%REQ(x-a)%",
            "%REQ([\"a\", \"b\"])%",
            "%REQ( [ \"a\" ] ) %",
            "a\tb",
        ] {
            assert_eq!(value(ok), None, "{ok:?}");
        }
        for (bad, want) in [
            ("abc%123", "Un-terminated variable expression 'abc%123'"),
            ("%START_TIME%%", "Un-escaped %"),
            ("%REQ([1)%", "Expecting '\"'"),
            ("%REQ([\"a\" x])%", "Expecting ',', ']', or whitespace"),
            (
                "%REQ([\"a\"] x)%",
                "Expecting ')' or whitespace after '{}', but found '{}'",
            ),
            ("%REQ([\"a\"]) x%", "Expecting '%' or whitespace after"),
            ("%REQ([\"a\\", "Un-terminated backslash in JSON string"),
        ] {
            assert_eq!(
                value(bad),
                Some(format!(
                    "header value configuration: invalid header configuration. {want}"
                )),
                "{bad:?}"
            );
        }
        assert_eq!(
            value("a\nb").as_deref(),
            Some("header value configuration a\nb is invalid")
        );
    }

    #[test]
    fn cors_names() {
        assert_eq!(cors_name("*"), None);
        assert_eq!(cors_name("x-custom"), None);
        assert_eq!(
            cors_name("bad header").as_deref(),
            Some("header name bad header is not a valid header name")
        );
        assert_eq!(
            cors_name("").as_deref(),
            Some("header name cannot be empty")
        );
    }
}
