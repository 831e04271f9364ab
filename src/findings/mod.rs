//! Findings: the code table, `Finding`, and the report (thresholds, suppression, sort).

pub mod baseline;
pub mod finding;
pub mod messages;
pub mod report;

pub use finding::{Finding, ResourceRef};
pub use report::Report;
