//! The library's error type. Each variant carries enough context (which file and line, which
//! resource, which server) for one clear message, and maps to one documented exit code.

use std::path::PathBuf;

use crate::exit;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),

    #[error("cannot read {path}: {source}")]
    ReadInput {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{location}: {message}")]
    Parse { location: String, message: String },

    #[error("{0}")]
    Data(String),

    #[error("cannot reach the Kubernetes API server {server}: {message}")]
    Unreachable { server: String, message: String },

    #[error("{0}")]
    Cluster(String),

    /// The command's overall deadline (`--timeout`) passed.
    #[error("the command did not finish within its deadline of {after} (--timeout): {doing}")]
    Deadline { after: String, doing: String },

    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),

    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::ReadInput { .. } | Error::Parse { .. } | Error::Data(_) => exit::DATA,
            Error::Unreachable { .. } | Error::Cluster(_) | Error::Deadline { .. } => {
                exit::UNAVAILABLE
            }
            Error::Output(_) | Error::Internal(_) => exit::UNEXPECTED,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
