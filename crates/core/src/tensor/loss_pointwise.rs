//! Elementwise losses with a reduction: `mse_loss`, `smooth_l1_loss`, `huber_loss`,
//! `binary_cross_entropy`, `binary_cross_entropy_with_logits`, `l1_loss` and `kl_div`, each allocating what PyTorch
//! 2.11's CUDA path allocates, forward and backward, in its order.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::{BinaryOp, ReduceOp, UnaryOp};

use super::reduce::Read;
use super::{broadcast_shapes, Layout, Result, Scalar, Tensor, TensorError};

/// How a loss reduces its elementwise values (`reduction=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The elementwise losses themselves.
    None,
    /// Their mean (the default).
    Mean,
    /// Their sum.
    Sum,
}

impl Reduction {
    /// `"none"`, `"mean"` or `"sum"`, with PyTorch's message for anything else.
    pub fn parse(name: &str) -> Result<Reduction> {
        match name {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(TensorError::value(format!(
                "{other} is not a valid value for reduction"
            ))),
        }
    }

    /// The factor backward scales by: 1/numel for a mean.
    fn norm(self, numel: usize) -> f64 {
        match self {
            Reduction::Mean => 1.0 / numel.max(1) as f64,
            _ => 1.0,
        }
    }
}

// Note [a structured loss keeps its whole block]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `mse_loss` and `smooth_l1_loss` are structured ops whose meta function builds a binary
// TensorIterator for the output, so the output is allocated at the input's size, then resized to
// 0-d for a reduction: the scalar loss keeps the whole block until it dies. The kernel writes a
// second tensor of that size, reduced into the output and freed. `huber_loss` is not
// structured: its elementwise loss is reduced into a new 0-d tensor and freed.
// `binary_cross_entropy` writes the elementwise loss, reduces it into a new 0-d tensor, and
// resizes the loss to 0-d and copies the reduction in: the scalar keeps the whole block too.

impl Tensor {
    /// `F.mse_loss(self, target, reduction=…)`.
    pub fn mse_loss_with(&self, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("mse_loss", &[self, target])? {
            return cast[0].mse_loss_with(&cast[1], reduction);
        }
        let out = self.structured_loss(target, BinaryOp::SquaredDiff, reduction, "mse")?;
        self.record_pointwise_grad(&out, target, "MseLossBackward0", reduction, move |norm| {
            BinaryOp::SquaredDiffGrad { norm }
        })?;
        Ok(out)
    }

    /// `F.smooth_l1_loss(self, target, reduction=…, beta=…)`.
    pub fn smooth_l1_loss(
        &self,
        target: &Tensor,
        reduction: Reduction,
        beta: f64,
    ) -> Result<Tensor> {
        if beta < 0.0 {
            return Err(TensorError::runtime(
                "smooth_l1_loss does not support negative values for beta.",
            ));
        }
        if beta == 0.0 {
            return self.l1_loss(target, reduction);
        }
        let out =
            self.structured_loss(target, BinaryOp::SmoothL1 { beta }, reduction, "smooth_l1")?;
        self.record_pointwise_grad(
            &out,
            target,
            "SmoothL1LossBackward0",
            reduction,
            move |norm| BinaryOp::SmoothL1Grad { beta, norm },
        )?;
        Ok(out)
    }

    /// `F.huber_loss(self, target, reduction=…, delta=…)`.
    pub fn huber_loss(&self, target: &Tensor, reduction: Reduction, delta: f64) -> Result<Tensor> {
        if delta <= 0.0 {
            return Err(TensorError::runtime(
                "huber_loss does not support non-positive values for delta.",
            ));
        }
        self.check_loss_inputs(target, "huber")?;
        let loss = self.binary_raw(target, BinaryOp::Huber { delta })?;
        let out = reduce_loss(loss, reduction)?;
        self.record_pointwise_grad(&out, target, "HuberLossBackward0", reduction, move |norm| {
            BinaryOp::HuberGrad { delta, norm }
        })?;
        Ok(out)
    }

    /// `F.l1_loss(self, target, reduction=…)`: PyTorch's composite `(self - target).abs()`, reduced.
    pub fn l1_loss(&self, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
        let loss = self.sub(target)?.abs()?;
        match reduction {
            Reduction::None => Ok(loss),
            Reduction::Mean => loss.reduction(ReduceOp::Mean, None, false),
            Reduction::Sum => loss.reduction(ReduceOp::Sum, None, false),
        }
    }

    /// `torch.kl_div(self, target, reduction, log_target)`: PyTorch's composite, each step an op
    /// with its own backward: `xlogy(target, target) - target * self`, or for a log target
    /// `exp(target) * (target - self)`; the temporaries freed last made first, as C++ frees them.
    pub fn kl_div(
        &self,
        target: &Tensor,
        reduction: Reduction,
        log_target: bool,
    ) -> Result<Tensor> {
        self.check_loss_inputs(target, "kl_div")?;
        if needs_grad(&[target]) {
            return Err(TensorError::not_implemented(
                "torchlet: the gradient of kl_div in its target is not supported yet; detach the \
                 target (target.detach())",
            ));
        }
        let output = if log_target {
            let weight = target.exp()?;
            let diff = target.sub(self)?;
            let out = weight.mul(&diff)?;
            drop((diff, weight));
            out
        } else {
            let entropy = target.binary_raw(target, BinaryOp::Xlogy)?;
            let cross = target.mul(self)?;
            let out = entropy.sub(&cross)?;
            drop((cross, entropy));
            out
        };
        let reduced = match reduction {
            Reduction::None => return Ok(output),
            Reduction::Mean => output.reduction(ReduceOp::Mean, None, false)?,
            Reduction::Sum => output.reduction(ReduceOp::Sum, None, false)?,
        };
        drop(output);
        Ok(reduced)
    }

    /// A structured loss (Note [a structured loss keeps its whole block]); no autograd.
    fn structured_loss(
        &self,
        target: &Tensor,
        op: BinaryOp,
        reduction: Reduction,
        kernel: &str,
    ) -> Result<Tensor> {
        self.check_loss_inputs(target, kernel)?;
        if reduction == Reduction::None {
            return self.binary_raw(target, op);
        }
        let shape = broadcast_shapes(self.dims(), target.dims())?;
        let numel: usize = shape.iter().product();
        // An empty input's block has no room for the 0-d loss: PyTorch's resize then allocates
        // one element, as this does.
        let result = self.empty_same(if numel == 0 { &[] } else { &shape }, self.dtype())?;
        let loss = self.binary_raw(target, op)?;
        let all: Vec<usize> = (0..loss.dim()).collect();
        let keepdim = result.view_as_layout(Layout::contiguous(&vec![1; loss.dim()]));
        loss.reduce_into(reduction_op(reduction), &all, &keepdim, None, Read::AsIs)?;
        drop((keepdim, loss));
        Ok(result.view_as_layout(Layout::contiguous(&[])))
    }

    /// Float inputs of one dtype on one device, as the loss kernels take them.
    fn check_loss_inputs(&self, target: &Tensor, kernel: &str) -> Result<()> {
        if self.device() != target.device() {
            return Err(super::math::device_mismatch(self.device(), target.device()));
        }
        let dtype = super::math::result_type(self, target);
        if !dtype.is_float() {
            return Err(TensorError::runtime(format!(
                "\"{kernel}_cuda\" not implemented for '{}'",
                dtype.scalar_type_name()
            )));
        }
        if self.dtype() != target.dtype() {
            return Err(TensorError::runtime(format!(
                "expected both inputs of the loss to have one dtype, got {} and {}; convert the \
                 target with .to(input.dtype)",
                self.dtype().name(),
                target.dtype().name()
            )));
        }
        Ok(())
    }

    /// The backward of an elementwise loss of `(self, target)`: for each input that needs it
    /// (self first), zeros of its shape filled with the derivative (`grad_op(norm)` of the input
    /// and the other), times the incoming gradient: PyTorch's `*_loss_backward`, one tensor each.
    fn record_pointwise_grad(
        &self,
        out: &Tensor,
        target: &Tensor,
        node: &'static str,
        reduction: Reduction,
        grad_op: impl Fn(f64) -> BinaryOp + Send + Sync + 'static,
    ) -> Result<()> {
        if !needs_grad(&[self, target]) {
            return Ok(());
        }
        let (a, b) = (SavedTensor::new(self)?, SavedTensor::new(target)?);
        record(
            out,
            node,
            &[self, target],
            true,
            Box::new(move |g, m| {
                let (a, b) = (a.get()?, b.get()?);
                let op = grad_op(reduction.norm(a.numel()));
                let ga = m[0].then(|| pointwise_grad(g, a, b, op)).transpose()?;
                let gb = m[1].then(|| pointwise_grad(g, b, a, op)).transpose()?;
                Ok(vec![ga, gb])
            }),
        );
        Ok(())
    }
}

/// `*_loss_backward(grad, x, other)`: zeros like `x` (at the broadcast shape), the derivative in
/// `x` written into them, then times `grad`.
fn pointwise_grad(g: &Tensor, x: &Tensor, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
    let shape = broadcast_shapes(x.dims(), other.dims())?;
    let grad = Tensor::zeros(&shape, &x.like_options())?;
    if grad.numel() > 0 {
        let (lx, lo) = (
            x.layout().broadcast_to(&shape),
            other.layout().broadcast_to(&shape),
        );
        x.backend().binary(
            op,
            x.operand_with(&lx),
            other.operand_with(&lo),
            grad.operand(),
        )?;
        grad.binary_into_self(g, BinaryOp::Mul)?;
    }
    Ok(grad)
}

/// `apply_loss_reduction`: the mean or sum into a new 0-d tensor, the elementwise loss freed.
fn reduce_loss(loss: Tensor, reduction: Reduction) -> Result<Tensor> {
    if reduction == Reduction::None {
        return Ok(loss);
    }
    let all: Vec<usize> = (0..loss.dim()).collect();
    let reduced = loss.reduce_raw(reduction_op(reduction), &all, loss.dtype())?;
    Ok(reduced.view_as_shape(&[]))
}

fn reduction_op(reduction: Reduction) -> ReduceOp {
    if reduction == Reduction::Sum {
        ReduceOp::Sum
    } else {
        ReduceOp::Mean
    }
}

impl Tensor {
    /// `F.binary_cross_entropy(self, target, weight=…, reduction=…)`.
    pub fn binary_cross_entropy(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        reduction: Reduction,
    ) -> Result<Tensor> {
        self.check_loss_inputs(target, "binary_cross_entropy")?;
        if self.dims() != target.dims() {
            return Err(TensorError::value(format!(
                "Using a target size ({:?}) that is different to the input size ({:?}) is deprecated. Please ensure they have the same size.",
                target.dims(),
                self.dims()
            )));
        }
        if needs_grad(&[target]) {
            return Err(TensorError::not_implemented(
                "torchlet: the gradient of binary_cross_entropy in its target is not supported yet; \
                 detach the target (target.detach())",
            ));
        }
        let loss = self.binary_raw(target, BinaryOp::Bce)?;
        if let Some(w) = weight {
            loss.binary_into_self(w, BinaryOp::Mul)?;
        }
        let out = if reduction == Reduction::None {
            loss
        } else {
            // Note [a structured loss keeps its whole block]: the reduction is copied into the
            // loss's own block, resized to 0-d.
            let reduced = reduce_loss(loss.clone(), reduction)?;
            let scalar = loss.view_as_layout(Layout::contiguous(&[]));
            drop(loss);
            scalar.copy_from(&reduced)?;
            scalar
        };
        if needs_grad(&[self]) {
            let (x, t) = (SavedTensor::new(self)?, SavedTensor::new(target)?);
            let w = weight.map(SavedTensor::new).transpose()?;
            record(
                &out,
                "BinaryCrossEntropyBackward0",
                &[self, target],
                true,
                Box::new(move |g, _| {
                    let x = x.get()?;
                    let grad = x.binary_raw(t.get()?, BinaryOp::BceGrad)?;
                    weigh_grad(&grad, g, w.as_ref(), reduction, x.numel())?;
                    Ok(vec![Some(grad), None])
                }),
            );
        }
        Ok(out)
    }

    /// `F.binary_cross_entropy_with_logits(self, target, weight=…, pos_weight=…, reduction=…)`:
    /// PyTorch's `(1 - target) * x - log_sigmoid(x)` (times `1 + (pos_weight - 1) * target` on
    /// the log-sigmoid), each step allocating as ATen's does.
    pub fn binary_cross_entropy_with_logits(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        pos_weight: Option<&Tensor>,
        reduction: Reduction,
    ) -> Result<Tensor> {
        self.check_loss_inputs(target, "binary_cross_entropy_with_logits")?;
        if needs_grad(&[target]) {
            return Err(TensorError::not_implemented(
                "torchlet: the gradient of binary_cross_entropy_with_logits in its target is not \
                 supported yet; detach the target (target.detach())",
            ));
        }
        let log_sigmoid = self.unary_raw(UnaryOp::LogSigmoid)?;
        if let Some(pw) = pos_weight {
            let shifted = pw.scalar_raw(BinaryOp::Sub, Scalar::Float(1.0), false)?;
            let log_weight = shifted.binary_raw(target, BinaryOp::Mul)?;
            drop(shifted);
            log_weight.scale_shift_in_place(1.0, 1.0)?;
            log_sigmoid.binary_into_self(&log_weight, BinaryOp::Mul)?;
        }
        let loss = target.scalar_raw(BinaryOp::Sub, Scalar::Float(1.0), true)?;
        loss.binary_into_self(self, BinaryOp::Mul)?;
        loss.binary_into_self(&log_sigmoid, BinaryOp::Sub)?;
        if let Some(w) = weight {
            loss.binary_into_self(w, BinaryOp::Mul)?;
        }
        let out = reduce_loss(loss, reduction)?;
        drop(log_sigmoid);
        if needs_grad(&[self]) {
            let (x, t) = (SavedTensor::new(self)?, SavedTensor::new(target)?);
            let w = weight.map(SavedTensor::new).transpose()?;
            let pw = pos_weight.map(SavedTensor::new).transpose()?;
            record(
                &out,
                "BinaryCrossEntropyWithLogitsBackward0",
                &[self, target],
                true,
                Box::new(move |g, _| {
                    let (x, t) = (x.get()?, t.get()?);
                    let pw = pw.as_ref().map(|p| p.get()).transpose()?;
                    let grad = logits_grad(x, t, pw)?;
                    weigh_grad(&grad, g, w.as_ref(), reduction, x.numel())?;
                    Ok(vec![Some(grad), None])
                }),
            );
        }
        Ok(out)
    }

    /// `self = self * scale` in place; no autograd.
    fn scale_in_place(&self, scale: f64) -> Result<()> {
        self.scale_shift_in_place(scale, 0.0)
    }

    /// `self = self * scale + shift` in place; no autograd.
    fn scale_shift_in_place(&self, scale: f64, shift: f64) -> Result<()> {
        let b = self.backend();
        if scale != 1.0 {
            b.binary_scalar(
                BinaryOp::Mul,
                self.operand(),
                Scalar::Float(scale),
                false,
                self.operand(),
            )?;
        }
        if shift != 0.0 {
            b.binary_scalar(
                BinaryOp::Add,
                self.operand(),
                Scalar::Float(shift),
                false,
                self.operand(),
            )?;
        }
        Ok(())
    }
}

/// The binary cross-entropies' backward after the derivative, in place: times the incoming
/// gradient, times `weight`, and over the element count for a mean.
fn weigh_grad(
    grad: &Tensor,
    g: &Tensor,
    weight: Option<&SavedTensor>,
    reduction: Reduction,
    numel: usize,
) -> Result<()> {
    grad.binary_into_self(g, BinaryOp::Mul)?;
    if let Some(w) = weight {
        grad.binary_into_self(w.get()?, BinaryOp::Mul)?;
    }
    if reduction == Reduction::Mean {
        grad.scale_in_place(1.0 / numel.max(1) as f64)?;
    }
    Ok(())
}

/// `binary_cross_entropy_with_logits_backward` before the incoming gradient: `sigmoid(x) - t`,
/// or with `pos_weight`, `(pw * t + 1 - t) * sigmoid(x) - pw * t`.
fn logits_grad(x: &Tensor, t: &Tensor, pos_weight: Option<&Tensor>) -> Result<Tensor> {
    let Some(pw) = pos_weight else {
        let grad = x.unary_raw(UnaryOp::Sigmoid)?;
        grad.binary_into_self(t, BinaryOp::Sub)?;
        return Ok(grad);
    };
    let pt = pw.binary_raw(t, BinaryOp::Mul)?;
    let grad = pt.scalar_raw(BinaryOp::Add, Scalar::Float(1.0), false)?;
    grad.binary_into_self(t, BinaryOp::Sub)?;
    let sigmoid = x.unary_raw(UnaryOp::Sigmoid)?;
    grad.binary_into_self(&sigmoid, BinaryOp::Mul)?;
    drop(sigmoid);
    grad.binary_into_self(&pt, BinaryOp::Sub)?;
    Ok(grad)
}
