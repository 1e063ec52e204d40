//! `tool_describe`: full descriptors, as `tools/list` serves them.

use serde::Serialize;

use crate::{Execute, ToolContext, ToolDescriptor, ToolError, tool};

/// Describe tools fully: description, input and output schemas, annotations, effect, aliases.
///
/// Accepts canonical names or aliases; returns the same descriptors `tools/list` serves.
#[tool(
    name = "tool_describe",
    title = "Describe tools",
    category = "discovery",
    effect = "none",
    inline = true
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

// Not offered in the help of an author's struct missing its `impl Execute`.
#[diagnostic::do_not_recommend]
impl Execute for ToolDescribe {
    type Output = Descriptions;

    async fn run(self, cx: &ToolContext) -> Result<Descriptions, ToolError> {
        let tools = self
            .names
            .into_iter()
            .map(|name| match cx.catalog().describe(&name) {
                Some(descriptor) => Ok(descriptor.clone()),
                None => Err(ToolError::typed(&Unknown::UnknownTool { name })),
            })
            .collect::<Result<_, _>>()?;
        Ok(Descriptions { tools })
    }
}

/// A name no served tool has or answers to.
#[derive(Debug, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Unknown {
    #[error("no tool is named `{name}`")]
    UnknownTool { name: String },
}
