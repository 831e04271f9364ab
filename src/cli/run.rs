//! The program behind `main`: parse the command line (kubectl's hidden completion and man-page
//! commands first), resolve it once into `Global` and the command's `Request`, run the command
//! under the overall deadline, print an error with the style sheet, and end with the exit code.

use std::process::ExitCode;

use super::{Command, Request, completion, mark_start, parse_from, resolve, rewrite_deprecated};
use crate::output::style::{Stream, Styles};
use crate::{commands, exit};

/// The whole program: every step `main` names, with the exit code it ends with.
pub fn main_impl() -> ExitCode {
    install_panic_hook();
    mark_start();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Not commands for people (so not in --help or the completion scripts): kubectl's plugin
    // completion protocol, and the man pages for the release archive.
    match argv.get(1).and_then(|a| a.to_str()) {
        Some("__complete") => {
            let words = argv[2..]
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect();
            return run_plain(completion::complete(words));
        }
        Some("__man") => {
            let Some(dir) = argv.get(2) else {
                eprintln!("usage: kubectl-mesh_doctor __man DIR");
                return ExitCode::from(exit::USAGE);
            };
            let result = completion::man(std::path::Path::new(dir));
            return match result {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!("{}", e.render(&Styles::new(false)));
                    ExitCode::from(e.exit_code())
                }
            };
        }
        _ => {}
    }
    let (args, deprecations) = rewrite_deprecated(argv);
    let cli = match parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let global = resolve(&cli.common, &cli.kube, cli.command.kube_args());
    let err_styles = Styles::new(global.color.enabled(Stream::Stderr));
    for note in &deprecations {
        eprintln!(
            "{} {note}",
            err_styles.paint(err_styles.warning, "deprecated:")
        );
    }
    if let Command::ProxyStatus(args) = &cli.command
        && global.verbose > 0
        && !args.types
    {
        eprintln!(
            "note: -v logs to stderr in proxy-status as in every command; the per-type columns are --types"
        );
    }
    init_logging(global.verbose, global.color.enabled(Stream::Stderr));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::parallel::runtime_threads())
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::UNEXPECTED);
        }
    };
    // The overall deadline (--timeout), for the commands that read a cluster. Reads stop at it
    // on their own with the kind they were reading; this bound (a second later) covers the rest.
    let deadline = cli.command.kube_args().and(global.deadline);
    let timeout = global.timeout;
    // The flags become the command's plain request here, once; a bad combination is exit 64.
    let request = match cli.command.into_request(&global) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("{}", e.render(&err_styles));
            return ExitCode::from(e.exit_code());
        }
    };
    let result = runtime.block_on(async {
        let command = async {
            match request {
                Request::Analyze(request) => commands::analyze::run(&global, request).await,
                Request::Codes(request) => commands::codes::run(request),
                Request::ProxyStatus(request) => {
                    commands::proxy_status::run(&global, request).await
                }
                Request::Pod(request) => commands::pod::run(&global, request).await,
                Request::Path(request) => commands::path::run(&global, request).await,
                Request::Bootstrap(request) => commands::bootstrap::run(&global, request).await,
                Request::Version(request) => commands::version::run(&global, request).await,
                Request::Completion(args) => completion::run(args),
            }
        };
        match deadline {
            None => command.await,
            Some(at) => {
                let at = tokio::time::Instant::from_std(at) + std::time::Duration::from_secs(1);
                match tokio::time::timeout_at(at, command).await {
                    Ok(result) => result,
                    Err(_) => Err(crate::error::Error::Deadline {
                        after: crate::formats::duration::show_duration(timeout),
                        doing: "stopped waiting for the cluster".into(),
                    }),
                }
            }
        }
    });
    // Whatever still runs (a hung read after the deadline) is not waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("{}", e.render(&err_styles));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Logs go to stderr, colored only when stderr takes colors (`--color`, NO_COLOR, a terminal).
fn init_logging(verbose: u8, colored: bool) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("MESH_DOCTOR_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(format!(
                "mesh_doctor={level},kubectl_mesh_doctor={level}"
            ))
        });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colored)
        .with_target(false)
        .init();
}

/// Runs a future on a small runtime; errors are silent (completion must never print noise).
fn run_plain(future: impl std::future::Future<Output = crate::error::Result<u8>>) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => match rt.block_on(future) {
            Ok(code) => ExitCode::from(code),
            Err(e) => ExitCode::from(e.exit_code()),
        },
        Err(_) => ExitCode::from(exit::UNEXPECTED),
    }
}

/// A panic is a bug: say so in one line a person can report, and end with the documented code
/// for "anything unexpected" (1), not Rust's undocumented 101.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        eprintln!(
            "error: mesh-doctor {} hit a bug ({message}{location}). Please report it with the command you ran: https://github.com/mesh-doctor/mesh-doctor/issues",
            env!("CARGO_PKG_VERSION")
        );
        std::process::exit(i32::from(exit::UNEXPECTED));
    }));
}
