//! `spawn_subagent`: run calls under a child scope that is a subset of the caller's.

use kyro_core::policy::{Access, RootSpec, ScopeRequest};
use kyro_core::{Capability, Execute, ToolContext, ToolError, tool};

use super::run_batch::{BatchCall, BatchMode, CallResult, run_calls};

/// Run calls in order as a sub-agent, one level deeper, under a child scope within the caller's
/// capabilities and roots (receipts linked). No model is called. Asking for more than the caller
/// holds, or nesting too deep, is refused before any call runs.
#[tool(name = "spawn_subagent", title = "Run calls as a sub-agent", category = "orchestration", effect = "state", capabilities = ["orchestrate"], destructive = true, open_world = true)]
pub struct SpawnSubagent {
    /// What it is for.
    #[schemars(length(min = 1, max = 200))]
    pub description: String,
    /// The calls, run in order.
    #[schemars(length(min = 1, max = 25))]
    pub calls: Vec<BatchCall>,
    /// Capabilities to keep (a subset of the caller's); default all.
    pub capabilities: Option<Vec<Capability>>,
    /// Roots to keep, each inside the caller's; default the caller's.
    pub roots: Option<Vec<SubagentRoot>>,
    /// Stop at the first call not ok.
    #[serde(default)]
    pub stop_on_error: bool,
}

/// A root.
#[kyro_core::input]
#[derive(Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct SubagentRoot {
    /// A directory inside the caller's roots.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// `read` or `read_write` (only where the caller may write).
    pub access: Access,
}

/// What the sub-agent did.
#[kyro_core::output]
#[derive(Debug)]
pub struct SubagentResult {
    /// The sub-agent's nesting depth.
    pub depth: u32,
    /// One result per call run.
    pub results: Vec<CallResult>,
}

impl Execute for SpawnSubagent {
    type Output = SubagentResult;

    async fn run(self, cx: &ToolContext) -> Result<SubagentResult, ToolError> {
        let request = ScopeRequest {
            capabilities: self.capabilities,
            roots: self.roots.map(|roots| {
                roots
                    .into_iter()
                    .map(|r| RootSpec {
                        path: r.path.into(),
                        access: r.access,
                    })
                    .collect()
            }),
        };
        let child = cx.narrow(&request).map_err(|error| ToolError::Denied {
            reason: kyro_core::receipt::Denial::Scope { error },
        })?;
        let results = run_calls(cx, Some(&child), &self.calls, BatchMode::Sequential, self.stop_on_error).await;
        Ok(SubagentResult {
            depth: child.scope().depth(),
            results,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    #[test]
    fn a_narrowed_sub_agent_is_held_to_its_scope() {
        let ws = workspace();
        std::fs::create_dir(ws.path().join("docs")).unwrap();
        std::fs::write(ws.path().join("docs/a.txt"), "in").unwrap();
        std::fs::write(ws.path().join("secret.txt"), "out").unwrap();
        let r = ok(call(
            ws.path(),
            "spawn_subagent",
            json!({
                "description": "read the docs",
                "capabilities": ["fs.read", "orchestrate"],
                "roots": [{"path": "docs", "access": "read"}],
                "calls": [
                    {"tool": "read_file", "arguments": {"path": "a.txt"}},
                    {"tool": "read_file", "arguments": {"path": "../secret.txt"}},
                    {"tool": "write_file", "arguments": {"path": "b.txt", "content": "x"}}
                ]
            }),
        ));
        assert_eq!(r["depth"], 1);
        let outcomes: Vec<&str> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["outcome"].as_str().unwrap())
            .collect();
        assert_eq!(outcomes, ["ok", "denied", "denied"]);
        assert_eq!(r["results"][0]["result"]["content"], "in");
        assert!(!ws.path().join("docs/b.txt").exists());
    }

    #[test]
    fn widening_and_nesting_too_deep_are_refused_before_anything_runs() {
        let ws = workspace();
        let widening = call(
            ws.path(),
            "spawn_subagent",
            json!({"description": "x", "roots": [{"path": "..", "access": "read"}],
                   "calls": [{"tool": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]}),
        );
        assert!(
            matches!(
                widening,
                kyro_core::Outcome::Denied {
                    reason: kyro_core::receipt::Denial::Scope { .. },
                    ..
                }
            ),
            "{widening:?}"
        );
        assert!(!ws.path().join("w.txt").exists());
        // Four levels of sub-agents: the policy's default depth is 3.
        let mut nested = json!({"tool": "calculate", "arguments": {"expression": "1"}});
        for _ in 0..4 {
            nested = json!({"tool": "spawn_subagent", "arguments": {"description": "nest", "calls": [nested]}});
        }
        let r = ok(call(
            ws.path(),
            nested["tool"].as_str().unwrap(),
            nested["arguments"].clone(),
        ));
        let mut level = &r;
        for _ in 0..2 {
            level = &level["results"][0]["result"];
        }
        let deepest = &level["results"][0];
        assert_eq!(deepest["outcome"], "denied");
        assert_eq!(deepest["error"]["reason"]["kind"], "scope");
        assert_eq!(deepest["error"]["reason"]["error"]["kind"], "too_deep");
    }
}
