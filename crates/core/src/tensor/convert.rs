//! Moving and converting: `to_device`, `to_dtype`, `contiguous`, `clone`, reading values back.

use crate::autograd::{needs_grad, record};
use crate::device::{self, Device};

use super::element::{load_f64, load_scalar};
use super::{DType, Layout, Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// A contiguous copy in `dtype` on this device (always allocates, never records).
    pub(crate) fn copy_as(&self, dtype: DType) -> Result<Tensor> {
        let out = self.empty_same(self.dims(), dtype)?;
        if out.numel() > 0 {
            self.backend().copy(self.operand(), out.operand())?;
        }
        Ok(out)
    }

    /// A contiguous copy with no autograd history.
    pub(crate) fn contiguous_copy(&self) -> Result<Tensor> {
        self.copy_as(self.dtype())
    }

    /// A copy on another GPU: the contiguous bytes peer-to-peer between real GPUs, a host
    /// memcpy between simulated ones.
    fn copy_to_gpu(&self, target: std::sync::Arc<dyn device::Backend>) -> Result<Tensor> {
        let src = if self.is_contiguous() {
            self.clone()
        } else {
            self.contiguous_copy()?
        };
        let out = Tensor::empty_with(target, self.dims(), self.dtype())?;
        device::peer::copy_bytes(
            src.backend().as_ref(),
            src.data_ptr(),
            out.backend().as_ref(),
            out.data_ptr(),
            src.nbytes(),
        )?;
        Ok(out)
    }

    /// The tensor on `device` (the same tensor when it is already there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        super::check_interrupt()?;
        if device == self.device() {
            return Ok(self.clone());
        }
        let target = device::backend(device)?;
        let out = if device == Device::Meta {
            // Note [meta device]: to meta makes a tensor of the shape, copying nothing.
            Tensor::empty_with(target, self.dims(), self.dtype())?
        } else if self.device() == Device::Meta {
            return Err(TensorError::not_implemented(device::shapes::META_NO_DATA));
        } else if self.is_cuda() && device.is_cuda() {
            self.copy_to_gpu(target)?
        } else if !self.inner.storage.has_values() {
            // Shapes only (`torchlet fit`): the copy's memory is what matters, its bytes are not
            // values, and reading them says so.
            let out = Tensor::empty_with(target, self.dims(), self.dtype())?;
            out.backend().fill(out.operand(), Scalar::Int(0))?;
            out.inner.storage.mark_valueless();
            out
        } else {
            // The copy goes through host bytes; only the result is allocated on a GPU.
            let bytes = self.host_bytes()?;
            let out = Tensor::empty_with(target, self.dims(), self.dtype())?;
            if !bytes.is_empty() {
                out.backend().write_bytes(out.inner.storage.ptr(), &bytes)?;
            }
            out
        };
        if needs_grad(&[self]) {
            let from = self.device();
            record(
                &out,
                "ToCopyBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.to_device(from)?)])),
            );
        }
        Ok(out)
    }

    /// The tensor converted to `dtype` (the same tensor when it already has it).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        super::check_interrupt()?;
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        // PyTorch's `to` keeps a dense tensor's strides (`preserve_format`): a transposed one
        // stays transposed, which decides whether a later `.contiguous()` copies.
        let out = empty_like_dense(self, dtype)?;
        if out.numel() > 0 {
            self.backend().copy(self.operand(), out.operand())?;
        }
        if needs_grad(&[self]) && dtype.is_float() {
            let from = self.dtype();
            record(
                &out,
                "ToCopyBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.to_dtype(from)?)])),
            );
        }
        Ok(out)
    }

    /// A copy of `self` laid out as `like` when `like` is dense (PyTorch's
    /// `clone_obey_contract`: a leaf's gradient in the leaf's strides), else contiguous.
    pub(crate) fn copy_laid_out_as(&self, like: &Tensor) -> Result<Tensor> {
        if !is_dense(like) {
            return self.contiguous_copy();
        }
        let out = empty_ordered_like(like, self.dims(), self.dtype())?;
        self.backend().copy(self.operand(), out.operand())?;
        Ok(out)
    }

    /// The tensor with row-major memory (the same tensor when it already is).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.clone_tensor()
    }

    /// A copy with its own memory (`clone()`), recorded as `CloneBackward0`.
    pub fn clone_tensor(&self) -> Result<Tensor> {
        super::check_interrupt()?;
        let out = self.contiguous_copy()?;
        if needs_grad(&[self]) {
            record(
                &out,
                "CloneBackward0",
                &[self],
                false,
                Box::new(|g, _| Ok(vec![Some(g.clone())])),
            );
        }
        Ok(out)
    }

    /// The elements' bytes in row-major order, copied to the host.
    ///
    /// A strided view whose elements fill most of the memory they span (a transpose, a
    /// permute) is read whole and reordered on the host, so reading it takes no device memory,
    /// as PyTorch's device-to-host copy of a dense view takes none.
    pub(crate) fn host_bytes(&self) -> Result<Vec<u8>> {
        if !self.inner.storage.has_values() {
            return Err(TensorError::runtime(if self.device() == Device::Meta {
                device::shapes::META_NO_DATA
            } else {
                device::shapes::NO_VALUES
            }));
        }
        let size = self.element_size();
        let l = self.layout();
        let mut bytes = vec![0u8; self.nbytes()];
        if bytes.is_empty() {
            return Ok(bytes);
        }
        let base = self.inner.storage.ptr();
        if self.is_contiguous() {
            self.backend()
                .read_bytes(base + (l.offset * size) as u64, &mut bytes)?;
            return Ok(bytes);
        }
        let span = l.extent() - l.offset;
        if span > 2 * self.numel() {
            return self.contiguous_copy()?.host_bytes();
        }
        let mut raw = vec![0u8; span * size];
        self.backend()
            .read_bytes(base + (l.offset * size) as u64, &mut raw)?;
        let from = Layout {
            offset: 0,
            ..l.clone()
        };
        let to = Layout::contiguous(&l.shape);
        let dtype = self.dtype();
        crate::device::cpu::kernels::copy(
            crate::device::Operand {
                ptr: raw.as_ptr() as u64,
                dtype,
                layout: &from,
            },
            crate::device::Operand {
                ptr: bytes.as_mut_ptr() as u64,
                dtype,
                layout: &to,
            },
        )?;
        Ok(bytes)
    }

    /// Every element as a `Scalar`, in row-major order (copied to the host).
    pub fn to_scalars(&self) -> Result<Vec<Scalar>> {
        let bytes = self.host_bytes()?;
        let dtype = self.dtype();
        // SAFETY: `bytes` holds `numel` elements of `dtype`.
        Ok((0..self.numel())
            .map(|i| unsafe { load_scalar(bytes.as_ptr(), dtype, i) })
            .collect())
    }

    /// Every element as f64, in row-major order (copied to the host).
    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        let bytes = self.host_bytes()?;
        let dtype = self.dtype();
        // SAFETY: `bytes` holds `numel` elements of `dtype`.
        Ok((0..self.numel())
            .map(|i| unsafe { load_f64(bytes.as_ptr(), dtype, i) })
            .collect())
    }

    /// The value of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        super::check_interrupt()?;
        if self.device() == Device::Meta {
            return Err(TensorError::runtime(
                "Tensor.item() cannot be called on meta tensors",
            ));
        }
        let n = self.numel();
        if n != 1 {
            return Err(TensorError::runtime(format!(
                "a Tensor with {n} elements cannot be converted to Scalar"
            )));
        }
        let one = self.view_as_layout(Layout {
            shape: vec![],
            strides: vec![],
            offset: self.layout().offset,
        });
        Ok(one.to_scalars()?[0])
    }
}

/// `t`'s dims from the largest stride to the smallest.
fn stride_order(t: &Tensor) -> Vec<usize> {
    let mut order: Vec<usize> = (0..t.dim()).collect();
    order.sort_by_key(|&d| std::cmp::Reverse(t.stride()[d]));
    order
}

/// Whether `t`'s elements fill its memory without gaps or overlaps in some order of its dims
/// (PyTorch's `is_non_overlapping_and_dense`).
pub(crate) fn is_dense(t: &Tensor) -> bool {
    let order = stride_order(t);
    let own = Layout::contiguous(&order.iter().map(|&d| t.dims()[d]).collect::<Vec<_>>());
    order
        .iter()
        .enumerate()
        .all(|(i, &d)| t.dims()[d] == 1 || t.stride()[d] == own.strides[i])
}

/// An uninitialised tensor shaped and strided like `t` when `t` is dense (PyTorch's
/// `empty_like`, which keeps a permuted layout), else contiguous.
pub(crate) fn empty_like_dense(t: &Tensor, dtype: DType) -> Result<Tensor> {
    empty_ordered_like(t, t.dims(), dtype)
}

/// An uninitialised tensor of `shape` whose dims are laid out in `t`'s stride order when `t` is
/// dense (cuDNN's `alloc_with_matching_layout`), else contiguous.
pub(crate) fn empty_ordered_like(t: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let order = stride_order(t);
    let dims_of = |shape: &[usize]| order.iter().map(|&d| shape[d]).collect::<Vec<_>>();
    if !is_dense(t) {
        return t.empty_same(shape, dtype);
    }
    let permuted = dims_of(shape);
    let dense = Layout::contiguous(&permuted);
    let storage = t.empty_same(&permuted, dtype)?;
    let mut strides = vec![0; t.dim()];
    for (i, &d) in order.iter().enumerate() {
        strides[d] = dense.strides[i];
    }
    let layout = Layout {
        shape: shape.to_vec(),
        strides,
        offset: 0,
    };
    Ok(storage.relayout_result(layout))
}
