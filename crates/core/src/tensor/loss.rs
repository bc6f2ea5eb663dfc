//! Losses over classes: `cross_entropy` (log-softmax + NLL over the targets not ignored, with
//! label smoothing) and `nll_loss`, each mean, sum or per row.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::BinaryOp;
use torchlet_alloc::types::element::{load_f64, store_scalar};

use super::math::device_mismatch;
use super::{DType, ReduceOp, Reduction, Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// Mean squared error between `self` and `target`.
    pub fn mse_loss(&self, target: &Tensor) -> Result<Tensor> {
        self.mse_loss_with(target, super::Reduction::Mean)
    }

    /// Cross-entropy of logits [N, C] (or [C]) against int64 class indices [N] (or []), the mean
    /// over the targets that are not `ignore_index` (PyTorch's default: -100).
    pub fn cross_entropy(&self, targets: &Tensor, ignore_index: i64) -> Result<Tensor> {
        self.cross_entropy_with(targets, ignore_index, Reduction::Mean, 0.0)
    }

    /// `F.cross_entropy(self, targets, ignore_index=…, reduction=…, label_smoothing=…)`.
    pub fn cross_entropy_with(
        &self,
        targets: &Tensor,
        ignore_index: i64,
        reduction: Reduction,
        label_smoothing: f64,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let cast = super::autocast::cast_inputs("cross_entropy_loss", &[self, targets])?;
        if let Some((cast, _off)) = cast {
            return cast[0].cross_entropy_with(&cast[1], ignore_index, reduction, label_smoothing);
        }
        if !(0.0..=1.0).contains(&label_smoothing) {
            return Err(TensorError::runtime(format!(
                "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
            )));
        }
        let (logits, targets) = check_targets(self, targets, ignore_index)?;
        // PyTorch's `cross_entropy_loss` asks for the logits' own dtype, so autocast leaves this
        // log_softmax alone; `nll_loss` is on the float32 list and casts its result up.
        let logp = logits.softmax_as(1, true, Some(logits.dtype()))?;
        let nll = match super::autocast::cast_inputs("nll_loss", &[&logp, &targets])? {
            Some((cast, _off)) => cast[0].nll_loss(&cast[1], ignore_index, reduction)?,
            None => logp.nll_loss(&targets, ignore_index, reduction)?,
        };
        if label_smoothing == 0.0 {
            return Ok(nll);
        }
        smoothed(
            &logp,
            &targets,
            nll,
            ignore_index,
            reduction,
            label_smoothing,
        )
    }

    /// `F.nll_loss(self, targets, ignore_index=…)`: the mean negative log-likelihood of
    /// log-probabilities [N, C] (or [C]) at int64 class indices, over those not `ignore_index`.
    pub fn nll_loss_mean(&self, targets: &Tensor, ignore_index: i64) -> Result<Tensor> {
        self.nll_loss_with(targets, ignore_index, Reduction::Mean)
    }

    /// `F.nll_loss(self, targets, ignore_index=…, reduction=…)`.
    pub fn nll_loss_with(
        &self,
        targets: &Tensor,
        ignore_index: i64,
        reduction: Reduction,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        if let Some((cast, _off)) = super::autocast::cast_inputs("nll_loss", &[self, targets])? {
            return cast[0].nll_loss_with(&cast[1], ignore_index, reduction);
        }
        let (logp, targets) = check_targets(self, targets, ignore_index)?;
        logp.nll_loss(&targets, ignore_index, reduction)
    }

    /// Negative log-likelihood of `self` (log-probabilities [N, C]) at `targets`, reduced. The
    /// kernel takes the mean; a sum is that times the count, and the per-row losses of
    /// `reduction="none"` are read on the host (no device memory of their own).
    fn nll_loss(
        &self,
        targets: &Tensor,
        ignore_index: i64,
        reduction: Reduction,
    ) -> Result<Tensor> {
        let rows = self.dims()[0];
        let out = match reduction {
            Reduction::None => self.empty_same(&[rows], self.dtype())?,
            _ => self.empty_same(&[], self.dtype())?,
        };
        // PyTorch's kernel also returns `total_weight` (the number of targets counted), a
        // one-element tensor kept for backward. Shapes-only runs keep the batch size there.
        let total_weight = Tensor::full(
            &[],
            Scalar::Int(self.dims()[0] as i64),
            &self.like_options(),
        )?;
        if reduction == Reduction::None {
            if out.has_values() {
                per_row_nll(self, targets, ignore_index, &out)?;
            }
        } else {
            self.backend().nll_loss(
                self.operand(),
                targets.operand(),
                ignore_index,
                out.operand(),
                total_weight.operand(),
            )?;
            if reduction == Reduction::Sum {
                out.binary_into_self(&total_weight, BinaryOp::Mul)?;
            }
        }
        if needs_grad(&[self]) {
            let (x, t, w) = (
                SavedTensor::new(self)?,
                SavedTensor::new(targets)?,
                SavedTensor::new(&total_weight)?,
            );
            record(
                &out,
                "NllLossBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let (x, t, w) = (x.get()?, t.get()?, w.get()?);
                    let dx = x.empty_same(x.dims(), x.dtype())?;
                    if reduction == Reduction::None {
                        if dx.has_values() {
                            per_row_nll_grad(g, t, ignore_index, &dx)?;
                        }
                        return Ok(vec![Some(dx)]);
                    }
                    x.backend().nll_loss_backward(
                        g.operand(),
                        t.operand(),
                        ignore_index,
                        w.operand(),
                        dx.operand(),
                    )?;
                    if reduction == Reduction::Sum {
                        dx.binary_into_self(w, BinaryOp::Mul)?;
                    }
                    Ok(vec![Some(dx)])
                }),
            );
        }
        Ok(out)
    }
}

/// `-logp[i, target[i]]` into `out` [N] (0 where the target is `ignore_index`), on the host.
fn per_row_nll(logp: &Tensor, targets: &Tensor, ignore_index: i64, out: &Tensor) -> Result<()> {
    let (c, dtype) = (logp.dims()[1], logp.dtype());
    let values = logp.host_bytes()?;
    let mut bytes = vec![0u8; out.nbytes()];
    for (i, t) in targets.index_values()?.into_iter().enumerate() {
        let v = if t == ignore_index {
            0.0
        } else {
            // SAFETY: `values` holds N * C elements of `dtype`; `t` was checked in range.
            -unsafe { load_f64(values.as_ptr(), dtype, i * c + t as usize) }
        };
        // SAFETY: `bytes` holds N elements of `dtype`.
        unsafe { store_scalar(bytes.as_mut_ptr(), dtype, i, Scalar::Float(v)) };
    }
    out.backend().write_bytes(out.storage_ptr(), &bytes)
}

/// The gradient of `reduction="none"`: `dx[i, target[i]] = -g[i]`, zero elsewhere, on the host.
fn per_row_nll_grad(g: &Tensor, targets: &Tensor, ignore_index: i64, dx: &Tensor) -> Result<()> {
    let (c, dtype) = (dx.dims()[1], dx.dtype());
    let grads = g.host_bytes()?;
    let mut bytes = vec![0u8; dx.nbytes()];
    for (i, t) in targets.index_values()?.into_iter().enumerate() {
        if t != ignore_index {
            // SAFETY: `grads` holds N elements of `g`'s dtype; `bytes` N * C of `dtype`.
            let v = -unsafe { load_f64(grads.as_ptr(), g.dtype(), i) };
            unsafe {
                store_scalar(
                    bytes.as_mut_ptr(),
                    dtype,
                    i * c + t as usize,
                    Scalar::Float(v),
                )
            };
        }
    }
    dx.backend().write_bytes(dx.storage_ptr(), &bytes)
}

/// PyTorch's `cross_entropy_loss_label_smoothing` after the NLL: `(1 - ε) * nll + ε / C *`
/// the reduced `-logp.sum(1)` (0 at ignored targets), each step an op with its backward, the
/// temporaries freed in the order C++ frees them.
fn smoothed(
    logp: &Tensor,
    targets: &Tensor,
    nll: Tensor,
    ignore_index: i64,
    reduction: Reduction,
    epsilon: f64,
) -> Result<Tensor> {
    let classes = logp.dims()[1];
    let smooth = {
        let total = logp.reduction(ReduceOp::Sum, Some(1), false)?;
        total.neg()?
    };
    let ignored = targets.eq_scalar(Scalar::Int(ignore_index))?;
    smooth.masked_fill_(&ignored, Scalar::Float(0.0))?;
    let ret = match reduction {
        Reduction::Mean => {
            let kept = ignored.eq_scalar(Scalar::Bool(false))?;
            // `smooth.sum() / kept.sum()`: PyTorch's build evaluates the divisor first.
            let count = kept.reduction(ReduceOp::Sum, None, false)?;
            let total = smooth.reduction(ReduceOp::Sum, None, false)?;
            let mean = total.div(&count)?;
            drop((total, count, kept));
            mean
        }
        Reduction::Sum => smooth.reduction(ReduceOp::Sum, None, false)?,
        Reduction::None => smooth.clone(),
    };
    let kept_part = nll.mul_scalar(Scalar::Float(1.0 - epsilon))?;
    let smooth_part = ret.mul_scalar(Scalar::Float(epsilon / classes as f64))?;
    let out = kept_part.add(&smooth_part)?;
    drop((smooth_part, kept_part, ret, ignored, smooth, nll));
    Ok(out)
}

/// The checks `cross_entropy` and `nll_loss` share: `x` [N, C] (or [C], made [1, C]) against
/// int64 class indices [N] in range or `ignore_index`; both as 2-D and 1-D.
fn check_targets(x: &Tensor, targets: &Tensor, ignore_index: i64) -> Result<(Tensor, Tensor)> {
    if x.device() != targets.device() {
        return Err(device_mismatch(x.device(), targets.device()));
    }
    if targets.dtype().is_float() {
        return Err(TensorError::runtime(
            "cross_entropy with class probabilities is not supported: pass int64 class indices",
        ));
    }
    if targets.dtype() != DType::I64 {
        return Err(TensorError::runtime(format!(
            "expected scalar type Long but found {}",
            targets.dtype().scalar_type_name()
        )));
    }
    let (logits, targets) = match x.dim() {
        1 => (x.unsqueeze(0)?, targets.reshape(&[1])?),
        2 => (x.clone(), targets.clone()),
        d => {
            return Err(TensorError::runtime(format!(
                "cross_entropy and nll_loss expect inputs of 1 or 2 dims (got {d}D)"
            )))
        }
    };
    let (n, c) = (logits.dims()[0], logits.dims()[1]);
    if targets.dim() != 1 || targets.dims()[0] != n {
        return Err(TensorError::value(format!(
            "Expected input batch_size ({n}) to match target batch_size ({}).",
            targets.dims().first().copied().unwrap_or(0)
        )));
    }
    // A shapes-only run (`torchlet fit`) has no values to check.
    let known = if targets.has_values() {
        targets.to_scalars()?
    } else {
        Vec::new()
    };
    for t in known {
        let t = t.to_i64();
        if t != ignore_index && (t < 0 || t as usize >= c) {
            return Err(TensorError::index(format!("Target {t} is out of bounds.")));
        }
    }
    Ok((logits, targets))
}
