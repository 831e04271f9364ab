//! What a server accepts and what a client sends, per workload port and per host port: Istio's
//! rules for PeerAuthentication and for the TLS settings of DestinationRules. Pure: typed config
//! in, the deciding object out, so a finding can name what to change.
//!
//! Server side (PeerAuthentication): the workload's own policy (a `selector` matching its labels,
//! in its namespace) over the namespace's (no selector) over the mesh's (no selector, in the root
//! namespace). `UNSET` inherits from the level above; with nothing set the mesh default is
//! PERMISSIVE. `portLevelMtls` counts only on a policy with a selector and is keyed by the
//! workload's port (the container port a Service's `targetPort` names), not the Service port.
//! Of two policies at one level Istio takes the oldest; here the first by creation time, then
//! name.
//!
//! Client side (DestinationRule): the rule for the host seen from the client's namespace (its own
//! namespace's rules first, then the host's namespace, then the root namespace; `exportTo`
//! respected; an exact host before a wildcard; the rules of one namespace and host merged as
//! Istio merges them, [`super::destination_rules`]), its `portLevelSettings` for the port over
//! its top-level `trafficPolicy.tls`. Without a TLS mode, auto-mTLS: Istio's mTLS to endpoints with a
//! sidecar, plaintext to the others. Rules with a `workloadSelector` apply to the clients they
//! select only, and are left out here.

use super::config::host::{matches, to_fqdn};
use std::collections::{BTreeSet, HashMap};

use super::config::{Config, DestinationRule, Labels, PeerAuthentication, Typed};
use super::dataplane::{Backend, BackendIndex, BackendPorts, backend_ports};
use super::destination_rules::{Client, Index, Merged, chosen, merge};
use crate::kube::snapshot::ServicesByNamespace;

/// The mTLS mode a server port accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMode {
    /// mTLS only: a plaintext or other-TLS connection is refused.
    Strict,
    /// mTLS and plaintext.
    Permissive,
    /// Plaintext only: Istio's mTLS is not terminated.
    Disable,
}

impl ServerMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerMode::Strict => "STRICT",
            ServerMode::Permissive => "PERMISSIVE",
            ServerMode::Disable => "DISABLE",
        }
    }

    /// A mode as written; `UNSET`, empty and unknown values inherit (`None`).
    fn parse(text: &str) -> Option<ServerMode> {
        match text {
            "STRICT" => Some(ServerMode::Strict),
            "PERMISSIVE" => Some(ServerMode::Permissive),
            "DISABLE" => Some(ServerMode::Disable),
            _ => None,
        }
    }
}

/// The effective server mode of one workload port, and the policy that decided it (`None`: no
/// policy sets it, Istio's default PERMISSIVE).
#[derive(Debug)]
pub struct ServerDecision<'c, 'a> {
    pub mode: ServerMode,
    pub policy: Option<&'c Typed<'a, PeerAuthentication>>,
    /// True when the policy's `portLevelMtls` decided it.
    pub port_level: bool,
}

/// The order Istio picks the oldest policy in: creation time (none first), then name.
fn creation<'p>(p: &'p Typed<'_, PeerAuthentication>) -> (Option<jiff::Timestamp>, &'p str) {
    let created = p
        .resource
        .object
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0);
    (created, p.name())
}

/// The oldest of the policies that pass `keep`.
fn oldest<'c, 'a>(
    config: &'c Config<'a>,
    namespace: &str,
    keep: impl Fn(&Typed<'a, PeerAuthentication>) -> bool,
) -> Option<&'c Typed<'a, PeerAuthentication>> {
    config
        .peer_authentications_in(namespace)
        .filter(|p| keep(p))
        .min_by_key(|p| creation(p))
}

/// The effective PeerAuthentication mode of `port` of a workload in `namespace` with `labels`.
pub fn server_mode<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    namespace: &str,
    labels: &Labels,
    port: u32,
) -> ServerDecision<'c, 'a> {
    let namespace_wide = |ns: &str| {
        oldest(config, ns, |p| {
            p.spec
                .selector
                .as_ref()
                .is_none_or(|s| s.match_labels.is_empty())
        })
    };
    let workload = oldest(config, namespace, |p| {
        p.spec.selector.as_ref().is_some_and(|s| {
            !s.match_labels.is_empty()
                && s.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
    });
    let mut decision = ServerDecision {
        mode: ServerMode::Permissive,
        policy: None,
        port_level: false,
    };
    let levels = [
        namespace_wide(root_namespace),
        (namespace != root_namespace)
            .then(|| namespace_wide(namespace))
            .flatten(),
    ];
    for policy in levels.into_iter().flatten() {
        if let Some(mode) = policy
            .spec
            .mtls
            .as_ref()
            .and_then(|m| ServerMode::parse(&m.mode))
        {
            decision = ServerDecision {
                mode,
                policy: Some(policy),
                port_level: false,
            };
        }
    }
    if let Some(policy) = workload {
        if let Some(mode) = policy
            .spec
            .mtls
            .as_ref()
            .and_then(|m| ServerMode::parse(&m.mode))
        {
            decision = ServerDecision {
                mode,
                policy: Some(policy),
                port_level: false,
            };
        }
        let port_mode = policy
            .spec
            .port_level_mtls
            .get(&port.to_string())
            .and_then(|v| v.get("mode")?.as_str())
            .and_then(ServerMode::parse);
        if let Some(mode) = port_mode {
            decision = ServerDecision {
                mode,
                policy: Some(policy),
                port_level: true,
            };
        }
    }
    decision
}

/// What a client sends to a host port: a DestinationRule's TLS mode, or auto-mTLS.
#[derive(Debug)]
pub struct ClientDecision<'c, 'a> {
    /// `DISABLE`, `SIMPLE`, `MUTUAL` or `ISTIO_MUTUAL`; `None`: no rule sets one (auto-mTLS).
    pub mode: Option<String>,
    pub rule: Option<&'c Typed<'a, DestinationRule>>,
    /// True when the rule's `portLevelSettings` for the port decided it.
    pub port_level: bool,
}

/// The DestinationRule that applies to `fqdn` for `client` (see the module doc), merged as
/// Istio merges the rules of one namespace and host ([`super::destination_rules`]).
pub fn destination_rule<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
) -> Option<Merged<'c, 'a>> {
    let rules = rule_hosts(config);
    destination_rule_among(
        &rules_for(&rules, fqdn),
        root_namespace,
        client,
        fqdn,
        config.destination_rules_private_by_default,
    )
}

/// The rules of [`rule_hosts`] whose host matches `fqdn` (exactly or by a wildcard), in the
/// order of the rules.
pub fn rules_for<'r, 'c, 'a>(
    rules: &'r RuleHosts<'c, 'a>,
    fqdn: &str,
) -> Vec<&'r (&'c Typed<'a, DestinationRule>, String)> {
    if fqdn.starts_with('*') {
        // A wildcard asked for matches exact hosts too: every rule is a candidate.
        return rules
            .all
            .iter()
            .filter(|(_, host)| matches(host, fqdn))
            .collect();
    }
    let mut at: Vec<usize> = rules.exact.get(fqdn).cloned().unwrap_or_default();
    at.extend(
        rules
            .wildcards
            .iter()
            .copied()
            .filter(|&i| matches(&rules.all[i].1, fqdn)),
    );
    at.sort_unstable();
    at.into_iter().map(|i| &rules.all[i]).collect()
}

/// [`destination_rule`] among the rules for the host ([`rules_for`]), which an analysis over
/// every Service computes once per Service. Istio looks in the client's namespace (the rules
/// its clients see; for a client of the root namespace, the root's private rules), then in the
/// host's and the root namespace (the rules exported to the client); in each, the exact host
/// before the most specific wildcard. When the client's namespace has rules for the host, the
/// answer is among them, even none (workload-selector rules that do not select the client and
/// no rule without selector): the other namespaces are then not looked at.
/// `default_private`: the mesh's `defaultDestinationRuleExportTo` holds `.`.
pub fn destination_rule_among<'c, 'a>(
    matching: &[&(&'c Typed<'a, DestinationRule>, String)],
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
    default_private: bool,
) -> Option<Merged<'c, 'a>> {
    lookup(
        matching,
        root_namespace,
        client,
        fqdn,
        default_private,
        false,
    )
}

/// The rule `client` would use if its own namespace had no rule for `fqdn`: when its
/// namespace's rules for the host are all workload-selector rules that do not select it (the
/// client then uses none), the rule of the host's or the root namespace they hide from it.
pub fn hidden_from<'c, 'a>(
    matching: &[&(&'c Typed<'a, DestinationRule>, String)],
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
    default_private: bool,
) -> Option<Merged<'c, 'a>> {
    if destination_rule_among(matching, root_namespace, client, fqdn, default_private).is_some() {
        return None;
    }
    lookup(
        matching,
        root_namespace,
        client,
        fqdn,
        default_private,
        true,
    )
}

/// [`hidden_from`] over every rule of `config`, with the rules of the client's namespace for
/// the host that hide it (`ns/name`, in Istio's order; a rule without selector among them was
/// merged into a selector rule).
pub fn hidden_rule<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
) -> Option<(Vec<String>, Merged<'c, 'a>)> {
    let rules = rule_hosts(config);
    let matching = rules_for(&rules, fqdn);
    let private = config.destination_rules_private_by_default;
    let hidden = hidden_from(&matching, root_namespace, client, fqdn, private)?;
    let mut own: Vec<&Typed<'a, DestinationRule>> = matching
        .iter()
        .map(|(r, _)| *r)
        .filter(|r| r.namespace() == client.namespace)
        .collect();
    own.sort_by(|a, b| super::destination_rules::istio_order(a, b));
    let names = own
        .iter()
        .map(|r| {
            let merged_in = if r.spec.workload_selector.is_none() {
                " (no workloadSelector, but merged into one: MD0419)"
            } else {
                ""
            };
            format!("{}/{}{merged_in}", r.namespace(), r.name())
        })
        .collect();
    Some((names, hidden))
}

fn lookup<'c, 'a>(
    matching: &[&(&'c Typed<'a, DestinationRule>, String)],
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
    default_private: bool,
    skip_own: bool,
) -> Option<Merged<'c, 'a>> {
    let host_ns = super::config::host::split_fqdn(fqdn).map(|(ns, _)| ns);
    let mut order = if skip_own {
        Vec::new()
    } else if client.namespace == root_namespace {
        vec![(root_namespace, Index::Private)]
    } else {
        vec![(client.namespace, Index::Local)]
    };
    if let Some(ns) = host_ns {
        order.push((ns, Index::Exported));
    }
    order.push((root_namespace, Index::Exported));
    for (ns, index) in order {
        let candidates: Vec<&(&Typed<'a, DestinationRule>, String)> = matching
            .iter()
            .copied()
            .filter(|(r, _)| r.namespace() == ns && index.holds(r, default_private))
            .collect();
        let host = candidates
            .iter()
            .map(|(_, h)| h.as_str())
            .max_by_key(|h| (*h == fqdn, h.len()));
        let Some(host) = host else {
            continue;
        };
        let rules: Vec<&'c Typed<'a, DestinationRule>> = candidates
            .iter()
            .filter(|(_, h)| h == host)
            .map(|(r, _)| *r)
            .collect();
        let entries = merge(&rules);
        let entry = chosen(&entries, index, client);
        if entry.is_some() || index != Index::Exported {
            return entry.cloned();
        }
    }
    None
}

/// Each DestinationRule with its host as an FQDN ([`rule_hosts`]), indexed by host so that an
/// analysis over every Service finds the rules of one host without reading all of them.
pub struct RuleHosts<'c, 'a> {
    all: Vec<(&'c Typed<'a, DestinationRule>, String)>,
    /// Exact host -> positions in `all`.
    exact: HashMap<String, Vec<usize>>,
    /// Positions in `all` of the rules for a wildcard host.
    wildcards: Vec<usize>,
}

impl<'c, 'a> std::ops::Deref for RuleHosts<'c, 'a> {
    type Target = [(&'c Typed<'a, DestinationRule>, String)];
    fn deref(&self) -> &Self::Target {
        &self.all
    }
}

/// Each DestinationRule with its host as an FQDN, once for a whole analysis
/// ([`client_namespaces`] asks it per Service).
pub fn rule_hosts<'c, 'a>(config: &'c Config<'a>) -> RuleHosts<'c, 'a> {
    let all: Vec<_> = config
        .destination_rules
        .iter()
        .map(|r| (r, to_fqdn(r.namespace(), &r.spec.host)))
        .collect();
    let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
    let mut wildcards = Vec::new();
    for (i, (_, host)) in all.iter().enumerate() {
        if host.starts_with('*') {
            wildcards.push(i);
        } else {
            exact.entry(host.clone()).or_default().push(i);
        }
    }
    RuleHosts {
        all,
        exact,
        wildcards,
    }
}

/// The client namespaces whose [`destination_rule`] for `fqdn` can differ, one of each kind:
/// the namespaces of the rules for the host, those their `exportTo` names, the host's own, the
/// root, and one namespace with rules that are all for other hosts (which falls back like
/// every namespace without a rule for it). Every other client namespace decides as one of
/// these, so asking these is asking all of them, in the time of the rules for the host.
pub fn client_namespaces<'r>(
    rules: &'r [(&Typed<'_, DestinationRule>, String)],
    matching: &[&'r (&Typed<'_, DestinationRule>, String)],
    root_namespace: &'r str,
    host_namespace: &'r str,
) -> BTreeSet<&'r str> {
    let mut out: BTreeSet<&str> = BTreeSet::new();
    for (rule, _) in matching.iter().copied() {
        out.insert(rule.namespace());
        out.extend(
            rule.spec
                .export_to
                .iter()
                .map(String::as_str)
                .filter(|e| *e != "*" && *e != "."),
        );
    }
    out.insert(host_namespace);
    out.insert(root_namespace);
    if let Some((other, _)) = rules.iter().find(|(r, _)| !out.contains(r.namespace())) {
        out.insert(other.namespace());
    }
    out
}

/// The TLS mode `client` uses for `fqdn:port` (the Service port).
pub fn client_tls<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
    port: u32,
) -> ClientDecision<'c, 'a> {
    let rules = rule_hosts(config);
    client_tls_among(
        &rules_for(&rules, fqdn),
        root_namespace,
        client,
        fqdn,
        port,
        config.destination_rules_private_by_default,
    )
}

/// [`client_tls`] among the rules for the host ([`rules_for`]).
pub fn client_tls_among<'c, 'a>(
    matching: &[&(&'c Typed<'a, DestinationRule>, String)],
    root_namespace: &str,
    client: Client<'_>,
    fqdn: &str,
    port: u32,
    default_private: bool,
) -> ClientDecision<'c, 'a> {
    tls_for_port(
        destination_rule_among(matching, root_namespace, client, fqdn, default_private).as_ref(),
        port,
    )
}

/// The TLS mode a client whose merged DestinationRule for the host is `merged` (from
/// [`destination_rule_among`], which does not depend on the port) uses for `port` (the Service
/// port): an analysis over every port of a Service merges the rules once per client.
pub fn tls_for_port<'c, 'a>(merged: Option<&Merged<'c, 'a>>, port: u32) -> ClientDecision<'c, 'a> {
    let Some(merged) = merged else {
        return ClientDecision {
            mode: None,
            rule: None,
            port_level: false,
        };
    };
    // The merged rule's policy: the first rule's that has one.
    let (policy, rule) = match merged.traffic_policy() {
        Some((policy, rule)) => (Some(policy), rule),
        None => (None, merged.head()),
    };
    let port_tls = policy
        .into_iter()
        .flat_map(|p| &p.port_level_settings)
        .find(|s| s.port.as_ref().is_some_and(|p| p.number == port))
        .and_then(|s| s.tls.as_ref())
        .filter(|t| !t.mode.is_empty());
    if let Some(tls) = port_tls {
        return ClientDecision {
            mode: Some(tls.mode.clone()),
            rule: Some(rule),
            port_level: true,
        };
    }
    let mode = policy
        .and_then(|p| p.tls.as_ref())
        .map(|t| t.mode.clone())
        .filter(|m| !m.is_empty());
    ClientDecision {
        mode,
        rule: Some(rule),
        port_level: false,
    }
}

/// A `portLevelMtls` entry of a PeerAuthentication with a selector that names a port none of the
/// workloads it selects is known to listen on: Istio keys it by the workload port, so it has no
/// effect (the Service port, when it differs from the `targetPort`, is the usual mistake).
#[derive(Debug)]
pub struct UnusedPortLevel<'s> {
    pub port: u32,
    /// The mode as written (`STRICT`, `PERMISSIVE`, `DISABLE`, `UNSET`).
    pub mode: String,
    /// The workloads and pods the policy selects, with their known ports.
    pub backends: Vec<(Backend<'s>, BTreeSet<u32>)>,
    /// A Service of theirs whose port is `port` and sends to another workload port:
    /// (`ns/name`, target).
    pub service_port: Option<(String, u32)>,
}

/// The `portLevelMtls` entries of `policy` that have no effect (see [`UnusedPortLevel`]). A
/// port is judged only when every selected workload declares its container ports (a container
/// may listen on a port it does not declare), or when it is a Service port of theirs that sends
/// to another port. A policy without a selector is Istio's schema error (IST0106), not this.
pub fn unused_port_levels<'s>(
    backends: &BackendIndex<'s>,
    services: &ServicesByNamespace<'_>,
    policy: &Typed<'_, PeerAuthentication>,
) -> Vec<UnusedPortLevel<'s>> {
    let Some(selector) = policy
        .spec
        .selector
        .as_ref()
        .map(|s| &s.match_labels)
        .filter(|s| !s.is_empty())
    else {
        return Vec::new();
    };
    if policy.spec.port_level_mtls.is_empty() {
        return Vec::new();
    }
    let backends: Vec<(Backend<'s>, BackendPorts)> = backends
        .selected(policy.namespace(), Some(selector))
        .into_iter()
        .map(|b| {
            let ports = backend_ports(services, &b);
            (b, ports)
        })
        .collect();
    if backends.is_empty() {
        return Vec::new();
    }
    let all_declare = backends.iter().all(|(_, p)| !p.declared.is_empty());
    let mut out = Vec::new();
    for (key, value) in &policy.spec.port_level_mtls {
        let Ok(port) = key.parse::<u32>() else {
            continue;
        };
        if backends.iter().any(|(_, p)| p.all().contains(&port)) {
            continue;
        }
        let service_port = backends
            .iter()
            .flat_map(|(_, p)| &p.services)
            .find(|s| s.port == port && s.target != port)
            .map(|s| (s.service.clone(), s.target));
        if !all_declare && service_port.is_none() {
            continue;
        }
        let mode = value
            .get("mode")
            .and_then(|m| m.as_str())
            .unwrap_or("UNSET")
            .to_string();
        out.push(UnusedPortLevel {
            port,
            mode,
            backends: Vec::new(),
            service_port,
        });
    }
    if out.is_empty() {
        return out;
    }
    let listed: Vec<(Backend<'s>, BTreeSet<u32>)> =
        backends.into_iter().map(|(b, p)| (b, p.all())).collect();
    for entry in &mut out {
        entry.backends = listed.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::kube::snapshot::Snapshot;
    use crate::source::files::{FileOptions, LoadStats, load_text};

    fn snapshot(text: &str) -> Snapshot {
        let mut snapshot = Snapshot::default();
        load_text(
            text,
            Arc::from("t.yaml"),
            false,
            &FileOptions::default(),
            &mut snapshot,
            &mut LoadStats::default(),
        )
        .unwrap();
        snapshot
    }

    fn pa(ns: &str, name: &str, body: &str) -> String {
        format!(
            "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{body}---\n"
        )
    }

    fn labels(app: &str) -> Labels {
        Labels::from([("app".to_string(), app.to_string())])
    }

    #[test]
    fn workload_over_namespace_over_mesh_and_unset_inherits() {
        let text = pa("istio-system", "mesh", "  mtls: {mode: STRICT}\n")
            + &pa("shop", "ns", "  mtls: {mode: UNSET}\n")
            + &pa(
                "shop",
                "web",
                "  selector: {matchLabels: {app: web}}\n  mtls: {mode: PERMISSIVE}\n  portLevelMtls:\n    \"9090\": {mode: DISABLE}\n    \"8081\": {mode: UNSET}\n",
            );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let mode =
            |app: &str, port| server_mode(&config, "istio-system", "shop", &labels(app), port);
        // UNSET in the namespace inherits the mesh's STRICT
        assert_eq!(mode("api", 8080).mode, ServerMode::Strict);
        assert_eq!(mode("api", 8080).policy.unwrap().name(), "mesh");
        // the workload's own policy wins, per workload port
        assert_eq!(mode("web", 8080).mode, ServerMode::Permissive);
        assert_eq!(mode("web", 9090).mode, ServerMode::Disable);
        assert!(mode("web", 9090).port_level);
        assert_eq!(
            mode("web", 8081).mode,
            ServerMode::Permissive,
            "UNSET port inherits"
        );
        // nothing anywhere: Istio's default
        let empty = snapshot("");
        let config = Config::of(&empty);
        let d = server_mode(&config, "istio-system", "shop", &labels("x"), 80);
        assert_eq!((d.mode, d.policy.is_none()), (ServerMode::Permissive, true));
    }

    #[test]
    fn port_level_mtls_counts_only_with_a_selector() {
        let text = pa(
            "shop",
            "ns",
            "  mtls: {mode: STRICT}\n  portLevelMtls:\n    \"8080\": {mode: DISABLE}\n",
        );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let d = server_mode(&config, "istio-system", "shop", &labels("web"), 8080);
        assert_eq!(d.mode, ServerMode::Strict);
    }

    fn dr(ns: &str, name: &str, host: &str, extra: &str) -> String {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  host: {host}\n{extra}---\n"
        )
    }

    #[test]
    fn merged_rules_send_the_first_rules_tls_or_a_later_one_when_it_has_none() {
        let host = "web.shop.svc.cluster.local";
        let tls = |text: &str| {
            let s = snapshot(text);
            let config = Config::of(&s);
            let d = client_tls(
                &config,
                "istio-system",
                Client::unselected("shop"),
                host,
                80,
            );
            (d.mode, d.rule.map(|r| r.name().to_string()))
        };
        // Without creation times, by name: `a` is first, whatever the order of the files.
        let text = dr(
            "shop",
            "b",
            "web",
            "  trafficPolicy: {tls: {mode: DISABLE}}
",
        ) + &dr(
            "shop",
            "a",
            host,
            "  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}
",
        );
        assert_eq!(tls(&text), (Some("ISTIO_MUTUAL".into()), Some("a".into())));
        // The first rule has no trafficPolicy: the later one's applies.
        let text = dr(
            "shop",
            "b",
            "web",
            "  trafficPolicy: {tls: {mode: DISABLE}}
",
        ) + &dr(
            "shop",
            "a",
            host,
            "  subsets:\n  - {name: v1, labels: {v: \"1\"}}\n",
        );
        assert_eq!(tls(&text), (Some("DISABLE".into()), Some("b".into())));
        // Other exportTo sets do not merge: the last entry the client sees is its rule.
        let text = dr(
            "shop",
            "a",
            "web",
            "  exportTo: [\".\"]\n  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n",
        ) + &dr(
            "shop",
            "b",
            "web",
            "  exportTo: [\"*\"]\n  trafficPolicy: {tls: {mode: DISABLE}}\n",
        );
        assert_eq!(tls(&text), (Some("DISABLE".into()), Some("b".into())));
    }

    #[test]
    fn the_client_namespace_rule_comes_first_then_the_hosts_then_the_roots() {
        let text = dr(
            "istio-system",
            "root",
            "\"*.local\"",
            "  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n",
        ) + &dr(
            "shop",
            "svc",
            "web",
            "  trafficPolicy:\n    tls: {mode: DISABLE}\n    portLevelSettings:\n    - port: {number: 9090}\n      tls: {mode: SIMPLE}\n",
        ) + &dr(
            "client",
            "own",
            "web.shop.svc.cluster.local",
            "  exportTo: [\".\"]\n",
        ) + &dr(
            "hidden",
            "hidden",
            "web.shop.svc.cluster.local",
            "  exportTo: [\"elsewhere\"]\n  trafficPolicy: {tls: {mode: MUTUAL}}\n",
        );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let host = "web.shop.svc.cluster.local";
        let tls = |client: &str, port| {
            let d = client_tls(
                &config,
                "istio-system",
                Client::unselected(client),
                host,
                port,
            );
            (d.mode, d.rule.map(|r| r.name().to_string()), d.port_level)
        };
        assert_eq!(
            tls("shop", 80),
            (Some("DISABLE".into()), Some("svc".into()), false)
        );
        assert_eq!(
            tls("shop", 9090),
            (Some("SIMPLE".into()), Some("svc".into()), true)
        );
        // the client's own rule, without TLS: auto-mTLS (no mode), even though others set one
        assert_eq!(tls("client", 80), (None, Some("own".into()), false));
        // a rule not exported to the client's namespace does not apply there
        assert_eq!(
            tls("hidden", 80),
            (Some("DISABLE".into()), Some("svc".into()), false)
        );
        // a host no namespace rule names: the root namespace's wildcard
        let d = client_tls(
            &config,
            "istio-system",
            Client::unselected("x"),
            "db.data.svc.cluster.local",
            5432,
        );
        assert_eq!(d.mode.as_deref(), Some("ISTIO_MUTUAL"));
    }

    #[test]
    fn workload_selector_rules_apply_to_the_clients_they_select_and_hide_the_others() {
        let host = "web.shop.svc.cluster.local";
        // The Service's namespace exports DISABLE; the client namespace has a selector rule.
        let text = dr(
            "shop",
            "svc",
            "web",
            "  trafficPolicy: {tls: {mode: DISABLE}}\n",
        ) + &dr(
            "client",
            "only-canary",
            host,
            "  workloadSelector: {matchLabels: {track: canary}}\n  trafficPolicy: {tls: {mode: SIMPLE}}\n",
        );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let canary: Labels = [
            ("app".to_string(), "c".to_string()),
            ("track".into(), "canary".into()),
        ]
        .into_iter()
        .collect();
        let stable: Labels = [("app".to_string(), "c".to_string())].into_iter().collect();
        let tls = |ns: &'static str, labels: Option<&Labels>| {
            let client = Client {
                namespace: ns,
                labels,
            };
            let d = client_tls(&config, "istio-system", client, host, 80);
            (d.mode, d.rule.map(|r| r.name().to_string()))
        };
        assert_eq!(
            tls("client", Some(&canary)),
            (Some("SIMPLE".into()), Some("only-canary".into()))
        );
        // Not selected: the client namespace's rules for the host are all Istio looks at.
        assert_eq!(tls("client", Some(&stable)), (None, None));
        assert_eq!(tls("client", None), (None, None));
        // A selector rule is private to its namespace whatever its exportTo.
        assert_eq!(
            tls("other", Some(&canary)),
            (Some("DISABLE".into()), Some("svc".into()))
        );

        // A rule without selector and without exportTo keeps its own entry; one whose exportTo
        // is the selector rule's (".") merges into it and has none of its own.
        for (export, unselected) in [("", Some("ns-wide")), ("  exportTo: [\".\"]\n", None)] {
            let text = dr(
                "client",
                "a-selected",
                host,
                "  workloadSelector: {matchLabels: {track: canary}}\n  subsets:\n  - {name: v1, labels: {v: \"1\"}}\n",
            ) + &dr(
                "client",
                "ns-wide",
                host,
                &format!("{export}  trafficPolicy: {{tls: {{mode: DISABLE}}}}\n"),
            );
            let s = snapshot(&text);
            let config = Config::of(&s);
            let got = |labels: Option<&Labels>| {
                let client = Client {
                    namespace: "client",
                    labels,
                };
                destination_rule(&config, "istio-system", client, host).map(|m| m.names())
            };
            assert_eq!(
                got(None).as_deref(),
                unselected.map(|n| format!("client/{n}")).as_deref(),
                "{export}"
            );
            let selected = got(Some(&canary)).unwrap();
            if unselected.is_some() {
                assert_eq!(selected, "client/a-selected");
            } else {
                assert_eq!(selected, "client/a-selected, client/ns-wide");
            }
        }
    }

    #[test]
    fn the_mesh_default_export_makes_rules_without_export_to_private() {
        let host = "web.shop.svc.cluster.local";
        let text = dr(
            "shop",
            "svc",
            "web",
            "  trafficPolicy: {tls: {mode: DISABLE}}\n",
        );
        let mut s = snapshot(&text);
        let tls = |s: &Snapshot, ns: &'static str| {
            let config = Config::of(s);
            client_tls(&config, "istio-system", Client::unselected(ns), host, 80).mode
        };
        assert_eq!(tls(&s, "client").as_deref(), Some("DISABLE"));
        s.mesh_config = Some(serde_json::json!({"defaultDestinationRuleExportTo": ["."]}));
        assert_eq!(tls(&s, "client"), None);
        assert_eq!(tls(&s, "shop").as_deref(), Some("DISABLE"));
        s.mesh_config = Some(serde_json::json!({"defaultDestinationRuleExportTo": ["*"]}));
        assert_eq!(tls(&s, "client").as_deref(), Some("DISABLE"));
    }

    #[test]
    fn root_namespace_clients_look_at_its_private_rules_then_the_hosts() {
        let host = "web.shop.svc.cluster.local";
        let text = dr(
            "shop",
            "svc",
            "web",
            "  trafficPolicy: {tls: {mode: DISABLE}}\n",
        ) + &dr(
            "istio-system",
            "public",
            host,
            "  trafficPolicy: {tls: {mode: SIMPLE}}\n",
        );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let mode = |ns: &'static str| {
            client_tls(&config, "istio-system", Client::unselected(ns), host, 80).mode
        };
        // The root's public rule is exported: the host's namespace comes first for its clients.
        assert_eq!(mode("istio-system").as_deref(), Some("DISABLE"));
        let text = text
            + &dr(
                "istio-system",
                "private",
                host,
                "  exportTo: [\".\"]\n  trafficPolicy: {tls: {mode: MUTUAL}}\n",
            );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let mode = client_tls(
            &config,
            "istio-system",
            Client::unselected("istio-system"),
            host,
            80,
        )
        .mode;
        assert_eq!(mode.as_deref(), Some("MUTUAL"));
    }

    #[test]
    fn port_level_entries_for_ports_no_selected_workload_listens_on() {
        let deploy = |name: &str, ports: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - name: app\n        image: x\n{ports}---\n"
            )
        };
        let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {app: web}\n  ports:\n  - {port: 80, targetPort: 8080}\n---\n";
        let text = deploy("web", "        ports: [{containerPort: 8080}]\n")
            + &deploy("job", "")
            + svc
            + &pa(
                "shop",
                "web",
                "  selector: {matchLabels: {app: web}}\n  portLevelMtls:\n    \"80\": {mode: DISABLE}\n    \"8080\": {mode: PERMISSIVE}\n",
            )
            + &pa(
                "shop",
                "job",
                "  selector: {matchLabels: {app: job}}\n  portLevelMtls:\n    \"9000\": {mode: DISABLE}\n",
            );
        let s = snapshot(&text);
        let config = Config::of(&s);
        let backends = BackendIndex::of(&s);
        let unused = |name: &str| {
            let p = config
                .peer_authentications
                .iter()
                .find(|p| p.name() == name)
                .unwrap();
            unused_port_levels(&backends, &config.services, p)
        };
        let web = unused("web");
        assert_eq!(web.len(), 1, "{web:?}");
        assert_eq!((web[0].port, web[0].mode.as_str()), (80, "DISABLE"));
        assert_eq!(web[0].service_port, Some(("shop/web".to_string(), 8080)));
        // a workload that declares no port may listen on 9000: not judged
        assert!(unused("job").is_empty());
    }
}
