//! `group_norm`: PyTorch's checks, the statistics it saves (in the input's dtype) and the float
//! scratch its CUDA kernels take, forward and backward.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::{GroupNorm, GroupNormGrads};

use super::nn::expect_contiguous;
use super::{DType, Layout, Result, Tensor, TensorError};

impl Tensor {
    /// `F.group_norm(self, groups, weight, bias, eps)` over the input [N, C, *].
    pub fn group_norm(
        &self,
        groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs("group_norm", &inputs)? {
            let w = weight.map(|_| &cast[1]);
            let b = bias.map(|_| &cast[cast.len() - 1]);
            return cast[0].group_norm(groups, w, b, eps);
        }
        let (n, c, l) = check_group_norm(self, groups, weight, bias)?;
        let x = expect_contiguous(self)?;
        let y = x.empty_same(x.dims(), x.dtype())?;
        let mean = x.empty_same(&[n, groups], x.dtype())?;
        let rstd = x.empty_same(&[n, groups], x.dtype())?;
        let rows = Layout::contiguous(&[n, c, l]);
        if n > 0 {
            // Note [group_norm scratch]: with an affine and more than one position per channel,
            // the CUDA forward folds mean, rstd, weight and bias into float a, b [N, C] first.
            let acc = acc_dtype(x.dtype());
            let folded = l > 1 && (weight.is_some() || bias.is_some());
            let a = folded.then(|| x.empty_same(&[n, c], acc)).transpose()?;
            let b = folded.then(|| x.empty_same(&[n, c], acc)).transpose()?;
            let gn = description(&x, &rows, weight, bias, groups, eps);
            x.backend()
                .group_norm(&gn, y.operand_with(&rows), mean.operand(), rstd.operand())?;
            drop((b, a));
        }
        if needs_grad(&inputs) {
            let saved = GroupNormSaved {
                x: SavedTensor::new(&x)?,
                weight: weight.map(SavedTensor::new).transpose()?,
                mean: SavedTensor::new(&mean)?,
                rstd: SavedTensor::new(&rstd)?,
                has_bias: bias.is_some(),
                groups,
            };
            record(
                &y,
                "NativeGroupNormBackward0",
                &inputs,
                true,
                Box::new(move |g, mask| saved.backward(g, mask)),
            );
        }
        // native_group_norm's (Y, mean, rstd): group_norm keeps Y; mean goes, then rstd.
        drop(mean);
        drop(rstd);
        Ok(y)
    }
}

/// The float type PyTorch's kernels accumulate in.
fn acc_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// The backend's view of one group norm: the input as [N, C, L].
fn description<'a>(
    x: &'a Tensor,
    rows: &'a Layout,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
    groups: usize,
    eps: f64,
) -> GroupNorm<'a> {
    GroupNorm {
        x: x.operand_with(rows),
        weight: weight.map(|w| w.operand()),
        bias: bias.map(|b| b.operand()),
        groups,
        eps,
    }
}

/// PyTorch's checks of group norm's arguments (`check_group_norm_inputs`); (N, C, L).
fn check_group_norm(
    x: &Tensor,
    groups: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<(usize, usize, usize)> {
    if x.dim() < 2 {
        return Err(TensorError::runtime(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            x.dim()
        )));
    }
    let (n, c) = (x.dims()[0], x.dims()[1]);
    if groups == 0 || c % groups != 0 {
        return Err(TensorError::runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={groups}",
            x.dims()
        )));
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        let Some(t) = t else { continue };
        if t.dim() != 1 || t.numel() != c {
            return Err(TensorError::runtime(format!(
                "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {:?} and input of shape {:?}",
                t.dims(),
                x.dims()
            )));
        }
        x.check_same_device(t)?;
        if t.dtype() != x.dtype() {
            return Err(TensorError::runtime(format!(
                "torchlet: group_norm of {} input with a {} {name} is not supported yet; give both one dtype (e.g. module.to(dtype))",
                x.dtype().scalar_type_name(),
                t.dtype().scalar_type_name()
            )));
        }
    }
    if !x.dtype().is_float() {
        return Err(TensorError::runtime(format!(
            "\"GroupNormKernelImpl\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        )));
    }
    Ok((n, c, x.numel() / (n * c).max(1)))
}

/// What group norm's backward keeps, fields in the order PyTorch's node releases them.
struct GroupNormSaved {
    x: SavedTensor,
    weight: Option<SavedTensor>,
    mean: SavedTensor,
    rstd: SavedTensor,
    has_bias: bool,
    groups: usize,
}

impl GroupNormSaved {
    /// PyTorch's `native_group_norm_backward`: dX, dgamma, dbeta, then the kernel's scratch.
    fn backward(&self, g: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let x = self.x.get()?;
        let weight = self.weight.as_ref().map(|w| w.get()).transpose()?;
        let dy = expect_contiguous(g)?;
        let (n, c) = (x.dims()[0], x.dims()[1]);
        let l = x.numel() / (n * c).max(1);
        let rows = Layout::contiguous(&[n, c, l]);
        let dx = mask[0]
            .then(|| x.empty_same(x.dims(), x.dtype()))
            .transpose()?;
        let want_w = weight.is_some() && mask[1];
        let want_b = self.has_bias && mask[mask.len() - 1];
        let dw = want_w.then(|| x.empty_same(&[c], x.dtype())).transpose()?;
        let db = want_b.then(|| x.empty_same(&[c], x.dtype())).transpose()?;
        if n > 0 {
            let scratch = BackwardScratch::new(x, self.groups, dx.is_some(), weight.is_some())?;
            let gn = description(x, &rows, weight, None, self.groups, 0.0);
            let grads = GroupNormGrads {
                dy: dy.operand_with(&rows),
                dx: dx.as_ref().map(|d| d.operand_with(&rows)),
                dweight: dw.as_ref().map(|d| d.operand()),
                dbias: db.as_ref().map(|d| d.operand()),
            };
            x.backend().group_norm_backward(
                &gn,
                self.mean.get()?.operand(),
                self.rstd.get()?.operand(),
                grads,
            )?;
            drop(scratch);
        }
        drop(dy);
        let mut out = vec![dx];
        if weight.is_some() {
            out.push(dw);
        }
        if self.has_bias {
            out.push(db);
        }
        Ok(out)
    }
}

/// Note [group_norm backward scratch]: PyTorch's CUDA backward (group_norm_kernel.cu) takes float
/// ds, db [N, C] (per-channel sums) when more than one position per channel; for dX, c2, c3
/// [N, G] and, with a weight, c1 [N, C] (sized when its TensorIterator runs, after c2 and c3).
/// They die in reverse: c3, c2, c1, then db, ds. With one position per channel
/// (`GroupNorm1dBackward`) only c2 and c3 are taken.
struct BackwardScratch {
    sums: Option<(Tensor, Tensor)>,
    dx_terms: Option<(Option<Tensor>, Tensor, Tensor)>,
}

impl BackwardScratch {
    fn new(x: &Tensor, groups: usize, for_dx: bool, with_weight: bool) -> Result<BackwardScratch> {
        let (n, c) = (x.dims()[0], x.dims()[1]);
        let spatial = x.numel() / (n * c).max(1) > 1;
        let acc = acc_dtype(x.dtype());
        let sums = match spatial {
            true => Some((x.empty_same(&[n, c], acc)?, x.empty_same(&[n, c], acc)?)),
            false => None,
        };
        let dx_terms = match for_dx {
            true => {
                let c2 = x.empty_same(&[n, groups], acc)?;
                let c3 = x.empty_same(&[n, groups], acc)?;
                let c1 = (spatial && with_weight)
                    .then(|| x.empty_same(&[n, c], acc))
                    .transpose()?;
                Some((c1, c2, c3))
            }
            false => None,
        };
        Ok(BackwardScratch { sums, dx_terms })
    }
}

impl Drop for BackwardScratch {
    fn drop(&mut self) {
        if let Some((c1, c2, c3)) = self.dx_terms.take() {
            drop(c3);
            drop(c2);
            drop(c1);
        }
        if let Some((ds, db)) = self.sums.take() {
            drop(db);
            drop(ds);
        }
    }
}
