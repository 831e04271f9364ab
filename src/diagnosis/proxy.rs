//! The verdicts of an injected sidecar from its container status, its logs and its admin port:
//! starting, image not pulled, out of memory, bootstrap crash, not started, unreachable,
//! waiting for istiod.

use super::*;
use crate::envoy::admin::XdsStream;
use crate::envoy::logs;
use crate::formats::duration::human_duration;
use crate::kube::init;

impl<'a> Builder<'a> {
    pub(super) fn proxy_status(&self) -> Option<&'a ContainerStatus> {
        sidecar::proxy_status(self.pod)
    }

    /// Log matches of a family, one per signature: the previous log first (a crash-looping
    /// container's current log is usually the same run again).
    pub(super) fn log_matches(&self, family: Family) -> Vec<&'a LogMatch> {
        let mut out: Vec<&'a LogMatch> = Vec::new();
        for m in self.probe.into_iter().flat_map(|p| p.logs.matches()) {
            if m.family == family && !out.iter().any(|o| o.signature == m.signature) {
                out.push(m);
            }
        }
        out
    }

    pub(super) fn meshed(&mut self) {
        let status = self.proxy_status();
        let state = status.and_then(|s| s.state.as_ref());
        let waiting = state.and_then(|s| s.waiting.as_ref());
        let terminated = state.and_then(|s| s.terminated.as_ref());
        let running = state.and_then(|s| s.running.as_ref()).is_some();
        let ready = status.is_some_and(|s| s.ready);
        let last_terminated = status
            .and_then(|s| s.last_state.as_ref())
            .and_then(|l| l.terminated.as_ref());
        let restarts = status.map_or(0, |s| s.restart_count);
        let bootstrap_matches = self.log_matches(Family::Bootstrap);

        if let Some(status) = status {
            self.evidence.push(evidence(
                "pod status",
                format!(
                    "istio-proxy: {}{}, {} restart(s){}",
                    container_state(status),
                    if ready { ", ready" } else { ", not ready" },
                    restarts,
                    last_terminated
                        .map(|t| format!(
                            "; last exit code {} ({})",
                            t.exit_code,
                            t.reason.as_deref().unwrap_or("terminated")
                        ))
                        .unwrap_or_default()
                ),
            ));
        } else {
            self.evidence
                .push(evidence("pod status", "istio-proxy has no status yet"));
        }
        self.note_init_failures();

        // A pod blocked in its init phase is judged by the init container it waits on: with
        // istio-init in ImagePullBackOff, istio-proxy only ever shows PodInitializing.
        let blocking = init::blocking_init_container(self.pod)
            .filter(|b| b.container.name != sidecar::PROXY_CONTAINER);
        if let Some(b) = blocking {
            let state = container_state(b.status);
            let noted = format!("init container {}:", b.container.name);
            if !self.evidence.iter().any(|e| e.text.starts_with(&noted)) {
                self.evidence.push(evidence(
                "pod status",
                format!(
                    "init container {}: {state}; the pod's init phase waits on it, so istio-proxy cannot start before it",
                    b.container.name
                ),
                ));
            }
            if let Some(reason) = b.waiting_reason().filter(|r| init::is_image_pull_reason(r)) {
                let message = b
                    .status
                    .state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.message.as_deref());
                self.image_not_pulled(b.container, true, reason, message);
                return;
            }
        }
        let blocked_by = blocking.filter(|b| {
            b.waiting_reason() == Some("CrashLoopBackOff")
                || b.status.restart_count > 0
                || b.status
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .is_some_and(|t| t.exit_code != 0)
        });

        let waiting_reason = waiting.and_then(|w| w.reason.as_deref());
        if let Some(reason) = waiting_reason.filter(|r| init::is_image_pull_reason(r)) {
            let proxy = self.pod.spec.as_ref().and_then(sidecar::proxy_container);
            let in_init = !self.pod.spec.as_ref().is_some_and(|s| {
                s.containers
                    .iter()
                    .any(|c| c.name == sidecar::PROXY_CONTAINER)
            });
            if let Some(p) = proxy {
                self.image_not_pulled(
                    p.container,
                    in_init,
                    reason,
                    waiting.and_then(|w| w.message.as_deref()),
                );
                return;
            }
        }
        let crash_looping = waiting_reason == Some("CrashLoopBackOff");
        let exited = terminated.is_some_and(|t| t.exit_code != 0);
        // Restarted and down again, whatever its last exit code: pilot-agent exits 0 when
        // Envoy fails, so a native sidecar's crash loop reads `Terminated: Completed` with a
        // growing restart count and never CrashLoopBackOff.
        let restarted_and_down = !ready && !running && restarts > 0;
        if crash_looping
            || exited
            || restarted_and_down
            || (!ready && !bootstrap_matches.is_empty())
        {
            let termination = last_terminated.or(terminated);
            if bootstrap_matches.is_empty()
                && let Some(t) = termination.filter(|t| t.reason.as_deref() == Some("OOMKilled"))
            {
                self.out_of_memory(t);
                return;
            }
            self.bootstrap_crash(bootstrap_matches, termination);
            return;
        }
        if let Some(b) = blocked_by {
            self.not_started(
                Some(format!(
                    "init container {} {}",
                    b.container.name,
                    container_state(b.status)
                )),
                None,
            );
            return;
        }
        let starting = !ready
            && self
                .ctx
                .now
                .is_some_and(|now| sidecar::is_starting(self.pod, now));
        if starting {
            self.starting(running);
            return;
        }
        if !running {
            self.not_started(
                waiting.and_then(|w| w.reason.clone()),
                waiting.and_then(|w| w.message.clone()),
            );
            return;
        }
        self.running(ready);
    }

    /// A proxy that is not ready yet but within its startup grace: starting, not broken.
    pub(super) fn starting(&mut self, running: bool) {
        let grace = sidecar::startup_grace_seconds(self.pod);
        let age = self.ctx.now.and_then(|now| {
            sidecar::proxy_running_seconds(self.pod, now)
                .or_else(|| sidecar::pod_age_seconds(self.pod, now))
        });
        let since = age
            .map(|a| format!(" {} ago", human_duration(a.max(0))))
            .unwrap_or_default();
        let what = if running {
            format!("istio-proxy started{since} and is not ready yet")
        } else {
            format!("the pod was created{since} and istio-proxy is not running yet")
        };
        self.sidecar_evidence();
        self.evidence.push(evidence(
            "startup grace",
            format!(
                "{grace}s ({}): a proxy is judged only once it has had this long to become ready",
                if self.pod.spec.as_ref().and_then(sidecar::proxy_container).and_then(|p| p.container.readiness_probe.as_ref()).is_some() {
                    "istio-proxy's readiness probe: initialDelaySeconds + periodSeconds x failureThreshold"
                } else {
                    "the default; istio-proxy has no readiness probe"
                }
            ),
        ));
        self.set_verdict(
            VerdictKind::Starting,
            "starting",
            format!(
                "{what}; that is within its startup grace of {grace}s, so it is starting, not broken. Run this again once the grace has passed if it is still not ready."
            ),
        );
        self.next_steps.push(step(
            "Watch it become ready (READY 2/2)",
            self.kubectl(&format!("get pod {} -w", self.name)),
        ));
    }

    /// istio-init / istio-validation failures explain a pod that never gets to the proxy.
    pub(super) fn note_init_failures(&mut self) {
        let statuses = self
            .pod
            .status
            .as_ref()
            .and_then(|s| s.init_container_statuses.as_ref());
        for s in statuses.into_iter().flatten() {
            if !matches!(s.name.as_str(), "istio-init" | "istio-validation") {
                continue;
            }
            let failing = s.state.as_ref().is_some_and(|st| {
                st.waiting
                    .as_ref()
                    .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
                    || st.terminated.as_ref().is_some_and(|t| t.exit_code != 0)
            });
            if failing {
                self.evidence.push(evidence(
                    "pod status",
                    format!(
                        "init container {}: {} (traffic redirection could not be set up)",
                        s.name,
                        container_state(s)
                    ),
                ));
                self.next_steps.push(step(
                    format!("Read why {} failed", s.name),
                    self.kubectl(&format!("logs {} -c {}", self.name, s.name)),
                ));
            }
        }
    }

    pub(super) fn bootstrap_crash(
        &mut self,
        matches: Vec<&'a LogMatch>,
        termination: Option<&k8s_openapi::api::core::v1::ContainerStateTerminated>,
    ) {
        let status = self.proxy_status();
        let restarts = status.map_or(0, |s| s.restart_count);
        // `logs --previous` works only when the kubelet kept the last run (lastState.terminated);
        // a native sidecar restarted in place answers "previous terminated container ... not found".
        let has_previous = status
            .and_then(|s| s.last_state.as_ref())
            .and_then(|l| l.terminated.as_ref())
            .is_some();
        let reason = if let Some(first) = matches.first() {
            format!("Envoy rejects its bootstrap: {}", first.excerpt)
        } else if let Some(t) = termination.filter(|t| t.reason.as_deref() == Some("OOMKilled")) {
            format!(
                "it is killed for using too much memory (OOMKilled, exit code {})",
                t.exit_code
            )
        } else if let Some(t) = termination.filter(|t| t.exit_code == 0) {
            format!(
                "it keeps restarting ({restarts} restart(s)) and its last exit was code 0 ({}): pilot-agent exits 0 when Envoy fails, and the logs show no known error",
                t.reason.as_deref().unwrap_or("terminated")
            )
        } else if let Some(t) = termination {
            format!(
                "it exits with code {} and the logs show no known error",
                t.exit_code
            )
        } else {
            "it keeps exiting (CrashLoopBackOff) and the logs show no known error".to_string()
        };
        let unknown_cluster = self.unknown_grpc_cluster_users(&matches);
        let summary = match matches.first() {
            Some(first)
                if first.signature == Signature::UnknownGrpcCluster
                    && unknown_cluster.is_some() =>
            {
                let (cluster, users) = unknown_cluster.clone().unwrap_or_default();
                format!(
                    "Envoy exits at start because the pod's bootstrapOverride names gRPC cluster '{cluster}', which the bootstrap does not define, in {}. It says: \"{}\".",
                    users.join("; "),
                    first.excerpt
                )
            }
            Some(first) => format!(
                "Envoy exits at start because {}. It says: \"{}\".",
                first.signature.explain(),
                first.excerpt
            ),
            None => format!("The istio-proxy container cannot start: {reason}."),
        };
        match (matches.first(), termination) {
            (None, Some(t)) if t.exit_code == 0 && restarts > 0 => {
                let title = format!(
                    "crash loop: istio-proxy keeps restarting ({restarts} restart(s), last exit code 0)"
                );
                self.set_verdict(VerdictKind::ProxyCrash, &title, summary);
            }
            (None, Some(t)) => {
                let title = format!(
                    "crash: istio-proxy exits with code {} ({})",
                    t.exit_code,
                    t.reason.as_deref().unwrap_or("terminated")
                );
                self.set_verdict(VerdictKind::ProxyCrash, &title, summary);
            }
            _ => self.set_verdict(VerdictKind::BootstrapCrash, "bootstrap crash", summary),
        }
        self.findings.push(Finding::new(
            MD0101::message(self.full_name(), reason),
            Some(self.pod_ref()),
        ));
        for m in &matches {
            self.evidence.push(log_evidence(m));
        }
        if matches.is_empty() {
            self.logs_without_signature();
        }
        if has_previous {
            self.next_steps.push(step(
                "Read the log of the crashed istio-proxy",
                self.kubectl(&format!(
                    "logs {} -c istio-proxy --previous --tail 50",
                    self.name
                )),
            ));
        } else {
            self.next_steps.push(step(
                "Read istio-proxy's log: the kubelet kept no previous run of it, so Envoy's error is in the current log",
                self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
            ));
        }
        let native = self
            .pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .is_some_and(|p| p.native);
        if has_previous && native {
            // Between restarts the kubelet drops the previous run of a native sidecar.
            self.next_steps.push(step(
                "If that says \"not found\" (the kubelet keeps a native sidecar's previous run only while the next one runs), its current log has Envoy's error once it has exited again",
                self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
            ));
        }
        if let Some(cm) = self.pod.annotation("sidecar.istio.io/bootstrapOverride") {
            self.evidence.push(evidence(
                "pod annotations",
                format!("sidecar.istio.io/bootstrapOverride: the pod uses a custom bootstrap from ConfigMap {cm}"),
            ));
            self.next_steps.push(step(
                format!("The custom bootstrap is the first suspect: review ConfigMap {cm} (or remove the annotation)"),
                self.kubectl(&format!("get configmap {cm} -o yaml")),
            ));
        }
        let signatures: Vec<Signature> = matches.iter().map(|m| m.signature).collect();
        if signatures.contains(&Signature::UnknownGrpcCluster) {
            let text = match &unknown_cluster {
                Some((cluster, users)) => format!(
                    "The bootstrapOverride's {} names cluster '{cluster}', which no static cluster defines (Istio's xDS cluster is xds-grpc): fix the name",
                    users.join("; ")
                ),
                None => "A gRPC service of the bootstrap (the ADS config source, a metrics sink, a tracer or an access log service) names a cluster that no static cluster defines (Istio's xDS cluster is xds-grpc): fix the name in the custom bootstrap or injection template".to_string(),
            };
            self.next_steps.push(step(text, None));
        }
        if signatures.iter().any(|s| {
            matches!(
                s,
                Signature::UnknownField | Signature::UnknownType | Signature::InvalidJson
            )
        }) {
            self.next_steps.push(step(
                "A bootstrap this Envoy cannot read usually comes from a custom template or a proxy image older than istiod: compare the proxy image with istiod's version",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} get deploy -l app=istiod -o jsonpath='{{.items[*].spec.template.spec.containers[0].image}}'"
                )),
            ));
        }
        if signatures.contains(&Signature::CannotBind) {
            self.next_steps.push(step(
                "Another container of the pod listens on a port the proxy needs (15000, 15001, 15006, 15020, 15021, 15090): move it",
                None,
            ));
        }
        self.next_steps.push(step(
            "See where each part of this pod's bootstrap comes from (node.id, metadata, token, root certificate, bootstrapOverride), checked",
            Some(format!(
                "kubectl mesh-doctor bootstrap explain {} -n {}",
                self.name, self.namespace
            )),
        ));
        let names_a_cluster = signatures.iter().any(|s| {
            matches!(
                s,
                Signature::UnknownGrpcCluster
                    | Signature::DuplicateCluster
                    | Signature::RouteToUnknownCluster
            )
        });
        // Never a `kubectl exec` step: the container is crash-looping, there is nothing to exec into.
        if let (true, Some(cm)) = (
            names_a_cluster,
            self.pod.annotation("sidecar.istio.io/bootstrapOverride"),
        ) {
            self.next_steps.push(step(
                "The log names a cluster: validate the custom bootstrap of the override ConfigMap",
                Some(format!(
                    "kubectl -n {} get configmap {cm} -o jsonpath='{{.data.custom_bootstrap\\.json}}' > custom_bootstrap.json && kubectl mesh-doctor bootstrap validate custom_bootstrap.json",
                    self.namespace
                )),
            ));
        } else {
            self.next_steps.push(step(
                "Check a bootstrap file before deploying it",
                Some("kubectl mesh-doctor bootstrap validate envoy-rev.json".to_string()),
            ));
        }
    }

    /// For "Unknown gRPC client cluster 'x'": the cluster and the parts of the bootstrapOverride
    /// (read off pilot-agent's `Envoy command:` log line) that name it; `None` when the log does
    /// not show the override or the override does not name it.
    fn unknown_grpc_cluster_users(&self, matches: &[&LogMatch]) -> Option<(String, Vec<String>)> {
        let m = matches
            .iter()
            .find(|m| m.signature == Signature::UnknownGrpcCluster)?;
        let cluster = logs::unknown_grpc_cluster(&m.excerpt)?.to_string();
        let probe = self.probe?;
        let overlay = [&probe.logs.previous, &probe.logs.current]
            .into_iter()
            .filter_map(|l| l.ok())
            .find_map(|scan| scan.config_yaml.clone())?;
        let users = logs::grpc_cluster_users(&overlay, &cluster);
        (!users.is_empty()).then_some((cluster, users))
    }

    /// When no signature explains a crash: the last lines of the log, or why there is none.
    pub(super) fn logs_without_signature(&mut self) {
        let Some(probe) = self.probe else {
            return;
        };
        let mut shown = false;
        for (label, log) in [
            ("logs (previous)", &probe.logs.previous),
            ("logs (current)", &probe.logs.current),
        ] {
            match log {
                Probed::Ok(scan) if !shown && !scan.last_lines.is_empty() => {
                    for line in &scan.last_lines {
                        self.evidence.push(evidence(label, line.clone()));
                    }
                    shown = true;
                }
                Probed::Error(e) => self
                    .evidence
                    .push(evidence(label, format!("could not be read: {}", e.message))),
                _ => {}
            }
        }
    }

    pub(super) fn not_started(&mut self, reason: Option<String>, message: Option<String>) {
        let reason_text = reason
            .clone()
            .unwrap_or_else(|| "no status yet".to_string());
        let detail = match &message {
            Some(m) if !m.is_empty() => format!("istio-proxy is waiting ({reason_text}): {m}"),
            _ => format!("istio-proxy is waiting ({reason_text})"),
        };
        self.set_verdict(
            VerdictKind::ProxyNotStarted,
            "proxy not started",
            format!("The sidecar has not started: {detail}."),
        );
        self.findings.push(Finding::new(
            MD0107::message(self.full_name(), detail.clone()),
            Some(self.pod_ref()),
        ));
        self.check_root_cert();
        match reason.as_deref() {
            Some("ImagePullBackOff" | "ErrImagePull" | "InvalidImageName") => {
                self.next_steps.push(step(
                    "The proxy image cannot be pulled: check the image name, the registry and the pull secrets",
                    self.kubectl(&format!(
                        "get pod {} -o jsonpath='{{.spec.containers[?(@.name==\"istio-proxy\")].image}}'",
                        self.name
                    )),
                ));
            }
            _ => {
                self.next_steps.push(step(
                    "See the pod's events (volume mounts, image pulls, scheduling)",
                    self.kubectl(&format!("describe pod {}", self.name)),
                ));
            }
        }
    }

    pub(super) fn running(&mut self, ready: bool) {
        let admin = self.probe.map(|p| &p.admin);
        if admin
            .and_then(|a| a.server_info.error())
            .is_some_and(|e| e.is("denied"))
        {
            self.next_steps.push(step(
                "To probe the proxy, mesh-doctor needs `get` and `create` on pods/portforward (see docs/rbac.yaml); or run it inside the cluster with --direct",
                None,
            ));
        }
        let server_info = admin.and_then(|a| a.server_info.ok());
        self.sidecar_evidence();
        match server_info.map(|s| &s.state) {
            Some(ServerState::PreInitializing | ServerState::Initializing) => {
                self.waiting_for_istiod()
            }
            Some(ServerState::Live) | Some(ServerState::Draining) => self.live(),
            Some(ServerState::Other(_)) | None => {
                let cp = self.log_matches(Family::ControlPlane);
                let health_down = admin.is_some_and(|a| match &a.health {
                    Probed::Ok(r) => !r.is_ready(),
                    Probed::Error(e) => e.is("refused"),
                    Probed::Skipped(_) => false,
                });
                if !ready && (!cp.is_empty() || health_down) && server_info.is_none() {
                    // The admin port did not answer, but the health port and the logs say the
                    // proxy has no configuration.
                    if !cp.is_empty() {
                        self.waiting_for_istiod();
                        return;
                    }
                }
                if ready {
                    self.set_verdict(
                        VerdictKind::Healthy,
                        "healthy",
                        "istio-proxy is ready; its admin port could not be probed, so only Kubernetes' readiness vouches for it.".to_string(),
                    );
                    self.checks.push(check(
                        "Envoy admin probe",
                        CheckStatus::Unknown,
                        self.admin_error()
                            .unwrap_or_else(|| "not probed".to_string()),
                    ));
                    self.live_extras(true);
                } else {
                    self.unreachable();
                }
            }
        }
    }

    pub(super) fn admin_error(&self) -> Option<String> {
        let admin = &self.probe?.admin;
        match &admin.server_info {
            Probed::Error(e) => Some(e.message.clone()),
            Probed::Skipped(reason) => Some(reason.clone()),
            Probed::Ok(_) => None,
        }
    }

    pub(super) fn unreachable(&mut self) {
        let (reason, detail) = match self.admin_error() {
            Some(reason) => {
                let detail = format!(
                    "istio-proxy runs but is not ready, and its admin port did not answer ({reason})"
                );
                (reason, detail)
            }
            None => (
                "probing was turned off (--no-probe)".to_string(),
                "istio-proxy runs but is not ready; probe it (without --no-probe) to see why"
                    .to_string(),
            ),
        };
        self.set_verdict(
            VerdictKind::ProxyUnreachable,
            "proxy unreachable",
            format!("{detail}."),
        );
        self.findings.push(Finding::new(
            MD0107::message(self.full_name(), reason.clone()),
            Some(self.pod_ref()),
        ));
        for m in self.log_matches(Family::ControlPlane) {
            self.evidence.push(log_evidence(m));
        }
        self.control_plane_checks();
        self.next_steps.push(step(
            "Read the proxy's log",
            self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
        ));
    }

    /// Evidence from the admin and health ports, whatever the state.
    pub(super) fn sidecar_evidence(&mut self) {
        let Some(probe) = self.probe else {
            return;
        };
        let admin = &probe.admin;
        match &admin.server_info {
            Probed::Ok(info) => self.evidence.push(evidence(
                "/server_info",
                format!(
                    "state {}{}{}",
                    info.state,
                    info.uptime_seconds
                        .map(|s| format!(", up {}", human_duration(s as i64)))
                        .unwrap_or_default(),
                    info.release()
                        .map(|r| format!(", Envoy {r}"))
                        .unwrap_or_default()
                ),
            )),
            Probed::Error(e) => self.evidence.push(evidence(
                "/server_info",
                format!("no answer: {}", e.message),
            )),
            Probed::Skipped(_) => {}
        }
        if let Probed::Ok(r) = &admin.ready {
            self.evidence
                .push(evidence("/ready", format!("HTTP {} {}", r.status, r.body)));
        }
        match &admin.health {
            Probed::Ok(r) => self.evidence.push(evidence(
                "15021 /healthz/ready",
                format!(
                    "HTTP {}{}",
                    r.status,
                    if r.is_ready() { " (ready)" } else { " (not ready)" }
                ),
            )),
            Probed::Error(e) if e.is("refused") => self.evidence.push(evidence(
                "15021 /healthz/ready",
                "connection refused (not ready: Envoy accepts connections on its listeners only once it has its configuration)",
            )),
            Probed::Error(e) => self
                .evidence
                .push(evidence("15021 /healthz/ready", format!("no answer: {}", e.message))),
            Probed::Skipped(_) => {}
        }
        if let Probed::Ok(stats) = &admin.stats {
            if let (Some(state), Some(stream)) = (stats.connected_state, stats.stream()) {
                let meaning = match stream {
                    XdsStream::Closed => "no xDS stream to istiod".to_string(),
                    stream => stream.describe(),
                };
                self.evidence.push(evidence(
                    "stats",
                    format!("control_plane.connected_state {state} ({meaning})"),
                ));
            }
            for (name, counters) in [("CDS", &stats.cds), ("LDS", &stats.lds)] {
                if let Some(c) = counters {
                    self.evidence.push(evidence(
                        "stats",
                        format!(
                            "{name}: {} attempt(s), {} accepted, {} failed, {} rejected",
                            c.attempt, c.success, c.failure, c.rejected
                        ),
                    ));
                }
            }
        }
        if let Probed::Ok(Some(cluster)) = &admin.xds_cluster {
            let addresses: Vec<&str> = cluster.hosts.iter().map(|h| h.address.as_str()).collect();
            let successes: u64 = cluster.hosts.iter().map(|h| h.rq_success).sum();
            let disconnected = admin
                .stats
                .ok()
                .is_some_and(|s| s.connected() == Some(false));
            if cluster.connect_failures() > 0 || (disconnected && cluster.active_connections() == 0)
            {
                self.evidence.push(evidence(
                    "/clusters",
                    format!(
                        "{} -> {}: {} connection failure(s), {} active connection(s), {} successful request(s)",
                        cluster.name,
                        if addresses.is_empty() { "no endpoint".to_string() } else { addresses.join(", ") },
                        cluster.connect_failures(),
                        cluster.active_connections(),
                        successes
                    ),
                ));
            }
        }
    }

    pub(super) fn waiting_for_istiod(&mut self) {
        let admin = self.probe.map(|p| &p.admin);
        let state = admin
            .and_then(|a| a.server_info.ok())
            .map(|s| s.state.to_string());
        let mut parts = Vec::new();
        if let Some(state) = &state {
            parts.push(format!("state {state}"));
        }
        if let Some(a) = admin {
            match &a.health {
                Probed::Ok(r) if !r.is_ready() => {
                    parts.push(format!("15021 not ready ({})", r.status))
                }
                Probed::Error(e) if e.is("refused") => {
                    parts.push("15021 not ready (connection refused)".to_string())
                }
                _ => {}
            }
            if let Some(stats) = a.stats.ok() {
                match stats.stream() {
                    Some(XdsStream::Closed) => parts.push(
                        "not connected to istiod (control_plane.connected_state 0)".to_string(),
                    ),
                    Some(XdsStream::Connected) => parts.push(
                        "connected to istiod, its configuration not complete yet".to_string(),
                    ),
                    Some(stream) => parts.push(format!(
                        "{} (control_plane.connected_state 1)",
                        stream.describe()
                    )),
                    None => {}
                }
            }
        }
        let cp = self.log_matches(Family::ControlPlane);
        if parts.is_empty()
            && let Some(first) = cp.first()
        {
            parts.push(first.signature.explain().to_string());
        }
        let detail = parts.join(", ");
        self.set_verdict(
            VerdictKind::WaitingForControlPlane,
            "waiting for istiod",
            format!(
                "The proxy runs but never got its configuration from istiod ({detail}), so the pod never becomes ready."
            ),
        );
        self.findings.push(Finding::new(
            MD0102::message(self.full_name(), detail),
            Some(self.pod_ref()),
        ));
        if let Some(uptime) = admin
            .and_then(|a| a.server_info.ok())
            .and_then(|s| s.uptime_seconds)
            && uptime < 10
        {
            self.evidence.push(evidence(
                "/server_info",
                format!(
                    "the proxy started {} ago: if it is just starting, run this again in a few seconds",
                    human_duration(uptime as i64)
                ),
            ));
        }
        for m in &cp {
            self.evidence.push(log_evidence(m));
        }
        self.control_plane_checks();
        self.next_steps.push(step(
            "Read the proxy's log (pilot-agent says why it cannot reach istiod)",
            self.kubectl(&format!("logs {} -c istio-proxy --tail 50", self.name)),
        ));
        // Steps follow the failed checks: istiod's own health only when it was not seen ready.
        let istiod_seen_ready = self
            .checks
            .iter()
            .any(|c| c.name == "istiod has ready endpoints" && c.status == CheckStatus::Pass);
        if !istiod_seen_ready {
            self.next_steps.push(step(
                "Is istiod running and ready?",
                Some(format!(
                    "kubectl -n {ISTIO_NAMESPACE} get pods -l app=istiod -o wide"
                )),
            ));
        }
        self.next_steps.push(step(
            "istiod's view: which proxies it serves",
            Some(format!(
                "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod --tail 100"
            )),
        ));
    }

    // ------------------------------------------------------------------ checks
}
