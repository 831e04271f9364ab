//! NetworkPolicy evaluation, pure: does an egress rule let traffic reach a destination (pods by
//! labels in a namespace, or addresses in CIDR blocks) on a port? "Maybe" when it cannot tell.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::networking::v1::{NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::kube::selector;

/// Whether a rule lets traffic through: no, maybe (cannot tell), yes. Ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Allow {
    No,
    Maybe,
    Yes,
}

impl Allow {
    pub fn and(self, other: Allow) -> Allow {
        self.min(other)
    }
    pub fn or(self, other: Allow) -> Allow {
        self.max(other)
    }
}

/// Where the traffic goes: pods with these labels in this namespace, at these addresses.
pub struct Destination<'a> {
    /// The namespace of the policy: a peer without `namespaceSelector` means this one.
    pub policy_namespace: &'a str,
    pub namespace: &'a str,
    /// The destination namespace's labels (with `kubernetes.io/metadata.name`).
    pub namespace_labels: &'a BTreeMap<String, String>,
    pub pod_labels: &'a BTreeMap<String, String>,
    /// The destination pods' addresses, for `ipBlock` peers (empty: unknown).
    pub addresses: &'a [IpAddr],
}

impl Destination<'_> {
    /// Does a rule's `to` reach the destination?
    pub fn peers(&self, peers: Option<&[NetworkPolicyPeer]>) -> Allow {
        let Some(peers) = peers.filter(|p| !p.is_empty()) else {
            return Allow::Yes; // no `to`: every destination
        };
        peers
            .iter()
            .map(|p| self.peer(p))
            .max()
            .unwrap_or(Allow::No)
    }

    fn peer(&self, peer: &NetworkPolicyPeer) -> Allow {
        if let Some(block) = &peer.ip_block {
            if self.addresses.is_empty() {
                return Allow::Maybe;
            }
            let inside = |cidr: &str| self.addresses.iter().any(|a| cidr_contains(cidr, *a));
            let excepted = block
                .except
                .iter()
                .flatten()
                .any(|e| self.addresses.iter().all(|a| cidr_contains(e, *a)));
            return if inside(&block.cidr) && !excepted {
                Allow::Yes
            } else {
                Allow::No
            };
        }
        let namespace_ok = match &peer.namespace_selector {
            Some(sel) => selector::matches(Some(sel), self.namespace_labels),
            None => self.policy_namespace == self.namespace,
        };
        let pod_ok = selector::matches(peer.pod_selector.as_ref(), self.pod_labels);
        if namespace_ok && pod_ok {
            Allow::Yes
        } else {
            Allow::No
        }
    }
}

/// Does a rule's `ports` allow `port`/`protocol`?
pub fn ports_allow(ports: Option<&[NetworkPolicyPort]>, port: i32, protocol: &str) -> Allow {
    let Some(ports) = ports.filter(|p| !p.is_empty()) else {
        return Allow::Yes; // no `ports`: every port
    };
    ports
        .iter()
        .map(|p| {
            if p.protocol.as_deref().unwrap_or("TCP") != protocol {
                return Allow::No;
            }
            match &p.port {
                None => Allow::Yes,
                Some(IntOrString::Int(n)) => {
                    let end = p.end_port.unwrap_or(*n);
                    if (*n..=end).contains(&port) {
                        Allow::Yes
                    } else {
                        Allow::No
                    }
                }
                // A named port resolves against the destination's container ports, which are not read.
                Some(IntOrString::String(_)) => Allow::Maybe,
            }
        })
        .max()
        .unwrap_or(Allow::No)
}

/// True when `address` is inside `cidr` (`10.0.0.0/8`, `fd00::/8`).
pub fn cidr_contains(cidr: &str, address: IpAddr) -> bool {
    let Some((network, bits)) = cidr.split_once('/') else {
        return network_eq(cidr, address);
    };
    let (Ok(network), Ok(bits)) = (network.parse::<IpAddr>(), bits.parse::<u32>()) else {
        return false;
    };
    match (network, address) {
        (IpAddr::V4(n), IpAddr::V4(a)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            (u32::from(n) & mask) == (u32::from(a) & mask)
        }
        (IpAddr::V6(n), IpAddr::V6(a)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            (u128::from(n) & mask) == (u128::from(a) & mask)
        }
        _ => false,
    }
}

fn network_eq(text: &str, address: IpAddr) -> bool {
    text.parse::<IpAddr>().is_ok_and(|n| n == address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        let a: IpAddr = "10.244.0.9".parse().unwrap();
        assert!(cidr_contains("10.244.0.0/16", a));
        assert!(cidr_contains("0.0.0.0/0", a));
        assert!(!cidr_contains("10.96.0.0/16", a));
        assert!(cidr_contains("10.244.0.9", a));
        assert!(!cidr_contains("fd00::/8", a));
    }
}
