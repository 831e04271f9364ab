//! How Istio decides the protocol of a Service port: `appProtocol`, else the port name's prefix
//! (`http-`, `grpc-`, `tcp-`, ...), else protocol sniffing ("unsupported" here).

/// The protocols Istio recognises by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
    Grpc,
    GrpcWeb,
    Http,
    HttpProxy,
    Http2,
    Https,
    Tls,
    Mongo,
    Redis,
    Mysql,
    /// Nothing recognisable: Istio falls back to protocol sniffing.
    Unsupported,
}

impl Protocol {
    /// Istio's name of the protocol (`protocol.Instance`), as istioctl prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Grpc => "GRPC",
            Protocol::GrpcWeb => "GRPC-Web",
            Protocol::Http => "HTTP",
            Protocol::HttpProxy => "HTTP_PROXY",
            Protocol::Http2 => "HTTP2",
            Protocol::Https => "HTTPS",
            Protocol::Tls => "TLS",
            Protocol::Mongo => "Mongo",
            Protocol::Redis => "Redis",
            Protocol::Mysql => "MySQL",
            Protocol::Unsupported => "UnsupportedProtocol",
        }
    }
}

fn parse(name: &str) -> Protocol {
    match name.to_ascii_lowercase().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        "grpc" => Protocol::Grpc,
        "grpc-web" => Protocol::GrpcWeb,
        "http" => Protocol::Http,
        "http_proxy" => Protocol::HttpProxy,
        "http2" => Protocol::Http2,
        "https" => Protocol::Https,
        "tls" => Protocol::Tls,
        "mongo" => Protocol::Mongo,
        "redis" => Protocol::Redis,
        "mysql" => Protocol::Mysql,
        _ => Protocol::Unsupported,
    }
}

/// The protocol of one Service port, as Istio's `ConvertProtocol` computes it.
pub fn port_protocol(
    port: i32,
    name: Option<&str>,
    protocol: Option<&str>,
    app_protocol: Option<&str>,
) -> Protocol {
    if protocol == Some("UDP") {
        return Protocol::Udp;
    }
    let name = match app_protocol {
        Some("kubernetes.io/h2c") => return Protocol::Http2,
        Some("kubernetes.io/ws") => return Protocol::Http,
        Some("kubernetes.io/wss") => return Protocol::Https,
        Some(app) => app,
        None => name.unwrap_or(""),
    };
    if name.len() >= 8 && name[..8].eq_ignore_ascii_case("grpc-web") {
        return Protocol::GrpcWeb;
    }
    let prefix = name.split('-').next().unwrap_or("");
    match parse(prefix) {
        Protocol::Unsupported if matches!(port, 25 | 53 | 3306 | 27017) => Protocol::Tcp,
        p => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_app_protocol() {
        assert_eq!(
            port_protocol(80, Some("http-web"), None, None),
            Protocol::Http
        );
        assert_eq!(
            port_protocol(80, Some("web"), None, None),
            Protocol::Unsupported
        );
        assert_eq!(
            port_protocol(80, Some("web"), None, Some("http")),
            Protocol::Http
        );
        assert_eq!(
            port_protocol(80, Some("http"), None, Some("kubernetes.io/h2c")),
            Protocol::Http2
        );
        assert_eq!(port_protocol(80, None, Some("UDP"), None), Protocol::Udp);
        assert_eq!(port_protocol(3306, None, None, None), Protocol::Tcp);
        assert_eq!(
            port_protocol(80, Some("GRPC-Web-x"), None, None),
            Protocol::GrpcWeb
        );
        assert_eq!(port_protocol(80, Some("tcp"), None, None), Protocol::Tcp);
    }
}
