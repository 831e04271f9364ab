//! `codes`' flags, and the request they make.

use clap::{Args, ValueEnum};

use crate::commands::codes::{CodesFormat, Request};

#[derive(Debug, Args)]
pub struct CodesArgs {
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text, help_heading = "Output options")]
    pub output: OutputFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// One row per code: CODE, NAME, LEVEL, DESCRIPTION
    Text,
    /// A JSON array: code, name, level, description, documentationUrl
    Json,
    /// The same array as YAML
    Yaml,
}

impl CodesArgs {
    pub fn into_request(self) -> Request {
        Request {
            output: match self.output {
                OutputFormat::Text => CodesFormat::Text,
                OutputFormat::Json => CodesFormat::Json,
                OutputFormat::Yaml => CodesFormat::Yaml,
            },
        }
    }
}
