//! `calculate`: evaluate an arithmetic or logical expression.

use crate::Failure;
use evalexpr::{DefaultNumericTypes, HashMapContext, Value as Evaluated};
use kyro_core::{Execute, ToolContext, ToolError, tool};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::Value;

/// Evaluate an arithmetic or logical expression exactly: 64-bit integers (overflow is an error),
/// floats (a literal with a point, or a power with a negative or float exponent), `+ - * / % ^`,
/// comparisons, `&& || !`, functions like `math::sqrt`, `math::sin`, `math::ln`, `min`, `max`,
/// `floor`, `round`. No variables; a non-finite result is an error.
#[tool(name = "calculate", title = "Calculate", category = "calculation", effect = "none", aliases = ["calc"], inline = true)]
pub struct Calculate {
    /// Like `(2 + 3) * 7` or `math::sqrt(2.0)`.
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
        let failed = |e: evalexpr::EvalexprError| Failure::Evaluation { message: e.to_string() };
        refuse_wide_literals(&self.expression)?;
        let mut tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(&self.expression).map_err(failed)?;
        exact_powers(&mut tree, &context)?;
        let evaluated = tree.eval_with_context(&context).map_err(failed)?;
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

/// An integer literal wider than 64 bits is an error (the evaluator would read it as a float
/// and lose digits silently).
fn refuse_wide_literals(expression: &str) -> Result<(), ToolError> {
    let bytes = expression.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b':';
        if b.is_ascii_digit() && (i == 0 || !word(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let next = bytes.get(i).copied();
            let literal = &expression[start..i];
            if !next.is_some_and(word) && literal.parse::<i64>().is_err() {
                return Err(Failure::Evaluation {
                    message: format!(
                        "the integer {literal} does not fit in 64 bits (the largest is {}); write {literal}.0 for a float",
                        i64::MAX
                    ),
                }
                .into());
            }
            continue;
        }
        i += 1;
    }
    Ok(())
}

/// `a ^ b` of two integers is exact (the evaluator computes every power as a float): each
/// such power, innermost first, becomes its exact value, and one past 64 bits is an
/// overflow error. A negative exponent or a float operand stays a float power.
fn exact_powers(
    node: &mut evalexpr::Node<DefaultNumericTypes>,
    context: &HashMapContext<DefaultNumericTypes>,
) -> Result<(), ToolError> {
    for child in node.children_mut() {
        exact_powers(child, context)?;
    }
    if !matches!(node.operator(), evalexpr::Operator::Exp) || node.children().len() != 2 {
        return Ok(());
    }
    let operand = |n: &evalexpr::Node<DefaultNumericTypes>| n.eval_with_context(context).ok();
    let (Some(Evaluated::Int(base)), Some(Evaluated::Int(exponent))) =
        (operand(&node.children()[0]), operand(&node.children()[1]))
    else {
        return Ok(());
    };
    let Ok(exponent) = u32::try_from(exponent) else {
        return Ok(());
    };
    let value = base.checked_pow(exponent).ok_or_else(|| Failure::Evaluation {
        message: format!("{base} ^ {exponent} overflows a 64-bit integer; write {base}.0 ^ {exponent} for a float"),
    })?;
    *node.operator_mut() = evalexpr::Operator::Const {
        value: Evaluated::Int(value),
    };
    node.children_mut().clear();
    Ok(())
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
    fn integer_powers_are_exact_and_wide_literals_are_refused() {
        for (expression, text) in [
            ("3^39", "4052555153018976267"),
            ("2^3", "8"),
            ("(-2)^3", "-8"),
            ("2^(2^3)", "256"),
            ("max(2^10, 3)", "1024"),
        ] {
            let r = ok(calc(expression));
            assert_eq!(
                (r["kind"].clone(), r["text"].clone()),
                (json!("integer"), json!(text)),
                "{expression}"
            );
        }
        assert_eq!(ok(calc("3^39"))["value"], json!(4052555153018976267_i64));
        for (expression, value) in [("2^-1", 0.5), ("2.0^3", 8.0), ("4^0.5", 2.0)] {
            let r = ok(calc(expression));
            assert_eq!(
                (r["kind"].clone(), r["value"].clone()),
                (json!("float"), json!(value)),
                "{expression}"
            );
        }
        for expression in ["2^64", "3^40", "9223372036854775808", "1 + 99999999999999999999 * 0"] {
            let error = failed(calc(expression));
            assert!(
                matches!(Failure::of(&error), Some(Failure::Evaluation { .. })),
                "{expression}: {error}"
            );
        }
        assert_eq!(ok(calc("9223372036854775808.0"))["kind"], "float");
        assert_eq!(ok(calc("\"9223372036854775808\" == \"x\""))["kind"], "boolean");
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
