//! Output for people (style sheet, colored text, tables) and for machines (JSON, YAML, SARIF).

pub mod findings;
pub mod style;
pub mod write;
