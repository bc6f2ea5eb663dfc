//! `scatter` and `scatter_` of a tensor's values (or of one value) along a dim at an index, and
//! their backward.

use crate::autograd::{needs_grad, record_multi, SavedTensor};

use torchlet_alloc::types::element::store_scalar;

use super::layout::wrap_dim;
use super::{Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// `self.scatter(dim, index, src)`: a copy of `self` with `src[i][j]` written at
    /// `index[i][j]` along `dim` (2-D shown), as PyTorch's out-of-place scatter makes it.
    pub fn scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        let d = self.check_scatter(dim, index, src)?;
        let out = super::convert::empty_like_dense(self, self.dtype())?;
        out.backend().copy(self.operand(), out.operand())?;
        self.scatter_values(&out, d, index, src)?;
        if needs_grad(&[self, src]) {
            let ix = SavedTensor::new(index)?;
            record_multi(
                std::slice::from_ref(&out),
                "ScatterBackward0",
                &[self, src],
                true,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let ix = ix.get()?;
                    // self: the gradient with the overwritten positions zeroed; src: the
                    // gradient at the positions it was written to.
                    let to_self = if mask[0] {
                        Some(g.scatter_value(d as isize, ix, Scalar::Int(0))?)
                    } else {
                        None
                    };
                    let to_src = if mask.get(1).copied().unwrap_or(false) {
                        Some(g.gather(d as isize, ix)?)
                    } else {
                        None
                    };
                    Ok(vec![to_self, to_src])
                }),
            );
        }
        Ok(out)
    }

    /// `self.scatter_(dim, index, src)`: the scatter written into `self` (no autograd).
    pub fn scatter_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        super::check_interrupt()?;
        let d = self.check_scatter(dim, index, src)?;
        self.scatter_values(self, d, index, src)
    }

    fn scatter_values(&self, dst: &Tensor, d: usize, index: &Tensor, src: &Tensor) -> Result<()> {
        if index.numel() > 0 {
            dst.backend()
                .scatter(src.operand(), index.operand(), d, dst.operand())?;
        }
        Ok(())
    }

    /// PyTorch's checks of scatter's arguments; the wrapped dim.
    fn check_scatter(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<usize> {
        self.check_index(index, "scatter", false)?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        if src.dtype() != self.dtype() {
            return Err(TensorError::runtime(format!(
                "scatter(): Expected self.dtype to be equal to src.dtype, but got {} and {}",
                self.dtype().scalar_type_name(),
                src.dtype().scalar_type_name()
            )));
        }
        if index.dim() != self.dim() || src.dim() != self.dim() {
            return Err(TensorError::runtime(
                "Index tensor must have the same number of dimensions as self tensor",
            ));
        }
        for k in 0..self.dim() {
            let over_src = index.dims()[k] > src.dims()[k];
            if over_src || (k != d && index.dims()[k] > self.dims()[k]) {
                return Err(TensorError::runtime(format!(
                    "Expected index {:?} to be smaller than self {:?} apart from dimension {d} and to be smaller size than src {:?}",
                    index.dims(),
                    self.dims(),
                    src.dims()
                )));
            }
        }
        let size = self.dims().get(d).copied().unwrap_or(1);
        for k in index.index_values()? {
            if k < 0 || k as usize >= size {
                return Err(TensorError::index(format!(
                    "index {k} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        Ok(d)
    }
}

impl Tensor {
    /// `self.scatter(dim, index, value)`: a copy of `self` with `value` at the scattered
    /// positions (one device allocation, as PyTorch's scatter of a scalar; the values are placed
    /// on the host).
    pub fn scatter_value(&self, dim: isize, index: &Tensor, value: Scalar) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_scatter(dim, index, self)?;
        let out = self.contiguous_copy()?;
        out.scatter_value_(dim, index, value)?;
        Ok(out)
    }

    /// `self.scatter_(dim, index, value)` in place on a contiguous tensor (no allocation; the
    /// values are placed on the host).
    pub fn scatter_value_(&self, dim: isize, index: &Tensor, value: Scalar) -> Result<()> {
        let d = self.check_scatter(dim, index, self)?;
        if !self.is_contiguous() {
            return Err(TensorError::not_implemented(
                "torchlet: scatter_ of a value into a strided view is not supported yet; scatter into a contiguous tensor",
            ));
        }
        let out = self;
        if !out.has_values() || index.numel() == 0 {
            return Ok(());
        }
        let mut bytes = out.host_bytes()?;
        let (dtype, shape) = (out.dtype(), out.dims().to_vec());
        let strides = super::Layout::contiguous(&shape).strides;
        let positions = super::Layout::contiguous(index.dims());
        for (i, k) in index.index_values()?.into_iter().enumerate() {
            // The element of `out` at index's position `i`, with dim `d` replaced by `k`.
            let mut rest = i;
            let mut at = 0;
            for (axis, &stride) in positions.strides.iter().enumerate() {
                let coord = rest / stride;
                rest %= stride;
                at += if axis == d { k as usize } else { coord } * strides[axis];
            }
            // SAFETY: `at` is an element of `out`, whose bytes `bytes` holds.
            unsafe { store_scalar(bytes.as_mut_ptr(), dtype, at, value) };
        }
        out.backend().write_bytes(
            out.storage_ptr() + (out.layout().offset * out.element_size()) as u64,
            &bytes,
        )?;
        Ok(())
    }
}
