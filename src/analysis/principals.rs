//! MD0417: an identity an AuthorizationPolicy names that no workload of the mesh carries, so the
//! rule never matches it: an ALLOW meant for that caller refuses it (403), a DENY meant for it
//! never fires.
//!
//! An identity is `source.principals` (`<trust domain>/ns/<namespace>/sa/<service account>`) or
//! `source.serviceAccounts` (`<namespace>/<service account>`). It is judged only when it is
//! exact (no `*`) and what it would need is known. Live, the cluster is what there is:
//! - a principal's trust domain must be the mesh's (`trustDomain`, else `cluster.local`) or one
//!   of its `trustDomainAliases` (Istio matches a principal of the mesh's domain or an alias
//!   under all of them, and any other only as written, which no workload of this mesh is);
//! - the namespace must exist, when every namespace was read;
//! - when the namespace's pods and workloads were read (it is in the scope) and there is at
//!   least one, one of them must run as the service account (`serviceAccountName`, else
//!   `default`). A namespace with
//!   none of them read is not judged: its callers may simply not be in the input.
//!
//! On files only the trust domain is judged, and only with a mesh config (`--mesh-config`): the
//! callers are often in other files, so their namespaces and service accounts are unknown, and
//! without the mesh config so is the trust domain.
//!
//! `notPrincipals` and `notServiceAccounts` are left out: naming an identity nobody carries
//! there changes nothing.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use k8s_openapi::api::core::v1::PodSpec;

use super::Input;
use crate::findings::messages::{self, MD0417, MessageType};
use crate::findings::{Finding, ResourceRef};
use crate::istio::config::{AuthorizationPolicy, Typed};
use crate::istio::dataplane::trust_domain;
use crate::kube::snapshot::{Object, Snapshot};

pub const CODES: &[&MessageType] = &[messages::MD0417];

/// The service account a pod spec runs as (`serviceAccountName`, else the deprecated
/// `serviceAccount`, else `default`).
fn account_of(spec: Option<&PodSpec>) -> &str {
    spec.and_then(|s| {
        s.service_account_name
            .as_deref()
            .or(s.service_account.as_deref())
    })
    .filter(|n| !n.is_empty())
    .unwrap_or("default")
}

/// The service accounts pods and workloads run as, by namespace, and the Namespaces read: made
/// once for every identity of every policy.
struct Accounts<'s> {
    running: BTreeMap<&'s str, BTreeSet<&'s str>>,
    /// The Namespaces read, in the scope and beyond it.
    existing: HashSet<&'s str>,
    /// The Namespaces of the scope (their pods and workloads were read).
    in_scope: HashSet<&'s str>,
    /// Every Namespace was read.
    namespaces_complete: bool,
}

fn service_accounts(snapshot: &Snapshot) -> Accounts<'_> {
    let mut running: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for pod in &snapshot.pods {
        let namespace = pod.object.namespace().unwrap_or("default");
        running
            .entry(namespace)
            .or_default()
            .insert(account_of(pod.object.spec.as_ref()));
    }
    for workload in &snapshot.workloads {
        let namespace = workload.object.namespace().unwrap_or("default");
        running
            .entry(namespace)
            .or_default()
            .insert(account_of(workload.object.template.spec.as_ref()));
    }
    Accounts {
        running,
        existing: snapshot
            .namespaces
            .iter()
            .chain(&snapshot.namespaces_beyond_scope)
            .map(|n| n.object.name())
            .collect(),
        in_scope: snapshot
            .namespaces
            .iter()
            .map(|n| n.object.name())
            .collect(),
        namespaces_complete: !snapshot.namespaces.is_empty()
            && !snapshot
                .unavailable
                .contains_key(&crate::kube::kind::Kind::NamespacesBeyondScope),
    }
}

/// Why `namespace/account` is carried by no workload, when that is known.
fn missing_account(accounts: &Accounts<'_>, namespace: &str, account: &str) -> Option<String> {
    let builtin = ["default", "kube-system", "kube-public", "kube-node-lease"].contains(&namespace);
    if accounts.namespaces_complete && !accounts.existing.contains(namespace) && !builtin {
        return Some(format!("namespace {namespace} does not exist"));
    }
    // Workloads (their templates: a Deployment scaled to zero still runs as its account) are
    // read in the scope only; in a namespace beyond it only pods would be seen.
    if !accounts.in_scope.contains(namespace) {
        return None;
    }
    let running = accounts.running.get(namespace)?;
    if running.contains(account) {
        return None;
    }
    let listed: Vec<&str> = running.iter().copied().collect();
    Some(format!(
        "no pod or workload of namespace {namespace} runs as service account {account} (they run as {})",
        listed.join(", ")
    ))
}

pub fn unknown_identities(input: &Input, out: &mut Vec<Finding>) {
    let snapshot = input.snapshot;
    let domain = trust_domain(snapshot);
    let aliases: Vec<&str> = snapshot
        .mesh_config
        .as_ref()
        .and_then(|m| m.get("trustDomainAliases")?.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let accounts = service_accounts(snapshot);
    for policy in &input.config.authorization_policies {
        let live = policy.resource.origin.file.is_none();
        if !live && snapshot.mesh_config.is_none() {
            continue;
        }
        let known = live.then_some(&accounts);
        for (identity, why) in identities(policy).into_iter().filter_map(|(field, text)| {
            judge(known, domain, &aliases, field, text).map(|why| (text, why))
        }) {
            out.push(Finding::new(
                MD0417::message(
                    format!("{}/{}", policy.namespace(), policy.name()),
                    identity,
                    why,
                    effect(&policy.spec),
                ),
                Some(ResourceRef::of(policy.resource)),
            ));
        }
    }
}

/// Every exact identity a policy's rules name, once each, with the field it is in.
fn identities<'p>(policy: &'p Typed<'_, AuthorizationPolicy>) -> Vec<(&'static str, &'p str)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for source in policy
        .spec
        .rules
        .iter()
        .flat_map(|r| r.from.iter())
        .filter_map(|f| f.source.as_ref())
    {
        for (field, values) in [
            ("principals", &source.principals),
            ("serviceAccounts", &source.service_accounts),
        ] {
            for value in values.iter().filter(|v| !v.contains('*')) {
                if seen.insert((field, value.as_str())) {
                    out.push((field, value.as_str()));
                }
            }
        }
    }
    out
}

fn judge(
    accounts: Option<&Accounts<'_>>,
    domain: &str,
    aliases: &[&str],
    field: &str,
    text: &str,
) -> Option<String> {
    let parts: Vec<&str> = text.split('/').collect();
    let (namespace, account) = match (field, parts.as_slice()) {
        ("principals", [td, "ns", namespace, "sa", account]) => {
            if *td != domain && !aliases.contains(td) {
                let aliases = if aliases.is_empty() {
                    "it has no trustDomainAliases".to_string()
                } else {
                    format!("nor one of its trustDomainAliases ({})", aliases.join(", "))
                };
                return Some(format!(
                    "its trust domain {td} is not the mesh's ({domain}), {aliases}"
                ));
            }
            (*namespace, *account)
        }
        ("serviceAccounts", [namespace, account]) => (*namespace, *account),
        _ => return None,
    };
    missing_account(accounts?, namespace, account)
}

/// What the rule then does, by the policy's action.
fn effect(policy: &AuthorizationPolicy) -> &'static str {
    match crate::istio::authorization::action(policy) {
        "DENY" => "this DENY rule never matches it, so what it should refuse gets through",
        "ALLOW" => "the caller this ALLOW rule is meant for is refused (403 RBAC: access denied)",
        _ => "the rule never matches it",
    }
}
