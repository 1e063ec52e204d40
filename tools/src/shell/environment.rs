//! The environment variables that change which code a program runs: flagged to the person
//! approving a command, and never accepted by a rule (a leaf: the settings check a rule's
//! `env` against it, and the rules a call's).
//!
//! A deny list, not an allow list of harmless names: what a call may set and still be
//! ruled is already an allow list, the rule's own `env` (empty by default), written by the
//! policy's author for the project (`DATABASE_URL`, `APP_ENV`, `RUST_LOG`). This list only
//! keeps the author from putting a code-changing name there, so it names what changes code:
//! single names, and whole families (`PYTHON*`, `CARGO_*`, `RUSTUP_*`, `BUNDLE_*`, ...)
//! whose members mostly do, each but the few of its members that are named harmless.

/// Whether setting the variable `name` changes which code a program runs (a library it
/// loads, a program it starts, a config or a search path that names one): flagged to the
/// person approving, never accepted by a rule.
pub(crate) fn changes_code(name: &str) -> bool {
    CODE_CHANGING_ENV.contains(&name)
        || CODE_CHANGING_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || CODE_CHANGING_FAMILIES.iter().any(|(family, harmless)| {
            name.starts_with(family)
                && !harmless
                    .iter()
                    .any(|h| *h == name || (h.ends_with('_') && name.starts_with(h)))
        })
}

/// Families whose every member changes which code runs (a tool's whole config read from
/// the environment, library and load paths, dynamic-loader settings).
const CODE_CHANGING_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_CONFIG",
    "npm_config_",
    "NPM_CONFIG_",
    "YARN_",
    "COREPACK_",
    "RUSTUP_",
    "BUNDLE_",
    "GEM_",
    "PIP_",
    "UV_",
    "JAVA_",
    "LUA_",
    "BASH_FUNC_",
    "CORECLR_",
];

/// Families most of whose members change which code runs, with the members that do not
/// (a name ending in `_` covers every name it starts).
const CODE_CHANGING_FAMILIES: &[(&str, &[&str])] = &[
    // Interpreter settings: paths it imports from (`PYTHONUSERBASE` runs a `.pth`), a
    // startup file, a breakpoint hook, a warnings category it imports.
    (
        "PYTHON",
        &[
            "PYTHONUNBUFFERED",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONIOENCODING",
            "PYTHONHASHSEED",
            "PYTHONUTF8",
            "PYTHONFAULTHANDLER",
            "PYTHONNOUSERSITE",
            "PYTHONSAFEPATH",
            "PYTHONDEVMODE",
            "PYTHONTRACEMALLOC",
            "PYTHONOPTIMIZE",
            "PYTHONWARNDEFAULTENCODING",
            "PYTHONINTMAXSTRDIGITS",
            "PYTHONCOERCECLOCALE",
        ],
    ),
    // Every cargo config key can be set as `CARGO_<KEY>`: wrappers, runners, linkers,
    // rustflags (`-C linker=`), credential providers, aliases.
    (
        "CARGO_",
        &[
            "CARGO_TERM_",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET_DIR",
            "CARGO_NET_OFFLINE",
            "CARGO_NET_RETRY",
            "CARGO_HTTP_TIMEOUT",
            "CARGO_LOG",
        ],
    ),
];

/// Variables that change which code a program runs, or how its shell reads the script.
const CODE_CHANGING_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    "SHELL",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "IFS",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESS",
    "LESSKEY",
    "LESSKEYIN",
    "LESSOPEN",
    "LESSCLOSE",
    "VIMINIT",
    "GVIMINIT",
    "EXINIT",
    "EMACSLOADPATH",
    "BROWSER",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "GNUPGHOME",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "CLASSPATH",
    "MAVEN_OPTS",
    "MAVEN_ARGS",
    "GRADLE_OPTS",
    "GRADLE_USER_HOME",
    "SBT_OPTS",
    "ANT_OPTS",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "R_LIBS",
    "R_LIBS_USER",
    "ERL_FLAGS",
    "ERL_AFLAGS",
    "ERL_ZFLAGS",
    "ERL_LIBS",
    "JULIA_LOAD_PATH",
    "JULIA_DEPOT_PATH",
    "DOTNET_STARTUP_HOOKS",
    "DOTNET_ADDITIONAL_DEPS",
    "DOTNET_ROOT",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "GOCACHE",
    "GOENV",
    "GOWORK",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOINSECURE",
    "GOPRIVATE",
    "GONOPROXY",
    "KUBECONFIG",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "AWS_CONFIG_FILE",
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
    "MAKEFILES",
    "MAKEFLAGS",
    "MFLAGS",
    "GNUMAKEFLAGS",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "FC",
    "RANLIB",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "COMPILER_PATH",
    "GCC_EXEC_PREFIX",
    "PKG_CONFIG",
    "PKG_CONFIG_PATH",
    "PKG_CONFIG_LIBDIR",
    "CMAKE_TOOLCHAIN_FILE",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
];

#[cfg(test)]
mod tests {
    use super::changes_code;

    #[test]
    fn code_changing_variables_are_named_and_harmless_family_members_are_not() {
        for name in [
            "PYTHONUSERBASE",
            "PYTHONPATH",
            "PYTHONBREAKPOINT",
            "PYTHONWARNINGS",
            "JDK_JAVA_OPTIONS",
            "_JAVA_OPTIONS",
            "JAVA_TOOL_OPTIONS",
            "RUSTUP_TOOLCHAIN",
            "MAKEFILES",
            "GEM_PATH",
            "CLASSPATH",
            "BUNDLE_GEMFILE",
            "CARGO_HOME",
            "CARGO_BUILD_RUSTC_WRAPPER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_ALIAS_B",
            "CARGO_REGISTRY_CREDENTIAL_PROVIDER",
            "LD_PRELOAD",
            "GIT_CONFIG_COUNT",
        ] {
            assert!(changes_code(name), "{name}");
        }
        for name in [
            "RUST_LOG",
            "RUST_BACKTRACE",
            "CARGO_TERM_COLOR",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "PYTHONUNBUFFERED",
            "PYTHONDONTWRITEBYTECODE",
            "NODE_ENV",
            "NO_COLOR",
            "TERM",
            "DATABASE_URL",
        ] {
            assert!(!changes_code(name), "{name}");
        }
    }
}
