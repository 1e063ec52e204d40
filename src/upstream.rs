//! Upstream MCP servers: `--upstream NAME='CMD ARGS'` runs another MCP server as a child
//! process, connects to it as a client (rmcp), and registers each of its tools as the
//! dynamic tool `NAME.tool`.
//!
//! An upstream tool keeps its declared input schema (brought to canonical form as a foreign
//! schema: descriptions optional, draft-07 accepted where it means the same; or refused
//! with the reason) and goes through the same boundary as a built-in: validated,
//! authorized, executed, receipted. Its effect is `exec` whatever the upstream says: the
//! upstream is a program kyro runs, and its annotations are never taken as policy.
//!
//! The catalog selection holds for upstream tools whenever they are listed again: a tool
//! that `--read-only`, `--exclude-tools` or `--toolsets` leaves out is not registered when
//! the upstream says its list changed: the registry admits only what the selection serves
//! ([`Registry::admit_only`](kyro_core::Registry::admit_only)).
//!
//! The process gets only the environment it is given ([`INHERITED`], and what its spec
//! sets or passes), runs in a session and process group of its own, and ends with kyro:
//! its group is killed when the [`Upstream`] is dropped, when it fails to start and when
//! kyro exits, and the process itself gets SIGKILL if kyro dies first.

use std::sync::{Arc, Mutex, MutexGuard};

use kyro_core::policy::{SandboxMode, Scope};

use kyro_core::sandbox::{Sandbox, SandboxRequest};
use kyro_core::{CustomTool, Effect, Registry, ToolDefinition, ToolError};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};

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

/// A connected upstream; the child process and everything it started are stopped when this
/// is dropped.
pub(crate) struct Upstream {
    /// Its configured name.
    pub name: String,
    /// Tools left out, with why.
    pub refused: Vec<(String, String)>,
    /// The OS sandbox it runs under, or why there is none.
    pub sandbox: String,
    // Dropped in this order: the group is killed before rmcp reaps its leader.
    _group: Group,
    _service: RunningService<RoleClient, Watcher>,
    _sandbox: Sandbox,
}

/// An upstream's process group (the session its process leads): killed with everything in
/// it when this is dropped, or when kyro exits first (`exit` runs [`kill_live_groups`]).
struct Group(Option<libc::pid_t>);

/// The groups of the upstreams alive.
static LIVE_GROUPS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

fn live_groups() -> MutexGuard<'static, Vec<libc::pid_t>> {
    LIVE_GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every live upstream's group; run by `exit` (kyro's end, SIGTERM's included).
extern "C" fn kill_live_groups() {
    for &group in live_groups().iter() {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
    }
}

impl Group {
    /// The group `leader` (the process just started, in a session of its own) leads.
    fn led_by(leader: Option<u32>) -> Group {
        static AT_EXIT: std::sync::Once = std::sync::Once::new();
        let group = leader
            .and_then(|pid| libc::pid_t::try_from(pid).ok())
            .filter(|&pid| pid > 1);
        if let Some(group) = group {
            AT_EXIT.call_once(|| {
                // SAFETY: registers a function that only locks a mutex and sends signals.
                unsafe {
                    libc::atexit(kill_live_groups);
                }
            });
            live_groups().push(group);
        }
        Group(group)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            live_groups().retain(|&g| g != group);
            // SAFETY: killpg only sends a signal. Its leader is kyro's child, not reaped
            // before this runs unless it ended by itself, so the id is still this group's.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
    }
}

/// On Linux, makes the child `command` starts get SIGKILL when the kyro thread that starts it ends
/// (and so when kyro does); a child whose kyro is already gone does not start. Added after
/// the sandbox's steps, since entering a user namespace clears the death signal. Elsewhere
/// than on Linux there is no death signal: the upstream's group is killed when kyro exits
/// (`kill_live_groups`), not when it is killed.
#[cfg(not(target_os = "linux"))]
fn dies_with_kyro(_: &mut std::process::Command) {}

#[cfg(target_os = "linux")]
fn dies_with_kyro(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let kyro = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe, and nothing here allocates.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != kyro {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The client side of an upstream connection: follows the upstream's
/// `notifications/tools/list_changed` into the registry (whose own change notifies
/// kyro's clients in turn).
pub(crate) struct Watcher {
    name: String,
    registry: Arc<Registry>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Listing is a request: run it off the connection's own loop.
        let (name, registry, peer) = (self.name.clone(), self.registry.clone(), context.peer);
        tokio::spawn(async move {
            match peer.list_all_tools().await {
                Ok(tools) => {
                    for (tool, reason) in sync(&name, &registry, &tools, &peer).1 {
                        eprintln!("kyro: upstream `{name}`: `{tool}` not registered: {reason}");
                    }
                }
                Err(e) => eprintln!("kyro: upstream `{name}`: tools/list after a change failed: {e}"),
            }
        });
    }
}

/// `[sandbox.upstreams.NAME]`: the sandbox of one upstream MCP server.
///
/// ```toml
/// [sandbox.upstreams.fetcher]
/// mode = "read-only"
/// network = true
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSandbox {
    /// What it may write.
    pub mode: SandboxMode,
    /// Whether it may open network sockets.
    #[serde(default)]
    pub network: bool,
}

/// The category an upstream server's tools are registered under (as `NAME.tool`), a
/// toolset of its own; the built-in `mcp_call` reaches tools of this category only.
pub(crate) const UPSTREAM_CATEGORY: &str = "upstream";

/// How long an upstream has to answer the handshake and its first `tools/list`.
pub(crate) const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts the upstream, lists its tools and registers each one that can be, within
/// [`START_TIMEOUT`]: an upstream that does not answer in time is stopped and reported.
/// It runs under the OS sandbox of `scope` (`[sandbox]`, or its own
/// `[sandbox.upstreams.NAME]`).
pub(crate) async fn connect(
    spec: &UpstreamSpec,
    registry: &Arc<Registry>,
    scope: &Scope,
    own: Option<&UpstreamSandbox>,
) -> Result<Upstream, String> {
    tokio::time::timeout(START_TIMEOUT, connect_now(spec, registry, scope, own))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "upstream `{}` did not answer the handshake and tools/list within {} s; it was stopped",
                spec.name,
                START_TIMEOUT.as_secs()
            ))
        })
}

async fn connect_now(
    spec: &UpstreamSpec,
    registry: &Arc<Registry>,
    scope: &Scope,
    own: Option<&UpstreamSandbox>,
) -> Result<Upstream, String> {
    let mut request = SandboxRequest::for_scope(scope);
    if let Some(own) = own {
        request.mode = own.mode;
        request.network = own.network;
    }
    let sandbox = Sandbox::prepare(&request).map_err(|e| format!("upstream `{}`: {e}", spec.name))?;
    let mut command = tokio::process::Command::new(&spec.argv[0]);
    command.args(&spec.argv[1..]).env_clear();
    let passed = spec.pass_env.iter().map(String::as_str);
    for name in INHERITED.iter().copied().chain(passed) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    let std_command = command.as_std_mut();
    // A session of its own, so its group can be killed whole (`apply` makes one too; a
    // second call adds nothing); then the sandbox (whose TMPDIR wins); then the death signal.
    kyro_core::sandbox::new_session(std_command);
    sandbox.apply(std_command);
    dies_with_kyro(std_command);
    let transport = TokioChildProcess::new(command)
        .map_err(|e| format!("upstream `{}`: cannot run `{}`: {e}", spec.name, spec.argv[0]))?;
    let group = Group::led_by(transport.id());
    let watcher = Watcher {
        name: spec.name.clone(),
        registry: registry.clone(),
    };
    let service = watcher
        .serve(transport)
        .await
        .map_err(|e| format!("upstream `{}`: the MCP handshake failed: {e}", spec.name))?;
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("upstream `{}`: tools/list failed: {e}", spec.name))?;
    let (_, refused) = sync(&spec.name, registry, &tools, service.peer());
    Ok(Upstream {
        sandbox: sandbox.description().to_owned(),
        _sandbox: sandbox,
        name: spec.name.clone(),
        refused,
        _group: group,
        _service: service,
    })
}

/// Brings the registry's `server.*` tools in line with the upstream's list: new ones
/// registered, changed ones replaced, vanished ones removed; a tool the catalog selection
/// applied to the registry does not serve is neither registered nor kept. Returns the names
/// registered and the refusals.
fn sync(
    server: &str,
    registry: &Arc<Registry>,
    tools: &[rmcp::model::Tool],
    peer: &Peer<RoleClient>,
) -> (Vec<String>, Vec<(String, String)>) {
    let prefix = format!("{server}.");
    let before: Vec<String> = registry
        .snapshot()
        .descriptors()
        .filter(|d| d.category == UPSTREAM_CATEGORY && d.name.starts_with(&prefix))
        .map(|d| d.name.clone())
        .collect();
    let (mut registered, mut refused) = (Vec::new(), Vec::new());
    for tool in tools {
        let full = format!("{server}.{}", tool.name);
        let defined = match definition(server, tool, peer.clone()) {
            Ok(defined) => defined,
            Err(reason) => {
                refused.push((full, reason));
                continue;
            }
        };
        let result = if before.contains(&full) {
            registry.replace(defined)
        } else {
            registry.register(defined)
        };
        match result {
            // Kept unless a selection applied meanwhile left it out.
            Ok(snapshot) if snapshot.get(&full).is_some() => registered.push(full),
            Ok(_) => {}
            // Left out by the server's selection (and removed below if it was there).
            Err(kyro_core::RegistryError::NotAdmitted { .. }) => {}
            Err(e) => refused.push((full, e.to_string())),
        }
    }
    for gone in before.iter().filter(|n| !registered.contains(n)) {
        let _ = registry.remove(gone);
    }
    (registered, refused)
}

/// What an upstream tool without an output schema returns: its text content.
fn text_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "text": { "type": "string", "description": "The tool's text content blocks, joined by newlines." }
        },
        "required": ["text"]
    })
}

fn definition(server: &str, tool: &rmcp::model::Tool, peer: Peer<RoleClient>) -> Result<ToolDefinition, String> {
    let declared_output = tool.output_schema.as_ref().map(|s| Value::Object((**s).clone()));
    let structured = declared_output.is_some();
    let custom = CustomTool {
        name: format!("{server}.{}", tool.name),
        description: tool
            .description
            .as_deref()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("`{}` of the upstream MCP server `{server}`.", tool.name)),
        category: UPSTREAM_CATEGORY.to_owned(),
        effect: Effect::Exec,
        input_schema: Value::Object((*tool.input_schema).clone()),
        output_schema: Some(declared_output.unwrap_or_else(text_output_schema)),
    };
    let server = Arc::<str>::from(server);
    let remote = Arc::<str>::from(tool.name.as_ref());
    ToolDefinition::foreign(custom, move |arguments, _cx| {
        let (peer, server, remote) = (peer.clone(), server.clone(), remote.clone());
        Box::pin(async move { call(&peer, &server, &remote, arguments, structured).await })
    })
    .map_err(|e| e.to_string())
}

async fn call(
    peer: &Peer<RoleClient>,
    server: &str,
    tool: &str,
    arguments: Value,
    structured: bool,
) -> Result<Value, ToolError> {
    // The same kind and data as the built-in `mcp_call`'s upstream failures.
    let upstream_error = |message: String| {
        ToolError::custom("upstream", format!("upstream MCP server `{server}`: {message}"))
            .with_data(serde_json::json!({"server": server, "message": message}))
    };
    let Value::Object(arguments) = arguments else {
        return Err(upstream_error("arguments must be an object".into()));
    };
    let result = peer
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .map_err(|e| upstream_error(format!("tools/call `{tool}` failed: {e}")))?;
    let text = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return Err(upstream_error(format!("`{tool}` reported an error: {text}")));
    }
    if structured {
        return result.structured_content.ok_or_else(|| {
            upstream_error(format!(
                "`{tool}` declares an output schema but sent no structured content"
            ))
        });
    }
    Ok(json!({ "text": text }))
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

    #[cfg(feature = "builtins")]
    #[test]
    fn mcp_call_reaches_the_category_upstream_tools_are_registered_under() {
        assert_eq!(super::UPSTREAM_CATEGORY, kyro_tools::integration::UPSTREAM_CATEGORY);
    }
}
