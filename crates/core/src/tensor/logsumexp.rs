//! `logsumexp` as PyTorch composes it (`logsumexp_out_impl`): the maxima over the dims, the
//! shifted exponentials summed, the log; and its backward.

use crate::autograd::{needs_grad, no_grad, record, SavedTensor};
use crate::device::{BinaryOp, UnaryOp};

use super::{ReduceOp, Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// `torch.logsumexp(self, dims, keepdim)`: `log(sum(exp(self)))` over `dims`, computed
    /// stably with the maxima subtracted, allocating what PyTorch allocates in its order.
    pub fn logsumexp(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        super::check_interrupt()?;
        if !self.dtype().is_float() {
            return Err(TensorError::not_implemented(
                "torchlet: logsumexp of an integer tensor is not supported yet; convert it with .float() first",
            ));
        }
        let result = {
            let _no_grad = no_grad();
            let maxes = self.reduction_over(ReduceOp::Amax, dims, true)?;
            let squeezed = self.reduced_like(&maxes, dims, keepdim)?;
            let magnitude = squeezed.unary_raw(UnaryOp::Abs)?;
            let infinite =
                magnitude.compare_scalar(Scalar::Float(f64::INFINITY), BinaryOp::Eq, false)?;
            squeezed.masked_fill_(&infinite, Scalar::Int(0))?;
            drop((infinite, magnitude));
            let shifted = self.sub(&maxes)?;
            shifted.unary_(UnaryOp::Exp, "exp_")?;
            let result = shifted.reduction_over(ReduceOp::Sum, dims, keepdim)?;
            drop(shifted);
            result.unary_(UnaryOp::Log, "log_")?;
            result.add_(&squeezed)?;
            drop((squeezed, maxes));
            result
        };
        if needs_grad(&[self]) {
            let (x, r) = (SavedTensor::new(self)?, SavedTensor::new(&result)?);
            let dims = dims.to_vec();
            record(
                &result,
                "LogsumexpBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let x = x.get()?;
                    let r = x.reduced_like(r.get()?, &dims, true)?;
                    let g = x.reduced_like(g, &dims, true)?;
                    let centered = x.sub(&r)?;
                    let e = centered.unary_raw(UnaryOp::Exp)?;
                    let out = g.mul(&e)?;
                    drop((e, centered));
                    Ok(vec![Some(out)])
                }),
            );
        }
        Ok(result)
    }

    /// `t` (shaped as a reduction of `self` over `dims` with keepdim, or without) viewed with
    /// the reduced dims kept (`keepdim`) or dropped: `squeeze_multiple`/`unsqueeze_multiple`.
    fn reduced_like(&self, t: &Tensor, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let n = self.dim();
        let wrapped = dims
            .iter()
            .map(|&d| super::layout::wrap_dim(d, n.max(1)))
            .collect::<Result<Vec<_>>>()?;
        let all = wrapped.is_empty();
        let reduced = |d: usize| all || wrapped.contains(&d);
        let shape: Vec<usize> = (0..n)
            .filter_map(|d| match (reduced(d), keepdim) {
                (true, true) => Some(1),
                (true, false) => None,
                (false, _) => Some(self.dims()[d]),
            })
            .collect();
        if t.dims() == shape.as_slice() {
            return Ok(t.clone());
        }
        t.reshape_usize(&shape)
    }
}
