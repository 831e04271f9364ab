//! A running proxy's live facts: rejected config, certificates, the readiness of the app.

use super::*;

impl<'a> Builder<'a> {
    pub(super) fn live(&mut self) {
        let admin = self.probe.map(|p| &p.admin);
        let draining = admin
            .and_then(|a| a.server_info.ok())
            .is_some_and(|s| s.state == ServerState::Draining);
        let any = self.live_extras(false);
        if !any {
            let connected = admin.and_then(|a| a.stats.ok()).and_then(|s| s.connected());
            let summary = match (draining, connected) {
                (true, _) => "The proxy is draining: the pod is shutting down.".to_string(),
                (false, Some(false)) => {
                    "The proxy is LIVE and serves its last configuration, but it is not connected to istiod right now: new configuration and certificates do not reach it.".to_string()
                }
                _ => "The proxy is LIVE, has its configuration and every container is ready."
                    .to_string(),
            };
            if connected == Some(false) {
                self.next_steps.push(step(
                    "Watch whether the proxy reconnects; if not, check istiod",
                    Some(format!(
                        "kubectl -n {ISTIO_NAMESPACE} get pods -l app=istiod"
                    )),
                ));
            }
            self.set_verdict(VerdictKind::Healthy, "healthy", summary);
        }
    }

    /// Config rejections, certificates and application readiness of a proxy that runs.
    /// Returns true when something was found.
    pub(super) fn live_extras(&mut self, readiness_only: bool) -> bool {
        let mut found = false;
        let admin = self.probe.map(|p| &p.admin);
        if !readiness_only {
            if let Some(stats) = admin.and_then(|a| a.stats.ok())
                && stats.rejected() > 0
            {
                let cds = stats.cds.as_ref().map_or(0, |c| c.rejected);
                let lds = stats.lds.as_ref().map_or(0, |c| c.rejected);
                let what = format!("CDS rejected {cds} update(s), LDS rejected {lds}");
                self.set_verdict(
                    VerdictKind::ConfigRejected,
                    "configuration rejected by the proxy",
                    format!(
                        "The proxy refused configuration istiod sent ({what}); it keeps running on the last configuration it accepted, so recent changes do not apply."
                    ),
                );
                self.findings.push(Finding::new(
                    MD0104::message(self.full_name(), what),
                    Some(self.pod_ref()),
                ));
                self.next_steps.push(step(
                    "istiod logs why the proxy rejected the update (look for NACK)",
                    Some(format!(
                        "kubectl -n {ISTIO_NAMESPACE} logs deploy/istiod | grep -i -e nack -e {}",
                        self.name
                    )),
                ));
                self.next_steps.push(step(
                    "Check the mesh configuration that applies to the pod",
                    Some(format!("kubectl mesh-doctor analyze -n {}", self.namespace)),
                ));
                found = true;
            }
            if let (Some(certs), Some(now)) = (admin.and_then(|a| a.certs.ok()), self.ctx.now) {
                for cert in certs {
                    let Some(expires) = cert.expiration_time else {
                        continue;
                    };
                    let fraction = cert.remaining_fraction(now);
                    let what = if expires <= now {
                        Some(format!("expired at {expires}"))
                    } else if cert.role == CertRole::Chain && fraction.is_some_and(|f| f < 0.2) {
                        // Istio rotates at half the lifetime: under 20% left means rotation fails.
                        Some(format!(
                            "expires at {expires}, with {:.0}% of its lifetime left (Istio rotates at 50%)",
                            fraction.unwrap_or(0.0) * 100.0
                        ))
                    } else {
                        None
                    };
                    let Some(what) = what else { continue };
                    let label = match cert.role {
                        CertRole::Chain => "workload certificate",
                        CertRole::Ca => "CA certificate",
                    };
                    self.evidence.push(evidence(
                        "/certs",
                        format!(
                            "{label} {} ({}) {what}",
                            cert.path,
                            cert.subject_alt_names.join(", ")
                        ),
                    ));
                    self.set_verdict(
                        VerdictKind::CertificateProblem,
                        "certificate expired or expiring",
                        format!(
                            "The proxy's {label} {what}: mTLS to other workloads fails once it expires, which usually means the proxy cannot reach the CA on istiod."
                        ),
                    );
                    self.findings.push(Finding::new(
                        MD0105::message(self.full_name(), what),
                        Some(self.pod_ref()),
                    ));
                    found = true;
                }
                if found
                    && self
                        .verdict
                        .as_ref()
                        .is_some_and(|v| v.kind == VerdictKind::CertificateProblem)
                {
                    self.check_istiod_endpoints();
                    self.check_token_audience();
                }
            }
        }
        // Application containers not ready while the proxy is.
        let proxy_ready = self.proxy_status().is_some_and(|s| s.ready)
            || admin
                .and_then(|a| a.health.ok())
                .is_some_and(|r| r.is_ready());
        let unready: Vec<String> = self
            .pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|s| s.name != sidecar::PROXY_CONTAINER && !s.ready)
            .map(|s| s.name.clone())
            .collect();
        if proxy_ready && !unready.is_empty() {
            for name in &unready {
                if let Some(s) = self
                    .pod
                    .status
                    .as_ref()
                    .and_then(|st| st.container_statuses.as_ref())
                    .and_then(|c| c.iter().find(|c| &c.name == name))
                {
                    self.evidence.push(evidence(
                        "pod status",
                        format!("{}: {}, not ready", s.name, container_state(s)),
                    ));
                }
            }
            self.set_verdict(
                VerdictKind::ApplicationNotReady,
                "application not ready",
                format!(
                    "The proxy is LIVE; container(s) {} fail their own readiness: the problem is in the application, not the mesh.",
                    unready.join(", ")
                ),
            );
            self.findings.push(Finding::new(
                MD0106::message(self.full_name(), unready.clone()),
                Some(self.pod_ref()),
            ));
            self.next_steps.push(step(
                "See the failing readiness probe and the application's log",
                self.kubectl(&format!("describe pod {}", self.name)),
            ));
            self.next_steps.push(step(
                "The application's log",
                self.kubectl(&format!("logs {} -c {}", self.name, unready[0])),
            ));
            found = true;
        }
        found
    }
}
