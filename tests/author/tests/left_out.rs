//! A `#[tool]` the author wrote but left out of `catalog!` is found: the inventory test
//! fails naming it, and the server says it at start (the same check).
use kyro::prelude::*;

/// Say goodbye to someone.
#[tool(name = "send_farewell", category = "text", effect = "none")]
pub struct SendFarewell {
    /// Who to say goodbye to.
    pub name: String,
}

/// The farewell.
#[output]
pub struct Farewell {
    /// The words said.
    pub farewell: String,
}

impl Execute for SendFarewell {
    type Output = Farewell;

    async fn run(self, _cx: &ToolContext) -> Result<Farewell, ToolError> {
        Ok(Farewell {
            farewell: format!("Goodbye, {}!", self.name),
        })
    }
}

kyro::catalog! {
    /// The example's catalog with the farewell added.
    const WITH_FAREWELL = [SendFarewell];
}

#[test]
fn a_tool_left_out_of_the_catalog_is_named() {
    let left = kyro::left_out(kyro_author_example::TOOLS);
    let names: Vec<&str> = left.iter().map(|d| d.name).collect();
    assert_eq!(names, ["send_farewell"]);
    assert_eq!(left[0].type_name, "SendFarewell");
    assert_eq!(left[0].package, "kyro-author-example");

    let dir = tempfile::tempdir().unwrap();
    let said = kyro::inventory::keep(kyro_author_example::TOOLS, dir.path().join("inventory.md")).unwrap_err();
    assert!(
        said.contains("send_farewell (`SendFarewell` in kyro-author-example)"),
        "{said}"
    );
    assert!(said.contains("add it to `catalog!`"), "{said}");
    assert!(
        !dir.path().join("inventory.md").exists(),
        "nothing is written while a tool is left out"
    );
}

#[test]
fn a_catalog_holding_every_tool_leaves_none_out() {
    let all: Vec<kyro::ToolEntry> = kyro_author_example::TOOLS
        .iter()
        .chain(WITH_FAREWELL)
        .cloned()
        .collect();
    assert!(kyro::left_out(&all).is_empty());
    // Built-in families an author picks from are never counted as left out.
    assert!(kyro::left_out(&[]).is_empty());
}
