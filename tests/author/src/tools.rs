//! Four tools, written as an author writes them: one failing with a kind of its own, one
//! needing a capability the author defines, one doing blocking work, one taking a choice
//! and failing with data. Neither serde nor schemars is a dependency.

use kyro::prelude::*;

/// Count the words of a text.
///
/// Returns the number of words; an empty text fails with `empty_text`.
#[tool(name = "word_count", category = "text", effect = "none")]
pub struct WordCount {
    /// The text to count the words of.
    pub text: String,
}

/// How many words.
#[output]
pub struct Words {
    /// Words in the text, split at whitespace.
    pub words: u64,
}

impl Execute for WordCount {
    type Output = Words;

    async fn run(self, _cx: &ToolContext) -> Result<Words, ToolError> {
        if self.text.trim().is_empty() {
            return Err(ToolError::custom("empty_text", "the text has no words; send some text")
                .with_data(kyro::serde_json::json!({"length": self.text.len()})));
        }
        Ok(Words {
            words: self.text.split_whitespace().count() as u64,
        })
    }
}

/// Greet someone by name.
///
/// Needs the `greet.send` capability, the author's own.
#[tool(name = "send_greeting", category = "greetings", effect = "none", capabilities = ["greet.send"])]
pub struct SendGreeting {
    /// Who to greet.
    #[schemars(length(min = 1, max = 100))]
    pub name: String,
}

/// The greeting sent.
#[output]
pub struct Greeting {
    /// The text of the greeting.
    pub greeting: String,
}

impl Execute for SendGreeting {
    type Output = Greeting;

    async fn run(self, _cx: &ToolContext) -> Result<Greeting, ToolError> {
        Ok(Greeting {
            greeting: format!("Hello, {}!", self.name),
        })
    }
}

/// Look a word up in a slow dictionary.
///
/// The lookup blocks its thread for `block_ms` milliseconds, as a synchronous client would.
#[tool(name = "slow_lookup", category = "text", effect = "none")]
pub struct SlowLookup {
    /// The word to look up.
    pub word: String,
    /// How long the lookup blocks, in milliseconds; at most 5000.
    #[schemars(range(max = 5000))]
    pub block_ms: u64,
}

/// The definition found.
#[output]
pub struct Definition {
    /// The word.
    pub word: String,
    /// What it means.
    pub definition: String,
}

impl Execute for SlowLookup {
    type Output = Definition;

    async fn run(self, _cx: &ToolContext) -> Result<Definition, ToolError> {
        std::thread::sleep(std::time::Duration::from_millis(self.block_ms));
        Ok(Definition {
            definition: format!("{} (n.): a word worth the wait", self.word),
            word: self.word,
        })
    }
}

/// How a word is matched.
#[input]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    /// The whole word, as given.
    Exact,
    /// Words that begin with it.
    Prefix,
}

/// Find the words of a text that match a word.
///
/// Fails with `no_match` (and the closest word, as data) when none does.
#[tool(name = "find_words", category = "text", effect = "none")]
pub struct FindWords {
    /// The text to search.
    pub text: String,
    /// The word to look for.
    #[schemars(length(min = 1, max = 100))]
    pub word: String,
    /// How to match it; default `exact`.
    pub matching: Option<Matching>,
}

/// The words found.
#[output]
pub struct Found {
    /// The matching words, in the order of the text.
    pub words: Vec<String>,
}

impl Execute for FindWords {
    type Output = Found;

    async fn run(self, _cx: &ToolContext) -> Result<Found, ToolError> {
        let matches = |w: &&str| match self.matching.as_ref().unwrap_or(&Matching::Exact) {
            Matching::Exact => *w == self.word,
            Matching::Prefix => w.starts_with(&self.word),
        };
        let words: Vec<String> = self
            .text
            .split_whitespace()
            .filter(matches)
            .map(str::to_owned)
            .collect();
        if words.is_empty() {
            let closest = self
                .text
                .split_whitespace()
                .max_by_key(|w| w.chars().zip(self.word.chars()).take_while(|(a, b)| a == b).count());
            return Err(
                ToolError::custom("no_match", format!("no word matches `{}`", self.word))
                    .with_data(kyro::serde_json::json!({"word": self.word, "closest": closest})),
            );
        }
        Ok(Found { words })
    }
}

kyro::catalog! {
    /// The server's tools.
    pub const TOOLS = [WordCount, SendGreeting, SlowLookup, FindWords];
}
