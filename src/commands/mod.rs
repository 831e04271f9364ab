//! One module per subcommand: its plain `Request` (made by `cli` from the flags), then a `run`
//! that gathers, analyses and renders.

pub mod analyze;
pub mod bootstrap;
pub mod codes;
pub mod path;
pub mod pod;
pub mod proxy_status;
pub mod version;
