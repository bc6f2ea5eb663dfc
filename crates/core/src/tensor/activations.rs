//! The activations with a parameter (`leaky_relu`, `elu`, `softplus`), `mish` and `hardswish`,
//! and rounding (`floor`, `ceil`, `round`, `trunc`), each with PyTorch's autograd node.

use crate::autograd::{needs_grad, record};
use crate::device::{BinaryOp, UnaryOp};

use super::{Result, Tensor};

impl Tensor {
    /// `leaky_relu(x, negative_slope)`; backward keeps the input (`leaky_relu_backward`).
    pub fn leaky_relu(&self, slope: f64) -> Result<Tensor> {
        self.activation(
            UnaryOp::LeakyRelu { slope },
            "LeakyReluBackward0",
            BinaryOp::LeakyReluBackward { slope },
        )
    }

    /// `elu(x, alpha)`; backward keeps the input (`elu_backward`, `is_result=False`).
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.activation(
            UnaryOp::Elu { alpha },
            "EluBackward0",
            BinaryOp::EluBackward { alpha },
        )
    }

    /// `softplus(x, beta, threshold)`; backward keeps the input.
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        self.activation(
            UnaryOp::Softplus { beta, threshold },
            "SoftplusBackward0",
            BinaryOp::SoftplusBackward { beta, threshold },
        )
    }

    /// `mish(x)`: `x * tanh(softplus(x))`; backward keeps the input.
    pub fn mish(&self) -> Result<Tensor> {
        self.activation(UnaryOp::Mish, "MishBackward0", BinaryOp::MishBackward)
    }

    /// `hardswish(x)`: `x * relu6(x + 3) / 6`; backward keeps the input.
    pub fn hardswish(&self) -> Result<Tensor> {
        self.activation(
            UnaryOp::Hardswish,
            "HardswishBackward0",
            BinaryOp::HardswishBackward,
        )
    }

    /// One output; the node keeps the input and its backward is one kernel of (grad, input).
    fn activation(&self, op: UnaryOp, node: &'static str, backward: BinaryOp) -> Result<Tensor> {
        self.float_only(op.kernel_name())?;
        self.unary_op(op, node, false, move |g, x| g.binary_raw(x, backward))
    }

    /// `floor(x)`.
    pub fn floor(&self) -> Result<Tensor> {
        self.rounding(UnaryOp::Floor, "FloorBackward0")
    }

    /// `ceil(x)`.
    pub fn ceil(&self) -> Result<Tensor> {
        self.rounding(UnaryOp::Ceil, "CeilBackward0")
    }

    /// `round(x)`, halves to even.
    pub fn round(&self) -> Result<Tensor> {
        self.rounding(UnaryOp::Round, "RoundBackward0")
    }

    /// `trunc(x)`.
    pub fn trunc(&self) -> Result<Tensor> {
        self.rounding(UnaryOp::Trunc, "TruncBackward0")
    }

    /// One output; the node saves nothing and its gradient is `zeros_like(grad)`, as PyTorch's.
    fn rounding(&self, op: UnaryOp, node: &'static str) -> Result<Tensor> {
        let out = self.unary_raw(op)?;
        if needs_grad(&[self]) && out.dtype().is_float() {
            record(
                &out,
                node,
                &[self],
                false,
                Box::new(|g, _| Ok(vec![Some(g.zeros_like()?)])),
            );
        }
        Ok(out)
    }
}
