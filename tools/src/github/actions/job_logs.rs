//! GitHub's `actions` toolset: the end of job logs, read from the signed address GitHub
//! redirects to (without the token, under the network policy) as a stream: every line
//! counted, the last ones kept in a bounded ring, and what was left out reported.

use std::collections::VecDeque;
use std::io::Read;

use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Failure;
use crate::github::client::{GitHub, invalid};
use crate::integration::untrusted::shown;

/// Most bytes of one job's log read (the lines past it are not counted, and that is said).
const MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;
/// Most bytes of the lines kept (the tail).
const MAX_TAIL_BYTES: usize = 2 * 1024 * 1024;
/// Most bytes of one line kept.
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Most failed jobs whose logs one call reads.
const MAX_FAILED_JOBS: usize = 10;
/// The longest reading one log may take.
const LOG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Read the last `tail_lines` lines of GitHub Actions job logs: one job's (`job_id`) or each failed
/// job's of a run (`run_id` with `failed_only`, at most 10); at most 2 MiB per log, 64 KiB per
/// line. Fetched without the token, under the network policy.
#[tool(
    name = "github_get_job_logs",
    title = "Get GitHub job logs",
    category = "github.actions",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["get_job_logs"]
)]
pub struct GitHubGetJobLogs {
    /// Repo owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repo name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// One job.
    #[schemars(range(min = 1))]
    pub job_id: Option<u64>,
    /// A run, with `failed_only`.
    #[schemars(range(min = 1))]
    pub run_id: Option<u64>,
    /// Every failed job of `run_id`.
    #[serde(default)]
    pub failed_only: bool,
    /// Lines from the end of each log; default 500.
    #[schemars(range(min = 1, max = 5000))]
    pub tail_lines: Option<u32>,
}

/// Job logs.
#[kyro_core::output]
#[derive(Debug)]
pub struct JobLogs {
    /// Each job's log end.
    pub logs: Vec<JobLog>,
    /// With `failed_only`: how many jobs the run has.
    pub total_jobs: Option<u64>,
}

/// One job's log end.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobLog {
    /// The job's id.
    pub job_id: u64,
    /// Its name, when known.
    pub job_name: Option<String>,
    /// The last lines.
    pub content: String,
    /// Lines in the whole log (in its first `read_bytes` when `complete` is false).
    pub total_lines: u64,
    /// True when `content` is less than the whole log: earlier lines left out, a line
    /// cut, or the log longer than kyro reads.
    pub truncated: bool,
    /// False when the log was longer than kyro reads (256 MiB): its end is not shown.
    pub complete: bool,
    /// Bytes of the log read.
    pub read_bytes: u64,
}

/// The end of a log as it streams by: every line counted, the last `keep` of them (and at
/// most `MAX_TAIL_BYTES` of them) kept.
struct Tail {
    keep: usize,
    ring: VecDeque<Vec<u8>>,
    ring_bytes: usize,
    /// The line being read, its first `MAX_LINE_BYTES`, and how much of it was not kept.
    line: Vec<u8>,
    line_cut: u64,
    lines: u64,
    /// Whether a line was cut.
    cut: bool,
}

impl Tail {
    fn new(keep: usize) -> Tail {
        Tail {
            keep,
            ring: VecDeque::new(),
            ring_bytes: 0,
            line: Vec::new(),
            line_cut: 0,
            lines: 0,
            cut: false,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            self.extend(&bytes[..end]);
            self.end_line();
            bytes = &bytes[end + 1..];
        }
        self.extend(bytes);
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES - self.line.len();
        let taken = bytes.len().min(room);
        self.line.extend_from_slice(&bytes[..taken]);
        self.line_cut += (bytes.len() - taken) as u64;
    }

    fn end_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        if self.line_cut > 0 {
            line.extend_from_slice(format!("… [{} more bytes of this line]", self.line_cut).as_bytes());
            self.line_cut = 0;
            self.cut = true;
        } else if line.last() == Some(&b'\r') {
            line.pop();
        }
        self.lines += 1;
        self.ring_bytes += line.len();
        self.ring.push_back(line);
        // Lines dropped here are told by `lines` past the ring's length.
        while self.ring.len() > self.keep || (self.ring_bytes > MAX_TAIL_BYTES && self.ring.len() > 1) {
            let dropped = self.ring.pop_front().unwrap_or_default();
            self.ring_bytes -= dropped.len();
        }
    }

    /// The last line, when the log does not end with a newline.
    fn finish(&mut self) {
        if !self.line.is_empty() || self.line_cut > 0 {
            self.end_line();
        }
    }

    fn text(&self) -> String {
        let lines: Vec<String> = self
            .ring
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        shown(&lines.join("\n"))
    }
}

/// A log read: its tail, lines, bytes, and whether it went past `max_bytes`.
/// `stopped` ends the reading when the call is stopped.
fn tail_of(
    reader: &mut dyn Read,
    keep: usize,
    max_bytes: u64,
    stopped: &dyn Fn() -> Result<(), ToolError>,
) -> Result<(Tail, u64, bool), ToolError> {
    let mut tail = Tail::new(keep);
    let mut buffer = vec![0; 64 * 1024];
    let mut read_bytes = 0u64;
    let failed = |e: std::io::Error| -> ToolError {
        Failure::Unreachable {
            service: "github".into(),
            message: format!("reading the log: {e}"),
        }
        .into()
    };
    while read_bytes < max_bytes {
        stopped()?;
        let want = buffer.len().min((max_bytes - read_bytes) as usize);
        let n = match reader.read(&mut buffer[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(failed(e)),
        };
        read_bytes += n as u64;
        tail.feed(&buffer[..n]);
    }
    // One byte more says whether the log goes on past the bound.
    let more = read_bytes >= max_bytes && reader.read(&mut [0u8]).map_err(failed)? > 0;
    tail.finish();
    Ok((tail, read_bytes, more))
}

/// The failed jobs of a run, as GitHub lists them.
#[derive(Deserialize)]
struct WireJobs {
    total_count: u64,
    jobs: Vec<WireJob>,
}

#[derive(Deserialize)]
struct WireJob {
    id: u64,
    name: String,
    conclusion: Option<String>,
}

impl GitHubGetJobLogs {
    fn tail(
        &self,
        github: &GitHub,
        cx: &ToolContext,
        job_id: u64,
        job_name: Option<String>,
    ) -> Result<JobLog, ToolError> {
        let path = format!("/repos/{}/{}/actions/jobs/{job_id}/logs", self.owner, self.repo);
        let signed = github.redirect_target(cx, &path)?;
        let keep = self.tail_lines.unwrap_or(500) as usize;
        let (tail, read_bytes, more) =
            crate::integration::guard::send_streaming(cx, "GET", &signed, &[], LOG_TIMEOUT, |_, status, reader| {
                if !(200..300).contains(&status) {
                    return Err(Failure::Remote {
                        service: "github".into(),
                        status,
                        reason: crate::RemoteReason::of(status),
                        message: "the log's signed address refused it (it may have expired: ask again)".into(),
                    }
                    .into());
                }
                tail_of(reader, keep, MAX_LOG_BYTES, &|| cx.stop().check())
            })?;
        Ok(JobLog {
            job_id,
            job_name,
            content: tail.text(),
            total_lines: tail.lines,
            truncated: more || tail.cut || tail.lines > tail.ring.len() as u64,
            complete: !more,
            read_bytes,
        })
    }
}

impl Execute for GitHubGetJobLogs {
    type Output = JobLogs;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = crate::github::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        crate::github::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<JobLogs, ToolError> {
        let github = GitHub::for_call(cx)?;
        match (self.failed_only, self.run_id, self.job_id) {
            (true, Some(run), _) => {
                let path = format!(
                    "/repos/{}/{}/actions/runs/{run}/jobs?filter=latest&per_page=100",
                    self.owner, self.repo
                );
                let jobs: WireJobs = github.send(cx, "GET", &path, None)?.parse()?;
                let failed: Vec<(u64, String)> = jobs
                    .jobs
                    .into_iter()
                    .filter(|j| j.conclusion.as_deref() == Some("failure"))
                    .map(|j| (j.id, j.name))
                    .take(MAX_FAILED_JOBS)
                    .collect();
                let mut logs = Vec::with_capacity(failed.len());
                for (id, name) in failed {
                    logs.push(self.tail(&github, cx, id, Some(name))?);
                }
                Ok(JobLogs {
                    logs,
                    total_jobs: Some(jobs.total_count),
                })
            }
            (false, _, Some(job)) => Ok(JobLogs {
                logs: vec![self.tail(&github, cx, job, None)?],
                total_jobs: None,
            }),
            _ => Err(invalid("give `job_id`, or `run_id` with `failed_only: true`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(log: &[u8], keep: usize, max_bytes: u64) -> (String, u64, u64, bool, bool) {
        let (tail, read, more) = tail_of(&mut &log[..], keep, max_bytes, &|| Ok(())).unwrap();
        (tail.text(), tail.lines, read, more, tail.cut)
    }

    #[test]
    fn every_line_is_counted_and_what_is_left_out_is_said() {
        // CR-LF ends, a last line without one, a control character shown.
        assert_eq!(
            read(b"a\r\nb\n\x1b[31mc", 2, 1 << 20),
            ("b\n\u{241b}[31mc".into(), 3, 11, false, false)
        );
        // Past the byte bound: the lines of the part read, and more said to follow.
        assert_eq!(read(b"1\n2\n3\n4\n", 5, 4), ("1\n2".into(), 2, 4, true, false));
        assert_eq!(read(b"1\n2\n", 5, 4), ("1\n2".into(), 2, 4, false, false));
        // A line past its bound is cut, and that is said.
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let (text, lines, _, _, cut) = read(&long, 1, 1 << 20);
        assert!(
            text.ends_with("… [10 more bytes of this line]"),
            "{}",
            &text[text.len() - 40..]
        );
        assert_eq!((lines, cut), (1, true));
    }
}
