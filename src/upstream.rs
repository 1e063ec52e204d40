//! Upstream MCP servers: `--upstream NAME='CMD ARGS'` runs another MCP server as a child
//! process, connects to it as a client (rmcp), and registers each of its tools as the
//! dynamic tool `NAME.tool`.
//!
//! An upstream tool keeps its declared input schema (brought to canonical form as a foreign
//! schema: descriptions optional, draft-07 accepted where it means the same; or refused
//! with the reason) and goes through the same boundary as a built-in: validated,
//! authorized, executed, receipted. Its effect is `exec` whatever the upstream says: the
//! upstream is a program kyro runs, and its annotations are never taken as policy.

use std::sync::Arc;

use kyro_core::UPSTREAM_CATEGORY;
use kyro_core::policy::Scope;
use kyro_core::sandbox::{Sandbox, SandboxRequest};
use kyro_core::{CustomTool, Effect, Registry, ToolDefinition, ToolError};
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// One `--upstream` argument, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// The name tools are registered under (`NAME.tool`).
    pub name: String,
    /// The program and its arguments.
    pub argv: Vec<String>,
}

impl std::str::FromStr for UpstreamSpec {
    type Err = String;

    /// `NAME=CMD ARGS`, the command split like a shell would (quotes, no expansion).
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
        let argv = shell_words::split(command).map_err(|e| format!("upstream `{name}`: {e}"))?;
        if argv.is_empty() {
            return Err(format!("upstream `{name}` has no command"));
        }
        Ok(UpstreamSpec {
            name: name.to_owned(),
            argv,
        })
    }
}

/// A connected upstream; the child process is stopped when this is dropped.
pub struct Upstream {
    /// Its configured name.
    pub name: String,
    /// Tools left out, with why.
    pub refused: Vec<(String, String)>,
    /// The OS sandbox it runs under, or why there is none.
    pub sandbox: String,
    _service: RunningService<RoleClient, Watcher>,
    _sandbox: Sandbox,
}

/// The client side of an upstream connection: follows the upstream's
/// `notifications/tools/list_changed` into the registry (whose own change notifies
/// kyro's clients in turn).
pub struct Watcher {
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

/// How long an upstream has to answer the handshake and its first `tools/list`.
pub const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts the upstream, lists its tools and registers each one that can be, within
/// [`START_TIMEOUT`]: an upstream that does not answer in time is stopped and reported.
/// It runs under the OS sandbox of `scope` (`[sandbox]`, or its own
/// `[sandbox.upstreams.NAME]`).
pub async fn connect(spec: &UpstreamSpec, registry: &Arc<Registry>, scope: &Scope) -> Result<Upstream, String> {
    tokio::time::timeout(START_TIMEOUT, connect_now(spec, registry, scope))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "upstream `{}` did not answer the handshake and tools/list within {} s; it was stopped",
                spec.name,
                START_TIMEOUT.as_secs()
            ))
        })
}

async fn connect_now(spec: &UpstreamSpec, registry: &Arc<Registry>, scope: &Scope) -> Result<Upstream, String> {
    let sandbox = Sandbox::prepare(&SandboxRequest::upstream(scope, &spec.name))
        .map_err(|e| format!("upstream `{}`: {e}", spec.name))?;
    let mut command = tokio::process::Command::new(&spec.argv[0]);
    command.args(&spec.argv[1..]);
    sandbox.apply(command.as_std_mut());
    let transport = TokioChildProcess::new(command)
        .map_err(|e| format!("upstream `{}`: cannot run `{}`: {e}", spec.name, spec.argv[0]))?;
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
        _service: service,
    })
}

/// Brings the registry's `server.*` tools in line with the upstream's list: new ones
/// registered, changed ones replaced, vanished ones removed. Returns the names registered
/// and the refusals.
fn sync(
    server: &str,
    registry: &Registry,
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
        let result = definition(server, tool, peer.clone()).and_then(|d| {
            if before.contains(&full) {
                registry.replace(d)
            } else {
                registry.register(d)
            }
            .map_err(|e| e.to_string())
        });
        match result {
            Ok(_) => registered.push(full),
            Err(reason) => refused.push((full, reason)),
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
}
