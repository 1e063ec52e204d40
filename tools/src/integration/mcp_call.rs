//! `mcp_call`: a tool of an upstream MCP server, by server and tool name.

use crate::Failure;
use kyro_core::{Execute, Outcome, ToolContext, ToolError, tool};
use serde_json::{Map, Value};

/// The category kyro's server registers an upstream server's tools under (`NAME.tool`):
/// the only tools `mcp_call` reaches.
pub const UPSTREAM_CATEGORY: &str = "upstream";

/// Call a tool of an upstream MCP server that kyro connects to (`kyro mcp --upstream
/// NAME='CMD ARGS'`); the same as calling `NAME.tool` directly, for clients that cannot
/// use dotted tool names.
///
/// The call goes through kyro's boundary as `NAME.tool`: validated against the upstream's
/// declared schema, authorized, receipted (linked to this call). Only upstream tools can
/// be reached this way.
#[tool(
    name = "mcp_call",
    title = "Call an upstream MCP tool",
    category = "integration",
    effect = "exec"
)]
pub struct McpCall {
    /// The upstream server's configured name.
    #[schemars(regex(pattern = "^[a-z][a-z0-9_]{0,31}$"))]
    pub server: String,
    /// The tool's name on that server.
    #[schemars(length(min = 1, max = 64))]
    pub tool: String,
    /// The tool's arguments object, as its inputSchema describes (checked against it when
    /// the inner call is made).
    #[serde(default)]
    #[tool(any_value)]
    pub arguments: Map<String, Value>,
}

/// The upstream tool's result.
#[kyro_core::output]
#[derive(Debug)]
pub struct McpCallResult {
    /// The tool as kyro registered it: `server.tool`.
    pub tool: String,
    /// Its structured result (or `{"text": ...}` when it declares no output schema).
    pub result: Value,
}

impl Execute for McpCall {
    type Output = McpCallResult;

    async fn run(self, cx: &ToolContext) -> Result<McpCallResult, ToolError> {
        let name = format!("{}.{}", self.server, self.tool);
        // Only upstream tools, and only under this tool's own effect: the approval carried
        // below must never stand for a different kind of effect.
        let upstream = cx.catalog().describe(&name).is_some_and(|d| {
            d.category == UPSTREAM_CATEGORY && d.name == name && d.effect == <McpCall as kyro_core::Tool>::SPEC.effect
        });
        if !upstream {
            return Err(crate::Failure::UnknownTool { name }.into());
        }
        // This call was authorized with the server, tool and arguments in its fingerprint,
        // under the same effect as every upstream tool; the inner call is that call, so
        // the runtime lets this call's authorization stand for it (once).
        let execution = cx.forward(&name, Value::Object(self.arguments)).await;
        match execution.outcome {
            Outcome::Ok { result, .. } => Ok(McpCallResult { tool: name, result }),
            Outcome::ExecutionFailed { error, .. } => Err(error),
            other => Err(Failure::Upstream {
                server: self.server,
                message: other.to_json().to_string(),
            }
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use kyro_core::policy::{ApprovalRule, ApprovalRules};
    use kyro_core::{Call, CustomTool, Effect, Outcome, Policy, Registry, Runtime, ToolDefinition, Workspace};
    use serde_json::json;

    fn custom(name: &str, category: &str, effect: Effect, ran: Arc<AtomicBool>) -> ToolDefinition {
        let tool = CustomTool {
            name: name.into(),
            description: "test".into(),
            category: category.into(),
            effect,
            input_schema: json!({"type": "object"}),
            output_schema: Some(json!({"type": "object"})),
        };
        ToolDefinition::custom(tool, move |_, _| {
            ran.store(true, Ordering::SeqCst);
            Box::pin(async { Ok(json!({})) })
        })
        .unwrap()
    }

    #[test]
    fn mcp_call_reaches_only_upstream_tools_under_its_own_effect() {
        let registry = Arc::new(Registry::with_catalog(crate::BUILTINS).unwrap());
        let ran = Arc::new(AtomicBool::new(false));
        registry
            .register(custom("up.files", "files", Effect::Exec, ran.clone()))
            .unwrap();
        registry
            .register(custom(
                "up.writes",
                super::UPSTREAM_CATEGORY,
                Effect::Write,
                ran.clone(),
            ))
            .unwrap();
        let fine = Arc::new(AtomicBool::new(false));
        registry
            .register(custom("up.fine", super::UPSTREAM_CATEGORY, Effect::Exec, fine.clone()))
            .unwrap();
        // Exec runs without asking; writes must be approved.
        let mut approvals = ApprovalRules::uniform(ApprovalRule::Auto);
        approvals.write = ApprovalRule::Ask;
        let policy = Policy {
            approvals,
            ..Policy::default()
        };
        let ws = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for tool in ["files", "writes"] {
            let outcome =
                rt.block_on(runtime.execute_call(Call::new("mcp_call", json!({"server": "up", "tool": tool}))));
            match outcome {
                Outcome::ExecutionFailed { error, .. }
                    if let Some(crate::Failure::UnknownTool { name }) = crate::Failure::of(&error) =>
                {
                    assert_eq!(name, format!("up.{tool}"))
                }
                other => panic!("{tool}: {other:?}"),
            }
        }
        assert!(
            !ran.load(Ordering::SeqCst),
            "a non-upstream or write tool ran through mcp_call"
        );
        let outcome = rt.block_on(runtime.execute_call(Call::new("mcp_call", json!({"server": "up", "tool": "fine"}))));
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        assert!(fine.load(Ordering::SeqCst));
    }
}
