//! Host kernels for elementwise work: copy/cast, fill, arange, unary and binary ops.
//!
//! Each kernel has a fast path for contiguous f32/f64 operands of one dtype (vectorisable loops,
//! threads for large tensors) and a general strided path that converts through f64 (float
//! destinations) or i64 (integer and bool destinations).

use crate::device::backend::{BinaryOp, Operand, UnaryOp};
use crate::tensor::element::{load_f64, load_i64, store_f64, store_i64, store_scalar};
use crate::tensor::{DType, Layout, Result, Scalar};
use rayon::prelude::*;

use super::parallel::{for_chunks, offsets, SendPtr, PARALLEL_MIN};

/// Float types the fast paths are written for.
trait HostFloat: Copy + Send + Sync + 'static {}
impl HostFloat for f32 {}
impl HostFloat for f64 {}

fn contiguous_same(a: &Operand, b: &Operand) -> bool {
    a.dtype == b.dtype && a.layout.is_contiguous() && b.layout.is_contiguous()
}

/// Map `src` into `dst` (both contiguous, `T` elements) with `f`, in parallel when large.
fn map1<T: HostFloat>(src: &Operand, dst: &Operand, f: impl Fn(T) -> T + Sync + Send) {
    let s = SendPtr(src.ptr as usize + src.layout.offset * std::mem::size_of::<T>());
    let d = SendPtr(dst.ptr as usize + dst.layout.offset * std::mem::size_of::<T>());
    // Raw pointers, not slices: in-place ops pass the same memory as source and destination.
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        let s = (s.get() as *const T).add(start);
        let d = (d.get() as *mut T).add(start);
        for j in 0..len {
            *d.add(j) = f(*s.add(j));
        }
    });
}

/// Map `lhs`, `rhs` into `dst` (all contiguous, `T` elements) with `f`.
fn map2<T: HostFloat>(
    lhs: &Operand,
    rhs: &Operand,
    dst: &Operand,
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    let size = std::mem::size_of::<T>();
    let a = SendPtr(lhs.ptr as usize + lhs.layout.offset * size);
    let b = SendPtr(rhs.ptr as usize + rhs.layout.offset * size);
    let d = SendPtr(dst.ptr as usize + dst.layout.offset * size);
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        let a = (a.get() as *const T).add(start);
        let b = (b.get() as *const T).add(start);
        let d = (d.get() as *mut T).add(start);
        for j in 0..len {
            *d.add(j) = f(*a.add(j), *b.add(j));
        }
    });
}

/// Strided map of one operand through f64 or i64, by the destination's dtype.
fn general1(
    src: &Operand,
    dst: &Operand,
    ff: impl Fn(f64) -> f64 + Sync,
    fi: impl Fn(i64) -> i64 + Sync,
) {
    let (s, d) = (SendPtr(src.ptr as usize), SendPtr(dst.ptr as usize));
    let float = dst.dtype.is_float() || src.dtype.is_float() && dst.dtype == DType::Bool;
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        let it = offsets(src.layout, start, len).zip(offsets(dst.layout, start, len));
        for (i, o) in it {
            if float {
                store_f64(d.get(), dst.dtype, o, ff(load_f64(s.get(), src.dtype, i)));
            } else {
                store_i64(d.get(), dst.dtype, o, fi(load_i64(s.get(), src.dtype, i)));
            }
        }
    });
}

/// `dst = src`, converting dtype, any layouts.
pub fn copy(src: Operand, dst: Operand) -> Result<()> {
    if contiguous_same(&src, &dst) {
        let size = src.dtype.size();
        let n = dst.layout.numel() * size;
        let s = SendPtr(src.ptr as usize + src.layout.offset * size);
        let d = SendPtr(dst.ptr as usize + dst.layout.offset * size);
        for_chunks(n, |start, len| unsafe {
            std::ptr::copy_nonoverlapping(s.get().add(start), d.get().add(start), len);
        });
        return Ok(());
    }
    general1(&src, &dst, |x| x, |x| x);
    Ok(())
}

/// Every element of `dst` = `value`.
pub fn fill(dst: Operand, value: Scalar) -> Result<()> {
    let d = SendPtr(dst.ptr as usize);
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        for o in offsets(dst.layout, start, len) {
            store_scalar(d.get(), dst.dtype, o, value);
        }
    });
    Ok(())
}

/// `dst[i] = start + i * step` (contiguous `dst`).
pub fn arange(dst: Operand, start: f64, step: f64) -> Result<()> {
    let d = SendPtr(dst.ptr as usize);
    let base = dst.layout.offset;
    for_chunks(dst.layout.numel(), |s, len| unsafe {
        for i in s..s + len {
            store_f64(d.get(), dst.dtype, base + i, start + i as f64 * step);
        }
    });
    Ok(())
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn clamp(x: f64, min: Option<f64>, max: Option<f64>) -> f64 {
    if x.is_nan() {
        return x;
    }
    let x = min.map_or(x, |m| x.max(m));
    max.map_or(x, |m| x.min(m))
}

/// The f64 form of a unary op.
fn unary_f64(op: UnaryOp) -> impl Fn(f64) -> f64 + Sync + Send {
    move |x: f64| match op {
        UnaryOp::Neg => -x,
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Abs => x.abs(),
        UnaryOp::Relu => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
        UnaryOp::Sigmoid => sigmoid(x),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x * 0.0
            }
        }
        UnaryOp::Clamp { min, max } => clamp(x, min, max),
        UnaryOp::PowScalar(e) => x.powf(e),
    }
}

/// The i64 form of a unary op (integer dtypes keep integer results).
fn unary_i64(op: UnaryOp) -> impl Fn(i64) -> i64 + Sync + Send {
    move |x: i64| match op {
        UnaryOp::Neg => x.wrapping_neg(),
        UnaryOp::Abs => x.wrapping_abs(),
        UnaryOp::Relu => x.max(0),
        UnaryOp::Sign => x.signum(),
        UnaryOp::Clamp { min, max } => {
            let x = min.map_or(x, |m| x.max(m as i64));
            max.map_or(x, |m| x.min(m as i64))
        }
        UnaryOp::PowScalar(e) => (x as f64).powf(e) as i64,
        other => unary_f64(other)(x as f64) as i64,
    }
}

/// Fast f32 forms of the common unary ops, computed in f32 as PyTorch does.
fn unary_f32_fast(op: UnaryOp, src: &Operand, dst: &Operand) -> bool {
    match op {
        UnaryOp::Neg => map1::<f32>(src, dst, |x| -x),
        UnaryOp::Exp => map1::<f32>(src, dst, |x| x.exp()),
        UnaryOp::Log => map1::<f32>(src, dst, |x| x.ln()),
        UnaryOp::Sqrt => map1::<f32>(src, dst, |x| x.sqrt()),
        UnaryOp::Abs => map1::<f32>(src, dst, |x| x.abs()),
        UnaryOp::Relu => map1::<f32>(src, dst, |x| if x > 0.0 || x.is_nan() { x } else { 0.0 }),
        UnaryOp::Sigmoid => map1::<f32>(src, dst, |x| 1.0 / (1.0 + (-x).exp())),
        UnaryOp::Tanh => map1::<f32>(src, dst, |x| x.tanh()),
        UnaryOp::Sin => map1::<f32>(src, dst, |x| x.sin()),
        UnaryOp::Cos => map1::<f32>(src, dst, |x| x.cos()),
        _ => return false,
    }
    true
}

/// `dst = op(src)`.
pub fn unary(op: UnaryOp, src: Operand, dst: Operand) -> Result<()> {
    if contiguous_same(&src, &dst) {
        match dst.dtype {
            DType::F32 if unary_f32_fast(op, &src, &dst) => return Ok(()),
            DType::F64 => {
                map1::<f64>(&src, &dst, unary_f64(op));
                return Ok(());
            }
            _ => {}
        }
    }
    general1(&src, &dst, unary_f64(op), unary_i64(op));
    Ok(())
}

/// The f64 form of a binary op.
fn binary_f64(op: BinaryOp) -> impl Fn(f64, f64) -> f64 + Sync + Send {
    move |a: f64, b: f64| match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            super::compare::holds(op, a, b) as u8 as f64
        }
        BinaryOp::ReluBackward => {
            if b > 0.0 {
                a
            } else {
                0.0
            }
        }
        BinaryOp::SigmoidBackward => a * b * (1.0 - b),
        BinaryOp::TanhBackward => a * (1.0 - b * b),
        BinaryOp::ClampBackward { min, max } => {
            if min.is_none_or(|m| b >= m) && max.is_none_or(|m| b <= m) {
                a
            } else {
                0.0
            }
        }
    }
}

/// The i64 form of a binary op (integer and bool destinations).
fn binary_i64(op: BinaryOp, bool_dst: bool) -> impl Fn(i64, i64) -> i64 + Sync + Send {
    move |a: i64, b: i64| match op {
        BinaryOp::Add if bool_dst => ((a != 0) | (b != 0)) as i64,
        BinaryOp::Mul if bool_dst => ((a != 0) & (b != 0)) as i64,
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Pow => {
            if b >= 0 {
                a.wrapping_pow(b.min(u32::MAX as i64) as u32)
            } else {
                0
            }
        }
        cmp if cmp.is_comparison() => super::compare::holds(cmp, a, b) as i64,
        other => binary_f64(other)(a as f64, b as f64) as i64,
    }
}

/// Apply the fast f32 path when every operand is contiguous f32; false when it does not apply.
fn binary_f32_fast(op: BinaryOp, lhs: &Operand, rhs: &Operand, dst: &Operand) -> bool {
    match op {
        BinaryOp::Add => map2::<f32>(lhs, rhs, dst, |a, b| a + b),
        BinaryOp::Sub => map2::<f32>(lhs, rhs, dst, |a, b| a - b),
        BinaryOp::Mul => map2::<f32>(lhs, rhs, dst, |a, b| a * b),
        BinaryOp::Div => map2::<f32>(lhs, rhs, dst, |a, b| a / b),
        BinaryOp::ReluBackward => map2::<f32>(lhs, rhs, dst, |a, b| if b > 0.0 { a } else { 0.0 }),
        _ => return false,
    }
    true
}

/// The layout without its last dim (one position per row).
fn rows_of(l: &Layout) -> Layout {
    let n = l.ndim() - 1;
    Layout {
        shape: l.shape[..n].to_vec(),
        strides: l.strides[..n].to_vec(),
        offset: l.offset,
    }
}

/// Row by row over f32 operands broadcast along any dims (bias adds, row scales): the inner loop
/// stays typed and vectorisable where the general path would convert every element.
fn rows_f32(
    lhs: &Operand,
    rhs: &Operand,
    dst: &Operand,
    f: impl Fn(f32, f32) -> f32 + Sync + Send,
) {
    let nd = dst.layout.ndim();
    let n = dst.layout.shape[nd - 1];
    let rows = dst.layout.numel() / n;
    let (la, lb) = (rows_of(lhs.layout), rows_of(rhs.layout));
    let (sa, sb) = (lhs.layout.strides[nd - 1], rhs.layout.strides[nd - 1]);
    let (a, b, d) = (
        SendPtr(lhs.ptr as usize),
        SendPtr(rhs.ptr as usize),
        SendPtr(dst.ptr as usize),
    );
    let d0 = dst.layout.offset;
    let run = |start: usize, count: usize| unsafe {
        let (ap, bp) = (a.get() as *const f32, b.get() as *const f32);
        for (r, (oa, ob)) in offsets(&la, start, count)
            .zip(offsets(&lb, start, count))
            .enumerate()
        {
            let out = (d.get() as *mut f32).add(d0 + (start + r) * n);
            let (x, y) = (ap.add(oa), bp.add(ob));
            match (sa, sb) {
                (1, 1) => {
                    for j in 0..n {
                        *out.add(j) = f(*x.add(j), *y.add(j));
                    }
                }
                (1, 0) => {
                    let y = *y;
                    for j in 0..n {
                        *out.add(j) = f(*x.add(j), y);
                    }
                }
                (0, 1) => {
                    let x = *x;
                    for j in 0..n {
                        *out.add(j) = f(x, *y.add(j));
                    }
                }
                _ => {
                    for j in 0..n {
                        *out.add(j) = f(*x.add(j * sa), *y.add(j * sb));
                    }
                }
            }
        }
    };
    if rows * n < PARALLEL_MIN {
        run(0, rows);
    } else {
        let chunk = (PARALLEL_MIN / 4 / n).max(1);
        (0..rows.div_ceil(chunk)).into_par_iter().for_each(|c| {
            let start = c * chunk;
            run(start, chunk.min(rows - start));
        });
    }
}

/// The typed f32 row path for the ops it covers; false when it does not apply.
fn binary_f32_rows(op: BinaryOp, lhs: &Operand, rhs: &Operand, dst: &Operand) -> bool {
    let all_f32 = lhs.dtype == DType::F32 && rhs.dtype == DType::F32 && dst.dtype == DType::F32;
    if !all_f32 || !dst.layout.is_contiguous() || dst.layout.ndim() == 0 || dst.layout.numel() == 0
    {
        return false;
    }
    match op {
        BinaryOp::Add => rows_f32(lhs, rhs, dst, |a, b| a + b),
        BinaryOp::Sub => rows_f32(lhs, rhs, dst, |a, b| a - b),
        BinaryOp::Mul => rows_f32(lhs, rhs, dst, |a, b| a * b),
        BinaryOp::Div => rows_f32(lhs, rhs, dst, |a, b| a / b),
        BinaryOp::ReluBackward => rows_f32(lhs, rhs, dst, |a, b| if b > 0.0 { a } else { 0.0 }),
        _ => return false,
    }
    true
}

/// `dst = lhs op rhs`, operands broadcast to `dst`'s shape.
pub fn binary(op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
    if op.is_comparison() {
        super::compare::compare(op, lhs, rhs, dst);
        return Ok(());
    }
    if contiguous_same(&lhs, &dst) && contiguous_same(&rhs, &dst) {
        match dst.dtype {
            DType::F32 if binary_f32_fast(op, &lhs, &rhs, &dst) => return Ok(()),
            DType::F64 => {
                map2::<f64>(&lhs, &rhs, &dst, binary_f64(op));
                return Ok(());
            }
            _ => {}
        }
    }
    if binary_f32_rows(op, &lhs, &rhs, &dst) {
        return Ok(());
    }
    let (a, b, d) = (
        SendPtr(lhs.ptr as usize),
        SendPtr(rhs.ptr as usize),
        SendPtr(dst.ptr as usize),
    );
    let float = dst.dtype.is_float();
    let ff = binary_f64(op);
    let fi = binary_i64(op, dst.dtype == DType::Bool);
    for_chunks(dst.layout.numel(), |start, len| unsafe {
        let it = offsets(lhs.layout, start, len)
            .zip(offsets(rhs.layout, start, len))
            .zip(offsets(dst.layout, start, len));
        for ((i, j), o) in it {
            if float {
                let v = ff(
                    load_f64(a.get(), lhs.dtype, i),
                    load_f64(b.get(), rhs.dtype, j),
                );
                store_f64(d.get(), dst.dtype, o, v);
            } else {
                let v = fi(
                    load_i64(a.get(), lhs.dtype, i),
                    load_i64(b.get(), rhs.dtype, j),
                );
                store_i64(d.get(), dst.dtype, o, v);
            }
        }
    });
    Ok(())
}

/// `dst = src op scalar` (or `scalar op src`).
pub fn binary_scalar(
    op: BinaryOp,
    src: Operand,
    scalar: Scalar,
    scalar_first: bool,
    dst: Operand,
) -> Result<()> {
    if op.is_comparison() {
        super::compare::compare_scalar(op, src, scalar, scalar_first, dst);
        return Ok(());
    }
    let ff = binary_f64(op);
    if contiguous_same(&src, &dst) && dst.dtype == DType::F32 {
        // Compute in f32 like PyTorch's CPU kernels; the scalar is rounded to f32 first.
        let s = scalar.to_f64() as f32;
        match (op, scalar_first) {
            (BinaryOp::Add, _) => map1::<f32>(&src, &dst, move |x| x + s),
            (BinaryOp::Mul, _) => map1::<f32>(&src, &dst, move |x| x * s),
            (BinaryOp::Sub, false) => map1::<f32>(&src, &dst, move |x| x - s),
            (BinaryOp::Sub, true) => map1::<f32>(&src, &dst, move |x| s - x),
            (BinaryOp::Div, false) => map1::<f32>(&src, &dst, move |x| x / s),
            (BinaryOp::Div, true) => map1::<f32>(&src, &dst, move |x| s / x),
            _ => map1::<f32>(&src, &dst, move |x| {
                let (a, b) = if scalar_first { (s, x) } else { (x, s) };
                ff(a as f64, b as f64) as f32
            }),
        }
        return Ok(());
    }
    let sf = scalar.to_f64();
    let si = scalar.to_i64();
    let fi = binary_i64(op, dst.dtype == DType::Bool);
    let ff2 = move |x: f64| if scalar_first { ff(sf, x) } else { ff(x, sf) };
    let fi2 = move |x: i64| if scalar_first { fi(si, x) } else { fi(x, si) };
    if contiguous_same(&src, &dst) && dst.dtype == DType::F64 {
        map1::<f64>(&src, &dst, ff2);
        return Ok(());
    }
    general1(&src, &dst, ff2, fi2);
    Ok(())
}
