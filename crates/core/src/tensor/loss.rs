//! Losses: `mse_loss` (mean) and `cross_entropy` (log-softmax + NLL, mean over the targets not
//! ignored).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::BinaryOp;

use super::math::device_mismatch;
use super::{DType, Result, Scalar, Tensor, TensorError};

impl Tensor {
    /// Mean squared error between `self` and `target`.
    pub fn mse_loss(&self, target: &Tensor) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("mse_loss", &[self, target])? {
            return cast[0].mse_loss(&cast[1]);
        }
        let shape = super::broadcast_shapes(self.dims(), target.dims())?;
        let dtype = super::math::result_type(self, target);
        if !dtype.is_float() {
            return Err(TensorError::runtime(format!(
                "\"mse_cpu\" not implemented for '{}'",
                dtype.scalar_type_name()
            )));
        }
        // PyTorch allocates the result at the broadcast size and reduces into it, resized to 0-d:
        // the loss keeps the whole block, so it comes first. Then one temporary of the squared
        // differences, reduced and freed.
        // An empty input's block has no room for the 0-d loss: PyTorch's resize then allocates
        // one element, as this does.
        let numel: usize = shape.iter().product();
        let result = self.empty_same(if numel == 0 { &[] } else { &shape }, dtype)?;
        let sq = self.binary_raw(target, BinaryOp::Sub)?;
        sq.backend()
            .binary(BinaryOp::Mul, sq.operand(), sq.operand(), sq.operand())?;
        let all: Vec<usize> = (0..sq.dim()).collect();
        let keepdim = result.view_as_layout(super::Layout::contiguous(&vec![1; sq.dim()]));
        sq.reduce_into(
            crate::device::ReduceOp::Mean,
            &all,
            &keepdim,
            None,
            super::reduce::Read::AsIs,
        )?;
        drop(keepdim);
        drop(sq);
        let out = result.view_as_layout(super::Layout::contiguous(&[]));
        drop(result);
        if needs_grad(&[self, target]) {
            let (a, b) = (SavedTensor::new(self)?, SavedTensor::new(target)?);
            record(
                &out,
                "MseLossBackward0",
                &[self, target],
                true,
                Box::new(move |g, m| {
                    let diff = a.get()?.binary_raw(b.get()?, BinaryOp::Sub)?;
                    let n = diff.numel().max(1) as f64;
                    diff.binary_into_self(g, BinaryOp::Mul)?;
                    diff.backend().binary_scalar(
                        BinaryOp::Mul,
                        diff.operand(),
                        Scalar::Float(2.0 / n),
                        false,
                        diff.operand(),
                    )?;
                    let gb = if m[1] { Some(diff.neg()?) } else { None };
                    let ga = if m[0] { Some(diff) } else { None };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    /// Cross-entropy of logits [N, C] (or [C]) against int64 class indices [N] (or []), the mean
    /// over the targets that are not `ignore_index` (PyTorch's default: -100).
    pub fn cross_entropy(&self, targets: &Tensor, ignore_index: i64) -> Result<Tensor> {
        super::check_interrupt()?;
        let cast = super::autocast::cast_inputs("cross_entropy_loss", &[self, targets])?;
        if let Some((cast, _off)) = cast {
            return cast[0].cross_entropy(&cast[1], ignore_index);
        }
        let (logits, targets) = check_targets(self, targets, ignore_index)?;
        // PyTorch's `cross_entropy_loss` asks for the logits' own dtype, so autocast leaves this
        // log_softmax alone; `nll_loss` is on the float32 list and casts its result up.
        let logp = logits.softmax_as(1, true, Some(logits.dtype()))?;
        match super::autocast::cast_inputs("nll_loss", &[&logp, &targets])? {
            Some((cast, _off)) => cast[0].nll_loss(&cast[1], ignore_index),
            None => logp.nll_loss(&targets, ignore_index),
        }
    }

    /// `F.nll_loss(self, targets, ignore_index=…)`: the mean negative log-likelihood of
    /// log-probabilities [N, C] (or [C]) at int64 class indices, over those not `ignore_index`.
    pub fn nll_loss_mean(&self, targets: &Tensor, ignore_index: i64) -> Result<Tensor> {
        super::check_interrupt()?;
        if let Some((cast, _off)) = super::autocast::cast_inputs("nll_loss", &[self, targets])? {
            return cast[0].nll_loss_mean(&cast[1], ignore_index);
        }
        let (logp, targets) = check_targets(self, targets, ignore_index)?;
        logp.nll_loss(&targets, ignore_index)
    }

    /// Mean negative log-likelihood of `self` (log-probabilities [N, C]) at `targets`.
    fn nll_loss(&self, targets: &Tensor, ignore_index: i64) -> Result<Tensor> {
        let out = self.empty_same(&[], self.dtype())?;
        // PyTorch's kernel also returns `total_weight` (the number of targets counted), a
        // one-element tensor kept for backward. Shapes-only runs keep the batch size there.
        let total_weight = Tensor::full(
            &[],
            Scalar::Int(self.dims()[0] as i64),
            &self.like_options(),
        )?;
        self.backend().nll_loss(
            self.operand(),
            targets.operand(),
            ignore_index,
            out.operand(),
            total_weight.operand(),
        )?;
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
                    x.backend().nll_loss_backward(
                        g.operand(),
                        t.operand(),
                        ignore_index,
                        w.operand(),
                        dx.operand(),
                    )?;
                    Ok(vec![Some(dx)])
                }),
            );
        }
        Ok(out)
    }
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
