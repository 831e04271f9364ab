//! What a sidecar's inbound side really holds, read from its Envoy: the mTLS each workload port
//! accepts (`/config_dump?resource=dynamic_listeners&name_regex=virtualInbound`), and the RBAC
//! filter's counters (`/stats?format=json&filter=...rbac...`). The shapes were read off the
//! Envoy of the test node's sidecars with each PeerAuthentication mode set
//! (tests/fixtures/envoy/sidecar_inbound_*.json): Istio's `virtualInbound` listener has, per
//! workload port, a filter chain matching `transport_protocol: tls` (Istio's mTLS) when the port
//! accepts mTLS, and one matching `raw_buffer` when it accepts plaintext. Its HTTP connection
//! managers count RBAC decisions under `http.inbound_<ip>_<port>` (Istio appends a `;` to the
//! prefix for its tag extraction).

use std::collections::BTreeMap;

use serde_json::Value;

use super::admin::ParseError;

/// What the inbound listener accepts on one workload port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InboundAccepts {
    pub mtls: bool,
    pub plaintext: bool,
}

impl InboundAccepts {
    /// Istio's name of the mode this amounts to: STRICT, PERMISSIVE or DISABLE.
    pub fn mode(self) -> &'static str {
        match (self.mtls, self.plaintext) {
            (true, false) => "STRICT",
            (true, true) => "PERMISSIVE",
            _ => "DISABLE",
        }
    }
}

fn parse_error(endpoint: &'static str, message: String) -> ParseError {
    ParseError { endpoint, message }
}

/// Workload port -> what the `virtualInbound` listener accepts there, for every port it has a
/// filter chain of its own for (other ports fall to the catch-all chains).
pub fn parse_inbound(body: &str) -> Result<BTreeMap<u32, InboundAccepts>, ParseError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| parse_error("/config_dump", format!("not JSON: {e}")))?;
    let configs = v
        .get("configs")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error("/config_dump", "no configs".into()))?;
    let mut out: BTreeMap<u32, InboundAccepts> = BTreeMap::new();
    let listeners = configs.iter().filter_map(|c| {
        c.pointer("/active_state/listener")
            .filter(|l| l.get("name").and_then(Value::as_str) == Some("virtualInbound"))
    });
    for listener in listeners {
        for chain in listener
            .get("filter_chains")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let matched = chain.get("filter_chain_match");
            let Some(port) = matched
                .and_then(|m| m.get("destination_port"))
                .and_then(Value::as_u64)
                .and_then(|p| u32::try_from(p).ok())
            else {
                continue;
            };
            // The listener's own port (15006) is the blackhole chain.
            if port == 15006 {
                continue;
            }
            let transport = matched
                .and_then(|m| m.get("transport_protocol"))
                .and_then(Value::as_str);
            let terminates_tls = chain.get("transport_socket").is_some();
            let entry = out.entry(port).or_default();
            match transport {
                Some("tls") if terminates_tls => entry.mtls = true,
                Some("tls") => {}
                _ => entry.plaintext = true,
            }
        }
    }
    Ok(out)
}

/// The RBAC decisions a sidecar's inbound side has counted since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RbacCounters {
    /// Workload port -> (allowed, denied) of its HTTP connection manager.
    pub http: BTreeMap<u32, (u64, u64)>,
    /// (allowed, denied) of the network RBAC filter (TCP traffic), all ports together.
    pub tcp: (u64, u64),
}

/// Reads `/stats?format=json` filtered to the RBAC counters.
pub fn parse_rbac(body: &str) -> Result<RbacCounters, ParseError> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| parse_error("/stats", format!("not JSON: {e}")))?;
    let stats = v
        .get("stats")
        .and_then(Value::as_array)
        .ok_or_else(|| parse_error("/stats", "no stats".into()))?;
    let mut out = RbacCounters::default();
    for s in stats {
        let (Some(name), Some(value)) = (
            s.get("name").and_then(Value::as_str),
            s.get("value").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let (prefix, decision) = if let Some(p) = name.strip_suffix(".rbac.allowed") {
            (p, 0)
        } else if let Some(p) = name.strip_suffix(".rbac.denied") {
            (p, 1)
        } else {
            continue;
        };
        let slot = if prefix == "tcp" {
            &mut out.tcp
        } else {
            // http.inbound_0.0.0.0_8080; -> 8080
            let Some(port) = prefix
                .trim_end_matches(';')
                .strip_prefix("http.inbound_")
                .and_then(|rest| rest.rsplit('_').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            out.http.entry(port).or_default()
        };
        if decision == 0 {
            slot.0 += value;
        } else {
            slot.1 += value;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/envoy/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn the_three_modes_of_the_test_nodes_sidecar() {
        for (file, mode) in [
            ("sidecar_inbound_strict.json", "STRICT"),
            ("sidecar_inbound_permissive.json", "PERMISSIVE"),
            ("sidecar_inbound_disable.json", "DISABLE"),
        ] {
            let got = parse_inbound(&fixture(file)).unwrap();
            assert_eq!(got.get(&8080).map(|a| a.mode()), Some(mode), "{file}");
        }
        assert!(parse_inbound("{}").is_err());
    }

    #[test]
    fn rbac_counters_per_port() {
        let got = parse_rbac(&fixture("sidecar_rbac_stats.json")).unwrap();
        assert_eq!(got.http.get(&8080), Some(&(0, 1)));
        assert_eq!(got.tcp, (0, 0));
        assert!(parse_rbac("[]").is_err());
    }
}
