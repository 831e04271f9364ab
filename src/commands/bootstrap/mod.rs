//! `kubectl mesh-doctor bootstrap validate`: finds the mistakes in an Envoy bootstrap that make
//! `istio-proxy` crash at start, before the bootstrap is deployed, and (when an Envoy binary is
//! at hand) shows what a real `envoy --mode validate` says about the same file.
//!
//! `kubectl mesh-doctor bootstrap explain POD` (in [`explain`]): where each part of a live pod's
//! bootstrap comes from, checked, and compared with what its running Envoy loaded.

pub mod checks;
pub mod explain;
pub mod explanation;
pub mod inputs;
pub mod overlay;

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::envoy::bootstrap::{self, Format, Problem};
use crate::error::{Error, Result};
use crate::exit;
use crate::findings::messages::{self, DOCS_BASE, Level};
use crate::findings::{Finding, ResourceRef};
use crate::output::findings::FindingJson;
use crate::output::format::DocumentFormat;
use crate::output::json::document;
use crate::output::style::{Stream, Styles};
use crate::output::write;
use crate::request::Global;

/// The environment variable naming the Envoy binary when `--envoy` is not given.
pub const ENVOY_ENV: &str = "MESH_DOCTOR_ENVOY";

/// Envoy output beyond this is read and dropped.
const OUTPUT_CAP: usize = 4 << 20;

/// What `bootstrap` is asked to do, decided from its flags (by the CLI).
#[derive(Clone, Debug)]
pub enum Request {
    Validate(ValidateRequest),
    Explain(explain::Request),
}

/// `bootstrap validate FILE`.
#[derive(Clone, Debug)]
pub struct ValidateRequest {
    /// The bootstrap file, `-` for stdin.
    pub file: PathBuf,
    /// The Envoy binary named with --envoy (else $MESH_DOCTOR_ENVOY, else `envoy` on PATH).
    pub envoy: Option<PathBuf>,
    /// Only the static checks: no Envoy is run (--no-envoy).
    pub static_only: bool,
    /// How long `envoy --mode validate` may run.
    pub envoy_timeout: Duration,
    /// The largest bootstrap file (or stdin) read, in bytes.
    pub max_input_size: u64,
    pub output: DocumentFormat,
    /// The lowest level that makes the command exit 79.
    pub failure_threshold: Level,
}

pub async fn run(global: &Global, request: Request) -> Result<u8> {
    match request {
        Request::Validate(request) => validate(global, request).await,
        Request::Explain(request) => explain::run(global, request).await,
    }
}

/// What a real Envoy said about the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvoyVerdict {
    pub binary: PathBuf,
    /// `1.40.0`, from `envoy --version`, when it answered.
    pub version: Option<String>,
    pub accepted: bool,
    pub exit_code: Option<i32>,
    /// Why Envoy refused the file (see [`bootstrap::envoy_reason`]).
    pub reason: Option<String>,
}

/// Where Envoy was found, and whether the user named it (a named one that cannot run is an error;
/// one found on PATH that cannot run is a warning).
#[derive(Debug, Clone)]
pub struct EnvoyBinary {
    pub path: PathBuf,
    pub explicit: bool,
}

/// `--envoy`, else `$MESH_DOCTOR_ENVOY`, else `envoy` on PATH.
pub fn find_envoy(flag: Option<&Path>) -> Option<EnvoyBinary> {
    if let Some(path) = flag {
        return Some(EnvoyBinary {
            path: path.to_path_buf(),
            explicit: true,
        });
    }
    if let Some(path) = std::env::var_os(ENVOY_ENV).filter(|v| !v.is_empty()) {
        return Some(EnvoyBinary {
            path: PathBuf::from(path),
            explicit: true,
        });
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join("envoy"))
        .find(|candidate| is_executable(candidate))
        .map(|path| EnvoyBinary {
            path,
            explicit: false,
        })
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

async fn validate(global: &Global, request: ValidateRequest) -> Result<u8> {
    let stdin = request.file.as_os_str() == "-";
    let shown: Arc<str> = if stdin {
        Arc::from("<stdin>")
    } else {
        Arc::from(request.file.display().to_string())
    };
    let text = read_input(&request.file, stdin, &shown, request.max_input_size)?;
    let file_name = (!stdin).then(|| request.file.to_string_lossy().into_owned());
    let format = Format::detect(file_name.as_deref(), &text);
    let parsed = bootstrap::parse(&text, format);
    let problems: Vec<Problem> = match &parsed {
        Ok(doc) => bootstrap::check(doc),
        Err(problem) => vec![(**problem).clone()],
    };

    let mut envoy_error = None;
    let verdict = if request.static_only {
        None
    } else {
        match find_envoy(request.envoy.as_deref()) {
            None => None,
            Some(binary) => {
                let input =
                    EnvoyInput::prepare(&request.file, stdin, &text, format, parsed.as_ref().ok());
                let verdict = match input {
                    Ok(input) => run_envoy(&binary.path, input.path(), request.envoy_timeout).await,
                    Err(e) => Err(e),
                };
                match verdict {
                    Ok(verdict) => Some(verdict),
                    Err(e) if binary.explicit && e.kind() != io::ErrorKind::TimedOut => {
                        return Err(Error::EnvoyNotRunnable {
                            path: binary.path.clone(),
                            source: e,
                        });
                    }
                    Err(e) => {
                        envoy_error = Some(format!(
                            "envoy --mode validate ({}) gave no verdict: {e}",
                            binary.path.display()
                        ));
                        None
                    }
                }
            }
        }
    };

    let mut findings: Vec<(Finding, Option<&Problem>)> = problems
        .iter()
        .map(|p| (to_finding(p, &shown), Some(p)))
        .collect();
    if let Some(verdict) = &verdict
        && !verdict.accepted
    {
        findings.push((envoy_finding(verdict, &problems, &shown), None));
    }

    let failing = findings
        .iter()
        .filter(|(f, _)| f.level().reaches(request.failure_threshold))
        .count();
    let out = match request.output {
        DocumentFormat::Text => {
            let styles = Styles::new(global.color.enabled(Stream::Stdout));
            render_text(&findings, verdict.as_ref(), &styles)
        }
        DocumentFormat::Json | DocumentFormat::Yaml => {
            let json = render_json(
                &shown,
                format,
                &findings,
                verdict.as_ref(),
                envoy_error.as_deref(),
                failing == 0,
            );
            if request.output == DocumentFormat::Yaml {
                crate::formats::yaml_write::from_json_text(&json)
            } else {
                json
            }
        }
    };
    write::stdout(&out).map_err(Error::Output)?;

    let err = Styles::new(global.color.enabled(Stream::Stderr));
    if let Some(message) = &envoy_error {
        eprintln!("{} {message}", err.paint(err.warning, "warning:"));
    }
    let errors = findings
        .iter()
        .filter(|(f, _)| f.level() == Level::Error)
        .count();
    let warnings = findings
        .iter()
        .filter(|(f, _)| f.level() == Level::Warning)
        .count();
    if findings.is_empty() {
        let envoy_note = if verdict.is_some() {
            " (static checks and envoy --mode validate)"
        } else {
            " (static checks only: no Envoy binary was run; see --envoy)"
        };
        eprintln!(
            "{} No problems found in {shown}{envoy_note}.",
            err.paint(err.ok, "\u{2714}")
        );
    } else {
        eprintln!(
            "{} {shown}: {errors} error(s), {warnings} warning(s); see {DOCS_BASE} for causes and fixes.",
            if failing > 0 {
                err.paint(err.error, "\u{2718}")
            } else {
                err.paint(err.warning, "!")
            }
        );
    }
    Ok(if failing > 0 {
        exit::FINDINGS
    } else {
        exit::OK
    })
}

fn read_input(path: &Path, stdin: bool, shown: &str, limit: u64) -> Result<String> {
    let path = if stdin { Path::new("-") } else { path };
    let bytes = crate::source::files::read_capped(path, shown, limit)?;
    crate::source::files::utf8_text(bytes, shown, "a bootstrap is JSON or YAML")
}

/// A problem as a finding about the bootstrap file, pointing at its line.
fn to_finding(problem: &Problem, shown: &Arc<str>) -> Finding {
    Finding {
        message_type: problem.message_type,
        resource: Some(resource(shown, problem.line)),
        message: problem.message.clone(),
        cluster: None,
    }
}

fn resource(shown: &Arc<str>, line: Option<u32>) -> ResourceRef {
    ResourceRef {
        kind: "Bootstrap".to_string(),
        namespace: None,
        name: shown.to_string(),
        file: Some(shown.clone()),
        line,
        cluster: None,
    }
}

/// MD0309, saying whether the static checks saw the same problem.
fn envoy_finding(verdict: &EnvoyVerdict, problems: &[Problem], shown: &Arc<str>) -> Finding {
    let reason = verdict
        .reason
        .clone()
        .unwrap_or_else(|| match verdict.exit_code {
            Some(code) => format!("it exited with code {code}"),
            None => "it was stopped by a signal".to_string(),
        });
    let covering = bootstrap::codes_covering(&reason);
    let found: Vec<&str> = covering
        .iter()
        .map(|m| m.code)
        .filter(|code| problems.iter().any(|p| p.code() == *code))
        .collect();
    let note = if !found.is_empty() {
        format!(" (the problem reported as {} above)", found.join(", "))
    } else if !covering.is_empty() {
        let codes: Vec<&str> = covering.iter().map(|m| m.code).collect();
        format!(
            " (the {} check missed this: please report it)",
            codes.join("/")
        )
    } else {
        String::new()
    };
    Finding::new(
        messages::MD0309::message(reason, note),
        Some(resource(shown, None)),
    )
}

fn render_text(
    findings: &[(Finding, Option<&Problem>)],
    verdict: Option<&EnvoyVerdict>,
    styles: &Styles,
) -> String {
    let mut out = String::new();
    for (finding, problem) in findings {
        out.push_str(&styles.paint(styles.level(finding.level()), finding.level().as_str()));
        out.push_str(&format!(" [{}]", finding.code()));
        if let Some(reference) = finding.resource.as_ref().and_then(ResourceRef::reference) {
            out.push(' ');
            out.push_str(&reference);
            if let Some(column) = problem.and_then(|p| p.column) {
                out.push_str(&format!(":{column}"));
            }
        }
        if let Some(problem) = problem
            && !problem.path.is_root()
        {
            out.push(' ');
            out.push_str(&styles.paint(styles.code, &problem.path.to_string()));
        }
        out.push_str("\n    ");
        out.push_str(&finding.message);
        out.push('\n');
    }
    if let Some(verdict) = verdict
        && verdict.accepted
    {
        out.push_str(&format!(
            "envoy --mode validate ({}): configuration OK\n",
            describe_binary(verdict)
        ));
    }
    out
}

fn describe_binary(verdict: &EnvoyVerdict) -> String {
    match &verdict.version {
        Some(version) => format!("envoy {version}, {}", verdict.binary.display()),
        None => verdict.binary.display().to_string(),
    }
}

/// `-o json`: the file, its findings (with the JSON path, line and column of each problem)
/// and Envoy's verdict; keys in alphabetical order, as in a finding.
#[derive(Serialize)]
struct ValidateJson<'a> {
    envoy: Option<EnvoyJson<'a>>,
    file: &'a str,
    findings: Vec<ProblemJson<'a>>,
    format: &'static str,
    passed: bool,
}

/// A finding as `analyze` writes it ([`FindingJson`]), with the code's name and where in the
/// bootstrap the problem is.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProblemJson<'a> {
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<u32>,
    documentation_url: String,
    level: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    message: &'a str,
    name: &'static str,
    origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<String>,
}

/// Envoy's verdict, or why it gave none.
#[derive(Serialize)]
#[serde(untagged)]
enum EnvoyJson<'a> {
    Verdict {
        accepted: bool,
        binary: String,
        #[serde(rename = "exitCode")]
        exit_code: Option<i32>,
        reason: Option<&'a str>,
        version: Option<&'a str>,
    },
    Error {
        error: &'a str,
    },
}

fn render_json(
    shown: &str,
    format: Format,
    findings: &[(Finding, Option<&Problem>)],
    verdict: Option<&EnvoyVerdict>,
    envoy_error: Option<&str>,
    passed: bool,
) -> String {
    let findings = findings
        .iter()
        .map(|(finding, problem)| {
            let f = FindingJson::of(finding, false);
            ProblemJson {
                code: f.code,
                column: problem.and_then(|p| p.column),
                documentation_url: f.documentation_url,
                level: f.level,
                line: problem.and_then(|p| p.line),
                message: f.message,
                name: finding.message_type.name,
                origin: f.origin,
                path: problem.map(|p| p.path.to_string()),
                reference: f.reference,
            }
        })
        .collect();
    let envoy = match (verdict, envoy_error) {
        (Some(v), _) => Some(EnvoyJson::Verdict {
            accepted: v.accepted,
            binary: v.binary.display().to_string(),
            exit_code: v.exit_code,
            reason: v.reason.as_deref(),
            version: v.version.as_deref(),
        }),
        (None, Some(error)) => Some(EnvoyJson::Error { error }),
        (None, None) => None,
    };
    document(&ValidateJson {
        envoy,
        file: shown,
        findings,
        format: match format {
            Format::Json => "json",
            Format::Yaml => "yaml",
        },
        passed,
    })
}

/// The file Envoy is given: the input itself when Envoy can read it as it is (a `.json`, or a
/// `.yaml`/`.yml` that could not be parsed), otherwise a temporary copy — JSON for YAML input,
/// so Envoy validates exactly what the checks read.
enum EnvoyInput {
    Original(PathBuf),
    Copy(tempfile::NamedTempFile),
}

impl EnvoyInput {
    fn prepare(
        file: &Path,
        stdin: bool,
        text: &str,
        format: Format,
        parsed: Option<&bootstrap::Bootstrap>,
    ) -> io::Result<EnvoyInput> {
        let lower = file.to_string_lossy().to_ascii_lowercase();
        let named_json = lower.ends_with(".json");
        let named_yaml = lower.ends_with(".yaml") || lower.ends_with(".yml");
        match (format, parsed) {
            (Format::Json, _) if !stdin && named_json => Ok(EnvoyInput::Original(file.into())),
            (Format::Json, _) => temp_copy(text.as_bytes(), "json").map(EnvoyInput::Copy),
            (Format::Yaml, Some(doc)) => {
                let json = serde_json::to_vec_pretty(&doc.value).map_err(io::Error::other)?;
                temp_copy(&json, "json").map(EnvoyInput::Copy)
            }
            (Format::Yaml, None) if !stdin && named_yaml => Ok(EnvoyInput::Original(file.into())),
            (Format::Yaml, None) => temp_copy(text.as_bytes(), "yaml").map(EnvoyInput::Copy),
        }
    }

    fn path(&self) -> &Path {
        match self {
            EnvoyInput::Original(path) => path,
            EnvoyInput::Copy(temp) => temp.path(),
        }
    }
}

/// A copy of the input in the temporary directory (removed when dropped), as Envoy reads it.
fn temp_copy(contents: &[u8], extension: &str) -> io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new()
        .prefix("mesh-doctor-bootstrap-")
        .suffix(&format!(".{extension}"))
        .tempfile()?;
    file.write_all(contents)?;
    file.flush()?;
    Ok(file)
}

/// Runs `envoy --mode validate -c FILE` (and `envoy --version`), each within `timeout`.
pub async fn run_envoy(binary: &Path, file: &Path, timeout: Duration) -> io::Result<EnvoyVerdict> {
    let mut command = Command::new(binary);
    command
        .arg("--mode")
        .arg("validate")
        .arg("-c")
        .arg(file)
        .arg("--log-level")
        .arg("warning");
    let output = run_with_timeout(command, timeout).await?;
    let Some(status) = output.status else {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "it did not finish within {}s and was stopped",
                timeout.as_secs_f64()
            ),
        ));
    };
    let accepted = status.success();
    let reason = if accepted {
        None
    } else {
        bootstrap::envoy_reason(&output.stderr)
    };
    let mut version_command = Command::new(binary);
    version_command.arg("--version");
    let version = run_with_timeout(version_command, timeout)
        .await
        .ok()
        .and_then(|out| parse_version(&out.stdout));
    Ok(EnvoyVerdict {
        binary: binary.to_path_buf(),
        version,
        accepted,
        exit_code: status.code(),
        reason,
    })
}

/// `envoy  version: 9e55.../1.40.0/Clean/RELEASE/BoringSSL` -> `1.40.0`.
fn parse_version(stdout: &str) -> Option<String> {
    let rest = stdout.split("version: ").nth(1)?;
    let version = rest.split('/').nth(1)?.trim();
    (!version.is_empty()).then(|| version.to_string())
}

struct ProcessOutput {
    /// None when the process was stopped at the deadline.
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

/// Runs a command with no stdin, reading its output (up to a cap) and stopping it at the
/// deadline. The child is killed when dropped (kill-on-drop), so a command stopped by the
/// overall `--timeout` leaves no Envoy behind.
async fn run_with_timeout(mut command: Command, timeout: Duration) -> io::Result<ProcessOutput> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let stdout = tokio::spawn(drain(child.stdout.take()));
    let stderr = tokio::spawn(drain(child.stderr.take()));
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => Some(status?),
        Err(_) => {
            let _ = child.kill().await;
            None
        }
    };
    // A grandchild could keep a pipe open: wait a little for the readers, never forever.
    let collect = async |reader: tokio::task::JoinHandle<Vec<u8>>| match tokio::time::timeout(
        Duration::from_secs(2),
        reader,
    )
    .await
    {
        Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    };
    Ok(ProcessOutput {
        status,
        stdout: collect(stdout).await,
        stderr: collect(stderr).await,
    })
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP`] bytes (and reading on, so that the
/// child never blocks on a full pipe).
async fn drain<R: AsyncRead + Unpin>(pipe: Option<R>) -> Vec<u8> {
    let mut kept = Vec::new();
    if let Some(mut pipe) = pipe {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn versions() {
        assert_eq!(
            parse_version(
                "\nenvoy  version: 9e5580933739775e8bce696a57a2e1bc99368f23/1.40.0/Clean/RELEASE/BoringSSL\n\n"
            )
            .as_deref(),
            Some("1.40.0")
        );
        assert_eq!(parse_version("nothing"), None);
    }

    #[tokio::test]
    async fn slow_commands_are_stopped() {
        let mut command = Command::new("sleep");
        command.arg("5");
        let started = Instant::now();
        let out = run_with_timeout(command, Duration::from_millis(200))
            .await
            .unwrap();
        assert!(out.status.is_none());
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn temp_files_go_away() {
        let temp = temp_copy(b"{}", "json").unwrap();
        let path = temp.path().to_path_buf();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        drop(temp);
        assert!(!path.exists());
    }
}
