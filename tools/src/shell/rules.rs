//! `[[tools.shell.rules]]` applied to one command: which rule decides it, and the calls no
//! rule may decide. A rule names an argv: the whole of it (`argv`) or its first words
//! (`argv_prefix`, which trusts whatever follows). Code that is not a program on disk but
//! text in the call (a `shell: true` script, `sh -c SCRIPT`, `python3 -c CODE`, `perl -e`,
//! `node -e`, `env -S`), and a variable that changes which code runs, match no rule: the
//! person approving reads them.

use kyro_core::policy::{ApprovalRule, MatchedRule, Scope};

use super::environment::changes_code;
use super::spawn::Spawn;
use crate::settings::{CommandRule, ShellSettings};

/// The `[[tools.shell.rules]]` rule for this command, when any may decide it: an exact
/// rule before any prefix rule, a longer prefix before a shorter one, on a tie the
/// strictest decision. A rule matches only when it lists every variable the call sets, and
/// an `auto` rule only a call [`may_be_ruled`].
pub(crate) fn matching_rule<'a>(shell: &'a ShellSettings, what: &Spawn) -> Option<&'a CommandRule> {
    // A call no rule may let through (code in the call, input typed in) is still held to a
    // rule that denies or asks.
    let rulable = may_be_ruled(what);
    let strictness = |rule: ApprovalRule| match rule {
        ApprovalRule::Auto => 0,
        ApprovalRule::Ask => 1,
        ApprovalRule::Deny => 2,
    };
    shell
        .rules
        .iter()
        .filter(|rule| rulable || rule.decision != ApprovalRule::Auto)
        .filter(|rule| rule.matches(what.argv, what.env.iter().map(|v| v.name.as_str())))
        .max_by_key(|rule| {
            (
                matches!(rule.argv, crate::settings::RuleArgv::Exact(_)),
                rule.argv.words().len(),
                strictness(rule.decision),
            )
        })
}

/// The rule's decision as the runtime takes it, named for the receipt
/// (`[tools.shell] rule argv ["git","status"]`).
pub(crate) fn matched(scope: &Scope, what: &Spawn) -> Option<MatchedRule> {
    let shell = scope.settings::<ShellSettings>().ok()?;
    let rule = matching_rule(&shell, what)?;
    Some(MatchedRule {
        decision: rule.decision,
        rule: format!(
            "[tools.shell] rule {} {}",
            rule.argv.key(),
            serde_json::to_string(rule.argv.words()).unwrap_or_default()
        ),
    })
}

/// Whether a rule may decide this call at all: not a shell script, no interpreter's inline
/// code, and no variable set (by the call, or by `env NAME=VALUE` in the argv) that
/// changes which code runs.
pub(crate) fn may_be_ruled(what: &Spawn) -> bool {
    !what.shell
        && !what.input
        && !runs_inline_code(what.argv)
        && !what.env.iter().any(|v| changes_code(&v.name))
        && !env_assignments(what.argv).any(changes_code)
}

/// The program's name without its directory (`/usr/bin/python3` -> `python3`).
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `name` is `base` with an optional version (`python3`, `python3.12`, `perl5.36`).
fn versioned(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The options that make a program run code given as text: single-dash letters (found in
/// a cluster too: `-lc`, `-ne`) and long options (alone or with `=`).
type InlineOptions = (&'static [char], &'static [&'static str]);

const SHELL: InlineOptions = (&['c'], &["--command"]);
const PYTHON: InlineOptions = (&['c'], &[]);
const PERL_RUBY_LUA: InlineOptions = (&['e', 'E'], &[]);
const NODE: InlineOptions = (&['e', 'p'], &["--eval", "--print"]);
const PHP: InlineOptions = (&['r'], &["--run"]);
/// `env -S 'sh -c …'` splits a string into a command line.
const ENV: InlineOptions = (&['S'], &["--split-string"]);

/// The inline-code options of `program`, when it is an interpreter (or `env`).
fn inline_options(program: &str) -> Option<InlineOptions> {
    const SHELLS: &[&str] = &[
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "ash", "yash", "rbash", "fish", "csh", "tcsh",
    ];
    Some(match program {
        p if SHELLS.contains(&p) => SHELL,
        p if versioned(p, "python") || versioned(p, "pypy") => PYTHON,
        p if versioned(p, "perl") || versioned(p, "ruby") || versioned(p, "lua") => PERL_RUBY_LUA,
        "node" | "nodejs" | "bun" => NODE,
        p if versioned(p, "php") => PHP,
        "env" => ENV,
        _ => return None,
    })
}

/// Whether the argv runs code given as text: an interpreter anywhere in it (`sh`, also
/// behind `env`, `nice`, `xargs`, `timeout`, ...) followed by its inline-code option.
/// Errs on the side of asking: `grep bash -c` counts too.
pub(crate) fn runs_inline_code(argv: &[String]) -> bool {
    argv.iter().enumerate().any(|(i, word)| {
        let Some((letters, long)) = inline_options(program_name(word)) else {
            return false;
        };
        argv[i + 1..].iter().any(|arg| {
            if arg.starts_with("--") {
                long.iter().any(|&option| {
                    arg.strip_prefix(option)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
                })
            } else {
                arg.strip_prefix('-')
                    .is_some_and(|cluster| cluster.chars().any(|c| letters.contains(&c)))
            }
        })
    })
}

/// The names an `env` in the argv sets (`env GIT_EXTERNAL_DIFF=./x git diff`).
fn env_assignments(argv: &[String]) -> impl Iterator<Item = &str> {
    let start = argv
        .iter()
        .position(|word| program_name(word) == "env")
        .map_or(argv.len(), |i| i + 1);
    argv[start..].iter().filter_map(|word| {
        let (name, _) = word.split_once('=')?;
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        valid.then_some(name)
    })
}

/// The rule that would run exactly this call without asking, for the approval prompt: its
/// exact argv and the variables it sets; none for what no rule may decide.
pub(crate) fn suggestion(what: &Spawn) -> Option<String> {
    if !may_be_ruled(what) {
        return None;
    }
    let mut rule = format!(
        "[[tools.shell.rules]]\nargv = {}",
        serde_json::to_string(what.argv).unwrap_or_default()
    );
    if !what.env.is_empty() {
        let mut names: Vec<&str> = what.env.iter().map(|v| v.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        rule.push_str(&format!(
            "\nenv = {}",
            serde_json::to_string(&names).unwrap_or_default()
        ));
    }
    rule.push_str("\ndecision = \"auto\"");
    Some(rule)
}

#[cfg(test)]
mod tests {
    use super::runs_inline_code;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn inline_code_is_found_behind_wrappers_and_in_option_clusters() {
        for code in [
            &["sh", "-c", "x"][..],
            &["/bin/bash", "-lc", "x"],
            &["dash", "-e", "-c", "x"],
            &["zsh", "-xc", "x"],
            &["fish", "--command=x"],
            &["python3", "-c", "x"],
            &["python3.12", "-Ic", "x"],
            &["perl", "-ne", "x"],
            &["ruby", "-e", "x"],
            &["node", "--eval", "x"],
            &["node", "-p", "x"],
            &["env", "A=1", "sh", "-c", "x"],
            &["/usr/bin/env", "-S", "sh -c x"],
            &["nice", "-n", "5", "bash", "-c", "x"],
            &["xargs", "sh", "-c", "x"],
        ] {
            assert!(runs_inline_code(&argv(code)), "{code:?}");
        }
        for program in [
            &["sh", "build.sh"][..],
            &["python3", "setup.py", "test"],
            &["git", "commit", "-m", "sh -c"],
            &["cargo", "test", "--", "--nocapture"],
            &["node", "server.js"],
        ] {
            assert!(!runs_inline_code(&argv(program)), "{program:?}");
        }
    }
}
