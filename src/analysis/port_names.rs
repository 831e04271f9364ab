//! IST0118 and IST0150: Service ports whose protocol Istio cannot tell from `appProtocol` or the
//! port name, and `tcp` ports of ExternalName services.

use crate::findings::finding::{Finding, ResourceRef};
use crate::findings::messages::{IST0118, IST0150};
use crate::istio::protocol::{Protocol, port_protocol};
use crate::kube::snapshot::{Object, Snapshot};

const MANAGED_GATEWAYS: &[&str] = &[
    "istio.io-gateway-controller",
    "istio.io-mesh-controller",
    "istio.io-eastwest-controller",
];

pub fn analyze(snapshot: &Snapshot, out: &mut Vec<Finding>) {
    for service in &snapshot.services {
        let object = &service.object;
        // Istio's own control-plane services are skipped.
        if object.label("istio").is_some() || object.label("release") == Some("istio") {
            continue;
        }
        if object
            .label("gateway.istio.io/managed")
            .is_some_and(|v| MANAGED_GATEWAYS.contains(&v))
        {
            continue;
        }
        let Some(spec) = object.spec.as_ref() else {
            continue;
        };
        let external_name = spec.type_.as_deref() == Some("ExternalName");
        for (i, port) in spec.ports.iter().flatten().enumerate() {
            let protocol = port_protocol(
                port.port,
                port.name.as_deref(),
                port.protocol.as_deref(),
                port.app_protocol.as_deref(),
            );
            let tcp_named = port.name.as_deref() == Some("tcp");
            if protocol != Protocol::Unsupported && !(tcp_named && external_name) {
                continue;
            }
            let resource =
                ResourceRef::of(service).at_field(service, &format!("spec.ports[{i}].port"));
            if external_name {
                out.push(Finding::new(IST0150::message(), Some(resource)));
            } else {
                let target = match &port.target_port {
                    None => "0".to_string(),
                    Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                        n.to_string()
                    }
                    Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => {
                        s.clone()
                    }
                };
                out.push(Finding::new(
                    IST0118::message(port.name.clone().unwrap_or_default(), port.port, target),
                    Some(resource),
                ));
            }
        }
    }
}
