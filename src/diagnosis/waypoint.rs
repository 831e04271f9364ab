//! A captured ambient pod's waypoints and the policies ztunnel enforces for it: a waypoint it
//! uses (its own label, its namespace's, or a Service that selects it) that carries no traffic
//! is MD0113; an AuthorizationPolicy that selects it with what ztunnel cannot enforce is
//! MD0403; one attached to a Service of it that has no usable waypoint is MD0404. What could
//! not be read is an unknown check (and "Not read"), never a pass.

use super::*;
use crate::istio::config::gateway_api::KubernetesGateway;
use crate::istio::config::security::AuthorizationPolicy;
use crate::istio::waypoint::{self, GATEWAY_NAME_LABEL, Observed, Use, WaypointRef};
use crate::kube::snapshot::ConfigObject;
use k8s_openapi::api::core::v1::Service;

const WAYPOINT_CHECK: &str = "the waypoints the pod uses carry traffic";
const POLICY_CHECK: &str =
    "ztunnel enforces the AuthorizationPolicies that select the pod as written";

fn typed<T: serde::de::DeserializeOwned>(o: &ConfigObject) -> Option<T> {
    serde_json::from_value(o.spec.clone()).ok()
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Why the waypoint carries no traffic, from what the context read; `Err` when the Gateways or
/// their pods could not be read.
fn judge(ctx: &AmbientContext, w: &WaypointRef) -> std::result::Result<Option<String>, String> {
    let gateways = match &ctx.gateways {
        Lookup::Found(g) => g,
        Lookup::Missing => {
            return Ok(waypoint::problem(
                w,
                &Observed {
                    gateway: None,
                    pods_ready: Some(vec![]),
                },
            ));
        }
        Lookup::Unknown(r) => return Err(format!("Gateways could not be read: {r}")),
    };
    let pods = match &ctx.gateway_pods {
        Lookup::Found(p) => p,
        Lookup::Missing => &Vec::new(),
        Lookup::Unknown(r) => return Err(format!("the waypoints' pods could not be read: {r}")),
    };
    let found = gateways.iter().find(|g| {
        g.metadata.namespace.as_deref() == Some(w.namespace.as_str())
            && g.metadata.name.as_deref() == Some(w.name.as_str())
    });
    let spec: Option<KubernetesGateway> = found.and_then(typed);
    let observed = Observed {
        gateway: found.zip(spec.as_ref()).map(|(g, s)| (s, &g.status)),
        pods_ready: Some(
            pods.iter()
                .filter(|p| {
                    p.namespace() == Some(w.namespace.as_str())
                        && p.label(GATEWAY_NAME_LABEL) == Some(w.name.as_str())
                        && !crate::kube::lifecycle::is_ending(p)
                })
                .map(pod_ready)
                .collect(),
        ),
    };
    Ok(waypoint::problem(w, &observed))
}

impl<'a> Builder<'a> {
    /// The Services of the pod's namespace that select it.
    fn selecting_services(&self) -> Vec<&'a Service> {
        let empty = BTreeMap::new();
        let labels = self.pod.metadata.labels.as_ref().unwrap_or(&empty);
        match &self.ctx.ambient.services {
            Lookup::Found(services) => services
                .iter()
                .filter(|s| {
                    s.spec
                        .as_ref()
                        .and_then(|sp| sp.selector.as_ref())
                        .is_some_and(|sel| !sel.is_empty() && selector::labels_match(sel, labels))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Checks the waypoints and policies of a captured ambient pod; true when a finding was made.
    pub(super) fn ambient_waypoints_and_policies(&mut self) -> bool {
        let ctx = &self.ctx.ambient;
        let ns_labels = self
            .ctx
            .namespace
            .found()
            .and_then(|n| n.metadata.labels.as_ref());
        let services = self.selecting_services();
        // Every waypoint asked for: the pod's (own label, else the namespace's), each Service's.
        let mut uses: Vec<(String, WaypointRef)> = Vec::new();
        if let Use::Waypoint(w) = waypoint::waypoint_use(
            self.pod.metadata.labels.as_ref(),
            "pod",
            ns_labels,
            &self.namespace,
        ) {
            uses.push((format!("Pod {}", self.full_name()), w));
        }
        let mut service_waypoint: Vec<(&Service, Option<WaypointRef>)> = Vec::new();
        for s in &services {
            let w = match waypoint::waypoint_use(
                s.metadata.labels.as_ref(),
                "service",
                ns_labels,
                &self.namespace,
            ) {
                Use::Waypoint(w) => Some(w),
                _ => None,
            };
            if let Some(w) = &w {
                uses.push((
                    format!("Service {}/{}", self.namespace, s.name()),
                    w.clone(),
                ));
            }
            service_waypoint.push((s, w));
        }
        let mut found_any = false;
        let mut unusable: Vec<String> = Vec::new();
        if let Lookup::Unknown(r) = &ctx.services {
            self.checks.push(check(
                WAYPOINT_CHECK,
                CheckStatus::Unknown,
                format!("the Services of {} could not be read: {r}", self.namespace),
            ));
        }
        if uses.is_empty() {
            if !matches!(ctx.services, Lookup::Unknown(_)) {
                self.checks.push(check(
                    WAYPOINT_CHECK,
                    CheckStatus::Skipped,
                    "neither the pod, its namespace nor a Service that selects it names a waypoint (istio.io/use-waypoint): ztunnel alone carries its traffic, at L4",
                ));
            }
        } else {
            let mut passed = Vec::new();
            for (who, w) in &uses {
                match judge(ctx, w) {
                    Err(reason) => self.checks.push(check(
                        WAYPOINT_CHECK,
                        CheckStatus::Unknown,
                        format!(
                            "{who} uses waypoint {} ({}), but {reason}",
                            w.full_name(),
                            w.by
                        ),
                    )),
                    Ok(Some(problem)) => {
                        let text = format!(
                            "{who} uses waypoint {} ({}): {problem}",
                            w.full_name(),
                            w.by
                        );
                        self.checks
                            .push(check(WAYPOINT_CHECK, CheckStatus::Fail, &text));
                        self.findings.push(Finding::new(
                            MD0113,
                            Some(self.pod_ref()),
                            &[
                                who.clone().into(),
                                w.full_name().into(),
                                w.by.clone().into(),
                                problem.clone().into(),
                            ],
                        ));
                        unusable.push(format!("{who}: {problem}"));
                        found_any = true;
                        self.next_steps.push(step(
                            format!("See the waypoint Gateway {} and its pods", w.full_name()),
                            Some(format!(
                                "kubectl -n {} get gateway {} -o yaml; kubectl -n {} get pods -l {GATEWAY_NAME_LABEL}={}",
                                w.namespace, w.name, w.namespace, w.name
                            )),
                        ));
                    }
                    Ok(None) => passed.push(format!(
                        "{who} uses waypoint {} ({}): Programmed, with a ready pod",
                        w.full_name(),
                        w.by
                    )),
                }
            }
            if !passed.is_empty() {
                self.checks
                    .push(check(WAYPOINT_CHECK, CheckStatus::Pass, passed.join("; ")));
            }
        }
        let mut gaps: Vec<String> = Vec::new();
        match &ctx.authorization_policies {
            Lookup::Unknown(r) => self.checks.push(check(
                POLICY_CHECK,
                CheckStatus::Unknown,
                format!("the AuthorizationPolicies could not be read: {r}"),
            )),
            Lookup::Missing => {}
            Lookup::Found(policies) => {
                let empty = BTreeMap::new();
                let labels = self.pod.metadata.labels.as_ref().unwrap_or(&empty);
                let mut applied = 0;
                for p in policies {
                    let Some(spec) = typed::<AuthorizationPolicy>(p) else {
                        continue;
                    };
                    let pns = p.metadata.namespace.as_deref().unwrap_or("");
                    let name = format!("{pns}/{}", p.metadata.name.as_deref().unwrap_or(""));
                    if waypoint::policy_scope(&spec) == waypoint::PolicyScope::Targeted {
                        // Attached to a Service of this pod that has no usable waypoint.
                        if pns != self.namespace {
                            continue;
                        }
                        let mut refs: Vec<&crate::istio::config::security::PolicyTargetRef> =
                            spec.target_refs.iter().collect();
                        refs.extend(spec.target_ref.as_ref());
                        for r in refs.iter().filter(|r| r.kind == "Service") {
                            let Some((_, w)) =
                                service_waypoint.iter().find(|(s, _)| s.name() == r.name)
                            else {
                                continue;
                            };
                            let why = match w {
                                None => "names no waypoint (istio.io/use-waypoint on it or its namespace)".to_string(),
                                Some(w) => match judge(ctx, w) {
                                    Ok(Some(problem)) => format!("uses waypoint {} ({}), but {problem}", w.full_name(), w.by),
                                    _ => continue,
                                },
                            };
                            let target = format!("Service {}/{}", self.namespace, r.name);
                            self.findings.push(Finding::new(
                                MD0404,
                                Some(self.pod_ref()),
                                &[
                                    name.clone().into(),
                                    target.clone().into(),
                                    why.clone().into(),
                                ],
                            ));
                            gaps.push(format!("AuthorizationPolicy {name} targets {target}, which {why}: nothing enforces it"));
                        }
                        continue;
                    }
                    let applies = if pns == self.namespace {
                        spec.selector
                            .as_ref()
                            .is_none_or(|s| selector::labels_match(&s.match_labels, labels))
                    } else {
                        pns == ctx.root_namespace && spec.selector.is_none()
                    };
                    if !applies {
                        continue;
                    }
                    applied += 1;
                    if let Some(gap) = waypoint::ztunnel_gap(&spec) {
                        self.findings.push(Finding::new(
                            MD0403,
                            Some(self.pod_ref()),
                            &[
                                name.clone().into(),
                                self.full_name().into(),
                                gap.clone().into(),
                            ],
                        ));
                        gaps.push(format!("AuthorizationPolicy {name}: {gap}"));
                    }
                }
                if gaps.is_empty() {
                    self.checks.push(check(
                        POLICY_CHECK,
                        CheckStatus::Pass,
                        format!("{applied} AuthorizationPolicy(ies) select the pod; ztunnel can enforce each as written"),
                    ));
                } else {
                    self.checks
                        .push(check(POLICY_CHECK, CheckStatus::Fail, gaps.join("; ")));
                    found_any = true;
                    self.next_steps.push(step(
                        "Read what istiod says of the policy for ztunnel (status condition ZtunnelAccepted)",
                        self.kubectl("get authorizationpolicies -o yaml"),
                    ));
                }
            }
        }
        if !unusable.is_empty() {
            self.set_verdict(
                VerdictKind::WaypointUnavailable,
                "captured by ambient; its waypoint carries no traffic",
                format!(
                    "ztunnel carries the pod's traffic, but {}. Traffic meant for the waypoint goes without it: the L7 policies, routes and telemetry attached to the waypoint do not apply.",
                    unusable.join("; ")
                ),
            );
        } else if !gaps.is_empty() {
            self.set_verdict(
                VerdictKind::AmbientPolicyGap,
                "captured by ambient; a policy is not enforced as written",
                format!(
                    "ztunnel carries the pod's traffic, but it enforces AuthorizationPolicies at L4 only: {}.",
                    gaps.join("; ")
                ),
            );
        }
        found_any
    }
}
