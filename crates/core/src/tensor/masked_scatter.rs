//! `masked_scatter`: a mask's places filled from a source in order, with the memory of PyTorch
//! 2.11's CUDA kernel (an int64 prefix sum of the mask and CUB's scan scratch) and its backward.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::cub_scratch::scan_bytes;

use super::index_put_sorted::temp;
use super::{DType, Result, Scalar, Tensor, TensorError};

// Note [masked_scatter's prefix sum]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ATen's CUDA `masked_scatter_` makes an int64 exclusive prefix sum of the (broadcast) mask, one
// element per mask element, then the mask contiguous (a copy when it is broadcast), runs CUB's
// exclusive sum (its scratch comes and goes), makes the source contiguous, and frees those in
// the reverse order when it returns. The out-of-place form first clones `self` broadcast to the
// mask's shape. MaskedScatterBackward0 keeps the mask: the gradient of `self` is the gradient
// with the mask's places zeroed, that of the source the gradient's masked elements, padded with
// zeros to the source's size (`masked_scatter_backward`). torchlet computes the values on the
// host, where the mask is read.

impl Tensor {
    /// `torch.masked_scatter(self, mask, source)`: a copy of `self` (broadcast with `mask`) whose
    /// elements where `mask` holds are `source`'s, taken in row-major order.
    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        check(self, mask, source, "masked_scatter")?;
        let shape = super::broadcast_shapes(self.dims(), mask.dims())?;
        let out = self.empty_same(&shape, self.dtype())?;
        out.copy_from(self)?;
        out.masked_scatter_raw(mask, source)?;
        if needs_grad(&[self, source]) {
            record_backward(&out, self, mask, source)?;
        }
        Ok(out)
    }

    /// `self.masked_scatter_(mask, source)`: in place; `mask` broadcasts to `self`'s shape.
    pub fn masked_scatter_(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        self.check_inplace()?;
        check(self, mask, source, "masked_scatter_")?;
        let shape = super::broadcast_shapes(self.dims(), mask.dims())?;
        if shape != self.dims() {
            return Err(TensorError::runtime(format!(
                "masked_scatter_: the mask's shape {:?} does not broadcast to self's {:?}",
                mask.dims(),
                self.dims()
            )));
        }
        self.masked_scatter_raw(mask, source)?;
        if needs_grad(&[self, source]) {
            record_backward(self, self, mask, source)?;
        }
        Ok(self.clone())
    }

    /// The write itself (Note [masked_scatter's prefix sum]), no autograd.
    fn masked_scatter_raw(&self, mask: &Tensor, source: &Tensor) -> Result<()> {
        let cuda = self.backend().props().is_some() && self.numel() > 0;
        let mask = mask.expand(self.dims())?;
        let prefix = match cuda {
            true => temp(self, self.numel() * DType::I64.size())?,
            false => None,
        };
        let mask_copy = match cuda && !mask.is_contiguous() {
            true => temp(self, self.numel())?,
            false => None,
        };
        if cuda {
            drop(temp(self, scan_bytes(self.numel(), 8))?);
        }
        let source_copy = match cuda && !source.is_contiguous() {
            true => temp(self, source.nbytes())?,
            false => None,
        };
        if self.has_values() {
            self.scatter_on_host(&mask, source)?;
        }
        drop((source_copy, mask_copy, prefix));
        self.bump_version();
        Ok(())
    }

    /// The values: each true place of `mask` (shaped like `self`), in row-major order, takes
    /// the next element of `source`.
    fn scatter_on_host(&self, mask: &Tensor, source: &Tensor) -> Result<()> {
        if !self.is_contiguous() {
            return Err(TensorError::runtime(
                "torchlet: masked_scatter_ writes a contiguous tensor only; call .contiguous() on it first",
            ));
        }
        let flags = mask.host_bytes()?;
        let wanted = flags.iter().filter(|&&b| b != 0).count();
        if wanted > source.numel() {
            return Err(TensorError::runtime(
                "masked_scatter: expected source to have at least as many elements as the ones in mask",
            ));
        }
        if wanted == 0 {
            return Ok(());
        }
        let size = self.element_size();
        let mut values = self.host_bytes()?;
        let taken = source.host_bytes()?;
        let places = flags.iter().enumerate().filter(|(_, &b)| b != 0);
        for (k, (i, _)) in places.enumerate() {
            values[i * size..(i + 1) * size].copy_from_slice(&taken[k * size..(k + 1) * size]);
        }
        let at = self.storage_ptr() + (self.storage_offset() * size) as u64;
        self.backend().write_bytes(at, &values)
    }
}

/// PyTorch's checks of the mask's and the source's dtypes.
fn check(t: &Tensor, mask: &Tensor, source: &Tensor, name: &str) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(TensorError::runtime(format!(
            "{name}_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().scalar_type_name()
        )));
    }
    if source.dtype() != t.dtype() {
        return Err(TensorError::runtime(format!(
            "{name}: expected self and source to have same dtypes but got {} and {}",
            t.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if mask.device() != t.device() || source.device() != t.device() {
        return Err(TensorError::runtime(format!(
            "{name}: expected self, mask and source on the same device, but got {}, {} and {}",
            t.device(),
            mask.device(),
            source.device()
        )));
    }
    Ok(())
}

/// MaskedScatterBackward0 on `out` from `input` (Note [masked_scatter's prefix sum]).
fn record_backward(out: &Tensor, input: &Tensor, mask: &Tensor, source: &Tensor) -> Result<()> {
    let m = SavedTensor::new(mask)?;
    let (input_shape, source_shape) = (input.shape(), source.shape());
    let source_numel = source.numel();
    record(
        out,
        "MaskedScatterBackward0",
        &[input, source],
        true,
        Box::new(move |g, wanted| {
            let mask = m.get()?;
            let grad_input = match wanted.first().copied().unwrap_or(true) {
                true => Some(
                    g.masked_fill(mask, Scalar::Int(0))?
                        .sum_to_size(&input_shape)?,
                ),
                false => None,
            };
            let grad_source = match wanted.get(1).copied().unwrap_or(true) {
                true => Some(source_gradient(g, mask, source_numel, &source_shape)?),
                false => None,
            };
            Ok(vec![grad_input, grad_source])
        }),
    );
    Ok(())
}

/// `masked_scatter_backward`: the gradient's masked elements, zeros after them up to the
/// source's size, viewed in the source's shape.
fn source_gradient(g: &Tensor, mask: &Tensor, numel: usize, shape: &[usize]) -> Result<Tensor> {
    let selected = g.masked_select(mask)?;
    let missing = numel.saturating_sub(selected.numel());
    let full = match missing {
        0 => selected,
        _ => {
            let zeros = Tensor::zeros(&[missing], &g.like_opts())?;
            let joined = Tensor::cat(&[selected.clone(), zeros.clone()], 0)?;
            // `cat({mask_selected, zeros})`'s list goes first, then the assignment frees the old.
            drop(zeros);
            drop(selected);
            joined
        }
    };
    let dims: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    full.view(&dims)
}
