//! The author's server: the peer's tools (`benches/peer`) written with kyro's `#[tool]`.
//! kyro validates, authorizes, fingerprints and receipts each call; the peer does none of it.

use kyro::prelude::*;

/// Echo the text back.
#[tool(name = "echo", category = "bench", effect = "none", inline = true)]
pub struct Echo {
    /// The text.
    pub text: String,
}

/// The text.
#[output]
pub struct Echoed {
    /// The text sent.
    pub text: String,
}

impl Execute for Echo {
    type Output = Echoed;

    async fn run(self, _cx: &ToolContext) -> Result<Echoed, ToolError> {
        Ok(Echoed { text: self.text })
    }
}

/// Add two integers.
#[tool(name = "add", category = "bench", effect = "none", inline = true)]
pub struct Add {
    /// First addend.
    pub a: i64,
    /// Second addend.
    pub b: i64,
}

/// The sum.
#[output]
pub struct Sum {
    /// a + b.
    pub sum: i64,
}

impl Execute for Add {
    type Output = Sum;

    async fn run(self, _cx: &ToolContext) -> Result<Sum, ToolError> {
        let sum = self
            .a
            .checked_add(self.b)
            .ok_or_else(|| ToolError::custom("overflow", "the sum does not fit 64 bits"))?;
        Ok(Sum { sum })
    }
}

/// Read lines of a UTF-8 text file.
#[tool(name = "read_file", category = "bench", effect = "read")]
pub struct ReadFile {
    /// Path of the file.
    pub path: String,
    /// First line to return, 1-based; default 1.
    pub offset: Option<u64>,
    /// Most lines to return; default 2000.
    pub limit: Option<u64>,
}

/// The lines read.
#[output]
pub struct Lines {
    /// The lines, each with its newline.
    pub content: String,
}

impl Execute for ReadFile {
    type Output = Lines;

    async fn run(self, _cx: &ToolContext) -> Result<Lines, ToolError> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| ToolError::custom("unreadable", format!("{}: {e}", self.path)))?;
        let content = text
            .split_inclusive('\n')
            .skip(self.offset.unwrap_or(1).saturating_sub(1) as usize)
            .take(self.limit.unwrap_or(2000) as usize)
            .collect();
        Ok(Lines { content })
    }
}

/// Block the thread for a while (plain blocking code).
#[tool(name = "slow", category = "bench", effect = "none")]
pub struct Slow {
    /// How long to block, in milliseconds; at most 5000.
    #[schemars(range(max = 5000))]
    pub ms: u64,
}

/// Done.
#[output]
pub struct Done {
    /// Always true.
    pub done: bool,
}

impl Execute for Slow {
    type Output = Done;

    async fn run(self, _cx: &ToolContext) -> Result<Done, ToolError> {
        std::thread::sleep(std::time::Duration::from_millis(self.ms));
        Ok(Done { done: true })
    }
}

kyro::catalog! {
    /// The bench's tools.
    pub const TOOLS = [Echo, Add, ReadFile, Slow];
}

fn main() -> std::process::ExitCode {
    kyro::Server::new(TOOLS).run()
}
