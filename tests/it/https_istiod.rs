//! `proxy-status --istiod-url https://...` against local TLS servers on 127.0.0.1 (offline, no
//! cluster): certificates are made at test time (rcgen), the success case answers a real
//! istiod's recorded `/debug/syncz` (tests/fixtures/syncz/synced.json) byte for byte — a test of
//! the transport, not an imitation of istiod. Each failure is checked as the user sees it: the
//! transport's error, the one line of `error: ...` and the exit code, through the real binary
//! (with a kubeconfig naming a port where nothing listens: the TLS failure of the only istiod
//! is reported first, before the cluster is needed).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_doctor::commands::proxy_status::https::TlsOptions;
use mesh_doctor::exit;
use mesh_doctor::istio::syncz;
use mesh_doctor::probe::tls::TlsFailure;
use mesh_doctor::probe::transport::{Direct, Limits, ProbeError, Transport};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SYNCZ: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/syncz/synced.json"
));
const VERSION: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/syncz/version.txt"
));
/// The name istiod's own certificate carries.
const ISTIOD_NAME: &str = "istiod.istio-system.svc";

/// A CA made for one test: its PEM (what `--istiod-ca` reads) and what signs leaves.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// A server certificate for `names` (DNS names or IP addresses), valid until 4096 (rcgen's
/// default) or, `expired`, from 2020 to 2021.
fn leaf(
    ca: &Ca,
    names: &[&str],
    expired: bool,
) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.distinguished_name.push(DnType::CommonName, "istiod");
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// Reads a request head; answers `/debug/syncz...` with the recorded syncz, `/version` with the
/// recorded version, anything else 404.
async fn answer<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut io: S) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    let (status, body) = if path.starts_with("/debug/syncz") {
        ("200 OK", SYNCZ)
    } else if path == "/version" {
        ("200 OK", VERSION)
    } else {
        ("404 Not Found", "404 page not found\n")
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = io.write_all(reply.as_bytes()).await;
    let _ = io.shutdown().await;
}

/// An HTTPS server with this certificate; the ALPN it agreed to is checked to be http/1.1.
async fn tls_server(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
                    answer(tls).await;
                }
            });
        }
    });
    address
}

/// A plain HTTP server: what Go's net/http (istiod's 15014) answers a TLS ClientHello with.
async fn plain_http_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request")
                    .await;
                let _ = socket.shutdown().await;
            });
        }
    });
    address
}

/// Accepts connections and never says anything: a handshake that never completes.
async fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    address
}

fn limits(timeout: Duration) -> Limits {
    Limits {
        connect_timeout: timeout,
        request_timeout: timeout,
        max_body: 64 * 1024 * 1024,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// GET `path` at `address` with TLS as the flags say.
async fn get(
    address: SocketAddr,
    options: &TlsOptions,
    path: &str,
) -> Result<mesh_doctor::probe::transport::HttpResponse, ProbeError> {
    let client = options
        .client(&format!("https://{address}"), &address.ip().to_string())
        .unwrap();
    Direct::new(address.ip(), limits(Duration::from_secs(5)))
        .with_tls(client)
        .get(address.port(), path)
        .await
}

fn options(ca: Option<&Path>, server_name: Option<&str>) -> TlsOptions {
    TlsOptions::read(ca, server_name, false).unwrap()
}

/// The binary, as a user runs it, with a kubeconfig whose API server is a closed port.
fn mesh_doctor(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let kubeconfig = write(
        dir,
        "kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: none, user: {}}]\ncontexts: [{name: none, context: {cluster: none, user: none}}]\ncurrent-context: none\n",
    );
    // The system's trust store, as rustls reads it: a CA that signed none of the servers here
    // (so the run does not depend on this machine's /etc/ssl/certs).
    let system_ca = write(dir, "system-ca.pem", &ca("a public CA").pem);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-mesh_doctor"))
        .env("KUBECONFIG", &kubeconfig)
        .env("SSL_CERT_FILE", &system_ca)
        .env_remove("SSL_CERT_DIR")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

async fn run(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        mesh_doctor(&dir, &args)
    })
    .await
    .unwrap()
}

/// `proxy-status --istiod-url URL --istiod-ca CA` and `more` flags.
async fn with_ca(dir: &Path, url: &str, ca: &Path, more: &[&str]) -> (String, String, i32) {
    let ca = ca.to_str().unwrap();
    let mut args = vec!["proxy-status", "--istiod-url", url, "--istiod-ca", ca];
    args.extend(more);
    run(dir, &args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_through_the_ca_flag_gives_istiods_answer() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("mesh-doctor test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let (cert, key) = leaf(&ca, &["127.0.0.1", ISTIOD_NAME], false);
    let address = tls_server(cert, key).await;

    let response = get(address, &options(Some(&ca_file), None), "/debug/syncz")
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.text(), SYNCZ);
    let parsed = syncz::parse(&response.text()).unwrap();
    assert!(!parsed.proxies.is_empty());

    // By istiod's own name, as for an IP address that is not in the certificate.
    let response = get(
        address,
        &options(Some(&ca_file), Some(ISTIOD_NAME)),
        "/version",
    )
    .await
    .unwrap();
    assert_eq!(response.text(), VERSION);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_is_one_clear_line_and_exit_69() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("mesh-doctor test CA");
    let (cert, key) = leaf(&ca, &["127.0.0.1"], false);
    let address = tls_server(cert, key).await;

    // The system's trust store does not know the test CA.
    let error = get(address, &options(None, None), "/debug/syncz")
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProbeError::Tls(TlsFailure::UnknownIssuer {
            trust: "a CA of the system's trust store".to_string()
        })
    );
    assert_eq!(error.kind(), "tls");

    let url = format!("https://{address}");
    let (stdout, stderr, code) = run(dir.path(), &["proxy-status", "--istiod-url", &url]).await;
    assert_eq!(code, i32::from(exit::UNAVAILABLE), "{stderr}");
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        format!(
            "error: istiod {url}: TLS: the certificate is not trusted (unknown issuer: it is not signed by a CA of the system's trust store); give the CA that signed it with --istiod-ca FILE (for Istio's own certificate: the ConfigMap istio-ca-root-cert's root-cert.pem)\n"
        )
    );

    // Another CA than the one that signed it.
    let other = write(dir.path(), "other.pem", &ca_pem_of_another());
    let (_, stderr, code) = with_ca(dir.path(), &url, &other, &[]).await;
    assert_eq!(code, 69, "{stderr}");
    let other = other.display();
    assert_eq!(
        stderr,
        format!(
            "error: istiod {url}: TLS: the certificate is not trusted (unknown issuer: it is not signed by a CA of {other}); {other} does not hold the CA that signed istiod's certificate (for Istio's own certificate: its root, the ConfigMap istio-ca-root-cert's root-cert.pem)\n"
        )
    );
}

fn ca_pem_of_another() -> String {
    ca("another CA").pem
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_name_says_which_names_the_certificate_has() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("mesh-doctor test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let (cert, key) = leaf(&ca, &[ISTIOD_NAME, "istiod.istio-system"], false);
    let address = tls_server(cert, key).await;

    let error = get(address, &options(Some(&ca_file), None), "/debug/syncz")
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProbeError::Tls(TlsFailure::NameMismatch {
            wanted: "127.0.0.1".to_string(),
            presented: vec![ISTIOD_NAME.to_string(), "istiod.istio-system".to_string()],
        })
    );

    let url = format!("https://{address}");
    let (_, stderr, code) = with_ca(dir.path(), &url, &ca_file, &[]).await;
    assert_eq!(code, 69, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: istiod {url}: TLS: the certificate is for {ISTIOD_NAME}, istiod.istio-system and not for 127.0.0.1; use one of those names in the URL, or give it with --istiod-tls-server-name NAME (istiod's own certificate is for istiod.istio-system.svc)\n"
        )
    );

    // The override is what is checked (and sent as SNI).
    let (_, stderr, code) = with_ca(
        dir.path(),
        &url,
        &ca_file,
        &["--istiod-tls-server-name", "istiod.example.com"],
    )
    .await;
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.contains(
            "and not for istiod.example.com; give one of those names with --istiod-tls-server-name"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_certificate_says_when_it_expired() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("mesh-doctor test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let (cert, key) = leaf(&ca, &["127.0.0.1"], true);
    let address = tls_server(cert, key).await;

    let error = get(address, &options(Some(&ca_file), None), "/debug/syncz")
        .await
        .unwrap_err();
    let ProbeError::Tls(TlsFailure::Expired { not_after, .. }) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(not_after, "2021-01-01T00:00:00Z");

    let url = format!("https://{address}");
    let (_, stderr, code) = with_ca(dir.path(), &url, &ca_file, &[]).await;
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: istiod {url}: TLS: the certificate expired at 2021-01-01T00:00:00Z (it is now 20"
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("); renew the certificate (or check this machine's clock)\n"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_server_on_an_https_url_says_use_http() {
    let dir = tempfile::tempdir().unwrap();
    let address = plain_http_server().await;
    let error = get(address, &options(None, None), "/debug/syncz")
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProbeError::Tls(TlsFailure::NotTls {
            answer: Some("HTTP/1.1 400 Bad Request".to_string())
        })
    );

    let url = format!("https://{address}");
    let (_, stderr, code) = run(dir.path(), &["proxy-status", "--istiod-url", &url]).await;
    assert_eq!(code, 69, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: istiod {url}: the server does not speak TLS: it answered in plain HTTP (HTTP/1.1 400 Bad Request); use http:// for this port (istiod serves its debug endpoints over plain HTTP on 15014)\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_that_never_completes_ends_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let address = silent_server().await;
    let client = options(None, None)
        .client(&format!("https://{address}"), &address.ip().to_string())
        .unwrap();
    let started = Instant::now();
    let error = Direct::new(address.ip(), limits(Duration::from_millis(500)))
        .with_tls(client)
        .get(address.port(), "/debug/syncz")
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ProbeError::Tls(TlsFailure::HandshakeTimeout {
            after: Duration::from_millis(500)
        })
    );
    assert_eq!(error.kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(5));

    let url = format!("https://{address}");
    let (_, stderr, code) = run(
        dir.path(),
        &[
            "proxy-status",
            "--istiod-url",
            &url,
            "--istiod-timeout",
            "1s",
        ],
    )
    .await;
    assert_eq!(code, 69, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "error: istiod {url}: TLS: the handshake did not finish within 1s; is this a TLS port? (--istiod-timeout sets the time allowed)\n"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_flags_are_refused_before_anything_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let not_pem = write(dir.path(), "not.pem", "this is not a certificate\n");
    let not_pem = not_pem.to_str().unwrap();
    let url = "https://127.0.0.1:1";
    let cases: [(&[&str], i32, String); 5] = [
        (
            &["--istiod-url", url, "--istiod-ca", "/nonexistent/ca.pem"],
            65,
            "error: cannot use --istiod-ca /nonexistent/ca.pem: cannot read it: No such file or directory (os error 2)\n".to_string(),
        ),
        (
            &["--istiod-url", url, "--istiod-ca", not_pem],
            65,
            format!("error: cannot use --istiod-ca {not_pem}: no certificate in it (a PEM file with -----BEGIN CERTIFICATE----- blocks is expected)\n"),
        ),
        (
            &["--istiod-url", url, "--istiod-ca", not_pem, "--istiod-insecure-skip-tls-verify"],
            64,
            "error: give either --istiod-ca or --istiod-insecure-skip-tls-verify, not both\n".to_string(),
        ),
        (
            &["--istiod-url", "http://127.0.0.1:1", "--istiod-ca", not_pem],
            64,
            "error: --istiod-ca, --istiod-tls-server-name and --istiod-insecure-skip-tls-verify are for an https:// --istiod-url, and none is given\n".to_string(),
        ),
        (
            &["--istiod-url", url, "--istiod-tls-server-name", "not a name"],
            64,
            "error: invalid --istiod-tls-server-name \"not a name\": not a DNS name or an IP address\n".to_string(),
        ),
    ];
    for (args, code, stderr) in cases {
        let mut all = vec!["proxy-status"];
        all.extend_from_slice(args);
        let (_, got, got_code) = run(dir.path(), &all).await;
        assert_eq!((got_code, got), (code, stderr), "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_verify_accepts_any_certificate_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let ca = ca("mesh-doctor test CA");
    let (cert, key) = leaf(&ca, &["somewhere.else"], true);
    let address = tls_server(cert, key).await;
    let insecure = TlsOptions::read(None, None, true).unwrap();
    let response = get(address, &insecure, "/debug/syncz").await.unwrap();
    assert_eq!(response.text(), SYNCZ);

    // Through the binary: the warning, then (the cluster being a closed port) the cluster error.
    let url = format!("https://{address}");
    let (_, stderr, code) = run(
        dir.path(),
        &[
            "proxy-status",
            "--istiod-url",
            &url,
            "--istiod-insecure-skip-tls-verify",
        ],
    )
    .await;
    assert_eq!(code, 69, "{stderr}");
    assert!(
        stderr.starts_with("warning: --istiod-insecure-skip-tls-verify: istiod's certificate is not checked; anyone on the path can pose as istiod\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cannot reach the Kubernetes API server https://127.0.0.1:1"),
        "{stderr}"
    );
}

#[test]
fn an_empty_system_trust_store_asks_for_the_ca_flag() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.pem", "");
    // The API server's CA named in the kubeconfig, so kube's client needs no system root either.
    let api_ca = write(dir.path(), "api-ca.pem", &ca("API server CA").pem);
    let kubeconfig = write(
        dir.path(),
        "kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: none, cluster: {{server: \"https://127.0.0.1:1\", certificate-authority: {}}}}}]\nusers: [{{name: none, user: {{}}}}]\ncontexts: [{{name: none, context: {{cluster: none, user: none}}}}]\ncurrent-context: none\n",
            api_ca.display()
        ),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-mesh_doctor"))
        .env("KUBECONFIG", &kubeconfig)
        .env("NO_COLOR", "1")
        .env("SSL_CERT_FILE", &empty)
        .env("SSL_CERT_DIR", dir.path().join("none"))
        .args(["proxy-status", "--istiod-url", "https://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: istiod https://127.0.0.1:1: TLS: no CA certificate to trust: unexpected error: No CA certificates were loaded from the system; give istiod's CA with --istiod-ca FILE\n"
    );
}
