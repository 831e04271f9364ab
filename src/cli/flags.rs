//! The clap pieces several commands' flags share: the kubeconfig flags (merged into
//! `request::Global` by [`super::resolve`]), the parser of the finding-level values, and the
//! `-o` parser of the commands that print one result ([`document_format`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::formats::duration::parse_duration;
use crate::output::format::DocumentFormat;

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

    /// List objects in chunks of this many per request, as kubectl's --chunk-size (default 5000;
    /// 0 = one request per list)
    #[arg(long, value_name = "N")]
    pub chunk_size: Option<u32>,

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

/// What one command's `-o text`, `-o json` and `-o yaml` show, for its `--help` (each command
/// says what its own text and document hold).
#[derive(Clone, Copy, Debug)]
pub struct DocumentHelp {
    pub text: &'static str,
    pub json: &'static str,
    pub yaml: &'static str,
}

/// The `-o` values of a command that prints one result ([`DocumentFormat`]): `text`, `json` and
/// `yaml`, listed in `--help` with the command's own help for each. One parser for the family,
/// where a clap `ValueEnum` would fix one help text for every command.
pub fn document_format(help: DocumentHelp) -> DocumentFormatParser {
    let value = |format: DocumentFormat| {
        let (name, help) = match format {
            DocumentFormat::Text => ("text", help.text),
            DocumentFormat::Json => ("json", help.json),
            DocumentFormat::Yaml => ("yaml", help.yaml),
        };
        (format, clap::builder::PossibleValue::new(name).help(help))
    };
    DocumentFormatParser {
        values: [
            value(DocumentFormat::Text),
            value(DocumentFormat::Json),
            value(DocumentFormat::Yaml),
        ],
    }
}

#[derive(Clone, Debug)]
pub struct DocumentFormatParser {
    values: [(DocumentFormat, clap::builder::PossibleValue); 3],
}

impl clap::builder::TypedValueParser for DocumentFormatParser {
    type Value = DocumentFormat;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        // clap's own check and error (with its "a similar value exists" tip); a value that is not
        // UTF-8 is refused under its lossy spelling, as clap refuses it for a `ValueEnum`.
        let names = clap::builder::PossibleValuesParser::new(
            self.values.iter().map(|(_, value)| value.clone()),
        );
        let text = value.to_string_lossy();
        let name = names.parse_ref(cmd, arg, std::ffi::OsStr::new(text.as_ref()))?;
        let ignore_case = arg.is_some_and(|a| a.is_ignore_case_set());
        Ok(self
            .values
            .iter()
            .find(|(_, value)| value.matches(&name, ignore_case))
            .map_or(DocumentFormat::Text, |(format, _)| *format))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.values.iter().map(|(_, value)| value.clone())))
    }
}
