//! The clap pieces several commands' flags share: the kubeconfig flags (merged into
//! `request::Global` by [`super::resolve`]) and the parser of the finding-level values.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::formats::duration::parse_duration;

/// The kubeconfig flags, named as kubectl names them (kubectl does not pass its own flags to
/// plugins, so the plugin reads them itself). Only the commands that read a cluster take them.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Kubeconfig options")]
pub struct KubeArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (repeat it with `analyze` and `version` to read several
    /// clusters)
    #[arg(long, value_name = "NAME")]
    pub context: Vec<String>,

    /// The kubeconfig cluster to use
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,

    /// The kubeconfig user to use
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,

    /// Namespace scope (default: the context's namespace)
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Username to impersonate
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,

    /// Group to impersonate (repeatable)
    #[arg(long = "as-group", value_name = "GROUP")]
    pub as_group: Vec<String>,

    /// How long to wait for each API request, e.g. 5s, 1m30s (0 = the default of 30s; at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,

    /// The whole command's deadline: reading, probing and retrying all end by then (exit 69),
    /// e.g. 2m, 90s (default 2m; 0 = none; at most 24h)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

/// The `--failure-threshold` and `--output-threshold` values: Info, Warning or Error (any
/// case), listed in `--help`.
pub fn level_parser() -> LevelParser {
    LevelParser
}

#[derive(Clone, Copy, Debug)]
pub struct LevelParser;

impl clap::builder::TypedValueParser for LevelParser {
    type Value = crate::findings::messages::Level;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let text = value.to_string_lossy();
        crate::findings::messages::Level::parse(&text).ok_or_else(|| {
            let mut err = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
            use clap::error::{ContextKind, ContextValue};
            if let Some(arg) = arg {
                err.insert(
                    ContextKind::InvalidArg,
                    ContextValue::String(arg.to_string()),
                );
            }
            err.insert(
                ContextKind::InvalidValue,
                ContextValue::String(text.into_owned()),
            );
            err.insert(
                ContextKind::ValidValue,
                ContextValue::Strings(vec!["Info".into(), "Warning".into(), "Error".into()]),
            );
            err
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            ["Info", "Warning", "Error"]
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}
