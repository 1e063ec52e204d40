//! `run_batch`: several tool calls through the boundary, in order or together.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use kyro_core::{Call, Execute, Execution, Narrowed, OutcomeKind, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// Run tool calls in sequence or in parallel, each through the boundary under the caller's scope
/// with its own outcome; one needing approval returns `approval_required`, unrun.
#[tool(name = "run_batch", title = "Run a batch of calls", category = "orchestration", effect = "state", capabilities = ["orchestrate"], destructive = true, open_world = true)]
pub struct RunBatch {
    /// The calls.
    #[schemars(length(min = 1, max = 25))]
    pub calls: Vec<BatchCall>,
    /// `sequential` (default) or `parallel`.
    #[serde(default)]
    pub mode: BatchMode,
    /// Sequential: stop at the first call not ok.
    #[serde(default)]
    pub stop_on_error: bool,
}

/// One call.
#[kyro_core::input]
#[derive(Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct BatchCall {
    /// Tool name or alias.
    #[schemars(length(min = 1, max = 128))]
    pub tool: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// How a batch runs its calls.
#[kyro_core::input]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BatchMode {
    /// One after another, in order.
    #[default]
    Sequential,
    /// All at once.
    Parallel,
}

/// The outcomes, in the order of the calls.
#[kyro_core::output]
#[derive(Debug)]
pub struct BatchResult {
    /// One per call that ran or was refused; calls after a stop are absent.
    pub results: Vec<CallResult>,
}

/// One call's outcome.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CallResult {
    /// The tool asked for.
    pub tool: String,
    /// The outcome kind.
    pub outcome: OutcomeKind,
    /// The result, when ok.
    pub result: Option<Value>,
    /// The error object, when not ok.
    pub error: Option<Value>,
    /// The call's receipt id.
    pub call_id: String,
}

impl CallResult {
    pub(crate) fn from_execution(tool: &str, execution: Execution) -> CallResult {
        let json = execution.outcome.to_json();
        CallResult {
            tool: tool.to_owned(),
            outcome: execution.outcome.kind(),
            result: json.get("result").cloned(),
            error: json.get("error").cloned(),
            call_id: execution.receipt.call_id,
        }
    }
}

/// Runs `calls` as children of the call `cx` belongs to, in its scope or in `narrowed`,
/// sequentially (optionally stopping at the first failure) or concurrently.
pub(crate) async fn run_calls(
    cx: &ToolContext,
    narrowed: Option<&Narrowed>,
    calls: &[BatchCall],
    mode: BatchMode,
    stop_on_error: bool,
) -> Vec<CallResult> {
    let run = |c: &BatchCall| {
        let call = Call::new(c.tool.clone(), Value::Object(c.arguments.clone()));
        async move {
            match narrowed {
                Some(scope) => cx.call_in(call, scope).await,
                None => cx.call(call).await,
            }
        }
    };
    match mode {
        BatchMode::Sequential => {
            let mut results = Vec::new();
            for c in calls {
                let execution = run(c).await;
                let failed = execution.outcome.kind() != OutcomeKind::Ok;
                results.push(CallResult::from_execution(&c.tool, execution));
                if failed && stop_on_error {
                    break;
                }
            }
            results
        }
        BatchMode::Parallel => {
            let futures: Vec<Pin<Box<dyn Future<Output = Execution> + Send + '_>>> = calls
                .iter()
                .map(|c| -> Pin<Box<dyn Future<Output = Execution> + Send + '_>> { Box::pin(run(c)) })
                .collect();
            join_all(futures)
                .await
                .into_iter()
                .zip(calls)
                .map(|(execution, c)| CallResult::from_execution(&c.tool, execution))
                .collect()
        }
    }
}

/// Polls every future until all are done; outputs in input order.
async fn join_all<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + Send + '_>>>) -> Vec<T> {
    let mut outputs: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, future) in futures.iter_mut().enumerate() {
            if outputs[i].is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => outputs[i] = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

impl Execute for RunBatch {
    type Output = BatchResult;

    async fn run(self, cx: &ToolContext) -> Result<BatchResult, ToolError> {
        let results = run_calls(cx, None, &self.calls, self.mode, self.stop_on_error).await;
        Ok(BatchResult { results })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testing::{call, ok, workspace};

    /// (start, end) in nanoseconds of each call of a batch of three that print the time,
    /// sleep, and print it again.
    fn intervals(mode: &str) -> Vec<(u128, u128)> {
        let ws = workspace();
        let timed =
            json!({"tool": "run_command", "arguments": {"argv": ["sh", "-c", "date +%s%N; sleep 0.3; date +%s%N"]}});
        let r = ok(call(
            ws.path(),
            "run_batch",
            json!({"mode": mode, "calls": [timed, timed, timed]}),
        ));
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let out = c["result"]["stdout"].as_str().unwrap_or_else(|| panic!("{c}"));
                let mut times = out.lines().map(|l| l.trim().parse::<u128>().unwrap());
                (times.next().unwrap(), times.next().unwrap())
            })
            .collect()
    }

    #[test]
    fn parallel_calls_run_at_the_same_time_and_sequential_ones_one_after_another() {
        let parallel = intervals("parallel");
        let latest_start = parallel.iter().map(|i| i.0).max().unwrap();
        let earliest_end = parallel.iter().map(|i| i.1).min().unwrap();
        assert!(latest_start < earliest_end, "the three calls overlap: {parallel:?}");
        let sequential = intervals("sequential");
        for pair in sequential.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "one after another: {sequential:?}");
        }
    }

    #[test]
    fn runs_each_call_through_the_boundary_with_its_own_outcome() {
        let ws = workspace();
        std::fs::write(ws.path().join("a.txt"), "one\n").unwrap();
        for mode in ["sequential", "parallel"] {
            let r = ok(call(
                ws.path(),
                "run_batch",
                json!({"mode": mode, "calls": [
                    {"tool": "cat", "arguments": {"path": "a.txt"}},
                    {"tool": "calculate", "arguments": {"expression": "2 + 2"}},
                    {"tool": "read_file", "arguments": {"path": "a.txt", "limit": "x"}},
                    {"tool": "no_such_tool"},
                    {"tool": "read_file", "arguments": {"path": "../outside"}}
                ]}),
            ));
            let outcomes: Vec<&str> = r["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["outcome"].as_str().unwrap())
                .collect();
            assert_eq!(
                outcomes,
                ["ok", "ok", "invalid_arguments", "unknown_tool", "denied"],
                "{mode}"
            );
            assert_eq!(r["results"][0]["result"]["content"], "one\n");
            assert_eq!(r["results"][1]["result"]["value"], 4);
        }
    }

    #[test]
    fn sequential_mode_can_stop_at_the_first_failure() {
        let ws = workspace();
        let r = ok(call(
            ws.path(),
            "run_batch",
            json!({"stop_on_error": true, "calls": [
                {"tool": "read_file", "arguments": {"path": "missing"}},
                {"tool": "write_file", "arguments": {"path": "never.txt", "content": "x"}}
            ]}),
        ));
        assert_eq!(r["results"].as_array().unwrap().len(), 1);
        assert!(!ws.path().join("never.txt").exists());
    }
}
