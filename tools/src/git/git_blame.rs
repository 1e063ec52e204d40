//! `git_blame`: who last changed each line.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::{Repo, revision};

/// For each line of a file (or range), the commit and author that last changed it.
#[tool(name = "git_blame", title = "Git blame", category = "git", effect = "read", capabilities = ["fs.read"])]
pub struct GitBlame {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// Repo-relative file.
    #[schemars(length(min = 1, max = 4096))]
    pub path: String,
    /// Revision; default the work tree.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub revision: Option<String>,
    /// First line, 1-based.
    #[schemars(range(min = 1))]
    pub start_line: Option<u32>,
    /// Last line.
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
}

/// Lines with their last change.
#[kyro_core::output]
#[derive(Debug)]
pub struct Blamed {
    /// The lines.
    pub lines: Vec<BlameLine>,
}

/// One line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlameLine {
    /// Line number, 1-based.
    pub line: u64,
    /// The commit that last changed it.
    pub sha: String,
    /// Its author.
    pub author: String,
    /// The line's text.
    pub content: String,
}

impl Execute for GitBlame {
    type Output = Blamed;

    async fn run(self, cx: &ToolContext) -> Result<Blamed, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let range = match (self.start_line, self.end_line) {
            (None, None) => None,
            (start, end) => Some(format!(
                "-L{},{}",
                start.unwrap_or(1),
                end.map(|e| e.to_string()).unwrap_or_default()
            )),
        };
        let mut args = vec!["blame", "--porcelain", "--no-textconv", "--no-ignore-revs-file"];
        if let Some(range) = &range {
            args.push(range);
        }
        // blame reads what follows `--end-of-options` as paths, so the revision goes bare:
        // it was checked not to start with `-`.
        if let Some(rev) = &self.revision {
            args.push(revision(rev)?);
        }
        args.extend(["--", self.path.as_str()]);
        let out = repo.run(cx, &args, None)?;
        let mut authors = std::collections::HashMap::new();
        let mut lines = Vec::new();
        let mut current: Option<(String, u64)> = None;
        for line in out.lines() {
            if let Some(content) = line.strip_prefix('\t') {
                if let Some((sha, number)) = current.take() {
                    lines.push(BlameLine {
                        line: number,
                        author: authors.get(&sha).cloned().unwrap_or_default(),
                        sha,
                        content: content.to_owned(),
                    });
                }
            } else if let Some(author) = line.strip_prefix("author ") {
                if let Some((sha, _)) = &current {
                    authors.insert(sha.clone(), author.to_owned());
                }
            } else {
                let mut parts = line.split(' ');
                if let (Some(sha), Some(_), Some(number)) = (parts.next(), parts.next(), parts.next())
                    && sha.len() == 40
                    && sha.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    current = Some((sha.to_owned(), number.parse().unwrap_or(0)));
                }
            }
        }
        Ok(Blamed { lines })
    }
}
