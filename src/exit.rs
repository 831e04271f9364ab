//! The documented exit codes, in one place. `docs/exit-codes.md` and `--help` repeat this table.

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

/// The exit-code table shown at the end of `--help` for the root command and `analyze`
/// (other commands print their own, narrower table). A macro so it can be `concat!`ed.
#[macro_export]
macro_rules! exit_codes_help {
    () => {
        "Exit codes:
  0   nothing at or above the failure threshold, and everything was read
  79  findings at or above the failure threshold (with every -o format)
  64  usage error
  65  an input file cannot be read or parsed, or the input holds nothing to analyse
  69  cluster unreachable, nothing could be read, the namespace does not exist, or the
      run is incomplete (a read or an analyzer skipped: RBAC, error, timeout) and nothing
      reaches the threshold; --allow-incomplete accepts a partial result (exit 0)
  1   anything unexpected"
    };
}
