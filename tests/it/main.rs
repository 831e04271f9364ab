//! The one integration-test binary: every suite is a module here, so the crate, kube, tokio and
//! rustls are linked into one test binary instead of one per suite.
//!
//! Select a suite or a test by its module path, as before with `--test NAME`:
//! `cargo test --test it analyze_cli`, `cargo test --test it e2e_real -- --include-ignored`,
//! `cargo test --test it e2e_trust::` (one suite only).
//!
//! The offline suites need nothing; the `e2e_*` ones are `#[ignore]`d and need the test cluster
//! (testenv/README.md). Tests run in this one process's threads: suites that use a cluster take
//! turns (`common::suite`), so a test that changes cluster-wide state never runs beside another
//! suite's tests.

mod common;
mod offline;

mod ambient_cli;
mod analyze_cli;
mod architecture;
mod baseline_cli;
mod bootstrap;
mod certificates_cli;
mod ci_cli;
mod cli;
mod client_ca_cli;
mod completion;
mod control_plane_cli;
mod e2e_analyze;
mod e2e_bootstrap;
mod e2e_certificates;
mod e2e_completion;
mod e2e_control_plane;
mod e2e_dry_run;
mod e2e_faults;
mod e2e_gateway_api;
mod e2e_no_istio;
mod e2e_pod;
mod e2e_protobuf;
mod e2e_proxy_status;
mod e2e_real_ambient;
mod e2e_real_gateway_certs;
mod e2e_real_istiod_down;
mod e2e_real_lifecycle;
mod e2e_real_merge;
mod e2e_real_mesh;
mod e2e_real_mtls;
mod e2e_real_path;
mod e2e_real_pod_traffic;
mod e2e_real_policy;
mod e2e_real_waypoint;
mod e2e_security;
mod e2e_traffic;
mod e2e_trust;
mod e2e_workloads;
mod envoy_probe;
mod exit_codes;
mod fuzz_bodies;
mod gateway_api_cli;
mod hostile;
mod https_istiod;
mod incomplete_cli;
mod istio_grid;
mod path_cli;
mod pod_cli;
mod proxy_status_cli;
mod repository;
mod schema_cli;
mod security_cli;
mod traffic_cli;
mod workloads_cli;
