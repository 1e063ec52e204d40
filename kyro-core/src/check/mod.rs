//! The checks `#[tool]` and `#[input]` generate: each argument type reads its JSON once and
//! reports every violation with its JSON pointer, in the words of [`crate::schema::message`],
//! over what the canonical schema states (types, required and unknown fields, choices,
//! lengths, ranges, patterns). No schema is interpreted for a native tool whose types all
//! have one; the schema's validator is the oracle the generated checks are tested against.

use std::fmt::Write as _;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::schema::Violation;
use crate::schema::message;

mod types;

pub(crate) use types::string;

/// The JSON a check reads (the generated code's name for `serde_json::Value`).
pub type Json = Value;

/// What a field's attributes add to its type's own rules: `#[schemars(length(..))]`,
/// `range(..)` and `regex(..)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// `range(min)`.
    pub min: Option<f64>,
    /// `range(max)`.
    pub max: Option<f64>,
    /// `length(min)`: characters of a string, items of an array.
    pub min_length: Option<u64>,
    /// `length(max)`.
    pub max_length: Option<u64>,
    /// `regex(pattern)`.
    pub pattern: Option<&'static Pattern>,
    /// `inner(..)`: the rules of an array's items.
    pub inner: Option<&'static Rules>,
}

impl Rules {
    /// No rules beyond the type's.
    pub const NONE: Rules = Rules {
        min: None,
        max: None,
        min_length: None,
        max_length: None,
        pattern: None,
        inner: None,
    };
}

/// A pattern, compiled on its first use.
#[derive(Debug)]
pub struct Pattern {
    source: &'static str,
    compiled: OnceLock<Option<regex::Regex>>,
}

impl Pattern {
    /// The pattern `source` (JSON Schema's: unanchored unless it says `^`/`$`).
    pub const fn new(source: &'static str) -> Pattern {
        Pattern {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// Whether `text` matches; a pattern that does not compile matches nothing.
    fn is_match(&self, text: &str) -> bool {
        self.compiled
            .get_or_init(|| regex::Regex::new(self.source).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(text))
    }
}

/// Where a check is in the arguments, and what it found.
#[derive(Debug, Default)]
pub struct Checker {
    pointer: String,
    found: Vec<Violation>,
}

thread_local! {
    /// A pointer buffer kept between checks on this thread (a check that finds nothing
    /// then allocates nothing for its pointers).
    static POINTERS: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

impl Drop for Checker {
    fn drop(&mut self) {
        let mut pointer = std::mem::take(&mut self.pointer);
        if (1..=1024).contains(&pointer.capacity()) {
            pointer.clear();
            POINTERS.with(|kept| kept.set(pointer));
        }
    }
}

impl Checker {
    /// A checker at the root.
    pub fn new() -> Checker {
        Checker::default()
    }

    /// Every violation, sorted by pointer, as the schema's validator reports them.
    pub fn into_violations(mut self) -> Vec<Violation> {
        let mut found = std::mem::take(&mut self.found);
        found.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        found.dedup();
        found
    }

    /// Records a violation at the current pointer.
    pub fn refuse(&mut self, message: String) {
        self.found.push(Violation::new(self.pointer.clone(), message));
    }

    /// How many violations were found so far.
    pub fn found(&self) -> usize {
        self.found.len()
    }

    /// Runs `check` one step down, at `/key` (escaped as a JSON pointer).
    pub fn at<R>(&mut self, key: &str, check: impl FnOnce(&mut Checker) -> R) -> R {
        let len = self.pointer.len();
        if self.pointer.capacity() == 0 {
            self.pointer = POINTERS.with(|kept| kept.take());
        }
        self.pointer.push('/');
        if key.contains(['~', '/']) {
            for c in key.chars() {
                match c {
                    '~' => self.pointer.push_str("~0"),
                    '/' => self.pointer.push_str("~1"),
                    c => self.pointer.push(c),
                }
            }
        } else {
            self.pointer.push_str(key);
        }
        let taken = check(self);
        self.pointer.truncate(len);
        taken
    }

    /// Runs `check` at `/index`.
    pub fn at_index<R>(&mut self, index: usize, check: impl FnOnce(&mut Checker) -> R) -> R {
        let len = self.pointer.len();
        let _ = write!(self.pointer, "/{index}");
        let taken = check(self);
        self.pointer.truncate(len);
        taken
    }

    /// `value` as an object, or a type violation.
    pub fn object<'v>(&mut self, value: &'v Value) -> Option<&'v Map<String, Value>> {
        let Value::Object(map) = value else {
            self.refuse(message::wrong_type(value, &Value::from("object")));
            return None;
        };
        Some(map)
    }

    /// Fields the object holds and its type does not (`unknown`, none of `known`): one
    /// violation naming them all, as the validator's `additionalProperties`.
    pub fn unknown(&mut self, unknown: &[&str], known: &[&str]) {
        if !unknown.is_empty() {
            let each: Vec<String> = unknown.iter().map(|k| message::unknown_field(k, known)).collect();
            self.refuse(each.join("; "));
        }
    }

    /// A field the object must have.
    pub fn missing(&mut self, field: &str) {
        self.refuse(message::missing_field(field));
    }

    /// `value` as one of `choices` (strings), or a violation naming them.
    pub fn choice(&mut self, value: &Value, choices: &[&str]) {
        if value.as_str().is_some_and(|s| choices.contains(&s)) {
            return;
        }
        let listed: Vec<Value> = choices.iter().map(|c| Value::from(*c)).collect();
        self.refuse(message::not_a_choice(value, &listed.iter().collect::<Vec<_>>()));
    }

    /// `size` against a minimum and maximum (`unit`: characters, items).
    fn size(&mut self, size: usize, unit: &str, rules: &Rules) {
        if let Some(min) = rules.min_length.filter(|&min| (size as u64) < min) {
            self.refuse(message::wrong_size(size, unit, true, min));
        }
        if let Some(max) = rules.max_length.filter(|&max| (size as u64) > max) {
            self.refuse(message::wrong_size(size, unit, false, max));
        }
    }

    /// A number against the tighter of each bound: the type's and the rules'.
    fn range(&mut self, value: &Value, n: f64, (low, high): (Option<f64>, Option<f64>), rules: &Rules) {
        let tighter = |a: Option<f64>, b: Option<f64>, pick: fn(f64, f64) -> f64| match (a, b) {
            (Some(a), Some(b)) => Some(pick(a, b)),
            (a, b) => a.or(b),
        };
        if let Some(min) = tighter(low, rules.min, f64::max).filter(|&min| n < min) {
            self.refuse(message::out_of_range(value, "the minimum", &number(min)));
        }
        if let Some(max) = tighter(high, rules.max, f64::min).filter(|&max| n > max) {
            self.refuse(message::out_of_range(value, "the maximum", &number(max)));
        }
    }
}

/// A bound as the schema writes it: an integer when it is one.
fn number(bound: f64) -> Value {
    if bound.fract() == 0.0 && bound.abs() < 9_007_199_254_740_992.0 {
        Value::from(bound as i64)
    } else {
        Value::from(bound)
    }
}

/// An argument type kyro checks in one pass over its JSON.
pub trait Check {
    /// Whether the check states everything the type's schema does. `#[input]` and
    /// `#[tool]` say false for a shape they do not generate (`flatten`, a tagged enum with
    /// fields, a field `with` its own deserializer); such a tool is checked by its schema.
    fn complete() -> bool {
        true
    }

    /// Checks `value` as this type under the field's `rules`, recording every violation.
    fn check(value: &Value, rules: &Rules, c: &mut Checker);

    /// Checks `value` as [`Check::check`] does and reads it as this type in the same pass:
    /// the typed arguments, made once. What it returns counts only when it recorded no
    /// violation; `None` also when it cannot read the type (serde then reads the whole).
    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self>
    where
        Self: Sized,
    {
        Self::check(value, rules, c);
        None
    }
}

/// Whether JSON Schema's interpreter is compiled in (the `interpreter` feature): a tool
/// whose generated check is incomplete is then checked by its schema's validator; without
/// it, by its generated check as far as it goes and by serde for the rest.
pub const INTERPRETS: bool = cfg!(feature = "interpreter");

/// The check of a whole arguments object.
pub fn arguments<T: Check>(value: &Value) -> Vec<Violation> {
    let mut c = Checker::new();
    T::check(value, &Rules::NONE, &mut c);
    c.into_violations()
}

pub use crate::tool::{CheckFn, tool_arguments};

/// A field type, probed for a check: `Checked` is picked when it has one, `Unchecked`
/// otherwise (a type deriving serde and schemars itself rather than through `#[input]`),
/// which makes the tool's check incomplete.
pub struct CheckProbe<T: ?Sized>(std::marker::PhantomData<T>);

impl<T: ?Sized> CheckProbe<T> {
    /// The probe.
    pub const fn new() -> Self {
        CheckProbe(std::marker::PhantomData)
    }
}

impl<T: ?Sized> Default for CheckProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Picked for a type with a check.
pub trait Checked {
    /// The probed type.
    type Target;
    /// The type's [`Check::complete`].
    fn complete(&self) -> bool;
    /// The type's [`Check::check`].
    fn check(&self, value: &Value, rules: &Rules, c: &mut Checker);
    /// The type's [`Check::take`].
    fn take(&self, value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self::Target>;
}

impl<T: Check> Checked for CheckProbe<T> {
    type Target = T;

    fn complete(&self) -> bool {
        T::complete()
    }

    fn check(&self, value: &Value, rules: &Rules, c: &mut Checker) {
        T::check(value, rules, c);
    }

    fn take(&self, value: &Value, rules: &Rules, c: &mut Checker) -> Option<T> {
        T::take(value, rules, c)
    }
}

/// Picked for a type without one: the check is incomplete.
pub trait Unchecked {
    /// The probed type.
    type Target;
    /// Always false.
    fn complete(&self) -> bool {
        false
    }
    /// Checks nothing (never called: an incomplete tool is checked by its schema).
    fn check(&self, _: &Value, _: &Rules, _: &mut Checker) {}
    /// Takes nothing (serde reads an incomplete tool's arguments).
    fn take(&self, _: &Value, _: &Rules, _: &mut Checker) -> Option<Self::Target> {
        None
    }
}

impl<T> Unchecked for &CheckProbe<T> {
    type Target = T;
}
