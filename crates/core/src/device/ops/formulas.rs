//! Host formulas too long for a row of the op table (clamp, GELU and the activations' derivatives).

/// `x` limited to `[min, max]`; NaN stays NaN.
pub(super) fn clamp(x: f64, min: Option<f64>, max: Option<f64>) -> f64 {
    if x.is_nan() {
        return x;
    }
    let x = min.map_or(x, |m| x.max(m));
    max.map_or(x, |m| x.min(m))
}

/// `sqrt(2 / pi)`, the tanh form's scale.
const BETA: f64 = 0.797_884_560_802_865_4;
/// The tanh form's cubic coefficient.
const KAPPA: f64 = 0.044715;

/// GELU: `x * Φ(x)` with the normal CDF through erf, or PyTorch's tanh approximation.
pub fn gelu(x: f64, tanh: bool) -> f64 {
    if tanh {
        0.5 * x * (1.0 + (BETA * (x + KAPPA * x * x * x)).tanh())
    } else {
        0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
    }
}

/// d gelu / dx, written as PyTorch's `GeluBackward` kernels write it.
pub fn gelu_backward(x: f64, tanh: bool) -> f64 {
    if tanh {
        let inner = BETA * (x + KAPPA * x * x * x);
        let t = inner.tanh();
        let left = 0.5 * x;
        let right = 1.0 + t;
        0.5 * right + left * (1.0 - t * t) * BETA * (1.0 + 3.0 * KAPPA * x * x)
    } else {
        let cdf = 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
        let pdf = (-0.5 * x * x).exp()
            * 0.5
            * std::f64::consts::FRAC_2_SQRT_PI
            * std::f64::consts::FRAC_1_SQRT_2;
        cdf + x * pdf
    }
}

/// d silu / dx: `s * (1 + x * (1 - s))` with `s = sigmoid(x)`.
pub fn silu_backward(x: f64) -> f64 {
    let s = 1.0 / (1.0 + (-x).exp());
    s * (1.0 + x * (1.0 - s))
}
