//! The checks of the types arguments are made of: numbers, strings, booleans, paths, JSON
//! values, options, boxes, lists and maps, and kyro's own capability names and accesses.

use serde_json::{Map, Value};

use super::{Check, Checker, Pattern, Rules, message};

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
        take_entries(value, c)
    }
}

/// A map's entries, each taken as `T`, into whichever map the field is.
fn take_entries<T: Check, M: Default + Extend<(String, T)>>(value: &Value, c: &mut Checker) -> Option<M> {
    let Value::Object(map) = value else {
        c.refuse(message::wrong_type(value, &Value::from("object")));
        return None;
    };
    let mut taken = Some(M::default());
    for (key, item) in map {
        let item = c.at(key, |c| T::take(item, &Rules::NONE, c));
        match (&mut taken, item) {
            (Some(all), Some(item)) => all.extend([(key.clone(), item)]),
            _ => taken = None,
        }
    }
    taken
}

impl<T: Check> Check for std::collections::HashMap<String, T> {
    fn complete() -> bool {
        T::complete()
    }

    fn check(value: &Value, rules: &Rules, c: &mut Checker) {
        <std::collections::BTreeMap<String, T> as Check>::check(value, rules, c);
    }

    fn take(value: &Value, _: &Rules, c: &mut Checker) -> Option<Self> {
        take_entries(value, c)
    }
}
