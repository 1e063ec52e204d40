//! `--config FILE`: a server's flags read from a TOML file whose keys are its long flags as
//! the command line spells them (`http = "127.0.0.1:8080"`, `token-file = "/etc/kyro/tokens"`,
//! `allow-host = ["tools.example.com"]`, `read-only = true`).
//!
//! Each key is checked on its own first (a flag of the server, a value of the right type,
//! one its flag accepts), so a mistake is named by its key. The file's settings then become
//! flags put before the command line's, leaving out every setting the command line or an
//! environment variable gives (or contradicts): clap parses the two as one command line,
//! and what the operator typed, then the environment, wins over the file. Only the file
//! named is read; nothing is looked for in the workspace.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, Command};

/// The flag naming the file (`ServeArgs::config`).
const CONFIG: &str = "config";

/// Why the file named by `--config` was refused.
#[derive(Debug, thiserror::Error)]
#[error("--config `{}`: {problem}", path.display())]
pub(crate) struct ConfigFileError {
    /// The file.
    path: PathBuf,
    /// What is wrong with it.
    problem: Problem,
}

/// What is wrong with a config file.
#[derive(Debug, thiserror::Error)]
enum Problem {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("{0}")]
    Toml(toml::de::Error),
    #[error("`{key}` is not a flag of this server{}", did_you_mean(.closest, .flags))]
    Unknown {
        key: String,
        closest: Option<String>,
        flags: Vec<String>,
    },
    #[error("`config` cannot be set in the file it names")]
    Itself,
    #[error("`{key}` takes {expected}, not {found}")]
    Type {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("`{key}` is an empty array: leave the key out instead")]
    Empty { key: String },
    #[error("`{key} = {value:?}`: {message}")]
    Value {
        key: String,
        value: String,
        message: String,
    },
    #[error("`{key}` and `{other}` cannot be set together")]
    Conflict { key: String, other: String },
}

fn did_you_mean(closest: &Option<String>, flags: &[String]) -> String {
    match closest {
        Some(closest) => format!("; did you mean `{closest}`?"),
        None => format!("; its flags: {}", flags.join(", ")),
    }
}

/// What the file sets a flag to.
enum Setting {
    /// A flag without a value (`read-only = true`); `false` sets nothing.
    Switch(bool),
    /// A flag's value, or a repeatable flag's values.
    Values(Vec<String>),
}

/// `argv` (the program's name first) with the flags of the file its `--config` names put
/// after the name; `argv` unchanged without `--config`, or when `command` does not parse
/// it (its own parse then says why).
pub(crate) fn with_config_file(command: &Command, argv: Vec<OsString>) -> Result<Vec<OsString>, ConfigFileError> {
    let mut command = command.clone();
    command.build();
    // What the command line gives, though it may need the file to be whole (`--issuer` here,
    // `audience` there).
    let Ok(given) = command.clone().ignore_errors(true).try_get_matches_from(&argv) else {
        return Ok(argv);
    };
    let Some(path) = given.get_one::<PathBuf>(CONFIG).cloned() else {
        return Ok(argv);
    };
    let settings = read(&command, &path).map_err(|problem| ConfigFileError {
        path: path.clone(),
        problem,
    })?;
    let outside = |arg: &Arg| {
        matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    let conflict = |a: &Arg, b: &Arg| {
        command
            .get_arg_conflicts_with(a)
            .iter()
            .any(|c| c.get_id() == b.get_id())
            || command
                .get_arg_conflicts_with(b)
                .iter()
                .any(|c| c.get_id() == a.get_id())
    };
    // What the command line or the environment gives, or contradicts, is theirs.
    let kept: Vec<(&Arg, Setting)> = settings
        .into_iter()
        .filter(|(_, setting)| !matches!(setting, Setting::Switch(false)))
        .filter(|(arg, _)| {
            !outside(arg)
                && !command
                    .get_arguments()
                    .any(|other| outside(other) && conflict(arg, other))
        })
        .collect();
    for (n, (arg, _)) in kept.iter().enumerate() {
        if let Some((other, _)) = kept[n + 1..].iter().find(|(other, _)| conflict(arg, other)) {
            return Err(ConfigFileError {
                path,
                problem: Problem::Conflict {
                    key: long(arg).to_owned(),
                    other: long(other).to_owned(),
                },
            });
        }
    }
    let mut words = argv.into_iter();
    let mut out: Vec<OsString> = words.next().into_iter().collect();
    for (arg, setting) in kept {
        match setting {
            Setting::Switch(_) => out.push(format!("--{}", long(arg)).into()),
            Setting::Values(values) => out.extend(values.iter().map(|v| format!("--{}={v}", long(arg)).into())),
        }
    }
    out.extend(words);
    Ok(out)
}

/// The file's settings, each checked against its flag.
fn read<'c>(command: &'c Command, path: &std::path::Path) -> Result<Vec<(&'c Arg, Setting)>, Problem> {
    let text = std::fs::read_to_string(path).map_err(Problem::Read)?;
    let table: toml::Table = toml::from_str(&text).map_err(Problem::Toml)?;
    let flags: Vec<&Arg> = command
        .get_arguments()
        .filter(|a| a.get_id() != CONFIG && a.get_long().is_some())
        .filter(|a| matches!(a.get_action(), ArgAction::Set | ArgAction::Append | ArgAction::SetTrue))
        .collect();
    let mut settings = Vec::new();
    for (key, value) in table {
        if key == CONFIG {
            return Err(Problem::Itself);
        }
        let Some(arg) = flags.iter().copied().find(|a| a.get_long() == Some(key.as_str())) else {
            let names: Vec<String> = flags.iter().map(|a| long(a).to_owned()).collect();
            return Err(Problem::Unknown {
                closest: kyro_core::closest::suggest(&key, names.iter().map(String::as_str))
                    .into_iter()
                    .next(),
                flags: names,
                key,
            });
        };
        let setting = setting(arg, &key, value)?;
        if let Setting::Values(values) = &setting {
            for value in values {
                accepted(arg, value).map_err(|message| Problem::Value {
                    key: key.clone(),
                    value: value.clone(),
                    message,
                })?;
            }
        }
        settings.push((arg, setting));
    }
    Ok(settings)
}

/// The value of `key` as its flag takes it: a switch `true` or `false`, one string, or a
/// repeatable flag's strings (one, or an array).
fn setting(arg: &Arg, key: &str, value: toml::Value) -> Result<Setting, Problem> {
    let refused = |expected, value: &toml::Value| Problem::Type {
        key: key.to_owned(),
        expected,
        found: kind(value),
    };
    match (arg.get_action(), value) {
        (ArgAction::SetTrue, toml::Value::Boolean(on)) => Ok(Setting::Switch(on)),
        (ArgAction::SetTrue, other) => Err(refused("true or false", &other)),
        (ArgAction::Append, toml::Value::Array(items)) if items.is_empty() => {
            Err(Problem::Empty { key: key.to_owned() })
        }
        (ArgAction::Append, toml::Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s),
                other => Err(refused("an array of strings", &other)),
            })
            .collect::<Result<_, _>>()
            .map(Setting::Values),
        (_, toml::Value::String(s)) => Ok(Setting::Values(vec![s])),
        (ArgAction::Append, other) => Err(refused("a string or an array of strings", &other)),
        (_, other) => Err(refused("a string", &other)),
    }
}

/// Whether the flag's own parser takes `value`; why not, as clap says it.
fn accepted(arg: &Arg, value: &str) -> Result<(), String> {
    let mut probe = Arg::new("value")
        .long("value")
        .action(ArgAction::Append)
        .value_parser(arg.get_value_parser().clone());
    if let Some(delimiter) = arg.get_value_delimiter() {
        probe = probe.value_delimiter(delimiter);
    }
    let refused = match Command::new("config")
        .no_binary_name(true)
        .arg(probe)
        .try_get_matches_from([format!("--value={value}")])
    {
        Ok(_) => return Ok(()),
        Err(refused) => refused,
    };
    if let Some(why) = std::error::Error::source(&refused) {
        return Err(why.to_string());
    }
    if let Some(clap::error::ContextValue::Strings(valid)) = refused.get(clap::error::ContextKind::ValidValue) {
        return Err(format!("expected one of {}", valid.join(", ")));
    }
    let rendered = refused.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    Err(first.trim_start_matches("error: ").to_owned())
}

fn long(arg: &Arg) -> &str {
    arg.get_long().unwrap_or_default()
}

/// A TOML value's type, as a message names it.
fn kind(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "true or false",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}
