//! AuthorizationPolicy evaluated for one request at one sidecar, in Istio's order: CUSTOM, then
//! DENY, then ALLOW (when any ALLOW policy applies to the workload, a request must match one of
//! them; with none, everything is allowed). AUDIT decides nothing.
//!
//! The policies that apply to a sidecar: those in the root namespace and in the workload's
//! namespace whose `selector` is absent or matches the workload's labels. Policies with
//! `targetRef`/`targetRefs` apply to gateways and waypoints, not sidecars, and are left out.
//!
//! The peer's identity exists only over Istio's mTLS: `principals`, `namespaces`,
//! `serviceAccounts` and `trustDomains` do not match a plaintext request (and their `not`
//! forms do). A rule that names something mesh-doctor cannot know about the request (a JWT
//! claim, a `when` key it does not model, a path template) makes the answer unknown, never a
//! guess. For a TCP connection, HTTP-only fields make an ALLOW rule match nothing and are
//! dropped from a DENY rule (so it matches more), as Istio builds them.

use std::net::IpAddr;

use super::config::{
    AuthorizationPolicy, AuthorizationRule, Condition, Config, Labels, Operation, Source, Typed,
};
use crate::kube::netpol::cidr_contains;

/// Who sends the request, as the server's sidecar sees it.
#[derive(Clone, Debug, Default)]
pub struct Peer {
    /// `cluster.local/ns/<ns>/sa/<sa>` over Istio's mTLS, `None` over plaintext.
    pub principal: Option<String>,
    /// The client's IP, when known (a live pod).
    pub ip: Option<IpAddr>,
}

impl Peer {
    fn namespace(&self) -> Option<&str> {
        let p = self.principal.as_deref()?;
        let rest = p.split_once("/ns/")?.1;
        Some(rest.split('/').next().unwrap_or(rest))
    }
    fn service_account(&self) -> Option<String> {
        let p = self.principal.as_deref()?;
        let rest = p.split_once("/ns/")?.1;
        let (ns, sa) = rest.split_once("/sa/")?;
        Some(format!("{ns}/{sa}"))
    }
    fn trust_domain(&self) -> Option<&str> {
        self.principal.as_deref()?.split('/').next()
    }
}

/// What the request asks for at the server.
#[derive(Clone, Debug, Default)]
pub struct Call<'r> {
    /// The workload (container) port.
    pub port: u32,
    /// `None` for a TCP connection.
    pub http: Option<HttpCall<'r>>,
}

#[derive(Clone, Copy, Debug)]
pub struct HttpCall<'r> {
    pub host: &'r str,
    pub method: &'r str,
    pub path: &'r str,
    pub headers: &'r [(String, String)],
}

/// A three-way answer: a rule (or field) matches, does not, or cannot be told, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    Yes,
    No,
    Unknown(String),
}

impl Match {
    fn and(self, other: impl FnOnce() -> Match) -> Match {
        match self {
            Match::No => Match::No,
            Match::Yes => other(),
            Match::Unknown(r) => match other() {
                Match::No => Match::No,
                _ => Match::Unknown(r),
            },
        }
    }
    fn any(items: impl IntoIterator<Item = Match>) -> Match {
        let mut unknown = None;
        for m in items {
            match m {
                Match::Yes => return Match::Yes,
                Match::Unknown(r) => {
                    unknown.get_or_insert(r);
                }
                Match::No => {}
            }
        }
        unknown.map_or(Match::No, Match::Unknown)
    }
    fn from(b: bool) -> Match {
        if b { Match::Yes } else { Match::No }
    }
}

/// The verdict of the policies for one request.
#[derive(Debug)]
pub enum Verdict<'c, 'a> {
    /// No policy stands in the way; `by` names the ALLOW policy that let it in, if any.
    Allowed {
        by: Option<&'c Typed<'a, AuthorizationPolicy>>,
    },
    /// A DENY policy matches: 403 `RBAC: access denied`.
    Denied {
        policy: &'c Typed<'a, AuthorizationPolicy>,
    },
    /// ALLOW policies apply and none matches: 403 `RBAC: access denied`.
    NotAllowed {
        policies: Vec<&'c Typed<'a, AuthorizationPolicy>>,
    },
    /// A CUSTOM policy sends the request to its external authorizer, whose answer is not known.
    External {
        policy: &'c Typed<'a, AuthorizationPolicy>,
    },
    /// A policy's match cannot be told.
    Unknown {
        policy: &'c Typed<'a, AuthorizationPolicy>,
        reason: String,
    },
}

/// Istio's string match of identities and paths: `*` any non-empty value, `prefix*`,
/// `*suffix`, else exact.
fn value_matches(pattern: &str, value: &str) -> bool {
    if pattern == "*" {
        return !value.is_empty();
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return value.starts_with(prefix);
    }
    if let Some(suffix) = pattern.strip_prefix('*') {
        return value.ends_with(suffix);
    }
    pattern == value
}

/// A field with its values and its `not` values, against a value that may be absent.
fn field(values: &[String], not_values: &[String], value: Option<&str>) -> Match {
    let v = value.unwrap_or("");
    let positive = values.is_empty() || values.iter().any(|p| value_matches(p, v));
    let negative = not_values.iter().any(|p| value_matches(p, v));
    Match::from(positive && !negative)
}

fn ip_field(values: &[String], not_values: &[String], ip: Option<IpAddr>, what: &str) -> Match {
    if values.is_empty() && not_values.is_empty() {
        return Match::Yes;
    }
    let Some(ip) = ip else {
        return Match::Unknown(format!(
            "{what} needs the client's IP, which is not known here"
        ));
    };
    let positive = values.is_empty() || values.iter().any(|c| cidr_contains(c, ip));
    let negative = not_values.iter().any(|c| cidr_contains(c, ip));
    Match::from(positive && !negative)
}

fn source_matches(s: &Source, peer: &Peer) -> Match {
    let principal = peer.principal.as_deref();
    let sa = peer.service_account();
    field(&s.principals, &s.not_principals, principal)
        .and(|| field(&s.namespaces, &s.not_namespaces, peer.namespace()))
        .and(|| field(&s.service_accounts, &s.not_service_accounts, sa.as_deref()))
        .and(|| field(&s.trust_domains, &s.not_trust_domains, peer.trust_domain()))
        .and(|| ip_field(&s.ip_blocks, &s.not_ip_blocks, peer.ip, "ipBlocks"))
        .and(|| {
            ip_field(
                &s.remote_ip_blocks,
                &s.not_remote_ip_blocks,
                peer.ip,
                "remoteIpBlocks",
            )
        })
        // A request without a JWT has no request principal.
        .and(|| field(&s.request_principals, &s.not_request_principals, None))
}

fn path_field(values: &[String], not_values: &[String], path: &str) -> Match {
    if values.iter().chain(not_values).any(|p| p.contains('{')) {
        return Match::Unknown("a path template ({*} or {**}) is not evaluated".into());
    }
    field(values, not_values, Some(path))
}

fn host_field(values: &[String], not_values: &[String], host: &str) -> Match {
    let lower = |v: &[String]| v.iter().map(|s| s.to_ascii_lowercase()).collect::<Vec<_>>();
    field(
        &lower(values),
        &lower(not_values),
        Some(&host.to_ascii_lowercase()),
    )
}

fn has_http_fields(o: &Operation) -> bool {
    !(o.hosts.is_empty()
        && o.not_hosts.is_empty()
        && o.methods.is_empty()
        && o.not_methods.is_empty()
        && o.paths.is_empty()
        && o.not_paths.is_empty())
}

fn operation_matches(o: &Operation, call: &Call<'_>, deny: bool) -> Match {
    let port = call.port.to_string();
    let ports = field(&o.ports, &o.not_ports, Some(&port));
    match &call.http {
        Some(http) => ports
            .and(|| field(&o.methods, &o.not_methods, Some(http.method)))
            .and(|| path_field(&o.paths, &o.not_paths, http.path))
            .and(|| host_field(&o.hosts, &o.not_hosts, http.host)),
        None if has_http_fields(o) && !deny => Match::No,
        None => ports,
    }
}

fn condition_matches(c: &Condition, peer: &Peer, call: &Call<'_>, deny: bool) -> Match {
    let key = c.key.as_str();
    let value: Option<String> = match key {
        "source.principal" => peer.principal.clone(),
        "source.namespace" => peer.namespace().map(String::from),
        "source.ip" | "remote.ip" => {
            return ip_field(&c.values, &c.not_values, peer.ip, key);
        }
        "destination.port" => Some(call.port.to_string()),
        "request.auth.principal" | "request.auth.audiences" | "request.auth.presenter" => None,
        _ if key.starts_with("request.auth.claims") => None,
        _ if key.starts_with("request.headers[") => {
            let Some(http) = &call.http else {
                return if deny { Match::Yes } else { Match::No };
            };
            let name = key
                .trim_start_matches("request.headers[")
                .trim_end_matches(']')
                .to_ascii_lowercase();
            http.headers
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        }
        _ => return Match::Unknown(format!("the condition key {key} is not evaluated")),
    };
    field(&c.values, &c.not_values, value.as_deref())
}

/// Whether one rule matches the request (a rule with nothing set matches every request).
fn rule_matches(rule: &AuthorizationRule, peer: &Peer, call: &Call<'_>, deny: bool) -> Match {
    let from = if rule.from.is_empty() {
        Match::Yes
    } else {
        Match::any(rule.from.iter().map(|f| {
            f.source
                .as_ref()
                .map_or(Match::Yes, |s| source_matches(s, peer))
        }))
    };
    from.and(|| {
        if rule.to.is_empty() {
            Match::Yes
        } else {
            Match::any(rule.to.iter().map(|t| {
                t.operation
                    .as_ref()
                    .map_or(Match::Yes, |o| operation_matches(o, call, deny))
            }))
        }
    })
    .and(|| {
        rule.when.iter().fold(Match::Yes, |acc, c| {
            acc.and(|| condition_matches(c, peer, call, deny))
        })
    })
}

/// Whether a policy matches the request: one of its rules does (no rules: it matches nothing).
pub fn policy_matches(policy: &AuthorizationPolicy, peer: &Peer, call: &Call<'_>) -> Match {
    let deny = policy.action == "DENY";
    Match::any(
        policy
            .rules
            .iter()
            .map(|rule| rule_matches(rule, peer, call, deny)),
    )
}

/// A policy's action, `ALLOW` when empty (Istio's default).
pub fn action(policy: &AuthorizationPolicy) -> &str {
    if policy.action.is_empty() {
        "ALLOW"
    } else {
        &policy.action
    }
}

/// The fields of a source that a request without a peer identity (plaintext: no client
/// certificate) can never match: the positive identity lists. Their `not` forms match it.
fn source_identity_fields(s: &Source) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (values, name) in [
        (&s.principals, "source.principals"),
        (&s.namespaces, "source.namespaces"),
        (&s.service_accounts, "source.serviceAccounts"),
        (&s.trust_domains, "source.trustDomains"),
    ] {
        if !values.is_empty() {
            out.push(name);
        }
    }
    out
}

/// The `when` keys that exist only over Istio's mTLS.
const IDENTITY_KEYS: &[&str] = &["source.principal", "source.namespace", "connection.sni"];

/// Why a rule can never match a request without a peer identity (a plaintext connection): the
/// identity fields it requires (every `from` source names one, or a `when` on an identity key
/// lists `values`); empty when a plaintext request can match it.
pub fn identity_gate(rule: &AuthorizationRule) -> Vec<&'static str> {
    let mut fields = Vec::new();
    let sources: Vec<Vec<&'static str>> = rule
        .from
        .iter()
        .map(|f| {
            f.source
                .as_ref()
                .map(source_identity_fields)
                .unwrap_or_default()
        })
        .collect();
    if !sources.is_empty() && sources.iter().all(|s| !s.is_empty()) {
        for f in sources.into_iter().flatten() {
            if !fields.contains(&f) {
                fields.push(f);
            }
        }
    }
    for c in rule.when.iter() {
        if let Some(key) = IDENTITY_KEYS.iter().find(|k| **k == c.key)
            && !c.values.is_empty()
        {
            let name: &'static str = match *key {
                "source.principal" => "when source.principal",
                "source.namespace" => "when source.namespace",
                _ => "when connection.sni",
            };
            if !fields.contains(&name) {
                fields.push(name);
            }
        }
    }
    fields
}

/// True when a rule can apply to requests on workload `port` (its `to` operations' `ports` and
/// `notPorts`; no `to`: every port).
pub fn rule_covers_port(rule: &AuthorizationRule, port: u32) -> bool {
    if rule.to.is_empty() {
        return true;
    }
    let port = port.to_string();
    rule.to.iter().any(|t| {
        t.operation.as_ref().is_none_or(|o| {
            (o.ports.is_empty() || o.ports.contains(&port)) && !o.not_ports.contains(&port)
        })
    })
}

/// The policies that apply to a sidecar workload in `namespace` with `labels`.
pub fn applying<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    namespace: &str,
    labels: &Labels,
) -> Vec<&'c Typed<'a, AuthorizationPolicy>> {
    let root = (namespace != root_namespace).then_some(root_namespace);
    let mut out: Vec<&'c Typed<'a, AuthorizationPolicy>> = config
        .authorization_policies_in(namespace)
        .chain(
            root.into_iter()
                .flat_map(|r| config.authorization_policies_in(r)),
        )
        .filter(|p| p.spec.target_ref.is_none() && p.spec.target_refs.is_empty())
        .filter(|p| {
            p.spec
                .selector
                .as_ref()
                .is_none_or(|s| s.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v)))
        })
        .collect();
    // In the list's order, as before the lookup by namespace.
    out.sort_by_key(|p| std::ptr::from_ref(*p) as usize);
    out
}

/// Istio's evaluation of `policies` for the request (see the module doc).
pub fn evaluate<'c, 'a>(
    policies: &[&'c Typed<'a, AuthorizationPolicy>],
    peer: &Peer,
    call: &Call<'_>,
) -> Verdict<'c, 'a> {
    let action = |p: &Typed<'_, AuthorizationPolicy>| {
        if p.spec.action.is_empty() {
            "ALLOW".to_string()
        } else {
            p.spec.action.clone()
        }
    };
    for policy in policies.iter().filter(|p| action(p) == "CUSTOM") {
        match policy_matches(&policy.spec, peer, call) {
            Match::Yes => return Verdict::External { policy },
            Match::Unknown(reason) => return Verdict::Unknown { policy, reason },
            Match::No => {}
        }
    }
    for policy in policies.iter().filter(|p| action(p) == "DENY") {
        match policy_matches(&policy.spec, peer, call) {
            Match::Yes => return Verdict::Denied { policy },
            Match::Unknown(reason) => return Verdict::Unknown { policy, reason },
            Match::No => {}
        }
    }
    let allows: Vec<&'c Typed<'a, AuthorizationPolicy>> = policies
        .iter()
        .copied()
        .filter(|p| action(p) == "ALLOW")
        .collect();
    if allows.is_empty() {
        return Verdict::Allowed { by: None };
    }
    let mut unknown = None;
    for policy in &allows {
        match policy_matches(&policy.spec, peer, call) {
            Match::Yes => return Verdict::Allowed { by: Some(policy) },
            Match::Unknown(reason) => {
                unknown.get_or_insert((*policy, reason));
            }
            Match::No => {}
        }
    }
    match unknown {
        Some((policy, reason)) => Verdict::Unknown { policy, reason },
        None => Verdict::NotAllowed { policies: allows },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: serde_json::Value) -> AuthorizationPolicy {
        serde_json::from_value(json).unwrap()
    }

    fn mtls_peer() -> Peer {
        Peer {
            principal: Some("cluster.local/ns/shop/sa/frontend".into()),
            ip: None,
        }
    }

    fn get<'r>(path: &'r str, headers: &'r [(String, String)]) -> Call<'r> {
        Call {
            port: 8080,
            http: Some(HttpCall {
                host: "server",
                method: "GET",
                path,
                headers,
            }),
        }
    }

    #[test]
    fn principals_and_namespaces_need_mtls() {
        let p = policy(
            serde_json::json!({"rules": [{"from": [{"source": {"namespaces": ["shop"]}}]}]}),
        );
        assert_eq!(policy_matches(&p, &mtls_peer(), &get("/", &[])), Match::Yes);
        assert_eq!(
            policy_matches(&p, &Peer::default(), &get("/", &[])),
            Match::No
        );
        let not = policy(
            serde_json::json!({"action": "DENY", "rules": [{"from": [{"source": {"notNamespaces": ["shop"]}}]}]}),
        );
        // Plaintext has no namespace: a DENY of "not shop" catches it.
        assert_eq!(
            policy_matches(&not, &Peer::default(), &get("/", &[])),
            Match::Yes
        );
    }

    #[test]
    fn operations_match_methods_paths_and_ports() {
        let p = policy(
            serde_json::json!({"rules": [{"to": [{"operation": {"methods": ["GET"], "paths": ["/api/*"], "ports": ["8080"]}}]}]}),
        );
        assert_eq!(
            policy_matches(&p, &mtls_peer(), &get("/api/x", &[])),
            Match::Yes
        );
        assert_eq!(
            policy_matches(&p, &mtls_peer(), &get("/other", &[])),
            Match::No
        );
        // Over TCP an ALLOW rule with HTTP fields matches nothing.
        let tcp = Call {
            port: 8080,
            http: None,
        };
        assert_eq!(policy_matches(&p, &mtls_peer(), &tcp), Match::No);
    }

    #[test]
    fn empty_rules_match_nothing_and_an_empty_rule_everything() {
        let none = policy(serde_json::json!({}));
        assert_eq!(
            policy_matches(&none, &mtls_peer(), &get("/", &[])),
            Match::No
        );
        let all = policy(serde_json::json!({"rules": [{}]}));
        assert_eq!(
            policy_matches(&all, &mtls_peer(), &get("/", &[])),
            Match::Yes
        );
    }

    #[test]
    fn unknown_conditions_are_unknown() {
        let p = policy(
            serde_json::json!({"rules": [{"when": [{"key": "experimental.envoy.filters.x", "values": ["1"]}]}]}),
        );
        assert!(matches!(
            policy_matches(&p, &mtls_peer(), &get("/", &[])),
            Match::Unknown(_)
        ));
        let h = policy(
            serde_json::json!({"rules": [{"when": [{"key": "request.headers[X-Team]", "values": ["a"]}]}]}),
        );
        let headers = [("x-team".to_string(), "a".to_string())];
        assert_eq!(
            policy_matches(&h, &mtls_peer(), &get("/", &headers)),
            Match::Yes
        );
        assert_eq!(policy_matches(&h, &mtls_peer(), &get("/", &[])), Match::No);
    }

    #[test]
    fn identity_gates_are_the_positive_identity_fields() {
        let rules = |j: serde_json::Value| policy(j).rules;
        let r = rules(
            serde_json::json!({"rules": [{"from": [{"source": {"principals": ["a"]}}, {"source": {"namespaces": ["b"]}}]}]}),
        );
        assert_eq!(
            identity_gate(&r[0]),
            ["source.principals", "source.namespaces"]
        );
        // one source a plaintext request can match: the rule can match it
        let r = rules(
            serde_json::json!({"rules": [{"from": [{"source": {"principals": ["a"]}}, {"source": {"ipBlocks": ["10.0.0.0/8"]}}]}]}),
        );
        assert!(identity_gate(&r[0]).is_empty());
        // not forms match a caller without identity
        let r =
            rules(serde_json::json!({"rules": [{"from": [{"source": {"notNamespaces": ["b"]}}]}]}));
        assert!(identity_gate(&r[0]).is_empty());
        let r = rules(
            serde_json::json!({"rules": [{"when": [{"key": "connection.sni", "values": ["x"]}]}]}),
        );
        assert_eq!(identity_gate(&r[0]), ["when connection.sni"]);
        let r = rules(serde_json::json!({"rules": [{"to": [{"operation": {"ports": ["8080"]}}]}]}));
        assert!(rule_covers_port(&r[0], 8080) && !rule_covers_port(&r[0], 9090));
    }
}
