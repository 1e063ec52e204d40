//! Which tools a server serves and which it lists: toolsets, named tools, exclusions and a
//! read-only mode, from the policy's `[catalog]` table and the command line, with the GitHub
//! MCP server's conventions.

use kyro_core::{Runtime, ToolDescriptor};
use serde::{Deserialize, Serialize};

/// The toolsets `kyro mcp` lists when none are chosen: what a coding agent uses on most
/// turns, and the tools of upstream servers the user named. Every other served tool is
/// found with `tool_search` and called by name.
pub const DEFAULT_TOOLSETS: &[&str] = &["files", "git", "shell", "discovery", crate::upstream::UPSTREAM_CATEGORY];

/// Which tools a server serves and lists (the policy file's `[catalog]` table), with the GitHub MCP server's conventions:
/// toolsets are tool categories (`files`, `git`, ...; `all` and `default` special).
///
/// Without `toolsets`, every tool is served and the default toolsets (plus `tools`) are
/// listed; the rest stay reachable through `tool_search`. With `toolsets`, only those
/// toolsets and `tools` are served at all. `exclude_tools` wins over both, and `read_only`
/// serves only tools that change nothing, even when named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CatalogSelection {
    /// Toolsets to serve and list.
    pub toolsets: Option<Vec<String>>,
    /// Tools to serve and list besides the toolsets.
    pub tools: Vec<String>,
    /// Tools never served.
    pub exclude_tools: Vec<String>,
    /// Serve only read-only tools.
    pub read_only: bool,
}

/// The flags that choose tools (`kyro mcp`, [`crate::Server::run`]); each replaces the
/// policy's `[catalog]` key of the same name.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CatalogFlags {
    /// Serve and list only these toolsets (tool categories; `all`, `default`), comma-separated.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub toolsets: Option<Vec<String>>,
    /// Serve and list these tools too, comma-separated.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Never serve these tools (wins over --toolsets and --tools), comma-separated.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub exclude_tools: Option<Vec<String>>,
    /// Serve only tools that change nothing, even when named.
    #[arg(long)]
    pub read_only: bool,
    /// `full` lists the chosen tools; `search` lists only the discovery tools and a
    /// `call_tool` meta-tool that runs any served tool by name.
    #[arg(long, value_enum, value_name = "MODE", default_value = "full")]
    pub catalog: CatalogMode,
}

/// How `tools/list` presents the served tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogMode {
    /// Every chosen tool, with its schemas.
    #[default]
    Full,
    /// `tool_search`, `tool_describe` and `call_tool` only.
    Search,
}

impl CatalogFlags {
    /// The policy's selection with these flags over it.
    pub fn over(&self, policy: &CatalogSelection) -> CatalogSelection {
        CatalogSelection {
            toolsets: self.toolsets.clone().or_else(|| policy.toolsets.clone()),
            tools: self.tools.clone().unwrap_or_else(|| policy.tools.clone()),
            exclude_tools: self
                .exclude_tools
                .clone()
                .unwrap_or_else(|| policy.exclude_tools.clone()),
            read_only: self.read_only || policy.read_only,
        }
    }
}

/// A selection resolved against a catalog: what is served, what is listed.
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    /// Toolsets listed (and, when chosen explicitly, the only ones served).
    listed_sets: Vec<String>,
    explicit: bool,
    tools: Vec<String>,
    exclude: Vec<String>,
    read_only: bool,
}

/// A selection that names what the catalog does not have.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    /// An unknown toolset.
    #[error("unknown toolset `{name}`; toolsets: {known}, all, default")]
    Toolset {
        /// The name given.
        name: String,
        /// The catalog's toolsets.
        known: String,
    },
    /// An unknown tool.
    #[error("unknown tool `{name}` in the catalog selection")]
    Tool {
        /// The name given.
        name: String,
    },
}

/// Whether `category` belongs to the family `set` (`github.issues` to `github`).
fn in_family(category: &str, set: &str) -> bool {
    category.strip_prefix(set).is_some_and(|rest| rest.starts_with('.'))
}

impl Selection {
    /// Resolves `selection` against the tools of `runtime`; `defaults` are the toolsets the
    /// name `default` stands for (`None`: every toolset, as a server of one's own catalog
    /// wants).
    pub(crate) fn resolve(
        selection: &CatalogSelection,
        runtime: &Runtime,
        defaults: Option<&[&str]>,
    ) -> Result<Selection, SelectionError> {
        let snapshot = runtime.registry().snapshot();
        let mut categories: Vec<String> = snapshot.descriptors().map(|d| d.category.clone()).collect();
        categories.sort();
        categories.dedup();
        // Names as the registry knows them: an alias (`bash`, `cat`) names its tool.
        let canonical = |names: &[String]| -> Result<Vec<String>, SelectionError> {
            names
                .iter()
                .map(|name| {
                    snapshot
                        .get(name)
                        .map(|tool| tool.descriptor().name.clone())
                        .ok_or_else(|| SelectionError::Tool { name: name.clone() })
                })
                .collect()
        };
        let (tools, exclude) = (canonical(&selection.tools)?, canonical(&selection.exclude_tools)?);
        let explicit = selection.toolsets.is_some();
        let mut listed_sets = Vec::new();
        let wanted: Vec<String> = match &selection.toolsets {
            Some(sets) => sets.clone(),
            None => vec!["default".into()],
        };
        for set in wanted.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            match set {
                "all" => listed_sets.extend(categories.iter().cloned()),
                "default" => listed_sets.extend(
                    categories
                        .iter()
                        .filter(|c| defaults.is_none_or(|d| d.contains(&c.as_str())))
                        .cloned(),
                ),
                other if categories.iter().any(|c| c == other) => listed_sets.push(other.to_owned()),
                // A family without a toolset of its own name (`github`) is all of its
                // toolsets (`github.issues`, `github.repos`, ...); one with it (`browser`,
                // Playwright's default tools) leaves its opt-in ones (`browser.vision`) to be
                // named, as Playwright's `--caps` does.
                other if categories.iter().any(|c| in_family(c, other)) => {
                    listed_sets.extend(categories.iter().filter(|c| in_family(c, other)).cloned())
                }
                other => {
                    return Err(SelectionError::Toolset {
                        name: other.to_owned(),
                        known: categories.join(", "),
                    });
                }
            }
        }
        Ok(Selection {
            listed_sets,
            explicit,
            tools,
            exclude,
            read_only: selection.read_only,
        })
    }

    fn chosen(&self, d: &ToolDescriptor) -> bool {
        self.listed_sets.contains(&d.category) || self.tools.contains(&d.name)
    }

    /// Whether the tool is served at all (callable).
    pub(crate) fn serves(&self, d: &ToolDescriptor) -> bool {
        !self.exclude.contains(&d.name)
            && (!self.read_only || d.annotations.read_only_hint)
            && (!self.explicit || self.chosen(d))
    }

    /// Whether the tool is in `tools/list`: served, chosen, and allowed by the policy at all.
    pub(crate) fn lists(&self, d: &ToolDescriptor, scope: &kyro_core::policy::Scope) -> bool {
        self.serves(d) && self.chosen(d) && scope.may_allow(d)
    }

    /// Takes the tools this selection does not serve out of `runtime`'s registry, and
    /// keeps doing so: the registry admits only what it serves from now on
    /// ([`Registry::admit_only`](kyro_core::Registry::admit_only)), so the upstream
    /// servers' tools, registered again whenever an upstream says its list changed, meet
    /// it too ([`crate::upstream`]).
    pub(crate) fn apply(&self, runtime: &Runtime) {
        let selection = self.clone();
        let _ = runtime.registry().admit_only(move |d| selection.serves(d));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_family_holds_its_dotted_toolsets_only() {
        assert!(super::in_family("github.issues", "github"));
        assert!(super::in_family("browser.vision", "browser"));
        assert!(!super::in_family("browser", "browser"));
        assert!(!super::in_family("githubber.x", "github"));
        assert!(!super::in_family("github", "github.issues"));
    }
}
