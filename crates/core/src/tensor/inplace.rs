//! In-place ops (`add_`, `mul_`, `zero_`, ...): PyTorch's leaf and dtype checks, history rebasing.

use crate::autograd::{is_grad_enabled, is_inference_mode, needs_grad, record, SavedTensor};
use crate::device::{BinaryOp, UnaryOp};

use super::math::{device_mismatch, result_type, result_type_scalar};
use super::{broadcast_shapes, DType, Result, Scalar, Tensor, TensorError};

fn dims_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl Tensor {
    /// The checks every in-place op makes before writing.
    pub(super) fn check_inplace(&self) -> Result<()> {
        super::check_interrupt()?;
        if is_grad_enabled() && self.requires_grad() && self.is_leaf() {
            return Err(TensorError::runtime(
                "a leaf Variable that requires grad is being used in an in-place operation.",
            ));
        }
        if self.is_inference() && !is_inference_mode() {
            return Err(TensorError::runtime(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.",
            ));
        }
        Ok(())
    }

    /// `relu_()`: `max(self, 0)` written into `self`; in a graph its backward keeps the result
    /// (`self` after the write), as PyTorch's threshold_backward reads it.
    pub fn relu_(&self) -> Result<Tensor> {
        self.check_inplace()?;
        if self.numel() > 0 {
            self.backend()
                .unary(UnaryOp::Relu, self.operand(), self.operand())?;
        }
        self.bump_version();
        if needs_grad(&[self]) {
            let result = SavedTensor::new(self)?;
            record(
                self,
                "ReluBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    Ok(vec![Some(
                        g.binary_raw(result.get()?, BinaryOp::ReluBackward)?,
                    )])
                }),
            );
        }
        Ok(self.clone())
    }

    /// An elementwise function written into `self` (`clamp_`, `erfinv_`, `exp_`, ...), as
    /// initialisation uses them: outside a graph, allocating nothing.
    pub fn unary_(&self, op: UnaryOp, name: &str) -> Result<Tensor> {
        self.check_inplace()?;
        if needs_grad(&[self]) {
            return Err(TensorError::runtime(format!(
                "torchlet: {name}_() on a tensor in an autograd graph is not supported yet; use \
                 {name}() (out of place), or run it under torch.no_grad()"
            )));
        }
        if !matches!(op, UnaryOp::Clamp { .. } | UnaryOp::Abs | UnaryOp::Neg) {
            self.float_only(name)?;
        }
        if self.numel() > 0 {
            self.backend().unary(op, self.operand(), self.operand())?;
        }
        self.bump_version();
        Ok(self.clone())
    }

    fn check_cast(&self, result: DType) -> Result<()> {
        if !result.can_cast_to(self.dtype()) {
            return Err(TensorError::runtime(format!(
                "result type {} can't be cast to the desired output type {}",
                result.scalar_type_name(),
                self.dtype().scalar_type_name()
            )));
        }
        Ok(())
    }

    /// `self = self op other` with `other` broadcast to `self`'s shape; no checks of autograd.
    pub(crate) fn binary_into_self(&self, other: &Tensor, op: BinaryOp) -> Result<()> {
        if self.device() != other.device()
            && !(other.device() == crate::device::Device::Cpu && other.dim() == 0)
        {
            return Err(device_mismatch(self.device(), other.device()));
        }
        let shape = broadcast_shapes(self.dims(), other.dims())?;
        if shape != self.dims() {
            return Err(TensorError::runtime(format!(
                "output with shape {} doesn't match the broadcast shape {}",
                dims_str(self.dims()),
                dims_str(&shape)
            )));
        }
        if self.numel() > 0 {
            if self.device() != other.device() {
                let s = other.item()?;
                self.backend()
                    .binary_scalar(op, self.operand(), s, false, self.operand())?;
            } else {
                let lb = other.layout().broadcast_to(&shape);
                self.backend().binary(
                    op,
                    self.operand(),
                    other.operand_with(&lb),
                    self.operand(),
                )?;
            }
        }
        self.bump_version();
        Ok(())
    }

    fn inplace_tensor(&self, other: &Tensor, op: BinaryOp, name: &'static str) -> Result<Tensor> {
        self.check_inplace()?;
        let promoted = result_type(self, other);
        // True division makes floats of integers, which an integer tensor cannot hold.
        let result = if op == BinaryOp::Div && !promoted.is_float() {
            DType::F32
        } else {
            promoted
        };
        self.check_cast(result)?;
        let record_it = needs_grad(&[self, other]);
        let scales = matches!(op, BinaryOp::Mul | BinaryOp::Div);
        // mul_ and div_ need the old value of self for other's gradient.
        let old_self = if record_it && scales && other.requires_grad() {
            Some(SavedTensor::new(&self.contiguous_copy()?)?)
        } else {
            None
        };
        // ... and other for self's gradient (div_ also for other's own).
        let keep_other = SavedTensor::new_if(
            record_it && scales && (self.requires_grad() || op == BinaryOp::Div),
            other,
        )?;
        self.binary_into_self(other, op)?;
        if record_it {
            record(
                self,
                name,
                &[self, other],
                scales,
                Box::new(move |g, m| {
                    let ga = match (m[0], &keep_other, op) {
                        (false, ..) => None,
                        (true, Some(b), BinaryOp::Div) => Some(g.div(b.get()?)?),
                        (true, Some(b), _) => Some(g.mul(b.get()?)?),
                        (true, None, _) => Some(g.clone()),
                    };
                    let gb = if !m[1] {
                        None
                    } else {
                        match (op, &old_self, &keep_other) {
                            (BinaryOp::Sub, ..) => Some(g.neg()?),
                            (BinaryOp::Mul, Some(a), _) => Some(g.mul(a.get()?)?),
                            // d(a / b)/db = -a / b²
                            (BinaryOp::Div, Some(a), Some(b)) => {
                                let b = b.get()?;
                                Some(g.neg()?.mul(&a.get()?.div(b)?.div(b)?)?)
                            }
                            (BinaryOp::Mul | BinaryOp::Div, ..) => None,
                            _ => Some(g.clone()),
                        }
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(self.clone())
    }

    /// `self += other`.
    pub fn add_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace_tensor(other, BinaryOp::Add, "AddBackward0")
    }
    /// `self -= other`.
    pub fn sub_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace_tensor(other, BinaryOp::Sub, "SubBackward0")
    }
    /// `self *= other`.
    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace_tensor(other, BinaryOp::Mul, "MulBackward0")
    }
    /// `self /= other` (true division; an integer `self` is PyTorch's cast error).
    pub fn div_(&self, other: &Tensor) -> Result<Tensor> {
        self.inplace_tensor(other, BinaryOp::Div, "DivBackward0")
    }

    fn inplace_scalar(&self, op: BinaryOp, s: Scalar, name: &'static str) -> Result<Tensor> {
        self.check_inplace()?;
        self.check_cast(result_type_scalar(self, s))?;
        if self.numel() > 0 {
            self.backend()
                .binary_scalar(op, self.operand(), s, false, self.operand())?;
        }
        self.bump_version();
        if needs_grad(&[self]) {
            record(
                self,
                name,
                &[self],
                false,
                Box::new(move |g, _| {
                    Ok(vec![Some(match op {
                        BinaryOp::Mul => g.mul_scalar(s)?,
                        BinaryOp::Div => g.div_scalar(s)?,
                        _ => g.clone(),
                    })])
                }),
            );
        }
        Ok(self.clone())
    }

    /// `self += s`.
    pub fn add_scalar_(&self, s: Scalar) -> Result<Tensor> {
        self.inplace_scalar(BinaryOp::Add, s, "AddBackward0")
    }
    /// `self -= s`.
    pub fn sub_scalar_(&self, s: Scalar) -> Result<Tensor> {
        self.inplace_scalar(BinaryOp::Sub, s, "SubBackward0")
    }
    /// `self *= s`.
    pub fn mul_scalar_(&self, s: Scalar) -> Result<Tensor> {
        self.inplace_scalar(BinaryOp::Mul, s, "MulBackward0")
    }
    /// `self /= s`.
    pub fn div_scalar_(&self, s: Scalar) -> Result<Tensor> {
        if !self.dtype().is_float() {
            self.check_cast(DType::F32)?;
        }
        self.inplace_scalar(BinaryOp::Div, s, "DivBackward0")
    }

    /// Set every element to `value`.
    pub fn fill_(&self, value: Scalar) -> Result<Tensor> {
        self.fill_named(value, "FillBackward0")
    }

    /// Set every element to zero.
    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_named(Scalar::Int(0), "ZeroBackward0")
    }

    fn fill_named(&self, value: Scalar, name: &'static str) -> Result<Tensor> {
        self.check_inplace()?;
        if self.numel() > 0 {
            self.backend().fill(self.operand(), value)?;
        }
        self.bump_version();
        if needs_grad(&[self]) {
            // The old values no longer matter: their gradient is zero.
            record(self, name, &[self], false, Box::new(|_, _| Ok(vec![None])));
        }
        Ok(self.clone())
    }

    /// PyTorch's `copy_` (no autograd yet): this tensor's elements become `src`'s.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.copy_from(src)
    }

    /// Copy `src`'s values into this view (broadcasting, converting dtype); no autograd.
    pub(crate) fn copy_from(&self, src: &Tensor) -> Result<()> {
        let src = if src.device() != self.device() {
            src.to_device(self.device())?
        } else {
            src.clone()
        };
        let l = src.layout().broadcast_to(self.dims());
        if self.numel() > 0 {
            self.backend().copy(src.operand_with(&l), self.operand())?;
        }
        self.bump_version();
        Ok(())
    }
}
