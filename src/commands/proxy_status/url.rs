//! `--istiod-url`'s value: `http[s]://host[:port][/prefix]`.

use crate::error::{Error, Result};

/// An `--istiod-url`: `http[s]://host[:port][/prefix]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IstiodUrl {
    /// The URL as given, for messages and the `via` column.
    pub text: String,
    pub https: bool,
    /// `host[:port]` as written, for the Host header.
    pub authority: String,
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

/// `http[s]://host:port[/prefix]` -> (host, port, prefix), and whether it is https.
pub fn parse_url(url: &str) -> Result<IstiodUrl> {
    let bad = |why: &str| Error::InvalidValue {
        what: "--istiod-url",
        value: url.to_string(),
        why: why.to_string(),
    };
    let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let https = match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("http") => false,
        Some(s) if s.eq_ignore_ascii_case("https") => true,
        Some(other) => {
            return Err(bad(&format!(
                "{other} is not supported, use http:// or https://"
            )));
        }
        None => return Err(bad("give it as http://HOST:PORT or https://HOST:PORT")),
    };
    let host = uri.host().ok_or_else(|| bad("no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let prefix = uri.path().trim_end_matches('/').to_string();
    let authority = uri.authority().map_or("", |a| a.as_str());
    let authority = authority
        .rsplit('@')
        .next()
        .unwrap_or(authority)
        .to_string();
    Ok(IstiodUrl {
        text: url.to_string(),
        https,
        authority,
        host,
        port,
        prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let parse_url = |text: &str| {
            parse_url(text).map(|u| {
                assert_eq!(u.text, text);
                IstiodUrl {
                    text: String::new(),
                    ..u
                }
            })
        };
        let url = |https: bool, authority: &str, host: &str, port: u16, prefix: &str| IstiodUrl {
            text: String::new(),
            https,
            authority: authority.to_string(),
            host: host.to_string(),
            port,
            prefix: prefix.to_string(),
        };
        assert_eq!(
            parse_url("http://127.0.0.1:18080").unwrap(),
            url(false, "127.0.0.1:18080", "127.0.0.1", 18080, "")
        );
        assert_eq!(
            parse_url("http://istiod.istio-system:15014/").unwrap(),
            url(
                false,
                "istiod.istio-system:15014",
                "istiod.istio-system",
                15014,
                ""
            )
        );
        assert_eq!(
            parse_url("https://istiod.example.com/mesh-a/").unwrap(),
            url(
                true,
                "istiod.example.com",
                "istiod.example.com",
                443,
                "/mesh-a"
            )
        );
        assert_eq!(
            parse_url("HTTPS://[::1]:8443").unwrap(),
            url(true, "[::1]:8443", "::1", 8443, "")
        );
        assert_eq!(
            parse_url("ftp://x:1").unwrap_err().to_string(),
            "invalid --istiod-url \"ftp://x:1\": ftp is not supported, use http:// or https://"
        );
        assert!(parse_url("127.0.0.1:15014").is_err());
    }
}
