//! GitHub's `actions` toolset (not a default one there either): workflows, runs, jobs,
//! artifacts, and the logs of failed jobs. Each answer is read through the shape GitHub
//! documents (the `Wire` structs): a field it always sends missing, or of another type, is
//! an `unexpected_answer`.

mod job_logs;

use kyro_core::{Execute, ToolContext, ToolError, input, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::client::{GitHub, encode, invalid, paging};

pub use job_logs::{GitHubGetJobLogs, JobLog, JobLogs};

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

/// A run as GitHub sends it: its name, status and branch may be null, its actor absent.
#[derive(Deserialize)]
struct WireRun {
    id: u64,
    name: Option<String>,
    display_title: String,
    event: String,
    status: Option<String>,
    conclusion: Option<String>,
    head_branch: Option<String>,
    head_sha: String,
    actor: Option<WireLogin>,
    html_url: String,
}

#[derive(Deserialize)]
struct WireLogin {
    login: String,
}

impl Run {
    fn from_wire(r: WireRun) -> Run {
        Run {
            id: r.id,
            name: r.name.unwrap_or_default(),
            title: r.display_title,
            event: r.event,
            status: r.status.unwrap_or_default(),
            conclusion: r.conclusion,
            head_branch: r.head_branch.unwrap_or_default(),
            head_sha: r.head_sha,
            actor: r.actor.map(|a| a.login).unwrap_or_default(),
            html_url: r.html_url,
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

/// A job as GitHub sends it: its steps may be left out, its address null.
#[derive(Deserialize)]
struct WireJob {
    id: u64,
    name: String,
    status: String,
    conclusion: Option<String>,
    #[serde(default)]
    steps: Vec<WireStep>,
    html_url: Option<String>,
}

#[derive(Deserialize)]
struct WireStep {
    name: String,
    conclusion: Option<String>,
}

impl Job {
    fn from_wire(j: WireJob) -> Job {
        Job {
            id: j.id,
            name: j.name,
            status: j.status,
            conclusion: j.conclusion,
            failed_steps: j
                .steps
                .into_iter()
                .filter(|s| s.conclusion.as_deref() == Some("failure"))
                .map(|s| s.name)
                .collect(),
            html_url: j.html_url.unwrap_or_default(),
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

/// A workflow as GitHub sends it.
#[derive(Deserialize)]
struct WireWorkflow {
    id: u64,
    name: String,
    path: String,
    state: String,
}

impl Workflow {
    fn from_wire(w: WireWorkflow) -> Workflow {
        Workflow {
            id: w.id,
            name: w.name,
            path: w.path,
            state: w.state,
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

/// An artifact as GitHub sends it.
#[derive(Deserialize)]
struct WireArtifact {
    id: u64,
    name: String,
    size_in_bytes: u64,
    expired: bool,
}

/// A page of each list, with how many there are in all.
#[derive(Deserialize)]
struct WireWorkflows {
    total_count: u64,
    workflows: Vec<WireWorkflow>,
}

#[derive(Deserialize)]
struct WireRuns {
    total_count: u64,
    workflow_runs: Vec<WireRun>,
}

#[derive(Deserialize)]
struct WireJobs {
    total_count: u64,
    jobs: Vec<WireJob>,
}

#[derive(Deserialize)]
struct WireArtifacts {
    total_count: u64,
    artifacts: Vec<WireArtifact>,
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
    /// Started by this login.
    #[schemars(length(min = 1, max = 100), regex(pattern = "^[A-Za-z0-9-]+(\\[bot\\])?$"))]
    pub actor: Option<String>,
    /// Of this branch.
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[^\\s?#&]+$"))]
    pub branch: Option<String>,
    /// Started by this event (`push`, `pull_request`, ...).
    #[schemars(length(min = 1, max = 64), regex(pattern = "^[a-z_]+$"))]
    pub event: Option<String>,
    /// In this status (`completed`, `in_progress`, `failure`, ...).
    #[schemars(length(min = 1, max = 32), regex(pattern = "^[a-z_]+$"))]
    pub status: Option<String>,
}

/// List a repository's GitHub Actions workflows, runs, jobs or artifacts by `method`.
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
    /// `list_workflows`, `list_workflow_runs` (of workflow `resource_id`, or all),
    /// `list_workflow_jobs` or `list_workflow_run_artifacts` (of run `resource_id`).
    pub method: ListMethod,
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
    /// Workflow id or file name (runs), or run id (jobs, artifacts).
    #[schemars(length(min = 1, max = 256), regex(pattern = "^[A-Za-z0-9_.-]+$"))]
    pub resource_id: Option<String>,
    /// Filters on runs.
    #[serde(default)]
    pub workflow_runs_filter: RunsFilter,
    /// Jobs of every attempt, not only the latest.
    #[serde(default)]
    pub all_attempts: bool,
    /// Page; default 1.
    #[schemars(range(min = 1, max = 1000))]
    pub page: Option<u32>,
    /// Per page; default 30.
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
        let path = match self.method {
            ListMethod::ListWorkflows => format!("{actions}/workflows?{page}"),
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
                path
            }
            ListMethod::ListWorkflowJobs => {
                let run = run_id(&self.resource_id, "list_workflow_jobs")?;
                let filter = if self.all_attempts { "all" } else { "latest" };
                format!("{actions}/runs/{run}/jobs?filter={filter}&{page}")
            }
            ListMethod::ListWorkflowRunArtifacts => {
                let run = run_id(&self.resource_id, "list_workflow_run_artifacts")?;
                format!("{actions}/runs/{run}/artifacts?{page}")
            }
        };
        let answer = GitHub::for_call(cx)?.send(cx, "GET", &path, None)?;
        let mut out = ActionsListed {
            next_page: answer.next_page,
            ..ActionsListed::default()
        };
        match self.method {
            ListMethod::ListWorkflows => {
                let page: WireWorkflows = answer.parse()?;
                out.total_count = page.total_count;
                out.workflows = Some(page.workflows.into_iter().map(Workflow::from_wire).collect());
            }
            ListMethod::ListWorkflowRuns => {
                let page: WireRuns = answer.parse()?;
                out.total_count = page.total_count;
                out.runs = Some(page.workflow_runs.into_iter().map(Run::from_wire).collect());
            }
            ListMethod::ListWorkflowJobs => {
                let page: WireJobs = answer.parse()?;
                out.total_count = page.total_count;
                out.jobs = Some(page.jobs.into_iter().map(Job::from_wire).collect());
            }
            ListMethod::ListWorkflowRunArtifacts => {
                let page: WireArtifacts = answer.parse()?;
                out.total_count = page.total_count;
                out.artifacts = Some(
                    page.artifacts
                        .into_iter()
                        .map(|a| Artifact {
                            id: a.id,
                            name: a.name,
                            size: a.size_in_bytes,
                            expired: a.expired,
                        })
                        .collect(),
                );
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

/// Get one GitHub Actions workflow, run or job by `method` and `resource_id`.
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
    /// `get_workflow` (by id or file name), `get_workflow_run` or `get_workflow_job` (by id).
    pub method: GetMethod,
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
    /// Workflow id or file name, or run or job id.
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
                got.workflow = Some(Workflow::from_wire(github.send(cx, "GET", &path, None)?.parse()?));
            }
            GetMethod::GetWorkflowRun => {
                let path = format!("{actions}/runs/{}", numeric()?);
                got.run = Some(Run::from_wire(github.send(cx, "GET", &path, None)?.parse()?));
            }
            GetMethod::GetWorkflowJob => {
                let path = format!("{actions}/jobs/{}", numeric()?);
                got.job = Some(Job::from_wire(github.send(cx, "GET", &path, None)?.parse()?));
            }
        }
        Ok(got)
    }
}
