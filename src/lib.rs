//! mesh-doctor: why an Istio mesh is not doing what you expect.
//!
//! The modules are layers (docs/architecture.md; `tests/it/architecture.rs` checks them): pure
//! knowledge at the bottom (formats, Kubernetes, findings, Istio, Envoy, the sidecar diagnosis, the
//! analyzers),
//! then output and errors, then I/O (sources, probe), then one folder per command, then the CLI.
//! Dependencies point down only; commands never use each other.

// Knowledge: pure, knows nothing of commands.
pub mod analysis;
pub mod diagnosis;
pub mod envoy;
pub mod findings;
pub mod formats;
pub mod istio;
pub mod kube;
// Work spread over the cores.
pub mod parallel;
// Output and errors.
pub mod error;
pub mod exit;
pub mod output;
// I/O.
pub mod probe;
pub mod source;
// The resolved request, the commands, then the CLI.
pub mod cli;
pub mod commands;
pub mod request;
