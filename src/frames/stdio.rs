//! kyro's own standard input and output as async streams: a pipe through the runtime's
//! poller, anything else (a file, a terminal) through tokio's blocking reader and writer.

use tokio::io::{AsyncRead, AsyncWrite};

/// Standard input: a pipe is read through the runtime's poller; anything else (a file, a
/// terminal) through tokio's blocking reader.
pub(super) fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::io::stdin());
    match dup_pipe(fd).map(tokio::net::unix::pipe::Receiver::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdin()),
    }
}

/// Standard output, as [`stdin`] reads standard input.
pub(super) fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::io::stdout());
    match dup_pipe(fd).map(tokio::net::unix::pipe::Sender::from_owned_fd) {
        Some(Ok(pipe)) => Box::new(pipe),
        _ => Box::new(tokio::io::stdout()),
    }
}

/// A duplicate of `fd` when it is a pipe, for the runtime's poller (which puts it in
/// non-blocking mode: the pipe is the one the client made for kyro, and what kyro starts
/// never inherits kyro's stdin or stdout).
fn dup_pipe(fd: std::os::fd::RawFd) -> Option<std::os::fd::OwnedFd> {
    use std::os::unix::fs::FileTypeExt;
    // SAFETY: fd 0 and 1 stay open for the life of the process.
    let duplicate = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .ok()?;
    let file = std::fs::File::from(duplicate);
    file.metadata()
        .ok()
        .filter(|m| m.file_type().is_fifo())
        .map(|_| file.into())
}
