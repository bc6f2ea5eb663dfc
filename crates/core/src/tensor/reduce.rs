//! Reductions run as their rows declare them, `sum_to_size`, softmax and log-softmax.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::reduce_plan::{staging, KernelTraits, Staging};
use crate::device::{ReduceOp, ReduceOut, StagingMemory, Storage};

use super::layout::wrap_dim;
use super::reduce_grad::Fit;
use super::{DType, Result, Scalar, Tensor, TensorError};

/// How a reduction reads its input, as PyTorch prepares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// The input as it is, strided views included (TensorIterator walks any strides).
    AsIs,
    /// A contiguous copy of a non-contiguous input (`max()` and `min()` over everything:
    /// `self.contiguous()` in PyTorch).
    Contiguous,
    /// The input flattened to one dim, a copy only when no view can (`argmax()` over
    /// everything: `reshape(-1)`); the reduction then runs over that dim.
    Flat,
}

/// PyTorch's staging memory for one reduction on a CUDA-like device. Fields drop in order:
/// the semaphores are freed first, then the buffer, as PyTorch's `DataPtr`s go.
pub(crate) struct Staged {
    semaphores: Storage,
    buffer: Storage,
    plan: Staging,
}

impl Staged {
    /// What the device's plan for reducing `src` over `dims` takes (the buffer, then the
    /// semaphores), or `None` when it keeps every output within one block.
    pub(crate) fn new(
        src: &Tensor,
        dims: &[usize],
        traits: &KernelTraits,
    ) -> Result<Option<Staged>> {
        let backend = src.backend();
        let Some(props) = backend.props() else {
            return Ok(None);
        };
        let l = src.layout();
        let Some(plan) = staging(&l.shape, &l.strides, l.offset, dims, traits, &props) else {
            return Ok(None);
        };
        let buffer = Storage::new(backend.clone(), plan.buffer_bytes)?;
        let semaphores = Storage::new(backend.clone(), plan.semaphore_bytes)?;
        Ok(Some(Staged {
            semaphores,
            buffer,
            plan,
        }))
    }

    fn memory(&self) -> StagingMemory {
        StagingMemory {
            plan: self.plan,
            buffer: self.buffer.ptr(),
            semaphores: self.semaphores.ptr(),
        }
    }
}

/// The error for max/min/argmax/argmin of an empty tensor, which have no identity.
fn no_identity(op: ReduceOp) -> TensorError {
    TensorError::index(format!(
        "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
        op.name()
    ))
}

impl Tensor {
    /// Reduce over `dims` (ascending) into a new tensor of the keepdim shape; no autograd.
    pub(crate) fn reduce_raw(&self, op: ReduceOp, dims: &[usize], dtype: DType) -> Result<Tensor> {
        Ok(self.reduce_with(op, dims, dtype, false, Read::AsIs)?.0)
    }

    /// PyTorch's reduction, allocation by allocation: the output (then the int64 indices, with
    /// `indices`), the copy of the input its kernel reads, and on a CUDA-like device the staging
    /// buffer and semaphores its plan takes when it splits outputs across blocks; those
    /// temporaries are freed last-in first-out once the kernel is queued.
    fn reduce_with(
        &self,
        op: ReduceOp,
        dims: &[usize],
        dtype: DType,
        indices: bool,
        read: Read,
    ) -> Result<(Tensor, Option<Tensor>)> {
        super::check_interrupt()?;
        let mut shape = self.shape();
        for &d in dims {
            shape[d] = 1;
        }
        let dims = if read == Read::Flat {
            shape = vec![1];
            &[0][..]
        } else {
            dims
        };
        if self.numel() == 0 && op.empty_value().is_none() {
            return Err(no_identity(op));
        }
        let out = self.empty_same(&shape, dtype)?;
        let idx = if indices {
            Some(self.empty_same(&shape, DType::I64)?)
        } else {
            None
        };
        self.reduce_into(op, dims, &out, idx.as_ref(), read)?;
        Ok((out, idx))
    }

    /// Reduce into `out` (the keepdim shape) and `idx`, with the temporaries of
    /// [`Tensor::reduce_with`].
    pub(crate) fn reduce_into(
        &self,
        op: ReduceOp,
        dims: &[usize],
        out: &Tensor,
        idx: Option<&Tensor>,
        read: Read,
    ) -> Result<()> {
        if self.numel() == 0 {
            let v = op.empty_value().ok_or_else(|| no_identity(op))?;
            self.backend().fill(out.operand(), Scalar::Float(v))?;
            return Ok(());
        }
        let copy = self.reduce_input(op, read)?;
        let src = copy.as_ref().unwrap_or(self);
        let traits = KernelTraits::of(op, self.dtype(), idx.is_some());
        let staged = Staged::new(src, dims, &traits)?;
        let target = ReduceOut {
            dst: out.operand(),
            indices: idx.map(|t| t.operand()),
            staging: staged.as_ref().map(Staged::memory),
        };
        self.backend().reduce(op, src.operand(), dims, target)?;
        // PyTorch's temporaries die in reverse order of creation: the staging, then the copy.
        drop(staged);
        drop(copy);
        Ok(())
    }

    /// What a reduction's kernel reads instead of this input, if anything: PyTorch's integer
    /// and bool sums read an int64 copy; `Read::Contiguous` a contiguous copy; `Read::Flat` a
    /// one-dim view (or copy).
    fn reduce_input(&self, op: ReduceOp, read: Read) -> Result<Option<Tensor>> {
        let dtype = self.dtype();
        if op.reads_int64_copy(dtype) {
            return Ok(Some(self.copy_as(DType::I64)?));
        }
        match read {
            Read::Contiguous if !self.is_contiguous() => Ok(Some(self.contiguous_copy()?)),
            Read::Flat => Ok(Some(self.data_handle().reshape(&[-1])?)),
            _ => Ok(None),
        }
    }

    /// Dims to reduce for `dim` (`None`: all), and the output shape without keepdim.
    fn reduce_plan(&self, dim: Option<isize>, keepdim: bool) -> Result<(Vec<usize>, Vec<usize>)> {
        let n = self.dim();
        let dims: Vec<usize> = match dim {
            Some(d) => {
                let d = wrap_dim(d, n)?;
                if n == 0 {
                    vec![]
                } else {
                    vec![d]
                }
            }
            None => (0..n).collect(),
        };
        Ok(self.reduced_shape(dims, keepdim))
    }

    /// `dims` and the shape reducing them leaves (1 where reduced with `keepdim`, else dropped).
    fn reduced_shape(&self, dims: Vec<usize>, keepdim: bool) -> (Vec<usize>, Vec<usize>) {
        let n = self.dim();
        let shape: Vec<usize> = if keepdim {
            (0..n)
                .map(|i| if dims.contains(&i) { 1 } else { self.dims()[i] })
                .collect()
        } else {
            (0..n)
                .filter(|i| !dims.contains(i))
                .map(|i| self.dims()[i])
                .collect()
        };
        (dims, shape)
    }

    /// The reduction `op` over all elements (`dim` `None`) or along `dim`, as its row in
    /// `reduce_list` declares it: the output dtype, how the input is read, whether indices come
    /// with the values, and the backward.
    pub(crate) fn reduction(
        &self,
        op: ReduceOp,
        dim: Option<isize>,
        keepdim: bool,
    ) -> Result<Tensor> {
        Ok(self.reduction_with_indices(op, dim, keepdim)?.0)
    }

    /// `reduction`, and the int64 indices of the chosen elements where the op makes them along a
    /// dim (`x.max(1)` returns both in PyTorch: `(values, indices)`), shaped as the values.
    pub fn reduction_with_indices(
        &self,
        op: ReduceOp,
        dim: Option<isize>,
        keepdim: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (dims, shape) = self.reduce_plan(dim, keepdim)?;
        let (read, indices) = match dim {
            None => (op.whole_read(), false),
            Some(_) => (Read::AsIs, op.indexes_along_dim()),
        };
        self.reduce_planned(op, (dims, shape), keepdim, dim.is_some(), (read, indices))
    }

    /// The reduction `op` (sum, mean, …; not one with indices) over several `dims` at once, as
    /// `x.mean((-1, -2), keepdim=True)` runs: one kernel, one output.
    pub fn reduction_over(&self, op: ReduceOp, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let n = self.dim();
        let mut wrapped = dims
            .iter()
            .map(|&d| wrap_dim(d, n))
            .collect::<Result<Vec<_>>>()?;
        wrapped.sort_unstable();
        wrapped.dedup();
        let plan = self.reduced_shape(wrapped, keepdim);
        Ok(self
            .reduce_planned(op, plan, keepdim, true, (Read::AsIs, false))?
            .0)
    }

    fn reduce_planned(
        &self,
        op: ReduceOp,
        (dims, shape): (Vec<usize>, Vec<usize>),
        keepdim: bool,
        along_dims: bool,
        (read, indices): (Read, bool),
    ) -> Result<(Tensor, Option<Tensor>)> {
        // Held to the end: the autocast policy stays suspended while the reduction runs.
        let autocast = op
            .autocast()
            .and_then(|name| super::autocast::fp32_output(name, self));
        let dtype = match &autocast {
            Some((d, _)) => *d,
            None => op.out_dtype(self.dtype())?,
        };
        let (values, idx) = self.reduce_with(op, &dims, dtype, indices, read)?;
        let out = values.result_as_shape(&shape);
        if needs_grad(&[self]) {
            let (grad, whole_node, dim_node) = op.grad();
            let node = if along_dims { dim_node } else { whole_node };
            let fit = Fit {
                input: self.shape(),
                dims,
                keepdim,
            };
            grad.record(self, &out, idx.as_ref(), node, fit)?;
        }
        let idx = idx.map(|i| i.result_as_shape(&shape));
        Ok((out, idx))
    }
    /// Sum broadcast dims away so the result has `shape` (a no-op when it already has).
    pub fn sum_to_size(&self, shape: &[usize]) -> Result<Tensor> {
        if self.dims() == shape {
            return Ok(self.clone());
        }
        let extra = self.dim() - shape.len();
        let dims: Vec<usize> = (0..self.dim())
            .filter(|&i| i < extra || (shape[i - extra] == 1 && self.dims()[i] != 1))
            .collect();
        if dims.is_empty() {
            return self.reshape_usize(shape);
        }
        let out = self.reduce_raw(ReduceOp::Sum, &dims, self.dtype())?;
        Ok(out.view_as_shape(shape))
    }

    /// A reduction's fresh result in its final shape (no autograd): PyTorch allocates that
    /// shape and reduces through a keepdim view of its own, so the result is no view.
    pub(crate) fn result_as_shape(&self, shape: &[usize]) -> Tensor {
        if self.dims() == shape {
            return self.clone();
        }
        let mut l = super::Layout::contiguous(shape);
        l.offset = self.layout().offset;
        self.relayout_result(l)
    }

    /// A view of a contiguous tensor with another shape of the same size (no autograd).
    pub(crate) fn view_as_shape(&self, shape: &[usize]) -> Tensor {
        if self.dims() == shape {
            return self.clone();
        }
        let mut l = super::Layout::contiguous(shape);
        l.offset = self.layout().offset;
        self.view_as_layout(l)
    }

    /// (Log-)softmax into a new tensor of `out_dtype`: `self`'s dtype, or float32 from float16
    /// (PyTorch's `half_to_float` kernel, which reads the input as it is).
    fn softmax_impl(&self, dim: isize, log: bool, out_dtype: DType) -> Result<Tensor> {
        super::check_interrupt()?;
        if !self.dtype().is_float() {
            return Err(TensorError::runtime(format!(
                "\"{}\" not implemented for '{}'",
                if log {
                    "log_softmax_lastdim_kernel_impl"
                } else {
                    "softmax_lastdim_kernel_impl"
                },
                self.dtype().scalar_type_name()
            )));
        }
        let d = wrap_dim(dim, self.dim())?.min(self.dim().saturating_sub(1));
        let out = self.empty_same(self.dims(), out_dtype)?;
        let in_dtype = self.dtype();
        if self.numel() > 0 {
            if self.dim() == 0 {
                let v = if log { 0.0 } else { 1.0 };
                self.backend().fill(out.operand(), Scalar::Float(v))?;
            } else {
                self.backend()
                    .softmax(self.operand(), d, log, out.operand())?;
            }
        }
        if needs_grad(&[self]) {
            let name = if log {
                "LogSoftmaxBackward0"
            } else {
                "SoftmaxBackward0"
            };
            let grad_fn = softmax_grad_fn(SavedTensor::new(&out)?, d, log, in_dtype);
            record(&out, name, &[self], true, grad_fn);
        }
        Ok(out)
    }

    /// Softmax along `dim`; backward keeps the output.
    pub fn softmax(&self, dim: isize) -> Result<Tensor> {
        self.softmax_as(dim, false, None)
    }

    /// Log-softmax along `dim`; backward keeps the output.
    pub fn log_softmax(&self, dim: isize) -> Result<Tensor> {
        self.softmax_as(dim, true, None)
    }

    /// (Log-)softmax with PyTorch's optional `dtype`: the input converted first (a recorded
    /// cast), except float16 to float32 on a GPU, which one kernel does. Under autocast, with no
    /// dtype given, the result is float32 (the `fp32_set_opt_dtype` policy).
    pub fn softmax_as(&self, dim: isize, log: bool, dtype: Option<DType>) -> Result<Tensor> {
        let op = if log { "log_softmax" } else { "softmax" };
        let auto = match dtype {
            Some(_) => None,
            None => super::autocast::fp32_output(op, self),
        };
        let dtype = dtype.or(auto.as_ref().map(|(d, _)| *d));
        match dtype {
            Some(d) if d != self.dtype() => {
                if self.is_cuda() && self.dtype() == DType::F16 && d == DType::F32 {
                    return self.softmax_impl(dim, log, d);
                }
                self.to_dtype(d)?.softmax_impl(dim, log, d)
            }
            _ => self.softmax_impl(dim, log, self.dtype()),
        }
    }
}

/// (Log-)softmax's backward from its saved output `r` along `d`: PyTorch's
/// `_softmax_backward_data` (also `_safe_softmax`'s), the input's gradient in `in_dtype`.
pub(crate) fn softmax_grad_fn(
    r: SavedTensor,
    d: usize,
    log: bool,
    in_dtype: DType,
) -> Box<crate::autograd::GradFn> {
    Box::new(move |g, _| {
        let y = r.get()?;
        // `_softmax_backward_data` makes the input's gradient in the input's dtype.
        let dx = g.empty_same(g.dims(), in_dtype)?;
        // After the output, PyTorch's CUDA kernels take a dense gradient and free it
        // once they have run: aten/src/ATen/native/cuda/SoftMax.cu,
        // `softmax_backward_cuda_out`, always makes `tmp = grad * output` (so even a
        // contiguous gradient gets a new tensor of its size, laid out as TensorIterator lays
        // out a product: a permuted gradient gives a permuted `tmp`), and
        // `host_softmax_backward` copies what it is handed when that is not contiguous (a
        // permuted `tmp`; `log_softmax_backward_cuda_out`'s `grad` itself, when expanded by
        // `sum()`). The copy goes first, then `tmp`.
        let product = if log {
            None
        } else {
            Some(super::iter_layout::empty_elementwise(
                &[g, y],
                g.dims(),
                g.dtype(),
            )?)
        };
        let handed = product.as_ref().unwrap_or(g);
        let dense = if handed.is_contiguous() {
            None
        } else {
            Some(handed.empty_same(handed.dims(), handed.dtype())?)
        };
        // The kernel reads the gradient's values from whichever dense buffer there is.
        let read = match (&dense, &product) {
            (Some(t), _) | (None, Some(t)) => {
                if t.numel() > 0 {
                    g.backend().copy(g.operand(), t.operand())?;
                }
                t
            }
            (None, None) => g,
        };
        if y.dim() == 0 {
            g.backend().fill(dx.operand(), Scalar::Float(0.0))?;
        } else {
            g.backend()
                .softmax_backward(read.operand(), y.operand(), d, log, dx.operand())?;
        }
        drop(dense);
        drop(product);
        Ok(vec![Some(dx)])
    })
}
