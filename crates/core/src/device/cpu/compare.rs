//! Host kernels for comparisons (`== != < <= > >=`) into bool destinations.
//!
//! A comparison computes in its operands' category, not its destination's: floats as f64 (exact
//! for every float dtype, and the tensor layer has already rounded a Python number to the
//! tensor's dtype, as PyTorch does), integers and bools as i64.

use crate::device::backend::{BinaryOp, Operand};
use torchlet_alloc::types::element::{load_f64, load_i64};
use torchlet_alloc::types::{DType, Scalar};

use super::parallel::{for_chunks, offsets, SendPtr};

/// Write `f(i, j)` for every element into the bool `dst`, where `i`, `j` are the operands'
/// element offsets.
fn each(lhs: &Operand, rhs: &Operand, dst: &Operand, f: impl Fn(usize, usize) -> bool + Sync) {
    let d = SendPtr(dst.ptr as usize);
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        let it = offsets(lhs.layout, start, len)
            .zip(offsets(rhs.layout, start, len))
            .zip(offsets(dst.layout, start, len));
        for ((i, j), o) in it {
            *d.get().add(o) = f(i, j) as u8;
        }
    });
}

/// `dst = lhs op rhs` into a bool `dst`; operands broadcast to `dst`'s shape.
pub fn compare(op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) {
    let (a, b) = (SendPtr(lhs.ptr as usize), SendPtr(rhs.ptr as usize));
    let contiguous = [&lhs, &rhs, &dst].iter().all(|o| o.layout.is_contiguous());
    if contiguous && lhs.dtype == DType::F32 && rhs.dtype == DType::F32 {
        let (a0, b0, d0) = (lhs.layout.offset, rhs.layout.offset, dst.layout.offset);
        let d = SendPtr(dst.ptr as usize);
        for_chunks(dst.layout.numel(), |start, len| unsafe {
            let x = (a.get() as *const f32).add(a0 + start);
            let y = (b.get() as *const f32).add(b0 + start);
            let out = d.get().add(d0 + start);
            for k in 0..len {
                *out.add(k) = op.holds(*x.add(k), *y.add(k)) as u8;
            }
        });
    } else if lhs.dtype.is_float() || rhs.dtype.is_float() {
        each(&lhs, &rhs, &dst, |i, j| unsafe {
            op.holds(
                load_f64(a.get(), lhs.dtype, i),
                load_f64(b.get(), rhs.dtype, j),
            )
        });
    } else {
        each(&lhs, &rhs, &dst, |i, j| unsafe {
            op.holds(
                load_i64(a.get(), lhs.dtype, i),
                load_i64(b.get(), rhs.dtype, j),
            )
        });
    }
}

/// `dst = src op scalar` (or `scalar op src`) into a bool `dst`.
pub fn compare_scalar(
    op: BinaryOp,
    src: Operand,
    scalar: Scalar,
    scalar_first: bool,
    dst: Operand,
) {
    let op = if scalar_first { op.swapped() } else { op };
    let s = SendPtr(src.ptr as usize);
    if src.dtype == DType::F32 && src.layout.is_contiguous() && dst.layout.is_contiguous() {
        // The common `x > 0.5`: a typed loop the compiler vectorises.
        let v = scalar.to_f64() as f32;
        let (s0, d0) = (src.layout.offset, dst.layout.offset);
        let d = SendPtr(dst.ptr as usize);
        for_chunks(dst.layout.numel(), |start, len| unsafe {
            let x = (s.get() as *const f32).add(s0 + start);
            let out = d.get().add(d0 + start);
            for k in 0..len {
                *out.add(k) = op.holds(*x.add(k), v) as u8;
            }
        });
    } else if src.dtype.is_float() || matches!(scalar, Scalar::Float(_)) {
        let v = scalar.to_f64();
        each(&src, &src, &dst, |i, _| unsafe {
            op.holds(load_f64(s.get(), src.dtype, i), v)
        });
    } else {
        let v = scalar.to_i64();
        each(&src, &src, &dst, |i, _| unsafe {
            op.holds(load_i64(s.get(), src.dtype, i), v)
        });
    }
}
