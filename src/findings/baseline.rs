//! A baseline: the findings of a run, recorded, so that a later run fails only on new ones.
//!
//! An entry is the code, the resource (`Kind ns/name`, and the cluster with several contexts)
//! and the message, which is the code's template filled with its arguments. File lines are
//! never part of it: they move when a manifest is edited above the resource.

use serde::{Deserialize, Serialize};

use crate::findings::Finding;

/// The version of the baseline file's format.
pub const VERSION: u32 = 1;

/// One recorded finding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entry {
    pub code: String,
    /// `Kind ns/name`, istioctl's origin; absent for a finding about a whole cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub message: String,
}

impl Entry {
    pub fn of(f: &Finding) -> Entry {
        Entry {
            code: f.code().to_string(),
            origin: f.origin(),
            cluster: f.cluster().map(|c| c.to_string()),
            message: f.message.clone(),
        }
    }

    /// `CODE (Kind ns/name) message`, as stderr names an entry that no longer occurs.
    pub fn describe(&self) -> String {
        match &self.origin {
            Some(origin) => format!("{} ({origin}) {}", self.code, self.message),
            None => format!("{} {}", self.code, self.message),
        }
    }
}

/// The baseline file: `{"version": 1, "findings": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<Entry>,
}

impl Baseline {
    /// The baseline of these findings, sorted and without duplicates.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Baseline {
        let mut entries: Vec<Entry> = findings.into_iter().map(Entry::of).collect();
        entries.sort();
        entries.dedup();
        Baseline {
            version: VERSION,
            findings: entries,
        }
    }

    /// Reads a baseline file's text; the error says why it is not one.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let baseline: Baseline = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if baseline.version != VERSION {
            return Err(format!(
                "version {} is not a baseline version this mesh-doctor reads ({VERSION})",
                baseline.version
            ));
        }
        Ok(baseline)
    }

    /// Splits findings into those not in the baseline (new) and those in it (unchanged), and
    /// lists the entries no finding matches any more (absent).
    pub fn compare(&self, findings: Vec<Finding>) -> Comparison {
        let mut out = Comparison::default();
        let mut seen = vec![false; self.findings.len()];
        for f in findings {
            let entry = Entry::of(&f);
            match self.findings.iter().position(|e| *e == entry) {
                Some(i) => {
                    seen[i] = true;
                    out.unchanged.push(f);
                }
                None => out.new.push(f),
            }
        }
        out.absent = self
            .findings
            .iter()
            .zip(seen)
            .filter(|(_, seen)| !seen)
            .map(|(e, _)| e.clone())
            .collect();
        out
    }
}

/// A run compared with a baseline.
#[derive(Debug, Default)]
pub struct Comparison {
    pub new: Vec<Finding>,
    pub unchanged: Vec<Finding>,
    pub absent: Vec<Entry>,
}
