//! Ops that pick by mask or index: where, masked_fill, triu/tril, index_select, gather,
//! embedding, and their backwards with PyTorch's temporaries.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::cub_scratch::{radix_sort_bytes, scan_bytes, select_bytes};
use crate::device::Storage;
use torchlet_alloc::types::element::load_i64;

use super::layout::wrap_dim;
use super::math::{device_mismatch, result_type};
use super::{DType, Layout, OffsetIter, Result, Scalar, Tensor, TensorError};

fn dims_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl Tensor {
    /// Every element of an integer tensor, read to the host without device memory, for bounds
    /// checks; none in a shapes-only run (`torchlet fit`), which has no values to check.
    pub(crate) fn index_values(&self) -> Result<Vec<i64>> {
        let l = self.layout();
        if self.numel() == 0 || !self.has_values() {
            return Ok(Vec::new());
        }
        let size = self.element_size();
        let mut raw = vec![0u8; (l.extent() - l.offset) * size];
        let base = self.storage_ptr() + (l.offset * size) as u64;
        self.backend().read_bytes(base, &mut raw)?;
        let from = Layout {
            offset: 0,
            ..l.clone()
        };
        let dtype = self.dtype();
        // SAFETY: every offset of `from` lies inside `raw`, which holds the view's span.
        Ok(OffsetIter::new(&from)
            .map(|o| unsafe { load_i64(raw.as_ptr(), dtype, o) })
            .collect())
    }

    /// `torch.where(cond, self, other)`: `self` where `cond`, else `other`, broadcast.
    pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        if cond.dtype() != DType::Bool {
            return Err(TensorError::runtime(format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                cond.dtype().scalar_type_name()
            )));
        }
        for t in [a, b] {
            if t.device() != cond.device() {
                return Err(device_mismatch(cond.device(), t.device()));
            }
        }
        let shape = super::broadcast_shapes(cond.dims(), a.dims())?;
        let shape = super::broadcast_shapes(&shape, b.dims())?;
        let dtype = result_type(a, b);
        // PyTorch converts an operand of another dtype first; the copies go when it returns.
        let ca = if a.dtype() != dtype {
            a.copy_as(dtype)?
        } else {
            a.clone()
        };
        let cb = if b.dtype() != dtype {
            b.copy_as(dtype)?
        } else {
            b.clone()
        };
        let out = a.empty_same(&shape, dtype)?;
        if out.numel() > 0 {
            let (lc, la, lb) = (
                cond.layout().broadcast_to(&shape),
                ca.layout().broadcast_to(&shape),
                cb.layout().broadcast_to(&shape),
            );
            a.backend().where_select(
                cond.operand_with(&lc),
                ca.operand_with(&la),
                cb.operand_with(&lb),
                out.operand(),
            )?;
        }
        drop(cb);
        drop(ca);
        if needs_grad(&[a, b]) {
            record_where(&out, cond, a, b)?;
        }
        Ok(out)
    }

    /// `where(cond, self, 0)` (`keep_true`) or `where(cond, 0, self)`: the 0 is a one-element
    /// tensor on the device, made before the result and freed after it, as PyTorch's scalar
    /// overload of `where` does.
    fn where_zero(&self, cond: &Tensor, keep_true: bool) -> Result<Tensor> {
        let zero = Tensor::zeros(&[], &self.like_options())?;
        if keep_true {
            Self::where_(cond, self, &zero)
        } else {
            Self::where_(cond, &zero, self)
        }
    }

    /// `where(cond, self, value)` / `where(cond, value, self)` with a number operand.
    pub fn where_scalar(cond: &Tensor, t: &Tensor, value: Scalar, t_first: bool) -> Result<Tensor> {
        let dtype = super::math::result_type_scalar(t, value);
        let opts = t.like_options().dtype(dtype);
        let s = Tensor::full(&[], value, &opts)?;
        if t_first {
            Self::where_(cond, t, &s)
        } else {
            Self::where_(cond, &s, t)
        }
    }

    /// PyTorch's checks of a mask for `masked_fill`.
    fn check_mask(&self, mask: &Tensor) -> Result<()> {
        if mask.dtype() != DType::Bool {
            return Err(TensorError::runtime(format!(
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().scalar_type_name()
            )));
        }
        if mask.device() != self.device() && mask.dim() > 0 {
            return Err(device_mismatch(self.device(), mask.device()));
        }
        Ok(())
    }

    /// `masked_fill` into `self` itself, no autograd.
    fn masked_fill_raw(&self, mask: &Tensor, value: Scalar) -> Result<()> {
        let shape = super::broadcast_shapes(self.dims(), mask.dims())?;
        if shape != self.dims() {
            return Err(TensorError::runtime(format!(
                "expand(torch.BoolTensor{{{}}}, size=[{}]): the mask cannot be broadcast to the tensor",
                dims_str(mask.dims()).trim_matches(|c| c == '[' || c == ']'),
                dims_str(self.dims()).trim_matches(|c| c == '[' || c == ']'),
            )));
        }
        if self.numel() > 0 && mask.device() == self.device() {
            let lm = mask.layout().broadcast_to(&shape);
            self.backend()
                .masked_fill(self.operand(), mask.operand_with(&lm), value)?;
        } else if self.numel() > 0 && mask.item()?.to_i64() != 0 {
            // A 0-d mask on another device (check_mask lets only those through) is one bool: fill
            // everything or nothing. Its pointer must never reach this device's kernel, where a
            // host address is an illegal access that loses the whole CUDA context.
            self.backend().fill(self.operand(), value)?;
        }
        self.bump_version();
        Ok(())
    }

    /// `t.masked_fill(mask, value)`: a copy with `value` where `mask` is true.
    pub fn masked_fill(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_mask(mask)?;
        let shape = super::broadcast_shapes(self.dims(), mask.dims())?;
        let out = self.empty_same(&shape, self.dtype())?;
        out.copy_from(self)?;
        out.masked_fill_raw(mask, value)?;
        if needs_grad(&[self]) {
            let m = SavedTensor::new(mask)?;
            let input = self.shape();
            record(
                &out,
                "MaskedFillBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let g = g.masked_fill(m.get()?, Scalar::Int(0))?;
                    Ok(vec![Some(g.sum_to_size(&input)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `t.masked_fill_(mask, value)`: in place; the gradient where the mask is true is zero.
    pub fn masked_fill_(&self, mask: &Tensor, value: Scalar) -> Result<Tensor> {
        self.check_inplace()?;
        self.check_mask(mask)?;
        self.masked_fill_raw(mask, value)?;
        if needs_grad(&[self]) {
            let m = SavedTensor::new(mask)?;
            // The node's input is the tensor's history before the write, as for `fill_`.
            record(
                self,
                "MaskedFillBackward0",
                &[self],
                true,
                Box::new(move |g, _| Ok(vec![Some(g.masked_fill(m.get()?, Scalar::Int(0))?)])),
            );
        }
        Ok(self.clone())
    }

    /// `triu(t, diagonal)` (`upper`) or `tril`: a copy with the other triangle zeroed.
    pub fn triangle(&self, diagonal: i64, upper: bool) -> Result<Tensor> {
        super::check_interrupt()?;
        if self.dim() < 2 {
            let name = if upper { "triu" } else { "tril" };
            return Err(TensorError::runtime(format!(
                "{name}: input tensor must have at least 2 dimensions"
            )));
        }
        let out = self.empty_same(self.dims(), self.dtype())?;
        if out.numel() > 0 {
            self.backend()
                .triangle(self.operand(), diagonal, upper, out.operand())?;
        }
        if needs_grad(&[self]) {
            let name = if upper {
                "TriuBackward0"
            } else {
                "TrilBackward0"
            };
            record(
                &out,
                name,
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.triangle(diagonal, upper)?)])),
            );
        }
        Ok(out)
    }

    /// PyTorch's checks of an index tensor: integer dtype, same device.
    pub(crate) fn check_index(&self, index: &Tensor, op: &str, allow_int32: bool) -> Result<()> {
        let ok = index.dtype() == DType::I64 || allow_int32 && index.dtype() == DType::I32;
        if !ok {
            let expected = if allow_int32 {
                "int32 or int64"
            } else {
                "int64"
            };
            return Err(TensorError::runtime(format!(
                "{op}(): Expected dtype {expected} for index"
            )));
        }
        if index.device() != self.device() {
            return Err(device_mismatch(self.device(), index.device()));
        }
        Ok(())
    }

    /// `index_select(t, dim, index)`: the slices of `dim` at `index` (1-D), in a new tensor.
    pub fn index_select(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_index(index, "index_select", true)?;
        if index.dim() > 1 {
            return Err(TensorError::index(
                "index_select(): Index is supposed to be a vector",
            ));
        }
        let d = wrap_dim(dim, self.dim().max(1))?;
        let size = if self.dim() == 0 { 1 } else { self.dims()[d] };
        if index
            .index_values()?
            .iter()
            .any(|&k| k < 0 || k as usize >= size)
        {
            return Err(TensorError::index("index out of range in self"));
        }
        let out = self.index_select_raw(d, index)?;
        if needs_grad(&[self]) {
            let ix = SavedTensor::new(index)?;
            let input = self.shape();
            record(
                &out,
                "IndexSelectBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    // PyTorch's index_select_backward: zeros, then index_add_ of the gradient.
                    let full = Tensor::zeros(&input, &g.like_options())?;
                    full.index_add_raw(d, ix.get()?, g)?;
                    Ok(vec![Some(full)])
                }),
            );
        }
        Ok(out)
    }

    /// The index of `index_select` seen as `gather`'s: shaped like the output, stride 0 but
    /// along `dim`.
    fn spread_index(index: &Tensor, shape: &[usize], dim: usize) -> Layout {
        let mut strides = vec![0; shape.len()];
        strides[dim] = index.layout().strides.first().copied().unwrap_or(0);
        Layout {
            shape: shape.to_vec(),
            strides,
            offset: index.layout().offset,
        }
    }

    /// `index_select` without checks or autograd (the index is known to be in range).
    fn index_select_raw(&self, d: usize, index: &Tensor) -> Result<Tensor> {
        let mut shape = self.shape();
        if self.dim() > 0 {
            shape[d] = index.numel();
        }
        let out = self.empty_same(&shape, self.dtype())?;
        if out.numel() > 0 {
            let src = if self.dim() == 0 {
                self.reshape(&[1])?
            } else {
                self.clone()
            };
            let out1 = if self.dim() == 0 {
                out.reshape(&[1])?
            } else {
                out.clone()
            };
            let li = Self::spread_index(index, out1.dims(), d);
            self.backend()
                .gather(src.operand(), index.operand_with(&li), d, out1.operand())?;
        }
        Ok(out)
    }

    /// `self[.., index[i], ..] += src[.., i, ..]` along `d`, in place, no autograd.
    pub(crate) fn index_add_raw(&self, d: usize, index: &Tensor, src: &Tensor) -> Result<()> {
        if self.dim() == 0 {
            // Kernels index a dim: a 0-d target takes its one element as a 1-element view.
            let one = |t: &Tensor| t.data_handle().reshape(&[1]);
            return one(self)?.index_add_raw(0, &one(index)?, &one(src)?);
        }
        if src.numel() > 0 {
            let li = Self::spread_index(index, src.dims(), d);
            self.backend().scatter_add(
                src.operand(),
                index.operand_with(&li),
                d,
                self.operand(),
            )?;
        }
        self.bump_version();
        Ok(())
    }

    /// `gather(t, dim, index)`: `out[p] = t[p with dim replaced by index[p]]`.
    pub fn gather(&self, dim: isize, index: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_index(index, "gather", false)?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        if index.dim() != self.dim() {
            return Err(TensorError::runtime(
                "Index tensor must have the same number of dimensions as input tensor",
            ));
        }
        for k in (0..self.dim()).filter(|&k| k != d) {
            if index.dims()[k] > self.dims()[k] {
                return Err(TensorError::runtime(format!(
                    "Size does not match at dimension {k} expected index {} to be no larger than self {} apart from dimension {d}",
                    dims_str(index.dims()),
                    dims_str(self.dims())
                )));
            }
        }
        let size = if self.dim() == 0 { 1 } else { self.dims()[d] };
        for k in index.index_values()? {
            if k < 0 || k as usize >= size {
                return Err(TensorError::index(format!(
                    "index {k} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        let out = self.empty_same(index.dims(), self.dtype())?;
        if out.numel() > 0 {
            // Kernels index a dim: a 0-d gather runs on 1-element views.
            let one = |t: &Tensor| t.data_handle().reshape(&[1]);
            let (src, ix, dst) = if self.dim() == 0 {
                (one(self)?, one(index)?, one(&out)?)
            } else {
                (self.clone(), index.clone(), out.clone())
            };
            self.backend()
                .gather(src.operand(), ix.operand(), d, dst.operand())?;
        }
        if needs_grad(&[self]) {
            let ix = SavedTensor::new(index)?;
            let input = self.shape();
            record(
                &out,
                "GatherBackward0",
                &[self],
                true,
                Box::new(move |g, _| Ok(vec![Some(gather_backward(g, ix.get()?, d, &input)?)])),
            );
        }
        Ok(out)
    }

    /// `F.embedding(index, weight)`: the rows of `weight` (2-D) at `index`, shaped
    /// `index.shape + [weight.shape[1]]`.
    pub fn embedding(index: &Tensor, weight: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        if weight.dim() != 2 {
            return Err(TensorError::runtime("'weight' must be 2-D"));
        }
        if !matches!(index.dtype(), DType::I64 | DType::I32) {
            return Err(TensorError::runtime(format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding)",
                index.type_name()
            )));
        }
        if index.device() != weight.device() {
            return Err(device_mismatch(weight.device(), index.device()));
        }
        let rows = weight.dims()[0];
        if index
            .index_values()?
            .iter()
            .any(|&k| k < 0 || k as usize >= rows)
        {
            return Err(TensorError::index("index out of range in self"));
        }
        let flat = index.reshape(&[-1])?;
        let picked = weight.index_select_raw(0, &flat)?;
        drop(flat);
        let mut shape = index.shape();
        shape.push(weight.dims()[1]);
        let out = picked.view_as_shape(&shape);
        drop(picked);
        if needs_grad(&[weight]) {
            let ix = SavedTensor::new(index)?;
            record(
                &out,
                "EmbeddingBackward0",
                &[weight],
                true,
                Box::new(move |g, _| Ok(vec![Some(embedding_backward(g, ix.get()?, rows)?)])),
            );
        }
        Ok(out)
    }

    /// `randint(low, high, shape)`: uniform integers in [low, high), int64 unless `opts` says.
    pub fn randint(
        low: i64,
        high: i64,
        shape: &[usize],
        opts: &super::TensorOptions,
    ) -> Result<Tensor> {
        use rand::{Rng, SeedableRng};
        if low >= high {
            return Err(TensorError::runtime(format!(
                "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
            )));
        }
        let n = super::layout::numel_of_view(shape)?;
        let seed = super::random::next_seed(opts.device);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let values = (0..n)
            .map(|_| Scalar::Int(rng.random_range(low..high)))
            .collect();
        Tensor::from_values(values, shape.to_vec(), opts)
    }
}

/// `where`'s node: the gradient goes to `a` where `cond` holds and to `b` elsewhere, each
/// through `where` with a 0-d zero (`b`'s first, as PyTorch's formulas run last input first).
fn record_where(out: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    let c = SavedTensor::new(cond)?;
    record(
        out,
        "WhereBackward0",
        &[a, b],
        true,
        Box::new(move |g, m| {
            let c = c.get()?;
            let gb = if m[1] {
                Some(g.where_zero(c, false)?)
            } else {
                None
            };
            let ga = if m[0] {
                Some(g.where_zero(c, true)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        }),
    );
    Ok(())
}

/// PyTorch's gather_backward: zeros of the input's shape, then scatter_add_ of the gradient.
fn gather_backward(g: &Tensor, ix: &Tensor, d: usize, input: &[usize]) -> Result<Tensor> {
    let full = Tensor::zeros(input, &g.like_options())?;
    if g.numel() > 0 {
        // Kernels index a dim: a 0-d input scatters through 1-element views.
        let flat = |t: &Tensor| t.reshape(&[-1]);
        let (g, ix, dst) = if input.is_empty() {
            (flat(g)?, flat(ix)?, flat(&full)?)
        } else {
            (g.clone(), ix.clone(), full.clone())
        };
        full.backend()
            .scatter_add(g.operand(), ix.operand(), d, dst.operand())?;
    }
    Ok(full)
}

/// Indices PyTorch's embedding backward on CUDA sums directly; beyond, it sorts them first.
const EMBEDDING_DIRECT_MAX: usize = 3072;
/// Rows each partial segment of the sorted path sums (`NROWS_PER_THREAD`).
const NROWS_PER_THREAD: usize = 10;

/// PyTorch's embedding_dense_backward: the gradient of each row is the sum of the gradients of
/// the positions that picked it. On CUDA, PyTorch makes the indices and then the gradient
/// contiguous; up to 3072 indices it allocates the zeroed result and frees the copies newest
/// first. Beyond, it sorts the indices with CUB and sums segments of equal indices through
/// tables sized by the most segments there can be (Note [embedding backward tables]).
fn embedding_backward(g: &Tensor, index: &Tensor, rows: usize) -> Result<Tensor> {
    let n = index.numel();
    let width = g.dims().last().copied().unwrap_or(1);
    let index = if index.is_contiguous() {
        index.clone()
    } else {
        index.contiguous_copy()?
    };
    let dense = if g.is_contiguous() {
        g.clone()
    } else {
        g.contiguous_copy()?
    };
    let sorted = g.backend().props().is_some() && n > EMBEDDING_DIRECT_MAX;
    let tables = if sorted {
        Some(sort_tables(&index, n)?)
    } else {
        None
    };
    let full = Tensor::zeros(&[rows, width], &g.like_options())?;
    if let Some(_tables) = tables {
        segment_tables(g, n, rows, width, index.element_size())?;
    }
    let g2 = dense.view_as_shape(&[n, width]);
    let flat = index.view_as_shape(&[n]);
    full.index_add_raw(0, &flat, &g2)?;
    drop(flat);
    drop(g2);
    drop(dense);
    drop(index);
    Ok(full)
}

// Note [embedding backward tables]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Beyond 3072 indices, PyTorch 2.11 (EmbeddingBackwardKernel.cu) sorts the indices with their
// positions (`radix_sort_pairs` over all 64 bits: its end_bit is commented out), then finds the
// segments of equal indices (`unique_by_key`, with a keys buffer of its own), splits each into
// partial segments of at most 10 rows, sums those into `grad_weight_per_segment` and scatters the
// sums. Its tables are sized by the most there can be: `max_segments = min(indices, rows)`
// segments and `indices / 10 + max_segments` partial segments, so the memory does not depend on
// the values. `tests/data/scratch_sizes.json` holds seven such backwards recorded on an H100.
// torchlet sums the rows directly; the tables are allocated and freed in PyTorch's order.

/// The sorted indices and positions (kept to the end), with the range and CUB's scratch of the
/// sort made and freed.
fn sort_tables(index: &Tensor, n: usize) -> Result<(Storage, Storage)> {
    let b = index.backend().clone();
    let size = index.element_size();
    let sorted = Storage::new(b.clone(), n * size)?;
    let positions = Storage::new(b.clone(), n * size)?;
    let range = Storage::new(b.clone(), n * size)?;
    drop(Storage::new(
        b.clone(),
        radix_sort_bytes(n, size, size, size * 8),
    )?);
    drop(range);
    Ok((sorted, positions))
}

/// embedding_backward_cuda_kernel's tables beside the zeroed result: the segments' offsets and
/// count, `unique_by_key`'s keys and scratch, the partial segments' counts, offsets (CUB's
/// exclusive sum) and total, their start positions and per-segment sums; the tables hold
/// indices of the indices' dtype (`isz` bytes), the counts int64.
fn segment_tables(g: &Tensor, n: usize, rows: usize, width: usize, isz: usize) -> Result<()> {
    let b = g.backend().clone();
    let temp = |bytes: usize| Storage::new(b.clone(), bytes);
    let segment_offsets = temp(n * isz)?;
    let segments = temp(8)?;
    let keys = temp(n * isz)?;
    drop(temp(select_bytes(n))?);
    drop(keys);
    let max_segments = n.min(rows);
    let partials = temp(max_segments * isz)?;
    let partial_offsets = temp(max_segments * isz)?;
    drop(temp(scan_bytes(max_segments, isz))?);
    let partial_count = temp(8)?;
    let max_partials = n / NROWS_PER_THREAD + max_segments;
    let starts = temp(max_partials * isz)?;
    let acc = if g.dtype() == DType::F64 { 8 } else { 4 };
    let sums = temp(max_partials * width * acc)?;
    drop((
        sums,
        starts,
        partial_count,
        partial_offsets,
        partials,
        segments,
        segment_offsets,
    ));
    Ok(())
}
