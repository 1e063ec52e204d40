//! The typed arguments a generated check makes in its one pass are the ones serde makes:
//! for every shape the checks generate (renames, defaults, a container's default, skipped
//! fields, options, nested inputs, lists, maps, choices, paths, capabilities), accepted
//! arguments read alike, and refused ones make nothing and report what the check reports.

use std::collections::BTreeMap;

use kyro_core::check::{Check, Checker, Rules};
use kyro_core::policy::Access;
use kyro_core::{Capability, Execute, ToolContext, ToolError, WorkspacePath, tool};
use serde::Deserialize;
use serde_json::{Value, json};

/// How fast.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Pace {
    /// Quick.
    Fast,
    /// Careful.
    SlowAndSteady,
    /// Never sent.
    #[serde(skip)]
    Hidden,
}

/// A part.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
pub struct Part {
    /// Its name.
    #[schemars(length(min = 1, max = 8))]
    pub name: String,
    /// How many.
    #[serde(default)]
    pub count: u32,
    /// A tag, sent as `label`.
    #[serde(rename = "label")]
    pub tag: Option<String>,
}

/// Every field defaults from the container's `Default`.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(default)]
pub struct Settings {
    /// A level.
    pub level: u8,
    /// A label.
    pub label: String,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            level: 3,
            label: "standard".into(),
        }
    }
}

fn seven() -> u64 {
    7
}

/// Every shape at once.
#[tool(name = "shapes", category = "testing", effect = "none")]
#[derive(Debug, PartialEq)]
pub struct Shapes {
    /// Text.
    pub text: String,
    /// Maybe a number.
    pub maybe: Option<i64>,
    /// Seven unless sent.
    #[serde(default = "seven")]
    pub seven: u64,
    /// A flag.
    #[serde(default)]
    pub flag: bool,
    /// A number.
    pub renamed: f64,
    /// Parts.
    #[schemars(length(max = 3))]
    pub parts: Vec<Part>,
    /// A pace.
    pub pace: Option<Pace>,
    /// Counts by name.
    #[serde(default)]
    pub counts: BTreeMap<String, u8>,
    /// Anything.
    #[serde(default)]
    #[tool(any_value)]
    pub any: Value,
    /// Never read.
    #[serde(skip)]
    pub skipped: u32,
    /// A path.
    pub path: Option<WorkspacePath>,
    /// Settings.
    #[serde(default)]
    pub settings: Settings,
    /// A boxed part.
    pub boxed: Option<Box<Part>>,
    /// Capabilities.
    pub capabilities: Option<Vec<Capability>>,
    /// An access.
    pub access: Option<Access>,
    /// Small numbers.
    #[schemars(range(min = -5, max = 5))]
    pub small: Option<i8>,
}

/// Nothing.
#[kyro_core::output]
pub struct Nothing {}

impl Execute for Shapes {
    type Output = Nothing;

    async fn run(self, _: &ToolContext) -> Result<Nothing, ToolError> {
        Ok(Nothing {})
    }
}

fn take(value: &Value) -> (Option<Shapes>, Vec<kyro_core::Violation>) {
    let mut c = Checker::new();
    let taken = Shapes::take(value, &Rules::NONE, &mut c);
    (taken, c.into_violations())
}

#[test]
fn accepted_arguments_are_typed_as_serde_types_them() {
    assert!(
        <Shapes as Check>::complete(),
        "every shape here is one the checks generate"
    );
    let cases = [
        json!({"text": "a", "renamed": 1.5, "parts": []}),
        json!({"text": "", "maybe": null, "renamed": 2, "parts": [{"name": "x"}], "pace": "slow_and_steady"}),
        json!({
            "text": "b", "maybe": -4, "seven": 9, "flag": true, "renamed": -0.25,
            "parts": [{"name": "one", "count": 2}, {"name": "two", "label": "t"}], "pace": "fast",
            "counts": {"a": 1, "b": 255}, "any": {"deep": [1, null]}, "path": "src/lib.rs",
            "settings": {"label": "x"}, "boxed": {"name": "b", "count": 1},
            "capabilities": ["fs.read", "greet.send"], "access": "read_write", "small": -5
        }),
        json!({"text": "c", "renamed": 0, "parts": [], "settings": {}, "boxed": null, "capabilities": null}),
        json!({"text": "d", "renamed": 1e3, "parts": [], "maybe": 9007199254740991_i64, "seven": 0}),
    ];
    for case in cases {
        let (taken, violations) = take(&case);
        assert_eq!(violations, [], "{case}");
        let serde = Shapes::deserialize(&case).unwrap();
        assert_eq!(taken.as_ref(), Some(&serde), "{case}");
    }
}

#[test]
fn refused_arguments_make_nothing_and_report_what_the_check_reports() {
    let cases = [
        json!({"renamed": 1, "parts": []}),
        json!({"text": 1, "renamed": 1, "parts": []}),
        json!({"text": "a", "renamed": 1, "parts": [{"name": ""}]}),
        json!({"text": "a", "renamed": 1, "parts": [{}, {}, {}, {}]}),
        json!({"text": "a", "renamed": 1, "parts": [], "pace": "hidden"}),
        json!({"text": "a", "renamed": 1, "parts": [], "counts": {"a": 256}}),
        json!({"text": "a", "renamed": 1, "parts": [{"name": "a", "tag": "t"}]}),
        json!({"text": "a", "renamed": 1, "parts": [], "path": ""}),
        json!({"text": "a", "renamed": 1, "parts": [], "capabilities": ["Not A Name"]}),
        json!({"text": "a", "renamed": 1, "parts": [], "access": "write"}),
        json!({"text": "a", "renamed": 1, "parts": [], "small": 6}),
        json!({"text": "a", "renamed": 1, "parts": [], "settings": {"level": -1}}),
        json!({"text": "a", "renamed": 1, "parts": [], "skipped": 1}),
        json!("not an object"),
    ];
    for case in cases {
        let (taken, violations) = take(&case);
        assert!(taken.is_none(), "{case}");
        assert!(!violations.is_empty(), "{case}");
        assert_eq!(violations, kyro_core::check::arguments::<Shapes>(&case), "{case}");
    }
}
