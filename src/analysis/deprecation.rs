//! Istio's `deprecation.DeprecationAnalyzer` (IST0002): VirtualService routes with
//! `fault.delay.percent` (replaced by `percentage`) and Sidecars with
//! `outboundTrafficPolicy.egressProxy` (ignored), and the CustomResourceDefinitions of the
//! removed `rbac.istio.io` kinds. CRDs are read as metadata only: a CRD's name is always
//! `<plural>.<group>`, so the name tells the group and kind Istio compares.

use serde_json::Value;

use super::Input;
use crate::findings::messages::IST0002;
use crate::findings::{Finding, ResourceRef};

/// The removed Istio kinds (Istio's `deprecatedCRDs`), by their CRD's name.
const REMOVED_CRDS: &[(&str, &str, &str)] = &[
    (
        "clusterrbacconfigs.rbac.istio.io",
        "rbac.istio.io",
        "ClusterRbacConfig",
    ),
    ("rbacconfigs.rbac.istio.io", "rbac.istio.io", "RbacConfig"),
    ("serviceroles.rbac.istio.io", "rbac.istio.io", "ServiceRole"),
    (
        "servicerolebindings.rbac.istio.io",
        "rbac.istio.io",
        "ServiceRoleBinding",
    ),
];

/// `deprecation.DeprecationAnalyzer`.
pub fn analyze(input: &Input, out: &mut Vec<Finding>) {
    for crd in &input.snapshot.crds {
        let name = crd.object.metadata.name.as_deref().unwrap_or("");
        if let Some((_, group, kind)) = REMOVED_CRDS.iter().find(|(n, ..)| *n == name) {
            out.push(Finding::new(
                IST0002::message(format!("Custom resource type {group} {kind} is removed")),
                Some(ResourceRef::of(crd)),
            ));
        }
    }
    for vs in &input.config.virtual_services {
        let spec = &vs.resource.object.spec;
        for route in spec
            .get("http")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let percent = route
                .pointer("/fault/delay/percent")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            if percent > 0.0 {
                out.push(Finding::new(
                    IST0002::message(
                        "HTTPRoute.fault.delay.percent is deprecated; use HTTPRoute.fault.delay.percentage",
                    ),
                    Some(ResourceRef::of(vs.resource)),
                ));
            }
        }
    }
    for sc in &input.config.sidecars {
        let spec = &sc.resource.object.spec;
        if spec
            .pointer("/outboundTrafficPolicy/egressProxy")
            .is_some_and(|v| !v.is_null())
        {
            out.push(Finding::new(
                IST0002::message("OutboundTrafficPolicy.EgressProxy ignored"),
                Some(ResourceRef::of(sc.resource)),
            ));
        }
    }
}
