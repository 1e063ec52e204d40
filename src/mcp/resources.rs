//! MCP resources: the tool inventory, each listed tool's full descriptor, a receipt by call
//! id, and workspace files through a template read exactly as `read_file` reads them (the
//! same boundary: confinement, policy, a receipt).
//!
//! What reads the workspace is served only as far as `read_file` is ([`reading`]): the
//! file template while the catalog selection serves `read_file` and the policy could allow
//! it; completion of its `path` and the receipts (which no approval can be asked for, and
//! which no receipt records) only while `read_file` runs without asking, and the receipts
//! only while the log lies where the caller may read.

use kyro_core::policy::{Access, ApprovalRule, Scope};
use kyro_core::{Approval, Call, Caller, Outcome, Runtime};
use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate, Tool};
use serde_json::json;

/// The tool inventory, as markdown.
const INVENTORY: &str = "kyro://inventory";
/// `kyro://tools/{name}`: a tool's descriptor, prose and all.
const TOOLS: &str = "kyro://tools/";
/// `kyro://receipts/{call_id}`: one receipt.
const RECEIPTS: &str = "kyro://receipts/";
/// `kyro://workspace/{path}`: a workspace file, through `read_file`.
const WORKSPACE: &str = "kyro://workspace/";
/// The grants in force for the caller reading.
const GRANTS: &str = "kyro://grants";
/// The tool the file template reads through.
const READER: &str = "read_file";

/// How far the workspace is served as resources: as far as `read_file` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// `read_file` is not served (the catalog selection left it out) or the policy could
    /// never allow it (a capability it does not grant, `deny`): no file template, no
    /// completions, no receipts.
    Hidden,
    /// Each read asks for an approval: the file template is served (a read answers that it
    /// needs one), completions and receipts are not.
    Asks,
    /// Reads run without asking.
    Free,
}

/// How `read_file` is served to the caller of `runtime`, decided as the boundary decides a
/// call of it (its capabilities, its effect's rule, its own `[approvals.tools]` rule).
fn reading(runtime: &Runtime, scope: &Scope) -> Reading {
    let snapshot = runtime.registry().snapshot();
    let Some(reader) = snapshot.get(READER) else {
        return Reading::Hidden;
    };
    let descriptor = reader.descriptor();
    if !scope.may_allow(descriptor) {
        return Reading::Hidden;
    }
    let approvals = scope.approvals();
    let mut effect = approvals.for_effect(descriptor.effect);
    if descriptor.approval == Some(Approval::Required) && effect == ApprovalRule::Auto {
        effect = ApprovalRule::Ask;
    }
    match approvals.decide(&descriptor.name, effect, None).0 {
        ApprovalRule::Auto => Reading::Free,
        ApprovalRule::Ask => Reading::Asks,
        ApprovalRule::Review | ApprovalRule::Deny => Reading::Hidden,
    }
}

/// Whether `kyro://receipts/` is served: reads run without asking, and the receipt log
/// (`.kyro/receipts.jsonl` of the workspace) lies beneath a root the caller may read, so
/// the receipts tell nobody more than `kyro://workspace/` would.
fn serves_receipts(runtime: &Runtime, scope: &Scope) -> bool {
    let log = runtime.workspace().root().join(".kyro").join("receipts.jsonl");
    reading(runtime, scope) == Reading::Free && log.to_str().is_some_and(|log| scope.confine(log, Access::Read).is_ok())
}

/// The fixed resources: the inventory and the listed tools' descriptors.
pub(crate) fn listed(tools: &[Tool], grants: bool) -> Vec<Resource> {
    let mut inventory = Resource::new(INVENTORY, "inventory");
    inventory.description = Some("Every served tool: arguments, results, effects (markdown)".into());
    inventory.mime_type = Some("text/markdown".into());
    let mut out = vec![inventory];
    if grants {
        let mut resource = Resource::new(GRANTS, "grants");
        resource.description = Some(
            "The tools you may run without being asked, each until it expires (revoke with `kyro grants revoke ID`)"
                .into(),
        );
        resource.mime_type = Some("application/json".into());
        out.push(resource);
    }
    for tool in tools {
        let mut resource = Resource::new(format!("{TOOLS}{}", tool.name), tool.name.to_string());
        resource.mime_type = Some("application/json".into());
        out.push(resource);
    }
    out
}

/// The templates served: workspace files and receipts, each as far as [`reading`] allows.
pub(crate) fn templates(runtime: &Runtime, scope: &Scope) -> Vec<ResourceTemplate> {
    let mut templates = Vec::new();
    if reading(runtime, scope) != Reading::Hidden {
        let mut file = ResourceTemplate::new(format!("{WORKSPACE}{{path}}"), "workspace file");
        file.description = Some("A UTF-8 text file of the workspace, read as read_file reads it".into());
        file.mime_type = Some("text/plain".into());
        templates.push(file);
    }
    if serves_receipts(runtime, scope) {
        let mut receipt = ResourceTemplate::new(format!("{RECEIPTS}{{call_id}}"), "receipt");
        receipt.description = Some("The receipt of one call, by its call id".into());
        receipt.mime_type = Some("application/json".into());
        templates.push(receipt);
    }
    templates
}

/// Reads one resource for `caller`.
pub(crate) async fn read(
    (runtime, scope): (&Runtime, &Scope),
    uri: &str,
    caller: &Caller,
) -> Result<ResourceContents, ErrorData> {
    let snapshot = runtime.registry().snapshot();
    if let (GRANTS, Some(store)) = (uri, runtime.approval_store()) {
        let (store, caller) = (store.clone(), caller.clone());
        let grants = tokio::task::spawn_blocking(move || store.grants(Some(&caller), kyro_core::grants::now_ms()))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(|e| ErrorData::internal_error(e, None))?;
        let text = serde_json::to_string_pretty(&grants).unwrap_or_default();
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
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
        if !serves_receipts(runtime, scope) {
            return Err(ErrorData::resource_not_found(
                "receipts are not served here: only while read_file is served and runs without asking, to a caller whose roots hold the workspace's .kyro",
                None,
            ));
        }
        // On the state replicas share, a caller reads its own receipts only (the log is not a
        // file of the workspace it could read anyway).
        #[cfg(feature = "postgres")]
        if let Ok(state) = runtime
            .workspace()
            .resource::<kyro_tools::state::PgState, ()>(|| Err(()))
        {
            let found = state
                .find_receipt(id)
                .await
                .map_err(|e| ErrorData::internal_error(e, None))?;
            return match found {
                Some((owner, line)) if owner == caller.name() => {
                    let receipt: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                    let text = serde_json::to_string_pretty(&receipt).unwrap_or_default();
                    Ok(ResourceContents::text(text, uri).with_mime_type("application/json"))
                }
                _ => Err(ErrorData::resource_not_found(
                    format!("no receipt of yours has call id `{id}`"),
                    None,
                )),
            };
        }
        runtime.flush_observers();
        // The log is read off the thread serving requests (it can be long).
        let (root, call_id) = (runtime.workspace().root().to_path_buf(), id.to_owned());
        let found = tokio::task::spawn_blocking(move || kyro_core::receipt::find_receipt(&root, &call_id))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        return match found {
            Ok(Some(receipt)) => {
                let text = serde_json::to_string_pretty(&receipt).unwrap_or_default();
                Ok(ResourceContents::text(text, uri).with_mime_type("application/json"))
            }
            Ok(None) => Err(ErrorData::resource_not_found(
                format!("no receipt has call id `{id}`"),
                None,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(ErrorData::resource_not_found("no call has been receipted yet", None))
            }
            Err(e) => Err(ErrorData::internal_error(
                format!("the receipt log cannot be read: {e}"),
                None,
            )),
        };
    }
    if let Some(path) = uri.strip_prefix(WORKSPACE) {
        let call = Call::new("read_file", json!({"path": path, "limit": 20_000})).by(caller.clone());
        return match runtime.execute_in(call, scope, None).await.outcome {
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
/// when asked for with a leading `.`; at most 100. Nothing unless `read_file` is served
/// and runs without asking ([`Reading::Free`]).
pub(crate) fn complete_path(runtime: &Runtime, scope: &Scope, value: &str) -> Vec<String> {
    if reading(runtime, scope) != Reading::Free {
        return Vec::new();
    }
    let (dir, stem) = match value.rfind('/') {
        Some(i) => (&value[..=i], &value[i + 1..]),
        None => ("", value),
    };
    let confined = match scope.confine(if dir.is_empty() { "." } else { dir }, Access::Read) {
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
