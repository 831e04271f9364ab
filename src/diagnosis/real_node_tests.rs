//! Verdicts on pods and Envoy answers captured from the real node (`testenv/node-up.sh` +
//! `node/istio-up.sh`, Kubernetes 1.34 native sidecars, Istio 1.31.0-dev): what a person reading
//! the real pod would say. The captures are in `tests/fixtures/real-node/` (see its README).

use super::tests::{codes_of, good_context};
use super::*;
use crate::envoy::admin::{parse_bootstrap, parse_certs, parse_stats, xds_source};
use crate::envoy::facts::{AdminProbe, LogScan, ProxyLogs};
use crate::envoy::logs::LogSource;

fn real(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/real-node/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn real_pod(name: &str) -> Pod {
    serde_json::from_str(&real(name)).unwrap()
}

#[test]
fn a_missing_proxy_image_is_judged_by_the_blocked_init_container() {
    // `kubectl get pod`: Init:ImagePullBackOff; istio-init waits on the image, istio-proxy
    // (a native sidecar) only shows PodInitializing.
    let pod = real_pod("pod_noimage.json");
    let probe = ProbeResult {
        admin: AdminProbe::skipped("istio-proxy is not running (PodInitializing)"),
        logs: ProxyLogs {
            current: Probed::Skipped("waiting to start: PodInitializing".into()),
            previous: Probed::Skipped("istio-proxy has not restarted".into()),
        },
    };
    let d = diagnose(&pod, &good_context(), Some(&probe));
    assert_eq!(d.verdict.kind, VerdictKind::ImageNotPulled, "{d:#?}");
    assert_eq!(codes_of(&d), ["MD0108"]);
    let said = &d.findings[0].message;
    assert!(said.contains("init container istio-init"), "{said}");
    assert!(
        said.contains("localhost/mesh-doctor/proxyv2:does-not-exist"),
        "{said}"
    );
    assert!(said.contains("ImagePullBackOff"), "{said}");
    assert!(!d.verdict.summary.contains("PodInitializing"));
    assert!(d.evidence.iter().any(|e| {
        e.text
            .contains("init container istio-init: Waiting: ImagePullBackOff")
    }));
    assert_eq!(
        d.next_steps[0].command.as_deref(),
        Some(
            "kubectl -n cap get pod noimage -o jsonpath='{.spec.initContainers[?(@.name==\"istio-init\")].image}'"
        )
    );
    assert!(d.checks.is_empty(), "{:?}", d.checks);
}

fn crash_probe(current_log: bool) -> ProbeResult {
    ProbeResult {
        admin: AdminProbe::skipped("istio-proxy is not running (terminated, exit code 0)"),
        logs: ProxyLogs {
            current: if current_log {
                Probed::Ok(LogScan::of(
                    &real("crash_istio-proxy.log"),
                    LogSource::Current,
                ))
            } else {
                Probed::Skipped("not fetched".into())
            },
            previous: Probed::Error(crate::envoy::facts::ErrorInfo {
                kind: "api".into(),
                message: "previous terminated container \"istio-proxy\" in pod \"crash\" not found"
                    .into(),
            }),
        },
    }
}

#[test]
fn a_native_sidecar_that_exits_0_and_restarts_is_a_bootstrap_crash() {
    // Terminated: Completed (exit code 0), lastState {}, 3 restarts: pilot-agent exits 0
    // when Envoy fails. Envoy's line is in the current log.
    let pod = real_pod("pod_crash.json");
    let d = diagnose(&pod, &good_context(), Some(&crash_probe(true)));
    assert_eq!(d.verdict.kind, VerdictKind::BootstrapCrash, "{d:#?}");
    assert_eq!(codes_of(&d), ["MD0101"]);
    // No `logs --previous`: the kubelet kept no previous run of a native sidecar.
    assert!(
        !d.next_steps.iter().any(|s| s
            .command
            .as_deref()
            .is_some_and(|c| c.contains("--previous"))),
        "{:#?}",
        d.next_steps
    );
    assert!(d.next_steps.iter().any(
        |s| s.command.as_deref() == Some("kubectl -n cap logs crash -c istio-proxy --tail 50")
    ));
    // The unknown cluster is named by a metrics sink of the bootstrapOverride, not by ADS.
    let summary = &d.verdict.summary;
    assert!(
        summary.contains("stats_sinks[0] (a metrics sink, envoy.stat_sinks.metrics_service)"),
        "{summary}"
    );
    assert!(summary.contains("'xds_grpc'"), "{summary}");
    assert!(!summary.contains("ADS"), "{summary}");
    assert!(
        d.next_steps
            .iter()
            .any(|s| s.text.contains("stats_sinks[0]"))
    );
}

#[test]
fn a_restarting_proxy_whose_last_exit_was_0_is_a_crash_loop() {
    // The same pod without a log: still a crash loop of the proxy, never "not started".
    let pod = real_pod("pod_crash.json");
    let d = diagnose(&pod, &good_context(), Some(&crash_probe(false)));
    assert_eq!(d.verdict.kind, VerdictKind::ProxyCrash, "{d:#?}");
    assert!(
        d.verdict
            .title
            .starts_with("crash loop: istio-proxy keeps restarting"),
        "{}",
        d.verdict.title
    );
    assert!(
        d.verdict.summary.contains("pilot-agent exits 0"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(codes_of(&d), ["MD0101"]);
    assert!(!d.next_steps.iter().any(|s| {
        s.command
            .as_deref()
            .is_some_and(|c| c.contains("--previous"))
    }));
}

#[test]
fn a_healthy_real_sidecar_uses_ads_through_pilot_agent_and_sds_certificates() {
    let stats = parse_stats(&real("healthy_stats.json")).unwrap();
    // Istio's stats inclusion list drops control_plane.*: no connected_state at all.
    assert_eq!(stats.connected(), None);
    let bootstrap = parse_bootstrap(&real("healthy_config_dump_bootstrap_mask.json")).unwrap();
    let xds = xds_source(&stats, Some(&bootstrap));
    assert!(!xds.contains("no ADS"), "{xds}");
    assert!(
        xds.contains("ADS via pilot-agent's local xDS proxy to istiod (xds-grpc -> unix:./etc/istio/proxy/XDS)"),
        "{xds}"
    );
    let certs = parse_certs(&real("healthy_certs.json")).unwrap();
    let chain = certs
        .iter()
        .find(|c| c.role == CertRole::Chain)
        .expect("a workload certificate");
    assert_eq!(chain.path, "<inline>");
    assert_eq!(
        chain.source(Some(&bootstrap)),
        "from SDS (pilot-agent, sds-grpc -> unix:./var/run/secrets/workload-spiffe-uds/socket)"
    );
    // A static bootstrap still says so.
    assert_eq!(
        xds_source(&stats, Some(&crate::envoy::admin::BootstrapInfo::default())),
        "no ADS (static configuration)"
    );
}

#[test]
fn while_the_next_run_is_up_previous_works_and_the_current_log_is_offered_too() {
    // The capture as the kubelet shows it for the second or so a restarted native sidecar
    // runs (seen on the real node): state running, lastState.terminated Completed (exit 0).
    let mut v: serde_json::Value = serde_json::from_str(&real("pod_crash.json")).unwrap();
    let statuses = v["status"]["initContainerStatuses"].as_array_mut().unwrap();
    let proxy = statuses
        .iter_mut()
        .find(|s| s["name"] == "istio-proxy")
        .unwrap();
    proxy["lastState"] = proxy["state"].clone();
    proxy["state"] = serde_json::json!({"running": {"startedAt": "2026-12-01T11:14:40Z"}});
    let pod: Pod = serde_json::from_value(v).unwrap();
    let d = diagnose(&pod, &good_context(), Some(&crash_probe(true)));
    assert_eq!(d.verdict.kind, VerdictKind::BootstrapCrash, "{d:#?}");
    let commands: Vec<&str> = d
        .next_steps
        .iter()
        .filter_map(|s| s.command.as_deref())
        .collect();
    assert!(commands.contains(&"kubectl -n cap logs crash -c istio-proxy --previous --tail 50"));
    assert!(commands.contains(&"kubectl -n cap logs crash -c istio-proxy --tail 50"));
}

fn at(pod_context_time: &str) -> PodContext {
    PodContext {
        now: Some(pod_context_time.parse().unwrap()),
        ..good_context()
    }
}

#[test]
fn a_pod_torn_down_11s_after_its_creation_has_ended_it_is_not_starting() {
    // The pod, captured on the real node while it was deleted: phase Failed, app
    // `Error (exit code 137)`, istio-proxy (native) `Completed (exit code 0)`, 11 s old.
    let pod = real_pod("pod_torn_down_failed.json");
    let d = diagnose(&pod, &at("2026-12-01T22:08:57Z"), None);
    assert_eq!(d.verdict.kind, VerdictKind::Ended, "{d:#?}");
    assert_eq!(d.verdict.title, "ended: the pod failed");
    let summary = &d.verdict.summary;
    assert!(
        summary.starts_with(
            "The pod has ended (phase Failed) and is being deleted: app Terminated: Error (exit code 137). Nothing in it runs any more"
        ),
        "{summary}"
    );
    assert!(summary.contains("it is not starting"), "{summary}");
    assert!(!summary.contains("startup grace"), "{summary}");
    assert!(d.findings.is_empty());
    assert!(!d.fails(Level::Warning));
    assert!(
        d.evidence
            .iter()
            .any(|e| e.text == "istio-proxy: Terminated: Completed (exit code 0)")
    );
    assert_eq!(
        d.next_steps[0].command.as_deref(),
        Some("kubectl -n cap logs torn-down -c app")
    );
}

#[test]
fn a_terminating_pod_says_how_much_grace_is_left() {
    // Captured 3 s after `kubectl delete pod` with terminationGracePeriodSeconds 60: both
    // containers still Running, deletionTimestamp 57 s ahead.
    let pod = real_pod("pod_terminating.json");
    let d = diagnose(&pod, &at("2026-12-01T22:08:39Z"), None);
    assert_eq!(d.verdict.kind, VerdictKind::Terminating, "{d:#?}");
    assert_eq!(d.verdict.title, "terminating");
    assert!(
        d.verdict.summary.starts_with(
            "The pod is being deleted: its grace period of 60s has 57s left. Its containers are being stopped, so it is not starting and its sidecar is not judged."
        ),
        "{}",
        d.verdict.summary
    );
    assert!(d.findings.is_empty());
    // Past the grace period, the pod is held by something: said, with what to look at.
    let d = diagnose(&pod, &at("2026-12-01T22:15:36Z"), None);
    assert!(
        d.verdict
            .summary
            .contains("its grace period of 60s ended 6m ago"),
        "{}",
        d.verdict.summary
    );
    assert!(
        d.verdict.summary.contains("waits on its node's kubelet"),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn a_job_whose_app_exited_while_a_classic_sidecar_runs_never_completes() {
    // Job with sidecar.istio.io/nativeSidecar: "false": app `Completed (exit code 0)`,
    // istio-proxy a regular container, Running and ready; `kubectl get pod`: 1/2 NotReady.
    let pod = real_pod("pod_job_classic_running.json");
    let d = diagnose(&pod, &at("2026-12-01T22:08:30Z"), None);
    assert_eq!(d.verdict.kind, VerdictKind::JobHeldBySidecar, "{d:#?}");
    assert_eq!(
        d.verdict.title,
        "never completes: istio-proxy keeps running after the application exited"
    );
    assert!(
        d.verdict
            .summary
            .contains("the pod stays Running and its Job job-classic never completes"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(codes_of(&d), ["MD0110"]);
    assert_eq!(
        d.findings[0].message,
        "Pod cap/job-classic-n7wsb never completes: its application container(s) app (Terminated: Completed (exit code 0)) exited, but istio-proxy, a classic sidecar, keeps running."
    );
    let texts: Vec<&str> = d.next_steps.iter().map(|s| s.text.as_str()).collect();
    assert!(
        texts[0].contains("sidecar.istio.io/nativeSidecar: \"true\""),
        "{texts:?}"
    );
    assert!(
        texts[0].contains("ENABLE_NATIVE_SIDECARS=true"),
        "{texts:?}"
    );
    assert!(texts[0].contains("Kubernetes 1.29 or newer"), "{texts:?}");
    assert!(
        texts[1].contains("http://localhost:15020/quitquitquit"),
        "{texts:?}"
    );
    assert_eq!(
        d.next_steps[2].command.as_deref(),
        Some(
            "kubectl -n cap exec job-classic-n7wsb -c istio-proxy -- pilot-agent request POST /quitquitquit --debug-port 15020"
        )
    );
}

#[test]
fn the_same_job_with_a_native_sidecar_completes() {
    // The kubelet stopped the native istio-proxy once app exited: phase Succeeded.
    let pod = real_pod("pod_job_native_completed.json");
    let d = diagnose(&pod, &at("2026-12-01T22:08:30Z"), None);
    assert_eq!(d.verdict.kind, VerdictKind::Ended, "{d:#?}");
    assert_eq!(d.verdict.title, "completed");
    assert!(
        d.verdict.summary.starts_with(
            "The pod has completed (phase Succeeded): every container exited. Nothing in it runs any more"
        ),
        "{}",
        d.verdict.summary
    );
    assert!(
        d.verdict
            .summary
            .ends_with("its Job job-native decides whether it runs another pod (backoffLimit)."),
        "{}",
        d.verdict.summary
    );
    assert!(d.findings.is_empty());
    // While the kubelet stops the native sidecar (phase still Running), it is completing.
    let mut v: serde_json::Value =
        serde_json::from_str(&real("pod_job_native_completed.json")).unwrap();
    v["status"]["phase"] = "Running".into();
    let proxy = v["status"]["initContainerStatuses"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["name"] == "istio-proxy")
        .unwrap();
    proxy["state"] = serde_json::json!({"running": {"startedAt": "2026-12-01T22:08:08Z"}});
    let pod: Pod = serde_json::from_value(v).unwrap();
    let d = diagnose(&pod, &at("2026-12-01T22:08:12Z"), None);
    assert_eq!(d.verdict.kind, VerdictKind::Completing, "{d:#?}");
    assert!(d.findings.is_empty());
}

#[test]
fn an_evicted_pod_is_evicted() {
    // Not captured: the node cannot be put under memory pressure here. The status is the
    // kubelet's eviction status (phase Failed, reason Evicted, its message).
    let mut v: serde_json::Value = serde_json::from_str(&real("pod_healthy.json")).unwrap();
    v["status"]["phase"] = "Failed".into();
    v["status"]["reason"] = "Evicted".into();
    v["status"]["message"] =
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. ".into();
    let pod: Pod = serde_json::from_value(v).unwrap();
    let d = diagnose(&pod, &good_context(), None);
    assert_eq!(d.verdict.kind, VerdictKind::Evicted, "{d:#?}");
    assert!(
        d.verdict
            .summary
            .starts_with("The kubelet evicted the pod: \"The node was low on resource: memory."),
        "{}",
        d.verdict.summary
    );
    assert!(d.findings.is_empty());
}
