//! Output for people (style sheet, colored text, tables) and for machines (JSON, YAML, SARIF).

pub mod coverage;
pub mod findings;
pub mod format;
pub mod json;
pub mod sarif;
pub mod style;
pub mod table;
pub mod write;
