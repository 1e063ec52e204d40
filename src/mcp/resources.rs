//! MCP resources: the tool inventory, each listed tool's full descriptor, a receipt by call
//! id, and workspace files through a template read exactly as `read_file` reads them (the
//! same boundary: confinement, policy, a receipt).

use std::io::BufRead;

use kyro_core::{Call, Outcome, Runtime};
use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate, Tool};
use serde_json::{Value, json};

/// The tool inventory, as markdown.
const INVENTORY: &str = "kyro://inventory";
/// `kyro://tools/{name}`: a tool's descriptor, prose and all.
const TOOLS: &str = "kyro://tools/";
/// `kyro://receipts/{call_id}`: one receipt.
const RECEIPTS: &str = "kyro://receipts/";
/// `kyro://workspace/{path}`: a workspace file, through `read_file`.
const WORKSPACE: &str = "kyro://workspace/";

/// The fixed resources: the inventory and the listed tools' descriptors.
pub(crate) fn listed(tools: &[Tool]) -> Vec<Resource> {
    let mut inventory = Resource::new(INVENTORY, "inventory");
    inventory.description = Some("Every served tool: arguments, results, effects (markdown)".into());
    inventory.mime_type = Some("text/markdown".into());
    let mut out = vec![inventory];
    for tool in tools {
        let mut resource = Resource::new(format!("{TOOLS}{}", tool.name), tool.name.to_string());
        resource.mime_type = Some("application/json".into());
        out.push(resource);
    }
    out
}

/// The templates: workspace files and receipts.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    let mut file = ResourceTemplate::new(format!("{WORKSPACE}{{path}}"), "workspace file");
    file.description = Some("A UTF-8 text file of the workspace, read as read_file reads it".into());
    file.mime_type = Some("text/plain".into());
    let mut receipt = ResourceTemplate::new(format!("{RECEIPTS}{{call_id}}"), "receipt");
    receipt.description = Some("The receipt of one call, by its call id".into());
    receipt.mime_type = Some("application/json".into());
    vec![file, receipt]
}

/// Reads one resource.
pub(crate) async fn read(runtime: &Runtime, uri: &str) -> Result<ResourceContents, ErrorData> {
    let snapshot = runtime.registry().snapshot();
    if uri == INVENTORY {
        let text = crate::inventory::render(&snapshot);
        return Ok(ResourceContents::text(text, uri).with_mime_type("text/markdown"));
    }
    if let Some(name) = uri.strip_prefix(TOOLS) {
        let tool = snapshot
            .get(name)
            .ok_or_else(|| ErrorData::resource_not_found(format!("no tool is named `{name}`"), None))?;
        let text = serde_json::to_string_pretty(tool.descriptor()).unwrap_or_default();
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
    if let Some(id) = uri.strip_prefix(RECEIPTS) {
        runtime.flush_observers();
        let log = runtime.workspace().root().join(".kyro/receipts.jsonl");
        let file = std::fs::File::open(&log)
            .map_err(|_| ErrorData::resource_not_found("no call has been receipted yet", None))?;
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            let Ok(receipt) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if receipt["call_id"] == id {
                let text = serde_json::to_string_pretty(&receipt).unwrap_or(line);
                return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
            }
        }
        return Err(ErrorData::resource_not_found(
            format!("no receipt has call id `{id}`"),
            None,
        ));
    }
    if let Some(path) = uri.strip_prefix(WORKSPACE) {
        let call = Call::new("read_file", json!({"path": path, "limit": 20_000}));
        return match runtime.execute_call(call).await {
            Outcome::Ok { result, .. } => {
                let text = result["content"].as_str().unwrap_or_default().to_owned();
                Ok(ResourceContents::text(text, uri).with_mime_type("text/plain"))
            }
            Outcome::UnknownTool { .. } => Err(ErrorData::resource_not_found(
                "workspace files are read through read_file, which this server does not serve",
                None,
            )),
            other => Err(ErrorData::resource_not_found(
                other.to_json()["error"]["message"]
                    .as_str()
                    .unwrap_or("the file cannot be read")
                    .to_owned(),
                Some(other.to_json()),
            )),
        };
    }
    Err(ErrorData::resource_not_found(format!("unknown resource `{uri}`"), None))
}

/// Completions for the file template's `path`: the entries of the directory the value names
/// so far that start with its last part, confined as `read_file` confines (a path that
/// leaves the roots completes to nothing); directories end in `/`, hidden entries only
/// when asked for with a leading `.`; at most 100.
pub(crate) fn complete_path(runtime: &Runtime, value: &str) -> Vec<String> {
    let (dir, stem) = match value.rfind('/') {
        Some(i) => (&value[..=i], &value[i + 1..]),
        None => ("", value),
    };
    let confined = match runtime
        .scope()
        .confine(if dir.is_empty() { "." } else { dir }, kyro_core::policy::Access::Read)
    {
        Ok(confined) => confined,
        Err(_) => return Vec::new(),
    };
    let Ok(entries) = confined.read_dir() else {
        return Vec::new();
    };
    let mut values: Vec<String> = entries
        .into_iter()
        .filter(|e| e.name.starts_with(stem) && (stem.starts_with('.') || !e.name.starts_with('.')))
        .map(|e| match e.kind {
            kyro_core::EntryType::Directory => format!("{dir}{}/", e.name),
            _ => format!("{dir}{}", e.name),
        })
        .collect();
    values.sort();
    values.truncate(rmcp::model::CompletionInfo::MAX_VALUES);
    values
}

/// Whether a completion request is for the file template's `path`.
pub(crate) fn is_path_completion(template: &str, argument: &str) -> bool {
    template == format!("{WORKSPACE}{{path}}") && argument == "path"
}
