//! The environment variables that change which code a program runs: flagged to the person
//! approving a command, and never accepted by a rule (a leaf: the settings check a rule's
//! `env` against it, and the rules a call's).

/// Whether setting the variable `name` changes which code a program runs (a library it
/// loads, a program it starts, a config that names one): flagged to the person approving,
/// never accepted by a rule.
pub(crate) fn changes_code(name: &str) -> bool {
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "GIT_CONFIG", "npm_config_", "NPM_CONFIG_"];
    CODE_CHANGING_ENV.contains(&name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || (name.starts_with("CARGO_TARGET_") && (name.ends_with("_RUNNER") || name.ends_with("_LINKER")))
}

/// Variables that change which code a program runs, or how its shell reads the script.
const CODE_CHANGING_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GCONV_PATH",
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "SHELL",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "BROWSER",
    "SSH_ASKPASS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_DIR",
    "GIT_COMMON_DIR",
    "GIT_TEMPLATE_DIR",
    "CC",
    "CXX",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_HOME",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTC",
    "CARGO_BUILD_RUSTDOC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTFLAGS",
];
