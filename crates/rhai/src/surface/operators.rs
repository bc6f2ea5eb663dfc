//! Binary operators and their methods on tensors, from `tensor::BINARY_METHODS`: `+ - * / **` and
//! `> < >= <= == !=` with tensors and numbers on either side (as the row has them), `a.add(b)`,
//! `a.gt(b)` …; and unary `-`.
//!
//! `a += b` is in place, as in PyTorch: see [`crate::surface::compound_assign`]. Python's refusal to order a
//! tensor and a value that is not a number is in [`crate::surface::comparisons`].
use super::documented::Documented;
use rhai::{Engine, Variant, FLOAT, INT};

use super::convert::OrRaise;
use torchlet_core::tensor::{BinaryKind, BinaryMethod, Scalar, Tensor, BINARY_METHODS};

/// Register every row's operator and method, then unary `-`.
pub(crate) fn register(engine: &mut Engine) {
    for row in BINARY_METHODS {
        let tensors = row.tensors;
        engine
            .register_fn(row.operator, move |a: Tensor, b: Tensor| {
                let out = tensors(&a, &b);
                // CPython's BINARY_OP and COMPARE_OP drop the left operand first; Rhai would drop
                // the right.
                drop(a);
                drop(b);
                out.or_raise()
            })
            .register_doc(row.name, &[row.help], move |a: &mut Tensor, b: Tensor| {
                tensors(a, &b).or_raise()
            });
        with_number::<INT>(engine, row, Scalar::Int);
        with_number::<FLOAT>(engine, row, Scalar::Float);
        if row.kind != BinaryKind::Arithmetic {
            with_number::<bool>(engine, row, Scalar::Bool);
        }
    }
    engine.register_fn("-", |a: Tensor| a.neg().or_raise());
}

/// `t op n`, `t.name(n)` and, where the row has it, `n op t`, for numbers of type `N`.
fn with_number<N: Variant + Clone>(
    engine: &mut Engine,
    row: &BinaryMethod,
    scalar: fn(N) -> Scalar,
) {
    let number = row.number;
    engine
        .register_fn(row.operator, move |a: Tensor, b: N| {
            number(&a, scalar(b)).or_raise()
        })
        .register_fn(row.name, move |a: &mut Tensor, b: N| {
            number(a, scalar(b)).or_raise()
        });
    if let Some(first) = row.number_first {
        engine.register_fn(row.operator, move |a: N, b: Tensor| {
            first(&b, scalar(a)).or_raise()
        });
    }
}
