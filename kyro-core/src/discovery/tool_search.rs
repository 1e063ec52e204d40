//! `tool_search`: find tools by words.

use crate::{Effect, Execute, ToolContext, ToolDescriptor, ToolError, tool};
use schemars::JsonSchema;
use serde::Serialize;

const DEFAULT_LIMIT: u32 = 10;

/// Find tools in the catalog by words of their name, aliases, category or description.
///
/// Returns the best matches first with their category, effect and a one-line summary; use
/// `tool_describe` for a tool's full schema.
#[tool(
    name = "tool_search",
    title = "Search tools",
    category = "discovery",
    effect = "none",
    inline = true
)]
pub struct ToolSearch {
    /// Words to look for, case-insensitive; a tool matching more of them ranks higher.
    #[schemars(length(min = 1, max = 256))]
    pub query: String,
    /// Only tools of this category (files, shell, git, ...).
    pub category: Option<String>,
    /// Most tools to return; default 10, at most 50.
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
}

/// Matching tools, best first.
#[kyro_core::output]
#[derive(Debug)]
pub struct SearchResults {
    /// The matches.
    pub tools: Vec<SearchHit>,
    /// How many tools matched in all.
    pub total_matches: u64,
    /// True when more tools matched than were returned.
    pub truncated: bool,
}

/// One matching tool.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchHit {
    /// Canonical name.
    pub name: String,
    /// Category.
    pub category: String,
    /// Side-effect class.
    pub effect: Effect,
    /// The first line of the description.
    pub summary: String,
    /// Relevance; higher is better.
    pub score: u32,
}

// Not offered in the help of an author's struct missing its `impl Execute`.
#[diagnostic::do_not_recommend]
impl Execute for ToolSearch {
    type Output = SearchResults;

    async fn run(self, cx: &ToolContext) -> Result<SearchResults, ToolError> {
        let words: Vec<String> = self.query.split_whitespace().map(str::to_lowercase).collect();
        let mut hits: Vec<SearchHit> = cx
            .catalog()
            .descriptors()
            .filter(|d| self.category.as_deref().is_none_or(|c| d.category == c))
            .filter_map(|d| {
                let score = score(d, &words);
                (score > 0).then(|| SearchHit {
                    name: d.name.clone(),
                    category: d.category.clone(),
                    effect: d.effect,
                    summary: d.description.lines().next().unwrap_or_default().to_owned(),
                    score,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.name.cmp(&b.name)));
        let total = hits.len();
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT) as usize;
        hits.truncate(limit);
        Ok(SearchResults {
            truncated: total > hits.len(),
            total_matches: total as u64,
            tools: hits,
        })
    }
}

/// Name matches weigh most, then aliases, category and description words.
fn score(d: &ToolDescriptor, words: &[String]) -> u32 {
    let description = d.description.to_lowercase();
    words
        .iter()
        .map(|w| {
            let mut s = 0;
            if d.name == *w {
                s += 100;
            } else if d.name.contains(w.as_str()) {
                s += 20;
            }
            if d.aliases.iter().any(|a| a.contains(w.as_str())) {
                s += 10;
            }
            if d.category.contains(w.as_str()) {
                s += 5;
            }
            if description
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|t| t == w)
            {
                s += 2;
            }
            s
        })
        .sum()
}
