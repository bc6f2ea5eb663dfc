//! Arithmetic operators on tensors: `+ - * / **` with tensors and numbers on either side, and unary `-`.
//!
//! `a += b` is in place, as in PyTorch: see [`crate::compound_assign`].
use super::documented::Documented;
use rhai::{Engine, FLOAT, INT};

use super::convert::OrRaise;
use torchlet_core::tensor::{Scalar, Tensor};

type TensorOp = fn(&Tensor, &Tensor) -> torchlet_core::tensor::Result<Tensor>;
type ScalarOp = fn(&Tensor, Scalar) -> torchlet_core::tensor::Result<Tensor>;

/// Register the operators.
pub(crate) fn register(engine: &mut Engine) {
    // (operator, tensor ⊕ tensor, tensor ⊕ number, number ⊕ tensor)
    let ops: [(&str, TensorOp, ScalarOp, ScalarOp); 4] = [
        ("+", Tensor::add, Tensor::add_scalar, Tensor::add_scalar),
        ("-", Tensor::sub, Tensor::sub_scalar, Tensor::rsub_scalar),
        ("*", Tensor::mul, Tensor::mul_scalar, Tensor::mul_scalar),
        ("/", Tensor::div, Tensor::div_scalar, Tensor::rdiv_scalar),
    ];
    for (op, both, right, left) in ops {
        engine
            .register_fn(op, move |a: Tensor, b: Tensor| {
                let out = both(&a, &b);
                // CPython's BINARY_OP drops the left operand first; Rhai would drop the right.
                drop(a);
                drop(b);
                out.or_raise()
            })
            .register_fn(op, move |a: Tensor, b: INT| {
                right(&a, Scalar::Int(b)).or_raise()
            })
            .register_fn(op, move |a: Tensor, b: FLOAT| {
                right(&a, Scalar::Float(b)).or_raise()
            })
            .register_fn(op, move |a: INT, b: Tensor| {
                left(&b, Scalar::Int(a)).or_raise()
            })
            .register_fn(op, move |a: FLOAT, b: Tensor| {
                left(&b, Scalar::Float(a)).or_raise()
            });
    }
    // Method forms, so `a.add(b)` reads as in PyTorch.
    for (name, doc, op) in [
        ("add", "a.add(b) — a + b", Tensor::add as TensorOp),
        ("sub", "a.sub(b) — a - b", Tensor::sub),
        ("mul", "a.mul(b) — a * b", Tensor::mul),
        ("div", "a.div(b) — a / b", Tensor::div),
    ] {
        engine.register_doc(name, &[doc], move |a: &mut Tensor, b: Tensor| {
            op(a, &b).or_raise()
        });
    }
    engine
        .register_fn("-", |a: Tensor| a.neg().or_raise())
        .register_fn("**", |a: Tensor, e: INT| a.pow_scalar(e as f64).or_raise())
        .register_fn("**", |a: Tensor, e: FLOAT| a.pow_scalar(e).or_raise())
        .register_fn("**", |a: Tensor, e: Tensor| a.pow(&e).or_raise());
}
