//! Host kernels for elementwise work: copy/cast, fill, arange, unary and binary ops.
//!
//! Each kernel has a fast path for contiguous f32/f64 operands of one dtype (vectorisable loops,
//! threads for large tensors) and a general strided path that converts through f64 (float
//! destinations) or i64 (integer and bool destinations).

use crate::device::backend::{BinaryOp, Operand, UnaryOp};
use crate::device::ops::{MapF32, MapF32x2};
use rayon::prelude::*;
use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64, store_scalar};
use torchlet_alloc::types::{DType, Layout, Result, Scalar};

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

/// Runs `map1` over f32 operands with the formula the op table hands it.
struct Map1<'a>(&'a Operand<'a>, &'a Operand<'a>);
impl MapF32 for Map1<'_> {
    fn map<F: Fn(f32) -> f32 + Sync + Send + Copy>(self, f: F) {
        map1::<f32>(self.0, self.1, f)
    }
}

/// Runs `map2` over f32 operands with the formula the op table hands it.
struct Map2<'a>(&'a Operand<'a>, &'a Operand<'a>, &'a Operand<'a>);
impl MapF32x2 for Map2<'_> {
    fn map<F: Fn(f32, f32) -> f32 + Sync + Send + Copy>(self, f: F) {
        map2::<f32>(self.0, self.1, self.2, f)
    }
}

/// Runs `rows_f32` with the formula the op table hands it.
struct Rows<'a>(&'a Operand<'a>, &'a Operand<'a>, &'a Operand<'a>);
impl MapF32x2 for Rows<'_> {
    fn map<F: Fn(f32, f32) -> f32 + Sync + Send + Copy>(self, f: F) {
        rows_f32(self.0, self.1, self.2, f)
    }
}

/// `dst = src op s` (or `s op src`) over f32 operands, the scalar rounded to f32 first.
struct MapScalar<'a>(&'a Operand<'a>, &'a Operand<'a>, f32, bool);
impl MapF32x2 for MapScalar<'_> {
    fn map<F: Fn(f32, f32) -> f32 + Sync + Send + Copy>(self, f: F) {
        let s = self.2;
        if self.3 {
            map1::<f32>(self.0, self.1, move |x| f(s, x))
        } else {
            map1::<f32>(self.0, self.1, move |x| f(x, s))
        }
    }
}

/// `dst = op(src)`.
pub fn unary(op: UnaryOp, src: Operand, dst: Operand) -> Result<()> {
    if contiguous_same(&src, &dst) {
        match dst.dtype {
            DType::F32 if op.with_f32(Map1(&src, &dst)) => return Ok(()),
            DType::F64 => {
                map1::<f64>(&src, &dst, move |x| op.eval_f64(x));
                return Ok(());
            }
            _ => {}
        }
    }
    general1(&src, &dst, move |x| op.eval_f64(x), move |x| op.eval_i64(x));
    Ok(())
}

/// The i64 form of a binary op (integer and bool destinations).
fn binary_i64(op: BinaryOp, bool_dst: bool) -> impl Fn(i64, i64) -> i64 + Sync + Send {
    move |a: i64, b: i64| match op {
        BinaryOp::Add if bool_dst => ((a != 0) | (b != 0)) as i64,
        BinaryOp::Mul if bool_dst => ((a != 0) & (b != 0)) as i64,
        _ => op.eval_i64(a, b),
    }
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
    op.with_f32(Rows(lhs, rhs, dst))
}

/// `dst = lhs op rhs`, operands broadcast to `dst`'s shape.
pub fn binary(op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
    if op.is_comparison() {
        super::compare::compare(op, lhs, rhs, dst);
        return Ok(());
    }
    if contiguous_same(&lhs, &dst) && contiguous_same(&rhs, &dst) {
        match dst.dtype {
            DType::F32 if op.with_f32(Map2(&lhs, &rhs, &dst)) => return Ok(()),
            DType::F64 => {
                map2::<f64>(&lhs, &rhs, &dst, move |a, b| op.eval_f64(a, b));
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
    let ff = move |a, b| op.eval_f64(a, b);
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
    let ff = move |a, b| op.eval_f64(a, b);
    if contiguous_same(&src, &dst) && dst.dtype == DType::F32 {
        // Compute in f32 like PyTorch's CPU kernels; the scalar is rounded to f32 first.
        let s = scalar.to_f64() as f32;
        if !op.with_f32(MapScalar(&src, &dst, s, scalar_first)) {
            map1::<f32>(&src, &dst, move |x| {
                let (a, b) = if scalar_first { (s, x) } else { (x, s) };
                ff(a as f64, b as f64) as f32
            });
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
