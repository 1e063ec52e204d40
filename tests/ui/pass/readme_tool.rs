// The "Adding a tool" example from README.md, kept compiling.
use kyro_core::{Execute, ToolContext, ToolError, WorkspacePath, output, tool};

/// Count the lines of a UTF-8 text file in the workspace.
///
/// Returns the number of lines and of bytes.
#[tool(name = "count_lines", category = "files", effect = "read", aliases = ["wc"])]
pub struct CountLines {
    /// Path of the file, relative to the workspace root.
    #[tool(alias = "file_path")]
    pub path: WorkspacePath,
}

/// The counts (a tool returns an object: `#[output]` on a struct with named fields).
#[output]
#[derive(Debug)]
pub struct Counts {
    /// Lines in the file.
    pub lines: u64,
    /// Bytes in the file.
    pub bytes: u64,
}

impl Execute for CountLines {
    type Output = Counts;

    async fn run(self, cx: &ToolContext) -> Result<Counts, ToolError> {
        // The only way to the filesystem: a path confined beneath the caller's roots.
        let bytes = cx.path(&self.path)?.read()?;
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolError::custom("binary_file", format!("`{}` is not UTF-8 text", self.path)))?;
        Ok(Counts { lines: text.lines().count() as u64, bytes: text.len() as u64 })
    }
}

kyro_core::catalog! {
    pub const BUILTINS = [CountLines];
}

fn main() {
    assert_eq!(BUILTINS[0].spec.name, "count_lines");
    assert_eq!(BUILTINS[0].spec.path_args, ["path"]);
}
