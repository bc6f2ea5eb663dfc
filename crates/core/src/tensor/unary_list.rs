//! Each elementwise method of one tensor, declared once: the `Tensor` method (the op-table
//! `UnaryOp` it runs, its autograd node, what the node saves, its backward) and the entry the script
//! registers and documents it from. Methods with an argument (`gelu`, `clamp`, `pow`) or an unusual
//! node (`neg`) are written in `math.rs` and only listed here.

use crate::device::{BinaryOp, UnaryOp};

use super::{Result, Scalar, Tensor};

/// One elementwise method as the script sees it.
pub struct UnaryMethod {
    /// The method's and the function's name (`t.relu()`, `relu(t)`).
    pub name: &'static str,
    /// One line of help: the call and what it computes.
    pub help: &'static str,
    /// A string keyword argument and its default (`approximate`, `"none"` for gelu).
    pub keyword: Option<(&'static str, &'static str)>,
    /// The method, given the keyword's value (the default when absent, "" when there is none).
    pub call: fn(&Tensor, &str) -> Result<Tensor>,
}

const fn plain(
    name: &'static str,
    help: &'static str,
    call: fn(&Tensor, &str) -> Result<Tensor>,
) -> UnaryMethod {
    UnaryMethod {
        name,
        help,
        keyword: None,
        call,
    }
}

/// Whether an autograd node saves the op's input or its output for backward.
macro_rules! saved {
    (input) => {
        false
    };
    (output) => {
        true
    };
}

/// The methods and `UNARY_METHODS`, from one row per method:
/// `fn name(op) "Node" saves input|output [autocast "name"] [float_only "kernel"] => |grad, saved| backward, "help";`
/// then the hand-written methods' entries.
macro_rules! elementwise_methods {
    (
        $(
            fn $name:ident($op:expr) $node:literal saves $saves:ident
            $(autocast $cast:literal)? $(float_only $kernel:literal)?
            => |$g:ident, $s:ident| $backward:expr, $help:literal;
        )*
        also [$($other:expr),* $(,)?]
    ) => {
        impl Tensor {
            $(
                #[doc = $help]
                pub fn $name(&self) -> Result<Tensor> {
                    $(
                        if let Some((cast, _)) = super::autocast::cast_inputs($cast, &[self])? {
                            return cast[0].$name();
                        }
                    )?
                    $(self.float_only($kernel)?;)?
                    self.unary_op($op, $node, saved!($saves), |$g, $s| $backward)
                }
            )*
        }

        /// Every elementwise method of one tensor.
        pub static UNARY_METHODS: &[UnaryMethod] = &[
            $(plain(stringify!($name), $help, |t, _| t.$name()),)*
            $($other,)*
        ];
    };
}

elementwise_methods! {
    fn exp(UnaryOp::Exp) "ExpBackward0" saves output autocast "exp"
        => |g, r| g.mul(r), "t.exp() — elementwise e^x";
    fn log(UnaryOp::Log) "LogBackward0" saves input autocast "log"
        => |g, x| g.div(x), "t.log() — elementwise natural logarithm";
    fn sqrt(UnaryOp::Sqrt) "SqrtBackward0" saves output
        => |g, r| g.div(&r.mul_scalar(Scalar::Int(2))?), "t.sqrt() — elementwise square root";
    fn rsqrt(UnaryOp::Rsqrt) "RsqrtBackward0" saves output
        => |g, r| rsqrt_backward(g, r), "t.rsqrt() — elementwise 1 / sqrt(x)";
    fn abs(UnaryOp::Abs) "AbsBackward0" saves input
        => |g, x| g.mul(&x.unary_raw(UnaryOp::Sign)?), "t.abs() — elementwise absolute value";
    fn relu(UnaryOp::Relu) "ReluBackward0" saves output
        => |g, r| g.binary_raw(r, BinaryOp::ReluBackward), "t.relu() — elementwise max(x, 0)";
    fn sigmoid(UnaryOp::Sigmoid) "SigmoidBackward0" saves output
        => |g, r| g.binary_raw(r, BinaryOp::SigmoidBackward), "t.sigmoid() — elementwise 1 / (1 + e^-x)";
    fn tanh(UnaryOp::Tanh) "TanhBackward0" saves output
        => |g, r| g.binary_raw(r, BinaryOp::TanhBackward), "t.tanh() — elementwise hyperbolic tangent";
    fn log1p(UnaryOp::Log1p) "Log1PBackward0" saves input autocast "log1p"
        => |g, x| log1p_backward(g, x), "t.log1p() — elementwise log(1 + x), accurate near 0";
    fn expm1(UnaryOp::Expm1) "Expm1Backward0" saves output autocast "expm1"
        => |g, r| expm1_backward(g, r), "t.expm1() — elementwise e^x - 1, accurate near 0";
    fn erf(UnaryOp::Erf) "ErfBackward0" saves input
        => |g, x| erf_backward(g, x), "t.erf() — elementwise error function";
    fn sign(UnaryOp::Sign) "SignBackward0" saves input
        => |g, _x| g.zeros_like(), "t.sign() — elementwise -1, 0 or 1 (0 for 0)";
    fn sin(UnaryOp::Sin) "SinBackward0" saves input
        => |g, x| g.mul(&x.cos()?), "t.sin() — elementwise sine";
    fn cos(UnaryOp::Cos) "CosBackward0" saves input
        => |g, x| g.mul(&x.sin()?.neg()?), "t.cos() — elementwise cosine";
    fn silu(UnaryOp::Silu) "SiluBackward0" saves input float_only "silu"
        => |g, x| g.binary_raw(x, BinaryOp::SiluBackward), "t.silu() — elementwise x · sigmoid(x)";
    also [
        plain("neg", "t.neg() — elementwise negation (same as -t)", |t, _| t.neg()),
        UnaryMethod {
            name: "gelu",
            help: "t.gelu([#{approximate: \"tanh\"}]) — elementwise x·Φ(x), Φ the normal CDF (or its tanh approximation)",
            keyword: Some(("approximate", "none")),
            call: |t, approximate| t.gelu(approximate),
        },
    ]
}

/// `-0.5 * grad * result.pow(3)` as PyTorch's RsqrtBackward0 computes it: the cube first (the
/// right operand of the generated C++ product is evaluated first), then the scaled gradient.
fn rsqrt_backward(g: &Tensor, r: &Tensor) -> Result<Tensor> {
    let cube = r.pow_scalar(3.0)?;
    g.mul_scalar(Scalar::Float(-0.5))?.mul(&cube)
}

/// `grad / (self + 1)` (PyTorch's `log1p_backward`): the shifted input, the quotient, the shift
/// freed.
fn log1p_backward(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let shifted = x.add_scalar(Scalar::Int(1))?;
    g.div(&shifted)
}

/// `grad * (result + 1)` (Expm1Backward0).
fn expm1_backward(g: &Tensor, r: &Tensor) -> Result<Tensor> {
    let shifted = r.add_scalar(Scalar::Int(1))?;
    g.mul(&shifted)
}

/// `2 / sqrt(pi) * exp(-(self.pow(2))) * grad` (ErfBackward0), its temporaries left to right,
/// freed with the expression.
fn erf_backward(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let square = x.pow_scalar(2.0)?;
    let negated = square.neg()?;
    let bell = negated.exp()?;
    let scaled = bell.mul_scalar(Scalar::Float(std::f64::consts::FRAC_2_SQRT_PI))?;
    let out = scaled.mul(g)?;
    drop((scaled, bell, negated, square));
    Ok(out)
}
