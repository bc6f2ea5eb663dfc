//! Shape ops that copy or split: cat, stack, split/chunk (views), repeat, and their backwards.

use crate::autograd::{needs_grad, record, record_multi};
use crate::device::cpu::{host_can_hold, reserve_host};

use super::layout::wrap_dim;
use super::math::device_mismatch;
use super::{DType, Layout, Result, Tensor, TensorError};

fn dims_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// The dtype every input promotes to, as `torch.cat` computes it.
fn promoted(tensors: &[Tensor]) -> DType {
    let mut dtype = tensors[0].dtype();
    for t in &tensors[1..] {
        dtype = DType::promote(dtype, t.dtype());
    }
    dtype
}

/// The shape of `cat(tensors, dim)`, with PyTorch's errors for inputs that do not fit.
fn cat_shape(tensors: &[Tensor], dim: usize) -> Result<Vec<usize>> {
    let first = tensors[0].dims();
    let mut shape = first.to_vec();
    shape[dim] = 0;
    for (i, t) in tensors.iter().enumerate() {
        if t.device() != tensors[0].device() {
            return Err(device_mismatch(tensors[0].device(), t.device()));
        }
        if t.dim() != first.len() {
            return Err(TensorError::runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                first.len(),
                t.dim()
            )));
        }
        for d in (0..first.len()).filter(|&d| d != dim) {
            if t.dims()[d] != first[d] {
                return Err(TensorError::runtime(format!(
                    "Sizes of tensors must match except in dimension {dim}. Expected size {} but got size {} for tensor number {i} in the list.",
                    first[d],
                    t.dims()[d]
                )));
            }
        }
        shape[dim] += t.dims()[dim];
    }
    Ok(shape)
}

impl Tensor {
    /// `torch.cat`: the inputs joined along `dim` into one new tensor.
    pub fn cat(tensors: &[Tensor], dim: isize) -> Result<Tensor> {
        super::check_interrupt()?;
        if tensors.is_empty() {
            return Err(TensorError::runtime(
                "torch.cat(): expected a non-empty list of Tensors",
            ));
        }
        if let Some(i) = tensors.iter().position(|t| t.dim() == 0) {
            return Err(TensorError::runtime(format!(
                "zero-dimensional tensor (at position {i}) cannot be concatenated"
            )));
        }
        let d = wrap_dim(dim, tensors[0].dim())?;
        let shape = cat_shape(tensors, d)?;
        let out = tensors[0].empty_same(&shape, promoted(tensors))?;
        let mut at = 0;
        for t in tensors {
            let len = t.dims()[d];
            if len > 0 {
                let mut l = out.layout().clone();
                l.offset += at * l.strides[d];
                l.shape[d] = len;
                t.backend().copy(t.operand(), out.operand_with(&l))?;
            }
            at += len;
        }
        let inputs: Vec<&Tensor> = tensors.iter().collect();
        if needs_grad(&inputs) {
            let sizes: Vec<usize> = tensors.iter().map(|t| t.dims()[d]).collect();
            record(
                &out,
                "CatBackward0",
                &inputs,
                false,
                Box::new(move |g, _| Self::narrow_parts(g, d, &sizes)),
            );
        }
        Ok(out)
    }

    /// The views of `g` along `dim` that `sizes` cut it into (cat's and stack's backward).
    fn narrow_parts(g: &Tensor, dim: usize, sizes: &[usize]) -> Result<Vec<Option<Tensor>>> {
        let mut at = 0;
        let mut parts = Vec::with_capacity(sizes.len());
        for &len in sizes {
            parts.push(Some(g.narrow(dim as isize, at as isize, len)?));
            at += len;
        }
        Ok(parts)
    }

    /// `torch.stack`: equal-shaped inputs joined along a new dim `dim`.
    pub fn stack(tensors: &[Tensor], dim: isize) -> Result<Tensor> {
        if tensors.is_empty() {
            return Err(TensorError::runtime("stack expects a non-empty TensorList"));
        }
        let d = wrap_dim(dim, tensors[0].dim() + 1)?;
        for (i, t) in tensors.iter().enumerate().skip(1) {
            if t.dims() != tensors[0].dims() {
                return Err(TensorError::runtime(format!(
                    "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {i}",
                    dims_str(tensors[0].dims()),
                    dims_str(t.dims())
                )));
            }
        }
        // The unsqueezed views carry no history: stack records one node of its own.
        let parts: Vec<Tensor> = tensors
            .iter()
            .map(|t| t.data_handle().unsqueeze(d as isize))
            .collect::<Result<_>>()?;
        let out = Self::cat(&parts, d as isize)?;
        let inputs: Vec<&Tensor> = tensors.iter().collect();
        if needs_grad(&inputs) {
            let n = tensors.len();
            record(
                &out,
                "StackBackward0",
                &inputs,
                false,
                Box::new(move |g, _| {
                    (0..n)
                        .map(|i| g.select(d as isize, i as isize).map(Some))
                        .collect()
                }),
            );
        }
        Ok(out)
    }

    /// `t.split(size, dim)`: views of `size` along `dim` (the last may be shorter).
    pub fn split(&self, size: usize, dim: isize) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::runtime(
                "split expects at least a 1-dimensional tensor",
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let len = self.dims()[d];
        if size == 0 && len != 0 {
            return Err(TensorError::runtime(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {len}"
            )));
        }
        let count = if size == 0 {
            1
        } else {
            len.div_ceil(size).max(1)
        };
        let sizes: Vec<usize> = (0..count)
            .map(|i| size.min(len - (i * size).min(len)))
            .collect();
        self.split_parts(&sizes, d, "SplitBackward0")
    }

    /// `t.split([s0, s1, …], dim)`: views of these sizes along `dim`, which they must fill.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: isize) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::runtime(
                "split expects at least a 1-dimensional tensor",
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let len = self.dims()[d];
        if sizes.iter().sum::<usize>() != len {
            return Err(TensorError::runtime(format!(
                "split_with_sizes expects split_sizes to sum exactly to {len} (input tensor's size at dimension {d}), but got split_sizes={}",
                dims_str(sizes)
            )));
        }
        self.split_parts(sizes, d, "SplitWithSizesBackward0")
    }

    /// `t.chunk(n, dim)`: at most `n` views of equal size along `dim` (PyTorch's split by ceil).
    pub fn chunk(&self, chunks: usize, dim: isize) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::runtime(
                "chunk expects at least a 1-dimensional tensor",
            ));
        }
        if chunks == 0 {
            return Err(TensorError::runtime(
                "chunk expects `chunks` to be greater than 0, got: 0",
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let len = self.dims()[d];
        if len == 0 {
            // `chunks` empty views, as PyTorch; a count no memory could hold is an error, not an
            // abort of the whole session. Each view is a `TensorImpl` in host memory too.
            let views = chunks.saturating_mul(std::mem::size_of::<super::handle::TensorImpl>());
            let mut sizes = reserve_host::<usize>(chunks)
                .filter(|_| host_can_hold(views))
                .ok_or_else(|| {
                TensorError::runtime(format!(
                    "chunk: {chunks} empty chunks of a dimension of size 0 do not fit in host memory"
                ))
            })?;
            sizes.resize(chunks, 0);
            return self.split_with_sizes(&sizes, dim);
        }
        self.split(len.div_ceil(chunks), dim)
    }

    /// Views of `sizes` along `d`, all outputs of one node, as PyTorch's split.
    fn split_parts(&self, sizes: &[usize], d: usize, name: &'static str) -> Result<Vec<Tensor>> {
        super::check_interrupt()?;
        let mut at = 0;
        let mut parts = Vec::with_capacity(sizes.len());
        for &len in sizes {
            let mut l = self.layout().clone();
            l.offset += at * l.strides[d];
            l.shape[d] = len;
            parts.push(self.view_as_layout(l));
            at += len;
        }
        if needs_grad(&[self]) {
            let (shape, sizes) = (self.shape(), sizes.to_vec());
            let opts = self.like_options();
            record_multi(
                &parts,
                name,
                &[self],
                false,
                Box::new(move |grads, _| {
                    // PyTorch's split_backward: zeros for the parts that got no gradient, in
                    // order, then one cat; the zeros go when the list does.
                    let mut all = Vec::with_capacity(grads.len());
                    for (g, &len) in grads.iter().zip(&sizes) {
                        all.push(match g {
                            Some(g) => g.clone(),
                            None => {
                                let mut s = shape.clone();
                                s[d] = len;
                                Tensor::zeros(&s, &opts)?
                            }
                        });
                    }
                    let out = Tensor::cat(&all, d as isize)?;
                    drop_first_to_last(all);
                    Ok(vec![Some(out)])
                }),
            );
        }
        Ok(parts)
    }

    /// `t.repeat(r0, r1, …)`: the tensor tiled `r` times along each dim (a new tensor).
    pub fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        super::check_interrupt()?;
        if repeats.len() < self.dim() {
            return Err(TensorError::runtime(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
            ));
        }
        let padded: Vec<usize> = std::iter::repeat_n(1, repeats.len() - self.dim())
            .chain(self.dims().iter().copied())
            .collect();
        let target: Vec<usize> = padded.iter().zip(repeats).map(|(s, r)| s * r).collect();
        let out = self.empty_same(&target, self.dtype())?;
        if out.numel() > 0 {
            // The output seen as [r0, s0, r1, s1, …] is the input broadcast along each r.
            let src = self.layout().broadcast_to(&padded);
            let (mut shape, mut strides) = (Vec::new(), Vec::new());
            for (i, &r) in repeats.iter().enumerate() {
                shape.extend([r, padded[i]]);
                strides.extend([0, src.strides[i]]);
            }
            let from = Layout {
                shape: shape.clone(),
                strides,
                offset: src.offset,
            };
            let to = Layout::contiguous(&shape);
            self.backend()
                .copy(self.operand_with(&from), out.operand_with(&to))?;
        }
        if needs_grad(&[self]) {
            let (input, repeats) = (self.shape(), repeats.to_vec());
            record(
                &out,
                "RepeatBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(repeat_backward(g, &repeats, &input)?)])),
            );
        }
        Ok(out)
    }
}

/// Drop a list's items first to last, as a C++ vector of temporaries is destroyed.
fn drop_first_to_last(items: Vec<Tensor>) {
    for t in items {
        drop(t);
    }
}

/// PyTorch's repeat_backward: sum the leading new dims away, then one reshape to
/// `[r0, s0, r1, s1, …]` (repeats of 1 left out) and one sum over the repeat dims.
fn repeat_backward(g: &Tensor, repeats: &[usize], input: &[usize]) -> Result<Tensor> {
    if repeats.contains(&0) {
        return Tensor::zeros(input, &g.like_options());
    }
    let mut g = g.clone();
    let unsqueezed = repeats.len() - input.len();
    for _ in 0..unsqueezed {
        g = g.sum(Some(0), false)?;
    }
    let (mut grad_size, mut sum_dims) = (Vec::new(), Vec::new());
    for (d, &s) in input.iter().enumerate() {
        let r = repeats[d + unsqueezed];
        if r != 1 {
            grad_size.push(r as isize);
            sum_dims.push(grad_size.len() - 1);
        }
        grad_size.push(s as isize);
    }
    if sum_dims.is_empty() {
        return Ok(g);
    }
    let reshaped = g.reshape(&grad_size)?;
    let summed = reshaped.reduce_raw(crate::device::ReduceOp::Sum, &sum_dims, g.dtype())?;
    // PyTorch's `sum(dims)` returns a new tensor of the input's shape, not a view: an input
    // buffer may add the next gradient into it in place.
    Ok(summed.result_as_shape(input))
}
