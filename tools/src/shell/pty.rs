//! Pseudo-terminals for `start_process` with `tty: true`: the program's stdin, stdout and
//! stderr are one terminal's side, kyro holds the other, and what the program prints is
//! read back as plain text (the terminal's escape sequences taken out).

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;

use rustix::fs::{Mode, OFlags};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Winsize, tcsetwinsize};

/// Both sides of a new terminal, 80 columns by 24 rows.
pub(crate) struct Pty {
    /// kyro's side: what is written here is typed; what the program prints is read here.
    pub controller: OwnedFd,
    /// The program's side.
    pub terminal: OwnedFd,
}

/// Opens a terminal pair.
pub(crate) fn open() -> std::io::Result<Pty> {
    // Closed on exec, so no other program started meanwhile holds it (atomically where
    // the system allows).
    #[cfg(target_os = "linux")]
    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    #[cfg(not(target_os = "linux"))]
    let controller = {
        let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
        rustix::io::fcntl_setfd(&controller, rustix::io::FdFlags::CLOEXEC)?;
        controller
    };
    grantpt(&controller)?;
    unlockpt(&controller)?;
    let name = ptsname(&controller, Vec::new())?;
    let terminal = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    tcsetwinsize(
        &terminal,
        Winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok(Pty { controller, terminal })
}

/// Gives `command` the terminal as stdin, stdout and stderr, and makes it the program's
/// controlling terminal (so Ctrl-C typed there interrupts it). Registered after the
/// sandbox's own steps, so it runs in the process that goes on to exec the program.
pub(crate) fn attach(command: &mut std::process::Command, terminal: &OwnedFd) -> std::io::Result<()> {
    command
        .stdin(terminal.try_clone()?)
        .stdout(terminal.try_clone()?)
        .stderr(terminal.try_clone()?);
    // SAFETY: setsid and ioctl are async-signal-safe system calls, on the child's own fd 0.
    unsafe {
        command.pre_exec(|| {
            // A session of its own, led by the program (where it leads one already, that
            // fails and changes nothing), with the terminal as its controlling one.
            let _ = rustix::process::setsid();
            let _ = rustix::process::ioctl_tiocsctty(std::os::fd::BorrowedFd::borrow_raw(0));
            Ok(())
        });
    }
    Ok(())
}

/// What a program printed on a terminal, as text: escape sequences (colours, cursor
/// moves, bracketed paste, titles) taken out and CR-LF line ends made LF (the caller
/// makes any other control character visible, as for piped output).
pub(crate) fn terminal_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~ (64 at most:
                // an unended one does not swallow the rest of the output).
                Some('[') => {
                    let mut taken = String::new();
                    let ended = chars.by_ref().take(64).any(|c| {
                        taken.push(c);
                        ('@'..='~').contains(&c)
                    });
                    if !ended {
                        out.push_str("\u{1b}[");
                        out.push_str(&taken);
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ESC \ (4096 at most).
                Some(kind @ (']' | 'P' | 'X' | '^' | '_')) => {
                    let mut taken = String::new();
                    let mut ended = false;
                    while taken.len() < 4096 {
                        let Some(c) = chars.next() else { break };
                        if c == '\u{7}' {
                            ended = true;
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            ended = true;
                            break;
                        }
                        taken.push(c);
                    }
                    if !ended {
                        out.push('\u{1b}');
                        out.push(kind);
                        out.push_str(&taken);
                    }
                }
                // Character set choices take one more character.
                Some('(' | ')' | '*' | '+') => {
                    chars.next();
                }
                // Any other two-character sequence (keypad modes, save and restore).
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn escape_sequences_are_taken_out_and_line_ends_made_plain() {
        let printed = b"\x1b[?2004h>>> print(1)\r\n1\r\n\x1b[1;32mok\x1b[0m \x1b]0;title\x07done\x1b(B\r\n\x07";
        assert_eq!(super::terminal_text(printed), ">>> print(1)\n1\nok done\n\u{7}");
    }

    #[test]
    fn an_unended_sequence_hides_nothing_after_it() {
        // Shown (made visible by the caller), not dropped with the rest of the output.
        let text = super::terminal_text(b"before \x1b]0;title never ended\nafter");
        assert!(text.contains("never ended\nafter"), "{text:?}");
        let text = super::terminal_text(format!("\x1b[{}x", "1;".repeat(100)).as_bytes());
        assert!(text.ends_with('x') && text.len() > 100, "{text:?}");
    }

    #[test]
    fn a_terminal_pair_opens_with_its_size() {
        let pty = super::open().unwrap();
        let size = rustix::termios::tcgetwinsize(&pty.terminal).unwrap();
        assert_eq!((size.ws_col, size.ws_row), (80, 24));
    }
}
