//! Rendering results for people (colored text, tables) and for machines (JSON, YAML, SARIF).

pub mod diagnosis;
pub mod findings;
pub mod proxy_status;
pub mod style;
pub mod yaml;
