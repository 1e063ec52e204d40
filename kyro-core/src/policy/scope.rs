//! Scopes: the capabilities, roots and depth a caller holds, and path confinement to them.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::{Deserialize, Serialize};

use super::file::{ApprovalRules, Policy, RootSpec, SandboxPolicy};
use super::settings::{Settings, Tables};
use crate::confined::ConfinedPath;
use crate::denial::{Access, PathDenial, ScopeError};
use crate::effect::Capability;

/// Directories inside a writable root that tools may still not write: Git's own data and
/// kyro's state and receipts.
const PROTECTED: &[&str] = &[".git", ".kyro"];

/// What makes a directory a git directory to `git`: its `is_git_directory` (setup.c) takes
/// a directory with `HEAD` whose common directory holds `objects/` and `refs/`, the
/// directory itself or the one its `commondir` file names (a linked worktree's git
/// directory, whose `gitdir` file points back at the worktree). A `commondir` may name a
/// directory anywhere, so `HEAD` with any one of these is treated like `.git` whatever its
/// name, as is `objects/` with `refs/` (a common directory, which a `HEAD` completes); and
/// the write that would bring the second is refused, so a git directory with a config of
/// its choosing cannot be planted through the file tools.
const HEAD: &str = "HEAD";
/// What makes a git directory beside [`HEAD`] (any one of them).
const BESIDE_HEAD: &[&str] = &["objects", "refs", "commondir", "gitdir"];

/// Whether `dir`, with `added` written into it, has the shape of a git directory (`added`
/// in any case: on a case-insensitive file system `head` is `HEAD`).
fn git_dir_with(dir: &Path, added: Option<&std::ffi::OsStr>) -> bool {
    let present = |marker: &str| {
        added.is_some_and(|name| name.to_string_lossy().eq_ignore_ascii_case(marker))
            || dir.join(marker).symlink_metadata().is_ok()
    };
    (present(HEAD) && BESIDE_HEAD.iter().any(|m| present(m))) || (present("objects") && present("refs"))
}

/// Whether writing `relative` (beneath `root`) would write into a git directory or make one.
fn writes_a_git_dir(root: &Path, relative: &Path) -> bool {
    let mut dir = root.to_path_buf();
    for component in relative.components() {
        let name = component.as_os_str();
        if git_dir_with(&dir, Some(name)) {
            return true;
        }
        dir.push(component);
    }
    git_dir_with(&dir, None)
}

/// A `[sandbox]` path: `~/...` beneath the home directory, a relative one beneath the
/// workspace.
fn sandbox_path(workspace: &Path, path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => Path::new(&home).join(rest),
        _ => workspace.join(path),
    }
}

/// A granted root: its canonical path, its access and an open handle every operation
/// resolves beneath.
#[derive(Debug)]
pub struct RootGrant {
    path: PathBuf,
    access: Access,
    dir: Arc<Dir>,
}

impl RootGrant {
    /// Opens `path` (which must exist) as a root.
    pub fn open(path: &Path, access: Access) -> std::io::Result<RootGrant> {
        let path = path.canonicalize()?;
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        Ok(RootGrant {
            path,
            access,
            dir: Arc::new(dir),
        })
    }

    /// The canonical host path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The access granted.
    pub fn access(&self) -> Access {
        self.access
    }
}

/// What a child scope asks for; `None` keeps the parent's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeRequest {
    /// Capabilities, a subset of the parent's.
    #[serde(default)]
    pub capabilities: Option<Vec<Capability>>,
    /// Roots, each inside a parent root with at least the access asked.
    #[serde(default)]
    pub roots: Option<Vec<RootSpec>>,
}

fn next_scope_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What a caller may do: capabilities, roots, approval rules and depth.
#[derive(Debug, Clone)]
pub struct Scope {
    /// This scope's id, and its ancestors' before it (the top-level scope first).
    lineage: Arc<[u64]>,
    tables: Arc<Tables>,
    capabilities: BTreeSet<Capability>,
    roots: Vec<Arc<RootGrant>>,
    approvals: ApprovalRules,
    sandbox: Arc<SandboxPolicy>,
    depth: u32,
    max_depth: u32,
}

impl Scope {
    /// The top-level scope of a policy, roots resolved against `workspace`.
    pub fn from_policy(policy: &Policy, workspace: &Path) -> Result<Scope, ScopeError> {
        let roots = policy
            .roots
            .iter()
            .map(|spec| {
                let path = workspace.join(&spec.path);
                RootGrant::open(&path, spec.access)
                    .map(Arc::new)
                    .map_err(|e| ScopeError::Root {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scope {
            lineage: Arc::from([next_scope_id()]),
            tables: Arc::new(Tables::new(policy.tools.clone())),
            // Without a list, the effects' own ([`Runtime::new`](crate::Runtime::new) puts the
            // served tools' in the list before it gets here).
            capabilities: match &policy.capabilities {
                Some(listed) => listed.iter().cloned().collect(),
                None => crate::Capability::OF_EFFECTS.iter().cloned().collect(),
            },
            roots,
            approvals: policy.approvals.clone(),
            sandbox: Arc::new(SandboxPolicy {
                readable: policy
                    .sandbox
                    .readable
                    .iter()
                    .map(|p| sandbox_path(workspace, p))
                    .collect(),
                writable: policy
                    .sandbox
                    .writable
                    .iter()
                    .map(|p| sandbox_path(workspace, p))
                    .collect(),
                ..policy.sandbox.clone()
            }),
            depth: 0,
            max_depth: policy.max_depth,
        })
    }

    /// This scope's id: unique in the process, shared by its clones, new for each child.
    pub fn id(&self) -> u64 {
        self.lineage[self.lineage.len() - 1]
    }

    /// This scope's id and its ancestors', the top-level scope first. Something a scope
    /// owns (a background process, say) is within reach of a caller whose id is in the
    /// owner's lineage: the scope itself and its ancestors, never a sibling or a child.
    pub fn lineage(&self) -> &[u64] {
        &self.lineage
    }

    /// What an approval is bound to besides the call: the roots with their access, the
    /// capabilities and the depth (part of every fingerprint).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "capabilities": self.capabilities,
            "depth": self.depth,
            "roots": self
                .roots
                .iter()
                .map(|r| serde_json::json!({"access": r.access, "path": r.path.to_string_lossy()}))
                .collect::<Vec<_>>(),
        })
    }

    /// A tool family's settings, from the policy's `[tools.<T::TABLE>]` (the default when
    /// the table is absent); children read their parent's tables. The tables were checked
    /// at load against the types the registered tools declare, so this fails only for a
    /// type its tool did not declare.
    pub fn settings<T: Settings>(&self) -> Result<Arc<T>, crate::ToolError> {
        self.tables.get::<T>().map_err(|message| crate::ToolError::Settings {
            table: T::TABLE.to_owned(),
            message,
        })
    }

    /// The capabilities held.
    pub fn capabilities(&self) -> &BTreeSet<Capability> {
        &self.capabilities
    }

    /// The roots held; the first is where relative paths resolve.
    pub fn roots(&self) -> &[Arc<RootGrant>] {
        &self.roots
    }

    /// Whether a call of the tool `descriptor` describes could ever be allowed here: it
    /// needs no capability this scope lacks, and its effect is not denied outright. A
    /// server does not list a tool that could not.
    pub fn may_allow(&self, descriptor: &crate::descriptor::ToolDescriptor) -> bool {
        descriptor.capabilities.iter().all(|c| self.capabilities.contains(c))
            && self
                .approvals
                .for_tool(&descriptor.name)
                .map_or(self.approvals.for_effect(descriptor.effect), |m| m.decision)
                != super::file::ApprovalRule::Deny
    }

    /// The approval rules.
    pub fn approvals(&self) -> &ApprovalRules {
        &self.approvals
    }

    /// The OS sandbox for programs started in this scope (`readable` and `writable`
    /// resolved against the workspace; the writable roots are this scope's).
    pub fn sandbox(&self) -> &SandboxPolicy {
        &self.sandbox
    }

    /// Nesting depth: 0 for the top-level caller.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// A child scope: never wider than this one, one level deeper.
    pub fn child(&self, request: &ScopeRequest) -> Result<Scope, ScopeError> {
        let depth = self.depth + 1;
        if depth > self.max_depth {
            return Err(ScopeError::TooDeep {
                depth,
                max: self.max_depth,
            });
        }
        let capabilities = match &request.capabilities {
            None => self.capabilities.clone(),
            Some(asked) => {
                if let Some(capability) = asked.iter().find(|c| !self.capabilities.contains(c)) {
                    return Err(ScopeError::CapabilityWidening {
                        capability: capability.clone(),
                    });
                }
                asked.iter().cloned().collect()
            }
        };
        let roots = match &request.roots {
            None => self.roots.clone(),
            Some(asked) => asked
                .iter()
                .map(|spec| self.narrow_root(&spec.path, spec.access))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let mut lineage = self.lineage.to_vec();
        lineage.push(next_scope_id());
        Ok(Scope {
            lineage: lineage.into(),
            tables: self.tables.clone(),
            capabilities,
            roots,
            approvals: self.approvals.clone(),
            sandbox: self.sandbox.clone(),
            depth,
            max_depth: self.max_depth,
        })
    }

    fn narrow_root(&self, path: &Path, access: Access) -> Result<Arc<RootGrant>, ScopeError> {
        let widening = || ScopeError::RootWidening {
            path: path.display().to_string(),
            access,
        };
        let given = path.to_string_lossy();
        for root in &self.roots {
            if root.access < access {
                continue;
            }
            // Confine like any path argument: no `..`, no symlink out of the parent root.
            let Ok(confined) = self.confine_in(root, &given) else {
                continue;
            };
            let relative = confined.content().to_owned();
            let dir = if relative.as_os_str().is_empty() {
                root.dir.try_clone().map_err(|_| widening())?
            } else {
                root.dir.open_dir(&relative).map_err(|_| widening())?
            };
            return Ok(Arc::new(RootGrant {
                path: root.path.join(&relative),
                access,
                dir: Arc::new(dir),
            }));
        }
        Err(widening())
    }

    /// Resolves a path argument beneath the roots, for reading or writing.
    ///
    /// Relative paths resolve against the first root; absolute ones must lie inside a root
    /// (component by component: `/w/root-evil` is not inside `/w/root`). `..` may not climb
    /// out, symlinks are resolved beneath the root handle and must stay inside, and writes
    /// into read-only roots, `.git` or `.kyro` are refused.
    pub fn confine(&self, given: &str, need: Access) -> Result<ConfinedPath, PathDenial> {
        if given.is_empty() || given.contains('\0') {
            return Err(PathDenial::Malformed);
        }
        let path = Path::new(given);
        let root = if path.is_absolute() {
            self.roots
                .iter()
                .filter(|r| path.starts_with(&r.path))
                .max_by_key(|r| r.path.components().count())
                .ok_or(PathDenial::OutsideRoots)?
        } else {
            self.roots.first().ok_or(PathDenial::OutsideRoots)?
        };
        let confined = self.confine_in(root, given)?;
        if need == Access::ReadWrite {
            if root.access != Access::ReadWrite {
                return Err(PathDenial::ReadOnlyRoot);
            }
            let protected = |p: &Path| {
                p.components()
                    .any(|c| PROTECTED.iter().any(|name| c.as_os_str() == *name))
            };
            if protected(confined.relative())
                || protected(confined.content())
                || crate::authority::beneath_state_home(&root.path.join(confined.relative()))
                || crate::authority::beneath_state_home(&root.path.join(confined.content()))
            {
                return Err(PathDenial::Protected);
            }
            if writes_a_git_dir(&root.path, confined.relative()) || writes_a_git_dir(&root.path, confined.content()) {
                return Err(PathDenial::GitDirectory);
            }
        }
        Ok(confined)
    }

    fn confine_in(&self, root: &Arc<RootGrant>, given: &str) -> Result<ConfinedPath, PathDenial> {
        let path = Path::new(given);
        let relative = if path.is_absolute() {
            path.strip_prefix(&root.path).map_err(|_| PathDenial::OutsideRoots)?
        } else {
            path
        };
        let mut lexical = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => lexical.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !lexical.pop() {
                        return Err(PathDenial::OutsideRoots);
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(PathDenial::OutsideRoots),
            }
        }
        let (entry, content) = resolve_beneath(&root.path, &lexical)?;
        Ok(ConfinedPath::new(
            root.dir.clone(),
            root.path.clone(),
            entry,
            content,
            given.to_owned(),
        ))
    }
}

/// Resolves a lexically clean path below `root` (canonical): the directories leading to it
/// are followed through symlinks, which must stay inside; a final symlink is kept as the
/// entry (so deleting or describing it touches the link) and its target, which must stay
/// inside too, is where content is read and written.
///
/// Returns `(entry, content)`, both relative to the root and free of symlinks but for the
/// entry's last component.
fn resolve_beneath(root: &Path, lexical: &Path) -> Result<(PathBuf, PathBuf), PathDenial> {
    let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
        return Ok((PathBuf::new(), PathBuf::new()));
    };
    let entry = resolve_existing(root, parent)?.join(name);
    let host = root.join(&entry);
    match host.symlink_metadata() {
        Ok(meta) if meta.file_type().is_symlink() => {
            // A dangling link or a loop has no known target: refuse it.
            let target = host.canonicalize().map_err(|_| PathDenial::OutsideRoots)?;
            let content = target.strip_prefix(root).map_err(|_| PathDenial::OutsideRoots)?;
            Ok((entry, content.to_path_buf()))
        }
        _ => Ok((entry.clone(), entry)),
    }
}

/// The canonical form, relative to `root`, of a directory path whose tail may not exist yet.
fn resolve_existing(root: &Path, relative: &Path) -> Result<PathBuf, PathDenial> {
    let mut existing = relative.to_path_buf();
    let mut tail: Vec<std::ffi::OsString> = Vec::new();
    loop {
        let host = root.join(&existing);
        match host.canonicalize() {
            Ok(real) => {
                let mut out = real
                    .strip_prefix(root)
                    .map_err(|_| PathDenial::OutsideRoots)?
                    .to_path_buf();
                out.extend(tail.iter().rev());
                return Ok(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if host.symlink_metadata().is_ok() {
                    return Err(PathDenial::OutsideRoots);
                }
                match existing.file_name().map(ToOwned::to_owned) {
                    Some(name) => {
                        tail.push(name);
                        existing.pop();
                    }
                    None => return Err(PathDenial::OutsideRoots),
                }
            }
            // A file used as a directory: not an escape; the operation reports it.
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => return Ok(relative.to_path_buf()),
            Err(_) => return Err(PathDenial::OutsideRoots),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(scope: &Scope, path: &str) -> Result<(), PathDenial> {
        scope.confine(path, Access::ReadWrite).map(drop)
    }

    /// Whether `git` run in `dir` takes it for a git directory (`None` without git).
    fn git_takes_it(dir: &Path) -> Option<bool> {
        let out = std::process::Command::new("git")
            .args(["rev-parse", "--is-inside-git-dir"])
            .current_dir(dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent()?)
            .output()
            .ok()?;
        Some(out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "true")
    }

    #[test]
    fn head_beside_commondir_is_a_git_directory_and_its_second_marker_cannot_be_written() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let scope = Scope::from_policy(&Policy::default(), &root).unwrap();
        // A repository whose common directory a linked worktree's git directory names.
        let common = tempfile::tempdir().unwrap();
        for dir in ["objects", "refs/heads"] {
            std::fs::create_dir_all(common.path().join(dir)).unwrap();
        }
        let commondir = format!("{}\n", common.path().display());

        // To git, HEAD and commondir make a git directory (and its config is the common
        // directory's; with `extensions.worktreeConfig`, also `config.worktree` here).
        let shipped = root.join("shipped");
        std::fs::create_dir_all(&shipped).unwrap();
        std::fs::write(shipped.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(shipped.join("commondir"), &commondir).unwrap();
        if let Some(taken) = git_takes_it(&shipped) {
            assert!(taken, "git takes HEAD beside commondir for a git directory");
        }
        assert_eq!(write(&scope, "shipped/config.worktree"), Err(PathDenial::GitDirectory));
        assert_eq!(write(&scope, "shipped/index"), Err(PathDenial::GitDirectory));

        // Planted one file at a time: the second is refused, in either order.
        std::fs::create_dir_all(root.join("planted")).unwrap();
        std::fs::write(root.join("planted/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(write(&scope, "planted/commondir"), Err(PathDenial::GitDirectory));
        assert_eq!(write(&scope, "planted/gitdir"), Err(PathDenial::GitDirectory));
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("other/commondir"), &commondir).unwrap();
        assert_eq!(write(&scope, "other/HEAD"), Err(PathDenial::GitDirectory));
        assert_eq!(write(&scope, "other/head"), Err(PathDenial::GitDirectory));
        std::fs::create_dir_all(root.join("back")).unwrap();
        std::fs::write(root.join("back/gitdir"), "/elsewhere/.git\n").unwrap();
        assert_eq!(write(&scope, "back/HEAD"), Err(PathDenial::GitDirectory));

        // One marker alone is no git directory, and what sits beside it stays writable.
        assert_eq!(write(&scope, "planted/notes.txt"), Ok(()));
        assert_eq!(write(&scope, "other/notes.txt"), Ok(()));
        assert_eq!(write(&scope, "notes/commondir"), Ok(()));
    }
}
