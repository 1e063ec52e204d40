//! `tool_describe`: full descriptors, as `tools/list` serves them.

use crate::Failure;
use kyro_core::{Execute, ToolContext, ToolDescriptor, ToolError, tool};

/// Describe tools fully: description, input and output schemas, annotations, effect, aliases.
///
/// Accepts canonical names or aliases; returns the same descriptors `tools/list` serves.
#[tool(
    name = "tool_describe",
    title = "Describe tools",
    category = "discovery",
    effect = "none"
)]
pub struct ToolDescribe {
    /// Names or aliases of the tools to describe, 1 to 20.
    #[schemars(length(min = 1, max = 20))]
    pub names: Vec<String>,
}

/// The descriptors asked for, in the order asked.
#[kyro_core::output]
#[derive(Debug)]
pub struct Descriptions {
    /// One descriptor per name.
    pub tools: Vec<ToolDescriptor>,
}

impl Execute for ToolDescribe {
    type Output = Descriptions;

    async fn run(self, cx: &ToolContext) -> Result<Descriptions, ToolError> {
        let tools = self
            .names
            .into_iter()
            .map(|name| match cx.catalog().describe(&name) {
                Some(descriptor) => Ok(descriptor.clone()),
                None => Err(Failure::UnknownTool { name }),
            })
            .collect::<Result<_, _>>()?;
        Ok(Descriptions { tools })
    }
}

#[cfg(test)]
mod tests {
    use super::Failure;
    use kyro_core::Registry;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    #[test]
    fn describes_by_name_or_alias_exactly_as_the_registry_serves() {
        let r = ok(call(
            workspace().path(),
            "tool_describe",
            json!({"names": ["cat", "calculate"]}),
        ));
        let registry = Registry::with_catalog(crate::BUILTINS).unwrap();
        let snapshot = registry.snapshot();
        let served = serde_json::to_value(snapshot.get("read_file").unwrap().descriptor()).unwrap();
        assert_eq!(r["tools"][0], served);
        assert_eq!(r["tools"][1]["name"], "calculate");
    }

    #[test]
    fn an_unknown_name_is_a_typed_failure() {
        assert_eq!(
            Failure::of(&failed(call(
                workspace().path(),
                "tool_describe",
                json!({"names": ["read_file", "nope"]})
            ))),
            Some(Failure::UnknownTool { name: "nope".into() })
        );
    }
}
