//! `calculate`: evaluate an arithmetic or logical expression.

use crate::Failure;
use evalexpr::{DefaultNumericTypes, HashMapContext, Value as Evaluated};
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::Value;

/// Evaluate an arithmetic or logical expression exactly.
///
/// Integers are exact 64-bit (overflow is an error, not a wrap); a literal with a point is a
/// float. Supports `+ - * / % ^`, comparisons, `&& || !`, parentheses and functions such as
/// `math::sqrt`, `math::sin`, `math::ln`, `min`, `max`, `floor`, `round`. No variables or
/// assignments. A result that is not finite is an error.
#[tool(name = "calculate", title = "Calculate", category = "calculation", effect = "none", aliases = ["calc"])]
pub struct Calculate {
    /// The expression, for example `(2 + 3) * 7` or `math::sqrt(2.0)`.
    #[schemars(length(min = 1, max = 4096))]
    pub expression: String,
}

/// The value of an expression.
#[kyro_core::output]
#[derive(Debug)]
pub struct Calculation {
    /// The expression as given.
    pub expression: String,
    /// The type of the value.
    pub kind: ResultKind,
    /// The value: a number for integer and float, a boolean for boolean.
    #[schemars(schema_with = "number_or_boolean")]
    pub value: Value,
    /// The value as text, exact for integers.
    pub text: String,
}

/// The type of a calculated value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// An exact 64-bit integer.
    Integer,
    /// A finite 64-bit float.
    Float,
    /// A truth value.
    Boolean,
}

fn number_or_boolean(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["number", "boolean"] })
}

impl Execute for Calculate {
    type Output = Calculation;

    async fn run(self, _cx: &ToolContext) -> Result<Calculation, ToolError> {
        // An immutable, empty context: assignments and variables are refused by the evaluator.
        let context = HashMapContext::<DefaultNumericTypes>::new();
        let evaluated = evalexpr::eval_with_context(&self.expression, &context)
            .map_err(|e| Failure::Evaluation { message: e.to_string() })?;
        let (kind, value, text) = match evaluated {
            Evaluated::Int(i) => (ResultKind::Integer, Value::from(i), i.to_string()),
            Evaluated::Float(f) if !f.is_finite() => {
                return Err(Failure::NonFinite { value: f.to_string() }.into());
            }
            Evaluated::Float(f) => (ResultKind::Float, Value::from(f), f.to_string()),
            Evaluated::Boolean(b) => (ResultKind::Boolean, Value::Bool(b), b.to_string()),
            other => {
                return Err(Failure::Evaluation {
                    message: format!("the result `{other}` is not a number or a boolean"),
                }
                .into());
            }
        };
        Ok(Calculation {
            expression: self.expression,
            kind,
            value,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Failure;
    use serde_json::json;

    use crate::testing::{call, failed, ok, workspace};

    fn calc(expression: &str) -> kyro_core::Outcome {
        call(workspace().path(), "calculate", json!({ "expression": expression }))
    }

    #[test]
    fn integers_are_exact_and_floats_are_floats() {
        let r = ok(calc("(2 + 3) * 7 - 9223372036854775807 + 9223372036854775807"));
        assert_eq!(
            (r["kind"].clone(), r["value"].clone(), r["text"].clone()),
            (json!("integer"), json!(35), json!("35"))
        );
        let r = ok(calc("9007199254740993 + 0"));
        assert_eq!(r["text"], "9007199254740993");
        let r = ok(calc("math::sqrt(2.0)"));
        assert_eq!(r["kind"], "float");
        assert_eq!(r["value"], std::f64::consts::SQRT_2);
        let r = ok(calc("3 > 2 && !(1 == 2)"));
        assert_eq!((r["kind"].clone(), r["value"].clone()), (json!("boolean"), json!(true)));
    }

    #[test]
    fn overflow_division_by_zero_and_syntax_errors_are_evaluation_failures() {
        for expression in ["9223372036854775807 + 1", "1 / 0", "2 +", "x + 1", "a = 3"] {
            assert!(
                matches!(Failure::of(&failed(calc(expression))), Some(Failure::Evaluation { .. })),
                "{expression}"
            );
        }
    }

    #[test]
    fn non_finite_results_are_refused() {
        for expression in ["1.0 / 0.0", "math::ln(0.0)", "0.0 / 0.0"] {
            assert!(
                matches!(Failure::of(&failed(calc(expression))), Some(Failure::NonFinite { .. })),
                "{expression}"
            );
        }
    }

    #[test]
    fn a_string_result_is_not_a_number() {
        assert!(matches!(
            Failure::of(&failed(calc("\"a\" + \"b\""))),
            Some(Failure::Evaluation { .. })
        ));
    }
}
