//! The elementwise op table: every unary and binary op once, with its host formula for every dtype,
//! its kernel name, its kernel parameters and its CUDA expression.
//!
//! Map: the macros in `table` turn each row into a variant of `UnaryOp`/`BinaryOp` and the arms
//! of `eval_f64` (float destinations), `eval_i64` (integer and bool ones), `with_f32` (PyTorch's
//! f32 forms, where `fast_f32` is set), `kernel_name`, `kernel_params` and the `CUDA` list that
//! `cuda::functors` writes into the kernel source; `formulas` holds the host formulas too long for
//! a row (clamp, GELU, the activations' derivatives). Adding an op is one row here (and its
//! backward, if any, one row below); the CPU and CUDA backends read nothing else.

#[macro_use]
mod table;
mod formulas;

pub use formulas::{gelu, gelu_backward, mish_backward, silu_backward};

/// Receives an op's f32 formula, so a kernel can run it monomorphised in its own loop.
pub trait MapF32 {
    /// Run the kernel with `f` as its per-element function.
    fn map<F: Fn(f32) -> f32 + Sync + Send + Copy>(self, f: F);
}

/// As `MapF32`, for a function of two f32s.
pub trait MapF32x2 {
    /// Run the kernel with `f` as its per-element function.
    fn map<F: Fn(f32, f32) -> f32 + Sync + Send + Copy>(self, f: F);
}

unary_ops! {
    /// `-x` (logical not for bool is not offered: PyTorch refuses `-` on bool too).
    Neg => "neg" { float: |x| -x, int: |x| x.wrapping_neg(), fast_f32: yes, cuda: "-x", }
    /// `e^x`.
    Exp => "exp" { float: |x| x.exp(), fast_f32: yes, cuda: "m_exp(x)", }
    /// Natural log.
    Log => "log" { float: |x| x.ln(), fast_f32: yes, cuda: "m_log(x)", }
    /// Square root.
    Sqrt => "sqrt" { float: |x| x.sqrt(), fast_f32: yes, cuda: "m_sqrt(x)", }
    /// `1 / sqrt(x)`.
    Rsqrt => "rsqrt" { float: |x| 1.0 / x.sqrt(), fast_f32: yes, cuda: "((X)1 / m_sqrt(x))", }
    /// `|x|`.
    Abs => "abs" { float: |x| x.abs(), int: |x| x.wrapping_abs(), fast_f32: yes, cuda: "(x < (X)0 ? -x : x)", }
    /// `max(x, 0)` (NaN stays NaN).
    Relu => "relu" {
        float: |x| if x > 0.0 || x.is_nan() { x } else { 0.0 },
        int: |x| x.max(0),
        fast_f32: yes,
        cuda: "((x != x || x > (X)0) ? x : (X)0)",
    }
    /// `1 / (1 + e^-x)`.
    Sigmoid => "sigmoid" { float: |x| 1.0 / (1.0 + (-x).exp()), fast_f32: yes, cuda: "((X)1 / ((X)1 + m_exp(-x)))", }
    /// Hyperbolic tangent.
    Tanh => "tanh" { float: |x| x.tanh(), fast_f32: yes, cuda: "m_tanh(x)", }
    /// `log(1 + x)`, accurate near 0.
    Log1p => "log1p" { float: |x| x.ln_1p(), cuda: "m_log1p(x)", }
    /// `log(sigmoid(x))`, written as PyTorch's kernel writes it: `min(x, 0) - log1p(e^-|x|)`.
    LogSigmoid => "log_sigmoid" {
        float: |x| x.min(0.0) - (-x.abs()).exp().ln_1p(),
        cuda: "((x < (X)0 ? x : (X)0) - m_log1p(m_exp(x < (X)0 ? x : -x)))",
    }
    /// `e^x - 1`, accurate near 0.
    Expm1 => "expm1" { float: |x| x.exp_m1(), cuda: "m_expm1(x)", }
    /// The error function.
    Erf => "erf" { float: |x| libm::erf(x), cuda: "m_erf(x)", }
    /// Sine.
    Sin => "sin" { float: |x| x.sin(), fast_f32: yes, cuda: "m_sin(x)", }
    /// Cosine.
    Cos => "cos" { float: |x| x.cos(), fast_f32: yes, cuda: "m_cos(x)", }
    /// The inverse error function (`trunc_normal_` draws through it).
    Erfinv => "erfinv" { float: |x| formulas::erfinv(x), cuda: "m_erfinv(x)", }
    /// -1, 0 or 1 (NaN and -0.0 keep their sign bit through `x * 0`).
    Sign => "sign" {
        float: |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { x * 0.0 },
        int: |x| x.signum(),
        cuda: "(X)((x > (X)0) - (x < (X)0))",
    }
    /// `min(max(x, min), max)`; a missing bound is not applied.
    Clamp { min: Option<f64>, max: Option<f64> } => "clamp" {
        params: (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY)),
        float: |x| formulas::clamp(x, min, max),
        int: |x| {
            let x = min.map_or(x, |m| x.max(m as i64));
            max.map_or(x, |m| x.min(m as i64))
        },
        cuda: "((double)x < p0 ? (X)p0 : ((double)x > p1 ? (X)p1 : x))",
    }
    /// `x ^ exponent`.
    PowScalar { exponent: f64 } => "pow" {
        params: (exponent, 0.0),
        float: |x| x.powf(exponent),
        int: |x| (x as f64).powf(exponent) as i64,
        cuda: "m_pow(x, (X)p0)",
    }
    /// `x * Φ(x)` (PyTorch's `gelu`); `tanh` picks the `approximate="tanh"` form.
    Gelu { tanh: bool } => "gelu" {
        params: (tanh as u8 as f64, 0.0),
        float: |x| gelu(x, tanh),
        cuda: "(p0 != 0.0 ? (X)0.5 * x * ((X)1 + m_tanh((X)0.7978845608028654 * (x + (X)0.044715 * x * x * x))) : (X)0.5 * x * ((X)1 + m_erf(x * (X)0.7071067811865476)))",
    }
    /// `x * sigmoid(x)` (PyTorch's `silu`).
    Silu => "silu" { float: |x| x / (1.0 + (-x).exp()), fast_f32: yes, cuda: "(x / ((X)1 + m_exp(-x)))", }
    /// `x` where positive, else `slope * x`.
    LeakyRelu { slope: f64 } => "leaky_relu" {
        params: (slope, 0.0),
        float: |x| if x > 0.0 { x } else { x * slope },
        cuda: "(x > (X)0 ? x : x * (X)p0)",
    }
    /// `x` where positive, else `alpha * (e^x - 1)`.
    Elu { alpha: f64 } => "elu" {
        params: (alpha, 0.0),
        float: |x| if x > 0.0 { x } else { alpha * x.exp_m1() },
        cuda: "(x > (X)0 ? x : (X)p0 * (m_exp(x) - (X)1))",
    }
    /// `log(1 + e^(beta x)) / beta`, or `x` where `beta x > threshold`.
    Softplus { beta: f64, threshold: f64 } => "softplus" {
        params: (beta, threshold),
        float: |x| if x * beta > threshold { x } else { (x * beta).exp().ln_1p() / beta },
        cuda: "((double)x * p0 > p1 ? x : m_log1p(m_exp(x * (X)p0)) / (X)p0)",
    }
    /// `x * tanh(softplus(x))`.
    Mish => "mish" { float: |x| x * x.exp().ln_1p().tanh(), cuda: "(x * m_tanh(m_log1p(m_exp(x))))", }
    /// `x * relu6(x + 3) / 6`.
    Hardswish => "hardswish" {
        float: |x| if x <= -3.0 { 0.0 } else if x >= 3.0 { x } else { x * (x + 3.0) / 6.0 },
        cuda: "(x <= (X)-3 ? (X)0 : (x >= (X)3 ? x : x * (x + (X)3) / (X)6))",
    }
    /// The largest integer not above `x` (integers unchanged).
    Floor => "floor" { float: |x| x.floor(), int: |x| x, cuda: "m_floor(x)", }
    /// The smallest integer not below `x`.
    Ceil => "ceil" { float: |x| x.ceil(), int: |x| x, cuda: "m_ceil(x)", }
    /// The nearest integer, halves to even (PyTorch's `round`).
    Round => "round" { float: |x| x.round_ties_even(), int: |x| x, cuda: "m_rint(x)", }
    /// `x` without its fraction.
    Trunc => "trunc" { float: |x| x.trunc(), int: |x| x, cuda: "m_trunc(x)", }
}

binary_ops! {
    arith {
        /// `a + b`.
        Add => "add" { float: |a, b| a + b, int: |a, b| a.wrapping_add(b), fast_f32: yes, cuda: "a + b", }
        /// `a - b`.
        Sub => "sub" { float: |a, b| a - b, int: |a, b| a.wrapping_sub(b), fast_f32: yes, cuda: "a - b", }
        /// `a * b`.
        Mul => "mul" { float: |a, b| a * b, int: |a, b| a.wrapping_mul(b), fast_f32: yes, cuda: "a * b", }
        /// `a / b` (true division; the destination is a float dtype).
        Div => "div" { float: |a, b| a / b, fast_f32: yes, cuda: "a / b", }
        /// `a ^ b`.
        Pow => "pow" {
            float: |a, b| a.powf(b),
            int: |a, b| if b >= 0 { a.wrapping_pow(b.min(u32::MAX as i64) as u32) } else { 0 },
            cuda: "m_pow(a, b)",
        }
        /// ReLU's backward: `lhs` (grad) where `rhs` (the ReLU output) > 0, else 0.
        ReluBackward => "relu_bw" { float: |a, b| if b > 0.0 { a } else { 0.0 }, fast_f32: yes, cuda: "(b > (X)0 ? a : (X)0)", }
        /// Sigmoid's backward: `lhs * rhs * (1 - rhs)` with `rhs` the sigmoid output.
        SigmoidBackward => "sigmoid_bw" { float: |a, b| a * b * (1.0 - b), cuda: "(a * b * ((X)1 - b))", }
        /// Tanh's backward: `lhs * (1 - rhs^2)` with `rhs` the tanh output.
        TanhBackward => "tanh_bw" { float: |a, b| a * (1.0 - b * b), cuda: "(a * ((X)1 - b * b))", }
        /// Clamp's backward: `lhs` (grad) where `min <= rhs <= max` (`rhs` the input), else 0.
        ClampBackward { min: Option<f64>, max: Option<f64> } => "clamp_bw" {
            params: (min.unwrap_or(f64::NEG_INFINITY), max.unwrap_or(f64::INFINITY)),
            float: |a, b| if min.is_none_or(|m| b >= m) && max.is_none_or(|m| b <= m) { a } else { 0.0 },
            cuda: "(((double)b >= p0 && (double)b <= p1) ? a : (X)0)",
        }
        /// GELU's backward: `lhs * gelu'(rhs)` with `rhs` the input; `tanh` as in `Gelu`.
        GeluBackward { tanh: bool } => "gelu_bw" {
            params: (tanh as u8 as f64, 0.0),
            float: |a, b| a * gelu_backward(b, tanh),
            cuda: "(a * (p0 != 0.0 ? gelu_tanh_d(b) : gelu_erf_d(b)))",
        }
        /// SiLU's backward: `lhs * silu'(rhs)` with `rhs` the input.
        SiluBackward => "silu_bw" { float: |a, b| a * silu_backward(b), cuda: "(a * silu_d(b))", }
        /// Leaky ReLU's backward (`rhs` the input).
        LeakyReluBackward { slope: f64 } => "leaky_relu_bw" {
            params: (slope, 0.0),
            float: |a, b| if b > 0.0 { a } else { a * slope },
            cuda: "(b > (X)0 ? a : a * (X)p0)",
        }
        /// ELU's backward from its input (`rhs`).
        EluBackward { alpha: f64 } => "elu_bw" {
            params: (alpha, 0.0),
            float: |a, b| if b <= 0.0 { a * alpha * b.exp() } else { a },
            cuda: "(b <= (X)0 ? a * (X)p0 * m_exp(b) : a)",
        }
        /// Softplus's backward (`rhs` the input).
        SoftplusBackward { beta: f64, threshold: f64 } => "softplus_bw" {
            params: (beta, threshold),
            float: |a, b| {
                let z = (b * beta).exp();
                if b * beta > threshold { a } else { a * z / (z + 1.0) }
            },
            cuda: "((double)b * p0 > p1 ? a : a * m_exp(b * (X)p0) / (m_exp(b * (X)p0) + (X)1))",
        }
        /// Mish's backward (`rhs` the input).
        MishBackward => "mish_bw" { float: |a, b| a * mish_backward(b), cuda: "(a * mish_d(b))", }
        /// Hardswish's backward (`rhs` the input).
        HardswishBackward => "hardswish_bw" {
            float: |a, b| if b < -3.0 { 0.0 } else if b <= 3.0 { a * (b / 3.0 + 0.5) } else { a },
            cuda: "(b < (X)-3 ? (X)0 : (b <= (X)3 ? a * (b / (X)3 + (X)0.5) : a))",
        }
        /// `a + alpha * b` (PyTorch's `add(b, alpha=…)`, as optimizers update with it).
        AddScaled { alpha: f64 } => "add_alpha" {
            params: (alpha, 0.0),
            float: |a, b| a + alpha * b,
            cuda: "(a + (X)p0 * b)",
        }
        /// `a + weight * (b - a)`, written as PyTorch's `lerp` kernels write it (from the nearer end).
        Lerp { weight: f64 } => "lerp" {
            params: (weight, 0.0),
            float: |a, b| if weight.abs() < 0.5 { a + weight * (b - a) } else { b - (b - a) * (1.0 - weight) },
            cuda: "((p0 > -0.5 && p0 < 0.5) ? a + (X)p0 * (b - a) : b - (b - a) * (X)(1.0 - p0))",
        }
        /// `a + value * b * b` (PyTorch's `addcmul(b, b, value=…)`, Adam's second moment).
        AddSquared { value: f64 } => "addcmul_sq" {
            params: (value, 0.0),
            float: |a, b| a + value * b * b,
            cuda: "(a + (X)p0 * b * b)",
        }
        /// The smaller of `a` and `b`; NaN if either is (PyTorch's `minimum`).
        Minimum => "minimum" {
            float: |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) },
            int: |a, b| a.min(b),
            cuda: "((a != a || b != b) ? a + b : (a < b ? a : b))",
        }
        /// `a - floor(a / b) * b`, the sign of `b` (Python's `%`, PyTorch's `remainder`); an
        /// integer remainder by zero is 0 here (PyTorch's kernel raises on the CPU).
        Remainder => "remainder" {
            float: |a, b| { let r = a % b; if r != 0.0 && (r < 0.0) != (b < 0.0) { r + b } else { r } },
            int: |a, b| if b == 0 { 0 } else { let r = a.wrapping_rem(b); if r != 0 && (r < 0) != (b < 0) { r + b } else { r } },
            cuda: "remainder_(a, b)",
        }
        /// `floor(a / b)` (Python's `//`, PyTorch's `floor_divide`); an integer division by zero
        /// is 0 here.
        FloorDivide => "floor_divide" {
            float: |a, b| formulas::div_floor(a, b),
            int: |a, b| if b == 0 { 0 } else { let q = a.wrapping_div(b); if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q } },
            cuda: "floor_divide_(a, b)",
        }
        /// `(a - b)²`: the squared error of `mse_loss`.
        SquaredDiff => "squared_diff" { float: |a, b| (a - b) * (a - b), fast_f32: yes, cuda: "((a - b) * (a - b))", }
        /// `mse_loss`'s derivative in `a`: `2 norm (a - b)`.
        SquaredDiffGrad { norm: f64 } => "squared_diff_bw" {
            params: (norm, 0.0),
            float: |a, b| 2.0 * norm * (a - b),
            cuda: "((X)(2.0 * p0) * (a - b))",
        }
        /// Smooth L1 loss of input `a` at target `b`: `0.5 z² / beta` below `beta`, else
        /// `z - 0.5 beta`, with `z = |a - b|`.
        SmoothL1 { beta: f64 } => "smooth_l1" {
            params: (beta, 0.0),
            float: |a, b| { let z = (a - b).abs(); if z < beta { 0.5 * z * z / beta } else { z - 0.5 * beta } },
            cuda: "(m_abs_(a - b) < (X)p0 ? (X)0.5 * (a - b) * (a - b) / (X)p0 : m_abs_(a - b) - (X)(0.5 * p0))",
        }
        /// Smooth L1's derivative in the input (times `norm`), as its backward kernel writes it.
        SmoothL1Grad { beta: f64, norm: f64 } => "smooth_l1_bw" {
            params: (beta, norm),
            float: |a, b| { let x = a - b; if x <= -beta { -norm } else if x >= beta { norm } else { norm * x / beta } },
            cuda: "((a - b) <= (X)(-p0) ? (X)(-p1) : ((a - b) >= (X)p0 ? (X)p1 : (X)p1 * (a - b) / (X)p0))",
        }
        /// Huber loss of input `a` at target `b`: `0.5 z²` below `delta`, else
        /// `delta (z - 0.5 delta)`, with `z = |a - b|`.
        Huber { delta: f64 } => "huber" {
            params: (delta, 0.0),
            float: |a, b| { let z = (a - b).abs(); if z < delta { 0.5 * z * z } else { delta * (z - 0.5 * delta) } },
            cuda: "(m_abs_(a - b) < (X)p0 ? (X)0.5 * (a - b) * (a - b) : (X)p0 * (m_abs_(a - b) - (X)(0.5 * p0)))",
        }
        /// Huber's derivative in the input (times `norm`).
        HuberGrad { delta: f64, norm: f64 } => "huber_bw" {
            params: (delta, norm),
            float: |a, b| { let x = a - b; if x <= -delta { -norm * delta } else if x >= delta { norm * delta } else { norm * x } },
            cuda: "((a - b) <= (X)(-p0) ? (X)(-p1 * p0) : ((a - b) >= (X)p0 ? (X)(p1 * p0) : (X)p1 * (a - b)))",
        }
        /// Binary cross-entropy of probability `a` at target `b`, each log clamped at -100.
        Bce => "bce" {
            float: |a, b| (b - 1.0) * (-a).ln_1p().max(-100.0) - b * a.ln().max(-100.0),
            cuda: "((b - (X)1) * max_((X)m_log1p(-a), (X)-100) - b * max_((X)m_log(a), (X)-100))",
        }
        /// Binary cross-entropy's derivative in the probability `a` at target `b`.
        BceGrad => "bce_bw" {
            float: |a, b| (a - b) / ((1.0 - a) * a).max(1e-12),
            cuda: "((a - b) / max_(((X)1 - a) * a, (X)1e-12))",
        }
        /// `a * log(b)`, 0 where `a` is 0 (and `b` is not NaN): PyTorch's `xlogy`.
        Xlogy => "xlogy" {
            float: |a, b| if b.is_nan() { f64::NAN } else if a == 0.0 { 0.0 } else { a * b.ln() },
            cuda: "(b != b ? b : (a == (X)0 ? (X)0 : a * m_log(b)))",
        }
        /// The larger of `a` and `b`; NaN if either is (PyTorch's `maximum`).
        Maximum => "maximum" {
            float: |a, b| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) },
            int: |a, b| a.max(b),
            cuda: "((a != a || b != b) ? a + b : (a > b ? a : b))",
        }
    }
    compare {
        /// `a == b`, into a bool destination (as are the five comparisons below).
        Eq => "eq" { holds: |a, b| a == b, cuda: "(X)(a == b)", }
        /// `a != b`.
        Ne => "ne" { holds: |a, b| a != b, cuda: "(X)(a != b)", }
        /// `a < b`.
        Lt => "lt" { holds: |a, b| a < b, cuda: "(X)(a < b)", }
        /// `a <= b`.
        Le => "le" { holds: |a, b| a <= b, cuda: "(X)(a <= b)", }
        /// `a > b`.
        Gt => "gt" { holds: |a, b| a > b, cuda: "(X)(a > b)", }
        /// `a >= b`.
        Ge => "ge" { holds: |a, b| a >= b, cuda: "(X)(a >= b)", }
    }
}

impl BinaryOp {
    /// The same comparison with its operands swapped: `s < x` is `x > s`.
    pub fn swapped(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::Le => BinaryOp::Ge,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::Ge => BinaryOp::Le,
            other => other,
        }
    }
}
