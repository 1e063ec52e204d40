//! The program an argv runs behind the wrappers that start another program (`env`, `nice`,
//! `nohup`, `timeout`, `stdbuf`, `setsid`, `command`, `exec`), read option by option as
//! each wrapper reads them, and the command a `git` or `cargo` runs behind its global
//! options (`git -C . push` is a `git push`). A leaf: the rules read it to hold back a
//! command however it is spelled, and to find the program whose config a rule isolates.

/// The program's name without its directory (`/usr/bin/python3` -> `python3`).
pub(crate) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The program an argv runs once every wrapper in front of it is read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unwrapped<'a> {
    /// The program and its arguments (empty when the last wrapper names none: `env A=1`).
    pub command: &'a [String],
    /// Whether a wrapper hands the program another environment or directory than kyro
    /// gives it (`env -i`, `env -u NAME`, `env -C DIR`), beyond adding variables.
    pub changes_context: bool,
}

/// The program `argv` runs behind its wrappers; none when a wrapper's options are not
/// read to the end (an option kyro does not know, or `env -S` splitting a string into a
/// command line).
pub(crate) fn unwrap(argv: &[String]) -> Option<Unwrapped<'_>> {
    let mut command = argv;
    let mut changes_context = false;
    while let Some(first) = command.first() {
        let Some(wrapper) = Wrapper::named(program_name(first)) else {
            break;
        };
        let step = wrapper.skip(&command[1..])?;
        changes_context |= step.changes_context;
        command = &command[1 + step.skipped..];
    }
    Some(Unwrapped {
        command,
        changes_context,
    })
}

/// The argv as rules that hold a command back compare it: as written, and behind each
/// wrapper read, each with the program named without its directory and, for `git` and
/// `cargo`, also without their global options (`["/usr/bin/env", "git", "-C", ".",
/// "push"]` is also `["git", "-C", ".", "push"]` and `["git", "push"]`).
pub(crate) fn views(argv: &[String]) -> Vec<Vec<&str>> {
    let mut views = Vec::new();
    let mut command = argv;
    while let Some((first, args)) = command.split_first() {
        let program = program_name(first);
        let bare = global_options(program, args).len();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        views.push(std::iter::once(program).chain(args.iter().copied()).collect());
        if bare > 0 {
            views.push(std::iter::once(program).chain(args[bare..].iter().copied()).collect());
        }
        let Some(step) = Wrapper::named(program).and_then(|w| w.skip(&command[1..])) else {
            break;
        };
        command = &command[1 + step.skipped..];
    }
    views
}

/// What a wrapper's options are: short letters that take no value, short letters that take
/// one (`-n 5`, `-n5`), and long options (`--name`, `--name=value`, `--name value`, or any
/// unambiguous abbreviation, as getopt reads them).
struct Options {
    flags: &'static str,
    valued: &'static str,
    long: &'static [(&'static str, Takes)],
    /// The options that hand the program another environment or directory.
    changes_context: &'static [&'static str],
    /// The options after which the rest is no command line kyro can read (`env -S`).
    unreadable: &'static [&'static str],
    /// Whether a long option may be abbreviated (getopt's programs; not git's or cargo's).
    abbreviated: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    Value,
    /// Only as `--name=value`.
    OptionalValue,
}

/// A wrapper: a program that runs the command after its options (and, for some, after
/// some words of its own).
#[derive(Clone, Copy)]
enum Wrapper {
    Env,
    Nice,
    Nohup,
    Timeout,
    Stdbuf,
    Setsid,
    Command,
    Exec,
}

/// How far a wrapper's own words reach.
struct Step {
    skipped: usize,
    changes_context: bool,
}

const ENV: Options = Options {
    flags: "iv0",
    valued: "uCS",
    long: &[
        ("ignore-environment", Takes::Nothing),
        ("null", Takes::Nothing),
        ("unset", Takes::Value),
        ("chdir", Takes::Value),
        ("split-string", Takes::Value),
        ("block-signal", Takes::OptionalValue),
        ("default-signal", Takes::OptionalValue),
        ("ignore-signal", Takes::OptionalValue),
        ("list-signal-handling", Takes::Nothing),
        ("debug", Takes::Nothing),
    ],
    changes_context: &["i", "u", "C", "ignore-environment", "unset", "chdir"],
    unreadable: &["S", "split-string"],
    abbreviated: true,
};
const NICE: Options = Options {
    flags: "",
    valued: "n",
    long: &[("adjustment", Takes::Value)],
    changes_context: &[],
    unreadable: &[],
    abbreviated: true,
};
const NOHUP: Options = Options {
    flags: "",
    valued: "",
    long: &[],
    changes_context: &[],
    unreadable: &[],
    abbreviated: true,
};
const TIMEOUT: Options = Options {
    flags: "fpv",
    valued: "ks",
    long: &[
        ("foreground", Takes::Nothing),
        ("kill-after", Takes::Value),
        ("preserve-status", Takes::Nothing),
        ("signal", Takes::Value),
        ("verbose", Takes::Nothing),
    ],
    changes_context: &[],
    unreadable: &[],
    abbreviated: true,
};
const STDBUF: Options = Options {
    flags: "",
    valued: "ioe",
    long: &[
        ("input", Takes::Value),
        ("output", Takes::Value),
        ("error", Takes::Value),
    ],
    changes_context: &[],
    unreadable: &[],
    abbreviated: true,
};
const SETSID: Options = Options {
    flags: "cfw",
    valued: "",
    long: &[
        ("ctty", Takes::Nothing),
        ("fork", Takes::Nothing),
        ("wait", Takes::Nothing),
    ],
    changes_context: &[],
    unreadable: &[],
    abbreviated: true,
};
const COMMAND: Options = Options {
    flags: "pvV",
    valued: "",
    long: &[],
    changes_context: &[],
    unreadable: &[],
    abbreviated: false,
};
const EXEC: Options = Options {
    flags: "cl",
    valued: "a",
    long: &[],
    changes_context: &["c"],
    unreadable: &[],
    abbreviated: false,
};

/// git's options before its subcommand (`git -C dir -c k=v --git-dir=x push`); git takes
/// no abbreviation and `-C`/`-c` only as separate words.
const GIT_OPTIONS: Options = Options {
    flags: "pPhv",
    valued: "Cc",
    long: &[
        ("paginate", Takes::Nothing),
        ("no-pager", Takes::Nothing),
        ("no-replace-objects", Takes::Nothing),
        ("no-lazy-fetch", Takes::Nothing),
        ("no-optional-locks", Takes::Nothing),
        ("no-advice", Takes::Nothing),
        ("bare", Takes::Nothing),
        ("literal-pathspecs", Takes::Nothing),
        ("glob-pathspecs", Takes::Nothing),
        ("noglob-pathspecs", Takes::Nothing),
        ("icase-pathspecs", Takes::Nothing),
        ("exec-path", Takes::OptionalValue),
        ("git-dir", Takes::Value),
        ("work-tree", Takes::Value),
        ("namespace", Takes::Value),
        ("config-env", Takes::Value),
        ("attr-source", Takes::Value),
        ("super-prefix", Takes::Value),
    ],
    changes_context: &[],
    unreadable: &[],
    abbreviated: false,
};

/// cargo's options before its subcommand (`cargo --locked -Z x publish`).
const CARGO_OPTIONS: Options = Options {
    flags: "vq",
    valued: "ZC",
    long: &[
        ("verbose", Takes::Nothing),
        ("quiet", Takes::Nothing),
        ("frozen", Takes::Nothing),
        ("locked", Takes::Nothing),
        ("offline", Takes::Nothing),
        ("color", Takes::Value),
        ("config", Takes::Value),
    ],
    changes_context: &[],
    unreadable: &[],
    abbreviated: false,
};

impl Wrapper {
    fn named(program: &str) -> Option<Wrapper> {
        Some(match program {
            "env" => Wrapper::Env,
            "nice" => Wrapper::Nice,
            "nohup" => Wrapper::Nohup,
            "timeout" => Wrapper::Timeout,
            "stdbuf" => Wrapper::Stdbuf,
            "setsid" => Wrapper::Setsid,
            "command" => Wrapper::Command,
            "exec" => Wrapper::Exec,
            _ => return None,
        })
    }

    fn options(self) -> &'static Options {
        match self {
            Wrapper::Env => &ENV,
            Wrapper::Nice => &NICE,
            Wrapper::Nohup => &NOHUP,
            Wrapper::Timeout => &TIMEOUT,
            Wrapper::Stdbuf => &STDBUF,
            Wrapper::Setsid => &SETSID,
            Wrapper::Command => &COMMAND,
            Wrapper::Exec => &EXEC,
        }
    }

    /// The wrapper's own words at the start of `args` (its options, and `env`'s
    /// assignments, `nice`'s old `-5`, `timeout`'s duration); none when they cannot be
    /// read to the end.
    fn skip(self, args: &[String]) -> Option<Step> {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut at = 0;
        // `nice -5 cmd`, `nice --10 cmd`: an adjustment written as an option.
        if matches!(self, Wrapper::Nice)
            && args.first().is_some_and(|a| {
                let digits = a.trim_start_matches('-').trim_start_matches('+');
                a.starts_with('-') && !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
            })
        {
            at = 1;
        }
        let (read, changes_context) = read_options(&args[at..], self.options())?;
        at += read;
        match self {
            Wrapper::Env => {
                // `-` alone is `-i`.
                let mut changes_context = changes_context;
                if args.get(at) == Some(&"-") {
                    changes_context = true;
                    at += 1;
                }
                at += args[at..].iter().take_while(|a| is_assignment(a)).count();
                return Some(Step {
                    skipped: at,
                    changes_context,
                });
            }
            Wrapper::Timeout => at = (at + 1).min(args.len()),
            _ => {}
        }
        Some(Step {
            skipped: at,
            changes_context,
        })
    }
}

/// `NAME=VALUE` as `env` reads it: an assignment, not a program.
pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// How many of `args` are options as `options` reads them (a final `--` included), and
/// whether one of them hands the program another environment or directory; none for an
/// option it does not know or one after which no command line can be read.
fn read_options(args: &[&str], options: &Options) -> Option<(usize, bool)> {
    let mut at = 0;
    let mut changes_context = false;
    let mut note = |name: &str| -> Option<()> {
        if options.unreadable.contains(&name) {
            return None;
        }
        changes_context |= options.changes_context.contains(&name);
        Some(())
    };
    while let Some(&arg) = args.get(at) {
        at += 1;
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let (full, takes) = long_option(options, name)?;
            note(full)?;
            match (takes, value) {
                (Takes::Nothing, Some(_)) => return None,
                (Takes::Value, None) => {
                    args.get(at)?;
                    at += 1;
                }
                _ => {}
            }
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (i, letter) in cluster.char_indices() {
                note(&cluster[i..i + letter.len_utf8()])?;
                if options.valued.contains(letter) {
                    // The rest of the word is the value, or else the next word.
                    if i + letter.len_utf8() == cluster.len() {
                        args.get(at)?;
                        at += 1;
                    }
                    break;
                }
                if !options.flags.contains(letter) {
                    return None;
                }
            }
        } else {
            at -= 1;
            break;
        }
    }
    Some((at, changes_context))
}

/// The long option `name` abbreviates (getopt takes any unambiguous prefix).
fn long_option(options: &Options, name: &str) -> Option<(&'static str, Takes)> {
    if let Some(&(full, takes)) = options.long.iter().find(|(full, _)| *full == name) {
        return Some((full, takes));
    }
    if !options.abbreviated {
        return None;
    }
    let mut candidates = options.long.iter().filter(|(full, _)| full.starts_with(name));
    match (candidates.next(), candidates.next()) {
        (Some(&(full, takes)), None) if !name.is_empty() => Some((full, takes)),
        _ => None,
    }
}

/// The options `git` or `cargo` take before their subcommand, at the start of `args` (the
/// words after the program; for cargo, a `+toolchain` first too).
pub(crate) fn global_options<'a>(program: &str, args: &'a [String]) -> &'a [String] {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let count = match program {
        "git" => skip_options(&words, &GIT_OPTIONS),
        "cargo" => {
            let toolchain = usize::from(words.first().is_some_and(|a| a.starts_with('+')));
            toolchain + skip_options(&words[toolchain..], &CARGO_OPTIONS)
        }
        _ => 0,
    };
    &args[..count]
}

/// How many of `args` are options of a program before its subcommand (`git`, `cargo`):
/// as many as are read before the first word that is not one (none past one unknown).
fn skip_options(args: &[&str], options: &Options) -> usize {
    let mut at = 0;
    while args.get(at).is_some_and(|a| a.starts_with('-') && *a != "--") {
        let end = (at + 1 + usize::from(takes_next(args[at], options))).min(args.len());
        match read_options(&args[at..end], options) {
            Some((read, _)) if read > 0 => at += read,
            _ => break,
        }
    }
    at
}

/// Whether the option word `arg` takes the next word as its value.
fn takes_next(arg: &str, options: &Options) -> bool {
    match arg.strip_prefix("--") {
        Some(long) => !long.contains('=') && long_option(options, long).is_some_and(|(_, takes)| takes == Takes::Value),
        None => arg
            .strip_prefix('-')
            .and_then(|cluster| {
                let end = cluster.char_indices().find(|&(_, c)| options.valued.contains(c))?;
                Some(end.0 + end.1.len_utf8() == cluster.len())
            })
            .unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::{Unwrapped, unwrap, views};

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn wrappers_are_read_to_the_program_they_start() {
        for (words, program) in [
            (&["env", "rm", "x"][..], &["rm", "x"][..]),
            (&["/usr/bin/env", "-v", "A=1", "B=2", "rm", "x"], &["rm", "x"]),
            (&["nice", "-n", "5", "rm"], &["rm"]),
            (&["nice", "-n5", "rm"], &["rm"]),
            (&["nice", "--adj=5", "rm"], &["rm"]),
            (&["nice", "-5", "rm"], &["rm"]),
            (&["nohup", "--", "rm"], &["rm"]),
            (&["timeout", "-s", "KILL", "--kill-after=1", "5", "rm"], &["rm"]),
            (&["stdbuf", "-oL", "-e", "0", "rm"], &["rm"]),
            (&["setsid", "-f", "nice", "timeout", "5", "env", "rm"], &["rm"]),
            (&["command", "-p", "rm"], &["rm"]),
            (&["env", "A=1"], &[]),
            (&["git", "status"], &["git", "status"]),
        ] {
            let words = argv(words);
            assert_eq!(
                unwrap(&words),
                Some(Unwrapped {
                    command: &argv(program)[..],
                    changes_context: false
                }),
                "{words:?}"
            );
        }
        for words in [
            &["env", "-i", "rm"][..],
            &["env", "-", "rm"],
            &["env", "-u", "GIT_CONFIG_COUNT", "git"],
            &["env", "-uX", "git"],
            &["env", "--chdir=sub", "git"],
            &["env", "--ignore-e", "git"],
            &["env", "-C", "sub", "git"],
            &["exec", "-c", "git"],
        ] {
            assert!(unwrap(&argv(words)).is_some_and(|u| u.changes_context), "{words:?}");
        }
        for unreadable in [
            &["env", "-S", "rm x"][..],
            &["env", "--split-string=rm x"],
            &["env", "--frobnicate", "rm"],
            &["env", "--i", "rm"],
            &["env", "--ign", "rm"],
            &["nice", "-n"],
            &["timeout", "-x", "5", "rm"],
        ] {
            assert_eq!(unwrap(&argv(unreadable)), None, "{unreadable:?}");
        }
    }

    #[test]
    fn views_name_the_program_without_its_directory_or_global_options() {
        let has = |words: &[&str], view: &[&str]| views(&argv(words)).iter().any(|v| v == view);
        assert!(has(&["/bin/rm", "-rf", "x"], &["rm", "-rf", "x"]));
        assert!(has(&["../../usr/bin/rm", "x"], &["rm", "x"]));
        assert!(has(&["env", "A=1", "nice", "rm", "x"], &["rm", "x"]));
        assert!(has(&["git", "-C", ".", "push"], &["git", "push"]));
        assert!(has(
            &[
                "git",
                "-c",
                "a.b=c",
                "--git-dir=.git",
                "--work-tree",
                ".",
                "-P",
                "push",
                "-f"
            ],
            &["git", "push", "-f"]
        ));
        assert!(has(
            &["timeout", "5", "/usr/bin/git", "--no-pager", "push"],
            &["git", "push"]
        ));
        assert!(has(
            &["cargo", "+nightly", "--locked", "-Z", "x", "publish"],
            &["cargo", "publish"]
        ));
        assert!(
            has(&["git", "-C", ".", "push"], &["git", "-C", ".", "push"]),
            "as written, too"
        );
        // A subcommand's own options stay: `git push -C` is not `git push`'s view.
        assert!(!has(&["git", "status", "-C", ".", "push"], &["git", "push"]));
    }
}
