//! Discovery: the catalog, searched and described by the tools themselves. They are the
//! framework's: any server may serve them, and a server listing only them and `call_tool`
//! (`--catalog search`) always does.

mod tool_describe;
mod tool_search;

pub use tool_describe::{Descriptions, ToolDescribe};
pub use tool_search::{SearchHit, SearchResults, ToolSearch};

crate::catalog! {
    /// `tool_search` and `tool_describe`.
    pub const CATALOG = [ToolSearch, ToolDescribe];
}
