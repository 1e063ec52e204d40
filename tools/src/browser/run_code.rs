//! `browser_run_code_unsafe`: model-written code driving the page, always asked.

use kyro_core::policy::SettingsTable;
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
/// network policy. Asked before it runs unless the policy names it `auto`.
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
            (Some(file), _) => {
                let path = cx.path(&file)?;
                if path.info(true)?.size > MAX_CODE {
                    return Err(Failure::InvalidRequest {
                        message: format!(
                            "{} is over {} KiB; a script is one function",
                            file.as_str(),
                            MAX_CODE >> 10
                        ),
                    }
                    .into());
                }
                String::from_utf8(path.read()?).map_err(|_| Failure::BinaryFile {
                    path: file.as_str().to_owned(),
                })?
            }
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
}
