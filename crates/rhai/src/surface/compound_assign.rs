//! `+= -= *= /=` on tensors: in place, as Python's `__iadd__` and friends.
//!
//! Without these Rhai would expand `w -= e` to `w = w - e`: a new tensor, a second copy of `w`'s
//! memory at the peak, and a `w` that no longer requires grad. PyTorch updates `w`'s storage in
//! place and keeps it a leaf, which is what makes `w -= w.grad * lr` under `no_grad` an SGD step.
//! The in-place ops make PyTorch's checks: a leaf that requires grad is refused under grad mode,
//! and a result dtype the tensor cannot hold (`int_tensor /= 2`) is refused.
//!
//! Rhai evaluates the right-hand side, calls the op and drops the right-hand side after it
//! returns: CPython's order for `w -= e` (evaluate `e`, `isub`, drop `e`).
use super::documented::Documented;
use rhai::{Engine, Variant, FLOAT, INT};

use super::convert::OrRaise;
use torchlet_core::tensor::{Scalar, Tensor};

type InPlace = fn(&Tensor, &Tensor) -> torchlet_core::tensor::Result<Tensor>;
type InPlaceScalar = fn(&Tensor, Scalar) -> torchlet_core::tensor::Result<Tensor>;

/// Register the op-assignments and the methods Rhai lacked (`div_`).
pub(crate) fn register(engine: &mut Engine) {
    let ops: [(&str, InPlace, InPlaceScalar); 4] = [
        ("+=", Tensor::add_, Tensor::add_scalar_),
        ("-=", Tensor::sub_, Tensor::sub_scalar_),
        ("*=", Tensor::mul_, Tensor::mul_scalar_),
        ("/=", Tensor::div_, Tensor::div_scalar_),
    ];
    for (op, tensor, number) in ops {
        engine.register_fn(op, move |w: &mut Tensor, e: Tensor| {
            tensor(w, &e).map(drop).or_raise()
        });
        with_number::<INT>(engine, op, number, Scalar::Int);
        with_number::<FLOAT>(engine, op, number, Scalar::Float);
        with_number::<bool>(engine, op, number, Scalar::Bool);
    }
    engine.register_doc("div_", &["t.div_(other) — divide in place (also t /= other); an integer t cannot hold the result"], |t: &mut Tensor, o: Tensor| t.div_(&o).or_raise());
    with_method::<INT>(engine, Scalar::Int);
    with_method::<FLOAT>(engine, Scalar::Float);
}

fn with_number<N: Variant + Clone>(
    engine: &mut Engine,
    op: &str,
    number: InPlaceScalar,
    scalar: fn(N) -> Scalar,
) {
    engine.register_fn(op, move |w: &mut Tensor, e: N| {
        number(w, scalar(e)).map(drop).or_raise()
    });
}

fn with_method<N: Variant + Clone>(engine: &mut Engine, scalar: fn(N) -> Scalar) {
    engine.register_fn("div_", move |t: &mut Tensor, e: N| {
        t.div_scalar_(scalar(e)).or_raise()
    });
}
