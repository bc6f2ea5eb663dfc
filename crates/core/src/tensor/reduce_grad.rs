//! The backward of each kind of reduction, as a row of `reduce_list` names it.

use crate::autograd::{record, SavedTensor};
use crate::device::BinaryOp;

use super::{Result, Scalar, Tensor};

/// A reduction's backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grad {
    /// The gradient broadcast back over the reduced dims (sum).
    Spread,
    /// As `Spread`, divided by the number of elements each output reduced (mean).
    SpreadMean,
    /// Over all elements: split evenly among the elements equal to the result (it saves the
    /// input and the result); along a dim: into the positions of the saved indices (max, min).
    Extreme,
    /// Shared evenly among the elements equal to the result over the reduced dims (amax,
    /// amin: `scale_grad_by_count`).
    Count,
    /// The product's: `grad * (result / input)` where no reduced slice holds a zero (prod).
    Product,
    /// None: the result is an index, which has no gradient (argmax, argmin).
    None,
}

/// What a reduction's backward knows of its forward: the input's shape, the reduced dims and
/// whether they were kept.
pub(crate) struct Fit {
    /// The input's shape.
    pub input: Vec<usize>,
    /// The reduced dims, ascending.
    pub dims: Vec<usize>,
    /// Whether the output kept the reduced dims (as size 1).
    pub keepdim: bool,
}

impl Fit {
    /// `t` (a reduction's output or its gradient) with the reduced dims back as size 1, a view.
    fn kept_view(&self, t: &Tensor) -> Result<Tensor> {
        let mut kept = self.input.clone();
        for &d in &self.dims {
            kept[d] = 1;
        }
        if t.dims() == kept.as_slice() {
            return Ok(t.clone());
        }
        t.reshape_usize(&kept)
    }

    /// Gradient `g` of the output, broadcast back to the input's shape as a view.
    fn unreduce(&self, g: &Tensor) -> Result<Tensor> {
        let mut kept = self.input.clone();
        for &d in &self.dims {
            kept[d] = 1;
        }
        let g = if self.keepdim || g.dims() == kept.as_slice() {
            g.clone()
        } else {
            g.reshape_usize(&kept)?
        };
        g.expand(&self.input)
    }
}

impl Grad {
    /// Record the node `name` that computes `x`'s gradient from `out`'s (`idx`: the indices
    /// found with the values, when there are any).
    pub(crate) fn record(
        self,
        x: &Tensor,
        out: &Tensor,
        idx: Option<&Tensor>,
        name: &'static str,
        fit: Fit,
    ) -> Result<()> {
        match (self, idx) {
            (Grad::None, _) => {}
            (Grad::Spread, _) => record(
                out,
                name,
                &[x],
                false,
                Box::new(move |g, _| Ok(vec![Some(fit.unreduce(g)?)])),
            ),
            (Grad::SpreadMean, _) => {
                let count: usize = fit.dims.iter().map(|&d| fit.input[d]).product();
                record(
                    out,
                    name,
                    &[x],
                    false,
                    Box::new(move |g, _| {
                        let e = fit.unreduce(g)?;
                        Ok(vec![Some(e.div_scalar(Scalar::Int(count as i64))?)])
                    }),
                )
            }
            (Grad::Count, _) => count_split(x, out, name, fit)?,
            (Grad::Product, _) => product_back(x, out, name, fit)?,
            (Grad::Extreme, None) => even_split(x, out, name)?,
            (Grad::Extreme, Some(idx)) => scatter_back(x, out, idx, name, fit)?,
        }
        Ok(())
    }
}

/// amax/amin's backward, PyTorch's `scale_grad_by_count`: `(grad / mask.sum(dims, true)) * mask`
/// with `mask = (result == self)`, the result and gradient reshaped back to keepdim (views).
fn count_split(x: &Tensor, out: &Tensor, name: &'static str, fit: Fit) -> Result<()> {
    let (x_saved, r) = (SavedTensor::new(x)?, SavedTensor::new(out)?);
    record(
        out,
        name,
        &[x],
        true,
        Box::new(move |g, _| {
            let x = x_saved.get()?;
            let result = fit.kept_view(r.get()?)?;
            let g = fit.kept_view(g)?;
            let mask = result.compare(x, BinaryOp::Eq)?;
            let dims: Vec<isize> = fit.dims.iter().map(|&d| d as isize).collect();
            let count = mask.reduction_over(super::ReduceOp::Sum, &dims, true)?;
            let shared = g.div(&count)?;
            let out = shared.mul(&mask)?;
            drop((shared, count, mask));
            Ok(vec![Some(out)])
        }),
    );
    Ok(())
}

/// prod's backward (PyTorch's `prod_backward`): the zeros of each reduced slice counted first;
/// without any, `grad * (result / input)`, the result and gradient reshaped back to keepdim.
fn product_back(x: &Tensor, out: &Tensor, name: &'static str, fit: Fit) -> Result<()> {
    let (x_saved, r) = (SavedTensor::new(x)?, SavedTensor::new(out)?);
    let whole = fit.dims.len() == fit.input.len();
    record(
        out,
        name,
        &[x],
        true,
        Box::new(move |g, _| {
            let x = x_saved.get()?;
            if x.dim() == 0 {
                return Ok(vec![Some(g.clone())]);
            }
            if whole {
                return Err(super::TensorError::not_implemented(
                    "torchlet: the gradient of prod() over all elements is not supported yet; \
                     take prod(dim) one dim at a time",
                ));
            }
            let zero_mask = x.compare_scalar(Scalar::Int(0), BinaryOp::Eq, false)?;
            let dims: Vec<isize> = fit.dims.iter().map(|&d| d as isize).collect();
            let slice_zeros = zero_mask.reduction_over(super::ReduceOp::Sum, &dims, true)?;
            let total = slice_zeros.sum(None, false)?;
            let zeros = if total.has_values() {
                total.item()?.to_f64()
            } else {
                0.0
            };
            drop(total);
            let result = fit.kept_view(r.get()?)?;
            let g = fit.kept_view(g)?;
            if zeros != 0.0 {
                return Err(super::TensorError::not_implemented(
                    "torchlet: the gradient of prod(dim) over a slice holding a zero is not supported yet",
                ));
            }
            let ratio = result.div(x)?;
            let out = g.mul(&ratio)?;
            drop((ratio, slice_zeros, zero_mask));
            Ok(vec![Some(out)])
        }),
    );
    Ok(())
}

/// The backward of max()/min() over all elements: evenly split among the elements equal to the
/// extreme, as PyTorch does.
fn even_split(x: &Tensor, out: &Tensor, name: &'static str) -> Result<()> {
    let (x_saved, r) = (SavedTensor::new(x)?, SavedTensor::new(out)?);
    record(
        out,
        name,
        &[x],
        true,
        Box::new(move |g, _| {
            let mask = x_saved.get()?.binary_raw(r.get()?, BinaryOp::Eq)?;
            let count = mask.sum(None, false)?;
            Ok(vec![Some(mask.mul(&g.div(&count)?)?)])
        }),
    );
    Ok(())
}

/// The backward of max(dim)/min(dim): the gradient scattered into zeros at the saved indices.
fn scatter_back(
    x: &Tensor,
    out: &Tensor,
    idx: &Tensor,
    name: &'static str,
    fit: Fit,
) -> Result<()> {
    // A 0-d input reduces over no dimension: its gradient is the incoming one.
    let d = fit.dims.first().copied();
    let idx = SavedTensor::new(idx)?;
    record(
        out,
        name,
        &[x],
        true,
        Box::new(move |g, _| {
            let Some(d) = d else {
                return Ok(vec![Some(g.clone())]);
            };
            let idx = idx.get()?;
            let g = if g.dims() == idx.dims() {
                g.clone()
            } else {
                g.reshape_usize(idx.dims())?
            };
            Ok(vec![Some(value_selecting_backward(
                &g, idx, d, &fit.input,
            )?)])
        }),
    );
    Ok(())
}

/// PyTorch's `value_selecting_reduction_backward` (max/min along a dim, sort, topk): zeros of the
/// input's shape with `g` scattered along `d` at the positions `idx` (both keepdim-shaped).
pub(crate) fn value_selecting_backward(
    g: &Tensor,
    idx: &Tensor,
    d: usize,
    input: &[usize],
) -> Result<Tensor> {
    let full = Tensor::zeros(input, &g.like_options())?;
    if g.numel() > 0 {
        full.backend()
            .scatter(g.operand(), idx.operand(), d, full.operand())?;
    }
    Ok(full)
}
