//! GitHub's `actions` toolset (not a default one there either): workflows, runs, jobs,
//! artifacts, and the logs of failed jobs.

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::client::{GitHub, encode, invalid, items, login, paging, text};
use crate::Failure;

/// Most bytes of one job's log read.
const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;
/// Most failed jobs whose logs one call reads.
const MAX_FAILED_JOBS: usize = 10;

/// A workflow run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Run {
    /// Its id.
    pub id: u64,
    /// Its workflow's name.
    pub name: String,
    /// Its title (the commit's or pull request's).
    pub title: String,
    /// What started it (`push`, `pull_request`, ...).
    pub event: String,
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// `success`, `failure`, `cancelled`, ... once completed.
    pub conclusion: Option<String>,
    /// The branch.
    pub head_branch: String,
    /// The commit.
    pub head_sha: String,
    /// Who started it.
    pub actor: String,
    /// Its web address.
    pub html_url: String,
}

impl Run {
    fn from_json(r: &Value) -> Run {
        Run {
            id: r["id"].as_u64().unwrap_or(0),
            name: text(&r["name"]),
            title: text(&r["display_title"]),
            event: text(&r["event"]),
            status: text(&r["status"]),
            conclusion: r["conclusion"].as_str().map(str::to_owned),
            head_branch: text(&r["head_branch"]),
            head_sha: text(&r["head_sha"]),
            actor: login(&r["actor"]),
            html_url: text(&r["html_url"]),
        }
    }
}

/// A job of a run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Job {
    /// Its id (for `github_get_job_logs`).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `queued`, `in_progress`, `completed`, ...
    pub status: String,
    /// `success`, `failure`, ... once completed.
    pub conclusion: Option<String>,
    /// The steps that did not succeed, by name.
    pub failed_steps: Vec<String>,
    /// Its web address.
    pub html_url: String,
}

impl Job {
    fn from_json(j: &Value) -> Job {
        Job {
            id: j["id"].as_u64().unwrap_or(0),
            name: text(&j["name"]),
            status: text(&j["status"]),
            conclusion: j["conclusion"].as_str().map(str::to_owned),
            failed_steps: items(&j["steps"])
                .iter()
                .filter(|s| s["conclusion"] == "failure")
                .map(|s| text(&s["name"]))
                .collect(),
            html_url: text(&j["html_url"]),
        }
    }
}

/// A workflow.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Workflow {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its file (`.github/workflows/ci.yml`).
    pub path: String,
    /// `active`, `disabled_manually`, ...
    pub state: String,
}

impl Workflow {
    fn from_json(w: &Value) -> Workflow {
        Workflow {
            id: w["id"].as_u64().unwrap_or(0),
            name: text(&w["name"]),
            path: text(&w["path"]),
            state: text(&w["state"]),
        }
    }
}

/// An artifact of a run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Artifact {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it has expired.
    pub expired: bool,
}

/// What `github_actions_list` lists.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ListMethod {
    /// The repository's workflows.
    ListWorkflows,
    /// Runs (of the workflow `resource_id` names, or all).
    ListWorkflowRuns,
    /// The jobs of the run `resource_id`.
    ListWorkflowJobs,
    /// The artifacts of the run `resource_id`.
    ListWorkflowRunArtifacts,
}

/// Filters on runs.
#[input]
#[derive(Debug, Default)]
pub struct RunsFilter {
    /// Only runs started by this login.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9-]+(\\[bot\\])?$"))]
    pub actor: Option<String>,
    /// Only runs of this branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub branch: Option<String>,
    /// Only runs started by this event (`push`, `pull_request`, ...).
    #[schemars(length(min = 1, max = 64), regex(pattern = "^[a-z_]+$"))]
    pub event: Option<String>,
    /// Only runs in this status (`completed`, `in_progress`, `failure`, ...).
    #[schemars(length(min = 1, max = 32), regex(pattern = "^[a-z_]+$"))]
    pub status: Option<String>,
}

/// List a GitHub repository's Actions by `method`: `list_workflows`,
/// `list_workflow_runs` (of one workflow, `resource_id` its id or file name, or all),
/// `list_workflow_jobs` or `list_workflow_run_artifacts` (of the run `resource_id`).
#[tool(
    name = "github_actions_list",
    title = "List GitHub Actions",
    category = "github.actions",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["actions_list"]
)]
pub struct GitHubActionsList {
    /// What to list.
    pub method: ListMethod,
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// A workflow's id or file name (runs), or a run's id (jobs, artifacts).
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[A-Za-z0-9_.-]+$"))]
    pub resource_id: Option<String>,
    /// Filters on runs.
    #[serde(default)]
    pub workflow_runs_filter: RunsFilter,
    /// Jobs of the latest attempt only (the default), or of every attempt.
    #[serde(default)]
    pub all_attempts: bool,
    /// Page, 1-based; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30, at most 100.
    #[tool(alias = "perPage")]
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

/// What was listed: the one field the method names.
#[kyro_core::output]
#[derive(Debug, Default)]
pub struct ActionsListed {
    /// How many there are in all.
    pub total_count: u64,
    /// Workflows (`list_workflows`).
    pub workflows: Option<Vec<Workflow>>,
    /// Runs (`list_workflow_runs`).
    pub runs: Option<Vec<Run>>,
    /// Jobs (`list_workflow_jobs`).
    pub jobs: Option<Vec<Job>>,
    /// Artifacts (`list_workflow_run_artifacts`).
    pub artifacts: Option<Vec<Artifact>>,
    /// The next page, when there is one (pass it as `page`).
    pub next_page: Option<u32>,
}

/// A run's id from `resource_id`.
fn run_id(resource: &Option<String>, method: &str) -> Result<u64, ToolError> {
    resource
        .as_deref()
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| invalid(format!("{method} needs the run's numeric id as `resource_id`")))
}

impl Execute for GitHubActionsList {
    type Output = ActionsListed;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<ActionsListed, ToolError> {
        let actions = format!("/repos/{}/{}/actions", self.owner, self.repo);
        let page = paging(self.page, self.per_page);
        let (path, key) = match self.method {
            ListMethod::ListWorkflows => (format!("{actions}/workflows?{page}"), "workflows"),
            ListMethod::ListWorkflowRuns => {
                let runs = match &self.resource_id {
                    Some(workflow) => format!("{actions}/workflows/{}/runs", encode(workflow)),
                    None => format!("{actions}/runs"),
                };
                let mut path = format!("{runs}?{page}");
                let filter = &self.workflow_runs_filter;
                for (key, value) in [
                    ("actor", &filter.actor),
                    ("branch", &filter.branch),
                    ("event", &filter.event),
                    ("status", &filter.status),
                ] {
                    if let Some(value) = value {
                        path.push_str(&format!("&{key}={}", encode(value)));
                    }
                }
                (path, "workflow_runs")
            }
            ListMethod::ListWorkflowJobs => {
                let run = run_id(&self.resource_id, "list_workflow_jobs")?;
                let filter = if self.all_attempts { "all" } else { "latest" };
                (format!("{actions}/runs/{run}/jobs?filter={filter}&{page}"), "jobs")
            }
            ListMethod::ListWorkflowRunArtifacts => {
                let run = run_id(&self.resource_id, "list_workflow_run_artifacts")?;
                (format!("{actions}/runs/{run}/artifacts?{page}"), "artifacts")
            }
        };
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let listed = items(&answer.body[key]);
        let mut out = ActionsListed {
            total_count: answer.body["total_count"].as_u64().unwrap_or(0),
            next_page: answer.next_page,
            ..ActionsListed::default()
        };
        match self.method {
            ListMethod::ListWorkflows => out.workflows = Some(listed.iter().map(Workflow::from_json).collect()),
            ListMethod::ListWorkflowRuns => out.runs = Some(listed.iter().map(Run::from_json).collect()),
            ListMethod::ListWorkflowJobs => out.jobs = Some(listed.iter().map(Job::from_json).collect()),
            ListMethod::ListWorkflowRunArtifacts => {
                out.artifacts = Some(
                    listed
                        .iter()
                        .map(|a| Artifact {
                            id: a["id"].as_u64().unwrap_or(0),
                            name: text(&a["name"]),
                            size: a["size_in_bytes"].as_u64().unwrap_or(0),
                            expired: a["expired"].as_bool().unwrap_or(false),
                        })
                        .collect(),
                )
            }
        }
        Ok(out)
    }
}

/// What `github_actions_get` gets.
#[input]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum GetMethod {
    /// A workflow, by id or file name.
    GetWorkflow,
    /// A run, by id.
    GetWorkflowRun,
    /// A job, by id.
    GetWorkflowJob,
}

/// Get one GitHub Actions workflow (`resource_id`: its id or file name), run or job (its
/// id) by `method`.
#[tool(
    name = "github_actions_get",
    title = "Get a GitHub Actions workflow, run or job",
    category = "github.actions",
    effect = "network",
    read_only = true,
    idempotent = true,
    aliases = ["actions_get"]
)]
pub struct GitHubActionsGet {
    /// What to get.
    pub method: GetMethod,
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub repo: String,
    /// The workflow's id or file name, or the run's or job's id.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[A-Za-z0-9_.-]+$"))]
    pub resource_id: String,
}

/// What was got: the one field the method names.
#[kyro_core::output]
#[derive(Debug, Default)]
pub struct ActionsGot {
    /// The workflow (`get_workflow`).
    pub workflow: Option<Workflow>,
    /// The run (`get_workflow_run`).
    pub run: Option<Run>,
    /// The job (`get_workflow_job`).
    pub job: Option<Job>,
}

impl Execute for GitHubActionsGet {
    type Output = ActionsGot;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<ActionsGot, ToolError> {
        let actions = format!("/repos/{}/{}/actions", self.owner, self.repo);
        let numeric = || {
            self.resource_id
                .parse::<u64>()
                .map_err(|_| invalid("runs and jobs are named by their numeric id"))
        };
        let github = GitHub::for_call(cx)?;
        let mut got = ActionsGot::default();
        match self.method {
            GetMethod::GetWorkflow => {
                let path = format!("{actions}/workflows/{}", encode(&self.resource_id));
                got.workflow = Some(Workflow::from_json(&github.send(cx, "GET", &path, None)?.body));
            }
            GetMethod::GetWorkflowRun => {
                let path = format!("{actions}/runs/{}", numeric()?);
                got.run = Some(Run::from_json(&github.send(cx, "GET", &path, None)?.body));
            }
            GetMethod::GetWorkflowJob => {
                let path = format!("{actions}/jobs/{}", numeric()?);
                got.job = Some(Job::from_json(&github.send(cx, "GET", &path, None)?.body));
            }
        }
        Ok(got)
    }
}

/// Read the end of GitHub Actions job logs: one job's (`job_id`), or every failed job's of
/// a run (`run_id` with `failed_only`, at most 10), the last `tail_lines` lines each
/// (default 500). The logs come from the signed address GitHub redirects to, fetched
/// without the token and under the network policy.
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
    /// Repository owner.
    #[schemars(
        length(min = 1, max = 100),
        regex(pattern = "^[A-Za-z0-9_.-]*[A-Za-z0-9_-][A-Za-z0-9_.-]*$")
    )]
    pub owner: String,
    /// Repository name.
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
    /// Every failed job of `run_id`; default false.
    #[serde(default)]
    pub failed_only: bool,
    /// Lines from the end of each log; default 500, at most 5000.
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
    /// Lines in the whole log.
    pub total_lines: u64,
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
        let fetched = crate::integration::guard::send(
            cx,
            "GET",
            &signed,
            &[],
            None,
            MAX_LOG_BYTES,
            std::time::Duration::from_secs(60),
        )?;
        if !(200..300).contains(&fetched.status) {
            return Err(Failure::Remote {
                service: "github".into(),
                status: fetched.status,
                reason: crate::RemoteReason::of(fetched.status),
                message: "the log's signed address refused it (it may have expired: ask again)".into(),
            }
            .into());
        }
        let log = String::from_utf8_lossy(&fetched.body);
        let lines: Vec<&str> = log.lines().collect();
        let keep = self.tail_lines.unwrap_or(500) as usize;
        Ok(JobLog {
            job_id,
            job_name,
            content: lines[lines.len().saturating_sub(keep)..].join("\n"),
            total_lines: lines.len() as u64,
        })
    }
}

impl Execute for GitHubGetJobLogs {
    type Output = JobLogs;
    const SETTINGS: &[kyro_core::policy::SettingsTable] = super::client::NETWORK;

    fn preview(&self, _: &ToolContext) -> Option<String> {
        super::client::target()
    }

    async fn run(self, cx: &ToolContext) -> Result<JobLogs, ToolError> {
        let github = GitHub::for_call(cx)?;
        match (self.failed_only, self.run_id, self.job_id) {
            (true, Some(run), _) => {
                let path = format!(
                    "/repos/{}/{}/actions/runs/{run}/jobs?filter=latest&per_page=100",
                    self.owner, self.repo
                );
                let jobs = github.send(cx, "GET", &path, None)?.body;
                let failed: Vec<(u64, String)> = items(&jobs["jobs"])
                    .iter()
                    .filter(|j| j["conclusion"] == "failure")
                    .map(|j| (j["id"].as_u64().unwrap_or(0), text(&j["name"])))
                    .take(MAX_FAILED_JOBS)
                    .collect();
                let mut logs = Vec::with_capacity(failed.len());
                for (id, name) in failed {
                    logs.push(self.tail(&github, cx, id, Some(name))?);
                }
                Ok(JobLogs {
                    logs,
                    total_jobs: jobs["total_count"].as_u64(),
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
