//! The verdicts of a pod that is ending or has ended: being deleted, evicted, `Succeeded` or
//! `Failed`; and the Job pod whose application has exited while its classic sidecar keeps it
//! running. These come before any judgement of the sidecar: a stopping or stopped pod is not
//! starting, and a proxy killed on the way out has not crashed.

use super::*;
use crate::formats::duration::human_duration;
use crate::kube::lifecycle::{self, Lifecycle};

impl<'a> Builder<'a> {
    /// Sets the verdict when the pod is ending or has ended (or is a Job held up by its
    /// sidecar); false when it is live and the sidecar should be judged.
    pub(super) fn ending(&mut self) -> bool {
        match lifecycle::lifecycle(self.pod, self.ctx.now) {
            Lifecycle::Live => self.job_held_by_sidecar(),
            Lifecycle::Terminating {
                grace_seconds,
                left_seconds,
                finalizers,
            } => {
                self.terminating(grace_seconds, left_seconds, &finalizers);
                true
            }
            Lifecycle::Evicted { message } => {
                self.containers_evidence();
                let said = message
                    .as_deref()
                    .map(|m| format!(": \"{}\"", crate::formats::text::one_line(m, 200)))
                    .unwrap_or_default();
                self.set_verdict(
                    VerdictKind::Evicted,
                    "evicted",
                    format!(
                        "The kubelet evicted the pod{said}. Its containers were stopped and will not run again, so {}; {}",
                        self.not_judged(),
                        self.replacement()
                    ),
                );
                self.next_steps.push(step(
                    "See why the node evicted it (its events and the node's conditions)",
                    self.kubectl(&format!("describe pod {}", self.name)),
                ));
                true
            }
            Lifecycle::Ended {
                phase,
                reason,
                message,
            } => {
                self.ended(&phase, reason.as_deref(), message.as_deref());
                true
            }
        }
    }

    /// Every container's state as evidence, the proxy's included.
    fn containers_evidence(&mut self) {
        let statuses: Vec<&ContainerStatus> = self
            .pod
            .status
            .as_ref()
            .into_iter()
            .flat_map(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
            })
            .collect();
        for s in statuses {
            if matches!(s.name.as_str(), "istio-init" | "istio-validation")
                && lifecycle::is_terminated(s)
                && s.state
                    .as_ref()
                    .and_then(|st| st.terminated.as_ref())
                    .is_some_and(|t| t.exit_code == 0)
            {
                continue;
            }
            self.evidence.push(evidence(
                "pod status",
                format!("{}: {}", s.name, container_state(s)),
            ));
        }
    }

    /// What an ending pod's verdict leaves out.
    fn not_judged(&self) -> &'static str {
        if self
            .pod
            .spec
            .as_ref()
            .and_then(sidecar::proxy_container)
            .is_some()
        {
            "its sidecar is not judged"
        } else {
            "whether it should have a sidecar is not judged"
        }
    }

    /// What happens to the work of an ended pod: its controller replaces it, or nothing does.
    fn replacement(&self) -> String {
        match lifecycle::controller(self.pod) {
            Some(("Job", job)) => {
                format!("its Job {job} decides whether it runs another pod (backoffLimit).")
            }
            Some((kind, owner)) => format!("its {kind} {owner} replaces it with a new pod."),
            None => "nothing replaces a bare pod: create it again.".to_string(),
        }
    }

    fn terminating(&mut self, grace: Option<i64>, left: Option<i64>, finalizers: &[String]) {
        self.containers_evidence();
        let grace_text = grace
            .map(|g| format!("its grace period of {g}s"))
            .unwrap_or_else(|| "its grace period".to_string());
        let time = match left {
            Some(l) if l > 0 => format!("{grace_text} has {} left", human_duration(l)),
            Some(l) => format!("{grace_text} ended {} ago", human_duration(-l)),
            None => format!("how much of {grace_text} is left is unknown (no clock)"),
        };
        let past = left.is_some_and(|l| l <= 0);
        let held = if past && !finalizers.is_empty() {
            format!(
                " The object stays because of its finalizer(s) {}, which whoever set them must remove.",
                finalizers.join(", ")
            )
        } else if past {
            " Past the grace period the kubelet kills what still runs; a pod that stays longer than that waits on its node's kubelet (is the node up?).".to_string()
        } else {
            String::new()
        };
        self.set_verdict(
            VerdictKind::Terminating,
            "terminating",
            format!(
                "The pod is being deleted: {time}. Its containers are being stopped, so it is not starting and {}.{held}",
                self.not_judged()
            ),
        );
        if let Some(deleted) = self.pod.metadata.deletion_timestamp.as_ref() {
            self.evidence.push(evidence(
                "pod metadata",
                format!(
                    "deletionTimestamp {} (the end of the grace period){}",
                    deleted.0,
                    grace
                        .map(|g| format!(", deletionGracePeriodSeconds {g}"))
                        .unwrap_or_default()
                ),
            ));
        }
        if past {
            self.next_steps.push(step(
                "See what holds the pod (finalizers, its node)",
                self.kubectl(&format!(
                    "get pod {} -o jsonpath='{{.metadata.finalizers}} {{.spec.nodeName}}'",
                    self.name
                )),
            ));
        } else {
            self.next_steps.push(step(
                "Watch it go",
                self.kubectl(&format!("get pod {} -w", self.name)),
            ));
        }
    }

    fn ended(&mut self, phase: &str, reason: Option<&str>, message: Option<&str>) {
        self.containers_evidence();
        let apps = self.app_statuses();
        let failed: Vec<String> = apps
            .iter()
            .filter_map(|s| {
                let t = s.state.as_ref()?.terminated.as_ref()?;
                (t.exit_code != 0).then(|| format!("{} {}", s.name, container_state(s)))
            })
            .collect();
        let deleting = if self.pod.metadata.deletion_timestamp.is_some() {
            " and is being deleted"
        } else {
            ""
        };
        let why = reason
            .map(|r| {
                format!(
                    " ({r}{})",
                    message
                        .map(|m| format!(": {}", crate::formats::text::one_line(m, 200)))
                        .unwrap_or_default()
                )
            })
            .unwrap_or_default();
        let (title, what) = if phase == "Succeeded" {
            (
                "completed".to_string(),
                format!(
                    "The pod has completed (phase Succeeded{why}){deleting}: every container exited"
                ),
            )
        } else if failed.is_empty() {
            (
                "ended: the pod failed".to_string(),
                format!("The pod has ended (phase Failed{why}){deleting}"),
            )
        } else {
            (
                "ended: the pod failed".to_string(),
                format!(
                    "The pod has ended (phase Failed{why}){deleting}: {}",
                    failed.join(", ")
                ),
            )
        };
        self.set_verdict(
            VerdictKind::Ended,
            &title,
            format!(
                "{what}. Nothing in it runs any more and nothing will be restarted, so it is not starting and {}; {}",
                self.not_judged(),
                self.replacement()
            ),
        );
        for s in apps.iter().filter(|s| {
            s.state
                .as_ref()
                .and_then(|st| st.terminated.as_ref())
                .is_some_and(|t| t.exit_code != 0)
        }) {
            self.next_steps.push(step(
                format!("Read why {} exited", s.name),
                self.kubectl(&format!("logs {} -c {}", self.name, s.name)),
            ));
        }
    }

    /// The application containers' statuses (every container but istio-proxy).
    fn app_statuses(&self) -> Vec<&'a ContainerStatus> {
        self.pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.name != sidecar::PROXY_CONTAINER)
            .collect()
    }

    /// A pod that will not restart its containers (a Job's: restartPolicy Never or OnFailure)
    /// whose application containers have all exited while a classic istio-proxy runs on: the
    /// pod never completes, nor does its Job. With a native sidecar the kubelet stops the proxy
    /// itself once the application has exited.
    fn job_held_by_sidecar(&mut self) -> bool {
        if lifecycle::restart_policy(self.pod) == "Always" {
            return false;
        }
        let Some(proxy) = self.pod.spec.as_ref().and_then(sidecar::proxy_container) else {
            return false;
        };
        let apps = self.app_statuses();
        let expected = self.pod.spec.as_ref().map_or(0, |s| {
            s.containers
                .iter()
                .filter(|c| c.name != sidecar::PROXY_CONTAINER)
                .count()
        });
        if apps.is_empty()
            || apps.len() < expected
            || !apps.iter().all(|s| lifecycle::is_terminated(s))
        {
            return false;
        }
        let proxy_running = self.proxy_status().is_some_and(lifecycle::is_running);
        if !proxy_running {
            return false;
        }
        self.containers_evidence();
        let names: Vec<String> = apps
            .iter()
            .map(|s| format!("{} ({})", s.name, container_state(s)))
            .collect();
        let owner = match lifecycle::controller(self.pod) {
            Some(("Job", job)) => format!("its Job {job}"),
            Some((kind, owner)) => format!("its {kind} {owner}"),
            None => "whatever waits for it".to_string(),
        };
        if proxy.native {
            // The kubelet stops a native sidecar once the main containers have exited: the
            // pod is completing, nothing is wrong.
            self.set_verdict(
                VerdictKind::Completing,
                "completing",
                format!(
                    "The application has exited ({}) and istio-proxy is a native sidecar, which the kubelet stops now: the pod completes by itself.",
                    names.join(", ")
                ),
            );
            return true;
        }
        self.set_verdict(
            VerdictKind::JobHeldBySidecar,
            "never completes: istio-proxy keeps running after the application exited",
            format!(
                "The application has exited ({}), but istio-proxy is a classic sidecar (a regular container), which does not stop when the application does: the pod stays Running and {owner} never completes.",
                names.join(", ")
            ),
        );
        self.findings.push(Finding::new(
            MD0110::message(self.full_name(), names.join(", ")),
            Some(self.pod_ref()),
        ));
        self.next_steps.push(step(
            "Use a native sidecar (Kubernetes 1.29 or newer): istio-proxy then runs as an init container with restartPolicy Always and the kubelet stops it when the application exits. Per workload, annotate the pod template with sidecar.istio.io/nativeSidecar: \"true\"; mesh-wide, set istiod's ENABLE_NATIVE_SIDECARS=true",
            None,
        ));
        self.next_steps.push(step(
            "Or end the application's command by telling pilot-agent to exit: curl -fsS -X POST http://localhost:15020/quitquitquit",
            None,
        ));
        self.next_steps.push(step(
            "Let this pod finish now (pilot-agent exits and the pod completes; kubectl may say \"command terminated with exit code 137\" when the container stops under the command, which is expected)",
            self.kubectl(&format!(
                "exec {} -c istio-proxy -- pilot-agent request POST /quitquitquit --debug-port 15020",
                self.name
            )),
        ));
        true
    }
}
