//! Discovery: the catalog, searched and described by the tools themselves.

mod tool_describe;
mod tool_search;

pub use tool_describe::{Descriptions, ToolDescribe};
pub use tool_search::{SearchHit, SearchResults, ToolSearch};
