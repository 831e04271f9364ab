//! The command line: clap definitions and kubectl-style global flags.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};

use crate::render::style::ColorChoice;

const ABOUT: &str = "Tells you, in one command, why your Istio mesh is not doing what you expect.";

const AFTER_HELP: &str = concat!(
    "\
Examples:
  # Why is this pod not meshed, crashing, or stuck at 1/2?
  kubectl mesh-doctor pod web-7d4b9 -n shop

  # istioctl-analyze-style findings for rendered manifests in CI (exit 79 on findings)
  kubectl mesh-doctor analyze -f k8s/ -R

  # the same for a live namespace, or for every namespace
  kubectl mesh-doctor analyze -n shop
  kubectl mesh-doctor analyze -A

  # every code mesh-doctor can report
  kubectl mesh-doctor codes

  # which proxies are SYNCED, STALE or rejecting config, and which sidecars no istiod knows
  kubectl mesh-doctor proxy-status -n shop

  # an Envoy bootstrap, before it is deployed (also runs envoy --mode validate when found)
  kubectl mesh-doctor bootstrap validate envoy-rev.json

  # where each part of a pod's bootstrap comes from, checked and compared with its Envoy
  kubectl mesh-doctor bootstrap explain web-7d4b9 -n shop

  # client, istiod and proxy versions
  kubectl mesh-doctor version

",
    crate::exit_codes_help!()
);

#[derive(Debug, Parser)]
#[command(
    name = "kubectl mesh-doctor",
    bin_name = "kubectl mesh-doctor",
    version,
    about = ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,

    /// The kubeconfig flags given before the command name (`kubectl mesh-doctor -n shop pod
    /// web`); the command's own ones win.
    #[command(flatten)]
    pub kube: KubeArgs,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Istio-analyze-style findings for a live namespace or for manifest files
    Analyze(crate::commands::analyze::AnalyzeArgs),
    /// List every finding code mesh-doctor can report
    Codes(crate::commands::codes::CodesArgs),
    /// Why is this pod not meshed, crashing, or stuck at 1/2? (probes its sidecar)
    Pod(crate::commands::pod::PodArgs),
    /// Check an Envoy bootstrap before it is deployed, or explain a live pod's (a wrong one is
    /// a CrashLoop)
    Bootstrap(crate::commands::bootstrap::BootstrapArgs),
    /// Which proxies are in sync with istiod, and which sidecars are connected to none
    #[command(name = "proxy-status", visible_alias = "ps")]
    ProxyStatus(crate::commands::proxy_status::ProxyStatusArgs),
    /// Client, control-plane (istiod per revision) and data-plane (proxy) versions
    Version(crate::commands::version::VersionArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, or kubectl's plugin one)
    Completion(crate::commands::completion::CompletionArgs),
}

/// The default of the global `--timeout`.
pub const DEFAULT_TIMEOUT: &str = "2m";

static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Marks the start of the command (the global `--timeout` counts from here); `main` calls it first.
pub fn mark_start() -> Instant {
    *STARTED.get_or_init(Instant::now)
}

impl Command {
    /// The kubeconfig flags given after the command name, for the commands that read a cluster.
    pub fn kube_args(&self) -> Option<&KubeArgs> {
        use crate::commands::bootstrap::BootstrapCommand;
        match self {
            Command::Analyze(a) => Some(&a.kube),
            Command::Pod(a) => Some(&a.kube),
            Command::ProxyStatus(a) => Some(&a.kube),
            Command::Version(a) => Some(&a.kube),
            Command::Bootstrap(b) => match &b.command {
                BootstrapCommand::Explain(a) => Some(&a.kube),
                BootstrapCommand::Validate(_) => None,
            },
            Command::Codes(_) | Command::Completion(_) => None,
        }
    }
}

/// The flags every command understands.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Global options")]
pub struct CommonArgs {
    /// When to use colors (on stdout and in stderr messages and logs)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Log what mesh-doctor does to stderr (-v: info, -vv: debug)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

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

/// The clap command: [`Cli`] with the kubeconfig flags of the root hidden from its help (they
/// are accepted before the command name for kubectl habits, but listed only by the commands
/// that read a cluster).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    const KUBE: [&str; 9] = [
        "kubeconfig",
        "context",
        "cluster",
        "user",
        "namespace",
        "as_user",
        "as_group",
        "request_timeout",
        "timeout",
    ];
    Cli::command().mut_args(|a| {
        if KUBE.contains(&a.get_id().as_str()) {
            a.hide(true)
        } else {
            a
        }
    })
}

/// Parses the command line (after [`rewrite_deprecated`]).
pub fn parse_from(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    let matches = command().try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

/// Everything a command needs from the common and kubeconfig flags, wherever they were given.
#[derive(Debug, Clone)]
pub struct GlobalArgs {
    pub kubeconfig: Option<PathBuf>,
    pub context: Vec<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub namespace: Option<String>,
    pub as_user: Option<String>,
    pub as_group: Vec<String>,
    /// Zero: the default of 30s.
    pub request_timeout: Duration,
    /// The whole command's deadline (`--timeout`); zero: none.
    pub timeout: Duration,
    pub color: ColorChoice,
    pub verbose: u8,
}

impl GlobalArgs {
    /// When the whole command must be done (`--timeout` after the start), `None` without one.
    pub fn deadline(&self) -> Option<Instant> {
        if self.timeout.is_zero() {
            return None;
        }
        mark_start().checked_add(self.timeout)
    }

    /// Merges the flags given before the command name with the command's own (which win;
    /// repeatable flags are concatenated).
    pub fn new(common: &CommonArgs, before: &KubeArgs, after: Option<&KubeArgs>) -> GlobalArgs {
        let empty = KubeArgs::default();
        let after = after.unwrap_or(&empty);
        GlobalArgs {
            kubeconfig: after
                .kubeconfig
                .clone()
                .or_else(|| before.kubeconfig.clone()),
            context: before
                .context
                .iter()
                .chain(&after.context)
                .cloned()
                .collect(),
            cluster: after.cluster.clone().or_else(|| before.cluster.clone()),
            user: after.user.clone().or_else(|| before.user.clone()),
            namespace: after.namespace.clone().or_else(|| before.namespace.clone()),
            as_user: after.as_user.clone().or_else(|| before.as_user.clone()),
            as_group: before
                .as_group
                .iter()
                .chain(&after.as_group)
                .cloned()
                .collect(),
            request_timeout: after
                .request_timeout
                .or(before.request_timeout)
                .unwrap_or_default(),
            timeout: after
                .timeout
                .or(before.timeout)
                .unwrap_or(parse_duration(DEFAULT_TIMEOUT).expect("the default --timeout parses")),
            color: common.color,
            verbose: common.verbose,
        }
    }
}

/// Old spellings that still work for one release: rewritten to the new ones before parsing,
/// each with the deprecation line to print on stderr. Stops at `--`.
pub fn rewrite_deprecated(args: Vec<std::ffi::OsString>) -> (Vec<std::ffi::OsString>, Vec<String>) {
    let mut out = Vec::with_capacity(args.len());
    let mut notes = Vec::new();
    let mut iter = args.into_iter().peekable();
    let mut done = false;
    while let Some(arg) = iter.next() {
        let text = arg.to_str().map(str::to_string);
        match text.as_deref() {
            _ if done => out.push(arg),
            Some("--") => {
                done = true;
                out.push(arg);
            }
            Some(flag @ ("--probe=false" | "--probe=true")) => {
                let on = flag.ends_with("true");
                out.push(if on { "--probe" } else { "--no-probe" }.into());
                notes.push(format!(
                    "{flag} is deprecated and will be removed in the next release: use {}",
                    if on { "--probe" } else { "--no-probe" }
                ));
            }
            Some("--probe")
                if iter
                    .peek()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n == "true" || n == "false") =>
            {
                let value = iter
                    .next()
                    .and_then(|n| n.into_string().ok())
                    .unwrap_or_default();
                let on = value == "true";
                out.push(if on { "--probe" } else { "--no-probe" }.into());
                notes.push(format!(
                    "--probe {value} is deprecated and will be removed in the next release: use {}",
                    if on { "--probe" } else { "--no-probe" }
                ));
            }
            Some(flag @ ("-otable" | "--output=table")) => {
                out.push("--output=text".into());
                notes.push(format!(
                    "{flag} is deprecated and will be removed in the next release: use -o text"
                ));
            }
            Some(flag @ ("-o" | "--output"))
                if iter.peek().and_then(|n| n.to_str()) == Some("table") =>
            {
                iter.next();
                out.push(flag.into());
                out.push("text".into());
                notes.push(format!(
                    "{flag} table is deprecated and will be removed in the next release: use -o text"
                ));
            }
            _ => out.push(arg),
        }
    }
    (out, notes)
}

/// The `--failure-threshold` and `--output-threshold` values: Info, Warning or Error (any
/// case), listed in `--help`.
pub fn level_parser() -> LevelParser {
    LevelParser
}

#[derive(Clone, Copy, Debug)]
pub struct LevelParser;

impl clap::builder::TypedValueParser for LevelParser {
    type Value = crate::analysis::messages::Level;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let text = value.to_string_lossy();
        crate::analysis::messages::Level::parse(&text).ok_or_else(|| {
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

/// The longest duration any flag accepts. A longer one is a usage error (exit 64), never a
/// clock overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Parses kubectl's (Go's) duration syntax: a sequence of decimal numbers, each with a unit
/// (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), such as `500ms`, `30s`, `1m30s`, `2h`, `1.5h`; a bare
/// number is seconds (as kubectl's `--request-timeout` takes it). At most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || format!("invalid duration {text:?}: use e.g. 500ms, 30s, 1m30s or 2h");
    let too_long = || {
        format!(
            "duration {text:?} is too long: at most {}h",
            MAX_DURATION.as_secs() / 3600
        )
    };
    if text.is_empty() {
        return Err(invalid());
    }
    // A bare number: seconds.
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return scaled(text, 1_000_000_000)
            .ok_or_else(invalid)?
            .ok_or_else(too_long);
    }
    let body = text.strip_prefix('+').unwrap_or(text);
    if body.starts_with('-') {
        return Err(format!(
            "invalid duration {text:?}: it must not be negative"
        ));
    }
    let mut rest = body;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits);
        if number.is_empty() {
            return Err(invalid());
        }
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let nanos_per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(invalid()),
        };
        let part = scaled(number, nanos_per_unit)
            .ok_or_else(invalid)?
            .ok_or_else(too_long)?;
        total += part.as_nanos();
        if total > MAX_DURATION.as_nanos() {
            return Err(too_long());
        }
        rest = next;
    }
    Ok(Duration::from_nanos(
        u64::try_from(total).map_err(|_| too_long())?,
    ))
}

/// Parses a size in bytes as Kubernetes quantities write it: `64Mi`, `1Gi`, `500Ki`, `100M`,
/// `2G`, `1000`. At least 1 byte.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let invalid =
        || format!("invalid size {text:?}: use e.g. 64Mi, 1Gi, 500Ki or a number of bytes");
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let factor: u64 = match unit {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => return Err(invalid()),
    };
    let bytes = number
        .checked_mul(factor)
        .ok_or_else(|| format!("size {text:?} is too large"))?;
    if bytes == 0 {
        return Err(format!("invalid size {text:?}: it must be at least 1 byte"));
    }
    Ok(bytes)
}

/// A size as `--max-input-size` takes it: `64Mi`, `1Gi`, or bytes.
pub fn show_size(bytes: u64) -> String {
    for (unit, factor) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if bytes >= factor && bytes.is_multiple_of(factor) {
            return format!("{}{unit}", bytes / factor);
        }
    }
    format!("{bytes} bytes")
}

/// A duration as the flags take it: `1m30s`, `2m`, `500ms`, `1.5s`.
pub fn show_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis < 1000 {
        return if millis == 0 && !d.is_zero() {
            format!("{}us", d.as_micros())
        } else {
            format!("{millis}ms")
        };
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let frac = d.subsec_millis();
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || frac > 0 {
        if frac > 0 {
            let f = format!("{:03}", frac);
            out.push_str(&format!("{s}.{}s", f.trim_end_matches('0')));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

/// `number` (decimal digits with at most one `.`) times `nanos_per_unit` nanoseconds, exactly:
/// `None` when it is not a number, `Some(None)` when it exceeds [`MAX_DURATION`].
fn scaled(number: &str, nanos_per_unit: u128) -> Option<Option<Duration>> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let max = MAX_DURATION.as_nanos();
    let mut nanos: u128 = 0;
    for digit in whole.bytes() {
        nanos = nanos * 10 + u128::from(digit - b'0');
        if nanos.saturating_mul(nanos_per_unit) > max {
            return Some(None);
        }
    }
    let mut total = nanos * nanos_per_unit;
    // Fractions below a nanosecond are dropped, as Go drops them.
    let mut scale = nanos_per_unit;
    for digit in fraction.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        total += u128::from(digit - b'0') * scale;
    }
    if total > max {
        return Some(None);
    }
    Some(u64::try_from(total).ok().map(Duration::from_nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn durations_take_kubectls_syntax() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h2m3s").unwrap(), Duration::from_secs(3723));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("10ns").unwrap(), Duration::from_nanos(10));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("24h").unwrap(), MAX_DURATION);
        for bad in [
            "", "s", "1.2.3s", "-5s", "5 s", "1m30", "h1", ".s", "1d", "\u{0}",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn deprecated_spellings_are_rewritten() {
        let args = |list: &[&str]| {
            list.iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
        };
        let (out, notes) =
            rewrite_deprecated(args(&["x", "analyze", "--probe=false", "-o", "table"]));
        assert_eq!(out, args(&["x", "analyze", "--no-probe", "-o", "text"]));
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("use --no-probe"), "{notes:?}");
        let (out, notes) =
            rewrite_deprecated(args(&["x", "analyze", "--probe", "false", "f.yaml"]));
        assert_eq!(out, args(&["x", "analyze", "--no-probe", "f.yaml"]));
        assert_eq!(notes.len(), 1);
        let (out, notes) = rewrite_deprecated(args(&["x", "analyze", "--", "--probe=false"]));
        assert_eq!(out, args(&["x", "analyze", "--", "--probe=false"]));
        assert!(notes.is_empty());
    }

    /// Every command's help, for the vocabulary checks below.
    fn all_commands() -> Vec<clap::Command> {
        fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
            out.push(cmd.clone());
            // `help` mirrors the tree with argument-less entries: not commands of their own.
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, out);
            }
        }
        let mut root = command();
        root.build();
        let mut out = Vec::new();
        walk(&root, &mut out);
        out
    }

    #[test]
    fn examples_fit_100_columns() {
        for cmd in all_commands() {
            for text in [cmd.get_after_help(), cmd.get_after_long_help()]
                .into_iter()
                .flatten()
            {
                for line in text.to_string().lines() {
                    assert!(
                        line.chars().count() <= 100,
                        "{}: {} columns: {line}",
                        cmd.get_name(),
                        line.chars().count()
                    );
                }
            }
        }
    }

    #[test]
    fn durations_are_shown_as_flags_take_them() {
        assert_eq!(show_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(show_duration(Duration::from_secs(120)), "2m");
        assert_eq!(show_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(show_duration(Duration::from_secs(7200)), "2h");
        for d in ["1m30s", "2m", "500ms", "1.5s", "2h", "1h0m5s"] {
            let shown = show_duration(parse_duration(d).unwrap());
            assert_eq!(parse_duration(&shown).unwrap(), parse_duration(d).unwrap());
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64Mi").unwrap(), 64 << 20);
        assert_eq!(parse_size("1Gi").unwrap(), 1 << 30);
        assert_eq!(parse_size("100M").unwrap(), 100_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["", "0", "1x", "-1", "1.5Mi", "99999999999999999999Gi"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert_eq!(show_size(64 << 20), "64Mi");
        assert_eq!(show_size(1000), "1000 bytes");
    }

    // Regression (issue 11, item 2): huge values panicked in Duration::from_secs_f64, or
    // overflowed Instant arithmetic in the workers; they are usage errors now.
    #[test]
    fn durations_beyond_the_maximum_are_rejected() {
        for huge in [
            "6000000000000000h",
            "9223372036854775807s",
            "9223372036854775807",
            "24h1ns",
            "25h",
            "1441m",
            "99999999999999999999999999999999999999999999ms",
        ] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.contains("too long"), "{huge}: {err}");
        }
    }

    #[test]
    fn one_vocabulary() {
        const CLUSTER: &[&str] = &["analyze", "pod", "explain", "proxy-status", "version"];
        for cmd in all_commands() {
            let name = cmd.get_name().to_string();
            if cmd.has_subcommands() {
                continue;
            }
            let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).cloned();
            // Kubeconfig flags, under their heading, exactly on the commands that read a cluster.
            let kube = arg("kubeconfig");
            assert_eq!(kube.is_some(), CLUSTER.contains(&name.as_str()), "{name}");
            if let Some(kube) = kube {
                assert_eq!(
                    kube.get_help_heading(),
                    Some("Kubeconfig options"),
                    "{name}"
                );
            }
            // -o text|json|yaml on every command that prints a result.
            if name != "completion" && name != "help" {
                let output = arg("output").unwrap_or_else(|| panic!("{name}: no -o"));
                let values: Vec<String> = output
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect();
                for v in ["text", "json", "yaml"] {
                    assert!(values.contains(&v.to_string()), "{name}: {values:?}");
                }
                assert_eq!(output.get_help_heading(), Some("Output options"), "{name}");
            }
            // --failure-threshold: Warning by default, values listed.
            if let Some(threshold) = arg("failure_threshold") {
                assert_eq!(
                    threshold.get_default_values(),
                    ["Warning"],
                    "{name}: the default failure threshold"
                );
                assert_eq!(threshold.get_possible_values().len(), 3, "{name}");
            }
            // --probe / --no-probe together.
            assert_eq!(arg("probe").is_some(), arg("no_probe").is_some(), "{name}");
            // -v is the log flag everywhere (global), never a command's own.
            assert!(
                cmd.get_arguments()
                    .filter(|a| a.get_short() == Some('v'))
                    .all(|a| a.get_id() == "verbose"),
                "{name}"
            );
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
