//! `git_status`: branch and changes, from porcelain v2.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::Repo;

/// Show the branch, upstream and changed files (staged, unstaged, untracked).
#[tool(name = "git_status", title = "Git status", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitStatus {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
}

/// The repository's state.
#[kyro_core::output]
#[derive(Debug)]
pub struct Status {
    /// The current branch; absent when detached.
    pub branch: Option<String>,
    /// The commit checked out; absent before the first commit.
    pub head: Option<String>,
    /// The upstream branch, when set.
    pub upstream: Option<String>,
    /// Commits ahead of the upstream.
    pub ahead: u64,
    /// Commits behind the upstream.
    pub behind: u64,
    /// Changed, untracked and unmerged files.
    pub entries: Vec<StatusEntry>,
}

/// One file's status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusEntry {
    /// Path relative to the repository.
    pub path: String,
    /// The path before a rename or copy.
    pub orig_path: Option<String>,
    /// Index status letter (`.` unchanged, `M`, `A`, `D`, `R`, `C`, `U`, `?`).
    pub index: String,
    /// Work-tree status letter.
    pub worktree: String,
}

/// Parses `git status --porcelain=v2 --branch -z`.
fn parse(out: &str) -> Status {
    let mut status = Status {
        branch: None,
        head: None,
        upstream: None,
        ahead: 0,
        behind: 0,
        entries: Vec::new(),
    };
    let mut records = out.split('\0').peekable();
    while let Some(record) = records.next() {
        if let Some(header) = record.strip_prefix("# ") {
            let (key, value) = header.split_once(' ').unwrap_or((header, ""));
            match key {
                "branch.oid" if value != "(initial)" => status.head = Some(value.to_owned()),
                "branch.head" if value != "(detached)" => status.branch = Some(value.to_owned()),
                "branch.upstream" => status.upstream = Some(value.to_owned()),
                "branch.ab" => {
                    for part in value.split(' ') {
                        if let Some(n) = part.strip_prefix('+') {
                            status.ahead = n.parse().unwrap_or(0);
                        } else if let Some(n) = part.strip_prefix('-') {
                            status.behind = n.parse().unwrap_or(0);
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        let fields: Vec<&str> = record.splitn(11, ' ').collect();
        let entry = match fields.first().copied() {
            Some("1") if fields.len() >= 9 => Some((fields[1], fields[8..].join(" "), None)),
            Some("2") if fields.len() >= 10 => {
                let orig = records.next().map(str::to_owned);
                Some((fields[1], fields[9..].join(" "), orig))
            }
            Some("u") if fields.len() >= 11 => Some((fields[1], fields[10].to_owned(), None)),
            Some("?") => Some(("??", record[2..].to_owned(), None)),
            _ => None,
        };
        if let Some((xy, path, orig_path)) = entry {
            let mut letters = xy.chars();
            status.entries.push(StatusEntry {
                path,
                orig_path,
                index: letters.next().unwrap_or('.').to_string(),
                worktree: letters.next().unwrap_or('.').to_string(),
            });
        }
    }
    status
}

impl Execute for GitStatus {
    type Output = Status;

    /// The branch line, then one line a path as `git status --short` prints it
    /// (index letter, work-tree letter, path).
    fn text(s: &Status) -> Option<String> {
        let mut out = format!("on {}", s.branch.as_deref().unwrap_or("(detached HEAD)"));
        if let Some(upstream) = &s.upstream {
            out.push_str(&format!(
                ", tracking {upstream} (ahead {}, behind {})",
                s.ahead, s.behind
            ));
        }
        out.push('\n');
        for e in &s.entries {
            match &e.orig_path {
                Some(from) => out.push_str(&format!("{}{} {from} -> {}\n", e.index, e.worktree, e.path)),
                None => out.push_str(&format!("{}{} {}\n", e.index, e.worktree, e.path)),
            }
        }
        if s.entries.is_empty() {
            out.push_str("nothing to commit, working tree clean\n");
        }
        Some(out.trim_end().to_owned())
    }

    async fn run(self, cx: &ToolContext) -> Result<Status, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let out = repo.run(
            cx,
            &["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"],
            None,
        )?;
        Ok(parse(&out))
    }
}
