//! Known failures in the istio-proxy container's logs (Envoy and pilot-agent share it).
//!
//! Envoy's error texts carry random prefixes and spacing from protobuf (`goo.gle/debugproto`,
//! `invalid JSON  in`), so each signature matches stable substrings after whitespace is
//! collapsed and case is folded, never a whole line. Lines logged at info, debug or trace are
//! skipped: the bootstrap Envoy prints at info holds cluster names that would match otherwise.

use serde::Serialize;

/// What a signature says about the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Envoy cannot start with the bootstrap it was given: it exits, the container crash-loops.
    Bootstrap,
    /// Envoy runs but cannot get (or keep) its configuration from istiod.
    ControlPlane,
}

/// A known failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signature {
    // Bootstrap failures (Envoy exits 1).
    UnknownGrpcCluster,
    UnknownField,
    UnknownType,
    InvalidJson,
    DuplicateCluster,
    RouteToUnknownCluster,
    CannotBind,
    HotRestartSocket,
    MissingConfigFile,
    // Control-plane trouble (Envoy keeps running, without configuration).
    ConfigNotReceived,
    XdsStreamClosed,
    ConnectionRefused,
    InitialFetchTimeout,
    Certificate,
    Token,
    Authentication,
}

/// Every signature, in matching order (the more specific ones first).
pub const ALL: &[Signature] = &[
    Signature::UnknownGrpcCluster,
    Signature::UnknownField,
    Signature::UnknownType,
    Signature::InvalidJson,
    Signature::DuplicateCluster,
    Signature::RouteToUnknownCluster,
    Signature::CannotBind,
    Signature::HotRestartSocket,
    Signature::MissingConfigFile,
    Signature::ConfigNotReceived,
    Signature::Certificate,
    Signature::Token,
    Signature::Authentication,
    Signature::XdsStreamClosed,
    Signature::ConnectionRefused,
    Signature::InitialFetchTimeout,
];

impl Signature {
    pub fn family(self) -> Family {
        use Signature::*;
        match self {
            UnknownGrpcCluster
            | UnknownField
            | UnknownType
            | InvalidJson
            | DuplicateCluster
            | RouteToUnknownCluster
            | CannotBind
            | HotRestartSocket
            | MissingConfigFile => Family::Bootstrap,
            ConfigNotReceived | XdsStreamClosed | ConnectionRefused | InitialFetchTimeout
            | Certificate | Token | Authentication => Family::ControlPlane,
        }
    }

    /// Groups of lowercase substrings: the line matches when every substring of one group is in it.
    fn patterns(self) -> &'static [&'static [&'static str]] {
        use Signature::*;
        match self {
            UnknownGrpcCluster => &[&["unknown grpc client cluster"]],
            UnknownField => &[&["has unknown fields"], &["no such field"]],
            UnknownType => &[
                &["could not find @type"],
                &["unable to parse json as proto", "@type"],
            ],
            InvalidJson => &[&["unable to parse json as proto"], &["invalid json"]],
            DuplicateCluster => &[&["duplicate cluster"]],
            RouteToUnknownCluster => &[&["route: unknown cluster"], &["unknown cluster", "route"]],
            CannotBind => &[&["cannot bind"], &["address already in use"]],
            HotRestartSocket => &[&["unable to bind domain socket"]],
            MissingConfigFile => &[
                &["invalid path:"],
                &["unable to read file"],
                &["no such file or directory", "envoy-rev"],
                &["no such file or directory", "bootstrap"],
            ],
            ConfigNotReceived => &[
                &["config not received from xds server"],
                &["config not received from pilot"],
            ],
            XdsStreamClosed => &[
                &["grpc config stream", "closed"],
                &["xds", "stream", "closed"],
                &["xds proxy", "disconnect"],
            ],
            ConnectionRefused => &[&["connection refused"], &["connection_refused"]],
            InitialFetchTimeout => &[&["initial fetch timed out"]],
            Certificate => &[
                &["x509:"],
                &["certificate_verify_failed"],
                &["certificate verify failed"],
                &["tls error"],
                &["failed to load root cert"],
                &["istio-ca-root-cert"],
                &["csr retrial timed out"],
                &["failed to generate secret"],
            ],
            Token => &[
                &["istio-token"],
                &["failed to get token"],
                &["failed to fetch token"],
                &["token", "audience"],
                &["invalid audience"],
                &["failed to read token"],
            ],
            Authentication => &[
                &["unauthenticated"],
                &["authentication failure"],
                &["authentication handshake failed"],
                &["permissiondenied"],
                &["permission denied"],
                &["permission_denied"],
            ],
        }
    }

    /// What the line means, for people.
    pub fn explain(self) -> &'static str {
        use Signature::*;
        match self {
            UnknownGrpcCluster => {
                "a gRPC service of the bootstrap (its ADS config source, a metrics sink, a tracer or an access log service) names a cluster that the bootstrap does not define"
            }
            UnknownField => {
                "the bootstrap has a field this Envoy does not know (a custom bootstrap or a proxy image older than the template)"
            }
            UnknownType => "the bootstrap names an extension type (@type) this Envoy does not have",
            InvalidJson => "the bootstrap file is not valid JSON (truncated or hand-edited)",
            DuplicateCluster => "the bootstrap defines the same cluster twice",
            RouteToUnknownCluster => {
                "a static route in the bootstrap points at a cluster that does not exist"
            }
            CannotBind => {
                "Envoy cannot bind one of its ports: something else in the pod already listens there"
            }
            HotRestartSocket => {
                "another Envoy with the same base id runs in this network namespace (hot-restart socket in use)"
            }
            MissingConfigFile => "the bootstrap file Envoy was told to load does not exist",
            ConfigNotReceived => {
                "pilot-agent reports that Envoy has received no configuration from istiod yet"
            }
            XdsStreamClosed => "the xDS stream to istiod closed or could not be opened",
            ConnectionRefused => {
                "a connection (to istiod, or to pilot-agent's xDS proxy) was refused"
            }
            InitialFetchTimeout => {
                "the first CDS/LDS answer did not arrive in time; Envoy went on without it"
            }
            Certificate => {
                "a certificate problem: the proxy cannot get or verify a certificate (CA root cert, CSR, TLS)"
            }
            Token => {
                "the service-account token the proxy presents to istiod is missing or has the wrong audience"
            }
            Authentication => "istiod refused the proxy's credentials",
        }
    }

    /// A short stable name (`unknown-grpc-cluster`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    fn matches(self, folded: &str) -> bool {
        self.patterns()
            .iter()
            .any(|group| group.iter().all(|needle| folded.contains(needle)))
    }
}

/// Which log a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogSource {
    Current,
    Previous,
}

impl LogSource {
    pub fn as_str(self) -> &'static str {
        match self {
            LogSource::Current => "current",
            LogSource::Previous => "previous",
        }
    }
}

/// The first line that matched a signature, and how many lines matched it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogMatch {
    pub signature: Signature,
    pub family: Family,
    pub source: LogSource,
    /// 1-based line number in the fetched log (the fetched tail, not the whole file).
    pub line_number: usize,
    /// The line, whitespace collapsed, cut to 400 characters.
    pub line: String,
    /// The error text itself: what Envoy put between backticks, or the message after the
    /// source location.
    pub excerpt: String,
    pub count: usize,
}

/// Collapses runs of whitespace to one space.
pub fn collapse(line: &str) -> String {
    crate::formats::text::collapse(line)
}

/// The level of an Envoy line (`[ts][tid][level][logger] ...`) or a pilot-agent line
/// (`2024-01-01T00:00:00.000Z\twarn\txds\t...`), lowercased.
fn level(line: &str) -> Option<String> {
    if line.starts_with('[') {
        let mut parts = line.split(']').map(|p| p.trim_start_matches('['));
        let _ts = parts.next()?;
        let _thread = parts.next()?;
        let level = parts.next()?.trim();
        return (!level.is_empty() && level.chars().all(|c| c.is_ascii_alphabetic()))
            .then(|| level.to_ascii_lowercase());
    }
    let mut fields = line.split('\t');
    let first = fields.next()?;
    if first.len() >= 20 && first.as_bytes().first()?.is_ascii_digit() && first.contains('T') {
        return fields.next().map(|l| l.trim().to_ascii_lowercase());
    }
    None
}

fn is_quiet(level: Option<&str>) -> bool {
    matches!(level, Some("info" | "debug" | "trace"))
}

fn cut(text: &str, max: usize) -> String {
    crate::formats::text::truncate(text, max)
}

/// The error text of a line: Envoy's `` error `...` initializing config `` backtick part,
/// pilot-agent's message after the scope, or the line without its bracketed prefix.
pub fn excerpt(line: &str) -> String {
    let collapsed = collapse(line);
    if let Some(start) = collapsed.find('`')
        && let Some(len) = collapsed[start + 1..].find('`')
        && len > 0
    {
        return cut(&collapsed[start + 1..start + 1 + len], 300);
    }
    if line.starts_with('[') {
        // [ts][tid][level][logger] [source/file.cc:123] message
        let mut rest = collapsed.as_str();
        while let Some(stripped) = rest.strip_prefix('[') {
            match stripped.find(']') {
                Some(end) => rest = stripped[end + 1..].trim_start(),
                None => break,
            }
        }
        return cut(rest, 300);
    }
    // ts \t level \t scope \t message, or ts \t level \t message for the default scope.
    let fields: Vec<&str> = line.split('\t').collect();
    if level(line).is_some() {
        match fields.len() {
            3 => return cut(&collapse(fields[2]), 300),
            n if n >= 4 => return cut(&collapse(&fields[3..].join(" ")), 300),
            _ => {}
        }
    }
    cut(&collapsed, 300)
}

/// The `--config-yaml` overlay pilot-agent passed to Envoy (a bootstrapOverride), read off its
/// `Envoy command: [...]` log line: the JSON object after `--config-yaml`.
pub fn config_yaml_overlay(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("Envoy command:"))?;
    let start = line.find("--config-yaml ")? + "--config-yaml ".len();
    let rest = &line[start..];
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
    match values.next()? {
        Ok(v) if v.is_object() => Some(v.to_string()),
        _ => None,
    }
}

/// The cluster an "Unknown gRPC client cluster 'x'" line names.
pub fn unknown_grpc_cluster(excerpt: &str) -> Option<&str> {
    let lower = excerpt.to_lowercase();
    let at = lower.find("unknown grpc client cluster")?;
    let rest = &excerpt[at..];
    let open = rest.find('\'')? + 1;
    let close = rest[open..].find('\'')? + open;
    Some(&rest[open..close])
}

/// Which parts of a bootstrap (or overlay) name `cluster` as a gRPC service
/// (`envoy_grpc.cluster_name`): "stats_sinks[0] (a metrics sink, envoy.stat_sinks.metrics_service)".
pub fn grpc_cluster_users(bootstrap_json: &str, cluster: &str) -> Vec<String> {
    fn walk(
        v: &serde_json::Value,
        path: &mut Vec<String>,
        cluster: &str,
        top: &mut Vec<(String, Option<String>)>,
        out: &mut Vec<String>,
    ) {
        match v {
            serde_json::Value::Object(map) => {
                if path.last().is_some_and(|p| p == "envoy_grpc")
                    && map.get("cluster_name").and_then(|c| c.as_str()) == Some(cluster)
                {
                    let (first, name) = top.last().cloned().unwrap_or_default();
                    let key = first.split('[').next().unwrap_or_default().to_string();
                    let what = match key.as_str() {
                        "stats_sinks" => "a metrics sink",
                        "tracing" => "the tracer",
                        "dynamic_resources" => "the xDS (ADS) config source",
                        "static_resources" => {
                            "a static listener or cluster (an access log service or a filter)"
                        }
                        "layered_runtime" => "a runtime layer (RTDS)",
                        _ => "a gRPC service",
                    };
                    let named = name.map(|n| format!(", {n}")).unwrap_or_default();
                    out.push(format!("{first} ({what}{named})"));
                }
                for (k, child) in map {
                    path.push(k.clone());
                    if path.len() == 1 {
                        top.push((k.clone(), None));
                    }
                    walk(child, path, cluster, top, out);
                    if path.len() == 1 {
                        top.pop();
                    }
                    path.pop();
                }
            }
            serde_json::Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    let pushed = path.len() == 1;
                    if pushed {
                        let name = child
                            .get("name")
                            .and_then(|n| n.as_str())
                            .map(str::to_string);
                        top.push((format!("{}[{i}]", path[0]), name));
                    }
                    walk(child, path, cluster, top, out);
                    if pushed {
                        top.pop();
                    }
                }
            }
            _ => {}
        }
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(bootstrap_json) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&v, &mut Vec::new(), cluster, &mut Vec::new(), &mut out);
    out
}

/// Every signature found in a log, in the order of [`ALL`], each with its first matching line.
pub fn scan(text: &str, source: LogSource) -> Vec<LogMatch> {
    let mut found: Vec<LogMatch> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_level = level(raw);
        if is_quiet(line_level.as_deref()) {
            continue;
        }
        let collapsed = collapse(raw);
        if collapsed.is_empty() {
            continue;
        }
        let folded = collapsed.to_lowercase();
        // One signature per line: the first, most specific one.
        let Some(signature) = ALL.iter().copied().find(|s| s.matches(&folded)) else {
            continue;
        };
        if let Some(existing) = found.iter_mut().find(|m| m.signature == signature) {
            existing.count += 1;
            continue;
        }
        found.push(LogMatch {
            signature,
            family: signature.family(),
            source,
            line_number: index + 1,
            line: cut(&collapsed, 400),
            excerpt: excerpt(raw),
            count: 1,
        });
    }
    found.sort_by_key(|m| ALL.iter().position(|s| *s == m.signature));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signatures(text: &str) -> Vec<Signature> {
        scan(text, LogSource::Previous)
            .iter()
            .map(|m| m.signature)
            .collect()
    }

    #[test]
    fn wrong_xds_cluster_name() {
        let matches = scan(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/B_stderr.txt"
            )),
            LogSource::Previous,
        );
        assert_eq!(matches.len(), 1, "{matches:#?}");
        let m = &matches[0];
        assert_eq!(m.signature, Signature::UnknownGrpcCluster);
        assert_eq!(m.family, Family::Bootstrap);
        assert_eq!(m.excerpt, "Unknown gRPC client cluster 'xds-grpc'");
        assert!(m.line.contains("[critical][main]"), "{}", m.line);
        assert_eq!(m.line_number, 129);
    }

    #[test]
    fn istiod_unreachable() {
        let matches = scan(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A_stderr.txt"
            )),
            LogSource::Current,
        );
        let sigs: Vec<Signature> = matches.iter().map(|m| m.signature).collect();
        assert_eq!(sigs, [Signature::XdsStreamClosed]);
        assert_eq!(matches[0].count, 8);
        assert!(
            matches[0]
                .excerpt
                .starts_with("StreamAggregatedResources gRPC config stream to xds-grpc closed"),
            "{}",
            matches[0].excerpt
        );
        assert!(matches.iter().all(|m| m.family == Family::ControlPlane));
    }

    #[test]
    fn initial_fetch_timeout() {
        assert_eq!(
            signatures(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/A2_stderr.txt"
            ))),
            [Signature::InitialFetchTimeout]
        );
    }

    #[test]
    fn invalid_bootstraps() {
        use Signature::*;
        let cases: &[(&str, Signature, &str)] = &[
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D1_unknown_field_stderr.txt"
                )),
                UnknownField,
                "has unknown fields",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D2_invalid_json_stderr.txt"
                )),
                InvalidJson,
                "unexpected EOF",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D2b_trailing_comma_stderr.txt"
                )),
                InvalidJson,
                "expected bare word",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D3_route_unknown_cluster_stderr.txt"
                )),
                RouteToUnknownCluster,
                "route: unknown cluster 'no_such_cluster'",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D4_bad_type_url_stderr.txt"
                )),
                UnknownType,
                "could not find @type",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D5_duplicate_cluster_stderr.txt"
                )),
                DuplicateCluster,
                "duplicate cluster 'prometheus_stats'",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/serve_D6_admin_port_in_use_stderr.txt"
                )),
                CannotBind,
                "cannot bind '127.0.0.1:15000': Address already in use",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/validate_missing_file.txt"
                )),
                MissingConfigFile,
                "Invalid path: /nonexistent.json",
            ),
            (
                include_str!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/envoy/C_conflict_default_baseid_stderr.txt"
                )),
                HotRestartSocket,
                "unable to bind domain socket",
            ),
        ];
        for (text, expected, quote) in cases {
            let matches = scan(text, LogSource::Previous);
            let first = matches
                .first()
                .unwrap_or_else(|| panic!("nothing matched for {expected:?}"));
            assert_eq!(first.signature, *expected, "{matches:#?}");
            assert_eq!(first.family, Family::Bootstrap);
            assert!(
                first.line.contains(quote) || first.excerpt.contains(quote),
                "{expected:?}: {:?} / {:?}",
                first.line,
                first.excerpt
            );
        }
    }

    #[test]
    fn healthy_static_envoy_logs_nothing_known() {
        assert!(
            signatures(include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/envoy/C_stderr.txt"
            )))
            .is_empty()
        );
    }

    #[test]
    fn spacing_and_case_do_not_matter() {
        let line = "[2026-01-01 00:00:00.000][1][critical][main] [source/server/server.cc:449] error `Unknown   gRPC client  CLUSTER 'xds-grpc'` initializing config 'goo.gle/debugonly   ";
        assert_eq!(signatures(line), [Signature::UnknownGrpcCluster]);
    }

    #[test]
    fn pilot_agent_lines() {
        let log = "2026-11-29T14:00:00.000000Z\tinfo\txds\tconnected to upstream XDS server: istiod.istio-system.svc:15012\n\
2026-11-29T14:00:05.000000Z\twarn\tEnvoy proxy is NOT ready: config not received from XDS server (is Istiod running?): cds updates: 0 successful, 0 rejected; lds updates: 0 successful, 0 rejected\n\
2026-11-29T14:00:06.000000Z\terror\tcache\tresource:default request:1 CSR retrial timed out: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.96.0.10:15012: connect: connection refused\"\n\
2026-11-29T14:00:07.000000Z\twarn\txds\tupstream [1] terminated with unexpected error rpc error: code = Unauthenticated desc = authentication failure\n";
        let matches = scan(log, LogSource::Current);
        let sigs: Vec<Signature> = matches.iter().map(|m| m.signature).collect();
        assert_eq!(
            sigs,
            [
                Signature::ConfigNotReceived,
                Signature::Certificate,
                Signature::Authentication
            ]
        );
        // The info line naming the XDS server is not evidence of anything.
        assert!(matches.iter().all(|m| m.line_number > 1));
        assert!(
            matches[0].excerpt.starts_with("Envoy proxy is NOT ready"),
            "{}",
            matches[0].excerpt
        );
        assert!(
            matches[2].excerpt.starts_with("upstream [1] terminated"),
            "{}",
            matches[2].excerpt
        );
    }

    #[test]
    fn names_are_kebab_case() {
        assert_eq!(Signature::UnknownGrpcCluster.name(), "unknown-grpc-cluster");
        assert_eq!(Signature::XdsStreamClosed.name(), "xds-stream-closed");
    }
}
