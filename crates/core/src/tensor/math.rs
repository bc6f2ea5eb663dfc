//! Elementwise math with broadcasting, PyTorch's type promotion, and autograd recording.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::{BinaryOp, Device, UnaryOp};

use super::iter_layout::empty_elementwise;
use super::{broadcast_shapes, DType, Result, Scalar, Tensor, TensorError};

/// PyTorch's `combine_categories`: a lower-priority operand only wins with a higher category.
fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, l) => l,
        (h, None) => h,
        (Some(h), Some(l)) => {
            if h.is_float() {
                Some(h)
            } else if h == DType::Bool || l.is_float() {
                Some(DType::promote(h, l))
            } else {
                Some(h)
            }
        }
    }
}

fn promote_opt(a: Option<DType>, b: DType) -> Option<DType> {
    Some(a.map_or(b, |a| DType::promote(a, b)))
}

/// The result dtype of an op between two tensors (0-dim tensors rank below dimensioned ones).
pub(crate) fn result_type(a: &Tensor, b: &Tensor) -> DType {
    let (mut dim, mut zero) = (None, None);
    for t in [a, b] {
        if t.dim() > 0 {
            dim = promote_opt(dim, t.dtype());
        } else {
            zero = promote_opt(zero, t.dtype());
        }
    }
    combine(dim, zero).expect("two operands")
}

/// The result dtype of an op between a tensor and a Python number.
pub(crate) fn result_type_scalar(a: &Tensor, s: Scalar) -> DType {
    let wrapped = match s {
        Scalar::Float(_) => DType::F32,
        Scalar::Int(_) => DType::I64,
        Scalar::Bool(_) => DType::Bool,
    };
    combine(Some(a.dtype()), Some(wrapped)).expect("two operands")
}

/// PyTorch's error for two tensors on different devices.
pub(crate) fn device_mismatch(a: Device, b: Device) -> TensorError {
    let (first, second) = if a == Device::Cpu { (b, a) } else { (a, b) };
    TensorError::runtime(format!(
        "Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!"
    ))
}

fn check_bool_op(op: BinaryOp, dtype: DType) -> Result<()> {
    if op == BinaryOp::Sub && dtype == DType::Bool {
        return Err(TensorError::runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    Ok(())
}

fn output_dtype(op: BinaryOp, promoted: DType) -> DType {
    match op {
        BinaryOp::Div if !promoted.is_float() => DType::F32,
        cmp if cmp.is_comparison() => DType::Bool,
        _ => promoted,
    }
}

/// Float ops on integer tensors compute and return float32, as PyTorch does.
fn unary_output_dtype(op: UnaryOp, dtype: DType) -> DType {
    match op {
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Sign | UnaryOp::Clamp { .. } => {
            dtype
        }
        UnaryOp::PowScalar { exponent: e } if e.fract() == 0.0 && e >= 0.0 => dtype,
        _ if dtype.is_float() => dtype,
        _ => DType::F32,
    }
}

impl Tensor {
    /// `self op other` with broadcasting; no autograd.
    pub(crate) fn binary_raw(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        super::check_interrupt()?;
        let promoted = result_type(self, other);
        check_bool_op(op, promoted)?;
        let dtype = output_dtype(op, promoted);
        let (da, db) = (self.device(), other.device());
        if da != db {
            // A CPU 0-dim tensor acts as a number next to a GPU tensor, as in PyTorch.
            if db == Device::Cpu && other.dim() == 0 {
                return self.scalar_raw_typed(op, other.item()?, false, dtype);
            }
            if da == Device::Cpu && self.dim() == 0 {
                return other.scalar_raw_typed(op, self.item()?, true, dtype);
            }
            return Err(device_mismatch(da, db));
        }
        let shape = broadcast_shapes(self.dims(), other.dims())?;
        let out = empty_elementwise(&[self, other], &shape, dtype)?;
        if out.numel() > 0 {
            let (la, lb) = (
                self.layout().broadcast_to(&shape),
                other.layout().broadcast_to(&shape),
            );
            self.backend().binary(
                op,
                self.operand_with(&la),
                other.operand_with(&lb),
                out.operand(),
            )?;
        }
        Ok(out)
    }

    fn scalar_raw_typed(
        &self,
        op: BinaryOp,
        s: Scalar,
        scalar_first: bool,
        dtype: DType,
    ) -> Result<Tensor> {
        let out = empty_elementwise(&[self], self.dims(), dtype)?;
        if out.numel() > 0 {
            self.backend()
                .binary_scalar(op, self.operand(), s, scalar_first, out.operand())?;
        }
        Ok(out)
    }

    /// `self op s` (or `s op self`); no autograd.
    pub(crate) fn scalar_raw(&self, op: BinaryOp, s: Scalar, scalar_first: bool) -> Result<Tensor> {
        super::check_interrupt()?;
        let promoted = result_type_scalar(self, s);
        check_bool_op(op, promoted)?;
        self.scalar_raw_typed(op, s, scalar_first, output_dtype(op, promoted))
    }

    /// `op(self)`; no autograd.
    pub(crate) fn unary_raw(&self, op: UnaryOp) -> Result<Tensor> {
        super::check_interrupt()?;
        if op == UnaryOp::Neg && self.dtype() == DType::Bool {
            return Err(TensorError::runtime(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            ));
        }
        let out = empty_elementwise(&[self], self.dims(), unary_output_dtype(op, self.dtype()))?;
        if out.numel() > 0 {
            self.backend().unary(op, self.operand(), out.operand())?;
        }
        Ok(out)
    }

    /// `self * other`; saves each input only if the other one needs a gradient.
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_raw(other, BinaryOp::Mul)?;
        if needs_grad(&[self, other]) {
            // Note [saved release order] (linalg.rs): `other_` goes before `self_`.
            let saved = (
                SavedTensor::new_if(self.requires_grad(), other)?,
                SavedTensor::new_if(other.requires_grad(), self)?,
            );
            record(
                &out,
                "MulBackward0",
                &[self, other],
                true,
                Box::new(move |g, m| {
                    let (keep_other, keep_self) = (&saved.0, &saved.1);
                    let gb = match (keep_self, m[1]) {
                        (Some(a), true) => Some(g.mul(a.get()?)?),
                        _ => None,
                    };
                    let ga = match (keep_other, m[0]) {
                        (Some(b), true) => Some(g.mul(b.get()?)?),
                        _ => None,
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    /// `self / other` (true division).
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        let out = self.binary_raw(other, BinaryOp::Div)?;
        if needs_grad(&[self, other]) {
            // Note [saved release order] (linalg.rs): `other_` goes before `self_`.
            let saved = (
                SavedTensor::new(other)?,
                SavedTensor::new_if(other.requires_grad(), self)?,
            );
            record(
                &out,
                "DivBackward0",
                &[self, other],
                true,
                Box::new(move |g, m| {
                    let (b, a) = (&saved.0, &saved.1);
                    // `-grad * ((self / other) / other)`: its temporaries go newest first once
                    // the product is made, as in PyTorch's C++ formula.
                    let gb = match (a, m[1]) {
                        (Some(a), true) => {
                            let (a, b) = (a.get()?, b.get()?);
                            Some(g.neg()?.mul(&a.div(b)?.div(b)?)?)
                        }
                        _ => None,
                    };
                    let ga = if m[0] { Some(g.div(b.get()?)?) } else { None };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    /// `self ** other` elementwise.
    pub fn pow(&self, other: &Tensor) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("pow", &[self, other])? {
            return cast[0].pow(&cast[1]);
        }
        let out = self.binary_raw(other, BinaryOp::Pow)?;
        if needs_grad(&[self, other]) {
            let (a, b, r) = (
                SavedTensor::new(self)?,
                SavedTensor::new(other)?,
                SavedTensor::new(&out)?,
            );
            record(
                &out,
                "PowBackward1",
                &[self, other],
                true,
                Box::new(move |g, m| {
                    let (a, b, r) = (a.get()?, b.get()?, r.get()?);
                    let ga = if m[0] {
                        Some(g.mul(&b.mul(&a.pow(&b.sub_scalar(Scalar::Int(1))?)?)?)?)
                    } else {
                        None
                    };
                    let gb = if m[1] {
                        Some(g.mul(&r.mul(&a.log()?)?)?)
                    } else {
                        None
                    };
                    Ok(vec![ga, gb])
                }),
            );
        }
        Ok(out)
    }

    /// Record a tensor-scalar op whose gradient is `f(g)`.
    pub(super) fn scalar_op(
        &self,
        op: BinaryOp,
        s: Scalar,
        first: bool,
        name: &'static str,
        f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Result<Tensor> {
        let out = self.scalar_raw(op, s, first)?;
        if needs_grad(&[self]) {
            record(
                &out,
                name,
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(f(g)?)])),
            );
        }
        Ok(out)
    }

    /// `s / self`, computed as PyTorch does: `self.reciprocal() * s`.
    pub fn rdiv_scalar(&self, s: Scalar) -> Result<Tensor> {
        self.reciprocal()?.mul_scalar(s)
    }

    /// `s ** self` (PyTorch's `pow(Scalar, Tensor)`: one new tensor); autograd through it is
    /// not offered yet, and asking for it says so.
    pub fn rpow_scalar(&self, s: Scalar) -> Result<Tensor> {
        if needs_grad(&[self]) {
            return Err(TensorError::runtime(
                "torchlet: a number raised to a tensor that requires grad (s ** t) is not supported \
                 yet; write torch.exp(t * math.log(s))",
            ));
        }
        let out = self.scalar_raw(BinaryOp::Pow, s, true)?;
        // Note [pow of a number]: PyTorch's pow(Scalar, Tensor) redispatches to the tensor form
        // with `wrapped_scalar_tensor(base, exp.device())`, a 0-dim tensor of the base on the
        // exponent's device (int64 or double, 8 bytes; bool 1), made after the output and
        // freed when the op returns; a base of 1 only fills the output (py_ops_reach.py).
        if self.backend().props().is_some() && s.to_f64() != 1.0 {
            let bytes = if matches!(s, Scalar::Bool(_)) { 1 } else { 8 };
            drop(crate::device::Storage::new(self.backend().clone(), bytes)?);
        }
        Ok(out)
    }

    /// `1 / self`.
    pub fn reciprocal(&self) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("reciprocal", &[self])? {
            return cast[0].reciprocal();
        }
        let out = self.scalar_raw(BinaryOp::Div, Scalar::Float(1.0), true)?;
        if needs_grad(&[self]) {
            let r = SavedTensor::new(&out)?;
            record(
                &out,
                "ReciprocalBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let r = r.get()?;
                    Ok(vec![Some(g.neg()?.mul(&r.mul(r)?)?)])
                }),
            );
        }
        Ok(out)
    }

    /// Record a unary op; `save` picks what backward keeps (input or output).
    pub(super) fn unary_op(
        &self,
        op: UnaryOp,
        name: &'static str,
        save_output: bool,
        f: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Result<Tensor> {
        let out = self.unary_raw(op)?;
        if needs_grad(&[self]) && out.dtype().is_float() {
            let saved = SavedTensor::new(if save_output { &out } else { self })?;
            record(
                &out,
                name,
                &[self],
                true,
                Box::new(move |g, _| Ok(vec![Some(f(g, saved.get()?)?)])),
            );
        }
        Ok(out)
    }

    /// `-self`.
    pub fn neg(&self) -> Result<Tensor> {
        let out = self.unary_raw(UnaryOp::Neg)?;
        if needs_grad(&[self]) {
            record(
                &out,
                "NegBackward0",
                &[self],
                false,
                Box::new(|g, _| Ok(vec![Some(g.neg()?)])),
            );
        }
        Ok(out)
    }
    /// GELU (`approximate` "none": through erf, "tanh": PyTorch's tanh form); backward keeps the input.
    pub fn gelu(&self, approximate: &str) -> Result<Tensor> {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            other => {
                return Err(TensorError::runtime(format!(
                    "approximate argument must be either none or tanh, not '{other}'"
                )))
            }
        };
        self.float_only("GeluKernelImpl")?;
        self.unary_op(
            UnaryOp::Gelu { tanh },
            "GeluBackward0",
            false,
            move |g, x| g.binary_raw(x, BinaryOp::GeluBackward { tanh }),
        )
    }
    /// PyTorch's error for an activation that has no integer kernel.
    pub(super) fn float_only(&self, kernel: &str) -> Result<()> {
        if self.dtype().is_float() {
            return Ok(());
        }
        Err(TensorError::runtime(format!(
            "\"{kernel}\" not implemented for '{}'",
            self.dtype().scalar_type_name()
        )))
    }
    /// Clamp into `[min, max]` (either bound may be absent, not both).
    pub fn clamp(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(TensorError::runtime(
                "torch.clamp: At least one of 'min' or 'max' must not be None",
            ));
        }
        self.clamp_as(min, max, "ClampBackward1")
    }

    /// `self.clamp_min(min)`: PyTorch's own op and node (ClampMinBackward0), whose backward
    /// allocates as clamp's with a lower bound alone.
    pub fn clamp_min(&self, min: f64) -> Result<Tensor> {
        self.clamp_as(Some(min), None, "ClampMinBackward0")
    }

    /// `self.clamp_max(max)` (ClampMaxBackward0).
    pub fn clamp_max(&self, max: f64) -> Result<Tensor> {
        self.clamp_as(None, Some(max), "ClampMaxBackward0")
    }

    fn clamp_as(&self, min: Option<f64>, max: Option<f64>, node: &'static str) -> Result<Tensor> {
        self.unary_op(UnaryOp::Clamp { min, max }, node, false, move |g, x| {
            clamp_backward(g, x, min, max)
        })
    }
    /// `self ** s` for a script's number: [`Tensor::pow_scalar`] of its value.
    pub fn pow_number(&self, s: Scalar) -> Result<Tensor> {
        self.pow_scalar(s.to_f64())
    }

    /// `self ** exponent`; backward keeps the input.
    pub fn pow_scalar(&self, exponent: f64) -> Result<Tensor> {
        if let Some((cast, _off)) = super::autocast::cast_inputs("pow", &[self])? {
            return cast[0].pow_scalar(exponent);
        }
        self.unary_op(
            UnaryOp::PowScalar { exponent },
            "PowBackward0",
            false,
            move |g, x| {
                if exponent == 0.0 {
                    return g.zeros_like();
                }
                // PyTorch's `grad * (exponent * self.pow(exponent - 1))` is one C++ expression:
                // its temporaries live until the product is made, then go newest first.
                let power = x.pow_scalar(exponent - 1.0)?;
                let scaled = power.mul_scalar(Scalar::Float(exponent))?;
                let grad = g.mul(&scaled);
                drop(scaled);
                drop(power);
                grad
            },
        )
    }
}

/// Clamp's gradient with the memory PyTorch's `clamp_backward` (FunctionsManual.cpp) takes: it
/// makes a 0-d zero (`scalar_tensor(0., grad.options())`), the bool mask `self >= min`, then
/// `self <= max` (and-ed into the first in place), and `where(mask, grad, zero)`; the masks die
/// with their expression, newest first, and the zero when the function returns. The masks and the
/// zero are only allocated: one fused kernel computes the result from `grad` and `self`.
fn clamp_backward(g: &Tensor, x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    let zero = g.empty_same(&[], g.dtype())?;
    let mask = |bound: Option<f64>| {
        bound
            .map(|_| x.empty_same(x.dims(), DType::Bool))
            .transpose()
    };
    let at_least_min = mask(min)?;
    let at_most_max = mask(max)?;
    let grad = g.binary_raw(x, BinaryOp::ClampBackward { min, max });
    drop(at_most_max);
    drop(at_least_min);
    drop(zero);
    grad
}
