//! Istio's `externalcontrolplane.ExternalControlPlaneAnalyzer` (IST0163, IST0164): the
//! webhooks of Istio's validating (`istiod-default-validator`, `istio-validator*`) and injection
//! (`istio-sidecar-injector*`) configurations must reach istiod, by URL for an external
//! control plane. A webhook with neither a URL nor a Service is blank (IST0163), a URL that does
//! not parse is invalid (IST0163), a URL whose host is an IP address is not recommended
//! (IST0164).

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;

use super::Finding;
use crate::findings::ResourceRef;
use crate::findings::messages;
use crate::kube::snapshot::{Located, Object, Snapshot};

const DEFAULT_VALIDATOR: &str = "istiod-default-validator";
const VALIDATOR_PREFIX: &str = "istio-validator";
const INJECTOR_PREFIX: &str = "istio-sidecar-injector";

/// What is wrong with a webhook's client config, if anything.
enum Problem {
    Invalid { url: String, reason: &'static str },
    IpAddress { url: String },
}

fn lint(config: &WebhookClientConfig) -> Option<Problem> {
    match (&config.url, &config.service) {
        (Some(url), _) => match url_host(url) {
            Err(()) => Some(Problem::Invalid {
                url: url.clone(),
                reason: "was provided in an invalid format",
            }),
            Ok(host) if host.parse::<std::net::IpAddr>().is_ok() => {
                Some(Problem::IpAddress { url: url.clone() })
            }
            Ok(_) => None,
        },
        (None, None) => Some(Problem::Invalid {
            url: String::new(),
            reason: "is blank",
        }),
        (None, Some(_)) => None,
    }
}

/// The host name of a URL as Go's `url.Parse` and `URL.Hostname` give it (port and IPv6
/// brackets removed; `""` for a URL without authority), or `Err` where Go's parser fails: a
/// control character, a scheme that starts with `:`, a colon in the first segment of a
/// relative URL, a port that is not a number, an unclosed `[`, a character not allowed in a
/// host, a bad `%` escape.
fn url_host(url: &str) -> Result<String, ()> {
    if url.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(());
    }
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    bad_escapes(url)?;
    // The scheme: letters first, then letters, digits, `+`, `-`, `.`, up to a `:`.
    let mut scheme_end = None;
    for (i, c) in url.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(()),
            ':' => {
                scheme_end = Some(i);
                break;
            }
            _ => break,
        }
    }
    let rest = match scheme_end {
        Some(i) => &url[i + 1..],
        None => url,
    };
    let rest = rest.split_once('?').map_or(rest, |(r, _)| r);
    if !rest.starts_with('/') {
        if scheme_end.is_none() {
            let first = rest.split('/').next().unwrap_or("");
            if first.contains(':') {
                return Err(());
            }
        }
        return Ok(String::new());
    }
    let Some(after) = rest.strip_prefix("//") else {
        return Ok(String::new());
    };
    if scheme_end.is_none() && after.starts_with('/') {
        return Ok(String::new());
    }
    let authority = after.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(inner) = host.strip_prefix('[') {
        let Some((ip, port)) = inner.split_once(']') else {
            return Err(());
        };
        if !valid_optional_port(port) {
            return Err(());
        }
        return Ok(ip.split_once('%').map_or(ip, |(a, _)| a).to_string());
    }
    let name = match host.rfind(':') {
        Some(i) => {
            if !valid_optional_port(&host[i..]) {
                return Err(());
            }
            &host[..i]
        }
        None => host,
    };
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=%\"<>".contains(c) || !c.is_ascii())
    {
        return Err(());
    }
    Ok(name.to_string())
}

/// `""` or `:` followed by digits only.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// A `%` not followed by two hex digits.
fn bad_escapes(url: &str) -> Result<(), ()> {
    let bytes = url.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return Err(());
            }
        }
    }
    Ok(())
}

fn report<T: Object>(
    resource: &Located<T>,
    hook: &str,
    config: &WebhookClientConfig,
    out: &mut Vec<Finding>,
) {
    let at = Some(ResourceRef::of(resource));
    match lint(config) {
        Some(Problem::Invalid { url, reason }) => out.push(Finding::new(
            messages::IST0163::message(url, hook, reason),
            at,
        )),
        Some(Problem::IpAddress { url }) => {
            out.push(Finding::new(messages::IST0164::message(url, hook), at))
        }
        None => {}
    }
}

/// `externalcontrolplane.ExternalControlPlaneAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for wh in &snapshot.validating_webhooks {
        let name = wh.object.name();
        if name == DEFAULT_VALIDATOR || name.starts_with(VALIDATOR_PREFIX) {
            for hook in wh.object.webhooks.iter().flatten() {
                report(wh, &hook.name, &hook.client_config, out);
            }
        }
    }
    for wh in &snapshot.webhooks {
        if wh.object.name().starts_with(INJECTOR_PREFIX) {
            for hook in wh.object.webhooks.iter().flatten() {
                report(wh, &hook.name, &hook.client_config, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::url_host;

    #[test]
    fn hosts_as_go_parses_them() {
        assert_eq!(
            url_host("https://test.com:15017/validate"),
            Ok("test.com".into())
        );
        assert_eq!(
            url_host("https://1.1.1.1:5100/inject"),
            Ok("1.1.1.1".into())
        );
        assert_eq!(url_host("https://[::1]:443/x"), Ok("::1".into()));
        assert_eq!(url_host("https://u:p@10.0.0.1/x"), Ok("10.0.0.1".into()));
        assert_eq!(url_host("test.com:15017/validate"), Ok(String::new()));
        assert_eq!(url_host(""), Ok(String::new()));
        assert!(url_host("https://test.com:port/x").is_err());
        assert!(url_host("://x").is_err());
        assert!(url_host("https://[::1/x").is_err());
        assert!(url_host("https://a b/x").is_err());
        assert!(url_host("https://x/%zz").is_err());
        assert!(url_host("a:b/c\n").is_err());
    }
}
