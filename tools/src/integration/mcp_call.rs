//! `mcp_call`: a tool of an upstream MCP server, by server and tool name.

use crate::Failure;
use kyro_core::policy::{MatchedRule, Scope};
use kyro_core::{Effect, Execute, Outcome, ToolContext, ToolError, tool};
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

impl McpCall {
    /// The tool this call reaches: `server.tool`.
    fn target(&self) -> String {
        format!("{}.{}", self.server, self.tool)
    }
}

impl Execute for McpCall {
    type Output = McpCallResult;

    async fn run(self, cx: &ToolContext) -> Result<McpCallResult, ToolError> {
        let name = self.target();
        // Only upstream tools, and only under this tool's own effect: the approval carried
        // below must never stand for a different kind of effect.
        let upstream = cx.catalog().describe(&name).is_some_and(|d| {
            d.category == UPSTREAM_CATEGORY && d.name == name && d.effect == <McpCall as kyro_core::Tool>::SPEC.effect
        });
        if !upstream {
            return Err(crate::Failure::UnknownTool { name }.into());
        }
        // The inner call is decided by its own rules; it carries this call's authorization
        // only when a person approved this call's exact arguments (server, tool and
        // arguments are all in its fingerprint), once.
        let execution = cx.forward(&name, Value::Object(self.arguments)).await;
        match execution.outcome {
            Outcome::Ok { result, .. } => Ok(McpCallResult { tool: name, result }),
            Outcome::ExecutionFailed { error, .. } => Err(error),
            Outcome::Denied { reason, .. } => Err(ToolError::Denied { reason }),
            Outcome::ApprovalRequired { tool, fingerprint, .. } => {
                Err(Failure::ForwardNeedsApproval { tool, fingerprint }.into())
            }
            other => Err(Failure::Upstream {
                server: self.server,
                message: other.to_json().to_string(),
            }
            .into()),
        }
    }

    /// The upstream tool's own rule decides this call, so that what its rule asks is asked
    /// here, of this call, where the person's approval covers the inner call's exact
    /// arguments, and what it denies is denied here. Without one, `mcp_call`'s own rule
    /// for the tool it reaches is held to the `exec` rule the upstream tool runs under.
    fn rule(&self, scope: &Scope) -> Option<MatchedRule> {
        let target = self.target();
        let approvals = scope.approvals();
        approvals.for_tool(&target).or_else(|| {
            let named = approvals.for_tool(<McpCall as kyro_core::Tool>::SPEC.name);
            named.map(|_| MatchedRule {
                decision: approvals.for_effect(Effect::Exec),
                rule: format!("[approvals] `exec` rule, which `{target}` runs under"),
                each_call: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use kyro_core::grants::{ApprovalStore, MemoryApprovalStore, NewGrant, now_ms};
    use kyro_core::policy::{ApprovalRule, ApprovalRules};
    use kyro_core::receipt::{CanonicalCall, Decision, Denial};
    use kyro_core::{
        ApprovalToken, Call, Caller, CustomTool, Effect, Observer, Outcome, Policy, Receipt, Registry, Runtime,
        ToolDefinition, Workspace,
    };
    use serde_json::{Value, json};

    /// Every receipt's tool and decision, in order.
    #[derive(Default)]
    struct Decisions(Mutex<Vec<(String, Decision)>>);

    impl Observer for Decisions {
        fn observe(&self, receipt: &Receipt, _: Option<&CanonicalCall>, _: &Outcome) {
            let mut seen = self.0.lock().unwrap();
            seen.push((receipt.tool.clone(), receipt.decision.clone()));
        }
    }

    impl Decisions {
        fn take(&self) -> Vec<(String, Decision)> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    /// A runtime over the built-ins and two upstream tools, `up.wipe` and `up.add`, whose
    /// runs are counted; exec runs without asking, and `tools` are the `[approvals.tools]`.
    struct Upstreams {
        runtime: Runtime,
        wiped: Arc<AtomicBool>,
        receipts: Arc<Decisions>,
        rt: tokio::runtime::Runtime,
        _ws: tempfile::TempDir,
    }

    impl Upstreams {
        fn new(exec: ApprovalRule, tools: &[(&str, ApprovalRule)]) -> Upstreams {
            let registry = Arc::new(Registry::with_catalog(crate::BUILTINS).unwrap());
            let wiped = Arc::new(AtomicBool::new(false));
            for (name, ran) in [("up.wipe", wiped.clone()), ("up.add", Arc::default())] {
                registry
                    .register(custom(name, super::UPSTREAM_CATEGORY, Effect::Exec, ran))
                    .unwrap();
            }
            let mut approvals = ApprovalRules::uniform(ApprovalRule::Auto);
            approvals.exec = exec;
            approvals.tools = tools.iter().map(|&(name, rule)| (name.to_owned(), rule)).collect();
            let policy = Policy {
                approvals,
                ..Policy::default()
            };
            let ws = tempfile::tempdir().unwrap();
            let receipts = Arc::new(Decisions::default());
            let runtime = Runtime::new(registry, Workspace::new(ws.path()).unwrap(), &policy)
                .unwrap()
                .with_observer(receipts.clone());
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            Upstreams {
                runtime,
                wiped,
                receipts,
                rt,
                _ws: ws,
            }
        }

        fn call(&self, call: Call) -> Outcome {
            self.rt.block_on(self.runtime.execute_call(call))
        }

        fn fingerprint(&self, tool: &str, arguments: &Value) -> String {
            self.runtime
                .fingerprint(tool, arguments, self.runtime.scope())
                .to_string()
        }
    }

    fn wipe() -> Value {
        json!({"server": "up", "tool": "wipe", "arguments": {"all": true}})
    }

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

    #[test]
    fn an_upstream_tools_ask_rule_asks_its_mcp_call_and_only_a_persons_approval_carries() {
        let up = Upstreams::new(ApprovalRule::Auto, &[("up.wipe", ApprovalRule::Ask)]);
        // Called directly, it is asked; through mcp_call, the mcp_call is asked.
        let direct = up.call(Call::new("up.wipe", json!({"all": true})));
        assert!(matches!(direct, Outcome::ApprovalRequired { .. }), "{direct:?}");
        let forwarded = up.call(Call::new("mcp_call", wipe()));
        let Outcome::ApprovalRequired { tool, fingerprint, .. } = forwarded else {
            panic!("{forwarded:?}")
        };
        assert_eq!(tool, "mcp_call");
        assert!(!up.wiped.load(Ordering::SeqCst), "up.wipe ran unasked through mcp_call");
        let receipts = up.receipts.take();
        assert!(
            !receipts.iter().any(|(_, d)| *d == Decision::Approved),
            "approved though no one approved: {receipts:?}"
        );
        // The person approves exactly this mcp_call: that covers the inner call, once.
        let approved = up.call(Call::new("mcp_call", wipe()).approved(ApprovalToken::for_fingerprint(&fingerprint)));
        assert!(matches!(approved, Outcome::Ok { .. }), "{approved:?}");
        assert!(up.wiped.load(Ordering::SeqCst));
        assert_eq!(
            up.receipts.take(),
            [
                ("up.wipe".to_owned(), Decision::Approved),
                ("mcp_call".to_owned(), Decision::Approved)
            ]
        );
        // Another upstream tool, under the `exec` rule: allowed, and no receipt says approved.
        let add = json!({"server": "up", "tool": "add"});
        let allowed = up.call(Call::new("mcp_call", add));
        assert!(matches!(allowed, Outcome::Ok { .. }), "{allowed:?}");
        assert_eq!(
            up.receipts.take(),
            [
                ("up.add".to_owned(), Decision::Allowed),
                ("mcp_call".to_owned(), Decision::Allowed)
            ]
        );
    }

    #[test]
    fn an_upstream_tools_deny_rule_holds_through_mcp_call() {
        let up = Upstreams::new(ApprovalRule::Auto, &[("up.wipe", ApprovalRule::Deny)]);
        let fingerprint = up.fingerprint("mcp_call", &wipe());
        for call in [
            Call::new("mcp_call", wipe()),
            Call::new("mcp_call", wipe()).approved(ApprovalToken::for_fingerprint(&fingerprint)),
        ] {
            match up.call(call) {
                Outcome::Denied {
                    reason: Denial::RuleForbids { rule },
                    ..
                } => assert!(rule.contains("`up.wipe`"), "{rule}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(!up.wiped.load(Ordering::SeqCst));
    }

    #[test]
    fn mcp_calls_own_auto_rule_does_not_lift_the_exec_rule_an_upstream_tool_runs_under() {
        let up = Upstreams::new(ApprovalRule::Ask, &[("mcp_call", ApprovalRule::Auto)]);
        let outcome = up.call(Call::new("mcp_call", wipe()));
        assert!(
            matches!(&outcome, Outcome::ApprovalRequired { tool, .. } if tool == "mcp_call"),
            "{outcome:?}"
        );
        assert!(!up.wiped.load(Ordering::SeqCst));
        // An `[approvals.tools]` rule for the upstream tool itself is what lets it run.
        let up = Upstreams::new(
            ApprovalRule::Ask,
            &[("mcp_call", ApprovalRule::Auto), ("up.wipe", ApprovalRule::Auto)],
        );
        let outcome = up.call(Call::new("mcp_call", wipe()));
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
    }

    #[test]
    fn a_grant_of_mcp_call_is_no_approval_of_the_upstream_tool_it_reaches() {
        let mut up = Upstreams::new(ApprovalRule::Auto, &[("up.wipe", ApprovalRule::Ask)]);
        let store = Arc::new(MemoryApprovalStore::default());
        let grant = |tool: &str| NewGrant {
            caller: Caller::local(),
            tool: tool.to_owned(),
            arguments: None,
            expires_at_ms: now_ms() + 60_000,
        };
        store.add_grant(grant("mcp_call")).unwrap();
        up.runtime = up.runtime.clone().with_approval_store(store.clone());
        match up.call(Call::new("mcp_call", wipe())) {
            Outcome::ExecutionFailed { error, .. }
                if let Some(crate::Failure::ForwardNeedsApproval { tool, .. }) = crate::Failure::of(&error) =>
            {
                assert_eq!(tool, "up.wipe")
            }
            other => panic!("{other:?}"),
        }
        assert!(!up.wiped.load(Ordering::SeqCst), "a grant of mcp_call ran up.wipe");
        let receipts = up.receipts.take();
        assert!(
            matches!(receipts[0], (ref t, Decision::ApprovalRequired) if t == "up.wipe"),
            "{receipts:?}"
        );
        // The person's grant of the upstream tool itself holds for it.
        store.add_grant(grant("up.wipe")).unwrap();
        let outcome = up.call(Call::new("mcp_call", wipe()));
        assert!(matches!(outcome, Outcome::Ok { .. }), "{outcome:?}");
        let receipts = up.receipts.take();
        assert!(
            matches!(receipts[0], (ref t, Decision::Granted { .. }) if t == "up.wipe"),
            "{receipts:?}"
        );
    }
}
