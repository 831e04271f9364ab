//! Gateway certificates proven on the real node with a real Istio (see tests/it/common/real.rs):
//! an ingress gateway deployed by gateway injection (a Deployment of `image: auto` with the
//! `gateway` injection template, as Istio's docs deploy one), two Istio Gateways whose Secrets
//! hold an expired and a valid certificate (made here with rcgen, signed by a test CA), and a
//! Gateway API Gateway of class `istio` (istiod deploys its gateway) whose listeners name an
//! expired Secret, a missing one and one whose key is not a key. A TLS client of the test
//! process (rustls, trusting the test CA) connects to the gateways' pod IPs with each SNI.
//!
//! What really happens, pinned here: istiod does **not** refuse an expired certificate. It logs
//! `invalid certificates: <ns>/expired-cert "kubernetes://expired-cert": certificate is expired
//! or not yet valid` and sends it all the same, so the gateway serves it: a client that verifies
//! refuses the handshake (the certificate has expired), one that does not verify gets the answer.
//! mesh-doctor says IST0161 and MD0411 for the Istio Gateway (live and on files) and MD0411 for
//! the Gateway API listener (whose status Istio leaves `ResolvedRefs=True`). A certificateRef
//! Istio refuses gets no certificate at all: the gateway resets the handshake; mesh-doctor says
//! MD0421 with the very message Istio writes in the listener's status (the missing Secret, live
//! and on files; the bad key, which mesh-doctor never reads, live only, from that status). The
//! twin with a valid certificate completes the handshake, gets the test app's page through its
//! route, and no finding. Two references whose first is refused: Istio's status stays True, yet
//! the listener gets neither Secret and the gateway serves its own Istio workload certificate
//! (`O=cluster.local`, spiffe://); MD0421 says so.
//!
//! A `MUTUAL` server's CA certificate comes from `<credentialName>-cacert` first: client
//! certificates prove which CA the gateway verifies them with (the one of that Secret, not the
//! `ca.crt` of the credential's own), and an expired one there refuses every client
//! (`CertificateExpired`) while mesh-doctor says MD0411 for it, live and on files.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::common;

use common::TestEnv;
use common::differential::{Found, findings};
use common::real::{PAGE, app_deployment, real_env, rollout};

/// A test CA: what signs, and its certificate (DER and PEM).
struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    der: CertificateDer<'static>,
    pem: String,
}

/// A CA named `name`, valid from 2019-01-01 until January 1st of `until`.
fn ca(name: &str, until: i32) -> Ca {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2019, 1, 1);
    params.not_after = rcgen::date_time_ymd(until, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        issuer: rcgen::Issuer::new(params, key),
        der: cert.der().clone(),
        pem: cert.pem(),
    }
}

/// A certificate for `host` signed by `ca`, valid from 2020-01-01 until January 1st of
/// `until`: (certificate PEM, key PEM, the pair as a client presents it).
fn leaf(ca: &Ca, host: &str, until: i32) -> (String, String, Identity) {
    let mut params = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, host);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(until, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let identity = (
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    );
    (cert.pem(), key.serialize_pem(), identity)
}

/// The test CA and the leaf certificates it signs (PEM), with their keys.
struct Certificates {
    ca_der: CertificateDer<'static>,
    /// (certificate, key) of `expired.<ns>.example.com`, valid 2020-01-01 to 2021-01-01.
    expired: (String, String),
    /// (certificate, key) of `valid.<ns>.example.com`, valid until 2126.
    valid: (String, String),
}

fn certificates(ns: &str) -> Certificates {
    let ca = ca("mesh-doctor test CA", 2126);
    let (expired, expired_key, _) = leaf(&ca, &format!("expired.{ns}.example.com"), 2021);
    let (valid, valid_key, _) = leaf(&ca, &format!("valid.{ns}.example.com"), 2126);
    Certificates {
        ca_der: ca.der.clone(),
        expired: (expired, expired_key),
        valid: (valid, valid_key),
    }
}

fn block(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn tls_secret(ns: &str, name: &str, cert: &str, key: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
        block(cert),
        block(key)
    )
}

/// The gateway of Istio's docs ("gateway injection"): a Deployment of `image: auto` that the
/// injector fills in with the `gateway` template, its Service, and the Role that lets istiod
/// send it the Secrets of its namespace (istiod checks the gateway's service account may read
/// them).
fn gateway_deployment(ns: &str) -> String {
    format!(
        "apiVersion: v1
kind: ServiceAccount
metadata: {{name: gateway, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: gateway-sds, namespace: {ns}}}
rules:
- apiGroups: [\"\"]
  resources: [secrets]
  verbs: [get, watch, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: gateway-sds, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: gateway-sds}}
subjects:
- {{kind: ServiceAccount, name: gateway}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: gateway, namespace: {ns}}}
spec:
  selector:
    matchLabels: {{gw: {ns}}}
  template:
    metadata:
      annotations:
        inject.istio.io/templates: gateway
      labels:
        gw: {ns}
        sidecar.istio.io/inject: \"true\"
    spec:
      serviceAccountName: gateway
      terminationGracePeriodSeconds: 1
      containers:
      - name: istio-proxy
        image: auto
        # `auto` has no tag, so the default would be Always; the image exists only on the node.
        imagePullPolicy: IfNotPresent
---
apiVersion: v1
kind: Service
metadata: {{name: gateway, namespace: {ns}}}
spec:
  selector: {{gw: {ns}}}
  ports:
  - {{name: https, port: 8443, targetPort: 8443}}
"
    )
}

/// An Istio Gateway `name` for `name.<ns>.example.com` with the credential `<name>-cert`, and
/// the route of its host to the test app.
fn istio_gateway(ns: &str, name: &str) -> String {
    istio_gateway_with(ns, name, "SIMPLE")
}

fn istio_gateway_with(ns: &str, name: &str, mode: &str) -> String {
    format!(
        "apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {{name: {name}, namespace: {ns}}}
spec:
  selector: {{gw: {ns}}}
  servers:
  - port: {{number: 8443, name: https-{name}, protocol: HTTPS}}
    tls: {{mode: {mode}, credentialName: {name}-cert}}
    hosts: [{name}.{ns}.example.com]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{name}.{ns}.example.com]
  gateways: [{name}]
  http:
  - route:
    - destination: {{host: app, port: {{number: 80}}}}
"
    )
}

/// A Gateway API Gateway of class `istio`, one HTTPS listener per (listener, Secrets), the
/// Secrets comma-separated.
fn gateway_api(ns: &str, listeners: &[(&str, &str)]) -> String {
    let mut text = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: edge, namespace: {ns}}}\nspec:\n  gatewayClassName: istio\n  listeners:\n"
    );
    for (listener, secrets) in listeners {
        let refs: Vec<String> = secrets
            .split(',')
            .map(|s| format!("{{name: {s}}}"))
            .collect();
        text.push_str(&format!(
            "  - name: {listener}\n    port: 8443\n    protocol: HTTPS\n    hostname: {listener}.{ns}.example.com\n    tls:\n      certificateRefs: [{}]\n",
            refs.join(", ")
        ));
    }
    text
}

/// Records the certificate the server presents, then verifies it with webpki against the test
/// CA (or, for the client that does not verify, accepts it).
#[derive(Debug)]
struct Recorder {
    inner: Arc<WebPkiServerVerifier>,
    presented: Mutex<Option<CertificateDer<'static>>>,
    verify: bool,
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        *self.presented.lock().unwrap() = Some(end_entity.clone().into_owned());
        if !self.verify {
            return Ok(ServerCertVerified::assertion());
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// What a TLS client got: the certificate the gateway presented (`notAfter` as x509-parser
/// reads it, none when it presented none) and the HTTP answer, or the error that ended it.
#[derive(Debug)]
struct Handshake {
    not_after: Option<String>,
    /// The presented certificate's issuer and subject alternative names.
    issuer: Option<String>,
    names: Vec<String>,
    answer: Result<String, String>,
}

/// A TLS connection to `ip:8443` with SNI `host`, then `GET /` for that host.
fn connect(ip: &str, host: &str, ca: &CertificateDer<'static>, verify: bool) -> Handshake {
    connect_as(ip, host, ca, verify, None)
}

/// A client certificate and its key.
type Identity = (CertificateDer<'static>, PrivateKeyDer<'static>);

/// [`connect`], presenting a client certificate when `identity` is given.
fn connect_as(
    ip: &str,
    host: &str,
    ca: &CertificateDer<'static>,
    verify: bool,
    identity: Option<&Identity>,
) -> Handshake {
    connect_on(ip, 8443, host, ca, verify, identity)
}

/// [`connect_as`] to `port`.
fn connect_on(
    ip: &str,
    port: u16,
    host: &str,
    ca: &CertificateDer<'static>,
    verify: bool,
    identity: Option<&Identity>,
) -> Handshake {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .unwrap();
    let recorder = Arc::new(Recorder {
        inner,
        presented: Mutex::new(None),
        verify,
    });
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone());
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(vec![cert.clone()], key.clone_key())
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(host.to_string()).unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let addr: SocketAddr = format!("{ip}:{port}").parse().unwrap();
    let answer = (|| {
        let socket = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        socket.set_read_timeout(Some(Duration::from_secs(10)))?;
        socket.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut tls = rustls::StreamOwned::new(connection, socket);
        tls.write_all(
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        )?;
        let mut body = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match tls.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
                // Envoy may close without close_notify once the answer is out.
                Err(_) if !body.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    })()
    .map_err(|e: std::io::Error| e.to_string());
    let presented = recorder.presented.lock().unwrap().clone();
    let parsed = presented
        .as_ref()
        .map(|der| x509_parser::parse_x509_certificate(der).unwrap().1);
    let names = parsed
        .as_ref()
        .and_then(|c| c.subject_alternative_name().ok().flatten())
        .map(|san| {
            san.value
                .general_names
                .iter()
                .map(|n| n.to_string())
                .collect()
        })
        .unwrap_or_default();
    Handshake {
        not_after: parsed.as_ref().map(|c| c.validity().not_after.to_string()),
        issuer: parsed.as_ref().map(|c| c.issuer().to_string()),
        names,
        answer,
    }
}

/// Connects until `done` holds (the gateway gets its listeners and certificates a moment after
/// the objects change); the last result otherwise.
fn connect_until(
    ip: &str,
    host: &str,
    ca: &CertificateDer<'static>,
    verify: bool,
    done: impl Fn(&Handshake) -> bool,
) -> Handshake {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let got = connect(ip, host, ca, verify);
        if done(&got) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn answered(h: &Handshake) -> bool {
    h.answer.as_ref().is_ok_and(|a| a.starts_with("HTTP/1.1 "))
}

/// The pod IP of the Running and Ready pod with `label`.
fn ready_pod_ip(env: &TestEnv, ns: &str, label: &str) -> String {
    env.wait_for(
        &format!("a ready pod {label} in {ns}"),
        Duration::from_secs(180),
        || {
            let pods = env.get_json(&["pods", "-n", ns, "-l", label]);
            pods["items"].as_array()?.iter().find_map(|p| {
                let ready = common::real::condition(p, "Ready") == Some("True");
                let deleting = !p["metadata"]["deletionTimestamp"].is_null();
                (ready && !deleting).then(|| p["status"]["podIP"].as_str().map(String::from))?
            })
        },
    )
}

/// The certificate codes of findings about the namespace's Gateways.
fn about(found: Found, ns: &str) -> Found {
    found
        .into_iter()
        .filter(|(code, origin, _)| {
            ["IST0161", "MD0410", "MD0411", "MD0421", "MD0422", "MD0423"].contains(&code.as_str())
                && origin.starts_with(&format!("Gateway {ns}/"))
        })
        .collect()
}

/// The message of the listener's `ResolvedRefs` condition, once Istio wrote it False.
fn resolved_refs(env: &TestEnv, ns: &str, listener: &str) -> String {
    env.wait_for(
        &format!("listener {listener}: ResolvedRefs=False"),
        Duration::from_secs(60),
        || {
            let gw = env.get_json(&["gateways.gateway.networking.k8s.io", "edge", "-n", ns]);
            let l = gw["status"]["listeners"]
                .as_array()?
                .iter()
                .find(|l| l["name"] == listener)?;
            let c = l["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "ResolvedRefs" && c["status"] == "False")?;
            assert_eq!(c["reason"], "InvalidCertificateRef", "{c}");
            c["message"].as_str().map(String::from)
        },
    )
}

#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_expired_gateway_certificate_is_served_refused_by_clients_and_md0411() {
    let env = real_env();
    let ns = env.namespace("real-gwcert", &[]);
    let certs = certificates(&ns);
    let manifests = [
        gateway_deployment(&ns),
        app_deployment(&ns, "app", 1),
        tls_secret(&ns, "expired-cert", &certs.expired.0, &certs.expired.1),
        tls_secret(&ns, "valid-cert", &certs.valid.0, &certs.valid.1),
        // `tls.key` is not a key: Istio's Gateway API conversion refuses the pair.
        tls_secret(&ns, "badkey-cert", &certs.valid.0, "not a key\n"),
        istio_gateway(&ns, "expired"),
        istio_gateway(&ns, "valid"),
        gateway_api(
            &ns,
            &[
                ("api-expired", "expired-cert"),
                ("api-missing", "no-such-cert"),
                ("api-badkey", "badkey-cert"),
                // The refused reference first: Istio names the credential after it (empty).
                ("api-first-missing", "no-such-cert,valid-cert"),
            ],
        ),
    ];
    let text = manifests.join("---\n");
    env.apply(&text);
    rollout(&env, &ns, "gateway");
    rollout(&env, &ns, "app");
    let ip = ready_pod_ip(&env, &ns, &format!("gw={ns}"));
    let host = |name: &str| format!("{name}.{ns}.example.com");

    // The valid twin: the handshake completes and the route answers with the app's page.
    let valid = connect_until(&ip, &host("valid"), &certs.ca_der, true, |h| {
        h.answer.as_ref().is_ok_and(|a| a.contains(PAGE))
    });
    let answer = valid
        .answer
        .as_ref()
        .expect("the valid certificate's handshake");
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert_eq!(
        valid.not_after.as_deref(),
        Some("Jan  1 00:00:00 2126 +00:00"),
        "{valid:?}"
    );

    // The expired certificate: the gateway serves it (istiod sent it), a verifying client
    // refuses the handshake because it has expired.
    let expired = connect_until(&ip, &host("expired"), &certs.ca_der, true, |h| {
        h.not_after.is_some()
    });
    assert_eq!(
        expired.not_after.as_deref(),
        Some("Jan  1 00:00:00 2021 +00:00"),
        "the gateway presents the expired certificate: {expired:?}"
    );
    let error = expired
        .answer
        .as_ref()
        .expect_err("a verifying client refuses it");
    assert!(error.contains("expired"), "{error}");
    // A client that does not verify gets through it, to the app.
    let unverified = connect_until(&ip, &host("expired"), &certs.ca_der, false, |h| {
        h.answer.as_ref().is_ok_and(|a| a.contains(PAGE))
    });
    assert!(
        unverified
            .answer
            .as_ref()
            .is_ok_and(|a| a.starts_with("HTTP/1.1 200 OK")),
        "{unverified:?}"
    );
    // istiod says why it still sent it.
    let log = env.kubectl(&["-n", "istio-system", "logs", "deploy/istiod"]);
    let line = format!(
        "invalid certificates: {ns}/expired-cert \"kubernetes://expired-cert\": certificate is expired or not yet valid"
    );
    assert!(log.contains(&line), "no {line:?} in istiod's log");

    // The Gateway API listeners: the expired certificate is served the same way (Istio's
    // status has no word against it), a refused reference serves nothing: the handshake is
    // reset before any certificate.
    let api_ip = ready_pod_ip(&env, &ns, "gateway.networking.k8s.io/gateway-name=edge");
    let api_expired = connect_until(&api_ip, &host("api-expired"), &certs.ca_der, true, |h| {
        h.not_after.is_some()
    });
    assert_eq!(
        api_expired.not_after.as_deref(),
        Some("Jan  1 00:00:00 2021 +00:00"),
        "{api_expired:?}"
    );
    assert!(
        api_expired
            .answer
            .as_ref()
            .is_err_and(|e| e.contains("expired")),
        "{api_expired:?}"
    );
    for listener in ["api-missing", "api-badkey"] {
        let refused = connect(&api_ip, &host(listener), &certs.ca_der, false);
        assert!(
            refused.not_after.is_none() && refused.answer.is_err() && !answered(&refused),
            "{listener}: {refused:?}"
        );
    }
    // Two references, the first refused: the listener's status is all True, and the gateway
    // serves neither Secret's certificate but its own Istio workload certificate.
    let first_missing = connect_until(
        &api_ip,
        &host("api-first-missing"),
        &certs.ca_der,
        false,
        |h| h.issuer.is_some(),
    );
    assert_eq!(
        first_missing.issuer.as_deref(),
        Some("O=cluster.local"),
        "{first_missing:?}"
    );
    assert!(
        first_missing
            .names
            .iter()
            .any(|n| n.contains(&format!("spiffe://cluster.local/ns/{ns}/sa/edge-istio"))),
        "{first_missing:?}"
    );
    let gw_status = env.get_json(&["gateways.gateway.networking.k8s.io", "edge", "-n", &ns]);
    let first_listener = gw_status["status"]["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "api-first-missing")
        .unwrap();
    assert!(
        first_listener["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] == "Conflicted" || c["status"] == "True"),
        "{first_listener}"
    );
    let missing_status = resolved_refs(&env, &ns, "api-missing");
    let badkey_status = resolved_refs(&env, &ns, "api-badkey");
    assert!(
        badkey_status.ends_with(
            "the certificate is malformed: tls: failed to find any PEM data in key input"
        ),
        "{badkey_status}"
    );

    // mesh-doctor, live: IST0161 and MD0411 for the Istio Gateway, MD0411 for the Gateway API
    // listener, MD0421 in Istio's words for the two refused references; nothing for the twin.
    let live = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe", "-o", "json"]);
    assert_eq!(live.code, 79, "{}\n{}", live.stdout, live.stderr);
    let ours = about(findings(&live.stdout, "mesh-doctor live"), &ns);
    let gw = |name: &str| format!("Gateway {ns}/{name}");
    let codes: Vec<(&str, &str)> = ours
        .iter()
        .map(|(c, o, _)| (c.as_str(), o.as_str()))
        .collect();
    let (edge, expired_gw) = (gw("edge"), gw("expired"));
    assert_eq!(
        codes,
        [
            ("IST0161", expired_gw.as_str()),
            ("MD0411", edge.as_str()),
            ("MD0411", expired_gw.as_str()),
            ("MD0421", edge.as_str()),
            ("MD0421", edge.as_str()),
            ("MD0421", edge.as_str()),
        ],
        "{ours:#?}"
    );
    let message = |code: &str, part: &str| {
        ours.iter()
            .find(|(c, _, m)| c == code && m.contains(part))
            .map(|(_, _, m)| m.clone())
            .unwrap_or_else(|| panic!("no {code} with {part:?}: {ours:#?}"))
    };
    assert!(
        message(
            "MD0411",
            &format!("Secret {ns}/expired-cert, the credential of Gateway {ns}/expired,")
        )
        .contains("expired on 2021-01-01 00:00 UTC")
    );
    assert!(
        message(
            "MD0411",
            &format!("Secret {ns}/expired-cert, the credential of Gateway {ns}/edge,")
        )
        .contains("expired on 2021-01-01 00:00 UTC")
    );
    // The prediction from the data is Istio's own message; the bad key comes from the status.
    assert!(
        message("MD0421", "\"api-missing\"")
            .contains(&format!("Istio refuses: {missing_status}. Istio sets"))
    );
    assert!(
        message("MD0421", "\"api-first-missing\"")
            .contains("the gateway serves its own Istio workload certificate")
    );
    assert!(message("MD0421", "\"api-badkey\"").contains(&format!(
        "Istio refuses: {badkey_status}. Istio reports it in the listener's status"
    )));
    // The private keys are neither printed nor logged.
    for key in [&certs.expired.1, &certs.valid.1] {
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!live.stdout.contains(line) && !live.stderr.contains(line));
        }
    }

    // The same objects as files: the same findings, but for the bad key (a private key is never
    // read, and files have no status).
    // Istio finds a Gateway's workload namespace by its pods (a template does not count for
    // gateway.SecretAnalyzer), so the gateway pod is in the files as well.
    let pod = env.kubectl(&[
        "get",
        "pods",
        "-n",
        &ns,
        "-l",
        &format!("gw={ns}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let files_text = format!(
        "{text}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: {ns}\n  labels: {{gw: {ns}}}\nspec:\n  containers:\n  - {{name: istio-proxy, image: auto}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateways.yaml");
    std::fs::write(&file, &files_text).unwrap();
    let files = env.mesh_doctor(&["analyze", "-f", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(files.code, 79, "{}", files.stderr);
    let on_files = about(findings(&files.stdout, "files"), &ns);
    let without_badkey: Found = ours
        .iter()
        .filter(|(_, _, m)| !m.contains("\"api-badkey\""))
        .cloned()
        .collect();
    assert_eq!(on_files, without_badkey, "files");

    env.delete_namespaces(&[&ns]);
}

/// A Secret of `(key, PEM)` values.
fn secret_of(ns: &str, name: &str, data: &[(&str, &str)]) -> String {
    let mut text = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\nstringData:\n"
    );
    for (key, value) in data {
        text.push_str(&format!("  {key}: |\n{}", block(value)));
    }
    text
}

/// A `MUTUAL` server's CA certificate comes from the Secret `<credentialName>-cacert` when it
/// exists, not from the `ca.crt` of the credential's own Secret (istiod's `GetCaCert`), proven
/// with client certificates: `mutual` verifies clients with the CA of `mutual-cert-cacert`
/// (a client it signed gets the app's page; one signed by the CA of `mutual-cert`'s own
/// `ca.crt` is refused), and `mutual-old`, whose `-cacert` CA has expired, refuses its client as
/// well as the one its own (valid) `ca.crt` would accept. mesh-doctor says MD0411 for the
/// expired CA certificate of `mutual-old-cert-cacert`, live and on files, and nothing for
/// `mutual`.
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_mutual_gateway_verifies_clients_with_the_cacert_secret_first() {
    let env = real_env();
    let ns = env.namespace("real-gwca", &[]);
    let servers = ca("mesh-doctor test CA", 2126);
    let clients = ca("clients CA", 2126);
    let other = ca("other CA", 2126);
    let old = ca("old clients CA", 2021);
    let host = |name: &str| format!("{name}.{ns}.example.com");
    let (mutual_cert, mutual_key, _) = leaf(&servers, &host("mutual"), 2126);
    let (old_cert, old_key, _) = leaf(&servers, &host("mutual-old"), 2126);
    let (_, _, client) = leaf(&clients, "client", 2126);
    let (_, _, other_client) = leaf(&other, "other-client", 2126);
    let (_, _, old_client) = leaf(&old, "old-client", 2126);
    let manifests = [
        gateway_deployment(&ns),
        app_deployment(&ns, "app", 1),
        secret_of(
            &ns,
            "mutual-cert",
            &[
                ("tls.crt", &mutual_cert),
                ("tls.key", &mutual_key),
                ("ca.crt", &other.pem),
            ],
        ),
        secret_of(&ns, "mutual-cert-cacert", &[("cacert", &clients.pem)]),
        secret_of(
            &ns,
            "mutual-old-cert",
            &[
                ("tls.crt", &old_cert),
                ("tls.key", &old_key),
                ("ca.crt", &clients.pem),
            ],
        ),
        secret_of(&ns, "mutual-old-cert-cacert", &[("cacert", &old.pem)]),
        istio_gateway_with(&ns, "mutual", "MUTUAL"),
        istio_gateway_with(&ns, "mutual-old", "MUTUAL"),
    ];
    let text = manifests.join("---\n");
    env.apply(&text);
    rollout(&env, &ns, "gateway");
    rollout(&env, &ns, "app");
    let ip = ready_pod_ip(&env, &ns, &format!("gw={ns}"));

    let page = |h: &Handshake| h.answer.as_ref().is_ok_and(|a| a.contains(PAGE));
    let deadline = Instant::now() + Duration::from_secs(90);
    let accepted = loop {
        let got = connect_as(&ip, &host("mutual"), &servers.der, true, Some(&client));
        if page(&got) || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    assert!(
        accepted
            .answer
            .as_ref()
            .is_ok_and(|a| a.starts_with("HTTP/1.1 200 OK")),
        "a client of the -cacert CA: {accepted:?}"
    );
    let refused = |identity: &Identity, name: &str, alert: &str| {
        let got = connect_as(&ip, &host(name), &servers.der, true, Some(identity));
        assert!(
            got.not_after.is_some(),
            "{name}: the server's certificate: {got:?}"
        );
        assert!(
            got.answer
                .as_ref()
                .is_err_and(|e| e == &format!("received fatal alert: {alert}")),
            "{name}: the gateway refuses the client certificate: {got:?}"
        );
    };
    // The CA of the credential's own ca.crt is not the one used.
    refused(&other_client, "mutual", "UnknownCA");
    // mutual-old: its -cacert CA has expired; the valid CA of its own ca.crt is not used.
    refused(&old_client, "mutual-old", "CertificateExpired");
    refused(&client, "mutual-old", "UnknownCA");

    let live = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe", "-o", "json"]);
    assert_eq!(live.code, 79, "{}\n{}", live.stdout, live.stderr);
    let ours = about(findings(&live.stdout, "mesh-doctor live"), &ns);
    let want: Found = [(
        "MD0411".to_string(),
        format!("Gateway {ns}/mutual-old"),
        format!(
            "The certificate \"CN=old clients CA\" in cacert of Secret {ns}/mutual-old-cert-cacert, the credential of Gateway {ns}/mutual-old, expired on 2021-01-01 00:00 UTC: the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\"). Put a renewed CA certificate into the Secret."
        ),
    )]
    .into();
    assert_eq!(ours, want, "live");

    let pod = env.kubectl(&[
        "get",
        "pods",
        "-n",
        &ns,
        "-l",
        &format!("gw={ns}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let files_text = format!(
        "{text}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: {ns}\n  labels: {{gw: {ns}}}\nspec:\n  containers:\n  - {{name: istio-proxy, image: auto}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mutual.yaml");
    std::fs::write(&file, &files_text).unwrap();
    let files = env.mesh_doctor(&["analyze", "-f", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(files.code, 79, "{}", files.stderr);
    assert_eq!(about(findings(&files.stdout, "files"), &ns), want, "files");

    env.delete_namespaces(&[&ns]);
}

/// A Gateway API Gateway `name` of class `istio` with `spec.tls` (indented YAML, may be empty)
/// and listeners (name, port, terminate-mode option or ""), each naming `<name>-cert`.
fn gateway_api_with(ns: &str, name: &str, tls: &str, listeners: &[(&str, u16, &str)]) -> String {
    let mut text = format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  gatewayClassName: istio\n{tls}  listeners:\n"
    );
    for (listener, port, mode) in listeners {
        let options = match *mode {
            "" => String::new(),
            m => format!("      options: {{gateway.istio.io/tls-terminate-mode: {m}}}\n"),
        };
        text.push_str(&format!(
            "  - name: {listener}\n    port: {port}\n    protocol: HTTPS\n    hostname: {listener}.{ns}.example.com\n    tls:\n{options}      certificateRefs: [{{name: {listener}-cert}}]\n"
        ));
    }
    text
}

/// What happens to a server or listener that verifies clients when istiod has no CA
/// certificate for it, and to Gateway API frontend validation (`caCertificateRefs`), proven
/// with real handshakes with and without a client certificate:
///
/// - Istio Gateways (MUTUAL): a `<credentialName>-cacert` Secret without `cacert`/`ca.crt`
///   (`m-nokey`), with an empty `cacert` (`m-empty`), or no `-cacert` Secret and a credential
///   without CA (`m-noca`): istiod logs "failed to fetch ca certificate" and sends nothing (a
///   `cacert` that is no PEM, `m-notpem`: istiod sends it, the gateway rejects it), and
///   the gateway resets the handshake before its certificate, whatever the client presents (even
///   a client the credential's own `ca.crt` would accept), while `m-ok` on the same port
///   answers. MD0422.
/// - Gateway API, by the option: `MUTUAL` with a `-cacert` Secret without CA (`api-nokey`):
///   the same; `OPTIONAL_MUTUAL` with a valid `-cacert` (`api-opt`): istiod refuses to send it
///   ("attempted to access unauthorized certificates"), the same reset. MD0422.
/// - Gateway API `spec.tls.frontend`: a ConfigMap CA (`f-cm`: a client of that CA gets the page,
///   none gets `CertificateRequired`, another CA's `UnknownCA`), the option `OPTIONAL_MUTUAL`
///   beside it (`f-opt`: no certificate is let in), a Secret CA whose `-cacert` Secret exists
///   (`f-secret`: the CA of `-cacert` is the one used), an expired ConfigMap CA (`f-old`: sent,
///   and its client is refused with `CertificateExpired`; MD0411), a missing ConfigMap
///   (`f-missing`: the listener is `Accepted=False` and its port refuses connections; MD0423).
#[test]
#[ignore = "needs the real node with Istio: scripts/test-all.sh"]
fn real_client_ca_missing_resets_handshakes_and_frontend_validation_is_istios() {
    let env = real_env();
    let ns = env.namespace("real-gwclca", &[]);
    // The namespace of CA ConfigMaps another namespace's Gateways name.
    let cas = env.namespace("real-gwcas", &[]);
    let servers = ca("mesh-doctor test CA", 2126);
    let clients = ca("clients CA", 2126);
    let other = ca("other CA", 2126);
    let old = ca("old clients CA", 2021);
    let host = |name: &str| format!("{name}.{ns}.example.com");
    let (cert, key, _) = leaf(&servers, &format!("*.{ns}.example.com"), 2126);
    let (_, _, old_client) = leaf(&old, "old-client", 2126);
    let (_, _, client) = leaf(&clients, "client", 2126);
    let (_, _, other_client) = leaf(&other, "other-client", 2126);
    let tls = [("tls.crt", cert.as_str()), ("tls.key", key.as_str())];
    fn with_ca<'a>(tls: &[(&'a str, &'a str); 2], ca: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![tls[0], tls[1], ("ca.crt", ca)]
    }
    let mut manifests = vec![gateway_deployment(&ns), app_deployment(&ns, "app", 1)];
    let mut add_secret = |name: &str, data: &[(&str, &str)]| {
        manifests.push(secret_of(&ns, name, data));
    };
    add_secret("m-ok-cert", &with_ca(&tls, &other.pem));
    add_secret("m-ok-cert-cacert", &[("cacert", &clients.pem)]);
    add_secret("m-nokey-cert", &with_ca(&tls, &clients.pem));
    add_secret("m-nokey-cert-cacert", &[("foo", "bar")]);
    add_secret("m-empty-cert", &with_ca(&tls, &clients.pem));
    add_secret("m-noca-cert", &tls);
    add_secret("m-notpem-cert", &with_ca(&tls, &clients.pem));
    add_secret("m-notpem-cert-cacert", &[("cacert", "not a certificate")]);
    add_secret("o-ok-cert", &tls);
    add_secret("o-ok-cert-cacert", &[("cacert", &clients.pem)]);
    add_secret("api-ok-cert", &tls);
    add_secret("api-ok-cert-cacert", &[("cacert", &clients.pem)]);
    add_secret("api-nokey-cert", &with_ca(&tls, &clients.pem));
    add_secret("api-nokey-cert-cacert", &[("foo", "bar")]);
    add_secret("api-opt-cert", &tls);
    add_secret("api-opt-cert-cacert", &[("cacert", &clients.pem)]);
    for name in ["f-cm", "f-opt", "f-missing", "f-secret", "f-old"] {
        add_secret(&format!("{name}-cert"), &tls);
    }
    add_secret("clients-ca-secret", &[("ca.crt", &clients.pem)]);
    add_secret("clients-ca-secret-cacert", &[("cacert", &other.pem)]);
    manifests.push(format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: m-empty-cert-cacert\n  namespace: {ns}\nstringData:\n  cacert: \"\"\n"
    ));
    for (name, pem) in [("clients-ca", &clients.pem), ("old-ca", &old.pem)] {
        manifests.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  ca.crt: |\n{}",
            block(pem)
        ));
    }
    for name in ["m-ok", "m-nokey", "m-empty", "m-noca", "m-notpem"] {
        manifests.push(istio_gateway_with(&ns, name, "MUTUAL"));
    }
    // The twin of the Gateway API's OPTIONAL_MUTUAL: an Istio Gateway gets its -cacert CA.
    manifests.push(istio_gateway_with(&ns, "o-ok", "OPTIONAL_MUTUAL"));
    manifests.push(gateway_api_with(
        &ns,
        "edge",
        "",
        &[
            ("api-ok", 8443, "MUTUAL"),
            ("api-nokey", 8443, "MUTUAL"),
            ("api-opt", 8443, "OPTIONAL_MUTUAL"),
        ],
    ));
    let frontend = "  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: [{group: \"\", kind: ConfigMap, name: clients-ca}]\n      perPort:\n      - port: 9443\n        tls:\n          validation:\n            caCertificateRefs: [{group: \"\", kind: ConfigMap, name: no-such-ca}]\n      - port: 10443\n        tls:\n          validation:\n            caCertificateRefs: [{group: \"\", kind: Secret, name: clients-ca-secret}]\n      - port: 11443\n        tls:\n          validation:\n            caCertificateRefs: [{group: \"\", kind: ConfigMap, name: old-ca}]\n";
    manifests.push(gateway_api_with(
        &ns,
        "front",
        frontend,
        &[
            ("f-cm", 8443, ""),
            ("f-opt", 8443, "OPTIONAL_MUTUAL"),
            ("f-missing", 9443, ""),
            ("f-secret", 10443, ""),
            ("f-old", 11443, ""),
        ],
    ));
    // Another namespace's CA: Istio checks the ReferenceGrant for the SDS resource's name,
    // `<name>-cacert`, so a grant naming the ConfigMap itself does not do.
    for name in ["by-name", "by-cacert"] {
        manifests.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {cas}\ndata:\n  ca.crt: |\n{}",
            block(&clients.pem)
        ));
        let tls = format!(
            "  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: [{{group: \"\", kind: ConfigMap, name: {name}, namespace: {cas}}}]\n"
        );
        manifests.push(gateway_api_with(&ns, name, &tls, &[("l", 8443, "")]));
    }
    manifests.push(secret_of(&ns, "l-cert", &tls));
    manifests.push(format!(
        "apiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata: {{name: cas, namespace: {cas}}}\nspec:\n  from: [{{group: gateway.networking.k8s.io, kind: Gateway, namespace: {ns}}}]\n  to: [{{group: \"\", kind: ConfigMap, name: by-name}}, {{group: \"\", kind: ConfigMap, name: by-cacert-cacert}}]\n"
    ));
    manifests.push(format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: app, namespace: {ns}}}\nspec:\n  parentRefs: [{{name: edge}}, {{name: front}}]\n  rules:\n  - backendRefs: [{{name: app, port: 80}}]\n"
    ));
    let text = manifests.join("---\n");
    env.apply(&text);
    rollout(&env, &ns, "gateway");
    rollout(&env, &ns, "app");
    let page = |h: &Handshake| h.answer.as_ref().is_ok_and(|a| a.contains(PAGE));
    let until_page = |ip: &str, port: u16, name: &str, id: Option<&Identity>| {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let got = connect_on(ip, port, &host(name), &servers.der, true, id);
            if page(&got) || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    };
    let once = |ip: &str, port: u16, name: &str, id: Option<&Identity>| {
        connect_on(ip, port, &host(name), &servers.der, true, id)
    };
    let reset = |got: &Handshake, what: &str| {
        assert!(
            got.not_after.is_none()
                && got
                    .answer
                    .as_ref()
                    .is_err_and(|e| e.contains("os error 104")),
            "{what}: the gateway resets the handshake before its certificate: {got:?}"
        );
    };
    let alert = |got: &Handshake, alert: &str, what: &str| {
        assert!(
            got.not_after.is_some()
                && got
                    .answer
                    .as_ref()
                    .is_err_and(|e| e == &format!("received fatal alert: {alert}")),
            "{what}: {alert}: {got:?}"
        );
    };

    // Istio Gateways: the twin answers a client of its -cacert CA, and on the same port the
    // servers istiod has no CA for reset every handshake, with or without a certificate.
    let ip = ready_pod_ip(&env, &ns, &format!("gw={ns}"));
    assert!(page(&until_page(&ip, 8443, "m-ok", Some(&client))), "m-ok");
    alert(
        &once(&ip, 8443, "m-ok", None),
        "CertificateRequired",
        "m-ok",
    );
    for name in ["m-nokey", "m-empty", "m-noca", "m-notpem"] {
        reset(&once(&ip, 8443, name, None), name);
        reset(&once(&ip, 8443, name, Some(&client)), name);
    }
    assert!(page(&once(&ip, 8443, "o-ok", None)), "o-ok, no certificate");
    assert!(page(&once(&ip, 8443, "o-ok", Some(&client))), "o-ok");
    alert(
        &once(&ip, 8443, "o-ok", Some(&other_client)),
        "UnknownCA",
        "o-ok",
    );
    // Gateway API by the option: MUTUAL without CA key, OPTIONAL_MUTUAL whatever its CA.
    let edge_ip = ready_pod_ip(&env, &ns, "gateway.networking.k8s.io/gateway-name=edge");
    assert!(
        page(&until_page(&edge_ip, 8443, "api-ok", Some(&client))),
        "api-ok"
    );
    for name in ["api-nokey", "api-opt"] {
        reset(&once(&edge_ip, 8443, name, None), name);
        reset(&once(&edge_ip, 8443, name, Some(&client)), name);
    }
    // Istio's status has no word against either.
    let edge = env.get_json(&["gateways.gateway.networking.k8s.io", "edge", "-n", &ns]);
    for l in edge["status"]["listeners"].as_array().unwrap() {
        assert!(
            l["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["type"] == "Conflicted" || c["status"] == "True"),
            "{l}"
        );
    }
    // Frontend validation.
    let front_ip = ready_pod_ip(&env, &ns, "gateway.networking.k8s.io/gateway-name=front");
    assert!(
        page(&until_page(&front_ip, 8443, "f-cm", Some(&client))),
        "f-cm"
    );
    alert(
        &once(&front_ip, 8443, "f-cm", None),
        "CertificateRequired",
        "f-cm",
    );
    alert(
        &once(&front_ip, 8443, "f-cm", Some(&other_client)),
        "UnknownCA",
        "f-cm",
    );
    assert!(
        page(&once(&front_ip, 8443, "f-opt", None)),
        "f-opt, no certificate"
    );
    assert!(
        page(&once(&front_ip, 8443, "f-opt", Some(&client))),
        "f-opt"
    );
    alert(
        &once(&front_ip, 8443, "f-opt", Some(&other_client)),
        "UnknownCA",
        "f-opt",
    );
    // The Secret reference: the CA of its -cacert Secret verifies, not its own ca.crt.
    assert!(
        page(&until_page(
            &front_ip,
            10443,
            "f-secret",
            Some(&other_client)
        )),
        "f-secret"
    );
    alert(
        &once(&front_ip, 10443, "f-secret", Some(&client)),
        "UnknownCA",
        "f-secret",
    );
    // An expired CA: istiod sends it, and the gateway refuses its clients.
    let deadline = Instant::now() + Duration::from_secs(60);
    let expired = loop {
        let got = once(&front_ip, 11443, "f-old", Some(&old_client));
        if got.not_after.is_some() || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    alert(&expired, "CertificateExpired", "f-old");
    // The refused reference: no listener on its port.
    for id in [None, Some(&client)] {
        let got = once(&front_ip, 9443, "f-missing", id);
        assert!(
            got.answer
                .as_ref()
                .is_err_and(|e| e.contains("os error 111")),
            "f-missing: connection refused: {got:?}"
        );
    }
    let gw = env.get_json(&["gateways.gateway.networking.k8s.io", "front", "-n", &ns]);
    let listener = gw["status"]["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "f-missing")
        .unwrap()
        .clone();
    let condition = |kind: &str| {
        listener["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .unwrap()
            .clone()
    };
    // The grant by the ConfigMap's own name is not enough, the one by `<name>-cacert` is.
    let accepted = |gateway: &str| {
        env.wait_for(
            &format!("Gateway {gateway}'s listener status"),
            Duration::from_secs(60),
            || {
                let gw = env.get_json(&["gateways.gateway.networking.k8s.io", gateway, "-n", &ns]);
                let l = gw["status"]["listeners"].as_array()?.first()?.clone();
                let c = l["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "ResolvedRefs")?
                    .clone();
                Some((
                    c["status"].as_str()?.to_string(),
                    c["message"].as_str()?.to_string(),
                ))
            },
        )
    };
    let (status, grant_message) = accepted("by-name");
    assert_eq!(
        (status.as_str(), grant_message.as_str()),
        (
            "False",
            format!("caCertificateRef {cas}/by-name not accessible to a Gateway in namespace {ns:?} (missing a ReferenceGrant?)").as_str()
        )
    );
    assert_eq!(accepted("by-cacert").0, "True");
    let missing_message = format!(
        "invalid CA certificate reference /ConfigMap/no-such-ca., configmap {ns}/no-such-ca not found"
    );
    assert_eq!(condition("Accepted")["reason"], "NoValidCACertificate");
    assert_eq!(
        condition("ResolvedRefs")["reason"],
        "InvalidCACertificateRef"
    );
    assert_eq!(
        condition("ResolvedRefs")["message"],
        missing_message.as_str()
    );
    assert_eq!(condition("Programmed")["status"], "False");

    // istiod says why it sent nothing.
    let log = env.kubectl(&["-n", "istio-system", "logs", "deploy/istiod"]);
    for line in [
        "failed to fetch ca certificate for kubernetes://m-nokey-cert-cacert: found secret, but didn't have expected keys cacert or ca.crt; found: foo".to_string(),
        "failed to fetch ca certificate for kubernetes://m-empty-cert-cacert: found key \"cacert\", but it was empty".to_string(),
        "failed to fetch ca certificate for kubernetes://m-noca-cert-cacert: found secret, but didn't have expected keys cacert or ca.crt; found: tls.crt, tls.key".to_string(),
        format!("failed to fetch ca certificate for kubernetes-gateway://{ns}/api-nokey-cert-cacert: found secret, but didn't have expected keys cacert or ca.crt; found: foo"),
        "attempted to access unauthorized certificates api-opt-cert-cacert: cross namespace secret reference requires ReferenceGrant".to_string(),
        format!("invalid certificates: {ns}/m-notpem-cert-cacert \"kubernetes://m-notpem-cert-cacert\": pem decode failed"),
    ] {
        assert!(log.contains(&line), "no {line:?} in istiod's log");
    }
    // The CA that is no PEM was sent, and the gateway refused it.
    let gateway_log = env.kubectl(&["-n", &ns, "logs", "deploy/gateway"]);
    assert!(
        gateway_log.contains("Failed to load trusted CA certificates"),
        "{gateway_log}"
    );

    // mesh-doctor, live: MD0422 for each server or listener that resets, MD0423 for the
    // refused caCertificateRef in Istio's words; nothing for the twins.
    let live = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe", "-o", "json"]);
    assert_eq!(live.code, 79, "{}\n{}", live.stdout, live.stderr);
    let ours = about(findings(&live.stdout, "mesh-doctor live"), &ns);
    let said: Vec<(String, String)> = ours
        .iter()
        .map(|(c, o, m)| {
            let subject = m.split(" of Gateway").next().unwrap_or("").to_string();
            (format!("{c} {o}"), subject)
        })
        .collect();
    let gw = |name: &str| format!("Gateway {ns}/{name}");
    let server =
        |name: &str| format!("Server 0 (port 8443, tls.mode MUTUAL, credentialName {name}-cert)");
    let want: Vec<(String, String)> = vec![
        (
            format!("MD0411 {}", gw("front")),
            format!("The certificate \"CN=old clients CA\" in ca.crt of ConfigMap {ns}/old-ca, the client CA"),
        ),
        (format!("MD0422 {}", gw("edge")), "Listener \"api-nokey\" (port 8443, option gateway.istio.io/tls-terminate-mode MUTUAL)".into()),
        (format!("MD0422 {}", gw("edge")), "Listener \"api-opt\" (port 8443, option gateway.istio.io/tls-terminate-mode OPTIONAL_MUTUAL)".into()),
        (format!("MD0422 {}", gw("m-empty")), server("m-empty")),
        (format!("MD0422 {}", gw("m-noca")), server("m-noca")),
        (format!("MD0422 {}", gw("m-nokey")), server("m-nokey")),
        (format!("MD0422 {}", gw("m-notpem")), server("m-notpem")),
        (format!("MD0423 {}", gw("by-name")), "Listener \"l\"".into()),
        (format!("MD0423 {}", gw("front")), "Listener \"f-missing\"".into()),
    ];
    let mut sorted = said.clone();
    sorted.sort();
    let md0411 = ours.iter().find(|(c, _, _)| c == "MD0411").unwrap();
    assert!(
        md0411.2.contains(&format!(
            "in ca.crt of ConfigMap {ns}/old-ca, the client CA of Gateway {ns}/front, expired on 2021-01-01 00:00 UTC"
        )),
        "{}",
        md0411.2
    );
    assert_eq!(sorted, want, "{ours:#?}");
    let md0423 = ours
        .iter()
        .find(|(c, _, m)| c == "MD0423" && m.contains("f-missing"))
        .unwrap();
    assert!(
        ours.iter().any(|(c, _, m)| c == "MD0423"
            && m.contains(&format!("which Istio refuses: {grant_message}. Istio sets"))),
        "{ours:#?}"
    );
    assert!(
        md0423.2.contains(&format!(
            "which Istio refuses: {missing_message}. Istio sets"
        )),
        "{}",
        md0423.2
    );

    // The same objects as files (with the Istio gateway's pod): the same findings.
    let pod = env.kubectl(&[
        "get",
        "pods",
        "-n",
        &ns,
        "-l",
        &format!("gw={ns}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let files_text = format!(
        "{text}---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: {ns}\n  labels: {{gw: {ns}}}\nspec:\n  containers:\n  - {{name: istio-proxy, image: auto}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("client-ca.yaml");
    std::fs::write(&file, &files_text).unwrap();
    let files = env.mesh_doctor(&["analyze", "-f", file.to_str().unwrap(), "-o", "json"]);
    assert_eq!(files.code, 79, "{}", files.stderr);
    assert_eq!(about(findings(&files.stdout, "files"), &ns), ours, "files");

    env.delete_namespaces(&[&ns, &cas]);
}
