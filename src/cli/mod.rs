//! The command line: every clap definition, the kubectl-style global flags, and the one place
//! where parsed flags become the plain requests the commands take (`into_request`, as ripgrep
//! turns its flags into high-level arguments once). Nothing below this layer names clap.

pub mod analyze;
pub mod bootstrap;
pub mod codes;
pub mod completion;
pub mod flags;
pub mod memory;
pub mod path;
pub mod pod;
pub mod proxy_status;
mod run;
pub mod version;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;
use crate::error::Result;
use crate::output::style::ColorChoice;
use crate::request::Global;
use crate::source::cluster::Connection;
pub use flags::KubeArgs;
pub use run::main_impl;

const ABOUT: &str = "Tells you, in one command, why your Istio mesh is not doing what you expect.";

const AFTER_HELP_TEXT: &str = "\
Examples:
  # Why is this pod not meshed, crashing, or stuck at 1/2?
  kubectl mesh-doctor pod web-7d4b9 -n shop

  # where requests from a pod (or deploy/NAME) to a Service break, hop by hop
  kubectl mesh-doctor path web-7d4b9 orders:8080 -n shop

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

";

#[derive(Debug, Parser)]
#[command(
    name = "kubectl mesh-doctor",
    bin_name = "kubectl mesh-doctor",
    version,
    about = ABOUT,
    after_help = crate::exit::after_help(AFTER_HELP_TEXT, &crate::exit::ANALYZE),
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
    Analyze(analyze::AnalyzeArgs),
    /// List every finding code mesh-doctor can report
    Codes(codes::CodesArgs),
    /// Why is this pod not meshed, crashing, or stuck at 1/2? (probes its sidecar)
    Pod(pod::PodArgs),
    /// Where a request from SOURCE to TARGET breaks, hop by hop (route, cluster, endpoints,
    /// mTLS, policy, network)
    Path(path::PathArgs),
    /// Check an Envoy bootstrap before it is deployed, or explain a live pod's (a wrong one is
    /// a CrashLoop)
    Bootstrap(bootstrap::BootstrapArgs),
    /// Which proxies are in sync with istiod, and which sidecars are connected to none
    #[command(name = "proxy-status", visible_alias = "ps")]
    ProxyStatus(proxy_status::ProxyStatusArgs),
    /// Client, control-plane (istiod per revision) and data-plane (proxy) versions
    Version(version::VersionArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, or kubectl's plugin one)
    Completion(completion::CompletionArgs),
}

/// A command with its request: what `main` runs.
#[derive(Debug)]
pub enum Request {
    Analyze(commands::analyze::Request),
    Codes(commands::codes::Request),
    Pod(commands::pod::Request),
    Path(commands::path::Request),
    Bootstrap(commands::bootstrap::Request),
    ProxyStatus(commands::proxy_status::Request),
    Version(commands::version::Request),
    Completion(completion::CompletionArgs),
}

/// The default of the global `--timeout`.
pub const DEFAULT_TIMEOUT: &str = "2m";

static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Marks the start of the command (the global `--timeout` counts from here); `main` calls it first.
pub fn mark_start() -> std::time::Instant {
    *STARTED.get_or_init(std::time::Instant::now)
}

impl Command {
    /// The kubeconfig flags given after the command name, for the commands that read a cluster.
    pub fn kube_args(&self) -> Option<&KubeArgs> {
        use bootstrap::BootstrapCommand;
        match self {
            Command::Analyze(a) => Some(&a.kube),
            Command::Pod(a) => Some(&a.kube),
            Command::Path(a) => Some(&a.kube),
            Command::ProxyStatus(a) => Some(&a.kube),
            Command::Version(a) => Some(&a.kube),
            Command::Bootstrap(b) => match &b.command {
                BootstrapCommand::Explain(a) => Some(&a.kube),
                BootstrapCommand::Validate(_) => None,
            },
            Command::Codes(_) | Command::Completion(_) => None,
        }
    }

    /// The command's flags as its plain request, decided and checked once: what the flags
    /// leave open (the namespace default, which needs the kubeconfig) is decided by the layers
    /// below. Flags that exclude each other, or values that do not parse, are usage errors (64).
    pub fn into_request(self, global: &Global) -> Result<Request> {
        Ok(match self {
            Command::Analyze(args) => Request::Analyze(args.into_request()?),
            Command::Codes(args) => Request::Codes(args.into_request()),
            Command::Pod(args) => Request::Pod(args.into_request(global)?),
            Command::Path(args) => Request::Path(args.into_request(global)?),
            Command::Bootstrap(args) => Request::Bootstrap(args.into_request(global)?),
            Command::ProxyStatus(args) => Request::ProxyStatus(args.into_request(global)?),
            Command::Version(args) => Request::Version(args.into_request()),
            Command::Completion(args) => Request::Completion(args),
        })
    }
}

/// The values of `--color` ([`ColorChoice`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

impl From<Color> for ColorChoice {
    fn from(value: Color) -> ColorChoice {
        match value {
            Color::Auto => ColorChoice::Auto,
            Color::Always => ColorChoice::Always,
            Color::Never => ColorChoice::Never,
        }
    }
}

/// The flags every command understands.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "Global options")]
pub struct CommonArgs {
    /// When to use colors (on stdout and in stderr messages and logs)
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    pub color: Color,

    /// Log what mesh-doctor does to stderr (-v: info, -vv: debug)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
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
        "chunk_size",
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

/// Everything a command needs from the common and kubeconfig flags, wherever they were given,
/// as plain values: the flags given before the command name merged with the command's own (which
/// win; repeatable flags are concatenated).
pub fn resolve(common: &CommonArgs, before: &KubeArgs, after: Option<&KubeArgs>) -> Global {
    let empty = KubeArgs::default();
    let after = after.unwrap_or(&empty);
    let timeout = after.timeout.or(before.timeout).unwrap_or(
        crate::formats::duration::parse_duration(DEFAULT_TIMEOUT)
            .expect("the default --timeout parses"),
    );
    Global {
        connection: Connection {
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
            chunk_size: after
                .chunk_size
                .or(before.chunk_size)
                .unwrap_or(crate::source::cluster::DEFAULT_CHUNK_SIZE),
            timeout,
            deadline: (!timeout.is_zero())
                .then(|| mark_start().checked_add(timeout))
                .flatten(),
        },
        color: common.color.into(),
        verbose: common.verbose,
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

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

    #[test]
    fn chunk_size_defaults_and_the_command_s_own_wins() {
        let common = CommonArgs {
            color: Color::Auto,
            verbose: 0,
        };
        let none = KubeArgs::default();
        assert_eq!(
            resolve(&common, &none, None).connection.chunk_size,
            crate::source::cluster::DEFAULT_CHUNK_SIZE
        );
        let before = KubeArgs {
            chunk_size: Some(100),
            ..KubeArgs::default()
        };
        let after = KubeArgs {
            chunk_size: Some(0),
            ..KubeArgs::default()
        };
        assert_eq!(resolve(&common, &before, None).connection.chunk_size, 100);
        assert_eq!(
            resolve(&common, &before, Some(&after))
                .connection
                .chunk_size,
            0
        );
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
    fn one_vocabulary() {
        const CLUSTER: &[&str] = &[
            "analyze",
            "pod",
            "path",
            "explain",
            "proxy-status",
            "version",
        ];
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

    /// The request the command line makes, as `main` makes it.
    fn request(words: &[&str]) -> Result<Request> {
        let argv = std::iter::once("kubectl-mesh_doctor")
            .chain(words.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        let (argv, _) = rewrite_deprecated(argv);
        let cli = parse_from(argv).expect("the words parse");
        let global = resolve(&cli.common, &cli.kube, cli.command.kube_args());
        cli.command.into_request(&global)
    }

    fn usage_error(words: &[&str]) -> String {
        let e = request(words).expect_err("a usage error");
        assert_eq!(e.exit_code(), crate::exit::USAGE, "{words:?}: {e}");
        e.to_string()
    }

    #[test]
    fn analyze_decides_what_is_read() {
        let analyze = |words: &[&str]| match request(words).unwrap() {
            Request::Analyze(r) => r,
            other => panic!("{other:?}"),
        };
        // No files: the cluster; files: the files alone, unless -k (then they overlay it).
        let r = analyze(&["analyze"]);
        assert!(r.read_cluster && r.inputs.is_empty() && r.probe);
        let r = analyze(&["analyze", "-f", "a.yaml", "b.yaml"]);
        assert!(!r.read_cluster);
        assert_eq!(r.inputs, [PathBuf::from("a.yaml"), PathBuf::from("b.yaml")]);
        assert!(analyze(&["analyze", "-f", "a.yaml", "-k"]).read_cluster);
        assert!(!analyze(&["analyze", "--use-kube=false", "x.yaml"]).read_cluster);
        // --probe=false is the deprecated --no-probe; the last of --probe/--no-probe wins.
        assert!(!analyze(&["analyze", "--probe=false"]).probe);
        assert!(analyze(&["analyze", "--no-probe", "--probe"]).probe);
        let r = analyze(&["analyze", "-S", "IST0103=Pod shop/*", "-S", "XX9999=*"]);
        assert_eq!(r.suppressions.len(), 2);
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].contains("'XX9999'"), "{:?}", r.warnings);
        let r = analyze(&[
            "analyze",
            "-A",
            "-o",
            "sarif",
            "--failure-threshold",
            "error",
        ]);
        assert!(r.all_namespaces);
        assert_eq!(r.output, crate::output::findings::Format::Sarif);
        assert_eq!(r.failure_threshold, crate::findings::messages::Level::Error);
        // -L lists, whatever else is given.
        assert!(analyze(&["analyze", "-L", "--analyzer", "nope"]).list_analyzers);
    }

    #[test]
    fn flag_checks_are_usage_errors() {
        let e = usage_error(&["analyze", "--use-kube=false"]);
        assert!(
            e.contains("nothing to analyse: give manifest files with -f"),
            "{e}"
        );
        let e = usage_error(&["analyze", "-S", "IST0103"]);
        assert!(e.contains("is not a valid suppression"), "{e}");
        let e = usage_error(&["analyze", "--analyzer", "nope"]);
        assert!(
            e.contains("unknown analyzer \"nope\"; known analyzers: "),
            "{e}"
        );
        let e = usage_error(&["pod", "web", "--context", "a", "--context", "b"]);
        assert!(e.contains("give at most one --context"), "{e}");
        let e = usage_error(&["pod", "deploy/web"]);
        assert!(e.contains("deploy/web"), "{e}");
        let e = usage_error(&[
            "bootstrap",
            "explain",
            "web",
            "--context",
            "a",
            "--context",
            "b",
        ]);
        assert!(e.contains("give at most one --context"), "{e}");
        let e = usage_error(&["ps", "--syncz-file", "s.json", "--istiod-url", "http://x:1"]);
        assert!(
            e.contains("give either --syncz-file or --istiod-url, not both"),
            "{e}"
        );
        let e = usage_error(&[
            "ps",
            "--istiod-url",
            "http://x:1",
            "--istiod-name",
            "a",
            "--istiod-name",
            "b",
        ]);
        assert!(
            e.contains("2 --istiod-name for 1 --istiod-url/--syncz-file"),
            "{e}"
        );
        let e = usage_error(&["ps", "--context", "a", "--context", "b"]);
        assert!(e.contains("proxy-status reads one cluster"), "{e}");
        let e = usage_error(&[
            "ps",
            "--istiod-url",
            "http://x:1",
            "--istiod-tls-server-name",
            "i",
        ]);
        assert!(
            e.contains("are for an https:// --istiod-url, and none is given"),
            "{e}"
        );
        let e = usage_error(&[
            "ps",
            "--istiod-url",
            "HTTPS://x",
            "--istiod-ca",
            "/nonexistent",
            "--istiod-insecure-skip-tls-verify",
        ]);
        assert_eq!(
            e,
            "give either --istiod-ca or --istiod-insecure-skip-tls-verify, not both"
        );
        // A malformed address is said before anything is read (no kubeconfig needed).
        let e = usage_error(&["ps", "--istiod-url", "ftp://x:1"]);
        assert!(
            e.contains("ftp is not supported, use http:// or https://"),
            "{e}"
        );
    }

    #[test]
    fn requests_carry_plain_values() {
        match request(&["pod", "pod/web", "--no-probe", "--direct", "-o", "json"]).unwrap() {
            Request::Pod(r) => {
                assert_eq!(r.pod, "web");
                assert!(!r.probe && r.direct);
                assert_eq!(r.output, crate::output::format::DocumentFormat::Json);
            }
            other => panic!("{other:?}"),
        }
        match request(&["ps", "-o", "table", "--fail-on", "not-sent,none", "--probe"]).unwrap() {
            Request::ProxyStatus(r) => {
                use commands::proxy_status::status::FailOn;
                assert_eq!(r.output, commands::proxy_status::Format::Text);
                assert_eq!(r.fail_on, [FailOn::NotSent, FailOn::None]);
                assert!(r.probe);
                assert_eq!(r.istio_namespace, "istio-system");
            }
            other => panic!("{other:?}"),
        }
        match request(&["ps"]).unwrap() {
            Request::ProxyStatus(r) => {
                use commands::proxy_status::status::FailOn;
                assert_eq!(
                    r.fail_on,
                    [FailOn::Stale, FailOn::Error, FailOn::Disconnected]
                );
                assert!(!r.probe);
            }
            other => panic!("{other:?}"),
        }
        match request(&["bootstrap", "validate", "-", "--no-envoy"]).unwrap() {
            Request::Bootstrap(commands::bootstrap::Request::Validate(r)) => {
                assert!(r.static_only && r.envoy.is_none());
            }
            other => panic!("{other:?}"),
        }
        match request(&["version", "--client", "-o", "yaml"]).unwrap() {
            Request::Version(r) => {
                assert!(r.client_only);
                assert_eq!(r.output, crate::output::format::DocumentFormat::Yaml);
            }
            other => panic!("{other:?}"),
        }
    }
}
