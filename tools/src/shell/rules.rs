//! `[[tools.shell.rules]]` applied to one command: which rule decides it, and the calls no
//! rule may let through. A rule names an argv: the whole of it (`argv`) or its first words
//! (`argv_prefix`, which trusts whatever follows), run in one directory (`cwd`, default
//! the workspace root). It lets a call through (`auto`, its `network` and `sandbox`) only
//! as written; it holds one back (`deny`, `ask`) in any directory, whatever the call
//! sets, and behind the wrappers and paths [`views`] reads. Code that is not a program on
//! disk but text in the call (a `shell: true` script, `sh -c SCRIPT`, `python3 -c CODE`,
//! `perl -e`, `node -e`, `env -S`), and a variable that changes which code runs, match no
//! rule that lets through: the person approving reads them.

use kyro_core::WorkspacePath;
use kyro_core::policy::{ApprovalRule, MatchedRule, Scope};

use super::environment::changes_code;
use super::spawn::Spawn;
use super::wrappers::{is_assignment, program_name, unwrap, views};
use crate::settings::{CommandRule, RuleArgv, ShellSettings, rule_cwd};

/// The rule that decides a call.
pub(crate) struct Ruling<'a> {
    /// The rule.
    pub rule: &'a CommandRule,
    /// Whether the rule names the call as it will run (argv, directory, variables) and may
    /// let it through: only then do its `network` and `sandbox` widen the sandbox, and the
    /// program's config is isolated from the tree.
    pub names_call: bool,
}

/// The `[[tools.shell.rules]]` rule that decides this call, when any does: an exact rule
/// before any prefix rule, a longer prefix before a shorter one, on a tie the strictest
/// decision. A rule lets a call through only when it names it exactly (its argv as
/// written, its `cwd`, every variable the call sets listed) and the call [`may_be_ruled`];
/// a rule that denies or asks also holds back the same command spelled otherwise (behind
/// `env`, `nice`, `timeout`, ..., by its path, with `git`'s or `cargo`'s global options),
/// in any directory, whatever it sets.
pub(crate) fn ruling<'a>(shell: &'a ShellSettings, what: &Spawn) -> Option<Ruling<'a>> {
    let rulable = may_be_ruled(what);
    let cwd = rule_cwd(what.cwd.map(WorkspacePath::as_str));
    let names_call = |rule: &CommandRule| {
        rulable
            && cwd
                .as_deref()
                .is_some_and(|cwd| rule.matches(what.argv, cwd, what.env.iter().map(|v| v.name.as_str())))
    };
    let views = views(what.argv);
    let holds_back = |rule: &CommandRule| rule.decision != ApprovalRule::Auto && names_a_view(rule, &views);
    let strictness = ApprovalRule::rank;
    let rule = shell
        .rules
        .iter()
        .filter(|rule| names_call(rule) || holds_back(rule))
        .max_by_key(|rule| {
            (
                matches!(rule.argv, RuleArgv::Exact(_)),
                rule.argv.words().len(),
                strictness(rule.decision),
            )
        })?;
    Some(Ruling {
        rule,
        names_call: names_call(rule),
    })
}

/// The rule that names this call as it will run, when that rule decides it: its
/// `network` and `sandbox` apply, and the program's config is isolated from the tree.
pub(crate) fn governing_rule<'a>(shell: &'a ShellSettings, what: &Spawn) -> Option<&'a CommandRule> {
    ruling(shell, what).filter(|r| r.names_call).map(|r| r.rule)
}

/// Whether `rule` names one of the argv's `views`, its program compared by name.
fn names_a_view(rule: &CommandRule, views: &[Vec<&str>]) -> bool {
    let words = rule.argv.words();
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let program = program_name(program);
    views.iter().any(|view| {
        let Some((first, rest)) = view.split_first() else {
            return false;
        };
        let named = match &rule.argv {
            RuleArgv::Exact(_) => rest.len() == args.len(),
            RuleArgv::Prefix(_) => rest.len() >= args.len(),
        };
        named && *first == program && rest.iter().zip(args).all(|(a, b)| *a == b.as_str())
    })
}

/// The rule's decision as the runtime takes it, named for the receipt
/// (`[tools.shell] rule argv ["git","status"]`, with `cwd "sub"` when it names one).
pub(crate) fn matched(scope: &Scope, what: &Spawn) -> Option<MatchedRule> {
    let shell = scope.settings::<ShellSettings>().ok()?;
    let rule = ruling(&shell, what)?.rule;
    let mut named = format!(
        "[tools.shell] rule {} {}",
        rule.argv.key(),
        serde_json::to_string(rule.argv.words()).unwrap_or_default()
    );
    if let Some(cwd) = &rule.cwd {
        named.push_str(&format!(
            " cwd {}",
            serde_json::to_string(cwd.as_str()).unwrap_or_default()
        ));
    }
    Some(MatchedRule {
        decision: rule.decision,
        rule: named,
        each_call: true,
    })
}

/// Whether a rule may let this call through at all: not a shell script, no input fed, no
/// interpreter's inline code, no variable set (by the call, or by `env NAME=VALUE` in the
/// argv) that changes which code runs, and no wrapper kyro cannot read or that hands the
/// program another environment or directory (`env -i`, `env -u`, `env -C`).
pub(crate) fn may_be_ruled(what: &Spawn) -> bool {
    !what.shell
        && !what.input
        && !runs_inline_code(what.argv)
        && !what.env.iter().any(|v| changes_code(&v.name))
        && !env_assignments(what.argv).any(changes_code)
        && unwrap(what.argv).is_some_and(|program| !program.changes_context)
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
    argv[start..]
        .iter()
        .filter(|word| is_assignment(word))
        .filter_map(|word| word.split_once('=').map(|(name, _)| name))
}

/// The rule that would run exactly this call without asking, for the approval prompt: its
/// exact argv, its directory and the variables it sets; none for what no rule may decide.
pub(crate) fn suggestion(what: &Spawn) -> Option<String> {
    let cwd = rule_cwd(what.cwd.map(WorkspacePath::as_str))?;
    if !may_be_ruled(what) {
        return None;
    }
    let mut rule = format!(
        "[[tools.shell.rules]]\nargv = {}",
        serde_json::to_string(what.argv).unwrap_or_default()
    );
    if cwd != "." {
        rule.push_str(&format!("\ncwd = {}", serde_json::to_string(&cwd).unwrap_or_default()));
    }
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
    use super::{ruling, runs_inline_code};
    use crate::settings::ShellSettings;
    use crate::shell::spawn::{EnvVar, Spawn};
    use kyro_core::WorkspacePath;
    use kyro_core::policy::ApprovalRule;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn rules(rules: serde_json::Value) -> ShellSettings {
        serde_json::from_value(serde_json::json!({ "rules": rules })).unwrap()
    }

    /// The decision `shell` gives `words` run in `cwd` with `env` set, and whether the
    /// deciding rule names the call (its network and config isolation apply).
    fn decide(shell: &ShellSettings, words: &[&str], cwd: Option<&str>, env: &[&str]) -> Option<(ApprovalRule, bool)> {
        let words = argv(words);
        let cwd = cwd.map(WorkspacePath::new);
        let env: Vec<EnvVar> = env
            .iter()
            .map(|name| EnvVar {
                name: (*name).to_owned(),
                value: "1".into(),
            })
            .collect();
        let what = Spawn {
            argv: &words,
            shell: false,
            cwd: cwd.as_ref(),
            env: &env,
            input: false,
            tty: false,
        };
        ruling(shell, &what).map(|r| (r.rule.decision, r.names_call))
    }

    #[test]
    fn a_rule_lets_a_call_through_only_in_its_own_directory() {
        let shell = rules(serde_json::json!([
            {"argv": ["git", "status"], "decision": "auto"},
            {"argv": ["make"], "cwd": "./sub//", "decision": "auto", "network": true}
        ]));
        let auto = Some((ApprovalRule::Auto, true));
        assert_eq!(decide(&shell, &["git", "status"], None, &[]), auto);
        assert_eq!(decide(&shell, &["git", "status"], Some("."), &[]), auto);
        assert_eq!(decide(&shell, &["git", "status"], Some("./"), &[]), auto);
        for elsewhere in ["sub", "sub/..", "/tmp", "nested/repo"] {
            assert_eq!(
                decide(&shell, &["git", "status"], Some(elsewhere), &[]),
                None,
                "{elsewhere}"
            );
        }
        assert_eq!(decide(&shell, &["make"], Some("sub/"), &[]), auto);
        assert_eq!(decide(&shell, &["make"], None, &[]), None);
        // A rule's own `cwd` is a directory inside the workspace, or the policy is refused.
        for outside in ["../x", "/tmp", "a/../../b"] {
            let refused = serde_json::from_value::<ShellSettings>(serde_json::json!({
                "rules": [{"argv": ["make"], "cwd": outside, "decision": "auto"}]
            }));
            assert!(
                refused.is_err_and(|e| e.to_string().contains("relative to the workspace root")),
                "{outside}"
            );
        }
        // A wrapper that changes the directory or the environment lets nothing through.
        for moved in [
            &["env", "-C", "sub", "git", "status"][..],
            &["env", "-i", "git", "status"],
        ] {
            let shell = rules(serde_json::json!([{"argv": moved, "decision": "auto"}]));
            assert_eq!(decide(&shell, moved, None, &[]), None, "{moved:?}");
        }
    }

    #[test]
    fn a_rule_that_denies_or_asks_holds_the_command_back_however_it_is_spelled() {
        let shell = rules(serde_json::json!([
            {"argv_prefix": ["rm"], "decision": "deny"},
            {"argv": ["git", "push"], "decision": "deny"},
            {"argv_prefix": ["/usr/bin/python3"], "decision": "ask"},
            {"argv": ["nice", "git", "push"], "decision": "auto"}
        ]));
        let deny = Some((ApprovalRule::Deny, false));
        for spelled in [
            &["/bin/rm", "-rf", "x"][..],
            &["./rm", "x"],
            &["env", "rm"],
            &["env", "-i", "A=1", "rm"],
            &["/usr/bin/env", "--unset=HOME", "rm"],
            &["nice", "-n", "5", "rm"],
            &["nohup", "rm"],
            &["timeout", "-k", "1", "5", "rm"],
            &["stdbuf", "-oL", "rm"],
            &["setsid", "-w", "rm"],
            &["command", "rm"],
            &["git", "-C", ".", "push"],
            &["git", "-c", "core.sshCommand=x", "--no-pager", "push"],
            &["timeout", "5", "/usr/bin/git", "--git-dir=.git", "push"],
        ] {
            let decided = decide(&shell, spelled, None, &[]);
            assert_eq!(decided.map(|d| d.0), deny.map(|d| d.0), "{spelled:?}");
        }
        // In another directory and with variables the rule does not list, too.
        assert_eq!(
            decide(&shell, &["rm", "x"], Some("sub"), &["FOO"]).map(|d| d.0),
            Some(ApprovalRule::Deny)
        );
        assert_eq!(
            decide(&shell, &["env", "python3", "x.py"], None, &[]).map(|d| d.0),
            Some(ApprovalRule::Ask)
        );
        // A more specific rule the policy wrote still wins, as written.
        assert_eq!(
            decide(&shell, &["nice", "git", "push"], None, &[]),
            Some((ApprovalRule::Auto, true))
        );
        // What is not the command is not held back.
        for other in [
            &["echo", "rm"][..],
            &["git", "status", "push"],
            &["git", "log", "-C", "push"],
        ] {
            assert_eq!(decide(&shell, other, None, &[]), None, "{other:?}");
        }
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
