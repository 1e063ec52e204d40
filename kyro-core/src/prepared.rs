//! A catalog's canonical schemas prepared at build time and embedded: start-up registers
//! the catalog without generating or checking a schema.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::registry::{RegisteredTool, Registry, RegistryError, ToolDefinition};
use crate::tool::ToolEntry;

impl Registry {
    /// A registry holding a catalog's tools with the canonical schemas a build script
    /// prepared ([`Registry::prepared_schemas`], embedded with `include_str!`): start-up
    /// then neither generates nor checks a schema, and a large catalog's schemas are parsed
    /// on two threads. An entry `prepared` lacks (or a line that is not a prepared one) is
    /// registered as [`Registry::with_catalog`] does.
    pub fn with_prepared_catalog(catalog: &[ToolEntry], prepared: &str) -> Result<Registry, RegistryError> {
        type Line = (String, Value, Value);
        let parse =
            |lines: &[&str]| -> Vec<Line> { lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect() };
        let lines: Vec<&str> = prepared.lines().collect();
        let (first, second) = lines.split_at(lines.len() / 2);
        let parsed = if lines.len() < 16 {
            parse(&lines)
        } else {
            std::thread::scope(|scope| {
                let other = scope.spawn(|| parse(second));
                let mut parsed = parse(first);
                parsed.extend(other.join().unwrap_or_default());
                parsed
            })
        };
        let mut prepared: HashMap<String, (Value, Value)> = parsed.into_iter().map(|(n, i, o)| (n, (i, o))).collect();
        let tools = catalog
            .iter()
            .map(|entry| {
                let definition = match prepared.remove(entry.spec.name) {
                    Some((input, output)) => ToolDefinition::with_schemas(entry, input, output)?,
                    None => ToolDefinition::builtin(entry)?,
                };
                Ok(Arc::new(RegisteredTool::lazy(definition)))
            })
            .collect::<Result<Vec<_>, RegistryError>>()?;
        let registry = Registry::new();
        registry.commit(|_| Ok(tools))?;
        Ok(registry)
    }

    /// The canonical input and output schemas of a catalog's tools, one JSON line per tool
    /// (`[name, input, output]`), for a build script to write and the program to embed
    /// ([`Registry::with_prepared_catalog`]).
    pub fn prepared_schemas(catalog: &[ToolEntry]) -> Result<String, RegistryError> {
        let mut prepared = String::new();
        for entry in catalog {
            let definition = ToolDefinition::builtin(entry)?;
            let d = definition.descriptor();
            let line = Value::Array(vec![
                Value::String(d.name.clone()),
                d.input_schema.clone(),
                d.output_schema.clone(),
            ]);
            prepared.push_str(&line.to_string());
            prepared.push('\n');
        }
        Ok(prepared)
    }
}
