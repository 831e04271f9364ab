//! One module per subcommand: flags, then a `run` that gathers, analyses and renders.

pub mod analyze;
pub mod bootstrap;
pub mod codes;
pub mod completion;
pub mod pod;
pub mod proxy_status;
pub mod version;
