//! Istio's `validateTrafficPolicy` and the rules under it (`validation.go` and its `agent`
//! package): outlier detection, connection pools (shared with the Sidecar's), load balancers
//! (consistent hash, locality and zone-aware failover, warmup), client TLS, port-level policies,
//! tunnels and the PROXY protocol, with Istio's texts. Durations are read as Istio reads them
//! (Go's `time.ParseDuration`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::istio::config::zero;
use serde_json::Value;

use super::schema_common::{
    Validation, duration_error, duration_nanos, validate_fqdn, validate_ip, validate_port,
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TrafficPolicy {
    load_balancer: Option<LoadBalancer>,
    connection_pool: Option<ConnectionPool>,
    outlier_detection: Option<OutlierDetection>,
    tls: Option<ClientTls>,
    #[serde(deserialize_with = "zero::list")]
    port_level_settings: Vec<PortTrafficPolicy>,
    tunnel: Option<Tunnel>,
    proxy_protocol: Option<ProxyProtocol>,
    retry_budget: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PortTrafficPolicy {
    port: Option<Value>,
    load_balancer: Option<LoadBalancer>,
    connection_pool: Option<ConnectionPool>,
    outlier_detection: Option<OutlierDetection>,
    tls: Option<ClientTls>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConnectionPool {
    http: Option<HttpPool>,
    tcp: Option<TcpPool>,
}

impl ConnectionPool {
    /// True when the pool has HTTP settings.
    pub fn has_http(&self) -> bool {
        self.http.is_some()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct HttpPool {
    http1_max_pending_requests: i64,
    http2_max_requests: i64,
    max_requests_per_connection: i64,
    max_retries: i64,
    idle_timeout: Option<String>,
    h2_upgrade_policy: Option<Value>,
    use_client_protocol: bool,
    max_concurrent_streams: i64,
    http2_keep_alive: Option<KeepAlive>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct KeepAlive {
    interval: Option<String>,
    timeout: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TcpPool {
    max_connections: i64,
    connect_timeout: Option<String>,
    max_connection_duration: Option<String>,
    idle_timeout: Option<String>,
    tcp_keepalive: Option<TcpKeepalive>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TcpKeepalive {
    time: Option<String>,
    interval: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct OutlierDetection {
    consecutive_errors: i64,
    split_external_local_origin_errors: bool,
    consecutive_local_origin_failures: Option<i64>,
    interval: Option<String>,
    base_ejection_time: Option<String>,
    max_ejection_percent: i64,
    min_health_percent: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct LoadBalancer {
    consistent_hash: Option<ConsistentHash>,
    locality_lb_setting: Option<Locality>,
    zone_aware_lb_setting: Option<Locality>,
    warmup: Option<Warmup>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ConsistentHash {
    http_cookie: Option<HttpCookie>,
    minimum_ring_size: u64,
    ring_hash: Option<Value>,
    maglev: Option<Maglev>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HttpCookie {
    name: String,
    #[serde(deserialize_with = "zero::list")]
    attributes: Vec<CookieAttribute>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CookieAttribute {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Maglev {
    table_size: u64,
}

/// A `localityLbSetting` or a `zoneAwareLbSetting` (which has no `distribute`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Locality {
    #[serde(deserialize_with = "zero::list")]
    distribute: Vec<Distribute>,
    #[serde(deserialize_with = "zero::list")]
    failover: Vec<Failover>,
    #[serde(deserialize_with = "zero::list")]
    failover_priority: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Distribute {
    from: String,
    #[serde(deserialize_with = "zero::map")]
    to: BTreeMap<String, u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Failover {
    from: String,
    to: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Warmup {
    duration: Option<String>,
    minimum_percent: Option<f64>,
    aggression: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ClientTls {
    mode: String,
    client_certificate: String,
    private_key: String,
    ca_certificates: String,
    credential_name: String,
    #[serde(deserialize_with = "zero::list")]
    subject_alt_names: Vec<String>,
    insecure_skip_verify: Option<bool>,
    ca_crl: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Tunnel {
    protocol: String,
    target_host: String,
    target_port: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProxyProtocol {
    version: Option<Value>,
}

/// `agent.ValidateDuration` of a duration field that is set (text Istio cannot read is the
/// reader's business).
fn check_duration(text: Option<&String>, v: &mut Validation) {
    if let Some(e) = text
        .and_then(|t| duration_nanos(t))
        .and_then(duration_error)
    {
        v.error(e);
    }
}

/// `validateTrafficPolicy`.
pub fn traffic_policy(namespace: &str, policy: Option<&TrafficPolicy>, v: &mut Validation) {
    let Some(p) = policy else {
        return;
    };
    if p.outlier_detection.is_none()
        && p.connection_pool.is_none()
        && p.load_balancer.is_none()
        && p.tls.is_none()
        && p.port_level_settings.is_empty()
        && p.tunnel.is_none()
        && p.proxy_protocol.is_none()
        && p.retry_budget.is_none()
    {
        v.error("traffic policy must have at least one field");
        return;
    }
    if p.tunnel.is_some() && p.proxy_protocol.is_some() {
        v.error("tunnel and proxyProtocol must not be set together");
        return;
    }
    outlier_detection(p.outlier_detection.as_ref(), v);
    connection_pool(p.connection_pool.as_ref(), v);
    load_balancer(p.load_balancer.as_ref(), p.outlier_detection.is_some(), v);
    client_tls(namespace, p.tls.as_ref(), v);
    port_traffic_policies(namespace, &p.port_level_settings, v);
    if let Some(t) = &p.tunnel {
        tunnel(t, v);
    }
    if let Some(version) = p.proxy_protocol.as_ref().and_then(|p| p.version.as_ref())
        && let Some(n) = version.as_i64()
        && n != 0
        && n != 1
    {
        v.error(format!("proxy protocol version is invalid: {n}"));
    }
}

/// `validatePortTrafficPolicies`: its warnings are dropped, as Istio's `appendErrors` drops them.
fn port_traffic_policies(namespace: &str, policies: &[PortTrafficPolicy], v: &mut Validation) {
    for t in policies {
        if t.port.as_ref().is_none_or(Value::is_null) {
            v.error("portTrafficPolicy must have valid port");
        }
        if t.outlier_detection.is_none()
            && t.connection_pool.is_none()
            && t.load_balancer.is_none()
            && t.tls.is_none()
        {
            v.error("port traffic policy must have at least one field");
            continue;
        }
        let mut inner = Validation::default();
        outlier_detection(t.outlier_detection.as_ref(), &mut inner);
        connection_pool(t.connection_pool.as_ref(), &mut inner);
        load_balancer(
            t.load_balancer.as_ref(),
            t.outlier_detection.is_some(),
            &mut inner,
        );
        client_tls(namespace, t.tls.as_ref(), &mut inner);
        v.extend(inner.errors);
    }
}

/// `validateOutlierDetection`.
fn outlier_detection(outlier: Option<&OutlierDetection>, v: &mut Validation) {
    let Some(o) = outlier else {
        return;
    };
    check_duration(o.base_ejection_time.as_ref(), v);
    if o.consecutive_errors != 0 {
        v.warn("outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead");
    }
    if !o.split_external_local_origin_errors && o.consecutive_local_origin_failures.unwrap_or(0) > 0
    {
        v.error("outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false");
    }
    check_duration(o.interval.as_ref(), v);
    for value in [o.max_ejection_percent, o.min_health_percent] {
        if !(0..=100).contains(&value) {
            v.error(format!("percentage {value} is not in range 0..100"));
        }
    }
}

/// True when an enum field holds the value `name` (or its number).
fn enum_is(value: Option<&Value>, name: &str, number: i64) -> bool {
    value.is_some_and(|v| v.as_str() == Some(name) || v.as_i64() == Some(number))
}

/// `validateConnectionPool` (of DestinationRules and Sidecars).
pub fn connection_pool(pool: Option<&ConnectionPool>, v: &mut Validation) {
    let Some(pool) = pool else {
        return;
    };
    if pool.http.is_none() && pool.tcp.is_none() {
        v.error("connection pool must have at least one field");
        return;
    }
    if let Some(h) = &pool.http {
        for (value, what) in [
            (h.http1_max_pending_requests, "http1 max pending requests"),
            (h.http2_max_requests, "http2 max requests"),
            (h.max_requests_per_connection, "max requests per connection"),
            (h.max_retries, "max retries"),
        ] {
            if value < 0 {
                v.error(format!("{what} must be non-negative"));
            }
        }
        check_duration(h.idle_timeout.as_ref(), v);
        if enum_is(h.h2_upgrade_policy.as_ref(), "UPGRADE", 2) && h.use_client_protocol {
            v.error("use client protocol must not be true when H2UpgradePolicy is UPGRADE");
        }
        if h.max_concurrent_streams < 0 {
            v.error("max concurrent streams must be non-negative");
        }
        if let Some(k) = &h.http2_keep_alive {
            match &k.interval {
                None => v.error("http2 keepalive interval is required"),
                Some(_) => check_duration(k.interval.as_ref(), v),
            }
            match &k.timeout {
                None => v.error("http2 keepalive timeout is required"),
                Some(_) => check_duration(k.timeout.as_ref(), v),
            }
        }
    }
    if let Some(t) = &pool.tcp {
        if t.max_connections < 0 {
            v.error("max connections must be non-negative");
        }
        check_duration(t.connect_timeout.as_ref(), v);
        check_duration(t.max_connection_duration.as_ref(), v);
        // A zero idle timeout (in whole milliseconds) disables it and is not judged.
        let idle = t.idle_timeout.as_ref().and_then(|d| duration_nanos(d));
        if idle.is_some_and(|n| n / 1_000_000 != 0) {
            check_duration(t.idle_timeout.as_ref(), v);
        }
        if let Some(k) = &t.tcp_keepalive {
            check_duration(k.time.as_ref(), v);
            check_duration(k.interval.as_ref(), v);
        }
    }
}

/// Envoy's `isPrime`, which Istio copies for the Maglev table size.
fn is_prime(x: u64) -> bool {
    if x != 0 && x < 4 {
        return true;
    }
    if x & 1 == 0 {
        return false;
    }
    let limit = (x as f64).sqrt() as u64;
    (3..=limit).step_by(2).all(|f| !x.is_multiple_of(f))
}

/// `validateLoadBalancer`; `outlier` says whether the policy has an outlier detection.
fn load_balancer(lb: Option<&LoadBalancer>, outlier: bool, v: &mut Validation) {
    let Some(lb) = lb else {
        return;
    };
    if let Some(hash) = &lb.consistent_hash {
        consistent_hash(hash, v);
    }
    if lb.locality_lb_setting.is_some() && lb.zone_aware_lb_setting.is_some() {
        v.error("only one of localityLbSetting and zoneAwareLbSetting can be set");
    }
    if let Some(l) = &lb.locality_lb_setting {
        locality_lb(l, outlier, v);
    }
    if let Some(z) = &lb.zone_aware_lb_setting {
        zone_aware_lb(z, outlier, v);
    }
    if let Some(w) = &lb.warmup {
        match &w.duration {
            None => v.error("duration is required"),
            Some(_) => check_duration(w.duration.as_ref(), v),
        }
        if w.minimum_percent.unwrap_or(0.0) > 100.0 {
            v.error("minimumPercent value should be less than or equal to 100");
        }
        if w.aggression.is_some_and(|a| a <= 0.0) {
            v.error("aggression should be greater than 0");
        }
    }
}

fn consistent_hash(hash: &ConsistentHash, v: &mut Validation) {
    if let Some(cookie) = &hash.http_cookie {
        if cookie.name.is_empty() {
            v.error("name required for HttpCookie");
        }
        let mut names: Vec<&str> = Vec::new();
        for attribute in &cookie.attributes {
            let name = attribute.name.as_str();
            if name.is_empty() {
                v.error("cookie attribute name cannot be empty");
            } else if names.contains(&name) {
                v.error(format!("duplicate cookie attribute name: {name}"));
            } else {
                names.push(name);
            }
        }
    }
    let algorithm = hash.ring_hash.as_ref().is_some_and(|r| !r.is_null()) || hash.maglev.is_some();
    if hash.minimum_ring_size != 0 {
        v.warn("consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's RingHash configuration instead");
        if algorithm {
            v.error("only one of MinimumRingSize or Maglev/Ringhash can be specified");
        }
    }
    if let Some(m) = &hash.maglev {
        if m.table_size == 0 {
            v.error("tableSize must be set for maglev");
        }
        if m.table_size >= 5_000_011 {
            v.error("tableSize must be less than 5000011 for maglev");
        }
        if !is_prime(m.table_size) {
            v.error("tableSize must be a prime number for maglev");
        }
    }
}

const TOPOLOGY_LABELS: &[&str] = &[
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.istio.io/subzone",
];

const FAILOVER_WARNING: &str = "outlier detection policy must be provided for failover";

/// `agent.ValidateLocalityLbSetting` (it stops at the first error of the distribution).
fn locality_lb(lb: &Locality, outlier: bool, v: &mut Validation) {
    if !lb.distribute.is_empty() && !lb.failover.is_empty() {
        v.error("can not simultaneously specify 'distribute' and 'failover'");
        return;
    }
    if !lb.failover.is_empty()
        && let Some(label) = lb
            .failover_priority
            .iter()
            .find(|l| TOPOLOGY_LABELS.contains(&l.as_str()))
    {
        v.error(format!(
            "can not simultaneously set 'failover' and topology label '{label}' in 'failover_priority'"
        ));
        return;
    }
    let mut sources = Vec::new();
    for d in lb.distribute.iter() {
        sources.push(d.from.as_str());
        if d.to.values().any(|w| *w == 0 || *w > 100) {
            v.error("locality weight must be in range [1, 100]");
            return;
        }
        let total: u64 = d.to.values().sum();
        if total != 100 {
            v.error(format!("total locality weight {total} != 100"));
            return;
        }
        let destinations: Vec<&str> = d.to.keys().map(String::as_str).collect();
        v.check(localities(&destinations));
    }
    v.check(localities(&sources));
    if (!lb.failover.is_empty() || !lb.failover_priority.is_empty()) && !outlier {
        v.warn(FAILOVER_WARNING);
    }
    for f in lb.failover.iter() {
        if f.from == f.to {
            v.error("locality lb failover settings must specify different regions");
        }
        if f.from.contains('/') || f.to.contains('/') {
            v.error("locality lb failover only specify region");
        }
        if f.to.contains('*') || f.from.contains('*') {
            v.error("locality lb failover region should not contain '*' wildcard");
        }
    }
}

/// `agent.ValidateZoneAwareLbSetting`.
fn zone_aware_lb(lb: &Locality, outlier: bool, v: &mut Validation) {
    for label in &lb.failover_priority {
        if TOPOLOGY_LABELS.contains(&label.as_str()) {
            v.error(format!("'failover_priority' for zone aware lb must not use topology label '{label}'; region- and zone-level routing are handled automatically"));
        }
    }
    if (!lb.failover.is_empty() || !lb.failover_priority.is_empty()) && !outlier {
        v.warn(FAILOVER_WARNING);
    }
    for f in lb.failover.iter() {
        if f.from == f.to {
            v.error("zone aware lb failover settings must specify different regions");
        }
        if f.from.contains('/') || f.to.contains('/') {
            v.error("zone aware lb failover only specifies region; zone and subzone failover are handled automatically");
        }
        if f.to.contains('*') || f.from.contains('*') {
            v.error("zone aware lb failover region should not contain '*' wildcard");
        }
    }
}

/// `validateLocalities`: wildcards only at the end, no empty part, no locality that overlaps an
/// earlier one.
fn localities(list: &[&str]) -> Option<String> {
    // region -> zone -> subzones; "*" for "all of it".
    let mut seen: BTreeMap<&str, BTreeMap<&str, BTreeMap<&str, bool>>> = BTreeMap::new();
    for &locality in list {
        let overlap = || {
            Some(format!(
                "locality {locality} overlap with previous specified ones"
            ))
        };
        let stars = locality.matches('*').count();
        if stars > 1 || (stars == 1 && !locality.ends_with('*')) {
            return Some(format!(
                "locality {locality} wildcard '*' number can not exceed 1 and must be in the end"
            ));
        }
        if seen.contains_key("*") {
            return overlap();
        }
        let items: Vec<&str> = locality.splitn(3, '/').collect();
        if items.iter().any(|i| i.is_empty()) {
            return Some(format!(
                "locality {locality} must not contain empty region/zone/subzone info"
            ));
        }
        let region = items[0];
        match items.len() {
            1 => {
                if seen.contains_key(region) {
                    return overlap();
                }
                let all = BTreeMap::from([("*", BTreeMap::from([("*", true)]))]);
                seen.insert(region, all);
            }
            2 => {
                let zone = items[1];
                let zones = seen.entry(region).or_default();
                if zones.contains_key("*") || zones.contains_key(zone) {
                    return overlap();
                }
                zones.insert(zone, BTreeMap::from([("*", true)]));
            }
            _ => {
                let (zone, subzone) = (items[1], items[2]);
                let zones = seen.entry(region).or_default();
                if zones.contains_key("*") {
                    return overlap();
                }
                let subzones = zones.entry(zone).or_default();
                if subzones.get("*") == Some(&true) || subzones.get(subzone) == Some(&true) {
                    return overlap();
                }
                subzones.insert(subzone, true);
            }
        }
    }
    None
}

/// `agent.ValidateTLS`.
fn client_tls(namespace: &str, tls: Option<&ClientTls>, v: &mut Validation) {
    let Some(tls) = tls else {
        return;
    };
    if let Some(rest) = tls.credential_name.strip_prefix("configmap://") {
        let name = &tls.credential_name;
        let parts: Vec<&str> = rest.split('/').collect();
        let problem = if parts.len() <= 1 {
            Some(format!(
                "invalid resource name {name:?}. Expected namespace and name"
            ))
        } else if parts[0].is_empty() {
            Some(format!(
                "invalid resource name {name:?}. Expected namespace"
            ))
        } else if parts[1].is_empty() {
            Some(format!("invalid resource name {name:?}. Expected name"))
        } else {
            None
        };
        match problem {
            Some(p) => v.error(format!("invalid configmap:// credentialName: {p}")),
            None if parts[0] != namespace || namespace.is_empty() => v.error(format!(
                "invalid configmap:// credentialName: namespace must match the configuration namespace {namespace:?}"
            )),
            None => {}
        }
    }
    let sans = !tls.subject_alt_names.is_empty();
    if tls.insecure_skip_verify == Some(true) {
        if tls.mode == "SIMPLE"
            && (!tls.ca_certificates.is_empty() || !tls.credential_name.is_empty() || sans)
        {
            v.error("cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true");
        }
        if tls.mode == "MUTUAL" && (!tls.ca_certificates.is_empty() || sans) {
            v.error("cannot specify CaCertificates or SubjectAltNames when InsecureSkipVerify is set true");
        }
    }
    let originates = matches!(tls.mode.as_str(), "SIMPLE" | "MUTUAL");
    if originates && !tls.credential_name.is_empty() {
        if !tls.client_certificate.is_empty()
            || !tls.ca_certificates.is_empty()
            || !tls.private_key.is_empty()
            || !tls.ca_crl.is_empty()
        {
            v.error("cannot specify client certificates or CA certificate or CA CRL If credentialName is set");
        }
        return;
    }
    if tls.mode == "MUTUAL" {
        if tls.client_certificate.is_empty() {
            v.error("client certificate required for mutual tls");
        }
        if tls.private_key.is_empty() {
            v.error("private key required for mutual tls");
        }
    }
}

/// `validateTunnelSettings`.
fn tunnel(t: &Tunnel, v: &mut Validation) {
    if !t.protocol.is_empty() && t.protocol != "CONNECT" && t.protocol != "POST" {
        v.error("tunnel protocol must be \"CONNECT\" or \"POST\"");
    }
    if let (Some(fqdn), Some(ip)) = (validate_fqdn(&t.target_host), validate_ip(&t.target_host)) {
        v.error(format!(
            "tunnel target host must be valid FQDN or IP address: {fqdn}; {ip}"
        ));
    }
    if let Some(e) = validate_port(t.target_port) {
        v.error(format!("tunnel target port is invalid: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_as_envoy_counts_them() {
        let primes: Vec<u64> = (0..30).filter(|n| is_prime(*n)).collect();
        assert_eq!(primes, [1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
        assert!(is_prime(65537));
        assert!(!is_prime(65535));
    }

    #[test]
    fn overlapping_localities() {
        assert_eq!(
            localities(&["us-east", "us-west/zone1", "us-west/zone2/a"]),
            None
        );
        assert_eq!(
            localities(&["us-west/zone1", "us-west/zone1/a"]).as_deref(),
            Some("locality us-west/zone1/a overlap with previous specified ones")
        );
        assert_eq!(
            localities(&["us-west/*/a"]).as_deref(),
            Some(
                "locality us-west/*/a wildcard '*' number can not exceed 1 and must be in the end"
            )
        );
        assert_eq!(
            localities(&["us-west//a"]).as_deref(),
            Some("locality us-west//a must not contain empty region/zone/subzone info")
        );
        assert_eq!(
            localities(&["*", "us-west"]).as_deref(),
            Some("locality us-west overlap with previous specified ones")
        );
    }
}
