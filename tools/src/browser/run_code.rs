//! `browser_run_code_unsafe`: model-written code driving the page, always asked.

use kyro_core::policy::{ApprovalRule, MatchedRule, Scope, SettingsTable};
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, tool};

use super::manage::Evaluated;
use super::session::with_page;
use crate::Failure;
use crate::settings::NetworkSettings;

/// The largest script file read.
const MAX_CODE: u64 = 1 << 20;

/// Run an async JavaScript function in the page's own world, with its globals (unsafe: the
/// code can do anything the page can, as the page). Playwright MCP runs Node code given a
/// `page`; this runs page JavaScript: no files, no processes, every request under the
/// network policy. Asked before it runs unless the policy names it `auto` (code from a
/// file: asked each time, its content shown).
#[tool(
    name = "browser_run_code_unsafe",
    title = "Run code in the browser (unsafe)",
    category = "browser",
    effect = "exec",
    approval = "required",
    destructive = true
)]
pub struct BrowserRunCodeUnsafe {
    /// The function, like `async () => { document.querySelector('#go').click(); return document.title; }`.
    #[schemars(length(min = 1, max = 100000))]
    pub code: Option<String>,
    /// A workspace file holding the function instead (used over `code` when both are given).
    pub filename: Option<WorkspacePath>,
}

impl Execute for BrowserRunCodeUnsafe {
    type Output = Evaluated;
    const SETTINGS: &[SettingsTable] = &[SettingsTable::of::<NetworkSettings>()];

    async fn run(self, cx: &ToolContext) -> Result<Evaluated, ToolError> {
        let code = match (self.filename, self.code) {
            (Some(file), _) => read_code(cx, &file)?,
            (None, Some(code)) => code,
            (None, None) => {
                return Err(Failure::InvalidRequest {
                    message: "give `code` (a function) or `filename` (a workspace file holding one)".into(),
                }
                .into());
            }
        };
        let expression = format!("({})()", code.trim().trim_end_matches(';'));
        with_page(cx, move |tab, _| {
            let value = tab.evaluate_in_page("run the code", expression)?;
            Ok(Evaluated {
                result: value.value.unwrap_or(serde_json::Value::Null),
            })
        })
        .await
    }

    /// The file's code, for the person asked: the arguments name only the file.
    fn preview(&self, cx: &ToolContext) -> Option<String> {
        let file = self.filename.as_ref()?;
        Some(match read_code(cx, file) {
            Ok(code) if code.len() <= PREVIEW => format!("{}:\n{code}", file.as_str()),
            Ok(code) => {
                let cut = (0..=PREVIEW).rev().find(|&i| code.is_char_boundary(i)).unwrap_or(0);
                format!(
                    "{} (its first {PREVIEW} bytes of {}):\n{}",
                    file.as_str(),
                    code.len(),
                    &code[..cut]
                )
            }
            Err(e) => format!("{}: {e}", file.as_str()),
        })
    }

    /// Code from a file is asked about each time (the file can change between calls): no
    /// grant and no session's approval of the tool runs it.
    fn rule(&self, _scope: &Scope) -> Option<MatchedRule> {
        self.filename.as_ref().map(|_| MatchedRule {
            decision: ApprovalRule::Ask,
            rule: "browser_run_code_unsafe from a file is asked about each call".to_owned(),
            each_call: true,
        })
    }
}

/// The most of a file's code an approval question shows.
const PREVIEW: usize = 16 << 10;

/// A workspace file's code, read no further than [`MAX_CODE`] bytes.
fn read_code(cx: &ToolContext, file: &WorkspacePath) -> Result<String, ToolError> {
    use std::io::Read;
    let path = cx.path(file)?;
    let mut bytes = Vec::new();
    path.open()?
        .take(MAX_CODE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Io {
            operation: "read".into(),
            path: file.as_str().to_owned(),
            message: e.to_string(),
        })?;
    if bytes.len() as u64 > MAX_CODE {
        return Err(Failure::InvalidRequest {
            message: format!(
                "{} is over {} KiB; a script is one function",
                file.as_str(),
                MAX_CODE >> 10
            ),
        }
        .into());
    }
    String::from_utf8(bytes).map_err(|_| {
        Failure::BinaryFile {
            path: file.as_str().to_owned(),
        }
        .into()
    })
}
