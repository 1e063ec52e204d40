//! What a call asks to run: its argv (or a script for `sh -c`), working directory and
//! variables. A leaf, read by the rules that decide it and the code that starts it.

use kyro_core::WorkspacePath;

/// An environment variable.
#[kyro_core::input]
#[derive(Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// The variable's name.
    #[schemars(regex(pattern = "^[A-Za-z_][A-Za-z0-9_]{0,127}$"))]
    pub name: String,
    /// Its value.
    #[schemars(length(max = 32768))]
    pub value: String,
}

/// What to run.
pub(crate) struct Spawn<'a> {
    pub argv: &'a [String],
    pub shell: bool,
    pub cwd: Option<&'a WorkspacePath>,
    pub env: &'a [EnvVar],
    /// Whether input is fed on stdin: a program read from there (`python3`, `sh -s`) is
    /// code no rule names.
    pub input: bool,
    /// Under a pseudo-terminal (`start_process` with `tty`).
    pub tty: bool,
}
