//! The config a command a rule lets through would read from the tree, kept from naming
//! the code it runs. A rule trusts the program it names, not programs the tree names
//! through that program's config: `git` runs with its config isolated as kyro's git tools
//! run it, and a rule never widens the sandbox of `cargo` while the tree holds config
//! cargo (or rustup, in front of it) reads, since cargo's cannot be turned off.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kyro_core::policy::SandboxMode;
use kyro_core::sandbox::{Sandbox, SandboxRequest};
use kyro_core::{ToolContext, ToolError};

use super::wrappers::{global_options, program_name, unwrap};
use crate::Failure;
// The settings fixed for every ruled `git`, and what a repository's own program-naming
// setting is set to: those of kyro's git tools, one table.
use crate::git::{FIXED as GIT_FIXED, neutral_value};
use crate::settings::CommandRule;

/// The command `argv` runs behind its wrappers, when its program is `name`: its
/// arguments.
fn command_of<'a>(argv: &'a [String], name: &str) -> Option<&'a [String]> {
    let program = unwrap(argv)?.command;
    let (first, args) = program.split_first()?;
    (program_name(first) == name).then_some(args)
}

/// The most of `git config --list` read, and how long it may take (a config file that is a
/// FIFO blocks git forever).
const CONFIG_CAP: u64 = 4 << 20;
const CONFIG_TIME: Duration = Duration::from_secs(10);

/// When the ruled command runs `git`: has it run with no system or global config, and
/// with every setting of the repository's own config that could name a program or an
/// outside file overridden (read first with `git config --list`, under git's sandbox, in
/// the same directory and with the call's options that locate the repository); a config
/// including another file is refused. `git` is the program the call would run.
pub(crate) fn isolate_git(
    cx: &ToolContext,
    argv: &[String],
    git: &Path,
    cwd: &Path,
    command: &mut std::process::Command,
) -> Result<(), ToolError> {
    let Some(args) = command_of(argv, "git") else {
        return Ok(());
    };
    let mut settings: Vec<(String, &str)> = GIT_FIXED.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
    for key in repository_settings(cx, git, &locating_options(global_options("git", args)), cwd)? {
        if key.starts_with("include.") || key.starts_with("includeif.") {
            return Err(Failure::UnsafeRepository {
                message: format!(
                    "the repository's config includes another file (`{key}`); a rule runs git only with its config isolated, and kyro reads no config from outside the repository: nothing was run"
                ),
            }
            .into());
        }
        if let Some(value) = neutral_value(&key) {
            settings.push((key, value));
        }
    }
    // Command-line settings outrank every config file: passed as key/value pairs (a
    // subsection holding `=` cannot split differently), with nothing of kyro's own
    // environment that git would read after them.
    command
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_COUNT", settings.len().to_string());
    for (i, (key, value)) in settings.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    Ok(())
}

/// The options of a git call that say which repository it works in (`-C`, `--git-dir`,
/// `--work-tree`, `--bare`), from its global options.
fn locating_options(options: &[String]) -> Vec<&str> {
    let mut kept = Vec::new();
    let mut words = options.iter().map(String::as_str);
    while let Some(word) = words.next() {
        match word {
            "-C" | "--git-dir" | "--work-tree" => {
                kept.push(word);
                kept.extend(words.next());
            }
            "-c" | "--namespace" | "--config-env" | "--attr-source" | "--super-prefix" => {
                words.next();
            }
            "--bare" => kept.push(word),
            _ if word.starts_with("--git-dir=") || word.starts_with("--work-tree=") => kept.push(word),
            _ => {}
        }
    }
    kept
}

/// The keys of every setting git reads in `cwd` with `options`, isolated as a ruled git
/// runs (no system or global config, nothing run), under git's sandbox (no writes, no
/// network).
fn repository_settings(cx: &ToolContext, git: &Path, options: &[&str], cwd: &Path) -> Result<Vec<String>, ToolError> {
    use std::io::Read;
    let failed = |message: String| -> ToolError {
        Failure::Git {
            command: "config".into(),
            message: format!("{message}; a rule runs git only once its repository's config is read: nothing was run"),
        }
        .into()
    };
    let mut config = std::process::Command::new(git);
    config
        .args(options)
        .args(["--no-pager", "config", "--list", "--null"])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", absolute_path_var())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_COUNT", GIT_FIXED.len().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (i, (key, value)) in GIT_FIXED.iter().enumerate() {
        config
            .env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    let sandbox = Sandbox::prepare(&SandboxRequest::repository(cx.scope(), &[])).map_err(|e| ToolError::Denied {
        reason: kyro_core::receipt::Denial::SandboxUnavailable { message: e.0 },
    })?;
    sandbox.apply(&mut config);
    let mut child = config
        .spawn()
        .map_err(|e| ToolError::io("read the config of", "git", &e))?;
    let (mut out, mut err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let readers = std::thread::spawn(move || {
        let (mut listed, mut said) = (Vec::new(), Vec::new());
        let _ = (&mut out).take(CONFIG_CAP + 1).read_to_end(&mut listed);
        let _ = (&mut err).take(64 << 10).read_to_end(&mut said);
        (listed, said)
    });
    let deadline = Instant::now() + CONFIG_TIME;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let (listed, said) = readers.join().unwrap_or_default();
    match status {
        None => {
            return Err(failed(format!(
                "git config took longer than {} s",
                CONFIG_TIME.as_secs()
            )));
        }
        Some(status) if !status.success() => {
            return Err(failed(String::from_utf8_lossy(&said).trim().to_owned()));
        }
        Some(_) if listed.len() as u64 > CONFIG_CAP => {
            return Err(failed(format!("the config is over {} MiB", CONFIG_CAP >> 20)));
        }
        Some(_) => {}
    }
    Ok(String::from_utf8_lossy(&listed)
        .split('\0')
        .filter(|entry| !entry.is_empty())
        .map(|entry| entry.split_once('\n').map_or(entry, |(key, _)| key).to_owned())
        .collect())
}

/// kyro's `PATH` with relative entries dropped, for git's own children.
fn absolute_path_var() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::env::split_paths(&path).filter(|dir| dir.is_absolute())).unwrap_or_default()
}

/// Refuses to give a ruled `cargo` the network or a wider sandbox mode than the policy's
/// while the tree holds config cargo reads (`.cargo/config.toml` or `.cargo/config` in
/// its directory or any above, but cargo's home's, which is the user's) or a
/// `rust-toolchain` file that could name a toolchain by path (rustup runs that `cargo`):
/// either can name programs cargo runs (`rustc-wrapper`, runners, linkers, credential
/// providers), and cargo has no switch that turns its config off. `widens` says whether
/// the rule widens this call's sandbox; `home` is cargo's home.
pub(crate) fn refuse_widening_for_cargo(
    rule: &CommandRule,
    argv: &[String],
    widens: bool,
    cwd: &Path,
    home: Option<&Path>,
) -> Result<(), ToolError> {
    let Some(args) = command_of(argv, "cargo").filter(|_| widens) else {
        return Ok(());
    };
    // `cargo -C DIR` reads its config from there.
    let mut dirs = vec![cwd.to_owned()];
    let options = global_options("cargo", args);
    for pair in options.windows(2) {
        if pair[0] == "-C" {
            dirs.push(cwd.join(&pair[1]));
        }
    }
    dirs.extend(
        options
            .iter()
            .filter_map(|o| o.strip_prefix("-C"))
            .filter(|d| !d.is_empty())
            .map(|d| cwd.join(d)),
    );
    let home = home.and_then(|h| h.canonicalize().ok());
    for dir in &dirs {
        if let Some(found) = config_above(dir, home.as_deref()) {
            return Err(Failure::TreeConfig {
                path: found.display().to_string(),
                message: format!(
                    "the rule `{}` {} would give cargo the network or a wider sandbox, but `{}` is config cargo (or rustup) reads from the tree, and it can name programs cargo runs (rustc-wrapper, runners, linkers, credential providers, a toolchain); kyro never widens the sandbox of code the tree names, and cargo's config cannot be turned off. Nothing was run: remove the file, or give this tree the network in the policy (`[sandbox] network = true`)",
                    rule.argv.key(),
                    serde_json::to_string(rule.argv.words()).unwrap_or_default(),
                    found.display()
                ),
            }
            .into());
        }
    }
    Ok(())
}

/// The first config cargo or rustup reads from `dir` or a directory above it: a
/// `.cargo/config(.toml)` outside cargo's `home`, or a `rust-toolchain(.toml)` that could
/// name a toolchain by path (it mentions `path`, a `/` or a `\`, or cannot be read).
fn config_above(dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    for place in dir.ancestors() {
        let cargo = place.join(".cargo");
        let is_home = home.is_some_and(|home| cargo.canonicalize().is_ok_and(|c| c == home));
        for name in ["config", "config.toml"] {
            let file = cargo.join(name);
            if !is_home && file.symlink_metadata().is_ok() {
                return Some(file);
            }
        }
        for name in ["rust-toolchain", "rust-toolchain.toml"] {
            let file = place.join(name);
            if file.symlink_metadata().is_err() {
                continue;
            }
            let names_a_path =
                std::fs::read_to_string(&file).map_or(true, |text| text.contains("path") || text.contains(['/', '\\']));
            if names_a_path {
                return Some(file);
            }
        }
    }
    None
}

/// Whether a rule's `network` and `sandbox` widen what the policy gives a call.
pub(crate) fn widens(rule: &CommandRule, network: bool, mode: SandboxMode) -> bool {
    (rule.network && !network) || rule.sandbox.is_some_and(|wider| wider > mode)
}

#[cfg(test)]
mod tests {
    use super::{config_above, locating_options};

    #[test]
    fn only_the_options_that_locate_the_repository_are_kept_for_reading_its_config() {
        let options: Vec<String> = ["-C", "sub", "-c", "a.b=c", "--git-dir=.git", "-P", "--work-tree", "."]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        assert_eq!(
            locating_options(&options),
            ["-C", "sub", "--git-dir=.git", "--work-tree", "."]
        );
    }

    #[test]
    fn cargo_config_and_a_toolchain_by_path_are_found_above_the_directory_but_cargo_home() {
        let tree = tempfile::tempdir().unwrap();
        let deep = tree.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(config_above(&deep, None), None);
        std::fs::write(
            tree.path().join("rust-toolchain.toml"),
            "[toolchain]\nchannel = \"1.80\"\n",
        )
        .unwrap();
        assert_eq!(config_above(&deep, None), None, "a channel names no program");
        std::fs::write(
            tree.path().join("a/rust-toolchain.toml"),
            "[toolchain]\n\"p\\u0061th\" = \"x\"\n",
        )
        .unwrap();
        assert_eq!(
            config_above(&deep, None),
            Some(tree.path().join("a/rust-toolchain.toml"))
        );
        std::fs::remove_file(tree.path().join("a/rust-toolchain.toml")).unwrap();
        std::fs::create_dir(tree.path().join(".cargo")).unwrap();
        std::fs::write(tree.path().join(".cargo/config.toml"), "").unwrap();
        let found = config_above(&deep, None).unwrap();
        assert!(found.ends_with(".cargo/config.toml"), "{found:?}");
        let home = tree.path().join(".cargo").canonicalize().unwrap();
        assert_eq!(config_above(&deep, Some(&home)), None, "cargo's home is the user's");
    }
}
