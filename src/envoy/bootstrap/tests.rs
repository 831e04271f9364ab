use super::*;

/// The codes found, sorted.
fn codes(text: &str) -> Vec<&'static str> {
    let mut codes: Vec<&str> = validate(text, Format::detect(None, text))
        .iter()
        .map(Problem::code)
        .collect();
    codes.sort_unstable();
    codes
}

const SIDECAR: &str = r#"{
  "node": {
"id": "sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local",
"cluster": "web.shop",
"metadata": {"NAMESPACE": "shop", "ISTIO_VERSION": "1.24.0"}
  },
  "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": 15000}}},
  "static_resources": {
"clusters": [
  {"name": "agent", "type": "STATIC"},
  {"name": "xds-grpc", "type": "STATIC"}
],
"listeners": [
  {
    "name": "0.0.0.0_15021",
    "address": {"socket_address": {"address": "0.0.0.0", "port_value": 15021}},
    "filter_chains": [{"filters": [{"name": "hcm", "typed_config": {
      "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
      "route_config": {"virtual_hosts": [{"name": "b", "domains": ["*"], "routes": [
        {"match": {"prefix": "/healthz/ready"}, "route": {"cluster": "agent"}}
      ]}]}
    }}]}]
  }
]
  },
  "dynamic_resources": {
"lds_config": {"ads": {}, "resource_api_version": "V3"},
"cds_config": {"ads": {}, "resource_api_version": "V3"},
"ads_config": {"api_type": "GRPC", "grpc_services": [{"envoy_grpc": {"cluster_name": "xds-grpc"}}]}
  }
}"#;

fn sidecar() -> Value {
    serde_json::from_str(SIDECAR).unwrap()
}

fn with(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = sidecar();
    edit(&mut v);
    serde_json::to_string_pretty(&v).unwrap()
}

// Regression (issue 11, item 9): `clusters: "oops"`, `clusters: [[1]]` and
// `{"node":{"id":5},"admin":"x"}` were "No problems found".
#[test]
fn values_of_the_wrong_type_are_findings() {
    let problems = validate(r#"{"static_resources":{"clusters":"oops"}}"#, Format::Json);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].code(), "MD0312");
    assert_eq!(problems[0].path.to_string(), "static_resources.clusters");
    assert!(
        problems[0].message.starts_with("clusters (in envoy.config.bootstrap.v3.Bootstrap.StaticResources) must be a list of mappings, not a string (\"oops\")"),
        "{}",
        problems[0].message
    );
    let problems = validate("static_resources:\n  clusters:\n  - [1]\n", Format::Yaml);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].path.to_string(), "static_resources.clusters[0]");
    assert_eq!(problems[0].line, Some(3));
    let codes: Vec<String> = validate(r#"{"node":{"id":5},"admin":"x"}"#, Format::Json)
        .iter()
        .map(|p| format!("{} {}", p.code(), p.path))
        .collect();
    assert_eq!(codes, ["MD0312 admin", "MD0312 node.id"]);
    // null is "not set"; numbers may be strings; enums may be numbers.
    let fine = r#"{"admin":null,"stats_server_version_override":"12","dynamic_resources":{"cds_config":{"resource_api_version":2}}}"#;
    let problems = validate(fine, Format::Json);
    assert!(
        problems.iter().all(|p| p.code() != "MD0312"),
        "{problems:?}"
    );
}

#[test]
fn a_good_sidecar_bootstrap_passes() {
    assert_eq!(codes(SIDECAR), Vec::<&str>::new());
}

#[test]
fn ads_cluster_must_be_static() {
    let text = with(|v| {
        v["static_resources"]["clusters"][1]["name"] = "xds_grpc".into();
    });
    let problems = validate(&text, Format::Json);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let p = &problems[0];
    assert_eq!(p.code(), "MD0301");
    assert_eq!(
        p.path.to_string(),
        "dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name"
    );
    assert!(p.message.contains("\"xds-grpc\""), "{}", p.message);
    assert!(
        p.message
            .ends_with("(\"Unknown gRPC client cluster\"). Did you mean \"xds_grpc\"?"),
        "{}",
        p.message
    );
    assert!(p.line.is_some());
}

#[test]
fn eds_cluster_is_no_grpc_client_cluster() {
    let text = with(|v| v["static_resources"]["clusters"][1]["type"] = "EDS".into());
    assert_eq!(codes(&text), vec!["MD0301"]);
}

#[test]
fn duplicate_clusters_point_at_the_second() {
    let text = with(|v| {
        v["static_resources"]["clusters"][1]["name"] = "agent".into();
    });
    let problems = validate(&text, Format::Json);
    let dup: Vec<_> = problems.iter().filter(|p| p.code() == "MD0302").collect();
    assert_eq!(dup.len(), 1);
    assert_eq!(dup[0].path.to_string(), "static_resources.clusters[1].name");
    assert!(
        dup[0]
            .message
            .contains("static_resources.clusters[0], line")
    );
}

#[test]
fn routes_to_unknown_clusters() {
    let text = with(|v| {
        let route = &mut v["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
            ["route_config"]["virtual_hosts"][0]["routes"][0]["route"];
        *route = serde_json::json!({
            "weighted_clusters": {"clusters": [{"name": "agent"}, {"name": "agnet"}]},
            "request_mirror_policies": [{"cluster": "mirror"}]
        });
    });
    let problems = validate(&text, Format::Json);
    let routes: Vec<String> = problems
        .iter()
        .filter(|p| p.code() == "MD0303")
        .map(|p| p.message.clone())
        .collect();
    assert_eq!(routes.len(), 2, "{problems:?}");
    assert!(routes[0].contains("splits traffic to cluster \"agnet\""));
    assert!(routes[0].contains("Did you mean \"agent\"?"));
    assert!(routes[0].contains("Clusters from CDS do not count"));
    assert!(routes[1].contains("mirrors traffic to cluster \"mirror\""));
}

#[test]
fn validate_clusters_false_allows_unknown_route_clusters() {
    let text = with(|v| {
        let rc = &mut v["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
            ["route_config"];
        rc["validate_clusters"] = false.into();
        rc["virtual_hosts"][0]["routes"][0]["route"]["cluster"] = "from-cds".into();
    });
    assert_eq!(codes(&text), Vec::<&str>::new());
}

#[test]
fn node_id_and_cluster() {
    let missing = with(|v| {
        v["node"].as_object_mut().unwrap().remove("cluster");
        v["node"].as_object_mut().unwrap().remove("id");
    });
    assert_eq!(codes(&missing), vec!["MD0304", "MD0305"]);
    for (id, code) in [
        ("sidecar~10.0.0.5~web-1.shop", "MD0304"),
        ("proxy~10.0.0.5~web-1.shop~shop.svc.cluster.local", "MD0304"),
        (
            "sidecar~not-an-ip~web-1.shop~shop.svc.cluster.local",
            "MD0304",
        ),
        ("sidecar~10.0.0.5~~shop.svc.cluster.local", "MD0304"),
        ("sidecar~10.0.0.5~web-1~shop.svc.cluster.local", "MD0310"),
        ("sidecar~10.0.0.5~web-1.shop~cluster.local", "MD0310"),
        (
            "sidecar~10.0.0.5~web-1.shop~other.svc.cluster.local",
            "MD0310",
        ),
        ("router~10.0.0.5~gw-1.shop~shop.svc.cluster.local", ""),
        ("sidecar~fd00::5~web-1.shop~shop.svc.cluster.local", ""),
    ] {
        let text = with(|v| v["node"]["id"] = id.into());
        let got = codes(&text);
        let want: Vec<&str> = if code.is_empty() { vec![] } else { vec![code] };
        assert_eq!(got, want, "{id}");
    }
    // INSTANCE_IPS stands in for a missing IP, as istiod reads it.
    let text = with(|v| {
        v["node"]["id"] = "sidecar~~web-1.shop~shop.svc.cluster.local".into();
        v["node"]["metadata"]["INSTANCE_IPS"] = "10.0.0.5,fd00::5".into();
    });
    assert_eq!(codes(&text), Vec::<&str>::new());
}

#[test]
fn static_only_bootstraps_need_no_node() {
    let text = with(|v| {
        v.as_object_mut().unwrap().remove("dynamic_resources");
        v.as_object_mut().unwrap().remove("node");
        v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
            17021.into();
        v["admin"]["address"]["socket_address"]["port_value"] = 17000.into();
    });
    assert_eq!(codes(&text), Vec::<&str>::new());
}

#[test]
fn reserved_ports() {
    let admin = with(|v| v["admin"]["address"]["socket_address"]["port_value"] = 15090.into());
    assert_eq!(codes(&admin), vec!["MD0306"]);
    let outbound = with(|v| {
        v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
            "15001".into();
    });
    assert_eq!(codes(&outbound), vec!["MD0306"]);
    // Not an Istio proxy bootstrap: the sidecar's ports are all taken.
    let other = with(|v| {
        v.as_object_mut().unwrap().remove("dynamic_resources");
    });
    assert_eq!(codes(&other), vec!["MD0306", "MD0306"]);
    // Port 0 picks a free port.
    let zero = with(|v| v["admin"]["address"]["socket_address"]["port_value"] = 0.into());
    assert_eq!(codes(&zero), Vec::<&str>::new());
}

#[test]
fn address_conflicts() {
    let text = with(|v| {
        let listeners = v["static_resources"]["listeners"].as_array_mut().unwrap();
        let mut second = listeners[0].clone();
        second["name"] = "again".into();
        listeners.push(second);
    });
    let problems = validate(&text, Format::Json);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].code(), "MD0311");
    assert!(
        problems[0].message.starts_with(
            "Listener \"0.0.0.0_15021\" and listener \"again\" both bind 0.0.0.0:15021"
        )
    );
    let admin = with(|v| {
        v["static_resources"]["listeners"][0]["address"]["socket_address"]["port_value"] =
            15000.into();
    });
    assert_eq!(codes(&admin), vec!["MD0311"]);
}

#[test]
fn unknown_fields_in_checked_messages() {
    let text = with(|v| {
        v["admni"] = serde_json::json!({});
        v["admin"]["bogus_field"] = true.into();
        v["dynamic_resources"]["ads_config"]["grpc_services"][0]["envoy_grpc"]["clusterName2"] =
            "x".into();
        // camelCase names are proto JSON names: accepted.
        v["staticResources"] = v["static_resources"].take();
        v.as_object_mut().unwrap().remove("static_resources");
    });
    let problems = validate(&text, Format::Json);
    let mut unknown: Vec<String> = problems
        .iter()
        .filter(|p| p.code() == "MD0308")
        .map(|p| p.path.to_string())
        .collect();
    unknown.sort();
    assert_eq!(
        unknown,
        [
            "admin.bogus_field",
            "admni",
            "dynamic_resources.ads_config.grpc_services[0].envoy_grpc.clusterName2",
        ],
        "{problems:?}"
    );
    let typo = problems
        .iter()
        .find(|p| p.path.to_string() == "admni")
        .unwrap();
    assert!(
        typo.message.contains("Did you mean \"admin\"?"),
        "{}",
        typo.message
    );
}

#[test]
fn syntax_errors_have_positions() {
    let problems = validate("{\n  \"node\": {\"id\": \"x\",,}\n}\n", Format::Json);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].code(), "MD0307");
    assert_eq!(problems[0].line, Some(2));
    assert!(problems[0].column.is_some());
    assert_eq!(validate("", Format::Json)[0].code(), "MD0307");
    assert_eq!(validate("[]", Format::Json)[0].code(), "MD0307");
    assert_eq!(
        validate("a: 1\n---\nb: 2\n", Format::Yaml)[0].code(),
        "MD0307"
    );
    assert_eq!(validate("a: [1, 2\n", Format::Yaml)[0].code(), "MD0307");
    assert_eq!(validate("", Format::Yaml)[0].code(), "MD0307");
}

#[test]
fn go_templates_are_named() {
    let problems = validate("{\n  \"node\": {\n    {{ .node }}\n  }\n}\n", Format::Json);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].message.contains("looks like a Go template"));
}

#[test]
fn yaml_bootstraps_have_lines() {
    let text = "node:\n  id: sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local\n  cluster: web.shop\ndynamic_resources:\n  ads_config:\n    api_type: GRPC\n    grpc_services:\n    - envoy_grpc:\n        cluster_name: xds-grpc\n";
    let problems = validate(text, Format::detect(Some("b.yaml"), text));
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].code(), "MD0301");
    assert_eq!(problems[0].line, Some(9));
    assert!(
        problems[0]
            .message
            .contains("the bootstrap has no static clusters")
    );
}

#[test]
fn paths_quote_odd_keys() {
    let path = JsonPath::root()
        .key("typed_extension_protocol_options")
        .key("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
        .index(0);
    assert_eq!(
        path.to_string(),
        "typed_extension_protocol_options[\"envoy.extensions.upstreams.http.v3.HttpProtocolOptions\"][0]"
    );
}

#[test]
fn envoy_reasons() {
    let stderr = "[2026-11-29 14:18:55.874][8598][info][config] [source/server/configuration_impl.cc:138] loading 3 cluster(s)\n[2026-11-29 14:18:55.875][8598][critical][main] [source/server/config_validation/server.cc:76] error initializing configuration 'bootstraps/B.json': Unknown gRPC client cluster 'xds-grpc'\n";
    let reason = envoy_reason(stderr).unwrap();
    assert_eq!(reason, "Unknown gRPC client cluster 'xds-grpc'");
    assert_eq!(codes_covering(&reason), vec![messages::MD0301]);

    let stderr = "[x][1][critical][main] [s.cc:76] error initializing configuration 'D2.json': Unable to parse JSON as proto (INVALID_ARGUMENT: unexpected EOF): {\n  \"node\": {\n";
    let reason = envoy_reason(stderr).unwrap();
    assert_eq!(
        reason,
        "Unable to parse JSON as proto (INVALID_ARGUMENT: unexpected EOF)"
    );
    assert_eq!(codes_covering(&reason), vec![messages::MD0307]);

    let cases: &[(&str, &[&str])] = &[
        (
            "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @   admin:   message envoy.config.bootstrap.v3.Admin, near 42:19 (offset 892): no such  field: 'bogus_field') has unknown fields",
            &["MD0308"],
        ),
        (
            "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap, near 305:11 (offset 8697): no such field: 'bogus') has unknown fields",
            &["MD0308"],
        ),
        (
            "Protobuf message (type envoy.config.bootstrap.v3.Bootstrap reason INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[0]: message envoy.config.cluster.v3.Cluster, near 1:1 (offset 1): no such field: 'x') has unknown fields",
            &[],
        ),
        (
            "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ node: message envoy.config.core.v3.Node, near 4:27 (offset 104): expected bare word)",
            &["MD0307"],
        ),
        (
            "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ node.id: string, near 3:11 (offset 24): unexpected character: '5'; expected '\"')",
            &["MD0312"],
        ),
        (
            "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[1]: message envoy.config.cluster.v3.Cluster, near 1:35 (offset 34): unexpected character: '1'; expected '{')",
            &["MD0307", "MD0312"],
        ),
        (
            "Unable to parse JSON as proto (INVALID_ARGUMENT: invalid JSON in envoy.config.bootstrap.v3.Bootstrap @ static_resources.clusters[0].connect_timeout: string, near 1:35 (offset 34): unexpected character: '5'; expected '\"')",
            &[],
        ),
        (
            "Unable to parse JSON as proto (INVALID_ARGUMENT: could not find @type 'type.googleapis.com/x.Typo')",
            &[],
        ),
        ("route: unknown shadow cluster 'nope'", &["MD0303"]),
        (
            "cluster manager: duplicate cluster 'prometheus_stats'",
            &["MD0302"],
        ),
        (
            "ads: node 'id' and 'cluster' are required. Set it either in 'node' config or via --service-node and --service-cluster options.",
            &["MD0304", "MD0305"],
        ),
        (
            "error adding listener: 'b' has duplicate address '127.0.0.1:15090' as existing listener",
            &["MD0311"],
        ),
        (
            "envoy.config.core.v3.ApiConfigSource must have a statically defined non-EDS cluster: 'cds-nope' does not exist, was added via api, or is an EDS cluster",
            &["MD0301"],
        ),
    ];
    for (reason, want) in cases {
        let got: Vec<&str> = codes_covering(reason).iter().map(|m| m.code).collect();
        assert_eq!(&got, want, "{reason}");
    }
}
