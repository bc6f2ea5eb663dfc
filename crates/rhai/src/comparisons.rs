//! Comparisons `> < >= <= == !=` on tensors (with tensors or numbers on either side) and the
//! methods `gt lt ge le eq ne`: elementwise, broadcasting, into bool tensors, as in PyTorch.
use super::documented::Documented;
use rhai::{Dynamic, Engine, Variant, FLOAT, INT};

use super::convert::OrRaise;
use super::errors::type_error;
use torchlet_core::device::BinaryOp;
use torchlet_core::tensor::{Scalar, Tensor};

/// Each comparison's operator, its method name and the method's help.
const COMPARISONS: [(&str, &str, &str, BinaryOp); 6] = [
    (
        ">",
        "gt",
        "a.gt(b) — a > b elementwise, a bool tensor (b a tensor or a number)",
        BinaryOp::Gt,
    ),
    (
        "<",
        "lt",
        "a.lt(b) — a < b elementwise, a bool tensor",
        BinaryOp::Lt,
    ),
    (
        ">=",
        "ge",
        "a.ge(b) — a >= b elementwise, a bool tensor",
        BinaryOp::Ge,
    ),
    (
        "<=",
        "le",
        "a.le(b) — a <= b elementwise, a bool tensor",
        BinaryOp::Le,
    ),
    (
        "==",
        "eq",
        "a.eq(b) — a == b elementwise, a bool tensor",
        BinaryOp::Eq,
    ),
    (
        "!=",
        "ne",
        "a.ne(b) — a != b elementwise, a bool tensor",
        BinaryOp::Ne,
    ),
];

/// Register the operators and methods.
pub(crate) fn register(engine: &mut Engine) {
    for (operator, method, doc, op) in COMPARISONS {
        engine
            .register_fn(operator, move |a: Tensor, b: Tensor| {
                let out = a.compare(&b, op);
                // CPython's COMPARE_OP drops the left operand first, as for arithmetic.
                drop(a);
                drop(b);
                out.or_raise()
            })
            .register_doc(method, &[doc], move |a: &mut Tensor, b: Tensor| {
                a.compare(&b, op).or_raise()
            });
        with_number::<INT>(engine, operator, method, op, Scalar::Int);
        with_number::<FLOAT>(engine, operator, method, op, Scalar::Float);
        with_number::<bool>(engine, operator, method, op, Scalar::Bool);
        if !matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
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

/// `t op n`, `n op t` and `t.method(n)` for numbers of type `N`.
fn with_number<N: Variant + Clone>(
    engine: &mut Engine,
    operator: &str,
    method: &str,
    op: BinaryOp,
    scalar: fn(N) -> Scalar,
) {
    engine
        .register_fn(operator, move |a: Tensor, b: N| {
            a.compare_scalar(scalar(b), op, false).or_raise()
        })
        .register_fn(operator, move |a: N, b: Tensor| {
            b.compare_scalar(scalar(a), op, true).or_raise()
        })
        .register_fn(method, move |a: &mut Tensor, b: N| {
            a.compare_scalar(scalar(b), op, false).or_raise()
        });
}
