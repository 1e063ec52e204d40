//! Who a server says it is: the name and version in `serverInfo`, its title and
//! description, the instructions a client shows its model, and its `--help`. An author's
//! server goes by the author's crate (the crate that declared its first tool), not kyro's.

use kyro_core::ToolEntry;

use crate::Server;

/// A server's identity ([`Server::named`](crate::Server::named) and the setters after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// `serverInfo.title`, for people.
    pub title: Option<String>,
    /// `serverInfo.description`, and the first line of `--help`.
    pub description: Option<String>,
    /// What the client tells its model about the server; `None`: a sentence made from
    /// what is served.
    pub instructions: Option<String>,
}

impl Identity {
    /// The identity of the crate that declared the first of `entries` not kyro's own (the
    /// built-ins, the discovery tools): Cargo's name, version and description of that
    /// crate; kyro's when every entry is kyro's.
    pub(crate) fn of_catalog(entries: &[ToolEntry]) -> Identity {
        let kyros = |package: &str| matches!(package, "kyro-tools" | "kyro-core");
        let authors = entries.iter().find(|e| !kyros(e.spec.package.name));
        let (name, version, description) = match authors {
            Some(entry) => (
                entry.spec.package.name,
                entry.spec.package.version,
                entry.spec.package.description,
            ),
            None => (
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
                env!("CARGO_PKG_DESCRIPTION"),
            ),
        };
        Identity {
            name: name.to_owned(),
            version: version.to_owned(),
            title: None,
            description: Some(description.to_owned()).filter(|d| !d.is_empty()),
            instructions: None,
        }
    }

    /// `serverInfo`.
    pub(crate) fn implementation(&self) -> rmcp::model::Implementation {
        let mut info = rmcp::model::Implementation::new(&self.name, &self.version);
        info.title = self.title.clone();
        info.description = self.description.clone();
        info
    }

    /// The instructions: the author's, else a sentence on what a model should know, naming
    /// the discovery tools only when they are served.
    pub(crate) fn instructions(&self, search_only: bool, served: &dyn Fn(&str) -> bool) -> String {
        if let Some(own) = &self.instructions {
            return own.clone();
        }
        let validated = "Arguments are validated against each tool's input schema; violations come back \
                         as tool errors naming the field.";
        let discovery = served("tool_search") && served("tool_describe");
        match (search_only, discovery) {
            (true, true) => format!(
                "Use tool_search to find a tool and tool_describe for its schema, then call_tool to run it. {validated}"
            ),
            (false, true) => {
                format!("Use tool_search to find a tool and tool_describe for its full schema. {validated}")
            }
            _ => validated.to_owned(),
        }
    }
}

impl Server {
    /// The server's name and version, as `serverInfo` gives them (by default the name,
    /// version and description Cargo gave the crate that declared the first tool).
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Server {
        (self.identity.name, self.identity.version) = (name.into(), version.into());
        self
    }

    /// A title for people (`serverInfo.title`).
    pub fn title(mut self, title: impl Into<String>) -> Server {
        self.identity.title = Some(title.into());
        self
    }

    /// What the server is for (`serverInfo.description` and the first line of `--help`).
    pub fn description(mut self, description: impl Into<String>) -> Server {
        self.identity.description = Some(description.into());
        self
    }

    /// What a client tells its model about the server (by default a sentence made from
    /// what is served).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Server {
        self.identity.instructions = Some(instructions.into());
        self
    }

    /// Who the server says it is.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }
}
