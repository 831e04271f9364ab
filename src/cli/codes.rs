//! `codes`' flags, and the request they make.

use clap::Args;

use super::flags::{DocumentHelp, document_format};
use crate::commands::codes::Request;
use crate::output::format::DocumentFormat;

#[derive(Debug, Args)]
pub struct CodesArgs {
    /// Output format
    #[arg(short = 'o', long, value_parser = document_format(OUTPUT), default_value = "text", help_heading = "Output options")]
    pub output: DocumentFormat,
}

/// The values of `codes -o`.
const OUTPUT: DocumentHelp = DocumentHelp {
    text: "One row per code: CODE, NAME, LEVEL, DESCRIPTION",
    json: "A JSON array: code, name, level, description, documentationUrl",
    yaml: "The same array as YAML",
};

impl CodesArgs {
    pub fn into_request(self) -> Request {
        Request {
            output: self.output,
        }
    }
}
