//! One tool, written against `kyro` renamed to `toolkit`: if any expansion named `::kyro`
//! or `::kyro_core` by hand, this crate would not compile.

use toolkit::prelude::*;

/// Repeat a word.
#[tool(name = "repeat", category = "text", effect = "none")]
pub struct Repeat {
    /// The word.
    pub word: String,
    /// How many times.
    pub times: u8,
}

/// The repeated word.
#[output]
pub struct Repeated {
    /// The words, space-separated.
    pub text: String,
}

impl Execute for Repeat {
    type Output = Repeated;

    async fn run(self, _cx: &ToolContext) -> Result<Repeated, ToolError> {
        Ok(Repeated {
            text: vec![self.word.as_str(); usize::from(self.times)].join(" "),
        })
    }
}

toolkit::catalog! {
    /// This crate's tools.
    pub const TOOLS = [Repeat];
}

#[cfg(test)]
mod tests {
    use toolkit::{Call, Outcome};

    #[test]
    fn the_renamed_expansion_registers_and_runs() {
        let ws = tempfile::tempdir().unwrap();
        let runtime = toolkit::Server::new(super::TOOLS)
            .workspace(ws.path())
            .runtime()
            .unwrap();
        let outcome = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(runtime.execute_call(Call::new(
                "repeat",
                toolkit::serde_json::json!({"word": "ab", "times": 3}),
            )));
        match outcome {
            Outcome::Ok { result, .. } => assert_eq!(result["text"], "ab ab ab"),
            other => panic!("{other:?}"),
        }
    }
}
