//! How mesh-doctor reaches a sidecar's ports: a port-forward through the API server (the
//! default, what `kubectl port-forward` does), or a direct connection to the pod IP (when it
//! runs inside the cluster, e.g. as a Job).
//!
//! Both speak HTTP/1.1 with hyper over one connection per request. Every request has a connect
//! timeout, a total timeout and a body size cap, so a proxy that never answers gives a timeout
//! error and a huge answer gives a "too large" error, never a hang or an out-of-memory.
//!
//! A direct connection can put TLS in front of the same HTTP/1 connection ([`Direct::tls`], for
//! istiod behind an https URL): the handshake runs inside the request timeout, and a hung one
//! ends there as a "handshake did not finish" error.

use std::borrow::Cow;
use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use serde::Serialize;
use serde::ser::SerializeStruct;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::probe::tls::{TlsClient, TlsFailure};

/// Timeouts and size cap for every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Opening the connection (TCP connect, or the port-forward websocket upgrade).
    pub connect_timeout: Duration,
    /// The request, from the first byte sent (the TLS handshake's, with TLS) to the last byte
    /// of the body.
    pub request_timeout: Duration,
    /// The largest body read; a longer one is an error.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            max_body: 8 * 1024 * 1024,
        }
    }
}

/// An HTTP answer: status and (capped) body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn new(status: u16, body: &str) -> Self {
        HttpResponse {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The start of the body on one line, for error messages.
    pub fn snippet(&self) -> String {
        crate::formats::text::truncate(&crate::formats::text::collapse(&self.text()), 160)
    }
}

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// Nothing (or not everything) came back in time.
    #[error("timed out after {}s ({what})", after.as_secs_f64())]
    Timeout { what: &'static str, after: Duration },
    /// Nothing listens on the port (yet): Envoy refuses connections on its listeners until it
    /// has its first configuration, and nothing listens at all while it crash-loops.
    #[error("connection refused: {0}")]
    Refused(String),
    /// RBAC forbids the port-forward (`create pods/portforward`) or the request.
    #[error("access denied: {0}")]
    Denied(String),
    /// The connection could not be opened for another reason.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The body is larger than the cap.
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// An HTTP status that the endpoint does not give when it works.
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    /// The connection broke, or what came back is not HTTP.
    #[error("{0}")]
    Protocol(String),
    /// The TLS handshake failed (https only).
    #[error("{0}")]
    Tls(TlsFailure),
}

impl ProbeError {
    /// A stable, machine-readable name for JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            ProbeError::Timeout { .. } => "timeout",
            ProbeError::Refused(_) => "refused",
            ProbeError::Denied(_) => "denied",
            ProbeError::Connect(_) => "connect",
            ProbeError::TooLarge { .. } => "too-large",
            ProbeError::Status { .. } => "http-status",
            ProbeError::Protocol(_) => "protocol",
            ProbeError::Tls(TlsFailure::HandshakeTimeout { .. }) => "timeout",
            ProbeError::Tls(_) => "tls",
        }
    }
}

impl Serialize for ProbeError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ProbeError", 2)?;
        s.serialize_field("kind", self.kind())?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

/// Something that can GET a path on one of the pod's ports.
pub trait Transport: Send + Sync {
    fn get(
        &self,
        port: u16,
        path: &str,
    ) -> impl Future<Output = Result<HttpResponse, ProbeError>> + Send;

    /// For messages: "port-forward to shop/web-1", "direct to 10.0.0.5".
    fn describe(&self) -> String;
}

/// Aborts a spawned task when dropped, so a timed-out request leaves nothing running.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One HTTP/1.1 GET over an open connection, reading at most `max_body` bytes; `host` is the
/// Host header.
pub async fn http_get<S>(
    io: S,
    host: &str,
    path: &str,
    max_body: usize,
) -> Result<HttpResponse, ProbeError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| ProbeError::Protocol(format!("HTTP handshake failed: {}", flatten(&e))))?;
    let _connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let request = hyper::Request::get(path)
        .header(hyper::header::HOST, host)
        .header(hyper::header::ACCEPT, "*/*")
        .body(Empty::<Bytes>::new())
        .map_err(|e| ProbeError::Protocol(format!("invalid request for {path}: {e}")))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| ProbeError::Protocol(flatten(&e)))?;
    let status = response.status().as_u16();
    let declared = response
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|len| len > max_body) {
        return Err(ProbeError::TooLarge { limit: max_body });
    }
    let mut body = response.into_body();
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ProbeError::Protocol(flatten(&e)))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max_body {
                return Err(ProbeError::TooLarge { limit: max_body });
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(HttpResponse { status, body: buf })
}

/// An error with its sources on one line.
fn flatten(error: &dyn std::error::Error) -> String {
    crate::source::cluster::flatten(error)
}

/// Direct HTTP to the pod IP: for running inside the cluster.
#[derive(Clone, Debug)]
pub struct Direct {
    pub ip: IpAddr,
    pub limits: Limits,
    /// Ports to connect to instead of the pod's (e.g. 15000 -> where a local Envoy's admin
    /// really listens); empty for a real pod.
    pub port_map: Vec<(u16, u16)>,
    /// TLS in front of HTTP (an https URL); none for a pod.
    pub tls: Option<TlsClient>,
    /// The Host header (a URL's `host:port`); `localhost:PORT` when none, as for a pod.
    pub host: Option<String>,
}

impl Direct {
    pub fn new(ip: IpAddr, limits: Limits) -> Self {
        Direct {
            ip,
            limits,
            port_map: Vec::new(),
            tls: None,
            host: None,
        }
    }

    /// Speaks TLS (with `tls`'s trust and server name) before HTTP.
    pub fn with_tls(mut self, tls: TlsClient) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Sends `host` as the Host header (a URL's authority), instead of `localhost:PORT`.
    pub fn with_host(mut self, host: String) -> Self {
        self.host = Some(host);
        self
    }

    /// Connects to `to` whenever port `from` is asked for.
    pub fn remap(mut self, from: u16, to: u16) -> Self {
        self.port_map.push((from, to));
        self
    }

    fn port(&self, port: u16) -> u16 {
        self.port_map
            .iter()
            .find(|(from, _)| *from == port)
            .map_or(port, |(_, to)| *to)
    }
}

impl Transport for Direct {
    async fn get(&self, port: u16, path: &str) -> Result<HttpResponse, ProbeError> {
        let address = std::net::SocketAddr::new(self.ip, self.port(port));
        let stream = match tokio::time::timeout(
            self.limits.connect_timeout,
            tokio::net::TcpStream::connect(address),
        )
        .await
        {
            Err(_) => {
                return Err(ProbeError::Timeout {
                    what: "connect",
                    after: self.limits.connect_timeout,
                });
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(ProbeError::Refused(format!("{address}")));
            }
            Ok(Err(e)) => return Err(ProbeError::Connect(format!("{address}: {e}"))),
            Ok(Ok(stream)) => stream,
        };
        let host = self
            .host
            .clone()
            .unwrap_or_else(|| format!("localhost:{port}"));
        let timeout = self.limits.request_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let timed_out = ProbeError::Timeout {
            what: "request",
            after: timeout,
        };
        let Some(tls) = &self.tls else {
            return tokio::time::timeout_at(
                deadline,
                http_get(stream, &host, path, self.limits.max_body),
            )
            .await
            .unwrap_or(Err(timed_out));
        };
        let stream = match tokio::time::timeout_at(deadline, tls.handshake(stream)).await {
            Err(_) => {
                return Err(ProbeError::Tls(TlsFailure::HandshakeTimeout {
                    after: timeout,
                }));
            }
            Ok(Err(failure)) => return Err(ProbeError::Tls(failure)),
            Ok(Ok(stream)) => stream,
        };
        tokio::time::timeout_at(
            deadline,
            http_get(stream, &host, path, self.limits.max_body),
        )
        .await
        .unwrap_or(Err(timed_out))
    }

    fn describe(&self) -> String {
        match &self.tls {
            Some(_) => format!("direct to {} (TLS)", self.ip),
            None => format!("direct to {}", self.ip),
        }
    }
}

/// A port-forward through the API server, one per request (as `kubectl port-forward` opens one
/// stream per connection). Needs `create` on `pods/portforward`.
#[derive(Clone)]
pub struct PortForward {
    api: Api<Pod>,
    namespace: String,
    pod: String,
    pub limits: Limits,
}

impl PortForward {
    pub fn new(client: kube::Client, namespace: &str, pod: &str, limits: Limits) -> Self {
        PortForward {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            pod: pod.to_string(),
            limits,
        }
    }
}

/// Aborts the port-forward's background task when dropped.
struct ForwardGuard(kube::api::Portforwarder);

impl Drop for ForwardGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sorts an error of the port-forward request (the websocket upgrade).
fn classify_kube(error: &kube::Error) -> ProbeError {
    match error {
        kube::Error::Api(status) if matches!(status.code, 401 | 403) => {
            ProbeError::Denied(status.message.clone())
        }
        kube::Error::Api(status) => ProbeError::Connect(format!(
            "port-forward: HTTP {}: {}",
            status.code, status.message
        )),
        other => ProbeError::Connect(format!("port-forward: {}", flatten(other))),
    }
}

/// Sorts the message the kubelet sends on a port's error channel.
fn classify_forward_message(message: String) -> ProbeError {
    let message = crate::formats::text::collapse(&message);
    if message.to_ascii_lowercase().contains("connection refused") {
        ProbeError::Refused(message)
    } else {
        ProbeError::Connect(message)
    }
}

impl Transport for PortForward {
    async fn get(&self, port: u16, path: &str) -> Result<HttpResponse, ProbeError> {
        let mut forwarder = match tokio::time::timeout(
            self.limits.connect_timeout,
            self.api.portforward(&self.pod, &[port]),
        )
        .await
        {
            Err(_) => {
                return Err(ProbeError::Timeout {
                    what: "port-forward",
                    after: self.limits.connect_timeout,
                });
            }
            Ok(Err(e)) => return Err(classify_kube(&e)),
            Ok(Ok(forwarder)) => forwarder,
        };
        let stream = forwarder.take_stream(port).ok_or_else(|| {
            ProbeError::Protocol(format!("port-forward gave no stream for port {port}"))
        })?;
        let errors = forwarder.take_error(port);
        let _guard = ForwardGuard(forwarder);
        let result = tokio::time::timeout(
            self.limits.request_timeout,
            http_get(
                stream,
                &format!("localhost:{port}"),
                path,
                self.limits.max_body,
            ),
        )
        .await
        .unwrap_or(Err(ProbeError::Timeout {
            what: "request",
            after: self.limits.request_timeout,
        }));
        match result {
            Ok(response) => Ok(response),
            Err(error @ ProbeError::TooLarge { .. }) => Err(error),
            Err(error) => {
                // The kubelet explains a failed forward on the port's error channel
                // ("connect: connection refused"): prefer its words when they come quickly.
                if let Some(errors) = errors
                    && let Ok(Some(message)) =
                        tokio::time::timeout(Duration::from_millis(500), errors).await
                {
                    return Err(classify_forward_message(message));
                }
                Err(error)
            }
        }
    }

    fn describe(&self) -> String {
        format!("port-forward to {}/{}", self.namespace, self.pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn limits(ms: u64, max_body: usize) -> Limits {
        Limits {
            connect_timeout: Duration::from_millis(ms),
            request_timeout: Duration::from_millis(ms),
            max_body,
        }
    }

    /// A one-shot server: accepts connections and answers each with `reply` (or nothing).
    async fn server(reply: Option<Vec<u8>>) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = reply.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    match reply {
                        Some(bytes) => {
                            let _ = socket.write_all(&bytes).await;
                            let _ = socket.shutdown().await;
                        }
                        // Never answer, keep the connection open.
                        None => tokio::time::sleep(Duration::from_secs(60)).await,
                    }
                });
            }
        });
        address
    }

    #[tokio::test]
    async fn direct_reads_status_and_body() {
        let body = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/envoy/A_ready.txt"
        ));
        let reply = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let address = server(Some(reply.into_bytes())).await;
        let direct = Direct::new(address.ip(), limits(2000, 1024));
        let response = direct.get(address.port(), "/ready").await.unwrap();
        assert_eq!(response.status, 503);
        assert_eq!(response.text().trim(), "PRE_INITIALIZING");
    }

    #[tokio::test]
    async fn a_silent_proxy_is_a_timeout_not_a_hang() {
        let address = server(None).await;
        let direct = Direct::new(address.ip(), limits(300, 1024));
        let started = std::time::Instant::now();
        let error = direct
            .get(address.port(), "/server_info")
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                ProbeError::Timeout {
                    what: "request",
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(error.kind(), "timeout");
    }

    #[tokio::test]
    async fn bodies_over_the_cap_are_refused() {
        // Declared length over the cap.
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n".to_string() + &"x".repeat(5000);
        let address = server(Some(reply.into_bytes())).await;
        let direct = Direct::new(address.ip(), limits(2000, 1000));
        let error = direct
            .get(address.port(), "/config_dump")
            .await
            .unwrap_err();
        assert_eq!(error, ProbeError::TooLarge { limit: 1000 });

        // Chunked, no declared length.
        let mut chunked = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_string();
        for _ in 0..5 {
            chunked.push_str(&format!("{:x}\r\n{}\r\n", 400, "y".repeat(400)));
        }
        chunked.push_str("0\r\n\r\n");
        let address = server(Some(chunked.into_bytes())).await;
        let direct = Direct::new(address.ip(), limits(2000, 1000));
        let error = direct
            .get(address.port(), "/config_dump")
            .await
            .unwrap_err();
        assert_eq!(error, ProbeError::TooLarge { limit: 1000 });
    }

    #[tokio::test]
    async fn a_closed_port_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let direct = Direct::new(address.ip(), limits(2000, 1000));
        let error = direct.get(address.port(), "/ready").await.unwrap_err();
        assert!(matches!(error, ProbeError::Refused(_)), "{error:?}");
    }

    #[test]
    fn kubelet_messages_are_classified() {
        let refused = classify_forward_message(
            "error forwarding port 15021 to pod abc, uid : failed to execute portforward in network namespace: failed to connect to localhost:15021 inside namespace, IPv4: dial tcp4 127.0.0.1:15021: connect: connection refused".into(),
        );
        assert!(matches!(refused, ProbeError::Refused(_)));
        assert!(matches!(
            classify_forward_message("pod not running".into()),
            ProbeError::Connect(_)
        ));
    }

    #[test]
    fn errors_serialize_with_a_kind() {
        let json = serde_json::to_value(ProbeError::Timeout {
            what: "request",
            after: Duration::from_secs(5),
        })
        .unwrap();
        assert_eq!(json["kind"], "timeout");
        assert_eq!(json["message"], "timed out after 5s (request)");
    }
}
