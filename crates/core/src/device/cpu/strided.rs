//! Element access by index into a strided operand, in f64: the host kernels that walk
//! multi-dimensional windows (attention, convolution, pooling, batch norm) read and write through it.

use crate::device::backend::Operand;
use torchlet_alloc::types::element::{load_f64, store_f64};

/// The storage index of element `idx` of a strided view.
pub fn index(op: &Operand, idx: &[usize]) -> usize {
    let l = op.layout;
    l.offset
        + idx
            .iter()
            .zip(&l.strides)
            .map(|(i, s)| i * s)
            .sum::<usize>()
}

/// Element `idx` of `op`, as f64.
pub fn get(op: &Operand, idx: &[usize]) -> f64 {
    // SAFETY: `idx` lies inside the view's shape, hence inside its storage.
    unsafe { load_f64(op.ptr as *const u8, op.dtype, index(op, idx)) }
}

/// Store `v` (converted to `op`'s dtype) at element `idx`.
pub fn put(op: &Operand, idx: &[usize], v: f64) {
    // SAFETY: as `get`; the tensor layer hands destinations no other view aliases.
    unsafe { store_f64(op.ptr as *mut u8, op.dtype, index(op, idx), v) }
}
