//! A catalog's canonical schemas prepared at build time and embedded: start-up registers
//! the catalog without generating, checking or parsing a schema.

use std::collections::HashMap;
use std::sync::Arc;

use crate::registry::{RegisteredTool, Registry, RegistryError, ToolDefinition};
use crate::schema_text::Schema;
use crate::tool::ToolEntry;

impl Registry {
    /// A registry holding a catalog's tools with the canonical schemas a build script
    /// prepared ([`Registry::prepared_schemas`], embedded with `include_str!`): start-up
    /// then neither generates, checks nor parses a schema; each is parsed when first read
    /// (listed, described or called). An entry `prepared` lacks (or a line that is not
    /// three tab-separated objects) is registered as [`Registry::with_catalog`] does. The
    /// JSON of a prepared line is the build script's own and is not checked at start: one
    /// that did not parse would read as `null`, and its tool's calls fail typed (a `null`
    /// schema does not compile), never run unchecked.
    pub fn with_prepared_catalog(catalog: &[ToolEntry], prepared: &'static str) -> Result<Registry, RegistryError> {
        let mut prepared: HashMap<&str, (&'static str, &'static str)> = prepared
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let (name, input, output) = (fields.next()?, fields.next()?, fields.next()?);
                let object = |text: &str| text.starts_with('{') && text.ends_with('}');
                (fields.next().is_none() && object(input) && object(output)).then_some((name, (input, output)))
            })
            .collect();
        let tools = catalog
            .iter()
            .map(|entry| {
                let definition = match prepared.remove(entry.spec.name) {
                    Some((input, output)) => {
                        ToolDefinition::with_schemas(entry, Schema::prepared(input), Schema::prepared(output))?
                    }
                    None => ToolDefinition::builtin(entry)?,
                };
                Ok(Arc::new(RegisteredTool::lazy(definition)))
            })
            .collect::<Result<Vec<_>, RegistryError>>()?;
        let registry = Registry::new();
        registry.commit(|_| Ok(tools))?;
        Ok(registry)
    }

    /// The canonical input and output schemas of a catalog's tools, one line per tool
    /// (its name, its input schema and its output schema as compact JSON, apart by tabs,
    /// which compact JSON never holds), for a build script to write and the program to
    /// embed ([`Registry::with_prepared_catalog`]).
    pub fn prepared_schemas(catalog: &[ToolEntry]) -> Result<String, RegistryError> {
        let mut prepared = String::new();
        for entry in catalog {
            let definition = ToolDefinition::builtin(entry)?;
            let d = definition.descriptor();
            prepared.push_str(&d.name);
            prepared.push('\t');
            prepared.push_str(&d.input_schema.to_string());
            prepared.push('\t');
            prepared.push_str(&d.output_schema.to_string());
            prepared.push('\n');
        }
        Ok(prepared)
    }
}
