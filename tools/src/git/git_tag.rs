//! `git_tag`: list tags, or create one.

use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, input, tool};
use schemars::JsonSchema;
use serde::Serialize;

use super::runner::{Repo, revision};
use crate::Failure;

/// List tags (filtered by glob `pattern`) or create one at `target` (annotated with `message`, else lightweight).
/// An existing tag is never moved.
#[tool(
    name = "git_tag",
    title = "Git tag",
    category = "git",
    effect = "write",
    capabilities = ["git.write"],
    destructive = false,
)]
pub struct GitTag {
    /// Workspace-relative repo; default the root.
    pub repo: Option<WorkspacePath>,
    /// `list` (default) or `create`.
    #[serde(default)]
    pub action: TagAction,
    /// Tag to create.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub name: Option<String>,
    /// Commit to tag; default HEAD.
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub target: Option<String>,
    /// Annotated tag message.
    #[schemars(length(max = 10000))]
    pub message: Option<String>,
    /// Glob the names match, for list (`v1.*`).
    #[schemars(regex(pattern = "^[^-\\s][^\\s]*$"))]
    pub pattern: Option<String>,
}

/// What `git_tag` does.
#[input]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TagAction {
    /// List the tags.
    #[default]
    List,
    /// Create a tag.
    Create,
}

/// The tags.
#[kyro_core::output]
#[derive(Debug)]
pub struct Tags {
    /// The tag created, for create.
    pub created: Option<String>,
    /// The tags (matching `pattern`), by version order.
    pub tags: Vec<Tag>,
}

/// One tag.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Tag {
    /// Its name.
    pub name: String,
    /// The commit it names.
    pub sha: String,
    /// An annotated tag's message subject, or the commit's subject.
    pub subject: String,
    /// True for an annotated tag.
    pub annotated: bool,
}

impl Execute for GitTag {
    type Output = Tags;

    fn text(out: &Tags) -> Option<String> {
        let mut text = match &out.created {
            Some(name) => format!("created tag {name}"),
            None => format!("{} tags", out.tags.len()),
        };
        for t in &out.tags {
            text.push_str(&format!("\n{} {} {}", t.name, &t.sha[..t.sha.len().min(12)], t.subject));
        }
        Some(text)
    }

    async fn run(self, cx: &ToolContext) -> Result<Tags, ToolError> {
        let repo = Repo::open(cx, self.repo.as_ref())?;
        let created = match self.action {
            TagAction::List => None,
            TagAction::Create => {
                let Some(name) = &self.name else {
                    return Err(Failure::InvalidRequest {
                        message: "create needs the tag's `name`".to_owned(),
                    }
                    .into());
                };
                let name = revision(name)?;
                let mut args = repo.identity(cx).to_vec();
                args.push("tag");
                if let Some(message) = &self.message {
                    args.extend(["--annotate", "--message", message]);
                }
                args.extend(["--end-of-options", name]);
                if let Some(target) = &self.target {
                    args.push(revision(target)?);
                }
                repo.run(cx, &args, None)?;
                Some(name.to_owned())
            }
        };
        let pattern = match &self.pattern {
            Some(p) => format!("refs/tags/{}", revision(p)?),
            None => "refs/tags".to_owned(),
        };
        let listed = repo.run(
            cx,
            &[
                "for-each-ref",
                "--sort=version:refname",
                "--format=%(refname:short)%1f%(objecttype)%1f%(*objectname)%(objectname)%1f%(contents:subject)",
                &pattern,
            ],
            None,
        )?;
        let tags = listed
            .lines()
            .filter_map(|line| {
                let mut parts = line.split('\x1f');
                let (name, kind, shas, subject) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
                let annotated = kind == "tag";
                // An annotated tag prints the commit (`*objectname`) before its own object.
                let sha = if annotated { &shas[..shas.len().min(40)] } else { shas };
                Some(Tag {
                    name: name.to_owned(),
                    sha: sha.to_owned(),
                    subject: subject.to_owned(),
                    annotated,
                })
            })
            .collect();
        Ok(Tags { created, tags })
    }
}
