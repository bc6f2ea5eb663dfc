//! Ordering a tensor and a value that is neither a tensor nor a number: Python's `TypeError`
//! rather than Rhai's `false`. The comparisons themselves (`> < >= <= == !=`, `gt lt ge le eq
//! ne`) are rows of `tensor::BINARY_METHODS`, registered in [`crate::surface::operators`].
use rhai::{Dynamic, Engine};

use super::errors::type_error;
use torchlet_core::tensor::{BinaryKind, Tensor, BINARY_METHODS};

/// Python's refusal to order a tensor and a value that is neither a tensor nor a number, for
/// each ordering row of `tensor::BINARY_METHODS` (the operators themselves are registered from
/// the rows in [`crate::surface::operators`]).
pub(crate) fn register(engine: &mut Engine) {
    let orderings = BINARY_METHODS
        .iter()
        .filter(|row| row.kind == BinaryKind::Ordering);
    for row in orderings {
        let operator = row.operator;
        // Rhai calls values of different types unordered (`false`); Python refuses to order
        // them. (`t == "x"` is `false` in both, and `t.grad == ()` stays a plain test.)
        engine
            .register_fn(operator, move |_: Tensor, b: Dynamic| {
                unordered(operator, "Tensor", python_type_name(&b))
            })
            .register_fn(operator, move |a: Dynamic, _: Tensor| {
                unordered(operator, python_type_name(&a), "Tensor")
            });
    }
}

/// Python's `TypeError` for ordering a tensor and a value that is neither a tensor nor a number.
fn unordered(operator: &str, a: &str, b: &str) -> Result<Tensor, Box<rhai::EvalAltResult>> {
    Err(type_error(format!(
        "'{operator}' not supported between instances of '{a}' and '{b}'"
    )))
}

/// Python's name for the type of a script value, for error messages.
fn python_type_name(value: &Dynamic) -> &'static str {
    if value.is_string() {
        "str"
    } else if value.is_array() {
        "list"
    } else if value.is_map() {
        "dict"
    } else if value.is_unit() {
        "NoneType"
    } else {
        "object"
    }
}
