//! Policies attached to a Gateway that applies nothing (MD0115, run by the analyzer
//! `ambient-l7`, files and live): an AuthorizationPolicy, RequestAuthentication, Telemetry or
//! WasmPlugin whose `targetRefs` (else its deprecated `targetRef`, as Istio's `GetTargetRefs`
//! reads them) name a Gateway API Gateway (`group: gateway.networking.k8s.io`, `kind:
//! Gateway`) that does not exist or, live, has no ready pod (a waypoint also: not Accepted or not
//! Programmed).
//!
//! As istiod attaches them (`WorkloadPolicyMatcher.ShouldAttachPolicy`), all four kinds honour
//! a Gateway targetRef the same way: the policy applies to the proxies labelled
//! `gateway.networking.k8s.io/gateway-name=NAME` in the policy's namespace, a gateway's or a
//! waypoint's alike; a `namespace` other than the policy's never matches (Istio's validation
//! refuses it, IST0106/MD0003), and neither do other groups or kinds (validation too). So the
//! Gateway's existence and its ready pods decide (a gateway whose `Programmed` is `False` for
//! want of a LoadBalancer address still applies the policy with its ready pods); for a
//! waypoint also its `Accepted` and `Programmed` conditions, as ztunnel reaches it by its
//! address.

use super::Input;
use super::ambient::{Reads, gateway_pods_ready};
use crate::findings::messages;
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::PolicyTargetRef;
use crate::istio::config::gateway_api::GATEWAY_API_GROUP;
use crate::istio::waypoint::{GATEWAY_NAME_LABEL, PROXY_ONLY_KINDS, WAYPOINT_CLASS, gateway_state};
use crate::kube::snapshot::{ConfigObject, Located, Object};

/// One policy with a targetRef to a Gateway: its kind, resource, what it loses when nothing
/// applies it, and the refs.
struct Attached<'a> {
    kind: &'static str,
    resource: &'a Located<ConfigObject>,
    effect: String,
    refs: Vec<&'a PolicyTargetRef>,
}

/// Why a Gateway without a Programmed condition is not taken.
const NO_PROGRAMMED: &str =
    "no controller has taken it (is istiod running, and is its class one istiod serves?)";

/// Istio's `GetTargetRefs`: `targetRefs`, else the deprecated `targetRef`.
fn target_refs<'a>(
    refs: &'a [PolicyTargetRef],
    legacy: Option<&'a PolicyTargetRef>,
) -> Vec<&'a PolicyTargetRef> {
    if refs.is_empty() {
        legacy.into_iter().collect()
    } else {
        refs.iter().collect()
    }
}

/// What an AuthorizationPolicy enforced nowhere does not do, by its action.
fn authz_effect(action: &str, provider: Option<&str>) -> String {
    match action {
        "DENY" => {
            "requests its rules match are not denied (they would get 403 \"RBAC: access denied\")"
                .to_string()
        }
        "CUSTOM" => format!(
            "its external authorizer{} is never asked: requests are not checked by it",
            provider.map(|p| format!(" ({p})")).unwrap_or_default()
        ),
        "AUDIT" => "the requests it matches are not audited".to_string(),
        _ => "requests its rules do not match are not refused by it (it would answer them 403 \"RBAC: access denied\")".to_string(),
    }
}

fn lost(kind: &str) -> String {
    PROXY_ONLY_KINDS
        .iter()
        .find(|(k, ..)| *k == kind)
        .map_or("", |(_, _, lost)| lost)
        .to_string()
}

fn attached<'a>(input: &'a Input) -> Vec<Attached<'a>> {
    let c = &input.config;
    let mut out = Vec::new();
    for p in &c.authorization_policies {
        let action = if p.spec.action.is_empty() {
            "ALLOW"
        } else {
            p.spec.action.as_str()
        };
        out.push(Attached {
            kind: "AuthorizationPolicy",
            resource: p.resource,
            effect: authz_effect(action, p.spec.provider.as_ref().map(|p| p.name.as_str())),
            refs: target_refs(&p.spec.target_refs, p.spec.target_ref.as_ref()),
        });
    }
    for r in &c.request_authentications {
        out.push(Attached {
            kind: "RequestAuthentication",
            resource: r.resource,
            effect: "a request with an invalid or expired JWT is not refused by it (401), and no request principal is taken from its tokens".to_string(),
            refs: target_refs(&r.spec.target_refs, r.spec.target_ref.as_ref()),
        });
    }
    for t in &c.telemetries {
        out.push(Attached {
            kind: "Telemetry",
            resource: t.resource,
            effect: lost("Telemetry"),
            refs: target_refs(&t.spec.target_refs, t.spec.target_ref.as_ref()),
        });
    }
    for w in &c.wasm_plugins {
        out.push(Attached {
            kind: "WasmPlugin",
            resource: w.resource,
            effect: lost("WasmPlugin"),
            refs: target_refs(&w.spec.target_refs, w.spec.target_ref.as_ref()),
        });
    }
    out
}

/// MD0115 for every targetRef to a Gateway that applies nothing.
pub(super) fn analyze(input: &Input, reads: &Reads, out: &mut Vec<Finding>) {
    if !reads.gateways {
        return;
    }
    for a in attached(input) {
        let ns = a.resource.object.namespace().unwrap_or("");
        let policy = format!("{ns}/{}", a.resource.object.name());
        let mut seen: Vec<&str> = Vec::new();
        for r in a.refs {
            let group_kind = r.group == GATEWAY_API_GROUP && r.kind == "Gateway";
            if !group_kind || !(r.namespace.is_empty() || r.namespace == ns) || r.name.is_empty() {
                continue;
            }
            if seen.contains(&r.name.as_str()) {
                continue;
            }
            seen.push(&r.name);
            let full = format!("{ns}/{}", r.name);
            let gateway = input
                .config
                .k8s_gateways
                .iter()
                .find(|g| g.namespace() == ns && g.name() == r.name);
            let (problem, fix) = match gateway {
                None => (
                    format!(
                        "does not exist (no Gateway API Gateway of that name in namespace {ns})"
                    ),
                    format!(
                        "Correct the targetRef's name in {} {policy}, or create Gateway {full}.",
                        a.kind
                    ),
                ),
                // A Gateway from a file has no status: only its existence is judged.
                Some(g) if g.resource.origin.file.is_some() || !reads.pods => continue,
                Some(g) => {
                    let status = &g.resource.object.status;
                    let pods = gateway_pods_ready(input.snapshot, ns, &r.name);
                    let state = |pods: &[bool]| gateway_state(status, pods, &r.name, NO_PROGRAMMED);
                    let pods_fix = format!(
                        "Find why it has no ready pod: kubectl get pods -n {ns} -l {GATEWAY_NAME_LABEL}={}.",
                        r.name
                    );
                    if g.spec.gateway_class_name == WAYPOINT_CLASS {
                        // ztunnel reaches a waypoint by the address its controller gives it.
                        let Some(why) = state(&pods) else {
                            continue;
                        };
                        if state(&[true]).is_none() {
                            (why, pods_fix)
                        } else {
                            (
                                why,
                                format!(
                                    "Fix the Gateway: kubectl describe gateway {} -n {ns} shows what its controller says.",
                                    r.name
                                ),
                            )
                        }
                    } else if pods.iter().any(|ready| *ready) {
                        // A gateway's ready proxies apply the policy, Programmed or not (an
                        // address that a LoadBalancer never assigned does not stop them).
                        continue;
                    } else {
                        let counted = if pods.is_empty() {
                            "no pod".to_string()
                        } else {
                            format!("{} pod(s), none ready", pods.len())
                        };
                        let cause = state(&[true])
                            .map(|c| format!("; it {c}"))
                            .unwrap_or_default();
                        (
                            format!("has {counted} ({GATEWAY_NAME_LABEL}={}){cause}", r.name),
                            pods_fix,
                        )
                    }
                }
            };
            out.push(Finding::new(
                messages::MD0115::message(
                    a.kind.to_string(),
                    policy.clone(),
                    full,
                    problem,
                    a.effect.clone(),
                    fix,
                ),
                Some(ResourceRef::of(a.resource)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::kind::Kind;
    use crate::kube::snapshot::Snapshot;
    use serde_json::{Value, json};

    fn config(
        api_version: &str,
        kind: &str,
        name: &str,
        spec: Value,
        status: Value,
    ) -> Located<ConfigObject> {
        Located::new(ConfigObject {
            api_version: api_version.into(),
            kind: kind.into(),
            metadata: serde_json::from_value(json!({"name": name, "namespace": "edge"})).unwrap(),
            spec,
            status,
        })
    }

    fn gateway(class: &str, status: Value) -> Located<ConfigObject> {
        config(
            "gateway.networking.k8s.io/v1",
            "Gateway",
            "public",
            json!({"gatewayClassName": class, "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}),
            status,
        )
    }

    fn pod(ready: bool) -> Located<k8s_openapi::api::core::v1::Pod> {
        Located::new(
            serde_json::from_value(json!({
                "metadata": {"name": "public-istio-1", "namespace": "edge",
                    "labels": {"gateway.networking.k8s.io/gateway-name": "public"}},
                "spec": {"containers": [{"name": "istio-proxy", "image": "proxyv2"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
            }))
            .unwrap(),
        )
    }

    /// A DENY AuthorizationPolicy on Gateway edge/public, live.
    fn policy() -> Located<ConfigObject> {
        config(
            "security.istio.io/v1",
            "AuthorizationPolicy",
            "deny-admin",
            json!({"action": "DENY", "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public"}],
                   "rules": [{"to": [{"operation": {"paths": ["/admin"]}}]}]}),
            Value::Null,
        )
    }

    fn run(snapshot: &Snapshot) -> Vec<String> {
        let input = Input::of(snapshot);
        let mut out = Vec::new();
        analyze(&input, &Reads::of(snapshot), &mut out);
        out.into_iter().map(|f| f.message).collect()
    }

    fn programmed(status: &str) -> Value {
        json!({"conditions": [{"type": "Programmed", "status": status, "reason": "Invalid", "message": "no addresses "}]})
    }

    #[test]
    fn a_live_waypoint_that_is_not_programmed_or_has_no_ready_pod() {
        let waypoint = |status| gateway("istio-waypoint", status);
        let mut s = Snapshot {
            config: vec![policy(), waypoint(programmed("False"))],
            pods: vec![pod(true)],
            ..Snapshot::default()
        };
        assert_eq!(
            run(&s),
            [
                "AuthorizationPolicy edge/deny-admin targets Gateway edge/public, which is not Programmed (Invalid: no addresses): nothing applies the policy, so requests its rules match are not denied (they would get 403 \"RBAC: access denied\"). Fix the Gateway: kubectl describe gateway public -n edge shows what its controller says."
            ]
        );
        s.config[1] = waypoint(programmed("True"));
        s.pods = vec![pod(false)];
        assert_eq!(
            run(&s),
            [
                "AuthorizationPolicy edge/deny-admin targets Gateway edge/public, which has 1 pod(s), none ready (gateway.networking.k8s.io/gateway-name=public): nothing applies the policy, so requests its rules match are not denied (they would get 403 \"RBAC: access denied\"). Find why it has no ready pod: kubectl get pods -n edge -l gateway.networking.k8s.io/gateway-name=public."
            ]
        );
        s.config[1] = waypoint(Value::Null);
        let none = run(&s);
        assert!(
            none[0].contains("which has no Programmed condition: no controller has taken it"),
            "{none:?}"
        );
        // The negative twins: Programmed with a ready pod; pods not read (an existing Gateway
        // is then not judged); Gateways not read (a missing one is then not said).
        s.config[1] = waypoint(programmed("True"));
        s.pods = vec![pod(false), pod(true)];
        assert!(run(&s).is_empty());
        s.pods.clear();
        s.unavailable.insert(Kind::Pods, "forbidden".into());
        assert!(run(&s).is_empty());
        s.config.pop();
        s.unavailable
            .insert(Kind::KubernetesGateways, "forbidden".into());
        assert!(run(&s).is_empty());
    }

    #[test]
    fn an_ingress_gateway_applies_policies_with_its_ready_pods_programmed_or_not() {
        // As on the real node: Programmed False for want of a LoadBalancer address, its pod
        // ready: the pod applies the policy.
        let mut s = Snapshot {
            config: vec![policy(), gateway("istio", programmed("False"))],
            pods: vec![pod(true)],
            ..Snapshot::default()
        };
        assert!(run(&s).is_empty(), "{:?}", run(&s));
        s.pods.clear();
        assert_eq!(
            run(&s),
            [
                "AuthorizationPolicy edge/deny-admin targets Gateway edge/public, which has no pod (gateway.networking.k8s.io/gateway-name=public); it is not Programmed (Invalid: no addresses): nothing applies the policy, so requests its rules match are not denied (they would get 403 \"RBAC: access denied\"). Find why it has no ready pod: kubectl get pods -n edge -l gateway.networking.k8s.io/gateway-name=public."
            ]
        );
    }

    #[test]
    fn only_gateway_refs_of_the_policys_namespace_count() {
        let mut p = policy();
        p.object.spec = json!({"targetRefs": [
            {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public", "namespace": "other"},
            {"group": "", "kind": "Service", "name": "public"},
            {"group": "networking.istio.io", "kind": "Gateway", "name": "public"}]});
        let s = Snapshot {
            config: vec![p],
            ..Snapshot::default()
        };
        assert!(run(&s).is_empty(), "{:?}", run(&s));
    }

    #[test]
    fn what_a_policy_enforced_nowhere_does_not_do() {
        assert!(authz_effect("", None).starts_with("requests its rules do not match"));
        assert!(authz_effect("DENY", None).contains("are not denied"));
        assert_eq!(
            authz_effect("CUSTOM", Some("ext-authz")),
            "its external authorizer (ext-authz) is never asked: requests are not checked by it"
        );
        assert_eq!(lost("WasmPlugin"), "its Wasm plugin never runs");
    }

    #[test]
    fn target_refs_before_the_deprecated_target_ref() {
        let r = |name: &str| PolicyTargetRef {
            group: GATEWAY_API_GROUP.into(),
            kind: "Gateway".into(),
            name: name.into(),
            namespace: String::new(),
        };
        let (refs, legacy) = (vec![r("a")], r("b"));
        let names = |v: Vec<&PolicyTargetRef>| v.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(target_refs(&refs, Some(&legacy))), ["a"]);
        assert_eq!(names(target_refs(&[], Some(&legacy))), ["b"]);
    }
}
