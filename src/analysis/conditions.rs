//! Istio's `conditions.ConditionAnalyzer` (IST0171): a negative status condition on a Service,
//! ServiceEntry, WorkloadEntry, AuthorizationPolicy, Gateway API Gateway, HTTPRoute or
//! GRPCRoute, as the controller that wrote it (istiod, a Gateway controller) reported it.
//!
//! Which condition types count, per kind, is Istio's table: `istio.io/WaypointBound=False` on
//! Services, ServiceEntries and WorkloadEntries; `ZtunnelAccepted=False` and
//! `WaypointAccepted=False` (and `WaypointAccepted` with reason `PartiallyInvalid`, whatever its
//! status) on AuthorizationPolicies; `Accepted`, `Programmed` or `ResolvedRefs` `=False` on
//! Gateways (their own conditions, not the listeners') and on routes (every parent's).

use super::Finding;
use crate::findings::ResourceRef;
use crate::findings::messages;
use crate::istio::config::gateway_api::{
    self, Condition, GATEWAY_API_GROUP, conditions, group_of, parent_conditions,
};
use crate::istio::config::{NETWORKING_GROUP, SECURITY_GROUP};
use crate::kube::snapshot::Snapshot;

const WAYPOINT: &[&str] = &["istio.io/WaypointBound"];
const AUTHZ: &[&str] = &["ZtunnelAccepted", "WaypointAccepted"];
const GATEWAY: &[&str] = &["Accepted", "Programmed", "ResolvedRefs"];

/// The negative condition types Istio reports for a config kind (by group and kind).
fn reported(group: &str, kind: &str) -> &'static [&'static str] {
    match (group, kind) {
        (NETWORKING_GROUP, "ServiceEntry" | "WorkloadEntry") => WAYPOINT,
        (SECURITY_GROUP, "AuthorizationPolicy") => AUTHZ,
        (GATEWAY_API_GROUP, "Gateway" | "HTTPRoute" | "GRPCRoute") => GATEWAY,
        _ => &[],
    }
}

fn finding(resource: ResourceRef, c: &Condition) -> Finding {
    Finding::new(
        messages::IST0171::message(&c.type_, &c.reason, &c.message),
        Some(resource),
    )
}

/// `conditions.ConditionAnalyzer`.
pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for svc in &snapshot.services {
        let found = svc
            .object
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref());
        for c in found.into_iter().flatten() {
            if WAYPOINT.contains(&c.type_.as_str()) && c.status == "False" {
                out.push(Finding::new(
                    messages::IST0171::message(&c.type_, &c.reason, &c.message),
                    Some(ResourceRef::of(svc)),
                ));
            }
        }
    }
    for resource in &snapshot.config {
        let object = &resource.object;
        let group = group_of(&object.api_version);
        let types = reported(group, &object.kind);
        if types.is_empty() {
            continue;
        }
        let list = if gateway_api::is_gateway_api(object) && object.kind != "Gateway" {
            parent_conditions(&object.status)
        } else {
            conditions(&object.status)
        };
        let authz = group == SECURITY_GROUP;
        for c in &list {
            let negative = types.contains(&c.type_.as_str()) && c.status == "False";
            let partial = authz && c.type_ == "WaypointAccepted" && c.reason == "PartiallyInvalid";
            if negative {
                out.push(finding(ResourceRef::of(resource), c));
            }
            // Istio reports a partially invalid policy even with status True (and twice, when
            // it is also False; the two are one finding after de-duplication).
            if partial {
                out.push(finding(ResourceRef::of(resource), c));
            }
        }
    }
}
