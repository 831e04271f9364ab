//! The library's error type. Each variant says what failed (a flag's value, a pod that is not in
//! its namespace, a request the API server refused, a file that cannot be parsed at a line...),
//! carries enough context for one clear message, knows its documented exit code
//! ([`Error::exit_code`]) and renders itself, with the style sheet and its `source()` chain
//! ([`Error::render`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::exit;
use crate::output::style::Styles;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's (or an argument's) value cannot be used: `invalid --istiod-url "x": not a URL`.
    #[error("invalid {what} {value:?}: {why}")]
    InvalidValue {
        /// The flag or argument, as the user wrote it: `--istiod-url`, `pod name`.
        what: &'static str,
        value: String,
        why: String,
    },

    /// The command line cannot be understood otherwise: flags that do not go together, too
    /// many of one, an unknown name.
    #[error("{0}")]
    Usage(String),

    /// A kubeconfig file exists but cannot be read or merged with the others of `$KUBECONFIG`.
    #[error("cannot {doing} kubeconfig {}: {source}", path.display())]
    KubeconfigFile {
        /// "read" or "merge".
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },

    /// No kubeconfig to use: none exists, the in-cluster configuration failed, or the one
    /// there does not say which cluster to use.
    #[error("{0}")]
    Kubeconfig(String),

    /// `--context NAME` names no context of the kubeconfig.
    #[error(
        "context {wanted:?} is not in the kubeconfig (its contexts: {}); check --context, or pass --kubeconfig",
        listed(contexts)
    )]
    ContextNotFound {
        wanted: String,
        contexts: Vec<String>,
    },

    /// The Envoy given with `--envoy` (or `$MESH_DOCTOR_ENVOY`) cannot be started.
    #[error("cannot run envoy at {}: {source}", path.display())]
    EnvoyNotRunnable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An input file cannot be read at all.
    #[error("cannot read {path}: {source}")]
    ReadInput {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An input cannot be parsed: `location` is `file:line` (or `file:line:column`).
    #[error("{location}: {message}")]
    Parse { location: String, message: String },

    /// The pod asked about is not in its namespace.
    #[error("pod {pod} not found in namespace {namespace}")]
    PodNotFound { pod: String, namespace: String },

    /// The input is readable but not what the command needs (nothing to analyse, no proxy of
    /// that name, a pod without a pilot-agent proxy).
    #[error("{0}")]
    Data(String),

    #[error("cannot reach the Kubernetes API server {server}: {message}")]
    Unreachable { server: String, message: String },

    /// The API server refused a request the command cannot do without.
    #[error("{0}")]
    AccessDenied(Box<Denied>),

    /// The namespace the command is scoped to does not exist.
    #[error("namespace {namespace} does not exist on {cluster} ({server}); nothing was analysed")]
    NamespaceNotFound {
        namespace: String,
        cluster: String,
        server: String,
    },

    /// Anything else about the cluster that ends the command (a failed request, no istiod,
    /// nothing readable).
    #[error("{0}")]
    Cluster(String),

    /// The TLS connection to an istiod asked over an https `--istiod-url` failed: the one line
    /// says why ([`TlsFailure`]) and what to do (`hint`).
    #[error("istiod {url}: {failure}{}", hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default())]
    IstiodTls {
        url: String,
        failure: TlsFailure,
        hint: Option<String>,
    },

    /// The CA bundle given with `--istiod-ca` cannot be read, or holds no usable PEM certificate.
    #[error("cannot use --istiod-ca {}: {why}", path.display())]
    CaBundle { path: PathBuf, why: String },

    /// The command's overall deadline (`--timeout`) passed.
    #[error("the command did not finish within its deadline of {after} (--timeout): {doing}")]
    Deadline { after: String, doing: String },

    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),

    #[error("{0}")]
    Internal(String),
}

/// A refused request: who refused what to whom.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot {verb} {resource}{} on {cluster}: {reason}{}",
    namespace.as_ref().map(|ns| format!(" in namespace {ns}")).unwrap_or_default(),
    hint.map(|h| format!("; {h}")).unwrap_or_default()
)]
pub struct Denied {
    /// The Kubernetes verb: `get`, `list`.
    pub verb: &'static str,
    /// What was asked for: `pods`, `pod web-1`, `istiod's pods (app=istiod)`.
    pub resource: String,
    pub namespace: Option<String>,
    /// The kubeconfig context (or the server) asked.
    pub cluster: String,
    /// What the API server answered.
    pub reason: String,
    /// What the user can do instead.
    pub hint: Option<&'static str>,
}

/// Why a TLS handshake (to an istiod behind an https URL) failed, in words a user can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TlsFailure {
    /// The certificate chain does not lead to a trusted CA. `trust` says which CAs were
    /// trusted: "the system's trust store", "the CA certificates in ca.pem".
    #[error("TLS: the certificate is not trusted (unknown issuer: it is not signed by {trust})")]
    UnknownIssuer { trust: String },
    /// The certificate is valid, but for other names than the one asked for.
    #[error(
        "TLS: the certificate is for {} and not for {wanted}",
        if presented.is_empty() { "no name (it has no subject alternative name)".to_string() } else { presented.join(", ") }
    )]
    NameMismatch {
        wanted: String,
        presented: Vec<String>,
    },
    /// The certificate's validity ended (`not_after`) before `now`.
    #[error("TLS: the certificate expired at {not_after} (it is now {now})")]
    Expired { not_after: String, now: String },
    /// The certificate's validity starts after `now` (a clock or a freshly issued certificate).
    #[error("TLS: the certificate is not valid before {not_before} (it is now {now})")]
    NotYetValid { not_before: String, now: String },
    /// What came back is not TLS; `answer` is its first line when it looks like plain HTTP.
    #[error(
        "the server does not speak TLS{}",
        answer.as_ref().map(|a| format!(": it answered in plain HTTP ({a})")).unwrap_or_default()
    )]
    NotTls { answer: Option<String> },
    /// The server ended the handshake with a TLS alert (`InternalError`, `HandshakeFailure`,
    /// `CertificateRequired`, `NoApplicationProtocol`...).
    #[error("TLS: the server ended the handshake with the alert {alert}")]
    Alert { alert: String },
    /// The server closed the connection in the middle of the handshake.
    #[error("TLS: the server closed the connection during the handshake")]
    Closed,
    /// The handshake did not finish within the request timeout.
    #[error("TLS: the handshake did not finish within {}s", after.as_secs_f64())]
    HandshakeTimeout { after: Duration },
    /// No trusted CA to check a certificate against (an empty system trust store).
    #[error("TLS: no CA certificate to trust: {0}")]
    NoTrustStore(String),
    /// Anything else rustls says (an alert from the server, an unsupported algorithm...).
    #[error("TLS: {0}")]
    Other(String),
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl Error {
    /// The exit code this error ends the process with (one of `exit::TABLES`' codes).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::InvalidValue { .. }
            | Error::Usage(_)
            | Error::KubeconfigFile { .. }
            | Error::Kubeconfig(_)
            | Error::ContextNotFound { .. }
            | Error::EnvoyNotRunnable { .. } => exit::USAGE,
            Error::ReadInput { .. }
            | Error::Parse { .. }
            | Error::PodNotFound { .. }
            | Error::CaBundle { .. }
            | Error::Data(_) => exit::DATA,
            Error::Unreachable { .. }
            | Error::AccessDenied(_)
            | Error::NamespaceNotFound { .. }
            | Error::Cluster(_)
            | Error::IstiodTls { .. }
            | Error::Deadline { .. } => exit::UNAVAILABLE,
            Error::Output(_) | Error::Internal(_) => exit::UNEXPECTED,
        }
    }

    /// Whether the error is about the kubeconfig or the command line, so that a hint about
    /// another way to run the command helps (`analyze` adds "or analyse files only with -f").
    pub fn is_usage(&self) -> bool {
        self.exit_code() == exit::USAGE
    }

    /// The message for stderr: `error: <what failed>`, then every cause of the `source()` chain
    /// that the message does not already say, one per line.
    pub fn render(&self, styles: &Styles) -> String {
        let mut said = self.to_string();
        let mut out = format!("{} {said}", styles.paint(styles.error, "error:"));
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !said.contains(&text) {
                out.push_str(&format!(
                    "\n  {} {text}",
                    styles.paint(styles.dim, "caused by:")
                ));
                said.push_str(&text);
            }
            source = cause.source();
        }
        out
    }

    /// The same error with a hint appended to its message (for the errors whose message is
    /// free text); other variants are returned as they are.
    pub fn with_hint(self, hint: &str) -> Error {
        match self {
            Error::Usage(m) => Error::Usage(format!("{m}; {hint}")),
            Error::Kubeconfig(m) => Error::Kubeconfig(format!("{m}; {hint}")),
            Error::ContextNotFound { .. } | Error::KubeconfigFile { .. } => {
                Error::Kubeconfig(format!("{self}; {hint}"))
            }
            other => other,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_says_what_failed_and_its_code() {
        let cases = [
            (
                Error::InvalidValue {
                    what: "--istiod-url",
                    value: "ftp://x".into(),
                    why: "ftp is not supported, use http://".into(),
                },
                "invalid --istiod-url \"ftp://x\": ftp is not supported, use http://",
                exit::USAGE,
            ),
            (
                Error::PodNotFound {
                    pod: "web".into(),
                    namespace: "shop".into(),
                },
                "pod web not found in namespace shop",
                exit::DATA,
            ),
            (
                Error::AccessDenied(Box::new(Denied {
                    verb: "get",
                    resource: "pod web".into(),
                    namespace: Some("shop".into()),
                    cluster: "kind-a".into(),
                    reason: "pods \"web\" is forbidden".into(),
                    hint: None,
                })),
                "cannot get pod web in namespace shop on kind-a: pods \"web\" is forbidden",
                exit::UNAVAILABLE,
            ),
            (
                Error::ContextNotFound {
                    wanted: "nope".into(),
                    contexts: vec!["local".into()],
                },
                "context \"nope\" is not in the kubeconfig (its contexts: local); check --context, or pass --kubeconfig",
                exit::USAGE,
            ),
            (
                Error::Parse {
                    location: "a.yaml:3".into(),
                    message: "bad".into(),
                },
                "a.yaml:3: bad",
                exit::DATA,
            ),
            (
                Error::IstiodTls {
                    url: "https://10.0.0.5".into(),
                    failure: TlsFailure::NameMismatch {
                        wanted: "10.0.0.5".into(),
                        presented: vec!["istiod.istio-system.svc".into()],
                    },
                    hint: Some("give --istiod-tls-server-name NAME".into()),
                },
                "istiod https://10.0.0.5: TLS: the certificate is for istiod.istio-system.svc and not for 10.0.0.5; give --istiod-tls-server-name NAME",
                exit::UNAVAILABLE,
            ),
            (
                Error::CaBundle {
                    path: "ca.pem".into(),
                    why: "no certificate in it".into(),
                },
                "cannot use --istiod-ca ca.pem: no certificate in it",
                exit::DATA,
            ),
        ];
        for (error, message, code) in cases {
            assert_eq!(error.to_string(), message);
            assert_eq!(error.exit_code(), code, "{message}");
            assert_eq!(
                error.render(&Styles::new(false)),
                format!("error: {message}")
            );
        }
    }

    #[test]
    fn render_adds_the_causes_the_message_does_not_say() {
        let io = std::io::Error::other("disk full");
        let said = Error::Output(io);
        assert_eq!(
            said.render(&Styles::new(false)),
            "error: cannot write output: disk full"
        );
        let read = Error::ReadInput {
            path: "x.yaml".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        };
        assert_eq!(
            read.render(&Styles::new(false)),
            "error: cannot read x.yaml: no such file"
        );
        let colored = read.render(&Styles::new(true));
        assert!(colored.starts_with("\u{1b}["), "{colored:?}");
        assert!(colored.ends_with("cannot read x.yaml: no such file"));
    }
}
