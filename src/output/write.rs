//! The one stdout writer: a closed pipe (`| head`) ends the output quietly, any other failure
//! is returned.

use std::io::Write;

/// Writes the whole result to stdout and flushes it.
pub fn stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}
