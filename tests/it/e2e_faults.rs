//! Fault tests against the API server: a small fault-injecting proxy on 127.0.0.1 in front of the
//! real test cluster's kube-apiserver, and mesh-doctor's `analyze -A`, `pod`, `proxy-status` and
//! `version` through it, with and without `--request-timeout`. Each must end within its deadline
//! (plus a margin) with the documented exit code and a message naming the failure, and never exit
//! 0 or say "no issues" when a list could not be read. docs/reliability.md has the table.
//!
//! The proxy speaks plain HTTP/1.1 to mesh-doctor (a kubeconfig with an `http://` server) and
//! forwards each request to the real API server with kube's client (TLS and the token from the
//! test cluster's kubeconfig), then injects its fault into the real answer: a status, a cut-off
//! or malformed body, endless `continue` tokens, a delay or no answer at all. The TLS-handshake
//! hang is a listener that accepts connections and never says a word, behind an `https://` URL.
//!
//! Needs the test cluster (`MESH_DOCTOR_TESTENV`); `#[ignore]`d like every e2e test.

use crate::common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use common::{Run, TestEnv};

/// What the proxy does to each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Reads the request and never answers.
    Hang,
    /// Answers like the server, `delay` late.
    Slow(Duration),
    /// The real answer with its body cut in half (Content-Length still the whole).
    Truncate,
    /// 500 with a Status, as the API server sends when etcd fails.
    Status500,
    /// 403 for pods only; everything else is answered.
    ForbidPods,
    /// 429 with Retry-After: 1, every time.
    Throttle,
    /// 429 with `Retry-After: 3` in the header only (a Status without `retryAfterSeconds`).
    ThrottleHeaderOnly,
    /// 200 with a body that is not JSON.
    MalformedJson,
    /// The real list, but always with `metadata.continue: "again"`.
    RepeatedContinue,
    /// The real list, but always with a new `metadata.continue` token.
    EndlessContinue,
    /// TCP accepted, never a byte back: the TLS handshake hangs.
    HandshakeHang,
}

struct Proxy {
    requests: Arc<AtomicU64>,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

impl Proxy {
    fn start(env: &TestEnv, fault: Fault) -> Proxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let kubeconfig_path = env.kubeconfig.clone();
        let client = runtime.block_on(async move {
            let kubeconfig = kube::config::Kubeconfig::read_from(&kubeconfig_path).unwrap();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .unwrap();
            kube::Client::try_from(config).unwrap()
        });
        let counter = requests.clone();
        runtime.spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let client = client.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, client, fault, counter).await;
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let server = if fault == Fault::HandshakeHang {
            format!("https://{addr}")
        } else {
            format!("http://{addr}")
        };
        let ca = env.dir.join("pki/ca.crt");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: faulty\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: proxy\n  user: {{}}\ncontexts:\n- name: faulty\n  context: {{cluster: faulty, user: proxy, namespace: default}}\ncurrent-context: faulty\n",
                ca.display()
            ),
        )
        .unwrap();
        Proxy {
            requests,
            kubeconfig,
            _dir: dir,
            _runtime: runtime,
        }
    }
}

/// One connection: HTTP/1.1 requests one after the other (kube keeps connections alive).
async fn serve(
    mut socket: TcpStream,
    client: kube::Client,
    fault: Fault,
    counter: Arc<AtomicU64>,
) -> std::io::Result<()> {
    if fault == Fault::HandshakeHang {
        // Hold the connection, read nothing, say nothing.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return Ok(());
    }
    let mut buffer = Vec::new();
    loop {
        let head = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
                buffer.drain(..end + 4);
                break head;
            }
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let mut parts = head.split_whitespace();
        let method = parts.next().unwrap_or("GET").to_string();
        let target = parts.next().unwrap_or("/").to_string();
        let (status, headers, body, cut) = answer(&client, fault, &method, &target, n).await;
        let mut response = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            reason(status),
            body.len()
        );
        for (name, value) in headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        socket.write_all(response.as_bytes()).await?;
        if cut {
            socket.write_all(&body[..body.len() / 2]).await?;
            socket.flush().await?;
            return Ok(());
        }
        socket.write_all(&body).await?;
        socket.flush().await?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        403 => "Forbidden",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Other",
    }
}

fn status_body(code: u16, reason: &str, message: &str, retry: Option<u32>) -> Vec<u8> {
    let details = retry
        .map(|s| format!(",\"details\":{{\"retryAfterSeconds\":{s}}}"))
        .unwrap_or_default();
    format!(
        "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"{message}\",\"reason\":\"{reason}\",\"code\":{code}{details}}}"
    )
    .into_bytes()
}

type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>, bool);

async fn answer(client: &kube::Client, fault: Fault, method: &str, target: &str, n: u64) -> Answer {
    let path = target.split('?').next().unwrap_or(target);
    match fault {
        Fault::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            unreachable!()
        }
        Fault::Status500 => {
            return (
                500,
                vec![],
                status_body(500, "InternalError", "etcdserver: request timed out", None),
                false,
            );
        }
        Fault::ForbidPods if path.ends_with("/pods") || path.contains("/pods/") => {
            return (
                403,
                vec![],
                status_body(
                    403,
                    "Forbidden",
                    "pods is forbidden: User \\\"proxy\\\" cannot list resource \\\"pods\\\"",
                    None,
                ),
                false,
            );
        }
        Fault::Throttle => {
            return (
                429,
                vec![("Retry-After", "1".into())],
                status_body(429, "TooManyRequests", "the server is overloaded", Some(1)),
                false,
            );
        }
        Fault::ThrottleHeaderOnly => {
            return (
                429,
                vec![("Retry-After", "3".into())],
                status_body(429, "TooManyRequests", "the server is overloaded", None),
                false,
            );
        }
        Fault::MalformedJson => {
            return (
                200,
                vec![],
                b"{\"kind\": \"List\", \"items\": [}".to_vec(),
                false,
            );
        }
        _ => {}
    }
    if let Fault::Slow(delay) = fault {
        tokio::time::sleep(delay).await;
    }
    // The real server's answer: to a page of its own when the token is its own, from the start
    // when the token is one of ours (which it would reject).
    let upstream_target = if matches!(fault, Fault::RepeatedContinue | Fault::EndlessContinue) {
        strip_continue(target)
    } else {
        target.to_string()
    };
    let request = http::Request::builder()
        .method(method)
        .uri(upstream_target)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let (status, mut body) = match client.send(request).await {
        Ok(response) => {
            let status = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes().to_vec());
            (status, bytes.unwrap_or_default())
        }
        Err(e) => (502, format!("proxy: {e}").into_bytes()),
    };
    if matches!(fault, Fault::RepeatedContinue | Fault::EndlessContinue)
        && status == 200
        && let Ok(mut doc) = serde_json::from_slice::<serde_json::Value>(&body)
        && doc.get("items").is_some()
    {
        let token = if fault == Fault::RepeatedContinue {
            "again".to_string()
        } else {
            format!("page-{n}")
        };
        doc["metadata"]["continue"] = token.into();
        body = serde_json::to_vec(&doc).unwrap();
    }
    (status, vec![], body, fault == Fault::Truncate)
}

fn strip_continue(target: &str) -> String {
    let Some((path, query)) = target.split_once('?') else {
        return target.to_string();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| !p.starts_with("continue="))
        .collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// Runs mesh-doctor through the proxy, killing it (and failing) if it outlives `limit`. Its
/// output is read while it runs: a report larger than a pipe's buffer (a cluster with thousands
/// of Services) must not stop it on a full pipe.
fn through(proxy: &Proxy, args: &[&str], limit: Duration) -> (Run, Duration) {
    let started = Instant::now();
    let mut child = Command::new(common::binary())
        .env("KUBECONFIG", &proxy.kubeconfig)
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{args:?} did not end within {limit:?}; stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let elapsed = started.elapsed();
    let run = Run {
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        code: status.code().unwrap_or(-1),
    };
    (run, elapsed)
}

/// The commands under test; `pod` asks for a pod that need not exist (every fault hits it first).
const COMMANDS: &[&[&str]] = &[
    &["analyze", "-A", "--probe=false"],
    &["pod", "fault-web", "-n", "default", "--no-probe"],
    &["proxy-status"],
    &["version"],
];

/// How a case must end.
struct Expect {
    code: i32,
    /// Every one of these in stderr.
    says: &'static [&'static str],
    /// And this one without `--request-timeout` / with it ("" = nothing more).
    without: &'static str,
    with: &'static str,
}

/// The pod `pod` asks for: it exists, so only the fault can make the command fail.
const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fault-web\n  namespace: default\nspec:\n  nodeName: kwok-node-0\n  containers:\n  - name: web\n    image: nginx\n";

/// Runs every command with and without `--request-timeout` through one fault: the documented
/// exit within `deadline` + the margin, the message, never 0 and never "no issues". All runs
/// are made and printed (the rows of docs/reliability.md's table) before any failure is raised.
fn check(fault: Fault, request_timeout: &str, overall: &str, deadline: Duration, expect: &Expect) {
    check_commands(fault, COMMANDS, request_timeout, overall, deadline, expect);
}

fn check_commands(
    fault: Fault,
    commands: &[&[&str]],
    request_timeout: &str,
    overall: &str,
    deadline: Duration,
    expect: &Expect,
) {
    let env = common::testenv();
    // Once for all tests: the tests run in parallel, and two `kubectl apply`s of the same new pod
    // at once race (the second create fails with AlreadyExists).
    static POD_APPLIED: std::sync::Once = std::sync::Once::new();
    POD_APPLIED.call_once(|| env.apply(POD));
    let proxy = Proxy::start(&env, fault);
    const MARGIN: Duration = Duration::from_secs(5);
    let mut failures = Vec::new();
    for command in commands {
        for with_request_timeout in [false, true] {
            let mut args: Vec<&str> = command.to_vec();
            args.extend(["--timeout", overall]);
            if with_request_timeout {
                args.extend(["--request-timeout", request_timeout]);
            }
            let (run, took) = through(&proxy, &args, deadline + MARGIN + MARGIN);
            let message = run
                .stderr
                .lines()
                .find(|l| l.starts_with("error:"))
                .unwrap_or(run.stderr.trim());
            let line = format!(
                "| {fault:?} | `{}` | {} | {:.1}s | {} |",
                args.join(" "),
                run.code,
                took.as_secs_f64(),
                message.replace('|', "\\|")
            );
            eprintln!("ROW {line}");
            let mut problems = Vec::new();
            if took > deadline + MARGIN {
                problems.push("too slow".to_string());
            }
            // A run that could read some namespaces may also find something there (the shared
            // test cluster holds other tests' broken objects): 79 outranks "incomplete" (69),
            // and is never a clean result either, as long as the skipped read is said.
            let found_elsewhere = run.code == 79
                && expect.code == 69
                && command.first() == Some(&"analyze")
                && run.stderr.contains("skipped");
            if run.code == 0 || (run.code != expect.code && !found_elsewhere) {
                problems.push(format!("exit {} (want {})", run.code, expect.code));
            }
            for bad in ["No validation issues", "panicked", "Status {"] {
                if run.stderr.contains(bad) {
                    problems.push(format!("says {bad:?}"));
                }
            }
            let extra = if with_request_timeout {
                expect.with
            } else {
                expect.without
            };
            for want in expect
                .says
                .iter()
                .chain([extra].iter().filter(|w| !w.is_empty()))
            {
                if !run.stderr.contains(want) {
                    problems.push(format!("{want:?} missing"));
                }
            }
            if !problems.is_empty() {
                failures.push(format!("{line}: {}\n{}", problems.join(", "), run.stderr));
            }
        }
    }
    assert!(proxy.requests.load(Ordering::Relaxed) > 0 || fault == Fault::HandshakeHang);
    let _ = std::io::stderr().flush();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_hung_server_ends_at_the_request_timeout_or_the_deadline() {
    // Without --request-timeout the overall deadline (--timeout 4s) ends it; with it, 2s.
    check(
        Fault::Hang,
        "2s",
        "4s",
        Duration::from_secs(4),
        &Expect {
            code: 69,
            says: &[],
            without: "did not finish within its deadline of 4s (--timeout)",
            with: "no answer within 2s (--request-timeout)",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_tls_handshake_that_hangs_ends_in_time() {
    check(
        Fault::HandshakeHang,
        "2s",
        "4s",
        Duration::from_secs(4),
        &Expect {
            code: 69,
            says: &["https://127.0.0.1:"],
            without: "did not finish within its deadline of 4s (--timeout)",
            with: "no answer within 2s (--request-timeout)",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_slow_server_is_a_timeout_not_a_wait() {
    check(
        Fault::Slow(Duration::from_secs(3)),
        "1s",
        "2s",
        Duration::from_secs(2),
        &Expect {
            code: 69,
            says: &[],
            without: "did not finish within its deadline of 2s (--timeout)",
            with: "no answer within 1s (--request-timeout)",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_500_names_the_status_and_the_servers_message() {
    check(
        Fault::Status500,
        "2s",
        "10s",
        Duration::from_secs(3),
        &Expect {
            code: 69,
            says: &[
                "HTTP 500 Internal Server Error (InternalError): etcdserver: request timed out",
            ],
            without: "",
            with: "",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn throttling_is_retried_then_named() {
    check(
        Fault::Throttle,
        "2s",
        "10s",
        Duration::from_secs(5),
        &Expect {
            code: 69,
            says: &[
                "throttled by the API server (HTTP 429",
                "gave up after 3 tries",
            ],
            without: "",
            with: "",
        },
    );
}

/// kube drops the headers of an error answer: the `Retry-After` header alone must still set the
/// waits (3 s twice, not our own 1 s then 2 s).
#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn retry_after_in_the_header_alone_sets_the_wait() {
    let env = common::testenv();
    let proxy = Proxy::start(&env, Fault::ThrottleHeaderOnly);
    let (run, elapsed) = through(
        &proxy,
        &["version", "--timeout", "30s"],
        Duration::from_secs(40),
    );
    assert_eq!(run.code, 69, "{}", run.stderr);
    assert!(
        run.stderr.contains("gave up after 3 tries"),
        "{}",
        run.stderr
    );
    assert!(
        elapsed >= Duration::from_millis(5_500),
        "two waits of the server's 3 s, but it ended after {elapsed:?}:\n{}",
        run.stderr
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_cut_off_answer_is_named() {
    check(
        Fault::Truncate,
        "2s",
        "10s",
        Duration::from_secs(3),
        &Expect {
            code: 69,
            says: &["the server's answer was cut off"],
            without: "",
            with: "",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn malformed_json_is_named() {
    check(
        Fault::MalformedJson,
        "2s",
        "10s",
        Duration::from_secs(3),
        &Expect {
            code: 69,
            says: &["the server's answer is not the JSON expected"],
            without: "",
            with: "",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_repeated_continue_token_stops_the_list() {
    check(
        Fault::RepeatedContinue,
        "2s",
        "10s",
        Duration::from_secs(3),
        &Expect {
            code: 69,
            says: &["pagination does not end", "\"again\" twice"],
            without: "",
            with: "",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn endless_pagination_ends_at_the_deadline() {
    check(
        Fault::EndlessContinue,
        "2s",
        "3s",
        Duration::from_secs(3),
        &Expect {
            code: 69,
            says: &["deadline of 3s (--timeout)"],
            without: "",
            with: "",
        },
    );
}

#[test]
#[ignore = "needs the test cluster (scripts/test-all.sh)"]
fn a_forbidden_kind_is_never_a_clean_result() {
    check(
        Fault::ForbidPods,
        "2s",
        "10s",
        Duration::from_secs(4),
        &Expect {
            code: 69,
            says: &["pods"],
            without: "",
            with: "",
        },
    );
}
