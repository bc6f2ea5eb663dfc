//! The layout of an elementwise op's new output, as PyTorch's TensorIterator chooses it.
//!
//! Note [elementwise output layout]: TensorIterator does not always make its output contiguous.
//! When every input has the output's shape it takes a fast path: all contiguous gives a
//! contiguous output, all channels-last a channels-last one, all dense with the very same strides
//! those strides (`compute_fast_setup_type`). Otherwise it sorts the dims by the inputs' strides
//! (`reorder_dimensions`: an insertion sort from the last dim, asking each input in turn and
//! skipping broadcast dims, equal strides put the smaller dim inner) and lays the output out
//! densely in that order (`allocate_or_resize_outputs`). So `(x * w)` with `x` transposed is
//! transposed too, and a later `.contiguous()` copies in PyTorch exactly when it copies here.

use super::convert::is_dense;
use super::memory_format::empty_in;
use super::{DType, Layout, Result, Tensor};

/// A new tensor of `shape` and `dtype` for the result of an elementwise op on `inputs` (each
/// broadcastable to `shape`), laid out as TensorIterator lays it out.
pub(crate) fn empty_elementwise(
    inputs: &[&Tensor],
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let like = inputs[0];
    if inputs.iter().all(|t| t.dims() == shape) {
        if let Some(fast) = fast_setup(inputs, shape, dtype)? {
            return Ok(fast);
        }
    }
    let perm = iteration_order(inputs, shape);
    // Innermost first, as TensorIterator keeps it; reversed dims are the contiguous layout.
    if perm.iter().rev().copied().eq(0..shape.len()) {
        return like.empty_same(shape, dtype);
    }
    let mut strides = vec![0; shape.len()];
    let mut next = 1;
    for &d in &perm {
        strides[d] = next;
        next *= shape[d];
    }
    let permuted: Vec<usize> = perm.iter().rev().map(|&d| shape[d]).collect();
    let storage = like.empty_same(&permuted, dtype)?;
    Ok(storage.relayout_result(Layout {
        shape: shape.to_vec(),
        strides,
        offset: 0,
    }))
}

/// TensorIterator's fast setup for inputs all of the output's shape, if one applies.
fn fast_setup(inputs: &[&Tensor], shape: &[usize], dtype: DType) -> Result<Option<Tensor>> {
    let like = inputs[0];
    if inputs.iter().all(|t| t.is_contiguous()) {
        return like.empty_same(shape, dtype).map(Some);
    }
    if inputs.iter().all(|t| t.is_channels_last()) {
        return empty_in(like, shape, dtype, true).map(Some);
    }
    // The last input's strides against every other's, as PyTorch compares them.
    let strides = inputs[inputs.len() - 1].stride();
    if inputs.iter().all(|t| is_dense(t) && t.stride() == strides) {
        let order = super::convert::empty_ordered_like(inputs[inputs.len() - 1], shape, dtype)?;
        return Ok(Some(order));
    }
    Ok(None)
}

/// The dims of `shape` from innermost to outermost, as `reorder_dimensions` sorts them.
fn iteration_order(inputs: &[&Tensor], shape: &[usize]) -> Vec<usize> {
    let n = shape.len();
    let strides: Vec<Vec<usize>> = inputs.iter().map(|t| broadcast_strides(t, shape)).collect();
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for s in &strides {
            let (s0, s1) = (s[d0], s[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
            if shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    let mut perm: Vec<usize> = (0..n).rev().collect();
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// `t`'s strides for each dim of `shape` it broadcasts to: 0 where it is broadcast (a missing
/// leading dim, or size 1 against a larger size), its own stride elsewhere.
fn broadcast_strides(t: &Tensor, shape: &[usize]) -> Vec<usize> {
    let lead = shape.len() - t.dim();
    (0..shape.len())
        .map(|d| match d.checked_sub(lead) {
            Some(own) if !(t.dims()[own] == 1 && shape[d] != 1) => t.stride()[own],
            _ => 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorOptions;

    fn zeros(shape: &[usize]) -> Tensor {
        Tensor::zeros(shape, &TensorOptions::default()).unwrap()
    }

    fn strides_of(inputs: &[&Tensor], shape: &[usize]) -> Vec<usize> {
        empty_elementwise(inputs, shape, DType::F32)
            .unwrap()
            .stride()
            .to_vec()
    }

    #[test]
    fn transposed_inputs_give_a_transposed_output_as_tensor_iterator_does() {
        let a = zeros(&[2, 3, 4]);
        let t = a.transpose(0, 1).unwrap(); // [3, 2, 4], strides [4, 12, 1]
        assert_eq!(
            strides_of(&[&t], &[3, 2, 4]),
            [4, 12, 1],
            "alone: its own dense strides"
        );
        let b = zeros(&[4]);
        assert_eq!(
            strides_of(&[&t, &b], &[3, 2, 4]),
            [4, 12, 1],
            "broadcast dims are skipped"
        );
        let c = zeros(&[3, 2, 4]);
        assert_eq!(
            strides_of(&[&c, &t], &[3, 2, 4]),
            [8, 4, 1],
            "the first input decides"
        );
        assert_eq!(strides_of(&[&t, &c], &[3, 2, 4]), [4, 12, 1]);
    }

    #[test]
    fn contiguous_and_broadcast_inputs_give_contiguous_outputs() {
        let a = zeros(&[2, 3]);
        let row = zeros(&[1, 3]);
        assert_eq!(strides_of(&[&a, &row], &[2, 3]), [3, 1]);
        let col = zeros(&[2, 1]);
        assert_eq!(strides_of(&[&col, &row], &[2, 3]), [3, 1]);
        let non_dense = zeros(&[2, 6]).narrow(1, 0, 3).unwrap();
        assert_eq!(strides_of(&[&non_dense], &[2, 3]), [3, 1]);
    }
}
