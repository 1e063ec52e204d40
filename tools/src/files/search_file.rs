//! Searching one file for `grep`: the matcher and limits shared by the threads that search
//! (`Search`), the collector of one file's matching lines with their context, and the line
//! a match is returned as. Read by `grep` (one file) and `search_tree` (a walk).

use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use kyro_core::ToolError;
use schemars::JsonSchema;
use serde::Serialize;

/// Longest line returned; longer ones are cut (and marked).
const MAX_LINE: usize = 2000;

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LineMatch {
    /// Path relative to the workspace root.
    pub path: String,
    /// 1-based line number.
    pub line_number: u64,
    /// The line, without its line ending (cut past 2000 bytes).
    pub line: String,
    /// Context lines before, oldest first.
    pub before: Vec<String>,
    /// Context lines after.
    pub after: Vec<String>,
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.len() <= MAX_LINE {
        return text.to_owned();
    }
    let mut cut = MAX_LINE;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…[line cut at {MAX_LINE} bytes]", &text[..cut])
}

/// Collects matches with their context for one file.
struct Collector<'a> {
    path: String,
    out: &'a mut Vec<LineMatch>,
    pending_before: Vec<String>,
    limit: usize,
    /// Bytes of text the result may still take (the call's output limit).
    bytes_left: &'a mut usize,
    over: bool,
}

impl LineMatch {
    /// What the line costs of the output budget, with its context: path, numbers and JSON
    /// punctuation cost about 64 bytes a line.
    pub(super) fn cost(&self) -> usize {
        self.before
            .iter()
            .chain(&self.after)
            .chain([&self.line])
            .map(|t| t.len() + 64)
            .sum()
    }
}

impl Collector<'_> {
    /// Takes `text`'s size from the budget; false once it is spent.
    fn spend(&mut self, text: &str) -> bool {
        let cost = text.len() + 64;
        if cost > *self.bytes_left {
            self.over = true;
            return false;
        }
        *self.bytes_left -= cost;
        true
    }
}

/// The matches of one file searched.
pub(super) struct FileMatches {
    /// Path relative to the workspace root, for ordering.
    pub relative: std::path::PathBuf,
    pub matches: Vec<LineMatch>,
    /// More lines matched than the file's collector kept.
    pub over: bool,
}

/// One search's matcher, settings and limits, shared by the threads that search.
pub(super) struct Search<'a> {
    pub matcher: &'a grep_regex::RegexMatcher,
    /// Lines of context before and after each match.
    pub context: usize,
    pub include: Option<&'a globset::GlobSet>,
    pub exclude: Option<&'a globset::GlobSet>,
    pub limit: usize,
    pub budget: usize,
}

impl Search<'_> {
    /// The bytes of lines the result may hold.
    pub(super) fn budget(&self) -> usize {
        self.budget
    }

    /// A searcher for one thread.
    pub(super) fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .before_context(self.context)
            .after_context(self.context)
            .binary_detection(grep_searcher::BinaryDetection::quit(b'\0'))
            .build()
    }

    /// Searches one file (`None` when `include` or `exclude` leaves it out) with one
    /// thread's `searcher`, keeping at most the call's limits of its matches.
    pub(super) fn file(
        &self,
        searcher: &mut Searcher,
        file: &kyro_core::ConfinedPath,
    ) -> Result<Option<FileMatches>, ToolError> {
        let relative = file.relative().to_owned();
        if self.include.is_some_and(|set| !set.is_match(&relative))
            || self.exclude.is_some_and(|set| set.is_match(&relative))
        {
            return Ok(None);
        }
        let handle = file.open()?;
        let mut matches = Vec::new();
        let mut bytes_left = self.budget;
        let mut sink = Collector {
            path: file.display(),
            out: &mut matches,
            pending_before: Vec::new(),
            limit: self.limit,
            bytes_left: &mut bytes_left,
            over: false,
        };
        searcher
            .search_file(self.matcher, &handle, &mut sink)
            .map_err(|e| ToolError::io("search", file.given(), &e))?;
        let over = sink.over;
        Ok(Some(FileMatches {
            relative,
            matches,
            over,
        }))
    }
}
impl Sink for Collector<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        if self.out.len() >= self.limit {
            self.over = true;
            return Ok(false);
        }
        let line = line_text(m.bytes());
        if !self.spend(&line) {
            return Ok(false);
        }
        self.out.push(LineMatch {
            path: self.path.clone(),
            line_number: m.line_number().unwrap_or(0),
            line,
            before: std::mem::take(&mut self.pending_before),
            after: Vec::new(),
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        let text = line_text(c.bytes());
        if !self.spend(&text) {
            return Ok(false);
        }
        match c.kind() {
            SinkContextKind::Before => self.pending_before.push(text),
            SinkContextKind::After => {
                if let Some(last) = self.out.last_mut().filter(|l| l.path == self.path) {
                    last.after.push(text);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}
