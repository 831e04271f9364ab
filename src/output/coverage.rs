//! What the findings do not cover, as every structured format of `analyze` carries it: reads
//! and checks that were skipped, documents of kinds no analyzer reads, and with `--baseline`
//! what the baseline knows. Shared by `findings.rs` (JSON, YAML, JUnit) and `sarif.rs`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::findings::Finding;
use crate::findings::report::Skipped;

/// What the findings do not cover: reads and checks that were skipped, and documents of kinds
/// no analyzer reads. The structured formats carry it (the log format has it on stderr).
#[derive(Clone, Copy, Debug)]
pub struct Coverage<'a> {
    pub skipped: &'a [Skipped],
    /// kind -> number of documents.
    pub not_analysed: &'a BTreeMap<String, usize>,
    /// With `--baseline`: the findings the baseline knows (not among those rendered) and its
    /// entries that no longer occur. SARIF marks results `baselineState`.
    pub baseline: Option<BaselineView<'a>>,
}

/// A run compared with a baseline, for SARIF's `baselineState`.
#[derive(Clone, Copy, Debug)]
pub struct BaselineView<'a> {
    pub unchanged: &'a [Finding],
    pub absent: &'a [crate::findings::baseline::Entry],
}

impl<'a> Coverage<'a> {
    /// True when everything was read and analysed.
    pub fn is_complete(&self) -> bool {
        self.skipped.is_empty() && self.not_analysed.is_empty()
    }

    /// The messages appended to the JSON/YAML array after the findings, in istioctl's shape
    /// (`code`, `documentationUrl`, `level`, `message`, `origin`): MD0001 for a read or check
    /// that was skipped (origin: the check, also under `check`), MD0002 for documents of a kind
    /// no analyzer reads (origin: the kind, also under `kind`, with `documents`).
    pub fn messages(&self) -> Vec<CoverageMessage<'a>> {
        use crate::findings::messages::{MD0001, MD0002, Message};
        let message = |m: Message, origin: &'a str| {
            let code = m.message_type();
            CoverageMessage {
                code: code.code,
                documentation_url: code.documentation_url(),
                level: code.level.as_str(),
                message: m.into_text(),
                origin,
                check: None,
                kind: None,
                documents: None,
            }
        };
        let mut out: Vec<CoverageMessage> = self
            .skipped
            .iter()
            .map(|s| CoverageMessage {
                check: Some(&s.check),
                ..message(
                    MD0001::message(s.check.as_str(), s.reason.as_str()),
                    &s.check,
                )
            })
            .collect();
        out.extend(self.not_analysed.iter().map(|(kind, n)| CoverageMessage {
            kind: Some(kind),
            documents: Some(*n),
            ..message(MD0002::message(*n, kind.as_str()), kind)
        }));
        out
    }
}

/// One message of [`Coverage::messages`], as the JSON and YAML outputs write it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverageMessage<'a> {
    pub code: &'static str,
    pub documentation_url: String,
    pub level: &'static str,
    pub message: String,
    pub origin: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<usize>,
}
