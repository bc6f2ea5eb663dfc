//! Vector norms outside autograd, as `clip_grad_norm_` takes them: `linalg.vector_norm` of a whole
//! tensor and `_foreach_norm` of a list, with the memory PyTorch's CUDA kernels take.

use crate::autograd::needs_grad;

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
