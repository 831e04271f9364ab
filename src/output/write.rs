//! The one stdout writer: a closed pipe (`| head`) ends the output quietly, any other failure
//! is returned.

use std::io::Write;

/// Writes the whole result to stdout and flushes it.
pub fn stdout(text: &str) -> std::io::Result<()> {
    stdout_with(|out| out.write_all(text.as_bytes()))
}

/// Writes a result to stdout as `write` produces it, buffered, and flushes it: for documents too
/// large to hold twice (the whole text beside what it is written from).
pub fn stdout_with(
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}
