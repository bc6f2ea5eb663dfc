//! `scatter` (of a tensor's values or of one value), `scatter_add` and `index_add` along a dim at
//! an index, in place and not, with their backward.

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

impl Tensor {
    /// `self.scatter_add(dim, index, src)`: a copy of `self` with each `src[i][j]` added at
    /// `index[i][j]` along `dim` (2-D shown); ScatterAddBackward0 passes the gradient to `self`
    /// as it is and gathers it at `index` for `src`.
    pub fn scatter_add(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        let d = self.check_scatter(dim, index, src)?;
        let out = super::convert::empty_like_dense(self, self.dtype())?;
        out.backend().copy(self.operand(), out.operand())?;
        out.scatter_add_values(d, index, src)?;
        if needs_grad(&[self, src]) {
            let ix = SavedTensor::new(index)?;
            record_multi(
                std::slice::from_ref(&out),
                "ScatterAddBackward0",
                &[self, src],
                true,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let to_self = mask[0].then(|| g.clone());
                    let to_src = match mask.get(1).copied().unwrap_or(false) {
                        true => Some(g.gather(d as isize, ix.get()?)?),
                        false => None,
                    };
                    Ok(vec![to_self, to_src])
                }),
            );
        }
        Ok(out)
    }

    /// `self.scatter_add_(dim, index, src)` in place (no autograd).
    pub fn scatter_add_(&self, dim: isize, index: &Tensor, src: &Tensor) -> Result<()> {
        super::check_interrupt()?;
        self.check_inplace_without_grad("scatter_add_", src)?;
        let d = self.check_scatter(dim, index, src)?;
        self.scatter_add_values(d, index, src)
    }

    fn scatter_add_values(&self, d: usize, index: &Tensor, src: &Tensor) -> Result<()> {
        if index.numel() > 0 {
            self.backend()
                .scatter_add(src.operand(), index.operand(), d, self.operand())?;
        }
        self.bump_version();
        Ok(())
    }

    /// `self.index_add(dim, index, source, alpha=…)`: a copy of `self` with `alpha * source`'s
    /// slices added at `index` along `dim`; IndexAddBackward0 passes the gradient to `self` and
    /// selects it at `index` for `source`.
    pub fn index_add(
        &self,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        alpha: f64,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let d = self.check_index_add(dim, index, source)?;
        let out = super::convert::empty_like_dense(self, self.dtype())?;
        out.backend().copy(self.operand(), out.operand())?;
        out.index_add_scaled(d, index, source, alpha)?;
        if needs_grad(&[self, source]) {
            let ix = SavedTensor::new(index)?;
            record_multi(
                std::slice::from_ref(&out),
                "IndexAddBackward0",
                &[self, source],
                true,
                Box::new(move |grads, mask| {
                    let Some(g) = &grads[0] else {
                        return Ok(Vec::new());
                    };
                    let to_self = mask[0].then(|| g.clone());
                    let to_source = match mask.get(1).copied().unwrap_or(false) {
                        true => {
                            let picked = g.index_select(d as isize, ix.get()?)?;
                            Some(if alpha == 1.0 {
                                picked
                            } else {
                                picked.mul_scalar(Scalar::Float(alpha))?
                            })
                        }
                        false => None,
                    };
                    Ok(vec![to_self, to_source])
                }),
            );
        }
        Ok(out)
    }

    /// `self.index_add_(dim, index, source, alpha=…)` in place (no autograd).
    pub fn index_add_(
        &self,
        dim: isize,
        index: &Tensor,
        source: &Tensor,
        alpha: f64,
    ) -> Result<()> {
        super::check_interrupt()?;
        self.check_inplace_without_grad("index_add_", source)?;
        let d = self.check_index_add(dim, index, source)?;
        self.index_add_scaled(d, index, source, alpha)
    }

    /// `self += alpha * source` at `index` with no temporary, as PyTorch's kernel scales each
    /// element as it adds: scaled down by `alpha` before the add and up again after (exact for
    /// powers of two; `alpha` 0 adds nothing).
    fn index_add_scaled(
        &self,
        d: usize,
        index: &Tensor,
        source: &Tensor,
        alpha: f64,
    ) -> Result<()> {
        if alpha == 0.0 {
            return Ok(());
        }
        let scale = |by: f64| -> Result<()> {
            if by != 1.0 && self.numel() > 0 {
                let op = self.operand();
                let b = self.backend();
                b.binary_scalar(
                    crate::device::BinaryOp::Mul,
                    op,
                    Scalar::Float(by),
                    false,
                    self.operand(),
                )?;
            }
            Ok(())
        };
        scale(1.0 / alpha)?;
        self.index_add_raw(d, index, source)?;
        scale(alpha)
    }

    /// PyTorch's checks of index_add's arguments; the wrapped dim.
    fn check_index_add(&self, dim: isize, index: &Tensor, source: &Tensor) -> Result<usize> {
        self.check_index(index, "index_add", true)?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        if index.dim() > 1 {
            return Err(TensorError::index(
                "index_add_(): Index is supposed to be a vector",
            ));
        }
        if source.dtype() != self.dtype() {
            return Err(TensorError::runtime(format!(
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let along = source.dims().get(d).copied().unwrap_or(1);
        if index.numel() != along {
            return Err(TensorError::index(
                "index_add_(): Number of indices should be equal to source.size(dim)",
            ));
        }
        let size = self.dims().get(d).copied().unwrap_or(1);
        for k in index.index_values()? {
            if k < 0 || k as usize >= size {
                return Err(TensorError::index(format!(
                    "index_add_(): index {k} is out of bounds for dimension {d} with size {size}"
                )));
            }
        }
        Ok(d)
    }

    /// In-place ops here record no autograd: refuse where the result would need it.
    fn check_inplace_without_grad(&self, op: &str, src: &Tensor) -> Result<()> {
        if needs_grad(&[self, src]) {
            return Err(TensorError::not_implemented(format!(
                "torchlet: {op} on tensors that require grad is not supported yet; use the \
                 out-of-place {} (x = x.{}(...))",
                op.trim_end_matches('_'),
                op.trim_end_matches('_')
            )));
        }
        Ok(())
    }
}
