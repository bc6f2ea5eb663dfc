//! IndexBackward0's `index_put_(zeros, indices, grad, accumulate=True)`, with the temporaries of
//! PyTorch 2.11's CUDA path (`index_put_with_sort_kernel`), for rows picked by a mask or an index.

use crate::device::cub_scratch::radix_sort_bytes;
use crate::device::Storage;
use torchlet_alloc::types::element::{load_f64, store_scalar};
use torchlet_alloc::types::Scalar;

use super::{Result, Tensor};

// Note [sorted index_put_]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// IndexBackward0 puts the gradient into zeros of the input's shape with
// `index_put_(accumulate=True)`, which on CUDA sorts linear indices so that equal rows add up
// deterministically: for each indexed dim a `remainder` (wrapIndexOnce) and its product by the
// stride (int64), summed into one linear index, the remainders freed as they go; the gradient
// made contiguous; sorted and original positions and an arange; CUB's radix sort scratch; then
// all freed, last made first. The indices themselves are the caller's: a mask's coordinates
// (freed once the linear index exists) or the index tensor IndexBackward0 saved.

/// One temporary from the caching allocator (none for zero bytes), freed when dropped.
pub(super) fn temp(t: &Tensor, bytes: usize) -> Result<Option<Storage>> {
    (bytes > 0)
        .then(|| Storage::new(t.backend().clone(), bytes))
        .transpose()
}

/// Bits CUB's radix sort needs for keys up to `max` (ATen's `get_num_bits`).
pub(super) fn num_bits(max: usize) -> usize {
    (usize::BITS - max.leading_zeros()).max(1) as usize
}

/// Add `g`'s rows into `result`'s (zeros) rows at `positions` (each row the product of the dims after
/// the `indexed_dims` leading ones), with the CUDA path's memory (Note [sorted index_put_]);
/// `coords` (a mask's coordinates) is freed once the linear index is made.
pub(super) fn put_rows_accumulate(
    result: &Tensor,
    g: &Tensor,
    positions: &[usize],
    indexed_dims: usize,
    coords: Option<Tensor>,
) -> Result<()> {
    let count = positions.len();
    let slice: usize = result.dims()[indexed_dims..].iter().product();
    if g.backend().props().is_some() {
        let linear = linear_index_memory(g, indexed_dims, count)?;
        drop(coords);
        let value = if g.is_contiguous() {
            None
        } else {
            temp(g, g.numel() * g.element_size())?
        };
        if count > 0 && slice > 0 {
            let sorted = temp(g, count * 8)?;
            let original = temp(g, count * 8)?;
            let range = temp(g, count * 8)?;
            let largest = result.numel().saturating_sub(1) / slice;
            drop(temp(g, radix_sort_bytes(count, 8, 8, num_bits(largest)))?);
            drop((range, original, sorted));
        }
        drop((value, linear));
    } else {
        drop(coords);
    }
    if result.has_values() && count > 0 && slice > 0 {
        accumulate_rows(result, g, positions, slice)?;
    }
    Ok(())
}

/// `computeLinearIndex`'s temporaries over `k` indexed dims of `count` indices: each dim's
/// `remainder` and its product by the stride, summed into the first product, which is returned.
fn linear_index_memory(t: &Tensor, k: usize, count: usize) -> Result<Option<Storage>> {
    let mut linear = None;
    for d in 0..k {
        let wrapped = temp(t, count * 8)?;
        let scaled = temp(t, count * 8)?;
        drop(wrapped);
        if d == 0 {
            linear = scaled;
        }
    }
    Ok(linear)
}

/// Write into `result` (zeros) `g`'s rows (`slice` elements each, in `g`'s logical order) added
/// up at `positions`.
fn accumulate_rows(result: &Tensor, g: &Tensor, positions: &[usize], slice: usize) -> Result<()> {
    let dtype = result.dtype();
    let grad = g.host_bytes()?;
    let mut sums = vec![0f64; result.numel()];
    for (row, &p) in positions.iter().enumerate() {
        for j in 0..slice {
            // SAFETY: `grad` holds `positions.len() * slice` elements of `g`'s dtype.
            sums[p * slice + j] += unsafe { load_f64(grad.as_ptr(), g.dtype(), row * slice + j) };
        }
    }
    let mut bytes = vec![0u8; result.nbytes()];
    for (i, v) in sums.iter().enumerate() {
        // SAFETY: `bytes` holds `result.numel()` elements of `dtype`.
        unsafe { store_scalar(bytes.as_mut_ptr(), dtype, i, Scalar::Float(*v)) };
    }
    result.backend().write_bytes(result.storage_ptr(), &bytes)
}
