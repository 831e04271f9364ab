//! `analyze` on the certificates of Gateways' credentials and of the mesh's root (issue 23,
//! finding 8), as a user runs it on files: Istio's IST0161 for a chain istiod refuses, MD0411
//! for an expired certificate, MD0410 for one that expires within 30 days, each with its date;
//! a private key never appears in anything mesh-doctor prints.
//!
//! The expired and far-future certificates are fixtures made by openssl
//! (tests/fixtures/certificates/README.md); those that expire soon are made here, at test
//! time, with rcgen, so that they stay "soon".

use std::time::Duration;

use crate::offline;
use offline::run;

const GATEWAYS: &str = "tests/fixtures/certificates/gateways.yaml";
const ROOT: &str = "tests/fixtures/certificates/mesh-root.yaml";

fn lines_with(stdout: &str, code: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.contains(&format!("[{code}]")))
        .map(str::to_string)
        .collect()
}

#[test]
fn an_expired_gateway_certificate_is_istios_ist0161_and_md0411_with_its_date() {
    let (stdout, stderr, code) = run(&["analyze", "-f", GATEWAYS]);
    assert_eq!(code, 79, "{stderr}");
    assert_eq!(
        lines_with(&stdout, "IST0161"),
        [format!(
            "Error [IST0161] (Gateway shop/shop {GATEWAYS}:54) The credential referenced by the Gateway shop in namespace istio-system is invalid, which can cause the traffic not to work as expected."
        )],
        "{stdout}"
    );
    let expired = lines_with(&stdout, "MD0411");
    assert_eq!(
        expired,
        [
            format!(
                "Error [MD0411] (Gateway shop/partner {GATEWAYS}:116) The certificate \"O=cluster.local\" in ca.crt of Secret istio-system/partner-cert, the credential of Gateway shop/partner, expired on 2025-01-01 00:00 UTC: the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\"). Put a renewed CA certificate into the Secret."
            ),
            format!(
                "Error [MD0411] (Gateway shop/shop {GATEWAYS}:54) The certificate \"CN=shop.example.com\" in tls.crt of Secret istio-system/shop-cert, the credential of Gateway shop/shop, expired on 2020-02-01 00:00 UTC: its clients refuse the Gateway's TLS handshake (curl: \"SSL certificate problem: certificate has expired\"; istiod still sends it and logs \"invalid certificates\"). Put a renewed certificate into the Secret (the gateway picks it up without a restart)."
            ),
            // The CA certificate of a MUTUAL server comes from "<credentialName>-cacert" when
            // that Secret exists (the valid ca.crt of vendor-cert is not the one istiod uses).
            format!(
                "Error [MD0411] (Gateway shop/vendor {GATEWAYS}:157) The certificate \"O=cluster.local\" in cacert of Secret istio-system/vendor-cert-cacert, the credential of Gateway shop/vendor, expired on 2025-01-01 00:00 UTC: the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\"). Put a renewed CA certificate into the Secret."
            ),
        ],
        "{stdout}"
    );
    // The negative twins: the Gateway whose certificate is valid until 2126 is not named, nor
    // the OPTIONAL_MUTUAL one whose own ca.crt expired but whose "-cacert" Secret is valid.
    assert!(!stdout.contains("shop-renewed"), "{stdout}");
    assert!(!stdout.contains("supplier"), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" [")).count(),
        4,
        "{stdout}"
    );
}

#[test]
fn an_expired_mesh_root_is_said_once_for_all_its_copies() {
    let (stdout, stderr, code) = run(&["analyze", "-f", ROOT, "-o", "json"]);
    assert_eq!(code, 79, "{stderr}");
    let items: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(items.len(), 1, "{stdout}");
    assert_eq!(items[0]["code"], "MD0411");
    assert_eq!(items[0]["level"], "Error");
    assert_eq!(
        items[0]["origin"],
        "ConfigMap istio-system/istio-ca-root-cert"
    );
    assert_eq!(items[0]["reference"], format!("{ROOT}:10"));
    let message = items[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("The certificate \"O=cluster.local\" in root-cert.pem of ConfigMap istio-system/istio-ca-root-cert, the mesh's root, expired on 2025-01-01 00:00 UTC: "),
        "{message}"
    );
}

/// A self-signed certificate for `name`, valid until `days` from today at noon (UTC), and its
/// private key, both PEM.
fn certificate(name: &str, days: i64) -> (String, String, String) {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let end = today.checked_add(jiff::Span::new().days(days)).unwrap();
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(
        end.year().into(),
        end.month().try_into().unwrap(),
        end.day().try_into().unwrap(),
    ) + Duration::from_secs(12 * 3600);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem(), end.to_string())
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn indented(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// A Gateway named `name` whose Secret holds `cert` and a real private key `key`, the ingress
/// pod and Service it selects, and the mesh root `root`.
fn manifests(gateways: &[(&str, &str, &str)], root: &str) -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: istio-ingressgateway-1\n  namespace: istio-system\n  labels:\n    istio: ingressgateway\nspec:\n  containers:\n  - name: istio-proxy\n    image: docker.io/istio/proxyv2:1.30.0\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: istio-ingressgateway\n  namespace: istio-system\nspec:\n  selector:\n    istio: ingressgateway\n  ports:\n  - name: https\n    port: 443\n",
    );
    for (i, (name, cert, key)) in gateways.iter().enumerate() {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}-cert\n  namespace: istio-system\ntype: kubernetes.io/tls\ndata:\n  tls.crt: {}\n  tls.key: {}\n---\napiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  selector:\n    istio: ingressgateway\n  servers:\n  - port:\n      number: 443\n      name: https-{i}\n      protocol: HTTPS\n    tls:\n      mode: SIMPLE\n      credentialName: {name}-cert\n    hosts:\n    - {name}.example.com\n",
            base64(cert.as_bytes()),
            base64(key.as_bytes()),
        ));
    }
    text.push_str(&format!(
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: istio-ca-root-cert\n  namespace: istio-system\ndata:\n  root-cert.pem: |\n{}",
        indented(root)
    ));
    text
}

#[test]
fn certificates_that_expire_within_30_days_are_warnings_with_their_date() {
    let (soon, soon_key, soon_date) = certificate("soon.example.com", 10);
    let (later, later_key, _) = certificate("later.example.com", 40);
    let (root, _, root_date) = certificate("root.example.com", 20);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("soon.yaml");
    std::fs::write(
        &path,
        manifests(
            &[("soon", &soon, &soon_key), ("later", &later, &later_key)],
            &root,
        ),
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let (stdout, stderr, code) = run(&["analyze", "-f", file]);
    assert_eq!(code, 79, "{stderr}");
    let warnings = lines_with(&stdout, "MD0410");
    assert_eq!(warnings.len(), 2, "{stdout}");
    let root_line = &warnings[0];
    assert!(
        root_line.starts_with(&format!(
            "Warning [MD0410] (ConfigMap istio-system/istio-ca-root-cert {file}:"
        )) && root_line.contains(&format!(
            "The certificate \"CN=root.example.com\" in root-cert.pem of ConfigMap istio-system/istio-ca-root-cert, the mesh's root, expires on {root_date} 12:00 UTC, in "
        )) && root_line.contains(" days: from then on sidecars, gateways and ztunnel refuse"),
        "{root_line}"
    );
    let gateway_line = &warnings[1];
    assert!(
        gateway_line.starts_with(&format!("Warning [MD0410] (Gateway shop/soon {file}:"))
            && gateway_line.contains(&format!(
                "The certificate \"CN=soon.example.com\" in tls.crt of Secret istio-system/soon-cert, the credential of Gateway shop/soon, expires on {soon_date} 12:00 UTC, in "
            ))
            && (gateway_line.contains(", in 9 days: ") || gateway_line.contains(", in 10 days: ")),
        "{gateway_line}"
    );
    // 40 days left is not soon; a valid certificate is no IST0161.
    assert!(!stdout.contains("later"), "{stdout}");
    assert!(!stdout.contains("IST0161"), "{stdout}");
    // Warnings only: the run passes with --failure-threshold Error.
    let (_, stderr, code) = run(&["analyze", "-f", file, "--failure-threshold", "Error"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn no_private_key_is_ever_printed() {
    let (soon, soon_key, _) = certificate("soon.example.com", 10);
    let (expired_root, _, _) = certificate("root.example.com", -3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.yaml");
    std::fs::write(
        &path,
        manifests(&[("soon", &soon, &soon_key)], &expired_root),
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let key_lines: Vec<&str> = soon_key
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    assert!(!key_lines.is_empty());
    let encoded = base64(soon_key.as_bytes());
    for output in ["log", "json", "yaml", "sarif"] {
        let (stdout, stderr, code) = run(&["analyze", "-f", file, "-o", output, "-v", "-v"]);
        assert_eq!(code, 79, "{output}: {stderr}");
        for text in [&stdout, &stderr] {
            assert!(!text.contains(&encoded[..40]), "{output}: {text}");
            for line in &key_lines {
                assert!(!text.contains(line), "{output}: {text}");
            }
        }
        assert!(stdout.contains("MD0411"), "{output}: {stdout}");
        assert!(stdout.contains("MD0410"), "{output}: {stdout}");
    }
}

/// A certificate for `name` signed by itself, valid from 2020-01-01 until `until` (y, m, d),
/// with a real private key (Istio's Gateway API conversion checks the pair), both PEM.
fn pair(name: &str, until: (i32, u8, u8)) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(until.0, until.1, until.2);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A Secret's keys and values.
type Data = Vec<(&'static str, String)>;

fn secret(ns: &str, name: &str, data: &[(&str, &str)]) -> String {
    let mut text = format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\ntype: Opaque\ndata:\n"
    );
    for (key, value) in data {
        text.push_str(&format!("  {key}: {}\n", base64(value.as_bytes())));
    }
    text
}

/// A listener on 443 for `<name>.example.com` with `refs` (YAML flow mappings) and options.
fn listener(name: &str, refs: &[&str], options: &str) -> String {
    let mut text = format!(
        "  - name: {name}\n    port: 443\n    protocol: HTTPS\n    hostname: {name}.example.com\n    tls:\n{options}      certificateRefs:\n"
    );
    for r in refs {
        text.push_str(&format!("      - {r}\n"));
    }
    text
}

/// The line (1-based) of the first line of `text` that is `line` once trimmed.
fn line_of(text: &str, line: &str) -> usize {
    text.lines()
        .position(|l| l.trim() == line)
        .unwrap_or_else(|| panic!("no line {line:?}"))
        + 1
}

#[test]
fn gateway_api_certificate_refs_are_judged_as_istio_reads_them() {
    let (expired, expired_key) = pair("expired.example.com", (2021, 1, 1));
    let (valid, valid_key) = pair("valid.example.com", (2126, 1, 1));
    let (ca, _) = pair("clients-ca", (2022, 6, 1));
    let mutual_opt = "      options:\n        gateway.istio.io/tls-terminate-mode: MUTUAL\n";
    let optional_opt =
        "      options:\n        gateway.istio.io/tls-terminate-mode: OPTIONAL_MUTUAL\n";
    let mut text = String::from(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: edge\n  namespace: edge\nspec:\n  gatewayClassName: istio\n  listeners:\n",
    );
    for (name, refs, options) in [
        ("expired", vec!["{name: expired-cert}"], ""),
        ("valid", vec!["{name: valid-cert}"], ""),
        ("missing", vec!["{name: no-such-cert}"], ""),
        ("keyless", vec!["{name: keyless-cert}"], ""),
        ("notpem", vec!["{name: notpem-cert}"], ""),
        ("configmap", vec!["{kind: ConfigMap, name: valid-cert}"], ""),
        ("elsewhere", vec!["{name: shop-cert, namespace: shop}"], ""),
        ("granted", vec!["{name: granted-cert, namespace: shop}"], ""),
        (
            "pair",
            vec!["{name: valid-cert}", "{name: no-such-second}"],
            "",
        ),
        // The refused one first: the listener gets neither (the expired second is not served,
        // so it is no MD0411).
        (
            "swapped",
            vec!["{name: no-such-first}", "{name: expired-cert}"],
            "",
        ),
        ("mutual", vec!["{name: mutual-cert}"], mutual_opt),
        ("optional", vec!["{name: optional-cert}"], optional_opt),
    ] {
        text.push_str(&listener(name, &refs, options));
    }
    let tls =
        |cert: &str, key: &str| vec![("tls.crt", cert.to_string()), ("tls.key", key.to_string())];
    let mut secrets: Vec<(&str, &str, Data)> = vec![
        ("edge", "expired-cert", tls(&expired, &expired_key)),
        ("edge", "valid-cert", tls(&valid, &valid_key)),
        ("edge", "keyless-cert", vec![("ca.crt", valid.clone())]),
        (
            "edge",
            "notpem-cert",
            vec![
                ("tls.crt", "not a certificate\n".to_string()),
                ("tls.key", valid_key.clone()),
            ],
        ),
        ("shop", "shop-cert", tls(&valid, &valid_key)),
        ("shop", "granted-cert", tls(&valid, &valid_key)),
        ("edge", "mutual-cert", tls(&valid, &valid_key)),
        ("edge", "mutual-cert-cacert", vec![("ca.crt", ca.clone())]),
    ];
    // OPTIONAL_MUTUAL by the option: its CA certificate (in its own Secret, no "-cacert" one)
    // is valid, but istiod never sends it (MD0422).
    let mut optional = tls(&valid, &valid_key);
    optional.push(("ca.crt", valid.clone()));
    secrets.push(("edge", "optional-cert", optional));
    for (ns, name, data) in &secrets {
        let data: Vec<(&str, &str)> = data.iter().map(|(k, v)| (*k, v.as_str())).collect();
        text.push_str(&secret(ns, name, &data));
    }
    text.push_str(
        "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata:\n  name: edge-certs\n  namespace: shop\nspec:\n  from:\n  - {group: gateway.networking.k8s.io, kind: Gateway, namespace: edge}\n  to:\n  - {group: \"\", kind: Secret, name: granted-cert}\n",
    );
    // A Gateway of another implementation's class: istiod does not serve it, nothing is said.
    text.push_str(
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: other\n  namespace: edge\nspec:\n  gatewayClassName: example\n  listeners:\n",
    );
    text.push_str(&listener("theirs", &["{name: expired-cert}"], ""));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway-api.yaml");
    std::fs::write(&path, &text).unwrap();
    let file = path.to_str().unwrap();

    let (stdout, stderr, code) = run(&["analyze", "-f", file]);
    assert_eq!(code, 79, "{stderr}");
    let at = |r: &str| {
        format!(
            "(Gateway edge/edge {file}:{})",
            line_of(&text, &format!("- {r}"))
        )
    };
    let not_programmed = |reason: &str| {
        format!(
            "Istio sets the listener's conditions ResolvedRefs=False (reason {reason}) and Programmed=False (\"Bad TLS configuration\") and serves none of its certificates: the gateway resets the TLS handshakes for the listener. Fix the reference or the Secret: it must be a Secret that exists, hold a key pair Istio takes (tls.crt and tls.key, or cert and key) and, in another namespace than the Gateway's, be granted to it by a ReferenceGrant in its own namespace."
        )
    };
    let refused = |listener: &str, r: &str, why: &str, effect: String| {
        format!(
            "Error [MD0421] {} Listener \"{listener}\" of Gateway edge/edge has a certificateRef Istio refuses: {why}. {effect}",
            at(r)
        )
    };
    let mut want = vec![
        refused(
            "missing",
            "{name: no-such-cert}",
            "invalid certificate reference /Secret/no-such-cert., secret edge/no-such-cert not found",
            not_programmed("InvalidCertificateRef"),
        ),
        refused(
            "keyless",
            "{name: keyless-cert}",
            "invalid certificate reference /Secret/keyless-cert., found secret, but didn't have expected keys (cert and key) or (tls.crt and tls.key); found: ca.crt",
            not_programmed("InvalidCertificateRef"),
        ),
        refused(
            "notpem",
            "{name: notpem-cert}",
            "invalid certificate reference /Secret/notpem-cert., the certificate is malformed: tls: failed to find any PEM data in certificate input",
            not_programmed("InvalidCertificateRef"),
        ),
        refused(
            "configmap",
            "{kind: ConfigMap, name: valid-cert}",
            "invalid certificate reference /ConfigMap/valid-cert., only secret is allowed",
            not_programmed("InvalidCertificateRef"),
        ),
        refused(
            "elsewhere",
            "{name: shop-cert, namespace: shop}",
            "certificateRef shop-cert/shop not accessible to a Gateway in namespace \"edge\" (missing a ReferenceGrant?)",
            not_programmed("RefNotPermitted"),
        ),
        refused(
            "pair",
            "{name: no-such-second}",
            "invalid certificate reference /Secret/no-such-second., secret edge/no-such-second not found",
            "Istio takes the listener's other certificate and drops this one without a word (the listener's ResolvedRefs condition stays True): clients that need this certificate (RSA or ECDSA) do not get it. Fix the reference or the Secret: it must be a Secret that exists, hold a key pair Istio takes (tls.crt and tls.key, or cert and key) and, in another namespace than the Gateway's, be granted to it by a ReferenceGrant in its own namespace.".to_string(),
        ),
    ];
    want.push(refused(
        "swapped",
        "{name: no-such-first}",
        "invalid certificate reference /Secret/no-such-first., secret edge/no-such-first not found",
        "Istio leaves the listener's conditions True but, the refused reference being the first, gives the listener no certificate of its Secrets, not even the other one: the gateway serves its own Istio workload certificate (a spiffe:// identity signed by the mesh's CA) for it, which clients do not trust. Fix the reference or the Secret: it must be a Secret that exists, hold a key pair Istio takes (tls.crt and tls.key, or cert and key) and, in another namespace than the Gateway's, be granted to it by a ReferenceGrant in its own namespace.".to_string(),
    ));
    want.sort();
    let mut got = lines_with(&stdout, "MD0421");
    got.sort();
    assert_eq!(got, want, "{stdout}");

    let mut expired_lines = lines_with(&stdout, "MD0411");
    expired_lines.sort();
    let mut want = vec![
        format!(
            "Error [MD0411] {} The certificate \"CN=clients-ca\" in ca.crt of Secret edge/mutual-cert-cacert, the credential of Gateway edge/edge, expired on 2022-06-01 00:00 UTC: the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\"). Put a renewed CA certificate into the Secret.",
            at("{name: mutual-cert}")
        ),
        format!(
            "Error [MD0411] {} The certificate \"CN=expired.example.com\" in tls.crt of Secret edge/expired-cert, the credential of Gateway edge/edge, expired on 2021-01-01 00:00 UTC: its clients refuse the Gateway's TLS handshake (curl: \"SSL certificate problem: certificate has expired\"; istiod still sends it and logs \"invalid certificates\"). Put a renewed certificate into the Secret (the gateway picks it up without a restart).",
            at("{name: expired-cert}")
        ),
    ];
    want.sort();
    assert_eq!(expired_lines, want, "{stdout}");
    // The OPTIONAL_MUTUAL listener (by the option): istiod refuses to send its CA resource,
    // so the gateway resets its handshakes (tests/it/e2e_real_gateway_certs.rs).
    assert_eq!(
        lines_with(&stdout, "MD0422"),
        [format!(
            "Error [MD0422] {} Listener \"optional\" (port 443, option gateway.istio.io/tls-terminate-mode OPTIONAL_MUTUAL) of Gateway edge/edge verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod refuses to send the gateway the CA resource kubernetes-gateway://edge/optional-cert-cacert: for a Gateway API listener it allows that resource only in MUTUAL mode (istiod logs \"proxy <gateway pod> attempted to access unauthorized certificates optional-cert-cacert: cross namespace secret reference requires ReferenceGrant\", though the Secret is in the Gateway's namespace). The gateway resets every TLS handshake for it before it sends a certificate, with or without a client certificate (the other servers and listeners of the port still answer). Name the clients' CA in the Gateway's spec.tls.frontend (default or perPort) validation.caCertificateRefs and keep the option: Istio then sends it and the listener stays OPTIONAL_MUTUAL; or use MUTUAL.",
            at("{name: optional-cert}")
        )],
        "{stdout}"
    );
    // The twins: a valid certificate, a granted Secret of another namespace, the valid one of
    // two, the other class's Gateway: nothing, and no Istio Gateway code for a Gateway API
    // Gateway.
    for quiet in [
        "\"valid\"",
        "\"granted\"",
        "edge/other",
        "IST0161",
        "IST0101",
    ] {
        assert!(!stdout.contains(quiet), "{quiet}: {stdout}");
    }
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" [")).count(),
        10,
        "{stdout}"
    );
}
