//! `git_log`: commit history.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::{Repo, revision};

/// List commits reachable from a revision, newest first, optionally only those touching paths.
#[tool(name = "git_log", title = "Git log", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitLog {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Start; default HEAD.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub revision: Option<String>,
    /// Most commits; default 20.
    #[schemars(range(min = 1, max = 500))]
    pub max_count: Option<u32>,
    /// Only commits touching these repo-relative paths.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub paths: Vec<String>,
}

/// Commits, newest first.
#[kyro_core::output]
#[derive(Debug)]
pub struct History {
    /// The commits.
    pub commits: Vec<Commit>,
}

/// One commit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Commit {
    /// Full hash.
    pub sha: String,
    /// Parent hashes.
    pub parents: Vec<String>,
    /// Author name.
    pub author: String,
    /// Author email.
    pub email: String,
    /// Author date, ISO 8601.
    pub date: String,
    /// The subject line.
    pub subject: String,
}

/// `--format` for [`parse_commits`]: fields split by 0x1f, commits by 0x1e.
pub(crate) const FORMAT: &str = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1e";

pub(crate) fn parse_commits(out: &str) -> Vec<Commit> {
    out.split('\u{1e}')
        .map(|record| record.trim_start_matches('\n'))
        .filter(|record| !record.is_empty())
        .filter_map(|record| {
            let f: Vec<&str> = record.split('\u{1f}').collect();
            (f.len() >= 6).then(|| Commit {
                sha: f[0].to_owned(),
                parents: f[1].split_whitespace().map(str::to_owned).collect(),
                author: f[2].to_owned(),
                email: f[3].to_owned(),
                date: f[4].to_owned(),
                subject: f[5].trim_end().to_owned(),
            })
        })
        .collect()
}

impl Execute for GitLog {
    type Output = History;

    /// One commit a line: short hash, date, author, subject.
    fn text(h: &History) -> Option<String> {
        if h.commits.is_empty() {
            return Some("(no commits)".into());
        }
        let lines: Vec<String> = h
            .commits
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}: {}",
                    &c.sha[..c.sha.len().min(12)],
                    c.date,
                    c.author,
                    c.subject
                )
            })
            .collect();
        Some(lines.join("\n"))
    }

    async fn run(self, cx: &ToolContext) -> Result<History, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let count = format!("--max-count={}", self.max_count.unwrap_or(20));
        let start = revision(self.revision.as_deref().unwrap_or("HEAD"))?;
        let mut args = vec!["log", FORMAT, count.as_str(), "--end-of-options", start, "--"];
        args.extend(self.paths.iter().map(String::as_str));
        Ok(History {
            commits: parse_commits(&repo.run(cx, &args, None)?),
        })
    }
}
