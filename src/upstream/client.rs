//! The client side: the upstream started under its sandbox, spoken to over rmcp, its
//! tools registered and kept in step with its list.

use std::sync::{Arc, Mutex, MutexGuard};

use kyro_core::policy::Scope;

use kyro_core::sandbox::{Sandbox, SandboxRequest};
use kyro_core::{CustomTool, Effect, Registry, ToolDefinition, ToolError};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::spec::{INHERITED, UpstreamSpec};
use super::{UPSTREAM_CATEGORY, UpstreamSandbox};

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
                        kyro_core::log::warn(&format!("upstream `{name}`: `{tool}` not registered: {reason}"));
                    }
                }
                Err(e) => kyro_core::log::warn(&format!("upstream `{name}`: tools/list after a change failed: {e}")),
            }
        });
    }
}

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
