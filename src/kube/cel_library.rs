//! Kubernetes' CEL library functions the compiled-in rules call, as the API server runs them:
//! `isURL` and `url` read a string with Go's `net/url.ParseRequestURI` (written here for what
//! it accepts and refuses, with its error texts; hosts in brackets and user info are left
//! unjudged), `url` then with `url.Parse`'s reading of the fragment, `isIP` with Go's `netip.ParseAddr`, refusing zones and
//! IPv4-mapped IPv6 addresses. Pure.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::object_rules::go_quote;

/// What Go's `url.ParseRequestURI` makes of a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlParse {
    /// Read: its scheme, lowercased.
    Url { scheme: String },
    /// Refused, with Go's `*url.Error` text (`parse "x": invalid URI for request`).
    Invalid(String),
    /// A form this reading does not judge as Go would.
    Unknown,
}

/// Kubernetes' `url()`: Go's `url.ParseRequestURI`, then `url.Parse`, which also unescapes
/// the fragment (`ParseRequestURI` leaves a `#` in the path or the query).
pub fn url(raw: &str) -> UrlParse {
    let parsed = parse_request_uri(raw);
    if let UrlParse::Url { .. } = parsed
        && let Some((_, fragment)) = raw.split_once('#')
        && let Err(why) = unescape_check(fragment, false)
    {
        return UrlParse::Invalid(format!("parse {}: {why}", go_quote(raw)));
    }
    parsed
}

/// Go's `url.ParseRequestURI` (what Kubernetes' `isURL` asks).
pub fn parse_request_uri(raw: &str) -> UrlParse {
    let refuse = |why: &str| UrlParse::Invalid(format!("parse {}: {why}", go_quote(raw)));
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return refuse("net/url: invalid control character in URL");
    }
    if raw.is_empty() {
        return refuse("empty url");
    }
    if raw == "*" {
        return UrlParse::Url {
            scheme: String::new(),
        };
    }
    let (scheme, rest) = match scheme_of(raw) {
        Ok(parts) => parts,
        Err(why) => return refuse(why),
    };
    let scheme = scheme.to_ascii_lowercase();
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(before, _)| before)
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            // An opaque URL (`mailto:x`): read.
            return UrlParse::Url { scheme };
        }
        return refuse("invalid URI for request");
    }
    let mut path = rest;
    if !scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, tail) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        if authority.contains('@') || authority.starts_with('[') {
            return UrlParse::Unknown;
        }
        if let Err(why) = host(authority) {
            return refuse(&why);
        }
        path = tail;
    }
    if let Err(why) = unescape_check(path, false) {
        return refuse(&why);
    }
    UrlParse::Url { scheme }
}

/// Go's `getScheme`: (scheme, rest); a string whose first character cannot start a scheme, or
/// with a character no scheme has before its colon, has none.
fn scheme_of(raw: &str) -> Result<(&str, &str), &'static str> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme"),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseHost` for a host that is not in brackets: an optional `:port` of digits, and
/// only the characters a host may hold.
fn host(authority: &str) -> Result<(), String> {
    if let Some(i) = authority.rfind(':') {
        let port = &authority[i..];
        if !port[1..].bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid port {} after host", go_quote(port)));
        }
    }
    unescape_check(authority, true)
}

/// Go's `unescape`, for its errors: a `%` not followed by two hex digits, and in a host a
/// `%` escape of an ASCII byte other than `%25`, or a character a host may not hold.
fn unescape_check(s: &str, in_host: bool) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                let end = (i + 3).min(b.len());
                return Err(format!(
                    "invalid URL escape {}",
                    go_quote(&String::from_utf8_lossy(&b[i..end]))
                ));
            }
            let escape = &s[i..i + 3];
            if in_host && b[i + 1] < b'8' && escape != "%25" {
                return Err(format!("invalid URL escape {}", go_quote(escape)));
            }
            i += 3;
            continue;
        }
        if in_host && b[i] < 0x80 && !host_byte(b[i]) {
            let c = (b[i] as char).to_string();
            return Err(format!("invalid character {} in host name", go_quote(&c)));
        }
        i += 1;
    }
    Ok(())
}

/// The ASCII bytes Go's `shouldEscape(c, encodeHost)` leaves as they are.
fn host_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c)
}

/// Kubernetes' `isIP`: Go's `netip.ParseAddr` (no leading zeros in IPv4), without a zone, not
/// an IPv4-mapped IPv6 address.
pub fn is_ip(s: &str) -> bool {
    if s.parse::<Ipv4Addr>().is_ok() {
        return true;
    }
    match s.parse::<Ipv6Addr>() {
        Ok(v6) => v6.to_ipv4_mapped().is_none(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheme(s: &str) -> UrlParse {
        UrlParse::Url { scheme: s.into() }
    }

    #[test]
    fn request_uris_as_go_reads_them() {
        assert_eq!(parse_request_uri("https://a.b/keys"), scheme("https"));
        assert_eq!(parse_request_uri("HTTP://a:80"), scheme("http"));
        assert_eq!(parse_request_uri("ftp://x"), scheme("ftp"));
        assert_eq!(parse_request_uri("oci:repo/img"), scheme("oci"));
        assert_eq!(parse_request_uri("/abs/path"), scheme(""));
        assert_eq!(
            parse_request_uri("not a url"),
            UrlParse::Invalid("parse \"not a url\": invalid URI for request".into())
        );
        assert_eq!(
            parse_request_uri("x"),
            UrlParse::Invalid("parse \"x\": invalid URI for request".into())
        );
        assert_eq!(
            parse_request_uri(":x"),
            UrlParse::Invalid("parse \":x\": missing protocol scheme".into())
        );
        assert_eq!(
            parse_request_uri("http://a:b/"),
            UrlParse::Invalid("parse \"http://a:b/\": invalid port \":b\" after host".into())
        );
        assert_eq!(
            parse_request_uri("http://a b/"),
            UrlParse::Invalid("parse \"http://a b/\": invalid character \" \" in host name".into())
        );
        assert_eq!(
            parse_request_uri("http://a/%zz"),
            UrlParse::Invalid("parse \"http://a/%zz\": invalid URL escape \"%zz\"".into())
        );
        assert_eq!(parse_request_uri("http://[::1]/"), UrlParse::Unknown);
        // The fragment: in the path for ParseRequestURI, unescaped on its own by Parse.
        assert_eq!(
            url("http://a/b#%zz"),
            UrlParse::Invalid("parse \"http://a/b#%zz\": invalid URL escape \"%zz\"".into())
        );
        assert_eq!(parse_request_uri("http://a/b?x#%zz"), scheme("http"));
        assert_eq!(
            url("http://a/b?x#%zz"),
            UrlParse::Invalid("parse \"http://a/b?x#%zz\": invalid URL escape \"%zz\"".into())
        );
        assert_eq!(
            parse_request_uri(""),
            UrlParse::Invalid("parse \"\": empty url".into())
        );
    }

    #[test]
    fn ips_as_kubernetes_reads_them() {
        for (s, ok) in [
            ("10.0.0.1", true),
            ("10.0.0.01", false),
            ("::1", true),
            ("::ffff:1.2.3.4", false),
            ("fe80::1%eth0", false),
            ("a.b", false),
        ] {
            assert_eq!(is_ip(s), ok, "{s}");
        }
    }
}
