//! The Envoy admin parsers (/server_info, /ready, /stats, /config_dump, /clusters, /certs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mesh_doctor::probe::admin;
use mesh_doctor::probe::transport::HttpResponse;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let _ = admin::parse_server_info(body);
    let _ = admin::parse_stats_map(body);
    let _ = admin::parse_stats(body);
    let _ = admin::parse_bootstrap(body);
    let _ = admin::parse_clusters(body);
    let _ = admin::parse_certs(body);
    for status in [200, 503] {
        let _ = admin::parse_readiness(&HttpResponse::new(status, body));
    }
});
