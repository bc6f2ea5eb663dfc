//! `cumsum` and `flip`: computed on the host from the tensor's values (Note [host sorting]), the
//! device memory as PyTorch 2.11's CUDA kernels take it (CUB's scan scratch for one dim); and
//! `roll`, moved on the device as two slices a dim.

use crate::autograd::{needs_grad, record};
use crate::device::cub_scratch::scan_bytes;
use crate::device::Storage;
use torchlet_alloc::types::element::{load_f64, load_i64, store_f64, store_i64};

use super::layout::wrap_dim;
use super::{DType, Result, Tensor};

/// The row-major offset of element `j` along a dim of `n` elements `inner` apart, in slice `s`.
fn at(s: usize, j: usize, n: usize, inner: usize) -> usize {
    ((s / inner) * n + j) * inner + s % inner
}

impl Tensor {
    /// `torch.cumsum(self, dim, dtype)`: running sums along `dim`, in `dtype` (int64 for
    /// integer and bool inputs, the input's for floats, when not given).
    pub fn cumsum(&self, dim: isize, dtype: Option<DType>) -> Result<Tensor> {
        super::check_interrupt()?;
        let d = wrap_dim(dim, self.dim().max(1))?;
        let dtype = dtype.unwrap_or(if self.dtype().is_float() {
            self.dtype()
        } else {
            DType::I64
        });
        let out = self.empty_same(self.dims(), dtype)?;
        // impl_func_cum_ops scans `self.to(result dtype)`: a copy where the dtype differs.
        let input = if self.dtype() == dtype {
            self.clone()
        } else {
            self.copy_as(dtype)?
        };
        if self.dim() > 0 && self.numel() > 0 && self.backend().props().is_some() {
            self.scan_memory(&input, d)?;
        }
        if input.has_values() {
            write_running_sums(&input, &out, d)?;
        }
        drop(input);
        if needs_grad(&[self]) && dtype.is_float() {
            let single = self.numel() <= 1 || self.dims().get(d).copied().unwrap_or(1) == 1;
            record(
                &out,
                "CumsumBackward0",
                &[self],
                false,
                Box::new(move |g, _| {
                    if single {
                        return Ok(vec![Some(g.clone())]);
                    }
                    // reversed_cumsum: the gradient flipped, summed, flipped back.
                    let flipped = g.flip(&[d as isize])?;
                    let sums = flipped.cumsum(d as isize, None)?;
                    drop(flipped);
                    Ok(vec![Some(sums.flip(&[d as isize])?)])
                }),
            );
        }
        Ok(out)
    }

    /// scan_dim's temporaries: a contiguous copy of a strided input, and CUB's scan scratch
    /// when the scan runs over every element (a 1-D tensor, or all other dims of size 1).
    fn scan_memory(&self, input: &Tensor, d: usize) -> Result<()> {
        let copy = if input.is_contiguous() {
            None
        } else {
            Some(Storage::new(self.backend().clone(), input.nbytes())?)
        };
        if input.numel() == input.dims()[d] {
            let scratch = scan_bytes(input.numel(), input.element_size());
            drop(Storage::new(self.backend().clone(), scratch)?);
        }
        drop(copy);
        Ok(())
    }

    /// `torch.flip(self, dims)`: a copy with the order of `dims` reversed.
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut flipped = vec![false; self.dim()];
        for &dim in dims {
            let d = wrap_dim(dim, self.dim().max(1))?;
            if d < flipped.len() {
                if flipped[d] {
                    return Err(super::TensorError::runtime(format!(
                        "dims has duplicates, original flip dims size={}, but unique flip dims size={}",
                        dims.len(),
                        dims.len() - 1
                    )));
                }
                flipped[d] = true;
            }
        }
        let out = self.empty_same(self.dims(), self.dtype())?;
        if self.has_values() && self.numel() > 0 {
            let src = self.host_bytes()?;
            let size = self.element_size();
            let mut dst = vec![0u8; src.len()];
            let shape = self.dims();
            let mut index = vec![0usize; shape.len()];
            for i in 0..self.numel() {
                // Row-major index of the element that lands at `i`.
                let mut from = 0;
                for (k, &n) in shape.iter().enumerate() {
                    let j = if flipped[k] {
                        n - 1 - index[k]
                    } else {
                        index[k]
                    };
                    from = from * n + j;
                }
                dst[i * size..(i + 1) * size].copy_from_slice(&src[from * size..(from + 1) * size]);
                for k in (0..shape.len()).rev() {
                    index[k] += 1;
                    if index[k] < shape[k] {
                        break;
                    }
                    index[k] = 0;
                }
            }
            out.backend().write_bytes(out.storage_ptr(), &dst)?;
        }
        if needs_grad(&[self]) {
            let dims = dims.to_vec();
            record(
                &out,
                "FlipBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.flip(&dims)?)])),
            );
        }
        Ok(out)
    }
}

/// The running sums of `input` along `d` written into `out` (contiguous, of `input`'s dtype):
/// in f64 for floats, wrapping i64 for integers.
fn write_running_sums(input: &Tensor, out: &Tensor, d: usize) -> Result<()> {
    let src = input.host_bytes()?;
    let dtype = out.dtype();
    let shape = input.dims();
    let (n, inner) = if shape.is_empty() {
        (1, 1)
    } else {
        (shape[d], shape[d + 1..].iter().product())
    };
    let slices = input.numel() / n.max(1);
    let mut dst = vec![0u8; out.nbytes()];
    for s in 0..slices {
        let (mut f, mut i) = (0.0f64, 0i64);
        for j in 0..n {
            let o = at(s, j, n, inner);
            // SAFETY: `src` and `dst` hold every element, row-major, of `dtype`.
            unsafe {
                if dtype.is_float() {
                    // PyTorch's scan accumulates in float for 32- and 16-bit floats.
                    let v = load_f64(src.as_ptr(), dtype, o);
                    f = if dtype == DType::F64 {
                        f + v
                    } else {
                        (f as f32 + v as f32) as f64
                    };
                    store_f64(dst.as_mut_ptr(), dtype, o, f);
                } else {
                    i = i.wrapping_add(load_i64(src.as_ptr(), dtype, o));
                    store_i64(dst.as_mut_ptr(), dtype, o, i);
                }
            }
        }
    }
    if !dst.is_empty() {
        out.backend().write_bytes(out.storage_ptr(), &dst)?;
    }
    Ok(())
}

impl Tensor {
    /// `torch.roll(self, shifts, dims)`: each of `dims` rotated by its shift; RollBackward0 rolls
    /// the gradient back. Several dims roll one at a time, as PyTorch's `roll_common` does (an
    /// intermediate tensor per dim but the last).
    pub fn roll(&self, shifts: &[i64], dims: &[isize]) -> Result<Tensor> {
        super::check_interrupt()?;
        if shifts.len() != dims.len() || dims.is_empty() {
            return Err(super::TensorError::runtime(format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            )));
        }
        let wrapped = dims
            .iter()
            .map(|&d| wrap_dim(d, self.dim().max(1)))
            .collect::<Result<Vec<_>>>()?;
        let out = self.roll_raw(shifts, &wrapped)?;
        if crate::autograd::needs_grad(&[self]) {
            let back: Vec<i64> = shifts.iter().map(|s| -s).collect();
            crate::autograd::record(
                &out,
                "RollBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.roll_raw(&back, &wrapped)?)])),
            );
        }
        Ok(out)
    }

    /// The roll without autograd: one dim after another.
    fn roll_raw(&self, shifts: &[i64], dims: &[usize]) -> Result<Tensor> {
        let first = self.roll_one(shifts[0], dims[0])?;
        if dims.len() == 1 {
            return Ok(first);
        }
        let rest = first.roll_raw(&shifts[1..], &dims[1..])?;
        drop(first);
        Ok(rest)
    }

    /// PyTorch's CUDA `roll` along one dim: a contiguous copy of a strided input, the output,
    /// then the copy freed; the values moved as two slices.
    fn roll_one(&self, shift: i64, dim: usize) -> Result<Tensor> {
        let copy = if self.is_contiguous() {
            None
        } else {
            Some(self.contiguous_copy()?)
        };
        let src = copy.as_ref().unwrap_or(self).data_handle();
        let out = super::convert::empty_like_dense(&src, src.dtype())?;
        let n = src.dims().get(dim).copied().unwrap_or(1);
        if out.numel() > 0 && src.dim() > 0 {
            let k = shift.rem_euclid(n as i64) as usize;
            let d = dim as isize;
            // out[k..] = src[..n-k], out[..k] = src[n-k..]
            let pieces = [(k, 0, n - k), (0, n - k, k)];
            for (to, from, len) in pieces {
                if len > 0 {
                    let dst = out.narrow(d, to as isize, len)?;
                    let s = src.narrow(d, from as isize, len)?;
                    out.backend().copy(s.operand(), dst.operand())?;
                }
            }
        } else if out.numel() > 0 {
            out.backend().copy(src.operand(), out.operand())?;
        }
        drop(copy);
        Ok(out)
    }
}
