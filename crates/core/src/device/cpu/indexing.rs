//! Host kernels that pick elements by index or by mask: where, masked_fill, triu/tril, gather, scatter_add.
//!
//! They go through f64 (float destinations) or i64 (the others), which holds every value of the
//! smaller dtypes exactly, so a copy through them is a copy.

use crate::device::backend::Operand;
use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64, store_scalar};
use torchlet_alloc::types::{Layout, Result, Scalar};

use super::parallel::offsets;

/// Copy element `s` of `src` to element `d` of `dst`, converting dtype.
unsafe fn move_elem(src: &Operand, s: usize, dst: &Operand, d: usize) {
    let (sp, dp) = (src.ptr as *const u8, dst.ptr as *mut u8);
    if dst.dtype.is_float() {
        store_f64(dp, dst.dtype, d, load_f64(sp, src.dtype, s));
    } else {
        store_i64(dp, dst.dtype, d, load_i64(sp, src.dtype, s));
    }
}

/// `layout` seen over `shape` with `dim`'s stride zeroed: the offset of each position but for
/// `dim`, whose index comes from an index tensor.
fn without_dim(layout: &Layout, shape: &[usize], dim: usize) -> Layout {
    let mut strides = layout.strides.clone();
    strides[dim] = 0;
    Layout {
        shape: shape.to_vec(),
        strides,
        offset: layout.offset,
    }
}

/// `dst = cond ? a : b`.
pub fn where_select(cond: Operand, a: Operand, b: Operand, dst: Operand) -> Result<()> {
    let n = dst.layout.numel();
    let it = offsets(dst.layout, 0, n).zip(offsets(cond.layout, 0, n));
    let it = it.zip(offsets(a.layout, 0, n).zip(offsets(b.layout, 0, n)));
    for ((d, c), (ia, ib)) in it {
        unsafe {
            if load_i64(cond.ptr as *const u8, cond.dtype, c) != 0 {
                move_elem(&a, ia, &dst, d);
            } else {
                move_elem(&b, ib, &dst, d);
            }
        }
    }
    Ok(())
}

/// `dst[i] = value` where `mask[i]`.
pub fn masked_fill(dst: Operand, mask: Operand, value: Scalar) -> Result<()> {
    let n = dst.layout.numel();
    for (d, m) in offsets(dst.layout, 0, n).zip(offsets(mask.layout, 0, n)) {
        unsafe {
            if load_i64(mask.ptr as *const u8, mask.dtype, m) != 0 {
                store_scalar(dst.ptr as *mut u8, dst.dtype, d, value);
            }
        }
    }
    Ok(())
}

/// `dst = src` inside the triangle of the last two dims, zero outside.
pub fn triangle(src: Operand, diagonal: i64, upper: bool, dst: Operand) -> Result<()> {
    let shape = &dst.layout.shape;
    let (rows, cols) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let n = dst.layout.numel();
    let it = offsets(dst.layout, 0, n).zip(offsets(src.layout, 0, n));
    for (i, (d, s)) in it.enumerate() {
        let (row, col) = (((i / cols) % rows) as i64, (i % cols) as i64);
        let keep = if upper {
            col - row >= diagonal
        } else {
            col - row <= diagonal
        };
        unsafe {
            if keep {
                move_elem(&src, s, &dst, d);
            } else {
                store_scalar(dst.ptr as *mut u8, dst.dtype, d, Scalar::Int(0));
            }
        }
    }
    Ok(())
}

/// `dst[p] = src[p with dim replaced by index[p]]`.
pub fn gather(src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
    let n = dst.layout.numel();
    let base = without_dim(src.layout, &dst.layout.shape, dim);
    let step = src.layout.strides[dim];
    let it = offsets(dst.layout, 0, n).zip(offsets(index.layout, 0, n));
    for ((d, ix), s) in it.zip(offsets(&base, 0, n)) {
        unsafe {
            let k = load_i64(index.ptr as *const u8, index.dtype, ix) as usize;
            move_elem(&src, s + k * step, &dst, d);
        }
    }
    Ok(())
}

/// `dst[p with dim replaced by index[p]] += src[p]`.
pub fn scatter_add(src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
    let n = src.layout.numel();
    let base = without_dim(dst.layout, &src.layout.shape, dim);
    let step = dst.layout.strides[dim];
    let (sp, dp) = (src.ptr as *const u8, dst.ptr as *mut u8);
    let it = offsets(src.layout, 0, n).zip(offsets(index.layout, 0, n));
    for ((s, ix), d) in it.zip(offsets(&base, 0, n)) {
        unsafe {
            let k = load_i64(index.ptr as *const u8, index.dtype, ix) as usize;
            let at = d + k * step;
            if dst.dtype.is_float() {
                let v = load_f64(dp, dst.dtype, at) + load_f64(sp, src.dtype, s);
                store_f64(dp, dst.dtype, at, v);
            } else {
                let v = load_i64(dp, dst.dtype, at).wrapping_add(load_i64(sp, src.dtype, s));
                store_i64(dp, dst.dtype, at, v);
            }
        }
    }
    Ok(())
}
