//! `--upstream NAME='CMD ARGS'`: an upstream server's name, command line and environment.

/// The variables an upstream gets from kyro's own environment whatever its spec says (the
/// ones `run_command` passes); every other one (`GITHUB_TOKEN`, `AWS_*`, ...) stays out
/// unless the spec passes it by name.
pub(crate) const INHERITED: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "TERM",
];

/// The word before the command that passes variables through: `--pass-env=A,B`.
const PASS_ENV: &str = "--pass-env=";

/// One `--upstream` argument, parsed.
#[derive(Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// The name tools are registered under (`NAME.tool`).
    pub name: String,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// Variables set for it, values as given (`VAR=VALUE` words before the command).
    pub env: Vec<(String, String)>,
    /// Variables passed through from kyro's environment, when set there (`--pass-env=A,B`
    /// words before the command), besides the few every upstream inherits (`PATH`,
    /// `HOME`, locale, `TZ`, `TMPDIR`, `USER`, `TERM`).
    pub pass_env: Vec<String>,
}

impl std::fmt::Debug for UpstreamSpec {
    /// The values of `env` are left out: they are often credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("UpstreamSpec")
            .field("name", &self.name)
            .field("argv", &self.argv)
            .field("env", &set)
            .field("pass_env", &self.pass_env)
            .finish()
    }
}

/// Whether `name` is an environment variable's name (`[A-Za-z_][A-Za-z0-9_]*`, at most 128).
fn variable_name(name: &str) -> bool {
    name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a word before the command says what the environment holds (`VAR=VALUE`,
/// `--pass-env=A,B`) rather than being the command.
fn setting(word: &str) -> bool {
    word.starts_with(PASS_ENV) || word.split_once('=').is_some_and(|(name, _)| variable_name(name))
}

impl std::str::FromStr for UpstreamSpec {
    type Err = String;

    /// `NAME=[VAR=VALUE ...] [--pass-env=A,B ...] CMD ARGS`, the command split like a shell
    /// would (quotes, no expansion). The words before the command set variables for it
    /// (`VAR=VALUE`) and pass variables of kyro's own environment through by name
    /// (`--pass-env=A,B`); nothing else of that environment reaches it but `PATH`, `HOME`,
    /// locale, `TZ`, `TMPDIR`, `USER` and `TERM`.
    fn from_str(text: &str) -> Result<UpstreamSpec, String> {
        let (name, command) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: expected NAME='CMD ARGS'"))?;
        let valid = name.len() <= 32
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            return Err(format!(
                "upstream name `{name}`: lowercase letters, digits and `_`, starting with a letter, at most 32"
            ));
        }
        let mut words = shell_words::split(command).map_err(|e| format!("upstream `{name}`: {e}"))?;
        let settings = words.iter().take_while(|word| setting(word)).count();
        let argv = words.split_off(settings);
        if argv.is_empty() {
            return Err(format!("upstream `{name}` has no command"));
        }
        let (mut env, mut pass_env) = (Vec::new(), Vec::new());
        for word in words {
            if let Some(names) = word.strip_prefix(PASS_ENV) {
                for variable in names.split(',') {
                    if !variable_name(variable) {
                        return Err(format!(
                            "upstream `{name}`: `{variable}` in {PASS_ENV}... is not a variable name"
                        ));
                    }
                    pass_env.push(variable.to_owned());
                }
            } else if let Some((variable, value)) = word.split_once('=') {
                env.push((variable.to_owned(), value.to_owned()));
            }
        }
        Ok(UpstreamSpec {
            name: name.to_owned(),
            argv,
            env,
            pass_env,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::UpstreamSpec;

    #[test]
    fn specs_parse_like_a_shell_and_names_are_checked() {
        let spec: UpstreamSpec = "fs=npx -y '@scope/server' \"/a b\"".parse().unwrap();
        assert_eq!(spec.name, "fs");
        assert_eq!(spec.argv, ["npx", "-y", "@scope/server", "/a b"]);
        for bad in ["noequals", "Fs=cmd", "1x=cmd", "a-b=cmd", "x=", "x='unclosed"] {
            assert!(bad.parse::<UpstreamSpec>().is_err(), "{bad}");
        }
    }

    /// The words before the command set variables and pass kyro's own by name; after the
    /// command, the same shapes are its arguments.
    #[test]
    fn variables_are_set_and_passed_only_before_the_command() {
        let spec: UpstreamSpec = "gh=GH_HOST='a b' --pass-env=GITHUB_TOKEN,AWS_PROFILE npx -y srv A=1 --pass-env=B"
            .parse()
            .unwrap();
        assert_eq!(spec.env, [("GH_HOST".to_owned(), "a b".to_owned())]);
        assert_eq!(spec.pass_env, ["GITHUB_TOKEN", "AWS_PROFILE"]);
        assert_eq!(spec.argv, ["npx", "-y", "srv", "A=1", "--pass-env=B"]);
        let plain: UpstreamSpec = "fs=/opt/a=b/server".parse().unwrap();
        assert_eq!(plain.argv, ["/opt/a=b/server"], "not a variable name: the command");
        assert!(plain.env.is_empty() && plain.pass_env.is_empty());
        for bad in [
            "x=A=1",
            "x=--pass-env=A",
            "x=--pass-env= cmd",
            "x=--pass-env=A,1B cmd",
            "x=--pass-env=A=B cmd",
        ] {
            assert!(bad.parse::<UpstreamSpec>().is_err(), "{bad}");
        }
        // Values set are often credentials: Debug names them only.
        let secret: UpstreamSpec = "gh=GITHUB_TOKEN=ghp_secret cmd".parse().unwrap();
        let shown = format!("{secret:?}");
        assert!(
            shown.contains("GITHUB_TOKEN") && !shown.contains("ghp_secret"),
            "{shown}"
        );
    }
}
