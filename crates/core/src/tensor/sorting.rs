//! `sort`, `argsort` and `topk`: the order computed on the host from the tensor's values, the
//! device memory taken as PyTorch 2.11's CUDA kernels take it (CUB's scratch included).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::cub_scratch::{radix_sort_bytes, scan_by_key_bytes, segmented_sort_bytes};
use crate::device::Storage;
use torchlet_alloc::types::element::{load_f64, load_i64};

use super::layout::wrap_dim;
use super::reduce_grad::value_selecting_backward;
use super::{DType, Result, Tensor, TensorError};

// Note [host sorting]
// ~~~~~~~~~~~~~~~~~~~
// torchlet has no device kernels for sorting and selection: the values are read to the host
// (a device-to-host copy, no device memory), ordered there, and written into the outputs. What
// the device's memory sees is PyTorch's: the outputs, then each temporary its CUDA path
// allocates (index ranges, contiguous copies, CUB's temporary storage, topk's radix-select
// counters), freed in PyTorch's order. Ties keep their input order (a stable sort), as PyTorch's
// CUB sorts do; its in-place sort of short rows may order equal values' indices otherwise.

/// Rows at most this long are sorted in place by PyTorch (`should_use_small_sort`).
const SMALL_SORT: usize = 4096;
/// Registers a thread of topk's multi-block radix select uses (`get_items_per_thread`).
const TOPK_REGS_PER_THREAD: usize = 40;
/// Threads of one topk radix-select block.
const TOPK_BLOCK_THREADS: usize = 256;
/// Registers of one H200 multiprocessor.
const REGS_PER_SM: usize = 65536;

/// A tensor viewed as `outer` rows of `n` elements `inner` apart, along the sorted dim.
#[derive(Clone, Copy)]
struct Rows {
    outer: usize,
    n: usize,
    inner: usize,
}

impl Rows {
    fn of(shape: &[usize], d: usize) -> Rows {
        if shape.is_empty() {
            return Rows {
                outer: 1,
                n: 1,
                inner: 1,
            };
        }
        Rows {
            outer: shape[..d].iter().product(),
            n: shape[d],
            inner: shape[d + 1..].iter().product(),
        }
    }

    fn slices(&self) -> usize {
        self.outer * self.inner
    }

    /// Row-major offset of element `j` of slice `s`.
    fn at(&self, s: usize, j: usize) -> usize {
        let (o, i) = (s / self.inner, s % self.inner);
        (o * self.n + j) * self.inner + i
    }
}

/// The order of each slice's first `k` elements, largest first when `descending` (NaN counts
/// as the largest), ties in input order: `k` positions a slice, row-major by slice.
fn host_order(t: &Tensor, rows: Rows, k: usize, descending: bool) -> Result<(Vec<u8>, Vec<usize>)> {
    let bytes = t.host_bytes()?;
    let dtype = t.dtype();
    let mut order = Vec::with_capacity(rows.slices() * k);
    let mut idx: Vec<usize> = Vec::with_capacity(rows.n);
    for s in 0..rows.slices() {
        idx.clear();
        idx.extend(0..rows.n);
        if dtype.is_float() {
            // SAFETY: `bytes` holds every element of `t`, row-major.
            let key = |j: usize| unsafe { load_f64(bytes.as_ptr(), dtype, rows.at(s, j)) };
            let rank = |v: f64| if v.is_nan() { (1u8, 0.0) } else { (0u8, v) };
            idx.sort_by(|&a, &b| {
                let ord = rank(key(a))
                    .partial_cmp(&rank(key(b)))
                    .unwrap_or(std::cmp::Ordering::Equal);
                if descending {
                    ord.reverse()
                } else {
                    ord
                }
            });
        } else {
            // SAFETY: as above.
            let key = |j: usize| unsafe { load_i64(bytes.as_ptr(), dtype, rows.at(s, j)) };
            idx.sort_by(|&a, &b| {
                let ord = key(a).cmp(&key(b));
                if descending {
                    ord.reverse()
                } else {
                    ord
                }
            });
        }
        order.extend_from_slice(&idx[..k]);
    }
    Ok((bytes, order))
}

/// Write each slice's chosen elements of `src` (row-major bytes of a tensor laid out as
/// `rows`) into `values` and their positions into `indices`, both contiguous, `k` a slice.
fn write_selection(
    src: &[u8],
    rows: Rows,
    k: usize,
    order: &[usize],
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let size = values.element_size();
    let out = Rows {
        outer: rows.outer,
        n: k,
        inner: rows.inner,
    };
    let mut vbytes = vec![0u8; values.nbytes()];
    let mut ibytes = vec![0u8; indices.nbytes()];
    for s in 0..rows.slices() {
        for j in 0..k {
            let from = rows.at(s, order[s * k + j]);
            let to = out.at(s, j);
            vbytes[to * size..(to + 1) * size]
                .copy_from_slice(&src[from * size..(from + 1) * size]);
            ibytes[to * 8..(to + 1) * 8].copy_from_slice(&(order[s * k + j] as i64).to_ne_bytes());
        }
    }
    if !vbytes.is_empty() {
        values
            .backend()
            .write_bytes(values.storage_ptr(), &vbytes)?;
        indices
            .backend()
            .write_bytes(indices.storage_ptr(), &ibytes)?;
    }
    Ok(())
}

/// One temporary from the caching allocator, freed when dropped.
fn temp(t: &Tensor, bytes: usize) -> Result<Storage> {
    Storage::new(t.backend().clone(), bytes)
}

impl Tensor {
    fn cuda_like(&self) -> bool {
        self.backend().props().is_some()
    }

    /// `torch.sort(self, dim, descending, stable)`: the sorted values and their int64 indices
    /// along `dim` (stable in every case, as PyTorch's CUDA sort is).
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        super::check_interrupt()?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        check_sortable(self, "sort")?;
        let rows = Rows::of(self.dims(), d);
        let values = self.empty_same(self.dims(), self.dtype())?;
        let indices = self.empty_same(self.dims(), DType::I64)?;
        if self.cuda_like() && self.numel() > 0 && self.dim() > 0 {
            let innermost = super::convert::is_dense(self) && self.stride()[d] == 1;
            sort_memory(self, rows, innermost)?;
        }
        if self.has_values() {
            let (bytes, order) = host_order(self, rows, rows.n, descending)?;
            write_selection(&bytes, rows, rows.n, &order, &values, &indices)?;
        }
        self.record_selection(&values, &indices, d, "SortBackward0")?;
        Ok((values, indices))
    }

    /// `torch.argsort(self, dim, descending)`: the indices of `sort`, its values freed.
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        Ok(self.sort(dim, descending)?.1)
    }

    /// `torch.topk(self, k, dim, largest, sorted)`: the `k` largest (or smallest) values along
    /// `dim` and their int64 indices, largest first (smallest first with `largest = false`).
    pub fn topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        super::check_interrupt()?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        let shape = self.topk_shape(k, d)?;
        let values = self.empty_same(&shape, self.dtype())?;
        let indices = self.empty_same(&shape, DType::I64)?;
        self.topk_into(k, d, largest, sorted, &values, &indices)?;
        self.record_selection(&values, &indices, d, "TopkBackward0")?;
        Ok((values, indices))
    }

    /// The shape of topk's results: `self`'s with dim `d` of size `k`, or PyTorch's refusal.
    pub(crate) fn topk_shape(&self, k: usize, d: usize) -> Result<Vec<usize>> {
        check_sortable(self, "topk")?;
        let n = self.dims().get(d).copied().unwrap_or(1);
        if k > n {
            return Err(TensorError::runtime("selected index k out of range"));
        }
        let mut shape = self.shape();
        if !shape.is_empty() {
            shape[d] = k;
        }
        Ok(shape)
    }

    /// topk into `values` and `indices` of [`Tensor::topk_shape`] (PyTorch's `topk_out`), with
    /// the temporaries of its CUDA path; no autograd.
    pub(crate) fn topk_into(
        &self,
        k: usize,
        d: usize,
        largest: bool,
        sorted: bool,
        values: &Tensor,
        indices: &Tensor,
    ) -> Result<()> {
        let rows = Rows::of(self.dims(), d);
        if self.cuda_like() && self.numel() > 0 {
            self.topk_memory(rows, k, sorted)?;
        }
        if self.has_values() {
            let (bytes, order) = host_order(self, rows, k, largest)?;
            write_selection(&bytes, rows, k, &order, values, indices)?;
        }
        Ok(())
    }

    /// The temporaries of PyTorch's CUDA topk of `k` along `d` (TensorTopK.cpp/.cu).
    fn topk_memory(&self, rows: Rows, k: usize, sorted: bool) -> Result<()> {
        let slices = rows.slices();
        if k == 0 {
            return Ok(());
        }
        let input = if self.is_contiguous() {
            None
        } else {
            Some(temp(self, self.numel() * self.element_size())?)
        };
        if multiblock(slices, rows.n) {
            self.radix_select_memory(rows, slices)?;
        }
        drop(input);
        if sorted && k > 1 && k > SMALL_SORT {
            // The selection sorted through sort_out into new values and indices, the indices
            // gathered (a new tensor, copied back and freed).
            let sorted_indices = temp(self, slices * k * 8)?;
            let sorted_values = temp(self, slices * k * self.element_size())?;
            let selected = Rows {
                outer: rows.outer,
                n: k,
                inner: rows.inner,
            };
            sort_memory(self, selected, rows.inner == 1)?;
            drop(temp(self, slices * k * 8)?);
            drop(sorted_values);
            drop(sorted_indices);
        }
        Ok(())
    }

    /// mbtopk::launch's buffers: the k-th values, the k left to find, the desired bit patterns,
    /// per-block digit counts, their cumulative sums, the per-block counts within and at the
    /// k-th value, and CUB's scratch for the two scans by key over the blocks.
    fn radix_select_memory(&self, rows: Rows, slices: usize) -> Result<()> {
        let size = self.element_size();
        let radix = if size == 8 { 8 } else { 4 };
        let blocks_per_mp = (REGS_PER_SM / (TOPK_REGS_PER_THREAD * TOPK_BLOCK_THREADS)).min(32);
        let sms = self.backend().props().map_or(132, |p| p.sm_count);
        let items = (rows.n * slices).div_ceil(sms * blocks_per_mp * TOPK_BLOCK_THREADS);
        let items = items.clamp(4, 64);
        let blocks = slices * rows.n.div_ceil(items * TOPK_BLOCK_THREADS);
        let kth_values = temp(self, slices * size)?;
        let ks_to_find = temp(self, 2 * slices * 4)?;
        let desired = temp(self, 2 * slices * radix)?;
        let counts = temp(self, blocks * 256 * 2)?;
        let digit_cum_sum = temp(self, slices * 256 * 4)?;
        let within_k = temp(self, blocks * 4)?;
        let kth_counts = temp(self, blocks * 4)?;
        drop(temp(self, scan_by_key_bytes(blocks))?);
        drop(temp(self, scan_by_key_bytes(blocks))?);
        drop((
            kth_counts,
            within_k,
            digit_cum_sum,
            counts,
            desired,
            ks_to_find,
            kth_values,
        ));
        Ok(())
    }

    /// The gradient of sort/topk: the values' gradient scattered into zeros at the indices.
    fn record_selection(
        &self,
        values: &Tensor,
        indices: &Tensor,
        d: usize,
        name: &'static str,
    ) -> Result<()> {
        if !needs_grad(&[self]) {
            return Ok(());
        }
        let idx = SavedTensor::new(indices)?;
        let input = self.shape();
        record(
            values,
            name,
            &[self],
            true,
            Box::new(move |g, _| {
                let idx = idx.get()?;
                if input.is_empty() {
                    return Ok(vec![Some(g.clone())]);
                }
                Ok(vec![Some(value_selecting_backward(g, idx, d, &input)?)])
            }),
        );
        Ok(())
    }
}

/// Whether topk takes the multi-block radix select (`should_use_multiblock`).
fn multiblock(slices: usize, n: usize) -> bool {
    (slices <= 20 && n >= 20000)
        || (slices > 20 && slices <= 40 && n >= 10000)
        || (slices > 40 && slices <= 80 && n >= 8000)
        || (slices > 80 && slices < 200 && n >= 5000)
        || (slices >= 200 && slices < 800 && n >= 3000)
        || (slices >= 800 && slices <= 4000 && n >= 800)
        || (slices > 4000 && n >= 400)
}

/// The temporaries of PyTorch's CUDA sort of `t`'s elements laid out as `rows` into outputs
/// already allocated; `innermost`: the sorted dim is dense and innermost, so the kernels read
/// the input and write the outputs in place (Sort.cpp's `sort_cuda_kernel`).
fn sort_memory(t: &Tensor, rows: Rows, innermost: bool) -> Result<()> {
    let n = rows.n;
    if n <= SMALL_SORT {
        // fillSliceWithIndex: an arange of the sorted dim, copied into the indices.
        drop(temp(t, n * 8)?);
        return Ok(());
    }
    let size = t.element_size();
    let numel = rows.slices() * n;
    // Otherwise the sort runs on a dense copy with the dim innermost, into temporaries of that
    // layout, copied into the outputs.
    let copies = if innermost {
        None
    } else {
        let own = temp(t, numel * size)?;
        let values = temp(t, numel * size)?;
        let indices = temp(t, numel * 8)?;
        Some((own, values, indices))
    };
    stable_sort_memory(t, rows, size)?;
    if let Some((own, values, indices)) = copies {
        drop(indices);
        drop(values);
        drop(own);
    }
    Ok(())
}

/// launch_stable_sort_kernel's temporaries for rows of more than 4096 elements of `size` bytes
/// (SortStable.cu): one sort a row for a single row or very long rows, a sort of all keys then
/// of their segment ids for fewer than 128 rows, CUB's segmented sort otherwise.
fn stable_sort_memory(t: &Tensor, rows: Rows, size: usize) -> Result<()> {
    let (segments, n) = (rows.slices(), rows.n);
    let numel = segments * n;
    let bits = size * 8;
    if segments == 1 || n >= 1_000_000 {
        let range = temp(t, n * 8)?;
        for _ in 0..segments {
            drop(temp(t, radix_sort_bytes(n, size, 8, bits))?);
        }
        drop(range);
    } else if segments < 128 {
        let segment_bits = (segments as f64).log2().ceil().max(1.0) as usize;
        let pairs = temp(t, numel * 8)?;
        let sorted_pairs = temp(t, numel * 8)?;
        let keys_out = temp(t, numel * size)?;
        drop(temp(t, radix_sort_bytes(numel, size, 8, bits))?);
        drop(keys_out);
        drop(temp(t, radix_sort_bytes(numel, 8, 0, segment_bits))?);
        drop(sorted_pairs);
        drop(pairs);
    } else {
        let reverse = temp(t, numel * 8)?;
        drop(temp(t, segmented_sort_bytes(numel, size, 8))?);
        drop(reverse);
    }
    Ok(())
}

/// PyTorch's refusals of a tensor sort and topk cannot order.
fn check_sortable(t: &Tensor, op: &str) -> Result<()> {
    if t.dtype() == DType::Bool && op == "topk" {
        let kernel = if t.cuda_like() {
            "topk_out_cuda"
        } else {
            "topk_cpu"
        };
        return Err(TensorError::runtime(format!(
            "\"{kernel}\" not implemented for 'Bool'"
        )));
    }
    Ok(())
}
