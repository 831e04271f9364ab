//! Host name resolution without glibc's NSS: /etc/hosts first, then DNS with the servers of
//! /etc/resolv.conf (hickory, pure Rust).
//!
//! The release binary is linked statically against glibc, whose `getaddrinfo` then needs the
//! NSS modules of the very glibc version it was built with at run time; on another
//! distribution, or in a container holding only the binary, it fails. So the API server's host
//! name is resolved here and the client connects to the address (TLS still verifies the name).

use std::net::IpAddr;
use std::path::Path;

const HOSTS: &str = "/etc/hosts";

/// The address of `host`: an IP literal as is, else the first /etc/hosts entry, else DNS.
pub async fn resolve(host: &str) -> Result<IpAddr, String> {
    let bare = host.trim_matches(['[', ']']);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(ip);
    }
    if let Some(ip) = from_hosts_file(Path::new(HOSTS), bare) {
        tracing::debug!(host = bare, %ip, "resolved from /etc/hosts");
        return Ok(ip);
    }
    let resolver = hickory_resolver::TokioResolver::builder_tokio()
        .map_err(|e| {
            format!("cannot resolve {bare}: not in {HOSTS}, and no DNS configuration ({e})")
        })?
        .build()
        .map_err(|e| format!("cannot resolve {bare}: {e}"))?;
    let answer = resolver
        .lookup_ip(bare)
        .await
        .map_err(|e| format!("cannot resolve {bare}: {e}"))?;
    let ip = answer
        .iter()
        .next()
        .ok_or_else(|| format!("cannot resolve {bare}: no address"))?;
    tracing::debug!(host = bare, %ip, "resolved by DNS");
    Ok(ip)
}

fn from_hosts_file(path: &Path, host: &str) -> Option<IpAddr> {
    let text = std::fs::read_to_string(path).ok()?;
    from_hosts(&text, host)
}

/// The first address /etc/hosts gives `host` (names compare case-insensitively).
pub fn from_hosts(text: &str, host: &str) -> Option<IpAddr> {
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let Some(ip) = fields.next().and_then(|a| a.parse::<IpAddr>().ok()) else {
            continue;
        };
        if fields.any(|name| name.eq_ignore_ascii_case(host)) {
            return Some(ip);
        }
    }
    None
}

/// `uri` with its host replaced by `ip` (port, path and query kept).
pub fn with_host(uri: &http::Uri, ip: IpAddr) -> http::Uri {
    let host = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let authority = match uri.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    };
    let mut parts = uri.clone().into_parts();
    match authority.parse() {
        Ok(a) => parts.authority = Some(a),
        Err(_) => return uri.clone(),
    }
    http::Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file() {
        let text = "127.0.0.1 localhost\n# 10.0.0.1 api.example\n::1 ip6-localhost\n\
                    127.0.0.7\tkube-api.test  api # the test cluster\n";
        assert_eq!(from_hosts(text, "kube-api.test"), "127.0.0.7".parse().ok());
        assert_eq!(from_hosts(text, "API"), "127.0.0.7".parse().ok());
        assert_eq!(from_hosts(text, "ip6-localhost"), "::1".parse().ok());
        assert_eq!(from_hosts(text, "api.example"), None);
    }

    #[test]
    fn host_replaced() {
        let uri: http::Uri = "https://kube-api.test:6443/base".parse().unwrap();
        assert_eq!(
            with_host(&uri, "127.0.0.7".parse().unwrap()).to_string(),
            "https://127.0.0.7:6443/base"
        );
        assert_eq!(
            with_host(&uri, "::1".parse().unwrap()).to_string(),
            "https://[::1]:6443/base"
        );
    }
}
