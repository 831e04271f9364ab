//! A captured ambient pod's waypoints and the policies ztunnel enforces for it: a waypoint it
//! uses (its own label, its namespace's, or a Service that selects it) that carries no traffic
//! is MD0113; an AuthorizationPolicy that selects it with what ztunnel cannot enforce is
//! MD0403; one attached to a Service of it that has no usable waypoint is MD0404. What could
//! not be read is an unknown check (and "Not read"), never a pass.

use super::*;
use crate::istio::config::gateway_api::KubernetesGateway;
use crate::istio::config::security::{AuthorizationPolicy, PolicyTargetRef, RequestAuthentication};
use crate::istio::config::telemetry::{Telemetry, WasmPlugin};
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

/// The Gateway of a waypoint, when the Gateways were read and it is there.
fn gateway_of<'c>(ctx: &'c AmbientContext, w: &WaypointRef) -> Option<&'c ConfigObject> {
    ctx.gateways.found()?.iter().find(|g| {
        g.metadata.namespace.as_deref() == Some(w.namespace.as_str())
            && g.metadata.name.as_deref() == Some(w.name.as_str())
    })
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
        // A waypoint's `istio.io/waypoint-for` says which traffic it takes: a namespace label
        // binds the pod's own traffic only to a waypoint for workloads; a pod's own label to one
        // that is not is a mistake (said as the waypoint's problem).
        let mut mismatch: Vec<(String, String)> = Vec::new();
        if let Use::Waypoint(w) = waypoint::waypoint_use(
            self.pod.metadata.labels.as_ref(),
            "pod",
            ns_labels,
            &self.namespace,
        ) {
            let who = format!("Pod {}", self.full_name());
            let wrong = gateway_of(ctx, &w).and_then(|g| {
                waypoint::traffic_mismatch(waypoint::traffic_for(g.metadata.labels.as_ref()), false)
            });
            match wrong {
                None => uses.push((who, w)),
                Some(why) if w.by.starts_with("pod label") => {
                    mismatch.push((who.clone(), why));
                    uses.push((who, w));
                }
                Some(_) => {} // the namespace's waypoint is for its Services
            }
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
                let who = format!("Service {}/{}", self.namespace, s.name());
                if let Some(why) = gateway_of(ctx, w).and_then(|g| {
                    waypoint::traffic_mismatch(
                        waypoint::traffic_for(g.metadata.labels.as_ref()),
                        true,
                    )
                }) {
                    mismatch.push((who.clone(), why));
                }
                uses.push((who, w.clone()));
            }
            service_waypoint.push((s, w));
        }
        // The namespace's waypoint named for the pod and for a Service of it: said once, for
        // the Service (a missing Gateway cannot tell which traffic it would take).
        if let Some((who, w)) = uses.first()
            && who.starts_with("Pod ")
            && w.by.starts_with("namespace label")
            && uses
                .iter()
                .skip(1)
                .any(|(_, sw)| sw.full_name() == w.full_name())
        {
            uses.remove(0);
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
                let wrong = mismatch
                    .iter()
                    .find(|(m, _)| m == who)
                    .map(|(_, why)| format!("Gateway {} {why}", w.full_name()));
                let judged = match wrong {
                    Some(why) => Ok(Some(why)),
                    None => judge(ctx, w),
                };
                match judged {
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
                            MD0113::message(
                                who.clone(),
                                w.full_name(),
                                w.by.clone(),
                                problem.clone(),
                            ),
                            Some(self.pod_ref()),
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
                                MD0404::message(name.clone(), target.clone(), why.clone()),
                                Some(self.pod_ref()),
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
                            MD0403::message(
                                name.clone(),
                                format!("Pod {}", self.full_name()),
                                gap.clone(),
                            ),
                            Some(self.pod_ref()),
                        ));
                        gaps.push(format!("AuthorizationPolicy {name}: {gap}"));
                        // istiod says the same on the policy when it converts it for ztunnel.
                        if let Some(c) = crate::istio::config::gateway_api::conditions(&p.status)
                            .into_iter()
                            .find(|c| c.type_ == "ZtunnelAccepted")
                        {
                            self.evidence.push(evidence(
                                format!("AuthorizationPolicy {name} status"),
                                format!(
                                    "ZtunnelAccepted {} ({}): {}",
                                    c.status, c.reason, c.message
                                ),
                            ));
                        }
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
        let proxy_only = self.proxy_only_config(&service_waypoint);
        found_any |= !proxy_only.is_empty();
        gaps.extend(proxy_only);
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
                    "ztunnel carries the pod's traffic, but it works at L4 only: {}.",
                    gaps.join("; ")
                ),
            );
        }
        found_any
    }
}

const PROXY_ONLY_CHECK: &str =
    "a proxy applies the RequestAuthentications, Telemetries, WasmPlugins and routes for the pod";

/// How an object of a proxy-only kind attaches: its non-empty `selector`, its Service targets.
fn attachment(o: &ConfigObject) -> (Option<BTreeMap<String, String>>, Vec<PolicyTargetRef>) {
    let (selector, mut refs, one) = match o.kind.as_str() {
        "RequestAuthentication" => {
            let Some(r) = typed::<RequestAuthentication>(o) else {
                return (None, vec![]);
            };
            (Some(r.selector.match_labels), r.target_refs, r.target_ref)
        }
        "Telemetry" => {
            let Some(t) = typed::<Telemetry>(o) else {
                return (None, vec![]);
            };
            (
                t.selector.map(|s| s.match_labels),
                t.target_refs,
                t.target_ref,
            )
        }
        "WasmPlugin" => {
            let Some(w) = typed::<WasmPlugin>(o) else {
                return (None, vec![]);
            };
            (
                w.selector.map(|s| s.match_labels),
                w.target_refs,
                w.target_ref,
            )
        }
        _ => return (None, vec![]),
    };
    refs.extend(one);
    (selector.filter(|s| !s.is_empty()), refs)
}

impl<'a> Builder<'a> {
    /// MD0412 and MD0413 for a captured ambient pod: the RequestAuthentications, Telemetries and
    /// WasmPlugins that select it (nothing applies them), and those attached to a Service of it,
    /// the VirtualServices with HTTP routes for one and the HTTPRoutes and GRPCRoutes whose
    /// parent is one, when that Service has no usable waypoint. The gaps, for the verdict.
    fn proxy_only_config(&mut self, services: &[(&Service, Option<WaypointRef>)]) -> Vec<String> {
        let ctx = &self.ctx.ambient;
        let objects = match &ctx.proxy_only_config {
            Lookup::Found(o) => o,
            Lookup::Missing => return Vec::new(),
            Lookup::Unknown(r) => {
                self.checks.push(check(
                    PROXY_ONLY_CHECK,
                    CheckStatus::Unknown,
                    format!("the RequestAuthentications, Telemetries, WasmPlugins and routes could not be read: {r}"),
                ));
                return Vec::new();
            }
        };
        let empty = BTreeMap::new();
        let labels = self.pod.metadata.labels.as_ref().unwrap_or(&empty);
        // Why a Service that selects the pod has no usable waypoint.
        let without = |name: &str| -> Option<String> {
            let (_, w) = services.iter().find(|(s, _)| s.name() == name)?;
            match w {
                None => Some(
                    "names no waypoint (istio.io/use-waypoint on it or its namespace)".to_string(),
                ),
                Some(w) => match judge(ctx, w) {
                    Ok(Some(problem)) => Some(format!(
                        "uses waypoint {} ({}), but {problem}",
                        w.full_name(),
                        w.by
                    )),
                    _ => None,
                },
            }
        };
        let mut gaps = Vec::new();
        let mut findings = Vec::new();
        let mut applied = 0;
        for o in objects {
            let ons = o.metadata.namespace.as_deref().unwrap_or("");
            let name = format!("{ons}/{}", o.metadata.name.as_deref().unwrap_or(""));
            let kind = o.kind.as_str();
            // The Services of the pod the object is for, and what is lost without a waypoint.
            let mut targets: Vec<String> = Vec::new();
            let mut lost = waypoint::ROUTES_LOST;
            match kind {
                "VirtualService" => {
                    let Some(vs) = typed::<crate::istio::config::VirtualService>(o) else {
                        continue;
                    };
                    let mesh = vs.gateways.is_empty() || vs.gateways.iter().any(|g| g == "mesh");
                    if !mesh || vs.http.is_empty() {
                        continue;
                    }
                    for host in &vs.hosts {
                        if let Some((sns, sname)) = waypoint::service_of_host(host, ons)
                            && sns == self.namespace
                        {
                            targets.push(sname.to_string());
                        }
                    }
                }
                "HTTPRoute" | "GRPCRoute" => {
                    let Some(route) = typed::<crate::istio::config::Route>(o) else {
                        continue;
                    };
                    for p in &route.parent_refs {
                        let core = p
                            .group
                            .as_deref()
                            .is_none_or(|g| g.is_empty() || g == "core");
                        if p.kind.as_deref() == Some("Service")
                            && core
                            && p.namespace.as_deref().unwrap_or(ons) == self.namespace
                        {
                            targets.push(p.name.clone());
                        }
                    }
                }
                _ => {
                    let Some((_, skips, lost_here)) =
                        waypoint::PROXY_ONLY_KINDS.iter().find(|(k, ..)| *k == kind)
                    else {
                        continue;
                    };
                    let (selector, refs) = attachment(o);
                    if refs.is_empty() {
                        if ons == self.namespace
                            && selector.is_some_and(|s| selector::labels_match(&s, labels))
                        {
                            applied += 1;
                            findings.push(Finding::new(
                                crate::findings::messages::MD0412::message(
                                    kind.to_string(),
                                    name.clone(),
                                    format!("Pod {}", self.full_name()),
                                    skips.to_string(),
                                ),
                                Some(self.pod_ref()),
                            ));
                            gaps.push(format!(
                                "{kind} {name} selects it, and ztunnel does not {skips}: nothing applies it"
                            ));
                        }
                        continue;
                    }
                    lost = lost_here;
                    for r in refs.iter().filter(|r| r.kind == "Service") {
                        let rns = if r.namespace.is_empty() {
                            ons
                        } else {
                            r.namespace.as_str()
                        };
                        if rns == self.namespace {
                            targets.push(r.name.clone());
                        }
                    }
                }
            }
            targets.sort();
            targets.dedup();
            for t in targets {
                if !services.iter().any(|(s, _)| s.name() == t) {
                    continue;
                }
                applied += 1;
                let Some(why) = without(&t) else { continue };
                let service = format!("{}/{t}", self.namespace);
                findings.push(Finding::new(
                    crate::findings::messages::MD0413::message(
                        kind.to_string(),
                        name.clone(),
                        service.clone(),
                        why.clone(),
                        lost.to_string(),
                    ),
                    Some(self.pod_ref()),
                ));
                gaps.push(format!(
                    "{kind} {name} is for Service {service}, which {why}: {lost}"
                ));
            }
        }
        if applied > 0 {
            if gaps.is_empty() {
                self.checks.push(check(
                    PROXY_ONLY_CHECK,
                    CheckStatus::Pass,
                    format!("{applied} of them are for the pod; the waypoints of its Services apply each"),
                ));
            } else {
                self.checks
                    .push(check(PROXY_ONLY_CHECK, CheckStatus::Fail, gaps.join("; ")));
                self.findings.extend(findings);
            }
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{from_json, good_context, namespace};
    use super::*;
    use serde_json::json;

    fn ready(name: &str, labels: serde_json::Value, ns: &str) -> Pod {
        from_json(json!({
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }))
    }

    /// A captured pod `app` (label app=web) in namespace amb, which names waypoint `waypoint`.
    fn captured() -> (Pod, PodContext) {
        let pod: Pod = from_json(json!({
            "metadata": {"name": "app", "namespace": "amb", "labels": {"app": "web"},
                "annotations": {"ambient.istio.io/redirection": "enabled"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "app"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        let ctx = PodContext {
            namespace: Lookup::Found(namespace(
                "amb",
                json!({"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}),
            )),
            ztunnel_pods: Lookup::Found(vec![ready("ztunnel-a", json!({}), "istio-system")]),
            cni_pods: Lookup::Found(vec![ready("istio-cni-node-a", json!({}), "istio-system")]),
            ..good_context()
        };
        (pod, ctx)
    }

    fn config(
        kind: &str,
        name: &str,
        spec: serde_json::Value,
        status: serde_json::Value,
    ) -> ConfigObject {
        ConfigObject {
            api_version: if kind == "Gateway" {
                "gateway.networking.k8s.io/v1"
            } else {
                "security.istio.io/v1"
            }
            .into(),
            kind: kind.into(),
            metadata: from_json(json!({"name": name, "namespace": "amb"})),
            spec,
            status,
        }
    }

    /// A Programmed waypoint Gateway for all traffic.
    fn waypoint_gateway() -> ConfigObject {
        let mut g = config(
            "Gateway",
            "waypoint",
            json!({"gatewayClassName": "istio-waypoint"}),
            json!({"conditions": [{"type": "Programmed", "status": "True", "reason": "Programmed"}]}),
        );
        g.metadata.labels = Some([("istio.io/waypoint-for".to_string(), "all".to_string())].into());
        g
    }

    #[test]
    fn which_traffic_the_waypoint_takes() {
        // The namespace names a waypoint for Services only (Istio's default): the pod's own
        // traffic does not use it, and no Service selects the pod: no waypoint to judge.
        let (pod, ctx) = captured();
        let mut gw = waypoint_gateway();
        gw.metadata.labels = None;
        let ready_pod = ready(
            "waypoint-1",
            json!({"gateway.networking.k8s.io/gateway-name": "waypoint"}),
            "amb",
        );
        let ctx = PodContext {
            ambient: AmbientContext {
                gateways: Lookup::Found(vec![gw]),
                gateway_pods: Lookup::Found(vec![ready_pod]),
                ..good_context().ambient
            },
            ..ctx
        };
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientCaptured, "{d:#?}");
        assert_eq!(
            d.checks
                .iter()
                .find(|c| c.name == WAYPOINT_CHECK)
                .unwrap()
                .status,
            CheckStatus::Skipped
        );
        // The pod's own label names it: a mistake.
        let mut pod = pod;
        pod.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("istio.io/use-waypoint".into(), "waypoint".into());
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::WaypointUnavailable, "{d:#?}");
        assert!(
            d.findings[0].message.contains("but Gateway amb/waypoint takes service traffic (istio.io/waypoint-for: service), not a workload's own traffic"),
            "{}",
            d.findings[0].message
        );
    }

    #[test]
    fn a_captured_pod_whose_waypoint_is_missing_or_has_no_ready_pod() {
        let (pod, ctx) = captured();
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::WaypointUnavailable, "{d:#?}");
        assert_eq!(d.findings[0].code(), "MD0113");
        assert_eq!(
            d.findings[0].message,
            "Pod amb/app uses waypoint amb/waypoint (namespace label istio.io/use-waypoint=waypoint), but no Gateway amb/waypoint exists (create it with: istioctl waypoint apply -n amb --name waypoint): traffic to it does not go through a waypoint, so no L7 policy, routing or telemetry of the waypoint applies to it."
        );
        assert!(!d.incomplete());
        // The Gateway exists and is Programmed, its pod is not ready (as on the real node).
        let mut not_ready = ready(
            "waypoint-1",
            json!({"gateway.networking.k8s.io/gateway-name": "waypoint"}),
            "amb",
        );
        not_ready
            .status
            .as_mut()
            .unwrap()
            .conditions
            .as_mut()
            .unwrap()[0]
            .status = "False".into();
        let ctx2 = PodContext {
            ambient: AmbientContext {
                gateways: Lookup::Found(vec![waypoint_gateway()]),
                gateway_pods: Lookup::Found(vec![not_ready]),
                ..good_context().ambient
            },
            ..ctx
        };
        let d = diagnose(&pod, &ctx2, None);
        assert_eq!(d.verdict.kind, VerdictKind::WaypointUnavailable);
        assert!(
            d.verdict
                .summary
                .contains("Gateway amb/waypoint has 1 pod(s), none ready"),
            "{}",
            d.verdict.summary
        );
    }

    #[test]
    fn a_usable_waypoint_is_a_pass_and_unreadable_gateways_are_unknown() {
        let (pod, ctx) = captured();
        let ctx = PodContext {
            ambient: AmbientContext {
                gateways: Lookup::Found(vec![waypoint_gateway()]),
                gateway_pods: Lookup::Found(vec![ready(
                    "waypoint-1",
                    json!({"gateway.networking.k8s.io/gateway-name": "waypoint"}),
                    "amb",
                )]),
                ..good_context().ambient
            },
            ..ctx
        };
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientCaptured, "{d:#?}");
        assert!(d.findings.is_empty());
        let c = d.checks.iter().find(|c| c.name == WAYPOINT_CHECK).unwrap();
        assert_eq!(c.status, CheckStatus::Pass);
        let (pod, ctx) = captured();
        let ctx = PodContext {
            ambient: AmbientContext {
                gateways: Lookup::Unknown("forbidden".into()),
                ..good_context().ambient
            },
            ..ctx
        };
        let d = diagnose(&pod, &ctx, None);
        // Never "captured and fine" about a waypoint not seen: the check is unknown, exit 69.
        assert_eq!(
            d.checks
                .iter()
                .find(|c| c.name == WAYPOINT_CHECK)
                .unwrap()
                .status,
            CheckStatus::Unknown
        );
        assert!(d.incomplete());
        assert!(
            d.not_read
                .iter()
                .any(|n| n.what.starts_with("gateways.gateway.networking.k8s.io"))
        );
    }

    #[test]
    fn l7_policies_on_a_captured_pod_and_policies_for_a_service_without_waypoint() {
        let (pod, mut ctx) = captured();
        ctx.namespace = Lookup::Found(namespace(
            "amb",
            json!({"istio.io/dataplane-mode": "ambient"}),
        ));
        let service: Service = from_json(json!({"metadata": {"name": "web", "namespace": "amb"},
            "spec": {"selector": {"app": "web"}}}));
        let status = json!({"conditions": [{"type": "ZtunnelAccepted", "status": "True", "reason": "UnsupportedValue",
            "message": "ztunnel does not support HTTP attributes (found: methods)."}]});
        ctx.ambient = AmbientContext {
            services: Lookup::Found(vec![service]),
            authorization_policies: Lookup::Found(vec![
                config(
                    "AuthorizationPolicy",
                    "get-only",
                    json!({"selector": {"matchLabels": {"app": "web"}},
                    "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]}),
                    status,
                ),
                config(
                    "AuthorizationPolicy",
                    "l4",
                    json!({"rules": [{"from": [{"source": {"namespaces": ["a"]}}]}]}),
                    json!(null),
                ),
                config(
                    "AuthorizationPolicy",
                    "svc",
                    json!({"targetRefs": [{"kind": "Service", "group": "", "name": "web"}],
                    "rules": [{"to": [{"operation": {"methods": ["GET"]}}]}]}),
                    json!(null),
                ),
            ]),
            ..good_context().ambient
        };
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientPolicyGap, "{d:#?}");
        let codes: Vec<&str> = d.findings.iter().map(|f| f.code()).collect();
        assert_eq!(codes, ["MD0403", "MD0404"]);
        assert!(d.findings[0].message.starts_with("AuthorizationPolicy amb/get-only applies to ambient workload(s) Pod amb/app, where ztunnel enforces it at L4: ztunnel does not see HTTP attributes (found: methods)"), "{}", d.findings[0].message);
        assert!(
            d.findings[1]
                .message
                .contains("targets Service amb/web, which names no waypoint")
        );
        assert!(d.evidence.iter().any(|e| {
            e.source == "AuthorizationPolicy amb/get-only status"
                && e.text
                    .starts_with("ZtunnelAccepted True (UnsupportedValue)")
        }));
        assert_eq!(
            d.checks
                .iter()
                .find(|c| c.name == WAYPOINT_CHECK)
                .unwrap()
                .status,
            CheckStatus::Skipped
        );
    }

    #[test]
    fn proxy_only_config_for_a_captured_pod_without_waypoint() {
        let (pod, mut ctx) = captured();
        ctx.namespace = Lookup::Found(namespace(
            "amb",
            json!({"istio.io/dataplane-mode": "ambient"}),
        ));
        let service: Service = from_json(json!({"metadata": {"name": "web", "namespace": "amb"},
            "spec": {"selector": {"app": "web"}}}));
        let mut vs = config(
            "VirtualService",
            "web-retries",
            json!({"hosts": ["web"], "http": [{"route": [{"destination": {"host": "web"}}]}]}),
            json!(null),
        );
        vs.api_version = "networking.istio.io/v1".into();
        ctx.ambient = AmbientContext {
            services: Lookup::Found(vec![service]),
            authorization_policies: Lookup::Found(vec![]),
            proxy_only_config: Lookup::Found(vec![
                config(
                    "RequestAuthentication",
                    "jwt",
                    json!({"selector": {"matchLabels": {"app": "web"}},
                        "jwtRules": [{"issuer": "https://issuer.example.com"}]}),
                    json!(null),
                ),
                config(
                    "RequestAuthentication",
                    "other",
                    json!({"selector": {"matchLabels": {"app": "other"}}}),
                    json!(null),
                ),
                vs,
            ]),
            ..good_context().ambient
        };
        let d = diagnose(&pod, &ctx, None);
        assert_eq!(d.verdict.kind, VerdictKind::AmbientPolicyGap, "{d:#?}");
        let codes: Vec<&str> = d.findings.iter().map(|f| f.code()).collect();
        assert_eq!(codes, ["MD0412", "MD0413"], "{d:#?}");
        assert!(
            d.findings[0].message.starts_with(
                "RequestAuthentication amb/jwt selects ambient workload(s) Pod amb/app, which have no proxy of their own: ztunnel carries their traffic at L4 and does not validate JWTs"
            ),
            "{}",
            d.findings[0].message
        );
        assert!(
            d.findings[1].message.starts_with(
                "VirtualService amb/web-retries is for Service amb/web, which names no waypoint"
            ),
            "{}",
            d.findings[1].message
        );
        let c = d
            .checks
            .iter()
            .find(|c| c.name == PROXY_ONLY_CHECK)
            .unwrap();
        assert_eq!(c.status, CheckStatus::Fail);
        // Not read: the check is unknown, never a pass.
        let (pod, mut ctx) = captured();
        ctx.ambient.proxy_only_config = Lookup::Unknown("forbidden".into());
        let d = diagnose(&pod, &ctx, None);
        let c = d.checks.iter().find(|c| c.name == PROXY_ONLY_CHECK);
        assert_eq!(c.map(|c| c.status), Some(CheckStatus::Unknown), "{d:#?}");
    }
}
