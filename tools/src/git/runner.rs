//! Running `git` safely inside the workspace.

use kyro_core::receipt::ObservedEffect;
use kyro_core::{ConfinedPath, ToolContext, ToolError, WorkspacePath};

/// A repository inside the workspace.
pub(crate) struct Repo {
    dir: std::path::PathBuf,
    given: String,
}

/// Options that neutralize repository-controlled execution.
const HARDENING: &[&str] = &[
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "core.sshCommand=false",
    "-c",
    "diff.external=",
    "--no-optional-locks",
];

/// Refuses a revision that could be read as an option (the schema already does; this is
/// the second lock).
pub(crate) fn revision(value: &str) -> Result<&str, ToolError> {
    if value.is_empty() || value.starts_with('-') || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ToolError::Evaluation {
            message: format!("`{value}` is not a revision"),
        });
    }
    Ok(value)
}

impl Repo {
    /// The repository at `path` (default the workspace root), whose top level must be
    /// inside the workspace.
    pub fn open(cx: &ToolContext, path: Option<&WorkspacePath>) -> Result<Repo, ToolError> {
        let confined: ConfinedPath = cx.path(path.unwrap_or(&WorkspacePath::new(".")))?;
        let dir = confined.host_content_path();
        let repo = Repo {
            dir: dir.clone(),
            given: confined.given().to_owned(),
        };
        let top = repo.run(cx, &["rev-parse", "--show-toplevel"], None)?;
        let top = std::path::PathBuf::from(top.trim_end());
        let roots = cx.scope().roots();
        if !roots.iter().any(|r| top.starts_with(r.path())) {
            return Err(ToolError::OutsideWorkspace {
                path: top.display().to_string(),
            });
        }
        Ok(repo)
    }

    /// Runs git with `args`; stdout on success, a typed error with stderr otherwise.
    pub fn run(&self, cx: &ToolContext, args: &[&str], stdin: Option<&str>) -> Result<String, ToolError> {
        use std::io::Write;
        let mut command = std::process::Command::new("git");
        command
            .args(HARDENING)
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(home) = std::env::var_os("HOME") {
            command.env("HOME", home);
        }
        let mut child = command
            .spawn()
            .map_err(|e| ToolError::io("run git in", &self.given, &e))?;
        if let Some(mut pipe) = child.stdin.take() {
            let _ = pipe.write_all(stdin.unwrap_or_default().as_bytes());
        }
        let output = child
            .wait_with_output()
            .map_err(|e| ToolError::io("run git in", &self.given, &e))?;
        let mut argv = vec!["git".to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        cx.effects().push(ObservedEffect::Process {
            argv,
            exit_code: output.status.code(),
        });
        if !output.status.success() {
            return Err(ToolError::Git {
                command: args.first().copied().unwrap_or_default().to_owned(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}
