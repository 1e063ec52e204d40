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

/// The largest integer a JSON number holds exactly (2^53 - 1): 64-bit integers are bounded
/// to it, as the canonical schema bounds them.
const SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// An integer between `low` and `high` (the type's bounds), written as an integer.
fn integer(value: &Value, rules: &Rules, c: &mut Checker, low: f64, high: f64) {
    let Value::Number(n) = value else {
        c.refuse(message::wrong_type(value, &Value::from("integer")));
        return;
    };
    let whole = n.is_i64() || n.is_u64();
    let f = n.as_f64().unwrap_or(f64::NAN);
    if !whole && f.fract() != 0.0 {
        c.refuse(message::wrong_type(value, &Value::from("integer")));
        return;
    }
    if !whole {
        c.refuse(format!(
            "{n} is not an integer literal; write it without a fraction or exponent"
        ));
    }
    let exact = n
        .as_i64()
        .map(|i| i as f64)
        .or(n.as_u64().map(|u| u as f64))
        .unwrap_or(f);
    c.range(value, exact, (Some(low), Some(high)), rules);
}

macro_rules! integers {
    ($($ty:ty => $low:expr, $high:expr;)*) => {$(
        impl Check for $ty {
            fn check(value: &Value, rules: &Rules, c: &mut Checker) {
                integer(value, rules, c, $low, $high);
            }

            fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<$ty> {
                integer(value, rules, c, $low, $high);
                match value {
                    Value::Number(n) => n
                        .as_u64()
                        .and_then(|u| <$ty>::try_from(u).ok())
                        .or_else(|| n.as_i64().and_then(|i| <$ty>::try_from(i).ok())),
                    _ => None,
                }
            }
        }
    )*};
}

integers! {
    u8 => 0.0, u8::MAX as f64;
    u16 => 0.0, u16::MAX as f64;
    u32 => 0.0, u32::MAX as f64;
    u64 => 0.0, SAFE_INTEGER;
    usize => 0.0, SAFE_INTEGER;
    i8 => i8::MIN as f64, i8::MAX as f64;
    i16 => i16::MIN as f64, i16::MAX as f64;
    i32 => i32::MIN as f64, i32::MAX as f64;
    i64 => -SAFE_INTEGER, SAFE_INTEGER;
    isize => -SAFE_INTEGER, SAFE_INTEGER;
}

macro_rules! floats {
    ($($ty:ty),*) => {$(
        impl Check for $ty {
            fn check(value: &Value, rules: &Rules, c: &mut Checker) {
                match value {
                    Value::Number(n) => c.range(value, n.as_f64().unwrap_or(f64::NAN), (None, None), rules),
                    other => c.refuse(message::wrong_type(other, &Value::from("number"))),
                }
            }

            /// An integer straight to the type, rounded once, as serde reads it (through
            /// `f64` first, an `f32` could round twice and differ).
            fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<$ty> {
                Self::check(value, rules, c);
                let Value::Number(n) = value else {
                    return None;
                };
                match (n.as_u64(), n.as_i64()) {
                    (Some(u), _) => Some(u as $ty),
                    (None, Some(i)) => Some(i as $ty),
                    (None, None) => n.as_f64().map(|f| f as $ty),
                }
            }
        }
    )*};
}

floats!(f32, f64);

impl Check for bool {
    fn check(value: &Value, _: &Rules, c: &mut Checker) {
        if !value.is_boolean() {
            c.refuse(message::wrong_type(value, &Value::from("boolean")));
        }
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<bool> {
        Self::check(value, rules, c);
        value.as_bool()
    }
}

/// A string under the rules: length in characters, then the pattern.
pub(crate) fn string(value: &Value, rules: &Rules, c: &mut Checker) {
    let Value::String(text) = value else {
        c.refuse(message::wrong_type(value, &Value::from("string")));
        return;
    };
    // Characters are counted only when the bytes leave the bounds in doubt (a character
    // is one to four bytes).
    let (bytes, min, max) = (text.len() as u64, rules.min_length, rules.max_length);
    let doubt = min.is_some_and(|min| bytes.div_ceil(4) < min) || max.is_some_and(|max| bytes > max);
    if doubt {
        c.size(text.chars().count(), "characters", rules);
    }
    if let Some(pattern) = rules.pattern
        && !pattern.is_match(text)
    {
        c.refuse(message::no_match(value, pattern.source));
    }
}

impl Check for String {
    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        string(value, rules, c);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<String> {
        string(value, rules, c);
        value.as_str().map(str::to_owned)
    }
}

impl Check for crate::effect::Capability {
    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        // Its schema: a string of at most 64 characters, lowercase words joined by dots.
        static NAME: Pattern = Pattern::new("^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$");
        let own = Rules {
            max_length: Some(rules.max_length.map_or(64, |max| max.min(64))),
            pattern: Some(&NAME),
            ..*rules
        };
        string(value, &own, c);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        Self::check(value, rules, c);
        crate::effect::Capability::try_from(value.as_str()?.to_owned()).ok()
    }
}

impl Check for crate::denial::Access {
    fn check(value: &Value, _: &Rules, c: &mut Checker) {
        c.choice(value, &["read", "read_write"]);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        Self::check(value, rules, c);
        match value.as_str()? {
            "read" => Some(crate::denial::Access::Read),
            "read_write" => Some(crate::denial::Access::ReadWrite),
            _ => None,
        }
    }
}

impl Check for std::path::PathBuf {
    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        string(value, rules, c);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        string(value, rules, c);
        value.as_str().map(std::path::PathBuf::from)
    }
}

impl Check for Value {
    fn check(_: &Value, _: &Rules, _: &mut Checker) {}

    fn take(value: &Value, _: &Rules, _: &mut Checker) -> Option<Value> {
        Some(value.clone())
    }
}

impl Check for Map<String, Value> {
    fn check(value: &Value, _: &Rules, c: &mut Checker) {
        if !value.is_object() {
            c.refuse(message::wrong_type(value, &Value::from("object")));
        }
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        Self::check(value, rules, c);
        value.as_object().cloned()
    }
}

impl<T: Check> Check for Option<T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        if !value.is_null() {
            T::check(value, rules, c);
        }
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Option<T>> {
        if value.is_null() {
            return Some(None);
        }
        T::take(value, rules, c).map(Some)
    }
}

impl<T: Check> Check for Box<T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        T::check(value, rules, c);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Box<T>> {
        T::take(value, rules, c).map(Box::new)
    }
}

impl<T: Check> Check for Vec<T> {
    fn complete() -> bool {
        T::complete()
    }

    /// The rules' length counts items; each item is checked under the `inner` rules.
    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        let Value::Array(items) = value else {
            c.refuse(message::wrong_type(value, &Value::from("array")));
            return;
        };
        c.size(items.len(), "items", rules);
        let inner = rules.inner.unwrap_or(&Rules::NONE);
        for (i, item) in items.iter().enumerate() {
            c.at_index(i, |c| T::check(item, inner, c));
        }
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Vec<T>> {
        let Value::Array(items) = value else {
            c.refuse(message::wrong_type(value, &Value::from("array")));
            return None;
        };
        c.size(items.len(), "items", rules);
        let inner = rules.inner.unwrap_or(&Rules::NONE);
        let mut taken = Some(Vec::with_capacity(items.len()));
        for (i, item) in items.iter().enumerate() {
            let item = c.at_index(i, |c| T::take(item, inner, c));
            match (&mut taken, item) {
                (Some(all), Some(item)) => all.push(item),
                _ => taken = None,
            }
        }
        taken
    }
}

impl<T: Check> Check for std::collections::BTreeMap<String, T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &Value, _: &Rules, c: &mut Checker) {
        let Value::Object(map) = value else {
            c.refuse(message::wrong_type(value, &Value::from("object")));
            return;
        };
        for (key, item) in map {
            c.at(key, |c| T::check(item, &Rules::NONE, c));
        }
    }

    fn take(value: &Value, _: &Rules, c: &mut Checker) -> Option<Self> {
        let Value::Object(map) = value else {
            c.refuse(message::wrong_type(value, &Value::from("object")));
            return None;
        };
        let mut taken = Some(std::collections::BTreeMap::new());
        for (key, item) in map {
            let item = c.at(key, |c| T::take(item, &Rules::NONE, c));
            match (&mut taken, item) {
                (Some(all), Some(item)) => {
                    all.insert(key.clone(), item);
                }
                _ => taken = None,
            }
        }
        taken
    }
}

impl<T: Check> Check for std::collections::HashMap<String, T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        <std::collections::BTreeMap<String, T> as Check>::check(value, rules, c);
    }

    fn take(value: &Value, rules: &Rules, c: &mut Checker) -> Option<Self> {
        <std::collections::BTreeMap<String, T> as Check>::take(value, rules, c).map(|map| map.into_iter().collect())
    }
}

/// Whether JSON Schema's interpreter is compiled in (the `interpreter` feature): a tool
/// whose generated check is incomplete is then checked by its schema's validator; without
/// it, by its generated check as far as it goes and by serde for the rest.
pub const INTERPRETS: bool = cfg!(feature = "interpreter");

/// A tool's generated check ([`crate::Tool::CHECK`]): its arguments typed in the one pass
/// that checked them, or every violation; `None` when its check is incomplete and its
/// schema's validator (or serde) decides.
pub type CheckFn = fn(&Value) -> Option<Result<crate::tool::Typed, Vec<Violation>>>;

/// The check of a whole arguments object.
pub fn arguments<T: Check>(value: &Value) -> Vec<Violation> {
    let mut c = Checker::new();
    T::check(value, &Rules::NONE, &mut c);
    c.into_violations()
}

/// The check of a tool's whole arguments object, and the arguments typed in the same pass
/// (serde reads them when a part cannot be taken; it agrees with the check, which the
/// catalog tests hold).
pub fn tool_arguments<T: crate::Tool + Check>(value: &Value) -> Result<crate::tool::Typed, Vec<Violation>> {
    let mut c = Checker::new();
    let taken = T::take(value, &Rules::NONE, &mut c);
    if c.found() > 0 {
        return Err(c.into_violations());
    }
    match taken {
        Some(typed) => Ok(crate::tool::Typed::new(typed)),
        None => T::deserialize(value)
            .map(crate::tool::Typed::new)
            .map_err(|e| vec![Violation::new("", e.to_string())]),
    }
}

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
