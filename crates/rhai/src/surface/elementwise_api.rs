//! Elementwise functions beyond the operators' table: `maximum`, `minimum`, `remainder` (and the
//! `%` operator on tensors), `floor_divide`, `clamp_min`, `clamp_max`, `lerp`, `addcmul`, and
//! `norm` over dims.

use rhai::{Array, Dynamic, Engine, FLOAT, INT};

use super::convert::{isize_list, scalar_of, OrRaise, Res};
use super::documented::Documented;
use torchlet_core::tensor::Tensor;

/// `t op other`, `other` a tensor or a number.
fn tensor_or_number(
    t: &Tensor,
    other: Dynamic,
    tensors: fn(&Tensor, &Tensor) -> torchlet_core::tensor::Result<Tensor>,
    number: fn(
        &Tensor,
        torchlet_core::tensor::Scalar,
        bool,
    ) -> torchlet_core::tensor::Result<Tensor>,
) -> Res<Tensor> {
    if let Some(o) = other.clone().try_cast::<Tensor>() {
        return tensors(t, &o).or_raise();
    }
    number(t, scalar_of(&other)?, false).or_raise()
}

/// Registers the functions and methods of this module.
pub fn register(engine: &mut Engine) {
    engine
        .register_doc(
            "maximum",
            &["maximum(a, b) — the larger of each pair of elements (NaN where either is)"],
            |a: &mut Tensor, b: Tensor| a.maximum(&b).or_raise(),
        )
        .register_doc(
            "minimum",
            &["minimum(a, b) — the smaller of each pair of elements (NaN where either is)"],
            |a: &mut Tensor, b: Tensor| a.minimum(&b).or_raise(),
        )
        .register_doc(
            "remainder",
            &["remainder(a, b) — a % b with the divisor's sign, as Python's % (also the % operator)"],
            |a: &mut Tensor, b: Dynamic| tensor_or_number(a, b, Tensor::remainder, Tensor::remainder_scalar),
        )
        .register_doc(
            "floor_divide",
            &["floor_divide(a, b) — a / b rounded down, as Python's //"],
            |a: &mut Tensor, b: Dynamic| tensor_or_number(a, b, Tensor::floor_divide, Tensor::floor_divide_scalar),
        )
        .register_doc(
            "clamp_min",
            &["clamp_min(t, min) — t with every element below min raised to min"],
            |t: &mut Tensor, m: FLOAT| t.clamp_min(m).or_raise(),
        )
        .register_fn("clamp_min", |t: &mut Tensor, m: INT| t.clamp_min(m as f64).or_raise())
        .register_doc(
            "clamp_max",
            &["clamp_max(t, max) — t with every element above max lowered to max"],
            |t: &mut Tensor, m: FLOAT| t.clamp_max(m).or_raise(),
        )
        .register_fn("clamp_max", |t: &mut Tensor, m: INT| t.clamp_max(m as f64).or_raise())
        .register_doc(
            "lerp",
            &["lerp(a, b, weight) — a + weight * (b - a), weight a number"],
            |a: &mut Tensor, b: Tensor, w: FLOAT| a.lerp(&b, w).or_raise(),
        )
        .register_doc(
            "addcmul",
            &["addcmul(t, t1, t2[, value]) — t + value * t1 * t2 in one result (value 1)"],
            |t: &mut Tensor, t1: Tensor, t2: Tensor| t.addcmul(&t1, &t2, 1.0).or_raise(),
        )
        .register_fn("addcmul", |t: &mut Tensor, t1: Tensor, t2: Tensor, v: FLOAT| {
            t.addcmul(&t1, &t2, v).or_raise()
        })
        .register_doc(
            "norm",
            &["norm(t[, p[, dims_array[, keepdim]]]) — the p-norm (2) of all elements, or over dims"],
            |t: &mut Tensor| t.norm_over(2.0, &[], false).or_raise(),
        )
        .register_fn("norm", |t: &mut Tensor, p: FLOAT| t.norm_over(p, &[], false).or_raise())
        .register_fn("norm", |t: &mut Tensor, p: FLOAT, dims: Array| {
            t.norm_over(p, &isize_list(&dims)?, false).or_raise()
        })
        .register_fn("norm", |t: &mut Tensor, p: FLOAT, dims: Array, keepdim: bool| {
            t.norm_over(p, &isize_list(&dims)?, keepdim).or_raise()
        });
    // `%` between tensors, and between a tensor and a number either side.
    engine
        .register_fn("%", |a: Tensor, b: Tensor| a.remainder(&b).or_raise())
        .register_fn("%", |a: Tensor, b: INT| {
            a.remainder_scalar(b.into(), false).or_raise()
        })
        .register_fn("%", |a: Tensor, b: FLOAT| {
            a.remainder_scalar(b.into(), false).or_raise()
        })
        .register_fn("%", |a: INT, b: Tensor| {
            b.remainder_scalar(a.into(), true).or_raise()
        })
        .register_fn("%", |a: FLOAT, b: Tensor| {
            b.remainder_scalar(a.into(), true).or_raise()
        });
}
