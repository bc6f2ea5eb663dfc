//! Vector norms: outside autograd as `clip_grad_norm_` takes them (`linalg.vector_norm` of a
//! whole tensor, `_foreach_norm` of a list), and over any dims with autograd (`x.norm(dim=…)`,
//! `F.normalize`), with the memory PyTorch's CUDA kernels take.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::reduce_plan::KernelTraits;
use crate::device::BinaryOp;
use torchlet_alloc::types::element::{load_f64, store_f64};

use super::reduce::Staged;
use super::{DType, Result, Scalar, Tensor, TensorError};

/// Elements per chunk of PyTorch's multi-tensor kernels (`kChunkSize` in MultiTensorApply.cuh).
const CHUNK: usize = 65536;

impl Tensor {
    /// `torch.linalg.vector_norm(self, ord)` over every element: a 0-dim tensor of self's dtype.
    pub fn vector_norm(&self, ord: f64) -> Result<Tensor> {
        check_normable(self, "linalg.vector_norm")?;
        if needs_grad(&[self]) {
            return Err(TensorError::runtime(
                "torchlet: linalg.vector_norm of a tensor that requires grad is not supported yet; \
                 call it under torch.no_grad() or on .detach()",
            ));
        }
        let out = self.empty_same(&[], self.dtype())?;
        write_norm(&out, self, ord)?;
        Ok(out)
    }
}

impl Tensor {
    /// `torch.linalg.vector_norm(self, ord, dims, keepdim)` (and `x.norm(p, dim)`) over `dims`
    /// (every dim when empty), with autograd for `ord` 1 and 2: the output, the staging of
    /// PyTorch's norm reduction when it splits outputs across blocks; the values computed on the
    /// host (Note [host sorting] in `sorting.rs`).
    pub fn norm_over(&self, ord: f64, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        super::check_interrupt()?;
        check_normable(self, "linalg.vector_norm")?;
        if needs_grad(&[self]) && ord != 1.0 && ord != 2.0 {
            return Err(TensorError::not_implemented(format!(
                "torchlet: the gradient of a {ord}-norm is not supported yet (1 and 2 are)"
            )));
        }
        let reduced = self.norm_dims(dims)?;
        let kept: Vec<usize> = (0..self.dim())
            .map(|d| {
                if reduced.contains(&d) {
                    1
                } else {
                    self.dims()[d]
                }
            })
            .collect();
        let shape: Vec<usize> = if keepdim {
            kept.clone()
        } else {
            (0..self.dim())
                .filter(|d| !reduced.contains(d))
                .map(|d| self.dims()[d])
                .collect()
        };
        let out = self.empty_same(&shape, self.dtype())?;
        let traits = KernelTraits {
            input_size: self.element_size(),
            acc_size: if self.dtype() == DType::F64 { 8 } else { 4 },
            vt0: 4,
            input_vec_size: 4,
            max_threads: 512,
        };
        drop(Staged::new(self, &reduced, &traits)?);
        if self.has_values() {
            write_norms(self, &reduced, ord, &out)?;
        }
        if needs_grad(&[self]) {
            let (x, r) = (SavedTensor::new(self)?, SavedTensor::new(&out)?);
            record(
                &out,
                "LinalgVectorNormBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let (x, r) = (x.get()?, r.get()?);
                    let (g, r) = (g.reshape_usize(&kept)?, r.reshape_usize(&kept)?);
                    Ok(vec![Some(norm_backward(&g, x, &r, ord)?)])
                }),
            );
        }
        Ok(out)
    }

    fn norm_dims(&self, dims: &[isize]) -> Result<Vec<usize>> {
        if dims.is_empty() {
            return Ok((0..self.dim()).collect());
        }
        let mut wrapped = dims
            .iter()
            .map(|&d| super::layout::wrap_dim(d, self.dim().max(1)))
            .collect::<Result<Vec<_>>>()?;
        wrapped.sort_unstable();
        wrapped.dedup();
        Ok(wrapped)
    }
}

/// PyTorch's `norm_backward` for `ord` 2, `grad * (self / norm).masked_fill_(norm == 0, 0)`
/// (the quotient, the zero mask, the product; the mask and quotient die with the expression),
/// and for `ord` 1, `self.sgn() * grad`.
fn norm_backward(g: &Tensor, x: &Tensor, norm: &Tensor, ord: f64) -> Result<Tensor> {
    if ord == 1.0 {
        let sign = x.unary_raw(crate::device::UnaryOp::Sign)?;
        return sign.mul(g);
    }
    let ratio = x.div(norm)?;
    let zero = norm.compare_scalar(Scalar::Int(0), BinaryOp::Eq, false)?;
    ratio.masked_fill_(&zero, Scalar::Int(0))?;
    let out = g.mul(&ratio)?;
    drop((zero, ratio));
    Ok(out)
}

/// Each output's `ord`-norm over the reduced dims, written into `out` (read on the host).
fn write_norms(x: &Tensor, reduced: &[usize], ord: f64, out: &Tensor) -> Result<()> {
    let bytes = x.host_bytes()?;
    let dtype = x.dtype();
    let shape = x.dims();
    let strides = super::Layout::contiguous(shape).strides;
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !reduced.contains(d)).collect();
    let outputs: usize = kept.iter().map(|&d| shape[d]).product();
    let count: usize = reduced.iter().map(|&d| shape[d]).product();
    let mut dst = vec![0u8; out.nbytes()];
    let mut members = Vec::with_capacity(count);
    for o in 0..outputs {
        let mut rest = o;
        let mut base = 0;
        for &d in kept.iter().rev() {
            base += (rest % shape[d]) * strides[d];
            rest /= shape[d];
        }
        members.clear();
        for r in 0..count {
            let (mut rest, mut at) = (r, base);
            for &d in reduced.iter().rev() {
                at += (rest % shape[d]) * strides[d];
                rest /= shape[d];
            }
            // SAFETY: `at` is an element of `x`, whose row-major bytes `bytes` holds.
            members.push(unsafe { load_f64(bytes.as_ptr(), dtype, at) });
        }
        // SAFETY: `o` is an output element, which `dst` holds.
        unsafe { store_f64(dst.as_mut_ptr(), dtype, o, norm_of(&members, ord)) };
    }
    if !dst.is_empty() {
        out.backend().write_bytes(out.storage_ptr(), &dst)?;
    }
    Ok(())
}

/// `torch._foreach_norm(tensors, ord)`: one 0-dim norm per tensor, in each tensor's dtype.
///
/// Note [foreach_norm scratch]: on a GPU the multi-tensor kernel (ForeachReduceOp.cu) first
/// allocates one float partial per tensor and chunk (`tensors × max chunks`, chunks of 65536
/// elements), then the outputs, and frees the partials once the outputs are written. It runs
/// for the norms it knows (1, 2, inf) when every tensor shares one device and dtype; otherwise
/// PyTorch takes each tensor's `linalg.vector_norm`, with no partials.
pub fn foreach_norm(tensors: &[Tensor], ord: f64) -> Result<Vec<Tensor>> {
    let Some(first) = tensors.first() else {
        return Ok(Vec::new());
    };
    for t in tensors {
        check_normable(t, "_foreach_norm")?;
    }
    let fast = first.device().is_cuda()
        && [1.0, 2.0, f64::INFINITY].contains(&ord)
        && tensors
            .iter()
            .all(|t| t.device() == first.device() && t.dtype() == first.dtype());
    let partials = if fast {
        let chunks = tensors.iter().map(|t| t.numel().div_ceil(CHUNK)).max();
        let acc = if first.dtype() == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        Some(first.empty_same(&[tensors.len() * chunks.unwrap_or(0)], acc)?)
    } else {
        None
    };
    let mut norms = Vec::with_capacity(tensors.len());
    for t in tensors {
        let out = t.empty_same(&[], t.dtype())?;
        write_norm(&out, t, ord)?;
        norms.push(out);
    }
    drop(partials);
    Ok(norms)
}

/// PyTorch's refusal of integer tensors (`linalg.vector_norm` takes floating point only).
fn check_normable(t: &Tensor, what: &str) -> Result<()> {
    if t.dtype().is_float() {
        return Ok(());
    }
    Err(TensorError::runtime(format!(
        "{what}: Expected a floating point or complex tensor as input. Got {}",
        t.dtype().scalar_type_name()
    )))
}

/// Fill `out` with `t`'s `ord`-norm (read on the host; nothing to do without values).
fn write_norm(out: &Tensor, t: &Tensor, ord: f64) -> Result<()> {
    if !t.has_values() {
        return Ok(());
    }
    let value = norm_of(&t.to_vec_f64()?, ord);
    out.fill_(Scalar::Float(value))?;
    Ok(())
}

/// The `ord`-norm of `values`: max |x| for inf, min |x| for -inf, the count of non-zeros for 0.
fn norm_of(values: &[f64], ord: f64) -> f64 {
    let abs = values.iter().map(|v| v.abs());
    if ord == f64::INFINITY {
        abs.fold(0.0, f64::max)
    } else if ord == f64::NEG_INFINITY {
        abs.fold(f64::INFINITY, f64::min)
    } else if ord == 0.0 {
        abs.filter(|&a| a != 0.0).count() as f64
    } else {
        abs.map(|a| a.powf(ord)).sum::<f64>().powf(1.0 / ord)
    }
}

#[cfg(test)]
mod tests {
    use super::norm_of;

    #[test]
    fn norms_of_a_vector() {
        let v = [3.0, -4.0, 0.0];
        assert_eq!(norm_of(&v, 2.0), 5.0);
        assert_eq!(norm_of(&v, 1.0), 7.0);
        assert_eq!(norm_of(&v, f64::INFINITY), 4.0);
        assert_eq!(norm_of(&v, 0.0), 2.0);
        assert_eq!(norm_of(&v, f64::NEG_INFINITY), 0.0);
    }
}
