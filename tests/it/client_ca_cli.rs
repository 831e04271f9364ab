//! `analyze` on files, on the CA certificates Gateways verify client certificates with (issue
//! 23's two certificate gaps): a server or listener istiod has no CA certificate for (MD0422:
//! the Secret it reads has no `cacert` or `ca.crt` with a value, or, for a Gateway API
//! listener made `OPTIONAL_MUTUAL` by the option, istiod refuses to send it), and the Gateway
//! API's `spec.tls.frontend` validation (`caCertificateRefs`, ConfigMaps and Secrets), whose
//! refused references are MD0423 and whose CA certificates are judged for their dates
//! (MD0410/MD0411). Each with its twin that is said nothing. What the gateway really does in
//! each case is proven on the real node (tests/it/e2e_real_gateway_certs.rs).
//!
//! The certificates are made here with rcgen (test data, no licence question).

use crate::offline::run;

/// A self-signed CA certificate `CN=<name>` valid from 2020-01-01 until `until` (PEM).
fn ca(name: &str, until: i32) -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(until, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

/// A server certificate and its key (PEM), valid until 2126.
fn pair(host: &str) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec![host.to_string()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2126, 1, 1);
    let key = rcgen::KeyPair::generate().unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

fn block(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// A Secret or ConfigMap `kind` with `(key, value)` in `stringData`/`data`.
fn object(kind: &str, ns: &str, name: &str, data: &[(&str, &str)]) -> String {
    let field = if kind == "Secret" {
        "stringData"
    } else {
        "data"
    };
    let mut text = format!(
        "---\napiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {ns}\n{field}:\n"
    );
    for (key, value) in data {
        if value.is_empty() {
            text.push_str(&format!("  {key}: \"\"\n"));
        } else {
            text.push_str(&format!("  {key}: |\n{}", block(value)));
        }
    }
    text
}

fn istio_gateway(name: &str, mode: &str) -> String {
    format!(
        "---\napiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  selector:\n    istio: ingressgateway\n  servers:\n  - port:\n      number: 443\n      name: https-{name}\n      protocol: HTTPS\n    tls:\n      mode: {mode}\n      credentialName: {name}-cert\n    hosts:\n    - {name}.example.com\n"
    )
}

fn lines_with(stdout: &str, code: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.contains(&format!("[{code}]")))
        .map(str::to_string)
        .collect()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}"))
        + 1
}

fn analyze(text: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client-ca.yaml");
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap().to_string();
    let (stdout, stderr, code) = run(&["analyze", "-f", &file]);
    assert_eq!(code, 79, "{stdout}\n{stderr}");
    (stdout, file)
}

#[test]
fn an_istio_gateway_server_without_a_ca_certificate_is_md0422_in_istios_words() {
    let (cert, key) = pair("shop.example.com");
    let clients = ca("clients CA", 2126);
    let tls = [("tls.crt", cert.as_str()), ("tls.key", key.as_str())];
    let with_ca = [tls[0], tls[1], ("ca.crt", clients.as_str())];
    let mut text = String::from(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: istio-ingressgateway-1\n  namespace: istio-system\n  labels:\n    istio: ingressgateway\nspec:\n  containers:\n  - name: istio-proxy\n    image: docker.io/istio/proxyv2:1.30.0\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: istio-ingressgateway\n  namespace: istio-system\nspec:\n  selector:\n    istio: ingressgateway\n  ports:\n  - name: https\n    port: 443\n",
    );
    // The -cacert Secret exists without a CA key: istiod does not fall back to the valid
    // ca.crt of the credential's own Secret.
    text.push_str(&object("Secret", "istio-system", "nokey-cert", &with_ca));
    text.push_str(&object(
        "Secret",
        "istio-system",
        "nokey-cert-cacert",
        &[("foo", "bar")],
    ));
    text.push_str(&istio_gateway("nokey", "MUTUAL"));
    // Its cacert key is there, but empty.
    text.push_str(&object("Secret", "istio-system", "empty-cert", &with_ca));
    text.push_str(&object(
        "Secret",
        "istio-system",
        "empty-cert-cacert",
        &[("cacert", "")],
    ));
    text.push_str(&istio_gateway("empty", "MUTUAL"));
    // Its cacert is no PEM: istiod sends it, the gateway rejects it.
    text.push_str(&object("Secret", "istio-system", "notpem-cert", &with_ca));
    text.push_str(&object(
        "Secret",
        "istio-system",
        "notpem-cert-cacert",
        &[("cacert", "not a certificate")],
    ));
    text.push_str(&istio_gateway("notpem", "MUTUAL"));
    // No -cacert Secret, and the credential's own has no CA certificate.
    text.push_str(&object("Secret", "istio-system", "noca-cert", &tls));
    text.push_str(&istio_gateway("noca", "OPTIONAL_MUTUAL"));
    // The twins: the CA in the credential's own Secret, a valid -cacert one, SIMPLE.
    text.push_str(&object("Secret", "istio-system", "good-cert", &with_ca));
    text.push_str(&istio_gateway("good", "MUTUAL"));
    text.push_str(&object("Secret", "istio-system", "split-cert", &tls));
    text.push_str(&object(
        "Secret",
        "istio-system",
        "split-cert-cacert",
        &[("cacert", clients.as_str())],
    ));
    text.push_str(&istio_gateway("split", "OPTIONAL_MUTUAL"));
    text.push_str(&object("Secret", "istio-system", "simple-cert", &tls));
    text.push_str(&istio_gateway("simple", "SIMPLE"));

    let (stdout, file) = analyze(&text);
    let at = |name: &str| {
        let line = line_of(&text, &format!("credentialName: {name}-cert"));
        format!("(Gateway shop/{name} {file}:{line})")
    };
    let effect = "The gateway resets every TLS handshake for it before it sends a certificate, with or without a client certificate (the other servers and listeners of the port still answer).";
    let want = [
        format!(
            "Error [MD0422] {} Server 0 (port 443, tls.mode MUTUAL, credentialName empty-cert) of Gateway shop/empty verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod reads it from Secret istio-system/empty-cert-cacert, which exists (so the credential's own Secret is not looked at), and Istio finds none there: found key \"cacert\", but it was empty (istiod logs \"failed to fetch ca certificate for kubernetes://empty-cert-cacert: found key \"cacert\", but it was empty\"). {effect} Put the clients' CA certificate (PEM) under the key cacert (or ca.crt) of Secret istio-system/empty-cert-cacert, or delete that Secret if the credential's own Secret holds it under ca.crt.",
            at("empty")
        ),
        format!(
            "Error [MD0422] {} Server 0 (port 443, tls.mode OPTIONAL_MUTUAL, credentialName noca-cert) of Gateway shop/noca verifies client certificates, but the gateway gets no CA certificate to verify them with: there is no Secret istio-system/noca-cert-cacert, so istiod reads it from the credential's own Secret istio-system/noca-cert, and Istio finds none there: found secret, but didn't have expected keys cacert or ca.crt; found: tls.crt, tls.key (istiod logs \"failed to fetch ca certificate for kubernetes://noca-cert-cacert: found secret, but didn't have expected keys cacert or ca.crt; found: tls.crt, tls.key\"). {effect} Put the clients' CA certificate (PEM) under the key ca.crt of Secret istio-system/noca-cert, or under cacert in a Secret istio-system/noca-cert-cacert.",
            at("noca")
        ),
        format!(
            "Error [MD0422] {} Server 0 (port 443, tls.mode MUTUAL, credentialName nokey-cert) of Gateway shop/nokey verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod reads it from Secret istio-system/nokey-cert-cacert, which exists (so the credential's own Secret is not looked at), and Istio finds none there: found secret, but didn't have expected keys cacert or ca.crt; found: foo (istiod logs \"failed to fetch ca certificate for kubernetes://nokey-cert-cacert: found secret, but didn't have expected keys cacert or ca.crt; found: foo\"). {effect} Put the clients' CA certificate (PEM) under the key cacert (or ca.crt) of Secret istio-system/nokey-cert-cacert, or delete that Secret if the credential's own Secret holds it under ca.crt.",
            at("nokey")
        ),
        format!(
            "Error [MD0422] {} Server 0 (port 443, tls.mode MUTUAL, credentialName notpem-cert) of Gateway shop/notpem verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod reads it from Secret istio-system/notpem-cert-cacert, which exists (so the credential's own Secret is not looked at), and its cacert holds no PEM certificate: istiod sends it all the same (istiod logs \"invalid certificates: istio-system/notpem-cert-cacert \"kubernetes://notpem-cert-cacert\": pem decode failed\" and the gateway rejects it: \"Failed to load trusted CA certificates\"). {effect} Put the clients' CA certificate (PEM) under the key cacert (or ca.crt) of Secret istio-system/notpem-cert-cacert, or delete that Secret if the credential's own Secret holds it under ca.crt.",
            at("notpem")
        ),
    ];
    let mut got = lines_with(&stdout, "MD0422");
    got.sort();
    assert_eq!(got, want, "{stdout}");
    // Nothing else: the twins are quiet, and istioctl's IST0161 judges the key pair only.
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" [")).count(),
        4,
        "{stdout}"
    );
}

/// A Gateway API Gateway `name` of class istio in `edge`, with `tls` (YAML under `spec.tls`,
/// indented) and one listener per (name, port, options) naming `valid-cert`.
fn gateway_api(name: &str, tls: &str, listeners: &[(&str, u32, &str)]) -> String {
    let mut text = format!(
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n  namespace: edge\nspec:\n  gatewayClassName: istio\n{tls}  listeners:\n"
    );
    for (listener, port, options) in listeners {
        text.push_str(&format!(
            "  - name: {listener}\n    port: {port}\n    protocol: HTTPS\n    hostname: {listener}.example.com\n    tls:\n{options}      certificateRefs:\n      - {{name: {listener}-cert}}\n"
        ));
    }
    text
}

fn per_port(port: u32, refs: &str, mode: &str) -> String {
    format!(
        "      - port: {port}\n        tls:\n          validation:\n{mode}            caCertificateRefs: {refs}\n"
    )
}

#[test]
fn gateway_api_client_cas_are_read_where_istio_reads_them() {
    let (cert, key) = pair("edge.example.com");
    let clients = ca("clients CA", 2126);
    let expired = ca("expired CA", 2022);
    let tls = [("tls.crt", cert.as_str()), ("tls.key", key.as_str())];
    let insecure = "            mode: AllowInsecureFallback\n";
    let mut frontend = String::from(
        "  tls:\n    frontend:\n      default:\n        validation:\n          caCertificateRefs: [{group: \"\", kind: ConfigMap, name: clients-ca}]\n      perPort:\n",
    );
    for (port, refs, mode) in [
        (
            8443,
            "[{group: \"\", kind: ConfigMap, name: no-such-ca}]",
            "",
        ),
        (9443, "[{group: \"\", kind: Secret, name: ca-secret}]", ""),
        (
            10443,
            "[{group: \"\", kind: ConfigMap, name: clients-ca}, {group: \"\", kind: ConfigMap, name: expired-ca}]",
            "",
        ),
        (
            11443,
            "[{group: \"\", kind: Service, name: clients-ca}]",
            "",
        ),
        (
            12443,
            "[{group: \"\", kind: ConfigMap, name: clients-ca, namespace: shop}]",
            "",
        ),
        (
            13443,
            "[{group: \"\", kind: ConfigMap, name: notpem-ca}]",
            "",
        ),
        (
            14443,
            "[{group: \"\", kind: ConfigMap, name: expired-ca}]",
            "",
        ),
        (15443, "[{group: \"\", kind: Secret, name: ca-nokey}]", ""),
        (
            16443,
            "[{group: \"\", kind: ConfigMap, name: expired-ca}]",
            insecure,
        ),
        (
            17443,
            "[{group: \"\", kind: ConfigMap, name: empty-ca}]",
            "",
        ),
        (
            18443,
            "[{group: \"\", kind: ConfigMap, name: clients-ca, namespace: granted}]",
            "",
        ),
    ] {
        frontend.push_str(&per_port(port, refs, mode));
    }
    let listeners = [
        ("default", 443, ""),
        ("missing", 8443, ""),
        ("secret", 9443, ""),
        ("two", 10443, ""),
        ("service", 11443, ""),
        ("elsewhere", 12443, ""),
        ("notpem", 13443, ""),
        ("expired", 14443, ""),
        ("nokey", 15443, ""),
        ("insecure", 16443, ""),
        ("empty", 17443, ""),
        ("granted", 18443, ""),
    ];
    let mut text = gateway_api("front", &frontend, &listeners);
    for (name, _, _) in listeners {
        text.push_str(&object("Secret", "edge", &format!("{name}-cert"), &tls));
    }
    let mutual = "      options:\n        gateway.istio.io/tls-terminate-mode: MUTUAL\n";
    // The MUTUAL option, without spec.tls.frontend: <first ref>-cacert, else the first Secret.
    text.push_str(&gateway_api(
        "edge",
        "",
        &[
            ("opt-nokey", 443, mutual),
            ("opt-noca", 443, mutual),
            ("opt-good", 443, mutual),
        ],
    ));
    text.push_str(&object("Secret", "edge", "opt-nokey-cert", &tls));
    text.push_str(&object(
        "Secret",
        "edge",
        "opt-nokey-cert-cacert",
        &[("foo", "bar")],
    ));
    text.push_str(&object("Secret", "edge", "opt-noca-cert", &tls));
    text.push_str(&object(
        "Secret",
        "edge",
        "opt-good-cert",
        &[tls[0], tls[1], ("ca.crt", clients.as_str())],
    ));
    let ca_crt = [("ca.crt", clients.as_str())];
    text.push_str(&object("ConfigMap", "edge", "clients-ca", &ca_crt));
    text.push_str(&object("ConfigMap", "shop", "clients-ca", &ca_crt));
    text.push_str(&object("ConfigMap", "granted", "clients-ca", &ca_crt));
    text.push_str(
        "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant\nmetadata:\n  name: edge-ca\n  namespace: granted\nspec:\n  from:\n  - {group: gateway.networking.k8s.io, kind: Gateway, namespace: edge}\n  to:\n  - {group: \"\", kind: ConfigMap}\n",
    );
    text.push_str(&object(
        "ConfigMap",
        "edge",
        "expired-ca",
        &[("ca.crt", expired.as_str())],
    ));
    text.push_str(&object(
        "ConfigMap",
        "edge",
        "notpem-ca",
        &[("ca.crt", "not a certificate")],
    ));
    text.push_str(&object("ConfigMap", "edge", "empty-ca", &[("ca.crt", "")]));
    // A Secret caCertificateRef whose -cacert Secret exists: istiod sends that one's CA.
    text.push_str(&object("Secret", "edge", "ca-secret", &ca_crt));
    text.push_str(&object(
        "Secret",
        "edge",
        "ca-secret-cacert",
        &[("cacert", expired.as_str())],
    ));
    text.push_str(&object("Secret", "edge", "ca-nokey", &ca_crt));
    text.push_str(&object(
        "Secret",
        "edge",
        "ca-nokey-cacert",
        &[("foo", "bar")],
    ));

    let (stdout, file) = analyze(&text);
    let refused = |listener: &str, field: &str, why: &str, reason: &str, port: u32| {
        format!(
            "Listener \"{listener}\" of Gateway edge/front verifies client certificates with the CA of {field}, which Istio refuses: {why}. Istio sets the listener's conditions Accepted=False (reason NoValidCACertificate), ResolvedRefs=False (reason {reason}) and Programmed=False (\"Bad TLS configuration\") and the gateway gets no listener for it: TLS clients of port {port} have their connections refused when no other listener of the Gateway serves that port."
        )
    };
    let field = |port: u32| {
        format!("spec.tls.frontend.perPort[port {port}].tls.validation.caCertificateRefs")
    };
    let mut want = vec![
        refused(
            "missing",
            &field(8443),
            "invalid CA certificate reference /ConfigMap/no-such-ca., configmap edge/no-such-ca not found",
            "InvalidCACertificateRef",
            8443,
        ),
        refused(
            "two",
            &field(10443),
            "only one caCertificateRef is supported",
            "InvalidCACertificateRef",
            10443,
        ),
        refused(
            "service",
            &field(11443),
            "invalid CA certificate reference /Service/clients-ca., only secret and configmap are allowed",
            "InvalidCACertificateKind",
            11443,
        ),
        refused(
            "elsewhere",
            &field(12443),
            "caCertificateRef shop/clients-ca not accessible to a Gateway in namespace \"edge\" (missing a ReferenceGrant?)",
            "RefNotPermitted",
            12443,
        ),
        refused(
            "notpem",
            &field(13443),
            "invalid CA certificate reference /ConfigMap/notpem-ca., the bundle is malformed",
            "InvalidCACertificateRef",
            13443,
        ),
        refused(
            "empty",
            &field(17443),
            "invalid CA certificate reference /ConfigMap/empty-ca., found key \"ca.crt\", but it was empty",
            "InvalidCACertificateRef",
            17443,
        ),
    ];
    want.sort();
    let mut got: Vec<String> = lines_with(&stdout, "MD0423")
        .iter()
        .map(|l| {
            let text = l.split_once(") ").unwrap().1;
            text.split_once(" Fix the reference:")
                .unwrap()
                .0
                .to_string()
        })
        .collect();
    got.sort();
    assert_eq!(got, want, "{stdout}");
    // On the perPort entry's caCertificateRefs.
    let missing = lines_with(&stdout, "MD0423")
        .into_iter()
        .find(|l| l.contains("\"missing\""))
        .unwrap();
    let entry = line_of(&text, "name: no-such-ca");
    assert!(
        missing.starts_with(&format!(
            "Error [MD0423] (Gateway edge/front {file}:{entry})"
        )),
        "{missing}"
    );

    let md0422 = lines_with(&stdout, "MD0422");
    let said = |listener: &str, part: &str| {
        assert!(
            md0422
                .iter()
                .any(|l| l.contains(&format!("Listener \"{listener}\"")) && l.contains(part)),
            "{listener}: {part}: {md0422:#?}"
        );
    };
    said(
        "nokey",
        "(port 15443, spec.tls.frontend validation) of Gateway edge/front verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod reads it from Secret edge/ca-nokey-cacert, which exists (so the Secret caCertificateRefs names is not looked at), and Istio finds none there: found secret, but didn't have expected keys cacert or ca.crt; found: foo (istiod logs \"failed to fetch ca certificate for kubernetes-gateway://edge/ca-nokey-cacert:",
    );
    said(
        "opt-nokey",
        "(port 443, option gateway.istio.io/tls-terminate-mode MUTUAL) of Gateway edge/edge verifies client certificates, but the gateway gets no CA certificate to verify them with: istiod reads it from Secret edge/opt-nokey-cert-cacert, which exists (so the credential's own Secret is not looked at)",
    );
    said(
        "opt-noca",
        "there is no Secret edge/opt-noca-cert-cacert, so istiod reads it from the credential's own Secret edge/opt-noca-cert, and Istio finds none there: found secret, but didn't have expected keys cacert or ca.crt; found: tls.crt, tls.key",
    );
    assert_eq!(md0422.len(), 3, "{md0422:#?}");

    // The CA certificates istiod sends are judged: the expired ConfigMap's, and for the Secret
    // reference the one of its -cacert Secret (not its own valid ca.crt); not the expired CA
    // of an AllowInsecureFallback listener, which accepts any client certificate.
    let mut expired_lines = lines_with(&stdout, "MD0411");
    expired_lines.sort();
    let date = "expired on 2022-01-01 00:00 UTC: the Gateway refuses the client certificates of its MUTUAL servers (the handshake ends with the TLS alert \"certificate expired\").";
    let mut want = vec![
        format!(
            "Error [MD0411] (Gateway edge/front {file}:{}) The certificate \"CN=expired CA\" in ca.crt of ConfigMap edge/expired-ca, the client CA of Gateway edge/front, {date} Put a renewed CA certificate into the ConfigMap.",
            line_of(&text, "- port: 14443") + 3
        ),
        format!(
            "Error [MD0411] (Gateway edge/front {file}:{}) The certificate \"CN=expired CA\" in cacert of Secret edge/ca-secret-cacert, the credential of Gateway edge/front, {date} Put a renewed CA certificate into the Secret.",
            line_of(&text, "name: ca-secret}")
        ),
    ];
    want.sort();
    assert_eq!(expired_lines, want, "{stdout}");
    // The twins: the default ConfigMap, the granted one of another namespace, the MUTUAL
    // option with the CA in the credential's own Secret, the insecure fallback.
    for quiet in [
        "\"default\"",
        "\"granted\"",
        "\"opt-good\"",
        "\"insecure\"",
        "\"secret\"",
    ] {
        assert!(!stdout.contains(quiet), "{quiet}: {stdout}");
    }
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" [")).count(),
        6 + 3 + 2,
        "{stdout}"
    );
}
