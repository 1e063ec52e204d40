//! Shell: programs run by argv (a shell only when asked), in their own process group, with
//! a filtered environment, a time limit that kills the whole group, and capped output.

#[cfg(target_os = "linux")]
mod contain;
pub(crate) mod environment;
mod process;
mod process_table;
mod pty;
mod read_process_output;
mod rules;
mod run_command;
mod spawn;
mod start_process;
mod stop_process;
mod tree_config;
mod wrappers;
mod write_process_input;

// What the web tools' untrusted text is shown through.
#[cfg(feature = "web")]
pub(crate) use process::visible;
pub use read_process_output::Until;
pub use read_process_output::{ProcessOutput, ReadProcessOutput};
pub use run_command::{CommandResult, RunCommand};
pub use spawn::EnvVar;
pub use start_process::{StartProcess, Started};
pub use stop_process::{StopProcess, Stopped};
pub use write_process_input::{Key, WriteProcessInput};
