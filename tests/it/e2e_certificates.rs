//! Gateway certificates on the test cluster (issue 23, finding 8): a namespace with a gateway
//! pod and three Gateways whose Secrets hold an expired chain, a chain that expires in 10 days
//! (made here with rcgen) and one valid until 2126. Live, mesh-doctor gets each Secret by name
//! and gives istioctl's IST0161 (the same findings as `istioctl analyze`), MD0411 and MD0410
//! with the dates, the same findings as the same manifests given as files, and never prints the
//! private key. A user whom the shipped role's `get secrets` is taken from gets both Gateway
//! analyzers skipped and said, and an incomplete run (exit 69), never a pass.

use crate::common;

use common::differential::{Found, findings, istioctl_analyze};
use common::{TestEnv, testenv, unique};

const EXPIRED: &str = include_str!("../fixtures/certificates/shop-expired-2020-02-01.crt");
const VALID: &str = include_str!("../fixtures/certificates/shop-valid-until-2126.crt");

/// A self-signed certificate valid for 10 more days, and its (real) private key.
fn soon() -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec!["soon.example.com".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "soon.example.com");
    let now = jiff::Timestamp::now();
    let end = (now + jiff::SignedDuration::from_hours(10 * 24))
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(
        end.year().into(),
        end.month().try_into().unwrap(),
        end.day().try_into().unwrap(),
    );
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn block(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn manifests(ns: &str, soon_cert: &str, soon_key: &str) -> String {
    let mut text = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: gateway\n  namespace: {ns}\n  labels:\n    gw: {ns}\n\
         spec:\n  nodeName: kwok-node-0\n  containers:\n  - name: istio-proxy\n    image: docker.io/istio/proxyv2:1.30.0\n---\n\
         apiVersion: v1\nkind: Service\nmetadata:\n  name: gateway\n  namespace: {ns}\n\
         spec:\n  selector:\n    gw: {ns}\n  ports:\n  - name: https\n    port: 443\n"
    );
    for (name, cert, key) in [
        (
            "expired",
            EXPIRED,
            "not a key: mesh-doctor never reads it\n",
        ),
        ("soon", soon_cert, soon_key),
        ("valid", VALID, "not a key: mesh-doctor never reads it\n"),
    ] {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}-cert\n  namespace: {ns}\n\
             type: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}---\n\
             apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n  namespace: {ns}\n\
             spec:\n  selector:\n    gw: {ns}\n  servers:\n  - port:\n      number: 443\n      name: https\n      protocol: HTTPS\n\
             \x20   tls:\n      mode: SIMPLE\n      credentialName: {name}-cert\n    hosts:\n    - {name}.example.com\n",
            block(cert),
            block(key),
        ));
    }
    text
}

/// The findings of the certificate codes about the namespace's objects.
fn about(found: Found, ns: &str) -> Found {
    found
        .into_iter()
        .filter(|(code, origin, _)| {
            ["IST0161", "MD0410", "MD0411"].contains(&code.as_str())
                && origin.contains(&format!(" {ns}/"))
        })
        .collect()
}

fn bind(env: &TestEnv, role: &str, user: &str) {
    env.apply(&format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {user}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}\n\
         subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {user}}}]\n"
    ));
}

/// Applies the scenario in a new namespace: (namespace, manifests, the soon-expiring key).
fn scenario(env: &TestEnv) -> (String, String, String) {
    let ns = unique("cert");
    let (soon_cert, soon_key) = soon();
    let text = manifests(&ns, &soon_cert, &soon_key);
    env.apply(&text);
    env.wait_for_phase(&ns, "gateway", "Running");
    (ns, text, soon_key)
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs and istioctl: scripts/test-all.sh"]
fn gateway_credentials_live_equal_istioctl() {
    let env = testenv();
    let (ns, _, _) = scenario(&env);
    let run = env.mesh_doctor(&["analyze", "-n", &ns, "--no-probe", "-o", "json"]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    let ist: Found = about(findings(&run.stdout, "mesh-doctor live"), &ns)
        .into_iter()
        .filter(|(c, ..)| c == "IST0161")
        .collect();
    assert_eq!(ist.len(), 1, "{ist:#?}");
    assert_eq!(
        ist,
        about(istioctl_analyze(&env, &["-n", &ns]), &ns),
        "istioctl"
    );
}

#[test]
#[ignore = "needs the test cluster with Istio's CRDs: scripts/test-all.sh"]
fn gateway_certificates_live_equal_files_and_need_get_secrets() {
    let env = testenv();
    let (ns, text, soon_key) = scenario(&env);

    // The shipped role: its `get secrets` reads the three Secrets by name.
    env.apply(&std::fs::read_to_string("docs/rbac.yaml").unwrap());
    let reader = format!("{ns}-reader");
    bind(&env, "mesh-doctor-readonly", &reader);
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &reader,
        "-o",
        "json",
        "-v",
        "-v",
    ]);
    assert_eq!(run.code, 79, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("cannot list"), "{}", run.stderr);
    let ours = about(findings(&run.stdout, "mesh-doctor live"), &ns);
    let codes: Vec<(&str, &str)> = ours
        .iter()
        .map(|(c, o, _)| (c.as_str(), o.as_str()))
        .collect();
    let expired = format!("Gateway {ns}/expired");
    let soon = format!("Gateway {ns}/soon");
    assert_eq!(
        codes,
        [
            ("IST0161", expired.as_str()),
            ("MD0410", soon.as_str()),
            ("MD0411", expired.as_str()),
        ],
        "{ours:#?}"
    );
    assert!(
        ours.iter()
            .any(|(c, _, m)| c == "MD0411" && m.contains("expired on 2020-02-01 00:00 UTC")),
        "{ours:#?}"
    );
    // The private key is neither printed nor logged.
    for line in soon_key.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!run.stdout.contains(line) && !run.stderr.contains(line));
    }

    // The same manifests as files give the same findings.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("certs.yaml");
    std::fs::write(&file, &text).unwrap();
    let run = env.mesh_doctor(&[
        "analyze",
        "--use-kube=false",
        "-f",
        file.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(run.code, 79, "{}", run.stderr);
    assert_eq!(about(findings(&run.stdout, "files"), &ns), ours, "files");

    // Without `get secrets`: both Gateway analyzers are skipped and said, the run is
    // incomplete, and nothing is said about the certificates it could not read.
    let role = std::fs::read_to_string("docs/rbac.yaml")
        .unwrap()
        .replace("name: mesh-doctor-readonly", &format!("name: {ns}-role"))
        .replace(
            "- apiGroups: [\"\"]\n  resources: [secrets]\n  verbs: [get]\n",
            "",
        );
    assert!(!role.contains("[secrets]"), "the rule was not removed");
    env.apply(&role);
    let user = format!("{ns}-user");
    bind(&env, &format!("{ns}-role"), &user);
    let run = env.mesh_doctor(&[
        "analyze",
        "-n",
        &ns,
        "--no-probe",
        "--as",
        &user,
        "--suppress",
        "IST0139=*",
    ]);
    assert_eq!(run.code, 69, "{}\n{}", run.stdout, run.stderr);
    for analyzer in ["gateway.SecretAnalyzer", "gateway-certificates"] {
        assert!(
            run.stderr.contains(&format!(
                "skipped {analyzer}: it needs secrets, which could not be listed"
            )),
            "{analyzer}: {}",
            run.stderr
        );
    }
    for code in ["IST0161", "MD0410", "MD0411"] {
        assert!(!run.stdout.contains(code), "{code}: {}", run.stdout);
    }
}
