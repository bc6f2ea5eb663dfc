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
            (Grad::Extreme, None) => even_split(x, out, name)?,
            (Grad::Extreme, Some(idx)) => scatter_back(x, out, idx, name, fit)?,
        }
        Ok(())
    }
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
            let full = Tensor::zeros(&fit.input, &g.like_options())?;
            full.backend()
                .scatter(g.operand(), idx.operand(), d, full.operand())?;
            Ok(vec![Some(full)])
        }),
    );
    Ok(())
}
