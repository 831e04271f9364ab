//! The client's transport to the API server: HTTP/2 when the server offers it (ALPN), every
//! request over one connection, as kubectl's client does.
//!
//! kube's own client speaks HTTP/1.1 only, so a live `analyze` opened one TLS connection per
//! parallel list (about 40). Each handshake costs the API server an RSA or ECDSA signature and
//! both sides a key exchange: on the benchmark cluster of `bench/gen_manifests.py`, 39
//! handshakes took the API server 50–90 ms of CPU time, on a machine whose two cores the lists
//! keep busy. Offering HTTP/2 alone does not avoid them: hyper's pool starts a connection for
//! every request that finds none idle, and learns that the server speaks HTTP/2 only when the
//! first handshake ends. So the connector here lets one connection be made first:
//!
//! - while it is being made, the others wait;
//! - when it speaks HTTP/2, the waiting requests take it from the pool as soon as it is there,
//!   and no other connection is made while it is open;
//! - when it speaks HTTP/1.1 (a proxy without HTTP/2), or fails, every request connects as
//!   before, in parallel.
//!
//! Upgrades (kube's port-forward, a WebSocket) need HTTP/1.1: they go through a second client,
//! [`super::Cluster::upgrades`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tower::{BoxError, Service};

/// What the connector knows of the server's connections.
#[derive(Debug, Default)]
struct State {
    /// The first connection is being made.
    connecting: bool,
    /// HTTP/2 connections open: while one is, it carries every request.
    multiplexed: usize,
    /// A connection spoke HTTP/1.1: each request needs its own, nothing waits.
    one_per_request: bool,
}

#[derive(Debug, Default)]
struct Gate {
    state: Mutex<State>,
    changed: tokio::sync::Notify,
}

impl Gate {
    fn update(&self, change: impl FnOnce(&mut State)) {
        if let Ok(mut state) = self.state.lock() {
            change(&mut state);
        }
        self.changed.notify_waiters();
    }
}

/// What a connect does once the gate lets it.
#[derive(Debug, PartialEq)]
enum Turn {
    /// The first connection: the others wait for what it speaks.
    First,
    /// Connect as any HTTP/1.1 client does.
    Free,
}

/// A connector that makes one connection first (see the module's documentation).
#[derive(Clone, Debug)]
pub struct OneConnectionFirst<C> {
    inner: C,
    gate: Arc<Gate>,
}

impl<C> OneConnectionFirst<C> {
    pub fn new(inner: C) -> Self {
        OneConnectionFirst {
            inner,
            gate: Arc::default(),
        }
    }
}

/// Waits for this connect's turn: `First`, `Free`, or (while an HTTP/2 connection is open)
/// never, since the request it is for takes that connection from the pool; hyper then keeps the
/// connect in the background, where it waits until the connection closes.
async fn turn(gate: &Gate) -> Turn {
    loop {
        let changed = gate.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        {
            let Ok(mut state) = gate.state.lock() else {
                return Turn::Free;
            };
            if state.one_per_request {
                return Turn::Free;
            }
            if state.multiplexed == 0 && !state.connecting {
                state.connecting = true;
                return Turn::First;
            }
        }
        changed.await;
    }
}

impl<C> Service<Uri> for OneConnectionFirst<C>
where
    C: Service<Uri> + Clone + Send + 'static,
    C::Response: Connection + Read + Write + Unpin + Send,
    C::Future: Send,
    C::Error: Into<BoxError>,
{
    type Response = Watched<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        // The clone that was made ready is the one called (tower's rule for `call`).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let gate = self.gate.clone();
        Box::pin(async move {
            let turn = turn(&gate).await;
            // A first connect given up (its request timed out, the command's deadline) lets
            // the next one be first.
            let mut given_up = GivenUp((turn == Turn::First).then(|| gate.clone()));
            let connected = inner.call(uri).await.map_err(Into::into);
            given_up.0 = None;
            let multiplexed = match &connected {
                Ok(io) => io.connected().is_negotiated_h2(),
                Err(_) => false,
            };
            if connected.is_ok() {
                let protocol = if multiplexed { "HTTP/2" } else { "HTTP/1.1" };
                tracing::debug!(
                    protocol,
                    first = turn == Turn::First,
                    "connected to the server"
                );
            }
            if turn == Turn::First {
                gate.update(|state| {
                    state.connecting = false;
                    match &connected {
                        Ok(_) if multiplexed => state.multiplexed += 1,
                        Ok(_) => state.one_per_request = true,
                        // The next one tries: a refused or slow first connection says nothing
                        // of what the server speaks.
                        Err(_) => {}
                    }
                });
            } else if multiplexed {
                gate.update(|state| state.multiplexed += 1);
            }
            connected.map(|io| Watched {
                io,
                gate: multiplexed.then_some(gate),
            })
        })
    }
}

/// Dropped while the first connection is being made (it holds the gate then): it is not any
/// more.
struct GivenUp(Option<Arc<Gate>>);

impl Drop for GivenUp {
    fn drop(&mut self) {
        if let Some(gate) = &self.0 {
            gate.update(|state| state.connecting = false);
        }
    }
}

/// A connection that tells the gate when an HTTP/2 one closes (hyper drops it then).
pub struct Watched<T> {
    io: T,
    gate: Option<Arc<Gate>>,
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        if let Some(gate) = &self.gate {
            gate.update(|state| state.multiplexed = state.multiplexed.saturating_sub(1));
        }
    }
}

impl<T: Connection> Connection for Watched<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

impl<T: Read + Unpin> Read for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

/// The largest DATA frame the server may send. HTTP/2's default, 16 KiB, cuts a list of
/// megabytes into thousands of frames, each written, encrypted and read on its own; on a
/// benchmark cluster that had served hours of lists, the API server then spent as much CPU
/// time as over 40 HTTP/1.1 connections, and 10% less with 1 MiB frames (`docs/performance.md`;
/// with 4 MiB frames its garbage collector ran hot). The flow-control windows stay hyper's
/// (2 MiB a stream, 5 MiB in all), as measured.
const MAX_FRAME: u32 = 1 << 20;

/// The service under kube's client: kube's own layers (the server's base URI, the
/// credentials, impersonation and other headers) over hyper's pooled client, which speaks
/// HTTP/2 where the server offers it, through [`OneConnectionFirst`]. As kube does, each
/// connection has the config's connect, read and write timeouts. kube's tracing layer is left
/// out: each request's URL is logged here, at the trace level.
pub fn service(
    config: &kube::Config,
) -> kube::Result<
    impl Service<
        http::Request<kube::client::Body>,
        Response = http::Response<Box<kube::client::DynBody>>,
        Error = BoxError,
        Future = impl Send + use<>,
    > + Send
    + use<>,
> {
    use http_body_util::BodyExt;
    use kube::client::ConfigExt;
    use tower::ServiceExt;
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    let mut tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = rustls::pki_types::ServerName::try_from(name.clone()).map_err(|e| {
            kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e))
        })?;
        tls = tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let mut timed =
        hyper_timeout::TimeoutConnector::new(tls.enable_http1().enable_http2().wrap_connector(tcp));
    timed.set_connect_timeout(config.connect_timeout);
    timed.set_read_timeout(config.read_timeout);
    timed.set_write_timeout(config.write_timeout);
    timed.set_reset_reader_on_write(config.reset_reader_on_write);
    let client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_max_frame_size(MAX_FRAME)
            .build(OneConnectionFirst::new(timed));
    Ok(tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        // Every request's URL (`MESH_DOCTOR_LOG=mesh_doctor::source::cluster=trace`; the
        // benchmark's reference reads the lists to make from it).
        .map_request(|request: http::Request<kube::client::Body>| {
            tracing::trace!(method = %request.method(), url = %request.uri(), "requesting");
            request
        })
        .service(client.map_err(BoxError::from))
        .map_response(|response| {
            response
                .map(|body| Box::new(body.map_err(BoxError::from)) as Box<kube::client::DynBody>)
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_connect_goes_alone_and_an_http2_one_holds_the_others() {
        let gate = Gate::default();
        assert_eq!(turn(&gate).await, Turn::First);
        // A second connect waits while the first is made...
        let second = tokio::time::timeout(std::time::Duration::from_millis(50), turn(&gate)).await;
        assert!(second.is_err(), "a connect went while the first was made");
        // ...and while the HTTP/2 connection it made is open.
        gate.update(|s| {
            s.connecting = false;
            s.multiplexed = 1;
        });
        let third = tokio::time::timeout(std::time::Duration::from_millis(50), turn(&gate)).await;
        assert!(
            third.is_err(),
            "a connect went while an HTTP/2 connection was open"
        );
        // Once it closes, the next connect is the first again.
        let waiting = tokio::spawn({
            let gate = Arc::new(Gate::default());
            gate.update(|s| s.multiplexed = 1);
            let closed = gate.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                closed.update(|s| s.multiplexed = 0);
            });
            async move { turn(&gate).await }
        });
        assert_eq!(waiting.await.unwrap(), Turn::First);
    }

    #[tokio::test]
    async fn after_an_http1_connection_every_connect_goes_at_once() {
        let gate = Arc::new(Gate::default());
        assert_eq!(turn(&gate).await, Turn::First);
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { turn(&gate).await }
        });
        gate.update(|s| {
            s.connecting = false;
            s.one_per_request = true;
        });
        assert_eq!(waiting.await.unwrap(), Turn::Free);
        assert_eq!(turn(&gate).await, Turn::Free);
    }

    #[tokio::test]
    async fn a_first_connect_given_up_lets_the_next_one_be_first() {
        // A connector that never connects, as to a black-holed address.
        struct NoIo;
        impl Connection for NoIo {
            fn connected(&self) -> Connected {
                Connected::new()
            }
        }
        impl Read for NoIo {
            fn poll_read(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
                _: ReadBufCursor<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Pending
            }
        }
        impl Write for NoIo {
            fn poll_write(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
                _: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                Poll::Pending
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
        #[derive(Clone)]
        struct Never;
        impl Service<Uri> for Never {
            type Response = NoIo;
            type Error = BoxError;
            type Future = std::future::Pending<Result<Self::Response, BoxError>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: Uri) -> Self::Future {
                std::future::pending()
            }
        }
        let mut connector = OneConnectionFirst::new(Never);
        let gate = connector.gate.clone();
        let uri: Uri = "https://127.0.0.1:6443".parse().unwrap();
        let first = connector.call(uri.clone());
        let given_up = tokio::time::timeout(std::time::Duration::from_millis(20), first).await;
        assert!(given_up.is_err());
        assert_eq!(
            tokio::time::timeout(std::time::Duration::from_millis(50), turn(&gate))
                .await
                .expect("a connect waited for a first one given up"),
            Turn::First
        );
    }

    #[tokio::test]
    async fn a_failed_first_connect_lets_the_next_one_be_first() {
        let gate = Arc::new(Gate::default());
        assert_eq!(turn(&gate).await, Turn::First);
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { turn(&gate).await }
        });
        gate.update(|s| s.connecting = false);
        assert_eq!(waiting.await.unwrap(), Turn::First);
    }
}
