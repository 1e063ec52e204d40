//! What a generated check's pass types, serde types alike, shape by shape: numbers, a
//! container's default path, names read by the `deserialize` rule, case rules on ASCII
//! letters only, attributes a `macro_rules!` writes, fields read with their own
//! deserializer, options within options, skipped fields (found in review).

use kyro_core::check::{Check, Checker, Rules};
use serde::Deserialize;
use serde_json::{Value, json};

/// What `T`'s take makes of `value`: `Some` only when it recorded no violation.
fn taken<T: Check>(value: &Value) -> Option<T> {
    let mut c = Checker::new();
    let taken = T::take(value, &Rules::NONE, &mut c);
    c.into_violations().is_empty().then_some(taken).flatten()
}

/// What the check's pass types from `value`, serde types alike (it may refuse more: unknown
/// fields, as the canonical schema does).
fn typed_as_serde<T>(value: Value)
where
    T: Check + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    if let Some(taken) = taken::<T>(&value) {
        assert_eq!(Ok(taken), T::deserialize(&value).map_err(|e| e.to_string()), "{value}");
    }
}

/// Numbers as serde reads them: an integer into an `f32` rounded once (not through `f64`).
#[kyro_core::input]
#[derive(Debug, PartialEq)]
pub struct Ratios {
    /// One.
    pub single: f32,
    /// Many.
    pub many: Vec<f32>,
    /// Wide.
    pub wide: Option<f64>,
}

fn preset() -> Preset {
    Preset {
        level: 9,
        label: "preset".into(),
    }
}

/// Missing fields from the container's `default = "path"`, not from `Default`.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(default = "preset")]
pub struct Preset {
    /// A level.
    pub level: u8,
    /// A label.
    pub label: String,
}

impl Default for Preset {
    fn default() -> Preset {
        Preset {
            level: 1,
            label: "default".into(),
        }
    }
}

/// Renamed when read only: serde reads `maxCount`.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all(deserialize = "camelCase"))]
pub struct ReadCamel {
    /// A count.
    pub max_count: u32,
}

/// Renamed when written only: serde reads `max_count`.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all(serialize = "camelCase"))]
pub struct WriteCamel {
    /// A count.
    pub max_count: u32,
}

/// Choices read by the `deserialize` rule.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all(serialize = "UPPERCASE", deserialize = "kebab-case"))]
pub enum Tier {
    /// Low.
    LowTier,
    /// High.
    HighTier,
}

/// serde changes the case of ASCII letters only.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct Accented {
    /// A value.
    pub a_é: u32,
}

/// serde changes the case of ASCII letters only.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Umlaut {
    /// One.
    Über,
    /// Two.
    FooÄr,
}

fn plus_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(Option::<u32>::deserialize(d)?.map(|n| n + 1))
}

/// A field read `with` its own deserializer: serde requires it, `Option` or not.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
pub struct Decoded {
    /// Read by `plus_one`.
    #[serde(deserialize_with = "plus_one")]
    #[schemars(with = "Option<u32>")]
    pub n: Option<u32>,
}

/// Options within options, untyped values, a raw name, recursion.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
pub struct Nested {
    /// Sent, null or missing.
    pub twice: Option<Option<u32>>,
    /// Null is `None`.
    pub maybe_any: Option<Value>,
    /// Null is `Value::Null`.
    #[serde(default)]
    pub any: Value,
    /// A keyword.
    pub r#type: Option<String>,
    /// Itself.
    pub inner: Option<Box<Nested>>,
}

fn six() -> u32 {
    6
}

/// Skipped fields under a container's default.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(default)]
pub struct Kept {
    /// The container's.
    #[serde(skip)]
    pub skipped: u32,
    /// Its own.
    #[serde(skip_deserializing, default = "six")]
    pub own: u32,
    /// The container's `Some`, unless sent.
    pub maybe: Option<u32>,
    /// `None` unless sent (its own default wins).
    #[serde(default)]
    pub unless: Option<u32>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            skipped: 5,
            own: 7,
            maybe: Some(9),
            unless: Some(8),
        }
    }
}

/// Attributes written by a `macro_rules!` (their literals inside invisible groups).
macro_rules! generated {
    ($default:literal, $rename:literal, $rule:literal, $maybe:ty) => {
        /// Generated.
        #[kyro_core::input]
        #[derive(Debug, PartialEq)]
        #[serde(rename_all = $rule)]
        pub struct Generated {
            /// Six unless sent.
            #[serde(default = $default)]
            pub fallback_count: u32,
            /// Renamed.
            #[serde(rename = $rename)]
            pub renamed: Option<u8>,
            /// An `Option` written as `$maybe:ty`: not required.
            pub maybe: $maybe,
        }
    };
}

generated!("six", "other", "camelCase", Option<u8>);

/// Every case rule, on fields with leading, doubled and numbered parts.
macro_rules! field_rules {
    ($($name:ident => $rule:literal;)*) => {$(
        /// Renamed.
        #[kyro_core::input]
        #[derive(Debug, PartialEq)]
        #[serde(rename_all = $rule, deny_unknown_fields)]
        #[allow(non_snake_case)]
        pub struct $name {
            /// One.
            pub plain: Option<u8>,
            /// Two.
            pub two_words: Option<u8>,
            /// Three.
            pub _lead: Option<u8>,
            /// Four.
            pub a1_b2: Option<u8>,
            /// Five.
            pub x__y: Option<u8>,
        }
    )*};
}

field_rules! {
    FieldLower => "lowercase";
    FieldUpper => "UPPERCASE";
    FieldPascal => "PascalCase";
    FieldCamel => "camelCase";
    FieldSnake => "snake_case";
    FieldScreaming => "SCREAMING_SNAKE_CASE";
    FieldKebab => "kebab-case";
    FieldScreamingKebab => "SCREAMING-KEBAB-CASE";
}

/// Every case rule, on variants with acronyms, digits and underscores.
macro_rules! variant_rules {
    ($($name:ident => $rule:literal;)*) => {$(
        /// Renamed.
        #[kyro_core::input]
        #[derive(Debug, PartialEq)]
        #[serde(rename_all = $rule)]
        #[allow(non_camel_case_types)]
        pub enum $name {
            /// One.
            Plain,
            /// Two.
            TwoWords,
            /// Three.
            HTTPServer,
            /// Four.
            V2Beta,
            /// Five.
            Odd_Name,
            /// Six.
            lower,
        }
    )*};
}

variant_rules! {
    VariantLower => "lowercase";
    VariantUpper => "UPPERCASE";
    VariantPascal => "PascalCase";
    VariantCamel => "camelCase";
    VariantSnake => "snake_case";
    VariantScreaming => "SCREAMING_SNAKE_CASE";
    VariantKebab => "kebab-case";
    VariantScreamingKebab => "SCREAMING-KEBAB-CASE";
}

#[test]
fn an_integer_is_an_f32_rounded_once_as_serde_rounds_it() {
    // 2^54 + 2^30 + 1 and 2^63 + 2^39 + 1: just above halfway between two f32s, exactly
    // halfway once rounded to an f64 first (then to even, the lower one).
    let case = json!({
        "single": 18014399583223809_u64,
        "many": [9223372586610589697_u64, -18014399583223809_i64, 16777217, 0.1, 1e300, -0.0],
        "wide": 18446744073709551615_u64,
    });
    let ratios = taken::<Ratios>(&case).expect("accepted");
    assert_eq!(ratios.single, 18014399583223809_u64 as f32);
    assert_eq!(ratios.many[0], 9223372586610589697_u64 as f32);
    assert!(ratios.many[5].is_sign_negative());
    assert_eq!(Ratios::deserialize(&case).unwrap(), ratios);
}

#[test]
fn missing_fields_come_from_the_containers_default_path() {
    for case in [json!({}), json!({"level": 2}), json!({"label": "x"})] {
        assert!(taken::<Preset>(&case).is_some(), "{case}");
        typed_as_serde::<Preset>(case);
    }
}

#[test]
fn names_are_read_by_the_deserialize_rule() {
    assert_eq!(
        taken::<ReadCamel>(&json!({"maxCount": 2})),
        Some(ReadCamel { max_count: 2 })
    );
    assert_eq!(taken::<ReadCamel>(&json!({"max_count": 2})), None);
    assert_eq!(
        taken::<WriteCamel>(&json!({"max_count": 2})),
        Some(WriteCamel { max_count: 2 })
    );
    assert_eq!(taken::<Tier>(&json!("high-tier")), Some(Tier::HighTier));
    for case in [json!("LOWTIER"), json!("LowTier"), json!("low_tier")] {
        assert_eq!(taken::<Tier>(&case), None, "{case}");
        assert!(Tier::deserialize(&case).is_err(), "{case}");
    }
    for case in [json!({"maxCount": 2}), json!({"max_count": 2})] {
        typed_as_serde::<ReadCamel>(case.clone());
        typed_as_serde::<WriteCamel>(case);
    }
}

#[test]
fn case_rules_change_ascii_letters_only() {
    for case in [json!({"Aé": 1}), json!({"AÉ": 1})] {
        typed_as_serde::<Accented>(case);
    }
    for case in ["Über", "über", "foo_Är", "foo_är"] {
        typed_as_serde::<Umlaut>(json!(case));
    }
    assert_eq!(taken::<Accented>(&json!({"Aé": 1})), Some(Accented { a_é: 1 }));
    assert_eq!(taken::<Umlaut>(&json!("Über")), Some(Umlaut::Über));
    assert_eq!(taken::<Umlaut>(&json!("foo_Är")), Some(Umlaut::FooÄr));
}

#[test]
fn every_case_rule_names_as_serde_names() {
    macro_rules! fields {
        ($($ty:ty),*) => {$(
            let names = ["plain", "two_words", "_lead", "a1_b2", "x__y"];
            let mut all = serde_json::Map::new();
            for (i, name) in names.iter().enumerate() {
                // The name serde reads: the one its error lists for an unknown field.
                let unknown = <$ty>::deserialize(&json!({"?": 0})).unwrap_err().to_string();
                let listed: Vec<&str> = unknown.split('`').skip(3).step_by(2).collect();
                assert_eq!(listed.len(), names.len(), "{unknown}");
                all.insert(listed[i].to_owned(), json!(i));
                let _ = name;
            }
            assert!(taken::<$ty>(&Value::Object(all.clone())).is_some(), "{all:?}");
            typed_as_serde::<$ty>(Value::Object(all));
        )*};
    }
    fields!(
        FieldLower,
        FieldUpper,
        FieldPascal,
        FieldCamel,
        FieldSnake,
        FieldScreaming,
        FieldKebab,
        FieldScreamingKebab
    );
    macro_rules! variants {
        ($($ty:ty),*) => {$(
            let unknown = <$ty>::deserialize(&json!("?")).unwrap_err().to_string();
            let listed: Vec<&str> = unknown.split('`').skip(3).step_by(2).collect();
            assert_eq!(listed.len(), 6, "{unknown}");
            for name in listed {
                assert!(taken::<$ty>(&json!(name)).is_some(), "{name}");
                typed_as_serde::<$ty>(json!(name));
            }
        )*};
    }
    variants!(
        VariantLower,
        VariantUpper,
        VariantPascal,
        VariantCamel,
        VariantSnake,
        VariantScreaming,
        VariantKebab,
        VariantScreamingKebab
    );
}

#[test]
fn attributes_a_macro_rules_writes_read_as_serde_reads_them() {
    assert_eq!(
        taken::<Generated>(&json!({"other": 1})),
        Some(Generated {
            fallback_count: 6,
            renamed: Some(1),
            maybe: None
        })
    );
    for case in [
        json!({}),
        json!({"fallbackCount": 2}),
        json!({"fallback_count": 2}),
        json!({"renamed": 1}),
    ] {
        typed_as_serde::<Generated>(case);
    }
}

#[test]
fn a_field_read_with_its_own_deserializer_is_left_to_serde() {
    // Missing: serde refuses it (no `None`); sent: serde reads it (`plus_one`).
    for case in [json!({}), json!({"n": 1}), json!({"n": null})] {
        assert_eq!(taken::<Decoded>(&case), None, "{case}");
    }
    assert!(Decoded::deserialize(&json!({})).is_err());
}

#[test]
fn options_values_skips_and_defaults_read_as_serde_reads_them() {
    for case in [
        json!({}),
        json!({"twice": null, "maybe_any": null, "any": null, "type": null, "inner": null}),
        json!({"twice": 1, "maybe_any": {"x": [1, null]}, "any": 2, "type": "t", "inner": {"inner": {"twice": 3}}}),
        json!({"any": "esc\"aped\u{0}\\", "type": "\u{1F600}"}),
    ] {
        assert!(taken::<Nested>(&case).is_some(), "{case}");
        typed_as_serde::<Nested>(case);
    }
    for case in [
        json!({}),
        json!({"maybe": null}),
        json!({"unless": 1}),
        json!({"maybe": 2, "unless": null}),
    ] {
        assert!(taken::<Kept>(&case).is_some(), "{case}");
        typed_as_serde::<Kept>(case);
    }
    assert_eq!(
        taken::<Kept>(&json!({})),
        Some(Kept {
            skipped: 5,
            own: 6,
            maybe: Some(9),
            unless: None
        })
    );
}

/// No fields and no `deny_unknown_fields`: serde takes any, and so does its schema (which
/// closes only an object that lists properties).
#[kyro_core::input]
#[derive(Debug, PartialEq)]
pub struct Open {}

/// No fields, unknown ones denied.
#[kyro_core::input]
#[derive(Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Shut {}

#[test]
fn unknown_fields_are_refused_where_serde_and_the_schema_refuse_them() {
    let case = json!({"any": 1});
    assert_eq!(taken::<Open>(&case), Some(Open {}));
    assert_eq!(Open::deserialize(&case).ok(), Some(Open {}));
    assert_eq!(taken::<Shut>(&case), None);
    assert!(Shut::deserialize(&case).is_err());
    assert_eq!(taken::<Shut>(&json!({})), Some(Shut {}));
}
