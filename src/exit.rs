//! The documented exit codes, in one place: the constants the code returns, and per command the
//! list of codes with what each means. `--help` (the "Exit codes:" part of every command's help),
//! README.md and the commands' pages in docs/ are made from, or checked against, these lists
//! (`tests/it/exit_codes.rs` compares every docs table with [`Table::markdown`]).

/// Nothing reached the failure threshold.
pub const OK: u8 = 0;
/// Anything unexpected (a bug, an I/O failure writing output).
pub const UNEXPECTED: u8 = 1;
/// The command line could not be understood.
pub const USAGE: u8 = 64;
/// An input file could not be read, parsed, or is not what was expected.
pub const DATA: u8 = 65;
/// The cluster could not be reached, nothing could be read from it (access denied), what was
/// asked for is not there (a namespace, istiod), or the run is incomplete: a read or a check was
/// skipped and nothing reached the failure threshold (`--allow-incomplete` turns that into 0).
pub const UNAVAILABLE: u8 = 69;
/// Findings at or above the failure threshold (the same code istioctl analyze uses, whatever `-o` is).
pub const FINDINGS: u8 = 79;

/// One exit code of one command: what `--help` says (plain text, `\n` where the line breaks)
/// and what the docs' table says (Markdown, one line).
#[derive(Debug)]
pub struct Row {
    pub code: u8,
    pub help: &'static str,
    pub doc: &'static str,
}

/// The exit codes of one command, and the Markdown files whose `## Exit codes` table is this one.
#[derive(Debug)]
pub struct Table {
    /// The command line, as in `kubectl mesh-doctor <command>`.
    pub command: &'static str,
    pub docs: &'static [&'static str],
    pub rows: &'static [Row],
}

impl Table {
    /// The "Exit codes:" part of `--help`.
    pub fn help(&self) -> String {
        let mut out = String::from("Exit codes:");
        for row in self.rows {
            out.push_str(&format!(
                "\n  {:<3} {}",
                row.code,
                row.help.replace('\n', "\n      ")
            ));
        }
        out
    }

    /// The docs' table.
    pub fn markdown(&self) -> String {
        let mut out = String::from("| code | meaning |\n|---|---|\n");
        for row in self.rows {
            out.push_str(&format!("| {} | {} |\n", row.code, row.doc));
        }
        out
    }

    /// Whether `code` is one of this command's codes.
    pub fn has(&self, code: u8) -> bool {
        self.rows.iter().any(|r| r.code == code)
    }
}

/// A command's `--help` epilogue: its own text, then its exit codes.
pub fn after_help(text: &str, table: &Table) -> String {
    format!("{text}{}", table.help())
}

const USAGE_ROW: Row = Row {
    code: USAGE,
    help: "usage error",
    doc: "usage error",
};

const UNEXPECTED_ROW: Row = Row {
    code: UNEXPECTED,
    help: "anything unexpected",
    doc: "anything unexpected",
};

/// The root command and `analyze` (README.md's table).
pub const ANALYZE: Table = Table {
    command: "analyze",
    docs: &["README.md"],
    rows: &[
        Row {
            code: OK,
            help: "nothing at or above the failure threshold, and everything was read",
            doc: "nothing at or above the failure threshold, and everything was read",
        },
        Row {
            code: FINDINGS,
            help: "findings at or above the failure threshold (with every -o format)",
            doc: "findings at or above the failure threshold (with every `-o` format), even when some reads were skipped",
        },
        Row {
            code: USAGE,
            help: "usage error",
            doc: "usage error (bad flag, bad `--suppress`, no kubeconfig when one is needed)",
        },
        Row {
            code: DATA,
            help: "an input file cannot be read or parsed, or the input holds nothing to analyse",
            doc: "an input file cannot be read or parsed (the message names file and line), or the input holds nothing to analyse (empty file or stdin, a directory without manifests at its top level, only kinds no analyzer reads)",
        },
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, nothing could be read, the namespace does not exist, or the\nrun is incomplete (a read or an analyzer skipped: RBAC, error, timeout) and nothing\nreaches the threshold; --allow-incomplete accepts a partial result (exit 0)",
            doc: "the cluster is unreachable, nothing could be read from it, the namespace does not exist, `proxy-status` finds no istiod in `--istio-namespace`, or the run is **incomplete**: a read or an analyzer was skipped (RBAC 403, an error, a timeout) and nothing reaches the failure threshold. `--allow-incomplete` (`analyze`, `pod`) accepts a partial result with exit 0; skipped reads are listed on stderr and in `-o json/yaml/sarif`",
        },
        UNEXPECTED_ROW,
    ],
};

pub const POD: Table = Table {
    command: "pod",
    docs: &["docs/pod.md"],
    rows: &[
        Row {
            code: OK,
            help: "healthy (or starting), or nothing at or above the failure threshold, everything read",
            doc: "healthy or starting, or no finding at or above `--failure-threshold` (a namespace that is simply not labelled is Info), and everything around the pod was read",
        },
        Row {
            code: FINDINGS,
            help: "a finding at or above the failure threshold (Error: crash, waiting for istiod), with every -o",
            doc: "a finding at or above the threshold, with every `-o`: Error for a crash or a proxy waiting for istiod, Warning for the others; the findings under Traffic count too",
        },
        USAGE_ROW,
        Row {
            code: DATA,
            help: "the pod does not exist in the namespace",
            doc: "the pod does not exist in the namespace (`error: pod X not found in namespace Y`)",
        },
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, the pod cannot be read (access denied), or something around it could\nnot be read (namespace, webhooks, istiod...; listed under Not read) and no finding reaches\nthe threshold: the verdict is incomplete (--allow-incomplete exits 0 instead)",
            doc: "the cluster cannot be reached, the pod cannot be read (access denied), or something around it could not be read (listed under \"Not read\") and no finding reaches the threshold: the result is incomplete, and the verdict may be wrong. `--allow-incomplete` accepts it (exit 0)",
        },
        UNEXPECTED_ROW,
    ],
};

pub const PROXY_STATUS: Table = Table {
    command: "proxy-status",
    docs: &["docs/proxy-status.md"],
    rows: &[
        Row {
            code: OK,
            help: "no proxy matches --fail-on",
            doc: "no row matches `--fail-on`",
        },
        Row {
            code: FINDINGS,
            help: "a proxy matches --fail-on (default: STALE, ERROR, NOT CONNECTED or UNKNOWN), with every -o",
            doc: "a row matches `--fail-on`, **with every `-o`** (stderr says how many and which states)",
        },
        USAGE_ROW,
        Row {
            code: DATA,
            help: "a --syncz-file, --pods-file or --istiod-ca cannot be read, or the proxy named does not exist",
            doc: "a `--syncz-file`/`--pods-file` cannot be read or parsed, an `--istiod-ca` file cannot be read or holds no PEM certificate, or `proxy-status NAME` names nothing",
        },
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, istiod's pods cannot be listed, no istiod pod at all in\n--istio-namespace (a wrong -i or --istiod-selector), or no istiod could be asked\n(also: the TLS handshake with an https --istiod-url failed); or, with no row\nmatching --fail-on, the result is incomplete: the pods could not be listed (or an\nistiod could not be asked without them), unless --allow-incomplete",
            doc: "the cluster cannot be reached, istiod's pods cannot be listed, no istiod pod at all in `--istio-namespace` (`no istiod found`), or no istiod could be asked (also: the TLS handshake with the only, https, `--istiod-url` failed: not trusted, wrong name, expired, not TLS, timeout); or, when no row matches `--fail-on`, the result is incomplete: the pods could not be listed (a sidecar connected to no istiod would not be shown), or an istiod could not be asked and no pod list shows its proxies, unless `--allow-incomplete`",
        },
        UNEXPECTED_ROW,
    ],
};

pub const BOOTSTRAP_VALIDATE: Table = Table {
    command: "bootstrap validate",
    docs: &["docs/bootstrap.md"],
    rows: &[
        Row {
            code: OK,
            help: "no finding at or above the failure threshold (default: Warning, as in every command)",
            doc: "no finding at or above `--failure-threshold` (default `Warning`, as in every command; `--failure-threshold Error` lets MD0310 warnings alone pass)",
        },
        Row {
            code: FINDINGS,
            help: "findings at or above the failure threshold (with every -o format)",
            doc: "findings at or above the failure threshold, with every `-o` format (a syntax error is a finding too)",
        },
        Row {
            code: USAGE,
            help: "usage error (also: the Envoy given with --envoy cannot be run)",
            doc: "usage error; also an Envoy named with `--envoy`/`$MESH_DOCTOR_ENVOY` that cannot be run",
        },
        Row {
            code: DATA,
            help: "the file cannot be read at all (missing, unreadable, not UTF-8 text)",
            doc: "the file cannot be read at all: missing, unreadable, a directory, not UTF-8 text",
        },
        UNEXPECTED_ROW,
    ],
};

pub const BOOTSTRAP_EXPLAIN: Table = Table {
    command: "bootstrap explain",
    docs: &["docs/bootstrap.md"],
    rows: &[
        Row {
            code: OK,
            help: "no check failed at Error level (warnings and live differences alone pass)",
            doc: "no check failed at Error level (warnings, unknowns and live differences alone pass)",
        },
        Row {
            code: FINDINGS,
            help: "a check failed at Error level (with every -o format)",
            doc: "a check failed at Error level, with every `-o` format",
        },
        Row {
            code: USAGE,
            help: "usage error",
            doc: "usage error (a pod name like `deploy/web`, more than one `--context`)",
        },
        Row {
            code: DATA,
            help: "the pod does not exist in the namespace, or has no pilot-agent istio-proxy",
            doc: "the pod does not exist in the namespace, or has no `istio-proxy` running `pilot-agent proxy`",
        },
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, or the pod cannot be read (access denied)",
            doc: "cluster unreachable, or the pod cannot be read (access denied)",
        },
        UNEXPECTED_ROW,
    ],
};

pub const VERSION: Table = Table {
    command: "version",
    docs: &[],
    rows: &[
        Row {
            code: OK,
            help: "versions printed (what could not be read is named on stderr)",
            doc: "versions printed (what could not be read is named on stderr)",
        },
        USAGE_ROW,
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, or nothing could be read from it (the client version is still printed)",
            doc: "cluster unreachable, or nothing could be read from it (the client version is still printed)",
        },
        UNEXPECTED_ROW,
    ],
};

pub const PATH: Table = Table {
    command: "path",
    docs: &["docs/path.md"],
    rows: &[
        Row {
            code: OK,
            help: "every hop lets the request through (with --expect blocked: a hop stops it)",
            doc: "every hop lets the request through (or it leaves the mesh through the PassthroughCluster); with `--expect blocked`, a hop stops it",
        },
        Row {
            code: FINDINGS,
            help: "a hop stops the request (with --expect blocked: none does)",
            doc: "a hop stops the request, with every `-o`; with `--expect blocked`, no hop stops it",
        },
        USAGE_ROW,
        Row {
            code: DATA,
            help: "the source pod or workload does not exist, or a file cannot be read or parsed",
            doc: "the source pod or workload does not exist (live: a workload without pods), or an input file cannot be read or parsed, or holds no object",
        },
        Row {
            code: UNAVAILABLE,
            help: "cluster unreachable, or a hop could not be checked (said, never guessed) and none fails",
            doc: "the cluster cannot be reached, or a hop could not be checked (an ambient pod, a CUSTOM policy, a ServiceEntry's endpoints, files without the workloads behind a Service, a read denied) and no hop fails",
        },
        UNEXPECTED_ROW,
    ],
};

/// Every command's table.
pub const TABLES: &[&Table] = &[
    &ANALYZE,
    &POD,
    &PATH,
    &PROXY_STATUS,
    &BOOTSTRAP_VALIDATE,
    &BOOTSTRAP_EXPLAIN,
    &VERSION,
];
