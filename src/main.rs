//! `kubectl-mesh_doctor`: parse, run, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;
use mesh_doctor::cli::{Cli, Command};
use mesh_doctor::render::style::{Stream, Styles};
use mesh_doctor::{commands, exit};

fn main() -> ExitCode {
    mesh_doctor::cli::mark_start();
    let cli = match Cli::try_parse() {
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
    // proxy-status takes -v for its per-type columns (as istioctl's -v); -vv logs.
    let log_verbosity = match cli.command {
        Command::ProxyStatus(_) => cli.global.verbose.saturating_sub(1),
        _ => cli.global.verbose,
    };
    init_logging(log_verbosity);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::UNEXPECTED);
        }
    };
    let global = cli.global.clone();
    let deadline = global.deadline();
    let timeout = global.timeout;
    let result = runtime.block_on(async move {
        let command = async {
            match cli.command {
                Command::Analyze(args) => commands::analyze::run(args, &global).await,
                Command::Codes(args) => commands::codes::run(args),
                Command::ProxyStatus(args) => commands::proxy_status::run(args, &global).await,
                Command::Pod(args) => commands::pod::run(args, &global).await,
                Command::Bootstrap(args) => commands::bootstrap::run(args, &global).await,
                Command::Version(args) => commands::version::run(args, &global).await,
            }
        };
        // The overall deadline (--timeout). Reads stop at it on their own with the kind they were
        // reading; this bound (a second later) covers everything else.
        match deadline {
            None => command.await,
            Some(at) => {
                let at = tokio::time::Instant::from_std(at) + std::time::Duration::from_secs(1);
                match tokio::time::timeout_at(at, command).await {
                    Ok(result) => result,
                    Err(_) => Err(mesh_doctor::error::Error::Deadline {
                        after: mesh_doctor::cli::show_duration(timeout),
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
            let styles = Styles::new(cli.global.color.enabled(Stream::Stderr));
            eprintln!("{} {e}", styles.paint(styles.error, "error:"));
            ExitCode::from(e.exit_code())
        }
    }
}

fn init_logging(verbose: u8) {
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
        .with_target(false)
        .init();
}
