//! Running `git` safely inside the workspace.

use crate::Failure;
use kyro_core::receipt::ObservedEffect;
use kyro_core::sandbox::{Sandbox, SandboxRequest};
use kyro_core::{ConfinedPath, ToolContext, ToolError, WorkspacePath};

/// A repository inside the workspace.
pub(crate) struct Repo {
    dir: std::path::PathBuf,
    given: String,
    /// Where git may write: the work tree, the git directory and the common directory,
    /// once located (nothing before).
    writable: Vec<std::path::PathBuf>,
    /// The repository's own settings that kyro overrides, with the value it sets.
    overrides: Vec<(String, &'static str)>,
}

/// The most git may print for one command (stdout); past it git is killed and the call
/// fails, so a huge log or diff never fills memory.
const MAX_OUTPUT: usize = if cfg!(test) { 64 << 10 } else { 32 << 20 };

/// Options for every git command.
const OPTIONS: &[&str] = &["--no-pager", "--no-optional-locks"];

/// Settings kyro fixes for every command (of its git tools, and a ruled `git` of the shell),
/// whatever the repository says: nothing it names
/// runs (hooks, fsmonitor, editors, signing, credential helpers, external diff), no file
/// outside the repository is read (attributes, excludes, ignore-revs), planted bare
/// repositories are not discovered, submodules are not entered.
pub(crate) const FIXED: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.sshCommand", ""),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.pager", ""),
    ("core.askPass", ""),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("protocol.ext.allow", "never"),
    ("safe.bareRepository", "explicit"),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", ""),
    ("diff.ignoreSubmodules", "dirty"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
];

/// What kyro sets a repository's own setting to, when that setting could name a program
/// or a file outside the repository (filter and diff drivers, textconv, merge drivers,
/// signing programs, helpers, pagers, `*.command`, `*.program`, `*.cmd`, ...).
///
/// `key` is as `git config --list` prints it: section and variable lowercased.
pub(crate) fn neutral_value(key: &str) -> Option<&'static str> {
    let (section, rest) = key.split_once('.')?;
    let variable = rest.rsplit('.').next().unwrap_or(rest);
    match section {
        "pager" => return Some("false"),
        // An empty alias is refused by git: `git st` runs nothing the tree wrote.
        "alias" => return Some(""),
        _ => {}
    }
    Some(match variable {
        "clean"
        | "smudge"
        | "process"
        | "textconv"
        | "command"
        | "cmd"
        | "driver"
        | "program"
        | "helper"
        | "pager"
        | "askpass"
        | "sshcommand"
        | "gitproxy"
        | "uploadpack"
        | "receivepack"
        | "vcs"
        | "external"
        | "defaultkeycommand"
        | "packobjectshook"
        | "alternaterefscommand"
        | "browser"
        | "path"
        | "tool" => "",
        "editor" => ":",
        "fsmonitor" | "required" | "showsignature" | "gpgsign" => "false",
        "hookspath" | "attributesfile" | "excludesfile" | "allowedsignersfile" | "revocationfile" | "template"
        | "file" => "/dev/null",
        _ => return None,
    })
}

/// The `git` kyro runs: found once, on kyro's `PATH` at its absolute entries only, so a
/// `git` planted in the workspace never runs whatever the working directory.
fn git_program() -> Result<&'static std::path::Path, ToolError> {
    static GIT: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    GIT.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("git"))
            .find(|candidate| {
                candidate
                    .metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
    .as_deref()
    .ok_or_else(|| ToolError::NotFound { path: "git".into() })
}

/// kyro's `PATH` with relative entries dropped, for git's own children.
fn absolute_path_var() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&path).filter(|dir| dir.is_absolute())).unwrap_or_default()
}

/// The refusal when `listed` (NUL-separated paths `what` holds) names a `.kyro` file.
fn kyro_listed(what: &str, listed: &str) -> Result<(), ToolError> {
    match listed.split('\0').find(|p| !p.is_empty()) {
        Some(first) => Err(Failure::UnsafeRepository {
            message: format!(
                "`{what}` tracks `{first}`: git never writes kyro's `.kyro` directory; remove it from there first"
            ),
        }
        .into()),
        None => Ok(()),
    }
}

/// Refuses a revision that could be read as an option (the schema already does; this is
/// the second lock).
pub(crate) fn revision(value: &str) -> Result<&str, ToolError> {
    if value.is_empty() || value.starts_with('-') || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Failure::InvalidRequest {
            message: format!("`{value}` is not a revision"),
        }
        .into());
    }
    Ok(value)
}

impl Repo {
    /// The repository at `path` (default the workspace root). Its work tree, its git
    /// directory and its common directory must all be inside the roots (a `.git` file or
    /// `core.worktree` pointing elsewhere is refused), its config may include no other
    /// file, and every setting in it that could name a program or an outside file is
    /// overridden for each command.
    pub fn open(cx: &ToolContext, path: Option<&WorkspacePath>) -> Result<Repo, ToolError> {
        let confined: ConfinedPath = cx.path(path.unwrap_or(&WorkspacePath::new(".")))?;
        let dir = confined.host_content_path();
        let mut repo = Repo {
            dir: dir.clone(),
            given: confined.given().to_owned(),
            writable: Vec::new(),
            overrides: Vec::new(),
        };
        // rev-parse and config read settings without acting on any of them.
        let located = repo.run(
            cx,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--show-toplevel",
                "--absolute-git-dir",
                "--git-common-dir",
            ],
            None,
        )?;
        let roots = cx.scope().roots();
        let mut writable = Vec::new();
        for place in located.lines() {
            let place = std::path::Path::new(place);
            let real = place.canonicalize().unwrap_or_else(|_| place.to_path_buf());
            if !roots.iter().any(|r| real.starts_with(r.path())) {
                return Err(ToolError::OutsideWorkspace {
                    path: real.display().to_string(),
                });
            }
            writable.push(real);
        }
        repo.writable = writable;
        let config = repo.run(cx, &["config", "--list", "--null"], None)?;
        for entry in config.split('\0').filter(|e| !e.is_empty()) {
            let key = entry.split_once('\n').map_or(entry, |(key, _)| key);
            if key.starts_with("include.") || key.starts_with("includeif.") {
                return Err(Failure::UnsafeRepository {
                    message: format!(
                        "the repository's config includes another file (`{key}`); kyro reads no config from outside the repository"
                    ),
                }.into());
            }
            if let Some(value) = neutral_value(key) {
                repo.overrides.push((key.to_owned(), value));
            }
        }
        Ok(repo)
    }

    /// Feeds `stdin`, reads the output (stdout up to [`MAX_OUTPUT`], stderr up to 64 KiB) and
    /// reaps the child; killed when the call is stopped or the output is over the cap.
    fn collect(
        &self,
        cx: &ToolContext,
        child: &mut std::process::Child,
        args: &[&str],
        stdin: &str,
    ) -> Result<std::process::Output, ToolError> {
        use std::io::{Read, Write};
        use std::sync::{Arc, Mutex};
        let pid = rustix::process::Pid::from_child(child);
        // True until the child exited; it is reaped only after this turns false, so the
        // kill below never reaches a process that reused the pid.
        let alive = Arc::new(Mutex::new(true));
        let kill = {
            let alive = alive.clone();
            move || {
                if *alive.lock().unwrap_or_else(|e| e.into_inner()) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        };
        let _on_stop = cx.stop().on_stop(kill.clone());
        let (mut out, mut err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
        let mut pipe = child.stdin.take().expect("piped");
        let input = stdin.to_owned();
        let side = std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
            drop(pipe);
            let mut kept = Vec::new();
            let _ = (&mut err).take(64 * 1024).read_to_end(&mut kept);
            let _ = std::io::copy(&mut err, &mut std::io::sink());
            kept
        });
        let mut stdout = Vec::new();
        let read = (&mut out).take(MAX_OUTPUT as u64 + 1).read_to_end(&mut stdout);
        let over = stdout.len() > MAX_OUTPUT;
        if over {
            kill();
        }
        drop(out);
        let stderr = side.join().unwrap_or_default();
        let exited = rustix::process::waitid(
            rustix::process::WaitId::Pid(pid),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        );
        *alive.lock().unwrap_or_else(|e| e.into_inner()) = false;
        let _ = exited;
        let status = child.wait().map_err(|e| ToolError::io("run git in", &self.given, &e))?;
        cx.stop().check()?;
        read.map_err(|e| ToolError::io("read git's output in", &self.given, &e))?;
        if over {
            return Err(Failure::Git {
                command: args.first().copied().unwrap_or_default().to_owned(),
                message: format!(
                    "git printed more than {} KiB; ask for less (fewer commits, a path, a smaller range)",
                    MAX_OUTPUT >> 10
                ),
            }
            .into());
        }
        Ok(std::process::Output { status, stdout, stderr })
    }

    /// The `-c` options giving kyro's own identity to a command that records one (a
    /// commit, an annotated tag, a stash) when the repository's config has none.
    pub fn identity(&self, cx: &ToolContext) -> &'static [&'static str] {
        if self.run(cx, &["config", "user.email"], None).is_ok() {
            &[]
        } else {
            &["-c", "user.name=kyro", "-c", "user.email=kyro@localhost"]
        }
    }

    /// Refuses to bring `revision`'s tree (or a stash's) into the work tree when it holds a
    /// root's `.kyro`: kyro's state is never written by git, whatever a branch, a commit or
    /// a stash carries. A revision git cannot read is left to the command itself to report.
    pub fn refuse_kyro_from(&self, cx: &ToolContext, revisions: &[&str]) -> Result<(), ToolError> {
        let places = self.kyro_places(cx);
        if places.is_empty() {
            return Ok(());
        }
        for revision in revisions {
            let mut args = vec![
                "ls-tree",
                "-r",
                "--name-only",
                "-z",
                "--full-tree",
                "--end-of-options",
                revision,
                "--",
            ];
            args.extend(places.iter().map(String::as_str));
            let Ok(listed) = self.run(cx, &args, None) else {
                continue;
            };
            kyro_listed(revision, &listed)?;
        }
        Ok(())
    }

    /// Refuses when the index holds a root's `.kyro` (a stash push would write it back).
    pub fn refuse_kyro_in_index(&self, cx: &ToolContext) -> Result<(), ToolError> {
        let places = self.kyro_places(cx);
        if places.is_empty() {
            return Ok(());
        }
        let mut args = vec!["ls-files", "-z", "--full-name", "--cached", "--"];
        let top = self
            .writable
            .first()
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let absolute: Vec<String> = places.iter().map(|p| format!("{top}/{p}")).collect();
        args.extend(absolute.iter().map(String::as_str));
        let listed = self.run(cx, &args, None)?;
        kyro_listed("the index", &listed)
    }

    /// Each root's `.kyro` inside the work tree, relative to its top.
    fn kyro_places(&self, cx: &ToolContext) -> Vec<String> {
        let Some(top) = self.writable.first() else {
            return Vec::new();
        };
        cx.scope()
            .roots()
            .iter()
            .filter_map(|root| root.path().strip_prefix(top).ok())
            .map(|inside| inside.join(".kyro").to_string_lossy().into_owned())
            .collect()
    }

    /// Runs git with `args`; stdout on success, a typed error with stderr otherwise.
    pub fn run(&self, cx: &ToolContext, args: &[&str], stdin: Option<&str>) -> Result<String, ToolError> {
        let mut command = std::process::Command::new(git_program()?);
        command
            .args(OPTIONS)
            .args(args)
            .current_dir(&self.dir)
            .env_clear()
            .env("PATH", absolute_path_var())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // Command-line settings outrank every config file; passed as key/value pairs so a
        // subsection holding `=` cannot split differently.
        let settings = FIXED
            .iter()
            .map(|&(k, v)| (k, v))
            .chain(self.overrides.iter().map(|(k, v)| (k.as_str(), *v)));
        let mut count = 0;
        for (key, value) in settings {
            command
                .env(format!("GIT_CONFIG_KEY_{count}"), key)
                .env(format!("GIT_CONFIG_VALUE_{count}"), value);
            count += 1;
        }
        command.env("GIT_CONFIG_COUNT", count.to_string());
        let sandbox = Sandbox::prepare(&SandboxRequest::repository(cx.scope(), &self.writable)).map_err(|e| {
            ToolError::Denied {
                reason: kyro_core::receipt::Denial::SandboxUnavailable { message: e.0 },
            }
        })?;
        sandbox.apply(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| ToolError::io("run git in", &self.given, &e))?;
        let output = self.collect(cx, &mut child, args, stdin.unwrap_or_default());
        let mut argv = vec!["git".to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        cx.effects().push(ObservedEffect::Process {
            argv,
            exit_code: output.as_ref().ok().and_then(|o| o.status.code()),
            sandbox: sandbox.description().to_owned(),
        });
        let output = output?;
        if !output.status.success() {
            return Err(Failure::Git {
                command: args.first().copied().unwrap_or_default().to_owned(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            }
            .into());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::neutral_value;

    #[test]
    fn git_output_past_the_cap_kills_git_and_fails_the_call() {
        let ws = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let done = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(ws.path())
                .output()
                .unwrap();
            assert!(done.status.success(), "{done:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(ws.path().join("big.txt"), "a line of text\n".repeat(10_000)).unwrap();
        git(&["add", "big.txt"]);
        git(&["commit", "-q", "-m", "big"]);
        let error = crate::testing::failed(crate::testing::call(
            ws.path(),
            "git_show",
            serde_json::json!({"revision": "HEAD"}),
        ));
        let message = error.to_string();
        assert!(message.contains("git printed more than 64 KiB"), "{message}");
        // Under the cap, the same repository answers.
        let log = crate::testing::call(ws.path(), "git_log", serde_json::json!({}));
        assert!(matches!(log, kyro_core::Outcome::Ok { .. }), "{log:?}");
    }

    #[test]
    fn program_and_file_settings_and_aliases_are_neutralized_whatever_their_driver_name() {
        for key in [
            "filter.evil.clean",
            "filter.evil.smudge",
            "filter.a=b.process",
            "diff.x.textconv",
            "diff.x.command",
            "merge.m.driver",
            "gpg.ssh.program",
            "gpg.ssh.defaultkeycommand",
            "credential.https://h.example.helper",
            "core.editor",
            "pager.log",
            "uploadpack.packobjectshook",
            "gpg.ssh.allowedsignersfile",
            "mailmap.file",
            "core.hookspath",
            "log.showsignature",
            "commit.gpgsign",
            "alias.st",
            "pager.status",
        ] {
            assert!(neutral_value(key).is_some(), "{key} must be overridden");
        }
        for key in [
            "user.name",
            "core.bare",
            "diff.renames",
            "core.autocrlf",
            "remote.origin.url",
        ] {
            assert_eq!(neutral_value(key), None, "{key} is harmless");
        }
    }
}
