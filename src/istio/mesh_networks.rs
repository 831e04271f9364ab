//! MeshNetworks (`networks: {NAME: {endpoints: [{fromRegistry|fromCidr}], gateways: [...]}}`):
//! the shape checks a file or the `istio` ConfigMap's `meshNetworks` key must pass before the
//! mesh networks analyzer reads it (Istio refuses to load MeshNetworks that do not fit).

use serde_json::Value;

/// Why the `meshNetworks` key of the `istio` ConfigMap (YAML text) is not MeshNetworks, or
/// `None` when it is: a syntax error (with its line in the value) or a [`problem`].
pub fn problem_in_text(text: &str) -> Option<String> {
    match crate::formats::yaml::parse_stream(text) {
        Err(e) => Some(format!("line {} of the value: {}", e.line, e.message)),
        Ok(docs) => docs.first().and_then(|d| problem(&d.value)),
    }
}

/// Why a MeshNetworks document does not fit Istio's schema, or `None` when it fits (as far as
/// the analyzer reads it: the networks, their endpoints and `fromRegistry`).
pub fn problem(value: &Value) -> Option<String> {
    let root = match value {
        Value::Null => return None,
        Value::Object(root) => root,
        _ => return Some("MeshNetworks is a mapping (networks: ...)".into()),
    };
    let networks = match root.get("networks") {
        None | Some(Value::Null) => return None,
        Some(Value::Object(n)) => n,
        Some(_) => return Some("networks is a mapping of network names to networks".into()),
    };
    for (name, network) in networks {
        let endpoints = match network {
            Value::Object(n) => n.get("endpoints"),
            Value::Null => None,
            _ => return Some(format!("network {name} is a mapping (endpoints, gateways)")),
        };
        let endpoints = match endpoints {
            None | Some(Value::Null) => continue,
            Some(Value::Array(e)) => e,
            Some(_) => return Some(format!("networks.{name}.endpoints is a list")),
        };
        for (i, endpoint) in endpoints.iter().enumerate() {
            let Value::Object(endpoint) = endpoint else {
                return Some(format!("networks.{name}.endpoints[{i}] is a mapping"));
            };
            if let Some(registry) = endpoint.get("fromRegistry")
                && !registry.is_string()
            {
                return Some(format!(
                    "networks.{name}.endpoints[{i}].fromRegistry is a string"
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let ok = serde_json::json!({"networks": {"n1": {"endpoints": [{"fromRegistry": "Kubernetes"}]}}});
        assert_eq!(problem(&ok), None);
        assert_eq!(problem(&Value::Null), None);
        assert!(problem(&serde_json::json!({"networks": 5})).is_some());
        assert_eq!(
            problem(&serde_json::json!({"networks": {"n1": {"endpoints": [{"fromRegistry": 3}]}}})),
            Some("networks.n1.endpoints[0].fromRegistry is a string".into())
        );
    }
}
