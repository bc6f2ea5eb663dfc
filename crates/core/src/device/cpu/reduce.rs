//! Host kernels that combine elements along a dimension: reductions, softmax, NLL loss, scatter.

use rayon::prelude::*;

use crate::device::backend::{Operand, ReduceOp, ReduceOut};
use crate::device::reduction::{Finish, Fold};
use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64};
use torchlet_alloc::types::{DType, Layout, OffsetIter, Result};

use super::parallel::{offsets, SendPtr, PARALLEL_MIN};

/// Split `src` into the layout of the kept dims (one position per output) and the layout of the
/// reduced dims (relative to each output's base offset, so its offset is 0).
pub(super) fn split_dims(src: &Layout, dims: &[usize]) -> (Layout, Layout) {
    let mut outer = Layout {
        shape: vec![],
        strides: vec![],
        offset: src.offset,
    };
    let mut inner = Layout {
        shape: vec![],
        strides: vec![],
        offset: 0,
    };
    for d in 0..src.ndim() {
        let target = if dims.contains(&d) {
            &mut inner
        } else {
            &mut outer
        };
        target.shape.push(src.shape[d]);
        target.strides.push(src.strides[d]);
    }
    (outer, inner)
}

/// `src` with `dim` removed, plus the length and stride along `dim`.
fn split(src: &Layout, dim: Option<usize>) -> (Layout, usize, usize) {
    let d = dim.expect("a line-wise kernel has a dim");
    let mut outer = src.clone();
    let len = outer.shape.remove(d);
    let stride = outer.strides.remove(d);
    (outer, len, stride)
}

/// Accumulated state of one reduction: the folded value (in f64 for float inputs, in i64 for
/// integer ones, whose f64 copy a selecting fold keeps too) and, for a selecting fold, where
/// that value came from.
#[derive(Clone, Copy)]
pub(super) struct Acc {
    pub(super) value: f64,
    pub(super) ivalue: i64,
    pub(super) arg: usize,
    pub(super) n: usize,
}

impl Acc {
    pub(super) fn new(op: ReduceOp) -> Acc {
        let fold = op.fold();
        Acc {
            value: fold.start_f64(),
            ivalue: fold.start_i64(),
            arg: usize::MAX,
            n: 0,
        }
    }

    /// Fold element number `k` (its position along the reduction) into the state.
    #[inline]
    pub(super) fn push(&mut self, op: ReduceOp, float: bool, v: f64, iv: i64, k: usize) {
        let fold = op.fold();
        if fold.selects() {
            // NaN wins and stays, and the first of equal values, as in PyTorch.
            let better = if float {
                fold.prefers_f64(v, self.value)
            } else {
                fold.prefers_i64(iv, self.ivalue)
            };
            if better || self.arg == usize::MAX {
                self.value = v;
                self.ivalue = iv;
                self.arg = k;
            }
        } else {
            self.value = fold.f64(self.value, v);
            self.ivalue = fold.i64(self.ivalue, iv);
        }
        self.n += 1;
    }

    /// Merge a state that covered later elements.
    pub(super) fn merge(mut self, op: ReduceOp, float: bool, other: Acc) -> Acc {
        if other.n == 0 {
            return self;
        }
        let fold = op.fold();
        let n = self.n + other.n;
        if fold.selects() {
            self.push(op, float, other.value, other.ivalue, other.arg);
        } else {
            self.value = fold.f64(self.value, other.value);
            self.ivalue = fold.i64(self.ivalue, other.ivalue);
        }
        self.n = n;
        self
    }
}

/// Element `o` of `src` as (f64, i64): floats in the first, integers in both.
#[inline]
pub(super) fn load(src: &Operand, float: bool, o: usize) -> (f64, i64) {
    // SAFETY: callers pass offsets inside the operand's view.
    unsafe {
        if float {
            (load_f64(src.ptr as *const u8, src.dtype, o), 0)
        } else {
            let i = load_i64(src.ptr as *const u8, src.dtype, o);
            (i as f64, i)
        }
    }
}

/// Write output `i` (of `len` inputs each) from its state: the value or index into `dst`, and
/// the index into `indices` when there are any.
pub(super) fn store(op: ReduceOp, float: bool, out: &ReduceOut, i: usize, acc: &Acc, len: usize) {
    let (dst, d) = (out.dst, out.dst.ptr as *mut u8);
    let at = dst.layout.offset + i;
    // SAFETY: `dst` (and `indices`) are contiguous keepdim outputs with one element per output.
    unsafe {
        match op.finish() {
            Finish::Index => store_i64(d, dst.dtype, at, acc.arg as i64),
            Finish::Mean => store_f64(d, dst.dtype, at, acc.value / len as f64),
            Finish::Value if float => store_f64(d, dst.dtype, at, acc.value),
            Finish::Value => store_i64(d, dst.dtype, at, acc.ivalue),
        }
        if let Some(ix) = out.indices {
            let at = ix.layout.offset + i;
            store_i64(ix.ptr as *mut u8, ix.dtype, at, acc.arg as i64);
        }
    }
}

/// Reduce `src` over `dims` into `out` (contiguous and keepdim-shaped); with staging memory,
/// through it as PyTorch's kernel does (`staged`).
pub fn reduce(op: ReduceOp, src: Operand, dims: &[usize], out: ReduceOut) -> Result<()> {
    if let Some(mem) = out.staging {
        return super::staged::reduce(op, src, dims, out, mem);
    }
    let (outer, inner) = split_dims(src.layout, dims);
    let float = src.dtype.is_float();
    let n_out = outer.numel();
    let len = inner.numel();
    let write = |i: usize, acc: Acc| store(op, float, &out, i, &acc, len);
    let one_sum = n_out == 1 && op.fold() == Fold::Sum;
    if one_sum && src.layout.is_contiguous() {
        if let Some(sum) = contiguous_float_sum(&src) {
            let mut acc = Acc::new(op);
            acc.value = sum;
            acc.n = len;
            write(0, acc);
            return Ok(());
        }
    }
    if n_out == 1 {
        // One output: split the input itself across threads, then merge in order.
        let base = outer.offset;
        let chunk = PARALLEL_MIN;
        let chunks = len.div_ceil(chunk).max(1);
        let part = |c: usize| {
            let start = c * chunk;
            let mut acc = Acc::new(op);
            for (k, o) in offsets(&inner, start, chunk.min(len.saturating_sub(start))).enumerate() {
                let (v, iv) = load(&src, float, base + o);
                acc.push(op, float, v, iv, start + k);
            }
            acc
        };
        let parts: Vec<Acc> = if chunks > 1 {
            (0..chunks).into_par_iter().map(part).collect()
        } else {
            vec![part(0)]
        };
        let acc = parts
            .into_iter()
            .fold(Acc::new(op), |a, b| a.merge(op, float, b));
        write(0, acc);
        return Ok(());
    }
    let run = |start: usize, count: usize| {
        for (i, base) in offsets(&outer, start, count).enumerate() {
            let mut acc = Acc::new(op);
            for (k, o) in OffsetIter::new(&inner).enumerate() {
                let (v, iv) = load(&src, float, base + o);
                acc.push(op, float, v, iv, k);
            }
            write(start + i, acc);
        }
    };
    if n_out * len < PARALLEL_MIN {
        run(0, n_out);
    } else {
        let chunk =
            (PARALLEL_MIN / len.max(1)).clamp(1, n_out.div_ceil(rayon::current_num_threads()));
        let chunks = n_out.div_ceil(chunk);
        (0..chunks).into_par_iter().for_each(|c| {
            let start = c * chunk;
            run(start, chunk.min(n_out - start));
        });
    }
    Ok(())
}

/// The f64 sum of a contiguous f32/f64 operand (typed loops, threads for large ones), or
/// `None` for other dtypes.
fn contiguous_float_sum(src: &Operand) -> Option<f64> {
    let (n, off) = (src.layout.numel(), src.layout.offset);
    if !matches!(src.dtype, DType::F32 | DType::F64) {
        return None;
    }
    if n < PARALLEL_MIN {
        return dense_float_sum(src, off, n);
    }
    let chunk = PARALLEL_MIN;
    let parts = (0..n.div_ceil(chunk))
        .into_par_iter()
        .map(|c| dense_float_sum(src, off + c * chunk, chunk.min(n - c * chunk)))
        .collect::<Option<Vec<f64>>>()?;
    Some(parts.into_iter().sum())
}

/// The f64 sum of the `len` f32/f64 elements of `src`'s storage from element `start` on (a typed
/// loop), or `None` for other dtypes.
pub(super) fn dense_float_sum(src: &Operand, start: usize, len: usize) -> Option<f64> {
    fn sum<T: Copy + Into<f64>>(p: *const T, len: usize) -> f64 {
        // SAFETY: the caller's range lies inside the operand's storage.
        (0..len).map(|i| unsafe { (*p.add(i)).into() }).sum()
    }
    match src.dtype {
        DType::F32 => Some(sum((src.ptr as *const f32).wrapping_add(start), len)),
        DType::F64 => Some(sum((src.ptr as *const f64).wrapping_add(start), len)),
        _ => None,
    }
}

/// Visit each line along `dim` of `layout`: `f(line_index, base_offset, stride, len)`.
fn lines(layout: &Layout, dim: usize, f: impl Fn(usize, usize, usize, usize) + Sync + Send) {
    let (outer, len, stride) = split(layout, Some(dim));
    let n = outer.numel();
    let work = |start: usize, count: usize| {
        for (i, base) in offsets(&outer, start, count).enumerate() {
            f(start + i, base, stride, len);
        }
    };
    if n * len < PARALLEL_MIN {
        work(0, n);
    } else {
        (0..n).into_par_iter().for_each(|i| work(i, 1));
    }
}

/// (Log-)softmax along `dim`; `dst` has `src`'s shape.
pub fn softmax(src: Operand, dim: usize, log: bool, dst: Operand) -> Result<()> {
    let (s, d) = (SendPtr(src.ptr as usize), SendPtr(dst.ptr as usize));
    let (outer_d, _, dstride) = split(dst.layout, Some(dim));
    lines(src.layout, dim, |i, base, stride, len| unsafe {
        let dbase = outer_d.index_of(i);
        let x = |k: usize| load_f64(s.get(), src.dtype, base + k * stride);
        let max = (0..len).map(x).fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = (0..len).map(|k| (x(k) - max).exp()).sum();
        for k in 0..len {
            let v = if log {
                x(k) - max - sum.ln()
            } else {
                (x(k) - max).exp() / sum
            };
            store_f64(d.get(), dst.dtype, dbase + k * dstride, v);
        }
    });
    Ok(())
}

/// Softmax backward: `dx = y * (g - sum(g*y))`; log-softmax: `dx = g - exp(y) * sum(g)`.
pub fn softmax_backward(
    grad: Operand,
    output: Operand,
    dim: usize,
    log: bool,
    dst: Operand,
) -> Result<()> {
    let (g, y, d) = (
        SendPtr(grad.ptr as usize),
        SendPtr(output.ptr as usize),
        SendPtr(dst.ptr as usize),
    );
    let (outer_g, _, gstride) = split(grad.layout, Some(dim));
    let (outer_d, _, dstride) = split(dst.layout, Some(dim));
    lines(output.layout, dim, |i, base, stride, len| unsafe {
        let (gb, db) = (outer_g.index_of(i), outer_d.index_of(i));
        let gv = |k: usize| load_f64(g.get(), grad.dtype, gb + k * gstride);
        let yv = |k: usize| load_f64(y.get(), output.dtype, base + k * stride);
        if log {
            let sum: f64 = (0..len).map(gv).sum();
            for k in 0..len {
                store_f64(
                    d.get(),
                    dst.dtype,
                    db + k * dstride,
                    gv(k) - yv(k).exp() * sum,
                );
            }
        } else {
            let dot: f64 = (0..len).map(|k| gv(k) * yv(k)).sum();
            for k in 0..len {
                store_f64(d.get(), dst.dtype, db + k * dstride, yv(k) * (gv(k) - dot));
            }
        }
    });
    Ok(())
}

/// `dst[0] = -mean logp[i, target[i]]` over the rows whose target is not `ignore_index`, and
/// `total_weight[0]` = their number.
pub fn nll_loss(
    logp: Operand,
    target: Operand,
    ignore_index: i64,
    dst: Operand,
    total_weight: Operand,
) -> Result<()> {
    let n = logp.layout.shape[0];
    let (rs, cs) = (logp.layout.strides[0], logp.layout.strides[1]);
    let (mut sum, mut weight) = (0.0, 0.0);
    for (i, t) in offsets(target.layout, 0, n).enumerate() {
        unsafe {
            let c = load_i64(target.ptr as *const u8, target.dtype, t);
            if c == ignore_index {
                continue;
            }
            let at = logp.layout.offset + i * rs + c as usize * cs;
            sum += load_f64(logp.ptr as *const u8, logp.dtype, at);
            weight += 1.0;
        }
    }
    unsafe {
        store_f64(
            dst.ptr as *mut u8,
            dst.dtype,
            dst.layout.offset,
            -sum / weight,
        );
        let at = total_weight.layout.offset;
        store_f64(total_weight.ptr as *mut u8, total_weight.dtype, at, weight);
    };
    Ok(())
}

/// `dst` [n, c] = 0 except `dst[i, target[i]] = -grad / total_weight` where the target is not
/// `ignore_index`.
pub fn nll_loss_backward(
    grad: Operand,
    target: Operand,
    ignore_index: i64,
    total_weight: Operand,
    dst: Operand,
) -> Result<()> {
    super::elementwise::fill(dst, torchlet_alloc::types::Scalar::Float(0.0))?;
    let n = dst.layout.shape[0];
    let (rs, cs) = (dst.layout.strides[0], dst.layout.strides[1]);
    unsafe {
        let g = load_f64(grad.ptr as *const u8, grad.dtype, grad.layout.offset);
        let w = total_weight.layout.offset;
        let w = load_f64(total_weight.ptr as *const u8, total_weight.dtype, w);
        for (i, t) in offsets(target.layout, 0, n).enumerate() {
            let c = load_i64(target.ptr as *const u8, target.dtype, t);
            if c == ignore_index {
                continue;
            }
            let at = dst.layout.offset + i * rs + c as usize * cs;
            store_f64(dst.ptr as *mut u8, dst.dtype, at, -g / w);
        }
    }
    Ok(())
}

/// `dst[.., index[..], ..] = src[..]` along `dim`.
pub fn scatter(src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
    let n = src.layout.numel();
    let shape = &src.layout.shape;
    let mut pos = vec![0usize; shape.len()];
    let it = offsets(src.layout, 0, n).zip(offsets(index.layout, 0, n));
    for (s, ix) in it {
        unsafe {
            let k = load_i64(index.ptr as *const u8, index.dtype, ix) as usize;
            let mut at = dst.layout.offset;
            for (d, &p) in pos.iter().enumerate() {
                at += if d == dim { k } else { p } * dst.layout.strides[d];
            }
            let v = load_f64(src.ptr as *const u8, src.dtype, s);
            store_f64(dst.ptr as *mut u8, dst.dtype, at, v);
        }
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(())
}
