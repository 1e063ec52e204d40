//! The registry: immutable snapshots of registered tools, replaced as a whole on change.

use std::collections::HashMap;
#[cfg(feature = "interpreter")]
use std::sync::OnceLock;
use std::sync::{Arc, RwLock};

use serde_json::Value;

#[cfg(feature = "interpreter")]
use crate::context::ToolContext;
use crate::descriptor::{Annotations, ArgumentAlias, Catalog, ToolDescriptor, valid_name};
use crate::effect::{Capability, Effect};
#[cfg(feature = "interpreter")]
use crate::error::ToolError;
use crate::executor::{Executor, Native};
use crate::policy::SettingsTable;
#[cfg(feature = "interpreter")]
use crate::schema::{CompiledSchema, Origin, canonicalize_from};
use crate::schema::{Role, SchemaError, canonicalize};
use crate::schema_text::Schema;
#[cfg(feature = "interpreter")]
use crate::tool::BoxFuture;
use crate::tool::ToolEntry;

/// Why a tool could not be registered or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name or an alias is already taken by another tool.
    #[error("`{name}` is already the name or an alias of `{owner}`")]
    NameTaken {
        /// The contested name.
        name: String,
        /// The tool that has it.
        owner: String,
    },
    /// The name is not `^[a-z][a-z0-9_.]{0,63}$`-shaped.
    #[error(
        "`{name}` is not a valid tool name: lowercase letters, digits, `_` (and `.` for namespaces), starting with a letter, at most 64 characters"
    )]
    BadName {
        /// The refused name.
        name: String,
    },
    /// No tool by that name (for replace and remove).
    #[error("no tool is named `{name}`")]
    NotRegistered {
        /// The name asked for.
        name: String,
    },
    /// The registry admits only what its [`Registry::admit_only`] test passes.
    #[error("`{name}` is not admitted: the server does not serve it")]
    NotAdmitted {
        /// The tool's name.
        name: String,
    },
    /// No snapshot with that version is kept.
    #[error("no snapshot with version {version} is kept")]
    UnknownVersion {
        /// The version asked for.
        version: u64,
    },
    /// A native custom tool came without an output schema.
    #[error("tool `{tool}` has no output schema; native tools must declare one")]
    MissingOutputSchema {
        /// The tool.
        tool: String,
    },
    /// A schema that cannot be canonical.
    #[error("tool `{tool}`: {error}")]
    Schema {
        /// The tool.
        tool: String,
        /// What is wrong with its schema.
        error: SchemaError,
    },
}

/// A tool ready to register: its descriptor with canonical schemas, and its executor.
#[derive(Clone)]
pub struct ToolDefinition {
    descriptor: ToolDescriptor,
    executor: Executor,
    settings: &'static [SettingsTable],
}

impl std::fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

/// A native tool defined at run time from JSON schemas (for embedders and upstream servers).
#[derive(Debug, Clone)]
pub struct CustomTool {
    /// Canonical name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// Catalog category.
    pub category: String,
    /// Side-effect class.
    pub effect: Effect,
    /// Input schema; must be an object schema in the canonical vocabulary.
    pub input_schema: Value,
    /// Output schema; required.
    pub output_schema: Option<Value>,
}

impl ToolDefinition {
    /// The definition of a catalog entry.
    pub fn builtin(entry: &ToolEntry) -> Result<ToolDefinition, RegistryError> {
        let schema_err = |error| RegistryError::Schema {
            tool: entry.spec.name.to_owned(),
            error,
        };
        let input_schema = canonicalize((entry.input_schema)(), Role::Input).map_err(schema_err)?;
        let output_schema = canonicalize((entry.output_schema)(), Role::Output).map_err(schema_err)?;
        ToolDefinition::with_schemas(entry, input_schema.into(), output_schema.into())
    }

    /// The definition of a catalog entry whose canonical schemas are given.
    pub(crate) fn with_schemas(
        entry: &ToolEntry,
        input_schema: Schema,
        output_schema: Schema,
    ) -> Result<ToolDefinition, RegistryError> {
        let spec = &entry.spec;
        let descriptor = ToolDescriptor {
            name: spec.name.to_owned(),
            title: spec.title.map(str::to_owned),
            aliases: spec.aliases.iter().map(|a| (*a).to_owned()).collect(),
            category: spec.category.to_owned(),
            effect: spec.effect,
            description: spec.description.to_owned(),
            input_schema,
            output_schema,
            annotations: Annotations::stated(spec.effect, spec.hints),
            capabilities: spec
                .capabilities
                .unwrap_or_else(|| spec.effect.default_capabilities())
                .to_vec(),
            approval: spec.approval,
            argument_aliases: spec
                .arg_aliases
                .iter()
                .map(|a| ArgumentAlias {
                    alias: a.alias.to_owned(),
                    field: a.field.to_owned(),
                })
                .collect(),
            path_arguments: spec.path_args.iter().map(|a| (*a).to_owned()).collect(),
            compatibility_only: false,
            task: spec.task,
        };
        let executor = Executor::Builtin(Native {
            prepare: entry.prepare,
            run: entry.execute,
            preview: entry.preview,
            rule: entry.rule,
            check: entry.check,
            inline: entry.spec.inline,
        });
        let mut definition = ToolDefinition::from_parts(descriptor, executor)?;
        definition.settings = entry.settings;
        Ok(definition)
    }

    /// A native tool defined by JSON schemas and an async handler (checked by JSON
    /// Schema's interpreter: the `interpreter` feature).
    ///
    /// The input schema must be an object schema and an output schema is required; both
    /// are canonicalized and refused with a typed error when outside the vocabulary.
    #[cfg(feature = "interpreter")]
    pub fn custom<F>(tool: CustomTool, handler: F) -> Result<ToolDefinition, RegistryError>
    where
        F: for<'a> Fn(Value, &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>> + Send + Sync + 'static,
    {
        ToolDefinition::custom_from(tool, handler, Origin::Native)
    }

    /// A tool whose schemas another server declared (an upstream MCP tool): like
    /// [`ToolDefinition::custom`], canonicalized as [`Origin::Foreign`] (property
    /// descriptions optional; draft-07 and 2019-09 accepted where they mean the same).
    #[cfg(feature = "interpreter")]
    pub fn foreign<F>(tool: CustomTool, handler: F) -> Result<ToolDefinition, RegistryError>
    where
        F: for<'a> Fn(Value, &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>> + Send + Sync + 'static,
    {
        ToolDefinition::custom_from(tool, handler, Origin::Foreign)
    }

    #[cfg(feature = "interpreter")]
    fn custom_from<F>(tool: CustomTool, handler: F, origin: Origin) -> Result<ToolDefinition, RegistryError>
    where
        F: for<'a> Fn(Value, &'a ToolContext) -> BoxFuture<'a, Result<Value, ToolError>> + Send + Sync + 'static,
    {
        let schema_err = |error| RegistryError::Schema {
            tool: tool.name.clone(),
            error,
        };
        let output_schema = tool
            .output_schema
            .clone()
            .ok_or_else(|| RegistryError::MissingOutputSchema {
                tool: tool.name.clone(),
            })?;
        let input_schema = canonicalize_from(tool.input_schema.clone(), Role::Input, origin).map_err(schema_err)?;
        let descriptor = ToolDescriptor {
            name: tool.name.clone(),
            title: None,
            aliases: Vec::new(),
            category: tool.category.clone(),
            effect: tool.effect,
            description: tool.description.clone(),
            input_schema: input_schema.into(),
            output_schema: canonicalize_from(output_schema, Role::Output, origin)
                .map_err(schema_err)?
                .into(),
            annotations: Annotations::for_effect(tool.effect),
            capabilities: tool.effect.default_capabilities().to_vec(),
            approval: None,
            argument_aliases: Vec::new(),
            path_arguments: Vec::new(),
            compatibility_only: false,
            task: false,
        };
        ToolDefinition::from_parts(descriptor, Executor::Custom(Arc::new(handler)))
    }

    pub(crate) fn from_parts(descriptor: ToolDescriptor, executor: Executor) -> Result<ToolDefinition, RegistryError> {
        for name in std::iter::once(&descriptor.name).chain(&descriptor.aliases) {
            if !valid_name(name) {
                return Err(RegistryError::BadName { name: name.clone() });
            }
        }
        Ok(ToolDefinition {
            descriptor,
            executor,
            settings: &[],
        })
    }

    /// The descriptor that will be served.
    pub fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }
}

/// A registered tool: descriptor, compiled validators and executor.
pub struct RegisteredTool {
    descriptor: ToolDescriptor,
    #[cfg(feature = "interpreter")]
    input: OnceLock<Result<CompiledSchema, SchemaError>>,
    #[cfg(feature = "interpreter")]
    output: OnceLock<Result<CompiledSchema, SchemaError>>,
    executor: Executor,
    settings: &'static [SettingsTable],
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("descriptor", &self.descriptor)
            .finish_non_exhaustive()
    }
}

impl RegisteredTool {
    /// Compiles both validators now, refusing a schema that does not build.
    fn compile(definition: ToolDefinition) -> Result<RegisteredTool, RegistryError> {
        let tool = RegisteredTool::lazy(definition);
        tool.compiled().map_err(|error| RegistryError::Schema {
            tool: tool.descriptor.name.clone(),
            error,
        })?;
        Ok(tool)
    }

    /// Compiles the validators on first use: for catalog tools, whose schemas are fixed at
    /// build time and compiled by the build script ([`Registry::compile_all`]), so that
    /// starting a server does not compile a hundred validators it may never use.
    pub(crate) fn lazy(definition: ToolDefinition) -> RegisteredTool {
        RegisteredTool {
            #[cfg(feature = "interpreter")]
            input: OnceLock::new(),
            #[cfg(feature = "interpreter")]
            output: OnceLock::new(),
            descriptor: definition.descriptor,
            executor: definition.executor,
            settings: definition.settings,
        }
    }

    fn compiled(&self) -> Result<(), SchemaError> {
        #[cfg(feature = "interpreter")]
        {
            self.input()?;
            if self.checks_output() {
                self.output()?;
            }
        }
        Ok(())
    }

    /// The served descriptor.
    pub fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    /// The compiled input schema (compiled on first use for catalog tools).
    #[cfg(feature = "interpreter")]
    pub fn input(&self) -> Result<&CompiledSchema, SchemaError> {
        self.input
            .get_or_init(|| CompiledSchema::compile(self.descriptor.input_schema.value()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether its output is checked: a catalog tool's (its schema's type) in debug only.
    #[cfg(feature = "interpreter")]
    pub(crate) fn checks_output(&self) -> bool {
        !matches!(self.executor, Executor::Builtin(..)) || cfg!(debug_assertions)
    }

    /// The compiled output schema (compiled on first use for catalog tools).
    #[cfg(feature = "interpreter")]
    pub fn output(&self) -> Result<&CompiledSchema, SchemaError> {
        self.output
            .get_or_init(|| CompiledSchema::compile(self.descriptor.output_schema.value()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The capabilities a scope must grant to call it.
    pub fn capabilities(&self) -> &[Capability] {
        &self.descriptor.capabilities
    }

    /// The policy tables it reads.
    pub fn settings(&self) -> &'static [SettingsTable] {
        self.settings
    }

    pub(crate) fn executor(&self) -> &Executor {
        &self.executor
    }
}

/// One immutable state of the registry. A call runs against one snapshot from start to end.
#[derive(Debug, Default)]
pub struct Snapshot {
    version: u64,
    tools: Vec<Arc<RegisteredTool>>,
    index: HashMap<String, usize>,
}

impl Snapshot {
    fn build(version: u64, mut tools: Vec<Arc<RegisteredTool>>) -> Result<Snapshot, RegistryError> {
        tools.sort_by(|a, b| a.descriptor.name.cmp(&b.descriptor.name));
        let mut index = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            let d = &tool.descriptor;
            for name in std::iter::once(&d.name).chain(&d.aliases) {
                if let Some(prev) = index.insert(name.clone(), i) {
                    return Err(RegistryError::NameTaken {
                        name: name.clone(),
                        owner: tools[prev].descriptor.name.clone(),
                    });
                }
            }
        }
        Ok(Snapshot { version, tools, index })
    }

    /// The version, increasing with every change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Looks a tool up by canonical name or alias.
    pub fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Arc<RegisteredTool>> {
        self.tools.iter()
    }

    /// Every descriptor, sorted by name.
    pub fn descriptors(&self) -> impl ExactSizeIterator<Item = &ToolDescriptor> {
        self.tools.iter().map(|t| &t.descriptor)
    }
}

/// The registry: the current snapshot and the ones before it.
#[derive(Debug)]
pub struct Registry {
    state: RwLock<State>,
    changes: tokio::sync::watch::Sender<u64>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            state: RwLock::default(),
            changes: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// How many earlier snapshots [`Registry::restore`] can go back to; older ones are
/// dropped, so a registry that changes all day holds a bounded history.
pub const KEPT_VERSIONS: usize = 32;

/// Which tools a registry admits (see [`Registry::admit_only`]).
struct Admission(Box<dyn Fn(&ToolDescriptor) -> bool + Send + Sync>);

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}

#[derive(Debug, Default)]
struct State {
    current: Arc<Snapshot>,
    history: Vec<Arc<Snapshot>>,
    admit: Option<Admission>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// A registry holding a catalog's tools.
    pub fn with_catalog(catalog: &[ToolEntry]) -> Result<Registry, RegistryError> {
        let registry = Registry::new();
        let tools = catalog
            .iter()
            .map(|entry| ToolDefinition::builtin(entry).map(RegisteredTool::lazy).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        registry.commit(|_| Ok(tools))?;
        Ok(registry)
    }

    /// Compiles every validator not compiled yet; the build script runs this over the
    /// catalog, so a built-in schema that does not compile fails the build.
    pub fn compile_all(&self) -> Result<(), RegistryError> {
        for tool in self.snapshot().tools() {
            tool.compiled().map_err(|error| RegistryError::Schema {
                tool: tool.descriptor.name.clone(),
                error,
            })?;
        }
        Ok(())
    }

    /// Watches the current version: it changes with every register, replace, remove and
    /// restore (the MCP server turns it into `notifications/tools/list_changed`).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.read().current.clone()
    }

    /// Adds a tool; its name and aliases must be free.
    pub fn register(&self, definition: ToolDefinition) -> Result<Arc<Snapshot>, RegistryError> {
        let tool = Arc::new(RegisteredTool::compile(definition)?);
        self.admitted(&tool.descriptor)?;
        self.commit(|tools| {
            let names = || std::iter::once(&tool.descriptor.name).chain(&tool.descriptor.aliases);
            for existing in tools {
                let d = &existing.descriptor;
                if let Some(name) = names().find(|n| **n == d.name || d.aliases.contains(n)) {
                    return Err(RegistryError::NameTaken {
                        name: name.clone(),
                        owner: d.name.clone(),
                    });
                }
            }
            let mut next = tools.to_vec();
            next.push(tool);
            Ok(next)
        })
    }

    /// Replaces the tool with the same canonical name.
    pub fn replace(&self, definition: ToolDefinition) -> Result<Arc<Snapshot>, RegistryError> {
        let tool = Arc::new(RegisteredTool::compile(definition)?);
        self.admitted(&tool.descriptor)?;
        self.commit(|tools| {
            let name = &tool.descriptor.name;
            if !tools.iter().any(|t| &t.descriptor.name == name) {
                return Err(RegistryError::NotRegistered { name: name.clone() });
            }
            Ok(tools
                .iter()
                .map(|t| {
                    if &t.descriptor.name == name {
                        tool.clone()
                    } else {
                        t.clone()
                    }
                })
                .collect())
        })
    }

    /// From now on the registry holds only the tools `admit` passes (a server's selection;
    /// it runs under the registry's lock, so it must not read the registry): those it
    /// holds and fails leave now, in one change, and registering one later is refused.
    pub fn admit_only(
        &self,
        admit: impl Fn(&ToolDescriptor) -> bool + Send + Sync + 'static,
    ) -> Result<Arc<Snapshot>, RegistryError> {
        self.state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .admit = Some(Admission(Box::new(admit)));
        self.commit(|tools| Ok(tools.to_vec())) // which filters by the test just set
    }

    fn admitted(&self, d: &ToolDescriptor) -> Result<(), RegistryError> {
        match self.read().admit.as_ref().is_some_and(|admit| !(admit.0)(d)) {
            true => Err(RegistryError::NotAdmitted { name: d.name.clone() }),
            false => Ok(()),
        }
    }

    /// Removes a tool by canonical name.
    pub fn remove(&self, name: &str) -> Result<Arc<Snapshot>, RegistryError> {
        self.commit(|tools| {
            if !tools.iter().any(|t| t.descriptor.name == name) {
                return Err(RegistryError::NotRegistered { name: name.to_owned() });
            }
            Ok(tools.iter().filter(|t| t.descriptor.name != name).cloned().collect())
        })
    }

    /// Makes the tools of an earlier snapshot current again, as a new version (one of the
    /// last [`KEPT_VERSIONS`]).
    pub fn restore(&self, version: u64) -> Result<Arc<Snapshot>, RegistryError> {
        let old = {
            let state = self.read();
            std::iter::once(&state.current)
                .chain(&state.history)
                .find(|s| s.version == version)
                .cloned()
                .ok_or(RegistryError::UnknownVersion { version })?
        };
        self.commit(|_| Ok(old.tools.clone()))
    }

    pub(crate) fn commit(
        &self,
        change: impl FnOnce(&[Arc<RegisteredTool>]) -> Result<Vec<Arc<RegisteredTool>>, RegistryError>,
    ) -> Result<Arc<Snapshot>, RegistryError> {
        let mut state = self.state.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut tools = change(&state.current.tools)?;
        tools.retain(|t| state.admit.as_ref().is_none_or(|admit| (admit.0)(&t.descriptor)));
        let next = Arc::new(Snapshot::build(state.current.version + 1, tools)?);
        let previous = std::mem::replace(&mut state.current, next.clone());
        state.history.push(previous);
        let excess = state.history.len().saturating_sub(KEPT_VERSIONS);
        state.history.drain(..excess);
        self.changes.send_replace(next.version);
        Ok(next)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Catalog for Snapshot {
    fn describe(&self, name: &str) -> Option<&ToolDescriptor> {
        self.get(name).map(|t| t.descriptor())
    }

    fn descriptors(&self) -> Box<dyn Iterator<Item = &ToolDescriptor> + '_> {
        Box::new(Snapshot::descriptors(self))
    }
}
