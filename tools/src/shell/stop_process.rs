//! `stop_process`: end a background process and its group.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolError, tool};
use rustix::process::{Pid, Signal, kill_process_group};

use super::process_table::{get, remove};

/// Stop a background process: SIGTERM to its process group, then SIGKILL after `grace_ms`.
/// Returns how it ended.
#[tool(
    name = "stop_process",
    title = "Stop background process",
    category = "shell",
    effect = "exec",
    idempotent = true,
    open_world = false
)]
pub struct StopProcess {
    /// Id from `start_process`.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Ms from SIGTERM to SIGKILL; default 2000.
    #[schemars(range(max = 30000))]
    pub grace_ms: Option<u64>,
}

/// How the process ended.
#[kyro_core::output]
#[derive(Debug)]
pub struct Stopped {
    /// The id.
    pub id: String,
    /// The exit code, when it exited on its own terms.
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// True when SIGKILL was needed.
    pub killed: bool,
}

impl Execute for StopProcess {
    type Output = Stopped;

    async fn run(self, cx: &ToolContext) -> Result<Stopped, ToolError> {
        let process = get(cx, &self.id).ok_or_else(|| Failure::NoSuchRecord {
            record: "process".into(),
            key: self.id.clone(),
        })?;
        let exited = || process.output.lock().unwrap_or_else(|p| p.into_inner()).reaped;
        let group = Pid::from_raw(process.pid as i32);
        let mut killed = false;
        if !exited()
            && let Some(group) = group
        {
            let _ = kill_process_group(group, Signal::TERM);
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(self.grace_ms.unwrap_or(2000));
            while !exited() && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            if !exited() {
                let _ = kill_process_group(group, Signal::KILL);
                killed = true;
                while !exited() {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }
        }
        let output = process.output.lock().unwrap_or_else(|p| p.into_inner());
        let stopped = Stopped {
            id: self.id.clone(),
            exit_code: output.exit_code,
            signal: output.signal,
            killed,
        };
        drop(output);
        remove(&self.id);
        Ok(stopped)
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{Session, failed, ok, process_with_arg_alive, workspace};

    /// Whether the process still exists (running or zombie) after up to two seconds.
    fn zombie_or_alive(pid: u64) -> bool {
        for _ in 0..100 {
            if std::fs::read_to_string(format!("/proc/{pid}/stat")).is_err() {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }

    #[test]
    fn start_read_and_reap_a_process_that_exits() {
        let ws = workspace();
        let s = Session::new(ws.path());
        let started = ok(s.call(
            "start_process",
            json!({"argv": ["sh", "-c", "echo 'out|put'; echo err >&2; exit 4"]}),
        ));
        let id = started["id"].as_str().unwrap().to_owned();
        let read = ok(s.call("read_process_output", json!({"id": id, "wait_ms": 5000})));
        assert_eq!(
            (read["stdout"].clone(), read["stderr"].clone()),
            (json!("out|put\n"), json!("err\n"))
        );
        assert_eq!(
            (read["exited"].clone(), read["exit_code"].clone()),
            (json!(true), json!(4))
        );
        assert!(!zombie_or_alive(started["pid"].as_u64().unwrap()), "reaped, no zombie");
        assert!(matches!(
            Failure::of(&failed(s.call("read_process_output", json!({"id": id})))),
            Some(Failure::NoSuchRecord { .. })
        ));
    }

    #[test]
    fn stop_ends_the_group_and_leaves_no_zombie() {
        let ws = workspace();
        let s = Session::new(ws.path());
        let started = ok(s.call("start_process", json!({"argv": ["sleep 30 & sleep 30"], "shell": true})));
        let id = started["id"].as_str().unwrap().to_owned();
        let stopped = ok(s.call("stop_process", json!({"id": id, "grace_ms": 1000})));
        assert_eq!(stopped["signal"], 15);
        assert!(!zombie_or_alive(started["pid"].as_u64().unwrap()));
        let ignoring = ok(s.call(
            "start_process",
            json!({"argv": ["trap '' TERM; echo ready; sleep 30"], "shell": true}),
        ));
        // Stop only once the trap is set.
        while !ok(s.call("read_process_output", json!({"id": ignoring["id"]})))["stdout"]
            .as_str()
            .unwrap()
            .contains("ready")
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let stopped = ok(s.call("stop_process", json!({"id": ignoring["id"], "grace_ms": 200})));
        assert_eq!(
            (stopped["killed"].clone(), stopped["signal"].clone()),
            (json!(true), json!(9))
        );
    }

    #[test]
    fn a_background_process_outlives_the_thread_its_call_ran_on() {
        let ws = workspace();
        let s = Session::new(ws.path());
        let started = ok(s.call("start_process", json!({"argv": ["sleep", "30.24"]})));
        // The pooled thread that ran the call exits after 50 ms idle (see `Session`).
        std::thread::sleep(std::time::Duration::from_millis(500));
        let read = ok(s.call("read_process_output", json!({"id": started["id"]})));
        assert_eq!(read["exited"], false, "{read}");
        let stopped = ok(s.call("stop_process", json!({"id": started["id"], "grace_ms": 1000})));
        assert_eq!(stopped["signal"], 15);
    }

    #[test]
    fn stop_returns_at_once_when_a_grandchild_escaped_the_group() {
        let ws = workspace();
        let s = Session::new(ws.path());
        let started = ok(s.call(
            "start_process",
            json!({"argv": ["setsid sleep 30.21 & sleep 30.22"], "shell": true}),
        ));
        let stopped = ok(s.call("stop_process", json!({"id": started["id"], "grace_ms": 200})));
        assert_eq!(stopped["signal"], 15);
        assert!(
            !process_with_arg_alive("30.21"),
            "the escaped grandchild ended with the process"
        );
    }

    #[test]
    fn a_sub_agent_cannot_reach_its_parents_process() {
        let ws = workspace();
        let s = Session::new(ws.path());
        std::fs::create_dir(ws.path().join("docs")).unwrap();
        let started = ok(s.call("start_process", json!({"argv": ["sleep", "30.23"]})));
        let id = started["id"].as_str().unwrap();
        for (tool, args) in [
            ("read_process_output", json!({"id": id})),
            ("stop_process", json!({"id": id, "grace_ms": 0})),
        ] {
            let sub = ok(s.call(
                "spawn_subagent",
                json!({"description": "reach", "calls": [{"tool": tool, "arguments": args}], "roots": [{"path": "docs", "access": "read"}]}),
            ));
            assert!(sub.to_string().contains("no_such_record"), "{tool}: {sub}");
        }
        assert!(
            process_with_arg_alive("30.23"),
            "the sub-agent stopped its parent's process"
        );
        ok(s.call("stop_process", json!({"id": id, "grace_ms": 0})));
    }
}
