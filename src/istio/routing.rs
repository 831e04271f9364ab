//! Which VirtualService a sidecar applies to a request, and which of its routes the request
//! takes: Istio's rules as the client's sidecar applies them. Pure: typed config and a request
//! in, the deciding objects out.
//!
//! - A VirtualService applies to sidecars when its `gateways` is empty or names `mesh`, it is
//!   visible from the client's namespace (`exportTo`: empty or `*`, `.` for its own namespace,
//!   or the client's namespace), and one of its `hosts` (a short name completed in the
//!   VirtualService's namespace) matches the host. Of several, the one with the exact host wins
//!   over a wildcard (Envoy's virtual-host domain order), then the oldest (Istio's order of
//!   conflicting VirtualServices, IST0109).
//! - Routes are tried in order; the first route one of whose `match` entries fits the request
//!   is taken (a route without `match` fits every request). A match fits when every condition
//!   it sets holds: `uri`, `method`, `authority`, `scheme`, `headers`, `withoutHeaders`,
//!   `queryParams`, `port`, `sourceLabels`, `sourceNamespace`, and `gateways` naming `mesh` when
//!   set. Regexes are RE2 full matches (Envoy's `safe_regex`); the `regex` crate's syntax is
//!   RE2's for everything Istio's validation accepts.

use regex::Regex;

use super::config::host::{matches, to_fqdn};
use super::config::{
    Config, HttpMatch, HttpRoute, L4Match, Labels, Sidecar, StringMatch, TcpRoute, Typed,
    VirtualService,
};

/// The gateway name that stands for every sidecar.
pub const MESH_GATEWAY: &str = "mesh";

/// The client of a request: where its sidecar runs.
#[derive(Clone, Copy, Debug)]
pub struct Client<'r> {
    pub namespace: &'r str,
    pub labels: &'r Labels,
}

/// An HTTP request as the application sends it.
#[derive(Clone, Debug, Default)]
pub struct HttpRequest {
    /// The path with its query string, `/` by default.
    pub path: String,
    /// `GET` by default.
    pub method: String,
    /// Header names in lower case, as Envoy sees them.
    pub headers: Vec<(String, String)>,
    /// The `Host` header (`:authority`), as the application sets it.
    pub authority: String,
}

impl HttpRequest {
    /// The path without the query string.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or("")
    }

    /// The query parameters, in order.
    pub fn query(&self) -> Vec<(&str, &str)> {
        self.path
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect()
    }

    fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The first route object that sends traffic to the Service `name` in `ns`: a VirtualService
/// route destination (its host completed in the VirtualService's namespace) or a Gateway API
/// route's `backendRefs` entry of kind Service. `VirtualService shop/web` or `HTTPRoute shop/web`.
pub fn route_to_service(config: &Config<'_>, ns: &str, name: &str) -> Option<String> {
    let fqdn = format!("{name}.{ns}.svc.cluster.local");
    for vs in &config.virtual_services {
        let spec = &vs.spec;
        let destinations = spec
            .http
            .iter()
            .flat_map(|r| &r.route)
            .chain(spec.tcp.iter().flat_map(|r| &r.route))
            .chain(spec.tls.iter().flat_map(|r| &r.route))
            .filter_map(|d| d.destination.as_ref());
        if destinations
            .into_iter()
            .any(|d| !d.host.is_empty() && to_fqdn(vs.namespace(), &d.host) == fqdn)
        {
            return Some(format!("VirtualService {}/{}", vs.namespace(), vs.name()));
        }
    }
    let kinds = [
        ("HTTPRoute", &config.http_routes),
        ("GRPCRoute", &config.grpc_routes),
        ("TCPRoute", &config.tcp_routes),
        ("TLSRoute", &config.tls_routes),
    ];
    for (kind, routes) in kinds {
        for route in routes {
            let refs = route
                .spec
                .rules
                .iter()
                .filter_map(|r| r.get("backendRefs")?.as_array())
                .flatten();
            let hit = refs.into_iter().any(|r| {
                let text = |k: &str| r.get(k).and_then(|v| v.as_str());
                text("kind").is_none_or(|k| k == "Service")
                    && text("group").is_none_or(str::is_empty)
                    && text("name") == Some(name)
                    && text("namespace").unwrap_or(route.namespace()) == ns
            });
            if hit {
                return Some(format!("{kind} {}/{}", route.namespace(), route.name()));
            }
        }
    }
    None
}

/// The Sidecar resource that applies to a sidecar workload in `namespace` with `labels`: its own
/// (a `workloadSelector` matching its labels), else its namespace's (no selector), else the root
/// namespace's; the first of each kind in the config's order.
pub fn sidecar_resource<'c, 'a>(
    config: &'c Config<'a>,
    root_namespace: &str,
    namespace: &str,
    labels: &Labels,
) -> Option<&'c Typed<'a, Sidecar>> {
    let selects = |s: &Typed<'_, Sidecar>| {
        s.spec.workload_selector.as_ref().is_some_and(|w| {
            !w.labels.is_empty() && w.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
    };
    let wide = |s: &Typed<'_, Sidecar>| {
        s.spec
            .workload_selector
            .as_ref()
            .is_none_or(|w| w.labels.is_empty())
    };
    let sidecars = &config.sidecars;
    sidecars
        .iter()
        .find(|s| s.namespace() == namespace && selects(s))
        .or_else(|| {
            sidecars
                .iter()
                .find(|s| s.namespace() == namespace && wide(s))
        })
        .or_else(|| {
            sidecars
                .iter()
                .find(|s| s.namespace() == root_namespace && wide(s))
        })
}

/// True when a VirtualService in `vs_ns` with `export_to` is visible to clients in `client_ns`.
pub fn exported_to(export_to: &[String], vs_ns: &str, client_ns: &str) -> bool {
    export_to.is_empty()
        || export_to
            .iter()
            .any(|e| e == "*" || e == client_ns || (e == "." && vs_ns == client_ns))
}

fn creation<T>(t: &Typed<'_, T>) -> (String, String, String) {
    let created = t
        .resource
        .object
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    (created, t.namespace().to_string(), t.name().to_string())
}

/// The VirtualService a sidecar in `client_ns` applies to `fqdn`, with the host of it that
/// matched, and the other VirtualServices for the same host that lose to it.
pub struct Chosen<'c, 'a> {
    pub virtual_service: &'c Typed<'a, VirtualService>,
    pub host: String,
    pub shadowed: Vec<&'c Typed<'a, VirtualService>>,
}

/// (wildcard only, creation order key, the VirtualService, the host of it that matched).
type Candidate<'c, 'a> = (
    bool,
    (String, String, String),
    &'c Typed<'a, VirtualService>,
    String,
);

/// The VirtualService that applies to `fqdn` for a sidecar in `client_ns` (see the module doc).
pub fn virtual_service<'c, 'a>(
    config: &'c Config<'a>,
    client_ns: &str,
    fqdn: &str,
) -> Option<Chosen<'c, 'a>> {
    let mut candidates: Vec<Candidate<'c, 'a>> = Vec::new();
    for vs in &config.virtual_services {
        let spec = &vs.spec;
        let for_mesh = spec.gateways.is_empty() || spec.gateways.iter().any(|g| g == MESH_GATEWAY);
        if !for_mesh || !exported_to(&spec.export_to, vs.namespace(), client_ns) {
            continue;
        }
        let mut best: Option<(bool, String)> = None;
        for host in &spec.hosts {
            let full = to_fqdn(vs.namespace(), host);
            if full == fqdn {
                best = Some((true, full));
                break;
            }
            if full.starts_with('*') && matches(&full, fqdn) && best.is_none() {
                best = Some((false, full));
            }
        }
        if let Some((exact, host)) = best {
            candidates.push((!exact, creation(vs), vs, host));
        }
    }
    candidates.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut iter = candidates.into_iter();
    let (_, _, first, host) = iter.next()?;
    Some(Chosen {
        virtual_service: first,
        host,
        shadowed: iter.map(|(_, _, vs, _)| vs).collect(),
    })
}

/// Whether a string fits a `StringMatch` (`exact`, `prefix`, `regex`; an empty match fits any
/// value that is present). `Err` carries a regex that does not compile.
pub fn string_matches(m: &StringMatch, value: &str, ignore_case: bool) -> Result<bool, String> {
    let fold = |s: &str| {
        if ignore_case {
            s.to_ascii_lowercase()
        } else {
            s.to_string()
        }
    };
    if let Some(exact) = &m.exact {
        return Ok(fold(exact) == fold(value));
    }
    if let Some(prefix) = &m.prefix {
        return Ok(fold(value).starts_with(&fold(prefix)));
    }
    if let Some(pattern) = &m.regex {
        let pattern = if ignore_case {
            format!("(?i)^(?:{pattern})$")
        } else {
            format!("^(?:{pattern})$")
        };
        let re = Regex::new(&pattern).map_err(|e| format!("regex {pattern}: {e}"))?;
        return Ok(re.is_match(value));
    }
    Ok(true)
}

/// Why a match entry does not fit, or `None` when it does.
fn http_match_misses(
    m: &HttpMatch,
    request: &HttpRequest,
    client: Client<'_>,
    port: u32,
) -> Result<Option<String>, String> {
    if !m.gateways.is_empty() && !m.gateways.iter().any(|g| g == MESH_GATEWAY) {
        return Ok(Some(format!(
            "its gateways ({}) do not include mesh",
            m.gateways.join(", ")
        )));
    }
    if m.port != 0 && m.port != port {
        return Ok(Some(format!("port {} is not {port}", m.port)));
    }
    if !m.source_namespace.is_empty() && m.source_namespace != client.namespace {
        return Ok(Some(format!(
            "sourceNamespace {} is not {}",
            m.source_namespace, client.namespace
        )));
    }
    if !m
        .source_labels
        .iter()
        .all(|(k, v)| client.labels.get(k) == Some(v))
    {
        return Ok(Some("sourceLabels do not match the client's labels".into()));
    }
    if let Some(uri) = &m.uri
        && !string_matches(uri, request.path_only(), m.ignore_uri_case)?
    {
        return Ok(Some(format!(
            "uri {} does not match {}",
            describe(uri),
            request.path_only()
        )));
    }
    if let Some(method) = &m.method
        && !string_matches(method, &request.method, false)?
    {
        return Ok(Some(format!(
            "method {} does not match {}",
            describe(method),
            request.method
        )));
    }
    if let Some(authority) = &m.authority
        && !string_matches(authority, &request.authority, false)?
    {
        return Ok(Some(format!(
            "authority {} does not match {}",
            describe(authority),
            request.authority
        )));
    }
    if let Some(scheme) = &m.scheme
        && !string_matches(scheme, "http", false)?
    {
        return Ok(Some(format!("scheme {} is not http", describe(scheme))));
    }
    for (name, want) in &m.headers {
        match request.header(name) {
            None => return Ok(Some(format!("the request has no header {name}"))),
            Some(v) if !string_matches(want, v, false)? => {
                return Ok(Some(format!(
                    "header {name}: {} does not match {v}",
                    describe(want)
                )));
            }
            Some(_) => {}
        }
    }
    for (name, unwanted) in &m.without_headers {
        if let Some(v) = request.header(name)
            && string_matches(unwanted, v, false)?
        {
            return Ok(Some(format!("withoutHeaders {name} matches {v}")));
        }
    }
    let query = request.query();
    for (name, want) in &m.query_params {
        match query.iter().find(|(k, _)| k == name) {
            None => return Ok(Some(format!("the request has no query parameter {name}"))),
            Some((_, v)) if !string_matches(want, v, false)? => {
                return Ok(Some(format!(
                    "query parameter {name}: {} does not match {v}",
                    describe(want)
                )));
            }
            Some(_) => {}
        }
    }
    Ok(None)
}

/// `exact X`, `prefix X` or `regex X`, as written.
pub fn describe(m: &StringMatch) -> String {
    if let Some(v) = &m.exact {
        format!("exact {v}")
    } else if let Some(v) = &m.prefix {
        format!("prefix {v}")
    } else if let Some(v) = &m.regex {
        format!("regex {v}")
    } else {
        "(any value)".to_string()
    }
}

/// The HTTP route a request takes, or why none does.
#[derive(Debug)]
pub enum HttpChoice<'v> {
    /// `index` into `http`; `matched`: which `match` entry fit (`None`: the route has none).
    Route {
        index: usize,
        route: &'v HttpRoute,
        matched: Option<usize>,
    },
    /// No route fits: Envoy answers 404 with response flag NR. The reasons, per route.
    NoRoute { misses: Vec<String> },
    /// A route could not be judged (a regex that does not compile, a delegate).
    Unknown { index: usize, reason: String },
}

/// The HTTP route of `vs` that `request` from `client` to service port `port` takes.
pub fn http_route<'v>(
    vs: &'v VirtualService,
    request: &HttpRequest,
    client: Client<'_>,
    port: u32,
) -> HttpChoice<'v> {
    let mut misses = Vec::new();
    for (index, route) in vs.http.iter().enumerate() {
        let label = route_label(index, &route.name);
        if route.matches.is_empty() {
            if route.delegate.is_some() {
                return HttpChoice::Unknown {
                    index,
                    reason: format!(
                        "{label} delegates to another VirtualService, which mesh-doctor does not follow"
                    ),
                };
            }
            return HttpChoice::Route {
                index,
                route,
                matched: None,
            };
        }
        let mut why = Vec::new();
        for (i, m) in route.matches.iter().enumerate() {
            match http_match_misses(m, request, client, port) {
                Ok(None) => {
                    if route.delegate.is_some() {
                        return HttpChoice::Unknown {
                            index,
                            reason: format!(
                                "{label} delegates to another VirtualService, which mesh-doctor does not follow"
                            ),
                        };
                    }
                    return HttpChoice::Route {
                        index,
                        route,
                        matched: Some(i),
                    };
                }
                Ok(Some(reason)) => why.push(reason),
                Err(reason) => {
                    return HttpChoice::Unknown {
                        index,
                        reason: format!("{label}: {reason}"),
                    };
                }
            }
        }
        misses.push(format!("{label}: {}", why.join("; ")));
    }
    HttpChoice::NoRoute { misses }
}

/// `http[2] (name reviews-v2)`, how a route is named in messages.
pub fn route_label(index: usize, name: &str) -> String {
    if name.is_empty() {
        format!("http[{index}]")
    } else {
        format!("http[{index}] ({name})")
    }
}

fn l4_fits(m: &L4Match, client: Client<'_>, port: u32) -> bool {
    (m.gateways.is_empty() || m.gateways.iter().any(|g| g == MESH_GATEWAY))
        && (m.port == 0 || m.port == port)
        && (m.source_namespace.is_empty() || m.source_namespace == client.namespace)
        && m.source_labels
            .iter()
            .all(|(k, v)| client.labels.get(k) == Some(v))
        && m.sni_hosts.is_empty()
        && m.destination_subnets.is_empty()
}

/// The TCP route a connection to service port `port` takes (index into `tcp`).
pub fn tcp_route<'v>(
    vs: &'v VirtualService,
    client: Client<'_>,
    port: u32,
) -> Option<(usize, &'v TcpRoute)> {
    vs.tcp
        .iter()
        .enumerate()
        .find(|(_, r)| r.matches.is_empty() || r.matches.iter().any(|m| l4_fits(m, client, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vs(yaml: serde_json::Value) -> VirtualService {
        serde_json::from_value(yaml).unwrap()
    }

    fn get(path: &str) -> HttpRequest {
        HttpRequest {
            path: path.into(),
            method: "GET".into(),
            headers: vec![],
            authority: "server".into(),
        }
    }

    #[test]
    fn the_first_fitting_route_is_taken() {
        let v = vs(serde_json::json!({
            "hosts": ["server"],
            "http": [
                {"name": "api", "match": [{"uri": {"prefix": "/api"}}, {"uri": {"regex": "/v[0-9]+/.*"}}]},
                {"name": "rest"}
            ]
        }));
        let labels = Labels::new();
        let client = Client {
            namespace: "a",
            labels: &labels,
        };
        match http_route(&v, &get("/api/x?y=1"), client, 80) {
            HttpChoice::Route { index, matched, .. } => assert_eq!((index, matched), (0, Some(0))),
            other => panic!("{other:?}"),
        }
        match http_route(&v, &get("/v2/items"), client, 80) {
            HttpChoice::Route { index, matched, .. } => assert_eq!((index, matched), (0, Some(1))),
            other => panic!("{other:?}"),
        }
        match http_route(&v, &get("/other"), client, 80) {
            HttpChoice::Route { index, matched, .. } => assert_eq!((index, matched), (1, None)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_fitting_route_is_404_nr_with_the_reasons() {
        let v = vs(serde_json::json!({
            "hosts": ["server"],
            "http": [{"match": [{"uri": {"exact": "/only"}, "method": {"exact": "POST"}}]}]
        }));
        let labels = Labels::new();
        let client = Client {
            namespace: "a",
            labels: &labels,
        };
        match http_route(&v, &get("/only"), client, 80) {
            HttpChoice::NoRoute { misses } => {
                assert_eq!(misses, ["http[0]: method exact POST does not match GET"])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn source_labels_ports_and_headers_decide() {
        let v = vs(serde_json::json!({
            "hosts": ["server"],
            "http": [
                {"match": [{"sourceLabels": {"app": "canary"}}]},
                {"match": [{"port": 8080}]},
                {"match": [{"headers": {"end-user": {"exact": "jason"}}}]}
            ]
        }));
        let mut labels = Labels::new();
        labels.insert("app".into(), "client".into());
        let client = Client {
            namespace: "a",
            labels: &labels,
        };
        let mut request = get("/");
        request.headers.push(("end-user".into(), "jason".into()));
        match http_route(&v, &request, client, 80) {
            HttpChoice::Route { index, .. } => assert_eq!(index, 2),
            other => panic!("{other:?}"),
        }
        match http_route(&v, &get("/"), client, 8080) {
            HttpChoice::Route { index, .. } => assert_eq!(index, 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_regex_is_unknown_not_a_miss() {
        let v = vs(
            serde_json::json!({"hosts": ["s"], "http": [{"match": [{"uri": {"regex": "(["}}]}]}),
        );
        let labels = Labels::new();
        let client = Client {
            namespace: "a",
            labels: &labels,
        };
        assert!(matches!(
            http_route(&v, &get("/"), client, 80),
            HttpChoice::Unknown { index: 0, .. }
        ));
    }
}
